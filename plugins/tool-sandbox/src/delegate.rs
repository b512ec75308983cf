//! bashkit's own command, for the cases a sandbox command that replaces it
//! leaves to it.
//!
//! A builtin the sandbox registers under a bashkit name (`sort`, `shuf`)
//! replaces bashkit's in the shell's table, so the original is reached
//! through a second shell of bashkit's defaults over the same files, in the
//! same directory, with the same environment, stdin and step budgets.

use bashkit::{Bash, BuiltinContext, ExecOptions, ExecResult, ExecutionLimits, SessionLimits};

/// Runs bashkit's own `name` with `ctx`'s arguments, stdin, files,
/// directory and environment, under `limits` (the call's).
pub async fn bashkits_own(
    name: &str,
    ctx: &BuiltinContext<'_>,
    limits: &ExecutionLimits,
) -> bashkit::Result<ExecResult> {
    let mut builder = Bash::builder()
        .fs(ctx.fs.clone())
        // The files the calling shell sees already include its /dev.
        .rootfs(false)
        .cwd(ctx.cwd.clone())
        .username("root")
        .hostname("sandbox")
        .limits(limits.clone())
        .session_limits(
            SessionLimits::new()
                .max_total_commands(u64::MAX)
                .max_exec_calls(u64::MAX),
        );
    let mut env: Vec<(&String, &String)> = ctx.env.iter().collect();
    env.sort();
    for (key, value) in env {
        builder = builder.env(key, value);
    }
    let mut options = ExecOptions::new().positional(ctx.args.iter().cloned());
    if let Some(stdin) = ctx.stdin {
        options = options.stdin(stdin.clone());
    }
    builder
        .build()
        .exec_with_options(&format!("{name} \"$@\""), options)
        .await
}
