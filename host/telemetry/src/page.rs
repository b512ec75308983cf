//! One Prometheus page, parsed (by `prom_text_format_parser`) and mapped
//! onto named fields ([`crate::known`]), per-GPU readings and the metrics a
//! config captures by name.

use crate::known::{Combine, Family, GpuField, KNOWN};
use crate::sample::GpuSample;
use prom_text_format_parser::{Metric, ScrapeParseError, Type, ValueType};
use std::collections::{BTreeMap, BTreeSet};

/// What a page held.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Mapped {
    pub fields: BTreeMap<String, f64>,
    pub gpus: Vec<GpuSample>,
    pub captured: BTreeMap<String, f64>,
    pub families: BTreeSet<Family>,
    /// Lines the parser could not read (the rest of the page is kept).
    pub error: Option<String>,
}

/// Parses `text` and maps it; `capture` names metrics kept as they are.
pub fn map(text: &str, capture: &[String]) -> Mapped {
    let (metrics, error) = prom_text_format_parser::parse_scrape(text);
    let mut mapped = Mapped {
        error: error.map(|e| describe(&e)),
        ..Mapped::default()
    };
    // A name may come back as several metrics when its lines are not
    // together (the format asks for them together; not every exporter does).
    let mut by_name: BTreeMap<&str, Vec<&Metric>> = BTreeMap::new();
    for m in &metrics {
        by_name.entry(m.name.as_str()).or_default().push(m);
    }
    let mut gpus: BTreeMap<u32, GpuSample> = BTreeMap::new();
    for known in KNOWN {
        let Some(found) = by_name.get(known.metric) else {
            continue;
        };
        let values: Vec<(Option<&str>, f64)> = found
            .iter()
            .flat_map(|m| m.samples.iter())
            .filter(|s| s.value.value_type == ValueType::Sample)
            .filter_map(|s| {
                let v = value(s.value.value.as_str())? * known.scale;
                let gpu = s
                    .labels
                    .iter()
                    .find(|l| l.key == "gpu")
                    .map(|l| l.value.as_str());
                Some((gpu, v))
            })
            .collect();
        if values.is_empty() {
            continue;
        }
        mapped.families.insert(known.family);
        if let Some(field) = known.gpu {
            for (index, v) in &values {
                let Some(index) = index.and_then(|i| i.parse::<u32>().ok()) else {
                    continue;
                };
                let g = gpus.entry(index).or_insert_with(|| GpuSample::new(index));
                let slot = match field {
                    GpuField::PowerW => &mut g.power_w,
                    GpuField::EnergyJ => &mut g.energy_j,
                    GpuField::UtilPct => &mut g.util_pct,
                    GpuField::MemoryUsedMib => &mut g.memory_used_mib,
                };
                *slot = Some(*v);
            }
        }
        if mapped.fields.contains_key(known.field) {
            continue;
        }
        let sum: f64 = values.iter().map(|(_, v)| v).sum();
        let v = match known.combine {
            Combine::Sum => sum,
            Combine::Mean => sum / values.len() as f64,
        };
        mapped.fields.insert(known.field.to_owned(), v);
    }
    mapped.gpus = gpus.into_values().collect();
    for name in capture {
        for metric in &metrics {
            captured(metric, name, &mut mapped.captured);
        }
    }
    mapped
}

/// The series of `metric` that `name` asks for: all of them when `name` is
/// the metric's name, or one part of a histogram or summary (`_sum`,
/// `_count`, `_bucket`).
fn captured(metric: &Metric, name: &str, out: &mut BTreeMap<String, f64>) {
    for sample in &metric.samples {
        let suffix = match (metric.kind, sample.value.value_type) {
            (Type::Histogram, ValueType::Sample) => "_bucket",
            (_, ValueType::Sum) => "_sum",
            (_, ValueType::Count) => "_count",
            _ => "",
        };
        let full = format!("{}{suffix}", metric.name);
        if name != metric.name && name != full {
            continue;
        }
        if let Some(v) = value(sample.value.value.as_str()) {
            out.insert(format!("{full}{}", sample.labels), v);
        }
    }
}

/// A finite sample value (JSON holds no NaN or infinity).
fn value(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn describe(e: &ScrapeParseError) -> String {
    let text = match e {
        ScrapeParseError::Parse(m) => format!("not the Prometheus text format: {m}"),
        ScrapeParseError::Collect(errors) => format!(
            "{} metric(s) could not be read: {}",
            errors.len(),
            errors
                .iter()
                .take(3)
                .map(|e| format!("{e:?}"))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    };
    text.chars().take(400).collect()
}

#[cfg(test)]
mod tests {
    //! Pages written from each project's documented metric names (vLLM's
    //! and SGLang's "Production Metrics" pages, dcgm-exporter's default
    //! counters, llama.cpp's `server-task.cpp`), with the labels, HELP and
    //! TYPE lines and histograms real pages carry.
    use super::*;

    const LLAMA_CPP: &str = "\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1200
# HELP llamacpp:prompt_tokens_cached_total Number of prompt tokens reused from the cache
# TYPE llamacpp:prompt_tokens_cached_total counter
llamacpp:prompt_tokens_cached_total 800
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 345
# TYPE llamacpp:prompt_tokens_seconds gauge
llamacpp:prompt_tokens_seconds 512.25
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 3
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 1
";

    const VLLM: &str = r#"# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 12.0
vllm:num_requests_running{engine="1",model_name="Qwen/Qwen3-8B"} 10.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-8B"} 4.0
vllm:num_requests_waiting{engine="1",model_name="Qwen/Qwen3-8B"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="Qwen/Qwen3-8B"} 0.25
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="Qwen/Qwen3-8B"} 1.0e+06
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen3-8B"} 750000.0
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="Qwen/Qwen3-8B"} 7.0
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="Qwen/Qwen3-8B"} 2.5e+06
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="Qwen/Qwen3-8B"} 40000.0
# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",model_name="Qwen/Qwen3-8B"} 2.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen3-8B"} 9.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="Qwen/Qwen3-8B"} 9.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="Qwen/Qwen3-8B"} 20.5
"#;

    const SGLANG: &str = r#"# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 8.128902e+06
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 7.557572e+06
# HELP sglang:token_usage The token usage
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.28
# HELP sglang:cache_hit_rate The cache hit rate
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.007507552643049313
# HELP sglang:num_running_reqs The number of running requests
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 162.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct"} 2826.0
"#;

    const DCGM: &str = r#"# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a1",device="nvidia0",modelName="NVIDIA H200",Hostname="node-1"} 61
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-b2",device="nvidia1",modelName="NVIDIA H200",Hostname="node-1"} 58
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a1",device="nvidia0",modelName="NVIDIA H200",Hostname="node-1"} 612.5
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-b2",device="nvidia1",modelName="NVIDIA H200",Hostname="node-1"} 587.5
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-a1",device="nvidia0",modelName="NVIDIA H200",Hostname="node-1"} 9876543210
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="1",UUID="GPU-b2",device="nvidia1",modelName="NVIDIA H200",Hostname="node-1"} 1234567890
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a1",device="nvidia0",modelName="NVIDIA H200",Hostname="node-1"} 100
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b2",device="nvidia1",modelName="NVIDIA H200",Hostname="node-1"} 90
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a1",device="nvidia0",modelName="NVIDIA H200",Hostname="node-1"} 130000
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-b2",device="nvidia1",modelName="NVIDIA H200",Hostname="node-1"} 120000
"#;

    fn fields(m: &Mapped) -> Vec<(&str, f64)> {
        m.fields.iter().map(|(k, v)| (k.as_str(), *v)).collect()
    }

    #[test]
    fn a_llama_cpp_page_maps_its_counters_and_queue() {
        let m = map(LLAMA_CPP, &[]);
        assert_eq!(m.error, None);
        assert_eq!(m.families, BTreeSet::from([Family::LlamaCpp]));
        assert_eq!(
            fields(&m),
            [
                ("generation_tokens_total", 345.0),
                ("prompt_tokens_cached_total", 800.0),
                ("prompt_tokens_processed_total", 1200.0),
                ("requests_running", 3.0),
                ("requests_waiting", 1.0),
            ]
        );
    }

    #[test]
    fn a_vllm_page_sums_counts_over_engines_and_averages_cache_usage() {
        let m = map(VLLM, &["vllm:e2e_request_latency_seconds".into()]);
        assert_eq!(m.error, None);
        assert_eq!(m.families, BTreeSet::from([Family::Vllm]));
        assert_eq!(
            fields(&m),
            [
                ("generation_tokens_total", 40000.0),
                ("kv_cache_usage", 0.375),
                ("preemptions_total", 7.0),
                ("prefix_cache_hits_total", 750000.0),
                ("prefix_cache_queries_total", 1e6),
                ("prompt_tokens_total", 2.5e6),
                ("requests_running", 22.0),
                ("requests_waiting", 4.0),
            ]
        );
        // A captured histogram keeps every series, `+Inf` bucket included.
        let captured: Vec<&str> = m.captured.keys().map(String::as_str).collect();
        assert_eq!(captured.len(), 4, "{captured:?}");
        assert_eq!(
            m.captured[r#"vllm:e2e_request_latency_seconds_sum{engine="0",model_name="Qwen/Qwen3-8B"}"#],
            20.5
        );
        assert!(captured.iter().any(|k| k.contains(r#"le="+Inf""#)));
        // Capturing one part of it keeps only that part.
        let m = map(VLLM, &["vllm:e2e_request_latency_seconds_count".into()]);
        assert_eq!(m.captured.len(), 1);
        // The V0 spelling of KV-cache usage fills the same field.
        let v0 = "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.9\n";
        assert_eq!(fields(&map(v0, &[])), [("kv_cache_usage", 0.9)]);
    }

    #[test]
    fn an_sglang_page_maps_running_queue_usage_and_hit_rate() {
        let m = map(SGLANG, &[]);
        assert_eq!(m.error, None);
        assert_eq!(m.families, BTreeSet::from([Family::Sglang]));
        assert_eq!(
            fields(&m),
            [
                ("generation_tokens_total", 7.557572e6),
                ("kv_cache_usage", 0.28),
                ("prefix_cache_hit_rate", 0.007507552643049313),
                ("prompt_tokens_total", 8.128902e6),
                ("requests_running", 162.0),
                ("requests_waiting", 2826.0),
            ]
        );
    }

    #[test]
    fn a_dcgm_page_maps_each_gpu_and_the_totals() {
        let m = map(DCGM, &["DCGM_FI_DEV_GPU_TEMP".into()]);
        assert_eq!(m.error, None);
        assert_eq!(m.families, BTreeSet::from([Family::Dcgm]));
        assert_eq!(
            fields(&m),
            [
                ("energy_j_total", 9876543210.0 * 1e-3 + 1234567890.0 * 1e-3),
                ("gpu_memory_used_mib", 250000.0),
                ("gpu_util_pct", 95.0),
                ("power_w", 1200.0),
            ]
        );
        assert_eq!(m.gpus.len(), 2);
        let g1 = &m.gpus[1];
        assert_eq!(g1.index, 1);
        assert_eq!(g1.power_w, Some(587.5));
        assert_eq!(g1.energy_j, Some(1234567890.0 * 1e-3));
        assert_eq!(g1.util_pct, Some(90.0));
        assert_eq!(g1.memory_used_mib, Some(120000.0));
        assert_eq!(m.captured.len(), 2);
    }

    #[test]
    fn several_servers_on_one_page_and_nan_values() {
        let page = format!("{LLAMA_CPP}{DCGM}my_gauge NaN\n");
        let m = map(&page, &["my_gauge".into()]);
        assert_eq!(m.families, BTreeSet::from([Family::LlamaCpp, Family::Dcgm]));
        assert!(m.captured.is_empty(), "NaN is not kept: {:?}", m.captured);
    }

    #[test]
    fn a_metrics_lines_apart_are_still_one_metric() {
        let page = "\
DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 500
DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 90
DCGM_FI_DEV_POWER_USAGE{gpu=\"1\"} 300
DCGM_FI_DEV_GPU_UTIL{gpu=\"1\"} 70
";
        let m = map(page, &[]);
        assert_eq!(m.gpus.len(), 2, "{m:?}");
        assert_eq!(m.fields["power_w"], 800.0);
        assert_eq!(m.fields["gpu_util_pct"], 80.0);
    }

    #[test]
    fn a_page_that_is_not_the_text_format_is_an_error_not_zeros() {
        let m = map("<html><body>Not Found</body></html>", &[]);
        assert!(m.fields.is_empty());
        assert!(m.error.is_some(), "{m:?}");
    }
}
