//! Responders decide what the assistant answers.
//!
//! Each responder implements [`Responder`]; [`build`] maps a [`ResponderConfig`] to one. To add a
//! responder (for example an oracle for BFCL function-calling samples keyed by the session id):
//! add a [`ResponderConfig`] variant, a module here implementing [`Responder`], and a match arm
//! in [`build`].

mod bfcl;
mod echo;
mod fill;
mod oracle;
mod script;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::answer::Answer;
use crate::api_error::ApiError;
use crate::prompt::ChatRequest;
use crate::rng::SplitMix64;
use crate::{ResponderConfig, SimError};

/// Produces the answer to one request.
pub(crate) trait Responder: Send + Sync {
    /// `session` is the raw `X-Session-ID` header, when present; `ids` draws generated ids.
    fn answer(
        &self,
        request: &ChatRequest,
        session: Option<&str>,
        ids: &mut SplitMix64,
    ) -> Result<Answer, Rejection>;
}

/// A request the responder refuses: the error to answer, after an optional stall.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rejection {
    pub(crate) error: ApiError,
    pub(crate) stall: Duration,
}

impl From<ApiError> for Rejection {
    fn from(error: ApiError) -> Self {
        Self {
            error,
            stall: Duration::ZERO,
        }
    }
}

/// Builds the configured responder, loading its input file.
pub(crate) async fn build(config: &ResponderConfig) -> Result<Box<dyn Responder>, SimError> {
    Ok(match config {
        ResponderConfig::Echo => Box::new(echo::Echo),
        ResponderConfig::Fill { default_tokens } => Box::new(fill::Fill {
            default_tokens: *default_tokens,
        }),
        ResponderConfig::Oracle {
            dataset,
            bfcl,
            error_rate,
            seed,
            cap_to_max_tokens,
        } => {
            let mut oracle = match dataset {
                Some(path) => oracle::Oracle::parse(
                    path,
                    &read(path).await?,
                    *error_rate,
                    *seed,
                    *cap_to_max_tokens,
                )?,
                None => oracle::Oracle::parse(Path::new("-"), "", 0.0, 0, false)?,
            };
            if let Some(dir) = bfcl {
                let dir = dir.clone();
                let gold = tokio::task::spawn_blocking(move || bfcl::BfclGold::load(&dir))
                    .await
                    .expect("BFCL loader panicked")?;
                oracle.set_bfcl(gold);
            }
            Box::new(oracle)
        }
        ResponderConfig::Script { path } => {
            Box::new(script::Script::parse(path, &read(path).await?)?)
        }
    })
}

async fn read(path: &Path) -> Result<String, SimError> {
    tokio::fs::read_to_string(path)
        .await
        .map_err(|source| SimError::Read {
            path: path.to_owned(),
            source,
        })
}

/// The conversation id of a session header: `__repeat_<k>` suffix stripped.
pub(crate) fn conversation_id(session: &str) -> &str {
    const REPEAT: &str = "__repeat_";
    if let Some(at) = session.rfind(REPEAT) {
        let k = &session[at + REPEAT.len()..];
        if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) {
            return &session[..at];
        }
    }
    session
}

/// The session header, or the 400 a keyed responder answers without one.
fn require_session(session: Option<&str>) -> Result<&str, ApiError> {
    session.ok_or_else(|| ApiError::invalid_request("missing X-Session-ID header"))
}

/// Non-blank lines of a JSONL file, parsed, with 1-based line numbers; errors name file and line.
fn jsonl_lines<'a>(
    path: &'a Path,
    text: &'a str,
) -> impl Iterator<Item = Result<(usize, Value), SimError>> + 'a {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(move |(i, line)| {
            serde_json::from_str(line)
                .map(|v| (i + 1, v))
                .map_err(|e| SimError::Parse {
                    path: path.to_owned(),
                    line: i + 1,
                    reason: format!("invalid JSON: {e}"),
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_suffix_is_stripped() {
        assert_eq!(
            conversation_id("django__django-16899__repeat_3"),
            "django__django-16899"
        );
        assert_eq!(
            conversation_id("django__django-16899"),
            "django__django-16899"
        );
        assert_eq!(conversation_id("x__repeat_"), "x__repeat_");
        assert_eq!(conversation_id("x__repeat_1a"), "x__repeat_1a");
    }

    #[test]
    fn jsonl_errors_name_file_and_line() {
        let path = Path::new("s.jsonl");
        let lines: Vec<_> = jsonl_lines(path, "{}\n\n{oops\n").collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].as_ref().unwrap().0, 1);
        let err = lines[1].as_ref().unwrap_err().to_string();
        assert!(err.starts_with("s.jsonl:3: invalid JSON"), "{err}");
    }
}
