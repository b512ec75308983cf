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

/// The context window a server reports, and where it said so.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ServedWindow {
    pub tokens: u64,
    /// `GET /props` (llama.cpp's `default_generation_settings.n_ctx`, one
    /// slot's window) or `GET /v1/models` (the model's `max_model_len`, as
    /// vLLM and SGLang report it, else its `meta.n_ctx`).
    pub source: String,
}

/// The context window the server serves `model` at: llama.cpp's `GET
/// /props`, else the model's entry in `GET /v1/models` (the only entry
/// when one is listed under another name). None when neither says.
pub async fn served_window(
    client: &ChatClient,
    model: &str,
    timeout: Duration,
) -> Option<ServedWindow> {
    let json = |route: &'static str| async move {
        let answer = client.get(route, timeout).await.ok()?;
        if !(200..300).contains(&answer.status) {
            return None;
        }
        serde_json::from_slice::<serde_json::Value>(&answer.body).ok()
    };
    let positive = |v: &serde_json::Value| v.as_u64().filter(|&t| t > 0);
    if let Some(props) = json("/props").await {
        if let Some(tokens) = positive(&props["default_generation_settings"]["n_ctx"]) {
            return Some(ServedWindow {
                tokens,
                source: "GET /props default_generation_settings.n_ctx".into(),
            });
        }
    }
    let list = json("/v1/models").await?;
    let models = list["data"].as_array()?;
    let entry = models
        .iter()
        .find(|m| m["id"].as_str() == Some(model))
        .or_else(|| (models.len() == 1).then(|| &models[0]))?;
    let id = entry["id"].as_str().unwrap_or("?");
    if let Some(tokens) = positive(&entry["max_model_len"]) {
        return Some(ServedWindow {
            tokens,
            source: format!("GET /v1/models max_model_len of `{id}`"),
        });
    }
    positive(&entry["meta"]["n_ctx"]).map(|tokens| ServedWindow {
        tokens,
        source: format!("GET /v1/models meta.n_ctx of `{id}`"),
    })
}
