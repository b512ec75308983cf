//! `agentload point-yaml DIR`: each datacenter point's `point.yaml` (the
//! Endpoints Rules v1.0 §8.3 declaration the 2026-10-C1 checks read), from
//! what the point's run recorded (`config.toml`, `config.yaml`,
//! `scores.json`, `accuracy/accuracy_results.json`) and what only the
//! submitter can say (a disclosure file: division, model precision, links,
//! shared paths, seed set, cohort, checkpoint, ...).
//!
//! Keys and vocabularies follow the checker's `PointConfig`
//! (`validation/evidence/point_config.py@a820fc66`) and its 2026-10-C1
//! catalog: regions `low_latency` (Ultra Low), `low_concurrency`,
//! `med_concurrency`, `high_concurrency`, `margin`.

use std::path::{Path, PathBuf};

use agentload_config::RunConfig;
use agentload_results::regions::{Region, Regions};
use anyhow::{bail, Context as _, Result};
use serde_json::{json, Map, Value};

/// The fields the catalog's `disclosure.required_fields` lists.
pub const REQUIRED: [&str; 12] = [
    "division",
    "max_supported_concurrency",
    "model_name",
    "model_precision",
    "link_to_model",
    "dataset_name",
    "dataset_type",
    "dataset_link",
    "shared_src",
    "shared_docs",
    "seed_set",
    "target_cohort",
];

/// The submitter's declarations, from a TOML file whose top-level keys are
/// `point.yaml` keys (tables nest: `[checkpoint]`, `[warmup]`, ...).
pub fn read_disclosure(path: &Path) -> Result<Map<String, Value>> {
    let text = agentload_fs::read::read_to_string(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let table: toml::Table =
        toml::from_str(&text).with_context(|| format!("{} is not TOML", path.display()))?;
    serde_json::to_value(table)?
        .as_object()
        .cloned()
        .with_context(|| format!("{}: not a table", path.display()))
}

/// Writes `DIR/r<C>/point.yaml` for every point; returns the files. A
/// required disclosure field neither the run nor `disclosure` gives is an
/// error naming it, unless `draft` (then it is written as null).
pub fn write(
    dir: &Path,
    c_max: u64,
    disclosure: &Map<String, Value>,
    draft: bool,
) -> Result<Vec<PathBuf>> {
    let points = crate::points::read_points(dir)?;
    let smallest = points
        .iter()
        .map(|p| p.concurrency)
        .min()
        .with_context(|| format!("{}: no r<C> points", dir.display()))?;
    let regions = Regions::new(smallest, c_max).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut written = Vec::new();
    for p in &points {
        let point_dir = dir.join(&p.dir);
        let mut v = point(&point_dir, p.concurrency, &regions, c_max)
            .with_context(|| format!("point {}", p.dir))?;
        for (key, value) in disclosure {
            v.insert(key.clone(), value.clone());
        }
        let missing: Vec<&str> = REQUIRED
            .iter()
            .copied()
            .filter(|k| v.get(*k).is_none_or(Value::is_null))
            .collect();
        if !missing.is_empty() {
            if !draft {
                bail!(
                    "{}: point.yaml needs {} (put them in the --disclosure file, or write a \
                     --draft)",
                    p.dir,
                    missing.join(", ")
                );
            }
            for k in &missing {
                v.insert((*k).to_owned(), Value::Null);
            }
        }
        let path = point_dir.join("point.yaml");
        let yaml = agentload_results::yaml::to_yaml(&Value::Object(v))?;
        agentload_fs::OutDir::new(dir)
            .write(Path::new(&p.dir).join("point.yaml"), yaml)
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// The region a point declares: Ultra Low when it is in no other (the
/// smallest point always is), else the highest of Low, Medium and High it
/// lies in, else the margin.
pub fn declared_region(regions: &Regions, c: u64) -> &'static str {
    let of = regions.of(c);
    let name = |r: &Region| match r {
        Region::UltraLow => "low_latency",
        Region::Low => "low_concurrency",
        Region::Medium => "med_concurrency",
        Region::High => "high_concurrency",
        Region::Margin => "margin",
    };
    of.iter()
        .rev()
        .find(|r| matches!(r, Region::Low | Region::Medium | Region::High))
        .or_else(|| of.first())
        .map_or("submitters_choice", name)
}

/// What the run at `point_dir` says of itself.
fn point(
    point_dir: &Path,
    concurrency: u64,
    regions: &Regions,
    c_max: u64,
) -> Result<Map<String, Value>> {
    let reference = read_yaml(&point_dir.join("config.yaml"))?;
    let config = RunConfig::load(&point_dir.join("config.toml"))?;
    let perf = reference["datasets"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["type"] == "performance")
        .context("config.yaml has no performance dataset")?;
    let dataset = perf["path"]
        .as_str()
        .and_then(|p| Path::new(p).file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| perf["name"].as_str().unwrap_or_default().to_owned());
    let settings = &reference["settings"];
    let agentic = &perf["agentic_inference"];
    let mut runtime_settings = json!({
        "load_pattern": settings["load_pattern"]["type"],
        "min_duration_ms": settings["runtime"]["min_duration_ms"],
        "stream_all_chunks": settings["client"]["stream_all_chunks"],
        "runtime": {
            "scheduler_random_seed": settings["runtime"]["scheduler_random_seed"],
            "dataloader_random_seed": settings["runtime"]["dataloader_random_seed"],
        },
        "warmup": {"salt": settings["warmup"]["salt"]},
    });
    if agentic.is_object() {
        runtime_settings["agentic_inference"] = json!({
            "enable_salt": agentic["enable_salt"],
            "inject_tool_delay": agentic["inject_tool_delay"],
            "stop_issuing_on_first_user_complete": agentic["stop_issuing_on_first_user_complete"],
            "num_trajectories_to_issue": agentic["num_trajectories_to_issue"],
        });
    }
    let mut v = Map::new();
    v.insert("concurrency".into(), concurrency.into());
    v.insert(
        "region".into(),
        declared_region(regions, concurrency).into(),
    );
    v.insert("dataset".into(), dataset.clone().into());
    v.insert("runtime_settings".into(), runtime_settings);
    v.insert("max_supported_concurrency".into(), c_max.into());
    if let Some(model) = catalog_model(config.rules.as_deref()) {
        v.insert("model_name".into(), model.into());
    }
    v.insert("dataset_name".into(), dataset.into());
    v.insert("offline".into(), "none".into());
    v.insert("accuracy".into(), accuracy(point_dir, &config)?);
    Ok(v)
}

/// The model's name in the checker's catalog, from the datacenter ruleset.
fn catalog_model(rules: Option<&str>) -> Option<&'static str> {
    let model = crate::points::model_of_rules(rules)?;
    agentload_results::regions::gates(model).map(|g| g.catalog)
}

/// `accuracy.inline` (the inline scorer's method and score) and
/// `accuracy.swe_bench` (method, repeats, score, evaluated count and the
/// extras the checks read) as far as the run has them.
fn accuracy(point_dir: &Path, config: &RunConfig) -> Result<Value> {
    let mut accuracy = Map::new();
    let scores = read_json(&point_dir.join("scores.json"))?;
    accuracy.insert(
        "inline".into(),
        json!({"eval_method": "agentic_inference_inline", "num_repeats": 1,
               "score": scores.as_ref().map_or(Value::Null, |s| s["score"].clone())}),
    );
    let results = read_json(&point_dir.join("accuracy/accuracy_results.json"))?;
    let swe = results.as_ref().and_then(|r| {
        r["accuracy_scores"]
            .as_array()?
            .iter()
            .find(|e| e["dataset_name"] == "swe_bench")
            .cloned()
    });
    let phase = config
        .accuracy
        .as_ref()
        .filter(|a| a.workload == "swe-bench");
    if swe.is_some() || phase.is_some() {
        let setting = |k: &str| {
            phase
                .and_then(|a| a.settings.get(k))
                .and_then(|v| serde_json::to_value(v).ok())
        };
        let mut extras = Map::new();
        if let Some(n) = setting("num_instances") {
            extras.insert("num_instances".into(), n);
        }
        if let Some(t) = setting("swebench_template") {
            extras.insert("swebench_template".into(), t);
        }
        accuracy.insert(
            "swe_bench".into(),
            json!({"eval_method": "swe_bench_scorer", "num_repeats": 1,
                   "score": swe.as_ref().map_or(Value::Null, |e| e["score"].clone()),
                   "evaluated_instance_count":
                       swe.as_ref().map_or(Value::Null, |e| e["total_samples"].clone()),
                   "extras": extras}),
        );
    }
    Ok(Value::Object(accuracy))
}

fn read_json(path: &Path) -> Result<Option<Value>> {
    match agentload_fs::read::read(path) {
        Ok(bytes) => {
            Ok(Some(serde_json::from_slice(&bytes).with_context(|| {
                format!("{} is not JSON", path.display())
            })?))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn read_yaml(path: &Path) -> Result<Value> {
    let text = agentload_fs::read::read_to_string(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    agentload_results::yaml::from_yaml(&text)
        .with_context(|| format!("{} is not YAML", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_regions_follow_the_catalog() {
        // C_min 16, C_max 1024: Low 17-26, Medium 27-117, High 118-1024.
        let r = Regions::new(16, 1024).unwrap();
        let names: Vec<&str> = [16, 20, 26, 60, 117, 1024, 1100]
            .into_iter()
            .map(|c| declared_region(&r, c))
            .collect();
        assert_eq!(
            names,
            [
                "low_latency",
                "low_concurrency",
                "low_concurrency",
                "med_concurrency",
                "med_concurrency",
                "high_concurrency",
                "margin"
            ]
        );
        assert_eq!(declared_region(&r, 5000), "submitters_choice");
    }
}
