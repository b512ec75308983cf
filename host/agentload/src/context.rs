//! The context pre-check of live-reply and closed-loop replay, shared by a
//! run's phases and a sweep's, and the window it checks against: the
//! configured `model.context_window`, else what the server reports at
//! preflight (llama.cpp's `GET /props`, vLLM's and SGLang's `GET
//! /v1/models`), recorded in `run_manifest.json` with its source.

use agentload_client::{served_window, ChatClient};
use agentload_config::RunConfig;
use agentload_engine::tokens::LocalCounter;
use agentload_engine::ContextWindow;
use anyhow::Result;
use std::sync::Arc;
use std::time::Duration;

/// The window requests are checked against, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub tokens: u64,
    pub source: Source,
}

/// Where a run's context window came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `model.context_window`.
    Configured,
    /// The server's answer that said it (route and field).
    Served(String),
}

impl Source {
    /// As the console and `run_manifest.json` say it.
    pub fn text(&self) -> &str {
        match self {
            Source::Configured => "model.context_window",
            Source::Served(said) => said,
        }
    }
}

/// The configured window, if any.
fn configured(config: &RunConfig) -> Option<Window> {
    config.model.context_window.map(|tokens| Window {
        tokens,
        source: Source::Configured,
    })
}

/// The window of a run whose phases check requests (`needed`): the
/// configured one, else the server's (said on the console); none, with a
/// note, when the server reports none.
pub(crate) async fn window(
    config: &RunConfig,
    client: &ChatClient,
    needed: bool,
    quiet: bool,
) -> Option<Window> {
    if !needed {
        return None;
    }
    if let Some(w) = configured(config) {
        return Some(w);
    }
    let served = served_window(client, &config.model.name, Duration::from_secs(15)).await;
    let said = match &served {
        Some(w) => format!("context window: {} tokens ({})", w.tokens, w.source),
        None => "note: the server reports no context window (GET /props, GET /v1/models) and \
                 model.context_window is not set: requests are not checked against a window \
                 before sending (the server refuses what does not fit)"
            .into(),
    };
    if !quiet {
        agentload_console::line(&said);
    }
    served.map(|w| Window {
        tokens: w.tokens,
        source: Source::Served(w.source),
    })
}

/// Live-reply replay's context pre-check (`model.context_window`), its
/// tokenizer loaded before the first request; none in recorded replay.
pub(crate) async fn context_window(
    config: &RunConfig,
    live: bool,
    counter: Option<&Arc<LocalCounter>>,
) -> Result<Option<ContextWindow>> {
    checked_window(configured(config).as_ref(), live, false, counter).await
}

/// The pre-check against `window` in a live-reply (`live`) or closed-loop
/// (`closed`) phase: the exact count with the model's tokenizer (needed
/// for live-reply replay), else, closed-loop, the lower bound alone. None
/// in recorded replay or without a window.
pub(crate) async fn checked_window(
    window: Option<&Window>,
    live: bool,
    closed: bool,
    counter: Option<&Arc<LocalCounter>>,
) -> Result<Option<ContextWindow>> {
    let Some(window) = window.filter(|_| live || closed) else {
        return Ok(None);
    };
    let Some(counter) = counter else {
        if closed {
            return Ok(Some(ContextWindow::new(
                window.tokens,
                window.source.text(),
                None,
            )));
        }
        if window.source != Source::Configured {
            // The server's window, and no tokenizer to count with: the
            // server judges (the note names the missing tokenizer).
            return Ok(None);
        }
        anyhow::bail!(
            "model.context_window: the pre-check counts with the model's tokenizer, and none is loaded (see the note above)"
        );
    };
    let loading = counter.clone();
    tokio::task::spawn_blocking(move || loading.load().map(|_| ()).map_err(str::to_owned))
        .await?
        .map_err(|e| anyhow::anyhow!("model.context_window: the pre-check's tokenizer: {e}"))?;
    Ok(Some(ContextWindow::new(
        window.tokens,
        window.source.text(),
        Some(counter.clone()),
    )))
}
