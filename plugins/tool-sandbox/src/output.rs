//! Paths and output of the sandbox's own commands (`mktemp`, `sort`,
//! `shuf`): a path as the calling shell resolves it, and a result printed or
//! written to the file `-o` names.

use crate::shell::failure;
use bashkit::{BuiltinContext, ExecResult};
use std::path::{Path, PathBuf};

/// `path` as the calling shell resolves it (from `cwd`, `..` folded).
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    bashkit::normalize_path(&bashkit::vfs_join(cwd, Path::new(path)))
}

/// `bytes` on stdout, or written to `file` (its failure `command: FILE:
/// why`, exit status `code`).
pub async fn deliver(
    ctx: &BuiltinContext<'_>,
    command: &str,
    file: Option<&str>,
    bytes: Vec<u8>,
    code: i32,
) -> ExecResult {
    match file {
        Some(path) => match ctx.fs.write_file(&resolve(ctx.cwd, path), &bytes).await {
            Ok(()) => ExecResult::ok(String::new()),
            Err(e) => failure(&format!("{command}: {path}: {e}\n"), code),
        },
        None => ExecResult::ok(bytes),
    }
}
