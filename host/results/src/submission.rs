//! `agentload submission`: the MLPerf Inference "endpoints" submission tree
//! from finished runs, laid out as the reference's
//! `scripts/publish_submission.py` lays it out, and checked for the fields
//! the endpoints submission checker reads:
//!
//! ```text
//! {division}/{submitter}/results/{system}/{benchmark}/{scenario}/performance/run_1/{result_summary.json, config.yaml}
//! {division}/{submitter}/results/{system}/{benchmark}/{scenario}/accuracy/{accuracy_results.json, config.yaml}
//! {division}/{submitter}/results/{system}/{benchmark}/{scenario}/measurements.json   (--scaffold)
//! {division}/{submitter}/systems/{system}.json                                     (--scaffold)
//! ```
//!
//! Unlike the reference's script, which prints what is missing and still
//! succeeds, a missing artifact or field here is an error naming it.

use super::accuracy::{find_breakdown_entry, ACCURACY_RESULTS};
use agentload_fs::OutDir;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// What to publish, and where.
#[derive(Debug, Clone)]
pub struct SubmissionOptions {
    /// The performance run's directory.
    pub performance_run: Option<PathBuf>,
    /// The accuracy run's directory (the same as the performance run's for
    /// a combined run).
    pub accuracy_run: Option<PathBuf>,
    pub output: PathBuf,
    /// `closed`, `open` or `network`.
    pub division: String,
    pub submitter: String,
    pub system: String,
    pub benchmark: String,
    pub scenario: String,
    /// Also write `measurements.json` and `systems/<system>.json`
    /// templates (their TODO fields are the submitter's to fill).
    pub scaffold: bool,
    /// Replace an existing tree's files and templates.
    pub force: bool,
}

/// What was published.
#[derive(Debug, Clone, Default)]
pub struct Published {
    /// The `{scenario}` directory.
    pub results_root: PathBuf,
    /// Files written, relative to the output directory.
    pub files: Vec<PathBuf>,
    /// What the checker will read, one line each.
    pub findings: Vec<String>,
}

/// Problems publishing.
#[derive(Debug, thiserror::Error)]
pub enum SubmissionError {
    #[error("{0}")]
    Invalid(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SubmissionError + '_ {
    move |source| SubmissionError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn read_json(path: &Path) -> Result<Value, SubmissionError> {
    let text = agentload_fs::read::read_to_string(path).map_err(io(path))?;
    serde_json::from_str(&text)
        .map_err(|e| SubmissionError::Invalid(format!("{} is not JSON: {e}", path.display())))
}

/// A percentile of a summary series, tolerating `"99"` for `"99.0"`.
fn percentile(series: &Value, key: &str) -> Option<f64> {
    let grid = series.get("percentiles")?.as_object()?;
    let want: f64 = key.parse().ok()?;
    grid.get(key)
        .or_else(|| {
            grid.iter()
                .find(|(k, _)| k.parse::<f64>().ok() == Some(want))
                .map(|(_, v)| v)
        })
        .and_then(Value::as_f64)
}

/// `config.yaml` must be YAML that reads back as a mapping with the keys
/// the checker reads.
fn check_config(run: &Path) -> Result<String, SubmissionError> {
    let path = run.join("config.yaml");
    let text = agentload_fs::read::read_to_string(&path).map_err(io(&path))?;
    let config = super::yaml::from_yaml(&text)
        .map_err(|e| SubmissionError::Invalid(format!("{} is not YAML: {e}", path.display())))?;
    for key in ["type", "model_params", "settings"] {
        if config.get(key).is_none() {
            return Err(SubmissionError::Invalid(format!(
                "{} has no `{key}`",
                path.display()
            )));
        }
    }
    Ok(format!(
        "config.yaml: type {}, streaming {}, load pattern {}",
        config["type"],
        config["model_params"]["streaming"],
        config["settings"]["load_pattern"]["type"]
    ))
}

fn verify_performance(run: &Path) -> Result<Vec<String>, SubmissionError> {
    let path = run.join("performance/result_summary.json");
    let summary = read_json(&path)?;
    let qps = summary.get("qps").and_then(Value::as_f64).ok_or_else(|| {
        SubmissionError::Invalid(format!(
            "{} has no qps (nothing completed?)",
            path.display()
        ))
    })?;
    let mut findings = vec![format!("QPS (primary metric): {qps}")];
    for (name, key) in [("latency", "latency"), ("TTFT", "ttft"), ("TPOT", "tpot")] {
        let p99 = percentile(&summary[key], "99.0").ok_or_else(|| {
            SubmissionError::Invalid(format!(
                "{}: `{key}` has no 99.0 percentile (an accuracy-only run?)",
                path.display()
            ))
        })?;
        findings.push(format!("{name} p99: {:.2} ms", p99 / 1e6));
    }
    Ok(findings)
}

fn verify_accuracy(run: &Path) -> Result<Vec<String>, SubmissionError> {
    let path = run.join(ACCURACY_RESULTS);
    let results = read_json(&path)?;
    let entries = results
        .get("accuracy_scores")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| {
            SubmissionError::Invalid(format!(
                "{} has no non-null `accuracy_scores`",
                path.display()
            ))
        })?;
    let entry = find_breakdown_entry(&results).ok_or_else(|| {
        SubmissionError::Invalid(format!(
            "{} has no entry with a per-subset `breakdown` (no accuracy phase in this run?)",
            path.display()
        ))
    })?;
    let mut findings: Vec<String> = entries
        .iter()
        .map(|e| {
            format!(
                "accuracy_scores[{}].score = {}",
                e["dataset_name"], e["score"]
            )
        })
        .collect();
    findings.push(format!(
        "breakdown.overall_accuracy = {}, total_samples = {}",
        entry["breakdown"]["overall_accuracy"], entry["breakdown"]["total_samples"]
    ));
    Ok(findings)
}

/// A run's own account of itself: it must be an agentload run that ran to
/// its end; the closed division takes only sealed, compliant runs.
fn check_run(run: &Path, division: &str) -> Result<String, SubmissionError> {
    let path = run.join("run_manifest.json");
    if !path.is_file() {
        return Err(SubmissionError::Invalid(format!(
            "{} is missing: {} is not an agentload run",
            path.display(),
            run.display()
        )));
    }
    let manifest = read_json(&path)?;
    if let Ok(state) = read_json(&run.join("run_state.json")) {
        if state["complete"] != Value::Bool(true) {
            return Err(SubmissionError::Invalid(format!(
                "{} did not run to its end (run_state.json): `agentload resume {}` first",
                run.display(),
                run.display()
            )));
        }
    }
    let sealed = manifest["seal"]["sealed"] == Value::Bool(true);
    let compliant = manifest["compliance"]["compliant"] == Value::Bool(true);
    if division == "closed" && !(sealed && compliant) {
        let what = match (sealed, compliant) {
            (false, false) => "unsealed and not compliant",
            (false, true) => "unsealed (a plugin is not the locked official one)",
            _ => "not compliant with the benchmark's rules",
        };
        return Err(SubmissionError::Invalid(format!(
            "the closed division takes only sealed, compliant runs (agentload run --submission): \
             {} is {what} (run_manifest.json); publish it under --division open",
            run.display()
        )));
    }
    Ok(format!(
        "run_manifest.json: {}, {}",
        if sealed { "sealed" } else { "unsealed" },
        if compliant {
            "compliant"
        } else {
            "not compliant"
        }
    ))
}

/// Copies `files` (source relative to `run`, destination name) into `dst`
/// (inside the tree `output`: nothing is written through a link there).
fn copy(
    run: &Path,
    dst: &Path,
    files: &[(&str, &str)],
    output: &Path,
    published: &mut Published,
) -> Result<(), SubmissionError> {
    let tree = OutDir::new(output);
    let dst = tree.rel(dst).map_err(|e| io(dst)(e.into()))?;
    for (src, name) in files {
        let from = run.join(src);
        let mut file = match agentload_fs::read::open(&from) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SubmissionError::Invalid(format!(
                    "{} is missing",
                    from.display()
                )))
            }
            Err(e) => return Err(io(&from)(e)),
        };
        let rel = dst.join(name);
        let to = output.join(&rel);
        let mut staged = tree.staged(&rel).map_err(|e| io(&to)(e.into()))?;
        std::io::copy(&mut file, &mut staged).map_err(io(&to))?;
        staged.commit().map_err(|e| io(&to)(e.into()))?;
        published.files.push(rel);
    }
    Ok(())
}

fn scaffold(
    output: &Path,
    path: &Path,
    template: &Value,
    force: bool,
) -> Result<bool, SubmissionError> {
    if path.exists() && !force {
        return Ok(false);
    }
    let tree = OutDir::new(output);
    let rel = tree.rel(path).map_err(|e| io(path)(e.into()))?;
    tree.write_json(rel, template)
        .map_err(|e| io(path)(e.into()))?;
    Ok(true)
}

/// Builds the tree; every artifact is checked before the first copy.
pub fn publish(opts: &SubmissionOptions) -> Result<Published, SubmissionError> {
    if opts.performance_run.is_none() && opts.accuracy_run.is_none() {
        return Err(SubmissionError::Invalid(
            "give --run, or --performance-run and/or --accuracy-run".into(),
        ));
    }
    if !matches!(opts.division.as_str(), "closed" | "open" | "network") {
        return Err(SubmissionError::Invalid(format!(
            "--division {}: must be closed, open or network",
            opts.division
        )));
    }
    for (flag, value) in [
        ("--submitter", &opts.submitter),
        ("--system", &opts.system),
        ("--benchmark", &opts.benchmark),
        ("--scenario", &opts.scenario),
    ] {
        if value.is_empty() || value.contains(['/', '\\']) || value == ".." {
            return Err(SubmissionError::Invalid(format!(
                "{flag} {value:?}: must be a plain directory name"
            )));
        }
    }
    let mut published = Published::default();
    let mut checks = Vec::new();
    if let Some(run) = &opts.performance_run {
        let mut findings = verify_performance(run)?;
        findings.push(check_run(run, &opts.division)?);
        checks.push(("performance", run, findings, check_config(run)?));
    }
    if let Some(run) = &opts.accuracy_run {
        let mut findings = verify_accuracy(run)?;
        findings.push(check_run(run, &opts.division)?);
        checks.push(("accuracy", run, findings, check_config(run)?));
    }
    let root = opts
        .output
        .join(&opts.division)
        .join(&opts.submitter)
        .join("results")
        .join(&opts.system)
        .join(&opts.benchmark)
        .join(&opts.scenario);
    let layout = |phase: &str| -> (PathBuf, &'static [(&'static str, &'static str)]) {
        if phase == "performance" {
            (
                root.join("performance/run_1"),
                &[
                    ("performance/result_summary.json", "result_summary.json"),
                    ("config.yaml", "config.yaml"),
                    ("run_manifest.json", "run_manifest.json"),
                ],
            )
        } else {
            (
                root.join("accuracy"),
                &[
                    (ACCURACY_RESULTS, "accuracy_results.json"),
                    ("config.yaml", "config.yaml"),
                    ("run_manifest.json", "run_manifest.json"),
                ],
            )
        }
    };
    // An existing tree is replaced only when asked, and checked before any copy.
    if !opts.force {
        for (phase, ..) in &checks {
            let (dst, files) = layout(phase);
            if let Some(existing) = files
                .iter()
                .map(|(_, name)| dst.join(name))
                .find(|p| p.exists())
            {
                return Err(SubmissionError::Invalid(format!(
                    "{} exists: pass --force to replace the submission tree's files",
                    existing.display()
                )));
            }
        }
    }
    for (phase, run, findings, config_line) in checks {
        let (dst, files) = layout(phase);
        copy(run, &dst, files, &opts.output, &mut published)?;
        published
            .findings
            .push(format!("[{phase}] {} -> {}", run.display(), dst.display()));
        published.findings.extend(
            findings
                .into_iter()
                .chain([config_line])
                .map(|f| format!("  {f}")),
        );
    }
    if opts.scaffold {
        let measurements = root.join("measurements.json");
        let system = opts
            .output
            .join(&opts.division)
            .join(&opts.submitter)
            .join("systems")
            .join(format!("{}.json", opts.system));
        for (path, template) in [
            (measurements, measurements_template()),
            (system, system_template(opts)),
        ] {
            let wrote = scaffold(&opts.output, &path, &template, opts.force)?;
            published.findings.push(format!(
                "[scaffold] {}: {}",
                path.display(),
                if wrote {
                    "written (fill in the TODO fields)"
                } else {
                    "left as it was"
                }
            ));
        }
    }
    published.results_root = root;
    Ok(published)
}

/// The fields of the checker's `measurements.json`.
fn measurements_template() -> Value {
    json!({
        "starting_weights_filename": "TODO: e.g. Qwen3.6-27B-Q4_K_M.gguf",
        "weight_data_types": "TODO: e.g. int4",
        "input_data_types": "TODO: e.g. int32 (token ids)",
        "retraining": "no",
        "weight_transformations": "TODO: e.g. quantization (Q4_K_M)",
    })
}

/// The fields of the checker's `systems/<system>.json`.
fn system_template(opts: &SubmissionOptions) -> Value {
    json!({
        "submitter": opts.submitter,
        "division": opts.division,
        "status": "TODO: available|preview|rdi",
        "system_type": "edge",
        "system_name": opts.system,
        "number_of_nodes": "1",
        "host_processor_model_name": "TODO",
        "host_processors_per_node": "1",
        "host_processor_core_count": "TODO",
        "host_memory_capacity": "TODO",
        "accelerator_model_name": "TODO",
        "accelerators_per_node": "1",
        "accelerator_memory_capacity": "TODO",
        "framework": "TODO: e.g. llama.cpp",
        "operating_system": "TODO",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agentload-sub-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A run directory with the files the checker reads, from a sealed,
    /// compliant run that ran to its end.
    fn run_dir(dir: &Path, accuracy: bool) {
        std::fs::create_dir_all(dir.join("performance")).unwrap();
        manifest(dir, true, true);
        agentload_fs::OutDir::new(dir)
            .write_json("run_state.json", &json!({"complete": true}))
            .unwrap();
        let series = json!({"percentiles": {"99.0": 2.5e6}});
        agentload_fs::OutDir::new(dir)
            .write_json(
                "performance/result_summary.json",
                &json!({"qps": 0.5, "latency": series, "ttft": series, "tpot": series}),
            )
            .unwrap();
        std::fs::write(
            dir.join("config.yaml"),
            "---\ntype: online\nmodel_params:\n  streaming: \"on\"\nsettings:\n  load_pattern:\n    type: agentic_inference\n",
        )
        .unwrap();
        let entry = if accuracy {
            json!({"dataset_name": "bfcl", "score": 0.9,
                   "breakdown": {"overall_accuracy": 90.0, "subset_scores": {}, "total_samples": 995}})
        } else {
            json!({"dataset_name": "performance", "score": 0.6, "dataset_type": "performance"})
        };
        agentload_fs::OutDir::new(dir)
            .write_json(ACCURACY_RESULTS, &json!({"accuracy_scores": [entry]}))
            .unwrap();
    }

    fn manifest(dir: &Path, sealed: bool, compliant: bool) {
        agentload_fs::OutDir::new(dir)
            .write_json(
                "run_manifest.json",
                &json!({"seal": {"sealed": sealed}, "compliance": {"compliant": compliant}}),
            )
            .unwrap();
    }

    fn opts(perf: Option<PathBuf>, acc: Option<PathBuf>, output: PathBuf) -> SubmissionOptions {
        SubmissionOptions {
            performance_run: perf,
            accuracy_run: acc,
            output,
            division: "closed".into(),
            submitter: "Org".into(),
            system: "Box".into(),
            benchmark: "qwen3.6-27b".into(),
            scenario: "SingleStream".into(),
            scaffold: true,
            force: false,
        }
    }

    #[test]
    fn combined_run_gets_the_reference_layout() {
        let dir = scratch("combined");
        let run = dir.join("run");
        run_dir(&run, true);
        let out = dir.join("sub");
        let p = publish(&opts(Some(run.clone()), Some(run), out.clone())).unwrap();
        let base = out.join("closed/Org/results/Box/qwen3.6-27b/SingleStream");
        for f in [
            "performance/run_1/result_summary.json",
            "performance/run_1/config.yaml",
            "performance/run_1/run_manifest.json",
            "accuracy/accuracy_results.json",
            "accuracy/config.yaml",
            "accuracy/run_manifest.json",
            "measurements.json",
        ] {
            assert!(base.join(f).is_file(), "{f}");
        }
        assert!(out.join("closed/Org/systems/Box.json").is_file());
        assert_eq!(p.files.len(), 6);
        let text = p.findings.join("\n");
        assert!(
            text.contains("TTFT p99: 2.50 ms") && text.contains("overall_accuracy = 90.0"),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn missing_pieces_are_named_and_nothing_is_copied() {
        let dir = scratch("missing");
        let perf_only = dir.join("perf");
        run_dir(&perf_only, false);
        let out = dir.join("sub");
        // A performance run's accuracy_results.json has only the inline
        // entry: not an accuracy submission.
        let err = publish(&opts(None, Some(perf_only.clone()), out.clone()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("breakdown"), "{err}");
        std::fs::write(perf_only.join("config.yaml"), "{not: [yaml").unwrap();
        let err = publish(&opts(Some(perf_only.clone()), None, out.clone()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("config.yaml") && err.contains("YAML"), "{err}");
        std::fs::remove_file(perf_only.join("performance/result_summary.json")).unwrap();
        let err = publish(&opts(Some(perf_only), None, out.clone()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("result_summary.json"), "{err}");
        assert!(
            !out.exists(),
            "nothing is written before every check passed"
        );
        let mut bad = opts(None, None, out);
        assert!(publish(&bad).unwrap_err().to_string().contains("--run"));
        bad.accuracy_run = Some(dir.clone());
        bad.system = "../x".into();
        assert!(publish(&bad).unwrap_err().to_string().contains("--system"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_closed_division_takes_only_sealed_compliant_finished_runs_and_keeps_a_tree() {
        let dir = scratch("closed");
        let run = dir.join("run");
        run_dir(&run, false);
        let out = dir.join("sub");
        for (sealed, compliant, why) in [
            (false, true, "unsealed"),
            (true, false, "not compliant"),
            (false, false, "unsealed and not compliant"),
        ] {
            manifest(&run, sealed, compliant);
            let err = publish(&opts(Some(run.clone()), None, out.clone()))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("closed division") && err.contains(why),
                "{err}"
            );
            assert!(!out.exists(), "nothing copied");
            let mut open = opts(Some(run.clone()), None, out.clone());
            open.division = "open".into();
            open.scaffold = false;
            publish(&open).unwrap();
            std::fs::remove_dir_all(&out).unwrap();
        }
        manifest(&run, true, true);
        agentload_fs::OutDir::new(&run)
            .write_json("run_state.json", &json!({"complete": false}))
            .unwrap();
        let err = publish(&opts(Some(run.clone()), None, out.clone()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("did not run to its end"), "{err}");
        agentload_fs::OutDir::new(&run)
            .write_json("run_state.json", &json!({"complete": true}))
            .unwrap();
        std::fs::remove_file(run.join("run_manifest.json")).unwrap();
        let err = publish(&opts(Some(run.clone()), None, out.clone()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("run_manifest.json is missing"), "{err}");
        // An existing tree is kept unless --force.
        manifest(&run, true, true);
        publish(&opts(Some(run.clone()), None, out.clone())).unwrap();
        let err = publish(&opts(Some(run.clone()), None, out.clone()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("exists: pass --force"), "{err}");
        let mut force = opts(Some(run), None, out);
        force.force = true;
        publish(&force).unwrap();
        std::fs::remove_dir_all(&dir).ok();
    }
}
