//! A plugin built against an older WIT version still loads and runs: the
//! host keeps bindings for every supported `agentload:plugin` version and
//! dispatches on the one a component declares (wit/README.md).
//!
//! The older version is `agentload:plugin@0.1.0`, the previous release,
//! frozen: its `turn-request` carries the whole history every turn, and its
//! scorer `report` has no typed gate (the gate is the `gate` key of the
//! report JSON). The fixtures `tests/plugins/old-workload` and
//! `tests/plugins/old-scorer` are built against it by
//! scripts/build-plugins.sh (`test-plugins/old_*.wasm`). Each of the
//! workload's turns after the first carries the previous answer back, and it
//! refuses a completed outcome without content, so a run that completes
//! every turn shows records crossing the version boundary both ways.

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};

/// `session`'s third request (its five messages) in the simulator's request log, and its
/// messages' texts.
fn third_request(log: &std::path::Path, session: &str) -> (serde_json::Value, Vec<String>) {
    let requests = read_jsonl(log);
    let third = requests
        .iter()
        .find(|r| r["session"] == session && r["body"]["messages"].as_array().unwrap().len() == 5)
        .unwrap_or_else(|| panic!("no third request of {session} in {requests:#?}"))
        .clone();
    let texts = third["body"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    (third, texts)
}

/// `agentload run` of the fixture workload `plugin` (2 sessions of `turns`
/// turns) against the simulator at `url`, which must succeed: the output
/// folder and the console output.
async fn run_fixture(
    dir: &std::path::Path,
    url: &str,
    plugin: &str,
    turns: u32,
) -> (std::path::PathBuf, String) {
    let config = format!(
        r#"name = "{plugin}"
[model]
name = "m"
tokenizer = "none"
[endpoint]
url = "{url}"
[performance]
workload = "{}"
report_file = "none.json"
[performance.settings]
sessions = 2
turns = {turns}
"#,
        test_plugin(plugin).display()
    );
    std::fs::write(dir.join("run.toml"), config).unwrap();
    let out = dir.join("out");
    let run = agentload(&["run", "run.toml", "--out", out.to_str().unwrap()], dir).await;
    let output = text(&run);
    assert!(run.status.success(), "{output}");
    (out, output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_loads_a_workload_built_against_an_older_wit() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Echo,
        ..Default::default()
    })
    .await;
    let dir = scratch("old-workload-run");
    let (out, output) = run_fixture(dir.path(), &sim.url(), "old_workload", 2).await;
    assert_eq!(sim.requests_served(), 4, "{output}");
    sim.shutdown().await;

    let sessions = json(&out.join("sessions.json"));
    let sessions = sessions.as_array().expect("a list of sessions");
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    for s in sessions {
        assert_eq!(s["completed"], 2, "{s}");
        assert!(s["error"].is_null(), "{s}");
    }
    let summary = json(&out.join("performance/result_summary.json"));
    assert_eq!(summary["n_samples_issued"], 4, "{summary}");
    assert_eq!(summary["n_samples_completed"], 4, "{summary}");
    assert_eq!(summary["n_samples_failed"], 0, "{summary}");
    let turns = read_jsonl(&out.join("turns.jsonl"));
    assert_eq!(turns.len(), 4);

    let manifest = json(&out.join("run_manifest.json"));
    let plugins = manifest["plugins"].as_array().unwrap();
    assert_eq!(plugins.len(), 1, "{manifest:#}");
    assert_eq!(plugins[0]["name"], "old-workload");
    assert_eq!(plugins[0]["version"], "0.1.0");
    assert_eq!(plugins[0]["kind"], "workload");
    let digest = plugins[0]["digest"].as_str().unwrap();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.contains("old-workload"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reports_and_runs_a_workload_built_against_an_older_wit() {
    let scratch = scratch("old-workload-check");
    let wasm = test_plugin("old_workload");
    let out = agentload(
        &[
            "plugin",
            "check",
            wasm.to_str().unwrap(),
            "--settings",
            r#"{"sessions": 2, "turns": 2}"#,
            "--turns",
            "4",
            "--json",
        ],
        scratch.path(),
    )
    .await;
    assert!(out.status.success(), "plugin check: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json_end = stdout.rfind('}').expect("a JSON report") + 1;
    let report: serde_json::Value = serde_json::from_str(&stdout[..json_end]).unwrap();
    assert_eq!(report["world"], "workload-plugin", "{report:#}");
    assert_eq!(
        report["wit_versions"],
        serde_json::json!(["agentload:plugin@0.1.0"])
    );
    assert_eq!(
        report["supported_versions"],
        "agentload:plugin@0.1.0, agentload:plugin@0.2.0, agentload:plugin@0.3.0, \
         agentload:plugin@0.4.0"
    );
    assert!(report["exports"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!(
            "agentload:plugin/workload@0.1.0#next-turn"
        )));
    assert_eq!(report["plugin"]["name"], "old-workload");
    assert_eq!(report["plugin"]["version"], "0.1.0");
    let workload = &report["workload"];
    assert_eq!(workload["sessions"], 2, "{workload:#}");
    assert_eq!(workload["expected_turns"], 4, "{workload:#}");
    assert_eq!(workload["completed_turns"], 4, "{workload:#}");
    assert_eq!(workload["sessions_finished"], 2, "{workload:#}");
    let turns = workload["turns"].as_array().unwrap();
    // A 0.1.0 turn's delay reaches the host (turn n waits n - 1 ms).
    assert_eq!(turns[0]["delay_ms"], 0, "{workload:#}");
    assert_eq!(turns[1]["delay_ms"], 1, "{workload:#}");
    // The second turn carries the first answer back (the outcome reached
    // the old plugin converted to its records).
    assert_eq!(turns[0]["roles"], serde_json::json!(["user"]));
    assert_eq!(
        turns[1]["roles"],
        serde_json::json!(["user", "assistant", "user"])
    );
    assert!(stdout.contains("check passed"), "{stdout}");

    // The human-readable report names the version too.
    let out = agentload(&["plugin", "check", wasm.to_str().unwrap()], scratch.path()).await;
    assert!(out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("wit        agentload:plugin@0.1.0"), "{t}");
}

/// A 0.1.0 workload and a 0.1.0 scorer in one accuracy phase: the items and
/// verdicts cross the version boundary, and the gate is read from the old
/// report's JSON (passed, then failed under a higher bar, which fails
/// `--require-valid`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_scorers_gate_is_read_from_its_report_json() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Echo,
        ..Default::default()
    })
    .await;
    let dir = scratch("old-scorer-run");
    for (min_score, passes) in [(0.5, true), (1.5, false)] {
        let config = format!(
            r#"name = "old-scorer"
[model]
name = "m"
tokenizer = "none"
[endpoint]
url = "{}"
[accuracy]
workload = "{}"
scorer = "{}"
report_file = "old.json"
[accuracy.settings]
sessions = 2
turns = 2
[accuracy.scorer_settings]
min_score = {min_score}
"#,
            sim.url(),
            test_plugin("old_workload").display(),
            test_plugin("old_scorer").display()
        );
        std::fs::write(dir.path().join("run.toml"), config).unwrap();
        let out = dir.path().join(format!("out-{min_score}"));
        let run = agentload(
            &[
                "run",
                "run.toml",
                "--accuracy-only",
                "--require-valid",
                "--out",
                out.to_str().unwrap(),
            ],
            dir.path(),
        )
        .await;
        let output = text(&run);
        assert_eq!(run.status.success(), passes, "{output}");
        let verdict = if passes { "PASS" } else { "FAIL" };
        let line = format!("accuracy gate {verdict}: answered 1.00");
        assert!(output.contains(&line), "{output}");
        let report = json(&out.join("old.json"));
        assert_eq!(report["score"], 1.0, "{report}");
        assert_eq!(report["gate"]["passed"], passes, "{report}");
        let manifest = json(&out.join("run_manifest.json"));
        let names: Vec<&str> = manifest["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["old-workload", "old-scorer"], "{manifest:#}");
    }
    sim.shutdown().await;
}

/// The version before the current one, `agentload:plugin@0.2.0`, frozen:
/// its `next-turn` returns the next request alone (no live-reply review)
/// and a turn keeps the previous request's messages (`keep`). The fixture
/// `tests/plugins/prev-workload` keeps each previous request and adds the
/// answer, so a run whose every turn completes shows the answer and the
/// kept messages crossing the 0.2.0 boundary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_loads_a_workload_built_against_the_previous_wit() {
    let dir = scratch("prev-workload-run");
    let log = dir.path().join("requests.jsonl");
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Echo,
        request_log: Some(log.clone()),
        ..Default::default()
    })
    .await;
    let (out, output) = run_fixture(dir.path(), &sim.url(), "prev_workload", 3).await;
    assert_eq!(sim.requests_served(), 6, "{output}");
    sim.shutdown().await;
    let sessions = json(&out.join("sessions.json"));
    for s in sessions.as_array().expect("a list of sessions") {
        assert_eq!(s["completed"], 3, "{s}");
    }
    // The third request of a session: the kept first two turns, each
    // answer (the echo of its user message) and the new user message.
    let (_, texts) = third_request(&log, "prev-1");
    assert_eq!(
        texts,
        [
            "prev-1 says hello 1",
            "prev-1 says hello 1",
            "prev-1 says hello 2",
            "prev-1 says hello 2",
            "prev-1 says hello 3"
        ]
    );
    let manifest = json(&out.join("run_manifest.json"));
    assert_eq!(manifest["plugins"][0]["name"], "prev-workload");
    assert_eq!(manifest["plugins"][0]["version"], "0.2.0");
    // No review crosses a 0.2.0 boundary: no turn has one.
    for turn in read_jsonl(&out.join("turns.jsonl")) {
        assert!(turn.get("live").is_none(), "{turn}");
    }
}

/// The version before the current one, `agentload:plugin@0.3.0`, frozen:
/// typed messages only, no nonce, no facts, no pause after a turn. The
/// fixture `tests/plugins/v030-workload` (the 0.2.0 fixture's sessions, on
/// 0.3.0's records) runs whole: its answers and kept messages cross the
/// boundary, its turns wait what they ask (`delay-ms`), and it reports no
/// facts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_loads_a_workload_built_against_0_3_0() {
    let dir = scratch("v030-workload-run");
    let log = dir.path().join("requests.jsonl");
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Echo,
        request_log: Some(log.clone()),
        ..Default::default()
    })
    .await;
    let (out, output) = run_fixture(dir.path(), &sim.url(), "v030_workload", 3).await;
    assert_eq!(sim.requests_served(), 6, "{output}");
    sim.shutdown().await;
    for s in json(&out.join("sessions.json")).as_array().unwrap() {
        assert_eq!(s["completed"], 3, "{s}");
    }
    let (third, texts) = third_request(&log, "v030-2");
    assert_eq!(
        texts,
        [
            "v030-2 says hello 1",
            "v030-2 says hello 1",
            "v030-2 says hello 2",
            "v030-2 says hello 2",
            "v030-2 says hello 3"
        ]
    );
    assert_eq!(third["body"]["seed"], 9);
    let manifest = json(&out.join("run_manifest.json"));
    assert_eq!(manifest["plugins"][0]["name"], "v030-workload");
    assert_eq!(manifest["plugins"][0]["version"], "0.3.0");
    assert_eq!(
        manifest["workload_facts"]["performance"],
        serde_json::json!({}),
        "{manifest:#}"
    );
}
