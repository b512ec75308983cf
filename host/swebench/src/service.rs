//! One SWE-bench service and one run on it: preflight, submit, poll until
//! the run ends, cancel when it is given up, then the files and the score.

use crate::artifacts;
use crate::files::{self, RESULTS_FILE, STATUS_FILE};
use crate::http::{Http, CALL_TIMEOUT, HEALTH_TIMEOUT};
use crate::score::{self, Scored};
use crate::{run_id, Cancel, Error, Progress, RunRequest, ServiceUrl};
use agentload_client::Transport;
use reqwest::Method;
use serde_json::{Map, Value};
use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

/// The API version the client speaks.
pub const API_VERSION: &str = "v1";
/// The capabilities `/health` must list.
pub const REQUIRED_CAPABILITIES: [&str; 3] =
    ["swebench.run", "swebench.cancel", "artifacts.download"];

/// How a run is followed.
#[derive(Debug, Clone)]
pub struct RunOptions<'a> {
    /// Where `swe_bench_results.json` and `swe_bench_runs/` go.
    pub report_dir: &'a Path,
    /// Between status polls (`poll_interval_s`).
    pub poll_interval: Duration,
    /// The longest the run may take, its artifacts' downloads included
    /// (`service_timeout_s`).
    pub timeout: Duration,
    /// An artifact's bytes, at most (past it, that download is a warning
    /// and nothing of it is kept): [`MAX_ARTIFACT_BYTES`] unless a test
    /// says otherwise.
    pub max_artifact_bytes: u64,
}

/// An artifact's bytes, at most: far above a 500-instance run's
/// predictions and logs.
pub const MAX_ARTIFACT_BYTES: u64 = 1 << 30;

/// A run that ended (succeeded, failed or cancelled on the service).
#[derive(Debug)]
pub struct Outcome {
    pub run_id: String,
    /// The run's final status.
    pub status: String,
    /// Instances the request named (the score's denominator).
    pub evaluated: usize,
    pub scored: Scored,
    /// Artifacts written to `swe_bench_runs/<run_id>/`, with their sizes.
    pub artifacts: Vec<(String, u64)>,
    /// Artifacts not downloaded, and why.
    pub warnings: Vec<String>,
}

/// A SWE-bench service.
pub struct Service {
    url: ServiceUrl,
    http: Http,
}

fn text<'a>(status: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    status.get(key).and_then(Value::as_str)
}

fn terminal(status: &Map<String, Value>) -> bool {
    matches!(
        text(status, "status"),
        Some("succeeded" | "failed" | "cancelled")
    )
}

impl Service {
    /// The service at `url` (checked), called with `token` as Bearer token
    /// when one is given.
    ///
    /// # Errors
    /// [`Error::ServiceUrl`] when `url` is not an http(s) service root.
    pub fn new(url: &str, token: Option<String>) -> Result<Self, Error> {
        Self::over(url, token, &Transport::default())
    }

    /// As [`Service::new`], reached over `transport` (the run's TLS settings, for an
    /// `https://` service, and its proxy choice).
    ///
    /// # Errors
    /// As [`Service::new`].
    pub fn over(url: &str, token: Option<String>, transport: &Transport) -> Result<Self, Error> {
        Ok(Self {
            url: ServiceUrl::parse(url)?,
            http: Http::new(token, transport)?,
        })
    }

    /// The service's root URL.
    pub fn url(&self) -> &ServiceUrl {
        &self.url
    }

    /// `GET /health`: the service speaks v1 and can run, cancel and serve
    /// artifacts.
    ///
    /// # Errors
    /// The transport's errors, [`Error::ApiVersion`] and
    /// [`Error::Capabilities`].
    pub async fn preflight(&self) -> Result<(), Error> {
        let health = self
            .http
            .json(Method::GET, self.url.join("health"), None, HEALTH_TIMEOUT)
            .await?;
        if text(&health, "api_version") != Some(API_VERSION) {
            return Err(Error::ApiVersion {
                got: health
                    .get("api_version")
                    .map_or_else(|| "nothing".to_owned(), Value::to_string),
            });
        }
        let listed: Vec<&str> = health
            .get("capabilities")
            .and_then(Value::as_array)
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let missing: Vec<&str> = REQUIRED_CAPABILITIES
            .into_iter()
            .filter(|c| !listed.contains(c))
            .collect();
        if !missing.is_empty() {
            return Err(Error::Capabilities {
                missing: missing.join(", "),
            });
        }
        Ok(())
    }

    /// Submits `request`, follows the run to its end (calling `progress` on
    /// every status), writes its files and scores it. When `interrupt`
    /// resolves first, or polling fails or times out, the run is cancelled
    /// on the service and [`Error::Abandoned`] says how that went. The
    /// artifacts' downloads stop at the same deadline (each one still going
    /// is a warning), and at `interrupt` ([`Error::Interrupted`]; the run has
    /// ended on the service, there is nothing to cancel).
    ///
    /// # Errors
    /// The submission's errors (the run id unknown, nothing to cancel),
    /// [`Error::Abandoned`], and [`Error::Write`] for local files. A run
    /// that ends failed, or whose result cannot be trusted, is an
    /// [`Outcome`] without a score.
    pub async fn run(
        &self,
        request: &RunRequest,
        options: &RunOptions<'_>,
        mut progress: impl FnMut(&Progress),
        interrupt: impl Future<Output = ()>,
    ) -> Result<Outcome, Error> {
        files::remove_stale(
            &agentload_fs::OutDir::new(options.report_dir),
            Path::new(RESULTS_FILE),
        )?;
        tokio::pin!(interrupt);
        let submit = self.http.json(
            Method::POST,
            self.url.join("v1/runs"),
            Some(request.body()),
            CALL_TIMEOUT,
        );
        let submitted = tokio::select! {
            submitted = submit => submitted?,
            () = &mut interrupt => return Err(Error::Interrupted),
        };
        let run_id = run_id::checked(submitted.get("run_id"))?;
        progress(&Progress::of(&submitted));
        let deadline = Instant::now() + options.timeout;
        let follow = async {
            let mut status = submitted;
            let url = self.url.join(&format!("v1/runs/{run_id}"));
            while !terminal(&status) {
                if Instant::now() >= deadline {
                    return Err(Error::Timeout {
                        run_id: run_id.clone(),
                        after_s: options.timeout.as_secs_f64(),
                    });
                }
                tokio::time::sleep(options.poll_interval).await;
                let next = self
                    .http
                    .json(Method::GET, url.clone(), None, CALL_TIMEOUT)
                    .await?;
                let id = run_id::checked(next.get("run_id"))?;
                if id != run_id {
                    return Err(Error::RunIdChanged {
                        expected: run_id.clone(),
                        got: id,
                    });
                }
                progress(&Progress::of(&next));
                status = next;
            }
            Ok(status)
        };
        let followed = tokio::select! {
            followed = follow => followed,
            () = &mut interrupt => Err(Error::Interrupted),
        };
        match followed {
            Ok(status) => tokio::select! {
                outcome = self.finish(request, options, run_id, status, deadline) => outcome,
                () = &mut interrupt => Err(Error::Interrupted),
            },
            Err(cause) => {
                let cancel = self.cancel(&run_id).await;
                Err(Error::Abandoned {
                    run_id,
                    cause: Box::new(cause),
                    cancel,
                })
            }
        }
    }

    /// `POST /v1/runs/{id}/cancel`.
    async fn cancel(&self, run_id: &str) -> Cancel {
        let url = self.url.join(&format!("v1/runs/{run_id}/cancel"));
        match self
            .http
            .json(Method::POST, url, None, HEALTH_TIMEOUT)
            .await
        {
            Ok(status) => Cancel::Sent {
                status: text(&status, "status").unwrap_or("(unknown)").to_owned(),
            },
            Err(e) => Cancel::Failed(e.to_string()),
        }
    }

    /// The ended run's files and score.
    async fn finish(
        &self,
        request: &RunRequest,
        options: &RunOptions<'_>,
        run_id: String,
        status: Map<String, Value>,
        deadline: Instant,
    ) -> Result<Outcome, Error> {
        let dir = files::run_dir(options.report_dir, &run_id);
        let out = agentload_fs::OutDir::new(options.report_dir);
        let rel = Path::new(files::RUNS_DIR).join(&run_id);
        files::create_dir(&out, &rel)?;
        files::write(&out, &rel.join(STATUS_FILE), &files::compact(&status))?;
        let bounds = artifacts::Bounds {
            cap: options.max_artifact_bytes,
            deadline: deadline.into(),
            after_s: options.timeout.as_secs_f64(),
        };
        let downloads =
            artifacts::download(&self.http, &self.url, &status, &run_id, &dir, &bounds).await;
        let evaluated = request.evaluated_instance_ids.len();
        let state = text(&status, "status").unwrap_or_default().to_owned();
        let scored = if state == "succeeded" {
            match result(&status, &dir) {
                Ok(result) => {
                    files::write(&out, Path::new(RESULTS_FILE), &files::compact(&result))?;
                    score::score(&result, evaluated)
                }
                Err(why) => Scored::none(why),
            }
        } else {
            Scored::none(match text(&status, "error") {
                Some(error) => format!("the service run ended {state}: {error}"),
                None => format!("the service run ended {state}"),
            })
        };
        Ok(Outcome {
            run_id,
            status: state,
            evaluated,
            scored,
            artifacts: downloads.written,
            warnings: downloads.warnings,
        })
    }
}

/// The run's result: the status's `result`, else (when it has none) the
/// downloaded `swe_bench_results.json` of the run.
fn result(status: &Map<String, Value>, run_dir: &Path) -> Result<Map<String, Value>, String> {
    let no_result = || "the service run returned no result".to_owned();
    match status.get("result") {
        Some(Value::Object(result)) => Ok(result.clone()),
        None | Some(Value::Null) => {
            let path = run_dir.join(RESULTS_FILE);
            let Ok(bytes) = agentload_fs::read::read(&path) else {
                return Err(no_result());
            };
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(result)) => Ok(result),
                Ok(_) => Err(no_result()),
                Err(e) => Err(format!("{} is not JSON: {e}", path.display())),
            }
        }
        Some(_) => Err(no_result()),
    }
}
