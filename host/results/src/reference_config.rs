//! `config.yaml`: the run described in the reference's config schema
//! (`BenchmarkConfig` of `mlcommons/endpoints`), as the reference writes its
//! resolved config, so that its compliance checker loads it and the
//! submission checker reads `type`, `model_params`, `settings.runtime` and
//! `settings.load_pattern` from it.
//!
//! Every key the reference writes is there, in its order. agentload's own
//! values fill the keys it has a setting for (model, sampling, output
//! budget, streaming, datasets, concurrency, turn timeout, tool delays,
//! duration cap, endpoint); the knobs of the reference's own client
//! internals (ZMQ transport, worker process timeouts, drain budgets) carry
//! the reference's defaults. The schema forbids extra keys: agentload's own
//! config is `config.toml` beside it.

use super::yaml::{to_yaml, YamlError};
use agentload_config::{PhaseConfig, RunConfig};
use serde_json::{json, Map, Value};
use std::path::Path;

/// The file's first lines.
const HEADER: &str = "# Written by agentload: this run in the reference's config schema \
(mlcommons/endpoints BenchmarkConfig).\n# agentload's own resolved config is config.toml.\n";

/// The Hugging Face id of a tokenizer agentload counts with, or for a
/// `tokenizer.json` the folder holding it (what `from_pretrained` loads).
fn tokenizer_name(tokenizer: &str) -> Option<String> {
    match tokenizer {
        "qwen3.6" => Some("Qwen/Qwen3.6-27B".into()),
        json if json.ends_with(".json") => Some(
            Path::new(json)
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| ".".into(), |p| p.display().to_string()),
        ),
        _ => None,
    }
}

/// A plugin's name from a config's plugin spec: `shell-iou`, or a path
/// such as `target/plugins/shell_iou.wasm`.
fn plugin_name(spec: &str) -> String {
    Path::new(spec).file_stem().map_or_else(
        || spec.to_string(),
        |s| s.to_string_lossy().replace('_', "-"),
    )
}

/// A phase setting, as JSON.
fn setting(phase: Option<&PhaseConfig>, key: &str) -> Option<Value> {
    serde_json::to_value(phase?.settings.get(key)?).ok()
}

/// The reference's dataset entry for a phase: known official workloads and
/// scorers get the reference's names; any other workload is described by
/// its name and data file.
fn dataset(config: &RunConfig, phase: &PhaseConfig, performance: bool, data_dir: &Path) -> Value {
    let mut d = Map::new();
    let first_file = phase.data.values().next().map(|f| data_dir.join(f));
    let workload = plugin_name(&phase.workload);
    let (name, path) = match workload.as_str() {
        "coding-replay" => (
            "agentic_coding".to_string(),
            phase.data.get("trajectories").map(|f| data_dir.join(f)),
        ),
        "bfcl-single" => ("bfcl_v4::function_calling".to_string(), None),
        // Loaded by the reference from Hugging Face, not from a path.
        agentload_config::swe_bench::WORKLOAD => ("swe_bench".to_string(), None),
        other => (other.to_string(), first_file),
    };
    d.insert("name".into(), name.into());
    d.insert(
        "type".into(),
        if performance {
            "performance"
        } else {
            "accuracy"
        }
        .into(),
    );
    if let Some(path) = path {
        d.insert("path".into(), path.display().to_string().into());
    }
    if workload == "bfcl-single" {
        let mut params = Map::new();
        for (key, as_key) in [
            ("categories", "categories"),
            ("sample_pct", "category_sample_pct"),
            ("subset_floor", "subset_floor"),
        ] {
            if let Some(v) = setting(Some(phase), key) {
                params.insert(as_key.into(), v);
            }
        }
        if !params.is_empty() {
            d.insert("generate_params".into(), Value::Object(params));
        }
    }
    if workload == agentload_config::swe_bench::WORKLOAD {
        // The settings are the reference's extras (the token only as the
        // `${VAR}` the config names).
        d.insert(
            "accuracy_config".into(),
            json!({"eval_method": "swe_bench_scorer", "num_repeats": 1, "extras": phase.settings}),
        );
    }
    let scorer = phase.scorer.as_deref().map(plugin_name);
    match scorer.as_deref() {
        Some("shell-iou") => {
            d.insert(
                "accuracy_config".into(),
                json!({"eval_method": "agentic_inference_inline", "num_repeats": 1}),
            );
        }
        Some("bfcl-ast") => {
            d.insert(
                "accuracy_config".into(),
                json!({"eval_method": "bfcl_v4", "ground_truth": "ground_truth",
                       "extractor": "function_call_extractor", "num_repeats": 1}),
            );
        }
        _ => {}
    }
    if performance {
        let mut agentic = Map::new();
        agentic.insert("turn_timeout_s".into(), json!(config.load.turn_timeout_s));
        agentic.insert(
            "enable_salt".into(),
            setting(Some(phase), "enable_salt").unwrap_or(Value::Bool(false)),
        );
        agentic.insert(
            "inject_tool_delay".into(),
            setting(Some(phase), "inject_tool_delay").unwrap_or(Value::Bool(false)),
        );
        agentic.insert("routing_headers".into(), json!(["X-Session-ID"]));
        if let Some(n) = setting(Some(phase), "num_trajectories_to_issue") {
            agentic.insert("num_trajectories_to_issue".into(), n);
        }
        agentic.insert("stop_issuing_on_first_user_complete".into(), false.into());
        d.insert("agentic_inference".into(), Value::Object(agentic));
    }
    Value::Object(d)
}

/// The run as the reference's resolved config. `accuracy_only` records the
/// single-stream override of `--accuracy-only`, as the reference does.
pub fn reference_config(
    config: &RunConfig,
    accuracy_only: bool,
    data_dir: &Path,
    out: &Path,
) -> Value {
    let perf = config.performance.as_ref();
    let acc = config.accuracy.as_ref();
    let sampling = |key: &str| setting(perf, key).or_else(|| setting(acc, key));
    let concurrency = if accuracy_only {
        1
    } else {
        config.load.concurrency
    };
    let mut model = Map::new();
    model.insert("name".into(), config.model.name.clone().into());
    if let Some(t) = sampling("temperature") {
        let t = t.as_f64().map_or(t, |f| json!(f));
        model.insert("temperature".into(), t);
    }
    if let Some(seed) = sampling("seed") {
        model.insert("seed".into(), seed);
    }
    for key in ["top_k", "top_p"] {
        if let Some(v) = sampling(key) {
            model.insert(key.into(), v);
        }
    }
    if let Some(n) = sampling("max_completion_tokens").or_else(|| sampling("max_tokens")) {
        model.insert("max_new_tokens".into(), n);
    }
    model.insert("min_new_tokens".into(), 1.into());
    model.insert("skip_special_tokens".into(), true.into());
    model.insert(
        "streaming".into(),
        if config.endpoint.stream { "on" } else { "off" }.into(),
    );
    if let Some(name) = tokenizer_name(&config.model.tokenizer) {
        model.insert("tokenizer_name".into(), name.into());
    }

    let mut datasets = Vec::new();
    if let Some(p) = perf {
        datasets.push(dataset(config, p, true, data_dir));
    }
    if let Some(a) = acc {
        datasets.push(dataset(config, a, false, data_dir));
    }
    // The agentic load pattern needs the performance dataset's agentic block;
    // an accuracy-only config runs its samples one at a time.
    let load_pattern = if perf.is_some() {
        json!({"type": "agentic_inference", "target_concurrency": concurrency})
    } else {
        json!({"type": "concurrency", "target_concurrency": 1})
    };
    let settings = json!({
        "runtime": {
            "min_duration_ms": 0,
            "max_duration_ms": config.load.max_duration_ms,
            "scheduler_random_seed": 42,
            "dataloader_random_seed": 42,
        },
        "load_pattern": load_pattern,
        "client": {
            "num_workers": 1,
            "log_level": "INFO",
            "warmup_connections": 0,
            "auto_warmup_budget_fraction": 0.25,
            "max_concurrent_warmup_connects": 128,
            "max_connections": concurrency,
            "transport": {
                "type": "zmq",
                "recv_buffer_size": 16_777_216,
                "send_buffer_size": 16_777_216,
                "io_threads": 4,
                "worker_io_threads": 1,
                "high_water_mark": 0,
                "linger": -1,
                "immediate": 1,
            },
            "stream_all_chunks": false,
            "worker_initialization_timeout": 60.0,
            "worker_graceful_shutdown_wait": 0.5,
            "worker_force_kill_timeout": 0.5,
            "insecure": false,
            "max_idle_time": 4.0,
            "min_required_connections": -1,
            "worker_gc_mode": "relaxed",
        },
        "drain": {
            "warmup_timeout_s": 240.0,
            "performance_timeout_s": 240.0,
            "metrics_drain_timeout_s": 0.0,
            "metrics_tokenizer_workers": 4,
        },
        "warmup": {"enabled": false, "salt": false, "drain": false, "warmup_random_seed": 42},
        "profiling": {},
        "early_stopping": {"enabled": true},
        "service_ready_timeout_s": 30.0,
    });
    let mut endpoint = Map::new();
    endpoint.insert("endpoints".into(), json!([config.endpoint.url]));
    if config.endpoint.api_key.is_some() {
        endpoint.insert("api_key".into(), "<redacted>".into());
    }
    endpoint.insert("api_type".into(), "openai".into());

    let mut v = Map::new();
    v.insert("name".into(), config.name.clone().into());
    v.insert("version".into(), config.version.clone().into());
    v.insert("type".into(), "online".into());
    v.insert("model_params".into(), Value::Object(model));
    v.insert("datasets".into(), Value::Array(datasets));
    v.insert("settings".into(), settings);
    v.insert("endpoint_config".into(), Value::Object(endpoint));
    v.insert("report_dir".into(), out.display().to_string().into());
    v.insert("verbose".into(), false.into());
    // agentload pins no CPUs.
    v.insert("enable_cpu_affinity".into(), false.into());
    Value::Object(v)
}

/// `result_summary.json`'s `run_config`: the config's `load_pattern` and
/// `warmup` (with the reference's `None` fields) and both seeds.
pub fn run_config(reference: &Value) -> Value {
    let settings = &reference["settings"];
    let mut load_pattern = Map::new();
    load_pattern.insert("type".into(), settings["load_pattern"]["type"].clone());
    load_pattern.insert("target_qps".into(), Value::Null);
    load_pattern.insert(
        "target_concurrency".into(),
        settings["load_pattern"]["target_concurrency"].clone(),
    );
    let warmup = &settings["warmup"];
    json!({
        "load_pattern": load_pattern,
        "warmup": {
            "enabled": warmup["enabled"],
            "n_requests": null,
            "salt": warmup["salt"],
            "drain": warmup["drain"],
            "warmup_random_seed": warmup["warmup_random_seed"],
        },
        "scheduler_random_seed": settings["runtime"]["scheduler_random_seed"],
        "dataloader_random_seed": settings["runtime"]["dataloader_random_seed"],
    })
}

/// Writes `config.yaml` (with a comment header) into the results directory `out`.
pub fn write_reference_config(
    out: &agentload_fs::OutDir,
    reference: &Value,
) -> std::io::Result<()> {
    let yaml = to_yaml(reference).map_err(|e: YamlError| std::io::Error::other(e.to_string()))?;
    out.write("config.yaml", format!("{HEADER}{yaml}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::from_yaml;

    fn edge() -> RunConfig {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/edge-full-run.toml");
        RunConfig::load(&path).unwrap()
    }

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
    }

    /// The Kimi preset's SWE-bench phase is the reference YAML's swe_bench
    /// dataset, its token still the placeholder.
    #[test]
    fn the_swe_bench_phase_is_the_references_swe_bench_dataset() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/datacenter-kimi-k3.toml");
        let config = RunConfig::load(&path).unwrap();
        let v = reference_config(&config, false, Path::new("/data"), Path::new("out"));
        assert_eq!(
            v["datasets"][1],
            json!({"name": "swe_bench", "type": "accuracy", "accuracy_config": {
                "eval_method": "swe_bench_scorer", "num_repeats": 1, "extras": {
                    "swebench_service_url": "http://localhost:18080",
                    "swebench_service_auth_token": "${SWEBENCH_SERVICE_AUTH_TOKEN}",
                    "num_instances": 200, "workers": 100}}})
        );
    }

    /// The keys and shapes the reference's `to_yaml_file` writes for
    /// `online_edge_full_run.yaml`, checked by hand against the schema.
    #[test]
    fn edge_config_has_the_reference_shape() {
        let v = reference_config(&edge(), false, Path::new("data"), Path::new("results/x"));
        assert_eq!(
            keys(&v),
            [
                "name",
                "version",
                "type",
                "model_params",
                "datasets",
                "settings",
                "endpoint_config",
                "report_dir",
                "verbose",
                "enable_cpu_affinity"
            ]
        );
        let m = &v["model_params"];
        assert_eq!(
            keys(m),
            [
                "name",
                "temperature",
                "seed",
                "max_new_tokens",
                "min_new_tokens",
                "skip_special_tokens",
                "streaming",
                "tokenizer_name"
            ]
        );
        assert!(m["temperature"].is_f64() && m["temperature"] == 0.0);
        assert_eq!(
            (&m["seed"], &m["max_new_tokens"]),
            (&json!(42), &json!(1024))
        );
        assert_eq!(
            (&m["streaming"], &m["tokenizer_name"]),
            (&json!("on"), &json!("Qwen/Qwen3.6-27B"))
        );
        let perf = &v["datasets"][0];
        assert_eq!(
            keys(perf),
            [
                "name",
                "type",
                "path",
                "accuracy_config",
                "agentic_inference"
            ]
        );
        assert_eq!(perf["path"], "data/agentic_coding_2.5h.jsonl");
        assert_eq!(
            perf["accuracy_config"]["eval_method"],
            "agentic_inference_inline"
        );
        assert_eq!(
            perf["agentic_inference"],
            json!({"turn_timeout_s": 600.0, "enable_salt": false, "inject_tool_delay": false,
                   "routing_headers": ["X-Session-ID"], "num_trajectories_to_issue": 20,
                   "stop_issuing_on_first_user_complete": false})
        );
        let acc = &v["datasets"][1];
        assert_eq!(
            (&acc["name"], &acc["type"]),
            (&json!("bfcl_v4::function_calling"), &json!("accuracy"))
        );
        assert_eq!(
            acc["generate_params"],
            json!({"categories": ["non_live", "live", "hallucination"],
                   "category_sample_pct": {"non_live": 62, "live": 10, "hallucination": 10},
                   "subset_floor": 25})
        );
        assert_eq!(acc["accuracy_config"]["eval_method"], "bfcl_v4");
        let s = &v["settings"];
        assert_eq!(
            keys(s),
            [
                "runtime",
                "load_pattern",
                "client",
                "drain",
                "warmup",
                "profiling",
                "early_stopping",
                "service_ready_timeout_s"
            ]
        );
        assert_eq!(
            s["runtime"],
            json!({"min_duration_ms": 0, "max_duration_ms": 14_400_000,
                   "scheduler_random_seed": 42, "dataloader_random_seed": 42})
        );
        assert_eq!(
            s["load_pattern"],
            json!({"type": "agentic_inference", "target_concurrency": 1})
        );
        assert_eq!(
            (&s["client"]["num_workers"], &s["client"]["max_connections"]),
            (&json!(1), &json!(1))
        );
        assert_eq!(s["client"]["transport"]["type"], "zmq");
        assert_eq!(keys(&v["endpoint_config"]), ["endpoints", "api_type"]);
    }

    /// The datacenter preset's agentic block: salts and delays as
    /// configured (`enable_salt` was once written false whatever the config
    /// said), 613 trajectories, its turn timeout.
    #[test]
    fn the_datacenter_preset_has_its_agentic_flags() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../configs/datacenter-qwen3.6-35b-a3b.toml");
        let config = RunConfig::load(&path).unwrap();
        let v = reference_config(&config, false, Path::new("data"), Path::new("o"));
        assert_eq!(
            v["datasets"][0]["agentic_inference"],
            json!({"turn_timeout_s": 14400.0, "enable_salt": true, "inject_tool_delay": true,
                   "routing_headers": ["X-Session-ID"], "num_trajectories_to_issue": 613,
                   "stop_issuing_on_first_user_complete": false})
        );
    }

    #[test]
    fn accuracy_only_is_single_stream_and_secrets_are_redacted() {
        let mut config = edge();
        config.load.concurrency = 4;
        config.endpoint.api_key = Some("sk-secret".into());
        let v = reference_config(&config, true, Path::new("data"), Path::new("o"));
        assert_eq!(v["settings"]["load_pattern"]["target_concurrency"], 1);
        assert_eq!(v["settings"]["client"]["max_connections"], 1);
        assert_eq!(v["endpoint_config"]["api_key"], "<redacted>");
        let v = reference_config(&config, false, Path::new("data"), Path::new("o"));
        assert_eq!(v["settings"]["load_pattern"]["target_concurrency"], 4);
        config.performance = None;
        let v = reference_config(&config, true, Path::new("data"), Path::new("o"));
        assert_eq!(
            v["settings"]["load_pattern"],
            json!({"type": "concurrency", "target_concurrency": 1})
        );
        assert_eq!(v["datasets"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn written_file_is_yaml_that_reads_back_the_same() {
        let v = reference_config(&edge(), false, Path::new("data"), Path::new("results/x"));
        let dir = std::env::temp_dir().join(format!("agentload-refcfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.yaml");
        write_reference_config(&agentload_fs::OutDir::new(&dir), &v).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# Written by agentload"));
        assert!(!text.trim_start().starts_with('{'), "YAML, not JSON");
        assert!(
            text.contains("version: \"1.0\"") || text.contains("version: '1.0'"),
            "{text}"
        );
        assert_eq!(from_yaml(&text).unwrap(), v);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn run_config_has_the_reference_shape() {
        let v = reference_config(&edge(), false, Path::new("data"), Path::new("o"));
        assert_eq!(
            run_config(&v),
            json!({"load_pattern": {"type": "agentic_inference", "target_qps": null, "target_concurrency": 1},
                   "warmup": {"enabled": false, "n_requests": null, "salt": false, "drain": false, "warmup_random_seed": 42},
                   "scheduler_random_seed": 42, "dataloader_random_seed": 42})
        );
    }
}
