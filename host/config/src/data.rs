//! The data directory: where dataset files are found, the digests they
//! must have (the workloads' data locks, `workloads/*/data.lock`), and the
//! confinement of data grants.
//!
//! A file missing from the data directory is looked up in the agentload
//! cache's `data/` folder (`$AGENTLOAD_CACHE_DIR/data`, else
//! `~/.cache/agentload/data`), where the fetch scripts can put data when the
//! data directory is read-only.
//!
//! A grant in a config names a file relative to those two folders and
//! stays inside them: an absolute path or a `..` is refused, and a path
//! that resolves (symlinks followed) outside the folder it was found in is
//! refused, before anything is read. A user who means a file elsewhere
//! passes it on the command line (`agentload run --grant PHASE.NAME=PATH`,
//! [`read_explicit`]).

use agentload_fs::read::CappedReadError;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

/// The workloads' data locks, compiled in (file, text).
const DATA_LOCKS: [(&str, &str); 3] = [
    (
        "workloads/edge-agentic-coding/data.lock",
        include_str!("../../../workloads/edge-agentic-coding/data.lock"),
    ),
    (
        "workloads/bfcl-v4/data.lock",
        include_str!("../../../workloads/bfcl-v4/data.lock"),
    ),
    (
        "workloads/aa-replays/data.lock",
        include_str!("../../../workloads/aa-replays/data.lock"),
    ),
];

/// The folders whose files the locks name by their path under the folder
/// (`bfcl_v4/possible_answer/x.json`), not by their file name alone: a data
/// set with files of the same name in different places.
const NAMED_FOLDERS: [&str; 2] = ["bfcl_v4", "aa_replays"];

/// One workload's data lock (`workloads/README.md` describes the format);
/// the host needs only each file's name and digest.
#[derive(Debug, Deserialize)]
struct DataLock {
    files: Vec<LockedFile>,
}

#[derive(Debug, Deserialize)]
struct LockedFile {
    name: String,
    sha256: String,
}

/// Every locked file's sha256 by its name, from all the locks.
fn locked() -> &'static HashMap<String, String> {
    static LOCKED: OnceLock<HashMap<String, String>> = OnceLock::new();
    LOCKED.get_or_init(|| {
        let mut by_name = HashMap::new();
        for (file, text) in DATA_LOCKS {
            // Compiled in and parsed by a unit test: a broken lock never ships.
            let lock: DataLock =
                toml::from_str(text).unwrap_or_else(|e| panic!("{file} does not parse: {e}"));
            for f in lock.files {
                let previous = by_name.insert(f.name.clone(), f.sha256);
                assert!(previous.is_none(), "{} is locked twice ({file})", f.name);
            }
        }
        by_name
    })
}

/// Problems finding or checking a data file.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("data file {} not found (data directory {}{}); run `scripts/fetch-data.sh {}` or set AGENTLOAD_DATA_DIR", path.display(), dir.display(), fallback.as_ref().map(|f| format!(", nor in {}", f.display())).unwrap_or_default(), dir.display())]
    Missing {
        path: PathBuf,
        dir: PathBuf,
        fallback: Option<PathBuf>,
    },
    #[error("cannot read data file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("data file {} has sha256 {actual}, expected {expected} (workloads/*/data.lock)", path.display())]
    Digest {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    /// A config grant that leaves the data directory and the cache.
    #[error(
        "data grant `{file}` refused before reading: {reason}; grants stay inside the data \
         directory {} and the cache's data folder (a file elsewhere is passed explicitly: \
         agentload run --grant PHASE.NAME=PATH)",
        dir.display()
    )]
    Outside {
        file: String,
        dir: PathBuf,
        reason: String,
    },
    /// A file over the size a plugin may be granted.
    #[error(
        "data file {} is {bytes} bytes, over plugins.limits.granted_file_mib = {limit_mib} MiB",
        path.display()
    )]
    TooLarge {
        path: PathBuf,
        bytes: u64,
        limit_mib: u64,
    },
    /// A FIFO, device, socket or folder where a data file was expected.
    #[error("data file {} is a {kind}, not a plain file: refused before reading", path.display())]
    NotAFile { path: PathBuf, kind: &'static str },
}

/// A data file the user names on the command line for one grant of one
/// phase (`--grant PHASE.NAME=PATH`), outside the data directory if need be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplicitGrant {
    /// `performance` or `accuracy`.
    pub phase: String,
    /// The grant's name in `[PHASE.data]` or `[PHASE.scorer_data]`.
    pub name: String,
    pub path: PathBuf,
}

impl std::str::FromStr for ExplicitGrant {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let usage = || {
            format!(
                "`{s}`: a grant is PHASE.NAME=PATH, e.g. performance.trajectories=/data/t.jsonl"
            )
        };
        let (key, path) = s.split_once('=').ok_or_else(usage)?;
        let (phase, name) = key.split_once('.').ok_or_else(usage)?;
        if !matches!(phase, "performance" | "accuracy") || name.is_empty() || path.is_empty() {
            return Err(usage());
        }
        Ok(Self {
            phase: phase.into(),
            name: name.into(),
            path: PathBuf::from(path),
        })
    }
}

/// A data file read and checked.
#[derive(Debug, Clone)]
pub struct DataFile {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    /// `sha256:<hex>`.
    pub digest: String,
    /// The name the lock knows it by, when it does (its digest matched).
    pub locked_name: Option<String>,
}

/// The data directory: the config's `data_dir`, else `$AGENTLOAD_DATA_DIR`,
/// else `./data`.
pub fn data_dir(configured: Option<&Path>) -> PathBuf {
    if let Some(dir) = configured {
        return dir.to_path_buf();
    }
    std::env::var_os("AGENTLOAD_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("data"))
}

/// The expected sha256 of a known file name.
pub fn locked_digest(file_name: &str) -> Option<&'static str> {
    locked().get(file_name).map(String::as_str)
}

/// The name the locks know a data path by: `<folder>/<path>` for a file
/// under one of the [`NAMED_FOLDERS`] (`bfcl_v4`, `aa_replays`; the last
/// such folder in the path), else its file name.
pub fn lock_name(file: &str) -> Option<String> {
    let normalized = file.replace('\\', "/");
    let parts: Vec<&str> = normalized.split('/').collect();
    if let Some(at) = parts.iter().rposition(|p| NAMED_FOLDERS.contains(p)) {
        if at + 1 < parts.len() {
            return Some(format!("{}/{}", parts[at], parts[at + 1..].join("/")));
        }
    }
    parts
        .last()
        .filter(|n| !n.is_empty())
        .map(|n| n.to_string())
}

/// The expected sha256 of a data path, by the name the locks know it by
/// ([`lock_name`]).
pub fn expected_digest(file: &str) -> Option<&'static str> {
    locked_digest(&lock_name(file)?)
}

/// The cache's data folder, the fallback for files missing from the data
/// directory.
pub fn cache_data_dir() -> Option<PathBuf> {
    crate::paths::cache_dir().map(|d| d.join("data"))
}

/// The folder `file` is under (the data directory, else the cache's data
/// folder) and its path there.
fn find(dir: &Path, file: &str) -> Option<(PathBuf, PathBuf)> {
    std::iter::once(dir.to_path_buf())
        .chain(cache_data_dir())
        .map(|d| {
            let p = d.join(file);
            (d, p)
        })
        .find(|(_, p)| p.exists())
}

/// Where `file` is: under `dir`, else under the cache's data folder.
pub fn locate(dir: &Path, file: &str) -> Option<PathBuf> {
    find(dir, file).map(|(_, p)| p)
}

/// Why `file` may not be a config grant, if it may not: an absolute path,
/// or one with `..` (or any other non-plain part).
pub(crate) fn unconfined(file: &str) -> Option<String> {
    if file.is_empty() {
        return Some("the path is empty".into());
    }
    for part in Path::new(file).components() {
        match part {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return Some("`..` leaves the data directory".into()),
            Component::RootDir | Component::Prefix(_) => {
                return Some("an absolute path is not inside the data directory".into())
            }
        }
    }
    None
}

/// Reads a config grant `file` of at most `max_bytes`, relative to `dir`
/// (else the cache's data folder) and confined to it, and checks its
/// digest when the lock or manifest knows it.
pub fn read(dir: &Path, file: &str, max_bytes: u64) -> Result<DataFile, DataError> {
    let (path, real) = confined(dir, file)?;
    checked(&real, file, max_bytes).map(|f| DataFile { path, ..f })
}

/// Where the config grant `file` (relative to `dir`, else the cache's data folder) is,
/// and where it resolves to: refused when it is absolute, has `..`, or resolves (through
/// a link) outside the folder it was found in.
fn confined(dir: &Path, file: &str) -> Result<(PathBuf, PathBuf), DataError> {
    let outside = |reason: String| DataError::Outside {
        file: file.to_string(),
        dir: dir.to_path_buf(),
        reason,
    };
    if let Some(reason) = unconfined(file) {
        return Err(outside(reason));
    }
    let Some((base, path)) = find(dir, file) else {
        return Err(DataError::Missing {
            path: dir.join(file),
            dir: dir.to_path_buf(),
            fallback: cache_data_dir(),
        });
    };
    let io = |source| DataError::Read {
        path: path.clone(),
        source,
    };
    let real = path.canonicalize().map_err(io)?;
    let real_base = base.canonicalize().map_err(io)?;
    if !real.starts_with(&real_base) {
        return Err(outside(format!(
            "it resolves to {}, outside {}",
            real.display(),
            real_base.display()
        )));
    }
    Ok((path, real))
}

/// Whether a config grant names a folder (its path ends with `/`): every
/// plain file under it is granted ([`read_folder`]).
pub fn is_folder_grant(file: &str) -> bool {
    file.ends_with('/')
}

/// The machine's architecture as AA's replay manifests name it: `arm64` on
/// an `aarch64`/`arm64` machine, else `x86_64` (agentperf-local's choice of
/// `manifest-<arch>.json`). A grant's `{arch}` is replaced by it.
pub fn manifest_arch() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" | "arm64" => "arm64",
        _ => "x86_64",
    }
}

/// A config grant's path with `{arch}` replaced by [`manifest_arch`].
pub fn expand_grant(file: &str) -> String {
    file.replace("{arch}", manifest_arch())
}

/// Reads every plain file under the config grant `folder` (relative to
/// `dir`, else the cache's data folder, and confined to it as [`read`]
/// confines a file), in path order, each at most `max_bytes` and checked
/// against the locks; returns each with its path relative to the folder
/// (`/`-separated). A symlink is followed only when it stays inside the
/// folder; anything else that is not a plain file or a folder is refused.
pub fn read_folder(
    dir: &Path,
    folder: &str,
    max_bytes: u64,
) -> Result<Vec<(String, DataFile)>, DataError> {
    let (path, real) = confined(dir, folder)?;
    read_tree(&path, &real, folder, max_bytes)
}

/// Reads every plain file under a folder the user named on the command line
/// (`--grant PHASE.NAME=DIR`), as [`read_folder`] does, unconfined.
pub fn read_explicit_folder(
    path: &Path,
    max_bytes: u64,
) -> Result<Vec<(String, DataFile)>, DataError> {
    let real = path.canonicalize().map_err(|source| DataError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    read_tree(path, &real, &path.to_string_lossy(), max_bytes)
}

/// The files under `path` (resolved: `real`), sorted by their relative path.
fn read_tree(
    path: &Path,
    real: &Path,
    shown: &str,
    max_bytes: u64,
) -> Result<Vec<(String, DataFile)>, DataError> {
    let mut found = Vec::new();
    let mut pending = vec![String::new()];
    while let Some(sub) = pending.pop() {
        let here = real.join(&sub);
        let entries = std::fs::read_dir(&here).map_err(|source| DataError::Read {
            path: here.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| DataError::Read {
                path: here.clone(),
                source,
            })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if sub.is_empty() {
                name
            } else {
                format!("{sub}/{name}")
            };
            let target = real.join(&rel);
            let resolved = target.canonicalize().map_err(|source| DataError::Read {
                path: target.clone(),
                source,
            })?;
            if !resolved.starts_with(real) {
                return Err(DataError::Outside {
                    file: format!(
                        "{shown}{}{rel}",
                        if shown.ends_with('/') { "" } else { "/" }
                    ),
                    dir: path.to_path_buf(),
                    reason: format!(
                        "it resolves to {}, outside the granted folder {}",
                        resolved.display(),
                        real.display()
                    ),
                });
            }
            if resolved.is_dir() {
                // A folder reached through a link could lead back up the tree.
                if entry.file_type().is_ok_and(|t| t.is_symlink()) {
                    return Err(DataError::NotAFile {
                        path: target,
                        kind: "symlink to a folder",
                    });
                }
                pending.push(rel);
            } else {
                found.push(rel);
            }
        }
    }
    found.sort();
    found
        .into_iter()
        .map(|rel| {
            let file = path.join(&rel);
            let shown = format!(
                "{}{}{rel}",
                shown,
                if shown.ends_with('/') { "" } else { "/" }
            );
            checked(&real.join(&rel), &shown, max_bytes)
                .map(|f| (rel, DataFile { path: file, ..f }))
        })
        .collect()
}

/// Reads a file the user named on the command line (`--grant`): any path,
/// at most `max_bytes`, its digest checked when the lock knows its name.
pub fn read_explicit(path: &Path, max_bytes: u64) -> Result<DataFile, DataError> {
    checked(path, &path.to_string_lossy(), max_bytes)
}

/// Reads `path` (size-checked before reading and while reading) and checks
/// its digest against what the locks expect of `file`.
fn checked(path: &Path, file: &str, max_bytes: u64) -> Result<DataFile, DataError> {
    let io = |source| DataError::Read {
        path: path.to_path_buf(),
        source,
    };
    let too_large = |bytes| DataError::TooLarge {
        path: path.to_path_buf(),
        bytes,
        limit_mib: max_bytes >> 20,
    };
    let bytes = agentload_fs::read::read_capped(path, max_bytes).map_err(|e| match e {
        CappedReadError::Io(source) => io(source),
        CappedReadError::TooLarge(bytes) => too_large(bytes),
        CappedReadError::NotAFile(kind) => DataError::NotAFile {
            path: path.to_path_buf(),
            kind,
        },
    })?;
    let actual = hex::encode(Sha256::digest(&bytes));
    let expected = expected_digest(file);
    if let Some(expected) = expected {
        if expected != actual {
            return Err(DataError::Digest {
                path: path.to_path_buf(),
                expected: expected.to_string(),
                actual,
            });
        }
    }
    Ok(DataFile {
        path: path.to_path_buf(),
        bytes,
        digest: format!("sha256:{actual}"),
        locked_name: expected.and_then(|_| lock_name(file)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lock_parses_with_one_digest_per_name() {
        let locked = locked();
        // 1 trajectory file, 71 BFCL v4 files, long_context.json, 19 AA replay files.
        assert_eq!(locked.len(), 92);
        for (name, sha) in locked {
            assert!(
                sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
                "{name}: {sha}"
            );
        }
    }

    #[test]
    fn every_workload_folder_has_its_lock_compiled_in() {
        let workloads = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads");
        let mut on_disk: Vec<String> = std::fs::read_dir(&workloads)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .map(|p| {
                assert!(
                    p.join("data.lock").is_file(),
                    "{} has no data.lock",
                    p.display()
                );
                assert!(
                    p.join("README.md").is_file(),
                    "{} has no README.md",
                    p.display()
                );
                format!(
                    "workloads/{}/data.lock",
                    p.file_name().unwrap().to_string_lossy()
                )
            })
            .collect();
        on_disk.sort();
        let mut compiled: Vec<String> = DATA_LOCKS.iter().map(|(f, _)| f.to_string()).collect();
        compiled.sort();
        assert_eq!(on_disk, compiled, "add the new lock to DATA_LOCKS");
    }

    #[test]
    fn lock_names_the_edge_dataset() {
        assert_eq!(
            locked_digest("agentic_coding_2.5h.jsonl"),
            Some("b7da8c4ffbe1cabd79c4d8169e5201541e006364b4bfc016d01d893e20ee6f70")
        );
        assert_eq!(locked_digest("nope.jsonl"), None);
        assert_eq!(
            expected_digest("bfcl_v4/possible_answer/BFCL_v4_simple_java.json").map(|d| &d[..8]),
            Some("78f25616")
        );
        assert_eq!(expected_digest("bfcl_v4/nope.json"), None);
        // Written by scripts/fetch-bfcl.sh from the pinned wheel.
        assert_eq!(
            expected_digest("bfcl_v4_extra/long_context.json").map(|d| &d[..8]),
            Some("2ef89ec1")
        );
        assert_eq!(
            expected_digest("sub/agentic_coding_2.5h.jsonl"),
            locked_digest("agentic_coding_2.5h.jsonl")
        );
    }

    #[test]
    fn digest_mismatch_names_both() {
        let dir = std::env::temp_dir().join(format!("agentload-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("agentic_coding_2.5h.jsonl"), b"tampered").unwrap();
        let err = read(&dir, "agentic_coding_2.5h.jsonl", 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected b7da8c4f"), "{err}");
        let missing = read(&dir, "absent.jsonl", 1 << 20).unwrap_err().to_string();
        assert!(missing.contains("fetch-data.sh"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn grants_outside_the_data_directory_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let secret = dir.path().join("secret.txt");
        std::fs::write(&secret, b"outside").unwrap();
        for file in [
            "../secret.txt",
            "sub/../../secret.txt",
            secret.to_str().unwrap(),
            "",
        ] {
            let err = read(&data, file, 1 << 20).unwrap_err();
            assert!(matches!(err, DataError::Outside { .. }), "{file}: {err}");
            let text = err.to_string();
            assert!(text.contains(&format!("`{file}`")), "{text}");
            assert!(text.contains("--grant PHASE.NAME=PATH"), "{text}");
        }
        // A symlink inside that points outside is resolved, then refused.
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&secret, data.join("link.txt")).unwrap();
            let err = read(&data, "link.txt", 1 << 20).unwrap_err().to_string();
            assert!(
                err.contains("resolves to") && err.contains("secret.txt"),
                "{err}"
            );
            // One that stays inside is fine.
            std::fs::write(data.join("real.txt"), b"inside").unwrap();
            std::os::unix::fs::symlink(data.join("real.txt"), data.join("ok.txt")).unwrap();
            assert_eq!(read(&data, "ok.txt", 1 << 20).unwrap().bytes, b"inside");
        }
        // The same file passed explicitly is read.
        let explicit = read_explicit(&secret, 1 << 20).unwrap();
        assert_eq!(explicit.bytes, b"outside");
        assert_eq!(explicit.locked_name, None);
    }

    #[test]
    fn a_folder_grant_is_every_file_under_it_confined() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let replay = data.join("replay");
        std::fs::create_dir_all(replay.join("traces/deep")).unwrap();
        std::fs::write(replay.join("manifest.json"), b"{}").unwrap();
        std::fs::write(replay.join("traces/b.jsonl"), b"b").unwrap();
        std::fs::write(replay.join("traces/deep/a.jsonl"), b"a").unwrap();
        assert!(is_folder_grant("replay/") && !is_folder_grant("replay"));
        let got = read_folder(&data, "replay/", 1 << 20).unwrap();
        let names: Vec<&str> = got.iter().map(|(rel, _)| rel.as_str()).collect();
        assert_eq!(
            names,
            ["manifest.json", "traces/b.jsonl", "traces/deep/a.jsonl"]
        );
        assert_eq!(got[1].1.bytes, b"b");
        assert_eq!(got[1].1.path, replay.join("traces/b.jsonl"));
        // The same folder named on the command line.
        let explicit = read_explicit_folder(&replay, 1 << 20).unwrap();
        assert_eq!(explicit.len(), 3);
        // Out of the data directory: refused before reading.
        let err = read_folder(&data, "../", 1 << 20).unwrap_err();
        assert!(matches!(err, DataError::Outside { .. }), "{err}");
        #[cfg(unix)]
        {
            // A link inside that leads out of the folder is refused, naming it.
            let secret = dir.path().join("secret.txt");
            std::fs::write(&secret, b"outside").unwrap();
            std::os::unix::fs::symlink(&secret, replay.join("traces/link.jsonl")).unwrap();
            let err = read_folder(&data, "replay/", 1 << 20)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("link.jsonl") && err.contains("outside"),
                "{err}"
            );
            std::fs::remove_file(replay.join("traces/link.jsonl")).unwrap();
            // A link to a folder inside (a loop, here) is refused too.
            std::os::unix::fs::symlink(&replay, replay.join("traces/loop")).unwrap();
            let err = read_folder(&data, "replay/", 1 << 20)
                .unwrap_err()
                .to_string();
            assert!(err.contains("symlink to a folder"), "{err}");
        }
    }

    #[test]
    fn a_folder_grants_files_are_checked_against_the_locks() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("aa_replays/aa-mini-v1");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("manifest.json"), b"tampered").unwrap();
        let err = read_folder(dir.path(), "aa_replays/aa-mini-v1/", 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("has sha256") && err.contains("manifest.json"),
            "{err}"
        );
        assert_eq!(
            expand_grant("a/manifest-{arch}.json"),
            format!("a/manifest-{}.json", manifest_arch())
        );
        assert!(matches!(manifest_arch(), "x86_64" | "arm64"));
    }

    #[test]
    fn oversized_files_are_refused_naming_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big.bin"), vec![0u8; 3 << 20]).unwrap();
        let err = read(dir.path(), "big.bin", 2 << 20)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("3145728 bytes") && err.contains("granted_file_mib = 2 MiB"),
            "{err}"
        );
    }

    #[test]
    fn explicit_grants_parse_or_say_how() {
        let g: ExplicitGrant = "performance.trajectories=/d/t.jsonl".parse().unwrap();
        assert_eq!(
            (g.phase.as_str(), g.name.as_str(), g.path.to_str()),
            ("performance", "trajectories", Some("/d/t.jsonl"))
        );
        for bad in [
            "trajectories=/x",
            "perf.t=/x",
            "performance.t=",
            "performance.=x",
        ] {
            let err = bad.parse::<ExplicitGrant>().unwrap_err();
            assert!(err.contains("PHASE.NAME=PATH"), "{bad}: {err}");
        }
    }

    #[test]
    fn lock_names_follow_the_bfcl_folder_or_the_file_name() {
        assert_eq!(
            lock_name("/x/y/bfcl_v4/possible_answer/a.json").as_deref(),
            Some("bfcl_v4/possible_answer/a.json")
        );
        assert_eq!(lock_name("a/b/c.jsonl").as_deref(), Some("c.jsonl"));
        // AA's replays hold two `transcript.md`: named by their path.
        assert_eq!(
            lock_name("d/aa_replays/agentperf-default-v1/workspaces/t/transcript.md").as_deref(),
            Some("aa_replays/agentperf-default-v1/workspaces/t/transcript.md")
        );
        assert_eq!(
            expected_digest("aa_replays/agentperf-default-v1/manifest-x86_64.json")
                .map(|d| &d[..8]),
            Some("e6be01bc")
        );
        assert_eq!(lock_name("a/"), None);
    }
}
