//! The sandbox end to end: a workspace archive, sessions, tool calls.

use super::*;
use crate::archive::tests::tar_of;

/// A sandbox with one workspace (`repo`, at `/workspace`) and session `s`.
fn sandbox(files: &[(&str, char, &str)]) -> Sandbox {
    let mut sandbox = Sandbox::new(Limits::default());
    sandbox
        .load_workspace("repo", &tar_of(files), Layout::default())
        .unwrap();
    sandbox.open("s", "repo", 7).unwrap();
    sandbox
}

fn repo() -> Sandbox {
    sandbox(&[
        (
            "src/app.py",
            'f',
            "def main():\n    print('hi')\n\n\nif __name__ == '__main__':\n    main()\n",
        ),
        ("src/util.py", 'f', "X = 1\n"),
        ("README.md", 'f', "# Demo\nSome text.\n"),
        ("run.sh", 'x', "#!/bin/sh\necho run\n"),
    ])
}

fn bash(sandbox: &mut Sandbox, command: &str) -> ToolResult {
    let args = serde_json::json!({ "command": command }).to_string();
    sandbox
        .call(
            "s",
            &ToolCall {
                name: "bash".into(),
                arguments: args,
            },
        )
        .unwrap()
}

fn out(sandbox: &mut Sandbox, command: &str) -> String {
    let r = bash(sandbox, command);
    assert_eq!(r.status, Status::Executed, "{command}: {r:?}");
    r.output
}

fn tool(sandbox: &mut Sandbox, name: &str, args: serde_json::Value) -> ToolResult {
    sandbox
        .call(
            "s",
            &ToolCall {
                name: name.into(),
                arguments: args.to_string(),
            },
        )
        .unwrap()
}

#[test]
fn the_shell_runs_the_commands_agents_use_over_the_workspace() {
    let mut s = repo();
    assert_eq!(out(&mut s, "pwd"), "/workspace\n");
    assert_eq!(
        out(&mut s, "grep -rn print ."),
        "./src/app.py:2:    print('hi')\n"
    );
    assert_eq!(
        out(&mut s, "sed -n '1,2p' src/app.py"),
        "def main():\n    print('hi')\n"
    );
    assert_eq!(out(&mut s, "wc -l src/app.py"), "6 src/app.py\n");
    assert_eq!(
        out(&mut s, "find . -name '*.py' | sort"),
        "./src/app.py\n./src/util.py\n"
    );
    assert_eq!(
        out(&mut s, "head -1 README.md; tail -n 1 README.md"),
        "# Demo\nSome text.\n"
    );
    assert_eq!(out(&mut s, "ls src | xargs echo"), "app.py util.py\n");
    assert_eq!(out(&mut s, "awk -F= '{print $2}' src/util.py"), " 1\n");
    // A heredoc write, a sed edit, a mkdir and an rm, seen by the next call.
    out(
        &mut s,
        "cat > notes.txt <<'EOF'\nfirst\nsecond\nEOF\nsed -i 's/first/1st/' notes.txt && mkdir -p a/b && rm README.md",
    );
    assert_eq!(
        out(&mut s, "cat notes.txt; ls"),
        "1st\nsecond\na\nnotes.txt\nrun.sh\nsrc\n"
    );
}

#[test]
fn stdout_and_stderr_come_back_merged_in_order_with_the_exit_status() {
    let mut s = repo();
    let r = bash(&mut s, "echo one; ls nope; echo two; exit 3");
    assert_eq!(
        r.output,
        "one\nls: cannot access 'nope': No such file or directory\ntwo\n"
    );
    assert_eq!(r.exit_code, Some(3));
    assert_eq!(r.class, Class::Search);
}

#[test]
fn each_call_is_a_fresh_shell_over_the_same_files() {
    let mut s = repo();
    out(&mut s, "cd src && X=5 && echo kept > /tmp/f");
    assert_eq!(
        out(&mut s, "pwd; echo \"[$X]\"; cat /tmp/f"),
        "/workspace\n[]\nkept\n"
    );
}

#[test]
fn commands_it_cannot_run_are_stubbed_and_named() {
    let mut s = repo();
    let r = bash(&mut s, "python3 -c 'print(1)' || echo fallback");
    assert_eq!(r.status, Status::Stubbed);
    assert_eq!(r.output, "bash: python3: command not found\nfallback\n");
    assert_eq!(r.detail, "stubbed: python3");
    assert_eq!(r.class, Class::Stub);
    let r = bash(&mut s, "pip install requests; sphinx-foo");
    assert_eq!(r.detail, "stubbed: pip, sphinx-foo");
    assert_eq!(r.exit_code, Some(127));
    let r = tool(&mut s, "web_search", serde_json::json!({"q": "x"}));
    assert_eq!(r.status, Status::Stubbed);
    assert!(
        r.output.contains("there is no tool `web_search`"),
        "{}",
        r.output
    );
}

#[test]
fn time_and_randomness_are_the_sessions_own() {
    let mut s = repo();
    assert_eq!(out(&mut s, "date -u +%s"), format!("{}\n", clock::EPOCH));
    // `sleep` moves the clock without waiting.
    let started = std::time::Instant::now();
    out(&mut s, "sleep 3600");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(
        out(&mut s, "date -u +%s"),
        format!("{}\n", clock::EPOCH + 3600)
    );
    let a = out(&mut s, "echo $RANDOM $RANDOM");
    let mut t = repo();
    assert_eq!(out(&mut t, "date -u +%s"), format!("{}\n", clock::EPOCH));
    out(&mut t, "sleep 3600");
    out(&mut t, "date -u +%s");
    assert_eq!(out(&mut t, "echo $RANDOM $RANDOM"), a);
    assert_eq!(s.stats("s").unwrap().slept_ms, 3_600_000);
}

#[test]
fn git_status_and_diff_show_the_sessions_changes_against_the_workspace() {
    let mut s = repo();
    assert_eq!(
        out(&mut s, "git status"),
        "On branch main\nnothing to commit, working tree clean\n"
    );
    out(
        &mut s,
        "sed -i \"s/print('hi')/print('hello')/\" src/app.py && echo new > new.txt && rm src/util.py",
    );
    assert_eq!(
        out(&mut s, "git status"),
        "On branch main\nChanges not staged for commit:\n  (use \"git add/rm <file>...\" to update what will be committed)\n  (use \"git restore <file>...\" to discard changes in working directory)\n\tmodified:   src/app.py\n\tdeleted:    src/util.py\n\nUntracked files:\n  (use \"git add <file>...\" to include in what will be committed)\n\tnew.txt\n\nno changes added to commit (use \"git add\" and/or \"git commit -a\")\n"
    );
    assert_eq!(
        out(&mut s, "git status -s"),
        " M src/app.py\n D src/util.py\n?? new.txt\n"
    );
    let diff = out(&mut s, "git diff src/app.py");
    let old = crate::git::blob_id(
        b"def main():\n    print('hi')\n\n\nif __name__ == '__main__':\n    main()\n",
    );
    let new = crate::git::blob_id(
        b"def main():\n    print('hello')\n\n\nif __name__ == '__main__':\n    main()\n",
    );
    assert_eq!(
        diff,
        format!(
            "diff --git a/src/app.py b/src/app.py\nindex {}..{} 100644\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1,5 +1,5 @@\n def main():\n-    print('hi')\n+    print('hello')\n \n \n if __name__ == '__main__':\n",
            &old[..7],
            &new[..7]
        )
    );
    // From a subdirectory, paths are relative to it.
    assert_eq!(
        out(&mut s, "cd src && git status --short"),
        " M app.py\n D util.py\n?? ../new.txt\n"
    );
    // checkout restores a file, stash sets changes aside and brings them back.
    let r = bash(&mut s, "git checkout -- src/util.py && git status -s");
    assert_eq!(r.output, " M src/app.py\n?? new.txt\n");
    assert_eq!(
        out(&mut s, "git stash && git status -s && cat src/app.py | head -2"),
        format!(
            "Saved working directory and index state WIP on main: {} workspace repo\n?? new.txt\ndef main():\n    print('hi')\n",
            &s.workspace("repo").unwrap().commit.id[..7]
        )
    );
    let popped = out(&mut s, "git stash pop");
    assert!(popped.contains("\tmodified:   src/app.py\n"), "{popped}");
    assert!(popped.contains("Dropped refs/stash@{0} ("), "{popped}");
    assert_eq!(
        out(&mut s, "git diff --stat"),
        " src/app.py | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"
    );
}

#[test]
fn git_outside_the_workspace_is_not_a_repository_and_other_commands_are_stubbed() {
    let mut s = repo();
    let r = bash(&mut s, "cd / && git status");
    assert_eq!(r.exit_code, Some(128));
    assert!(r.output.starts_with("fatal: not a git repository"));
    let r = bash(&mut s, "git commit -m x");
    assert_eq!(r.status, Status::Stubbed);
    assert_eq!(r.detail, "stubbed: git commit");
}

#[test]
fn the_editor_views_creates_replaces_inserts_and_undoes() {
    let mut s = repo();
    let r = tool(
        &mut s,
        editor::NAME,
        serde_json::json!({"command": "view", "path": "/workspace/src/util.py"}),
    );
    assert_eq!(
        r.output,
        "Here's the result of running `cat -n` on /workspace/src/util.py:\n     1\tX = 1\n     2\t\n"
    );
    let r = tool(
        &mut s,
        editor::NAME,
        serde_json::json!({"command": "str_replace", "path": "/workspace/src/util.py", "old_str": "X = 1", "new_str": "X = 2"}),
    );
    assert!(
        r.output
            .starts_with("The file /workspace/src/util.py has been edited."),
        "{}",
        r.output
    );
    assert_eq!(r.class, Class::Edit);
    assert_eq!(out(&mut s, "cat src/util.py"), "X = 2\n");
    let r = tool(
        &mut s,
        editor::NAME,
        serde_json::json!({"command": "str_replace", "path": "/workspace/src/app.py", "old_str": "main", "new_str": "x"}),
    );
    assert_eq!(
        r.output,
        "No replacement was performed. Multiple occurrences of old_str `main` in lines [1, 5, 6]. Please ensure it is unique"
    );
    tool(
        &mut s,
        editor::NAME,
        serde_json::json!({"command": "insert", "path": "/workspace/src/util.py", "insert_line": 1, "insert_text": "Y = 3"}),
    );
    assert_eq!(out(&mut s, "cat src/util.py"), "X = 2\nY = 3\n");
    tool(
        &mut s,
        editor::NAME,
        serde_json::json!({"command": "undo_edit", "path": "/workspace/src/util.py"}),
    );
    assert_eq!(out(&mut s, "cat src/util.py"), "X = 2\n");
    let r = tool(
        &mut s,
        editor::NAME,
        serde_json::json!({"command": "create", "path": "/workspace/src/util.py", "file_text": "z"}),
    );
    assert!(r
        .output
        .starts_with("File already exists at: /workspace/src/util.py."));
    let r = tool(
        &mut s,
        editor::NAME,
        serde_json::json!({"command": "view", "path": "src"}),
    );
    assert!(r.output.contains("is not an absolute path"), "{}", r.output);
    let r = tool(
        &mut s,
        editor::NAME,
        serde_json::json!({"command": "view", "path": "/workspace"}),
    );
    assert_eq!(
        r.output,
        "Here's the files and directories up to 2 levels deep in /workspace, excluding hidden items:\n/workspace\n/workspace/README.md\n/workspace/run.sh\n/workspace/src\n/workspace/src/app.py\n/workspace/src/util.py\n"
    );
}

#[test]
fn apply_patch_works_as_a_tool_and_as_a_command() {
    let mut s = repo();
    let patch = "*** Begin Patch\n*** Update File: src/util.py\n-X = 1\n+X = 10\n*** Add File: docs/new.md\n+# New\n*** Delete File: README.md\n*** End Patch";
    let r = tool(&mut s, patch::NAME, serde_json::json!({ "input": patch }));
    assert_eq!(
        r.output,
        "Success. Updated the following files:\nM src/util.py\nA docs/new.md\nD README.md\n"
    );
    assert_eq!(
        out(&mut s, "cat src/util.py docs/new.md; ls"),
        "X = 10\n# New\ndocs\nrun.sh\nsrc\n"
    );
    let r = bash(
        &mut s,
        "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/util.py\n-X = 10\n+X = 11\n*** End Patch\nEOF",
    );
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert_eq!(out(&mut s, "cat src/util.py"), "X = 11\n");
    // A patch that does not apply changes nothing.
    let r = tool(
        &mut s,
        patch::NAME,
        serde_json::json!({ "input": "*** Begin Patch\n*** Add File: x\n+x\n*** Update File: src/util.py\n-nope\n+y\n*** End Patch" }),
    );
    assert_eq!(
        r.output,
        "Failed to find expected lines in src/util.py:\nnope"
    );
    assert_eq!(bash(&mut s, "ls x").exit_code, Some(2));
}

/// Runs `f` on a thread with room for a debug build's deep shell frames
/// (the component's stack is set at link time).
fn deep(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn runaway_commands_are_stopped_by_budgets_and_the_session_goes_on() {
    deep(runaway);
}

fn runaway() {
    let mut s = repo();
    for (command, budget) in [
        ("while true; do :; done", "command count"),
        (":(){ :|:& };:", "function depth"),
    ] {
        let r = bash(&mut s, command);
        assert_eq!(r.exit_code, Some(shell::STOPPED_EXIT), "{command}: {r:?}");
        assert!(r.detail.starts_with("budget: "), "{command}: {}", r.detail);
        assert!(r.detail.contains(budget), "{command}: {}", r.detail);
        assert!(
            r.output.contains("stopped by the sandbox"),
            "{command}: {}",
            r.output
        );
    }
    // Partial output before the stop is kept.
    let r = bash(&mut s, "echo before; while true; do :; done");
    assert!(r.output.starts_with("before\n"), "{}", r.output);
    assert_eq!(out(&mut s, "echo still here"), "still here\n");
}

#[test]
fn writes_past_the_quota_fail_and_change_nothing() {
    deep(quota);
}

fn quota() {
    let mut s = Sandbox::new(Limits {
        session_bytes: 1 << 20,
        file_bytes: 1 << 20,
        ..Limits::default()
    });
    s.load_workspace("repo", &tar_of(&[("a", 'f', "x")]), Layout::default())
        .unwrap();
    s.open("s", "repo", 1).unwrap();
    for command in [
        "yes > f",
        "cat /dev/zero > f",
        "head -c 10000000000 /dev/zero > f",
        "dd if=/dev/zero of=f bs=1048576 count=10240",
        "for i in $(seq 1 100); do head -c 100000 /dev/zero >> f; done",
    ] {
        let r = bash(&mut s, command);
        assert_eq!(r.status, Status::Executed, "{command}");
        assert_ne!(r.exit_code, Some(0), "{command}: {r:?}");
        let stats = s.stats("s").unwrap();
        assert!(stats.bytes <= (1 << 20) + 10, "{command}: {stats:?}");
        out(&mut s, "rm -f f");
    }
    assert_eq!(out(&mut s, "cat a"), "x");
}

#[test]
fn no_path_reaches_outside_the_sandbox() {
    let mut s = repo();
    assert_eq!(out(&mut s, "cd ../../../..; pwd"), "/\n");
    let r = bash(&mut s, "cat /etc/shadow; ls /home /proc/1 2>&1 | head -3");
    assert!(!r.output.contains("root:"), "{}", r.output);
    out(
        &mut s,
        "ln -s /etc/passwd pw && ln -s ../../../../../etc etc",
    );
    // Links resolve in the sandbox: its own synthetic files, never the host's.
    let r = bash(&mut s, "cat pw; cat etc/hostname");
    assert!(r.output.ends_with("sandbox\n"), "{}", r.output);
    assert!(!r.output.contains("root:x:0:0"), "{}", r.output);
    out(
        &mut s,
        "echo x > /tmp/../../escape; rm -rf / 2>/dev/null; true",
    );
    assert!(!std::path::Path::new("/escape").exists());
}

#[test]
fn mktemp_names_are_the_calls_own_whatever_ran_before() {
    let calls = "mktemp; mktemp -d; mktemp -u x.XXXXXX; mktemp --suffix=.py -p src";
    let mut s = repo();
    let a = out(&mut s, calls);
    // Another sandbox, in which another session's calls (and their hash
    // maps) ran first, as in an instance shared with other sessions.
    let mut t = repo();
    t.open("other", "repo", 9).unwrap();
    for _ in 0..3 {
        let args = serde_json::json!({ "command": "mktemp; ls -R; declare -A m=([a]=1 [b]=2)" });
        let call = ToolCall {
            name: "bash".into(),
            arguments: args.to_string(),
        };
        t.call("other", &call).unwrap();
    }
    assert_eq!(out(&mut t, calls), a);
    let names: Vec<&str> = a.lines().collect();
    assert_eq!(names.len(), 4, "{a}");
    assert!(names[0].starts_with("/tmp/tmp.") && names[0].len() == "/tmp/tmp.".len() + 10);
    assert_ne!(names[0], names[1]);
    assert!(names[2].starts_with("x.") && names[2].len() == 8, "{a}");
    assert!(
        names[3].starts_with("src/tmp.") && names[3].ends_with(".py"),
        "{a}"
    );
    let made = format!(
        "test -f {} && test -d {} && test ! -e {} && test -f {} && echo made",
        names[0], names[1], names[2], names[3]
    );
    assert_eq!(out(&mut s, &made), "made\n");
    // Another call draws other names.
    assert_ne!(out(&mut s, "mktemp"), format!("{}\n", names[0]));
}

#[test]
fn the_same_calls_give_the_same_bytes() {
    let script = [
        "ls -la src; date; echo $RANDOM; mktemp; mktemp -d",
        "sed -i 's/X = 1/X = 2/' src/util.py; git diff; git status",
        "find / -maxdepth 1 | sort; cat /dev/urandom | head -c 8 | od -An -tx1",
    ];
    let run = || {
        let mut s = repo();
        script.iter().map(|c| bash(&mut s, c)).collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

#[test]
fn a_sessions_overlay_costs_what_it_changed() {
    let mut s = repo();
    assert_eq!(s.stats("s").unwrap().overlay_bytes, 0);
    out(&mut s, "head -c 5000 /dev/zero > big");
    let stats = s.stats("s").unwrap();
    assert!((5000..6000).contains(&stats.overlay_bytes), "{stats:?}");
    s.open("t", "repo", 1).unwrap();
    assert_eq!(s.stats("t").unwrap().overlay_bytes, 0);
    s.close("s");
    assert!(s.stats("s").is_err());
}

#[test]
fn refused_workspaces_and_misuse_are_errors() {
    let mut s = Sandbox::new(Limits::default());
    let e = s
        .load_workspace("bad", &tar_of(&[("../x", 'f', "x")]), Layout::default())
        .unwrap_err();
    assert_eq!(
        e,
        SandboxError::Workspace(
            "workspace `bad`: entry `../x`: `..` would leave the workspace".into()
        )
    );
    assert!(matches!(
        s.open("s", "nope", 1),
        Err(SandboxError::Unknown(_))
    ));
    s.load_workspace("ok", &tar_of(&[("a", 'f', "x")]), Layout::default())
        .unwrap();
    s.open("s", "ok", 1).unwrap();
    assert!(matches!(s.open("s", "ok", 1), Err(SandboxError::Input(_))));
    for mount in ["/dev", "/tmp/x", "relative", "/"] {
        let e = s
            .load_workspace(
                mount,
                &tar_of(&[("a", 'f', "x")]),
                Layout {
                    mount: mount.into(),
                    ..Layout::default()
                },
            )
            .unwrap_err();
        assert!(matches!(e, SandboxError::Input(_)), "{mount}: {e:?}");
    }
}

/// Runs `command` in session `other` of `sandbox` (opened on first use).
fn other_session(sandbox: &mut Sandbox, command: &str) {
    if sandbox.stats("other").is_err() {
        sandbox.open("other", "repo", 9).unwrap();
    }
    let args = serde_json::json!({ "command": command });
    let call = ToolCall {
        name: "bash".into(),
        arguments: args.to_string(),
    };
    sandbox.call("other", &call).unwrap();
}

#[test]
fn no_command_answers_from_the_instances_history() {
    // bashkit draws `sort -R`, `shuf`, `mktemp` and the first `$RANDOM`
    // from std's `RandomState` or the clock; the listings beside them come
    // from its hash maps.
    let commands = [
        "printf 'b\\na\\nc\\nd\\ne\\nf\\n' | sort -R",
        "printf 'b\\na\\nc\\nB\\n' | sort -Rfu; sort -R --random-sort README.md src/util.py",
        "printf 'b\\na\\nc\\nd\\ne\\nf\\n' | shuf",
        "seq 1 50 | shuf -n 5; shuf -i 1-1000000 -n 3; shuf -e x y z",
        "mktemp; mktemp -d",
        "echo $RANDOM; head -c 8 /dev/urandom | od -An -tx1",
        "env; export -p; declare -p | head -c 3000; compgen -v | head -50",
        "alias a=1 b=2 c=3 d=4 e=5; alias; f(){ :; }; g(){ :; }; declare -F",
        "declare -A m=([alpha]=1 [beta]=2 [gamma]=3 [delta]=4 [eps]=5 [zeta]=6); echo ${!m[@]}",
        "printf 'a\\nb\\nc\\nd\\ne\\nf\\na\\n' | awk '{c[$1]++} END {for (k in c) print k, c[k]}'",
        "hash -r; ls >/dev/null; hash; trap 'echo x' EXIT INT TERM; trap",
        "ls -la; find . | sort; du -a",
    ];
    let mut s = repo();
    let fresh: Vec<String> = commands.iter().map(|c| out(&mut s, c)).collect();
    // Another sandbox, in which another session's calls (and their hash
    // maps, sorts and shuffles) ran first, as in an instance shared with
    // other sessions.
    let mut t = repo();
    for _ in 0..5 {
        other_session(
            &mut t,
            "mktemp; ls -R; declare -A m=([a]=1 [b]=2); env; sort -R README.md; shuf -e a b c",
        );
    }
    for (command, fresh) in commands.iter().zip(&fresh) {
        assert_eq!(&out(&mut t, command), fresh, "{command}");
    }
}

#[test]
fn random_orders_are_drawn_anew_for_each_sort_and_shuf() {
    let mut s = repo();
    let lines = "seq 1 20 > n;";
    let once = out(&mut s, &format!("{lines} sort -R n; echo; sort -R n"));
    let (a, b) = once.split_once("\n\n").unwrap();
    assert_ne!(a, b, "two sorts of one call are two draws");
    assert_ne!(out(&mut s, "sort -R n"), format!("{a}\n"), "another call");
    let mut sorted: Vec<u32> = a.lines().map(|l| l.parse().unwrap()).collect();
    sorted.sort_unstable();
    assert_eq!(sorted, (1..=20).collect::<Vec<_>>());
    let two = out(&mut s, "shuf n | tr '\\n' ' '; echo; shuf n | tr '\\n' ' '");
    let (a, b) = two.split_once('\n').unwrap();
    assert_ne!(a, b.trim_end());
    // A random source is its bytes: the same file, the same order.
    let sourced =
        "shuf --random-source=README.md n | head -3; sort -R --random-source=README.md n | head -3";
    assert_eq!(out(&mut s, sourced), out(&mut s, sourced));
}

#[test]
fn sort_and_shuf_answer_as_gnu_does() {
    let mut s = repo();
    let cases = [
        ("printf '10\\n9\\n100\\n' | sort -n", "9\n10\n100\n", 0),
        (
            "printf 'b,2\\na,3\\nc,1\\n' | sort -t, -k2,2n",
            "c,1\nb,2\na,3\n",
            0,
        ),
        (
            "printf 'b\\na\\nb\\n' | sort -u -o out; cat out",
            "a\nb\n",
            0,
        ),
        (
            "sort -r README.md src/util.py",
            "X = 1\nSome text.\n# Demo\n",
            0,
        ),
        (
            "printf 'a\\nb\\n' | sort -Rn",
            "sort: options '-nR' are incompatible\n",
            2,
        ),
        (
            "printf 'a\\nb\\n' | sort -R -x",
            "sort: invalid option -- 'x'\nTry 'sort --help' for more information.\n",
            2,
        ),
        ("printf 'a\\na\\nA\\n' | sort -Ruf", "a\n", 0),
        ("printf 'x\\n' | sort -R -o out; cat out", "x\n", 0),
        ("shuf -i 3-5 | sort -n", "3\n4\n5\n", 0),
        ("shuf -i 1-9 -n 4 -n 2 | wc -l", "2\n", 0),
        ("shuf -r -n 6 -e x | tr -d '\\n'; echo", "xxxxxx\n", 0),
        ("shuf -e a -o out; cat out", "a\n", 0),
        ("shuf -i 3-2; shuf -e", "", 0),
        (
            "shuf nofile",
            "shuf: nofile: No such file or directory\n",
            1,
        ),
        ("shuf -r < /dev/null", "shuf: no lines to repeat\n", 1),
        (
            "shuf a b",
            "shuf: extra operand 'b'\nTry 'shuf --help' for more information.\n",
            1,
        ),
        ("shuf -i 5-3", "shuf: invalid input range: '5-3'\n", 1),
    ];
    for (command, want, code) in cases {
        let r = bash(&mut s, command);
        assert_eq!(r.status, Status::Executed, "{command}: {r:?}");
        assert_eq!(
            (r.output.as_str(), r.exit_code),
            (want, Some(code)),
            "{command}"
        );
    }
    // bashkit's own answer where it has one: a missing file, `--help`.
    let r = bash(&mut s, "sort -R nofile");
    assert_ne!(r.exit_code, Some(0));
    assert!(r.output.contains("nofile"), "{r:?}");
    assert!(out(&mut s, "sort --help").contains("sort"));
    // `shuf -r` without a count stops at the output budget.
    let r = bash(&mut s, "shuf -r -e y");
    assert!(r.detail.contains("output cut"), "{r:?}");
}

#[test]
fn a_random_order_sort_cannot_run_is_stubbed_not_faked() {
    let mut s = repo();
    for command in [
        "sort -k1,1R README.md",
        "sort -R -c README.md",
        "sort -mR README.md",
    ] {
        let r = bash(&mut s, command);
        assert_eq!(r.status, Status::Stubbed, "{command}: {r:?}");
        assert_eq!(r.output, crate::sort::STUB_MESSAGE, "{command}");
        assert_eq!(r.exit_code, Some(2));
        assert!(r.detail.contains("sort -R"), "{r:?}");
    }
}

#[test]
fn sort_reads_the_shells_process_substitutions() {
    let mut s = repo();
    let cases = [
        ("sort <(printf 'b\\na\\n')", "a\nb\n"),
        (
            "sort -r <(printf 'b\\na') README.md",
            "b\na\nSome text.\n# Demo\n",
        ),
        ("printf 'c\\n' | sort -u - <(printf 'c\\na\\n')", "a\nc\n"),
        (
            "sort -m <(printf 'a\\nc\\n') <(printf 'b\\nd\\n')",
            "a\nb\nc\nd\n",
        ),
        (
            "comm -12 <(sort README.md) <(printf '# Demo\\n')",
            "# Demo\n",
        ),
        ("sort -R <(printf 'b\\na\\n') | sort", "a\nb\n"),
        ("shuf <(printf 'b\\na\\n') | sort", "a\nb\n"),
    ];
    for (command, want) in cases {
        assert_eq!(out(&mut s, command), want, "{command}");
    }
    let r = bash(&mut s, "sort <(printf 'a\\n') nofile");
    assert_eq!(
        (r.output.as_str(), r.exit_code),
        (
            "sort: cannot read: nofile: No such file or directory\n",
            Some(2)
        )
    );
}
