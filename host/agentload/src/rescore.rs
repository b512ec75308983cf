//! `agentload rescore`: scores the recorded completions of a finished run
//! again, with the run's own scorer or another one, without any endpoint.
//! An auditor swaps a scorer version this way; with the run's own scorer the
//! report files come out byte for byte as the run wrote them.

use crate::scoring::{self, PhaseKind};
use agentload_config::{PhaseConfig, RunConfig};
use agentload_fs::OutDir;
use agentload_plugin_host::{Limits, PluginEngine, PluginIdentity, ScoreTimings, ScorerPlugin};
use anyhow::{Context as _, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// What to re-score and where to write it.
#[derive(Debug, Clone)]
pub struct RescoreOptions {
    /// The run's output directory (it holds `config.toml` and the turn logs).
    pub run_dir: PathBuf,
    /// Scorer name or `.wasm` path; default: each phase's configured scorer.
    pub scorer: Option<String>,
    /// The one phase to re-score; default every phase with a scorer and a turn log.
    pub phase: Option<PhaseKind>,
    /// Output directory; default `RUN_DIR/rescore/<scorer>@<version>`.
    pub out: Option<PathBuf>,
    /// The most scorer instances side by side; default the run config's
    /// `plugins.scorer_instances`, else one per core.
    pub instances: Option<usize>,
}

/// One re-scored phase.
#[derive(Debug, Clone, Serialize)]
pub struct RescoredPhase {
    pub phase: &'static str,
    pub scorer: PluginIdentity,
    pub items: usize,
    pub score: f64,
    /// The report file written, relative to the output directory.
    pub report_file: String,
    /// Instantiating, configuring, scoring and aggregating, in ms.
    pub scoring_ms: f64,
    /// The same, call by call.
    pub timings: ScoreTimings,
}

/// The rescore's record (`rescore_manifest.json`).
#[derive(Debug, Clone, Serialize)]
pub struct RescoreResult {
    pub source_run: PathBuf,
    pub out: PathBuf,
    /// The source run was interrupted and not (yet) resumed: the scores
    /// cover the turns it recorded, not the whole run.
    pub partial: bool,
    pub phases: Vec<RescoredPhase>,
}

/// Re-scores every phase of the run that has a scorer and a turn log, or the
/// one phase named in [`RescoreOptions::phase`].
pub fn rescore(opts: &RescoreOptions) -> Result<RescoreResult> {
    let config_path = opts.run_dir.join("config.toml");
    let config = RunConfig::load(&config_path).with_context(|| {
        format!(
            "{} is not an agentload run directory",
            opts.run_dir.display()
        )
    })?;
    // The run's records are read, and its rescore/ folder written, by one
    // process at a time, never beside a run or resume still writing them.
    let _writer = agentload_results::run_dir::lock(&opts.run_dir, "rescore")?;
    let engine = Arc::new(PluginEngine::new(agentload_config::cache_dir())?);
    let phases: [(PhaseKind, Option<&PhaseConfig>, PathBuf); 2] = [
        (
            PhaseKind::Performance,
            config.performance.as_ref(),
            opts.run_dir.join("turns.jsonl"),
        ),
        (
            PhaseKind::Accuracy,
            config.accuracy.as_ref(),
            opts.run_dir.join("accuracy/turns.jsonl"),
        ),
    ];
    // Into RUN_DIR/rescore/<scorer>@<version> (entered from the run directory: no
    // link there is followed), or the folder the user named.
    let mut out_dir: Option<OutDir> = opts.out.as_ref().map(OutDir::new);
    let mut done = Vec::new();
    // The entries of `accuracy/accuracy_results.json`, as the run wrote them.
    let mut entries = Vec::new();
    for (kind, phase, log) in phases {
        if opts.phase.is_some_and(|wanted| wanted != kind) {
            continue;
        }
        let Some(phase) = phase else { continue };
        if !log.exists() {
            continue;
        }
        let Some(spec) = opts.scorer.as_ref().or(phase.scorer.as_ref()) else {
            continue;
        };
        let path = agentload_config::plugin_path::resolve(spec, config.plugins.dir.as_deref())
            .map_err(anyhow::Error::msg)?;
        let scorer = ScorerPlugin::new(
            engine.clone(),
            &engine.load(&path, Limits::bytes(config.plugins.limits.component_mib))?,
            config.plugins.limits,
        )?
        .with_instances(
            opts.instances
                .or(config.plugins.scorer_instances)
                .unwrap_or(0),
        );
        let identity = scorer.identity().clone();
        let out = match &out_dir {
            Some(out) => out.clone(),
            None => out_dir
                .insert(OutDir::new(&opts.run_dir).sub(
                    Path::new("rescore").join(format!("{}@{}", identity.name, identity.version)),
                )?)
                .clone(),
        };
        // The items, and the turns' facts for the entries' times and counts: one pass over
        // the log, never all its whole records at once (as a run scores).
        let (mut turns, mut strings) = (Vec::new(), agentload_engine::Interner::default());
        let items = scoring::logged_items(&log, |r| {
            turns.push(agentload_engine::TurnFacts::of(&r, 0, &mut strings));
        })?;
        let data_dir = agentload_config::data::data_dir(config.data_dir.as_deref());
        let (files, _) = crate::grants::grant_files(
            &phase.scorer_data,
            &crate::grants::Grants {
                data_dir: &data_dir,
                explicit: &Default::default(),
                max_bytes: Limits::bytes(config.plugins.limits.granted_file_mib),
                locked_only: false,
            },
        )?;
        let started = Instant::now();
        let scored = scoring::score(
            &scorer,
            phase,
            kind,
            &files,
            &items,
            &turns,
            &out,
            &mut entries,
        )?;
        let scoring_ms = started.elapsed().as_secs_f64() * 1e3;
        if kind == PhaseKind::Accuracy {
            scoring::write_samples(&out, "accuracy/samples.jsonl", &scored)?;
        }
        done.push(RescoredPhase {
            phase: kind.name(),
            scorer: identity,
            items: scored.verdicts.len(),
            score: scored.report.score,
            report_file: phase.report_file.clone(),
            scoring_ms,
            timings: scored.timings,
        });
    }
    let out = out_dir.with_context(|| match opts.phase {
        Some(wanted) => format!(
            "nothing to re-score in {}: its {} phase has no scorer or no turn log",
            opts.run_dir.display(),
            wanted.name()
        ),
        None => format!(
            "nothing to re-score in {}: no phase with a scorer and a turn log",
            opts.run_dir.display()
        ),
    })?;
    agentload_results::write_accuracy_results(&out, &entries)?;
    let partial = crate::run_state::RunState::load(&opts.run_dir).is_ok_and(|s| !s.complete);
    let result = RescoreResult {
        source_run: opts.run_dir.clone(),
        out: out.dir(),
        partial,
        phases: done,
    };
    out.write_json("rescore_manifest.json", &result)?;
    Ok(result)
}

/// The rescore's report lines.
pub fn summary(result: &RescoreResult) -> String {
    let mut text = String::new();
    if result.partial {
        text.push_str(&format!(
            "note: {} is a partial run (interrupted, not resumed): the scores cover the \
             turns it recorded; `agentload resume` finishes it\n",
            result.source_run.display()
        ));
    }
    for p in &result.phases {
        text.push_str(&format!(
            "{}: {}@{} ({}) score {:.4} over {} items; scoring took {:.1} ms \
             (instantiate+configure {:.1}, score {:.1} in {} instance{}, aggregate {:.1}) -> {}\n",
            p.phase,
            p.scorer.name,
            p.scorer.version,
            p.scorer.digest,
            p.score,
            p.items,
            p.scoring_ms,
            p.timings.instantiate_ms,
            p.timings.score_ms,
            p.timings.instances,
            if p.timings.instances == 1 { "" } else { "s" },
            p.timings.aggregate_ms,
            Path::new(&result.out).join(&p.report_file).display()
        ));
    }
    text
}
