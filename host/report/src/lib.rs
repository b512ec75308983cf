//! Reports for people, from result files only: `report.html`, one
//! self-contained page (inline CSS and SVG, no script, nothing fetched) for
//! a run, a sweep, or several of either compared; [`diff`] of two runs'
//! result files; and [`export`] of records as CSV.
//!
//! Everything here reads result files (through [`read`]) and depends on no
//! crate of agentload's but the results (and the console): `run` and `demo`
//! write the page next to `report.txt`, `agentload report` writes it for any
//! result directories.
#![forbid(unsafe_code)]

mod aa;
mod arrivals;
pub mod charts;
mod closed;
mod compare;
pub mod diff;
mod error;
pub mod export;
pub mod headline;
mod live;
mod page;
mod points;
pub mod read;
pub(crate) mod run_page;
mod sessions;
mod shards;
mod sweep;
mod telemetry;

use error::io;
pub use error::{ReportError, Result};
pub use read::RunDir;
use std::path::{Path, PathBuf};

/// Labels for `runs`: `labels` where given, else each run's name, made
/// unique with the directory name (and a number) where names collide.
pub fn labels(runs: &[RunDir], given: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let mut l = given.get(i).cloned().unwrap_or_else(|| r.name());
        let clash = |l: &str, out: &[String]| out.iter().any(|o| o == l);
        let dup_name = given.get(i).is_none() && runs.iter().filter(|o| o.name() == l).count() > 1;
        if dup_name {
            let dir = r
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            l = format!("{l} ({dir})");
        }
        let base = l.clone();
        let mut k = 2;
        while clash(&l, &out) {
            l = format!("{base} #{k}");
            k += 1;
        }
        out.push(l);
    }
    out
}

/// The HTML page for one or several result directories.
pub fn render(runs: &[RunDir], given_labels: &[String]) -> Result<String> {
    if runs.is_empty() {
        return Err(ReportError::Nothing("no result directory to report".into()));
    }
    let generated_by = format!("agentload {}", env!("CARGO_PKG_VERSION"));
    let page = if let [r] = runs {
        let mut sections = vec![run_page::header(r)];
        // A live run says it is not official before any number.
        sections.extend(live::section(r));
        sections.extend(closed::section(r));
        sections.extend(run_page::performance(r));
        sections.extend(arrivals::section(r));
        sections.extend(aa::section(r));
        sections.extend(sessions::section(r));
        sections.extend(shards::section(r));
        sections.extend(sweep::section(r));
        sections.extend(telemetry::section(r));
        sections.extend(run_page::accuracy(r));
        let kind = if r.sweep.is_some() { "sweep" } else { "run" };
        page::Page {
            title: format!("agentload {kind}: {}", r.name()),
            subtitle: format!(
                "{} · model {} · endpoint {} · started {}",
                r.path.display(),
                r.manifest_str("model").unwrap_or("?"),
                r.manifest_str("endpoint").unwrap_or("?"),
                r.manifest_str("test_started_at").unwrap_or("?"),
            ),
            generated_by,
            sections,
        }
    } else {
        let labels = labels(runs, given_labels);
        let mut sections = vec![
            compare::runs_table(runs, &labels),
            compare::deltas(runs, &labels),
        ];
        sections.extend(compare::overlays(runs, &labels));
        page::Page {
            title: format!("agentload: {} runs compared", runs.len()),
            subtitle: format!(
                "baseline {}; deltas are each run minus the baseline",
                labels[0]
            ),
            generated_by,
            sections,
        }
    };
    Ok(page::render(&page)?)
}

/// Reads `dirs` and writes their page to `out` (for a directory of
/// datacenter points, `points.json` and no run of its own, the points page).
pub fn write(dirs: &[PathBuf], labels: &[String], out: &Path) -> Result<()> {
    if let [dir] = dirs {
        let file = dir.join("points.json");
        if file.exists() && !dir.join("run_manifest.json").exists() {
            let text = agentload_fs::read::read_to_string(&file).map_err(io("read", &file))?;
            let value: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| ReportError::Malformed {
                    path: file.clone(),
                    message: e.to_string(),
                })?;
            let page = points::page(
                &value,
                &dir.display().to_string(),
                format!("agentload {}", env!("CARGO_PKG_VERSION")),
            );
            let html = page::render(&page)?;
            return write_page(out, &html);
        }
    }
    let runs = dirs
        .iter()
        .map(|d| RunDir::read(d))
        .collect::<Result<Vec<_>, _>>()?;
    let html = render(&runs, labels)?;
    write_page(out, &html)
}

/// Writes a page to `out`, never through a link there.
fn write_page(out: &Path, html: &str) -> Result<()> {
    let (dir, name) = agentload_fs::OutDir::of_file(out)?;
    Ok(dir.write(name, html)?)
}

/// Writes `DIR/report.html` for a finished run.
pub fn write_for_run(dir: &Path) -> Result<PathBuf> {
    let out = dir.join("report.html");
    write(&[dir.to_path_buf()], &[], &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(dir: &Path, file: &str, text: &str) {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn long_runs_are_thinned_to_a_bounded_page() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = String::new();
        for i in 0..12_000u64 {
            let t = i * 1_000_000;
            log.push_str(
                &json!({"session_id": format!("s{}", i % 7), "turn": i / 7, "status": "completed",
                "issued_ns": t, "first_token_ns": t + 300_000 + i, "complete_ns": t + 900_000 + i,
                "usage": {"prompt_tokens": 100 + i, "completion_tokens": 20}})
                .to_string(),
            );
            log.push('\n');
        }
        write(dir.path(), "turns.jsonl", &log);
        write(
            dir.path(),
            "performance/result_summary.json",
            r#"{"n_samples_issued": 12000}"#,
        );
        let html = render(&[RunDir::read(dir.path()).unwrap()], &[]).unwrap();
        assert!(html.contains("1 turn in 3 drawn (12000 turns)"));
        assert!(html.len() < 4_000_000, "{} bytes", html.len());
    }

    #[test]
    fn labels_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        let mut runs = Vec::new();
        for name in ["a", "b"] {
            let d = dir.path().join(name);
            write(&d, "run_manifest.json", "{}");
            write(&d, "config.toml", "name = \"same\"");
            runs.push(RunDir::read(&d).unwrap());
        }
        assert_eq!(labels(&runs, &[]), ["same (a)", "same (b)"]);
        assert_eq!(labels(&runs, &["x".into(), "x".into()]), ["x", "x #2"]);
        assert_eq!(labels(&runs, &["x".into()]), ["x", "same (b)"]);
    }

    #[test]
    fn odd_and_partial_results_still_render() {
        let dir = tempfile::tempdir().unwrap();
        // Accuracy only, the newer wrapped shape, a failed gate.
        let acc = dir.path().join("acc");
        write(
            &acc,
            "accuracy/accuracy_results.json",
            &json!({"average_accuracy": 0.5, "osl_tokenization_s": 0.1, "accuracy_scores": [{
                "dataset_name": "bfcl_v4::function_calling",
                "breakdown": {"overall_accuracy": 50.0, "normalized_single_turn_score": 40.0,
                    "category_scores": {"live": 50.0}, "subset_scores": {"simple_python": 50.0}},
                "gate": {"factor": 0.97, "passed": false, "metrics": {
                    "bfcl_overall_accuracy": {"value": 50.0, "golden": 86.23, "threshold": 83.6431, "passed": false}}}}]})
            .to_string(),
        );
        write(&acc, "report.txt", "run INVALID\n");
        let html = render(&[RunDir::read(&acc).unwrap()], &[]).unwrap();
        assert!(html.contains("accuracy gate FAIL"), "the reason is given");
        assert!(html.contains("id=\"bfcl-subsets\""));
        assert!(html.contains("INVALID"));
        // A performance run with failed and aborted turns, histogram
        // buckets as [lo, hi] pairs, and records with a due time.
        let perf = dir.path().join("perf");
        write(
            &perf,
            "performance/result_summary.json",
            &json!({"n_samples_issued": 2, "n_samples_completed": 1, "n_samples_failed": 1,
                "duration_ns": 2_000_000_000u64, "qps": 0.5, "tps": 2.0,
                "ttft": {"percentiles": {"50.0": 1_000_000, "99.0": 2_000_000}, "avg": 1e6, "max": 2_000_000,
                    "histogram": {"buckets": [[900_000.0, 1_500_000.0], [1_500_000.0, 2_100_000.0]], "counts": [1, 0]}},
                "agentload": {"n_samples_aborted": 1, "token_count_source": "server"}})
            .to_string(),
        );
        write(
            &perf,
            "turns.jsonl",
            concat!(
                r#"{"session_id":"s","turn":1,"status":"completed","issued_ns":10,"first_token_ns":1000010,"complete_ns":3000010,"scheduled_ns":5,"usage":{"prompt_tokens":100,"completion_tokens":5}}"#,
                "\n",
                r#"{"session_id":"s","turn":2,"status":"failed","issued_ns":4000000,"complete_ns":5000000,"error":"HTTP 400: exceed_context_size"}"#,
                "\n",
                r#"{"session_id":"s","turn":3,"status":"aborted","error":"aborted"}"#,
                "\n"
            ),
        );
        write(
            &perf,
            "sessions.json",
            r#"[{"id":"s","expected_turns":3,"completed":1,"failed":1,"aborted":1}]"#,
        );
        let html = render(&[RunDir::read(&perf).unwrap()], &[]).unwrap();
        for needle in [
            "Failed turns",
            "turns were aborted",
            "exceed_context_size",
            "id=\"timeline\"",
            "id=\"ttft-hist\"",
            "id=\"send-lag\"",
            "2 of 3 expected turns missing",
        ] {
            assert!(html.contains(needle), "{needle}");
        }
        // BFCL multi-turn, found through the config's report_file.
        let multi = dir.path().join("multi");
        write(
            &multi,
            "config.toml",
            "name = \"m\"\n[accuracy]\nworkload = \"bfcl-multi\"\nreport_file = \"accuracy/multi_turn_results.json\"\n",
        );
        write(
            &multi,
            "accuracy/multi_turn_results.json",
            &json!({"dataset_name": "bfcl_v4::multi_turn", "gated": false, "score": 0.5,
                "breakdown": {"multi_turn_accuracy": 50.0, "category_scores": {
                    "multi_turn_base": {"accuracy": 75.0, "correct_count": 3, "total_count": 4},
                    "multi_turn_miss_func": {"accuracy": 25.0, "correct_count": 1, "total_count": 4}}}})
            .to_string(),
        );
        let html = render(&[RunDir::read(&multi).unwrap()], &[]).unwrap();
        for needle in [
            "id=\"multi-turn\"",
            "multi_turn_miss_func",
            "not gated",
            "accuracy: bfcl-multi",
        ] {
            assert!(html.contains(needle), "{needle}");
        }
        assert!(!html.contains("(not run)"), "the multi-turn phase ran");
        // A sweep whose phase measured nothing, compared with the others.
        let sweep = dir.path().join("sweep");
        write(
            &sweep,
            "sweep/summary.json",
            &json!({"run": "s", "phases": [{"index": 0, "level": 1, "window": null, "ttft_ms": null,
                "throughput": {"total_tps": 0.0}, "turns": "phase-00-c1/turns.jsonl"}], "slo": []})
            .to_string(),
        );
        let runs: Vec<RunDir> = [&acc, &perf, &sweep]
            .iter()
            .map(|d| RunDir::read(d).unwrap())
            .collect();
        render(&runs[2..], &[]).unwrap();
        let html = render(&runs, &[]).unwrap();
        assert!(html.contains("3 runs compared"));
    }
}
