//! What a run produces: the per-turn [`record`], the [`metrics`] computed
//! from records as the reference computes them, and the result files with
//! the reference's names, shapes and keys where it has them
//! (`performance/result_summary.json`, `scores.json`,
//! `accuracy/accuracy_results.json`, `config.yaml`, plus agentload's
//! `turns.jsonl` records, `run_manifest.json` and `report.txt`); the
//! submission layout built from them (`agentload submission`); and the
//! command's [`exit`] codes.
//!
//! It depends on the client only for the shape of an answer, and on the
//! config for what a run was asked: no plugin host, no engine.
#![forbid(unsafe_code)]

pub mod aa;
mod accuracy;
pub mod arrivals;
pub mod distributed;
pub mod exit;
pub mod fit;
pub mod live;
mod manifest;
pub mod metrics;
pub mod numbers;
pub mod record;
mod reference_config;
pub mod regions;
mod report_txt;
pub mod run_dir;
pub mod sessions;
pub mod submission;
mod summary;
pub mod tools;
pub mod tracking;
pub mod yaml;

pub use accuracy::{
    accuracy_entry, accuracy_results, find_breakdown_entry, performance_entry, swe_bench_entry,
    write_accuracy_results, ACCURACY_RESULTS,
};
pub use manifest::{ContextWindowFact, DatasetIdentity, PluginSeal, RunManifest, SealRecord};
pub use record::{
    CompletionRecord, CountingStats, Failure, Interner, LocalTokens, RecordedTokens, TurnFacts,
    TurnRecord, TurnStatus,
};
pub use reference_config::{reference_config, run_config, write_reference_config};
pub use report_txt::write_report;
pub use summary::{
    summarize, FullRunOsl, Harness, PerformanceSummary, PointMetrics, TimingError, TokenSetup,
};
