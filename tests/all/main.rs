//! agentload's integration tests, in one binary (as wasmtime's `tests/all`):
//! one link of wasmtime instead of one per file, and one process whose
//! tests cargo runs in parallel. Each module drives the real `agentload`
//! binary against the embedded simulator (or a command in process through
//! `agentload::cli`, where a subprocess adds nothing), and a real
//! `llama-server` where one is named.
//!
//! One other integration test binary, for a reason: `tests/plugin_sandbox.rs`
//! measures a child's peak RSS, which the kernel inflates by the spawning
//! process's own RSS (small only in a small binary).

mod common;

mod aa_compare;
mod aa_files;
mod aa_replay;
mod accuracy_gate;
mod audit_flow;
mod authoring;
mod bfcl_multi_turn;
mod cli_in_process;
mod closed_loop;
mod closed_tasks;
mod config_cli;
mod data_grants;
mod datacenter;
mod doc_examples;
mod edge_run;
mod fail_fast;
mod faults;
mod fetch_scripts;
mod hostile_files;
mod https;
mod k8s_fetch;
mod layers;
mod live_replies;
mod llama_server;
mod load_shapes;
mod plugin_crates;
mod reference_files;
mod report;
mod resume;
mod run_dir;
mod sealing;
mod security_doc;
mod sessions;
mod sharded_sweep;
mod shards;
mod swe_bench;
mod sweep;
mod telemetry;
mod terminal;
mod tools;
mod wire_timing;
mod wit_versions;
