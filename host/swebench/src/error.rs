//! What can go wrong between agentload and the service, each error naming
//! the URL, file or value it is about.

use std::path::PathBuf;

/// A SWE-bench client error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `swebench_service_url` is not a usable service root.
    #[error(
        "swebench_service_url {shown} must be an HTTP(S) service root URL with no path, \
         query, fragment or credentials: {why}"
    )]
    ServiceUrl { shown: String, why: String },
    /// No answer (connection refused, reset, timed out).
    #[error("SWE-bench service is unreachable at {url}: {cause}")]
    Unreachable { url: String, cause: String },
    /// An answer other than 2xx or 3xx.
    #[error("SWE-bench service request failed: {url} returned HTTP {status}: {detail}")]
    Status {
        url: String,
        status: u16,
        detail: String,
    },
    /// A 3xx: the client follows no redirect.
    #[error(
        "SWE-bench service redirected {url} (HTTP {status}) to {location}: redirects are refused"
    )]
    Redirect {
        url: String,
        status: u16,
        location: String,
    },
    /// A body that is not a JSON object.
    #[error("SWE-bench service returned invalid JSON from {url}: {why}")]
    Json { url: String, why: String },
    /// A body longer than its cap (read no further).
    #[error(
        "SWE-bench service sent more than {cap} bytes from {url} ({what}); the rest was not read"
    )]
    TooLarge {
        url: String,
        what: &'static str,
        cap: u64,
    },
    /// The artifacts' downloads were still going at the run's deadline.
    #[error("not downloaded: service_timeout_s ran out ({after_s} s after the run was submitted)")]
    DownloadDeadline { after_s: f64 },
    /// `/health` names another API version.
    #[error("SWE-bench service API version mismatch: expected \"v1\", got {got}")]
    ApiVersion { got: String },
    /// `/health` lacks a capability the client needs.
    #[error("SWE-bench service is missing required capabilities: {missing}")]
    Capabilities { missing: String },
    /// A run id that could name a path outside the run's folder.
    #[error("SWE-bench service returned an invalid run_id {got} (run ids match ^[A-Za-z0-9_-]+$)")]
    RunId { got: String },
    /// A status of another run than the one polled.
    #[error("SWE-bench service returned a mismatched run_id: expected {expected}, got {got}")]
    RunIdChanged { expected: String, got: String },
    /// `service_timeout_s` passed before the run ended.
    #[error("timed out waiting for SWE-bench service run {run_id} after {after_s} s (service_timeout_s)")]
    Timeout { run_id: String, after_s: f64 },
    /// The caller interrupted the run (Ctrl-C).
    #[error("interrupted")]
    Interrupted,
    /// A run given up after it started, with what became of its cancel.
    #[error("SWE-bench service run {run_id} abandoned: {cause}; {cancel}")]
    Abandoned {
        run_id: String,
        cause: Box<Error>,
        cancel: Cancel,
    },
    /// The instance list cannot be used.
    #[error("SWE-bench instance list {}: {why}", path.display())]
    Instances { path: PathBuf, why: String },
    /// A result file that could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What became of the cancel of an abandoned run.
#[derive(Debug)]
pub enum Cancel {
    /// The service took it and answered with this run status.
    Sent { status: String },
    /// The cancel request itself failed.
    Failed(String),
}

impl std::fmt::Display for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cancel::Sent { status } => {
                write!(f, "cancel sent (the service reports the run {status})")
            }
            Cancel::Failed(why) => write!(f, "the cancel request failed: {why}"),
        }
    }
}

impl Error {
    /// The run was given up because the caller interrupted it.
    pub fn interrupted(&self) -> bool {
        match self {
            Error::Interrupted => true,
            Error::Abandoned { cause, .. } => cause.interrupted(),
            _ => false,
        }
    }
}

/// `text` cut to `max` characters, for a response body in a message.
pub(crate) fn shortened(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}… ({} more bytes)", &text[..cut], text.len() - cut),
        None => text.to_owned(),
    }
}

/// An error and its sources, as one line.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}
