//! `GorillaFileSystem` (`gorilla_file_system.py`): an in-memory directory
//! tree with shell-like commands.
//!
//! Python's object identities matter here, so the tree is an arena: `mv` of
//! a directory makes a new `Directory` that *shares* the old one's contents
//! dict (its children keep the old object as parent), and `cp` of a
//! directory gives the copy a shallow copy of the dict (the children objects
//! are shared, so writing a file in the copy changes the original).

use super::{not_ported, Globals, LongContext, Simulator};
use crate::call::Args;
use crate::py::{dict, s, Py, PyResult};

/// The public methods.
pub const METHODS: &[&str] = &[
    "cat", "cd", "cp", "diff", "du", "echo", "find", "grep", "ls", "mkdir", "mv", "pwd", "rm",
    "rmdir", "sort", "tail", "touch", "wc",
];

type NodeId = usize;
type DictId = usize;

enum Node {
    File {
        name: String,
        content: Py,
    },
    Dir {
        name: String,
        parent: Option<NodeId>,
        contents: DictId,
    },
}

/// `GorillaFileSystem`: `root`, `long_context` (and the private `_current_dir`).
#[derive(Default)]
pub struct FileSystem {
    nodes: Vec<Node>,
    dicts: Vec<Vec<(String, NodeId)>>,
    root: NodeId,
    cur: NodeId,
    long_context: bool,
}

fn error(msg: String) -> Py {
    dict([("error", s(msg))])
}

/// Python `str.splitlines()`.
pub fn splitlines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut it = text.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let brk = matches!(
            c,
            '\n' | '\r'
                | '\u{b}'
                | '\u{c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if brk {
            out.push(&text[start..i]);
            let mut end = i + c.len_utf8();
            if c == '\r' {
                if let Some((j, '\n')) = it.peek().copied() {
                    it.next();
                    end = j + 1;
                }
            }
            start = end;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

fn valid_name(name: &str) -> bool {
    !name.chars().any(|c| "|/\\?%*:\"><".contains(c))
}

fn want_str<'a>(v: &'a Py, what: &str) -> PyResult<&'a str> {
    match v {
        Py::Str(x) => Ok(x),
        _ => not_ported(&format!("{what} with a non-str argument")),
    }
}

impl FileSystem {
    fn new_dir(&mut self, name: &str, parent: Option<NodeId>) -> NodeId {
        self.dicts.push(Vec::new());
        self.nodes.push(Node::Dir {
            name: name.into(),
            parent,
            contents: self.dicts.len() - 1,
        });
        self.nodes.len() - 1
    }

    fn new_file(&mut self, name: &str, content: Py) -> NodeId {
        self.nodes.push(Node::File {
            name: name.into(),
            content,
        });
        self.nodes.len() - 1
    }

    fn name(&self, n: NodeId) -> &str {
        match &self.nodes[n] {
            Node::File { name, .. } | Node::Dir { name, .. } => name,
        }
    }

    fn is_dir(&self, n: NodeId) -> bool {
        matches!(self.nodes[n], Node::Dir { .. })
    }

    fn contents_id(&self, d: NodeId) -> DictId {
        match &self.nodes[d] {
            Node::Dir { contents, .. } => *contents,
            Node::File { .. } => unreachable!("contents of a file"),
        }
    }

    fn parent(&self, d: NodeId) -> Option<NodeId> {
        match &self.nodes[d] {
            Node::Dir { parent, .. } => *parent,
            Node::File { .. } => None,
        }
    }

    /// `name in directory.contents`.
    fn lookup(&self, d: NodeId, name: &str) -> Option<NodeId> {
        self.dicts[self.contents_id(d)]
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
    }

    /// `directory._get_item(name)`.
    fn get_item(&self, d: NodeId, name: &str) -> Option<NodeId> {
        if name == "." {
            return Some(d);
        }
        self.lookup(d, name)
    }

    /// `contents[name] = node` (dict assignment keeps an existing key's slot).
    fn insert(&mut self, d: NodeId, name: &str, node: NodeId) {
        let id = self.contents_id(d);
        match self.dicts[id].iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = node,
            None => self.dicts[id].push((name.into(), node)),
        }
    }

    fn pop(&mut self, d: NodeId, name: &str) {
        let id = self.contents_id(d);
        self.dicts[id].retain(|(k, _)| k != name);
    }

    fn add_file(&mut self, d: NodeId, name: &str, content: Py) -> PyResult<()> {
        if self.lookup(d, name).is_some() {
            return Err(format!(
                "File '{name}' already exists in directory '{}'.",
                self.name(d)
            ));
        }
        let f = self.new_file(name, content);
        self.insert(d, name, f);
        Ok(())
    }

    fn add_directory(&mut self, d: NodeId, name: &str) -> PyResult<NodeId> {
        if self.lookup(d, name).is_some() {
            return Err(format!(
                "Directory '{name}' already exists in directory '{}'.",
                self.name(d)
            ));
        }
        let n = self.new_dir(name, Some(d));
        self.insert(d, name, n);
        Ok(n)
    }

    fn file_text(&self, n: NodeId) -> PyResult<&str> {
        match &self.nodes[n] {
            Node::File {
                content: Py::Str(c),
                ..
            } => Ok(c),
            Node::File { .. } => not_ported("a file whose content is not a str"),
            Node::Dir { .. } => unreachable!("file_text of a directory"),
        }
    }

    /// The current directory's file `name`, if it is a file.
    fn file_here(&self, name: &Py) -> Option<NodeId> {
        let n = self.lookup(self.cur, name.as_str()?)?;
        (!self.is_dir(n)).then_some(n)
    }

    /// `Directory.__eq__` / `File.__eq__`: name and contents, recursively.
    fn node_eq(&self, a: NodeId, b: NodeId) -> bool {
        if a == b {
            return true;
        }
        match (&self.nodes[a], &self.nodes[b]) {
            (
                Node::File {
                    name: n1,
                    content: c1,
                },
                Node::File {
                    name: n2,
                    content: c2,
                },
            ) => n1 == n2 && crate::py::py_eq(c1, c2),
            (
                Node::Dir {
                    name: n1,
                    contents: d1,
                    ..
                },
                Node::Dir {
                    name: n2,
                    contents: d2,
                    ..
                },
            ) => {
                n1 == n2
                    && (d1 == d2
                        || (self.dicts[*d1].len() == self.dicts[*d2].len()
                            && self.dicts[*d1].iter().all(|(k, v)| {
                                self.dicts[*d2]
                                    .iter()
                                    .find(|(k2, _)| k2 == k)
                                    .is_some_and(|(_, w)| self.node_eq(*v, *w))
                            })))
            }
            _ => false,
        }
    }

    /// `_navigate_to_directory(path)`.
    fn navigate(&self, path: Option<&str>) -> Result<NodeId, Py> {
        let Some(path) = path else {
            return Ok(self.cur);
        };
        if path == "." {
            return Ok(self.cur);
        }
        if path == "/" {
            return Ok(self.root);
        }
        let mut d = if path.starts_with('/') {
            self.root
        } else {
            self.cur
        };
        for part in path.trim_matches('/').split('/') {
            match self.get_item(d, part) {
                Some(n) if self.is_dir(n) => d = n,
                _ => return Err(error(format!("cd: '{path}': No such file or directory"))),
            }
        }
        Ok(d)
    }

    fn load_directory(&mut self, current: &Py, parent: NodeId, data: &LongContext) -> PyResult<()> {
        let Py::Dict(items) = current else {
            return not_ported("a scenario directory that is not a dict");
        };
        let mut bottommost = true;
        for (k, v) in items {
            let name = k.to_str();
            match v.get("type").and_then(Py::as_str) {
                Some("directory") => {
                    bottommost = false;
                    let d = self.new_dir(&name, Some(parent));
                    let sub = v.get("contents").cloned().unwrap_or(Py::Dict(vec![]));
                    self.load_directory(&sub, d, data)?;
                    self.insert(parent, &name, d);
                }
                Some("file") => {
                    let mut content = v.get("content").cloned().unwrap_or(s(""));
                    let tail_used = data
                        .get("FILES_TAIL_USED")
                        .is_some_and(|l| crate::py::contains(l, &s(name.clone())).unwrap_or(false));
                    if self.long_context && !tail_used {
                        let ext = data.get("FILE_CONTENT_EXTENSION").cloned().unwrap_or(s(""));
                        content = crate::py::arith(&content, crate::py::Op::Add, &ext)?;
                    }
                    let f = self.new_file(&name, content);
                    self.insert(parent, &name, f);
                }
                _ => {}
            }
        }
        if bottommost && self.long_context {
            let names = data
                .get("POPULATE_FILE_EXTENSION")
                .and_then(Py::items)
                .cloned()
                .unwrap_or_default();
            for n in names {
                self.add_file(parent, &n.to_str(), s(""))?;
            }
        }
        Ok(())
    }

    /// The node as a value whose `==` is `Directory.__eq__`/`File.__eq__`
    /// (name and contents; dict order ignored).
    fn node_value(&self, n: NodeId, depth: usize) -> Py {
        match &self.nodes[n] {
            Node::File { name, content } => Py::Object(
                "File",
                vec![
                    ("name".into(), s(name.clone())),
                    ("content".into(), content.clone()),
                ],
            ),
            Node::Dir { name, contents, .. } => {
                // A directory moved into itself holds itself; stop there.
                let items = if depth > 200 {
                    Vec::new()
                } else {
                    self.dicts[*contents]
                        .iter()
                        .map(|(k, v)| (s(k.clone()), self.node_value(*v, depth + 1)))
                        .collect()
                };
                Py::Object(
                    "Directory",
                    vec![
                        ("name".into(), s(name.clone())),
                        ("contents".into(), Py::Dict(items)),
                    ],
                )
            }
        }
    }

    /// `mv` and `cp` (they differ in the checks' wording, in removing the
    /// source, and in sharing vs. copying a directory's contents dict).
    fn move_or_copy(&mut self, is_mv: bool, source: &Py, destination: &Py) -> PyResult<Py> {
        let (cmd, verb, past) = if is_mv {
            ("mv", "move", "moved")
        } else {
            ("cp", "copy", "copied")
        };
        let src = want_str(source, cmd)?.to_string();
        let dst = want_str(destination, cmd)?.to_string();
        let Some(item) = self.lookup(self.cur, &src) else {
            return Ok(error(format!(
                "{cmd}: cannot {verb} '{src}': No such file or directory"
            )));
        };
        if dst.contains('/') {
            return Ok(error(format!(
                "{cmd}: path not allowed in destination. Provide only a file or directory name."
            )));
        }
        let cur = self.cur;
        // The directory that receives the item, and its name there.
        let (target, new_name, shown) = match self.lookup(cur, &dst) {
            Some(dest) if self.is_dir(dest) => {
                // mv checks `source`, cp checks `destination/source` (never present).
                let exists = if is_mv {
                    self.lookup(dest, &src).is_some()
                } else {
                    self.lookup(dest, &format!("{dst}/{src}")).is_some()
                };
                if exists {
                    return Ok(error(format!(
                        "{cmd}: cannot {verb} '{src}' to '{dst}/{src}': File exists"
                    )));
                }
                (dest, src.clone(), format!("{dst}/{src}"))
            }
            Some(_) => {
                return Ok(error(format!(
                    "{cmd}: cannot {verb} '{src}' to '{dst}': Not a directory"
                )))
            }
            None => (cur, dst.clone(), dst.clone()),
        };
        if is_mv {
            self.pop(cur, &src);
        }
        match &self.nodes[item] {
            Node::File { content, .. } => {
                let content = content.clone();
                self.add_file(target, &new_name, content)?;
            }
            Node::Dir { contents, .. } => {
                let contents = *contents;
                let d = self.add_directory(target, &new_name)?;
                let shared = if is_mv {
                    contents
                } else {
                    self.dicts.push(self.dicts[contents].clone());
                    self.dicts.len() - 1
                };
                if let Node::Dir { contents, .. } = &mut self.nodes[d] {
                    *contents = shared;
                }
            }
        }
        Ok(dict([(
            "result",
            s(format!("'{src}' {past} to '{shown}'")),
        )]))
    }
}

impl Simulator for FileSystem {
    fn load_scenario(&mut self, sc: Py, long_context: bool, g: &mut Globals) {
        let data = &g.long_context;
        self.long_context = long_context;
        self.root = self.new_dir("/", None);
        if let Some(Py::Dict(items)) = sc.get("root") {
            if let Some((k, v)) = items.first() {
                let root = self.new_dir(&k.to_str(), None);
                let contents = v.get("contents").cloned().unwrap_or(Py::Dict(vec![]));
                // A malformed scenario would raise in Python; keep what loaded.
                let _ = self.load_directory(&contents, root, data);
                self.root = root;
            }
        }
        self.cur = self.root;
    }

    fn call(&mut self, method: &str, args: &Args, _g: &mut Globals) -> PyResult<Py> {
        let q = format!("GorillaFileSystem.{method}");
        match method {
            "pwd" => {
                args.bind(&q, &[])?;
                let mut path = Vec::new();
                let mut d = Some(self.cur);
                while let Some(n) = d {
                    path.push(self.name(n).to_string());
                    d = self.parent(n);
                }
                path.reverse();
                Ok(dict([(
                    "current_working_directory",
                    s(format!("/{}", path.join("/"))),
                )]))
            }
            "ls" => {
                let a = args.bind(&q, &[("a", Some(Py::Bool(false)))])?;
                let names: Vec<Py> = self.dicts[self.contents_id(self.cur)]
                    .iter()
                    .filter(|(k, _)| a[0].truthy() || !k.starts_with('.'))
                    .map(|(k, _)| s(k.clone()))
                    .collect();
                Ok(dict([("current_directory_content", Py::List(names))]))
            }
            "cd" => {
                let a = args.bind(&q, &[("folder", None)])?;
                let Py::Str(folder) = &a[0] else {
                    return Err(format!(
                        "'{}' object has no attribute 'rstrip'",
                        a[0].type_name()
                    ));
                };
                let mut folder = folder.trim_end_matches('/').to_string();
                if folder.is_empty() {
                    folder = "/".into();
                }
                if ![".", "..", "/"].contains(&folder.as_str()) && folder.contains('/') {
                    return Ok(error(format!(
                        "cd: {folder}: Unsupported path. Only one folder level at a time is supported."
                    )));
                }
                if folder == ".." {
                    if let Some(p) = self.parent(self.cur) {
                        self.cur = p;
                    } else if self.node_eq(self.root, self.cur) {
                        return Ok(error(
                            "Current directory is already the root. Cannot go back.".into(),
                        ));
                    } else {
                        return Ok(error("cd: ..: No such directory".into()));
                    }
                    return Ok(Py::Dict(vec![]));
                }
                match self.navigate(Some(&folder)) {
                    Err(e) => Ok(e),
                    Ok(d) => {
                        self.cur = d;
                        Ok(dict([("current_working_directory", s(self.name(d)))]))
                    }
                }
            }
            "mkdir" | "touch" => {
                let a = args.bind(
                    &q,
                    &[(
                        if method == "mkdir" {
                            "dir_name"
                        } else {
                            "file_name"
                        },
                        None,
                    )],
                )?;
                let name = want_str(&a[0], method)?;
                let what = if method == "mkdir" {
                    format!("mkdir: cannot create directory '{name}'")
                } else {
                    format!("touch: cannot touch '{name}'")
                };
                if !valid_name(name) {
                    return Ok(error(format!("{what}: Invalid character")));
                }
                if self.lookup(self.cur, name).is_some() {
                    return Ok(error(format!("{what}: File exists")));
                }
                let name = name.to_string();
                if method == "mkdir" {
                    self.add_directory(self.cur, &name)?;
                } else {
                    self.add_file(self.cur, &name, s(""))?;
                }
                Ok(Py::None)
            }
            "echo" => {
                let a = args.bind(&q, &[("content", None), ("file_name", Some(Py::None))])?;
                if matches!(a[1], Py::None) {
                    return Ok(dict([("terminal_output", a[0].clone())]));
                }
                let name = want_str(&a[1], "echo")?;
                if !valid_name(name) {
                    return Ok(error(format!(
                        "echo: cannot write to '{name}': Invalid character"
                    )));
                }
                if name.is_empty() {
                    return Ok(dict([("terminal_output", a[0].clone())]));
                }
                match self.lookup(self.cur, name) {
                    None => Ok(error(format!(
                        "echo: cannot write to '{name}': No such file"
                    ))),
                    Some(n) => match &mut self.nodes[n] {
                        Node::File { content, .. } => {
                            *content = a[0].clone();
                            Ok(Py::None)
                        }
                        Node::Dir { .. } => {
                            Err("'Directory' object has no attribute '_write'".into())
                        }
                    },
                }
            }
            "cat" => {
                let a = args.bind(&q, &[("file_name", None)])?;
                let name = want_str(&a[0], "cat")?;
                if !valid_name(name) {
                    return Ok(error(format!("cat: '{name}': Invalid character")));
                }
                match self.lookup(self.cur, name) {
                    None => Ok(error(format!("cat: '{name}': No such file or directory"))),
                    Some(n) => match &self.nodes[n] {
                        Node::File { content, .. } => Ok(dict([("file_content", content.clone())])),
                        Node::Dir { .. } => Ok(error(format!("cat: '{name}': Is a directory"))),
                    },
                }
            }
            "find" => {
                let a = args.bind(&q, &[("path", Some(s("."))), ("name", Some(Py::None))])?;
                let path = want_str(&a[0], "find")?;
                let pattern = match &a[1] {
                    Py::None => None,
                    Py::Str(x) => Some(x.clone()),
                    _ => return not_ported("find with a non-str name"),
                };
                let start = match self.navigate(Some(path)) {
                    Ok(d) => d,
                    Err(e) => {
                        let msg = e.get("error").and_then(Py::as_str).unwrap_or("");
                        if let Some(rest) = msg.strip_prefix("cd:") {
                            return Ok(error(format!("find:{rest}")));
                        }
                        return Ok(e);
                    }
                };
                let mut matches = Vec::new();
                let mut stack = vec![(start, path.trim_end_matches('/').to_string())];
                // Depth-first, in dict order: recurse right after each directory.
                fn walk(
                    fs: &FileSystem,
                    d: NodeId,
                    base: &str,
                    pattern: &Option<String>,
                    out: &mut Vec<Py>,
                    depth: usize,
                ) {
                    if depth > 500 {
                        return;
                    }
                    for (k, v) in &fs.dicts[fs.contents_id(d)] {
                        let p = format!("{base}/{k}");
                        if pattern.as_ref().is_none_or(|pat| k.contains(pat.as_str())) {
                            out.push(s(p.clone()));
                        }
                        if fs.is_dir(*v) {
                            walk(fs, *v, &p, pattern, out, depth + 1);
                        }
                    }
                }
                if let Some((d, base)) = stack.pop() {
                    walk(self, d, &base, &pattern, &mut matches, 0);
                }
                Ok(dict([("matches", Py::List(matches))]))
            }
            "wc" => {
                let a = args.bind(&q, &[("file_name", None), ("mode", Some(s("l")))])?;
                let mode = a[1].as_str().unwrap_or("\u{0}");
                if !["l", "w", "c"].contains(&mode) {
                    return Ok(error(format!("wc: invalid mode '{}'", a[1].to_str())));
                }
                if let Some(n) = self.file_here(&a[0]) {
                    let text = self.file_text(n)?;
                    let (count, kind) = match mode {
                        "l" => (splitlines(text).len(), "lines"),
                        "w" => (
                            text.split(pysem::chars::is_space)
                                .filter(|w| !w.is_empty())
                                .count(),
                            "words",
                        ),
                        _ => (text.chars().count(), "characters"),
                    };
                    return Ok(dict([("count", Py::Int(count as i64)), ("type", s(kind))]));
                }
                Ok(error(format!(
                    "wc: {}: No such file or directory",
                    a[0].to_str()
                )))
            }
            "sort" => {
                let a = args.bind(&q, &[("file_name", None)])?;
                if let Some(n) = self.file_here(&a[0]) {
                    let mut lines = splitlines(self.file_text(n)?);
                    lines.sort();
                    return Ok(dict([("sorted_content", s(lines.join("\n")))]));
                }
                Ok(error(format!(
                    "sort: {}: No such file or directory",
                    a[0].to_str()
                )))
            }
            "grep" => {
                let a = args.bind(&q, &[("file_name", None), ("pattern", None)])?;
                if let Some(n) = self.file_here(&a[0]) {
                    let pat = want_str(&a[1], "grep")?;
                    let lines: Vec<Py> = splitlines(self.file_text(n)?)
                        .into_iter()
                        .filter(|l| l.contains(pat))
                        .map(s)
                        .collect();
                    return Ok(dict([("matching_lines", Py::List(lines))]));
                }
                Ok(error(format!(
                    "grep: {}: No such file or directory",
                    a[0].to_str()
                )))
            }
            "du" => {
                let a = args.bind(&q, &[("human_readable", Some(Py::Bool(false)))])?;
                fn size(fs: &FileSystem, n: NodeId, depth: usize) -> PyResult<u64> {
                    if depth > 500 {
                        return not_ported("a cyclic tree");
                    }
                    match &fs.nodes[n] {
                        Node::File { .. } => Ok(fs.file_text(n)?.len() as u64),
                        Node::Dir { contents, .. } => fs.dicts[*contents]
                            .iter()
                            .map(|(_, c)| size(fs, *c, depth + 1))
                            .sum(),
                    }
                }
                let total = size(self, self.cur, 0)?;
                let text = if a[0].truthy() {
                    let mut t = total as f64;
                    let mut out = None;
                    for unit in ["B", "KB", "MB", "GB", "TB"] {
                        if t < 1024.0 {
                            out = Some(format!("{t:.2} {unit}"));
                            break;
                        }
                        t /= 1024.0;
                    }
                    out.unwrap_or_else(|| format!("{t:.2} PB"))
                } else {
                    format!("{total} bytes")
                };
                Ok(dict([("disk_usage", s(text))]))
            }
            "tail" => {
                let a = args.bind(&q, &[("file_name", None), ("lines", Some(Py::Int(10)))])?;
                if let Some(n) = self.file_here(&a[0]) {
                    let content = splitlines(self.file_text(n)?);
                    let Py::Int(mut k) = a[1] else {
                        return not_ported("tail with non-int lines");
                    };
                    let len = content.len() as i64;
                    if k > len {
                        k = len;
                    }
                    // content[-k:]
                    let start = if k == 0 {
                        0
                    } else if k > 0 {
                        len - k
                    } else {
                        (-k).min(len)
                    };
                    let last = content[start as usize..].join("\n");
                    return Ok(dict([("last_lines", s(last))]));
                }
                Ok(error(format!(
                    "tail: {}: No such file or directory",
                    a[0].to_str()
                )))
            }
            "diff" => {
                let a = args.bind(&q, &[("file_name1", None), ("file_name2", None)])?;
                if let (Some(f1), Some(f2)) = (self.file_here(&a[0]), self.file_here(&a[1])) {
                    let l1 = splitlines(self.file_text(f1)?);
                    let l2 = splitlines(self.file_text(f2)?);
                    let lines: Vec<String> = l1
                        .iter()
                        .zip(&l2)
                        .filter(|(x, y)| x != y)
                        .map(|(x, y)| format!("- {x}\n+ {y}"))
                        .collect();
                    return Ok(dict([("diff_lines", s(lines.join("\n")))]));
                }
                Ok(error(format!(
                    "diff: {} or {}: No such file or directory",
                    a[0].to_str(),
                    a[1].to_str()
                )))
            }
            "mv" | "cp" => {
                let a = args.bind(&q, &[("source", None), ("destination", None)])?;
                self.move_or_copy(method == "mv", &a[0], &a[1])
            }
            "rm" => {
                let a = args.bind(&q, &[("file_name", None)])?;
                let name = want_str(&a[0], "rm")?.to_string();
                if self.lookup(self.cur, &name).is_some() {
                    self.pop(self.cur, &name);
                    return Ok(dict([("result", s(format!("'{name}' removed")))]));
                }
                Ok(error(format!(
                    "rm: cannot remove '{name}': No such file or directory"
                )))
            }
            "rmdir" => {
                let a = args.bind(&q, &[("dir_name", None)])?;
                let name = want_str(&a[0], "rmdir")?.to_string();
                match self.lookup(self.cur, &name) {
                    None => Ok(error(format!(
                        "rmdir: cannot remove '{name}': No such file or directory"
                    ))),
                    Some(n) if !self.is_dir(n) => Ok(error(format!(
                        "rmdir: cannot remove '{name}': Not a directory"
                    ))),
                    Some(n) => {
                        if !self.dicts[self.contents_id(n)].is_empty() {
                            return Ok(error(format!(
                                "rmdir: cannot remove '{name}': Directory not empty"
                            )));
                        }
                        self.pop(self.cur, &name);
                        Ok(dict([("result", s(format!("'{name}' removed")))]))
                    }
                }
            }
            _ => not_ported(method),
        }
    }

    fn state(&self, _g: &Globals) -> Vec<(String, Py)> {
        vec![
            ("long_context".into(), Py::Bool(self.long_context)),
            ("root".into(), self.node_value(self.root, 0)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::splitlines;

    #[test]
    fn splitlines_like_python() {
        assert_eq!(splitlines("a\nb\r\nc\rd\n"), ["a", "b", "c", "d"]);
        assert_eq!(splitlines(""), Vec::<&str>::new());
        assert_eq!(splitlines("\n\n"), ["", ""]);
    }
}
