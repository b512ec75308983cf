//! The tool environment (`shell-tools`, `agentload:tools`) through the
//! real binary and the host's pool: workspaces packed and refused, tool
//! calls answered in the sandbox, runaway commands stopped with the
//! session going on, a trapped instance rebuilt without losing a session's
//! files, and the same calls giving the same bytes.

use super::common::{agentload, scratch, text};
use agentload::tools::{environment, limits};
use agentload_config::tools::ToolLimitsConfig;
use agentload_engine::tools::{Answered, ToolPool};
use agentload_plugin_host::tools::{ToolCall, WorkspaceSpec};
use agentload_results::tools::ToolStatus;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A small git repository, committed, in `dir/repo`.
fn repo(dir: &Path) -> PathBuf {
    let root = dir.join("repo");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/app.py"), "def main():\n    return 1\n").unwrap();
    std::fs::write(root.join("README.md"), "# Repo\n").unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "-m",
            "Base",
        ],
    ] {
        let ok = Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .env("GIT_AUTHOR_DATE", "1700000000 +0000")
            .env("GIT_COMMITTER_DATE", "1700000000 +0000")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
    root
}

/// `agentload dataset workspace` of the repository: the archive and its sha256.
pub(super) async fn packed(dir: &Path) -> (PathBuf, String) {
    let root = repo(dir);
    let archive = dir.join("repo.tar");
    let out = agentload(
        &[
            "dataset",
            "workspace",
            root.to_str().unwrap(),
            "--out",
            archive.to_str().unwrap(),
        ],
        dir,
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let sha = stdout
        .lines()
        .find_map(|l| l.strip_prefix("sha256 = \""))
        .map(|s| s.trim_end_matches('"').to_owned())
        .unwrap_or_else(|| panic!("no sha256 in {stdout}"));
    (archive, sha)
}

async fn exec(archive: &Path, commands: &[&str], cwd: &Path) -> Vec<serde_json::Value> {
    let mut args = vec![
        "tools",
        "exec",
        "--json",
        "--workspace",
        archive.to_str().unwrap(),
    ];
    args.extend_from_slice(commands);
    let out = agentload(&args, cwd).await;
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn a_packed_repository_runs_the_agents_commands_and_git_sees_their_changes() {
    let dir = scratch("tools-exec");
    let (archive, sha) = packed(dir.path()).await;
    assert_eq!(sha.len(), 64);
    let results = exec(
        &archive,
        &[
            "grep -rn return .",
            "sed -i 's/return 1/return 2/' src/app.py && echo new > notes.txt",
            "git status --short && git diff",
            "git log --oneline",
            "python3 -c 1",
        ],
        dir.path(),
    )
    .await;
    assert_eq!(results[0]["output"], "./src/app.py:2:    return 1\n");
    assert_eq!(results[0]["status"], "executed");
    assert_eq!(results[0]["class"], "search");
    let status = results[2]["output"].as_str().unwrap();
    assert!(
        status.starts_with(" M src/app.py\n?? notes.txt\ndiff --git a/src/app.py b/src/app.py\n"),
        "{status}"
    );
    assert!(
        status.contains("-    return 1\n+    return 2\n"),
        "{status}"
    );
    assert!(results[3]["output"].as_str().unwrap().ends_with(" Base\n"));
    assert_eq!(results[4]["status"], "stubbed");
    assert_eq!(results[4]["exit_code"], 127);
    assert!(results.iter().all(|r| r["fuel"].as_u64().unwrap() > 0));
}

#[tokio::test]
async fn three_runs_one_under_cpu_load_give_the_same_bytes_entropy_and_fuel_included() {
    let dir = scratch("tools-same");
    let (archive, _) = packed(dir.path()).await;
    let commands = [
        "mktemp; mktemp -d; echo $RANDOM",
        "head -c 16 /dev/urandom | od -An -tx1; date",
        "sleep 90; date +%s",
        "date +%s; ls -la src",
        "grep -rn return . ; find . -type f | sort; sed -i 's/1/2/' src/app.py; git diff",
    ];
    let one = exec(&archive, &commands, dir.path()).await;
    let two = exec(&archive, &commands, dir.path()).await;
    // The third with every core kept busy by spinning threads.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let spinners: Vec<_> = (0..2 * cores)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                }
            })
        })
        .collect();
    let loaded = exec(&archive, &commands, dir.path()).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for s in spinners {
        s.join().unwrap();
    }
    // Every field: output, status, exit code, class and the fuel spent.
    assert_eq!(one, two);
    assert_eq!(one, loaded);
    // The virtual clock: the fixed epoch, plus the session's sleeps (a call
    // reads it as it was when the call started).
    assert_eq!(one[2]["output"], "1767225600\n");
    assert!(
        one[3]["output"]
            .as_str()
            .unwrap()
            .starts_with("1767225690\n"),
        "{}",
        one[2]["output"]
    );
}

#[tokio::test]
async fn runaway_commands_are_stopped_with_a_clear_result_and_the_session_goes_on() {
    let dir = scratch("tools-runaway");
    let (archive, _) = packed(dir.path()).await;
    let results = exec(
        &archive,
        &[
            ":(){ :|:& };:",
            "yes > y.txt",
            "cat /dev/zero > z.bin",
            "while true; do :; done",
            "head -c 10000000000 /dev/zero > big.bin",
            "cd ../../../..; pwd; ls",
            "cat /etc/shadow /root/.ssh/id_rsa; echo x > /etc/agentload-escape; ls /etc/agentload-escape",
            "ln -s /etc/passwd pw && cat pw | head -1",
            "echo still here; ls",
        ],
        dir.path(),
    )
    .await;
    let output = |i: usize| results[i]["output"].as_str().unwrap().to_owned();
    assert_eq!(results[0]["exit_code"], 124, "{}", output(0));
    assert!(
        output(0).contains("stopped by the sandbox"),
        "{}",
        output(0)
    );
    assert!(results[0]["detail"]
        .as_str()
        .unwrap()
        .starts_with("budget: "));
    // `yes` stops at bashkit's own output limit; copying /dev/zero or 10 GB
    // stops at the session's quota or the call's budget of bytes in flight,
    // whichever comes first, and says which.
    assert_ne!(results[1]["exit_code"], 0, "{}", output(1));
    assert!(output(1).contains("output limit"), "{}", output(1));
    for i in [2, 4] {
        assert_ne!(results[i]["exit_code"], 0, "{i}: {}", output(i));
        assert!(
            output(i).contains("No space left on device")
                || output(i).contains("stopped by the sandbox"),
            "{i}: {}",
            output(i)
        );
    }
    assert_eq!(results[3]["exit_code"], 124);
    assert_eq!(output(5).lines().next(), Some("/"));
    assert!(!output(6).contains("root:"), "{}", output(6));
    assert!(!Path::new("/etc/agentload-escape").exists());
    assert!(!output(7).contains("root:x:0:0"), "{}", output(7));
    assert_eq!(output(8), "still here\nREADME.md\npw\nsrc\ny.txt\n");
}

fn spec(archive: &Path) -> WorkspaceSpec {
    WorkspaceSpec {
        name: "repo".into(),
        archive: std::fs::read(archive).unwrap(),
        mount: "/workspace".into(),
        branch: "main".into(),
    }
}

fn bash(command: &str) -> ToolCall {
    ToolCall {
        name: "bash".into(),
        arguments: serde_json::json!({ "command": command }).to_string(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trapped_instance_is_made_again_and_its_sessions_keep_their_files() {
    let dir = scratch("tools-trap");
    let (archive, _) = packed(dir.path()).await;
    // Fuel for ordinary calls, not for a long loop the step budgets allow.
    let config = ToolLimitsConfig {
        fuel_per_call: 2_000_000_000,
        ..ToolLimitsConfig::default()
    };
    let env = environment("shell-tools", None, limits(&config)).unwrap();
    let pool = tokio::task::spawn_blocking(move || ToolPool::start(env, vec![spec(&archive)], 1))
        .await
        .unwrap()
        .unwrap();
    for s in ["a", "b"] {
        pool.open(s, "repo", 1).await.unwrap();
    }
    let first = pool
        .call("a", vec![("c1".into(), bash("echo kept > a.txt"))])
        .await;
    assert_eq!(first[0].call.status, ToolStatus::Executed);
    pool.call("b", vec![("c1".into(), bash("echo mine > b.txt"))])
        .await;
    let trapped = pool
        .call(
            "a",
            vec![(
                "c2".into(),
                bash("echo lost > lost.txt; i=0; while [ $i -lt 900000 ]; do i=$((i+1)); done"),
            )],
        )
        .await;
    assert_eq!(
        trapped[0].call.status,
        ToolStatus::Error,
        "{:?}",
        trapped[0]
    );
    assert_eq!(trapped[0].call.detail, "it spent the call's fuel");
    assert!(trapped[0].output.contains("could not run this call"));
    // Both sessions were rebuilt from their calls; the trapped call left nothing.
    let a = pool
        .call("a", vec![("c3".into(), bash("cat a.txt; ls"))])
        .await;
    assert_eq!(a[0].output, "kept\nREADME.md\na.txt\nsrc\n");
    let b = pool.call("b", vec![("c2".into(), bash("cat b.txt"))]).await;
    assert_eq!(b[0].output, "mine\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn archives_that_leave_their_tree_or_are_not_the_locked_ones_are_refused() {
    let dir = scratch("tools-refused");
    let (archive, sha) = packed(dir.path()).await;
    let e = agentload::tools::read_workspace(
        "repo",
        &archive,
        Some(&"0".repeat(64)),
        "/workspace",
        "main",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(&format!(
            "its sha256 is {sha}, {} was asked for",
            "0".repeat(64)
        )),
        "{e}"
    );
    let out = agentload(
        &[
            "tools",
            "exec",
            "--workspace",
            archive.to_str().unwrap(),
            "--sha256",
            &"0".repeat(64),
            "echo never",
        ],
        dir.path(),
    )
    .await;
    assert!(!out.status.success());
    assert!(text(&out).contains("refused"), "{}", text(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("never"));
    // An archive whose entry climbs out of its tree: refused when loaded, naming it.
    let mut evil = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(1);
    header.set_mode(0o644);
    header.as_old_mut().name[..9].copy_from_slice(b"../escape");
    header.set_cksum();
    evil.append(&header, &b"x"[..]).unwrap();
    let evil = WorkspaceSpec {
        name: "evil".into(),
        archive: evil.into_inner().unwrap(),
        mount: "/workspace".into(),
        branch: "main".into(),
    };
    let env = environment("shell-tools", None, limits(&ToolLimitsConfig::default())).unwrap();
    let e =
        tokio::task::spawn_blocking(move || ToolPool::start(env, vec![spec(&archive), evil], 1))
            .await
            .unwrap()
            .err()
            .unwrap();
    assert!(
        e.contains("workspace `evil`") && e.contains("`../escape`: `..` would leave the workspace"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn random_orders_and_names_do_not_depend_on_what_else_ran_in_the_instance() {
    let dir = scratch("tools-history");
    let (archive, _) = packed(dir.path()).await;
    let env = environment("shell-tools", None, limits(&ToolLimitsConfig::default())).unwrap();
    let random = [
        "seq 1 30 | sort -R | tr '\\n' ' '; seq 1 30 | shuf -n 8 | tr '\\n' ' '; mktemp; echo $RANDOM",
        "declare -A m=([alpha]=1 [beta]=2 [gamma]=3 [delta]=4); echo ${!m[@]}; seq 1 9 | shuf | tr '\\n' ' '",
    ];
    let mut answers = Vec::new();
    for history in [false, true] {
        let (env, archive) = (env.clone(), archive.clone());
        let pool =
            tokio::task::spawn_blocking(move || ToolPool::start(env, vec![spec(&archive)], 1))
                .await
                .unwrap()
                .unwrap();
        pool.open("a", "repo", 1).await.unwrap();
        if history {
            // Another session of the same instance, its hash maps, sorts
            // and shuffles first.
            pool.open("b", "repo", 2).await.unwrap();
            for i in 0..4 {
                let command = "ls -R; sort -R README.md; shuf -e x y z; mktemp; env | sort";
                pool.call("b", vec![(format!("b{i}"), bash(command))]).await;
            }
        }
        let mut outputs = Vec::new();
        for (i, command) in random.iter().enumerate() {
            let answered = pool.call("a", vec![(format!("a{i}"), bash(command))]).await;
            assert_eq!(
                answered[0].call.status,
                ToolStatus::Executed,
                "{answered:?}"
            );
            outputs.push(answered[0].output.clone());
        }
        answers.push(outputs);
    }
    assert_eq!(answers[0], answers[1]);
    // Shuffled: neither the sort of 1..30 nor the shuffle of 1..9 comes
    // out in order.
    let first: Vec<&str> = answers[0][0].split(' ').take(30).collect();
    assert_ne!(first, (1..=30).map(|n| n.to_string()).collect::<Vec<_>>());
    assert!(
        !answers[0][1].ends_with("1 2 3 4 5 6 7 8 9 "),
        "{:?}",
        answers[0]
    );
}

/// A pool of one instance of shell-tools whose calls may spend `fuel`.
async fn pool_of_one(archive: &Path, fuel: u64) -> ToolPool {
    let config = ToolLimitsConfig {
        fuel_per_call: fuel,
        ..ToolLimitsConfig::default()
    };
    let env = environment("shell-tools", None, limits(&config)).unwrap();
    let spec = spec(archive);
    tokio::task::spawn_blocking(move || ToolPool::start(env, vec![spec], 1))
        .await
        .unwrap()
        .unwrap()
}

/// Calls that build what an instance builds on first use, and `a`'s one
/// call made of them all.
const PARTS: [&str; 5] = [
    "true",
    "seq 1 200 | sort -R | tail -1",
    "ls -R",
    "git status",
    "grep -rn return .",
];

/// A one-instance pool whose calls may spend `fuel`, in which session `b`
/// ran [`PARTS`] first when `warmed`, then session `a` ran them as one call
/// (its answer).
async fn whole_call(archive: &Path, fuel: u64, warmed: bool) -> (ToolPool, Answered) {
    let pool = pool_of_one(archive, fuel).await;
    if warmed {
        pool.open("b", "repo", 2).await.unwrap();
        for (i, part) in PARTS.iter().enumerate() {
            let b = pool.call("b", vec![(format!("b{i}"), bash(part))]).await;
            assert_eq!(b[0].call.status, ToolStatus::Executed, "{b:?}");
        }
    }
    pool.open("a", "repo", 1).await.unwrap();
    let a = pool
        .call("a", vec![("a1".into(), bash(&PARTS.join("; ")))])
        .await;
    (pool, a.into_iter().next().unwrap())
}

/// The fuel of `a`'s call in a fresh instance and in one `b` warmed.
async fn alone_and_warmed(archive: &Path) -> (u64, u64) {
    let alone = whole_call(archive, u64::MAX / 4, false).await.1.call.fuel;
    let warmed = whole_call(archive, u64::MAX / 4, true).await.1.call.fuel;
    assert!(
        alone > warmed,
        "the first use in an instance should cost more: {alone} vs {warmed}"
    );
    (alone, warmed)
}

#[tokio::test(flavor = "multi_thread")]
async fn whether_a_call_runs_out_of_fuel_does_not_depend_on_what_else_ran_in_its_instance() {
    let dir = scratch("tools-fuel-settled");
    let (archive, _) = packed(dir.path()).await;
    let (alone, warmed) = alone_and_warmed(&archive).await;
    // A budget the call fits in its warmed shared instance, by less than a
    // tenth, and not alone.
    let budget = (warmed / 9 * 10).min(alone - 1);
    assert!(warmed < budget && budget < alone);
    let (pool, shared) = whole_call(&archive, budget, true).await;
    let first = whole_call(&archive, budget, false).await.1;
    assert_eq!(shared.call, first.call);
    assert_eq!(shared.call.status, ToolStatus::Error);
    assert_eq!(shared.call.detail, "it spent the call's fuel");
    let after = pool.call("a", vec![("a2".into(), bash("ls"))]).await;
    assert_eq!(after[0].call.status, ToolStatus::Executed, "{after:?}");
    // With room to spare it runs where it is.
    let roomy = whole_call(&archive, alone + alone / 5, true).await.1;
    assert_eq!(roomy.call.status, ToolStatus::Executed, "{roomy:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_costs_more_when_replayed_elsewhere_is_still_replayed() {
    let dir = scratch("tools-fuel-replayed");
    let (archive, _) = packed(dir.path()).await;
    let (alone, warmed) = alone_and_warmed(&archive).await;
    // A budget `a`'s call fits in the warmed instance, short of the tenth
    // that settles it alone, and that the same call does not fit alone.
    let budget = (warmed / 9 * 10 + alone) / 2;
    assert!(
        warmed < budget / 10 * 9 && budget < alone,
        "{warmed} {alone}"
    );
    let (pool, a) = whole_call(&archive, budget, true).await;
    assert_eq!(a.call.status, ToolStatus::Executed, "{a:?}");
    // `b` leaves; another session's call spends its fuel, so the instance
    // is made again with `a` alone in it: its call, replayed first there,
    // costs more than the budget, and must be replayed all the same.
    pool.close("b");
    pool.open("c", "repo", 3).await.unwrap();
    let heavy = bash("seq 1 20000 | sort -n | tail -1");
    let c = pool.call("c", vec![("c1".into(), heavy)]).await;
    assert_eq!(c[0].call.status, ToolStatus::Error, "{c:?}");
    let next = pool.call("a", vec![("a2".into(), bash("ls"))]).await;
    assert_eq!(next[0].call.status, ToolStatus::Executed, "{next:?}");
}
