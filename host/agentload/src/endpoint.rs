//! The endpoint as a run talks to it: the client and the request-body
//! options, from the config (shared by `run` and the sweep).

use agentload_client::{ChatClient, ClientOptions};
use agentload_config::{base_url, RunConfig};
use agentload_engine::BodyOptions;
use anyhow::Result;
use std::time::Duration;

/// The client (one connection per concurrent session) and the request-body
/// options of a run's endpoint.
pub fn client_for(config: &RunConfig, concurrency: usize) -> Result<(ChatClient, BodyOptions)> {
    let client = ChatClient::new(&ClientOptions {
        endpoint: base_url(&config.endpoint.url).map_err(anyhow::Error::msg)?,
        api_key: api_key_from_env(),
        turn_timeout: Duration::from_secs_f64(config.load.turn_timeout_s),
        max_connections: concurrency,
        max_response_bytes: config.endpoint.max_response_bytes,
        timestamps: config.endpoint.timestamps,
    })?;
    let body = BodyOptions {
        model: config.model.name.clone(),
        stream: config.endpoint.stream,
        include_usage: config.endpoint.include_usage,
        extra: serde_json::to_value(&config.endpoint.extra_body)?
            .as_object()
            .cloned()
            .unwrap_or_default(),
    };
    Ok((client, body))
}

/// The API key, from the environment only (never from a file, never
/// written into the results).
fn api_key_from_env() -> Option<String> {
    ["AGENTLOAD_API_KEY", "OPENAI_API_KEY"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
}
