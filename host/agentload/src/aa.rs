//! Artificial Analysis's (agentperf-local's) result files for a run:
//! written after an AA replay's performance phase, and by
//! `agentload export DIR --aa` for any run whose records are on disk
//! ([`agentload_results::aa`] computes them).

use agentload_results::aa::{self, RunFacts, Written};
use agentload_results::TurnStatus;
use anyhow::{Context, Result};
use std::path::Path;

/// AA's files for the run in `dir`, into `out` (default `dir/aa`).
pub fn export(dir: &Path, out: Option<&Path>) -> Result<Written> {
    let log = dir.join("turns.jsonl");
    anyhow::ensure!(
        log.is_file(),
        "{} holds no turn records (turns.jsonl): AA's files are made from a run's records",
        dir.display()
    );
    // Interrupted turns were cut by a signal; a resume sent them again.
    let records: Vec<_> = agentload_engine::journal::read_turns(&log)
        .map_err(anyhow::Error::msg)?
        .into_iter()
        .map(|t| t.record)
        .filter(|r| r.status != TurnStatus::Interrupted)
        .collect();
    if let Some(trigger) = ttft_trigger(dir).filter(|t| t != "rules") {
        agentload_console::line(&format!(
            "note: {} ran with endpoint.ttft_trigger = \"{trigger}\": its first token may be a \
             tool-call delta with nothing in it, where AA's TTFT waits for a visible one",
            dir.display()
        ));
    }
    aa::write_run(dir, &records, out)
        .with_context(|| format!("writing AA's files for {}", dir.display()))
}

/// `endpoint.ttft_trigger` of the run's `config.toml` (its default when unset).
fn ttft_trigger(dir: &Path) -> Option<String> {
    let text = agentload_fs::read::read_to_string(dir.join("config.toml")).ok()?;
    let table: toml::Table = text.parse().ok()?;
    Some(
        table
            .get("endpoint")
            .and_then(|e| e.get("ttft_trigger"))
            .and_then(|t| t.as_str())
            .unwrap_or("reference")
            .to_owned(),
    )
}

/// The files written and AA's headline, for the console.
pub fn lines(written: &Written) -> String {
    let mut text: String = written
        .files
        .iter()
        .map(|p| format!("{}\n", p.display()))
        .collect();
    text.push_str(&written.report.headline().line());
    text.push('\n');
    text
}

/// After an AA replay's performance phase: AA's files in `out/aa`, and AA's
/// headline added to the report's `text`. Other runs are left alone.
pub fn after_performance(out: &Path, text: &mut String) -> Result<()> {
    if !RunFacts::from_run_dir(out)?.is_aa_run() {
        return Ok(());
    }
    let written = export(out, None)?;
    text.push_str(&written.report.headline().line());
    text.push('\n');
    Ok(())
}
