//! The run configuration (TOML). Unknown keys are errors that name the key.

use crate::plugin::Limits;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// The benchmark rules the run is checked against (`mlperf-edge-v0.1`);
    /// a submission run must name them (see [`crate::rules`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    /// The performance phase.
    pub performance: Option<PhaseConfig>,
    /// The accuracy phase (run after the performance phase, at concurrency 1).
    pub accuracy: Option<PhaseConfig>,
    /// Run the performance phase as a concurrency sweep instead of one pass.
    pub sweep: Option<crate::sweep::SweepConfig>,
}

/// Development or submission run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    #[default]
    Development,
    Submission,
}

/// The served model.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Sent as `model`.
    pub name: String,
    /// Tokenizer for local counts (`qwen3.6`, or `none`).
    #[serde(default = "default_tokenizer")]
    pub tokenizer: String,
}

/// The server under test.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    /// Base URL; `--endpoint` overrides it.
    pub url: String,
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default = "yes")]
    pub stream: bool,
    /// Ask for `usage` in the stream (`stream_options.include_usage`).
    #[serde(default = "yes")]
    pub include_usage: bool,
    /// Extra top-level request fields, e.g. `cache_prompt = false`.
    #[serde(default)]
    pub extra_body: toml::Table,
}

/// How requests are scheduled.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadConfig {
    /// Sessions in flight at once.
    pub concurrency: usize,
    /// A turn unanswered after this many seconds fails.
    pub turn_timeout_s: f64,
    /// The performance phase stops issuing after this long.
    pub max_duration_ms: u64,
}

impl Default for LoadConfig {
    fn default() -> Self {
        Self {
            concurrency: 1,
            turn_timeout_s: 600.0,
            max_duration_ms: 14_400_000,
        }
    }
}

/// Where plugins are found and how they are limited.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginsConfig {
    /// Directory of `<name>.wasm` components (overrides the default search).
    #[serde(default)]
    pub dir: Option<PathBuf>,
    #[serde(default)]
    pub limits: Limits,
}

/// One phase: a workload plugin, its data, and the scorer of its turns.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    #[serde(default)]
    pub data: BTreeMap<String, String>,
    /// The workload's own settings, passed to it as JSON.
    #[serde(default)]
    pub settings: toml::Table,
    /// The scorer's settings.
    #[serde(default)]
    pub scorer_settings: toml::Table,
    /// Files granted to the scorer: logical name -> file in the data dir
    /// (a scorer that re-executes recorded calls needs the dataset too).
    #[serde(default)]
    pub scorer_data: BTreeMap<String, String>,
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
    #[error("config {}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("config {}: `{key}`: {message}", path.display())]
    Invalid {
        path: PathBuf,
        key: String,
        message: String,
    },
}

impl RunConfig {
    /// Reads and checks a config file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Parses config text; `path` is used in messages.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let config: RunConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        config.check(path)?;
        Ok(config)
    }

    fn check(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: &str| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: key.to_string(),
            message: message.to_string(),
        };
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
            sweep
                .check()
                .map_err(|(key, message)| ConfigError::Invalid {
                    path: path.to_path_buf(),
                    key,
                    message,
                })?;
            if self.performance.is_none() {
                return Err(invalid("sweep", "needs a [performance] phase to sweep"));
            }
        }
        if !matches!(self.model.tokenizer.as_str(), "qwen3.6" | "none") {
            return Err(invalid(
                "model.tokenizer",
                "must be \"qwen3.6\" or \"none\"",
            ));
        }
        Ok(())
    }
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
        let err = RunConfig::parse(Path::new("t.toml"), &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("concurency"), "{err}");
        assert!(err.contains("t.toml"), "{err}");
    }

    #[test]
    fn invalid_value_names_the_key() {
        let text = format!("{MINIMAL}\n[load]\nconcurrency = 0\n");
        let err = RunConfig::parse(Path::new("t.toml"), &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("load.concurrency"), "{err}");
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
