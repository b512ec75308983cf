//! A stand-in for the reference SWE-bench service (mlcommons/endpoints
//! `evaluation/swebench_service`, which agentload does not ship), for
//! tests: its v1 routes, its status shape and its auth rule (`/health`
//! public, every other route behind the Bearer token), with one run
//! scripted per test ([`Script`]) and every request recorded
//! ([`StandIn::requests`]) so tests can assert what the client sent.
#![forbid(unsafe_code)]

mod script;
mod status;

pub use script::{Ending, Redirect, Script, CAPABILITIES};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, LOCATION};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use status::{python_json, Run, State};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// One request as the stand-in received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query, as sent.
    pub path: String,
    pub authorization: Option<String>,
    pub accept: Option<String>,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

struct Shared {
    script: Script,
    run: Mutex<Option<Run>>,
    requests: Mutex<Vec<Recorded>>,
    arrived: Notify,
}

/// A running stand-in service (stopped when dropped).
pub struct StandIn {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl StandIn {
    /// Starts a service on a free port of 127.0.0.1.
    pub async fn start(script: Script) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("bound address");
        let shared = Arc::new(Shared {
            script,
            run: Mutex::new(None),
            requests: Mutex::new(Vec::new()),
            arrived: Notify::new(),
        });
        let server = tokio::spawn(serve(listener, shared.clone()));
        Self {
            addr,
            shared,
            server,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("requests").clone()
    }

    /// `METHOD path` of every request so far.
    pub fn calls(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect()
    }

    /// Waits until `n` requests have arrived.
    pub async fn wait_for_requests(&self, n: usize) {
        loop {
            let arrived = self.shared.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            if self.shared.requests.lock().expect("requests").len() >= n {
                return;
            }
            arrived.await;
        }
    }
}

async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, std::convert::Infallible>(answer(&shared, req).await) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

type Answer = Response<Full<Bytes>>;

fn reply(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Answer {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn json_reply(status: StatusCode, body: &Value) -> Answer {
    reply(status, "application/json; charset=utf-8", python_json(body))
}

fn text_reply(status: StatusCode, text: &str) -> Answer {
    reply(
        status,
        "text/plain; charset=utf-8",
        text.as_bytes().to_vec(),
    )
}

fn redirect(to: String) -> Answer {
    let mut r = text_reply(StatusCode::FOUND, "found");
    r.headers_mut().insert(
        LOCATION,
        HeaderValue::from_str(&to).expect("a plain location"),
    );
    r
}

fn header(req: &Request<Incoming>, name: hyper::header::HeaderName) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Records the request, then routes it as the service does.
async fn answer(shared: &Shared, req: Request<Incoming>) -> Answer {
    let method = req.method().clone();
    let path = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_owned(), |p| p.as_str().to_owned());
    let authorization = header(&req, AUTHORIZATION);
    let recorded = Recorded {
        method: method.to_string(),
        path: path.clone(),
        authorization: authorization.clone(),
        accept: header(&req, hyper::header::ACCEPT),
        content_type: header(&req, CONTENT_TYPE),
        body: match req.into_body().collect().await {
            Ok(body) => body.to_bytes().to_vec(),
            Err(_) => return text_reply(StatusCode::BAD_REQUEST, "unreadable body"),
        },
    };
    let body = recorded.body.clone();
    shared.requests.lock().expect("requests").push(recorded);
    shared.arrived.notify_waiters();
    let script = &shared.script;
    if path != "/health"
        && script.token.as_ref().is_some_and(|token| {
            authorization.as_deref() != Some(format!("Bearer {token}").as_str())
        })
    {
        return text_reply(StatusCode::UNAUTHORIZED, "unauthorized");
    }
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let run_path = |id: &str| id == script.run_id;
    match (&method, parts.as_slice()) {
        (&Method::GET, ["health"]) => json_reply(
            StatusCode::OK,
            &json!({"api_version": script.api_version, "capabilities": script.capabilities, "status": "ok"}),
        ),
        (&Method::POST, ["v1", "runs"]) => submit(shared, &body),
        (&Method::GET, ["v1", "runs", id]) if run_path(id) => {
            if script.redirect == Some(Redirect::Status) {
                return redirect(format!("/v1/runs/{id}/moved"));
            }
            with_run(shared, |run| {
                run.poll(script);
                run.status(script)
            })
        }
        (&Method::POST, ["v1", "runs", id, "cancel"]) if run_path(id) => with_run(shared, |run| {
            if !run.state.terminal() {
                run.state = State::Cancelled;
            }
            run.status(script)
        }),
        (&Method::GET, ["v1", "runs", id, "artifacts", name]) if run_path(id) => {
            if script.redirect == Some(Redirect::Artifact((*name).to_owned())) {
                return redirect(format!("/elsewhere/{name}"));
            }
            match script.artifacts.iter().find(|(n, _)| n == name) {
                Some((_, bytes)) => {
                    reply(StatusCode::OK, "application/octet-stream", bytes.clone())
                }
                None => text_reply(StatusCode::NOT_FOUND, "artifact not found"),
            }
        }
        // Where a redirect points: a client that followed it would get this.
        (&Method::GET, ["elsewhere", _]) => reply(
            StatusCode::OK,
            "application/octet-stream",
            b"followed".to_vec(),
        ),
        _ => text_reply(StatusCode::NOT_FOUND, "unknown run_id"),
    }
}

/// The run's status after `step`, or 404 before any run was submitted.
fn with_run(shared: &Shared, step: impl FnOnce(&mut Run) -> Value) -> Answer {
    match shared.run.lock().expect("run").as_mut() {
        Some(run) => json_reply(StatusCode::OK, &step(run)),
        None => text_reply(StatusCode::NOT_FOUND, "unknown run_id"),
    }
}

/// The request keys `RunRequest` allows (it forbids any other).
const REQUEST_KEYS: [&str; 11] = [
    "model_name",
    "endpoint_urls",
    "endpoint_api_key",
    "generation_params",
    "subset",
    "split",
    "num_instances",
    "workers",
    "max_eval_workers",
    "evaluated_instance_ids",
    "template",
];

/// `POST /v1/runs`: a request `RunRequest` validates starts the run (202).
fn submit(shared: &Shared, body: &[u8]) -> Answer {
    let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(body) else {
        return text_reply(StatusCode::BAD_REQUEST, "invalid run request");
    };
    let ids = request["evaluated_instance_ids"]
        .as_array()
        .map_or(0, Vec::len);
    let valid = request.keys().all(|k| REQUEST_KEYS.contains(&k.as_str()))
        && request["endpoint_urls"].as_array().map(Vec::len) == Some(1)
        && ids > 0
        && request["num_instances"].as_u64() == Some(ids as u64)
        && matches!(
            request["template"].as_str(),
            None | Some("default" | "qwen_tools")
        );
    if !valid {
        return text_reply(StatusCode::BAD_REQUEST, "invalid run request");
    }
    let run = Run {
        state: State::Queued,
        total: ids as u64,
        polls: 0,
    };
    let status = run.status(&shared.script);
    *shared.run.lock().expect("run") = Some(run);
    json_reply(StatusCode::ACCEPTED, &status)
}
