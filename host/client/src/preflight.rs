//! The endpoint check before the first measured request: a wrong URL, a
//! refused connection, a DNS failure, a certificate that is not trusted, has
//! expired or does not name the host, a server that wants a client
//! certificate, an `http://` URL on a TLS port (or the reverse), a 404 or an
//! HTML page stops the run with its cause instead of failing every turn. It
//! runs on the first phase's client, so the connection it opens is the one the
//! first turn uses.

use super::{ChatClient, TurnError};
use std::time::Duration;

/// Why the endpoint is not a Chat Completions server.
#[derive(Debug, thiserror::Error)]
#[error("endpoint check failed: {0} (set endpoint.preflight = false to skip the check)")]
pub struct PreflightError(String);

/// `GET {base}/v1/models` must answer 200 with an OpenAI model list
/// (`{"data": [...]}`); returns the model ids it lists.
pub async fn preflight(
    client: &ChatClient,
    timeout: Duration,
) -> Result<Vec<String>, PreflightError> {
    let url = client.url("/v1/models");
    let answer = match client.get("/v1/models", timeout).await {
        Ok(answer) => answer,
        Err(e) => {
            let hint = if matches!(e, TurnError::Transport { .. }) && client.port_speaks_tls().await
            {
                " (this port speaks TLS: use an https:// URL)"
            } else {
                ""
            };
            return Err(PreflightError(format!("GET {url}: {e}{hint}")));
        }
    };
    let body = &answer.body;
    let start = || {
        let text = String::from_utf8_lossy(&body[..body.len().min(120)]).into_owned();
        text.replace(['\n', '\r'], " ")
    };
    if !(200..300).contains(&answer.status) {
        return Err(PreflightError(format!(
            "GET {url} answered HTTP {}: {}",
            answer.status,
            start()
        )));
    }
    let content_type = if answer.content_type.is_empty() {
        "(none)"
    } else {
        answer.content_type.as_str()
    };
    let models = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("data")?.as_array().cloned())
        .ok_or_else(|| {
            PreflightError(format!(
                "GET {url} did not answer with an OpenAI model list \
                 (content type {content_type}; it starts with: {})",
                start()
            ))
        })?;
    Ok(models
        .iter()
        .filter_map(|m| m.get("id")?.as_str().map(str::to_string))
        .collect())
}
