//! The endpoint check before the first measured request: a wrong URL, a
//! refused connection, a DNS failure, a 404 or an HTML page stops the run
//! with its cause instead of failing every turn.

use std::time::Duration;

/// Why the endpoint is not a Chat Completions server.
#[derive(Debug, thiserror::Error)]
#[error("endpoint check failed: {0} (set endpoint.preflight = false to skip the check)")]
pub struct PreflightError(String);

/// `GET {base}/v1/models` must answer 200 with an OpenAI model list
/// (`{"data": [...]}`); returns the model ids it lists.
pub async fn preflight(
    base: &str,
    api_key: Option<&str>,
    timeout: Duration,
) -> Result<Vec<String>, PreflightError> {
    let url = format!("{base}/v1/models");
    let http = reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| PreflightError(format!("cannot build an HTTP client: {e}")))?;
    let mut req = http.get(&url);
    if let Some(key) = api_key {
        req = req.bearer_auth(key);
    }
    let resp = req
        .send()
        .await
        .map_err(|e| PreflightError(format!("GET {url}: {}", cause_chain(&e))))?;
    let status = resp.status();
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("(none)")
        .to_string();
    let body = resp
        .bytes()
        .await
        .map_err(|e| PreflightError(format!("GET {url}: reading the answer: {e}")))?;
    let start = || {
        let text = String::from_utf8_lossy(&body[..body.len().min(120)]).into_owned();
        text.replace(['\n', '\r'], " ")
    };
    if !status.is_success() {
        return Err(PreflightError(format!(
            "GET {url} answered HTTP {}: {}",
            status.as_u16(),
            start()
        )));
    }
    let models = serde_json::from_slice::<serde_json::Value>(&body)
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

/// An error and its sources, joined (reqwest hides the OS error in them).
fn cause_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}
