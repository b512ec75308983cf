//! The files the reference's scorer writes, by the same names and in the
//! same layout: `swe_bench_results.json` in the report directory, and
//! `swe_bench_runs/<run_id>/` with `swe_bench_service_status.json` and the
//! downloaded artifacts. JSON is written as the reference's
//! `msgspec.json.encode` writes it: compact, keys in the service's order.
//! Every file is written under a temporary name, synced, then renamed, and
//! the folder synced (the reference's `atomic_write_bytes`), never through a
//! link in the report directory ([`agentload_fs::OutDir`]).

use crate::Error;
use agentload_fs::OutDir;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The run's result, in the report directory.
pub const RESULTS_FILE: &str = "swe_bench_results.json";
/// The folder of the service's runs, in the report directory.
pub const RUNS_DIR: &str = "swe_bench_runs";
/// The run's last status, in its folder.
pub const STATUS_FILE: &str = "swe_bench_service_status.json";

/// `report_dir/swe_bench_runs/<run_id>` (`run_id` already checked).
pub fn run_dir(report_dir: &Path, run_id: &str) -> PathBuf {
    report_dir.join(RUNS_DIR).join(run_id)
}

/// `value` as `msgspec.json.encode` writes it.
pub(crate) fn compact(value: &Map<String, Value>) -> Vec<u8> {
    serde_json::to_vec(value).expect("a JSON object encodes")
}

/// Writes `bytes` to `rel` of the report directory `out` atomically and durably.
pub(crate) fn write(out: &OutDir, rel: &Path, bytes: &[u8]) -> Result<(), Error> {
    out.write(rel, bytes).map_err(|e| Error::Write {
        path: out.path(rel),
        source: e.into(),
    })
}

/// Renames the complete `tmp` over `target` and syncs the folder.
pub(crate) fn publish(tmp: &Path, target: &Path) -> Result<(), Error> {
    let failed = |source| Error::Write {
        path: target.to_path_buf(),
        source,
    };
    std::fs::rename(tmp, target).map_err(failed)?;
    if let Some(dir) = target.parent() {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(failed)?;
    }
    Ok(())
}

/// Creates the folder `rel` of `out` (and its parents).
pub(crate) fn create_dir(out: &OutDir, rel: &Path) -> Result<(), Error> {
    out.create_dir(rel).map_err(|e| Error::Write {
        path: out.path(rel),
        source: e.into(),
    })
}

/// Removes `rel` of `out` if it is there (a stale result of an earlier run).
pub(crate) fn remove_stale(out: &OutDir, rel: &Path) -> Result<(), Error> {
    out.remove(rel).map(drop).map_err(|e| Error::Write {
        path: out.path(rel),
        source: e.into(),
    })
}
