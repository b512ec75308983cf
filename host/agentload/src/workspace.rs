//! `agentload dataset workspace DIR --out F`: a repository packed as a
//! workspace archive of the tool sandbox (`agentload tools exec --workspace F`).
//!
//! The archive is a plain tar (gzip-compressed when `F` ends in `.gz`),
//! written the same way every time from the same files: paths sorted,
//! owner 0, modes 0644 / 0755 (by the owner's execute bit), one time for
//! every entry (the commit's, else the sandbox's epoch), so its sha256 is a
//! lock. In a git repository it holds the files git tracks, as they are in
//! the working tree, and `.agentload-workspace.json` with the `HEAD`
//! commit (its id, author, date and message: what `git log` shows in the
//! sandbox); elsewhere, every file. `.git` is never packed. A link is
//! packed when it stays inside the tree and refused otherwise, as the
//! sandbox would refuse it; devices, fifos and sockets are refused.

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The sandbox's epoch (2026-01-01T00:00:00Z): the time of entries of a
/// tree that is not a git repository.
const EPOCH: u64 = 1_767_225_600;

/// What was packed.
#[derive(Debug)]
pub struct Packed {
    pub files: usize,
    pub bytes: u64,
    /// `sha256` of the archive, hex.
    pub sha256: String,
    /// The commit, when the tree is a git repository.
    pub commit: Option<String>,
}

struct Entry {
    path: String,
    kind: Kind,
}

enum Kind {
    File { source: PathBuf, executable: bool },
    Link(String),
}

/// Packs `dir` into `out`.
pub fn pack(dir: &Path, out: &Path) -> Result<Packed> {
    let meta = std::fs::metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    if !meta.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    let git = dir.join(".git").exists();
    let mut entries = if git {
        tracked(dir)?
    } else {
        let mut all = Vec::new();
        walk(dir, dir, &mut all)?;
        all
    };
    entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let commit = if git { Some(head(dir)?) } else { None };
    let mtime = commit.as_ref().map_or(EPOCH, |c| c.date);
    let mut builder = tar::Builder::new(Vec::new());
    builder.mode(tar::HeaderMode::Deterministic);
    if let Some(c) = &commit {
        let meta = serde_json::json!({
            "format": "agentload-workspace/1",
            "commit": {"id": c.id, "author": c.author, "date": c.date, "tz": c.tz, "message": c.message},
        });
        let text = serde_json::to_string_pretty(&meta)?;
        append(
            &mut builder,
            ".agentload-workspace.json",
            text.as_bytes(),
            0o644,
            mtime,
        )?;
    }
    let mut bytes = 0u64;
    for entry in &entries {
        match &entry.kind {
            Kind::File { source, executable } => {
                let data = std::fs::read(source)
                    .with_context(|| format!("cannot read {}", source.display()))?;
                bytes += data.len() as u64;
                let mode = if *executable { 0o755 } else { 0o644 };
                append(&mut builder, &entry.path, &data, mode, mtime)?;
            }
            Kind::Link(target) => {
                check_link(&entry.path, target)?;
                let mut header = tar::Header::new_gnu();
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_size(0);
                header.set_mode(0o777);
                header.set_mtime(mtime);
                header.set_uid(0);
                header.set_gid(0);
                builder
                    .append_link(&mut header, &entry.path, target)
                    .with_context(|| format!("cannot pack link {}", entry.path))?;
            }
        }
    }
    let tar = builder.into_inner()?;
    let archive = if out.extension().is_some_and(|e| e == "gz") {
        let mut gz = flate2::GzBuilder::new()
            .mtime(0)
            .write(Vec::new(), flate2::Compression::best());
        gz.write_all(&tar)?;
        gz.finish()?
    } else {
        tar
    };
    std::fs::write(out, &archive).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(Packed {
        files: entries.len(),
        bytes,
        sha256: hex::encode(Sha256::digest(&archive)),
        commit: commit.map(|c| c.id),
    })
}

fn append(
    builder: &mut tar::Builder<Vec<u8>>,
    path: &str,
    data: &[u8],
    mode: u32,
    mtime: u64,
) -> Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(data.len() as u64);
    header.set_mode(mode);
    header.set_mtime(mtime);
    header.set_uid(0);
    header.set_gid(0);
    builder
        .append_data(&mut header, path, data)
        .with_context(|| format!("cannot pack {path}"))
}

/// Every file under `dir` but `.git`.
fn walk(root: &Path, dir: &Path, out: &mut Vec<Entry>) -> Result<()> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .collect::<std::io::Result<_>>()?;
    names.sort_by_key(|e| e.file_name());
    for e in names {
        let path = e.path();
        if e.file_name() == ".git" {
            continue;
        }
        let rel = relative(root, &path)?;
        let kind = e.file_type()?;
        if kind.is_dir() {
            walk(root, &path, out)?;
        } else {
            out.push(entry(&path, rel)?);
        }
    }
    Ok(())
}

fn relative(root: &Path, path: &Path) -> Result<String> {
    let rel = path.strip_prefix(root)?;
    rel.to_str()
        .map(|s| s.replace('\\', "/"))
        .with_context(|| format!("{} is not a UTF-8 path", path.display()))
}

fn entry(path: &Path, rel: String) -> Result<Entry> {
    let meta = std::fs::symlink_metadata(path)?;
    let kind = if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path)?;
        Kind::Link(
            target
                .to_str()
                .with_context(|| format!("{}: the link target is not UTF-8", path.display()))?
                .to_owned(),
        )
    } else if meta.is_file() {
        use std::os::unix::fs::PermissionsExt;
        Kind::File {
            source: path.to_path_buf(),
            executable: meta.permissions().mode() & 0o100 != 0,
        }
    } else {
        bail!(
            "{} is not a file, directory or link: a workspace holds none",
            path.display()
        );
    };
    Ok(Entry { path: rel, kind })
}

/// A link must stay inside the tree, as the sandbox requires.
fn check_link(path: &str, target: &str) -> Result<()> {
    if target.starts_with('/') {
        bail!("{path}: a link to the absolute path {target} would leave the workspace");
    }
    let mut depth = path.split('/').count() as i64 - 1;
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    bail!("{path}: a link to {target} would leave the workspace");
                }
            }
            _ => depth += 1,
        }
    }
    Ok(())
}

/// The files git tracks in `dir`, as they are in the working tree.
fn tracked(dir: &Path) -> Result<Vec<Entry>> {
    let out = git(dir, &["ls-files", "-z"])?;
    let mut entries = Vec::new();
    for path in out.split('\0').filter(|p| !p.is_empty()) {
        let full = dir.join(path);
        match std::fs::symlink_metadata(&full) {
            // Deleted in the working tree: not packed.
            Err(_) => continue,
            Ok(m) if m.is_dir() => continue,
            Ok(_) => entries.push(entry(&full, path.to_owned())?),
        }
    }
    Ok(entries)
}

struct Commit {
    id: String,
    author: String,
    date: u64,
    tz: String,
    message: String,
}

fn head(dir: &Path) -> Result<Commit> {
    let out = git(
        dir,
        &["log", "-1", "--format=%H%x00%an <%ae>%x00%at%x00%ai%x00%B"],
    )?;
    let parts: Vec<&str> = out.splitn(5, '\0').collect();
    let [id, author, date, iso, message] = parts.as_slice() else {
        bail!("git log gave no commit in {}", dir.display());
    };
    let tz = iso.rsplit(' ').next().unwrap_or("+0000").to_owned();
    Ok(Commit {
        id: (*id).to_owned(),
        author: (*author).to_owned(),
        date: date.parse().context("git log's commit date")?,
        tz,
        message: message.trim_end_matches('\n').to_owned() + "\n",
    })
}

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .context("cannot run git (needed to pack a git repository)")?;
    if !out.status.success() {
        bail!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout).context("git printed something that is not UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_tree_packs_to_the_same_bytes_and_links_out_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.py"), "print(1)\n").unwrap();
        std::fs::write(root.join("b.txt"), "b").unwrap();
        std::os::unix::fs::symlink("src/a.py", root.join("link")).unwrap();
        let (one, two) = (dir.path().join("1.tar"), dir.path().join("2.tar"));
        let first = pack(&root, &one).unwrap();
        // A later time on the files changes nothing.
        std::fs::write(root.join("b.txt"), "b").unwrap();
        let second = pack(&root, &two).unwrap();
        assert_eq!(first.sha256, second.sha256);
        assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&two).unwrap());
        assert_eq!(first.files, 3);
        std::os::unix::fs::symlink("/etc/passwd", root.join("out")).unwrap();
        let e = pack(&root, &dir.path().join("3.tar"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("would leave the workspace"), "{e}");
    }

    #[test]
    fn a_git_repository_packs_its_tracked_files_and_head() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let run = |args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(root)
                .args(args)
                .env("GIT_AUTHOR_DATE", "1700000000 +0100")
                .env("GIT_COMMITTER_DATE", "1700000000 +0100")
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        run(&["init", "-q", "-b", "main"]);
        std::fs::write(root.join("kept.py"), "x = 1\n").unwrap();
        run(&["add", "kept.py"]);
        run(&[
            "-c",
            "user.name=A U Thor",
            "-c",
            "user.email=a@example.com",
            "commit",
            "-q",
            "-m",
            "First\n\nBody.",
        ]);
        std::fs::write(root.join("untracked.txt"), "u").unwrap();
        let out = root.join("w.tar");
        let packed = pack(root, &out).unwrap();
        assert_eq!(packed.files, 1);
        let mut archive = tar::Archive::new(std::fs::File::open(&out).unwrap());
        let names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [".agentload-workspace.json", "kept.py"]);
        let mut archive = tar::Archive::new(std::fs::File::open(&out).unwrap());
        let mut meta = String::new();
        std::io::Read::read_to_string(
            &mut archive.entries().unwrap().next().unwrap().unwrap(),
            &mut meta,
        )
        .unwrap();
        let meta: serde_json::Value = serde_json::from_str(&meta).unwrap();
        assert_eq!(meta["commit"]["author"], "A U Thor <a@example.com>");
        assert_eq!(meta["commit"]["date"], 1_700_000_000);
        assert_eq!(meta["commit"]["tz"], "+0100");
        assert_eq!(meta["commit"]["message"], "First\n\nBody.\n");
        assert_eq!(meta["commit"]["id"].as_str().unwrap().len(), 40);
    }
}
