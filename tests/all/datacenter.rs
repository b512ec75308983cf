//! The MLPerf datacenter agentic replay through the real binary: the
//! reference's trajectory salts (coding-replay `enable_salt`) seen by the
//! server, as prefix reuse.

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use serde_json::Value;

const CONV: &str = "astropy__astropy-12907";

/// Runs `CONV` twice (pass 1, then `__repeat_2`) at concurrency 1 and
/// returns, for the repeat's first turn, the cached and prompt tokens, and
/// for every later turn of either instance, its cached tokens and the
/// previous turn's prompt tokens.
async fn repeat_reuse(url: &str, salt: bool) -> ((u64, u64), Vec<(u64, u64)>) {
    let dir = scratch("dc-salt");
    let config = edge_config(
        dir.path(),
        url,
        &format!(
            "conversations = [\"{CONV}\"]\nnum_trajectories_to_issue = 2\nenable_salt = {salt}\n\
             max_completion_tokens = 16"
        ),
        "include_usage = true",
    );
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    let records = read_jsonl(&out.join("turns.jsonl"));
    let cached = |r: &Value| {
        r["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap()
    };
    let prompt = |r: &Value| r["usage"]["prompt_tokens"].as_u64().unwrap();
    let repeat = format!("{CONV}__repeat_2");
    let first_of_repeat = records
        .iter()
        .find(|r| r["session_id"] == repeat.as_str())
        .expect("the repeat ran");
    let later: Vec<(u64, u64)> = records
        .windows(2)
        .filter(|w| w[0]["session_id"] == w[1]["session_id"])
        .map(|w| (cached(&w[1]), prompt(&w[0])))
        .collect();
    assert!(later.len() > 10, "{later:?}");
    ((cached(first_of_repeat), prompt(first_of_repeat)), later)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_salts_keep_reuse_within_an_instance_and_none_across_passes() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0002,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    // Unsalted, the second pass's first prompt is what the server just saw.
    let ((plain_cached, prompt), _) = repeat_reuse(&sim.url(), false).await;
    assert!(
        plain_cached * 10 >= prompt * 9,
        "{plain_cached} of {prompt}"
    );
    // Salted, pass 2's prompt differs from its first bytes (`[salt: R]`
    // with another R): only the few tokens before the salt's digits match.
    let ((salted_cached, prompt), later) = repeat_reuse(&sim.url(), true).await;
    assert!(salted_cached * 10 < prompt, "{salted_cached} of {prompt}");
    // Within an instance every turn keeps the same salted prompt: each
    // reuses the whole prompt before it (the simulator, as llama.cpp,
    // processes the last prompt token again).
    assert!(later.iter().all(|(c, p)| c + 1 >= *p), "{later:?}");
    sim.shutdown().await;
}

/// Runs a (changed) preset's `config` text in `dir` against `url`, its
/// performance phase only; returns the run directory.
async fn run_preset(dir: &std::path::Path, config: &str, url: &str) -> std::path::PathBuf {
    let cfg = dir.join("qwen.toml");
    std::fs::write(&cfg, config).unwrap();
    let out = dir.join("out");
    run_ok(&cfg, &out, &["--endpoint", url, "--mode", "perf"], dir).await;
    out
}

/// The shipped Qwen preset, shortened to two edge conversations: a
/// development run goes on, lists its deviations, and writes the point
/// metrics the submission checker reads back with its own formulas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_qwen_preset_runs_in_development_with_its_point_metrics() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0002,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let dir = scratch("dc-preset");
    let shipped = include_str!("../../configs/datacenter-qwen3.6-35b-a3b.toml");
    let mut config = shipped.to_owned();
    for (from, to) in [
        ("agentic_combined.jsonl", "agentic_coding_2.5h.jsonl"),
        (
            "num_trajectories_to_issue = 613",
            "num_trajectories_to_issue = 2",
        ),
        ("tokenizer = \"qwen3.6\"", "tokenizer = \"none\""),
        ("inject_tool_delay = true", "inject_tool_delay = false"),
        // The OSL checks below read the server's usage.
        ("include_usage = false", "include_usage = true"),
    ] {
        assert!(config.contains(from), "the preset changed: {from}");
        config = config.replace(from, to);
    }
    let out = run_preset(dir.path(), &config, &sim.url()).await;
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    for key in [
        "performance.settings.num_trajectories_to_issue",
        "performance.settings.inject_tool_delay",
        "endpoint.include_usage",
    ] {
        assert!(report.contains(key), "{key} not in\n{report}");
    }
    let manifest = json(&out.join("run_manifest.json"));
    assert_eq!(
        manifest["compliance"]["rules"],
        "mlperf-datacenter-agentic-v1.0-qwen3.6"
    );
    assert_eq!(manifest["compliance"]["compliant"], false);
    let s = json(&out.join("performance/result_summary.json"));
    let f = |k: &str| s[k].as_f64().unwrap_or_else(|| panic!("{k}: {s}"));
    let secs = f("duration_ns") / 1e9;
    assert_eq!(
        f("system_tps"),
        s["output_sequence_lengths"]["total"].as_f64().unwrap() / secs
    );
    let tpot_p90_ms = s["tpot"]["percentiles"]["90.0"].as_f64().unwrap() / 1e6;
    assert!((f("tps_per_user") / (1000.0 / tpot_p90_ms) - 1.0).abs() < 0.01);
    assert_eq!(
        f("e2e_avg_interactivity"),
        f("output_tokens_per_turn_total") / f("e2e_turn_time_seconds_total")
    );
    let fallback = s["output_sequence_lengths"]["total"].as_f64().unwrap()
        / (s["latency"]["total"].as_f64().unwrap() / 1e9);
    assert!((fallback / f("e2e_avg_interactivity") - 1.0).abs() < 0.01);
    // The full-run OSL block counts every performance turn, the window's
    // tail included (two sessions on eight slots: the window closed at the
    // first session's end; the other's later turns, if any, are the tail).
    let full = &s["output_sequence_lengths_full_run"];
    let turns = read_jsonl(&out.join("turns.jsonl"));
    let n = |k: &str| full[k].as_u64().unwrap_or_else(|| panic!("{k}: {full}"));
    assert_eq!(
        (n("n_turns_counted") + n("n_empty") + n("n_errors")) as usize,
        turns.len(),
        "{full}"
    );
    assert_eq!(full["partial"], false);
    let osl_all: u64 = turns
        .iter()
        .map(|t| t["usage"]["completion_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(
        full["output_sequence_lengths"]["total"].as_u64(),
        Some(osl_all)
    );
    // The window's counts and its tail make up the journal (how many turns
    // the tail holds depends on how the two sessions' timings fall).
    let tracking = &s["agentload"]["tracking"];
    assert_eq!(
        (tracking["tracked"].as_u64().unwrap() + tracking["tail"].as_u64().unwrap()) as usize,
        turns.len(),
        "{tracking}"
    );
    assert!(osl_all >= s["output_sequence_lengths"]["total"].as_u64().unwrap());
    sim.shutdown().await;
}

/// Writes the datacenter-shaped stand-in (`agentload dataset datacenter`)
/// into `dir/data/agentic_combined.jsonl`, delays scaled to a thousandth.
pub(crate) async fn standin_data(dir: &std::path::Path, workflow: u32) -> std::path::PathBuf {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let file = data.join("agentic_combined.jsonl");
    let edge = trajectories();
    let made = agentload(
        &[
            "dataset",
            "datacenter",
            "--edge",
            edge.to_str().unwrap(),
            "--out",
            file.to_str().unwrap(),
            "--workflow",
            &workflow.to_string(),
            "--delay-scale",
            "0.001",
        ],
        dir,
    )
    .await;
    assert!(made.status.success(), "{}", text(&made));
    file
}

/// The inline scorer's two domains through the real binary: the Qwen
/// preset over the stand-in (one coding trajectory and six workflow
/// conversations, two passes, salts and delays on) against the oracle.
/// Every scored turn of both domains scores 1 (the oracle answers with the
/// recorded rows), repeats are scored as `repeat` 2, the codeless closing
/// replies are excluded, and the counts add up to the journal's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inline_scorer_scores_coding_and_workflow_turns() {
    let dir = scratch("dc-inline");
    let file = standin_data(dir.path(), 6).await;
    let sim = start_sim(replay_sim(file.clone())).await;
    let shipped = include_str!("../../configs/datacenter-qwen3.6-35b-a3b.toml");
    let ids: Vec<String> = std::iter::once("dc-astropy__astropy-12907".to_owned())
        .chain((1..=6).map(|k| format!("sim_{k}")))
        .collect();
    let mut config = shipped.replace(
        "num_trajectories_to_issue = 613",
        &format!(
            "num_trajectories_to_issue = 14\nconversations = {}",
            serde_json::to_string(&ids).unwrap()
        ),
    );
    config = config.replace("tokenizer = \"qwen3.6\"", "tokenizer = \"none\"");
    config.insert_str(0, &format!("data_dir = {:?}\n", dir.path().join("data")));
    let out = run_preset(dir.path(), &config, &sim.url()).await;
    let scores = json(&out.join("scores.json"));
    let domains = &scores["domains"];
    assert_eq!(domains["coding"]["score"], 1.0, "{domains}");
    assert_eq!(domains["workflow"]["score"], 1.0, "{domains}");
    assert_eq!(scores["score"], 1.0);
    // The generated data: each workflow conversation names 1-3 intents.
    let rows = read_jsonl(&file);
    let coded = rows
        .iter()
        .filter(|r| {
            r["conversation_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("sim_"))
        })
        .filter(|r| r["intent_codes"].is_array())
        .count();
    assert_eq!(domains["workflow"]["scored"], 2 * coded, "two passes");
    let per_turn = scores["per_turn"].as_array().unwrap();
    let workflow_rows: Vec<&Value> = per_turn
        .iter()
        .filter(|r| r["domain"] == "workflow")
        .collect();
    assert!(workflow_rows
        .iter()
        .all(|r| r["model_intent"].is_string() && r["score"] == 1.0));
    assert!(workflow_rows.iter().any(|r| r["repeat"] == 2));
    let excluded = scores["excluded_turns"].as_array().unwrap();
    assert!(
        excluded
            .iter()
            .filter(|r| r["domain"] == "workflow")
            .count()
            >= 6,
        "each sim_N's closing reply: {excluded:?}"
    );
    let turns = read_jsonl(&out.join("turns.jsonl"));
    assert_eq!(scores["turns"]["issued"], turns.len());
    assert_eq!(scores["turns"]["missing"], 0);
    sim.shutdown().await;
}

/// `agentload check`: seven points laid out as `r<C>/` with their summaries
/// pass the Rules v1.0 region checks; a short point and a misnamed one fail
/// them, with exit code 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reads_the_points_and_applies_the_region_rules() {
    let dir = scratch("dc-check");
    let point = |name: &str, c: u64, secs: u64| {
        let d = dir.path().join("points").join(name).join("performance");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("result_summary.json"),
            serde_json::json!({
                "duration_ns": secs * 1_000_000_000,
                "run_config": {"load_pattern": {"type": "agentic_inference", "target_concurrency": c}},
                "output_sequence_lengths_full_run": {"output_sequence_lengths": {"avg": 400.0}},
            })
            .to_string(),
        )
        .unwrap();
        std::fs::write(d.join("../scores.json"), r#"{"score": 0.6}"#).unwrap();
    };
    for c in [16, 20, 26, 60, 100, 117, 1024] {
        point(&format!("r{c}"), c, 1300);
    }
    let points = dir.path().join("points");
    let args = [
        "check",
        points.to_str().unwrap(),
        "--max-supported-concurrency",
        "1024",
    ];
    let ok = agentload(&args, dir.path()).await;
    let out = text(&ok);
    assert!(ok.status.success(), "{out}");
    assert!(
        out.contains("Low 17-26, Medium 27-117, High 118-1024, margin 1025-1127"),
        "{out}"
    );
    assert!(out.contains("c20     Ultra Low + Low"), "{out}");
    // Qwen's gates: inline >= 55.86 %, the checker's OSL band [344, 422].
    let gated = [&args[..], &["--model", "qwen3.6-35b-a3b"]].concat();
    let ok = agentload(&gated, dir.path()).await;
    assert!(ok.status.success(), "{}", text(&ok));
    assert!(text(&ok).contains("pass osl-band"), "{}", text(&ok));
    std::fs::write(points.join("r26/scores.json"), r#"{"score": 0.55}"#).unwrap();
    let low = agentload(&gated, dir.path()).await;
    assert_eq!(low.status.code(), Some(3));
    assert!(
        text(&low).contains("FAIL inline-accuracy: below 55.86 %: r26 55.00 %"),
        "{}",
        text(&low)
    );
    // A Low point under 1200 s, and a directory not named for its concurrency.
    point("r20", 20, 900);
    point("r61", 60, 1300);
    std::fs::remove_dir_all(points.join("r60")).unwrap();
    let bad = agentload(&args, dir.path()).await;
    let out = text(&bad);
    assert_eq!(bad.status.code(), Some(3), "{out}");
    assert!(
        out.contains("FAIL point-duration: r20 900 s < 1200 s"),
        "{out}"
    );
    assert!(
        out.contains("FAIL point-directories: not r<concurrency>: r61"),
        "{out}"
    );
}

/// `run --points`: one full run per concurrency in `r<C>/`, and
/// `points.json` with each point's coordinates and the non-dominated ones;
/// with `--max-supported-concurrency` the region checks run on them (two
/// points are too few: reported, not fatal, in development).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn points_run_one_full_run_per_concurrency() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("dc-points");
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 4", "");
    let out = dir.path().join("points");
    let said = run_ok(
        &config,
        &out,
        &["--points", "1,4", "--max-supported-concurrency", "64"],
        dir.path(),
    )
    .await;
    assert!(said.contains("FAIL point-count: 2 points"), "{said}");
    let points = json(&out.join("points.json"));
    let list = points["points"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    for (p, c) in list.iter().zip([1, 4]) {
        assert_eq!(p["dir"], format!("r{c}"));
        let summary = json(&out.join(format!("r{c}/performance/result_summary.json")));
        assert_eq!(
            summary["run_config"]["load_pattern"]["target_concurrency"],
            c
        );
        let tps = summary["output_sequence_lengths"]["total"]
            .as_f64()
            .unwrap()
            / (summary["duration_ns"].as_f64().unwrap() / 1e9);
        assert!(
            (p["system_tps"].as_f64().unwrap() - tps).abs() < 1e-6,
            "{p}"
        );
        assert_eq!(
            p["e2e_interactivity"],
            summary["agentload"]["interactivity"]["mlperf_e2e_interactivity"]
        );
    }
    // Non-dominated: no other point at least as good on both axes, better on one.
    let xy: Vec<(f64, f64)> = list
        .iter()
        .map(|p| {
            (
                p["e2e_interactivity"].as_f64().unwrap(),
                p["system_tps"].as_f64().unwrap(),
            )
        })
        .collect();
    for (i, p) in list.iter().enumerate() {
        let dominated = xy.iter().enumerate().any(|(j, q)| {
            j != i && q.0 >= xy[i].0 && q.1 >= xy[i].1 && (q.0 > xy[i].0 || q.1 > xy[i].1)
        });
        assert_eq!(p["non_dominated"], !dominated, "{p}");
    }
    assert_eq!(points["region_checks_passed"], false);
    // The points page: the step curve through the non-dominated points.
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        page.contains("official curve (step function)"),
        "points page"
    );
    assert!(page.contains("r4"), "points page lists r4");
    sim.shutdown().await;
}

/// The acceptance's sweep: `run --points` writes a seven-point set (C_max
/// 64: Ultra Low 1, Low 2-5, Medium 6-17, High 18-64) that `check` accepts,
/// its durations checked at a development scale (the runs last seconds,
/// not 600/1200 s, and the check says so). The same set without its
/// Medium points, made up to seven with two more Low ones, is refused,
/// naming Medium.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seven_point_sweep_passes_check_and_a_set_without_medium_fails() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("dc-seven");
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 2", "");
    let full = dir.path().join("full");
    let said = run_ok(
        &config,
        &full,
        &[
            "--points",
            "1,2,4,8,16,32,64",
            "--max-supported-concurrency",
            "64",
            "--min-duration-scale",
            "0",
        ],
        dir.path(),
    )
    .await;
    assert!(
        said.contains("Ultra Low 1-32, Low 2-5, Medium 6-17, High 18-64"),
        "{said}"
    );
    assert!(!said.contains("FAIL"), "{said}");
    assert!(
        said.contains("warning: every point sends the same prompts (no salts)"),
        "{said}"
    );
    assert_eq!(
        json(&full.join("points.json"))["region_checks_passed"],
        true
    );
    let check = |set: &std::path::Path, scale: &'static str| {
        let set = set.to_str().unwrap().to_owned();
        let dir = dir.path().to_path_buf();
        async move {
            let args = [
                "check",
                &set,
                "--max-supported-concurrency",
                "64",
                "--min-duration-scale",
                scale,
            ];
            agentload(&args, &dir).await
        }
    };
    let ok = check(&full, "0").await;
    assert!(ok.status.success(), "{}", text(&ok));
    assert!(
        text(&ok).contains("pass point-duration: every point ran its region's minimum")
            && text(&ok).contains("scaled by 0"),
        "{}",
        text(&ok)
    );
    // At the rules' durations the same set fails: seconds, not minutes.
    let real = check(&full, "1").await;
    assert_eq!(real.status.code(), Some(3), "{}", text(&real));
    assert!(
        text(&real).contains("FAIL point-duration"),
        "{}",
        text(&real)
    );

    // point.yaml per point: what the runs recorded plus the disclosures;
    // a required disclosure nobody gave is refused by name.
    let refused = agentload(
        &[
            "point-yaml",
            full.to_str().unwrap(),
            "--max-supported-concurrency",
            "64",
        ],
        dir.path(),
    )
    .await;
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("point.yaml needs division, model_name, model_precision"),
        "{}",
        text(&refused)
    );
    let disclosure = dir.path().join("disclosure.toml");
    std::fs::write(
        &disclosure,
        "division = \"Standardized\"\nmodel_name = \"qwen3_6-35b-a3b\"\n\
         model_precision = \"bf16\"\nlink_to_model = \"https://example.org/m\"\n\
         dataset_type = \"performance\"\ndataset_link = \"https://example.org/d\"\n\
         shared_src = \"src/agentload\"\nshared_docs = \"docs\"\nseed_set = \"A\"\n\
         target_cohort = \"2026-10-C1\"\n[checkpoint]\nrepository = \"Qwen/Qwen3.6-35B-A3B\"\n",
    )
    .unwrap();
    let wrote = agentload(
        &[
            "point-yaml",
            full.to_str().unwrap(),
            "--max-supported-concurrency",
            "64",
            "--disclosure",
            disclosure.to_str().unwrap(),
        ],
        dir.path(),
    )
    .await;
    assert!(wrote.status.success(), "{}", text(&wrote));
    let yaml = std::fs::read_to_string(full.join("r4/point.yaml")).unwrap();
    for line in [
        "concurrency: 4",
        "region: low_concurrency",
        "dataset: agentic_coding_2.5h",
        "load_pattern: agentic_inference",
        "num_trajectories_to_issue: 2",
        "max_supported_concurrency: 64",
        "eval_method: agentic_inference_inline",
        "division: Standardized",
        "repository: Qwen/Qwen3.6-35B-A3B",
    ] {
        assert!(yaml.contains(line), "{line} not in\n{yaml}");
    }
    assert!(std::fs::read_to_string(full.join("r1/point.yaml"))
        .unwrap()
        .contains("region: low_latency"));

    let partial = dir.path().join("no-medium");
    run_ok(&config, &partial, &["--points", "3,5"], dir.path()).await;
    for c in [1, 2, 4, 32, 64] {
        let from = full.join(format!("r{c}"));
        let copied = copy_dir(&from, &partial.join(format!("r{c}")));
        assert!(copied > 0, "{}", from.display());
    }
    let bad = check(&partial, "0").await;
    let out = text(&bad);
    assert_eq!(bad.status.code(), Some(3), "{out}");
    assert!(
        out.contains("FAIL region-coverage: no point in Medium"),
        "{out}"
    );
    assert_eq!(out.matches("FAIL").count(), 1, "only the coverage: {out}");
    sim.shutdown().await;
}

/// Copies a run directory (files and folders); returns the files copied.
fn copy_dir(from: &std::path::Path, to: &std::path::Path) -> usize {
    std::fs::create_dir_all(to).unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            n += copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
            n += 1;
        }
    }
    n
}
