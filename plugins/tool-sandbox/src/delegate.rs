//! bashkit's own command, for the cases a sandbox command that replaces it
//! leaves to it.
//!
//! A builtin the sandbox registers under a bashkit name (`sort`, `shuf`)
//! replaces bashkit's in the shell's table, so the original is reached
//! through a second shell of bashkit's defaults over the same files, in the
//! same directory, with the same environment, stdin and step budgets. The
//! calling shell's process substitutions (`/dev/fd/63`) live in that shell
//! only; a command reading one gets its bytes some other way (`sort` as
//! its stdin).

use bashkit::{
    Bash, BuiltinContext, ExecOptions, ExecResult, ExecutionLimits, SessionLimits, StreamData,
};

/// Runs bashkit's own `name` with `ctx`'s arguments, stdin, files,
/// directory and environment, under `limits` (the call's).
pub async fn bashkits_own(
    name: &str,
    ctx: &BuiltinContext<'_>,
    limits: &ExecutionLimits,
) -> bashkit::Result<ExecResult> {
    let stdin = ctx.stdin.cloned();
    bashkits_own_with(name, ctx, limits, ctx.args, stdin).await
}

/// As [`bashkits_own`], with `args` and `stdin` in place of `ctx`'s.
pub async fn bashkits_own_with(
    name: &str,
    ctx: &BuiltinContext<'_>,
    limits: &ExecutionLimits,
    args: &[String],
    stdin: Option<StreamData>,
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
    let mut options = ExecOptions::new().positional(args.iter().cloned());
    if let Some(stdin) = stdin {
        options = options.stdin(stdin);
    }
    builder
        .build()
        .exec_with_options(&format!("{name} \"$@\""), options)
        .await
}

/// Whether `path` is one of the calling shell's process substitutions
/// (`<(...)` is `/dev/fd/63`, ...): the second shell does not have them.
pub fn is_proc_sub(path: &str) -> bool {
    path.strip_prefix("/dev/fd/")
        .and_then(|n| n.parse::<u32>().ok())
        .is_some_and(|n| n >= 3)
}
