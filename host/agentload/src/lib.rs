//! agentload: a benchmark harness for agentic LLM inference.
//!
//! The host owns time and I/O; workloads and scorers are sandboxed
//! WebAssembly components behind the WIT contract in `wit/`.
//!
//! - [`client`]: the HTTP/SSE client; **every timestamp is taken there**.
//! - [`engine`]: the one turn engine: sessions, schedules, records, resume.
//! - [`plugin`]: the wasmtime plugin host and its sandbox.
//! - [`metrics`]: latency and length statistics as the reference reports them.
//! - [`results`]: result files.
//! - [`run`]: one configured run, end to end; [`scoring`]: scoring recorded turns
//!   (shared with `agentload rescore`).
//! - [`seal`], [`rules`], [`data`]: what a submission run accepts (the locked
//!   plugins and data files, the benchmark's rules, confined data grants);
//!   the threat model is `SECURITY.md`.

pub mod authoring;
pub mod bench;
pub mod client;
pub mod clock;
pub mod config;
pub mod data;
pub mod diff;
pub mod engine;
pub mod exit;
pub mod export;
pub mod log;
pub mod metrics;
pub mod plugin;
pub mod plugins;
pub mod progress;
pub mod report;
pub mod rescore;
pub mod results;
pub mod resume;
pub mod rules;
pub mod run;
pub mod scoring;
pub mod seal;
pub mod sweep;
pub mod tokens;
