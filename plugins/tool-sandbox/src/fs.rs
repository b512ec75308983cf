//! A session's filesystem: bashkit's [`FileSystem`] over the session's
//! [tree](crate::tree), with the session's quota and virtual clock.
//!
//! This layer never follows links (bashkit's own outer layer does, in the
//! sandbox's namespace only: a link can name no host path). A path through a
//! link answers "not found" so that layer resolves it, as bashkit's
//! in-memory filesystem does. `/dev/null`, `/dev/zero` and `/dev/urandom`
//! are answered here: writes to the first two vanish, `/dev/zero` reads as
//! one byte more zeros than a file may hold (at most 64 MiB), `/dev/urandom`
//! as 64 KiB from the session's seeded generator. Every write is checked against the quota before it changes
//! anything, so a full sandbox fails the write ("No space left on device")
//! and keeps what it had.

use crate::clock::Clock;
use crate::tree::{self, Dir, Found, Miss, Node, Usage, FILE_MODE};
use bashkit::{
    async_trait, DirEntry, FileSystem, FileSystemExt, FileType, FsLimits, FsUsage, Metadata,
};
use std::io::{Error as IoError, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a session may hold, on top of its workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Bytes of file contents in the whole tree.
    pub max_bytes: u64,
    /// Bytes of one file.
    pub max_file_bytes: u64,
    /// Files, links and directories in the whole tree.
    pub max_entries: u64,
}

/// The most bytes `/dev/zero` reads as (it reads as one byte more than a
/// file may hold, so copying it into a file fills the sandbox, as copying
/// an endless device fills a disk).
const DEV_ZERO_MAX: u64 = 64 << 20;
/// Bytes `/dev/urandom` and `/dev/random` read as.
const DEV_RANDOM_BYTES: usize = 64 << 10;
/// Longest file name, and longest path, the sandbox accepts.
const MAX_NAME: usize = 255;
const MAX_PATH: usize = 4096;

/// The devices answered here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Device {
    Null,
    Zero,
    Random,
}

fn device(path: &[&str]) -> Option<Device> {
    match path {
        ["dev", "null"] => Some(Device::Null),
        ["dev", "zero"] => Some(Device::Zero),
        ["dev", "urandom" | "random"] => Some(Device::Random),
        _ => None,
    }
}

/// A session's tree and what goes with it.
#[derive(Debug)]
pub struct State {
    pub root: Arc<Dir>,
    pub usage: Usage,
    pub quota: Quota,
    /// Where `/dev/urandom`'s bytes come from.
    random: crate::rng::SplitMix,
}

/// The filesystem bashkit sees for one session.
#[derive(Debug)]
pub struct SessionFs {
    state: Mutex<State>,
    clock: Arc<Clock>,
}

type Result<T> = bashkit::Result<T>;

fn not_found() -> bashkit::Error {
    IoError::new(ErrorKind::NotFound, "No such file or directory").into()
}

fn miss(m: Miss) -> bashkit::Error {
    match m {
        Miss::NotDir => IoError::new(ErrorKind::NotADirectory, "Not a directory").into(),
        Miss::Missing | Miss::NoParent | Miss::Link => not_found(),
    }
}

fn other(message: &str) -> bashkit::Error {
    IoError::other(message.to_owned()).into()
}

fn full(what: String) -> bashkit::Error {
    IoError::new(
        ErrorKind::StorageFull,
        format!("No space left on device ({what})"),
    )
    .into()
}

/// A path's components, checked against the name and length limits.
fn parts(path: &Path) -> Result<Vec<String>> {
    let text = path.to_string_lossy();
    if text.len() > MAX_PATH {
        return Err(IoError::new(ErrorKind::InvalidInput, "File name too long").into());
    }
    let parts: Vec<String> = tree::components(&text)
        .into_iter()
        .map(str::to_owned)
        .collect();
    if parts.iter().any(|p| p.len() > MAX_NAME) {
        return Err(IoError::new(ErrorKind::InvalidInput, "File name too long").into());
    }
    Ok(parts)
}

fn refs(parts: &[String]) -> Vec<&str> {
    parts.iter().map(String::as_str).collect()
}

fn time(secs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    }
}

fn metadata(found: Found<'_>) -> Metadata {
    let (file_type, size, mode, mtime) = match found {
        Found::Dir(d) => (FileType::Directory, 4096, d.mode, d.mtime),
        Found::File(f) => (FileType::File, f.data.len() as u64, f.mode, f.mtime),
        Found::Link(l) => (FileType::Symlink, l.target.len() as u64, 0o777, l.mtime),
    };
    Metadata {
        file_type,
        size,
        mode,
        modified: time(mtime),
        created: time(mtime),
    }
}

fn device_metadata() -> Metadata {
    Metadata {
        file_type: FileType::File,
        size: 0,
        mode: 0o666,
        modified: UNIX_EPOCH,
        created: UNIX_EPOCH,
    }
}

impl SessionFs {
    /// A session over `root` (the workspace's tree, shared until changed).
    pub fn new(root: Arc<Dir>, usage: Usage, quota: Quota, clock: Arc<Clock>, seed: u64) -> Self {
        Self {
            state: Mutex::new(State {
                root,
                usage,
                quota,
                random: crate::rng::SplitMix::new(seed ^ 0x6465_762f_7572_616e),
            }),
            clock,
        }
    }

    /// The session's state (its tree, for git and the editor).
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session's clock.
    pub fn clock(&self) -> &Arc<Clock> {
        &self.clock
    }

    fn now(&self) -> i64 {
        self.clock.now_secs()
    }
}

impl State {
    /// Checks that the tree may grow by `bytes` and `entries`.
    fn admit(&self, bytes_after: u64, entries_added: u64) -> Result<()> {
        if bytes_after > self.quota.max_bytes {
            return Err(full(format!(
                "the sandbox holds at most {} bytes",
                self.quota.max_bytes
            )));
        }
        let entries = self.usage.files + self.usage.dirs;
        if entries_added > 0 && entries + entries_added > self.quota.max_entries {
            return Err(full(format!(
                "the sandbox holds at most {} files and directories",
                self.quota.max_entries
            )));
        }
        Ok(())
    }

    /// Replaces the file or link at `path` (whose parent is a directory) with `node`.
    fn put_leaf(&mut self, path: &[&str], node: Node) -> Result<()> {
        let (last, dirs) = path.split_last().ok_or_else(|| other("Is a directory"))?;
        let old = match tree::lookup(&self.root, path) {
            Ok(found) => Some(found.node()),
            Err(Miss::Missing) => None,
            Err(m) => return Err(miss(m)),
        };
        if let Some(Node::Dir(_)) = old {
            return Err(other("Is a directory"));
        }
        let old_bytes = old.as_ref().map_or(0, leaf_bytes);
        let new_bytes = leaf_bytes(&node);
        if let Node::File(f) = &node {
            if f.data.len() as u64 > self.quota.max_file_bytes {
                return Err(full(format!(
                    "one file holds at most {} bytes",
                    self.quota.max_file_bytes
                )));
            }
        }
        let bytes_after = self.usage.bytes - old_bytes + new_bytes;
        self.admit(bytes_after, u64::from(old.is_none()))?;
        let dir = tree::walk_mut(&mut self.root, dirs).map_err(miss)?;
        dir.entries.insert((*last).to_owned(), node);
        self.usage.bytes = bytes_after;
        if old.is_none() {
            self.usage.files += 1;
        }
        Ok(())
    }

    /// Takes what is at `path` out of the tree.
    fn take(&mut self, path: &[&str]) -> Result<Node> {
        let (last, dirs) = path
            .split_last()
            .ok_or_else(|| other("Device or resource busy"))?;
        let dir = tree::walk_mut(&mut self.root, dirs).map_err(miss)?;
        let node = dir.entries.remove(*last).ok_or_else(not_found)?;
        self.usage.remove(&node);
        Ok(node)
    }

    /// Puts `node` (and everything under it) at `path`, whose parent is a directory.
    fn place(&mut self, path: &[&str], node: Node) -> Result<()> {
        let (last, dirs) = path
            .split_last()
            .ok_or_else(|| other("Device or resource busy"))?;
        let dir = tree::walk_mut(&mut self.root, dirs).map_err(miss)?;
        if let Some(old) = dir.entries.insert((*last).to_owned(), node.clone()) {
            self.usage.remove(&old);
        }
        self.usage.add(&node);
        Ok(())
    }

    /// The parent of `path` must be a directory.
    fn parent_dir(&self, path: &[&str]) -> Result<()> {
        let dirs = &path[..path.len().saturating_sub(1)];
        tree::walk(&self.root, dirs).map(|_| ()).map_err(miss)
    }
}

/// Bytes a file or link counts for.
fn leaf_bytes(node: &Node) -> u64 {
    match node {
        Node::File(f) => f.data.len() as u64,
        Node::Link(l) => l.target.len() as u64,
        Node::Dir(_) => 0,
    }
}

#[async_trait]
impl FileSystemExt for SessionFs {
    fn usage(&self) -> FsUsage {
        let s = self.lock();
        FsUsage::new(s.usage.bytes, s.usage.files, s.usage.dirs)
    }

    fn limits(&self) -> FsLimits {
        let s = self.lock();
        let mut limits = FsLimits::unlimited();
        limits.max_total_bytes = s.quota.max_bytes;
        limits.max_file_size = s.quota.max_file_bytes;
        limits.max_file_count = s.quota.max_entries;
        limits
    }

    fn backend_kind(&self) -> &'static str {
        "agentload-tree"
    }
}

#[async_trait]
impl FileSystem for SessionFs {
    async fn read_file(&self, path: &Path) -> Result<Vec<u8>> {
        let parts = parts(path)?;
        let path = refs(&parts);
        let mut s = self.lock();
        match device(&path) {
            Some(Device::Null) => return Ok(Vec::new()),
            Some(Device::Zero) => {
                let n = (s.quota.max_file_bytes + 1).min(DEV_ZERO_MAX);
                return Ok(vec![0; n as usize]);
            }
            Some(Device::Random) => return Ok(s.random.bytes(DEV_RANDOM_BYTES)),
            None => {}
        }
        match tree::lookup(&s.root, &path).map_err(miss)? {
            Found::File(f) => Ok(f.data.to_vec()),
            Found::Dir(_) => Err(other("Is a directory")),
            Found::Link(_) => Err(not_found()),
        }
    }

    async fn write_file(&self, path: &Path, content: &[u8]) -> Result<()> {
        let parts = parts(path)?;
        let path = refs(&parts);
        if device(&path).is_some() {
            return Ok(());
        }
        let now = self.now();
        let mut s = self.lock();
        let mode = match tree::lookup(&s.root, &path) {
            Ok(Found::File(f)) => f.mode,
            _ => FILE_MODE,
        };
        s.put_leaf(&path, Node::file(content.to_vec(), mode, now))
    }

    async fn append_file(&self, path: &Path, content: &[u8]) -> Result<()> {
        let parts = parts(path)?;
        let path = refs(&parts);
        if device(&path).is_some() {
            return Ok(());
        }
        let now = self.now();
        let mut s = self.lock();
        let (mut data, mode) = match tree::lookup(&s.root, &path) {
            Ok(Found::File(f)) => (f.data.to_vec(), f.mode),
            Ok(Found::Dir(_)) => return Err(other("Is a directory")),
            _ => (Vec::new(), FILE_MODE),
        };
        let grown = data.len() as u64 + content.len() as u64;
        if grown > s.quota.max_file_bytes
            || s.usage.bytes + content.len() as u64 > s.quota.max_bytes
        {
            // Refused before the copy below is made.
            s.admit(s.usage.bytes + content.len() as u64, 0)?;
            return Err(full(format!(
                "one file holds at most {} bytes",
                s.quota.max_file_bytes
            )));
        }
        data.extend_from_slice(content);
        s.put_leaf(&path, Node::file(data, mode, now))
    }

    async fn mkdir(&self, path: &Path, recursive: bool) -> Result<()> {
        let parts = parts(path)?;
        let path = refs(&parts);
        let now = self.now();
        let mut s = self.lock();
        if recursive {
            for depth in 1..=path.len() {
                match tree::lookup(&s.root, &path[..depth]) {
                    Ok(Found::Dir(_)) => {}
                    Ok(_) => {
                        return Err(IoError::new(ErrorKind::AlreadyExists, "File exists").into())
                    }
                    Err(Miss::Missing) => {
                        s.admit(s.usage.bytes, 1)?;
                        s.place(&path[..depth], Node::empty_dir(now))?;
                    }
                    Err(m) => return Err(miss(m)),
                }
            }
            return Ok(());
        }
        match tree::lookup(&s.root, &path) {
            Ok(_) => Err(IoError::new(ErrorKind::AlreadyExists, "File exists").into()),
            Err(Miss::Missing) => {
                s.admit(s.usage.bytes, 1)?;
                s.place(&path, Node::empty_dir(now))
            }
            Err(m) => Err(miss(m)),
        }
    }

    async fn remove(&self, path: &Path, recursive: bool) -> Result<()> {
        let parts = parts(path)?;
        let path = refs(&parts);
        if path.is_empty() {
            return Err(
                IoError::new(ErrorKind::PermissionDenied, "Device or resource busy").into(),
            );
        }
        let mut s = self.lock();
        match tree::lookup(&s.root, &path).map_err(miss)? {
            Found::Dir(d) if !recursive && !d.entries.is_empty() => {
                Err(other("directory not empty"))
            }
            _ => s.take(&path).map(|_| ()),
        }
    }

    async fn stat(&self, path: &Path) -> Result<Metadata> {
        let parts = parts(path)?;
        let path = refs(&parts);
        if device(&path).is_some() {
            return Ok(device_metadata());
        }
        let s = self.lock();
        tree::lookup(&s.root, &path).map(metadata).map_err(miss)
    }

    async fn read_dir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        let parts = parts(path)?;
        let path = refs(&parts);
        let s = self.lock();
        match tree::lookup(&s.root, &path).map_err(miss)? {
            Found::Dir(d) => Ok(d
                .entries
                .iter()
                .map(|(name, node)| DirEntry {
                    name: name.clone(),
                    metadata: metadata(match node {
                        Node::Dir(d) => Found::Dir(d),
                        Node::File(f) => Found::File(f),
                        Node::Link(l) => Found::Link(l),
                    }),
                })
                .collect()),
            Found::File(_) => Err(IoError::new(ErrorKind::NotADirectory, "Not a directory").into()),
            Found::Link(_) => Err(not_found()),
        }
    }

    async fn exists(&self, path: &Path) -> Result<bool> {
        let parts = parts(path)?;
        let path = refs(&parts);
        if device(&path).is_some() {
            return Ok(true);
        }
        let s = self.lock();
        Ok(tree::lookup(&s.root, &path).is_ok())
    }

    async fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let (from_parts, to_parts) = (parts(from)?, parts(to)?);
        let (from, to) = (refs(&from_parts), refs(&to_parts));
        let mut s = self.lock();
        let moving = tree::lookup(&s.root, &from).map_err(miss)?.node();
        if from == to {
            return Ok(());
        }
        if from.is_empty() || to.is_empty() {
            return Err(
                IoError::new(ErrorKind::PermissionDenied, "Device or resource busy").into(),
            );
        }
        s.parent_dir(&to)?;
        let is_dir = matches!(moving, Node::Dir(_));
        if is_dir && to.starts_with(&from) {
            return Err(IoError::new(
                ErrorKind::InvalidInput,
                "cannot move a directory into itself",
            )
            .into());
        }
        match tree::lookup(&s.root, &to) {
            Ok(Found::Dir(d)) if is_dir && !d.entries.is_empty() => {
                return Err(other("directory not empty"))
            }
            Ok(Found::Dir(_)) if !is_dir => {
                return Err(other("cannot overwrite directory with non-directory"))
            }
            Ok(Found::File(_) | Found::Link(_)) if is_dir => {
                return Err(other("cannot overwrite non-directory with directory"))
            }
            _ => {}
        }
        // A move never grows the tree beyond what it held (a replaced
        // destination only frees bytes), so the quota has nothing to say.
        let node = s.take(&from)?;
        s.place(&to, node)
    }

    async fn copy(&self, from: &Path, to: &Path) -> Result<()> {
        let (from_parts, to_parts) = (parts(from)?, parts(to)?);
        let (from, to) = (refs(&from_parts), refs(&to_parts));
        let now = self.now();
        let mut s = self.lock();
        let node = match tree::lookup(&s.root, &from).map_err(miss)? {
            Found::Dir(_) => return Err(other("cannot copy directory")),
            // The copy shares the bytes; only its time is its own.
            Found::File(f) => Node::File(Arc::new(tree::File {
                data: f.data.clone(),
                mode: f.mode,
                mtime: now,
            })),
            Found::Link(l) => Node::Link(l.clone()),
        };
        if let Ok(Found::Dir(_)) = tree::lookup(&s.root, &to) {
            return Err(other("cannot copy file over directory"));
        }
        s.parent_dir(&to)?;
        s.put_leaf(&to, node)
    }

    async fn symlink(&self, target: &Path, link: &Path) -> Result<()> {
        let parts = parts(link)?;
        let path = refs(&parts);
        let now = self.now();
        let mut s = self.lock();
        s.parent_dir(&path)?;
        if tree::lookup(&s.root, &path).is_ok() {
            return Err(IoError::new(ErrorKind::AlreadyExists, "File exists").into());
        }
        let node = Node::Link(Arc::new(tree::Link {
            target: target.to_string_lossy().into_owned(),
            mtime: now,
        }));
        s.put_leaf(&path, node)
    }

    async fn read_link(&self, path: &Path) -> Result<PathBuf> {
        let parts = parts(path)?;
        let path = refs(&parts);
        let s = self.lock();
        match tree::lookup(&s.root, &path).map_err(miss)? {
            Found::Link(l) => Ok(PathBuf::from(&l.target)),
            _ => Err(IoError::new(ErrorKind::InvalidInput, "Invalid argument").into()),
        }
    }

    async fn chmod(&self, path: &Path, mode: u32) -> Result<()> {
        self.retouch(path, |node| match node {
            Node::File(f) => Arc::make_mut(f).mode = mode & 0o7777,
            Node::Dir(d) => Arc::make_mut(d).mode = mode & 0o7777,
            Node::Link(_) => {}
        })
    }

    async fn set_modified_time(&self, path: &Path, time: SystemTime) -> Result<()> {
        let secs = match time.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_secs() as i64,
            Err(e) => -(e.duration().as_secs() as i64),
        };
        self.retouch(path, |node| match node {
            Node::File(f) => Arc::make_mut(f).mtime = secs,
            Node::Dir(d) => Arc::make_mut(d).mtime = secs,
            Node::Link(l) => Arc::make_mut(l).mtime = secs,
        })
    }
}

impl SessionFs {
    /// Changes the record at `path` in place (its contents stay shared).
    fn retouch(&self, path: &Path, change: impl FnOnce(&mut Node)) -> Result<()> {
        let parts = parts(path)?;
        let path = refs(&parts);
        if device(&path).is_some() {
            return Ok(());
        }
        let mut s = self.lock();
        let Some((last, dirs)) = path.split_last() else {
            let mut root = Node::Dir(s.root.clone());
            change(&mut root);
            if let Node::Dir(d) = root {
                s.root = d;
            }
            return Ok(());
        };
        tree::lookup(&s.root, &path).map_err(miss)?;
        let dir = tree::walk_mut(&mut s.root, dirs).map_err(miss)?;
        let node = dir.entries.get_mut(*last).ok_or_else(not_found)?;
        change(node);
        Ok(())
    }
}

/// Top-level directories that are the sandbox's own (the skeleton's and
/// bashkit's system layer's): no workspace is mounted in them.
pub const RESERVED: &[&str] = &["tmp", "root", "dev", "etc", "proc", "bin", "usr"];

/// The sandbox's fixed directories, made in every workspace's tree: where
/// the shell's home and scratch space are, and the devices.
pub fn skeleton(root: &mut Arc<Dir>, mtime: i64) {
    for dir in [&["tmp"][..], &["root"], &["dev"]] {
        if tree::lookup(root, dir).is_err() {
            let _ = tree::put(root, dir, Some(Node::empty_dir(mtime)), mtime);
        }
    }
    if let Ok(Found::Dir(_)) = tree::lookup(root, &["tmp"]) {
        let _ = tree::walk_mut(root, &["tmp"]).map(|d| d.mode = 0o1777);
    }
    for device in ["null", "zero", "urandom", "random"] {
        let _ = tree::put(
            root,
            &["dev", device],
            Some(Node::file(Vec::new(), 0o666, mtime)),
            mtime,
        );
    }
}

/// Runs one of this filesystem's calls to its end: none of them waits on
/// anything (the tree is in memory), so the first poll finishes it.
pub fn ready<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// Links followed per lookup before giving up (Linux's `MAXSYMLINKS`).
const MAX_HOPS: usize = 40;

impl SessionFs {
    /// `path` with every link in it followed (in the sandbox's namespace:
    /// an absolute target starts at its root, `..` stops there); `None`
    /// after too many links.
    pub fn resolve(&self, path: &str) -> Option<String> {
        let s = self.lock();
        let mut pending: Vec<String> = tree::components(path)
            .into_iter()
            .rev()
            .map(str::to_owned)
            .collect();
        let mut done: Vec<String> = Vec::new();
        let mut hops = 0;
        while let Some(name) = pending.pop() {
            if name == ".." {
                done.pop();
                continue;
            }
            done.push(name);
            let refs: Vec<&str> = done.iter().map(String::as_str).collect();
            if let Ok(Found::Link(link)) = tree::lookup(&s.root, &refs) {
                hops += 1;
                if hops > MAX_HOPS {
                    return None;
                }
                done.pop();
                if link.target.starts_with('/') {
                    done.clear();
                }
                for part in link.target.split('/').rev() {
                    if !part.is_empty() && part != "." {
                        pending.push(part.to_owned());
                    }
                }
            }
        }
        Some(format!("/{}", done.join("/")))
    }
}
