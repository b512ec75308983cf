//! `agentload run` (and `resume`): one configured run, end to end, into an
//! output directory.
//!
//! Everything that can be checked is checked before the first measured
//! request: the output directory, every plugin of every phase (workloads
//! configured with their data, scorers configured with their settings), and
//! the endpoint. Then the phases run on the turn engine; a signal stops
//! issuing and every summary is still written, marked INCOMPLETE.

use crate::endpoint::client_for;
use crate::grants::{grant_files, Grants};
pub use crate::run_state::Mode;
use crate::run_state::{PhaseState, RunState};
use crate::scoring;
use agentload_client::ChatClient;
use agentload_config::rules::Compliance;
use agentload_config::seal::{PluginIdentity, Seal};
use agentload_config::swe_bench::SweBench;
use agentload_config::{base_url, table_json, ClientKind, PhaseConfig, RunConfig, RunKind};
use agentload_engine::tokens::{find_qwen, LocalCounter};
use agentload_engine::{
    missing_turns, run_pool, Console, Engine, Instances, LogFiles, Prior, Recorder, SessionOutcome,
    Stop, StopReason, TurnFacts, TurnSender, TurnStatus, WorkloadDelays,
};
use agentload_fs::OutDir;
use agentload_plugin_host::types::{GrantedFile, PluginConfig};
use agentload_plugin_host::{
    block_on, Limits, LoadedComponent, PluginEngine, ScorerPlugin, SessionPlan, WorkloadPlugin,
};
use agentload_results::sessions::SessionTurn;
use agentload_results::{run_dir, DatasetIdentity, PluginSeal, RunManifest, SealRecord};
use agentload_telemetry::{PowerSource, Telemetry, TelemetrySummary};
use agentload_tokenizer::{ChatTemplate, QwenTokenizer, Tokenizer};
use anyhow::{Context as _, Result};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    pub grants: Vec<agentload_config::data::ExplicitGrant>,
    /// An already loaded Qwen3.6 vocabulary for local token counts (else
    /// loaded from the data directory or cache when the config asks for it).
    pub tokenizer: Option<Arc<QwenTokenizer>>,
    /// Replace the results of an earlier agentload run in `out`.
    pub force: bool,
    /// Continue the run in `out` (set by `agentload resume`).
    pub resume: bool,
    /// Stop on SIGINT/SIGTERM (the command line); a library caller can
    /// stop the run through [`Overrides::stop`] instead.
    pub handle_signals: bool,
    /// The run's stop; a fresh one when not given.
    pub stop: Option<Stop>,
    /// This process is one shard of a sharded run (`agentload shard`).
    pub shard: Option<crate::shards::ShardRun>,
    /// Write a sharded run's result files from its shards' records
    /// instead of sending (`agentload merge`).
    pub merge: Option<Arc<crate::shards::merge::Merged>>,
}

/// Where the headline results are.
#[derive(Debug)]
pub struct RunResult {
    pub out: PathBuf,
    pub performance: Option<PerformanceResult>,
    pub accuracy: Option<AccuracyResult>,
    /// Why the run stopped before its end (a signal), if it did.
    pub interrupted: Option<String>,
    /// Phases in which turns were issued and every one failed.
    pub all_failed: Vec<&'static str>,
}

impl RunResult {
    /// The exit code of a finished (or interrupted) run.
    pub(crate) fn exit_code(&self, require_valid: bool) -> u8 {
        agentload_console::out(&format!("results in {}\n", self.out.display()));
        if self.interrupted.is_some() {
            return agentload_results::exit::INTERRUPTED;
        }
        if !self.all_failed.is_empty() {
            agentload_console::line(&format!(
                "error: every issued turn failed in the {} phase (causes in report.txt and turns.jsonl)",
                self.all_failed.join(" and ")
            ));
            return agentload_results::exit::ALL_FAILED;
        }
        if require_valid && !self.valid() {
            agentload_console::line(&format!(
                "error: run invalid (see report.txt in {})",
                self.out.display()
            ));
            return agentload_results::exit::INVALID;
        }
        agentload_results::exit::SUCCESS
    }

    /// Valid when the run is complete, no expected performance turn and no
    /// accuracy sample is missing (the reference requires every gate sample
    /// to complete), and the accuracy gate (when run, and when the scorer
    /// reports one) passed.
    pub fn valid(&self) -> bool {
        self.interrupted.is_none()
            && self.performance.as_ref().is_none_or(|p| p.missing == 0)
            && self.accuracy.as_ref().is_none_or(|a| {
                a.missing == 0 && a.gate_passed != Some(false) && a.failed.is_none()
            })
    }

    /// `VALID`, `INVALID` or `INCOMPLETE`.
    pub fn verdict(&self) -> &'static str {
        if self.interrupted.is_some() {
            "INCOMPLETE"
        } else if self.valid() {
            "VALID"
        } else {
            "INVALID"
        }
    }
}

/// The performance phase's headline.
#[derive(Debug)]
pub struct PerformanceResult {
    /// The reference's `n_samples_issued` (skipped turns included).
    pub issued: u64,
    /// Turns answered (`n_samples_succeeded`).
    pub succeeded: u64,
    pub missing: u64,
    pub score: Option<f64>,
}

/// The accuracy phase's headline.
#[derive(Debug)]
pub struct AccuracyResult {
    pub samples: usize,
    pub missing: u64,
    pub score: Option<f64>,
    /// The scorer's `gate.passed`, when its report has one.
    pub gate_passed: Option<bool>,
    /// Why the phase gave no complete score (the SWE-bench service's run
    /// failed, say), if it did not.
    pub failed: Option<String>,
}

/// The accuracy phase, prepared: plugins on the turn engine, or SWE-bench
/// on the reference's service.
enum Accuracy {
    Plugins(Box<Prepared>),
    SweBench(Box<crate::swe_bench::Phase>),
}

/// A phase with its plugins loaded and its workload configured.
struct Prepared {
    config: PhaseConfig,
    seals: Vec<PluginSeal>,
    /// The granted files (a sweep configures the workload again per phase).
    files: Vec<GrantedFile>,
    /// The files granted to the scorer.
    scorer_files: Vec<GrantedFile>,
    /// The nonce the workload was configured with.
    nonce: String,
    workload: WorkloadPlugin,
    sessions: Vec<SessionPlan>,
    scorer: Option<ScorerPlugin>,
    datasets: Vec<DatasetIdentity>,
    /// A trace schedule's times (ms), read from the granted `trace` file.
    trace: Option<Vec<f64>>,
}

/// Everything the phases share.
struct Context<'a> {
    config: &'a RunConfig,
    overrides: &'a Overrides,
    out: PathBuf,
    /// `out`, as the result files are written into it: never through a link.
    dir: OutDir,
    counter: Option<Arc<LocalCounter>>,
    stop: Stop,
    /// The run's state file, updated as phases end.
    state: Mutex<RunState>,
    /// This process's segment (0: the run, n: its n-th resume).
    segment: u32,
    /// The client the endpoint check ran on, for the first phase.
    checked: Mutex<Option<ChatClient>>,
    /// The context window live-reply and closed-loop requests are checked
    /// against (configured, or the server's).
    window: Option<crate::context::Window>,
    /// Server and accelerator telemetry, sampled during each phase.
    telemetry: Option<Telemetry>,
}

/// A phase's turns as the engine left them.
struct Executed {
    /// The facts of the turns that count: enough for every metric.
    turns: Vec<TurnFacts>,
    /// The phase's `turns.jsonl`, where the whole records are (scoring reads them back one at
    /// a time).
    log: PathBuf,
    /// Turns this process sent that a signal cut (not in `turns`).
    interrupted: u64,
    sessions: Vec<SessionOutcome>,
    plans: Vec<SessionPlan>,
    scorer: Option<ScorerPlugin>,
    phase: PhaseConfig,
    /// What the harness spent outside the turns.
    harness: agentload_results::Harness,
    /// The phase's telemetry (this process's part of it).
    telemetry: Option<TelemetrySummary>,
    /// When this process started the phase's sessions, ns on its clock (after a ramp: when
    /// the ramp ended, where the measured window starts).
    start_ns: u64,
    /// Open-loop arrivals: configured against delivered.
    arrivals: Option<agentload_results::arrivals::ArrivalsSummary>,
}

impl Context<'_> {
    /// Scores a phase and adds its entry to `accuracy/accuracy_results.json`. The scorer's
    /// items are read from the phase's log `log` (the whole records, as `agentload rescore`
    /// reads them), one record at a time; `turns` give the entry its times and counts.
    fn score(
        &self,
        scorer: &ScorerPlugin,
        phase: &PhaseConfig,
        kind: scoring::PhaseKind,
        files: &[GrantedFile],
        log: &Path,
        turns: &[TurnFacts],
    ) -> Result<agentload_plugin_host::Scored> {
        let items = scoring::logged_items(log, drop)?;
        let mut entries = Vec::new();
        let scored = scoring::score(
            scorer,
            phase,
            kind,
            files,
            &items,
            turns,
            &self.dir,
            &mut entries,
        )?;
        agentload_results::write_accuracy_results(&self.dir, &entries)?;
        Ok(scored)
    }
}

/// Runs the phases `overrides.mode` selects and writes every result file, in
/// its steps: select the phases, check the rules, open the output directory,
/// prepare the phases, preflight, record the inputs, run the phases, report.
pub async fn run(mut config: RunConfig, overrides: &Overrides) -> Result<RunResult> {
    let Selected {
        out,
        perf: perf_cfg,
        acc: acc_cfg,
        submission,
    } = select(&mut config, overrides)?;
    let (config_toml, compliance) = check_rules(&config, overrides, submission)?;
    refuse_unsupported(&config, overrides, perf_cfg.is_some(), acc_cfg.as_ref())?;
    let telemetry = run_telemetry(&config, overrides)?;
    // Whether this run made its output directory (a refusal before any
    // result removes what it made).
    let existed = out.exists();
    // One writer per run directory, for this process's whole life.
    let (_writer, mut state) = open_out_dir(&out, overrides)?;
    let segment = state.begin_segment(&config.endpoint.url);
    let nonce = state.nonce.clone();

    let data_dir = agentload_config::data::data_dir(config.data_dir.as_deref());
    let policy = |phase: &'static str| Policy {
        phase,
        data_dir: &data_dir,
        explicit: &overrides.grants,
        submission,
        nonce: &nonce,
    };
    let (mut perf, mut acc) = prepare_phases(&config, overrides, perf_cfg, acc_cfg, policy)?;
    let (checked, aa_preflight, window) =
        preflight(&config, overrides, &mut perf, &mut acc, &out, existed).await?;
    let identities = Identities::of(perf.as_ref(), &acc);
    let manifest = manifest(
        &config,
        &state,
        submission,
        identities,
        &compliance,
        aa_preflight,
        window.clone(),
    );
    let sealed = manifest.seal.sealed;
    let (dir, reference) = record_inputs(
        &out,
        &config,
        overrides,
        &config_toml,
        &manifest,
        &mut state,
        &data_dir,
    )?;
    let stop = overrides.stop.clone().unwrap_or_default();
    if overrides.handle_signals {
        stop.on_signals(Duration::from_secs_f64(config.load.interrupt_grace_s));
    }
    let cx = Context {
        counter: load_counter(&config, &data_dir, overrides.tokenizer.clone())?,
        config: &config,
        overrides,
        out,
        dir,
        stop,
        state: Mutex::new(state),
        segment,
        checked: Mutex::new(checked),
        window,
        telemetry,
    };
    let mut text = String::new();
    if !sealed {
        text.push_str(
            "UNSEALED: a plugin is not in plugins/official.lock (development run; see run_manifest.json)\n",
        );
    }
    text.push_str(&compliance.report_lines());
    let (performance, accuracy, all_failed) =
        run_phases(&cx, perf, acc, manifest, &reference, &mut text).await?;
    let interrupted = match cx.stop.reason() {
        Some((reason @ StopReason::Interrupted(_), _)) => Some(reason.to_string()),
        _ => None,
    };
    let result = RunResult {
        out: cx.out.clone(),
        performance,
        accuracy,
        interrupted,
        all_failed,
    };
    finish(&cx, &result, text)?;
    Ok(result)
}

/// The run as the command line selects it.
struct Selected {
    /// The output directory.
    out: PathBuf,
    /// The performance phase, when the mode runs it.
    perf: Option<PhaseConfig>,
    /// The accuracy phase, when the mode runs it.
    acc: Option<PhaseConfig>,
    /// A submission run (`--submission` or `mode = "submission"`).
    submission: bool,
}

/// Applies the command line's endpoint and output directory, and selects the
/// phases `overrides.mode` runs; a mode whose phase the config lacks is refused.
fn select(config: &mut RunConfig, overrides: &Overrides) -> Result<Selected> {
    if let Some(url) = &overrides.endpoint {
        config.endpoint.url = url.clone();
    }
    config.endpoint.url =
        base_url(&config.endpoint.url).map_err(|e| anyhow::anyhow!("endpoint: {e}"))?;
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
    Ok(Selected {
        out,
        perf: perf_cfg,
        acc: acc_cfg,
        submission: overrides.submission || config.mode == RunKind::Submission,
    })
}

/// The benchmark's rules, before anything is compiled, read or sent: a
/// submission run refuses an unverified server certificate, closed-loop
/// replay and any deviation (and a closed-loop run's workspace must be the
/// locked one, [`crate::tools::closed::check`]). Returns the config as `config.toml` records it and its
/// compliance with the ruleset.
fn check_rules(
    config: &RunConfig,
    overrides: &Overrides,
    submission: bool,
) -> Result<(String, Compliance)> {
    if submission && config.endpoint.tls.insecure {
        anyhow::bail!(
            "endpoint.tls.insecure (--insecure) is refused in a submission run: its server's \
             certificate must be verified (trust a private CA with endpoint.tls.ca_file)"
        );
    }
    crate::tools::closed::check(config, submission)?;
    let config_toml = toml::to_string(config)?;
    let compliance = agentload_config::rules::check(
        &serde_json::to_value(config)?,
        &config_toml,
        agentload_config::rules::Phases {
            performance: overrides.mode != Mode::Accuracy,
            accuracy: overrides.mode != Mode::Performance,
        },
    );
    if submission {
        agentload_config::rules::require(&compliance)?;
    }
    Ok((config_toml, compliance))
}

/// Refuses what a sharded run or a resume cannot do (yet), before anything
/// is opened.
fn refuse_unsupported(
    config: &RunConfig,
    overrides: &Overrides,
    perf: bool,
    acc: Option<&PhaseConfig>,
) -> Result<()> {
    let sharded = overrides.shard.is_some() || overrides.merge.is_some();
    if sharded && acc.is_some_and(SweBench::selected_by) {
        anyhow::bail!(
            "the SWE-bench phase runs once, from one host: run the shards with --mode perf, \
             then the SWE-bench phase alone (--mode accuracy)"
        );
    }
    if overrides.resume && perf && config.load.arrivals.is_some() {
        anyhow::bail!(
            "an open-loop run cannot be resumed yet: its arrivals keep due times on the \
             phase's clock (run it again with --force)"
        );
    }
    if overrides.resume && perf && config.sweep.is_some() {
        anyhow::bail!(
            "a sweep cannot be resumed yet: its phases are measured over steady-state windows \
             (run it again with --force)"
        );
    }
    Ok(())
}

/// The run's telemetry, opened before anything is sent: a configured NVML
/// source on a machine without the driver library stops the run here. Of a
/// sharded run's processes only shard 0 samples it (the server is the same).
fn run_telemetry(config: &RunConfig, overrides: &Overrides) -> Result<Option<Telemetry>> {
    Ok(match &overrides.shard {
        Some(s) if s.slice.index != 0 => None,
        _ if overrides.merge.is_some() => None,
        _ => open_telemetry(config)?,
    })
}

/// Locks the output directory (for the returned lock's life) and loads the
/// run's state: a resume's from the directory; a fresh run's new, in a
/// directory made empty (see [`prepare_out_dir`]).
fn open_out_dir(out: &Path, overrides: &Overrides) -> Result<(run_dir::WriterLock, RunState)> {
    let writer = if overrides.resume {
        run_dir::lock(out, "resume")?
    } else {
        std::fs::create_dir_all(out)
            .with_context(|| format!("cannot create output directory {}", out.display()))?;
        run_dir::lock(out, "run")?
    };
    let state = if overrides.resume {
        RunState::load(out)?
    } else {
        // A merge writes beside the shards' uploads (`shards/`), replacing
        // an earlier merge's files.
        let force = overrides.force
            || (overrides.merge.is_some() && out.join("run_manifest.json").is_file());
        if overrides.merge.is_none() || force {
            prepare_out_dir(out, force)?;
        }
        RunState::new(overrides.mode, overrides.submission)
    };
    Ok((writer, state))
}

/// Prepares both phases (and so checks them) before the first request, side
/// by side: the accuracy phase's data loads while the performance phase's
/// does, instead of after it. An error names its phase; the performance
/// phase's comes first. A trace schedule's times are read here too.
fn prepare_phases<'a>(
    config: &RunConfig,
    overrides: &Overrides,
    perf_cfg: Option<PhaseConfig>,
    acc_cfg: Option<PhaseConfig>,
    policy: impl Fn(&'static str) -> Policy<'a>,
) -> Result<(Option<Prepared>, Option<Accuracy>)> {
    let cache_dir = agentload_config::cache_dir();
    let engine = Arc::new(if policy("performance").submission {
        PluginEngine::sealed(cache_dir)?
    } else {
        PluginEngine::new(cache_dir)?
    });
    let (perf, acc) = std::thread::scope(|scope| {
        let acc = acc_cfg.map(|p| {
            let (engine, policy) = (&engine, policy("accuracy"));
            scope.spawn(move || {
                if SweBench::selected_by(&p) {
                    let explicit = explicit_grants(&p, &policy)?;
                    crate::swe_bench::prepare(
                        config,
                        &p,
                        &policy.grants(config, &explicit),
                        overrides.quiet,
                    )
                    .map(|s| Accuracy::SweBench(Box::new(s)))
                } else {
                    prepare(engine, config, p, &policy).map(|p| Accuracy::Plugins(Box::new(p)))
                }
                .context("accuracy phase")
            })
        });
        let perf = perf_cfg
            .map(|p| {
                prepare(&engine, config, p, &policy("performance")).context("performance phase")
            })
            .transpose();
        let acc = acc
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .transpose();
        (perf, acc)
    });
    let (mut perf, acc) = (perf?, acc?);
    // A trace schedule's times, checked before anything is sent.
    if let (Some(p), Some(a)) = (perf.as_mut(), &config.load.arrivals) {
        if a.process == agentload_config::Process::Trace {
            p.trace = Some(crate::open_loop::trace_times(&p.files)?);
        }
    }
    Ok((perf, acc))
}

/// The accuracy phase's plugins, when it runs on the turn engine.
fn acc_plugins(acc: &Option<Accuracy>) -> Option<&Prepared> {
    match acc {
        Some(Accuracy::Plugins(p)) => Some(&**p),
        _ => None,
    }
}

/// What the manifest records of the prepared phases: plugins, seals, data
/// and the workloads' facts.
struct Identities {
    seals: Vec<PluginSeal>,
    /// Every plugin is in `plugins/official.lock`.
    sealed: bool,
    plugins: Vec<PluginIdentity>,
    datasets: Vec<DatasetIdentity>,
    workload_facts: BTreeMap<String, serde_json::Value>,
}

impl Identities {
    fn of(perf: Option<&Prepared>, acc: &Option<Accuracy>) -> Self {
        let seals: Vec<PluginSeal> = perf
            .into_iter()
            .chain(acc_plugins(acc))
            .flat_map(|p| p.seals.iter().cloned())
            .collect();
        let sealed = seals.iter().all(|s| matches!(s.seal, Seal::Sealed { .. }));
        let mut plugins = Vec::new();
        let mut datasets = Vec::new();
        for p in perf.into_iter().chain(acc_plugins(acc)) {
            plugins.push(p.workload.identity().clone());
            plugins.extend(p.scorer.as_ref().map(|s| s.identity().clone()));
            datasets.extend(p.datasets.iter().cloned());
        }
        if let Some(Accuracy::SweBench(swe)) = acc {
            datasets.extend(swe.datasets.iter().cloned());
        }
        let workload_facts = perf
            .map(|p| ("performance", p))
            .into_iter()
            .chain(acc_plugins(acc).map(|p| ("accuracy", p)))
            .map(|(phase, p)| {
                let facts = serde_json::from_str(p.workload.facts_json())
                    .unwrap_or_else(|_| serde_json::json!({}));
                (phase.to_owned(), facts)
            })
            .collect();
        Identities {
            seals,
            sealed,
            plugins,
            datasets,
            workload_facts,
        }
    }
}

/// Checks, before the first measured request, the SWE-bench service and the
/// endpoint (on the client that carries the first turn), and with AA's
/// client, AA's own preflight. Returns the checked client and AA's
/// preflight record for the manifest.
async fn preflight(
    config: &RunConfig,
    overrides: &Overrides,
    perf: &mut Option<Prepared>,
    acc: &mut Option<Accuracy>,
    out: &Path,
    existed: bool,
) -> Result<(
    Option<ChatClient>,
    Option<serde_json::Value>,
    Option<crate::context::Window>,
)> {
    if let Some(Accuracy::SweBench(swe)) = acc {
        swe.preflight().await?;
    }
    let mut checked = None;
    if config.endpoint.preflight && overrides.merge.is_none() {
        // The check runs on the first phase's client: its connection
        // carries the first turn (no connection is opened inside it).
        let concurrency = perf
            .as_ref()
            .map_or(1, |p| config.load.concurrency.min(p.sessions.len().max(1)));
        let (client, _) = client_for(config, concurrency)?;
        let models = agentload_client::preflight(&client, Duration::from_secs(15)).await?;
        checked = Some(client);
        if !overrides.quiet && !models.is_empty() && !models.contains(&config.model.name) {
            agentload_console::line(&format!(
                "note: the endpoint lists models {models:?}, not `{}` (sent as `model`)",
                config.model.name
            ));
        }
    }
    let mut aa_preflight = None;
    if config.endpoint.client == ClientKind::AgentperfLocal && overrides.merge.is_none() {
        let client = match checked.take() {
            Some(client) => client,
            None => client_for(config, 1)?.0,
        };
        let found =
            agentperf_preflight(config, overrides, &client, perf, acc, out, existed).await?;
        aa_preflight = Some(found);
        checked = Some(client);
    }
    // The window live-reply and closed-loop requests are checked against.
    let checks = |p: &PhaseConfig| p.live_history() || p.closed_history();
    let needed = overrides.merge.is_none()
        && (perf.as_ref().is_some_and(|p| checks(&p.config))
            || matches!(acc, Some(Accuracy::Plugins(p)) if checks(&p.config)));
    let window = match (&checked, needed) {
        (_, false) => None,
        (Some(client), true) => crate::context::window(config, client, true, overrides.quiet).await,
        (None, true) => {
            let client = client_for(config, 1)?.0;
            crate::context::window(config, &client, true, overrides.quiet).await
        }
    };
    Ok((checked, aa_preflight, window))
}

/// AA's preflight on `client`, for the first phase: a refusal leaves nothing
/// behind; a server without exact replay (Ollama) gets the workload
/// configured again with the recorded policy. Returns what it found.
async fn agentperf_preflight(
    config: &RunConfig,
    overrides: &Overrides,
    client: &ChatClient,
    perf: &mut Option<Prepared>,
    acc: &mut Option<Accuracy>,
    out: &Path,
    existed: bool,
) -> Result<serde_json::Value> {
    let (phase, prepared) = match (perf, acc) {
        (Some(p), _) => ("performance", Some(p)),
        (None, Some(Accuracy::Plugins(p))) => ("accuracy", Some(&mut **p)),
        _ => ("performance", None),
    };
    let policy = prepared
        .as_ref()
        .and_then(|p| p.config.settings.get("policy"))
        .and_then(toml::Value::as_str)
        .map(str::to_owned);
    let found = crate::agentperf::preflight(
        client,
        &config.model.name,
        policy.as_deref(),
        phase,
        overrides.quiet,
    )
    .await;
    let found = match found {
        Ok(found) => found,
        Err(e) => {
            // Refused before the first request: nothing is left behind.
            if !overrides.resume {
                let _ = std::fs::remove_file(out.join(run_dir::LOCK_FILE));
                if !existed {
                    let _ = std::fs::remove_dir(out);
                }
            }
            return Err(e);
        }
    };
    if let (None, Some(p)) = (&policy, prepared) {
        if found.policy != "exact" {
            // Ollama: the workload runs the recorded policy.
            p.config
                .settings
                .insert("policy".into(), toml::Value::String(found.policy.clone()));
            let sessions = p
                .workload
                .configure(PluginConfig {
                    settings_json: table_json(&p.config.plugin_settings()),
                    files: p.files.clone(),
                    nonce: p.nonce.clone(),
                })
                .await?;
            p.sessions = crate::tools::closed::planned(config, &p.config, sessions)?;
        }
    }
    Ok(serde_json::to_value(&found)?)
}

/// The run's manifest: what ran (plugins, data, endpoint, model), its seal,
/// its compliance and the workloads' facts.
fn manifest(
    config: &RunConfig,
    state: &RunState,
    submission: bool,
    identities: Identities,
    compliance: &Compliance,
    aa_preflight: Option<serde_json::Value>,
    window: Option<crate::context::Window>,
) -> RunManifest {
    RunManifest {
        agentload_version: env!("CARGO_PKG_VERSION"),
        plugins: identities.plugins,
        datasets: identities.datasets,
        endpoint: config.endpoint.url.clone(),
        model: config.model.name.clone(),
        test_started_at: state.started_at.clone(),
        seal: SealRecord {
            mode: if submission {
                RunKind::Submission
            } else {
                RunKind::Development
            },
            sealed: identities.sealed,
            plugins: identities.seals,
        },
        compliance: compliance.clone(),
        nonce: state.nonce.clone(),
        workload_facts: identities.workload_facts,
        aa_preflight,
        context_window: window.map(|w| agentload_results::ContextWindowFact {
            tokens: w.tokens,
            source: w.source.text().to_owned(),
        }),
    }
}

/// Records the run's inputs before the first request: `config.toml` and
/// `run_manifest.json` (and AA's `aa/measurement.json`), or on a resume
/// checks they are the same; the state file; the reference's `config.yaml`.
/// Returns the directory as result files are written into it, and the
/// reference's config.
fn record_inputs(
    out: &Path,
    config: &RunConfig,
    overrides: &Overrides,
    config_toml: &str,
    manifest: &RunManifest,
    state: &mut RunState,
    data_dir: &Path,
) -> Result<(OutDir, serde_json::Value)> {
    let dir = OutDir::new(out);
    if overrides.resume {
        state.check_same_inputs(out, manifest)?;
    } else {
        dir.write("config.toml", config_toml)
            .context("cannot write config.toml")?;
        dir.write_json("run_manifest.json", manifest)?;
        if manifest.aa_preflight.is_some() {
            // AA binds its run before the first replay request.
            let facts = agentload_results::aa::RunFacts::from_run_dir(out)?;
            agentload_results::aa::write_measurement(&dir, &facts)
                .context("cannot write aa/measurement.json")?;
        }
    }
    state.save(out)?;
    let reference = agentload_results::reference_config(
        config,
        overrides.mode == Mode::Accuracy,
        data_dir,
        out,
    );
    agentload_results::write_reference_config(&dir, &reference)
        .context("cannot write config.yaml")?;
    Ok((dir, reference))
}

/// The phase headlines and the phases in which every issued turn failed.
type Headlines = (
    Option<PerformanceResult>,
    Option<AccuracyResult>,
    Vec<&'static str>,
);

/// Runs the phases: the performance phase (or its sweep), then the accuracy
/// phase unless the run was stopped.
async fn run_phases(
    cx: &Context<'_>,
    perf: Option<Prepared>,
    acc: Option<Accuracy>,
    manifest: RunManifest,
    reference: &serde_json::Value,
    text: &mut String,
) -> Result<Headlines> {
    let mut all_failed = Vec::new();
    let performance = match (perf, &cx.config.sweep) {
        (Some(p), Some(sweep)) => {
            run_sweep(cx, p, sweep, text).await?;
            None
        }
        (Some(p), None) => {
            let run_config = agentload_results::run_config(reference);
            let r = run_performance(cx, p, manifest, run_config, text).await?;
            if r.issued > 0 && r.succeeded == 0 {
                all_failed.push("performance");
            }
            Some(r)
        }
        (None, _) => None,
    };
    let accuracy = match acc {
        Some(Accuracy::Plugins(p)) if !cx.stop.stopped() => {
            let (r, issued, completed) = run_accuracy(cx, *p, text).await?;
            if issued > 0 && completed == 0 {
                all_failed.push("accuracy");
            }
            Some(r)
        }
        Some(Accuracy::SweBench(swe)) if !cx.stop.stopped() => {
            run_swe_bench(cx, *swe, text).await?
        }
        _ => None,
    };
    Ok((performance, accuracy, all_failed))
}

/// Ends the run: `report.txt` (its verdict last), the state file's segment,
/// the console's summary and `report.html`.
fn finish(cx: &Context<'_>, result: &RunResult, mut text: String) -> Result<()> {
    if let Some(why) = &result.interrupted {
        text.insert_str(
            0,
            &format!(
                "INCOMPLETE: {why}; `agentload resume {}` continues it\n",
                result.out.display()
            ),
        );
    }
    for phase in &result.all_failed {
        let _ = writeln!(text, "{phase}: every issued turn failed (see turns.jsonl)");
    }
    let _ = writeln!(text, "run {}", result.verdict());
    // Server text in it (an error's cause) has its control characters escaped, as on the
    // console: the file is read in a terminal too.
    cx.dir
        .write("report.txt", &*agentload_console::printable(&text))?;
    {
        let mut state = cx.state.lock().expect("state lock");
        state.end_segment(result.interrupted.clone());
        state.save(&result.out)?;
    }
    if !cx.overrides.quiet {
        agentload_console::out(&text);
    }
    // The page reads the result files just written; a failure to draw it
    // loses nothing measured, so it is reported, not fatal.
    match agentload_report::write_for_run(&result.out) {
        Ok(path) if !cx.overrides.quiet => {
            agentload_console::out(&format!("report: {}\n", path.display()))
        }
        Ok(_) => {}
        Err(e) => agentload_console::line(&format!("error: report.html not written: {e:#}")),
    }
    Ok(())
}

/// A fresh output directory: an empty one (its lock file aside), or with
/// `force` an earlier agentload run's, whose files are removed first (only
/// those: see [`run_dir`]). Anything else is refused: a run never mixes
/// with or silently overwrites other results. The caller holds its lock.
fn prepare_out_dir(out: &Path, force: bool) -> Result<()> {
    if !run_dir::has_entries(out)? {
        return Ok(());
    }
    if !force {
        let earlier_run =
            out.join("run_manifest.json").is_file() || out.join("run_state.json").is_file();
        anyhow::bail!(
            "the results directory {} is not empty: pass --force to replace an earlier \
             run's results{}",
            out.display(),
            if earlier_run {
                format!(", or `agentload resume {}` to continue it", out.display())
            } else {
                String::new()
            }
        );
    }
    // The earlier run's own report files, wherever its config put them.
    let reports: Vec<PathBuf> = RunConfig::load(&out.join("config.toml"))
        .map(|c| {
            [c.performance, c.accuracy]
                .into_iter()
                .flatten()
                .map(|p| PathBuf::from(p.report_file))
                .collect()
        })
        .unwrap_or_default();
    run_dir::clear_for_force(out, &reports)?;
    Ok(())
}

/// What a phase's preparation may accept.
struct Policy<'a> {
    /// `performance` or `accuracy` (for `--grant PHASE.NAME=PATH`).
    phase: &'static str,
    data_dir: &'a Path,
    explicit: &'a [agentload_config::data::ExplicitGrant],
    /// Only locked plugins (by name and digest) and locked data files.
    submission: bool,
    /// The run's nonce, for the workloads.
    nonce: &'a str,
}

impl<'a> Policy<'a> {
    /// How the phase's files are granted, `explicit` the command line's.
    fn grants(&self, config: &RunConfig, explicit: &'a BTreeMap<String, PathBuf>) -> Grants<'a> {
        Grants {
            data_dir: self.data_dir,
            explicit,
            max_bytes: Limits::bytes(config.plugins.limits.granted_file_mib),
            locked_only: self.submission,
        }
    }
}

/// The phase's `--grant PHASE.NAME=PATH` files, by grant name; a name the
/// phase does not grant is refused.
fn explicit_grants(phase: &PhaseConfig, policy: &Policy<'_>) -> Result<BTreeMap<String, PathBuf>> {
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
    Ok(explicit)
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
    let scorer_instances = config.plugins.scorer_instances.unwrap_or(0);
    let submission = policy.submission;
    // Read, check the seal, then compile: a refused plugin is never compiled.
    let load = |spec: &str| -> Result<(LoadedComponent, String, PluginSeal)> {
        let path =
            agentload_config::plugin_path::resolve(spec, plugin_dir).map_err(anyhow::Error::msg)?;
        let bytes =
            agentload_plugin_host::read_component(&path, Limits::bytes(limits.component_mib))?;
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
        let file = path
            .file_name()
            .map_or_else(|| spec.to_owned(), |f| f.to_string_lossy().into_owned());
        let seal = if submission {
            agentload_config::seal::require(&file, &digest)?
        } else {
            agentload_config::seal::check(&file, &digest)
        };
        let sealed = PluginSeal {
            file: file.clone(),
            digest,
            seal,
        };
        Ok((engine.load_bytes(&path, &bytes)?, file, sealed))
    };
    // In a submission run a locked plugin must also describe itself by its
    // locked name.
    let described = |file: &str, seal: &Seal, name: &str| -> Result<()> {
        if submission {
            agentload_config::seal::require_described(file, seal, name)?;
        }
        Ok(())
    };
    let (component, file, workload_seal) = load(&phase.workload)?;
    let mut workload = block_on(WorkloadPlugin::new(engine.clone(), &component, limits))?;
    described(&file, &workload_seal.seal, &workload.identity().name)?;
    let explicit = explicit_grants(&phase, policy)?;
    let how = policy.grants(config, &explicit);
    let (files, mut datasets) = grant_files(&phase.data, &how)?;
    let (scorer_files, scorer_datasets) = grant_files(&phase.scorer_data, &how)?;
    datasets.extend(scorer_datasets);
    // The scorer loads and checks its settings and grants (now, not after the run) on a
    // second thread, beside the workload's `configure`; the workload's error comes first.
    let load_scorer = |spec: &str| -> Result<(ScorerPlugin, PluginSeal)> {
        let (component, file, sealed) = load(spec)?;
        let scorer =
            ScorerPlugin::new(engine.clone(), &component, limits)?.with_instances(scorer_instances);
        described(&file, &sealed.seal, &scorer.identity().name)?;
        scorer.check(&PluginConfig {
            settings_json: table_json(&phase.scorer_settings),
            files: scorer_files.clone(),
            // A scorer's verdicts depend on its items alone.
            nonce: String::new(),
        })?;
        Ok((scorer, sealed))
    };
    let (sessions, scorer) = std::thread::scope(|scope| {
        let scorer = phase
            .scorer
            .as_deref()
            .map(|spec| scope.spawn(|| load_scorer(spec)));
        let sessions = block_on(workload.configure(PluginConfig {
            settings_json: table_json(&phase.plugin_settings()),
            files: files.clone(),
            nonce: policy.nonce.to_owned(),
        }));
        let scorer = scorer.map(|h| {
            h.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        (sessions, scorer)
    });
    let sessions = crate::tools::closed::planned(config, &phase, sessions?)?;
    let mut seals = vec![workload_seal];
    let scorer = match scorer.transpose()? {
        Some((scorer, sealed)) => {
            seals.push(sealed);
            Some(scorer)
        }
        None => None,
    };
    Ok(Prepared {
        config: phase,
        seals,
        files,
        scorer_files,
        nonce: policy.nonce.to_owned(),
        workload,
        sessions,
        scorer,
        datasets,
        trace: None,
    })
}

/// Live-reply replay's recorded twins (`agentload_engine`'s `twin` module): the workload
/// again, `n` instances configured with `history = "recorded"`, whose turns are counted
/// beside the live ones. None, with a note, when the twin's sessions are not the live
/// run's (the comparison needs the same sessions).
async fn recorded_twins(prepared: &Prepared, n: usize) -> Result<Option<Instances>> {
    let mut settings = prepared.config.settings.clone();
    settings.insert("history".into(), toml::Value::String("recorded".into()));
    let (twin, plans) = prepared
        .workload
        .reconfigured(PluginConfig {
            settings_json: table_json(&settings),
            files: prepared.files.clone(),
            nonce: prepared.nonce.clone(),
        })
        .await?;
    if plans
        .iter()
        .map(|p| &p.id)
        .ne(prepared.sessions.iter().map(|p| &p.id))
    {
        agentload_console::line(
            "note: the workload in recorded mode plans other sessions than in live mode; \
             the live turns are not compared with the recording",
        );
        return Ok(None);
    }
    Ok(Some(Instances::pool(twin, n).await?))
}

/// Sends every session of a prepared phase (on a resume, what an earlier
/// process left undone); the turn log goes to `log_path`.
async fn execute(
    cx: &Context<'_>,
    name: &'static str,
    prepared: Prepared,
    concurrency: usize,
    log_path: &Path,
) -> Result<Executed> {
    let config = cx.config;
    if let Some(merged) = &cx.overrides.merge {
        return execute_merged(cx, name, prepared, merged, log_path);
    }
    let mut plans = prepared.sessions.clone();
    let mut concurrency = concurrency;
    let shard = cx.overrides.shard.as_ref();
    let schedule = match (name, &config.load.arrivals) {
        ("performance", Some(a)) => Some(crate::open_loop::fixed(
            config,
            a,
            plans.len(),
            prepared.trace.as_deref(),
        )?),
        _ => None,
    };
    let mut planned = None;
    let mut open = None;
    if let Some(schedule) = &schedule {
        // This process's arrivals of the one schedule (a shard's: every N-th); its share of
        // the in-flight cap.
        let mine = schedule.planned(&plans, |k| shard.is_none_or(|s| s.slice.owns(k)));
        plans = mine.iter().map(|a| a.plan.clone()).collect();
        let mut o = schedule.open.clone();
        if let (Some(s), Some(cap)) = (shard, o.cap) {
            o.cap = Some(s.slice.concurrency(cap).map_err(|_| {
                anyhow::anyhow!(
                    "load.arrivals.max_in_flight = {cap} cannot be split over {} shards: every \
                     shard needs at least 1",
                    s.slice.count
                )
            })?);
        }
        // Connections kept warm: the cap, or a guess at what is in flight.
        concurrency = o.cap.unwrap_or(plans.len()).min(1024);
        planned = Some(mine);
        open = Some(o);
    } else if let Some(shard) = shard {
        // This shard's sessions; its share of the slots (the accuracy
        // phase runs one at a time on every shard).
        plans = shard.slice.take(plans);
        if name == "performance" {
            concurrency = shard.slice.concurrency(concurrency)?;
        }
    }
    // No more connections than sessions to run on them.
    let concurrency = concurrency.min(plans.len().max(1));
    let expected: u32 = plans.iter().map(|s| s.expected_turns).sum();
    let done = cx.state.lock().expect("state lock").phase(name) == PhaseState::Complete;
    let prior = if cx.overrides.resume {
        let windows = cx.state.lock().expect("state lock").earlier_windows_ns();
        Prior::read(log_path, &plans, &windows)
            .map_err(|e| anyhow::anyhow!("cannot resume: {e}"))?
    } else {
        Prior::default()
    };
    let (mut sessions, mut tasks) = prior
        .split(plans.clone(), cx.counter.is_some())
        .map_err(|e| anyhow::anyhow!("cannot resume: {e}"))?;
    if done {
        // A complete phase is kept as it is: its sessions' last outcomes.
        sessions.extend(
            tasks
                .drain(..)
                .filter_map(|t| prior.ended.get(&t.plan.id).cloned()),
        );
    }
    if !cx.overrides.quiet {
        let left: u32 = tasks.iter().map(|t| t.plan.expected_turns).sum();
        let resumed = if cx.overrides.resume {
            format!(
                " (resumed: {} sessions, about {left} turns left)",
                tasks.len()
            )
        } else {
            String::new()
        };
        let how = match &schedule {
            Some(s) => format!(
                "open-loop ({} {} of {}, {:.3}/s)",
                plans.len(),
                s.configured.process,
                s.configured.of,
                s.configured.rate
            ),
            None => format!("at concurrency {concurrency}"),
        };
        agentload_console::line(&format!(
            "running {} sessions ({expected} turns) of {} against {} {how}{resumed}",
            plans.len(),
            prepared.workload.identity().name,
            config.endpoint.url,
        ));
    }
    let (mut client, body) = client_for(config, concurrency)?;
    // The endpoint check's client (its connection carries the first turn), when it keeps
    // as many idle connections as this phase warms up.
    if let Some(checked) = cx.checked.lock().expect("client lock").take() {
        if schedule.is_none() {
            client = checked;
        }
    }
    // One keep-alive connection per concurrent session, opened before the
    // first turn; when this fails, the first turns fail with the cause.
    let setup = match client.warm_up(concurrency).await {
        Ok(setup) => Some(setup),
        Err(e) => {
            agentload_console::line(&format!("warning: {e}"));
            None
        }
    };
    let console = Console::new(name, Some(u64::from(expected)), cx.overrides.quiet);
    if let Some(shard) = &cx.overrides.shard {
        // The coordinator adds the shards' progress up from their heartbeats.
        let progress = console.progress().clone();
        shard.link.watch(Box::new(move || {
            let c = progress.counts();
            agentload_shards::Live {
                completed: c.completed,
                failed: c.failed,
                output_tokens: c.output_tokens,
                ttft_us: agentload_shards::header::to_buckets(&progress.ttft_us()),
            }
        }));
    }
    let recorder = Recorder::open(
        LogFiles {
            out: cx.dir.clone(),
            turns: cx.dir.rel(log_path)?,
            durability: config.output.durability,
            append: cx.overrides.resume,
        },
        prior.turns,
        cx.counter.clone(),
        console,
    )?;
    let instances = config.plugins.workload_instances.unwrap_or(1);
    let twins = match prepared.config.live_history() && cx.counter.is_some() {
        true => recorded_twins(&prepared, instances).await?,
        false => None,
    };
    let workload = Instances::pool(prepared.workload, instances).await?;
    // The turns' clock and the telemetry's: its first samples are taken
    // before the first request. A shard's starts with the others', at the
    // coordinator's barrier.
    let origin = match &cx.overrides.shard {
        Some(shard) => shard.link.barrier(name, cx.segment).await?,
        None => Instant::now(),
    };
    let sampling = match &cx.telemetry {
        Some(t) => {
            let file = cx.dir.rel(log_path)?.with_file_name("telemetry.jsonl");
            let shown = file.display().to_string();
            Some(t.start(origin, &cx.dir, &file, &shown, cx.segment).await?)
        }
        None => None,
    };
    let context = crate::context::checked_window(
        cx.window.as_ref(),
        prepared.config.live_history(),
        prepared.config.closed_history(),
        cx.counter.as_ref(),
    )
    .await?;
    let engine = Arc::new(Engine {
        workload,
        sender: TurnSender {
            client,
            body,
            origin,
            segment: cx.segment,
        },
        recorder,
        stop: cx.stop.child(),
        hooks: Box::new(WorkloadDelays),
        live: prepared.config.live_history(),
        context,
        twins,
        failed_turn: config.load.failed_turn,
        closed: crate::tools::closed::start(
            config,
            &prepared.config,
            &plans.iter().map(|p| p.id.clone()).collect::<Vec<_>>(),
        )
        .await?,
    });
    engine
        .stop
        .deadline(Duration::from_millis(config.load.max_duration_ms));
    // START_PERFORMANCE_TRACKING: the phase's duration runs from here (a
    // first turn's own delay included, as the reference counts it).
    let start_ns = origin.elapsed().as_nanos() as u64;
    let ramp = config.load.ramp.filter(|_| name == "performance");
    let mut dispatch = None;
    let ran = match (planned, open) {
        (Some(planned), Some(open)) => {
            match agentload_engine::arrivals::run_arrivals(
                engine.clone(),
                planned.into_iter(),
                open,
            )
            .await
            {
                Ok(run) => {
                    dispatch = Some(run.dispatch);
                    Ok(run.outcomes)
                }
                Err(e) => Err(e),
            }
        }
        _ => match ramp.filter(|r| r.of == agentload_config::RampOf::Concurrency) {
            Some(r) => {
                // A shard's worker `j` is the run's slot `index + j·count`.
                let total = config.load.concurrency;
                let all =
                    agentload_engine::schedule::ramp_starts(r.shape, r.from, total, r.duration_s);
                let starts: Vec<Duration> = match shard {
                    Some(s) => all
                        .iter()
                        .enumerate()
                        .filter(|(g, _)| s.slice.owns(*g))
                        .map(|(_, d)| *d)
                        .take(concurrency)
                        .collect(),
                    None => all.into_iter().take(concurrency).collect(),
                };
                agentload_engine::run_pool_ramped(engine.clone(), tasks, &starts).await
            }
            None => run_pool(engine.clone(), tasks, concurrency).await,
        },
    };
    // The measured window starts when a ramp ends.
    let start_ns = match ramp {
        Some(r) => start_ns.max((r.duration_s * 1e9) as u64),
        None => start_ns,
    };
    if let Some(shard) = &cx.overrides.shard {
        shard.link.end_phase()?;
    }
    let engine = Arc::try_unwrap(engine).unwrap_or_else(|_| unreachable!("workers joined"));
    let interrupted = engine.recorder.interrupted();
    let (turns, counting) = engine.recorder.finish()?;
    let telemetry = match sampling {
        Some(s) => {
            let mine = || turns.iter().filter(|r| r.segment == cx.segment);
            let window = span_ns(mine());
            let mut summary = s.finish(window).await;
            summary.account(crate::sweep::phase_tokens(mine()));
            if !cx.overrides.quiet {
                agentload_console::line(&format!("{name} {}", summary.line()));
            }
            Some(summary)
        }
        None => None,
    };
    let outcomes = ran.with_context(|| {
        format!(
            "the run stopped (everything measured before is in {})",
            cx.out.display()
        )
    })?;
    sessions.extend(outcomes);
    let order: std::collections::HashMap<&str, usize> = plans
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.as_str(), i))
        .collect();
    sessions.sort_by_key(|o| order.get(o.id.as_str()).copied().unwrap_or(usize::MAX));
    let cut = matches!(engine.stop.reason(), Some((StopReason::Interrupted(_), _)));
    if !cut {
        cx.state
            .lock()
            .expect("state lock")
            .set_phase(name, PhaseState::Complete);
    }
    let arrivals = schedule.map(|s| {
        agentload_results::arrivals::ArrivalsSummary::of(
            &turns,
            s.configured,
            dispatch.unwrap_or_default(),
        )
    });
    Ok(Executed {
        turns,
        log: log_path.to_path_buf(),
        interrupted,
        sessions,
        plans,
        scorer: prepared.scorer,
        phase: prepared.config,
        harness: agentload_results::Harness {
            startup_ms: agentload_wire::clock::startup().map(|d| d.as_secs_f64() * 1e3),
            connection_setup: setup,
            token_counting: counting,
        },
        telemetry,
        start_ns,
        arrivals,
    })
}

/// A phase of a merged sharded run: the shards' records, mapped onto one
/// time line, written as the run's journal and handed on as if sent.
fn execute_merged(
    cx: &Context<'_>,
    name: &'static str,
    prepared: Prepared,
    merged: &crate::shards::merge::Merged,
    log_path: &Path,
) -> Result<Executed> {
    let phase = merged
        .phase(name)
        .with_context(|| format!("no shard has records of the {name} phase"))?;
    let mut strings = agentload_engine::Interner::default();
    let mut turns = Vec::new();
    phase.write_journal(&cx.dir, cx.dir.rel(log_path)?, |r, line| {
        if r.status != TurnStatus::Interrupted {
            turns.push(TurnFacts::of(r, line, &mut strings));
        }
    })?;
    if phase.complete && merged.lost.is_none() {
        cx.state
            .lock()
            .expect("state lock")
            .set_phase(name, PhaseState::Complete);
    }
    let telemetry = (name == "performance")
        .then(|| crate::shards::shard_zero_telemetry(merged))
        .flatten();
    let order: std::collections::HashMap<&str, usize> = prepared
        .sessions
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.as_str(), i))
        .collect();
    let mut sessions = phase.sessions.clone();
    sessions.sort_by_key(|o| order.get(o.id.as_str()).copied().unwrap_or(usize::MAX));
    // The one schedule's arrivals, delivered by every shard together.
    let arrivals = match (name, &cx.config.load.arrivals) {
        ("performance", Some(a)) => {
            let schedule = crate::open_loop::fixed(
                cx.config,
                a,
                prepared.sessions.len(),
                prepared.trace.as_deref(),
            )?;
            Some(agentload_results::arrivals::ArrivalsSummary::of(
                &turns,
                schedule.configured,
                crate::shards::shards_dispatch(merged),
            ))
        }
        _ => None,
    };
    Ok(Executed {
        turns,
        log: log_path.to_path_buf(),
        interrupted: phase.interrupted(),
        sessions,
        plans: prepared.sessions,
        scorer: prepared.scorer,
        phase: prepared.config,
        harness: agentload_results::Harness::default(),
        telemetry,
        start_ns: (name == "performance")
            .then_some(cx.config.load.ramp)
            .flatten()
            .map_or(0, |r| (r.duration_s * 1e9) as u64),
        arrivals,
    })
}

/// The run's telemetry: `[telemetry]` and the sweep's power command or file.
pub(crate) fn open_telemetry(config: &RunConfig) -> Result<Option<Telemetry>> {
    let power = config.sweep.as_ref().and_then(|s| {
        let n = &s.normalize;
        let source = match (&n.power_command, &n.power_file) {
            (Some(cmd), _) => PowerSource::Command(cmd.clone()),
            (None, Some(file)) => PowerSource::File(file.clone()),
            (None, None) => return None,
        };
        Some((
            source,
            Duration::from_secs_f64(n.power_interval_s.unwrap_or(1.0).max(0.05)),
        ))
    });
    Ok(Telemetry::open(
        config.telemetry.as_ref(),
        &config.endpoint.url,
        power,
        &crate::endpoint::transport_for(&config.endpoint)?,
    )?)
}

/// First issue to last completion of `turns` (ns on their clock).
fn span_ns<'a>(turns: impl Iterator<Item = &'a TurnFacts> + Clone) -> Option<(u64, u64)> {
    let start = turns.clone().filter_map(TurnFacts::issued_ns).min()?;
    let end = turns.filter_map(TurnFacts::complete_ns).max()?;
    Some((start, end))
}

/// The time the phase's turns span, summed over the processes that sent
/// them (a resumed run does not count the time it was down): from the
/// phase's start (`started`: this process's segment and the time it
/// started the sessions, the reference's START_PERFORMANCE_TRACKING; an
/// earlier process's, from its first issue) to the last completion.
fn window_ns(turns: &[TurnFacts], started: (u32, u64)) -> Option<(u64, u64)> {
    let mut spans: std::collections::BTreeMap<u32, (u64, u64)> = Default::default();
    for r in turns {
        let (Some(a), Some(b)) = (r.issued_ns(), r.complete_ns()) else {
            continue;
        };
        let a = if r.segment == started.0 {
            a.min(started.1)
        } else {
            a
        };
        let span = spans.entry(r.segment).or_insert((a, b));
        span.0 = span.0.min(a);
        span.1 = span.1.max(b);
    }
    match spans.len() {
        0 => None,
        1 => spans.into_values().next(),
        _ => Some((0, spans.values().map(|(a, b)| b - a).sum())),
    }
}

/// The performance phase: the session replay, `performance/result_summary.json`,
/// the inline scorer's report.
async fn run_performance(
    cx: &Context<'_>,
    prepared: Prepared,
    manifest: RunManifest,
    run_config: serde_json::Value,
    text: &mut String,
) -> Result<PerformanceResult> {
    cx.dir.create_dir("performance")?;
    let scorer_files = prepared.scorer_files.clone();
    let ex = execute(
        cx,
        "performance",
        prepared,
        cx.config.load.concurrency,
        &cx.out.join("turns.jsonl"),
    )
    .await?;
    cx.dir.write_json("sessions.json", &ex.sessions)?;
    let order: Vec<String> = ex.plans.iter().map(|p| p.id.clone()).collect();
    text.push_str(&crate::tools::closed::after_performance(
        &ex.phase, &ex.log, &order, &cx.dir,
    )?);
    // The metrics count the turns issued inside the performance window (closed loop: the
    // reference's; after a ramp: from its end); the tail is journalled and scored all the
    // same. Open-loop arrivals have no slots to refill: every turn after the ramp counts.
    let tracking = ex.arrivals.is_none().then(|| {
        agentload_results::tracking::window(&ex.turns, ex.plans.len(), cx.config.load.concurrency)
    });
    let after_ramp = |r: &TurnFacts| {
        cx.config.load.ramp.is_none() || r.issued_ns().is_some_and(|i| i >= ex.start_ns)
    };
    let all_count = tracking.as_ref().is_none_or(|t| t.tail == 0) && cx.config.load.ramp.is_none();
    let tracked: std::borrow::Cow<'_, [TurnFacts]> = if all_count {
        std::borrow::Cow::Borrowed(&ex.turns)
    } else {
        ex.turns
            .iter()
            .filter(|r| tracking.as_ref().is_none_or(|t| t.counts(r)) && after_ramp(r))
            .cloned()
            .collect()
    };
    let mut summary = agentload_results::summarize(
        &tracked,
        window_ns(&tracked, (cx.segment, ex.start_ns)),
        run_config,
        manifest,
        &agentload_results::TokenSetup {
            source: cx.config.model.token_source(),
            chat_template_sha256: cx.counter.as_ref().map(|c| c.template_sha256().to_owned()),
        },
    );
    summary.agentload.harness = ex.harness;
    summary.agentload.n_samples_interrupted = ex.interrupted;
    summary.agentload.endpoints = cx.state.lock().expect("state lock").endpoints();
    summary.agentload.transport =
        crate::endpoint::transport_for(&cx.config.endpoint)?.recorded(&cx.config.endpoint.url);
    summary.agentload.telemetry = ex.telemetry;
    summary.agentload.tracking = tracking;
    if let Some(arrivals) = &ex.arrivals {
        text.push_str(&arrivals.lines());
        for why in &arrivals.behind {
            agentload_console::line(&format!("warning: behind schedule: {why}"));
        }
    }
    summary.agentload.arrivals = ex.arrivals.clone();
    if let Some(merged) = &cx.overrides.merge {
        summary.agentload.distributed = merged.distributed.clone();
        if let Some(d) = &merged.distributed {
            text.push_str(&d.lines());
        }
    }
    // Each session's numbers, and the sessions together.
    let ends: agentload_results::sessions::Ends = ex
        .sessions
        .iter()
        .map(|o| (o.id.clone(), o.ended.name().to_owned()))
        .collect();
    let source = cx.config.model.token_source();
    let turns: Vec<SessionTurn<'_>> = ex
        .turns
        .iter()
        .map(|r| SessionTurn::of(r, source))
        .collect();
    let (each, sessions) = agentload_results::sessions::sessions(
        &turns,
        &order,
        &ends,
        cx.config.session_slo.as_ref(),
        summary.duration_ns.map(|ns| ns as f64 / 1e9),
    );
    cx.dir.write_jsonl("session_metrics.jsonl", &each)?;
    if sessions.context_overflow_flagged {
        let line = format!(
            "flagged: {:.1} % of the sessions ({} of {}) ended on the context window (above 1 %)",
            sessions.context_overflow_pct,
            sessions.ended.get("context_overflow").copied().unwrap_or(0),
            sessions.sessions
        );
        agentload_console::line(&format!("warning: {line}"));
        text.push_str(&format!("{line}\n"));
    }
    summary.agentload.sessions = Some(sessions);
    // The datacenter rules' point metrics, as their checker reads them.
    if cx
        .config
        .rules
        .as_deref()
        .and_then(agentload_config::rules::find)
        .is_some_and(|r| r.point_metrics)
    {
        summary.add_point_metrics();
        summary.output_sequence_lengths_full_run = Some(agentload_results::FullRunOsl::of(
            &ex.turns,
            cx.config.model.token_source(),
        ));
    }
    cx.dir
        .write_json("performance/result_summary.json", &summary)?;

    let succeeded = summary.agentload.n_samples_succeeded;
    let expected: u32 = ex.plans.iter().map(|p| p.expected_turns).sum();
    let missing = missing_turns(&ex.plans, &ex.turns);
    let mut score = None;
    let mut score_line = None;
    if let Some(scorer) = &ex.scorer {
        let scored = cx.score(
            scorer,
            &ex.phase,
            scoring::PhaseKind::Performance,
            &scorer_files,
            &ex.log,
            &ex.turns,
        )?;
        score = Some(scored.report.score);
        score_line = Some(format!(
            "{} score {:.4} over {} items ({})",
            scorer.identity().name,
            scored.report.score,
            scored.verdicts.len(),
            ex.phase.report_file
        ));
    }
    text.push_str(&agentload_results::write_report(
        &summary,
        score_line.as_deref(),
    ));
    text.push_str(&format!(
        "performance: {missing} of {expected} expected turns missing\n"
    ));
    // An AA replay also gets AA's own files and headline, from the same records.
    crate::aa::after_performance(&cx.out, text)?;
    if let Some(t) = summary.agentload.tracking.as_ref().filter(|t| t.tail > 0) {
        text.push_str(&format!(
            "performance window: {} issued turns counted, {} in the tail (issued after the \
             first session end once all {} sessions had started on {} slots; sent and scored, \
             not in the metrics)\n",
            t.tracked, t.tail, t.instances, t.concurrency
        ));
    }
    Ok(PerformanceResult {
        issued: summary.n_samples_issued,
        succeeded,
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
    let live = prepared.config.live_history();
    let summary = match &cx.overrides.merge {
        // A sharded sweep's merge: the shards' phase folders, one time line.
        Some(merged) => crate::shards::sweep::merge(cx.config, sweep, &cx.out, merged, live)?,
        None => {
            crate::sweep::run(crate::sweep::SweepInput {
                config: cx.config,
                sweep,
                phase: &prepared.config,
                workload: prepared.workload,
                files: prepared.files,
                counter: cx.counter.clone(),
                out: cx.out.clone(),
                quiet: cx.overrides.quiet,
                stop: &cx.stop,
                telemetry: cx.telemetry.as_ref(),
                shard: cx
                    .overrides
                    .shard
                    .as_ref()
                    .map(|s| crate::sweep::ShardSweep {
                        index: s.slice.index,
                        count: s.slice.count,
                        barriers: Arc::new(crate::shards::sweep::LinkBarriers {
                            link: s.link.clone(),
                            segment: cx.segment,
                        }),
                    }),
            })
            .await?
        }
    };
    if let Some(why) = cx.overrides.merge.as_ref().and_then(|m| m.lost.as_ref()) {
        let _ = writeln!(text, "INVALID: {why}");
    }
    if summary.live.is_some() {
        let _ = writeln!(
            text,
            "NON-OFFICIAL: live-reply replay (history = \"live\"): requests carry the model's own \
             replies, not the recording"
        );
    }
    let _ = writeln!(
        text,
        "sweep: {} phases (sweep/summary.json, sweep/pareto.json); * = on the Pareto frontier",
        summary.phases.len()
    );
    let frontier = crate::sweep::frontier::pareto(&crate::sweep::points_of(&summary));
    for p in &summary.phases {
        let on = frontier
            .iter()
            .any(|f| f.level == p.level && f.rate == p.rate);
        let _ = writeln!(
            text,
            "{} {:<6} total {:>9.1} tok/s  P25 speed {:>7.1} tok/s  TTFT p90 {:>8.1} ms  {:>6} requests  {}{}",
            if on { '*' } else { ' ' },
            p.level().label(),
            p.metrics.throughput.total_tps,
            p.metrics.output_speed_tps.as_ref().map_or(f64::NAN, |s| s.p25),
            p.metrics.ttft_ms.as_ref().map_or(f64::NAN, |s| s.p90),
            p.requests,
            p.end_reason,
            p.arrivals
                .as_ref()
                .map_or_else(String::new, crate::sweep::delivered)
        );
        if let Some(a) = &p.arrivals {
            for why in &a.behind {
                let _ = writeln!(text, "        BEHIND SCHEDULE: {why}");
            }
        }
        if !sweep.slo.is_empty() {
            let met = match p.meets_slo.as_slice() {
                [] => "none".to_owned(),
                tiers => tiers.join(", "),
            };
            let _ = writeln!(text, "        meets SLO: {met}");
        }
        if let Some(live) = &p.live {
            let matched = live.funnel.first().map_or(0, |row| row.turns);
            let _ = writeln!(
                text,
                "        live: {} turns reviewed, {matched} match; {} of {} sessions departed; {} substituted",
                live.turns_reviewed, live.sessions_diverged, live.sessions, live.substitutions
            );
        }
    }
    let rates = !sweep.rates.is_empty();
    for s in &summary.slo {
        let best = match rates {
            true => format!(
                "highest rate {}",
                s.max_rate
                    .map_or_else(|| "none".to_owned(), |r| format!("{r}/s"))
            ),
            false => format!(
                "max agents {}",
                s.max_agents
                    .map_or_else(|| "none".to_owned(), |n| n.to_string())
            ),
        };
        let _ = writeln!(
            text,
            "  SLO {} (TTFT p90 <= {} ms, P25 speed >= {} tok/s): {best}",
            s.tier, s.ttft_p90_ms, s.speed_p25_tps,
        );
    }
    Ok(())
}

/// The accuracy phase: every sample at concurrency 1, then the scorer's
/// report (`accuracy/accuracy_results.json` in the edge config) and one row
/// per sample in `accuracy/samples.jsonl`. Returns the headline and the
/// issued and completed request counts.
async fn run_accuracy(
    cx: &Context<'_>,
    prepared: Prepared,
    text: &mut String,
) -> Result<(AccuracyResult, u64, u64)> {
    cx.dir.create_dir("accuracy")?;
    let scorer_files = prepared.scorer_files.clone();
    let log = cx.out.join("accuracy/turns.jsonl");
    let ex = execute(cx, "accuracy", prepared, 1, &log).await?;
    cx.dir.write_json("accuracy/sessions.json", &ex.sessions)?;
    if let Some(telemetry) = &ex.telemetry {
        cx.dir
            .write_json("accuracy/telemetry_summary.json", telemetry)?;
    }
    let issued = ex.turns.iter().filter(|r| r.issued_ns().is_some()).count() as u64;
    let completed = ex
        .turns
        .iter()
        .filter(|r| r.status == TurnStatus::Completed)
        .count() as u64;
    let missing = missing_turns(&ex.plans, &ex.turns);
    let mut result = AccuracyResult {
        samples: ex.turns.len(),
        missing,
        score: None,
        gate_passed: None,
        failed: None,
    };
    let _ = writeln!(
        text,
        "accuracy: {} samples issued, {completed} completed, {missing} missing",
        ex.turns.len()
    );
    if let Some(scorer) = &ex.scorer {
        let scored = cx.score(
            scorer,
            &ex.phase,
            scoring::PhaseKind::Accuracy,
            &scorer_files,
            &ex.log,
            &ex.turns,
        )?;
        scoring::write_samples(&cx.dir, "accuracy/samples.jsonl", &scored)?;
        result.score = Some(scored.report.score);
        let _ = writeln!(
            text,
            "{} score {:.4} over {} samples ({})",
            scorer.identity().name,
            scored.report.score,
            scored.verdicts.len(),
            ex.phase.report_file
        );
        if let Some(gate) = &scored.report.gate {
            result.gate_passed = Some(gate.passed);
            let _ = writeln!(text, "{}", scoring::gate_line(gate));
        }
    }
    Ok((result, issued, completed))
}

/// The SWE-bench phase, after the performance phase: the remote run (a
/// signal cancels it there), its files and its accuracy entry. A resumed
/// run keeps a SWE-bench phase that already ended.
async fn run_swe_bench(
    cx: &Context<'_>,
    swe: crate::swe_bench::Phase,
    text: &mut String,
) -> Result<Option<AccuracyResult>> {
    if cx.state.lock().expect("state lock").phase("accuracy") == PhaseState::Complete {
        let _ = writeln!(
            text,
            "swe_bench: ended in an earlier segment (accuracy/accuracy_results.json)"
        );
        return Ok(None);
    }
    let Some(ended) = swe.run(&cx.out, &cx.stop, cx.overrides.quiet, text).await? else {
        return Ok(None);
    };
    cx.state
        .lock()
        .expect("state lock")
        .set_phase("accuracy", PhaseState::Complete);
    Ok(Some(AccuracyResult {
        samples: ended.evaluated,
        missing: 0,
        score: ended.score,
        gate_passed: None,
        failed: ended.failed,
    }))
}

/// The local counter: the vocabulary with the model's chat template. A
/// missing vocabulary turns local counts off (the server's are used, and
/// the results say so); a configured template that does not load is an
/// error.
fn load_counter(
    config: &RunConfig,
    data_dir: &Path,
    loaded: Option<Arc<QwenTokenizer>>,
) -> Result<Option<Arc<LocalCounter>>> {
    if config.model.tokenizer == "none" {
        return Ok(None);
    }
    let template = config
        .model
        .chat_template
        .as_deref()
        .map(|path| agentload_engine::tokens::load_template(path, data_dir))
        .transpose()
        .map_err(anyhow::Error::msg)?;
    if config.model.tokenizer != "qwen3.6" {
        // A model's own tokenizer.json: checked now, loaded when counting starts.
        let path =
            agentload_engine::tokens::model_file(Path::new(&config.model.tokenizer), data_dir);
        anyhow::ensure!(
            path.is_file(),
            "model.tokenizer: no file {} (looked in the working directory and {})",
            config.model.tokenizer,
            data_dir.display()
        );
        let template = match template {
            Some(t) => t,
            None => agentload_engine::tokens::template_beside(&path).map_err(anyhow::Error::msg)?,
        };
        let sha = template.sha256().to_owned();
        return Ok(Some(Arc::new(LocalCounter::lazy(sha, move || {
            Tokenizer::hugging_face(&path, template)
                .map(Arc::new)
                .map_err(|e| format!("model.tokenizer: {e}"))
        }))));
    }
    let with_template = |tokenizer: Tokenizer, template: Option<ChatTemplate>| match template {
        Some(template) => tokenizer
            .with_template(template)
            .map(Arc::new)
            .map_err(|e| format!("model.chat_template: {e}")),
        None => Ok(Arc::new(tokenizer)),
    };
    if let Some(vocab) = loaded {
        let tokenizer =
            with_template(Tokenizer::qwen(vocab), template).map_err(anyhow::Error::msg)?;
        return Ok(Some(Arc::new(LocalCounter::new(tokenizer))));
    }
    // The vocabulary loads when the first phase ends (counting never runs beside a stream),
    // so start-up only checks that it is there.
    let path = match find_qwen(data_dir) {
        Ok(path) => path,
        Err(e) => {
            agentload_console::line(&format!("note: local token counts off: {e}"));
            return Ok(None);
        }
    };
    let sha = template.as_ref().map_or_else(
        || ChatTemplate::qwen3_6().sha256().to_owned(),
        |t| t.sha256().to_owned(),
    );
    Ok(Some(Arc::new(LocalCounter::lazy(sha, move || {
        let vocab = QwenTokenizer::load(&path).map_err(|e| e.to_string())?;
        with_template(Tokenizer::qwen(Arc::new(vocab)), template)
    }))))
}
