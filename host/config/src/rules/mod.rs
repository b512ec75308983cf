//! The benchmarks' run rules: what a config must say for its results to be
//! compliant. A config names its ruleset (`rules = "mlperf-edge-v0.1"`);
//! a submission run must name one, and any deviation refuses the run before
//! anything is sent, naming the key, the rule and both values. A
//! development run goes on and says "not compliant" in `report.txt`.
//! `run_manifest.json` records the ruleset, its version, the deviations and
//! the digest of the config the run used (`config.toml`).
//!
//! Rules are checked on the config as it is serialised (its TOML keys), so a
//! key is named as the user writes it. A settings table the ruleset closes
//! may hold only the keys it has rules for: an unknown setting could change
//! what the locked plugin does.

mod datacenter;
mod edge;

use serde::Serialize;
use serde_json::Value;
use std::fmt;

/// A set of rules a config can name.
#[derive(Debug)]
pub struct Ruleset {
    /// What configs write as `rules`.
    pub name: &'static str,
    /// The rules' version, recorded in every run manifest.
    pub version: &'static str,
    /// Where the rules come from.
    pub source: &'static str,
    rules: &'static [Rule],
    /// Tables that may hold only the keys `rules` names.
    closed: &'static [(&'static str, Phase)],
    /// The rules define point metrics (`system_tps`, `tps_per_user`,
    /// `e2e_avg_interactivity`, ...) that `result_summary.json` carries.
    pub point_metrics: bool,
}

/// Which phase a rule belongs to (it is checked only when that phase runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Always,
    Performance,
    Accuracy,
}

/// One rule on one config key.
#[derive(Debug)]
struct Rule {
    /// Dotted config key (`performance.settings.temperature`).
    key: &'static str,
    /// The rule, in words, with its source.
    rule: &'static str,
    phase: Phase,
    want: Want,
}

/// What a rule wants of its key.
#[derive(Debug)]
enum Want {
    /// This value; `default` is what the official plugin uses when the
    /// key is absent (none: the key must be set).
    Value { json: &'static str, default: bool },
    /// The key absent (or empty).
    Absent,
    /// A grant table: exactly these grant names, each a file the locks
    /// know by this name (digests are checked when the files are read).
    Grants(&'static [(&'static str, &'static str)]),
    /// A positive integer multiple of this (the key must be set).
    MultipleOf(u64),
}

/// Every ruleset's history rule: live-reply and closed-loop replay measure
/// another load.
const RECORDED_HISTORY: &str =
    "recorded history: every request carries the recording, never the model's own replies \
     (live-reply and closed-loop replay are not official modes)";

/// A rule: `key` must be `json` (set in the config).
const fn set(key: &'static str, rule: &'static str, phase: Phase, json: &'static str) -> Rule {
    Rule {
        key,
        rule,
        phase,
        want: Want::Value {
            json,
            default: false,
        },
    }
}

/// A plugin setting: absent means the official plugin's default, `json`.
const fn setting(key: &'static str, rule: &'static str, phase: Phase, json: &'static str) -> Rule {
    Rule {
        key,
        rule,
        phase,
        want: Want::Value {
            json,
            default: true,
        },
    }
}

/// A rule: `key` must be absent (or empty).
const fn absent(key: &'static str, rule: &'static str, phase: Phase) -> Rule {
    Rule {
        key,
        rule,
        phase,
        want: Want::Absent,
    }
}

/// A config key that breaks a rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Deviation {
    pub key: String,
    pub rule: String,
    /// What the rule requires.
    pub expected: String,
    /// What the config has.
    pub actual: String,
}

impl fmt::Display for Deviation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}`: rule \"{}\" requires {}, the config has {}",
            self.key, self.rule, self.expected, self.actual
        )
    }
}

/// The run's compliance, as `run_manifest.json` records it.
#[derive(Debug, Clone, Serialize)]
pub struct Compliance {
    /// The ruleset the config names, if any.
    pub rules: Option<&'static str>,
    pub rules_version: Option<&'static str>,
    pub rules_source: Option<&'static str>,
    /// `sha256:<hex>` of the resolved config as written to `config.toml`.
    pub config_digest: String,
    /// Whether a ruleset was named and no rule is broken.
    pub compliant: bool,
    pub deviations: Vec<Deviation>,
}

impl Compliance {
    /// The lines `report.txt` gets: none when compliant or when no ruleset
    /// is named.
    pub fn report_lines(&self) -> String {
        let Some(rules) = self.rules.filter(|_| !self.compliant) else {
            return String::new();
        };
        let mut text = format!(
            "NOT COMPLIANT with {rules} ({} deviations; development run):\n",
            self.deviations.len()
        );
        for d in &self.deviations {
            text.push_str(&format!("  not compliant: {d}\n"));
        }
        text
    }
}

/// A submission run refused by its rules.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(
        "a submission run needs a ruleset: the config names none (`rules = \"{}\"` for the \
         edge benchmark); known rulesets: {}",
        edge::EDGE.name,
        known()
    )]
    NoRules,
    #[error(
        "the config breaks {rules} (a submission run is refused before any request):\n  {}",
        deviations.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  ")
    )]
    Deviations {
        rules: &'static str,
        deviations: Vec<Deviation>,
    },
}

/// Every ruleset this agentload knows.
pub const RULESETS: &[&Ruleset] = &[&edge::EDGE, &datacenter::QWEN, &datacenter::KIMI];

/// The ruleset named `name`.
pub fn find(name: &str) -> Option<&'static Ruleset> {
    RULESETS.iter().copied().find(|r| r.name == name)
}

/// The schema of `rules`: one of the known rulesets' names.
pub fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = RULESETS.iter().map(|r| r.name).collect();
    schemars::json_schema!({ "type": "string", "enum": names })
}

/// The known ruleset names, for messages.
pub fn known() -> String {
    RULESETS
        .iter()
        .map(|r| r.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which phases the run's mode selects (`--mode`): rules of a selected
/// phase apply whether or not the config has that phase.
#[derive(Debug, Clone, Copy)]
pub struct Phases {
    pub performance: bool,
    pub accuracy: bool,
}

/// Checks `config`, a run config as JSON (its keys as the user writes them;
/// its text as written to `config.toml` is `config_toml`), for the phases
/// that run. The rules read the config's serialised keys only, so this
/// module knows nothing of the config's types.
pub fn check(config: &Value, config_toml: &str, phases: Phases) -> Compliance {
    use sha2::{Digest, Sha256};
    let config_digest = format!(
        "sha256:{}",
        hex::encode(Sha256::digest(config_toml.as_bytes()))
    );
    let Some(ruleset) = config["rules"].as_str().and_then(find) else {
        return Compliance {
            rules: None,
            rules_version: None,
            rules_source: None,
            config_digest,
            compliant: false,
            deviations: Vec::new(),
        };
    };
    let deviations = ruleset.deviations(config, phases);
    Compliance {
        rules: Some(ruleset.name),
        rules_version: Some(ruleset.version),
        rules_source: Some(ruleset.source),
        config_digest,
        compliant: deviations.is_empty(),
        deviations,
    }
}

/// In a submission run: refuses a config with no ruleset or any deviation.
pub fn require(compliance: &Compliance) -> Result<(), Refusal> {
    match compliance.rules {
        None => Err(Refusal::NoRules),
        Some(rules) if !compliance.deviations.is_empty() => Err(Refusal::Deviations {
            rules,
            deviations: compliance.deviations.clone(),
        }),
        Some(_) => Ok(()),
    }
}

impl Ruleset {
    fn deviations(&self, json: &Value, phases: Phases) -> Vec<Deviation> {
        let runs = |phase: Phase| match phase {
            Phase::Always => true,
            Phase::Performance => phases.performance,
            Phase::Accuracy => phases.accuracy,
        };
        let mut out = Vec::new();
        if !phases.accuracy {
            out.push(Deviation {
                key: "--mode".into(),
                rule: "every submission runs the accuracy gate (mode both or accuracy)".into(),
                expected: "both or accuracy".into(),
                actual: "perf".into(),
            });
        }
        for rule in self.rules.iter().filter(|r| runs(r.phase)) {
            let actual = lookup(json, rule.key);
            if let Some((expected, actual)) = rule.want.broken(actual) {
                out.push(Deviation {
                    key: rule.key.into(),
                    rule: rule.rule.into(),
                    expected,
                    actual,
                });
            }
        }
        for (table, _) in self.closed.iter().filter(|(_, p)| runs(*p)) {
            let Some(Value::Object(entries)) = lookup(json, table) else {
                continue;
            };
            for (key, value) in entries {
                let full = format!("{table}.{key}");
                if !self.rules.iter().any(|r| r.key == full) {
                    out.push(Deviation {
                        key: full,
                        rule: format!("{table} holds only the settings {} fixes", self.name),
                        expected: "(not set)".into(),
                        actual: value.to_string(),
                    });
                }
            }
        }
        out
    }
}

impl Want {
    /// `(expected, actual)` when `actual` breaks the rule.
    fn broken(&self, actual: Option<&Value>) -> Option<(String, String)> {
        let shown = |v: Option<&Value>| v.map_or_else(|| "(not set)".to_string(), Value::to_string);
        match self {
            Want::Value { json, default } => {
                let want: Value = serde_json::from_str(json).expect("rule values are JSON");
                let ok = match actual {
                    None => *default,
                    Some(v) => same(v, &want),
                };
                (!ok).then(|| (want.to_string(), shown(actual)))
            }
            Want::Absent => {
                let ok = actual.is_none_or(|v| match v {
                    Value::Object(m) => m.is_empty(),
                    Value::Array(a) => a.is_empty(),
                    v => v.is_null(),
                });
                (!ok).then(|| ("(not set)".to_string(), shown(actual)))
            }
            Want::MultipleOf(n) => {
                let ok = actual
                    .and_then(Value::as_u64)
                    .is_some_and(|v| v > 0 && v % n == 0);
                (!ok).then(|| (format!("a positive multiple of {n}"), shown(actual)))
            }
            Want::Grants(grants) => {
                let ok = match actual {
                    Some(Value::Object(m)) => {
                        m.len() == grants.len()
                            && grants.iter().all(|(name, file)| {
                                m.get(*name)
                                    .and_then(Value::as_str)
                                    .and_then(crate::data::lock_name)
                                    .is_some_and(|n| n == *file)
                            })
                    }
                    _ => false,
                };
                let want: serde_json::Map<String, Value> = grants
                    .iter()
                    .map(|(n, f)| (n.to_string(), Value::from(*f)))
                    .collect();
                (!ok).then(|| (Value::Object(want).to_string(), shown(actual)))
            }
        }
    }
}

/// The value at a dotted key; an absent key (or TOML's missing option) is none.
fn lookup<'a>(json: &'a Value, key: &str) -> Option<&'a Value> {
    let mut at = json;
    for part in key.split('.') {
        at = at.get(part)?;
    }
    (!at.is_null()).then_some(at)
}

/// Equality with numbers compared by value (`0` is `0.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests;
