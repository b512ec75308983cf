//! What a test scripts: how the service answers its health check, whom it
//! lets in, and how its one run goes.

use serde_json::{json, Value};

/// How the scripted run ends once its polls are spent.
#[derive(Debug, Clone)]
pub enum Ending {
    /// `succeeded`, with this `result` (the swebench harness's report).
    Succeed { result: Value },
    /// `failed`, with this `error`.
    Fail { error: String },
    /// Never: the run stays `running` until it is cancelled.
    Never,
}

/// An answer that sends the client elsewhere (HTTP 302).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    /// `GET /v1/runs/{id}` redirects.
    Status,
    /// `GET /v1/runs/{id}/artifacts/{name}` redirects for this name.
    Artifact(String),
}

/// One test's service.
#[derive(Debug, Clone)]
pub struct Script {
    /// `/health`'s `api_version`.
    pub api_version: String,
    /// `/health`'s `capabilities`.
    pub capabilities: Vec<String>,
    /// The Bearer token every route but `/health` requires (the service's
    /// `--auth-token`); none: `--allow-unauthenticated`.
    pub token: Option<String>,
    /// The `run_id` the run gets (the service's is a uuid4 hex).
    pub run_id: String,
    /// Status polls answered `running` before the run ends (the first half
    /// in the agent phase, the rest in the eval phase).
    pub polls: u32,
    pub ending: Ending,
    /// Whether a succeeded status carries `result` (else `null`: the client
    /// reads the downloaded `swe_bench_results.json`).
    pub result_inline: bool,
    /// The run's files (name, bytes), listed in a succeeded status.
    pub artifacts: Vec<(String, Vec<u8>)>,
    pub redirect: Option<Redirect>,
}

/// The reference service's capabilities (`swebench_service/__init__.py`).
pub const CAPABILITIES: [&str; 4] = [
    "swebench.run",
    "swebench.cancel",
    "artifacts.download",
    "swebench.progress",
];

impl Default for Script {
    /// A run that succeeds after two polls, resolving 2 of 3 instances, with
    /// the results and the predictions among its artifacts.
    fn default() -> Self {
        let result = json!({
            "total_instances": 3,
            "submitted_instances": 3,
            "completed_instances": 3,
            "resolved_instances": 2,
            "unresolved_instances": 1,
            "empty_patch_instances": 0,
            "error_instances": 0,
            "resolved_ids": ["repo__repo-0", "repo__repo-2"],
            "unresolved_ids": ["repo__repo-1"],
            "schema_version": 2
        });
        let results_file = serde_json::to_vec_pretty(&result).expect("JSON");
        Self {
            api_version: "v1".into(),
            capabilities: CAPABILITIES.iter().map(|c| c.to_string()).collect(),
            token: None,
            run_id: "0f3c5e8a9b7d4c2e8f1a6b5c4d3e2f10".into(),
            polls: 2,
            ending: Ending::Succeed { result },
            result_inline: true,
            artifacts: vec![
                (
                    "preds.json".into(),
                    br#"{"repo__repo-0": {"model_patch": "diff"}}"#.to_vec(),
                ),
                ("swe_bench_results.json".into(), results_file),
                ("swe_bench_agent.log".into(), b"agent log\n".to_vec()),
            ],
            redirect: None,
        }
    }
}

impl Script {
    /// This script with `result` as the run's result.
    pub fn succeeding_with(result: Value) -> Self {
        Self {
            ending: Ending::Succeed { result },
            ..Self::default()
        }
    }
}
