//! The metric names agentload knows, from each project's documentation,
//! and the named field each maps to. Several projects map onto one field
//! (`requests_running` is llama.cpp's `requests_processing`, vLLM's
//! `num_requests_running` and SGLang's `num_running_reqs`), so a report
//! reads the same field whatever the server.

/// The project a metric comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    LlamaCpp,
    Vllm,
    Sglang,
    Dcgm,
}

impl Family {
    /// The name in the results.
    pub fn name(self) -> &'static str {
        match self {
            Family::LlamaCpp => "llama.cpp",
            Family::Vllm => "vllm",
            Family::Sglang => "sglang",
            Family::Dcgm => "dcgm",
        }
    }
}

/// A counter only grows (a summary gives its increase over the phase); a
/// gauge is a level (a summary gives its mean and maximum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

/// How the series of one metric (one per engine, rank or GPU) combine
/// into the field: counts add up, ratios are averaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    Sum,
    Mean,
}

/// A per-GPU quantity (DCGM's series carry a `gpu` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuField {
    PowerW,
    EnergyJ,
    UtilPct,
    MemoryUsedMib,
}

/// One known metric.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    pub metric: &'static str,
    pub field: &'static str,
    pub family: Family,
    pub kind: Kind,
    pub combine: Combine,
    /// Multiplies the value into the field's unit (DCGM's mJ into J).
    pub scale: f64,
    pub gpu: Option<GpuField>,
}

const fn known(
    metric: &'static str,
    field: &'static str,
    family: Family,
    kind: Kind,
    combine: Combine,
) -> Known {
    Known {
        metric,
        field,
        family,
        kind,
        combine,
        scale: 1.0,
        gpu: None,
    }
}

const fn gpu(
    metric: &'static str,
    field: &'static str,
    kind: Kind,
    scale: f64,
    g: GpuField,
) -> Known {
    let combine = match g {
        GpuField::UtilPct => Combine::Mean,
        _ => Combine::Sum,
    };
    Known {
        metric,
        field,
        family: Family::Dcgm,
        kind,
        combine,
        scale,
        gpu: Some(g),
    }
}

use Combine::{Mean, Sum};
use Family::{LlamaCpp, Sglang, Vllm};
use Kind::{Counter, Gauge};

/// Every known metric. Where two names fill one field (an older and a newer
/// spelling), the first one a page has wins.
pub const KNOWN: &[Known] = &[
    // llama.cpp, `llama-server --metrics`. Its prompt counter leaves out the
    // tokens reused from the cache; those have their own counter.
    known(
        "llamacpp:prompt_tokens_total",
        "prompt_tokens_processed_total",
        LlamaCpp,
        Counter,
        Sum,
    ),
    known(
        "llamacpp:prompt_tokens_cached_total",
        "prompt_tokens_cached_total",
        LlamaCpp,
        Counter,
        Sum,
    ),
    known(
        "llamacpp:tokens_predicted_total",
        "generation_tokens_total",
        LlamaCpp,
        Counter,
        Sum,
    ),
    known(
        "llamacpp:n_decode_total",
        "decode_calls_total",
        LlamaCpp,
        Counter,
        Sum,
    ),
    known(
        "llamacpp:requests_processing",
        "requests_running",
        LlamaCpp,
        Gauge,
        Sum,
    ),
    known(
        "llamacpp:requests_deferred",
        "requests_waiting",
        LlamaCpp,
        Gauge,
        Sum,
    ),
    // Builds before the KV-cache refactor exported these two.
    known(
        "llamacpp:kv_cache_usage_ratio",
        "kv_cache_usage",
        LlamaCpp,
        Gauge,
        Mean,
    ),
    known(
        "llamacpp:kv_cache_tokens",
        "kv_cache_tokens",
        LlamaCpp,
        Gauge,
        Sum,
    ),
    // vLLM (`/metrics` on the API server); V1 names first, then V0's.
    known(
        "vllm:num_requests_running",
        "requests_running",
        Vllm,
        Gauge,
        Sum,
    ),
    known(
        "vllm:num_requests_waiting",
        "requests_waiting",
        Vllm,
        Gauge,
        Sum,
    ),
    known(
        "vllm:kv_cache_usage_perc",
        "kv_cache_usage",
        Vllm,
        Gauge,
        Mean,
    ),
    known(
        "vllm:gpu_cache_usage_perc",
        "kv_cache_usage",
        Vllm,
        Gauge,
        Mean,
    ),
    known(
        "vllm:prefix_cache_hits_total",
        "prefix_cache_hits_total",
        Vllm,
        Counter,
        Sum,
    ),
    known(
        "vllm:prefix_cache_queries_total",
        "prefix_cache_queries_total",
        Vllm,
        Counter,
        Sum,
    ),
    known(
        "vllm:num_preemptions_total",
        "preemptions_total",
        Vllm,
        Counter,
        Sum,
    ),
    known(
        "vllm:prompt_tokens_total",
        "prompt_tokens_total",
        Vllm,
        Counter,
        Sum,
    ),
    known(
        "vllm:generation_tokens_total",
        "generation_tokens_total",
        Vllm,
        Counter,
        Sum,
    ),
    // SGLang (`--enable-metrics`).
    known(
        "sglang:num_running_reqs",
        "requests_running",
        Sglang,
        Gauge,
        Sum,
    ),
    known(
        "sglang:num_queue_reqs",
        "requests_waiting",
        Sglang,
        Gauge,
        Sum,
    ),
    known("sglang:token_usage", "kv_cache_usage", Sglang, Gauge, Mean),
    known(
        "sglang:cache_hit_rate",
        "prefix_cache_hit_rate",
        Sglang,
        Gauge,
        Mean,
    ),
    known(
        "sglang:prompt_tokens_total",
        "prompt_tokens_total",
        Sglang,
        Counter,
        Sum,
    ),
    known(
        "sglang:generation_tokens_total",
        "generation_tokens_total",
        Sglang,
        Counter,
        Sum,
    ),
    known(
        "sglang:cached_tokens_total",
        "prompt_tokens_cached_total",
        Sglang,
        Counter,
        Sum,
    ),
    // NVIDIA DCGM exporter, one series per GPU (`gpu` label).
    gpu(
        "DCGM_FI_DEV_POWER_USAGE",
        "power_w",
        Gauge,
        1.0,
        GpuField::PowerW,
    ),
    gpu(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "energy_j_total",
        Counter,
        1e-3,
        GpuField::EnergyJ,
    ),
    gpu(
        "DCGM_FI_DEV_GPU_UTIL",
        "gpu_util_pct",
        Gauge,
        1.0,
        GpuField::UtilPct,
    ),
    gpu(
        "DCGM_FI_DEV_FB_USED",
        "gpu_memory_used_mib",
        Gauge,
        1.0,
        GpuField::MemoryUsedMib,
    ),
];

/// Whether a field is a counter (by its name's table entry).
pub fn field_kind(field: &str) -> Option<Kind> {
    KNOWN.iter().find(|k| k.field == field).map(|k| k.kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_has_one_kind_and_a_metric_one_entry() {
        for a in KNOWN {
            assert_eq!(field_kind(a.field), Some(a.kind), "{}", a.metric);
            assert_eq!(
                a.kind == Kind::Counter,
                a.field.ends_with("_total"),
                "{}",
                a.field
            );
            assert_eq!(
                KNOWN.iter().filter(|b| b.metric == a.metric).count(),
                1,
                "{}",
                a.metric
            );
        }
    }
}
