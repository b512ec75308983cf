//! The workspace as a persistent tree.
//!
//! A directory holds its children in a `BTreeMap` (sorted by name, so every
//! listing is in one order), each child behind an `Arc`. A session's tree
//! starts as the workspace's base tree itself (one pointer copied) and
//! changes by path copying: writing `a/b/c` copies the directories `/`, `a`
//! and `a/b` (their maps of pointers, not what the pointers hold) and
//! nothing else, so a session costs what it changed, and comparing it with
//! the base skips every subtree both still share (`git status` and `git
//! diff` walk the changes only).

use std::collections::BTreeMap;
use std::sync::Arc;

/// Mode of a directory made in the sandbox.
pub const DIR_MODE: u32 = 0o755;
/// Mode of a file made in the sandbox.
pub const FILE_MODE: u32 = 0o644;

/// One entry of a directory.
#[derive(Debug, Clone)]
pub enum Node {
    File(Arc<File>),
    Dir(Arc<Dir>),
    Link(Arc<Link>),
}

/// A regular file. Its bytes are shared too: a `chmod` or `touch` copies
/// the record, not the contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub data: Arc<[u8]>,
    pub mode: u32,
    /// Modification time, seconds since the Unix epoch.
    pub mtime: i64,
}

/// A directory: its entries by name.
#[derive(Debug, Clone, Default)]
pub struct Dir {
    pub entries: BTreeMap<String, Node>,
    pub mode: u32,
    pub mtime: i64,
}

/// A symbolic link; its target is a path in the sandbox, never followed here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub target: String,
    pub mtime: i64,
}

impl PartialEq for Node {
    /// Equal as git sees them: the same contents and executable bit for a
    /// file, the same target for a link, the same entries for a directory
    /// (times and other mode bits do not count).
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Node::File(a), Node::File(b)) => {
                Arc::ptr_eq(a, b) || (a.data == b.data && a.executable() == b.executable())
            }
            (Node::Dir(a), Node::Dir(b)) => Arc::ptr_eq(a, b) || a.entries == b.entries,
            (Node::Link(a), Node::Link(b)) => Arc::ptr_eq(a, b) || a.target == b.target,
            _ => false,
        }
    }
}

impl File {
    /// Whether the owner may execute it (git's `100755`).
    pub fn executable(&self) -> bool {
        self.mode & 0o100 != 0
    }
}

impl Node {
    /// Whether both are the very same node (shared, not copied).
    pub fn same(&self, other: &Node) -> bool {
        match (self, other) {
            (Node::File(a), Node::File(b)) => Arc::ptr_eq(a, b),
            (Node::Dir(a), Node::Dir(b)) => Arc::ptr_eq(a, b),
            (Node::Link(a), Node::Link(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// A new empty directory.
    pub fn empty_dir(mtime: i64) -> Node {
        Node::Dir(Arc::new(Dir {
            entries: BTreeMap::new(),
            mode: DIR_MODE,
            mtime,
        }))
    }

    /// A new file.
    pub fn file(data: impl Into<Arc<[u8]>>, mode: u32, mtime: i64) -> Node {
        Node::File(Arc::new(File {
            data: data.into(),
            mode,
            mtime,
        }))
    }
}

/// The components of an absolute sandbox path: empty ones and `.` dropped,
/// `..` taking one off (never above the root).
pub fn components(path: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            name => out.push(name),
        }
    }
    out
}

/// Why a path could not be looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// Nothing at the path (its parent exists).
    Missing,
    /// A directory on the way does not exist.
    NoParent,
    /// Something on the way is a file.
    NotDir,
    /// Something on the way is a link: the caller resolves it.
    Link,
}

/// What a path names, borrowed from the tree.
#[derive(Debug, Clone, Copy)]
pub enum Found<'a> {
    Dir(&'a Arc<Dir>),
    File(&'a Arc<File>),
    Link(&'a Arc<Link>),
}

impl<'a> Found<'a> {
    /// The node, owned (a pointer copy).
    pub fn node(self) -> Node {
        match self {
            Found::Dir(d) => Node::Dir(d.clone()),
            Found::File(f) => Node::File(f.clone()),
            Found::Link(l) => Node::Link(l.clone()),
        }
    }
}

/// Looks `path` up under `root`, never following links.
pub fn lookup<'a>(root: &'a Arc<Dir>, path: &[&str]) -> Result<Found<'a>, Miss> {
    let Some((last, dirs)) = path.split_last() else {
        return Ok(Found::Dir(root));
    };
    let parent = walk(root, dirs)?;
    match parent.entries.get(*last) {
        Some(Node::Dir(d)) => Ok(Found::Dir(d)),
        Some(Node::File(f)) => Ok(Found::File(f)),
        Some(Node::Link(l)) => Ok(Found::Link(l)),
        None => Err(Miss::Missing),
    }
}

/// The directory at `path` (every component a directory).
pub fn walk<'a>(root: &'a Arc<Dir>, path: &[&str]) -> Result<&'a Arc<Dir>, Miss> {
    let mut dir = root;
    for name in path {
        dir = match dir.entries.get(*name) {
            Some(Node::Dir(d)) => d,
            Some(Node::File(_)) => return Err(Miss::NotDir),
            Some(Node::Link(_)) => return Err(Miss::Link),
            None => return Err(Miss::NoParent),
        };
    }
    Ok(dir)
}

/// The directory at `path`, made this tree's own (copied where it is shared
/// with another tree) so it can be changed.
pub fn walk_mut<'a>(root: &'a mut Arc<Dir>, path: &[&str]) -> Result<&'a mut Dir, Miss> {
    let mut dir = Arc::make_mut(root);
    for name in path {
        dir = match dir.entries.get_mut(*name) {
            Some(Node::Dir(d)) => Arc::make_mut(d),
            Some(Node::File(_)) => return Err(Miss::NotDir),
            Some(Node::Link(_)) => return Err(Miss::Link),
            None => return Err(Miss::NoParent),
        };
    }
    Ok(dir)
}

/// Sizes of a tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Bytes of file contents and link targets.
    pub bytes: u64,
    /// Files and links.
    pub files: u64,
    /// Directories (the root not counted).
    pub dirs: u64,
}

impl Usage {
    /// The sizes of everything under `dir`.
    pub fn of(dir: &Dir) -> Usage {
        let mut usage = Usage::default();
        for node in dir.entries.values() {
            usage.add(node);
        }
        usage
    }

    /// Adds `node` and everything under it.
    pub fn add(&mut self, node: &Node) {
        match node {
            Node::File(f) => {
                self.bytes += f.data.len() as u64;
                self.files += 1;
            }
            Node::Link(l) => {
                self.bytes += l.target.len() as u64;
                self.files += 1;
            }
            Node::Dir(d) => {
                self.dirs += 1;
                let inner = Usage::of(d);
                self.bytes += inner.bytes;
                self.files += inner.files;
                self.dirs += inner.dirs;
            }
        }
    }

    /// Takes `node` and everything under it away.
    pub fn remove(&mut self, node: &Node) {
        let mut gone = Usage::default();
        gone.add(node);
        self.bytes = self.bytes.saturating_sub(gone.bytes);
        self.files = self.files.saturating_sub(gone.files);
        self.dirs = self.dirs.saturating_sub(gone.dirs);
    }
}

/// The bytes a tree holds that `base` does not share with it: what a
/// session's changes cost (file contents and link targets that are its own,
/// and the directory maps it copied, at one pointer and name per entry).
pub fn own_bytes(tree: &Arc<Dir>, base: &Arc<Dir>) -> u64 {
    if Arc::ptr_eq(tree, base) {
        return 0;
    }
    let mut bytes = dir_map_bytes(tree);
    for (name, node) in &tree.entries {
        let shared = base.entries.get(name);
        bytes += match (node, shared) {
            (n, Some(b)) if n.same(b) => 0,
            (Node::Dir(d), Some(Node::Dir(b))) => own_bytes(d, b),
            (Node::Dir(d), _) => own_bytes(d, &Arc::new(Dir::default())),
            // A `chmod` or `touch`: a new record over the same bytes.
            (Node::File(f), Some(Node::File(b))) if Arc::ptr_eq(&f.data, &b.data) => {
                std::mem::size_of::<File>() as u64
            }
            (Node::File(f), _) => f.data.len() as u64,
            (Node::Link(l), _) => l.target.len() as u64,
        };
    }
    bytes
}

/// What a directory's map costs: a name and a pointer per entry.
fn dir_map_bytes(dir: &Dir) -> u64 {
    dir.entries
        .keys()
        .map(|name| (name.len() + std::mem::size_of::<Node>() + 16) as u64)
        .sum()
}

/// One difference between two trees, by path (components joined with `/`).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub path: String,
    /// The old entry (a file or link); none when added.
    pub old: Option<Node>,
    /// The new entry; none when deleted.
    pub new: Option<Node>,
}

/// The files and links that differ between `old` and `new`, in path order
/// (as git sorts them: a directory's entries right after its name). Shared
/// subtrees are skipped without looking inside.
pub fn changes(old: &Arc<Dir>, new: &Arc<Dir>) -> Vec<Change> {
    let mut out = Vec::new();
    diff_dirs(old, new, "", &mut out);
    out.sort_by(|a, b| git_order(&a.path, &b.path));
    out
}

fn diff_dirs(old: &Arc<Dir>, new: &Arc<Dir>, prefix: &str, out: &mut Vec<Change>) {
    if Arc::ptr_eq(old, new) {
        return;
    }
    let names: std::collections::BTreeSet<&String> =
        old.entries.keys().chain(new.entries.keys()).collect();
    for name in names {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        diff_nodes(old.entries.get(name), new.entries.get(name), &path, out);
    }
}

fn diff_nodes(old: Option<&Node>, new: Option<&Node>, path: &str, out: &mut Vec<Change>) {
    match (old, new) {
        (Some(a), Some(b)) if a.same(b) => {}
        (Some(Node::Dir(a)), Some(Node::Dir(b))) => diff_dirs(a, b, path, out),
        (Some(Node::Dir(a)), b) => {
            diff_dirs(a, &Arc::new(Dir::default()), path, out);
            diff_nodes(None, b, path, out);
        }
        (a, Some(Node::Dir(b))) => {
            diff_nodes(a, None, path, out);
            diff_dirs(&Arc::new(Dir::default()), b, path, out);
        }
        (None, None) => {}
        (a, b) => {
            if a != b {
                out.push(Change {
                    path: path.to_owned(),
                    old: a.cloned(),
                    new: b.cloned(),
                });
            }
        }
    }
}

/// Git's path order: byte order of the full paths (`a/b` after `a.c`, since
/// git compares tree entries with an implicit `/` after directory names,
/// which is what comparing whole paths does).
pub fn git_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.as_bytes().cmp(b.as_bytes())
}

/// Every file and link under `dir`, with its path, in git's order.
pub fn files(dir: &Arc<Dir>) -> Vec<(String, Node)> {
    let mut out = Vec::new();
    collect(dir, "", &mut out);
    out.sort_by(|a, b| git_order(&a.0, &b.0));
    out
}

fn collect(dir: &Dir, prefix: &str, out: &mut Vec<(String, Node)>) {
    for (name, node) in &dir.entries {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        match node {
            Node::Dir(d) => collect(d, &path, out),
            other => out.push((path, other.clone())),
        }
    }
}

/// Replaces (or, with `None`, removes) what is at `path` under `root`,
/// making missing directories on the way; the root itself cannot be
/// replaced this way.
pub fn put(root: &mut Arc<Dir>, path: &[&str], node: Option<Node>, mtime: i64) -> Result<(), Miss> {
    let Some((last, dirs)) = path.split_last() else {
        return Err(Miss::Missing);
    };
    let mut dir = Arc::make_mut(root);
    for name in dirs {
        let entry = dir
            .entries
            .entry((*name).to_owned())
            .or_insert_with(|| Node::empty_dir(mtime));
        dir = match entry {
            Node::Dir(d) => Arc::make_mut(d),
            Node::File(_) => return Err(Miss::NotDir),
            Node::Link(_) => return Err(Miss::Link),
        };
    }
    match node {
        Some(node) => {
            dir.entries.insert((*last).to_owned(), node);
        }
        None => {
            dir.entries.remove(*last);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> Arc<Dir> {
        let mut root = Arc::new(Dir::default());
        for (path, text) in files {
            let comps = components(path);
            put(
                &mut root,
                &comps,
                Some(Node::file(text.as_bytes().to_vec(), FILE_MODE, 0)),
                0,
            )
            .unwrap();
        }
        root
    }

    #[test]
    fn paths_are_normalised_and_never_climb_above_the_root() {
        assert_eq!(components("/a/./b//c/"), ["a", "b", "c"]);
        assert_eq!(components("/a/b/../c"), ["a", "c"]);
        assert_eq!(components("/../../etc"), ["etc"]);
        assert!(components("/").is_empty());
    }

    #[test]
    fn a_change_copies_only_its_path_and_the_rest_stays_shared() {
        let base = tree(&[("a/x", "1"), ("a/y", "2"), ("b/z", "3")]);
        let mut work = base.clone();
        put(
            &mut work,
            &["a", "x"],
            Some(Node::file(b"one".to_vec(), FILE_MODE, 5)),
            5,
        )
        .unwrap();
        // The untouched directory is the base's own node.
        assert!(work.entries["b"].same(&base.entries["b"]));
        assert!(!work.entries["a"].same(&base.entries["a"]));
        let Node::Dir(a) = &work.entries["a"] else {
            panic!()
        };
        let Node::Dir(base_a) = &base.entries["a"] else {
            panic!()
        };
        assert!(a.entries["y"].same(&base_a.entries["y"]));
        // The base did not change.
        let Found::File(x) = lookup(&base, &["a", "x"]).unwrap() else {
            panic!()
        };
        assert_eq!(&x.data[..], b"1");
    }

    #[test]
    fn changes_list_added_modified_and_deleted_files_in_git_order() {
        let base = tree(&[("a.c", "1"), ("a/b", "2"), ("d/e", "3"), ("keep", "k")]);
        let mut work = base.clone();
        put(
            &mut work,
            &["a", "b"],
            Some(Node::file(b"22".to_vec(), FILE_MODE, 0)),
            0,
        )
        .unwrap();
        put(&mut work, &["d"], None, 0).unwrap();
        put(
            &mut work,
            &["new", "f"],
            Some(Node::file(b"n".to_vec(), FILE_MODE, 0)),
            0,
        )
        .unwrap();
        // Rewritten with equal content: not a change.
        put(
            &mut work,
            &["keep"],
            Some(Node::file(b"k".to_vec(), FILE_MODE, 0)),
            0,
        )
        .unwrap();
        let paths: Vec<(String, bool, bool)> = changes(&base, &work)
            .into_iter()
            .map(|c| (c.path, c.old.is_some(), c.new.is_some()))
            .collect();
        assert_eq!(
            paths,
            [
                ("a/b".to_owned(), true, true),
                ("d/e".to_owned(), true, false),
                ("new/f".to_owned(), false, true),
            ]
        );
    }

    #[test]
    fn a_file_replaced_by_a_directory_is_a_deletion_and_additions() {
        let base = tree(&[("p", "file")]);
        let mut work = base.clone();
        put(&mut work, &["p"], None, 0).unwrap();
        put(
            &mut work,
            &["p", "q"],
            Some(Node::file(b"x".to_vec(), FILE_MODE, 0)),
            0,
        )
        .unwrap();
        let paths: Vec<String> = changes(&base, &work).into_iter().map(|c| c.path).collect();
        assert_eq!(paths, ["p", "p/q"]);
    }

    #[test]
    fn own_bytes_count_what_the_session_changed() {
        let base = tree(&[("a/x", &"1".repeat(1000)), ("b/y", &"2".repeat(1000))]);
        assert_eq!(own_bytes(&base, &base), 0);
        let mut work = base.clone();
        put(
            &mut work,
            &["a", "z"],
            Some(Node::file(vec![0; 10], FILE_MODE, 0)),
            0,
        )
        .unwrap();
        let own = own_bytes(&work, &base);
        // The new file, and the two directory maps copied on its way.
        assert!((10..200).contains(&own), "{own}");
    }

    #[test]
    fn lookups_say_why_they_miss() {
        let mut root = tree(&[("f", "x")]);
        put(
            &mut root,
            &["l"],
            Some(Node::Link(Arc::new(Link {
                target: "/f".into(),
                mtime: 0,
            }))),
            0,
        )
        .unwrap();
        assert_eq!(lookup(&root, &["nope"]).unwrap_err(), Miss::Missing);
        assert_eq!(lookup(&root, &["nope", "x"]).unwrap_err(), Miss::NoParent);
        assert_eq!(lookup(&root, &["f", "x"]).unwrap_err(), Miss::NotDir);
        assert_eq!(lookup(&root, &["l", "x"]).unwrap_err(), Miss::Link);
        assert!(matches!(lookup(&root, &["l"]), Ok(Found::Link(_))));
    }

    #[test]
    fn usage_counts_files_links_and_directories() {
        let root = tree(&[("a/b/c", "123"), ("d", "45")]);
        assert_eq!(
            Usage::of(&root),
            Usage {
                bytes: 5,
                files: 2,
                dirs: 2
            }
        );
    }
}
