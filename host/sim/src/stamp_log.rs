//! `request_stamps` (`agentload sim --request-stamps FILE`): one JSON line per chat request
//! the scheduler took, written when it ends, so a test can check what a client delivered
//! against the server's own clock and cache rather than the client's records:
//!
//! ```json
//! {"n":0,"session":"s-1","received_mono_ns":123,"outcome":"finished","queued_ns":0,
//!  "first_token_ns":51000,"prompt_tokens":40,"cached_tokens":2,"completion_tokens":1}
//! ```
//!
//! - `n`: the request's number (as in the request log, `request_log`), `session` its
//!   `X-Session-ID`;
//! - `received_mono_ns`: its arrival (the kernel's stamp of its first bytes, or the first
//!   read's return) on the machine's monotonic clock (`CLOCK_MONOTONIC`);
//! - `outcome`: `finished`, `refused` (the context check, before any token) or `abandoned`
//!   (the client went away first); the token counts and times are those of a finished one:
//!   `cached_tokens` is the prefix it reused, as its `usage` says.
//!
//! Lines are in the order requests ended, each written whole in one `write(2)`.

use crate::SimError;
use serde::Serialize;
use std::io::Write;
use std::path::Path;

/// The open log.
#[derive(Debug)]
pub(crate) struct StampLog {
    file: std::fs::File,
}

/// Who a request is, for its line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Who {
    pub(crate) n: u64,
    pub(crate) session: Option<String>,
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    Finished,
    Refused,
    Abandoned,
}

/// One line.
#[derive(Debug, Serialize)]
pub(crate) struct Line<'a> {
    pub(crate) n: u64,
    pub(crate) session: Option<&'a str>,
    pub(crate) received_mono_ns: u64,
    pub(crate) outcome: Outcome,
    pub(crate) queued_ns: u64,
    pub(crate) first_token_ns: u64,
    pub(crate) prompt_tokens: u32,
    pub(crate) cached_tokens: u32,
    pub(crate) completion_tokens: u32,
}

impl StampLog {
    /// Creates (or truncates) the log at `path`.
    pub(crate) fn create(path: &Path) -> Result<Self, SimError> {
        let file = std::fs::File::create(path).map_err(|source| SimError::RequestLog {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self { file })
    }

    /// Appends `line`; a failed write is reported on stderr, the request is still answered.
    pub(crate) fn write(&mut self, line: &Line<'_>) {
        let mut text = serde_json::to_vec(line).expect("plain data serializes");
        text.push(b'\n');
        if let Err(e) = self.file.write_all(&text) {
            eprintln!("agentload sim: request {} not stamped: {e}", line.n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_one_json_object_per_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stamps.jsonl");
        let mut log = StampLog::create(&path).unwrap();
        for (n, outcome) in [(0, Outcome::Finished), (1, Outcome::Refused)] {
            log.write(&Line {
                n,
                session: Some("s"),
                received_mono_ns: 10 + n,
                outcome,
                queued_ns: 0,
                first_token_ns: 0,
                prompt_tokens: 3,
                cached_tokens: 1,
                completion_tokens: 0,
            });
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["outcome"], "refused");
        assert_eq!(lines[1]["received_mono_ns"], 11);
        assert!(StampLog::create(Path::new("/nonexistent-dir/x.jsonl")).is_err());
    }
}
