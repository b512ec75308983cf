//! `agentload run`: one configured run, end to end, into an output directory.

use crate::client::{BodyOptions, ChatClient, ClientOptions};
use crate::config::{table_json, PhaseConfig, RunConfig, RunKind};
use crate::plugin::types::{GrantedFile, PluginConfig};
use crate::plugin::{
    Limits, LoadedComponent, PluginEngine, ScorerPlugin, SessionPlan, WorkloadPlugin,
};
use crate::results::{self, DatasetIdentity, PluginSeal, RunManifest, SealRecord};
use crate::runner::{run_phase, PhaseOutcome, PhaseSetup, TurnLog, TurnStatus};
use crate::scoring;
use crate::seal::Seal;
use crate::tokens::{load_qwen, LocalCounter};
use agentload_tokenizer::QwenTokenizer;
use anyhow::{Context as _, Result};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Which phases of a config to run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The performance phase only.
    Performance,
    /// The accuracy phase only, at concurrency 1 (the reference's `--accuracy-only`).
    Accuracy,
    /// Every phase the config has: performance, then accuracy, against the same server.
    #[default]
    Both,
}

/// What the caller may override on the command line.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub endpoint: Option<String>,
    pub out: Option<PathBuf>,
    pub quiet: bool,
    pub mode: Mode,
    /// Accept only the plugins in `plugins/official.lock` (as `mode = "submission"`).
    pub submission: bool,
    /// Data files named on the command line (`--grant PHASE.NAME=PATH`).
    pub grants: Vec<crate::data::ExplicitGrant>,
    /// An already loaded Qwen3.6 vocabulary for local token counts (else
    /// loaded from the data directory or cache when the config asks for it).
    pub tokenizer: Option<Arc<QwenTokenizer>>,
}

/// Where the headline results are.
#[derive(Debug)]
pub struct RunResult {
    pub out: PathBuf,
    pub performance: Option<PerformanceResult>,
    pub accuracy: Option<AccuracyResult>,
}

impl RunResult {
    /// Valid when no expected performance turn and no accuracy sample is
    /// missing (the reference requires every gate sample to complete), and
    /// the accuracy gate (when run, and when the scorer reports one) passed.
    pub fn valid(&self) -> bool {
        self.performance.as_ref().is_none_or(|p| p.missing == 0)
            && self
                .accuracy
                .as_ref()
                .is_none_or(|a| a.missing == 0 && a.gate_passed != Some(false))
    }
}

/// The performance phase's headline.
#[derive(Debug)]
pub struct PerformanceResult {
    pub issued: u64,
    pub completed: u64,
    pub missing: u64,
    pub score: Option<f64>,
}

/// The accuracy phase's headline.
#[derive(Debug)]
pub struct AccuracyResult {
    pub samples: usize,
    pub missing: usize,
    pub score: Option<f64>,
    /// The scorer's `gate.passed`, when its report has one.
    pub gate_passed: Option<bool>,
}

/// A phase with its plugins loaded and its workload configured.
struct Prepared {
    config: PhaseConfig,
    seals: Vec<PluginSeal>,
    /// The granted files (a sweep configures the workload again per phase).
    files: Vec<GrantedFile>,
    /// The files granted to the scorer.
    scorer_files: Vec<GrantedFile>,
    workload: WorkloadPlugin,
    sessions: Vec<SessionPlan>,
    scorer: Option<ScorerPlugin>,
    datasets: Vec<DatasetIdentity>,
}

/// Everything the phases share.
struct Context<'a> {
    config: &'a RunConfig,
    overrides: &'a Overrides,
    out: PathBuf,
    counter: Option<Arc<LocalCounter>>,
}

/// Runs the phases `overrides.mode` selects and writes every result file.
pub async fn run(mut config: RunConfig, overrides: &Overrides) -> Result<RunResult> {
    if let Some(url) = &overrides.endpoint {
        config.endpoint.url = url.clone();
    }
    let out = overrides
        .out
        .clone()
        .unwrap_or_else(|| config.report_dir.clone());
    let want_perf = overrides.mode != Mode::Accuracy;
    let want_acc = overrides.mode != Mode::Performance;
    let perf_cfg = config.performance.clone().filter(|_| want_perf);
    let acc_cfg = config.accuracy.clone().filter(|_| want_acc);
    match overrides.mode {
        Mode::Performance if perf_cfg.is_none() => {
            anyhow::bail!("the config has no [performance] phase")
        }
        Mode::Accuracy if acc_cfg.is_none() => anyhow::bail!("the config has no [accuracy] phase"),
        Mode::Both if perf_cfg.is_none() && acc_cfg.is_none() => {
            anyhow::bail!("the config has neither a [performance] nor an [accuracy] phase")
        }
        _ => {}
    }
    let submission = overrides.submission || config.mode == RunKind::Submission;
    // The benchmark's rules, before anything is compiled, read or sent.
    let config_toml = toml::to_string(&config)?;
    let compliance = crate::rules::check(
        &config,
        &config_toml,
        crate::rules::Phases {
            performance: want_perf,
            accuracy: want_acc,
        },
    );
    if submission {
        crate::rules::require(&compliance)?;
    }
    std::fs::create_dir_all(&out)
        .with_context(|| format!("cannot create output directory {}", out.display()))?;
    std::fs::write(out.join("config.toml"), &config_toml).context("cannot write config.toml")?;

    let data_dir = crate::data::data_dir(config.data_dir.as_deref());
    let cache_dir = PluginEngine::default_cache_dir();
    let engine = Arc::new(if submission {
        PluginEngine::sealed(cache_dir)?
    } else {
        PluginEngine::new(cache_dir)?
    });
    let policy = |phase: &'static str| Policy {
        phase,
        data_dir: &data_dir,
        explicit: &overrides.grants,
        submission,
    };
    let mut perf = perf_cfg
        .map(|p| prepare(&engine, &config, p, &policy("performance")).context("performance phase"))
        .transpose()?;
    let mut acc = acc_cfg
        .map(|p| prepare(&engine, &config, p, &policy("accuracy")).context("accuracy phase"))
        .transpose()?;
    let seals: Vec<PluginSeal> = perf
        .iter()
        .chain(acc.iter())
        .flat_map(|p| p.seals.iter().cloned())
        .collect();
    let sealed = seals.iter().all(|s| matches!(s.seal, Seal::Sealed { .. }));

    let mut plugins = Vec::new();
    let mut datasets = Vec::new();
    for p in perf.iter().chain(acc.iter()) {
        plugins.push(p.workload.identity().clone());
        plugins.extend(p.scorer.as_ref().map(|s| s.identity().clone()));
        datasets.extend(p.datasets.iter().cloned());
    }
    let manifest = RunManifest {
        agentload_version: env!("CARGO_PKG_VERSION"),
        plugins,
        datasets,
        endpoint: config.endpoint.url.clone(),
        model: config.model.name.clone(),
        test_started_at: crate::clock::utc_now_rfc3339(),
        seal: SealRecord {
            mode: if submission {
                RunKind::Submission
            } else {
                RunKind::Development
            },
            sealed,
            plugins: seals,
        },
        compliance: compliance.clone(),
    };
    results::write_json(&out.join("run_manifest.json"), &manifest)?;
    let reference = results::reference_config(
        &config,
        perf.as_ref().or(acc.as_ref()).map(|p| &p.config),
        overrides.mode == Mode::Accuracy,
    );
    std::fs::write(
        out.join("config.yaml"),
        serde_json::to_string_pretty(&reference)? + "\n",
    )?;
    let cx = Context {
        counter: load_counter(&config, &data_dir, overrides.tokenizer.clone()),
        config: &config,
        overrides,
        out,
    };
    let mut text = String::new();
    if !sealed {
        text.push_str(
            "UNSEALED: a plugin is not in plugins/official.lock (development run; see run_manifest.json)\n",
        );
    }
    text.push_str(&compliance.report_lines());
    let performance = match (perf.take(), &config.sweep) {
        (Some(p), Some(sweep)) => {
            run_sweep(&cx, p, sweep, &mut text).await?;
            None
        }
        (Some(p), None) => {
            Some(run_performance(&cx, p, manifest.clone(), &reference, &mut text).await?)
        }
        (None, _) => None,
    };
    let accuracy = match acc.take() {
        Some(p) => Some(run_accuracy(&cx, p, &mut text).await?),
        None => None,
    };
    let result = RunResult {
        out: cx.out.clone(),
        performance,
        accuracy,
    };
    text.push_str(&format!(
        "run {}\n",
        if result.valid() { "VALID" } else { "INVALID" }
    ));
    std::fs::write(result.out.join("report.txt"), &text)?;
    if !overrides.quiet {
        print!("{text}");
    }
    Ok(result)
}

/// What a phase's preparation may accept.
struct Policy<'a> {
    /// `performance` or `accuracy` (for `--grant PHASE.NAME=PATH`).
    phase: &'static str,
    data_dir: &'a Path,
    explicit: &'a [crate::data::ExplicitGrant],
    /// Only locked plugins (by name and digest) and locked data files.
    submission: bool,
}

/// Loads a phase's plugins, grants its data and configures its workload.
fn prepare(
    engine: &Arc<PluginEngine>,
    config: &RunConfig,
    phase: PhaseConfig,
    policy: &Policy<'_>,
) -> Result<Prepared> {
    let plugin_dir = config.plugins.dir.as_deref();
    let limits = config.plugins.limits;
    let submission = policy.submission;
    let mut seals = Vec::new();
    // Read, check the seal, then compile: a refused plugin is never compiled.
    let mut load = |spec: &str| -> Result<(LoadedComponent, String, Seal)> {
        let path = crate::plugins::resolve(spec, plugin_dir).map_err(anyhow::Error::msg)?;
        let bytes = crate::plugin::read_component(&path, Limits::bytes(limits.component_mib))?;
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
        let file = path
            .file_name()
            .map_or_else(|| spec.to_owned(), |f| f.to_string_lossy().into_owned());
        let seal = if submission {
            crate::seal::require(&file, &digest)?
        } else {
            crate::seal::check(&file, &digest)
        };
        seals.push(PluginSeal {
            file: file.clone(),
            digest,
            seal: seal.clone(),
        });
        Ok((engine.load_bytes(&path, &bytes)?, file, seal))
    };
    // In a submission run a locked plugin must also describe itself by its
    // locked name.
    let described = |file: &str, seal: &Seal, name: &str| -> Result<()> {
        if submission {
            crate::seal::require_described(file, seal, name)?;
        }
        Ok(())
    };
    let (component, file, seal) = load(&phase.workload)?;
    let mut workload = WorkloadPlugin::new(engine.clone(), &component, limits)?;
    described(&file, &seal, &workload.identity().name)?;
    let mut explicit = BTreeMap::new();
    for g in policy.explicit.iter().filter(|g| g.phase == policy.phase) {
        if !phase.data.contains_key(&g.name) && !phase.scorer_data.contains_key(&g.name) {
            anyhow::bail!(
                "--grant {}.{}: the {} phase has no grant `{}` in [{0}.data] or [{0}.scorer_data]",
                g.phase,
                g.name,
                g.phase,
                g.name
            );
        }
        explicit.insert(g.name.clone(), g.path.clone());
    }
    let how = Grants {
        data_dir: policy.data_dir,
        explicit: &explicit,
        max_bytes: Limits::bytes(limits.granted_file_mib),
        locked_only: submission,
    };
    let (files, mut datasets) = grant_files(&phase.data, &how)?;
    let (scorer_files, scorer_datasets) = grant_files(&phase.scorer_data, &how)?;
    datasets.extend(scorer_datasets);
    let sessions = workload.configure(PluginConfig {
        settings_json: table_json(&phase.settings),
        files: files.clone(),
    })?;
    let scorer = match &phase.scorer {
        Some(spec) => {
            let (component, file, seal) = load(spec)?;
            let scorer = ScorerPlugin::new(engine.clone(), &component, limits)?;
            described(&file, &seal, &scorer.identity().name)?;
            Some(scorer)
        }
        None => None,
    };
    Ok(Prepared {
        config: phase,
        seals,
        files,
        scorer_files,
        workload,
        sessions,
        scorer,
        datasets,
    })
}

/// Expected turns that did not complete, for both phases: the planned
/// turns not completed, or the recorded turns that failed or were aborted,
/// whichever is more (a session's `expected_turns` is a lower bound when its
/// length depends on the model, as in bfcl-multi's one request per step).
fn missing_turns(expected: u32, records: &[crate::runner::TurnRecord]) -> usize {
    let completed = records
        .iter()
        .filter(|r| r.status == TurnStatus::Completed)
        .count();
    (expected as usize)
        .saturating_sub(completed)
        .max(records.len() - completed)
}

/// The client (one connection per concurrent session) and the request-body
/// options of a run's endpoint.
pub(crate) fn client_for(
    config: &RunConfig,
    concurrency: usize,
) -> Result<(ChatClient, BodyOptions)> {
    let client = ChatClient::new(&ClientOptions {
        endpoint: config.endpoint.url.clone(),
        api_key: config.endpoint.api_key.clone(),
        turn_timeout: Duration::from_secs_f64(config.load.turn_timeout_s),
        max_connections: concurrency,
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

/// Sends every session of a prepared phase; the turn log goes to `log_path`.
async fn execute(
    cx: &Context<'_>,
    prepared: Prepared,
    concurrency: usize,
    log_path: &Path,
) -> Result<(PhaseOutcome, Option<ScorerPlugin>, PhaseConfig, u32)> {
    let config = cx.config;
    let expected: u32 = prepared.sessions.iter().map(|s| s.expected_turns).sum();
    if !cx.overrides.quiet {
        crate::log::line(&format!(
            "running {} sessions ({expected} turns) of {} against {} at concurrency {concurrency}",
            prepared.sessions.len(),
            prepared.workload.identity().name,
            config.endpoint.url,
        ));
    }
    let (client, body) = client_for(config, concurrency)?;
    let log = TurnLog::create(log_path)
        .with_context(|| format!("cannot create {}", log_path.display()))?;
    let outcome = run_phase(PhaseSetup {
        client,
        body,
        workload: prepared.workload,
        sessions: prepared.sessions,
        concurrency,
        max_duration: Duration::from_millis(config.load.max_duration_ms),
        log,
        counter: cx.counter.clone(),
        progress_every: if cx.overrides.quiet { 0 } else { 50 },
    })
    .await;
    Ok((outcome, prepared.scorer, prepared.config, expected))
}

/// The performance phase: the session replay, `performance/result_summary.json`,
/// the inline scorer's report.
async fn run_performance(
    cx: &Context<'_>,
    prepared: Prepared,
    manifest: RunManifest,
    reference: &serde_json::Value,
    text: &mut String,
) -> Result<PerformanceResult> {
    std::fs::create_dir_all(cx.out.join("performance"))?;
    let scorer_files = prepared.scorer_files.clone();
    let (outcome, scorer, phase, expected) = execute(
        cx,
        prepared,
        cx.config.load.concurrency,
        &cx.out.join("turns.jsonl"),
    )
    .await?;
    results::write_json(&cx.out.join("sessions.json"), &outcome.sessions)?;
    let summary = results::summarize(
        &outcome.records,
        outcome.window_ns,
        reference["settings"].clone(),
        manifest,
    );
    results::write_json(&cx.out.join("performance/result_summary.json"), &summary)?;

    let completed = summary.n_samples_completed;
    let missing = missing_turns(expected, &outcome.records) as u64;
    let mut score = None;
    let mut score_line = None;
    if let Some(scorer) = &scorer {
        let (scored, _) = scoring::score(scorer, &phase, &scorer_files, &outcome.records, &cx.out)?;
        score = Some(scored.report.score);
        score_line = Some(format!(
            "{} score {:.4} over {} items ({})",
            scorer.identity().name,
            scored.report.score,
            scored.verdicts.len(),
            phase.report_file
        ));
    }
    text.push_str(&results::write_report(&summary, score_line.as_deref()));
    text.push_str(&format!(
        "performance: {missing} of {expected} expected turns missing\n"
    ));
    Ok(PerformanceResult {
        issued: summary.n_samples_issued,
        completed,
        missing,
        score,
    })
}

/// The performance phase as a concurrency sweep (`[sweep]`).
async fn run_sweep(
    cx: &Context<'_>,
    prepared: Prepared,
    sweep: &crate::sweep::SweepConfig,
    text: &mut String,
) -> Result<()> {
    let summary = crate::sweep::run(crate::sweep::SweepInput {
        config: cx.config,
        sweep,
        phase: &prepared.config,
        workload: prepared.workload,
        files: prepared.files,
        counter: cx.counter.clone(),
        out: cx.out.clone(),
        quiet: cx.overrides.quiet,
    })
    .await?;
    let _ = writeln!(
        text,
        "sweep: {} phases (sweep/summary.json, sweep/pareto.json)",
        summary.phases.len()
    );
    for p in &summary.phases {
        let _ = writeln!(
            text,
            "  c{:<4} total {:>9.1} tok/s  P25 speed {:>7.1} tok/s  TTFT p90 {:>8.1} ms  {:>6} requests  {}",
            p.level,
            p.metrics.throughput.total_tps,
            p.metrics.output_speed_tps.as_ref().map_or(f64::NAN, |s| s.p25),
            p.metrics.ttft_ms.as_ref().map_or(f64::NAN, |s| s.p90),
            p.requests,
            p.end_reason
        );
    }
    for s in &summary.slo {
        let _ = writeln!(
            text,
            "  SLO {} (TTFT p90 <= {} ms, P25 speed >= {} tok/s): max agents {}",
            s.tier,
            s.ttft_p90_ms,
            s.speed_p25_tps,
            s.max_agents
                .map_or_else(|| "none".to_owned(), |n| n.to_string())
        );
    }
    Ok(())
}

/// The accuracy phase: every sample at concurrency 1, then the scorer's
/// report (`accuracy/accuracy_results.json` in the edge config) and one row
/// per sample in `accuracy/samples.jsonl`.
async fn run_accuracy(
    cx: &Context<'_>,
    prepared: Prepared,
    text: &mut String,
) -> Result<AccuracyResult> {
    let dir = cx.out.join("accuracy");
    std::fs::create_dir_all(&dir)?;
    let scorer_files = prepared.scorer_files.clone();
    let (outcome, scorer, phase, expected) =
        execute(cx, prepared, 1, &dir.join("turns.jsonl")).await?;
    results::write_json(&dir.join("sessions.json"), &outcome.sessions)?;
    let completed = outcome
        .records
        .iter()
        .filter(|r| r.status == TurnStatus::Completed)
        .count();
    let missing = missing_turns(expected, &outcome.records);
    let mut result = AccuracyResult {
        samples: outcome.records.len(),
        missing,
        score: None,
        gate_passed: None,
    };
    let _ = writeln!(
        text,
        "accuracy: {} samples issued, {completed} completed, {missing} missing",
        outcome.records.len()
    );
    if let Some(scorer) = &scorer {
        let (scored, report) =
            scoring::score(scorer, &phase, &scorer_files, &outcome.records, &cx.out)?;
        scoring::write_samples(&dir.join("samples.jsonl"), &scored)?;
        result.score = Some(scored.report.score);
        let _ = writeln!(
            text,
            "{} score {:.4} over {} samples ({})",
            scorer.identity().name,
            scored.report.score,
            scored.verdicts.len(),
            phase.report_file
        );
        if let Some(gate) = report.get("gate") {
            result.gate_passed = gate.get("passed").and_then(serde_json::Value::as_bool);
            let _ = writeln!(text, "{}", scoring::gate_line(gate));
        }
    }
    Ok(result)
}

/// How a phase's data files are granted.
pub(crate) struct Grants<'a> {
    pub data_dir: &'a Path,
    /// Files named on the command line, by grant name (not confined).
    pub explicit: &'a BTreeMap<String, PathBuf>,
    /// The largest file granted.
    pub max_bytes: u64,
    /// Only files the data locks know by name (a submission run).
    pub locked_only: bool,
}

/// Reads the phase's data files (confined to the data directory and the
/// cache, unless named on the command line) and checks their digests.
pub(crate) fn grant_files(
    grants: &BTreeMap<String, String>,
    how: &Grants<'_>,
) -> Result<(Vec<GrantedFile>, Vec<DatasetIdentity>)> {
    let mut files = Vec::new();
    let mut ids = Vec::new();
    for (name, file) in grants {
        let data = match how.explicit.get(name) {
            Some(path) => crate::data::read_explicit(path, how.max_bytes)?,
            None => crate::data::read(how.data_dir, file, how.max_bytes)?,
        };
        if how.locked_only {
            crate::seal::require_data(name, &data)?;
        }
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
