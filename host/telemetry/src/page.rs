//! One Prometheus page (the text exposition format), read a line at a time
//! and mapped onto named fields ([`crate::known`]), per-GPU readings and the
//! metrics a config captures by name.
//!
//! A page comes from the server under test, inside the process that
//! generates the load, so reading it is bounded: every line is checked,
//! but only the lines of a known or captured metric are kept, at most
//! [`MAX_KNOWN_SERIES`] series of each known metric and
//! [`MAX_CAPTURED_SERIES`] captured ones, so a page of a million series costs
//! one pass over its bytes, not a million parsed metrics. What is odd about
//! a page is said in its notes, and the rest of the page is kept: a line
//! that cannot be read, a series given twice (the last one is kept, never
//! added to the first), the series cut at the bound, a value outside its
//! field's range. Only a page of which no line can be read is an error.

use crate::known::{Combine, Family, GpuField, KNOWN};
use crate::sample::GpuSample;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Series of one known metric kept from a page (a node's GPUs, an engine's
/// ranks: far fewer).
pub const MAX_KNOWN_SERIES: usize = 4096;

/// Series of the captured metrics kept from a page, all names together.
pub const MAX_CAPTURED_SERIES: usize = 1000;

/// Lines (or series) a note names; the others are counted.
const NAMED: usize = 3;

/// Bytes of a bad line shown in a note.
const SHOWN_BYTES: usize = 80;

/// What a page held.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Mapped {
    pub fields: BTreeMap<String, f64>,
    pub gpus: Vec<GpuSample>,
    pub captured: BTreeMap<String, f64>,
    pub families: BTreeSet<Family>,
    /// Why nothing of the page could be read (not the text format).
    pub error: Option<String>,
    /// What was odd about the page or cut from it; the rest was kept.
    pub notes: Vec<String>,
}

/// A metric's `# TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Histogram,
    Summary,
    Other,
}

/// One kept series: its `gpu` label, its value.
#[derive(Debug)]
struct Series<'a> {
    gpu: Option<&'a str>,
    value: f64,
}

/// What the pass over the page kept and saw.
#[derive(Default)]
struct Pass<'a> {
    /// Known metrics' series by metric name, each series once (by labels).
    known: HashMap<&'a str, (Vec<Series<'a>>, HashMap<String, usize>)>,
    captured: BTreeMap<String, f64>,
    types: HashMap<&'a str, Kind>,
    good: usize,
    bad: Vec<(usize, &'a str)>,
    bad_count: usize,
    duplicates: Vec<String>,
    duplicate_count: usize,
    /// Series over the bound, by metric name.
    cut: BTreeMap<&'a str, u64>,
}

/// Parses `text` and maps it; `capture` names metrics kept as they are.
pub fn map(text: &str, capture: &[String]) -> Mapped {
    let mut pass = Pass::default();
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.trim_matches([' ', '\t', '\r']);
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            pass.comment(comment, capture);
            continue;
        }
        match sample_line(line) {
            Some(sample) => {
                pass.good += 1;
                pass.keep(sample, capture);
            }
            None => {
                pass.bad_count += 1;
                if pass.bad.len() < NAMED {
                    pass.bad.push((i + 1, line));
                }
            }
        }
    }
    pass.finish()
}

/// A sample line's parts, the labels' text unparsed (`k="v",...`).
struct SampleLine<'a> {
    name: &'a str,
    labels: &'a str,
    value: f64,
}

/// Reads `name{labels} value [timestamp]`; `None` when the line is not one.
fn sample_line(line: &str) -> Option<SampleLine<'_>> {
    let name_end = line.find(['{', ' ', '\t']).unwrap_or(line.len());
    let name = &line[..name_end];
    if !metric_name(name) {
        return None;
    }
    let mut rest = line[name_end..].trim_start_matches([' ', '\t']);
    let mut labels = "";
    if let Some(after) = rest.strip_prefix('{') {
        let close = labels_end(after)?;
        labels = &after[..close];
        rest = &after[close + 1..];
    }
    let mut tokens = rest.split([' ', '\t']).filter(|t| !t.is_empty());
    let value: f64 = tokens.next()?.parse().ok()?;
    if let Some(timestamp) = tokens.next() {
        timestamp.parse::<i64>().ok()?;
    }
    if tokens.next().is_some_and(|t| !t.starts_with('#')) {
        return None;
    }
    Some(SampleLine {
        name,
        labels,
        value,
    })
}

/// Whether `name` is a metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
fn metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// The index of the `}` that closes labels beginning at `text`'s start,
/// checking their shape (`name="value"`, comma-separated, a trailing comma
/// allowed, `\\`, `\"` and `\n` escapes in values).
fn labels_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    let skip_blank = |i: &mut usize| {
        while *i < bytes.len() && (bytes[*i] == b' ' || bytes[*i] == b'\t') {
            *i += 1;
        }
    };
    loop {
        skip_blank(&mut i);
        if bytes.get(i) == Some(&b'}') {
            return Some(i);
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if i == start || bytes[start].is_ascii_digit() {
            return None;
        }
        skip_blank(&mut i);
        if bytes.get(i) != Some(&b'=') {
            return None;
        }
        i += 1;
        skip_blank(&mut i);
        if bytes.get(i) != Some(&b'"') {
            return None;
        }
        i += 1;
        loop {
            match bytes.get(i)? {
                b'\\' => i += 2,
                b'"' => break,
                b'\n' => return None,
                _ => i += 1,
            }
        }
        i += 1;
        skip_blank(&mut i);
        match bytes.get(i)? {
            b',' => i += 1,
            b'}' => return Some(i),
            _ => return None,
        }
    }
}

/// The labels' pairs (`labels_end` checked their shape): keys and raw values.
fn pairs(labels: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = labels;
    while let Some(eq) = rest.find('=') {
        let key = rest[..eq].trim_matches([' ', '\t', ',']);
        let after = rest[eq + 1..].trim_start_matches([' ', '\t']);
        let Some(body) = after.strip_prefix('"') else {
            break;
        };
        let bytes = body.as_bytes();
        let mut i = 0;
        while i < bytes.len() && bytes[i] != b'"' {
            i += if bytes[i] == b'\\' { 2 } else { 1 };
        }
        let i = i.min(body.len());
        out.push((key, &body[..i]));
        rest = body.get(i + 1..).unwrap_or("");
    }
    out
}

/// The labels as a series key shows them: `{k="v",k2="v2"}`, or nothing.
fn labels_key(pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    format!("{{{}}}", inner.join(","))
}

/// The range a field's values lie in.
fn range(field: &str) -> (f64, f64) {
    match field {
        "kv_cache_usage" | "prefix_cache_hit_rate" => (0.0, 1.0),
        "gpu_util_pct" => (0.0, 100.0),
        _ => (0.0, f64::INFINITY),
    }
}

impl<'a> Pass<'a> {
    /// `# TYPE name kind` of a metric it keeps; other comments are skipped.
    fn comment(&mut self, comment: &'a str, capture: &[String]) {
        let mut words = comment.split([' ', '\t']).filter(|w| !w.is_empty());
        if words.next() != Some("TYPE") {
            return;
        }
        let (Some(name), Some(kind)) = (words.next(), words.next()) else {
            return;
        };
        if capture.iter().any(|c| c == name) {
            let kind = match kind {
                "histogram" => Kind::Histogram,
                "summary" => Kind::Summary,
                _ => Kind::Other,
            };
            self.types.insert(name, kind);
        }
    }

    /// Keeps `s` when it is a known or a captured metric's series.
    fn keep(&mut self, s: SampleLine<'a>, capture: &[String]) {
        if let Some(known) = KNOWN.iter().find(|k| k.metric == s.name) {
            let (series, seen) = self.known.entry(known.metric).or_default();
            let pairs = pairs(s.labels);
            let labels = labels_key(&pairs);
            if let Some(&at) = seen.get(&labels) {
                series[at].value = s.value;
                self.duplicate(s.name, &labels);
            } else if series.len() < MAX_KNOWN_SERIES {
                seen.insert(labels, series.len());
                let gpu = pairs.iter().find(|(k, _)| *k == "gpu").map(|(_, v)| *v);
                series.push(Series {
                    gpu,
                    value: s.value,
                });
            } else {
                *self.cut.entry(s.name).or_insert(0) += 1;
            }
        }
        if capture.is_empty() || !self.captures(s.name, capture) {
            return;
        }
        if !s.value.is_finite() {
            return; // JSON holds no NaN or infinity
        }
        let key = format!("{}{}", s.name, labels_key(&pairs(s.labels)));
        if self.captured.contains_key(&key) {
            self.duplicate(s.name, &key[s.name.len()..]);
            self.captured.insert(key, s.value);
        } else if self.captured.len() < MAX_CAPTURED_SERIES {
            self.captured.insert(key, s.value);
        } else {
            *self.cut.entry(s.name).or_insert(0) += 1;
        }
    }

    /// Whether a line of metric `name` is captured: `name` is asked for, or
    /// it is `_bucket`, `_sum` or `_count` of an asked-for histogram or summary.
    fn captures(&self, name: &str, capture: &[String]) -> bool {
        capture.iter().any(|c| {
            name == c
                || name.strip_prefix(c.as_str()).is_some_and(|suffix| {
                    let kind = self.types.get(c.as_str()).copied();
                    match suffix {
                        "_bucket" => kind == Some(Kind::Histogram),
                        "_sum" | "_count" => {
                            matches!(kind, Some(Kind::Histogram | Kind::Summary))
                        }
                        _ => false,
                    }
                })
        })
    }

    fn duplicate(&mut self, name: &str, labels: &str) {
        self.duplicate_count += 1;
        if self.duplicates.len() < NAMED {
            self.duplicates.push(format!("{name}{labels}"));
        }
    }

    fn finish(self) -> Mapped {
        let mut mapped = Mapped::default();
        let mut gpus: BTreeMap<u32, GpuSample> = BTreeMap::new();
        for known in KNOWN {
            let Some((series, _)) = self.known.get(known.metric) else {
                continue;
            };
            let values: Vec<(Option<&str>, f64)> = series
                .iter()
                .filter(|s| s.value.is_finite())
                .map(|s| (s.gpu, s.value * known.scale))
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
        mapped.captured = self.captured;
        let shown = |lines: &[(usize, &str)]| -> String {
            lines
                .iter()
                .map(|(n, l)| {
                    format!(
                        "line {n}: {}",
                        agentload_console::quote(l.as_bytes(), SHOWN_BYTES)
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        if self.good == 0 && self.bad_count > 0 {
            mapped.error = Some(format!(
                "not the Prometheus text format: {}",
                shown(&self.bad[..1])
            ));
            return mapped;
        }
        if self.bad_count > 0 {
            mapped.notes.push(format!(
                "{} line{} could not be read: {}",
                self.bad_count,
                if self.bad_count == 1 { "" } else { "s" },
                shown(&self.bad)
            ));
        }
        if self.duplicate_count > 0 {
            mapped.notes.push(format!(
                "{} duplicate series (the last of each kept): {}{}",
                self.duplicate_count,
                self.duplicates
                    .iter()
                    .map(|d| agentload_console::escape(d).into_owned())
                    .collect::<Vec<_>>()
                    .join(", "),
                if self.duplicate_count > self.duplicates.len() {
                    ", ..."
                } else {
                    ""
                }
            ));
        }
        if !self.cut.is_empty() {
            let each: Vec<String> = self
                .cut
                .iter()
                .map(|(name, n)| format!("{n} of {name}"))
                .collect();
            mapped.notes.push(format!(
                "series over the bound, cut: {} (kept: {MAX_KNOWN_SERIES} of each known metric, \
                 {MAX_CAPTURED_SERIES} captured)",
                each.join(", ")
            ));
        }
        for (field, v) in &mapped.fields {
            let (lo, hi) = range(field);
            if !(lo..=hi).contains(v) {
                mapped.notes.push(if hi.is_finite() {
                    format!("{field} = {v} is outside {lo}..{hi}")
                } else {
                    format!("{field} = {v} is below {lo}")
                });
            }
        }
        mapped
    }
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
    fn a_bad_line_is_noted_and_the_rest_of_the_page_kept() {
        let page = format!("{LLAMA_CPP}llamacpp:broken{{x=\"1\" 3\n\0\x1b[2J garbage\n");
        let m = map(&page, &[]);
        assert_eq!(m.error, None);
        assert_eq!(m.fields.len(), 5, "{m:?}");
        assert_eq!(m.notes.len(), 1, "{m:?}");
        let note = &m.notes[0];
        assert!(note.starts_with("2 lines could not be read: line 15: `llamacpp:broken{x=\"1\" 3`; line 16: `\\u{0}\\u{1b}[2J garbage`"), "{note}");
        assert!(!note.chars().any(char::is_control), "{note}");
    }

    #[test]
    fn a_duplicate_series_keeps_the_last_and_is_noted() {
        let page = "\
vllm:kv_cache_usage_perc{engine=\"0\"} 0.75
vllm:kv_cache_usage_perc{engine=\"1\"} 0.25
vllm:kv_cache_usage_perc{engine=\"0\"} 1
DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 500
DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 400
";
        let m = map(page, &[]);
        // (1 + 0.25) / 2, never (0.75 + 0.25 + 1) / 3 or a sum.
        assert_eq!(m.fields["kv_cache_usage"], 0.625);
        assert_eq!(m.fields["power_w"], 400.0);
        assert_eq!(m.gpus.len(), 1);
        assert_eq!(
            m.notes,
            ["2 duplicate series (the last of each kept): \
              vllm:kv_cache_usage_perc{engine=\"0\"}, DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"}"]
        );
    }

    #[test]
    fn values_outside_their_range_are_noted() {
        let m = map(
            "vllm:kv_cache_usage_perc 1.75\nvllm:num_requests_running -2\n",
            &[],
        );
        assert_eq!(
            m.notes,
            [
                "kv_cache_usage = 1.75 is outside 0..1",
                "requests_running = -2 is below 0"
            ]
        );
    }

    #[test]
    fn series_over_the_bound_are_cut_and_counted() {
        let mut page = String::new();
        for i in 0..MAX_KNOWN_SERIES + 10 {
            page.push_str(&format!("vllm:num_requests_running{{engine=\"{i}\"}} 1\n"));
        }
        for i in 0..MAX_CAPTURED_SERIES + 7 {
            page.push_str(&format!("flood{{i=\"{i}\"}} 1\n"));
        }
        let m = map(&page, &["flood".into()]);
        assert_eq!(m.fields["requests_running"], MAX_KNOWN_SERIES as f64);
        assert_eq!(m.captured.len(), MAX_CAPTURED_SERIES);
        assert_eq!(
            m.notes,
            [format!(
                "series over the bound, cut: 7 of flood, 10 of vllm:num_requests_running \
                 (kept: {MAX_KNOWN_SERIES} of each known metric, {MAX_CAPTURED_SERIES} captured)"
            )]
        );
    }

    #[test]
    fn labels_escapes_timestamps_and_blanks_are_read() {
        let page = "\
  vllm:num_requests_running{model_name=\"a \\\"q\\\" }{\",engine=\"0\",} 3 1700000000000
vllm:num_requests_waiting\t{ engine = \"0\" }\t+Inf
my_metric{} 2.5e+1
";
        let m = map(page, &["my_metric".into()]);
        assert_eq!(m.error, None);
        assert!(m.notes.is_empty(), "{:?}", m.notes);
        assert_eq!(m.fields["requests_running"], 3.0);
        assert!(
            !m.fields.contains_key("requests_waiting"),
            "+Inf is not kept"
        );
        assert_eq!(m.captured["my_metric"], 25.0);
    }

    #[test]
    fn a_page_that_is_not_the_text_format_is_an_error_not_zeros() {
        let m = map("<html><body>Not Found</body></html>", &[]);
        assert!(m.fields.is_empty());
        assert!(m.error.is_some(), "{m:?}");
    }
}
