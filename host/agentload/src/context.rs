//! Live-reply replay's context pre-check, shared by a run's phases and a
//! sweep's.

use agentload_config::RunConfig;
use agentload_engine::tokens::LocalCounter;
use agentload_engine::ContextWindow;
use anyhow::Result;
use std::sync::Arc;

/// Live-reply replay's context pre-check (`model.context_window`), its
/// tokenizer loaded before the first request; none in recorded replay.
pub(crate) async fn context_window(
    config: &RunConfig,
    live: bool,
    counter: Option<&Arc<LocalCounter>>,
) -> Result<Option<ContextWindow>> {
    let Some(tokens) = config.model.context_window.filter(|_| live) else {
        return Ok(None);
    };
    let Some(counter) = counter else {
        anyhow::bail!(
            "model.context_window: the pre-check counts with the model's tokenizer, and none is loaded (see the note above)"
        );
    };
    let loading = counter.clone();
    tokio::task::spawn_blocking(move || loading.load().map(|_| ()).map_err(str::to_owned))
        .await?
        .map_err(|e| anyhow::anyhow!("model.context_window: the pre-check's tokenizer: {e}"))?;
    Ok(Some(ContextWindow::new(tokens, counter.clone())))
}
