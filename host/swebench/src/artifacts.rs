//! The run's artifacts: only the whitelisted names, only from the run's
//! own artifact path on the service, each streamed into
//! `swe_bench_runs/<run_id>/` up to its cap and before the run's deadline.
//! A download that fails (a redirect, a file past its cap, the deadline
//! among them) is a warning, as in the reference: that file is not
//! written.

use crate::http::Http;
use crate::{Error, ServiceUrl};
use serde_json::{Map, Value};
use std::path::Path;
use tokio::time::Instant;

/// The names downloaded (the service's `SAFE_ARTIFACT_NAMES`).
pub const SAFE_ARTIFACT_NAMES: [&str; 5] = [
    "preds.json",
    "swe_bench_agent.log",
    "swe_bench_eval.log",
    "swe_bench_results.json",
    "status.json",
];

/// What the downloads did.
#[derive(Debug, Default)]
pub(crate) struct Downloads {
    /// Names written, with their sizes.
    pub(crate) written: Vec<(String, u64)>,
    pub(crate) warnings: Vec<String>,
}

/// The `(name, url)` pairs a status lists: `artifacts` as a list of
/// `{name, url}` objects or as an object of name to url.
fn listed(status: &Map<String, Value>) -> Vec<(String, String)> {
    let pair = |name: &Value, url: &Value| match (name, url) {
        (Value::String(n), Value::String(u)) => Some((n.clone(), u.clone())),
        _ => None,
    };
    match status.get("artifacts") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|a| pair(a.get("name")?, a.get("url")?))
            .collect(),
        Some(Value::Object(by_name)) => by_name
            .iter()
            .filter_map(|(n, u)| pair(&Value::String(n.clone()), u))
            .collect(),
        _ => Vec::new(),
    }
}

/// Where the downloads stop: each artifact's bytes, and the run's deadline
/// (`after_s` after it was submitted).
pub(crate) struct Bounds {
    pub(crate) cap: u64,
    pub(crate) deadline: Instant,
    pub(crate) after_s: f64,
}

/// Downloads the whitelisted artifacts `status` lists into `dir`, within
/// `bounds`.
pub(crate) async fn download(
    http: &Http,
    service: &ServiceUrl,
    status: &Map<String, Value>,
    run_id: &str,
    dir: &Path,
    bounds: &Bounds,
) -> Downloads {
    let mut done = Downloads::default();
    for (name, href) in listed(status) {
        if !SAFE_ARTIFACT_NAMES.contains(&name.as_str()) || href.is_empty() {
            continue;
        }
        // The run's own path, exactly: no other host, run, query or fragment.
        let expected = format!("/v1/runs/{run_id}/artifacts/{name}");
        if href != expected {
            done.warnings.push(format!(
                "ignoring unsafe SWE-bench artifact URL for {name}: {} (expected {expected})",
                crate::error::shortened(&href, 200)
            ));
            continue;
        }
        let target = dir.join(&name);
        let url = service.join(href.trim_start_matches('/'));
        let fetched =
            tokio::time::timeout_at(bounds.deadline, http.download(url, &target, bounds.cap))
                .await
                .unwrap_or(Err(Error::DownloadDeadline {
                    after_s: bounds.after_s,
                }));
        match fetched {
            Ok(bytes) => done.written.push((name, bytes)),
            Err(e) => done
                .warnings
                .push(format!("could not download SWE-bench artifact {name}: {e}")),
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn artifacts_are_read_as_a_list_or_an_object() {
        let list = json!({"artifacts": [
            {"name": "preds.json", "url": "/v1/runs/r/artifacts/preds.json"},
            {"name": 5, "url": "/x"},
            "junk"
        ]});
        assert_eq!(
            listed(list.as_object().unwrap()),
            [(
                "preds.json".to_owned(),
                "/v1/runs/r/artifacts/preds.json".to_owned()
            )]
        );
        let object = json!({"artifacts": {"status.json": "/v1/runs/r/artifacts/status.json"}});
        assert_eq!(listed(object.as_object().unwrap()).len(), 1);
        assert!(listed(json!({"artifacts": null}).as_object().unwrap()).is_empty());
    }
}
