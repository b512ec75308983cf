//! The HTML report end to end: the demo (twice, at two time scales), their
//! comparison, and a shortened sweep demo, each rendered in a real headless
//! Chromium: no console error, nothing fetched, every chart present and
//! non-empty, no label outside its chart. Screenshots (whole page and per
//! section) and the printed PDF are kept in
//! `$CARGO_TARGET_TMPDIR/report-screenshots/`. Also `diff` (performance,
//! summarised), `export --csv`, and the sweep's frontier marks and
//! `pareto --label`.

use crate::common::*;
use agentload_sim::SimConfig;
use std::path::{Path, PathBuf};

fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots")
}

fn bfcl_present() -> bool {
    let found = agentload_config::data::locate(&data_dir(), "bfcl_v4/possible_answer").is_some();
    if !found {
        let why = "BFCL v4 data not found: the demo runs its performance phase only";
        bfcl_test_data::skip_without(why);
    }
    found
}

async fn ok(args: &[&str], cwd: &Path) -> String {
    let out = agentload(args, cwd).await;
    let t = text(&out);
    assert!(out.status.success(), "agentload {args:?}:\n{t}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_reports_and_their_comparison_render_in_chromium() {
    trajectories();
    let bfcl = bfcl_present();
    let dir = scratch("report-demo");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let out = ok(&["demo", "--out", s(&a)], dir.path()).await;
    assert!(
        out.contains(&format!("report: {}", a.join("report.html").display())),
        "{out}"
    );
    ok(
        &["demo", "--out", s(&b), "--time-scale", "0.0005"],
        dir.path(),
    )
    .await;

    // `report` reproduces the run's own page byte for byte (it only reads).
    let again = dir.path().join("again.html");
    let out = ok(&["report", s(&a), "--out", s(&again)], dir.path()).await;
    assert!(out.contains("bytes,"), "{out}");
    assert_eq!(
        std::fs::read(a.join("report.html")).unwrap(),
        std::fs::read(&again).unwrap()
    );
    let compared = dir.path().join("compared.html");
    ok(
        &[
            "report",
            s(&a),
            s(&b),
            "--out",
            s(&compared),
            "--label",
            "scale 0.001",
            "--label",
            "scale 0.0005",
        ],
        dir.path(),
    )
    .await;

    // diff: performance numbers with deltas, summarised unless --all.
    let d = ok(&["diff", s(&a), s(&b)], dir.path()).await;
    assert!(d.contains("performance/result_summary.json: "), "{d}");
    assert!(
        d.lines()
            .any(|l| l.trim_start().starts_with("TTFT p50") && l.contains('%')),
        "{d}"
    );
    assert!(
        d.lines().count() < 120,
        "the summary stays short: {} lines",
        d.lines().count()
    );
    let all = ok(&["diff", s(&a), s(&b), "--all"], dir.path()).await;
    assert!(all.lines().count() >= d.lines().count());
    assert!(all.contains("turns completed"), "{all}");

    // export: every turn of both phases.
    let csvs = ok(&["export", s(&a), "--csv"], dir.path()).await;
    assert_eq!(csvs.lines().count(), 3, "{csvs}");
    let turns = std::fs::read_to_string(a.join("export/turns.csv")).unwrap();
    let expected_rows = 1 + 1007 + if bfcl { 995 } else { 0 };
    assert_eq!(turns.lines().count(), expected_rows);
    let phases = std::fs::read_to_string(a.join("export/phases.csv")).unwrap();
    assert!(
        phases
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("performance,,1007,1007,0,0,"),
        "{phases}"
    );

    let Some(chromium) = browser::chromium() else {
        return;
    };
    let mut expected = vec![
        "ttft-cdf",
        "ttft-hist",
        "tpot-cdf",
        "tpot-hist",
        "latency-cdf",
        "latency-hist",
        "isl-ttft",
        "timeline",
        "context-growth",
        "isl-hist",
        "osl-hist",
        "score-per-turn",
        "score-per-conversation",
        "ttft-by-turn",
        "ttft-by-isl",
        "session-time",
    ];
    if bfcl {
        expected.extend(["bfcl-categories", "bfcl-subsets"]);
    }
    let page = browser::load(&chromium, &a.join("report.html"), &shots(), "demo");
    page.assert_clean(&expected);
    assert_eq!(page.sections[..3], ["run", "performance", "sessions"]);
    for needle in [
        "VALID",
        "SEALED",
        "coding-replay",
        "sha256:",
        "Qwen3.6-27B-Q4_K_M",
        "turns completed",
    ] {
        assert!(page.text.contains(needle), "{needle} not on the page");
    }
    if bfcl {
        for needle in ["PASS", "83.64", "85.32", "bfcl_overall_accuracy"] {
            assert!(page.text.contains(needle), "{needle} not on the page");
        }
    }
    let page = browser::load(&chromium, &compared, &shots(), "compared");
    page.assert_clean(&[
        "ttft-cdf-overlay",
        "tpot-cdf-overlay",
        "latency-cdf-overlay",
        "isl-overlay",
        "ttft-by-turn-overlay",
    ]);
    for needle in [
        "scale 0.001",
        "scale 0.0005",
        "Δ %",
        "TTFT p99",
        "output tokens per second",
    ] {
        assert!(page.text.contains(needle), "{needle} not on the comparison");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_report_renders_in_chromium_and_marks_the_frontier() {
    let data = trajectories();
    let sim = start_sim(SimConfig {
        time_scale: 0.002,
        slots: 16,
        cache_tokens: 4_000_000,
        responder: gold_responder(Some(data), None),
        ..SimConfig::default()
    })
    .await;
    let dir = scratch("report-sweep");
    // The shipped sweep demo, shortened: three levels, short windows.
    let shipped = include_str!("../../configs/agentperf-sweep-demo.toml");
    let mut config = shipped.to_owned();
    for (from, to) in [
        ("levels = [1, 2, 4, 8, 16, 32, 64]", "levels = [1, 4, 16]"),
        ("steady_state_s = 5.0", "steady_state_s = 1.0"),
        ("warmup_s = 1.0", "warmup_s = 0.2"),
        ("tokenizer = \"qwen3.6\"", "tokenizer = \"none\""),
    ] {
        assert!(
            config.contains(from),
            "the sweep demo config changed: {from}"
        );
        config = config.replace(from, to);
    }
    let cfg = dir.path().join("sweep.toml");
    std::fs::write(&cfg, config).unwrap();
    let out = dir.path().join("sweep");
    let run = run_ok(&cfg, &out, &["--endpoint", &sim.url()], dir.path()).await;
    sim.shutdown().await;
    assert!(run.contains("* = on the Pareto frontier"), "{run}");
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    let pareto = json(&out.join("sweep/pareto.json"));
    let on: Vec<u64> = pareto["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["level"].as_u64().unwrap())
        .collect();
    for level in [1u64, 4, 16] {
        let line = report
            .lines()
            .find(|l| {
                l.get(1..)
                    .is_some_and(|r| r.starts_with(&format!(" c{level} ")))
            })
            .unwrap_or_else(|| panic!("no line for c{level}:\n{report}"));
        assert_eq!(line.starts_with('*'), on.contains(&level), "{line}");
    }
    assert!(out.join("report.html").is_file());

    // pareto --label names each sweep's points; too many labels is an error.
    let labelled = ok(
        &[
            "pareto",
            s(&out),
            s(&out),
            "--label",
            "first",
            "--label",
            "second",
            "--out",
            "p.json",
        ],
        dir.path(),
    )
    .await;
    assert!(labelled.is_empty(), "{labelled}");
    let p = json(&dir.path().join("p.json"));
    let runs: std::collections::BTreeSet<&str> = p["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["run"].as_str().unwrap())
        .collect();
    assert_eq!(runs.into_iter().collect::<Vec<_>>(), ["first", "second"]);
    let bad = agentload(
        &["pareto", s(&out), "--label", "a", "--label", "b"],
        dir.path(),
    )
    .await;
    assert!(!bad.status.success());
    assert!(
        text(&bad).contains("2 labels for 1 sweeps"),
        "{}",
        text(&bad)
    );

    // diff works on sweeps; export has one row per phase.
    let d = ok(&["diff", s(&out), s(&out)], dir.path()).await;
    assert!(d.contains("sweep/summary.json: 0 of "), "{d}");
    ok(&["export", s(&out), "--csv"], dir.path()).await;
    let phases = std::fs::read_to_string(out.join("export/phases.csv")).unwrap();
    assert_eq!(phases.lines().count(), 4, "{phases}");

    let Some(chromium) = browser::chromium() else {
        return;
    };
    let page = browser::load(&chromium, &out.join("report.html"), &shots(), "sweep");
    page.assert_clean(&[
        "pareto",
        "interactivity-by-level",
        "session-time-by-level",
        "pareto-mlperf-e2e",
        "pareto-tps-per-user",
        "pareto-agentx",
        // The shipped config scrapes the endpoint's own /metrics.
        "telemetry-output",
        "telemetry-queue",
        "ttft-by-level",
        "speed-by-level",
        "throughput-by-level",
        "cached-by-level",
        "send-lag-by-level",
        "phase-windows",
        "ttft-per-phase",
        "speed-per-phase",
    ]);
    for needle in ["SLO interactive", "max agents", "★", "Phases"] {
        assert!(page.text.contains(needle), "{needle} not on the page");
    }
}

/// For looking at any report: `AGENTLOAD_REPORT_HTML=FILE cargo test --test
/// report screenshots_of_a_page -- --ignored` writes its screenshots (and
/// PDF) next to the others, named `page`.
#[test]
#[ignore = "a tool: needs AGENTLOAD_REPORT_HTML"]
fn screenshots_of_a_page() {
    let html = std::env::var_os("AGENTLOAD_REPORT_HTML").expect("AGENTLOAD_REPORT_HTML=FILE");
    let chromium = browser::chromium().expect("chromium-headless-shell");
    let page = browser::load(&chromium, Path::new(&html), &shots(), "page");
    eprintln!(
        "{} charts, errors {:?}, screenshots in {}",
        page.charts.len(),
        page.errors,
        shots().display()
    );
}

/// The TPOT chart's curve and its percentile-grid dots are one population: the lower
/// percentiles of the values the curve is drawn from are the summary's grid, exactly. (The
/// page once took its token counts from `turns.jsonl`, which has none: the local counts are
/// in `turns.tokens.jsonl`, so its curve divided by the server's counts and the dots by the
/// local ones.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tpot_curve_and_its_percentile_dots_are_one_population() {
    if !vocabulary() {
        return;
    }
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("tpot-population");
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 3", "");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("tokenizer = \"none\"", "tokenizer = \"qwen3.6\"");
    std::fs::write(&config, text).unwrap();
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    sim.shutdown().await;
    let summary = json(&out.join("performance/result_summary.json"));
    assert_eq!(summary["agentload"]["token_count_source"], "local");
    let run = agentload_report::RunDir::read(&out).unwrap();
    let mut drawn = run.tpot_ns();
    drawn.sort_by(f64::total_cmp);
    assert!(drawn.len() > 20, "{} turns", drawn.len());
    for p in agentload_results::metrics::PERCENTILE_GRID {
        let key = format!("{p:.1}");
        let dot = summary["tpot"]["percentiles"][&key].as_f64().unwrap();
        let curve = agentload_results::metrics::lower_percentile(&drawn, p);
        assert_eq!(
            curve, dot,
            "p{key}: the curve passes {curve} ns, the dot is at {dot} ns"
        );
    }
}
