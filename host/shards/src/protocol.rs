//! The coordinator's HTTP API (`/v1`), JSON bodies:
//!
//! | call | body | answer |
//! | --- | --- | --- |
//! | `GET /v1/clock` | – | [`ClockReading`]: a ping sample's middle |
//! | `POST /v1/register` | [`Register`] | [`Registered`]: the token of this registration; 409 when the run, config or index does not fit |
//! | `POST /v1/barrier` | [`Arrive`] | [`Start`] once every shard arrived; 409 naming the missing shards at the deadline |
//! | `POST /v1/phase-end` | [`Arrive`] | [`End`] once every shard arrived: a sweep level's end, when every shard's end rules hold; arriving again is arriving once; 409 when the run failed |
//! | `POST /v1/heartbeat` | [`Heartbeat`] | [`Ack`] (`failed` says the run has failed) |
//! | `PUT /v1/upload/{i}/{path}` | the file | [`Stored`]: its size and sha256 as written and synced |
//! | `POST /v1/done` | [`Done`] | [`Ack`] once every listed file is there with its size and digest |
//! | `GET /v1/status` | – | [`Status`] |
//! | `GET /v1/results`, `GET /v1/results/{path}` | – | the merged run's file list, then each file |
//!
//! A shard's calls after `register` carry its registration's token in
//! [`TOKEN_HEADER`]: a call with another token is refused, so no one but
//! the shard that registered can beat, arrive, upload or be done for it.
//! A JSON body over [`MAX_JSON_BYTES`] is refused, and so is an upload of a
//! name a shard does not upload ([`uploaded`]).

use crate::clock::Offset;
use serde::{Deserialize, Serialize};

/// The header that carries a shard's registration token.
pub const TOKEN_HEADER: &str = "x-agentload-shard-token";

/// A JSON call's body, at most: a heartbeat's TTFT histogram is the largest
/// (tens of KiB for a real run).
pub const MAX_JSON_BYTES: usize = 1 << 20;

/// The files a shard hands to the coordinator (those it has), relative to
/// its directory: its journals, its header, and what its run wrote about
/// itself. The coordinator stores no other name.
pub const UPLOADED: [&str; 18] = [
    "shard.json",
    "config.toml",
    "run_manifest.json",
    "run_state.json",
    "report.txt",
    "turns.jsonl",
    "turns.tokens.jsonl",
    // A resume's restarted sessions: their old lines must not count.
    "turns.superseded.jsonl",
    "sessions.jsonl",
    "sessions.json",
    "telemetry.jsonl",
    "performance/result_summary.json",
    "accuracy/turns.jsonl",
    "accuracy/turns.tokens.jsonl",
    "accuracy/turns.superseded.jsonl",
    "accuracy/sessions.jsonl",
    "accuracy/sessions.json",
    "accuracy/telemetry.jsonl",
];

/// The files of each sweep phase a shard uploads, in its folder
/// `sweep/phase-NN-<level>/` (`c4`: 4 agents; `r2.5`: 2.5 arrivals per second).
pub const SWEEP_PHASE_FILES: [&str; 6] = [
    "turns.jsonl",
    "turns.tokens.jsonl",
    "turns.superseded.jsonl",
    "sessions.jsonl",
    "summary.json",
    "telemetry.jsonl",
];

/// Whether a shard uploads `path`: one of [`UPLOADED`], a sweep's
/// `sweep/summary.json` or `sweep/pareto.json`, or one of
/// [`SWEEP_PHASE_FILES`] in a sweep phase's folder.
pub fn uploaded(path: &str) -> bool {
    if UPLOADED.contains(&path) || matches!(path, "sweep/summary.json" | "sweep/pareto.json") {
        return true;
    }
    let mut parts = path.split('/');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some("sweep"), Some(folder), Some(file), None) => {
            sweep_phase_folder(folder) && SWEEP_PHASE_FILES.contains(&file)
        }
        _ => false,
    }
}

/// `phase-NN-cN` or `phase-NN-rX` (X a decimal number).
pub fn sweep_phase_folder(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("phase-") else {
        return false;
    };
    let Some((index, level)) = rest.split_once('-') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let decimal = |s: &str| match s.split_once('.') {
        Some((a, b)) => digits(a) && digits(b),
        None => digits(s),
    };
    digits(index)
        && match level.split_at_checked(1) {
            Some(("c", n)) => digits(n),
            Some(("r", x)) => decimal(x),
            _ => false,
        }
}

/// The coordinator's monotonic clock, ns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClockReading {
    pub mono_ns: u64,
}

/// A shard joining the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Register {
    pub index: u32,
    pub count: u32,
    pub run_id: String,
    /// sha256 of the run's resolved config: every shard runs the same one.
    pub config_digest: String,
    pub host: String,
    /// The pings it took: the coordinator estimates the offset from them
    /// itself.
    pub samples: Vec<crate::clock::Sample>,
}

/// A registration accepted: the token the shard's later calls carry
/// ([`TOKEN_HEADER`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Registered {
    pub token: String,
}

/// A shard at a phase's start barrier.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Arrive {
    pub index: u32,
    /// `performance` or `accuracy`.
    pub phase: String,
    pub offset: Offset,
}

/// When the phase starts, on the coordinator's clock.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Start {
    pub start_ns: u64,
}

/// When the phase ends, on the coordinator's clock: every shard stops then.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct End {
    pub end_ns: u64,
}

/// A shard is alive (sent every second while it runs), with its progress.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Heartbeat {
    pub index: u32,
    pub phase: String,
    pub offset: Offset,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<Live>,
}

/// A shard's progress in its current phase: counts, and its TTFT
/// histogram (µs, the shared layout of [`crate::header::live_histogram`])
/// as `[value, count]` per recorded bucket.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Live {
    pub completed: u64,
    pub failed: u64,
    pub output_tokens: u64,
    pub ttft_us: Vec<[u64; 2]>,
}

/// The shards' progress added up: their histograms merged bucket for
/// bucket, so the percentiles are those of all their turns (within the
/// histograms' 3 significant digits).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LiveTotal {
    pub phase: String,
    pub shards_reporting: u32,
    pub completed: u64,
    pub failed: u64,
    pub output_tokens: u64,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
}

/// A plain answer.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ack {
    /// The run has failed (a shard is lost): the cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// An uploaded file as the coordinator stored it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// A shard's upload is complete: these files, with these sizes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Done {
    pub index: u32,
    pub files: Vec<Stored>,
}

/// An error answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
}

/// One shard as the coordinator sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardStatus {
    pub index: u32,
    pub host: String,
    pub offset: Offset,
    /// Seconds since its last call.
    pub silent_s: f64,
    pub phase: Option<String>,
    pub uploaded: bool,
}

/// The run as the coordinator sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    pub run_id: String,
    pub count: u32,
    pub shards: Vec<ShardStatus>,
    pub failed: Option<String>,
    /// The merged run's files are ready at `/v1/results`.
    pub results: bool,
    /// Progress of the phase most shards are in.
    pub live: Option<LiveTotal>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_phase_s_files_are_uploaded_and_nothing_else_of_it() {
        for ok in [
            "turns.jsonl",
            "sweep/summary.json",
            "sweep/pareto.json",
            "sweep/phase-00-c4/turns.jsonl",
            "sweep/phase-12-r2.5/summary.json",
            "sweep/phase-03-r10/sessions.jsonl",
        ] {
            assert!(uploaded(ok), "{ok}");
        }
        for bad in [
            "sweep/other.json",
            "sweep/phase-00-c4/other.jsonl",
            "sweep/phase-00-x4/turns.jsonl",
            "sweep/phase-0a-c4/turns.jsonl",
            "sweep/phase-00-r2./turns.jsonl",
            "sweep/phase-00-c/turns.jsonl",
            "sweep/phase-00-c4/x/turns.jsonl",
            "phase-00-c4/turns.jsonl",
            "work/turns.jsonl",
        ] {
            assert!(!uploaded(bad), "{bad}");
        }
    }
}
