//! The client against the stand-in service: what it sends, what it writes,
//! and how it ends a run it gives up.

use agentload_swebench::files::{RESULTS_FILE, RUNS_DIR, STATUS_FILE};
use agentload_swebench::{
    Cancel, Error, Outcome, Progress, RunOptions, RunRequest, Service, Template,
};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::time::Duration;
use swebench_standin::{Ending, Redirect, Script, StandIn};

fn request() -> RunRequest {
    let mut generation = Map::new();
    generation.insert("temperature".into(), json!(1.0));
    generation.insert("top_p".into(), json!(0.95));
    generation.insert("max_new_tokens".into(), json!(8192));
    generation.insert(
        "chat_template_kwargs".into(),
        json!({"preserve_thinking": true}),
    );
    RunRequest {
        model_name: "Qwen/Qwen3.6-35B-A3B".into(),
        endpoint_urls: ["http://endpoint-host:30000".into()],
        endpoint_api_key: Some("secret-key".into()),
        generation_params: generation,
        subset: "verified".into(),
        split: "test".into(),
        workers: 10,
        max_eval_workers: 10,
        evaluated_instance_ids: vec![
            "repo__repo-0".into(),
            "repo__repo-1".into(),
            "repo__repo-2".into(),
        ],
        template: Template::QwenTools,
    }
}

/// The reference's payload for [`request`], byte for byte
/// (`msgspec.json.encode(payload)`).
const PAYLOAD: &str = concat!(
    r#"{"model_name":"Qwen/Qwen3.6-35B-A3B","endpoint_urls":["http://endpoint-host:30000"],"#,
    r#""endpoint_api_key":"secret-key","generation_params":{"temperature":1.0,"top_p":0.95,"#,
    r#""max_new_tokens":8192,"chat_template_kwargs":{"preserve_thinking":true}},"#,
    r#""subset":"verified","split":"test","num_instances":3,"workers":10,"max_eval_workers":10,"#,
    r#""evaluated_instance_ids":["repo__repo-0","repo__repo-1","repo__repo-2"],"template":"qwen_tools"}"#
);

fn options(dir: &Path) -> RunOptions<'_> {
    RunOptions {
        report_dir: dir,
        poll_interval: Duration::from_millis(5),
        timeout: Duration::from_secs(30),
        max_artifact_bytes: agentload_swebench::MAX_ARTIFACT_BYTES,
    }
}

/// Runs [`request`] on `service` into `dir`, never interrupted; returns
/// the outcome and the progress reported.
async fn run(service: &Service, dir: &Path) -> (Result<Outcome, Error>, Vec<Progress>) {
    let mut seen = Vec::new();
    let outcome = service
        .run(
            &request(),
            &options(dir),
            |p| seen.push(p.clone()),
            std::future::pending(),
        )
        .await;
    (outcome, seen)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(
        &std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

#[tokio::test]
async fn a_run_that_succeeds_is_scored_and_its_files_are_the_references() {
    let script = Script::default();
    let run_id = script.run_id.clone();
    let standin = StandIn::start(script.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    // A stale result of an earlier run is not left behind.
    std::fs::write(dir.path().join(RESULTS_FILE), b"{\"resolved_instances\":3}").unwrap();
    let service = Service::new(&standin.url(), None).unwrap();
    service.preflight().await.unwrap();
    let (outcome, seen) = run(&service, dir.path()).await;
    let outcome = outcome.unwrap();
    assert_eq!(outcome.run_id, run_id);
    assert_eq!(outcome.status, "succeeded");
    assert_eq!(outcome.evaluated, 3);
    assert_eq!(outcome.scored.score, Some(2.0 / 3.0));
    assert!(outcome.scored.complete, "{:?}", outcome.scored);
    assert!(outcome.warnings.is_empty(), "{:?}", outcome.warnings);

    // What the service received: the health check, the payload byte for
    // byte, the polls, then the artifacts; JSON asked for as the reference does.
    let requests = standin.requests();
    let calls = standin.calls();
    let runs = format!("/v1/runs/{run_id}");
    assert_eq!(
        calls,
        [
            "GET /health".to_owned(),
            "POST /v1/runs".into(),
            format!("GET {runs}"),
            format!("GET {runs}"),
            format!("GET {runs}"),
            format!("GET {runs}/artifacts/preds.json"),
            format!("GET {runs}/artifacts/swe_bench_results.json"),
            format!("GET {runs}/artifacts/swe_bench_agent.log"),
        ]
    );
    assert_eq!(String::from_utf8_lossy(&requests[1].body), PAYLOAD);
    assert_eq!(
        requests[1].content_type.as_deref(),
        Some("application/json")
    );
    assert!(requests[..5]
        .iter()
        .all(|r| r.accept.as_deref() == Some("application/json")));
    assert!(requests[5..]
        .iter()
        .all(|r| r.accept.as_deref() == Some("application/octet-stream")));
    assert!(requests.iter().all(|r| r.authorization.is_none()));

    // Progress through both phases, in order.
    let phases: Vec<&str> = seen.iter().filter_map(|p| p.phase.as_deref()).collect();
    assert_eq!(phases, ["queued", "agent", "eval", "succeeded"], "{seen:?}");
    assert_eq!(
        seen.last().unwrap().to_string(),
        "succeeded: agent 3/3, eval 3/3"
    );

    // swe_bench_results.json: the result, compact, in the service's key order.
    let result = match &script.ending {
        Ending::Succeed { result } => result.clone(),
        other => panic!("{other:?}"),
    };
    let written = std::fs::read(dir.path().join(RESULTS_FILE)).unwrap();
    assert_eq!(written, serde_json::to_vec(&result).unwrap());
    // The run's folder: the last status (compact, as the service ordered
    // it: the stand-in sends Python's `", "` separators) and the artifacts.
    let run_dir = dir.path().join(RUNS_DIR).join(&run_id);
    let status = std::fs::read_to_string(run_dir.join(STATUS_FILE)).unwrap();
    assert!(
        status.starts_with(&format!(
            r#"{{"run_id":"{run_id}","status":"succeeded","created_at":1767225600.25,"updated_at":1767225603.25,"finished_at":1767225603.25,"phase":"succeeded","agent_total":3,"#
        )),
        "{status}"
    );
    assert!(
        !status.contains(", ") && !status.contains("\": "),
        "{status}"
    );
    for (name, bytes) in &script.artifacts {
        assert_eq!(&std::fs::read(run_dir.join(name)).unwrap(), bytes, "{name}");
    }
    let mut names: Vec<String> = std::fs::read_dir(&run_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "preds.json",
            "swe_bench_agent.log",
            "swe_bench_results.json",
            STATUS_FILE
        ]
    );
}

#[tokio::test]
async fn without_an_inline_result_the_downloaded_results_file_is_scored() {
    let standin = StandIn::start(Script {
        result_inline: false,
        ..Script::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let service = Service::new(&standin.url(), None).unwrap();
    let outcome = run(&service, dir.path()).await.0.unwrap();
    assert_eq!(outcome.scored.score, Some(2.0 / 3.0));
    let canonical = read_json(&dir.path().join(RESULTS_FILE));
    assert_eq!(canonical["resolved_instances"], 2);
}

#[tokio::test]
async fn a_run_that_fails_has_no_score_and_is_not_cancelled() {
    let standin = StandIn::start(Script {
        ending: Ending::Fail {
            error: "docker: image pull failed".into(),
        },
        ..Script::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(RESULTS_FILE), b"{}").unwrap();
    let service = Service::new(&standin.url(), None).unwrap();
    let outcome = run(&service, dir.path()).await.0.unwrap();
    assert_eq!(outcome.status, "failed");
    assert_eq!(
        (outcome.scored.score, outcome.scored.complete),
        (None, false)
    );
    assert_eq!(
        outcome.scored.problem.as_deref(),
        Some("the service run ended failed: docker: image pull failed")
    );
    assert!(
        !dir.path().join(RESULTS_FILE).exists(),
        "the stale result stays removed"
    );
    let status = read_json(
        &dir.path()
            .join(RUNS_DIR)
            .join(&outcome.run_id)
            .join(STATUS_FILE),
    );
    assert_eq!(status["error"], "docker: image pull failed");
    assert!(
        !standin.calls().iter().any(|c| c.ends_with("/cancel")),
        "{:?}",
        standin.calls()
    );
}

#[tokio::test]
async fn an_interrupted_run_is_cancelled_on_the_service() {
    let script = Script {
        ending: Ending::Never,
        ..Script::default()
    };
    let run_id = script.run_id.clone();
    let standin = StandIn::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    let service = Service::new(&standin.url(), None).unwrap();
    // Interrupted once the run has been polled twice (POST + 2 GETs).
    let interrupt = standin.wait_for_requests(3);
    let err = service
        .run(&request(), &options(dir.path()), |_| {}, interrupt)
        .await
        .unwrap_err();
    assert!(err.interrupted(), "{err}");
    match &err {
        Error::Abandoned {
            run_id: id,
            cause,
            cancel: Cancel::Sent { status },
        } => {
            assert_eq!(id, &run_id);
            assert!(matches!(**cause, Error::Interrupted));
            assert_eq!(status, "cancelled");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("cancel sent"), "{err}");
    let calls = standin.calls();
    assert_eq!(
        calls.last().unwrap(),
        &format!("POST /v1/runs/{run_id}/cancel")
    );
    assert!(!dir.path().join(RESULTS_FILE).exists());
    assert!(!dir.path().join(RUNS_DIR).exists());
}

#[tokio::test]
async fn a_run_past_its_timeout_is_cancelled() {
    let standin = StandIn::start(Script {
        ending: Ending::Never,
        ..Script::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let service = Service::new(&standin.url(), None).unwrap();
    let options = RunOptions {
        timeout: Duration::from_millis(30),
        ..options(dir.path())
    };
    let err = service
        .run(&request(), &options, |_| {}, std::future::pending())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Abandoned { cause, cancel: Cancel::Sent { .. }, .. }
            if matches!(**cause, Error::Timeout { .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains("service_timeout_s"), "{err}");
    assert!(standin.calls().last().unwrap().ends_with("/cancel"));
}

/// The bad-counter cases: no score (or an incomplete one), the result still
/// written as the service returned it.
#[tokio::test]
async fn bad_counters_give_no_score_and_a_partial_submission_an_incomplete_one() {
    for (result, score, why) in [
        (
            json!({"resolved_instances": -1, "submitted_instances": 3}),
            None,
            "resolved_instances must be a nonnegative integer (got -1)",
        ),
        (
            json!({"resolved_instances": 3, "submitted_instances": 2}),
            None,
            "inconsistent service counters: resolved=3, submitted=2, expected=3",
        ),
        (
            json!({"resolved_instances": 1, "submitted_instances": 4}),
            None,
            "submitted=4, expected=3",
        ),
        (
            json!({"resolved_instances": 0, "submitted_instances": 0}),
            None,
            "submitted_instances=0",
        ),
        (
            json!({"resolved_instances": 1, "submitted_instances": 2}),
            Some(1.0 / 3.0),
            "submitted 2 of 3 evaluated instances; score marked incomplete",
        ),
    ] {
        let standin = StandIn::start(Script::succeeding_with(result.clone())).await;
        let dir = tempfile::tempdir().unwrap();
        let service = Service::new(&standin.url(), None).unwrap();
        let outcome = run(&service, dir.path()).await.0.unwrap();
        let scored = &outcome.scored;
        assert_eq!((scored.score, scored.complete), (score, false), "{result}");
        let problem = scored.problem.as_deref().unwrap();
        assert!(problem.contains(why), "{result}: {problem}");
        assert_eq!(read_json(&dir.path().join(RESULTS_FILE)), result);
    }
}

#[tokio::test]
async fn a_redirected_status_is_refused_and_the_run_cancelled() {
    let script = Script {
        redirect: Some(Redirect::Status),
        ..Script::default()
    };
    let run_id = script.run_id.clone();
    let standin = StandIn::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    let service = Service::new(&standin.url(), None).unwrap();
    let err = run(&service, dir.path()).await.0.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(&err, Error::Abandoned { cause, cancel: Cancel::Sent { .. }, .. }
            if matches!(**cause, Error::Redirect { status: 302, .. })),
        "{err:?}"
    );
    assert!(
        text.contains(&format!(
            "to /v1/runs/{run_id}/moved: redirects are refused"
        )),
        "{text}"
    );
    assert!(
        !standin.calls().iter().any(|c| c.contains("/moved")),
        "{:?}",
        standin.calls()
    );
}

#[tokio::test]
async fn a_redirected_artifact_is_not_followed_nor_written() {
    let standin = StandIn::start(Script {
        redirect: Some(Redirect::Artifact("preds.json".into())),
        ..Script::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let service = Service::new(&standin.url(), None).unwrap();
    let outcome = run(&service, dir.path()).await.0.unwrap();
    // The score does not depend on the predictions file.
    assert_eq!(outcome.scored.score, Some(2.0 / 3.0));
    assert_eq!(outcome.warnings.len(), 1, "{:?}", outcome.warnings);
    assert!(
        outcome.warnings[0].contains("preds.json")
            && outcome.warnings[0].contains("to /elsewhere/preds.json: redirects are refused"),
        "{:?}",
        outcome.warnings
    );
    let run_dir = dir.path().join(RUNS_DIR).join(&outcome.run_id);
    assert!(!run_dir.join("preds.json").exists());
    assert!(!run_dir.join("preds.json.tmp").exists());
    assert!(run_dir.join("swe_bench_agent.log").exists());
    assert!(!standin.calls().iter().any(|c| c.contains("/elsewhere/")));
}

#[tokio::test]
async fn an_odd_run_id_is_refused_before_anything_is_written() {
    let standin = StandIn::start(Script {
        run_id: "../outside".into(),
        ..Script::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    std::fs::create_dir(&report).unwrap();
    let service = Service::new(&standin.url(), None).unwrap();
    let err = run(&service, &report).await.0.unwrap_err();
    assert!(
        matches!(&err, Error::RunId { got } if got == "\"../outside\""),
        "{err:?}"
    );
    // Nothing to cancel (the id is not used), nothing written anywhere.
    assert_eq!(standin.calls(), ["POST /v1/runs"]);
    assert!(!dir.path().join("outside").exists());
    assert!(!report.join(RUNS_DIR).exists());
}

#[tokio::test]
async fn the_preflight_needs_v1_and_every_capability() {
    let standin = StandIn::start(Script {
        capabilities: vec!["swebench.run".into(), "swebench.cancel".into()],
        ..Script::default()
    })
    .await;
    let err = Service::new(&standin.url(), None)
        .unwrap()
        .preflight()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "SWE-bench service is missing required capabilities: artifacts.download"
    );
    let standin = StandIn::start(Script {
        api_version: "v2".into(),
        ..Script::default()
    })
    .await;
    let err = Service::new(&standin.url(), None)
        .unwrap()
        .preflight()
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "SWE-bench service API version mismatch: expected \"v1\", got \"v2\""
    );
    // Nothing listening: the error names the URL.
    let url = standin.url();
    drop(standin);
    let err = Service::new(&url, None)
        .unwrap()
        .preflight()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Unreachable { url: u, .. } if u == &format!("{url}/health")),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_token_goes_on_every_call_and_without_it_the_run_is_refused() {
    let standin = StandIn::start(Script {
        token: Some("tok".into()),
        ..Script::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    // /health is public; the run is not.
    let anonymous = Service::new(&standin.url(), None).unwrap();
    anonymous.preflight().await.unwrap();
    let err = run(&anonymous, dir.path()).await.0.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "SWE-bench service request failed: {}/v1/runs returned HTTP 401: unauthorized",
            standin.url()
        )
    );
    let before = standin.requests().len();
    let service = Service::new(&standin.url(), Some("tok".into())).unwrap();
    service.preflight().await.unwrap();
    let outcome = run(&service, dir.path()).await.0.unwrap();
    assert_eq!(outcome.scored.score, Some(2.0 / 3.0));
    let requests = standin.requests();
    assert!(requests.len() > before + 5);
    for r in &requests[before..] {
        assert_eq!(
            r.authorization.as_deref(),
            Some("Bearer tok"),
            "{} {}",
            r.method,
            r.path
        );
    }
}
