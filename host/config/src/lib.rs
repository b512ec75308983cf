//! What a run is and what it is allowed: the run configuration (TOML;
//! unknown keys are errors that name the key), the benchmark [`rules`] a
//! submission must follow, the [`seal`] (the official plugins' and data
//! files' digests), confined [`data`] grants, and where plugins and caches
//! are found ([`plugin_path`], [`cache_dir`]).
//!
//! It knows nothing of HTTP, wasmtime or results: every crate above it may
//! read a config.
#![forbid(unsafe_code)]

mod arrivals;
pub mod data;
mod limits;
pub mod located;
mod paths;
pub mod plugin_path;
mod reference;
pub mod rules;
pub mod schema;
pub mod seal;
pub mod swe_bench;
mod sweep;
mod telemetry;
pub mod tools;
mod transport;

pub use arrivals::{ArrivalUnit, Arrivals, Process, Ramp, RampOf, RampShape};
pub use limits::Limits;
pub use located::Location;
pub use paths::cache_dir;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
pub use sweep::{DelayDistribution, Normalize, SloTier, SweepConfig, ToolDelayMode};
pub use telemetry::{NvmlConfig, ScrapeTarget, TelemetryConfig};
pub use transport::{Headers, ProxySetting, TlsConfig, TlsRoots, REDACTED};

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Run name, used in reports.
    pub name: String,
    /// Config version string.
    #[serde(default = "default_version")]
    pub version: String,
    /// Data directory (overrides `AGENTLOAD_DATA_DIR`).
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
    /// `development` (any plugin; results marked unsealed when a plugin is
    /// not official) or `submission` (only the plugins in
    /// `plugins/official.lock`).
    #[serde(default)]
    pub mode: RunKind,
    /// The benchmark rules the run is checked against; a submission run
    /// must name them, a development run lists what breaks them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "rules::schema")]
    pub rules: Option<String>,
    /// Where results go unless `--out` says otherwise.
    #[serde(default = "default_report_dir")]
    pub report_dir: PathBuf,
    pub model: ModelConfig,
    pub endpoint: EndpointConfig,
    #[serde(default)]
    pub load: LoadConfig,
    #[serde(default)]
    pub plugins: PluginsConfig,
    #[serde(default)]
    pub output: OutputConfig,
    /// The performance phase.
    pub performance: Option<PhaseConfig>,
    /// The accuracy phase (run after the performance phase, at concurrency
    /// 1), or the SWE-bench phase (`workload = "swe-bench"`).
    pub accuracy: Option<PhaseConfig>,
    /// Run the performance phase as a concurrency sweep instead of one pass.
    pub sweep: Option<SweepConfig>,
    /// Server and accelerator telemetry sampled during every phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetryConfig>,
    /// The service level a session must meet to count toward session
    /// goodput (`session_metrics.jsonl`, `agentload.sessions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_slo: Option<SessionSlo>,
    /// The tool sandbox of closed-loop replay (`history = "closed"` in a
    /// phase's settings): needed by such a phase, refused without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<tools::ToolsConfig>,
}

/// A session meets its SLO when it finished and at least `min_turn_share`
/// of its completed turns met every target given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionSlo {
    /// Time to first token, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// Time per output token after the first, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    /// Share of the completed turns that must meet the targets (1: all).
    #[serde(default = "all_turns")]
    pub min_turn_share: f64,
}

fn all_turns() -> f64 {
    1.0
}

/// Development or submission run.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// Any plugin and config; a plugin that is not official marks the
    /// results unsealed, a rule broken is listed as not compliant.
    #[default]
    Development,
    /// Only the official plugins and data, and the rules checked before
    /// anything runs.
    Submission,
}

/// The served model.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Sent as `model`.
    pub name: String,
    /// Tokenizer for local counts: `qwen3.6` (built in), a model's Hugging
    /// Face `tokenizer.json` (a file, looked up as `chat_template` is; its
    /// chat template is `chat_template`, else the `chat_template` of the
    /// `tokenizer_config.json` beside it), or `none`.
    #[serde(default = "default_tokenizer")]
    pub tokenizer: String,
    /// The model's Jinja chat template for local counts (a file; relative
    /// paths are looked up in the working directory, then in the data
    /// directory). Default: the tokenizer's own model template (Qwen3.6's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<PathBuf>,
    /// Where ISL, OSL, TPOT and `tps` in `result_summary.json` come from:
    /// `local` (the tokenizer and chat template, as the reference counts;
    /// the default) or `server` (the server's `usage`, as AA-AgentPerf
    /// prefers). The other source is reported beside them. Default: `local`
    /// with a tokenizer, `server` with `tokenizer = "none"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_counts: Option<TokenSource>,
    /// The served context window in tokens (llama.cpp's per-slot `n_ctx`,
    /// vLLM's `max_model_len`). Live-reply and closed-loop replay check
    /// each request against it before sending, counting with `tokenizer`
    /// (closed-loop without one: by a lower bound from the server's
    /// `usage`); recorded replay sends every recorded request, as the
    /// reference does. Default: what the server reports at preflight
    /// (`GET /props`, else `GET /v1/models`), recorded in
    /// `run_manifest.json` with its source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}

impl ModelConfig {
    /// The configured source of the reference-shaped token counts.
    pub fn token_source(&self) -> TokenSource {
        self.token_counts.unwrap_or(if self.tokenizer == "none" {
            TokenSource::Server
        } else {
            TokenSource::Local
        })
    }
}

/// The source of token counts.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// agentload's own count: the tokenizer over the chat template's render.
    #[default]
    Local,
    /// The server's `usage` (`prompt_tokens`, `completion_tokens`).
    Server,
}

impl TokenSource {
    /// `local` or `server`.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenSource::Local => "local",
            TokenSource::Server => "server",
        }
    }

    /// The other source.
    pub fn other(self) -> Self {
        match self {
            TokenSource::Local => TokenSource::Server,
            TokenSource::Server => TokenSource::Local,
        }
    }
}

/// The server under test.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    /// Base URL (`http://host:port`; a trailing `/v1` is accepted);
    /// `--endpoint` overrides it.
    pub url: String,
    /// Refused: a key in a config file would be copied into the results.
    /// The key comes from `AGENTLOAD_API_KEY` (or `OPENAI_API_KEY`).
    #[serde(default, skip_serializing)]
    #[schemars(schema_with = "schema::refused")]
    pub api_key: Option<String>,
    /// Check the endpoint (`GET /v1/models`) before the first measured
    /// request, so a wrong URL stops the run at once.
    #[serde(default = "yes")]
    pub preflight: bool,
    /// Ask for each answer as a stream of server-sent events (`stream:
    /// true`). `false`: one JSON answer, whose first token counts at its
    /// last byte (TTFT equals the latency).
    #[serde(default = "yes")]
    pub stream: bool,
    /// Ask for `usage` in the stream (`stream_options.include_usage`).
    #[serde(default = "yes")]
    pub include_usage: bool,
    /// Extra top-level request fields, e.g. `cache_prompt = false`.
    #[serde(default)]
    #[schemars(with = "schema::Table")]
    pub extra_body: toml::Table,
    /// A response body longer than this many bytes fails its turn, naming the
    /// cap (default 256 MiB, far above any real answer; 0: no cap).
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: u64,
    /// What stamps a response's bytes: `arrival` (default), when the kernel received them,
    /// so a busy harness does not add its own wait to the timings; `read`, when agentload's
    /// read returned them, as a client without kernel stamps sees it.
    #[serde(default)]
    pub timestamps: agentload_wire::Timestamps,
    /// What stops the TTFT clock: `reference` (default: non-empty content or
    /// reasoning, or any tool-call delta, as the reference's client) or
    /// `rules` (the Endpoints Rules' first fragment with text in any
    /// category: a tool-call delta counts only with a name or arguments).
    #[serde(default)]
    pub ttft_trigger: TtftTrigger,
    /// Send more than one request on a connection (HTTP/1.1 keep-alive, the
    /// default). `false`: each request goes out on a connection of its own,
    /// with `connection: close`, for a server or proxy that sends answers
    /// nobody asked for (an answer out of step fails its turn either way).
    #[serde(default = "yes")]
    pub reuse_connections: bool,
    /// TLS for an `https://` URL: roots, a CA file, a client certificate,
    /// the server name, `insecure` (see [`TlsConfig`]).
    #[serde(default, skip_serializing_if = "TlsConfig::is_default")]
    pub tls: TlsConfig,
    /// A proxy: `"none"` (default), `"env"` or `http://host:port` (see
    /// [`ProxySetting`]).
    #[serde(default, skip_serializing_if = "ProxySetting::is_none")]
    pub proxy: ProxySetting,
    /// Headers every request carries; `"${VAR}"` values come from the
    /// environment (see [`Headers`]).
    #[serde(default, skip_serializing_if = "Headers::is_empty")]
    pub headers: Headers,
    /// The header carrying each request's session id, for session affinity
    /// (default `X-Session-ID`; SGLang's router reads `X-SMG-Routing-Key`);
    /// `""` sends none.
    #[serde(
        default = "transport::default_session_header",
        skip_serializing_if = "transport::is_default_session_header"
    )]
    pub session_header: String,
    /// Whose client the requests look like: `reference` (default: the
    /// MLPerf reference's body key order, the session header) or
    /// `agentperf-local` (Artificial Analysis's agentperf-local 0.3.4: its
    /// body key order and headers, its preflight of the server (served
    /// context, Ollama, the `ignore_eos` probe) and its check of every
    /// answer; docs/aa-replays.md).
    #[serde(default)]
    pub client: ClientKind,
}

/// `endpoint.client`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum ClientKind {
    /// The MLPerf reference's body key order and agentload's headers.
    #[default]
    #[serde(rename = "reference")]
    Reference,
    /// Artificial Analysis's agentperf-local 0.3.4: its body key order and
    /// headers, its preflight and its check of every answer.
    #[serde(rename = "agentperf-local")]
    AgentperfLocal,
}

/// `endpoint.ttft_trigger`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TtftTrigger {
    /// Non-empty content or reasoning, or any tool-call delta (the
    /// reference client's trigger).
    #[default]
    Reference,
    /// The Endpoints Rules' first fragment with text in any category: a
    /// tool-call delta counts only once it carries a name or arguments.
    Rules,
}

fn default_max_response_bytes() -> u64 {
    256 << 20
}

/// How requests are scheduled.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LoadConfig {
    /// Sessions in flight at once.
    pub concurrency: usize,
    /// A turn unanswered after this many seconds fails.
    pub turn_timeout_s: f64,
    /// The performance phase stops issuing after this long.
    pub max_duration_ms: u64,
    /// After SIGINT/SIGTERM, in-flight turns may finish for this long
    /// before they are cut and recorded as interrupted (a second signal
    /// cuts them at once).
    pub interrupt_grace_s: f64,
    /// Open-loop arrivals: the performance phase's sessions (or requests)
    /// start on a seeded schedule of their own instead of `concurrency` at
    /// a time (see `docs/load-shapes.md`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<Arrivals>,
    /// A ramp of the rate or the concurrency at the start of the
    /// performance phase (and of each sweep level); the measured window
    /// starts when it ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp: Option<Ramp>,
    /// What follows a failed turn in its session: `abort_session` (default;
    /// the MLPerf reference's rule: the session's remaining turns are
    /// recorded as aborted, never sent) or `continue` (agentperf-local's
    /// rule: the failure is recorded and the session's next turn is sent).
    pub failed_turn: FailedTurn,
}

/// `load.failed_turn`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FailedTurn {
    /// The session's remaining turns are recorded as aborted, never sent
    /// (the MLPerf reference's rule).
    #[default]
    AbortSession,
    /// The failure is recorded and the session's next turn is sent
    /// (agentperf-local's rule).
    Continue,
}

impl Default for LoadConfig {
    fn default() -> Self {
        Self {
            concurrency: 1,
            turn_timeout_s: 600.0,
            max_duration_ms: 14_400_000,
            interrupt_grace_s: 30.0,
            arrivals: None,
            ramp: None,
            failed_turn: FailedTurn::AbortSession,
        }
    }
}

/// How result files are written.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct OutputConfig {
    /// `write` (each turn record reaches the kernel before the session's
    /// next request; survives a crash or `kill -9`) or `sync` (each record
    /// is also `fdatasync`ed; survives a power cut).
    pub durability: Durability,
}

/// Where plugins are found and how they are limited.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginsConfig {
    /// Directory of `<name>.wasm` components (overrides the default search).
    #[serde(default)]
    pub dir: Option<PathBuf>,
    #[serde(default)]
    pub limits: Limits,
    /// The most scorer instances one scoring pass runs side by side, each
    /// given whole sessions (absent or 0: one per core the host may use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scorer_instances: Option<usize>,
    /// Workload instances a phase's sessions are spread over, each session
    /// bound to one (absent or 0: one). Each instance holds its own parsed
    /// copy of the workload's data; calls never block a runtime worker, so
    /// one is enough unless guest calls themselves saturate a core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_instances: Option<usize>,
}

/// One phase: a workload plugin, its data, and the scorer of its turns.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PhaseConfig {
    /// Workload plugin: a name (`coding-replay`) or a path to a `.wasm`.
    pub workload: String,
    /// Scorer plugin, name or path.
    pub scorer: Option<String>,
    /// File the scorer's report is written to, in the output directory.
    #[serde(default = "default_report_file")]
    pub report_file: String,
    /// Files granted to the workload: logical name -> file in the data dir.
    /// A path ending with `/` grants a folder: every file under it, named
    /// `<name>/<path in the folder>`. `{arch}` in a path is the machine's
    /// architecture as AA's replay manifests name it (`x86_64`, or `arm64`
    /// on aarch64).
    #[serde(default)]
    pub data: BTreeMap<String, String>,
    /// The workload's own settings, passed to it as JSON.
    #[serde(default)]
    #[schemars(with = "schema::Table")]
    pub settings: toml::Table,
    /// The scorer's settings.
    #[serde(default)]
    #[schemars(with = "schema::Table")]
    pub scorer_settings: toml::Table,
    /// Files granted to the scorer: logical name -> file in the data dir
    /// (a scorer that re-executes recorded calls needs the dataset too).
    #[serde(default)]
    pub scorer_data: BTreeMap<String, String>,
}

impl PhaseConfig {
    /// Whether the workload replays live replies: the replay workloads'
    /// `history = "live"` setting, the one plugin setting the host reads
    /// (the engine then records each reply's review, and the run is
    /// labelled non-official).
    pub fn live_history(&self) -> bool {
        self.settings.get("history").and_then(toml::Value::as_str) == Some("live")
    }

    /// Whether the workload runs closed-loop (`history = "closed"`): the
    /// host sends the workload's first request, then owns the conversation,
    /// answering each reply's tool calls from the sandbox (`[tools]`). Never
    /// official.
    pub fn closed_history(&self) -> bool {
        self.settings.get("history").and_then(toml::Value::as_str) == Some("closed")
    }

    /// The settings the workload plugin is given: a closed-loop phase's
    /// workload runs in its default, recorded mode (it makes the first
    /// request and, step by step, the recording the closed turns are
    /// compared with): `history` is not passed on (the AA replay has no such
    /// setting).
    pub fn plugin_settings(&self) -> toml::Table {
        let mut settings = self.settings.clone();
        if self.closed_history() {
            settings.remove("history");
        }
        settings
    }
}

fn default_version() -> String {
    "1.0".into()
}
fn default_report_dir() -> PathBuf {
    PathBuf::from("results")
}
fn default_tokenizer() -> String {
    "qwen3.6".into()
}
fn default_report_file() -> String {
    "scores.json".into()
}
fn yes() -> bool {
    true
}

/// A config that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not TOML, or not a run config's shape (an unknown key, a value of
    /// the wrong type): where, which key, what, and the line quoted.
    #[error("config {}: {}{message}{snippet}", place(path, *at), quoted(key.as_deref()))]
    Parse {
        path: PathBuf,
        at: Option<Location>,
        key: Option<String>,
        message: String,
        snippet: String,
    },
    /// A value the config's checks refuse, by its key's path.
    #[error("config {}: `{key}`: {message}", place(path, *at))]
    Invalid {
        path: PathBuf,
        at: Option<Location>,
        key: String,
        message: String,
    },
}

/// `FILE:LINE:COLUMN`, or `FILE` alone.
fn place(path: &Path, at: Option<Location>) -> String {
    match at {
        Some(at) => format!("{}:{at}", path.display()),
        None => path.display().to_string(),
    }
}

fn quoted(key: Option<&str>) -> String {
    key.map(|k| format!("`{k}`: ")).unwrap_or_default()
}

impl ConfigError {
    /// The line and column of the key or value the error is about.
    pub fn location(&self) -> Option<Location> {
        match self {
            Self::Read { .. } => None,
            Self::Parse { at, .. } | Self::Invalid { at, .. } => *at,
        }
    }

    /// The dotted path of the key the error is about (`load.concurrency`).
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::Read { .. } => None,
            Self::Parse { key, .. } => key.as_deref(),
            Self::Invalid { key, .. } => Some(key),
        }
    }

    /// The parser's error, placed in `text`.
    fn parse(path: &Path, text: &str, e: &toml::de::Error) -> Self {
        let span = e.span();
        let at = span.as_ref().map(|s| located::position(text, s.start));
        let snippet = match (&span, at) {
            (Some(span), Some(at)) => {
                let line = text.lines().nth(at.line - 1).unwrap_or("");
                let width = text[span.clone()]
                    .lines()
                    .next()
                    .map_or(1, |t| t.chars().count().max(1));
                let gutter = " ".repeat(at.line.to_string().len());
                shorten_lines(
                    &format!(
                        "\n{gutter} |\n{} | {line}\n{gutter} | {}{}",
                        at.line,
                        " ".repeat(at.column - 1),
                        "^".repeat(
                            width.min(line.chars().count().saturating_sub(at.column - 1).max(1))
                        )
                    ),
                    240,
                )
            }
            _ => String::new(),
        };
        Self::Parse {
            path: path.to_path_buf(),
            at,
            key: span.and_then(|s| located::key_at(text, s.start)),
            message: shorten_lines(e.message().trim_end(), 240),
            snippet,
        }
    }

    /// A check's error, placed at its key in `text` (or the table above it).
    fn placed(mut self, text: &str) -> Self {
        if let Self::Invalid { at, key, .. } = &mut self {
            *at = located::find_key(text, key);
        }
        self
    }
}

impl RunConfig {
    /// Reads and checks a config file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text =
            agentload_fs::read::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        Self::parse(path, &text)
    }

    /// Parses config text; `path` is used in messages, which name the key
    /// and its line.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let config: RunConfig =
            toml::from_str(text).map_err(|e| ConfigError::parse(path, text, &e))?;
        config.check(path).map_err(|e| e.placed(text))?;
        Ok(config)
    }

    fn check(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: &str| ConfigError::Invalid {
            path: path.to_path_buf(),
            at: None,
            key: key.to_string(),
            message: message.to_string(),
        };
        // A table's own check names its key and says what is wrong.
        let keyed = |(key, message): (String, String)| invalid(&key, &message);
        if self.load.concurrency == 0 {
            return Err(invalid("load.concurrency", "must be at least 1"));
        }
        // The client turns it into a `Duration` (found by the config fuzz
        // target: `inf` loaded, then panicked there).
        let timeout = self.load.turn_timeout_s;
        if !(timeout > 0.0 && std::time::Duration::try_from_secs_f64(timeout).is_ok()) {
            return Err(invalid(
                "load.turn_timeout_s",
                "must be a positive, finite number of seconds",
            ));
        }
        if let Some((key, _)) = self
            .plugins
            .limits
            .entries()
            .into_iter()
            .find(|(_, v)| *v == 0)
        {
            return Err(invalid(
                &format!("plugins.limits.{key}"),
                "must be positive",
            ));
        }
        // config.toml is written back into the results: a value TOML cannot
        // hold (its integers are signed 64-bit) would make it unreadable.
        if let Some((key, _)) = self
            .plugins
            .limits
            .entries()
            .into_iter()
            .find(|(_, v)| *v > i64::MAX as u64)
        {
            return Err(invalid(
                &format!("plugins.limits.{key}"),
                &format!("must be at most {}", i64::MAX),
            ));
        }
        if self.load.interrupt_grace_s.is_nan() || self.load.interrupt_grace_s < 0.0 {
            return Err(invalid("load.interrupt_grace_s", "must be 0 or more"));
        }
        if self.endpoint.api_key.is_some() {
            return Err(invalid(
                "endpoint.api_key",
                "an API key does not belong in a config file (it would be copied into the \
                 results); set AGENTLOAD_API_KEY (or OPENAI_API_KEY) instead",
            ));
        }
        if let Err(e) = base_url(&self.endpoint.url) {
            return Err(invalid("endpoint.url", &e));
        }
        self.endpoint.tls.check().map_err(keyed)?;
        self.endpoint.proxy.check().map_err(keyed)?;
        self.endpoint.headers.check().map_err(keyed)?;
        let session = &self.endpoint.session_header;
        if session.contains(|c: char| !(c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)))
        {
            return Err(invalid(
                "endpoint.session_header",
                "must be a header name (or \"\" for none)",
            ));
        }
        if self.mode == RunKind::Submission && self.endpoint.tls.insecure {
            return Err(invalid(
                "endpoint.tls.insecure",
                "a submission run verifies the server's certificate; drop insecure (trust a \
                 private CA with endpoint.tls.ca_file)",
            ));
        }
        if let Some(phase) = self
            .accuracy
            .as_ref()
            .filter(|p| swe_bench::SweBench::selected_by(p))
        {
            swe_bench::SweBench::from_phase(phase).map_err(keyed)?;
        }
        for (key, phase) in [
            ("performance", &self.performance),
            ("accuracy", &self.accuracy),
        ] {
            if let Some(phase) = phase {
                if let Some(message) = report_file_refusal(&phase.report_file) {
                    return Err(invalid(&format!("{key}.report_file"), &message));
                }
            }
        }
        if let Some(rules) = &self.rules {
            if crate::rules::find(rules).is_none() {
                return Err(invalid(
                    "rules",
                    &format!(
                        "unknown ruleset `{rules}` (known: {})",
                        crate::rules::known()
                    ),
                ));
            }
        }
        if let Some(sweep) = &self.sweep {
            sweep.check().map_err(keyed)?;
            if self.performance.is_none() {
                return Err(invalid("sweep", "needs a [performance] phase to sweep"));
            }
        }
        let rate_sweep = self.sweep.as_ref().is_some_and(|s| !s.rates.is_empty());
        if let Some(arrivals) = &self.load.arrivals {
            arrivals.check(rate_sweep).map_err(keyed)?;
            if self.sweep.is_some() && !rate_sweep {
                return Err(invalid(
                    "load.arrivals",
                    "a concurrency sweep (sweep.levels) is closed-loop: sweep open-loop \
                     arrivals with sweep.rates",
                ));
            }
            if rate_sweep && arrivals.process == Process::Trace {
                return Err(invalid(
                    "load.arrivals.process",
                    "a trace brings its own times: it cannot be swept over rates",
                ));
            }
            if rate_sweep && arrivals.count.is_some() {
                return Err(invalid(
                    "load.arrivals.count",
                    "a rate sweep's levels end by the sweep's end rules, not a count",
                ));
            }
        }
        if let Some(ramp) = &self.load.ramp {
            let open_loop = self.load.arrivals.is_some() || rate_sweep;
            let trace = self
                .load
                .arrivals
                .as_ref()
                .is_some_and(|a| a.process == Process::Trace);
            ramp.check(open_loop, trace).map_err(keyed)?;
        }
        if let Some(telemetry) = &self.telemetry {
            telemetry.check().map_err(keyed)?;
        }
        if let Some(tools) = &self.tools {
            tools.check().map_err(keyed)?;
        }
        let closed = [
            ("performance", &self.performance),
            ("accuracy", &self.accuracy),
        ]
        .into_iter()
        .filter_map(|(name, phase)| Some((name, phase.as_ref()?)))
        .find(|(_, phase)| phase.closed_history());
        match closed {
            Some((name, _)) if self.tools.is_none() => {
                return Err(invalid(
                    &format!("{name}.settings.history"),
                    "closed-loop replay runs the model's tool calls in the sandbox: it needs a \
                     [tools] table with the workspace ([tools.workspace] archive and sha256)",
                ));
            }
            Some((name, _)) if self.sweep.is_some() => {
                return Err(invalid(
                    &format!("{name}.settings.history"),
                    "closed-loop replay runs as one pass (a [sweep] is not supported with it)",
                ));
            }
            _ => {}
        }
        if let Some(slo) = &self.session_slo {
            for (key, v) in [("ttft_ms", slo.ttft_ms), ("tpot_ms", slo.tpot_ms)] {
                if v.is_some_and(|v| !(v > 0.0 && v.is_finite())) {
                    return Err(invalid(
                        &format!("session_slo.{key}"),
                        "must be a positive number of milliseconds",
                    ));
                }
            }
            if slo.ttft_ms.is_none() && slo.tpot_ms.is_none() {
                return Err(invalid("session_slo", "needs ttft_ms, tpot_ms or both"));
            }
            if !(0.0..=1.0).contains(&slo.min_turn_share) {
                return Err(invalid(
                    "session_slo.min_turn_share",
                    "must be between 0 and 1",
                ));
            }
        }
        if !matches!(self.model.tokenizer.as_str(), "qwen3.6" | "none")
            && !self.model.tokenizer.ends_with(".json")
        {
            return Err(invalid(
                "model.tokenizer",
                "must be \"qwen3.6\", \"none\" or a Hugging Face tokenizer.json file",
            ));
        }
        if self.model.tokenizer == "none" {
            if self.model.token_counts == Some(TokenSource::Local) {
                return Err(invalid(
                    "model.token_counts",
                    "\"local\" needs a tokenizer (model.tokenizer = \"none\"); set token_counts = \"server\"",
                ));
            }
            if self.model.chat_template.is_some() {
                return Err(invalid(
                    "model.chat_template",
                    "a chat template needs a tokenizer (model.tokenizer = \"none\")",
                ));
            }
            if self.model.context_window.is_some() {
                return Err(invalid(
                    "model.context_window",
                    "the pre-check counts with the model's tokenizer (model.tokenizer = \"none\"); \
                     set one, or leave the key out and let the server refuse what does not fit",
                ));
            }
        }
        if self.model.context_window == Some(0) {
            return Err(invalid("model.context_window", "must be at least 1 token"));
        }
        Ok(())
    }
}

/// `message` with every line cut to `max` characters (the parser quotes the
/// offending line: a 10 MB line would print 10 MB).
fn shorten_lines(message: &str, max: usize) -> String {
    message
        .lines()
        .map(|line| match line.char_indices().nth(max) {
            Some((cut, _)) => format!("{}… ({} more bytes)", &line[..cut], line.len() - cut),
            None => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Why `file` may not be a phase's `report_file`, if it may not: it is
/// written inside the results directory and nowhere else (no absolute path,
/// no `..`), as a `.json` file that is none of the run's own files.
fn report_file_refusal(file: &str) -> Option<String> {
    if let Some(reason) = data::unconfined(file) {
        return Some(format!(
            "`{file}`: {reason}; it is written inside the results directory"
        ));
    }
    if !file.ends_with(".json") {
        return Some(format!("`{file}` must be a .json file"));
    }
    const RUN_FILES: [&str; 5] = [
        "run_manifest.json",
        "run_state.json",
        "sessions.json",
        "accuracy/sessions.json",
        "performance/result_summary.json",
    ];
    let normal = std::path::Path::new(file)
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect::<PathBuf>();
    RUN_FILES
        .iter()
        .any(|f| normal == std::path::Path::new(f))
        .then(|| format!("`{file}` is one of the run's own files"))
}

/// How hard each result line is pushed towards the disk.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Each line is handed to the kernel in one `write(2)` before the next
    /// request of its session: it survives the process dying (`kill -9`,
    /// a crash). Files are `fdatasync`ed when the phase ends.
    #[default]
    Write,
    /// As `write`, and each line is `fdatasync`ed: it survives the machine
    /// losing power. Costs a disk flush per turn.
    Sync,
}

/// The endpoint's base URL as requests use it: `http(s)://host[:port][/path]`
/// without a trailing `/` or `/v1` (both are accepted in the config).
///
/// # Errors
/// When it is not an absolute http(s) URL with a host, naming what is wrong.
pub fn base_url(url: &str) -> Result<String, String> {
    let parsed = url::Url::parse(url.trim())
        .map_err(|e| format!("`{url}` is not a URL ({e}); expected e.g. http://127.0.0.1:8080"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "`{url}`: the scheme must be http or https, not `{}`",
            parsed.scheme()
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("`{url}` has no host"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(format!("`{url}`: a base URL has no query or fragment"));
    }
    let mut base = parsed.as_str().trim_end_matches('/').to_string();
    if let Some(stripped) = base.strip_suffix("/v1") {
        base = stripped.to_string();
    }
    Ok(base)
}

/// A TOML table as a JSON object (for plugin settings).
pub fn table_json(table: &toml::Table) -> String {
    serde_json::to_string(table).expect("a TOML table serialises to JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "t"
[model]
name = "m"
[endpoint]
url = "http://127.0.0.1:1"
"#;

    #[test]
    fn minimal_config_gets_reference_defaults() {
        let c = RunConfig::parse(Path::new("t.toml"), MINIMAL).unwrap();
        assert_eq!(c.load.concurrency, 1);
        assert_eq!(c.load.turn_timeout_s, 600.0);
        assert!(c.endpoint.stream);
    }

    #[test]
    fn unknown_key_is_named() {
        let text = format!("{MINIMAL}\n[load]\nconcurency = 2\n");
        let err = RunConfig::parse(Path::new("t.toml"), &text).unwrap_err();
        assert_eq!(err.key(), Some("load.concurency"));
        assert_eq!(
            err.location().map(|l| l.to_string()).as_deref(),
            Some("9:1")
        );
        let err = err.to_string();
        assert!(
            err.starts_with("config t.toml:9:1: `load.concurency`: unknown field `concurency`"),
            "{err}"
        );
        assert!(err.contains("9 | concurency = 2"), "{err}");
    }

    #[test]
    fn a_value_of_the_wrong_type_is_named_with_its_line() {
        let text = format!("{MINIMAL}\n[[telemetry.scrape]]\nurl = \"/metrics\"\n[[telemetry.scrape]]\nurl = 8080\n");
        let err = RunConfig::parse(Path::new("t.toml"), &text).unwrap_err();
        assert_eq!(err.key(), Some("telemetry.scrape[1].url"));
        assert_eq!(
            err.location().map(|l| l.to_string()).as_deref(),
            Some("11:7")
        );
        let text = MINIMAL.replace("[model]", "[model]\ntoken_counts = \"usage\"");
        let err = RunConfig::parse(Path::new("t.toml"), &text).unwrap_err();
        assert_eq!(err.key(), Some("model.token_counts"));
        assert!(err.to_string().contains("t.toml:4:16:"), "{err}");
    }

    #[test]
    fn a_refused_value_is_placed_at_its_key_or_its_table() {
        let text = format!("{MINIMAL}\n[load]\nconcurrency = 0\n");
        let err = RunConfig::parse(Path::new("t.toml"), &text).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("config t.toml:9:1: `load.concurrency`: must be at least 1"),
            "{err}"
        );
        // A sweep's default tool delays need a `default`: the key is not in the
        // file, its table is.
        let text = format!("{MINIMAL}\n[sweep]\nlevels = [1]\ntool_delays = {{ bash = {{ median_s = 1.0, p90_s = 2.0 }} }}\n[performance]\nworkload = \"w\"\n");
        let err = RunConfig::parse(Path::new("t.toml"), &text).unwrap_err();
        assert_eq!(err.key(), Some("sweep.tool_delays"));
        assert_eq!(
            err.location().map(|l| l.to_string()).as_deref(),
            Some("10:1")
        );
    }

    #[test]
    fn invalid_value_names_the_key() {
        let text = format!("{MINIMAL}\n[load]\nconcurrency = 0\n");
        let err = RunConfig::parse(Path::new("t.toml"), &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("load.concurrency"), "{err}");
    }

    /// Why the config `text` is refused.
    fn refused(text: &str) -> String {
        RunConfig::parse(Path::new("t.toml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_report_file_outside_the_results_or_over_a_run_file_is_refused() {
        let phase = |file: &str| {
            format!("{MINIMAL}\n[accuracy]\nworkload = \"w\"\nscorer = \"s\"\nreport_file = \"{file}\"\n")
        };
        for (file, why) in [
            ("/tmp/x.json", "absolute path"),
            ("../../x.json", "`..`"),
            ("accuracy/../../x.json", "`..`"),
            ("notes.txt", ".json"),
            ("run_manifest.json", "the run's own files"),
            ("./performance/result_summary.json", "the run's own files"),
        ] {
            let err = refused(&phase(file));
            assert!(
                err.contains("accuracy.report_file") && err.contains(why),
                "{file}: {err}"
            );
        }
        RunConfig::parse(
            Path::new("t.toml"),
            &phase("accuracy/multi_turn_results.json"),
        )
        .unwrap();
    }

    #[test]
    fn a_limit_toml_cannot_write_back_is_refused_naming_it() {
        let err = refused(&format!(
            "{MINIMAL}\n[plugins.limits]\nmemory_mib = {}\n",
            u64::MAX
        ));
        assert!(
            err.contains("plugins.limits.memory_mib") && err.contains("at most"),
            "{err}"
        );
        // What is accepted is written back (config.toml) and read again.
        let big = format!("{MINIMAL}\n[plugins.limits]\nmemory_mib = {}\n", i64::MAX);
        let c = RunConfig::parse(Path::new("t.toml"), &big).unwrap();
        let again = RunConfig::parse(Path::new("t.toml"), &toml::to_string(&c).unwrap()).unwrap();
        assert_eq!(again.plugins.limits, c.plugins.limits);
    }

    #[test]
    fn a_syntax_error_on_a_huge_line_prints_a_short_message() {
        let text = format!("{MINIMAL}\nbroken = \"{}", "x".repeat(10 << 20));
        let err = refused(&text);
        assert!(err.len() < 4_000, "{} bytes", err.len());
        assert!(
            err.contains("more bytes)") && err.contains("t.toml"),
            "{err}"
        );
    }

    #[test]
    fn an_api_key_in_the_config_is_refused() {
        let err = refused(&MINIMAL.replace("[endpoint]", "[endpoint]\napi_key = \"sk-secret\""));
        assert!(
            err.contains("endpoint.api_key") && err.contains("AGENTLOAD_API_KEY"),
            "{err}"
        );
        assert!(!err.contains("sk-secret"), "{err}");
    }

    #[test]
    fn a_malformed_url_names_the_key() {
        let text = MINIMAL.replace("http://127.0.0.1:1", "htp:/127.0.0.1:1");
        let err = RunConfig::parse(Path::new("t.toml"), &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("endpoint.url"), "{err}");
    }

    #[test]
    fn base_urls_lose_a_trailing_v1() {
        for (given, want) in [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8080"),
            ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
            ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080"),
            ("https://host/proxy/v1", "https://host/proxy"),
        ] {
            assert_eq!(base_url(given).unwrap(), want, "{given}");
        }
        for bad in [
            "127.0.0.1:8080",
            "ftp://h",
            "http://",
            "http://h:99999",
            "http://h/?a=1",
        ] {
            assert!(base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_turn_timeout_that_is_no_duration_is_refused() {
        for bad in ["inf", "nan", "-1.0", "0.0", "1e300"] {
            let text = format!("{MINIMAL}\n[load]\nturn_timeout_s = {bad}\n");
            let err = RunConfig::parse(Path::new("t.toml"), &text)
                .unwrap_err()
                .to_string();
            assert!(err.contains("load.turn_timeout_s"), "{bad}: {err}");
        }
        let sweep = include_str!("../../../configs/agentperf-sweep-demo.toml");
        for (from, to, key) in [
            (
                "steady_state_s = 5.0",
                "steady_state_s = 1e300",
                "sweep.steady_state_s",
            ),
            (
                "# power_interval_s = 1.0",
                "power_interval_s = inf",
                "sweep.normalize.power_interval_s",
            ),
        ] {
            let text = sweep.replacen(from, to, 1);
            let err = RunConfig::parse(Path::new("s.toml"), &text)
                .unwrap_err()
                .to_string();
            assert!(err.contains(key), "{to}: {err}");
        }
    }

    #[test]
    fn timestamps_default_to_arrival_and_a_typo_is_named() {
        use agentload_wire::Timestamps;
        let c = RunConfig::parse(Path::new("t.toml"), MINIMAL).unwrap();
        assert_eq!(c.endpoint.timestamps, Timestamps::Arrival);
        let read = MINIMAL.replace("[endpoint]", "[endpoint]\ntimestamps = \"read\"");
        let c = RunConfig::parse(Path::new("t.toml"), &read).unwrap();
        assert_eq!(c.endpoint.timestamps, Timestamps::Read);
        let err = refused(&MINIMAL.replace("[endpoint]", "[endpoint]\ntimestamps = \"kernel\""));
        assert!(
            err.contains("timestamps") && err.contains("arrival"),
            "{err}"
        );
    }

    #[test]
    fn token_count_source_is_checked() {
        let c = RunConfig::parse(Path::new("t.toml"), MINIMAL).unwrap();
        assert_eq!(c.model.token_source(), TokenSource::Local);
        assert!(c.model.chat_template.is_none());
        let text = MINIMAL.replace("name = \"m\"", "name = \"m\"\ntoken_counts = \"server\"");
        let c = RunConfig::parse(Path::new("t.toml"), &text).unwrap();
        assert_eq!(c.model.token_source(), TokenSource::Server);
        let bad = MINIMAL.replace("name = \"m\"", "name = \"m\"\ntoken_counts = \"usage\"");
        let err = RunConfig::parse(Path::new("t.toml"), &bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains("usage") && err.contains("t.toml"), "{err}");
        let none = MINIMAL.replace("name = \"m\"", "name = \"m\"\ntokenizer = \"none\"");
        let c = RunConfig::parse(Path::new("t.toml"), &none).unwrap();
        assert_eq!(c.model.token_source(), TokenSource::Server);
        let none = none.replace(
            "tokenizer = \"none\"",
            "tokenizer = \"none\"\ntoken_counts = \"local\"",
        );
        let err = RunConfig::parse(Path::new("t.toml"), &none)
            .unwrap_err()
            .to_string();
        assert!(err.contains("model.token_counts"), "{err}");
        let template = MINIMAL.replace(
            "name = \"m\"",
            "name = \"m\"\ntokenizer = \"none\"\ntoken_counts = \"server\"\nchat_template = \"t.jinja\"",
        );
        let err = RunConfig::parse(Path::new("t.toml"), &template)
            .unwrap_err()
            .to_string();
        assert!(err.contains("model.chat_template"), "{err}");
        // A model's own tokenizer.json, or nothing else.
        let json = MINIMAL.replace(
            "name = \"m\"",
            "name = \"m\"\ntokenizer = \"models/k3/tokenizer.json\"",
        );
        let c = RunConfig::parse(Path::new("t.toml"), &json).unwrap();
        assert_eq!(c.model.token_source(), TokenSource::Local);
        let other = json.replace("tokenizer.json", "tokenizer.model");
        let err = RunConfig::parse(Path::new("t.toml"), &other)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("model.tokenizer") && err.contains("tokenizer.json"),
            "{err}"
        );
    }

    #[test]
    fn a_context_window_needs_a_tokenizer_and_a_size() {
        let with = |model: &str| MINIMAL.replace("name = \"m\"", &format!("name = \"m\"\n{model}"));
        let c = RunConfig::parse(Path::new("t.toml"), &with("context_window = 32768")).unwrap();
        assert_eq!(c.model.context_window, Some(32768));
        for (model, why) in [
            ("tokenizer = \"none\"\ncontext_window = 8192", "tokenizer"),
            ("context_window = 0", "at least 1"),
        ] {
            let err = RunConfig::parse(Path::new("t.toml"), &with(model))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("model.context_window") && err.contains(why),
                "{err}"
            );
        }
    }

    #[test]
    fn shipped_configs_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                RunConfig::load(&path).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}
