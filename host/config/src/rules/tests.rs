use super::*;
use crate::RunConfig;
use std::path::Path;

const SHIPPED: &str = include_str!("../../../../configs/edge-full-run.toml");

const BOTH: Phases = Phases {
    performance: true,
    accuracy: true,
};

fn deviations(text: &str, phases: Phases) -> Vec<Deviation> {
    let config = RunConfig::parse(Path::new("edge.toml"), text).unwrap();
    check(&serde_json::to_value(&config).unwrap(), text, phases).deviations
}

/// The shipped config with `from` replaced by `to` (which must occur).
fn edited(from: &str, to: &str) -> String {
    assert!(SHIPPED.contains(from), "{from} not in the shipped config");
    SHIPPED.replacen(from, to, 1)
}

#[test]
fn the_shipped_edge_config_is_compliant() {
    let config = RunConfig::parse(Path::new("edge.toml"), SHIPPED).unwrap();
    let c = check(&serde_json::to_value(&config).unwrap(), SHIPPED, BOTH);
    assert_eq!(c.rules, Some("mlperf-edge-v0.1"));
    assert!(c.compliant, "{:#?}", c.deviations);
    assert!(require(&c).is_ok());
    assert!(c.config_digest.starts_with("sha256:") && c.config_digest.len() == 71);
    assert_eq!(c.report_lines(), "");
    // The accuracy gate alone is compliant too.
    let acc = Phases {
        performance: false,
        accuracy: true,
    };
    assert!(check(&serde_json::to_value(&config).unwrap(), SHIPPED, acc).compliant);
}

/// Each deviation the issue lists (and more) is named by its key, with the
/// rule and both values.
#[test]
fn each_deviation_names_its_key_rule_and_both_values() {
    let cases: &[(&str, &str, &str, &str, &str)] = &[
        // (replace, with, key, expected, actual)
        (
            "concurrency = 1",
            "concurrency = 2",
            "load.concurrency",
            "1",
            "2",
        ),
        (
            "inject_tool_delay = false\ntemperature = 0.0",
            "inject_tool_delay = false\ntemperature = 1.5",
            "performance.settings.temperature",
            "0",
            "1.5",
        ),
        (
            "seed = 42\nmax_completion_tokens = 1024\n\n#",
            "seed = 7\nmax_completion_tokens = 1024\n\n#",
            "performance.settings.seed",
            "42",
            "7",
        ),
        (
            "seed = 42\nmax_completion_tokens = 1024\n\n#",
            "seed = 42\nmax_completion_tokens = 4096\n\n#",
            "performance.settings.max_completion_tokens",
            "1024",
            "4096",
        ),
        (
            "stream = true",
            "stream = false",
            "endpoint.stream",
            "true",
            "false",
        ),
        (
            "inject_tool_delay = false\ntemperature = 0.0",
            "inject_tool_delay = false\ntemperature = 0.0\nhistory = \"live\"",
            "performance.settings.history",
            "\"recorded\"",
            "\"live\"",
        ),
        (
            "num_trajectories_to_issue = 20",
            "num_trajectories_to_issue = 2",
            "performance.settings.num_trajectories_to_issue",
            "20",
            "2",
        ),
        (
            "turn_timeout_s = 600.0",
            "turn_timeout_s = 60.0",
            "load.turn_timeout_s",
            "600.0",
            "60.0",
        ),
        (
            "inject_tool_delay = false",
            "inject_tool_delay = true",
            "performance.settings.inject_tool_delay",
            "false",
            "true",
        ),
        (
            "sample_pct = { non_live = 62",
            "sample_pct = { non_live = 6",
            "accuracy.settings.sample_pct",
            "\"non_live\":62",
            "\"non_live\":6",
        ),
        (
            "subset_floor = 25",
            "subset_floor = 2",
            "accuracy.settings.subset_floor",
            "25",
            "2",
        ),
        (
            "tool_choice = \"auto\"",
            "tool_choice = \"required\"",
            "accuracy.settings.tool_choice",
            "\"auto\"",
            "\"required\"",
        ),
        (
            "gate_factor = 0.97",
            "gate_factor = 0.5",
            "accuracy.scorer_settings.gate_factor",
            "0.97",
            "0.5",
        ),
        (
            "include_usage = true",
            "include_usage = true\nextra_body = { temperature = 1.5 }",
            "endpoint.extra_body",
            "(not set)",
            "1.5",
        ),
        (
            "tokenizer = \"qwen3.6\"",
            "tokenizer = \"none\"",
            "model.tokenizer",
            "\"qwen3.6\"",
            "\"none\"",
        ),
        (
            "trajectories = \"agentic_coding_2.5h.jsonl\"",
            "trajectories = \"renamed.jsonl\"",
            "performance.data",
            "agentic_coding_2.5h.jsonl",
            "renamed.jsonl",
        ),
        (
            "simple_python = \"bfcl_v4/BFCL_v4_simple_python.json\"\n",
            "",
            "accuracy.data",
            "simple_python",
            "simple_java",
        ),
        (
            "language_hints = false",
            "language_hints = false\nextra_knob = 1",
            "accuracy.settings.extra_knob",
            "(not set)",
            "1",
        ),
        (
            "max_duration_ms = 14400000",
            "max_duration_ms = 60000",
            "load.max_duration_ms",
            "14400000",
            "60000",
        ),
    ];
    for (from, to, key, expected, actual) in cases {
        let found = deviations(&edited(from, to), BOTH);
        assert_eq!(found.len(), 1, "{key}: {found:#?}");
        let d = &found[0];
        assert_eq!(d.key, *key);
        assert!(d.expected.contains(expected), "{key}: {d}");
        assert!(d.actual.contains(actual), "{key}: {d}");
        assert!(!d.rule.is_empty());
        let text = d.to_string();
        assert!(text.contains(&format!("`{key}`")), "{text}");
    }
}

#[test]
fn absent_settings_take_the_official_defaults() {
    // The settings the shipped config spells out are the defaults: removing
    // them keeps the config compliant.
    let text = edited(
        "temperature = 0.0\nseed = 42\nmax_completion_tokens = 1024\n\n#",
        "\n#",
    );
    assert_eq!(deviations(&text, BOTH), []);
    // A key the rules require set (not a plugin setting) may not be left out.
    let text = edited("scorer = \"shell-iou\"\n", "");
    let found = deviations(&text, BOTH);
    assert_eq!(found[0].key, "performance.scorer");
    assert_eq!(found[0].actual, "(not set)");
}

#[test]
fn a_perf_only_run_or_a_missing_gate_is_not_compliant() {
    let perf = Phases {
        performance: true,
        accuracy: false,
    };
    let found = deviations(SHIPPED, perf);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].key, "--mode");
    let cut = &SHIPPED[..SHIPPED.find("# The accuracy gate").unwrap()];
    let found = deviations(cut, BOTH);
    assert!(
        found.iter().any(|d| d.key == "accuracy.workload"),
        "{found:#?}"
    );
}

#[test]
fn no_ruleset_is_refused_in_submission_and_silent_in_development() {
    let text = edited(
        "version = \"1.0\"\nrules = \"mlperf-edge-v0.1\"",
        "version = \"1.0\"",
    );
    let config = RunConfig::parse(Path::new("edge.toml"), &text).unwrap();
    let c = check(&serde_json::to_value(&config).unwrap(), &text, BOTH);
    assert_eq!(c.rules, None);
    assert!(!c.compliant);
    assert_eq!(c.report_lines(), "");
    let err = require(&c).unwrap_err().to_string();
    assert!(err.contains("rules = \"mlperf-edge-v0.1\""), "{err}");
}

#[test]
fn a_development_report_lists_each_deviation() {
    let text = edited("concurrency = 1", "concurrency = 4");
    let config = RunConfig::parse(Path::new("edge.toml"), &text).unwrap();
    let c = check(&serde_json::to_value(&config).unwrap(), &text, BOTH);
    let lines = c.report_lines();
    assert!(
        lines.starts_with("NOT COMPLIANT with mlperf-edge-v0.1"),
        "{lines}"
    );
    assert!(
        lines.contains("not compliant: `load.concurrency`"),
        "{lines}"
    );
    let err = require(&c).unwrap_err().to_string();
    assert!(
        err.contains("before any request") && err.contains("load.concurrency"),
        "{err}"
    );
}

const QWEN: &str = include_str!("../../../../configs/datacenter-qwen3.6-35b-a3b.toml");
const KIMI: &str = include_str!("../../../../configs/datacenter-kimi-k3.toml");

const PERF: Phases = Phases {
    performance: true,
    accuracy: false,
};

fn keys(devs: &[Deviation]) -> Vec<&str> {
    devs.iter().map(|d| d.key.as_str()).collect()
}

/// The datacenter presets mirror the reference's YAMLs, SWE-bench phase
/// included: compliant with `--mode both`; a perf-only run deviates only in
/// its mode.
#[test]
fn the_datacenter_presets_are_compliant_in_mode_both() {
    for preset in [QWEN, KIMI] {
        assert_eq!(keys(&deviations(preset, PERF)), ["--mode"], "{preset}");
        assert_eq!(deviations(preset, BOTH), [], "{preset}");
    }
}

#[test]
fn datacenter_deviations_name_key_rule_and_both_values() {
    let edit = |text: &str, from: &str, to: &str| {
        assert!(text.contains(from), "{from}");
        text.replacen(from, to, 1)
    };
    let cases: &[(&str, &str, &str, &str, &str, &str)] = &[
        // (preset, replace, with, key, expected, actual)
        (
            QWEN,
            "num_trajectories_to_issue = 613",
            "num_trajectories_to_issue = 600",
            "performance.settings.num_trajectories_to_issue",
            "a positive multiple of 613",
            "600",
        ),
        (
            QWEN,
            "num_trajectories_to_issue = 613",
            "num_trajectories_to_issue = 1226",
            "",
            "",
            "",
        ),
        (
            QWEN,
            "enable_salt = true",
            "enable_salt = false",
            "performance.settings.enable_salt",
            "true",
            "false",
        ),
        (
            KIMI,
            "enable_salt = true",
            "enable_salt = true\nhistory = \"live\"",
            "performance.settings.history",
            "\"recorded\"",
            "\"live\"",
        ),
        (
            QWEN,
            "salt_mode = \"reference\"",
            "salt_mode = \"seeded64\"",
            "performance.settings.salt_mode",
            "\"reference\"",
            "\"seeded64\"",
        ),
        (
            QWEN,
            "inject_tool_delay = true",
            "inject_tool_delay = false",
            "performance.settings.inject_tool_delay",
            "true",
            "false",
        ),
        (
            KIMI,
            "include_usage = false",
            "include_usage = true",
            "endpoint.include_usage",
            "false",
            "true",
        ),
        (
            QWEN,
            "include_usage = false",
            "include_usage = false\nttft_trigger = \"rules\"",
            "endpoint.ttft_trigger",
            "\"reference\"",
            "\"rules\"",
        ),
        (
            QWEN,
            "send_seed = false\n",
            "",
            "performance.settings.send_seed",
            "false",
            "(not set)",
        ),
        (
            QWEN,
            "top_k = 20",
            "top_k = 40",
            "performance.settings.top_k",
            "20",
            "40",
        ),
        (
            QWEN,
            "presence_penalty = 1.5",
            "presence_penalty = 0.0",
            "endpoint.extra_body",
            "",
            "",
        ),
        (
            QWEN,
            "max_completion_tokens = 8192",
            "max_completion_tokens = 1024",
            "performance.settings.max_completion_tokens",
            "8192",
            "1024",
        ),
        (
            KIMI,
            "top_p = 1.0",
            "top_p = 1.0\ntop_k = 20",
            "performance.settings.top_k",
            "(not set)",
            "20",
        ),
        (
            QWEN,
            "num_instances = 200",
            "num_instances = 100",
            "accuracy.settings.num_instances",
            "200",
            "100",
        ),
        (
            QWEN,
            "swebench_template = \"qwen_tools\"",
            "swebench_template = \"default\"",
            "accuracy.settings.swebench_template",
            "\"qwen_tools\"",
            "\"default\"",
        ),
        (
            KIMI,
            "workers = 100",
            "workers = 100\nswebench_template = \"qwen_tools\"",
            "accuracy.settings.swebench_template",
            "(not set)",
            "\"qwen_tools\"",
        ),
        (
            KIMI,
            "temperature = 1.0",
            "temperature = 0.6",
            "performance.settings.temperature",
            "1.0",
            "0.6",
        ),
    ];
    for (preset, from, to, key, expected, actual) in cases {
        let devs = deviations(&edit(preset, from, to), BOTH);
        let found: Vec<&Deviation> = devs.iter().filter(|d| d.key != "--mode").collect();
        if key.is_empty() {
            assert!(found.is_empty(), "{from} -> {to}: {found:?}");
            continue;
        }
        assert_eq!(found.len(), 1, "{from} -> {to}: {found:?}");
        let d = found[0];
        assert_eq!(d.key, *key);
        assert!(!d.rule.is_empty());
        if !expected.is_empty() {
            assert_eq!(
                (d.expected.as_str(), d.actual.as_str()),
                (*expected, *actual),
                "{d:?}"
            );
        }
    }
    // A submission of a deviating config is refused, naming the rule.
    let bad = edit(QWEN, "enable_salt = true", "enable_salt = false");
    let config = RunConfig::parse(Path::new("q.toml"), &bad).unwrap();
    let c = check(&serde_json::to_value(&config).unwrap(), &bad, BOTH);
    let refusal = require(&c).unwrap_err().to_string();
    assert!(
        refusal.contains("performance.settings.enable_salt"),
        "{refusal}"
    );
    assert!(
        refusal.contains("enable_salt: true (README, official submission)"),
        "{refusal}"
    );
}
