//! MLPerf datacenter Agentic Inference under the Endpoints Rules v1.0: the
//! reference's official-submission rules (`examples/10_Agentic_Inference/
//! README.md`) and its two model configs (`kimi_agentic_benchmark.yaml`,
//! `qwen_agentic_benchmark.yaml`) in agentload's config keys. One ruleset
//! per model: their locked sampling differs.
//!
//! The SWE-bench accuracy phase is `[accuracy] workload = "swe-bench"`
//! (eval_method `swe_bench_scorer`), run with `--mode both` against the
//! reference's SWE-bench service; it always runs once (`num_repeats` 1 has no
//! key). `stop_issuing_on_first_user_complete` must be false, which is what
//! agentload does (the tail drains); it has no key either.

use super::{absent, set, setting, Phase, Rule, Ruleset, Want};

use Phase::{Accuracy as A, Always, Performance as P};

const SOURCE: &str =
    "mlcommons/endpoints@ea33275: examples/10_Agentic_Inference/README.md and its \
                      YAMLs; MLPerf Endpoints Rules v1.0";

/// The rules both models share, then `extra` (the model's sampling).
macro_rules! datacenter_rules {
    ($($extra:expr),* $(,)?) => {
        &[
            set("endpoint.stream", "streaming on (streaming \"on\")", Always, "true"),
            set(
                "endpoint.ttft_trigger",
                "TTFT as the reference's client stops it (any tool-call delta counts)",
                Always,
                "\"reference\"",
            ),
            set(
                "endpoint.include_usage",
                "no stream_options in the request (the reference's request has no such field)",
                Always,
                "false",
            ),
            absent("sweep", "one point per run, at its concurrency (points are separate runs)", Always),
            absent("load.arrivals", "closed-loop slots (no open-loop arrivals)", P),
            absent("load.ramp", "every slot from the start (no ramp)", P),
            set(
                "performance.workload",
                "the agentic trajectory replay",
                P,
                "\"coding-replay\"",
            ),
            Rule {
                key: "performance.settings.num_trajectories_to_issue",
                rule: "num_trajectories_to_issue is a positive multiple of 613 (README, official submission)",
                phase: P,
                want: Want::MultipleOf(613),
            },
            set(
                "performance.settings.enable_salt",
                "enable_salt: true (README, official submission)",
                P,
                "true",
            ),
            set(
                "performance.settings.salt_mode",
                "the reference's salts (16-bit BLAKE2b of repeat and conversation id)",
                P,
                "\"reference\"",
            ),
            set(
                "performance.settings.inject_tool_delay",
                "inject_tool_delay: true (README, official submission)",
                P,
                "true",
            ),
            set(
                "performance.settings.send_seed",
                "no seed is configured, so none is sent (README: any other parameter must be omitted)",
                P,
                "false",
            ),
            absent("performance.settings.conversations", "the full data set: every conversation", P),
            setting("performance.settings.history", super::RECORDED_HISTORY, P, "\"recorded\""),
            set(
                "performance.settings.max_completion_tokens",
                "max_new_tokens 8192 (locked sampling)",
                P,
                "8192",
            ),
            set(
                "accuracy.workload",
                "the SWE-bench accuracy phase (eval_method swe_bench_scorer, 200 instances, run with --mode both)",
                A,
                "\"swe-bench\"",
            ),
            set(
                "accuracy.settings.num_instances",
                "SWE-bench num_instances: 200 (README, official submission)",
                A,
                "200",
            ),
            $($extra,)*
        ]
    };
}

/// Qwen3.6-35B-A3B: temperature 1.0, top_k 20, top_p 0.95, repetition
/// penalty 1.0, presence penalty 1.5, `preserve_thinking`.
pub const QWEN: Ruleset = Ruleset {
    name: "mlperf-datacenter-agentic-v1.0-qwen3.6",
    version: "datacenter agentic, Endpoints Rules v1.0, Qwen3.6-35B-A3B (agentload rules 1)",
    source: SOURCE,
    rules: datacenter_rules![
        set("performance.settings.temperature", "temperature 1.0 (locked sampling)", P, "1.0"),
        set("performance.settings.top_p", "top_p 0.95 (locked sampling)", P, "0.95"),
        set("performance.settings.top_k", "top_k 20 (locked sampling)", P, "20"),
        set(
            "endpoint.extra_body",
            "repetition_penalty 1.0, presence_penalty 1.5, chat_template_kwargs.preserve_thinking true \
             (locked sampling), nothing else",
            Always,
            r#"{"repetition_penalty": 1.0, "presence_penalty": 1.5, "chat_template_kwargs": {"preserve_thinking": true}}"#,
        ),
        set(
            "accuracy.settings.swebench_template",
            "Qwen sets swebench_template qwen_tools (README)",
            A,
            "\"qwen_tools\"",
        ),
    ],
    closed: &[],
    point_metrics: true,
};

/// Kimi K3: temperature 1.0, top_p 1.0, nothing else.
pub const KIMI: Ruleset = Ruleset {
    name: "mlperf-datacenter-agentic-v1.0-kimi-k3",
    version: "datacenter agentic, Endpoints Rules v1.0, Kimi K3 (agentload rules 1)",
    source: SOURCE,
    rules: datacenter_rules![
        set(
            "performance.settings.temperature",
            "temperature 1.0 (locked sampling)",
            P,
            "1.0"
        ),
        set(
            "performance.settings.top_p",
            "top_p 1.0 (locked sampling)",
            P,
            "1.0"
        ),
        absent(
            "performance.settings.top_k",
            "no top_k (any other parameter must be omitted)",
            P
        ),
        absent(
            "endpoint.extra_body",
            "no other request field (any other parameter or thinking flag must be omitted)",
            Always,
        ),
        absent(
            "accuracy.settings.swebench_template",
            "Kimi omits swebench_template (README)",
            A,
        ),
    ],
    closed: &[],
    point_metrics: true,
};
