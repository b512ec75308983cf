//! The `bash` tool: one fresh shell per call over the session's files, as
//! `bash -c COMMAND` in the agent's container (the working directory, the
//! variables and the functions of one call do not carry to the next; the
//! files do).
//!
//! The shell is bashkit's interpreter, built for each call with the
//! session's filesystem, a fixed identity (`root` on host `sandbox`, `HOME`
//! `/root`), the workspace as its working directory, the session's virtual
//! clock, `$RANDOM` seeded from the session and the call, background jobs
//! run in order (no concurrency: the same output order every time), and
//! the call's step budgets. The command runs as `exec 2>&1; COMMAND`, so
//! stdout and stderr come back merged in the order they were written, as
//! an agent harness's `subprocess.run(..., stderr=STDOUT)` gives them.
//! Added commands: `sleep` (moves the virtual clock, never waits), `mktemp`,
//! `sort` and `shuf` (their names and orders drawn from the call's seed,
//! [`crate::mktemp`], [`crate::sort`], [`crate::shuf`]), `git`,
//! `apply_patch`, and the stubs.

use crate::classify::{self, Class};
use crate::stubs::{self, Stubbed};
use crate::{Budgets, Session, Status, ToolResult};
use bashkit::{Bash, BuiltinContext, ExecResult, ExecutionLimits, FileSystem, SessionLimits};
use serde::Deserialize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The `bash` tool's arguments.
#[derive(Debug, Deserialize)]
struct Args {
    command: String,
}

/// The exit status a call stopped by a budget reports (as `timeout` does).
pub const STOPPED_EXIT: i32 = 124;

/// Runs the `bash` tool's call (`{"command": ...}`).
pub async fn run_tool(
    session: &Session,
    arguments: &str,
    budgets: Budgets,
    seed: u64,
) -> ToolResult {
    match serde_json::from_str::<Args>(arguments) {
        Ok(args) => run(session, &args.command, budgets, seed).await,
        Err(e) => ToolResult {
            status: Status::Executed,
            output: format!("error: the bash tool takes {{\"command\": \"...\"}}: {e}"),
            exit_code: None,
            detail: "invalid arguments".into(),
            class: Class::Other,
        },
    }
}

/// Runs `command` in a fresh shell of `session`.
pub async fn run(session: &Session, command: &str, budgets: Budgets, seed: u64) -> ToolResult {
    let stubbed = Arc::new(Mutex::new(Vec::new()));
    let mut bash = build(session, budgets, seed, &stubbed);
    let class = classify::command(&bash, command);
    let seeded = bash.exec(&format!("RANDOM={}", seed % 32768)).await;
    debug_assert!(seeded.is_ok());
    let script = format!("exec 2>&1; {command}");
    let partial = Arc::new(Mutex::new(Vec::<u8>::new()));
    let sink = partial.clone();
    let outcome = bash
        .exec_streaming(
            &script,
            Box::new(move |out, err| {
                let mut sink = sink.lock().unwrap_or_else(|e| e.into_inner());
                sink.extend_from_slice(out.as_bytes());
                sink.extend_from_slice(err.as_bytes());
            }),
        )
        .await;
    let stubbed: Vec<String> = stubbed.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let (mut output, exit_code, mut detail) = match outcome {
        Ok(result) => finished(result, budgets),
        Err(e) => {
            let partial = partial.lock().unwrap_or_else(|e| e.into_inner()).clone();
            stopped(&e, partial)
        }
    };
    if output.len() > budgets.output_bytes {
        output.truncate(budgets.output_bytes);
        detail = join(
            &detail,
            &format!("output cut at {} bytes", budgets.output_bytes),
        );
    }
    let status = if stubbed.is_empty() {
        Status::Executed
    } else {
        detail = join(&format!("stubbed: {}", stubbed.join(", ")), &detail);
        Status::Stubbed
    };
    ToolResult {
        status,
        output: String::from_utf8_lossy(&output).into_owned(),
        exit_code: Some(exit_code),
        detail,
        class: if status == Status::Stubbed {
            Class::Stub
        } else {
            class
        },
    }
}

/// The shell for one call (`seed`: the call's).
fn build(
    session: &Session,
    budgets: Budgets,
    seed: u64,
    stubbed: &Arc<Mutex<Vec<String>>>,
) -> Bash {
    let limits = ExecutionLimits::new()
        .max_commands(budgets.commands)
        .max_loop_iterations(budgets.loop_iterations)
        .max_total_loop_iterations(budgets.total_loop_iterations)
        .max_work_units(budgets.work_units)
        .max_function_depth(budgets.depth)
        .max_stdout_bytes(budgets.output_bytes + 1)
        .max_stderr_bytes(budgets.output_bytes + 1)
        // Never the stop: the step budgets are. The clock this reads does
        // not move while a command computes.
        .timeout(Duration::from_secs(86_400))
        .parser_timeout(Duration::from_secs(86_400));
    let ws = &session.workspace;
    let fs: Arc<dyn FileSystem> = session.fs.clone();
    let mut builder = Bash::builder()
        .fs(fs)
        .cwd(&ws.layout.mount)
        .username("root")
        .hostname("sandbox")
        .env("HOME", "/root")
        .env("USER", "root")
        .env("LOGNAME", "root")
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .env("LANG", "C.UTF-8")
        .env("SHELL", "/bin/bash")
        .env("TERM", "dumb")
        .fixed_epoch(session.fs.clock().now_secs())
        .limits(limits.clone())
        // One shell per call: the per-call budgets above are the ones.
        .session_limits(
            SessionLimits::new()
                .max_total_commands(u64::MAX)
                .max_exec_calls(u64::MAX),
        )
        .concurrent_jobs(false)
        .builtin(
            "sleep",
            Box::new(VirtualSleep {
                clock: session.fs.clock().clone(),
            }),
        )
        .builtin(
            "git",
            Box::new(crate::git::GitCommand {
                workspace: ws.clone(),
                fs: session.fs.clone(),
                state: session.git.clone(),
                stubbed: stubbed.clone(),
            }),
        )
        .builtin("mktemp", Box::new(crate::mktemp::SeededMktemp::new(seed)))
        .builtin(
            "sort",
            Box::new(crate::sort::SeededSort::new(
                seed,
                limits.clone(),
                stubbed.clone(),
            )),
        )
        .builtin(
            "shuf",
            Box::new(crate::shuf::SeededShuf::new(seed, limits.clone())),
        )
        .builtin(
            crate::patch::NAME,
            Box::new(crate::patch::PatchCommand {
                fs: session.fs.clone(),
            }),
        )
        .command_resolver(Arc::new(stubs::Resolver {
            stubbed: stubbed.clone(),
        }));
    for name in stubs::NAMES {
        builder = builder.builtin(
            *name,
            Box::new(Stubbed {
                name,
                stubbed: stubbed.clone(),
            }),
        );
    }
    builder.build()
}

/// A finished run: its merged output and exit status; a budget bashkit
/// reports inside the result (output cut) goes to the detail.
fn finished(result: ExecResult, budgets: Budgets) -> (Vec<u8>, i32, String) {
    let mut output = result.stdout.as_bytes().to_vec();
    // The parser's own messages do not pass through the `exec 2>&1`.
    output.extend_from_slice(result.stderr.as_bytes());
    let detail = if result.stdout_truncated || result.stderr_truncated {
        format!("output cut at {} bytes", budgets.output_bytes)
    } else {
        String::new()
    };
    (output, result.exit_code, detail)
}

/// A run bashkit stopped: what it printed before, and why, in the output
/// (where the agent reads it) and in the detail.
fn stopped(error: &bashkit::Error, mut output: Vec<u8>) -> (Vec<u8>, i32, String) {
    let budget = match error {
        bashkit::Error::ResourceLimit(limit) => Some(limit.to_string()),
        bashkit::Error::Execution(why) if why.contains("limit exceeded") => Some(why.clone()),
        _ => None,
    };
    if let Some(why) = budget {
        if !output.is_empty() && !output.ends_with(b"\n") {
            output.push(b'\n');
        }
        output.extend_from_slice(
            format!("bash: stopped by the sandbox: {why} (the call's step budget)\n").as_bytes(),
        );
        return (output, STOPPED_EXIT, format!("budget: {why}"));
    }
    match error {
        bashkit::Error::Parse { message, line, .. } => {
            let at = if *line > 0 {
                format!("line {line}: ")
            } else {
                String::new()
            };
            output.extend_from_slice(format!("bash: -c: {at}{message}\n").as_bytes());
            (output, 2, String::new())
        }
        other => {
            output.extend_from_slice(format!("bash: {other}\n").as_bytes());
            (output, 1, String::new())
        }
    }
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_owned(),
        (_, true) => a.to_owned(),
        _ => format!("{a}; {b}"),
    }
}

/// `sleep`: moves the session's virtual clock, returns at once.
struct VirtualSleep {
    clock: Arc<crate::clock::Clock>,
}

#[bashkit::async_trait]
impl bashkit::Builtin for VirtualSleep {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let mut seconds = 0.0f64;
        if ctx.args.is_empty() {
            return Ok(failure("sleep: missing operand\n", 1));
        }
        for arg in ctx.args {
            match parse_interval(arg) {
                Some(s) => seconds += s,
                None => {
                    return Ok(failure(
                        &format!("sleep: invalid time interval '{arg}'\n"),
                        1,
                    ))
                }
            }
        }
        if seconds.is_finite() && seconds > 0.0 {
            self.clock
                .advance(Duration::from_secs_f64(seconds.min(1e9)));
        }
        Ok(ExecResult::ok(String::new()))
    }
}

/// A result that failed with `stderr`.
pub fn failure(stderr: &str, code: i32) -> ExecResult {
    ExecResult {
        stderr: stderr.to_owned().into(),
        exit_code: code,
        ..ExecResult::default()
    }
}

/// GNU `sleep`'s interval: a number with an optional `s`, `m`, `h` or `d`.
fn parse_interval(arg: &str) -> Option<f64> {
    let (number, unit) = match arg.char_indices().last()? {
        (i, 's') => (&arg[..i], 1.0),
        (i, 'm') => (&arg[..i], 60.0),
        (i, 'h') => (&arg[..i], 3600.0),
        (i, 'd') => (&arg[..i], 86400.0),
        _ => (arg, 1.0),
    };
    let value: f64 = number.trim().parse().ok()?;
    (value >= 0.0).then_some(value * unit)
}

#[cfg(test)]
mod tests {
    use super::parse_interval;

    #[test]
    fn sleep_reads_gnu_intervals() {
        assert_eq!(parse_interval("1.5"), Some(1.5));
        assert_eq!(parse_interval("2m"), Some(120.0));
        assert_eq!(parse_interval("1d"), Some(86400.0));
        assert_eq!(parse_interval("-1"), None);
        assert_eq!(parse_interval("x"), None);
    }
}
