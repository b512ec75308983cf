//! `agentload resume`: continuing an interrupted or killed run from its own
//! files (its state is [`crate::run_state`]).
//!
//! A resume re-reads the run's resolved `config.toml`, checks that every
//! plugin is byte for byte the one the run started with, and drives what is
//! left: phases marked complete are kept as they are; in the others, ended
//! sessions are kept, and sessions cut short continue after their last
//! recorded turn (see [`agentload_engine`]). Summaries and reports are then
//! written anew from all the records.

use crate::run::{Overrides, RunResult};
use crate::run_state::RunState;
use agentload_config::RunConfig;
use anyhow::Result;
use std::path::PathBuf;

/// What `agentload resume` may change.
#[derive(Debug, Clone, Default)]
pub struct ResumeOptions {
    pub dir: PathBuf,
    /// Another base URL (the server moved); default: the run's own.
    pub endpoint: Option<String>,
    /// `--grant` files (outside the data directory), as the run had them.
    pub grants: Vec<agentload_config::data::ExplicitGrant>,
    pub quiet: bool,
}

/// Continues the run in `opts.dir`.
pub async fn resume(opts: &ResumeOptions) -> Result<RunResult> {
    let state = RunState::load(&opts.dir)?;
    if state.complete {
        anyhow::bail!(
            "{} is a complete run: nothing to resume",
            opts.dir.display()
        );
    }
    let config = RunConfig::load(&opts.dir.join("config.toml"))?;
    let overrides = Overrides {
        endpoint: opts.endpoint.clone(),
        out: Some(opts.dir.clone()),
        quiet: opts.quiet,
        mode: state.run_mode()?,
        submission: state.submission,
        resume: true,
        handle_signals: true,
        grants: opts.grants.clone(),
        ..Overrides::default()
    };
    crate::run::run(config, &overrides).await
}
