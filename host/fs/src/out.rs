//! [`OutDir`]: writing under a results directory without following links.
//!
//! The directory the user named (the root) is taken as it is, links in its
//! own path included: that is the user's choice. Below it, each folder is
//! opened relative to the one above with `O_NOFOLLOW | O_DIRECTORY` (made
//! when missing), and each file relative to its folder with `O_NOFOLLOW`, so
//! a symbolic link planted anywhere below the root (a linked `performance/`,
//! a `report.html` that points at `../outside.html`) is refused, naming it,
//! and nothing is written outside the root.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, CWD};
use rustix::io::Errno;

/// Why a file under a results directory was not written.
#[derive(Debug, thiserror::Error)]
pub enum OutError {
    /// A symbolic link where a folder or a file of the results goes.
    #[error(
        "{} is a symbolic link: agentload writes nothing through a link inside a results \
         directory (remove the link, or write the results elsewhere)",
        path.display()
    )]
    Link { path: PathBuf },
    /// Something else than a folder where a folder goes, or than a plain file
    /// where a file goes.
    #[error("{} is a {found}, not a {wanted}: refused", path.display())]
    Kind {
        path: PathBuf,
        found: &'static str,
        wanted: &'static str,
    },
    /// The path given is not a relative path below the root.
    #[error(
        "{} is not inside {}: only relative paths without `..` are written there",
        rel.display(),
        root.display()
    )]
    Outside { root: PathBuf, rel: PathBuf },
    /// A file system call failed.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl OutError {
    /// The kind of I/O error it is (`AlreadyExists` for a file that must be new...).
    pub fn kind(&self) -> std::io::ErrorKind {
        match self {
            Self::Io { source, .. } => source.kind(),
            _ => std::io::ErrorKind::InvalidInput,
        }
    }
}

impl From<OutError> for std::io::Error {
    fn from(e: OutError) -> Self {
        std::io::Error::new(e.kind(), e)
    }
}

/// A directory results are written into (see the module's text): the root
/// the user named, or a folder below it ([`OutDir::sub`]), which is entered
/// from the root as any other path is.
#[derive(Debug, Clone)]
pub struct OutDir {
    root: PathBuf,
    /// The folder below the root this one writes into (empty: the root).
    base: PathBuf,
}

/// A file written under a temporary name beside its final one, renamed into
/// place by [`Staged::commit`] (and removed when dropped uncommitted).
#[derive(Debug)]
pub struct Staged {
    dir: OwnedFd,
    file: Option<File>,
    temp: PathBuf,
    name: PathBuf,
    shown: PathBuf,
}

/// Whether `name` is one of the temporary names [`Staged`] files are written
/// under (a process killed while writing leaves one; `--force` removes them).
pub fn is_staged_name(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(STAGED_SUFFIX)
}

const STAGED_SUFFIX: &str = ".agentload-part";

/// Makes temporary names unique within the process.
static STAGED: AtomicU64 = AtomicU64::new(0);

fn io_op<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(Errno) -> OutError + 'a {
    move |e| OutError::Io {
        op,
        path: path.to_path_buf(),
        source: e.into(),
    }
}

impl OutDir {
    /// The results directory `root` (nothing is opened or made yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            base: PathBuf::new(),
        }
    }

    /// The folder `rel` below this one, as a directory to write into: its
    /// folders are checked from the root on, as any path's are (nothing is
    /// made yet).
    pub fn sub(&self, rel: impl AsRef<Path>) -> Result<Self, OutError> {
        let rel = rel.as_ref();
        self.parts(rel)?;
        Ok(Self {
            root: self.root.clone(),
            base: self.base.join(rel),
        })
    }

    /// The folder a file the user named is in (`.` for a bare name), as a
    /// results directory, and the file's name in it: for an output file given
    /// on the command line (`report --out`, `dataset --out`).
    pub fn of_file(path: &Path) -> Result<(Self, PathBuf), OutError> {
        let name = path.file_name().ok_or_else(|| OutError::Outside {
            root: path.to_path_buf(),
            rel: PathBuf::new(),
        })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok((Self::new(dir), PathBuf::from(name)))
    }

    /// The directory's path (the root as named, and the folder below it).
    pub fn dir(&self) -> PathBuf {
        self.root.join(&self.base)
    }

    /// `full` (a path that starts with [`OutDir::dir`]) relative to it.
    pub fn rel<'a>(&self, full: &'a Path) -> Result<&'a Path, OutError> {
        let dir = self.dir();
        full.strip_prefix(&dir).map_err(|_| OutError::Outside {
            root: dir,
            rel: full.to_path_buf(),
        })
    }

    /// The full path of `rel` (for messages and for reading).
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(&self.base).join(rel)
    }

    /// Makes this directory (and the folders above it, below the root).
    pub fn create_all(&self) -> Result<(), OutError> {
        let parts: Vec<&OsStr> = self.base.iter().collect();
        self.walk(&parts, true).map(drop)
    }

    /// Makes the folder `rel` and every folder above it (none may be a link).
    pub fn create_dir(&self, rel: impl AsRef<Path>) -> Result<(), OutError> {
        let rel = rel.as_ref();
        let parts = self.parts(rel)?;
        self.walk(&parts, true).map(drop)
    }

    /// Writes `bytes` to `rel` whole, replacing what was there: written under
    /// a temporary name, then renamed over it.
    pub fn write(&self, rel: impl AsRef<Path>, bytes: impl AsRef<[u8]>) -> Result<(), OutError> {
        let mut staged = self.staged(rel)?;
        staged.write_all(bytes.as_ref())?;
        staged.commit()
    }

    /// Writes `value` as pretty JSON (with a final newline) to `rel`.
    pub fn write_json(
        &self,
        rel: impl AsRef<Path>,
        value: &impl serde::Serialize,
    ) -> Result<(), OutError> {
        let rel = rel.as_ref();
        let mut text = serde_json::to_string_pretty(value).map_err(|e| OutError::Io {
            op: "serialize",
            path: self.path(rel),
            source: e.into(),
        })?;
        text.push('\n');
        self.write(rel, text)
    }

    /// Writes `rows` as JSON lines to `rel`.
    pub fn write_jsonl<T: serde::Serialize>(
        &self,
        rel: impl AsRef<Path>,
        rows: &[T],
    ) -> Result<(), OutError> {
        let rel = rel.as_ref();
        let mut text = String::new();
        for row in rows {
            let line = serde_json::to_string(row).map_err(|e| OutError::Io {
                op: "serialize",
                path: self.path(rel),
                source: e.into(),
            })?;
            text.push_str(&line);
            text.push('\n');
        }
        self.write(rel, text)
    }

    /// A file to stream into `rel`, put in place by [`Staged::commit`]
    /// (folders above it are made; a link at `rel` is refused).
    pub fn staged(&self, rel: impl AsRef<Path>) -> Result<Staged, OutError> {
        let rel = rel.as_ref();
        let (dir, name) = self.parent(rel)?;
        let shown = self.path(rel);
        refuse_link_at(&dir, &name, &shown)?;
        let base = name.as_os_str().as_bytes();
        let base = &base[..base.len().min(100)];
        loop {
            let n = STAGED.fetch_add(1, Ordering::Relaxed);
            let mut temp = b".".to_vec();
            temp.extend_from_slice(base);
            temp.extend_from_slice(
                format!(".{}-{n}{STAGED_SUFFIX}", std::process::id()).as_bytes(),
            );
            let temp = PathBuf::from(OsStr::from_bytes(&temp));
            match rustix::fs::openat(
                &dir,
                &temp,
                OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o666),
            ) {
                Ok(fd) => {
                    return Ok(Staged {
                        dir,
                        file: Some(File::from(fd)),
                        temp,
                        name,
                        shown,
                    })
                }
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(io_op("create", &shown)(e)),
            }
        }
    }

    /// Creates `rel`, which must not exist yet (a journal a run starts), for
    /// writing.
    pub fn create_new(&self, rel: impl AsRef<Path>) -> Result<File, OutError> {
        let rel = rel.as_ref();
        let (dir, name) = self.parent(rel)?;
        let shown = self.path(rel);
        match rustix::fs::openat(
            &dir,
            &name,
            OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        ) {
            Ok(fd) => Ok(File::from(fd)),
            Err(Errno::EXIST) => {
                refuse_link_at(&dir, &name, &shown)?;
                Err(io_op("create", &shown)(Errno::EXIST))
            }
            Err(e) => Err(io_op("create", &shown)(e)),
        }
    }

    /// Opens `rel` to read and write in place (a journal a resume appends to),
    /// made empty when missing and `create`. It must be a plain file: a link,
    /// a FIFO or a device is refused (and opening one never blocks).
    pub fn open_rw(&self, rel: impl AsRef<Path>, create: bool) -> Result<File, OutError> {
        let rel = rel.as_ref();
        let (dir, name) = self.parent(rel)?;
        let shown = self.path(rel);
        let mut flags =
            OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        if create {
            flags |= OFlags::CREATE;
        }
        let fd = match rustix::fs::openat(&dir, &name, flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => fd,
            Err(Errno::LOOP | Errno::NXIO) => {
                refuse_link_at(&dir, &name, &shown)?;
                return Err(kind_at(&dir, &name, &shown, "plain file"));
            }
            Err(e) => return Err(io_op("open", &shown)(e)),
        };
        let file = File::from(fd);
        let kind = file
            .metadata()
            .map_err(|source| OutError::Io {
                op: "open",
                path: shown.clone(),
                source,
            })?
            .file_type();
        if !kind.is_file() {
            return Err(OutError::Kind {
                path: shown,
                found: crate::read::describe(kind),
                wanted: "plain file",
            });
        }
        rustix::fs::fcntl_setfl(&file, OFlags::empty()).map_err(io_op("open", &shown))?;
        Ok(file)
    }

    /// Removes the file `rel` (a link is removed itself, never followed);
    /// false when there was none.
    pub fn remove(&self, rel: impl AsRef<Path>) -> Result<bool, OutError> {
        let rel = rel.as_ref();
        let parts = self.parts(rel)?;
        let (name, dirs) = parts.split_last().expect("parts are never empty");
        let dir = match self.walk(dirs, false) {
            Ok(dir) => dir,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        match rustix::fs::unlinkat(&dir, *name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(io_op("remove", &self.path(rel))(e)),
        }
    }

    /// The parts of `rel` below the root (this directory's folder's first):
    /// normal names only, at least one.
    fn parts<'a>(&'a self, rel: &'a Path) -> Result<Vec<&'a OsStr>, OutError> {
        let outside = || OutError::Outside {
            root: self.dir(),
            rel: rel.to_path_buf(),
        };
        let mut parts: Vec<&OsStr> = self.base.iter().collect();
        let own = parts.len();
        for c in rel.components() {
            match c {
                Component::Normal(name) => parts.push(name),
                Component::CurDir => {}
                _ => return Err(outside()),
            }
        }
        if parts.len() == own {
            return Err(outside());
        }
        Ok(parts)
    }

    /// The folder `rel` is in (made when missing), and `rel`'s own name.
    fn parent(&self, rel: &Path) -> Result<(OwnedFd, PathBuf), OutError> {
        let parts = self.parts(rel)?;
        let (name, dirs) = parts.split_last().expect("parts are never empty");
        Ok((self.walk(dirs, true)?, PathBuf::from(name)))
    }

    /// Opens the root (made when missing), then each of `dirs` below it, none
    /// through a link; missing ones are made when `create`.
    fn walk(&self, dirs: &[&OsStr], create: bool) -> Result<OwnedFd, OutError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut fd = match rustix::fs::openat(CWD, &self.root, flags, Mode::empty()) {
            Err(Errno::NOENT) if create => {
                std::fs::create_dir_all(&self.root).map_err(|source| OutError::Io {
                    op: "create",
                    path: self.root.clone(),
                    source,
                })?;
                rustix::fs::openat(CWD, &self.root, flags, Mode::empty())
            }
            other => other,
        }
        .map_err(io_op("open", &self.root))?;
        let mut shown = self.root.clone();
        for name in dirs {
            shown.push(name);
            fd = sub_dir(&fd, name, &shown, create)?;
        }
        Ok(fd)
    }
}

/// Opens the folder `name` in `dir` without following a link (made when
/// missing and `create`).
fn sub_dir(dir: &OwnedFd, name: &OsStr, shown: &Path, create: bool) -> Result<OwnedFd, OutError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut made = false;
    loop {
        match rustix::fs::openat(dir, name, flags, Mode::empty()) {
            Ok(fd) => return Ok(fd),
            Err(Errno::NOENT) if create && !made => {
                match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => made = true,
                    Err(e) => return Err(io_op("create", shown)(e)),
                }
            }
            Err(Errno::LOOP | Errno::NOTDIR) => {
                refuse_link_at(dir, Path::new(name), shown)?;
                return Err(kind_at(dir, name, shown, "directory"));
            }
            Err(e) => return Err(io_op("open", shown)(e)),
        }
    }
}

/// An error if `name` in `dir` is a symbolic link.
fn refuse_link_at(dir: &OwnedFd, name: &Path, shown: &Path) -> Result<(), OutError> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode).is_symlink() => Err(OutError::Link {
            path: shown.to_path_buf(),
        }),
        Ok(st) if FileType::from_raw_mode(st.st_mode).is_dir() => Err(OutError::Kind {
            path: shown.to_path_buf(),
            found: "directory",
            wanted: "plain file",
        }),
        _ => Ok(()),
    }
}

/// The error for `name` in `dir`, which is not a `wanted`.
fn kind_at(dir: &OwnedFd, name: impl AsRef<Path>, shown: &Path, wanted: &'static str) -> OutError {
    match rustix::fs::statat(dir, name.as_ref(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => {
            let found = match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile => "plain file",
                FileType::Directory => "directory",
                FileType::Symlink => "symbolic link",
                FileType::Fifo => "FIFO",
                FileType::Socket => "socket",
                FileType::CharacterDevice => "character device",
                FileType::BlockDevice => "block device",
                FileType::Unknown => "special file",
            };
            OutError::Kind {
                path: shown.to_path_buf(),
                found,
                wanted,
            }
        }
        Err(e) => io_op("open", shown)(e),
    }
}

impl Staged {
    /// The file being written.
    pub fn file(&mut self) -> &mut File {
        self.file
            .as_mut()
            .expect("a staged file is open until committed")
    }

    /// Writes all of `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), OutError> {
        let shown = self.shown.clone();
        self.file().write_all(bytes).map_err(|source| OutError::Io {
            op: "write",
            path: shown,
            source,
        })
    }

    /// The final path (for messages).
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// Puts the file in place (renamed over what was there; a link put there
    /// since it was staged is replaced, not followed).
    pub fn commit(mut self) -> Result<(), OutError> {
        let file = self.file.take().expect("committed once");
        file.sync_data().map_err(|source| OutError::Io {
            op: "write",
            path: self.shown.clone(),
            source,
        })?;
        drop(file);
        refuse_link_at(&self.dir, &self.name, &self.shown)?;
        rustix::fs::renameat(&self.dir, &self.temp, &self.dir, &self.name)
            .map_err(io_op("write", &self.shown))?;
        self.temp = PathBuf::new();
        // The rename itself reaches the disk with its folder.
        rustix::fs::fsync(&self.dir).map_err(io_op("write", &self.shown))
    }
}

impl std::io::Write for Staged {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file().write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file().flush()
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            let _ = rustix::fs::unlinkat(&self.dir, &self.temp, AtFlags::empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn writes_make_folders_and_replace_files_whole() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::new(dir.path().join("run"));
        out.write("performance/result_summary.json", "{}").unwrap();
        out.write("performance/result_summary.json", "{\"a\": 1}")
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("run/performance/result_summary.json"))
                .unwrap(),
            "{\"a\": 1}"
        );
        out.write_json("aa/summary.json", &serde_json::json!({"x": 1}))
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(out.path("aa/summary.json")).unwrap(),
            "{\n  \"x\": 1\n}\n"
        );
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(out.path("performance"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["result_summary.json"]);
    }

    #[test]
    fn a_linked_file_or_folder_is_refused_and_nothing_is_written_outside() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("outside.html"), "mine").unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        symlink(outside.join("outside.html"), run.join("report.html")).unwrap();
        symlink(&outside, run.join("performance")).unwrap();
        symlink(outside.join("missing"), run.join("dangling.json")).unwrap();
        let out = OutDir::new(&run);
        for rel in [
            "report.html",
            "performance/result_summary.json",
            "dangling.json",
        ] {
            let err = out.write(rel, "x").unwrap_err();
            assert!(matches!(err, OutError::Link { .. }), "{rel}: {err}");
            assert!(err.to_string().contains("is a symbolic link"), "{err}");
        }
        let err = out.create_dir("performance/deeper").unwrap_err();
        assert!(matches!(err, OutError::Link { .. }), "{err}");
        let err = out.create_new("dangling.json").unwrap_err();
        assert!(matches!(err, OutError::Link { .. }), "{err}");
        let err = out.open_rw("report.html", true).unwrap_err();
        assert!(matches!(err, OutError::Link { .. }), "{err}");
        let err = out.staged("performance/x.csv").unwrap_err();
        assert!(matches!(err, OutError::Link { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(outside.join("outside.html")).unwrap(),
            "mine"
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
        assert!(!outside.join("missing").exists());
    }

    #[test]
    fn the_named_root_may_itself_be_reached_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        symlink(dir.path().join("real"), dir.path().join("named")).unwrap();
        OutDir::new(dir.path().join("named"))
            .write("report.txt", "ok")
            .unwrap();
        assert!(dir.path().join("real/report.txt").is_file());
    }

    #[test]
    fn a_folder_below_the_root_is_entered_from_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        symlink(&outside, run.join("rescore")).unwrap();
        let out = OutDir::new(&run).sub("rescore/x@1").unwrap();
        assert_eq!(out.dir(), run.join("rescore/x@1"));
        assert_eq!(out.path("scores.json"), run.join("rescore/x@1/scores.json"));
        let err = out.write("scores.json", "{}").unwrap_err();
        assert!(matches!(err, OutError::Link { .. }), "{err}");
        assert!(matches!(out.create_all(), Err(OutError::Link { .. })));
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        std::fs::remove_file(run.join("rescore")).unwrap();
        out.write("accuracy/samples.jsonl", "").unwrap();
        assert!(run.join("rescore/x@1/accuracy/samples.jsonl").is_file());
        assert!(OutDir::new(&run).sub("../x").is_err());
    }

    #[test]
    fn a_hard_link_is_replaced_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.txt");
        std::fs::write(&other, "mine").unwrap();
        std::fs::create_dir(dir.path().join("run")).unwrap();
        std::fs::hard_link(&other, dir.path().join("run/report.txt")).unwrap();
        OutDir::new(dir.path().join("run"))
            .write("report.txt", "new")
            .unwrap();
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "mine");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("run/report.txt")).unwrap(),
            "new"
        );
    }

    #[test]
    fn paths_outside_and_special_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::new(dir.path());
        for rel in ["../x", "/etc/passwd", "", "a/../../x"] {
            let err = out.write(rel, "x").unwrap_err();
            assert!(matches!(err, OutError::Outside { .. }), "{rel}: {err}");
        }
        rustix::fs::mknodat(
            CWD,
            dir.path().join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // Opened without blocking (no reader), and refused by its type.
        let err = out.open_rw("fifo", false).unwrap_err();
        assert!(err.to_string().contains("FIFO, not a plain file"), "{err}");
        std::fs::create_dir(dir.path().join("folder")).unwrap();
        let err = out.write("folder", "x").unwrap_err();
        assert!(err.to_string().contains("directory"), "{err}");
        std::fs::write(dir.path().join("file"), "x").unwrap();
        let err = out.create_dir("file/below").unwrap_err();
        assert!(
            err.to_string().contains("plain file, not a directory"),
            "{err}"
        );
    }

    #[test]
    fn create_new_refuses_an_existing_file_and_open_rw_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::new(dir.path());
        let mut f = out.create_new("turns.jsonl").unwrap();
        f.write_all(b"one\n").unwrap();
        let err = out.create_new("turns.jsonl").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        let mut f = out.open_rw("turns.jsonl", false).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut f, &mut text).unwrap();
        assert_eq!(text, "one\n");
        assert!(out.remove("turns.jsonl").unwrap());
        assert!(!out.remove("turns.jsonl").unwrap());
        assert!(!out.remove("none/turns.jsonl").unwrap());
    }

    #[test]
    fn an_uncommitted_staged_file_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::new(dir.path());
        let mut staged = out.staged("export/turns.csv").unwrap();
        staged.write_all(b"a,b\n").unwrap();
        drop(staged);
        assert_eq!(std::fs::read_dir(out.path("export")).unwrap().count(), 0);
        let staged = out.staged("export/turns.csv").unwrap();
        assert!(is_staged_name(staged.temp.to_str().unwrap()));
        staged.commit().unwrap();
        assert!(out.path("export/turns.csv").is_file());
    }
}
