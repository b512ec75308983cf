//! MLPerf Inference v6.1 Edge Agentic: the reference's compliance rules
//! (`scripts/check_compliance.py`, ruleset `mlperf-edge-current` =
//! `edge-v0.1`: temperature 0, every seed 42, one worker / one connection /
//! concurrency 1, the full 995-sample gate, no dropped turns) and the
//! parameters of its validated setup (`online_edge_full_run.yaml`: 1,024
//! max tokens, streaming, the 20-conversation replay, the 600 s turn
//! timeout, tool delays off, the 4 h cap), in agentload's config keys.
//! Absent plugin settings take the official plugins' defaults, which are
//! these values.

use super::{absent, set, setting, Phase, Rule, Ruleset, Want};

/// The edge ruleset.
pub const EDGE: Ruleset = Ruleset {
    name: "mlperf-edge-v0.1",
    version: "edge-v0.1 (agentload rules 1)",
    source: "mlcommons/endpoints@ea33275: scripts/check_compliance.py (edge-v0.1), \
             examples/11_Edge_Agentic_Example/online_edge_full_run.yaml",
    rules: RULES,
    closed: &[
        ("performance.settings", Phase::Performance),
        ("performance.scorer_settings", Phase::Performance),
        ("accuracy.settings", Phase::Accuracy),
        ("accuracy.scorer_settings", Phase::Accuracy),
    ],
    point_metrics: false,
};

use Phase::{Accuracy as A, Always, Performance as P};

const TEMPERATURE: &str = "temperature == 0 (check_compliance temperature)";
const SEED: &str = "every seed is 42 (check_compliance seed)";
const MAX_TOKENS: &str = "max_new_tokens 1024 (online_edge_full_run.yaml)";

/// The 22 BFCL v4 files of the gate (names as the shipped config grants them).
const BFCL_GRANTS: &[(&str, &str)] = &[
    ("irrelevance", "bfcl_v4/BFCL_v4_irrelevance.json"),
    ("live_irrelevance", "bfcl_v4/BFCL_v4_live_irrelevance.json"),
    ("live_multiple", "bfcl_v4/BFCL_v4_live_multiple.json"),
    (
        "live_multiple_answers",
        "bfcl_v4/possible_answer/BFCL_v4_live_multiple.json",
    ),
    ("live_parallel", "bfcl_v4/BFCL_v4_live_parallel.json"),
    (
        "live_parallel_answers",
        "bfcl_v4/possible_answer/BFCL_v4_live_parallel.json",
    ),
    (
        "live_parallel_multiple",
        "bfcl_v4/BFCL_v4_live_parallel_multiple.json",
    ),
    (
        "live_parallel_multiple_answers",
        "bfcl_v4/possible_answer/BFCL_v4_live_parallel_multiple.json",
    ),
    ("live_simple", "bfcl_v4/BFCL_v4_live_simple.json"),
    (
        "live_simple_answers",
        "bfcl_v4/possible_answer/BFCL_v4_live_simple.json",
    ),
    ("multiple", "bfcl_v4/BFCL_v4_multiple.json"),
    (
        "multiple_answers",
        "bfcl_v4/possible_answer/BFCL_v4_multiple.json",
    ),
    ("parallel", "bfcl_v4/BFCL_v4_parallel.json"),
    (
        "parallel_answers",
        "bfcl_v4/possible_answer/BFCL_v4_parallel.json",
    ),
    (
        "parallel_multiple",
        "bfcl_v4/BFCL_v4_parallel_multiple.json",
    ),
    (
        "parallel_multiple_answers",
        "bfcl_v4/possible_answer/BFCL_v4_parallel_multiple.json",
    ),
    ("simple_java", "bfcl_v4/BFCL_v4_simple_java.json"),
    (
        "simple_java_answers",
        "bfcl_v4/possible_answer/BFCL_v4_simple_java.json",
    ),
    (
        "simple_javascript",
        "bfcl_v4/BFCL_v4_simple_javascript.json",
    ),
    (
        "simple_javascript_answers",
        "bfcl_v4/possible_answer/BFCL_v4_simple_javascript.json",
    ),
    ("simple_python", "bfcl_v4/BFCL_v4_simple_python.json"),
    (
        "simple_python_answers",
        "bfcl_v4/possible_answer/BFCL_v4_simple_python.json",
    ),
];

const RULES: &[Rule] = &[
    // The whole run.
    set(
        "endpoint.stream",
        "streaming on (the online scenario streams)",
        Always,
        "true",
    ),
    absent(
        "endpoint.extra_body",
        "no extra request fields (the reference sends none; they would override sampling)",
        Always,
    ),
    set(
        "model.tokenizer",
        "tokens counted locally with the Qwen3.6 tokenizer (as the reference does)",
        Always,
        "\"qwen3.6\"",
    ),
    absent(
        "sweep",
        "one pass at the fixed concurrency (no sweep)",
        Always,
    ),
    // The performance phase.
    absent(
        "load.arrivals",
        "closed-loop sessions (no open-loop arrivals)",
        P,
    ),
    absent("load.ramp", "all sessions from the start (no ramp)", P),
    set(
        "load.concurrency",
        "single stream: target_concurrency, num_workers and max_connections are 1 \
         (check_compliance single_stream)",
        P,
        "1",
    ),
    set(
        "load.turn_timeout_s",
        "agentic_inference.turn_timeout_s 600 (online_edge_full_run.yaml)",
        P,
        "600.0",
    ),
    set(
        "load.max_duration_ms",
        "runtime.max_duration_ms 14,400,000 (online_edge_full_run.yaml)",
        P,
        "14400000",
    ),
    set(
        "performance.workload",
        "the agentic-coding replay",
        P,
        "\"coding-replay\"",
    ),
    set(
        "performance.scorer",
        "the inline IoU scorer",
        P,
        "\"shell-iou\"",
    ),
    set(
        "performance.report_file",
        "the inline report is scores.json (check_compliance reads it)",
        P,
        "\"scores.json\"",
    ),
    Rule {
        key: "performance.data",
        rule: "the full data set: agentic_coding_2.5h.jsonl as `trajectories`",
        phase: P,
        want: Want::Grants(&[("trajectories", "agentic_coding_2.5h.jsonl")]),
    },
    absent(
        "performance.scorer_data",
        "the inline scorer reads no files",
        P,
    ),
    setting(
        "performance.settings.dataset",
        "the trajectories are the `trajectories` grant",
        P,
        "\"trajectories\"",
    ),
    setting(
        "performance.settings.num_trajectories_to_issue",
        "the full data set: num_trajectories_to_issue 20 (online_edge_full_run.yaml)",
        P,
        "20",
    ),
    absent(
        "performance.settings.conversations",
        "the full data set: every conversation",
        P,
    ),
    setting(
        "performance.settings.inject_tool_delay",
        "tool delays off: inject_tool_delay false (the edge default)",
        P,
        "false",
    ),
    setting(
        "performance.settings.history",
        super::RECORDED_HISTORY,
        P,
        "\"recorded\"",
    ),
    setting("performance.settings.temperature", TEMPERATURE, P, "0"),
    setting("performance.settings.seed", SEED, P, "42"),
    setting(
        "performance.settings.max_completion_tokens",
        MAX_TOKENS,
        P,
        "1024",
    ),
    // The accuracy gate.
    set(
        "accuracy.workload",
        "the BFCL v4 single-turn gate",
        A,
        "\"bfcl-single\"",
    ),
    set(
        "accuracy.scorer",
        "BFCL's AST checker (bfcl_v4 eval method)",
        A,
        "\"bfcl-ast\"",
    ),
    set(
        "accuracy.report_file",
        "the gate's report is accuracy/accuracy_results.json (check_compliance reads it)",
        A,
        "\"accuracy/accuracy_results.json\"",
    ),
    Rule {
        key: "accuracy.data",
        rule: "the full data sets: the 22 BFCL v4 single-turn files of the gate",
        phase: A,
        want: Want::Grants(BFCL_GRANTS),
    },
    absent(
        "accuracy.scorer_data",
        "the gate's scorer reads no files",
        A,
    ),
    setting(
        "accuracy.settings.categories",
        "the full gate: categories non_live, live, hallucination",
        A,
        r#"["non_live", "live", "hallucination"]"#,
    ),
    setting(
        "accuracy.settings.sample_pct",
        "the full gate: category_sample_pct non_live 62, live 10, hallucination 10 \
         (995 samples, check_compliance min_sample_count_valid)",
        A,
        r#"{"non_live": 62, "live": 10, "hallucination": 10}"#,
    ),
    setting(
        "accuracy.settings.subset_floor",
        "the full gate: subset_floor 25",
        A,
        "25",
    ),
    setting("accuracy.settings.temperature", TEMPERATURE, A, "0"),
    setting("accuracy.settings.seed", SEED, A, "42"),
    setting(
        "accuracy.settings.max_completion_tokens",
        MAX_TOKENS,
        A,
        "1024",
    ),
    setting(
        "accuracy.settings.tool_choice",
        "tool_choice \"auto\" on every gate sample",
        A,
        "\"auto\"",
    ),
    setting(
        "accuracy.settings.language_hints",
        "no BFCL language hints (the reference applies none)",
        A,
        "false",
    ),
    setting(
        "accuracy.scorer_settings.underscore_to_dot",
        "scored as gpt-4o-2024-11-20-FC (underscore_to_dot)",
        A,
        "true",
    ),
    setting(
        "accuracy.scorer_settings.golden_overall",
        "golden BFCL overall accuracy 86.23 (Qwen3_6_27B)",
        A,
        "86.23",
    ),
    setting(
        "accuracy.scorer_settings.golden_normalized",
        "golden BFCL normalized accuracy 87.96 (Qwen3_6_27B)",
        A,
        "87.96",
    ),
    setting(
        "accuracy.scorer_settings.gate_factor",
        "accuracy gate at 0.97 of the golden values",
        A,
        "0.97",
    ),
    setting(
        "accuracy.scorer_settings.fix_int_in_float_arrays",
        "BFCL's checker as the reference runs it (no fixes)",
        A,
        "false",
    ),
    setting(
        "accuracy.scorer_settings.fix_malformed_abstention",
        "BFCL's checker as the reference runs it (no fixes)",
        A,
        "false",
    ),
];
