//! Workspace archives: a task's repository as a tar file (optionally
//! gzipped), read into a base tree inside the sandbox.
//!
//! An archive is refused, naming the entry, when it tries to leave its tree
//! or carries what a repository snapshot never has: an absolute path or a
//! `..`, a link whose target is absolute or climbs out of the tree, a hard
//! link, a device or fifo, the same path twice, a file under a file, or more
//! entries or bytes than the limits allow. `agentload dataset workspace`
//! writes archives that pass; any tar that passes works.
//!
//! The archive may carry `.agentload-workspace.json` at its top, which is
//! not part of the tree: the base commit `git log` shows
//! (`{"format": "agentload-workspace/1", "commit": {"id", "author", "date",
//! "tz", "message"}}`). Without it the commit is a fixed one derived from
//! the workspace's name.

use crate::tree::{self, Dir, Node, Usage, DIR_MODE, FILE_MODE};
use serde::Deserialize;
use std::io::Read;
use std::sync::Arc;

/// The metadata entry's name.
pub const META: &str = ".agentload-workspace.json";
/// The metadata format this reader understands.
pub const FORMAT: &str = "agentload-workspace/1";

/// How much an archive may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    pub max_entries: u64,
    pub max_bytes: u64,
}

/// The commit a workspace is at.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Commit {
    /// 40 hex digits.
    pub id: String,
    /// `Name <email>`.
    pub author: String,
    /// Seconds since the Unix epoch.
    pub date: i64,
    /// `+hhmm` / `-hhmm`.
    #[serde(default = "utc")]
    pub tz: String,
    pub message: String,
}

fn utc() -> String {
    "+0000".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    format: String,
    commit: Commit,
}

/// A read archive.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The workspace's files, relative to its top.
    pub root: Arc<Dir>,
    pub usage: Usage,
    /// From the metadata entry, when the archive has one.
    pub commit: Option<Commit>,
}

/// Why an archive was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn refuse(entry: &str, why: &str) -> Refused {
    Refused(format!("entry `{entry}`: {why}"))
}

/// Reads an archive (plain tar, or gzip-compressed tar).
pub fn read(bytes: &[u8], limits: ArchiveLimits) -> Result<Snapshot, Refused> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .take(limits.max_bytes.saturating_mul(2).saturating_add(1 << 20))
            .read_to_end(&mut plain)
            .map_err(|e| Refused(format!("not a gzip file: {e}")))?;
        return read_tar(&plain, limits);
    }
    read_tar(bytes, limits)
}

fn read_tar(bytes: &[u8], limits: ArchiveLimits) -> Result<Snapshot, Refused> {
    let mut archive = tar::Archive::new(bytes);
    let entries = archive
        .entries()
        .map_err(|e| Refused(format!("not a tar file: {e}")))?;
    let mut root = Arc::new(Dir {
        entries: Default::default(),
        mode: DIR_MODE,
        mtime: 0,
    });
    let mut usage = Usage::default();
    let mut commit = None;
    let mut seen = std::collections::HashSet::new();
    for entry in entries {
        let mut entry = entry.map_err(|e| Refused(format!("not a tar file: {e}")))?;
        let raw = entry.path_bytes().into_owned();
        let name = String::from_utf8(raw).map_err(|e| {
            Refused(format!(
                "entry `{}`: the path is not UTF-8",
                String::from_utf8_lossy(e.as_bytes())
            ))
        })?;
        let path = relative(&name)?;
        let kind = entry.header().entry_type();
        if path.is_empty() {
            // `./`: the top itself.
            if kind.is_dir() {
                continue;
            }
            return Err(refuse(
                &name,
                "names the workspace's top, which is a directory",
            ));
        }
        let mtime = entry.header().mtime().unwrap_or(0) as i64;
        let mode = entry.header().mode().unwrap_or(0o644);
        if path == [META] && kind.is_file() {
            let mut text = String::new();
            entry
                .read_to_string(&mut text)
                .map_err(|e| refuse(&name, &format!("cannot read: {e}")))?;
            let meta: Meta = serde_json::from_str(&text)
                .map_err(|e| refuse(&name, &format!("invalid workspace metadata: {e}")))?;
            if meta.format != FORMAT {
                return Err(refuse(
                    &name,
                    &format!("format `{}`, this sandbox reads `{FORMAT}`", meta.format),
                ));
            }
            check_commit(&meta.commit).map_err(|why| refuse(&name, &why))?;
            commit = Some(meta.commit);
            continue;
        }
        if !seen.insert(path.clone()) {
            return Err(refuse(&name, "appears twice"));
        }
        let node = if kind.is_dir() {
            Node::Dir(Arc::new(Dir {
                entries: Default::default(),
                mode: DIR_MODE,
                mtime,
            }))
        } else if kind.is_file() || kind == tar::EntryType::Continuous {
            let size = entry.header().size().unwrap_or(0);
            if usage.bytes + size > limits.max_bytes {
                return Err(refuse(
                    &name,
                    &format!(
                        "the workspace would hold more than {} bytes",
                        limits.max_bytes
                    ),
                ));
            }
            let mut data = Vec::with_capacity(size as usize);
            entry
                .read_to_end(&mut data)
                .map_err(|e| refuse(&name, &format!("cannot read: {e}")))?;
            let mode = if mode & 0o100 != 0 { 0o755 } else { FILE_MODE };
            Node::file(data, mode, mtime)
        } else if kind.is_symlink() {
            let target = entry
                .link_name_bytes()
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap_or_default();
            check_link(&path, &target).map_err(|why| refuse(&name, &why))?;
            Node::Link(Arc::new(tree::Link { target, mtime }))
        } else if kind.is_hard_link() {
            return Err(refuse(&name, "hard links are not supported"));
        } else {
            return Err(refuse(
                &name,
                &format!("entry type {kind:?} is not a file, directory or link"),
            ));
        };
        if usage.files + usage.dirs + 1 > limits.max_entries {
            return Err(refuse(
                &name,
                &format!(
                    "the workspace would hold more than {} entries",
                    limits.max_entries
                ),
            ));
        }
        insert(&mut root, &path, node, mtime, &mut usage).map_err(|why| refuse(&name, &why))?;
    }
    Ok(Snapshot {
        root,
        usage,
        commit,
    })
}

/// An entry's path as components, refused when absolute or climbing.
fn relative(name: &str) -> Result<Vec<String>, Refused> {
    if name.starts_with('/') {
        return Err(refuse(name, "absolute paths are refused"));
    }
    let mut out = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(refuse(name, "`..` would leave the workspace")),
            part => out.push(part.to_owned()),
        }
    }
    Ok(out)
}

/// A link must stay inside the tree: relative, and resolving (from the
/// link's directory) to a path under the top.
fn check_link(path: &[String], target: &str) -> Result<(), String> {
    if target.is_empty() {
        return Err("a link without a target".into());
    }
    if target.starts_with('/') {
        return Err(format!(
            "a link to the absolute path `{target}` would leave the workspace"
        ));
    }
    let mut depth = path.len() as i64 - 1;
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("a link to `{target}` would leave the workspace"));
                }
            }
            _ => depth += 1,
        }
    }
    Ok(())
}

fn check_commit(commit: &Commit) -> Result<(), String> {
    if commit.id.len() != 40 || !commit.id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("commit id `{}` is not 40 hex digits", commit.id));
    }
    let tz = commit.tz.as_bytes();
    if tz.len() != 5 || !matches!(tz[0], b'+' | b'-') || !tz[1..].iter().all(u8::is_ascii_digit) {
        return Err(format!("commit tz `{}` is not +hhmm or -hhmm", commit.tz));
    }
    Ok(())
}

/// Puts `node` at `path`, making the directories on the way (with the
/// entry's time); a directory listed after its files merges into the one
/// they made.
fn insert(
    root: &mut Arc<Dir>,
    path: &[String],
    node: Node,
    mtime: i64,
    usage: &mut Usage,
) -> Result<(), String> {
    let parts: Vec<&str> = path.iter().map(String::as_str).collect();
    let (last, dirs) = parts.split_last().expect("a non-empty path");
    for depth in 1..=dirs.len() {
        match tree::lookup(root, &parts[..depth]) {
            Ok(tree::Found::Dir(_)) => {}
            Ok(_) => return Err(format!("`{}` is not a directory", parts[..depth].join("/"))),
            Err(_) => {
                let dir = Node::empty_dir(mtime);
                usage.add(&dir);
                tree::put(root, &parts[..depth], Some(dir), mtime).map_err(|m| format!("{m:?}"))?;
            }
        }
    }
    let parent = tree::walk_mut(root, dirs).map_err(|m| format!("{m:?}"))?;
    match (parent.entries.get_mut(*last), node) {
        (Some(Node::Dir(existing)), Node::Dir(new)) => {
            let existing = Arc::make_mut(existing);
            existing.mode = new.mode;
            existing.mtime = new.mtime;
        }
        (Some(_), _) => return Err("appears twice".into()),
        (None, node) => {
            usage.add(&node);
            parent.entries.insert((*last).to_owned(), node);
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const LIMITS: ArchiveLimits = ArchiveLimits {
        max_entries: 1000,
        max_bytes: 1 << 20,
    };

    /// A tar of `entries`: (path, kind, contents or link target).
    pub(crate) fn tar_of(entries: &[(&str, char, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, kind, body) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_mtime(1_700_000_000);
            match kind {
                'f' | 'x' => {
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_mode(if *kind == 'x' { 0o755 } else { 0o644 });
                    header.set_size(body.len() as u64);
                }
                'd' => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_mode(0o755);
                    header.set_size(0);
                }
                'l' | 'h' => {
                    header.set_entry_type(if *kind == 'l' {
                        tar::EntryType::Symlink
                    } else {
                        tar::EntryType::Link
                    });
                    header.set_size(0);
                    header.set_link_name_literal(body).unwrap();
                }
                'p' => {
                    header.set_entry_type(tar::EntryType::Fifo);
                    header.set_size(0);
                }
                _ => unreachable!(),
            }
            // Written by hand so traversal names reach the reader as given.
            let name = path.as_bytes();
            header.as_old_mut().name[..name.len()].copy_from_slice(name);
            header.set_cksum();
            let data: &[u8] = if matches!(kind, 'f' | 'x') {
                body.as_bytes()
            } else {
                &[]
            };
            builder.append(&header, data).unwrap();
        }
        builder.into_inner().unwrap()
    }

    fn refused(entries: &[(&str, char, &str)]) -> String {
        read(&tar_of(entries), LIMITS).unwrap_err().0
    }

    #[test]
    fn a_plain_repository_reads_into_a_tree() {
        let snap = read(
            &tar_of(&[
                ("./", 'd', ""),
                ("src/", 'd', ""),
                ("src/main.py", 'f', "print(1)\n"),
                ("run.sh", 'x', "#!/bin/sh\n"),
                ("docs/readme", 'f', "hi"),
                ("link", 'l', "src/main.py"),
            ]),
            LIMITS,
        )
        .unwrap();
        let names: Vec<String> = tree::files(&snap.root)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(names, ["docs/readme", "link", "run.sh", "src/main.py"]);
        let tree::Found::File(run) = tree::lookup(&snap.root, &["run.sh"]).unwrap() else {
            panic!()
        };
        assert!(run.executable());
        assert_eq!(snap.usage.files, 4);
        assert_eq!(snap.usage.dirs, 2);
        assert!(snap.commit.is_none());
    }

    #[test]
    fn archives_that_leave_the_tree_are_refused_naming_the_entry() {
        assert_eq!(
            refused(&[("../evil", 'f', "x")]),
            "entry `../evil`: `..` would leave the workspace"
        );
        assert_eq!(
            refused(&[("a/../../evil", 'f', "x")]),
            "entry `a/../../evil`: `..` would leave the workspace"
        );
        assert_eq!(
            refused(&[("/etc/passwd", 'f', "x")]),
            "entry `/etc/passwd`: absolute paths are refused"
        );
        assert_eq!(
            refused(&[("l", 'l', "/etc/passwd")]),
            "entry `l`: a link to the absolute path `/etc/passwd` would leave the workspace"
        );
        assert_eq!(
            refused(&[("a/l", 'l', "../../x")]),
            "entry `a/l`: a link to `../../x` would leave the workspace"
        );
        assert_eq!(
            refused(&[("h", 'h', "x")]),
            "entry `h`: hard links are not supported"
        );
        assert!(refused(&[("p", 'p', "")]).starts_with("entry `p`: entry type"));
        assert_eq!(
            refused(&[("f", 'f', "1"), ("f", 'f', "2")]),
            "entry `f`: appears twice"
        );
        assert_eq!(
            refused(&[("f", 'f', "1"), ("f/g", 'f', "2")]),
            "entry `f/g`: `f` is not a directory"
        );
        // A link inside the tree, climbing and coming back, is fine.
        assert!(read(&tar_of(&[("a/b/l", 'l', "../../c")]), LIMITS).is_ok());
    }

    #[test]
    fn limits_and_garbage_are_refused() {
        let small = ArchiveLimits {
            max_entries: 2,
            max_bytes: 4,
        };
        let e = read(&tar_of(&[("a", 'f', "12345")]), small).unwrap_err().0;
        assert_eq!(e, "entry `a`: the workspace would hold more than 4 bytes");
        let e = read(
            &tar_of(&[("a", 'f', ""), ("b", 'f', ""), ("c", 'f', "")]),
            small,
        )
        .unwrap_err()
        .0;
        assert_eq!(e, "entry `c`: the workspace would hold more than 2 entries");
        let e = read(b"\x1f\x8bgarbage", LIMITS).unwrap_err().0;
        assert!(e.starts_with("not a gzip file"), "{e}");
    }

    #[test]
    fn the_metadata_entry_gives_the_commit_and_is_not_a_file() {
        let meta = r#"{"format": "agentload-workspace/1", "commit": {"id": "0123456789abcdef0123456789abcdef01234567", "author": "A U Thor <a@example.com>", "date": 1700000000, "tz": "+0100", "message": "Fix it\n"}}"#;
        let snap = read(&tar_of(&[(META, 'f', meta), ("f", 'f', "x")]), LIMITS).unwrap();
        assert_eq!(snap.commit.unwrap().tz, "+0100");
        assert_eq!(tree::files(&snap.root).len(), 1);
        let bad = meta.replace("agentload-workspace/1", "agentload-workspace/9");
        assert!(refused(&[(META, 'f', &bad)]).contains("this sandbox reads"));
    }
}
