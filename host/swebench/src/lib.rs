//! The SWE-bench accuracy client of the MLPerf datacenter agentic
//! benchmark: the reference SWE-bench service's v1 protocol
//! (mlcommons/endpoints `evaluation/swe_bench_scorer.py`, spec §5.1).
//!
//! - [`Service::preflight`]: `GET /health` names API `v1` and the
//!   capabilities `swebench.run`, `swebench.cancel` and `artifacts.download`.
//! - [`Service::run`]: `POST /v1/runs` ([`RunRequest`]), `GET /v1/runs/{id}`
//!   until `succeeded`, `failed` or `cancelled`; on an error, a timeout or
//!   an interrupt, `POST /v1/runs/{id}/cancel`. No redirect is followed and
//!   a run id outside `^[A-Za-z0-9_-]+$` is refused.
//! - The files the reference writes ([`files`]), the whitelisted artifacts
//!   ([`SAFE_ARTIFACT_NAMES`], each up to [`MAX_ARTIFACT_BYTES`] and within
//!   `service_timeout_s`), and the score with its counter checks
//!   ([`score`]). A JSON answer is read up to 32 MiB.
//!
//! The service itself (mini-swe-agent and the swebench harness in Docker)
//! runs unchanged, outside agentload. This crate knows nothing of configs,
//! plugins or the engine: the command line maps its config onto a
//! [`RunRequest`].
#![forbid(unsafe_code)]

mod artifacts;
mod error;
pub mod files;
mod http;
pub mod instances;
mod progress;
mod request;
pub mod run_id;
pub mod score;
mod service;
mod service_url;

pub use artifacts::SAFE_ARTIFACT_NAMES;
pub use error::{Cancel, Error};
pub use progress::Progress;
pub use request::{RunRequest, Template, GENERATION_KEYS};
pub use score::{Counters, Scored};
pub use service::{
    Outcome, RunOptions, Service, API_VERSION, MAX_ARTIFACT_BYTES, REQUIRED_CAPABILITIES,
};
pub use service_url::ServiceUrl;
