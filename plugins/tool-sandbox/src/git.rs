//! `git` inside the sandbox, computed from the session's tree against the
//! workspace's: the workspace is the one commit (`HEAD`), the session's
//! files are the working tree, and an index tree sits between them (equal
//! to `HEAD` until `git add`). All three are persistent trees, so `status`
//! and `diff` walk only what changed.
//!
//! Served: `status` (long, `-s`, `--porcelain`), `diff` (index or `HEAD`
//! against the working tree, `--cached`, `--stat`, `--name-only`,
//! `--name-status`, `-U<n>`, paths), `log` (the commit: default, `--oneline`,
//! `--format`), `show REV:PATH`, `checkout [--] PATHS` / `checkout HEAD --
//! PATHS`, `restore [--staged] PATHS`, `stash` (push, list, pop, apply,
//! drop, clear), `add`, `reset` (paths, `--hard`), `rm --cached`,
//! `rev-parse`, `branch`, `ls-files`, `status`-less `config`. Output follows
//! git 2.4x's text. Everything else (another commit's diff, `commit`,
//! `apply`, branches, remotes) is stubbed: a fixed message, exit status 1,
//! the call tagged `stubbed`. `.gitignore` is not read: files the agent
//! creates are all untracked.

use crate::archive::Commit;
use crate::fs::SessionFs;
use crate::tree::{self, Change, Dir, Found, Node};
use crate::Workspace;
use bashkit::{BuiltinContext, ExecResult};
use imara_diff::{Algorithm, Diff, InternedInput};
use sha1::{Digest, Sha1};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

/// A session's git state beyond its working tree.
#[derive(Debug)]
pub struct GitState {
    /// The index (`HEAD` until something is added).
    pub index: Arc<Dir>,
    pub stash: Vec<Stash>,
}

/// One `git stash` entry.
#[derive(Debug, Clone)]
pub struct Stash {
    /// The tracked files' state (paths and nodes; `None`: deleted).
    pub work: Vec<(String, Option<Node>)>,
    pub index: Arc<Dir>,
    pub id: String,
}

impl GitState {
    pub fn new(workspace: &Workspace) -> Self {
        Self {
            index: workspace.top(&workspace.root),
            stash: Vec::new(),
        }
    }
}

/// The commit of a workspace whose archive names none: fixed, derived
/// from its name.
pub fn default_commit(name: &str) -> Commit {
    Commit {
        id: hex(&Sha1::digest(
            format!("agentload workspace {name}").as_bytes(),
        )),
        author: "agentload <agentload@localhost>".into(),
        date: crate::clock::EPOCH,
        tz: "+0000".into(),
        message: format!("workspace {name}\n"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// git's object id of a blob.
pub fn blob_id(data: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(format!("blob {}\0", data.len()).as_bytes());
    h.update(data);
    hex(&h.finalize())
}

/// The `git` command.
pub struct GitCommand {
    pub workspace: Arc<Workspace>,
    pub fs: Arc<SessionFs>,
    pub state: Arc<Mutex<GitState>>,
    pub stubbed: Arc<Mutex<Vec<String>>>,
}

/// What a git command printed: stdout, stderr, exit status.
#[derive(Debug, Default)]
struct Out {
    stdout: String,
    stderr: String,
    code: i32,
}

impl Out {
    fn ok(stdout: String) -> Self {
        Self {
            stdout,
            ..Self::default()
        }
    }

    fn fail(stderr: String, code: i32) -> Self {
        Self {
            stderr,
            code,
            ..Self::default()
        }
    }
}

#[bashkit::async_trait]
impl bashkit::Builtin for GitCommand {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let cwd = ctx.cwd.to_string_lossy().into_owned();
        let out = self.run(&cwd, ctx.args);
        Ok(ExecResult {
            stdout: out.stdout.into(),
            stderr: out.stderr.into(),
            exit_code: out.code,
            ..ExecResult::default()
        })
    }
}

/// The trees a command works with.
struct Repo<'a> {
    ws: &'a Workspace,
    head: Arc<Dir>,
    /// The working directory relative to the top (`""` at the top).
    prefix: String,
}

impl GitCommand {
    fn run(&self, cwd: &str, args: &[String]) -> Out {
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cwd = cwd.to_owned();
        // Global options before the command.
        loop {
            match args.first().copied() {
                Some("--no-pager" | "--no-optional-locks" | "-P" | "--paginate" | "-p") => {
                    args.remove(0);
                }
                Some("-c") if args.len() > 1 => {
                    args.drain(..2);
                }
                Some("-C") if args.len() > 1 => {
                    let dir = args[1];
                    cwd = if dir.starts_with('/') {
                        dir.to_owned()
                    } else {
                        format!("{cwd}/{dir}")
                    };
                    args.drain(..2);
                }
                Some(a) if a.starts_with("--git-dir") || a.starts_with("--work-tree") => {
                    args.remove(0);
                }
                _ => break,
            }
        }
        let Some(command) = args.first().copied() else {
            return Out::fail(
                "usage: git [-v | --version] [-h | --help] [-C <path>] [-c <name>=<value>] <command> [<args>]\n".into(),
                1,
            );
        };
        if command == "--version" || command == "version" {
            return Out::ok("git version 2.47.3\n".into());
        }
        let rest = &args[1..];
        let ws = &*self.workspace;
        let top = format!("/{}", ws.mount.join("/"));
        let cwd = format!("/{}", tree::components(&cwd).join("/"));
        let prefix = if cwd == top {
            String::new()
        } else if let Some(p) = cwd.strip_prefix(&format!("{top}/")) {
            p.to_owned()
        } else {
            return Out::fail(
                "fatal: not a git repository (or any of the parent directories): .git\n".into(),
                128,
            );
        };
        let repo = Repo {
            ws,
            head: ws.top(&ws.root),
            prefix,
        };
        match command {
            "status" => self.status(&repo, rest),
            "diff" => self.diff(&repo, rest),
            "log" => log(&repo, rest),
            "show" => self.show(&repo, rest),
            "checkout" => self.checkout(&repo, rest),
            "restore" => self.restore(&repo, rest),
            "stash" => self.stash(&repo, rest),
            "add" => self.add(&repo, rest),
            "reset" => self.reset(&repo, rest),
            "rm" => self.rm(&repo, rest),
            "rev-parse" => rev_parse(&repo, rest),
            "branch" => branch(&repo, rest),
            "ls-files" => self.ls_files(&repo, rest),
            "config" => config(rest),
            other => self.stub(other),
        }
    }

    fn stub(&self, what: &str) -> Out {
        let mut names = self.stubbed.lock().unwrap_or_else(|e| e.into_inner());
        let name = format!("git {what}");
        if !names.contains(&name) {
            names.push(name);
        }
        Out::fail(
            format!("git: '{what}' is not available in this sandbox\n"),
            1,
        )
    }

    fn work(&self, repo: &Repo<'_>) -> Arc<Dir> {
        repo.ws.top(&self.fs.lock().root)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, GitState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces the working tree's top with `top`.
    fn set_work(&self, repo: &Repo<'_>, top: Arc<Dir>) {
        let mut state = self.fs.lock();
        let mount: Vec<&str> = repo.ws.mount.iter().map(String::as_str).collect();
        let _ = tree::put(&mut state.root, &mount, Some(Node::Dir(top)), 0);
        state.usage = tree::Usage::of(&state.root);
    }

    fn status(&self, repo: &Repo<'_>, args: &[&str]) -> Out {
        let short = args.iter().any(|a| {
            matches!(
                *a,
                "-s" | "--short" | "-sb" | "--porcelain" | "--porcelain=v1"
            )
        });
        let porcelain = args.iter().any(|a| a.starts_with("--porcelain"));
        let with_branch = args.iter().any(|a| matches!(*a, "-b" | "--branch" | "-sb"));
        let work = self.work(repo);
        let index = self.state().index.clone();
        let staged = tree::changes(&repo.head, &index);
        let unstaged: Vec<Change> = tree::changes(&index, &work)
            .into_iter()
            .filter(|c| c.old.is_some())
            .collect();
        let untracked = untracked(&index, &work);
        if short {
            let mut out = String::new();
            if with_branch {
                let _ = writeln!(out, "## {}", repo.ws.layout.branch);
            }
            let mut rows: Vec<(String, char, char)> = Vec::new();
            for c in &staged {
                rows.push((c.path.clone(), letter(c), ' '));
            }
            for c in &unstaged {
                match rows.iter_mut().find(|r| r.0 == c.path) {
                    Some(row) => row.2 = letter(c),
                    None => rows.push((c.path.clone(), ' ', letter(c))),
                }
            }
            rows.sort_by(|a, b| tree::git_order(&a.0, &b.0));
            for (path, x, y) in rows {
                let shown = if porcelain {
                    path
                } else {
                    relative(&path, &repo.prefix)
                };
                let _ = writeln!(out, "{x}{y} {shown}");
            }
            for path in untracked {
                let shown = if porcelain {
                    path
                } else {
                    relative(&path, &repo.prefix)
                };
                let _ = writeln!(out, "?? {shown}");
            }
            return Out::ok(out);
        }
        let mut out = format!("On branch {}\n", repo.ws.layout.branch);
        let label = |c: &Change| match (&c.old, &c.new) {
            (None, _) => "new file:   ",
            (_, None) => "deleted:    ",
            _ => "modified:   ",
        };
        if !staged.is_empty() {
            out.push_str(
                "Changes to be committed:\n  (use \"git restore --staged <file>...\" to unstage)\n",
            );
            for c in &staged {
                let _ = writeln!(out, "\t{}{}", label(c), relative(&c.path, &repo.prefix));
            }
            out.push('\n');
        }
        if !unstaged.is_empty() {
            let deletes = unstaged.iter().any(|c| c.new.is_none());
            let _ = write!(
                out,
                "Changes not staged for commit:\n  (use \"git {} <file>...\" to update what will be committed)\n  (use \"git restore <file>...\" to discard changes in working directory)\n",
                if deletes { "add/rm" } else { "add" }
            );
            for c in &unstaged {
                let _ = writeln!(out, "\t{}{}", label(c), relative(&c.path, &repo.prefix));
            }
            out.push('\n');
        }
        if !untracked.is_empty() {
            out.push_str("Untracked files:\n  (use \"git add <file>...\" to include in what will be committed)\n");
            for path in &untracked {
                let _ = writeln!(out, "\t{}", relative(path, &repo.prefix));
            }
            out.push('\n');
        }
        if staged.is_empty() {
            if !unstaged.is_empty() {
                out.push_str(
                    "no changes added to commit (use \"git add\" and/or \"git commit -a\")\n",
                );
            } else if !untracked.is_empty() {
                out.push_str("nothing added to commit but untracked files present (use \"git add\" to track)\n");
            } else {
                out.push_str("nothing to commit, working tree clean\n");
            }
        }
        Out::ok(out)
    }

    fn diff(&self, repo: &Repo<'_>, args: &[&str]) -> Out {
        let mut opts = DiffOptions::default();
        let mut cached = false;
        let mut revs: Vec<&str> = Vec::new();
        let mut paths: Vec<String> = Vec::new();
        let mut after_dashes = false;
        for arg in args {
            if after_dashes {
                paths.push(arg.to_string());
                continue;
            }
            match *arg {
                "--" => after_dashes = true,
                "--cached" | "--staged" => cached = true,
                "--stat" => opts.form = Form::Stat,
                "--name-only" => opts.form = Form::NameOnly,
                "--name-status" => opts.form = Form::NameStatus,
                "--numstat" => opts.form = Form::NumStat,
                "--shortstat" => opts.form = Form::ShortStat,
                "--no-color" | "--color=never" | "-p" | "--patch" | "--no-ext-diff" => {}
                a if a.starts_with("-U") => opts.context = a[2..].parse().unwrap_or(3),
                a if a.starts_with("--unified=") => opts.context = a[10..].parse().unwrap_or(3),
                a if a.starts_with('-') => return self.stub(&format!("diff {a}")),
                a if is_head(a) => revs.push(a),
                a => paths.push(a.to_owned()),
            }
        }
        let index = self.state().index.clone();
        let (old, new) = match (cached, revs.len()) {
            (false, 0) => (index.clone(), self.work(repo)),
            (true, 0) | (true, 1) => (repo.head.clone(), index.clone()),
            (false, 1) => (repo.head.clone(), self.work(repo)),
            _ => return self.stub("diff between commits"),
        };
        let paths: Vec<String> = paths.iter().map(|p| repo_path(&repo.prefix, p)).collect();
        let changes: Vec<Change> = tree::changes(&old, &new)
            .into_iter()
            .filter(|c| tracked_or_head(c, &index, cached, !revs.is_empty()))
            .filter(|c| paths.is_empty() || paths.iter().any(|p| under(&c.path, p)))
            .collect();
        Out::ok(render(&changes, &opts, &repo.prefix))
    }

    fn show(&self, repo: &Repo<'_>, args: &[&str]) -> Out {
        let objects: Vec<&str> = args
            .iter()
            .copied()
            .filter(|a| !a.starts_with('-'))
            .collect();
        if let [object] = objects.as_slice() {
            if let Some((rev, path)) = object.split_once(':') {
                let tree = match rev {
                    "" => self.state().index.clone(),
                    r if is_head(r) => repo.head.clone(),
                    _ => return self.stub("show of another commit"),
                };
                let path = if let Some(p) = path.strip_prefix("./") {
                    repo_path(&repo.prefix, p)
                } else {
                    path.to_owned()
                };
                let parts: Vec<&str> = tree::components(&path);
                return match tree::lookup(&tree, &parts) {
                    Ok(Found::File(f)) => Out::ok(String::from_utf8_lossy(&f.data).into_owned()),
                    Ok(Found::Link(l)) => Out::ok(l.target.clone()),
                    Ok(Found::Dir(d)) => {
                        let mut out = format!("tree {object}\n\n");
                        for (name, node) in &d.entries {
                            let slash = if matches!(node, Node::Dir(_)) {
                                "/"
                            } else {
                                ""
                            };
                            let _ = writeln!(out, "{name}{slash}");
                        }
                        Out::ok(out)
                    }
                    Err(_) => Out::fail(
                        format!("fatal: path '{path}' does not exist in '{rev}'\n"),
                        128,
                    ),
                };
            }
        }
        // The commit itself: its own diff is not in the workspace.
        self.stub("show of a commit's changes")
    }

    fn checkout(&self, repo: &Repo<'_>, args: &[&str]) -> Out {
        let (source, paths) = match args {
            ["--", paths @ ..] => (None, paths),
            [rev, "--", paths @ ..] if is_head(rev) => (Some(*rev), paths),
            [rev, paths @ ..] if is_head(rev) && !paths.is_empty() => (Some(*rev), paths),
            paths if !paths.is_empty() && paths.iter().all(|p| !p.starts_with('-')) => {
                (None, paths)
            }
            _ => return self.stub("checkout of a branch or commit"),
        };
        let index = self.state().index.clone();
        let from = if source.is_some() {
            repo.head.clone()
        } else {
            index.clone()
        };
        let mut work = self.work(repo);
        let mut new_index = index.clone();
        for path in paths {
            let path = repo_path(&repo.prefix, path);
            if !exists(&from, &path) {
                return Out::fail(
                    format!("error: pathspec '{path}' did not match any file(s) known to git\n"),
                    1,
                );
            }
            restore_paths(&mut work, &from, &path);
            if source.is_some() {
                restore_paths(&mut new_index, &repo.head, &path);
            }
        }
        self.set_work(repo, work);
        self.state().index = new_index;
        // git reports the paths it updated only to a terminal; agents have none.
        Out::default()
    }

    fn restore(&self, repo: &Repo<'_>, args: &[&str]) -> Out {
        let staged = args.iter().any(|a| matches!(*a, "--staged" | "-S"));
        let worktree = args.iter().any(|a| matches!(*a, "--worktree" | "-W")) || !staged;
        let paths: Vec<&&str> = args.iter().filter(|a| !a.starts_with('-')).collect();
        if paths.is_empty() {
            return Out::fail("fatal: you must specify path(s) to restore\n".into(), 128);
        }
        let mut state = self.state();
        let mut index = state.index.clone();
        let mut work = self.work(repo);
        for path in paths {
            let path = repo_path(&repo.prefix, path);
            if staged {
                restore_paths(&mut index, &repo.head, &path);
            }
            if worktree {
                let from = if staged {
                    repo.head.clone()
                } else {
                    index.clone()
                };
                restore_paths(&mut work, &from, &path);
            }
        }
        state.index = index;
        drop(state);
        self.set_work(repo, work);
        Out::default()
    }

    fn add(&self, repo: &Repo<'_>, args: &[&str]) -> Out {
        let all = args
            .iter()
            .any(|a| matches!(*a, "-A" | "--all" | "-u" | "--update"));
        let paths: Vec<String> = args
            .iter()
            .filter(|a| !a.starts_with('-'))
            .map(|p| repo_path(&repo.prefix, p))
            .collect();
        if paths.is_empty() && !all {
            return Out::fail(
                "Nothing specified, nothing added.\nhint: Maybe you wanted to say 'git add .'?\nhint: Disable this message with \"git config set advice.addEmptyPathspec false\"\n".into(),
                0,
            );
        }
        let work = self.work(repo);
        let mut state = self.state();
        let mut index = state.index.clone();
        let targets = if paths.is_empty() {
            vec![String::new()]
        } else {
            paths
        };
        for path in targets {
            if !exists(&work, &path) && !exists(&index, &path) {
                return Out::fail(
                    format!("fatal: pathspec '{path}' did not match any files\n"),
                    128,
                );
            }
            restore_paths(&mut index, &work, &path);
        }
        state.index = index;
        Out::default()
    }

    fn rm(&self, repo: &Repo<'_>, args: &[&str]) -> Out {
        let cached = args.contains(&"--cached");
        let paths: Vec<String> = args
            .iter()
            .filter(|a| !a.starts_with('-'))
            .map(|p| repo_path(&repo.prefix, p))
            .collect();
        let mut state = self.state();
        let mut index = state.index.clone();
        let mut work = self.work(repo);
        let mut out = String::new();
        for path in &paths {
            if !exists(&index, path) {
                return Out::fail(
                    format!("fatal: pathspec '{path}' did not match any files\n"),
                    128,
                );
            }
            let parts: Vec<&str> = tree::components(path);
            let _ = tree::put(&mut index, &parts, None, 0);
            if !cached {
                let _ = tree::put(&mut work, &parts, None, 0);
            }
            let _ = writeln!(out, "rm '{path}'");
        }
        state.index = index;
        drop(state);
        if !cached {
            self.set_work(repo, work);
        }
        Out::ok(out)
    }

    fn reset(&self, repo: &Repo<'_>, args: &[&str]) -> Out {
        let hard = args.contains(&"--hard");
        let paths: Vec<String> = args
            .iter()
            .filter(|a| !a.starts_with('-') && !is_head(a))
            .map(|p| repo_path(&repo.prefix, p))
            .collect();
        let mut state = self.state();
        if hard {
            // Tracked files back to HEAD; untracked ones stay.
            let mut work = self.work(repo);
            for c in tree::changes(&state.index, &work) {
                if c.old.is_some() {
                    restore_paths(&mut work, &repo.head, &c.path);
                }
            }
            for c in tree::changes(&repo.head, &work) {
                if c.old.is_some() {
                    restore_paths(&mut work, &repo.head, &c.path);
                }
            }
            state.index = repo.head.clone();
            drop(state);
            self.set_work(repo, work);
            let c = &repo.ws.commit;
            return Out::ok(format!("HEAD is now at {} {}\n", &c.id[..7], subject(c)));
        }
        let mut index = state.index.clone();
        if paths.is_empty() {
            index = repo.head.clone();
        }
        for path in &paths {
            restore_paths(&mut index, &repo.head, path);
        }
        state.index = index.clone();
        drop(state);
        let work = self.work(repo);
        let unstaged: Vec<Change> = tree::changes(&index, &work)
            .into_iter()
            .filter(|c| c.old.is_some())
            .collect();
        if unstaged.is_empty() {
            return Out::default();
        }
        let mut out = String::from("Unstaged changes after reset:\n");
        for c in &unstaged {
            let _ = writeln!(out, "{}\t{}", letter(c), c.path);
        }
        Out::ok(out)
    }

    fn stash(&self, repo: &Repo<'_>, args: &[&str]) -> Out {
        let sub = args.first().copied().unwrap_or("push");
        let c = &repo.ws.commit;
        let wip = format!(
            "WIP on {}: {} {}",
            repo.ws.layout.branch,
            &c.id[..7],
            subject(c)
        );
        match sub {
            "push" | "save" | "-u" | "--include-untracked" | "-m" | "--message" => {
                let work = self.work(repo);
                let mut state = self.state();
                let tracked: Vec<Change> = tree::changes(&repo.head, &work)
                    .into_iter()
                    .filter(|ch| ch.old.is_some() || exists(&state.index, &ch.path))
                    .collect();
                if tracked.is_empty() && Arc::ptr_eq(&state.index, &repo.head) {
                    return Out::ok("No local changes to save\n".into());
                }
                let saved: Vec<(String, Option<Node>)> = tracked
                    .iter()
                    .map(|ch| (ch.path.clone(), ch.new.clone()))
                    .collect();
                let mut reset = work.clone();
                for (path, _) in &saved {
                    restore_paths(&mut reset, &repo.head, path);
                }
                let id = blob_id(format!("stash {} {}", state.stash.len(), saved.len()).as_bytes());
                let index = state.index.clone();
                state.stash.insert(
                    0,
                    Stash {
                        work: saved,
                        index,
                        id,
                    },
                );
                state.index = repo.head.clone();
                drop(state);
                self.set_work(repo, reset);
                Out::ok(format!("Saved working directory and index state {wip}\n"))
            }
            "list" => {
                let state = self.state();
                let mut out = String::new();
                for (i, _) in state.stash.iter().enumerate() {
                    let _ = writeln!(out, "stash@{{{i}}}: {wip}");
                }
                Out::ok(out)
            }
            "pop" | "apply" => {
                let mut state = self.state();
                let Some(entry) = state.stash.first().cloned() else {
                    return Out::fail("No stash entries found.\n".into(), 1);
                };
                let mut work = self.work(repo);
                for (path, node) in &entry.work {
                    let parts: Vec<&str> = tree::components(path);
                    let _ = tree::put(&mut work, &parts, node.clone(), 0);
                }
                // Without `--index` only files the stash had added to the
                // index come back staged (as git's merge adds them).
                let mut index = state.index.clone();
                for c in tree::changes(&repo.head, &entry.index) {
                    if c.old.is_none() {
                        let parts: Vec<&str> = tree::components(&c.path);
                        let _ = tree::put(&mut index, &parts, c.new.clone(), 0);
                    }
                }
                state.index = index;
                if sub == "pop" {
                    state.stash.remove(0);
                }
                drop(state);
                self.set_work(repo, work);
                let mut out = self.status(repo, &[]);
                if sub == "pop" {
                    let _ = writeln!(out.stdout, "Dropped refs/stash@{{0}} ({})", entry.id);
                }
                out
            }
            "drop" => {
                let mut state = self.state();
                if state.stash.is_empty() {
                    return Out::fail("No stash entries found.\n".into(), 1);
                }
                let entry = state.stash.remove(0);
                Out::ok(format!("Dropped refs/stash@{{0}} ({})\n", entry.id))
            }
            "clear" => {
                self.state().stash.clear();
                Out::default()
            }
            other => self.stub(&format!("stash {other}")),
        }
    }

    fn ls_files(&self, repo: &Repo<'_>, args: &[&str]) -> Out {
        let index = self.state().index.clone();
        let paths: Vec<String> = args
            .iter()
            .filter(|a| !a.starts_with('-'))
            .map(|p| repo_path(&repo.prefix, p))
            .collect();
        let mut out = String::new();
        for (path, _) in tree::files(&index) {
            let inside = if repo.prefix.is_empty() {
                true
            } else {
                under(&path, &repo.prefix)
            };
            if inside && (paths.is_empty() || paths.iter().any(|p| under(&path, p))) {
                let _ = writeln!(out, "{}", relative(&path, &repo.prefix));
            }
        }
        Out::ok(out)
    }
}

fn is_head(rev: &str) -> bool {
    matches!(rev, "HEAD" | "@")
}

fn subject(commit: &Commit) -> &str {
    commit.message.lines().next().unwrap_or("")
}

/// A change's one-letter status.
fn letter(c: &Change) -> char {
    match (&c.old, &c.new) {
        (None, _) => 'A',
        (_, None) => 'D',
        _ => 'M',
    }
}

/// Whether a change is one git reports: a path the index or `HEAD` knows.
fn tracked_or_head(c: &Change, index: &Arc<Dir>, cached: bool, against_head: bool) -> bool {
    cached || c.old.is_some() || against_head && exists(index, &c.path)
}

/// Files in `work` the index does not know, a directory none of whose
/// files it knows shown once as `dir/`.
fn untracked(index: &Arc<Dir>, work: &Arc<Dir>) -> Vec<String> {
    let mut out = Vec::new();
    walk_untracked(Some(index), work, "", &mut out);
    out.sort_by(|a, b| tree::git_order(a, b));
    out
}

fn walk_untracked(index: Option<&Arc<Dir>>, work: &Arc<Dir>, prefix: &str, out: &mut Vec<String>) {
    if let Some(index) = index {
        if Arc::ptr_eq(index, work) {
            return;
        }
    }
    for (name, node) in &work.entries {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let known = index.and_then(|i| i.entries.get(name));
        match (node, known) {
            (Node::Dir(d), Some(Node::Dir(k))) => walk_untracked(Some(k), d, &path, out),
            (Node::Dir(d), _) => {
                if !d.entries.is_empty() && has_files(d) {
                    out.push(format!("{path}/"));
                }
            }
            (_, Some(Node::File(_) | Node::Link(_))) => {}
            _ => out.push(path),
        }
    }
}

fn has_files(dir: &Dir) -> bool {
    dir.entries.values().any(|n| match n {
        Node::Dir(d) => has_files(d),
        _ => true,
    })
}

/// Whether `tree` has anything at `path` (`""`: the top).
fn exists(tree: &Arc<Dir>, path: &str) -> bool {
    tree::lookup(tree, &tree::components(path)).is_ok()
}

/// Makes `dst` equal to `src` at `path` (a file, or everything under a
/// directory); the number of files that changed.
fn restore_paths(dst: &mut Arc<Dir>, src: &Arc<Dir>, path: &str) -> usize {
    let parts: Vec<&str> = tree::components(path);
    let want = tree::lookup(src, &parts).ok().map(Found::node);
    let have = tree::lookup(dst, &parts).ok().map(Found::node);
    if parts.is_empty() {
        let n = tree::changes(dst, src).len();
        *dst = src.clone();
        return n;
    }
    let n = match (&have, &want) {
        (Some(Node::Dir(a)), Some(Node::Dir(b))) => tree::changes(a, b).len(),
        (Some(a), Some(b)) if a == b => 0,
        (None, None) => 0,
        _ => 1,
    };
    let _ = tree::put(dst, &parts, want, 0);
    n
}

/// A path given in the working directory `prefix`, as a path from the top.
fn repo_path(prefix: &str, path: &str) -> String {
    let joined = if prefix.is_empty() {
        path.to_owned()
    } else {
        format!("{prefix}/{path}")
    };
    tree::components(&format!("/{joined}")).join("/")
}

/// `path` (from the top) as seen from the working directory `prefix`.
fn relative(path: &str, prefix: &str) -> String {
    if prefix.is_empty() {
        return path.to_owned();
    }
    let from: Vec<&str> = prefix.split('/').collect();
    let to: Vec<&str> = path.split('/').collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; from.len() - common];
    parts.extend(&to[common..]);
    let mut out = parts.join("/");
    if path.ends_with('/') && !out.ends_with('/') {
        out.push('/');
    }
    out
}

/// Whether `path` is `dir` or under it (`""` holds everything).
fn under(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path == dir
        || path.trim_end_matches('/') == dir
        || path.starts_with(&format!("{}/", dir.trim_end_matches('/')))
}

fn log(repo: &Repo<'_>, args: &[&str]) -> Out {
    let c = &repo.ws.commit;
    let mut format: Option<String> = None;
    let mut limit: Option<usize> = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a == "--oneline" {
            format = Some("%h %s".into());
        } else if let Some(f) = a
            .strip_prefix("--format=")
            .or_else(|| a.strip_prefix("--pretty=format:"))
            .or_else(|| a.strip_prefix("--pretty=tformat:"))
        {
            format = Some(f.to_owned());
        } else if a == "--pretty=oneline" {
            format = Some("%H %s".into());
        } else if a == "-n" && i + 1 < args.len() {
            limit = args[i + 1].parse().ok();
            i += 1;
        } else if let Some(n) = a.strip_prefix("--max-count=") {
            limit = n.parse().ok();
        } else if let Some(n) = a.strip_prefix('-').and_then(|n| n.parse::<usize>().ok()) {
            limit = Some(n);
        }
        i += 1;
    }
    if limit == Some(0) {
        return Out::default();
    }
    match format {
        Some(f) => Out::ok(format!("{}\n", expand(&f, c))),
        None => Out::ok(medium(c)),
    }
}

/// `git log`'s default (medium) form of a commit.
fn medium(c: &Commit) -> String {
    let mut out = format!(
        "commit {}\nAuthor: {}\nDate:   {}\n\n",
        c.id,
        c.author,
        date(c)
    );
    for line in c.message.trim_end_matches('\n').split('\n') {
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "    {line}");
        }
    }
    out
}

/// A `--format` string with the commit's fields.
fn expand(format: &str, c: &Commit) -> String {
    let (name, email) = match c.author.rsplit_once(" <") {
        Some((n, e)) => (n.to_owned(), e.trim_end_matches('>').to_owned()),
        None => (c.author.clone(), String::new()),
    };
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch != '%' {
            out.push(ch);
            continue;
        }
        let code: String = match chars.peek() {
            Some('a' | 'c') => {
                let first = chars.next().unwrap_or_default();
                format!("{first}{}", chars.next().unwrap_or_default())
            }
            Some(_) => chars.next().map(String::from).unwrap_or_default(),
            None => String::new(),
        };
        match code.as_str() {
            "H" => out.push_str(&c.id),
            "h" => out.push_str(&c.id[..7]),
            "s" => out.push_str(subject(c)),
            "B" => out.push_str(c.message.trim_end_matches('\n')),
            "b" => out.push_str(
                c.message
                    .split_once("\n\n")
                    .map_or("", |(_, b)| b.trim_end_matches('\n')),
            ),
            "an" | "cn" => out.push_str(&name),
            "ae" | "ce" => out.push_str(&email),
            "ad" | "cd" => out.push_str(&date(c)),
            "at" | "ct" => out.push_str(&c.date.to_string()),
            "n" => out.push('\n'),
            "%" => out.push('%'),
            other => {
                out.push('%');
                out.push_str(other);
            }
        }
    }
    out
}

/// git's default date: `Tue Nov 14 22:13:20 2023 +0000`, in the commit's zone.
fn date(c: &Commit) -> String {
    let sign = if c.tz.starts_with('-') { -1 } else { 1 };
    let hours: i64 = c.tz[1..3].parse().unwrap_or(0);
    let minutes: i64 = c.tz[3..5].parse().unwrap_or(0);
    let local = c.date + sign * (hours * 3600 + minutes * 60);
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let (y, m, d) = civil(days);
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {} {:02}:{:02}:{:02} {} {}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        y,
        c.tz
    )
}

/// Days since 1970-01-01 to (year, month, day) (Howard Hinnant's algorithm).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn rev_parse(repo: &Repo<'_>, args: &[&str]) -> Out {
    let c = &repo.ws.commit;
    let mut out = String::new();
    let mut short = false;
    let mut abbrev_ref = false;
    for a in args {
        match *a {
            "--short" => short = true,
            "--abbrev-ref" => abbrev_ref = true,
            "--show-toplevel" => {
                let _ = writeln!(out, "{}", repo.ws.layout.mount);
            }
            "--git-dir" => {
                let _ = writeln!(
                    out,
                    "{}",
                    if repo.prefix.is_empty() {
                        ".git".to_owned()
                    } else {
                        format!("{}/.git", repo.ws.layout.mount)
                    }
                );
            }
            "--is-inside-work-tree" => out.push_str("true\n"),
            "--show-prefix" => {
                let _ = writeln!(
                    out,
                    "{}",
                    if repo.prefix.is_empty() {
                        String::new()
                    } else {
                        format!("{}/", repo.prefix)
                    }
                );
            }
            r if is_head(r) => {
                if abbrev_ref {
                    let _ = writeln!(out, "{}", repo.ws.layout.branch);
                } else if short {
                    let _ = writeln!(out, "{}", &c.id[..7]);
                } else {
                    let _ = writeln!(out, "{}", c.id);
                }
            }
            r if r == repo.ws.layout.branch => {
                let _ = writeln!(out, "{}", c.id);
            }
            r if !r.starts_with('-') => {
                return Out::fail(
                    format!("{r}\nfatal: ambiguous argument '{r}': unknown revision or path not in the working tree.\nUse '--' to separate paths from revisions, like this:\n'git <command> [<revision>...] -- [<file>...]'\n"),
                    128,
                );
            }
            _ => {}
        }
    }
    Out::ok(out)
}

fn branch(repo: &Repo<'_>, args: &[&str]) -> Out {
    if args.contains(&"--show-current") {
        return Out::ok(format!("{}\n", repo.ws.layout.branch));
    }
    if args
        .iter()
        .any(|a| !a.starts_with('-') || matches!(*a, "-d" | "-D" | "-m" | "-M" | "-c"))
    {
        return Out::fail(
            "git: creating or changing branches is not available in this sandbox\n".into(),
            1,
        );
    }
    Out::ok(format!("* {}\n", repo.ws.layout.branch))
}

fn config(args: &[&str]) -> Out {
    // Reading a key finds nothing; setting one is accepted and forgotten.
    let values: Vec<&&str> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if values.len() >= 2 {
        Out::default()
    } else {
        Out::fail(String::new(), 1)
    }
}

/// How `git diff` shows its changes.
#[derive(Debug, Clone, Copy)]
struct DiffOptions {
    form: Form,
    context: u32,
}

impl Default for DiffOptions {
    fn default() -> Self {
        Self {
            form: Form::Patch,
            context: 3,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Patch,
    Stat,
    NumStat,
    ShortStat,
    NameOnly,
    NameStatus,
}

fn data(node: &Option<Node>) -> &[u8] {
    match node {
        Some(Node::File(f)) => &f.data,
        Some(Node::Link(l)) => l.target.as_bytes(),
        _ => &[],
    }
}

fn mode(node: &Option<Node>) -> &'static str {
    match node {
        Some(Node::File(f)) if f.executable() => "100755",
        Some(Node::Link(_)) => "120000",
        _ => "100644",
    }
}

fn binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8000)].contains(&0)
}

/// Added and removed lines of a change.
fn counts(c: &Change) -> (usize, usize) {
    let (old, new) = (data(&c.old), data(&c.new));
    if binary(old) || binary(new) {
        return (0, 0);
    }
    let input = InternedInput::new(old, new);
    let mut diff = Diff::compute(Algorithm::Myers, &input);
    diff.postprocess_lines(&input);
    (
        diff.count_additions() as usize,
        diff.count_removals() as usize,
    )
}

fn render(changes: &[Change], opts: &DiffOptions, prefix: &str) -> String {
    let mut out = String::new();
    match opts.form {
        Form::NameOnly => {
            for c in changes {
                let _ = writeln!(out, "{}", relative(&c.path, prefix));
            }
        }
        Form::NameStatus => {
            for c in changes {
                let _ = writeln!(out, "{}\t{}", letter(c), relative(&c.path, prefix));
            }
        }
        Form::NumStat => {
            for c in changes {
                let (add, del) = counts(c);
                let _ = writeln!(out, "{add}\t{del}\t{}", relative(&c.path, prefix));
            }
        }
        Form::Stat | Form::ShortStat => {
            let rows: Vec<(String, usize, usize, bool)> = changes
                .iter()
                .map(|c| {
                    let (a, d) = counts(c);
                    let bin = binary(data(&c.old)) || binary(data(&c.new));
                    (relative(&c.path, prefix), a, d, bin)
                })
                .collect();
            if opts.form == Form::Stat {
                out.push_str(&stat_rows(&rows));
            }
            if !rows.is_empty() {
                out.push_str(&summary(&rows));
            }
        }
        Form::Patch => {
            for c in changes {
                patch(c, opts.context, &mut out);
            }
        }
    }
    out
}

/// `--stat`'s rows: names padded, counts right-aligned, `+`/`-` scaled to
/// git's 80-column width.
fn stat_rows(rows: &[(String, usize, usize, bool)]) -> String {
    let name_width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let max_change = rows.iter().map(|r| r.1 + r.2).max().unwrap_or(0);
    let number_width = rows
        .iter()
        .map(|r| {
            if r.3 {
                3
            } else {
                (r.1 + r.2).to_string().len()
            }
        })
        .max()
        .unwrap_or(1);
    // git: 80 columns minus " | ", the number and a space.
    let mut name_width = name_width;
    let mut graph_width = 80usize.saturating_sub(name_width + number_width + 6);
    if graph_width < 6 {
        graph_width = 6;
        name_width = 80usize.saturating_sub(graph_width + number_width + 6);
    }
    let graph_width = graph_width.min(max_change.max(1));
    let mut out = String::new();
    for (name, add, del, bin) in rows {
        let name = if name.chars().count() > name_width {
            let keep: String = name
                .chars()
                .rev()
                .take(name_width.saturating_sub(3))
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            format!("...{keep}")
        } else {
            name.clone()
        };
        if *bin {
            let _ = writeln!(out, " {name:<name_width$} | {:>number_width$}", "Bin");
            continue;
        }
        let total = add + del;
        let (plus, minus) = if max_change > graph_width {
            scale(*add, *del, max_change, graph_width)
        } else {
            (*add, *del)
        };
        let _ = writeln!(
            out,
            " {name:<name_width$} | {total:>number_width$}{}{}{}",
            if total > 0 { " " } else { "" },
            "+".repeat(plus),
            "-".repeat(minus)
        );
    }
    out
}

/// git's scaling of a row's `+` and `-` to the graph width.
fn scale(add: usize, del: usize, max: usize, width: usize) -> (usize, usize) {
    let scaled = |n: usize| {
        if n == 0 {
            0
        } else {
            1 + (n * (width - 1)) / max
        }
    };
    let total = scaled(add + del);
    let mut plus = scaled(add);
    let mut minus = scaled(del);
    if plus + minus > total {
        if plus > minus {
            plus = total - minus;
        } else {
            minus = total - plus;
        }
    }
    (plus, minus)
}

fn summary(rows: &[(String, usize, usize, bool)]) -> String {
    let files = rows.len();
    let add: usize = rows.iter().map(|r| r.1).sum();
    let del: usize = rows.iter().map(|r| r.2).sum();
    let mut out = format!(" {files} file{} changed", if files == 1 { "" } else { "s" });
    if add > 0 || del == 0 {
        let _ = write!(
            out,
            ", {add} insertion{}(+)",
            if add == 1 { "" } else { "s" }
        );
    }
    if del > 0 || add == 0 {
        let _ = write!(
            out,
            ", {del} deletion{}(-)",
            if del == 1 { "" } else { "s" }
        );
    }
    out.push('\n');
    out
}

/// One file's patch, as `git diff` prints it.
fn patch(c: &Change, context: u32, out: &mut String) {
    let path = &c.path;
    let (old, new) = (data(&c.old), data(&c.new));
    let _ = writeln!(out, "diff --git a/{path} b/{path}");
    let (old_id, new_id) = (blob_id(old), blob_id(new));
    let zero = "0000000";
    match (&c.old, &c.new) {
        (None, _) => {
            let _ = writeln!(out, "new file mode {}", mode(&c.new));
            let _ = writeln!(out, "index {zero}..{}", &new_id[..7]);
        }
        (_, None) => {
            let _ = writeln!(out, "deleted file mode {}", mode(&c.old));
            let _ = writeln!(out, "index {}..{zero}", &old_id[..7]);
        }
        _ => {
            if mode(&c.old) != mode(&c.new) {
                let _ = writeln!(out, "old mode {}\nnew mode {}", mode(&c.old), mode(&c.new));
                if old == new {
                    return;
                }
                let _ = writeln!(out, "index {}..{}", &old_id[..7], &new_id[..7]);
            } else {
                let _ = writeln!(
                    out,
                    "index {}..{} {}",
                    &old_id[..7],
                    &new_id[..7],
                    mode(&c.new)
                );
            }
        }
    }
    if binary(old) || binary(new) {
        let a = if c.old.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".into()
        };
        let b = if c.new.is_some() {
            format!("b/{path}")
        } else {
            "/dev/null".into()
        };
        let _ = writeln!(out, "Binary files {a} and {b} differ");
        return;
    }
    if old.is_empty() && new.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "--- {}\n+++ {}",
        if c.old.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".into()
        },
        if c.new.is_some() {
            format!("b/{path}")
        } else {
            "/dev/null".into()
        }
    );
    hunks(old, new, context, out);
}

/// The hunks of a line diff of `old` and `new`, with `context` lines.
pub fn hunks(old: &[u8], new: &[u8], context: u32, out: &mut String) {
    let input = InternedInput::new(old, new);
    let mut diff = Diff::compute(Algorithm::Myers, &input);
    diff.postprocess_lines(&input);
    let old_lines: Vec<&[u8]> = imara_diff::sources::byte_lines(old).collect();
    let new_lines: Vec<&[u8]> = imara_diff::sources::byte_lines(new).collect();
    let changes: Vec<imara_diff::Hunk> = diff.hunks().collect();
    let mut i = 0;
    while i < changes.len() {
        // Changes closer than twice the context share a hunk.
        let mut j = i;
        while j + 1 < changes.len()
            && changes[j + 1].before.start - changes[j].before.end <= 2 * context
        {
            j += 1;
        }
        let (first, last) = (&changes[i], &changes[j]);
        let pre = context.min(first.before.start);
        let post = context.min(old_lines.len() as u32 - last.before.end);
        let old_start = first.before.start - pre;
        let old_end = last.before.end + post;
        let new_start = first.after.start - pre;
        let new_end = last.after.end + post;
        let range = |start: u32, end: u32| {
            let count = end - start;
            let from = if count == 0 { start } else { start + 1 };
            if count == 1 {
                format!("{from}")
            } else {
                format!("{from},{count}")
            }
        };
        let func = function_line(&old_lines, old_start);
        let _ = writeln!(
            out,
            "@@ -{} +{} @@{}",
            range(old_start, old_end),
            range(new_start, new_end),
            func.map(|f| format!(" {f}")).unwrap_or_default()
        );
        let mut pos = old_start;
        for change in &changes[i..=j] {
            for line in &old_lines[pos as usize..change.before.start as usize] {
                emit(' ', line, out);
            }
            for line in &old_lines[change.before.start as usize..change.before.end as usize] {
                emit('-', line, out);
            }
            for line in &new_lines[change.after.start as usize..change.after.end as usize] {
                emit('+', line, out);
            }
            pos = change.before.end;
        }
        for line in &old_lines[pos as usize..old_end as usize] {
            emit(' ', line, out);
        }
        i = j + 1;
    }
}

fn emit(mark: char, line: &[u8], out: &mut String) {
    out.push(mark);
    out.push_str(&String::from_utf8_lossy(line));
    if !line.ends_with(b"\n") {
        out.push_str("\n\\ No newline at end of file\n");
    }
}

/// git's default function line for a hunk starting at `start`: the nearest
/// line above it that starts with a letter, `_` or `$`, cut to 80 bytes,
/// trailing space removed.
fn function_line(lines: &[&[u8]], start: u32) -> Option<String> {
    for line in lines[..start as usize].iter().rev() {
        let Some(&first) = line.first() else {
            continue;
        };
        if first.is_ascii_alphabetic() || first == b'_' || first == b'$' {
            let cut = &line[..line.len().min(80)];
            let end = cut
                .iter()
                .rposition(|b| !b.is_ascii_whitespace())
                .map_or(0, |p| p + 1);
            return Some(String::from_utf8_lossy(&cut[..end]).into_owned());
        }
    }
    None
}
