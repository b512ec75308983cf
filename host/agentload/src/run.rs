//! `agentload run`: one configured run, end to end, into an output directory.

use crate::client::{BodyOptions, ChatClient, ClientOptions};
use crate::config::{table_json, PhaseConfig, RunConfig};
use crate::plugin::types::{GrantedFile, PluginConfig};
use crate::plugin::{PluginEngine, ScoredItem, ScorerPlugin, WorkloadPlugin};
use crate::results::{self, DatasetIdentity, RunManifest};
use crate::runner::{run_phase, PhaseSetup, TurnLog, TurnRecord, TurnStatus};
use crate::tokens::{load_qwen, LocalCounter};
use agentload_tokenizer::QwenTokenizer;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What the caller may override on the command line.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub endpoint: Option<String>,
    pub out: Option<PathBuf>,
    pub quiet: bool,
    /// An already loaded Qwen3.6 vocabulary for local token counts (else
    /// loaded from the data directory or cache when the config asks for it).
    pub tokenizer: Option<Arc<QwenTokenizer>>,
}

/// Where the headline results are.
#[derive(Debug)]
pub struct RunResult {
    pub out: PathBuf,
    pub issued: u64,
    pub completed: u64,
    pub missing: u64,
    pub score: Option<f64>,
    pub valid: bool,
}

/// Runs the performance phase of `config` and writes every result file.
pub async fn run(mut config: RunConfig, overrides: &Overrides) -> Result<RunResult> {
    if let Some(url) = &overrides.endpoint {
        config.endpoint.url = url.clone();
    }
    let out = overrides
        .out
        .clone()
        .unwrap_or_else(|| config.report_dir.clone());
    let phase = config
        .performance
        .clone()
        .context("the config has no [performance] phase")?;
    std::fs::create_dir_all(out.join("performance"))
        .with_context(|| format!("cannot create output directory {}", out.display()))?;
    std::fs::write(out.join("config.toml"), toml::to_string(&config)?)
        .context("cannot write config.toml")?;

    let data_dir = crate::data::data_dir(config.data_dir.as_deref());
    let engine = Arc::new(PluginEngine::new(PluginEngine::default_cache_dir())?);
    let plugin_dir = config.plugins.dir.as_deref();
    let limits = config.plugins.limits;

    let workload_path =
        crate::plugins::resolve(&phase.workload, plugin_dir).map_err(anyhow::Error::msg)?;
    let mut workload = WorkloadPlugin::new(engine.clone(), &engine.load(&workload_path)?, limits)?;
    let (files, datasets) = grant_files(&phase, &data_dir)?;
    let plugin_config = PluginConfig {
        settings_json: table_json(&phase.settings),
        files,
    };
    let sessions = workload.configure(plugin_config)?;
    let scorer = match &phase.scorer {
        Some(spec) => {
            let path = crate::plugins::resolve(spec, plugin_dir).map_err(anyhow::Error::msg)?;
            Some(ScorerPlugin::new(
                engine.clone(),
                &engine.load(&path)?,
                limits,
            )?)
        }
        None => None,
    };
    let counter = load_counter(&config, &data_dir, overrides.tokenizer.clone());

    let mut plugins = vec![workload.identity().clone()];
    plugins.extend(scorer.as_ref().map(|s| s.identity().clone()));
    let manifest = RunManifest {
        agentload_version: env!("CARGO_PKG_VERSION"),
        plugins,
        datasets,
        endpoint: config.endpoint.url.clone(),
        model: config.model.name.clone(),
        test_started_at: crate::clock::utc_now_rfc3339(),
    };
    results::write_json(&out.join("run_manifest.json"), &manifest)?;

    let expected: u32 = sessions.iter().map(|s| s.expected_turns).sum();
    if !overrides.quiet {
        crate::log::line(&format!(
            "running {} sessions ({expected} turns) of {} against {} at concurrency {}",
            sessions.len(),
            workload.identity().name,
            config.endpoint.url,
            config.load.concurrency
        ));
    }
    let client = ChatClient::new(&ClientOptions {
        endpoint: config.endpoint.url.clone(),
        api_key: config.endpoint.api_key.clone(),
        turn_timeout: Duration::from_secs_f64(config.load.turn_timeout_s),
        max_connections: config.load.concurrency,
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
    let log = TurnLog::create(&out.join("turns.jsonl")).context("cannot create turns.jsonl")?;
    let outcome = run_phase(PhaseSetup {
        client,
        body,
        workload,
        sessions,
        concurrency: config.load.concurrency,
        max_duration: Duration::from_millis(config.load.max_duration_ms),
        log,
        counter,
        progress_every: if overrides.quiet { 0 } else { 50 },
    })
    .await;

    let setting = |key: &str| phase.settings.get(key).cloned();
    let seed = setting("seed").and_then(|v| v.as_integer()).or(Some(42));
    let temperature = setting("temperature")
        .and_then(|v| v.as_float())
        .or(Some(0.0));
    let reference = results::reference_config(&config, seed, temperature);
    std::fs::write(
        out.join("config.yaml"),
        serde_json::to_string_pretty(&reference)? + "\n",
    )?;
    results::write_json(&out.join("sessions.json"), &outcome.sessions)?;
    let summary = results::summarize(
        &outcome.records,
        outcome.window_ns,
        reference["settings"].clone(),
        manifest,
    );
    results::write_json(&out.join("performance/result_summary.json"), &summary)?;

    let completed = summary.n_samples_completed;
    let missing = expected as u64 - completed.min(expected as u64);
    let mut score = None;
    let mut score_line = None;
    if let Some(scorer) = &scorer {
        let items = scored_items(&outcome.records);
        let scored = scorer.score(
            &PluginConfig {
                settings_json: table_json(&phase.scorer_settings),
                files: Vec::new(),
            },
            &items,
        )?;
        let report: serde_json::Value = serde_json::from_str(&scored.report.report_json)
            .with_context(|| {
                format!(
                    "scorer {} returned a report that is not JSON",
                    scorer.identity().name
                )
            })?;
        results::write_json(&out.join(&phase.report_file), &report)?;
        score = Some(scored.report.score);
        score_line = Some(format!(
            "{} score {:.4} over {} items ({})",
            scorer.identity().name,
            scored.report.score,
            items.len(),
            phase.report_file
        ));
    }
    let valid = missing == 0;
    let mut text = results::write_report(&summary, score_line.as_deref());
    text.push_str(&format!(
        "run {}: {missing} of {expected} expected turns missing\n",
        if valid { "VALID" } else { "INVALID" }
    ));
    std::fs::write(out.join("report.txt"), &text)?;
    if !overrides.quiet {
        print!("{text}");
    }
    Ok(RunResult {
        out,
        issued: summary.n_samples_issued,
        completed,
        missing,
        score,
        valid,
    })
}

/// Reads the phase's data files and checks their digests.
fn grant_files(
    phase: &PhaseConfig,
    data_dir: &Path,
) -> Result<(Vec<GrantedFile>, Vec<DatasetIdentity>)> {
    let mut files = Vec::new();
    let mut ids = Vec::new();
    for (name, file) in &phase.data {
        let data = crate::data::read(data_dir, file)?;
        ids.push(DatasetIdentity {
            name: name.clone(),
            path: data.path.clone(),
            digest: data.digest.clone(),
        });
        files.push(GrantedFile {
            name: name.clone(),
            file_name: data
                .path
                .file_name()
                .map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned()),
            bytes: data.bytes,
        });
    }
    Ok((files, ids))
}

fn load_counter(
    config: &RunConfig,
    data_dir: &Path,
    loaded: Option<Arc<QwenTokenizer>>,
) -> Option<Arc<LocalCounter>> {
    if config.model.tokenizer == "none" {
        return None;
    }
    match loaded.map_or_else(|| load_qwen(data_dir).map(Arc::new), Ok) {
        Ok(tokenizer) => Some(Arc::new(LocalCounter::new(tokenizer))),
        Err(e) => {
            crate::log::line(&format!("note: local token counts off: {e}"));
            None
        }
    }
}

/// Scorer items for every recorded turn, in order; unanswered turns carry
/// no completion (missing).
pub fn scored_items(records: &[TurnRecord]) -> Vec<ScoredItem> {
    records
        .iter()
        .map(|r| ScoredItem {
            item_id: r.item_id.clone(),
            session_id: r.session_id.clone(),
            turn: r.turn,
            expected_json: r.expected_json.clone(),
            completion: match (&r.status, &r.completion) {
                (TurnStatus::Completed, Some(c)) => {
                    Some(crate::runner::completion_for_plugin(c, r.usage.as_ref()))
                }
                _ => None,
            },
        })
        .collect()
}
