//! `agentload tools fidelity`: how closely the sandbox's answers match
//! real bash's.
//!
//! - `--aa DIR` (AA's `agentperf-default-v1` replay): every recorded tool
//!   call of the tasks that ship a workspace is run again, in order, in one
//!   sandbox session over that workspace (at `/workspace`, where AA's
//!   container mounts it), and compared with the result the recording's
//!   next request carries (OpenClaw's JSON: `returncode`, and `output`, or
//!   `output_head` / `output_tail` / `elided_chars` when it was cut).
//! - `--generated`: a repository this command generates (seeded, committed
//!   with git) gets a fixed list of the commands agents run, once in real
//!   `bash -c` in a scratch copy and once in the sandbox over its archive,
//!   and each pair of outputs is compared.
//!
//! A call matches exactly when its exit status and output are equal byte
//! for byte; whitespace-normalized when they are equal after every run of
//! whitespace is made one space and the ends are trimmed. Every miss is
//! listed with its cause.

use super::cli::session;
use agentload_plugin_host::tools::{ToolCall, WorkspaceSpec};
use agentload_results::tools::ToolStatus;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What `agentload tools fidelity` was asked.
#[derive(Debug, clap::Args)]
pub struct FidelityArgs {
    /// AA's replay directory (`agentperf-default-v1`: `manifest-x86_64.json`,
    /// `traces/`, `workspaces/`).
    #[arg(long, required_unless_present = "generated")]
    pub aa: Option<PathBuf>,
    /// A generated repository against real bash (needs `bash` and `git`).
    #[arg(long)]
    pub generated: bool,
    /// The tool environment (a name found where plugins are, or a path).
    #[arg(long, default_value = "shell-tools")]
    pub environment: String,
    /// Also write every call's comparison here (JSON).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// One compared call.
#[derive(Debug, Serialize)]
pub struct Compared {
    pub task: String,
    pub index: usize,
    pub command: String,
    pub status: String,
    pub exact: bool,
    pub normalized: bool,
    /// Why it missed (empty when exact).
    pub cause: String,
}

/// The table's totals.
#[derive(Debug, Serialize)]
pub struct Totals {
    pub calls: usize,
    pub exact: usize,
    pub normalized: usize,
    pub exact_pct: f64,
    pub normalized_pct: f64,
}

fn totals(rows: &[Compared]) -> Totals {
    let calls = rows.len();
    let exact = rows.iter().filter(|r| r.exact).count();
    let normalized = rows.iter().filter(|r| r.normalized).count();
    let pct = |n: usize| {
        if calls == 0 {
            0.0
        } else {
            (n as f64 * 1000.0 / calls as f64).round() / 10.0
        }
    };
    Totals {
        calls,
        exact,
        normalized,
        exact_pct: pct(exact),
        normalized_pct: pct(normalized),
    }
}

/// `agentload tools fidelity`.
pub async fn run(args: FidelityArgs) -> Result<()> {
    let mut all = Vec::new();
    if let Some(dir) = &args.aa {
        let rows = aa(dir, &args.environment).await?;
        print_table("AA agentperf-default-v1, tasks with a workspace", &rows);
        all.push(("aa", rows));
    }
    if args.generated {
        let rows = generated(&args.environment).await?;
        print_table("generated repository, against real bash", &rows);
        all.push(("generated", rows));
    }
    if let Some(out) = &args.out {
        let json: serde_json::Map<String, Value> = all
            .iter()
            .map(|(name, rows)| {
                (
                    (*name).to_owned(),
                    serde_json::json!({ "totals": totals(rows), "calls": rows }),
                )
            })
            .collect();
        std::fs::write(out, serde_json::to_string_pretty(&json)? + "\n")
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    Ok(())
}

fn print_table(title: &str, rows: &[Compared]) {
    let t = totals(rows);
    let mut out = format!(
        "{title}\n{} calls: {} exact ({:.1} %), {} whitespace-normalized ({:.1} %)\n",
        t.calls, t.exact, t.exact_pct, t.normalized, t.normalized_pct
    );
    let misses: Vec<&Compared> = rows.iter().filter(|r| !r.exact).collect();
    if !misses.is_empty() {
        out.push_str(
            "\n| task | # | command | status | normalized | cause |\n|---|---|---|---|---|---|\n",
        );
        for r in misses {
            let command: String = r.command.replace('\n', "⏎").chars().take(70).collect();
            out.push_str(&format!(
                "| {} | {} | `{}` | {} | {} | {} |\n",
                r.task,
                r.index,
                command.replace('|', "\\|"),
                r.status,
                if r.normalized { "yes" } else { "no" },
                r.cause.replace('|', "\\|")
            ));
        }
    }
    out.push('\n');
    agentload_console::out(&out);
}

/// Runs of whitespace made one space, ends trimmed.
fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Why `got` is not `want`: the first line that differs.
fn first_difference(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    for i in 0..w.len().max(g.len()) {
        let (a, b) = (w.get(i), g.get(i));
        if a != b {
            let show = |s: Option<&&str>| match s {
                Some(s) => format!("{:?}", s.chars().take(60).collect::<String>()),
                None => "(no line)".into(),
            };
            return format!("line {}: recorded {}, sandbox {}", i + 1, show(a), show(b));
        }
    }
    if want.ends_with('\n') != got.ends_with('\n') {
        return "the final newline".into();
    }
    "bytes differ".into()
}

/// AA's 5 tasks with a workspace.
async fn aa(dir: &Path, environment: &str) -> Result<Vec<Compared>> {
    let manifest_path = dir.join("manifest-x86_64.json");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(&manifest_path)
            .with_context(|| format!("cannot read {}", manifest_path.display()))?,
    )
    .with_context(|| format!("{} is not JSON", manifest_path.display()))?;
    let tasks = manifest["tasks"]
        .as_array()
        .with_context(|| format!("{}: no tasks", manifest_path.display()))?;
    let scratch = tempdir()?;
    let mut rows = Vec::new();
    for task in tasks {
        let env = &task["tool_environment"];
        let Some(workspace) = env["workspace_path"].as_str() else {
            continue;
        };
        let id = task["task_id"].as_str().unwrap_or("?").to_owned();
        let archive = scratch.join(format!("{id}.tar"));
        crate::workspace::pack(&dir.join(workspace), &archive)?;
        let spec = WorkspaceSpec {
            name: id.clone(),
            archive: std::fs::read(&archive)?,
            mount: env["cwd"].as_str().unwrap_or("/workspace").to_owned(),
            branch: "main".into(),
        };
        let pool = session(environment, None, spec, &id, 42).await?;
        let trace = dir.join(task["trace"].as_str().unwrap_or_default());
        let lines: Vec<Value> = std::fs::read_to_string(&trace)
            .with_context(|| format!("cannot read {}", trace.display()))?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()
            .with_context(|| format!("{} is not JSONL", trace.display()))?;
        let mut index = 0;
        for (row_index, row) in lines.iter().enumerate() {
            for call in row["recorded_tool_calls_after"]
                .as_array()
                .into_iter()
                .flatten()
            {
                index += 1;
                let command = call["action"]["command"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let call_id = call["tool_call_id"].as_str().unwrap_or_default();
                let recorded = lines.get(row_index + 1).and_then(|next| {
                    next["messages"].as_array()?.iter().find_map(|m| {
                        (m["role"] == "tool" && m["tool_call_id"] == call_id)
                            .then(|| m["content"].as_str().map(str::to_owned))
                            .flatten()
                    })
                });
                let answers = pool
                    .call(
                        &id,
                        vec![(
                            call_id.to_owned(),
                            ToolCall {
                                name: "bash".into(),
                                arguments: serde_json::json!({ "command": command }).to_string(),
                            },
                        )],
                    )
                    .await;
                let Some(recorded) = recorded else {
                    // The session's last call: the recording has no result for it.
                    continue;
                };
                let answer = &answers[0];
                rows.push(compare_aa(&id, index, &command, &recorded, answer)?);
            }
        }
    }
    Ok(rows)
}

fn compare_aa(
    task: &str,
    index: usize,
    command: &str,
    recorded: &str,
    answer: &agentload_engine::tools::Answered,
) -> Result<Compared> {
    let rec: Value = serde_json::from_str(recorded)
        .with_context(|| format!("{task} call {index}: the recorded result is not JSON"))?;
    let rc = rec["returncode"].as_i64();
    let got = &answer.output;
    let (exact_output, normalized_output, cause) = if let Some(full) = rec["output"].as_str() {
        let cause = if full == got {
            String::new()
        } else {
            first_difference(full, got)
        };
        (full == got, normalize(full) == normalize(got), cause)
    } else {
        // Cut by the harness: its first and last 5,000 characters.
        let head = rec["output_head"].as_str().unwrap_or_default();
        let tail = rec["output_tail"].as_str().unwrap_or_default();
        let elided = rec["elided_chars"].as_u64().unwrap_or(0);
        let chars: Vec<char> = got.chars().collect();
        let (h, t) = (head.chars().count(), tail.chars().count());
        let ok = chars.len() as u64 == h as u64 + t as u64 + elided
            && chars[..h.min(chars.len())].iter().collect::<String>() == head
            && chars[chars.len().saturating_sub(t)..]
                .iter()
                .collect::<String>()
                == tail;
        let cause = if ok {
            String::new()
        } else {
            format!(
                "cut output: recorded {} characters, sandbox {}",
                h as u64 + t as u64 + elided,
                chars.len()
            )
        };
        (ok, ok, cause)
    };
    let rc_ok = rc.map(|r| Some(r as i32)) == Some(answer.call.exit_code);
    let status = answer.call.status;
    let mut cause = cause;
    if status == ToolStatus::Stubbed {
        cause = format!("stubbed ({})", answer.call.detail);
    } else if !rc_ok {
        cause = format!(
            "exit status: recorded {rc:?}, sandbox {:?}{}",
            answer.call.exit_code,
            if cause.is_empty() {
                String::new()
            } else {
                format!("; {cause}")
            }
        );
    }
    Ok(Compared {
        task: task.to_owned(),
        index,
        command: command.to_owned(),
        status: status.name().to_owned(),
        exact: exact_output && rc_ok,
        normalized: normalized_output && rc_ok,
        cause,
    })
}

fn tempdir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("agentload-fidelity-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The commands of the generated comparison: what coding agents run, in
/// an order where later ones see earlier edits.
const COMMANDS: &[&str] = &[
    "ls",
    "ls src",
    "ls -la src/pkg | tail -n +4 | awk '{print $1, $5, $NF}'",
    "cat README.md",
    "head -n 5 src/pkg/core.py",
    "tail -n 3 src/pkg/core.py",
    "sed -n '3,8p' src/pkg/util.py",
    "nl -ba src/pkg/core.py | sed -n '1,4p'",
    "wc -l src/pkg/*.py",
    "grep -n 'def ' src/pkg/core.py",
    "grep -rn 'import' src | sort",
    "grep -rl 'value' . | sort",
    "grep -c 'return' src/pkg/util.py",
    "grep -rn --include='*.py' 'class ' .",
    "find . -name '*.py' | sort",
    "find src -type d | sort",
    "find . -type f | wc -l",
    "cat src/pkg/core.py | grep -v '^$' | wc -l",
    "awk -F'=' '/VERSION/ {print $2}' src/pkg/__init__.py",
    "cut -d' ' -f1 README.md | sort | uniq -c | sort -rn | head -3",
    "ls src/pkg | xargs -n1 echo file:",
    "echo hello > notes.txt && cat notes.txt",
    "cat > src/pkg/extra.py <<'EOF'\ndef extra():\n    return 42\nEOF\ncat src/pkg/extra.py",
    "sed -i 's/return value \\* 2/return value * 3/' src/pkg/core.py && grep -n 'value \\*' src/pkg/core.py",
    "mkdir -p build/out && touch build/out/a && ls build/out",
    "rm notes.txt && ls",
    "git status",
    "git status --short",
    "git diff",
    "git diff --stat",
    "git diff src/pkg/core.py",
    "git log --oneline",
    "git log -1 --format='%an %s'",
    "git show HEAD:README.md",
    "git add src/pkg/extra.py && git status --short",
    "git diff --cached --name-status",
    "git checkout -- src/pkg/core.py && git status --short",
    "git stash && git status --short",
    "git stash pop >/dev/null && git status --short",
    "printf '%s\\n' b a c | sort",
    "echo $((6 * 7))",
    "test -f README.md && echo yes || echo no",
    "ls nonexistent",
    "cat missing.txt; echo \"rc=$?\"",
    "grep -rn 'nothing-matches' src; echo \"rc=$?\"",
    "python3 -c 'print(1)'",
];

/// The generated repository: a small package, committed.
fn generate(root: &Path) -> Result<()> {
    let files: &[(&str, String)] = &[
        ("README.md", "# Demo package\n\nA package the fidelity check generates.\nIt has a core and a util module.\n".into()),
        ("src/pkg/__init__.py", "VERSION = '1.2.3'\nfrom .core import compute\n".into()),
        ("src/pkg/core.py", "import math\n\n\ndef compute(value):\n    return value * 2\n\n\nclass Engine:\n    def run(self, value):\n        return compute(value) + math.floor(0.5)\n".into()),
        ("src/pkg/util.py", (1..=12).map(|i| format!("def helper_{i}(value):\n    return value + {i}\n")).collect()),
        ("tests/test_core.py", "from pkg.core import compute\n\n\ndef test_compute():\n    assert compute(2) == 4\n".into()),
        ("setup.cfg", "[metadata]\nname = demo\nversion = 1.2.3\n".into()),
    ];
    for (path, text) in files {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().expect("a file's parent"))?;
        std::fs::write(&full, text)?;
    }
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=Fidelity",
            "-c",
            "user.email=fidelity@example.com",
            "commit",
            "-q",
            "-m",
            "Generated package",
        ],
    ] {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .env("GIT_AUTHOR_DATE", "1700000000 +0000")
            .env("GIT_COMMITTER_DATE", "1700000000 +0000")
            .status()
            .context("cannot run git")?
            .success();
        if !ok {
            bail!("git {args:?} failed in {}", root.display());
        }
    }
    Ok(())
}

/// The generated repository, real bash against the sandbox.
async fn generated(environment: &str) -> Result<Vec<Compared>> {
    let scratch = tempdir()?;
    let root = scratch.join("repo");
    if root.exists() {
        std::fs::remove_dir_all(&root)?;
    }
    std::fs::create_dir_all(&root)?;
    generate(&root)?;
    let archive = scratch.join("repo.tar");
    crate::workspace::pack(&root, &archive)?;
    let spec = WorkspaceSpec {
        name: "generated".into(),
        archive: std::fs::read(&archive)?,
        mount: "/workspace".into(),
        branch: "main".into(),
    };
    let pool = session(environment, None, spec, "generated", 42).await?;
    let mut rows = Vec::new();
    for (i, command) in COMMANDS.iter().enumerate() {
        let real = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("exec 2>&1; {command}"))
            .current_dir(&root)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", "/root")
            .env("LANG", "C.UTF-8")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .context("cannot run bash")?;
        let want = String::from_utf8_lossy(&real.stdout).into_owned();
        let want_rc = real.status.code();
        let answers = pool
            .call(
                "generated",
                vec![(
                    format!("call_{i}"),
                    ToolCall {
                        name: "bash".into(),
                        arguments: serde_json::json!({ "command": command }).to_string(),
                    },
                )],
            )
            .await;
        let a = &answers[0];
        let rc_ok = want_rc == a.call.exit_code;
        let same = want == a.output;
        let mut cause = if same {
            String::new()
        } else {
            first_difference(&want, &a.output)
        };
        if a.call.status == ToolStatus::Stubbed {
            cause = format!("stubbed ({})", a.call.detail);
        } else if !rc_ok {
            cause = format!(
                "exit status: bash {want_rc:?}, sandbox {:?}{}",
                a.call.exit_code,
                if cause.is_empty() {
                    String::new()
                } else {
                    format!("; {cause}")
                }
            );
        }
        rows.push(Compared {
            task: "generated".into(),
            index: i + 1,
            command: (*command).to_owned(),
            status: a.call.status.name().to_owned(),
            exact: same && rc_ok,
            normalized: normalize(&want) == normalize(&a.output) && rc_ok,
            cause,
        });
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(rows)
}
