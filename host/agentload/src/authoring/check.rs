//! `agentload plugin check`: what a component is (world, WIT version,
//! exports), whether it loads in the sandbox, and what it does: a workload
//! is configured and run for a few turns against the in-process simulator
//! (echo responder) on the turn engine, as a run would drive it; a scorer
//! scores a few synthetic items.

use agentload_client::{ChatClient, ClientOptions, Timestamps};
use agentload_engine::{
    drive, BodyOptions, Console, DriveError, Engine, Instances, Next, Recorder, SessionEnd, Stop,
    StopReason, TurnHooks, TurnRecord, TurnSender, TurnStatus,
};
use agentload_plugin_host::types::{Completion, GrantedFile, PluginConfig, Role, ToolCall};
use agentload_plugin_host::{
    ComponentApi, Limits, PluginEngine, ScoredItem, ScorerPlugin, TurnRequest, WorkloadPlugin,
    World,
};
use anyhow::{Context as _, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What to check and how.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The component.
    pub path: PathBuf,
    /// Turns to run (workloads), across sessions in issue order.
    pub turns: usize,
    /// The plugin's settings as a JSON object (default `{}`).
    pub settings: Option<String>,
    /// Granted files: logical name, host path.
    pub data: Vec<(String, PathBuf)>,
    /// `expected-json` of the synthetic scorer items (default `{}`).
    pub expected: Option<String>,
    pub limits: Limits,
}

/// The result of a check.
#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub path: PathBuf,
    pub bytes: usize,
    pub digest: String,
    /// `workload-plugin`, `scorer-plugin`, or none.
    pub world: Option<&'static str>,
    /// The `agentload:plugin` version(s) the component names.
    pub wit_versions: Vec<String>,
    pub supported_versions: String,
    pub imports: Vec<String>,
    pub exports: Vec<String>,
    /// What `describe` said.
    pub plugin: Option<Described>,
    pub workload: Option<WorkloadCheck>,
    pub scorer: Option<ScorerCheck>,
    /// Things that did not stop the check but deserve a look.
    pub warnings: Vec<String>,
}

/// `describe`'s answer.
#[derive(Debug, Serialize)]
pub struct Described {
    pub name: String,
    pub version: String,
    pub kind: String,
}

/// A workload's run.
#[derive(Debug, Serialize)]
pub struct WorkloadCheck {
    pub sessions: usize,
    pub expected_turns: u64,
    /// The first few session ids.
    pub first_sessions: Vec<String>,
    pub turns: Vec<TurnCheck>,
    pub completed_turns: usize,
    /// Turns recorded as aborted after a failed turn (never sent).
    pub aborted_turns: usize,
    /// Sessions that ended (the workload returned no next turn) within the budget.
    pub sessions_finished: usize,
}

/// One turn the workload produced and how it went.
#[derive(Debug, Serialize)]
pub struct TurnCheck {
    pub session: String,
    pub turn: u32,
    pub item_id: String,
    pub messages: usize,
    /// Roles of the messages, in order.
    pub roles: Vec<String>,
    pub tools: Vec<String>,
    pub sampling: serde_json::Value,
    pub delay_ms: u64,
    /// `completed`, `failed` or a plugin error.
    pub status: String,
    /// The simulator's answer (first characters).
    pub answer: Option<String>,
    /// The workload's answer to the outcome: `next turn`, `session over`.
    pub then: String,
}

/// A scorer's pass over synthetic items.
#[derive(Debug, Serialize)]
pub struct ScorerCheck {
    pub items: usize,
    pub verdicts: Vec<serde_json::Value>,
    pub report_score: Option<f64>,
    pub report: Option<serde_json::Value>,
}

/// Loads, inspects and exercises the component.
pub async fn check(opts: &CheckOptions) -> Result<CheckReport> {
    // The limits a run applies, so `plugin check` refuses what a run would.
    let limits = agentload_config::Limits::default();
    let bytes = agentload_plugin_host::read_component(
        &opts.path,
        agentload_config::Limits::bytes(limits.component_mib),
    )?;
    let engine = Arc::new(PluginEngine::new(None)?);
    let loaded = engine.load_bytes(&opts.path, &bytes)?;
    let api = ComponentApi::inspect(engine.engine(), &loaded.component);
    let mut report = CheckReport {
        path: opts.path.clone(),
        bytes: bytes.len(),
        digest: loaded.digest.clone(),
        world: api.world.map(World::wit_name),
        wit_versions: api
            .versions
            .iter()
            .map(|v| format!("{}@{v}", agentload_plugin_host::api::PACKAGE))
            .collect(),
        supported_versions: agentload_plugin_host::api::supported_list(
            api.world.unwrap_or(World::Workload),
        ),
        imports: api.imports.clone(),
        exports: api.exports.clone(),
        plugin: None,
        workload: None,
        scorer: None,
        warnings: Vec::new(),
    };
    let label = opts
        .path
        .file_stem()
        .map_or_else(|| "plugin".into(), |s| s.to_string_lossy().into_owned());
    let world = api.world.unwrap_or(World::Workload);
    // The version and world checks the host makes before every instantiation.
    if let Err(e) = api.require(&label, world) {
        return Err(CheckFailed {
            report: Box::new(report),
            error: e.into(),
        }
        .into());
    }
    let config = plugin_config(opts)?;
    let result = match world {
        World::Workload => run_workload(&engine, &loaded, opts, config, &mut report).await,
        World::Scorer => run_scorer(&engine, &loaded, opts, config, &mut report),
    };
    match result {
        Ok(()) => Ok(report),
        Err(error) => Err(CheckFailed {
            report: Box::new(report),
            error,
        }
        .into()),
    }
}

/// A check that stopped: what was learnt before, and why.
#[derive(Debug)]
pub struct CheckFailed {
    pub report: Box<CheckReport>,
    pub error: anyhow::Error,
}

impl std::fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for CheckFailed {}

fn plugin_config(opts: &CheckOptions) -> Result<PluginConfig> {
    let settings = opts.settings.clone().unwrap_or_else(|| "{}".into());
    let value: serde_json::Value =
        serde_json::from_str(&settings).context("--settings is not JSON")?;
    anyhow::ensure!(value.is_object(), "--settings must be a JSON object");
    let mut files = Vec::new();
    for (name, path) in &opts.data {
        let max =
            agentload_config::Limits::bytes(agentload_config::Limits::default().granted_file_mib);
        let bytes = agentload_fs::read::read_capped(path, max)
            .with_context(|| format!("cannot read --data {name}={}", path.display()))?;
        files.push(GrantedFile {
            name: name.clone(),
            file_name: path
                .file_name()
                .map_or_else(|| name.clone(), |n| n.to_string_lossy().into_owned()),
            bytes,
        });
    }
    Ok(PluginConfig {
        settings_json: settings,
        files,
        nonce: crate::run_state::draw_nonce(),
    })
}

async fn run_workload(
    engine: &Arc<PluginEngine>,
    loaded: &agentload_plugin_host::LoadedComponent,
    opts: &CheckOptions,
    config: PluginConfig,
    report: &mut CheckReport,
) -> Result<()> {
    let mut workload = WorkloadPlugin::new(engine.clone(), loaded, opts.limits).await?;
    let id = workload.identity();
    report.plugin = Some(Described {
        name: id.name.clone(),
        version: id.version.clone(),
        kind: id.kind.clone(),
    });
    let sessions = workload.configure(config).await?;
    let mut check = WorkloadCheck {
        sessions: sessions.len(),
        expected_turns: sessions.iter().map(|s| u64::from(s.expected_turns)).sum(),
        first_sessions: sessions.iter().take(5).map(|s| s.id.clone()).collect(),
        turns: Vec::new(),
        completed_turns: 0,
        aborted_turns: 0,
        sessions_finished: 0,
    };
    if sessions.is_empty() {
        report
            .warnings
            .push("configure returned no sessions".into());
    }
    let sim = agentload_sim::start(
        agentload_sim::SimConfig {
            time_scale: 0.0,
            responder: agentload_sim::ResponderConfig::Echo,
            ..Default::default()
        },
        Arc::new(agentload_sim::ApproxTokenCounter),
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await?;
    let sender = TurnSender {
        client: ChatClient::new(&ClientOptions {
            endpoint: sim.url(),
            api_key: None,
            turn_timeout: Duration::from_secs(60),
            max_connections: 1,
            max_response_bytes: 0,
            timestamps: Timestamps::default(),
            first_token: Default::default(),
            reuse_connections: true,
            ..Default::default()
        })?,
        body: BodyOptions {
            model: "agentload-sim".into(),
            stream: true,
            include_usage: true,
            extra: Default::default(),
            layout: Default::default(),
        },
        origin: Instant::now(),
        segment: 0,
    };
    let result = drive_budget(workload, &sessions, sender, opts.turns, &mut check).await;
    sim.shutdown().await;
    report.workload = Some(check);
    result
}

/// The check's schedule: sessions in issue order, one turn at a time,
/// until `budget` turns were sent.
struct Budget {
    budget: usize,
    stop: Stop,
    turns: Mutex<Vec<TurnCheck>>,
}

impl TurnHooks for Budget {
    fn answered(&self, r: &TurnRequest, record: &TurnRecord) {
        let mut turns = self.turns.lock().expect("turns lock");
        turns.push(TurnCheck {
            session: r.session_id.clone(),
            turn: r.turn,
            item_id: r.item_id.clone(),
            messages: r.messages.len(),
            roles: r
                .messages
                .iter()
                .map(|m| {
                    match m.role() {
                        Role::System => "system",
                        Role::User => "user",
                        Role::Assistant => "assistant",
                        Role::Tool => "tool",
                    }
                    .to_string()
                })
                .collect(),
            tools: tool_names(r.tools_json.as_deref()),
            sampling: sampling_json(&r.sampling),
            delay_ms: r.delay_ms,
            status: match record.status {
                TurnStatus::Completed => "completed".into(),
                _ => format!("failed: {}", record.error.as_deref().unwrap_or_default()),
            },
            answer: record
                .completion
                .as_ref()
                .map(|c| c.content.chars().take(60).collect()),
            then: String::new(),
        });
        if turns.len() >= self.budget {
            self.stop.stop(StopReason::Done("turn budget spent".into()));
        }
    }

    fn then(&self, next: Next<'_>) {
        if let Some(last) = self.turns.lock().expect("turns lock").last_mut() {
            last.then = match next {
                Next::Turn => "next turn".into(),
                Next::Over => "session over".into(),
                Next::Error(e) => format!("error: {e}"),
            };
        }
    }
}

async fn drive_budget(
    workload: WorkloadPlugin,
    sessions: &[agentload_plugin_host::SessionPlan],
    sender: TurnSender,
    budget: usize,
    check: &mut WorkloadCheck,
) -> Result<()> {
    let stop = Stop::new();
    let hooks = Arc::new(Budget {
        budget,
        stop: stop.clone(),
        turns: Mutex::default(),
    });
    let engine = Engine {
        workload: Instances::one(workload),
        sender,
        recorder: Recorder::memory(Console::silent()),
        stop: stop.clone(),
        hooks: Box::new(hooks.clone()),
        live: false,
        context: None,
        twins: None,
        failed_turn: Default::default(),
        closed: None,
    };
    let mut failure = None;
    for plan in sessions {
        if stop.stopped() || budget == 0 {
            break;
        }
        let task = agentload_engine::SessionTask::fresh(plan.clone(), None);
        let outcome = drive(&engine, task)
            .await
            .map_err(|e: DriveError| anyhow::anyhow!(e))?;
        match outcome.ended {
            SessionEnd::Finished => check.sessions_finished += 1,
            SessionEnd::PluginError => {
                failure = Some(anyhow::anyhow!(
                    "session `{}`: {}",
                    outcome.id,
                    outcome.error.unwrap_or_default()
                ));
                break;
            }
            SessionEnd::Failed
            | SessionEnd::Stopped
            | SessionEnd::Interrupted
            | SessionEnd::Diverged => {}
        }
    }
    let records = engine.recorder.snapshot();
    check.turns = std::mem::take(&mut *hooks.turns.lock().expect("turns lock"));
    check.completed_turns = records.iter().filter(|r| r.completed()).count();
    check.aborted_turns = records
        .iter()
        .filter(|r| r.status == TurnStatus::Aborted)
        .count();
    failure.map_or(Ok(()), Err)
}

fn tool_names(tools_json: Option<&str>) -> Vec<String> {
    let Some(text) = tools_json else {
        return Vec::new();
    };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Array(tools)) => tools
            .iter()
            .map(|t| {
                t["function"]["name"]
                    .as_str()
                    .unwrap_or("(unnamed)")
                    .to_string()
            })
            .collect(),
        _ => vec!["(tools-json is not a JSON array)".into()],
    }
}

fn sampling_json(s: &agentload_plugin_host::types::Sampling) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    let mut put = |k: &str, v: Option<serde_json::Value>| {
        if let Some(v) = v {
            m.insert(k.into(), v);
        }
    };
    put("temperature", s.temperature.map(Into::into));
    put("top_p", s.top_p.map(Into::into));
    put("top_k", s.top_k.map(Into::into));
    put("seed", s.seed.map(Into::into));
    put(
        "max_completion_tokens",
        s.max_completion_tokens.map(Into::into),
    );
    put(
        "tool_choice",
        s.tool_choice_json
            .as_deref()
            .map(|t| serde_json::from_str(t).unwrap_or_else(|_| t.into())),
    );
    serde_json::Value::Object(m)
}

fn run_scorer(
    engine: &Arc<PluginEngine>,
    loaded: &agentload_plugin_host::LoadedComponent,
    opts: &CheckOptions,
    config: PluginConfig,
    report: &mut CheckReport,
) -> Result<()> {
    let scorer =
        tokio::task::block_in_place(|| ScorerPlugin::new(engine.clone(), loaded, opts.limits))?;
    let id = scorer.identity();
    report.plugin = Some(Described {
        name: id.name.clone(),
        version: id.version.clone(),
        kind: id.kind.clone(),
    });
    let expected = opts.expected.clone().unwrap_or_else(|| "{}".into());
    let item = |n: u32, completion: Option<Completion>| ScoredItem {
        item_id: format!("check:{n}"),
        session_id: "check".into(),
        turn: n,
        expected_json: expected.clone(),
        completion,
    };
    let items = vec![
        item(
            1,
            Some(Completion {
                content: "Hello from agentload plugin check.".into(),
                reasoning_content: String::new(),
                tool_calls: Vec::new(),
                finish_reason: Some("stop".into()),
                usage: None,
            }),
        ),
        item(
            2,
            Some(Completion {
                content: String::new(),
                reasoning_content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call-1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command": "ls -la"}"#.into(),
                }],
                finish_reason: Some("tool_calls".into()),
                usage: None,
            }),
        ),
        item(3, None),
    ];
    let mut check = ScorerCheck {
        items: items.len(),
        verdicts: Vec::new(),
        report_score: None,
        report: None,
    };
    match tokio::task::block_in_place(|| scorer.score(&config, &items)) {
        Ok(scored) => {
            check.verdicts = scored
                .verdicts
                .iter()
                .map(|v| {
                    serde_json::json!({
                        "item_id": v.item_id,
                        "score": v.score,
                        "excluded": v.excluded,
                        "detail": serde_json::from_str::<serde_json::Value>(&v.detail_json)
                            .unwrap_or_else(|_| v.detail_json.clone().into()),
                    })
                })
                .collect();
            check.report_score = Some(scored.report.score);
            check.report = Some(
                serde_json::from_str(&scored.report.report_json)
                    .unwrap_or_else(|_| scored.report.report_json.clone().into()),
            );
        }
        // A typed refusal of made-up items is not a broken scorer.
        Err(e @ agentload_plugin_host::PluginFailure::Reported { call, .. }) if call != "configure" => {
            report.warnings.push(format!(
                "the synthetic items were refused (pass their expected data with --expected JSON): {e}"
            ))
        }
        Err(e) => {
            report.scorer = Some(check);
            return Err(e.into());
        }
    }
    report.scorer = Some(check);
    Ok(())
}

/// The report as text.
pub fn render(r: &CheckReport) -> String {
    let mut s = String::new();
    let mut line = |l: String| {
        s.push_str(&l);
        s.push('\n');
    };
    line(format!(
        "component  {} ({} bytes, {})",
        r.path.display(),
        r.bytes,
        r.digest
    ));
    line(format!("world      {}", r.world.unwrap_or("(none)")));
    line(format!(
        "wit        {} (this agentload supports {})",
        if r.wit_versions.is_empty() {
            "(no agentload:plugin interface)".to_string()
        } else {
            r.wit_versions.join(", ")
        },
        r.supported_versions
    ));
    line(format!("imports    {}", r.imports.join(", ")));
    line(format!("exports    {}", r.exports.join(", ")));
    if let Some(p) = &r.plugin {
        line(format!("plugin     {} {} ({})", p.name, p.version, p.kind));
    }
    if let Some(w) = &r.workload {
        line(format!(
            "sessions   {} ({} expected turns; first: {})",
            w.sessions,
            w.expected_turns,
            w.first_sessions.join(", ")
        ));
        for t in &w.turns {
            line(format!(
                "turn       {} #{} item {}: {} messages [{}], tools [{}], sampling {}, delay {} ms -> {}{}; {}",
                t.session,
                t.turn,
                t.item_id,
                t.messages,
                t.roles.join(", "),
                t.tools.join(", "),
                t.sampling,
                t.delay_ms,
                t.status,
                t.answer
                    .as_deref()
                    .map(|a| format!(" ({a:?})"))
                    .unwrap_or_default(),
                t.then
            ));
        }
        line(format!(
            "ran        {} turns: {} completed, {} aborted after a failure, {} sessions finished",
            w.turns.len(),
            w.completed_turns,
            w.aborted_turns,
            w.sessions_finished
        ));
    }
    if let Some(c) = &r.scorer {
        for v in &c.verdicts {
            line(format!("verdict    {v}"));
        }
        if let Some(score) = c.report_score {
            line(format!("report     score {score:.4}"));
        }
    }
    for w in &r.warnings {
        line(format!("warning    {w}"));
    }
    s
}

/// Parses `NAME=FILE`.
pub fn parse_grant(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => {
            Ok((name.to_string(), Path::new(file).to_path_buf()))
        }
        _ => Err(format!("expected NAME=FILE, got `{s}`")),
    }
}
