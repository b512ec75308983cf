//! Host + plugin time to produce each request of the edge replay: the
//! workload's `next-turn` call, and the request body's JSON joined into one
//! buffer ([`request_body`]) and as the slices the engine sends
//! ([`SessionBodies`]: the messages' shared JSON between a head and a tail),
//! side by side in one pass; at the dataset's peak input length too. And
//! component load times.

use super::Row;
use agentload_config::table_json;
use agentload_engine::{request_body, BodyOptions, SessionBodies};
use agentload_plugin_host::types::{GrantedFile, PluginConfig, TurnOutcome};
use agentload_plugin_host::{block_on, Limits, LoadedComponent, PluginEngine, WorkloadPlugin};
use anyhow::Result;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// How many fresh instances `configure` is timed in.
const CONFIGURES: usize = 5;

/// One turn's times, ms, and its body's size.
struct Turn {
    next_turn: f64,
    whole: f64,
    session: f64,
    bytes: usize,
}

/// `f`'s result and how long it took, ms.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let out = f();
    (out, t.elapsed().as_secs_f64() * 1e3)
}

/// Times every turn of every conversation of the edge dataset. The two body
/// writers take turns going first (so neither always finds the other's
/// caches warm), and their bodies must be byte for byte the same.
pub fn requests(data_dir: &Path) -> Result<Vec<Row>> {
    let EdgeReplay {
        engine,
        component,
        config,
    } = EdgeReplay::load(data_dir)?;
    // `configure` (parsing the dataset, on start-up's path) in fresh instances; the last
    // one serves the requests.
    let mut configures = Vec::with_capacity(CONFIGURES);
    let mut configured = None;
    for _ in 0..CONFIGURES {
        let mut workload = block_on(WorkloadPlugin::new(
            engine.clone(),
            &component,
            Limits::default(),
        ))?;
        let (plans, ms) = timed(|| block_on(workload.configure(config.clone())));
        configures.push(ms);
        configured = Some((workload, plans?));
    }
    let (mut workload, plans) = configured.expect("CONFIGURES is at least 1");
    let opts = body_options();
    let mut turns: Vec<Turn> = Vec::new();
    for plan in &plans {
        let mut bodies = SessionBodies::default();
        let (first, mut next_turn) = timed(|| block_on(workload.start_session(&plan.id)));
        let mut next = Some(first?);
        while let Some(req) = next {
            let ((whole, whole_ms), (session, session_ms)) = if turns.len().is_multiple_of(2) {
                let whole = timed(|| request_body(&req, &opts));
                (whole, timed(|| bodies.body(&req, &opts)))
            } else {
                let session = timed(|| bodies.body(&req, &opts));
                (timed(|| request_body(&req, &opts)), session)
            };
            let whole = whole.map_err(anyhow::Error::msg)?;
            anyhow::ensure!(
                session.map_err(anyhow::Error::msg)?.to_bytes() == whole,
                "session {} turn {}: the session's body differs from the whole one",
                plan.id,
                req.turn
            );
            turns.push(Turn {
                next_turn,
                whole: whole_ms,
                session: session_ms,
                bytes: whole.len(),
            });
            let (n, ms) = timed(|| block_on(workload.next_turn(&req, &TurnOutcome::Aborted)));
            (next, next_turn) = (n?.next, ms);
        }
    }
    let n = turns.len();
    let mut rows = vec![
        Row::new(
            "build",
            format!("workload configure (edge dataset), median of {CONFIGURES}"),
            super::percentile(&mut configures.clone(), 50.0),
            "ms",
        ),
        Row::new(
            "build",
            format!("workload configure (edge dataset), min of {CONFIGURES}"),
            configures.iter().copied().fold(f64::INFINITY, f64::min),
            "ms",
        ),
    ];
    let mut series = |what: &str, of: fn(&Turn) -> f64| {
        let mut v: Vec<f64> = turns.iter().map(of).collect();
        let mean = v.iter().sum::<f64>() / n.max(1) as f64;
        rows.push(Row::new(
            "build",
            format!("{what}, mean over {n} turns"),
            mean,
            "ms",
        ));
        let p99 = super::percentile(&mut v, 99.0);
        rows.push(Row::new("build", format!("{what}, p99"), p99, "ms"));
        mean
    };
    series("workload next-turn", |t| t.next_turn);
    let whole = series("body joined in one buffer", |t| t.whole);
    let session = series("body as shared slices (sent)", |t| t.session);
    let peak = turns.iter().max_by_key(|t| t.bytes);
    rows.extend([
        Row::new("build", "slices / one buffer, mean", session / whole, "x"),
        Row::new(
            "build",
            "request at the peak input (next-turn + session body)",
            peak.map_or(0.0, |t| t.next_turn + t.session),
            "ms",
        ),
        Row::new(
            "build",
            "peak request body",
            peak.map_or(0, |t| t.bytes) as f64 / 1024.0,
            "KiB",
        ),
    ]);
    Ok(rows)
}

/// The edge replay's workload, ready to configure: the compiled `coding-replay` component
/// and its configuration over the edge dataset.
pub struct EdgeReplay {
    pub engine: Arc<PluginEngine>,
    pub component: LoadedComponent,
    pub config: PluginConfig,
}

impl EdgeReplay {
    /// Loads the component and reads the dataset from `data_dir`.
    pub fn load(data_dir: &Path) -> Result<Self> {
        let engine = Arc::new(PluginEngine::new(agentload_config::cache_dir())?);
        let path = agentload_config::plugin_path::resolve("coding-replay", None)
            .map_err(anyhow::Error::msg)?;
        let max = Limits::bytes(Limits::default().component_mib);
        let component = engine.load(&path, max)?;
        let data = agentload_config::data::read(
            data_dir,
            "agentic_coding_2.5h.jsonl",
            Limits::bytes(Limits::default().granted_file_mib),
        )?;
        let config = PluginConfig {
            settings_json: table_json(&toml::Table::new()),
            files: vec![GrantedFile {
                name: "trajectories".into(),
                file_name: "agentic_coding_2.5h.jsonl".into(),
                bytes: data.bytes,
            }],
            nonce: crate::run_state::draw_nonce(),
        };
        Ok(Self {
            engine,
            component,
            config,
        })
    }

    /// Every session's request bodies in turn order (each answer taken as aborted, so the
    /// replay goes on as recorded).
    pub fn sessions(&self) -> Result<Vec<Vec<Vec<u8>>>> {
        let mut workload = block_on(WorkloadPlugin::new(
            self.engine.clone(),
            &self.component,
            Limits::default(),
        ))?;
        let plans = block_on(workload.configure(self.config.clone()))?;
        let opts = body_options();
        let mut sessions = Vec::with_capacity(plans.len());
        for plan in &plans {
            let mut bodies = Vec::new();
            let mut next = Some(block_on(workload.start_session(&plan.id))?);
            while let Some(req) = next {
                bodies.push(request_body(&req, &opts).map_err(anyhow::Error::msg)?);
                next = block_on(workload.next_turn(&req, &TurnOutcome::Aborted))?.next;
            }
            sessions.push(bodies);
        }
        Ok(sessions)
    }
}

/// The body options the bench's requests are built with.
fn body_options() -> BodyOptions {
    BodyOptions {
        model: "bench".into(),
        stream: true,
        include_usage: true,
        extra: Default::default(),
        layout: Default::default(),
    }
}

/// Component load time: compiling (empty cache) vs from the cache.
pub fn loads() -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let max = Limits::bytes(Limits::default().component_mib);
    for name in ["coding-replay", "shell-iou", "bfcl-single", "bfcl-ast"] {
        let path =
            agentload_config::plugin_path::resolve(name, None).map_err(anyhow::Error::msg)?;
        let cache = std::env::temp_dir().join(format!(
            "agentload-bench-cache-{}-{name}",
            std::process::id()
        ));
        std::fs::remove_dir_all(&cache).ok();
        std::fs::create_dir_all(&cache)?;
        let engine = PluginEngine::new(Some(cache.clone()))?;
        let t = Instant::now();
        let cold = engine.load(&path, max)?;
        let cold_ms = t.elapsed().as_secs_f64() * 1e3;
        let engine = PluginEngine::new(Some(cache.clone()))?;
        let t = Instant::now();
        let warm = engine.load(&path, max)?;
        let warm_ms = t.elapsed().as_secs_f64() * 1e3;
        anyhow::ensure!(
            !cold.from_cache && warm.from_cache,
            "the compile cache was not used"
        );
        std::fs::remove_dir_all(&cache).ok();
        rows.push(Row::new(
            "load",
            format!("{name} compile (cold)"),
            cold_ms,
            "ms",
        ));
        rows.push(Row::new(
            "load",
            format!("{name} from cache"),
            warm_ms,
            "ms",
        ));
    }
    Ok(rows)
}
