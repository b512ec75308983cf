//! `[accuracy] workload = "swe-bench"`: the SWE-bench accuracy phase of the
//! MLPerf datacenter agentic benchmark, run by the reference's SWE-bench
//! service (outside agentload). Its settings are the reference's
//! `accuracy_config.extras`, by the same names and with the same defaults;
//! its one data grant, `instances`, is the instance list (JSONL, one
//! `instance_id` per line, in Hugging Face order).

use crate::PhaseConfig;
use serde::Deserialize;

/// The accuracy workload name that selects the SWE-bench phase (no plugin).
pub const WORKLOAD: &str = "swe-bench";
/// The phase's one data grant.
pub const INSTANCES: &str = "instances";

/// The checked settings of a SWE-bench phase.
#[derive(Debug, Clone, PartialEq)]
pub struct SweBench {
    /// `swebench_service_url` (its form is checked by the client).
    pub service_url: String,
    /// The environment variable `swebench_service_auth_token` names
    /// (`"${NAME}"`), when set: the token itself is never in a config.
    pub auth_token_env: Option<String>,
    /// `verified` or `lite`.
    pub subset: String,
    pub split: String,
    /// Instances evaluated, at most (the list may have fewer).
    pub num_instances: u64,
    /// Agent workers; none: the run's `load.concurrency` (as the
    /// reference forwards `target_concurrency`).
    pub workers: Option<u64>,
    pub max_eval_workers: u64,
    /// `default` or `qwen_tools`.
    pub template: String,
    pub service_timeout_s: u64,
    pub poll_interval_s: f64,
    /// The instance list's file, as `[accuracy.data]` names it.
    pub instances: String,
}

/// `[accuracy.settings]` of a SWE-bench phase: the reference's
/// `accuracy_config.extras`, by the same names and with the same defaults
/// (any other key is an error naming it).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// The SWE-bench service's base URL (required), e.g.
    /// `http://localhost:18080`.
    swebench_service_url: Option<String>,
    /// `"${NAME}"`: the service's token comes from environment variable
    /// NAME (a literal token is refused: it would be copied into the
    /// results).
    swebench_service_auth_token: Option<String>,
    /// The SWE-bench subset: `verified` or `lite`.
    #[schemars(extend("default" = "verified", "enum" = ["verified", "lite"]))]
    subset: Option<String>,
    /// The data set's split.
    #[schemars(extend("default" = "test"))]
    split: Option<String>,
    /// Instances evaluated, at most: the first of the instance list (the
    /// rules require 200).
    #[schemars(extend("default" = 100), range(min = 1))]
    num_instances: Option<i64>,
    /// Agent workers on the service (default: the run's `load.concurrency`,
    /// as the reference forwards its target concurrency).
    #[schemars(range(min = 1))]
    workers: Option<i64>,
    /// Patches graded side by side.
    #[schemars(extend("default" = 10), range(min = 1))]
    max_eval_workers: Option<i64>,
    /// The agent's prompt template: `default` or `qwen_tools` (the Qwen
    /// preset's).
    #[schemars(extend("default" = "default", "enum" = ["default", "qwen_tools"]))]
    swebench_template: Option<String>,
    /// Seconds the service's run may take before it is cancelled.
    #[schemars(extend("default" = 86400), range(min = 1))]
    service_timeout_s: Option<i64>,
    /// Seconds between two polls of the run's status.
    #[schemars(extend("default" = 5.0))]
    poll_interval_s: Option<f64>,
    /// Removed: use `swebench_template = "qwen_tools"`.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::refused")]
    enable_swebench_toolcall_patch: Option<toml::Value>,
}

/// `(key, message)` for a setting that is refused.
type Refused = (String, String);

fn refused(key: &str, message: impl Into<String>) -> Refused {
    (format!("accuracy.{key}"), message.into())
}

/// A count that must be at least 1, else `default`.
fn positive(key: &str, value: Option<i64>, default: u64) -> Result<u64, Refused> {
    match value {
        None => Ok(default),
        Some(n) if n >= 1 => Ok(n as u64),
        Some(n) => Err(refused(
            &format!("settings.{key}"),
            format!("must be >= 1; got {n}"),
        )),
    }
}

/// The variable a `"${NAME}"` token names.
fn token_variable(written: &str) -> Option<&str> {
    let name = written.strip_prefix("${")?.strip_suffix('}')?;
    let mut bytes = name.bytes();
    let first = bytes.next()?;
    ((first.is_ascii_alphabetic() || first == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_'))
    .then_some(name)
}

impl SweBench {
    /// The reference's defaults: 100 instances (the rules require 200),
    /// 10 eval workers, 24 h, a poll every 5 s.
    pub const DEFAULT_NUM_INSTANCES: u64 = 100;

    /// Checks a SWE-bench phase.
    ///
    /// # Errors
    /// `(key, message)` naming the first setting, grant or table that is
    /// wrong.
    pub fn from_phase(phase: &PhaseConfig) -> Result<Self, Refused> {
        if let Some(scorer) = &phase.scorer {
            return Err(refused(
                "scorer",
                format!("the SWE-bench service scores the run; no scorer plugin (`{scorer}`)"),
            ));
        }
        if !phase.scorer_settings.is_empty() || !phase.scorer_data.is_empty() {
            return Err(refused(
                "scorer_settings",
                "the SWE-bench phase has no scorer plugin to configure",
            ));
        }
        let instances = match phase.data.get(INSTANCES) {
            Some(file) if phase.data.len() == 1 => file.clone(),
            _ => {
                return Err(refused(
                    "data",
                    "needs exactly one grant, `instances`: the SWE-bench instance list \
                     (JSONL, one {\"instance_id\": ...} per line, in Hugging Face order)",
                ))
            }
        };
        let w = Settings::deserialize(toml::Value::Table(phase.settings.clone()))
            .map_err(|e| refused("settings", e.message().to_owned()))?;
        if w.enable_swebench_toolcall_patch.is_some() {
            return Err(refused(
                "settings.enable_swebench_toolcall_patch",
                "has been removed; use swebench_template = \"qwen_tools\" instead",
            ));
        }
        let service_url = w
            .swebench_service_url
            .filter(|u| !u.trim().is_empty())
            .ok_or_else(|| {
                refused(
                    "settings.swebench_service_url",
                    "is required: start the SWE-bench service and give its URL",
                )
            })?;
        let auth_token_env = match w.swebench_service_auth_token.as_deref() {
            None => None,
            Some(written) => Some(token_variable(written).map(str::to_owned).ok_or_else(|| {
                refused(
                    "settings.swebench_service_auth_token",
                    "a token does not belong in a config file (it would be copied into the \
                     results): write \"${SWEBENCH_SERVICE_AUTH_TOKEN}\" and set that \
                     environment variable",
                )
            })?),
        };
        let subset = w.subset.unwrap_or_else(|| "verified".into());
        if !matches!(subset.as_str(), "verified" | "lite") {
            return Err(refused(
                "settings.subset",
                format!("must be \"verified\" or \"lite\"; got \"{subset}\""),
            ));
        }
        let template = w.swebench_template.unwrap_or_else(|| "default".into());
        if !matches!(template.as_str(), "default" | "qwen_tools") {
            return Err(refused(
                "settings.swebench_template",
                format!("must be \"default\" or \"qwen_tools\"; got \"{template}\""),
            ));
        }
        let poll_interval_s = w.poll_interval_s.unwrap_or(5.0);
        if !(poll_interval_s > 0.0 && poll_interval_s <= 86_400.0) {
            return Err(refused(
                "settings.poll_interval_s",
                format!("must be > 0 and at most a day; got {poll_interval_s}"),
            ));
        }
        Ok(Self {
            service_url,
            auth_token_env,
            subset,
            split: w.split.unwrap_or_else(|| "test".into()),
            num_instances: positive(
                "num_instances",
                w.num_instances,
                Self::DEFAULT_NUM_INSTANCES,
            )?,
            workers: w
                .workers
                .map(|n| positive("workers", Some(n), 0))
                .transpose()?,
            max_eval_workers: positive("max_eval_workers", w.max_eval_workers, 10)?,
            template,
            service_timeout_s: positive("service_timeout_s", w.service_timeout_s, 86_400)?,
            poll_interval_s,
            instances,
        })
    }

    /// Whether `phase` is a SWE-bench phase.
    pub fn selected_by(phase: &PhaseConfig) -> bool {
        phase.workload == WORKLOAD
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunConfig;
    use std::path::Path;

    fn config(accuracy: &str) -> Result<RunConfig, String> {
        let text = format!(
            "name = \"t\"\n[model]\nname = \"m\"\n[endpoint]\nurl = \"http://127.0.0.1:1\"\n\
             [accuracy]\nworkload = \"swe-bench\"\n{accuracy}"
        );
        RunConfig::parse(Path::new("t.toml"), &text).map_err(|e| e.to_string())
    }

    const OK: &str = "[accuracy.data]\ninstances = \"swe.jsonl\"\n[accuracy.settings]\n\
                      swebench_service_url = \"http://127.0.0.1:18080\"\n";

    #[test]
    fn the_reference_defaults_fill_what_is_not_set() {
        let c = config(OK).unwrap();
        let s = SweBench::from_phase(c.accuracy.as_ref().unwrap()).unwrap();
        assert_eq!(
            s,
            SweBench {
                service_url: "http://127.0.0.1:18080".into(),
                auth_token_env: None,
                subset: "verified".into(),
                split: "test".into(),
                num_instances: 100,
                workers: None,
                max_eval_workers: 10,
                template: "default".into(),
                service_timeout_s: 86_400,
                poll_interval_s: 5.0,
                instances: "swe.jsonl".into(),
            }
        );
        let token = format!(
            "{OK}swebench_service_auth_token = \"${{SWEBENCH_SERVICE_AUTH_TOKEN}}\"\n\
             num_instances = 200\nworkers = 100\nswebench_template = \"qwen_tools\"\n"
        );
        let c = config(&token).unwrap();
        let s = SweBench::from_phase(c.accuracy.as_ref().unwrap()).unwrap();
        assert_eq!(
            s.auth_token_env.as_deref(),
            Some("SWEBENCH_SERVICE_AUTH_TOKEN")
        );
        assert_eq!((s.num_instances, s.workers), (200, Some(100)));
        assert_eq!(s.template, "qwen_tools");
    }

    #[test]
    fn each_wrong_setting_is_named() {
        for (edit, key, why) in [
            ("", "accuracy.settings.swebench_service_url", "is required"),
            (
                "swebench_service_auth_token = \"sk-live-123\"",
                "swebench_service_auth_token",
                "does not belong",
            ),
            (
                "subset = \"full\"",
                "accuracy.settings.subset",
                "\"verified\" or \"lite\"",
            ),
            (
                "num_instances = 0",
                "accuracy.settings.num_instances",
                ">= 1; got 0",
            ),
            ("workers = -2", "accuracy.settings.workers", ">= 1; got -2"),
            (
                "swebench_template = \"kimi\"",
                "accuracy.settings.swebench_template",
                "\"default\" or \"qwen_tools\"",
            ),
            (
                "poll_interval_s = 0.0",
                "accuracy.settings.poll_interval_s",
                "must be > 0",
            ),
            (
                "enable_swebench_toolcall_patch = true",
                "enable_swebench_toolcall_patch",
                "has been removed",
            ),
            ("num_instance = 3", "accuracy.settings", "num_instance"),
        ] {
            let url = if key.ends_with("swebench_service_url") {
                ""
            } else {
                "swebench_service_url = \"http://127.0.0.1:18080\"\n"
            };
            let err = config(&format!(
                "[accuracy.data]\ninstances = \"swe.jsonl\"\n[accuracy.settings]\n{url}{edit}\n"
            ))
            .unwrap_err();
            assert!(err.contains(key) && err.contains(why), "{edit}: {err}");
            assert!(!err.contains("sk-live-123"), "{err}");
        }
        let err =
            config("[accuracy.settings]\nswebench_service_url = \"http://h:1\"\n").unwrap_err();
        assert!(
            err.contains("accuracy.data") && err.contains("`instances`"),
            "{err}"
        );
        let err = config(&format!("scorer = \"shell-iou\"\n{OK}")).unwrap_err();
        assert!(err.contains("accuracy.scorer"), "{err}");
    }
}
