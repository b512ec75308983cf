//! The config loader (`config.rs`): the shipped configs with keys dropped,
//! duplicated, added and their values replaced by any TOML value (the
//! extreme numbers included) never panic the loader; a config that loads
//! can be run (every duration in it converts), checked against the rules,
//! and written back as `config.toml` and loaded again unchanged.

use crate::{drive, json, mutate, Budget, Failure, Report, Target};
use agentload_config::RunConfig;
use proptest::prelude::*;
use std::path::Path;
use std::time::Duration;

pub const TARGET: Target = Target {
    name: "config",
    about: "config loader: mutated shipped configs load, run, round-trip or are refused",
    run,
};

const SEEDS: [&str; 6] = [
    include_str!("../../../../configs/edge-full-run.toml"),
    include_str!("../../../../configs/bfcl-multi-turn.toml"),
    include_str!("../../../../configs/agentperf-sweep-demo.toml"),
    include_str!("../../../../configs/llama-smoke.toml"),
    include_str!("../../../../configs/datacenter-qwen3.6-35b-a3b.toml"),
    include_str!("../../../../configs/datacenter-kimi-k3.toml"),
];

/// A TOML value's text, the awkward ones included.
fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("-1".into()),
        Just("9223372036854775807".into()),
        Just("inf".into()),
        Just("-inf".into()),
        Just("nan".into()),
        Just("1e300".into()),
        Just("-0.0".into()),
        Just("0.5".into()),
        Just("true".into()),
        Just("[]".into()),
        Just("{}".into()),
        Just("[0]".into()),
        any::<i64>().prop_map(|i| i.to_string()),
        json::awkward_string().prop_map(|s| toml::Value::String(s).to_string()),
    ]
}

/// Edits on top of the line and byte mutations: a `key = value` line's
/// value replaced, or a new key.
#[derive(Debug, Clone)]
enum Edit {
    Set(prop::sample::Index, String),
    Add(prop::sample::Index, String, String),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => (any::<prop::sample::Index>(), toml_value()).prop_map(|(i, v)| Edit::Set(i, v)),
        1 => (any::<prop::sample::Index>(), "[a-z_]{1,12}", toml_value())
            .prop_map(|(i, k, v)| Edit::Add(i, k, v)),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for e in edits {
        match e {
            Edit::Set(i, v) => {
                let keyed: Vec<usize> = (0..lines.len())
                    .filter(|l| lines[*l].contains(" = "))
                    .collect();
                if !keyed.is_empty() {
                    let l = keyed[i.index(keyed.len())];
                    let key = lines[l].split(" = ").next().unwrap_or_default().to_string();
                    lines[l] = format!("{key} = {v}");
                }
            }
            Edit::Add(i, k, v) => {
                let at = i.index(lines.len() + 1);
                lines.insert(at, format!("{k} = {v}"));
            }
        }
    }
    lines.join("\n")
}

/// Every seconds value the host turns into a `Duration`.
fn durations(c: &RunConfig) -> Vec<(&'static str, f64)> {
    let mut out = vec![("load.turn_timeout_s", c.load.turn_timeout_s)];
    if let Some(s) = &c.sweep {
        out.extend([
            ("sweep.steady_state_s", s.steady_state_s),
            ("sweep.warmup_s", s.warmup_s),
            ("sweep.max_phase_s", s.max_phase_s),
        ]);
        if let Some(p) = s.normalize.power_interval_s {
            out.push(("sweep.normalize.power_interval_s", p.max(0.05)));
        }
    }
    out
}

fn run(budget: Budget, seed: u64) -> Result<Report, Failure> {
    drive(
        TARGET.name,
        (
            0usize..SEEDS.len(),
            proptest::collection::vec(edit(), 0..4),
            mutate::edits(2),
        ),
        |(which, edits, raw)| {
            let text = apply(SEEDS[which], &edits);
            let text = String::from_utf8_lossy(&mutate::apply(text.as_bytes(), &raw)).into_owned();
            let Ok(config) = RunConfig::parse(Path::new("fuzz.toml"), &text) else {
                return Ok(());
            };
            for (key, secs) in durations(&config) {
                prop_assert!(
                    Duration::try_from_secs_f64(secs).is_ok(),
                    "{key} = {secs} loads but is not a duration"
                );
            }
            let phases = agentload_config::rules::Phases {
                performance: true,
                accuracy: true,
            };
            let json = serde_json::to_value(&config).expect("a config serialises to JSON");
            let _ = agentload_config::rules::check(&json, &text, phases);
            let written = toml::to_string(&config)
                .map_err(|e| TestCaseError::fail(format!("cannot write config.toml: {e}")))?;
            let again = RunConfig::parse(Path::new("config.toml"), &written).map_err(|e| {
                TestCaseError::fail(format!("config.toml does not load: {e}\n{written}"))
            })?;
            let rewritten = toml::to_string(&again).unwrap();
            prop_assert_eq!(written, rewritten);
            Ok(())
        },
        budget,
        seed,
    )
}
