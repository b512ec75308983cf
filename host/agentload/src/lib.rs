//! agentload: a benchmark harness for agentic LLM inference.
//!
//! The host owns time and I/O; workloads and scorers are sandboxed
//! WebAssembly components behind the WIT contract in `wit/`. This crate is
//! the command line and what it orchestrates; the pipeline lives in crates
//! of its own, each depending only on those below it:
//!
//! | crate | owns |
//! |---|---|
//! | `agentload-wire` | the stamped socket and the clocks |
//! | `agentload-console` | stderr lines above the progress bar, stdout |
//! | `agentload-client` | the HTTP/SSE client: **every timestamp is taken there** |
//! | `agentload-swebench` | the SWE-bench service's client, its score and the reference's files |
//! | `agentload-sim` | the embedded simulated endpoint |
//! | `agentload-config` | the run config, rules, seal and data grants |
//! | `agentload-plugin-host` | wasmtime, the sandbox, limits, compile cache, WIT bindings |
//! | `agentload-results` | records, metrics, result files, exit codes |
//! | `agentload-engine` | sessions, schedules, journals, resume, token counting |
//! | `agentload-report` | report.html, diff and CSV export, from result files |
//!
//! Here: [`cli`] (the command line: `Opts` and `run`, as `main` calls them),
//! [`run`] (one configured run, end to end), [`run_state`] and [`resume`], [`rescore`]
//! and [`scoring`] (scoring recorded turns), [`swe_bench`] (the SWE-bench phase
//! on the reference's service), [`sweep`] (concurrency and rate sweeps),
//! [`open_loop`] (open-loop schedules from the config), [`shards`] and
//! [`shard_commands`] (sharded runs: what a run uses of them, and the `shard`,
//! `merge` and `--shards N` commands above it),
//! [`demo`] (the edge config against the in-process simulator), [`bench`] and
//! [`authoring`] (`plugin new` / `plugin check`). The modules use each other one way
//! (`tests/all/layers.rs`, `MODULES`). The threat
//! model is `SECURITY.md`.

pub mod aa;
pub mod agentperf;
pub mod authoring;
pub mod bench;
pub mod cli;
pub mod context;
pub mod demo;
pub mod endpoint;
pub mod grants;
pub mod open_loop;
pub mod point_yaml;
pub mod points;
pub mod rescore;
pub mod resume;
pub mod run;
pub mod run_state;
pub mod scoring;
pub mod shard_commands;
pub mod shards;
pub mod standin_data;
pub mod swe_bench;
pub mod sweep;
pub mod tools;
pub mod workspace;
