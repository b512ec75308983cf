//! `performance/result_summary.json` from the turn records: the reference's
//! keys, shapes and value types (all times in ns), computed as the
//! reference computes them, plus agentload's own additions under the
//! separate `agentload` key.

use super::manifest::RunManifest;
use crate::metrics::{Series, Spread};
use crate::record::{ServerStamp, Timing, TurnFacts, TurnStatus};
use agentload_config::TokenSource;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// The summary file.
#[derive(Debug, Serialize)]
pub struct PerformanceSummary {
    pub version: &'static str,
    pub git_sha: Option<String>,
    /// The reference writes 0 here (its session start is not surfaced);
    /// agentload's wall-clock start is `agentload.test_started_at`.
    pub test_started_at: u64,
    /// The reference's counters, as its metrics aggregator counts events:
    /// every tracked turn sent, plus each turn skipped after its session
    /// failed (the reference issues those with a synthetic ISSUED);
    pub n_samples_issued: u64,
    /// every one of those with a COMPLETE event: **failed and skipped turns
    /// included** (so `completed + failed == issued` breaks whenever a turn
    /// failed; the answered turns are `agentload.n_samples_succeeded`);
    pub n_samples_completed: u64,
    /// and every one with an ERROR event: failed and skipped turns.
    pub n_samples_failed: u64,
    /// The phase's start (when its sessions started, the reference's
    /// START_PERFORMANCE_TRACKING) to the last counted completion; null
    /// when nothing completed.
    pub duration_ns: Option<u64>,
    pub state: &'static str,
    /// The report has every metric it will get (no count left pending).
    pub complete: bool,
    pub ttft: Reported,
    /// The reference's TPOT: (complete - first token) / tokens after the
    /// first chunk.
    pub tpot: Reported,
    pub latency: Reported,
    pub output_sequence_lengths: Reported,
    pub input_sequence_lengths: Reported,
    /// The legacy LoadGen window applies to Poisson load only: null here.
    pub legacy_loadgen_window_duration_ns: Option<u64>,
    /// Completed turns per second of `duration_ns`.
    pub qps: Option<f64>,
    /// Output tokens (`output_sequence_lengths.total`) per second.
    pub tps: Option<f64>,
    pub finish_reason_counts: FinishReasonCounts,
    /// The Endpoints Rules v1.0 point metrics (datacenter rulesets only; the
    /// edge reference writes none of these keys).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub point: Option<PointMetrics>,
    /// OSL over every performance turn, the window's tail and repeats
    /// included (datacenter rulesets only; the reference's evaluation
    /// harness adds it after `ea33275`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_sequence_lengths_full_run: Option<FullRunOsl>,
    /// `load_pattern`, `warmup` and both seeds, as in `config.yaml`.
    pub run_config: Value,
    /// agentload's additions (not in the reference's schema).
    pub agentload: Extras,
}

/// A point's metrics as MLPerf Endpoints Rules v1.0 §4.1/4.2 define them
/// and its submission checker reads them back (`point_summary.py`):
/// `system_tps` = `output_sequence_lengths.total / (duration_ns / 1e9)`,
/// `tpot_p90_ms` = `tpot.percentiles["90.0"] / 1e6`, `tps_per_user` =
/// `1000 / tpot_p90_ms`, `e2e_avg_interactivity` =
/// `output_tokens_per_turn_total / e2e_turn_time_seconds_total`,
/// `ttft_p90_ms` = `ttft.percentiles["90.0"] / 1e6`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PointMetrics {
    pub system_tps: Option<f64>,
    pub tpot_p90_ms: Option<f64>,
    pub tps_per_user: Option<f64>,
    pub ttft_p90_ms: Option<f64>,
    pub e2e_avg_interactivity: Option<f64>,
    pub output_tokens_per_turn_total: u64,
    pub e2e_turn_time_seconds_total: f64,
    /// The answered turns (the datacenter spec's §8 row 7: the reference's
    /// `n_samples_completed` counts failed turns too).
    pub n_samples_succeeded: u64,
}

/// `output_sequence_lengths_full_run` (the reference's `full_run_osl.py`):
/// each performance turn counted with the OSL rule. A turn with no answer
/// (failed, or not sent after a failure) or an empty one counts as empty;
/// a completed turn no source could count is an error, and the block is
/// then `partial` (a partial block must not feed the OSL gate).
#[derive(Debug, Clone, Serialize)]
pub struct FullRunOsl {
    pub output_sequence_lengths: Reported,
    pub n_turns_counted: u64,
    pub n_empty: u64,
    pub n_errors: u64,
    pub n_undecodable: u64,
    pub n_missing: u64,
    pub partial: bool,
}

impl FullRunOsl {
    /// The block over `records` (every performance turn of the run), with
    /// counts from `source`, else the other source.
    pub fn of(records: &[TurnFacts], source: TokenSource) -> Self {
        let (mut osl, mut n_empty, mut n_errors) = (Vec::new(), 0, 0);
        for r in records {
            match (r.status, chosen_counts(r, source)) {
                (TurnStatus::Completed, Some(c)) if c.osl > 0 => osl.push(c.osl),
                (TurnStatus::Completed, None) => n_errors += 1,
                _ => n_empty += 1,
            }
        }
        Self {
            n_turns_counted: osl.len() as u64,
            output_sequence_lengths: Reported::new(Series::of(&osl, false), false),
            n_empty,
            n_errors,
            n_undecodable: 0,
            n_missing: 0,
            partial: n_errors > 0,
        }
    }
}

impl PerformanceSummary {
    /// Adds the point metrics, from this summary's own series and the
    /// interactivity totals (so the checker's formulas give them back).
    pub fn add_point_metrics(&mut self) {
        let p90_ms = |r: &Reported| {
            r.series
                .as_ref()
                .and_then(|s| s.percentile("90.0"))
                .map(|ns| ns / 1e6)
        };
        let tpot_p90_ms = p90_ms(&self.tpot).filter(|ms| *ms > 0.0 && ms.is_finite());
        let i = &self.agentload.interactivity;
        self.point = Some(PointMetrics {
            system_tps: self
                .output_sequence_lengths
                .series
                .as_ref()
                .zip(self.duration_ns.filter(|d| *d > 0))
                .map(|(osl, d)| osl.total_f64() / (d as f64 / 1e9)),
            tpot_p90_ms,
            tps_per_user: tpot_p90_ms.map(|ms| 1000.0 / ms),
            ttft_p90_ms: p90_ms(&self.ttft),
            e2e_avg_interactivity: i.mlperf_e2e_interactivity,
            output_tokens_per_turn_total: i.output_tokens_per_turn_total,
            e2e_turn_time_seconds_total: i.e2e_turn_time_seconds_total,
            n_samples_succeeded: self.agentload.n_samples_succeeded,
        });
    }
}

/// A series, or what the reference writes for an empty one: `{}`, or for a
/// latency series its early-stopping map with every estimate null.
#[derive(Debug, Clone)]
pub struct Reported {
    pub series: Option<Series>,
    early_stopping: bool,
}

impl Reported {
    fn new(series: Option<Series>, early_stopping: bool) -> Self {
        Self {
            series,
            early_stopping,
        }
    }
}

impl Serialize for Reported {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.series {
            Some(series) => series.serialize(serializer),
            None => {
                let mut empty = Map::new();
                if self.early_stopping {
                    let nulls = crate::metrics::PERCENTILE_GRID
                        .iter()
                        .filter(|&&p| (50.0..100.0).contains(&p))
                        .map(|&p| (format!("{p:.1}"), Value::Null))
                        .collect();
                    empty.insert("early_stopping_percentiles".into(), Value::Object(nulls));
                }
                empty.serialize(serializer)
            }
        }
    }
}

/// Completed turns by `finish_reason`: all six of the reference's keys, in
/// its order; a turn without a finish reason is not counted.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct FinishReasonCounts {
    pub stop: u64,
    pub length: u64,
    pub tool_calls: u64,
    pub content_filter: u64,
    pub function_call: u64,
    pub other: u64,
}

impl FinishReasonCounts {
    fn count(&mut self, reason: &str) {
        *match reason {
            "stop" => &mut self.stop,
            "length" => &mut self.length,
            "tool_calls" => &mut self.tool_calls,
            "content_filter" => &mut self.content_filter,
            "function_call" => &mut self.function_call,
            _ => &mut self.other,
        } += 1;
    }
}

/// Metrics agentload reports beyond the reference's.
#[derive(Debug, Serialize)]
pub struct Extras {
    /// The run's start, UTC (RFC 3339).
    pub test_started_at: String,
    /// (e2e - ttft) / (osl - 1): the vLLM/SGLang TPOT, osl from the same
    /// source as the reference-shaped fields.
    pub tpot_decode: Option<Series>,
    /// Time to the first byte of the response.
    pub ttfb: Option<Series>,
    /// Where the reference-shaped token counts came from: `local`, `server`
    /// or `mixed` (some turns lacked the configured source's count).
    pub token_count_source: &'static str,
    /// The configured source, the other source's series, and the check.
    pub token_counts: TokenCounts,
    /// Turns whose server and local counts differ, and by how much.
    pub token_count_check: Option<TokenCheck>,
    /// Harness TTFT minus the simulator's server-side first-token time.
    pub timing_error: Option<TimingError>,
    /// How long first tokens waited in the kernel before agentload read them (ns; turns
    /// with kernel receive stamps, `endpoint.timestamps = "arrival"`): the harness's own
    /// backlog, which the stamps keep out of TTFT. Large, it still delays the next requests
    /// of closed-loop sessions (see their send lag).
    pub first_token_read_lag_ns: Option<Series>,
    /// Send lag, issued minus due (ns, every issued turn): for a session's later turns, the
    /// harness's own time between an answer's end (its last packet's arrival) and the next
    /// request, the recorded delay excluded. Large, the harness throttled the load.
    pub send_lag_ns: Option<Series>,
    /// The harness's timings against llama.cpp's own `timings`.
    pub server_timings_check: Option<ServerTimingsCheck>,
    /// The harness's own costs, outside the measured turns.
    pub harness: Harness,
    /// Turns answered: the reference's `n_samples_completed` less its
    /// `n_samples_failed`.
    pub n_samples_succeeded: u64,
    /// Turns not sent because an earlier turn of their session failed.
    pub n_samples_aborted: u64,
    /// Turns sent but cut by a signal in the process that wrote this
    /// summary: not counted anywhere else (`agentload resume` sends them
    /// again).
    #[serde(skip_serializing_if = "is_zero")]
    pub n_samples_interrupted: u64,
    /// The endpoints the run's processes (the run and each resume) sent to,
    /// in order, when there were more than one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<String>,
    /// How the endpoint was reached, where there is more than plain HTTP to say: TLS (its
    /// settings, `insecure` among them) and a proxy (whose hop the stamps then include).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<agentload_client::TransportDescription>,
    /// Interactivity by each of its three definitions (MLPerf Endpoints,
    /// InferenceX AgentX, AA-AgentPerf), over the completed turns.
    pub interactivity: crate::metrics::Interactivity,
    /// The performance window: which issued turns these metrics count (the
    /// reference's `STOP_PERFORMANCE_TRACKING`) and the tail after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracking: Option<crate::tracking::Tracking>,
    /// The phase's sessions together (`session_metrics.jsonl` has each).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<crate::sessions::SessionsSummary>,
    /// Server and accelerator telemetry over the phase (`[telemetry]`);
    /// a resumed run's is this process's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<agentload_telemetry::TelemetrySummary>,
    /// A sharded run's merge: its shards, their clocks and loads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distributed: Option<crate::distributed::Distributed>,
    /// Open-loop arrivals (`[load.arrivals]`): the schedule configured against delivered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<crate::arrivals::ArrivalsSummary>,
    /// Live-reply replay's divergence funnel (live runs only: never official).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<crate::live::LiveSummary>,
    pub manifest: RunManifest,
}

/// What the harness spent outside the measured turns.
#[derive(Debug, Default, Serialize)]
pub struct Harness {
    /// Process start (`main`) to the process's first chat request, ms.
    pub startup_ms: Option<f64>,
    /// The connections opened before the phase's first turn (one per concurrent session), and
    /// how long that took: not inside any turn's timings.
    pub connection_setup: Option<agentload_client::Setup>,
    /// Local token counting, run when the phase ended.
    pub token_counting: Option<crate::record::CountingStats>,
}

/// How the reference-shaped counts were made, and the other source's view.
#[derive(Debug, Serialize)]
pub struct TokenCounts {
    /// `model.token_counts`: `local` or `server`.
    pub configured: TokenSource,
    /// sha256 of the chat template local counts render with, when counted.
    pub chat_template_sha256: Option<String>,
    /// Completed turns counted from each source.
    pub turns_local: u64,
    pub turns_server: u64,
    /// ISL, OSL, TPOT and `tps` from the other source, over the turns it
    /// counted (the server's when local is configured, and vice versa).
    pub other: Option<OtherCounts>,
}

/// The reference-shaped token series from the source not configured.
#[derive(Debug, Serialize)]
pub struct OtherCounts {
    pub source: TokenSource,
    pub input_sequence_lengths: Option<Series>,
    pub output_sequence_lengths: Option<Series>,
    pub tpot: Option<Series>,
    pub tps: Option<f64>,
}

/// Server vs local token counts.
#[derive(Debug, Serialize)]
pub struct TokenCheck {
    pub turns_compared: u64,
    pub isl_mismatches: u64,
    pub osl_mismatches: u64,
    /// Mean of (local - server) prompt tokens.
    pub isl_mean_diff: f64,
    pub osl_mean_diff: f64,
}

/// Distribution of the client's timestamp error, in ns.
#[derive(Debug, Serialize)]
pub struct TimingError {
    /// Harness TTFT minus server-side first-token time: the request path plus the response
    /// path.
    pub ttft_minus_server_ns: Series,
    /// Request path: the simulator's arrival stamp (the request's first bytes) minus the
    /// harness's `issued` (both on the machine's monotonic clock).
    pub request_path_ns: Option<Series>,
    /// Response path: the harness's first-token stamp (the kernel's arrival stamp, or its
    /// read's return) minus the simulator's first-token stamp (the write of the first token
    /// returned). Loopback delivers the bytes inside the simulator's `write(2)`, so an
    /// arrival stamp, or a client as fast as the machine's floor, comes before that write
    /// returned: a few µs below zero then.
    pub response_path_ns: Option<Series>,
    /// Harness e2e minus server-side last-token time.
    pub e2e_minus_server_last_ns: Option<Series>,
}

/// The harness's view against what llama.cpp reports in `timings`.
#[derive(Debug, Serialize)]
pub struct ServerTimingsCheck {
    /// Harness TTFT minus `timings.prompt_ms` (ms): request transfer,
    /// queueing, and the first token's decode step.
    pub ttft_minus_prompt_ms: Spread,
    /// Turns whose stream carried one token per chunk (`token_chunks ==
    /// predicted_n`), the only ones where a client-side decode rate means
    /// the server's.
    pub one_token_per_chunk: usize,
    /// Client decode rate ((chunks − 1) / (last − first token)) over
    /// `timings.predicted_per_second`, on those turns.
    pub decode_rate_ratio: Option<Spread>,
}

/// What the token counts are made from.
#[derive(Debug, Clone)]
pub struct TokenSetup {
    /// The configured source (`model.token_counts`).
    pub source: TokenSource,
    /// sha256 of the chat template of local counts, when a counter ran.
    pub chat_template_sha256: Option<String>,
}

/// One turn's counts from one source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counts {
    pub isl: u64,
    pub osl: u64,
    /// Output tokens after the first token-bearing chunk.
    pub after_first: u64,
}

/// `r`'s counts from `configured`, else from the other source.
pub(crate) fn chosen_counts(r: &TurnFacts, configured: TokenSource) -> Option<Counts> {
    counts(r, configured).or_else(|| counts(r, configured.other()))
}

fn counts(r: &TurnFacts, source: TokenSource) -> Option<Counts> {
    match source {
        TokenSource::Local => r.local_tokens.map(|l| Counts {
            isl: u64::from(l.isl),
            osl: u64::from(l.osl),
            after_first: u64::from(l.osl_after_first),
        }),
        // The server tells the output's total only; the first chunk is
        // taken as one token.
        TokenSource::Server => Some(Counts {
            isl: r.server_isl()?,
            osl: r.server_osl()?,
            after_first: r.server_osl()?.saturating_sub(1),
        }),
    }
}

fn span(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    b?.checked_sub(a?)
}

/// ISL, OSL and TPOT series of `turns` with their chosen counts, and `tps`
/// over `secs`.
fn token_series(
    turns: &[(&TurnFacts, Counts)],
    secs: Option<f64>,
) -> (Option<Series>, Option<Series>, Option<Series>, Option<f64>) {
    let isl: Vec<u64> = turns.iter().map(|(_, c)| c.isl).collect();
    // Empty outputs are not counted (the reference's OSL rule).
    let osl: Vec<u64> = turns
        .iter()
        .map(|(_, c)| c.osl)
        .filter(|&n| n > 0)
        .collect();
    let tpot: Vec<f64> = turns
        .iter()
        .filter(|(_, c)| c.after_first > 0)
        .filter_map(|(r, c)| {
            let decode = span(r.first_token_ns(), r.complete_ns())?;
            Some(decode as f64 / c.after_first as f64)
        })
        .collect();
    let osl = Series::of(&osl, false);
    let tps = osl.as_ref().zip(secs).map(|(s, secs)| s.total_f64() / secs);
    (
        Series::of(&isl, false),
        osl,
        Series::of_floats(&tpot, true),
        tps,
    )
}

/// Builds the summary from the phase's records (in completion order).
pub fn summarize(
    records: &[TurnFacts],
    window_ns: Option<(u64, u64)>,
    run_config: Value,
    manifest: RunManifest,
    tokens: &TokenSetup,
) -> PerformanceSummary {
    let issued: Vec<&TurnFacts> = records
        .iter()
        .filter(|r| r.issued_ns().is_some())
        .filter(|r| matches!(r.status, TurnStatus::Completed | TurnStatus::Failed))
        .collect();
    let done: Vec<&TurnFacts> = issued
        .iter()
        .copied()
        .filter(|r| r.status == TurnStatus::Completed)
        .collect();
    let aborted = records
        .iter()
        .filter(|r| r.status == TurnStatus::Aborted)
        .count();
    // The reference's latency series: every tracked COMPLETE, failed turns
    // included, and each skipped turn's synthetic ISSUED..COMPLETE, which
    // is a few µs there and 0 here (a quirk, reproduced; README "Counters").
    let latency: Vec<u64> = issued
        .iter()
        .filter_map(|r| span(r.issued_ns(), r.complete_ns()))
        .chain(std::iter::repeat_n(0, aborted))
        .collect();
    let collect = |f: &dyn Fn(&TurnFacts) -> Option<u64>| -> Vec<u64> {
        done.iter().filter_map(|r| f(r)).collect()
    };
    let duration_ns = window_ns
        .map(|(a, b)| b.saturating_sub(a))
        .filter(|&d| d > 0);
    let secs = duration_ns.map(|d| d as f64 / 1e9);

    // Each turn's counts from the configured source, else the other one.
    let configured = tokens.source;
    let mut chosen = Vec::new();
    let (mut turns_local, mut turns_server) = (0, 0);
    for r in &done {
        let pick = counts(r, configured)
            .map(|c| (configured, c))
            .or_else(|| counts(r, configured.other()).map(|c| (configured.other(), c)));
        if let Some((source, c)) = pick {
            match source {
                TokenSource::Local => turns_local += 1,
                TokenSource::Server => turns_server += 1,
            }
            chosen.push((*r, c));
        }
    }
    let (answered_isls, osls, tpot, tps) = token_series(&chosen, secs);
    // The reference counts every sent turn's prompt at ISSUED, failed ones
    // included; only local counts have them (a failed turn has no usage).
    let failed_isls: Vec<u64> = issued
        .iter()
        .filter(|r| r.status == TurnStatus::Failed && configured == TokenSource::Local)
        .filter_map(|r| r.local_tokens.map(|l| u64::from(l.isl)))
        .collect();
    let isls = if failed_isls.is_empty() {
        answered_isls
    } else {
        let all: Vec<u64> = chosen
            .iter()
            .map(|(_, c)| c.isl)
            .chain(failed_isls)
            .collect();
        Series::of(&all, false)
    };
    let interactivity = crate::metrics::Interactivity::of(
        &chosen
            .iter()
            .filter_map(|(r, c)| {
                Some(crate::metrics::TurnTimes {
                    issued_ns: r.issued_ns()?,
                    first_token_ns: r.first_token_ns(),
                    last_token_ns: r.last_token_ns(),
                    complete_ns: r.complete_ns()?,
                    osl: c.osl,
                    after_first: c.after_first,
                })
            })
            .collect::<Vec<_>>(),
        tpot.as_ref().and_then(|t| t.percentile("90.0")),
    );
    let other_turns: Vec<(&TurnFacts, Counts)> = done
        .iter()
        .filter_map(|r| counts(r, configured.other()).map(|c| (*r, c)))
        .collect();
    let other = (!other_turns.is_empty()).then(|| {
        let (isl, osl, tpot, tps) = token_series(&other_turns, secs);
        OtherCounts {
            source: configured.other(),
            input_sequence_lengths: isl,
            output_sequence_lengths: osl,
            tpot,
            tps,
        }
    });
    let token_count_source = match (turns_local, turns_server) {
        (_, 0) if turns_local > 0 => "local",
        (0, _) if turns_server > 0 => "server",
        (0, 0) => "none",
        _ => "mixed",
    };
    let tpot_decode: Vec<f64> = chosen
        .iter()
        .filter(|(_, c)| c.osl > 1)
        .filter_map(|(r, c)| {
            let decode = span(r.first_token_ns(), r.complete_ns())?;
            Some(decode as f64 / (c.osl - 1) as f64)
        })
        .collect();

    let mut finish_reason_counts = FinishReasonCounts::default();
    for r in &done {
        if let Some(reason) = r.finish_reason.as_deref() {
            finish_reason_counts.count(reason);
        }
    }
    let timing_error = timing_error(&done);
    let server_timings_check = server_timings_check(&done);
    PerformanceSummary {
        version: env!("CARGO_PKG_VERSION"),
        git_sha: option_env!("AGENTLOAD_GIT_SHA").map(str::to_string),
        test_started_at: 0,
        n_samples_issued: (issued.len() + aborted) as u64,
        n_samples_completed: (issued.len() + aborted) as u64,
        n_samples_failed: (issued.len() - done.len() + aborted) as u64,
        duration_ns,
        state: "complete",
        complete: true,
        ttft: Reported::new(
            Series::of(&collect(&|r| span(r.issued_ns(), r.first_token_ns())), true),
            true,
        ),
        tpot: Reported::new(tpot, true),
        latency: Reported::new(Series::of(&latency, true), true),
        output_sequence_lengths: Reported::new(osls, false),
        input_sequence_lengths: Reported::new(isls, false),
        legacy_loadgen_window_duration_ns: None,
        qps: secs.map(|s| (issued.len() + aborted) as f64 / s),
        tps,
        finish_reason_counts,
        point: None,
        output_sequence_lengths_full_run: None,
        run_config,
        agentload: Extras {
            test_started_at: manifest.test_started_at.clone(),
            tpot_decode: Series::of_floats(&tpot_decode, true),
            ttfb: Series::of(&collect(&|r| span(r.issued_ns(), r.first_byte_ns())), false),
            token_count_source,
            token_counts: TokenCounts {
                configured,
                chat_template_sha256: tokens.chat_template_sha256.clone(),
                turns_local,
                turns_server,
                other,
            },
            token_count_check: token_check(&done),
            timing_error,
            first_token_read_lag_ns: Series::of(
                &done
                    .iter()
                    .filter_map(|r| r.first_token_read_lag_ns())
                    .collect::<Vec<_>>(),
                false,
            ),
            send_lag_ns: Series::of(
                &issued
                    .iter()
                    .filter_map(|r| r.send_lag_ns())
                    .collect::<Vec<_>>(),
                false,
            ),
            server_timings_check,
            harness: Harness::default(),
            n_samples_succeeded: done.len() as u64,
            n_samples_aborted: aborted as u64,
            n_samples_interrupted: 0,
            endpoints: Vec::new(),
            transport: None,
            interactivity,
            tracking: None,
            sessions: None,
            telemetry: None,
            distributed: None,
            arrivals: None,
            live: crate::live::LiveSummary::of(records),
            manifest,
        },
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn token_check(done: &[&TurnFacts]) -> Option<TokenCheck> {
    let pairs: Vec<(i64, i64)> = done
        .iter()
        .filter_map(|r| {
            let l = r.local_tokens?;
            Some((
                i64::from(l.isl) - r.server_isl()? as i64,
                i64::from(l.osl) - r.server_osl()? as i64,
            ))
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let n = pairs.len() as f64;
    Some(TokenCheck {
        turns_compared: pairs.len() as u64,
        isl_mismatches: pairs.iter().filter(|p| p.0 != 0).count() as u64,
        osl_mismatches: pairs.iter().filter(|p| p.1 != 0).count() as u64,
        isl_mean_diff: pairs.iter().map(|p| p.0 as f64).sum::<f64>() / n,
        osl_mean_diff: pairs.iter().map(|p| p.1 as f64).sum::<f64>() / n,
    })
}

fn timing_error(done: &[&TurnFacts]) -> Option<TimingError> {
    let diffs = |stamp: ServerStamp, end: &dyn Fn(&TurnFacts) -> Option<u64>| -> Vec<u64> {
        done.iter()
            .filter_map(|r| {
                let harness = end(r)?.checked_sub(r.issued_ns()?)?;
                Some(harness.saturating_sub(r.server_stamp(stamp)?))
            })
            .collect()
    };
    let ttft = diffs(ServerStamp::FirstToken, &|r| r.first_token_ns());
    let (request, response): (Vec<f64>, Vec<f64>) = done
        .iter()
        .filter_map(|r| {
            let issued = r.issued_mono_ns()? as i64;
            let first = issued + r.first_token_ns()?.checked_sub(r.issued_ns()?)? as i64;
            Some((
                (r.server_stamp(ServerStamp::ReceivedMono)? as i64 - issued) as f64,
                (first - r.server_stamp(ServerStamp::FirstTokenMono)? as i64) as f64,
            ))
        })
        .unzip();
    Some(TimingError {
        ttft_minus_server_ns: Series::of(&ttft, false)?,
        request_path_ns: Series::of_floats(&request, false),
        response_path_ns: Series::of_floats(&response, false),
        e2e_minus_server_last_ns: Series::of(
            &diffs(ServerStamp::LastToken, &|r| r.last_token_ns()),
            false,
        ),
    })
}

fn server_timings_check(done: &[&TurnFacts]) -> Option<ServerTimingsCheck> {
    let ttft = Spread::of(
        done.iter()
            .filter_map(|r| {
                let ttft_ms = (r.first_token_ns()? - r.issued_ns()?) as f64 / 1e6;
                Some(ttft_ms - r.timing(Timing::PromptMs)?)
            })
            .collect(),
    )?;
    let clean: Vec<f64> = done
        .iter()
        .filter(|r| {
            r.timing(Timing::PredictedN) == Some(f64::from(r.token_chunks)) && r.token_chunks >= 2
        })
        .filter_map(|r| {
            let span_s = r.last_token_ns()?.checked_sub(r.first_token_ns()?)? as f64 / 1e9;
            let server = r.timing(Timing::PredictedPerSecond)?;
            (span_s > 0.0 && server > 0.0).then(|| f64::from(r.token_chunks - 1) / span_s / server)
        })
        .collect();
    Some(ServerTimingsCheck {
        ttft_minus_prompt_ms: ttft,
        one_token_per_chunk: clean.len(),
        decode_rate_ratio: Spread::of(clean),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{CompletionRecord, LocalTokens};
    use crate::SealRecord;
    use crate::TurnRecord;
    use agentload_config::RunKind;
    use serde_json::json;

    fn manifest() -> RunManifest {
        RunManifest {
            agentload_version: "0",
            plugins: vec![],
            datasets: vec![],
            endpoint: "http://127.0.0.1:1".into(),
            model: "m".into(),
            test_started_at: "2026-01-01T00:00:00Z".into(),
            seal: SealRecord {
                mode: RunKind::Development,
                sealed: true,
                plugins: vec![],
            },
            compliance: agentload_config::rules::Compliance {
                rules: None,
                rules_version: None,
                rules_source: None,
                config_digest: String::new(),
                compliant: false,
                deviations: vec![],
            },
            nonce: String::new(),
            workload_facts: Default::default(),
            aa_preflight: None,
            context_window: None,
        }
    }

    /// A completed turn issued at `at` ms, first token 10 ms later, done
    /// 40 ms after that; local counts (isl 100, osl 31, 30 after the first
    /// chunk) and server usage (prompt 102, completion 31).
    fn turn(at: u64, reason: Option<&str>) -> TurnRecord {
        let ms = 1_000_000;
        let mut r = TurnRecord::aborted("s", 1, "s:1", "{}");
        r.status = TurnStatus::Completed;
        r.error = None;
        r.issued_ns = Some(at * ms);
        r.first_token_ns = Some((at + 10) * ms);
        r.complete_ns = Some((at + 50) * ms);
        r.completion = Some(CompletionRecord {
            finish_reason: reason.map(str::to_string),
            ..Default::default()
        });
        r.usage = crate::record::raw(json!({"prompt_tokens": 102, "completion_tokens": 31}));
        r.local_tokens = Some(LocalTokens {
            isl: 100,
            osl: 31,
            osl_after_first: 30,
            osl_count_ns: 0,
        });
        r
    }

    fn setup(source: TokenSource) -> TokenSetup {
        TokenSetup {
            source,
            chat_template_sha256: Some("abc".into()),
        }
    }

    /// The point metrics, read back with the submission checker's formulas
    /// over the same summary, agree (the checker allows 1 %; these are
    /// equal), and the e2e fallback it uses without the totals agrees too.
    #[test]
    fn point_metrics_agree_with_the_checkers_formulas() {
        let records = vec![turn(0, None), turn(100, None), turn(250, None)];
        let mut s = summarize(
            &TurnFacts::all(&records),
            Some((0, 300_000_000)),
            json!({}),
            manifest(),
            &setup(TokenSource::Local),
        );
        let plain = serde_json::to_value(&s).unwrap();
        assert!(
            plain.get("system_tps").is_none(),
            "edge summaries carry none"
        );
        s.add_point_metrics();
        let v = serde_json::to_value(&s).unwrap();
        let f = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k}: {v}"));
        let osl_total = v["output_sequence_lengths"]["total"].as_f64().unwrap();
        let secs = v["duration_ns"].as_f64().unwrap() / 1e9;
        assert_eq!(f("system_tps"), osl_total / secs);
        let tpot_p90_ms = v["tpot"]["percentiles"]["90.0"].as_f64().unwrap() / 1e6;
        assert_eq!(f("tpot_p90_ms"), tpot_p90_ms);
        assert_eq!(f("tps_per_user"), 1000.0 / tpot_p90_ms);
        assert_eq!(
            f("ttft_p90_ms"),
            v["ttft"]["percentiles"]["90.0"].as_f64().unwrap() / 1e6
        );
        assert_eq!(
            f("e2e_avg_interactivity"),
            f("output_tokens_per_turn_total") / f("e2e_turn_time_seconds_total")
        );
        // 3 turns of 31 tokens in 50 ms each: 93 / 0.15 s.
        assert!((f("e2e_avg_interactivity") - 620.0).abs() < 1e-9);
        let fallback = osl_total / (v["latency"]["total"].as_f64().unwrap() / 1e9);
        assert!((fallback / f("e2e_avg_interactivity") - 1.0).abs() < 0.01);
        // Placed after finish_reason_counts, before run_config.
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
        assert!(
            at("finish_reason_counts") < at("system_tps") && at("system_tps") < at("run_config")
        );
    }

    /// The reference's aggregator counts events: a failed turn has ISSUED,
    /// ERROR and COMPLETE, a skipped one the same three synthetic events.
    /// So `completed` includes both, `failed` counts both, the latency
    /// series has one sample per COMPLETE (a skipped turn's is 0), and
    /// `qps` divides every COMPLETE. The answered turns are
    /// `n_samples_succeeded`, in `agentload` and at the top level with the
    /// point metrics.
    #[test]
    fn counters_are_the_references_failed_and_skipped_turns_included() {
        let mut failed = turn(100, None);
        failed.status = TurnStatus::Failed;
        failed.completion = None;
        failed.first_token_ns = None;
        failed.complete_ns = Some(130_000_000);
        let skipped = TurnRecord::aborted("s", 2, "s:2", "{}");
        let records = vec![turn(0, None), failed, skipped];
        let mut s = summarize(
            &TurnFacts::all(&records),
            Some((0, 130_000_000)),
            json!({}),
            manifest(),
            &setup(TokenSource::Local),
        );
        s.add_point_metrics();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["n_samples_issued"], 3, "{v}");
        assert_eq!(v["n_samples_completed"], 3);
        assert_eq!(v["n_samples_failed"], 2);
        assert_eq!(v["n_samples_succeeded"], 1);
        assert_eq!(v["agentload"]["n_samples_succeeded"], 1);
        assert_eq!(v["agentload"]["n_samples_aborted"], 1);
        let latency = &v["latency"];
        assert_eq!(latency["total"], 50_000_000 + 30_000_000, "{latency}");
        assert_eq!(latency["min"], 0);
        assert_eq!(latency["max"], 50_000_000);
        assert_eq!(v["qps"].as_f64().unwrap(), 3.0 / 0.13);
        // Only the answered turn has a TTFT and output tokens; the failed
        // one's prompt is counted (locally: it has no usage).
        assert_eq!(v["ttft"]["total"], 10_000_000);
        assert_eq!(v["output_sequence_lengths"]["total"], 31);
        assert_eq!(v["input_sequence_lengths"]["total"], 200);
        let server = summarize(
            &TurnFacts::all(&records),
            Some((0, 130_000_000)),
            json!({}),
            manifest(),
            &setup(TokenSource::Server),
        );
        let server = serde_json::to_value(&server).unwrap();
        assert_eq!(server["input_sequence_lengths"]["total"], 102);
    }

    /// Every turn is counted, empty, or an error; errors make it partial.
    #[test]
    fn the_full_run_osl_block_counts_every_turn() {
        let mut empty = turn(10, None);
        empty.local_tokens = Some(LocalTokens {
            isl: 100,
            osl: 0,
            osl_after_first: 0,
            osl_count_ns: 0,
        });
        let mut failed = turn(20, None);
        failed.status = TurnStatus::Failed;
        let skipped = TurnRecord::aborted("s", 2, "s:2", "{}");
        let records = [turn(0, None), empty, failed, skipped];
        let block = FullRunOsl::of(&TurnFacts::all(&records), TokenSource::Local);
        assert_eq!(
            (block.n_turns_counted, block.n_empty, block.n_errors),
            (1, 3, 0)
        );
        assert!(!block.partial);
        let v = serde_json::to_value(&block).unwrap();
        assert_eq!(v["output_sequence_lengths"]["total"], 31);
        let mut uncounted = turn(30, None);
        uncounted.usage = None;
        uncounted.local_tokens = None;
        let block = FullRunOsl::of(
            &TurnFacts::all(&[turn(0, None), uncounted]),
            TokenSource::Local,
        );
        assert_eq!((block.n_turns_counted, block.n_errors), (1, 1));
        assert!(block.partial);
    }

    #[test]
    fn reference_keys_shapes_and_types() {
        let records = vec![turn(0, Some("tool_calls")), turn(100, None)];
        let s = summarize(
            &TurnFacts::all(&records),
            Some((0, 150_000_000)),
            json!({}),
            manifest(),
            &setup(TokenSource::Local),
        );
        let v = serde_json::to_value(&s).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "version",
                "git_sha",
                "test_started_at",
                "n_samples_issued",
                "n_samples_completed",
                "n_samples_failed",
                "duration_ns",
                "state",
                "complete",
                "ttft",
                "tpot",
                "latency",
                "output_sequence_lengths",
                "input_sequence_lengths",
                "legacy_loadgen_window_duration_ns",
                "qps",
                "tps",
                "finish_reason_counts",
                "run_config",
                "agentload"
            ]
        );
        assert_eq!(v["test_started_at"], 0);
        assert_eq!(v["legacy_loadgen_window_duration_ns"], Value::Null);
        assert_eq!(v["duration_ns"], 150_000_000);
        assert_eq!(
            v["finish_reason_counts"],
            json!({"stop": 0, "length": 0, "tool_calls": 1, "content_filter": 0, "function_call": 0, "other": 0})
        );
        // Local counts by default: ISL 100, TPOT = 40 ms / 30 tokens.
        assert_eq!(v["input_sequence_lengths"]["max"], 100);
        let tpot = v["tpot"]["percentiles"]["50.0"].as_f64().unwrap();
        assert!((tpot - 40e6 / 30.0).abs() < 1e-6, "{tpot}");
        assert!(v["tpot"]["total"].is_f64());
        assert!(v["ttft"]["total"].is_u64() && v["ttft"]["median"].is_f64());
        assert_eq!(
            v["ttft"]["histogram"]["buckets"].as_array().unwrap().len(),
            30
        );
        assert_eq!(
            v["ttft"]["histogram"]["buckets"][0]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        // Two samples: every estimate is null.
        assert!(v["latency"]["early_stopping_percentiles"]["50.0"].is_null());
        assert_eq!(v["tps"], 62.0 / 0.15);
        assert_eq!(v["qps"], 2.0 / 0.15);
        let extra = &v["agentload"];
        assert_eq!(extra["token_count_source"], "local");
        assert_eq!(extra["token_counts"]["configured"], "local");
        assert_eq!(extra["token_counts"]["other"]["source"], "server");
        assert_eq!(
            extra["token_counts"]["other"]["input_sequence_lengths"]["max"],
            102
        );
        assert_eq!(extra["token_count_check"]["isl_mismatches"], 2);
        assert_eq!(extra["token_count_check"]["isl_mean_diff"], -2.0);
        assert_eq!(extra["test_started_at"], "2026-01-01T00:00:00Z");
    }

    #[test]
    fn server_source_and_fallback_per_turn() {
        let mut records = vec![turn(0, Some("stop")), turn(100, Some("weird"))];
        let s = summarize(
            &TurnFacts::all(&records),
            Some((0, 150_000_000)),
            json!({}),
            manifest(),
            &setup(TokenSource::Server),
        );
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["input_sequence_lengths"]["max"], 102);
        assert_eq!(v["agentload"]["token_counts"]["other"]["source"], "local");
        assert_eq!(v["finish_reason_counts"]["other"], 1);
        // A turn without usage falls back to its local count: mixed.
        records[1].usage = None;
        let s = summarize(
            &TurnFacts::all(&records),
            Some((0, 150_000_000)),
            json!({}),
            manifest(),
            &setup(TokenSource::Server),
        );
        assert_eq!(s.agentload.token_count_source, "mixed");
        assert_eq!(
            (
                s.agentload.token_counts.turns_server,
                s.agentload.token_counts.turns_local
            ),
            (1, 1)
        );
    }

    #[test]
    fn empty_phase_writes_the_reference_empty_series() {
        let s = summarize(&[], None, json!({}), manifest(), &setup(TokenSource::Local));
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["input_sequence_lengths"], json!({}));
        let es = v["ttft"]["early_stopping_percentiles"].as_object().unwrap();
        assert_eq!(es.len(), 8);
        assert!(es.values().all(Value::is_null));
        assert_eq!(
            (&v["qps"], &v["tps"], &v["duration_ns"]),
            (&Value::Null, &Value::Null, &Value::Null)
        );
        assert_eq!(v["agentload"]["token_count_source"], "none");
    }

    /// A turn as `turns.jsonl` has it from llama.cpp behind the simulator: texts, a tool
    /// call, the workload's expected data, every `timings` key, server stamps.
    fn whole_turn(i: u64) -> TurnRecord {
        let ms = 1_000_000;
        let at = i * 200;
        let mut r = turn(
            at,
            Some(if i.is_multiple_of(3) {
                "stop"
            } else {
                "tool_calls"
            }),
        );
        r.session_id = format!("s{}", i % 4);
        r.turn = (i / 4) as u32 + 1;
        r.item_id = format!("{}:{}", r.session_id, r.turn);
        r.scheduled_ns = Some((at * ms).saturating_sub(30_000));
        r.first_byte_ns = r.first_token_ns;
        r.last_token_ns = Some((at + 45 + i % 5) * ms);
        r.issued_mono_ns = Some(9_000_000_000 + at * ms);
        r.token_chunks = 31;
        r.completion = Some(CompletionRecord {
            content: "x".repeat(40 * i as usize),
            reasoning_content: "Let me look at the file first. ".repeat(12),
            tool_calls: vec![agentload_client::ToolCallRecord {
                id: format!("functions.bash:{i}"),
                name: "bash".into(),
                arguments: format!("{{\"command\": \"grep -n {i} src/lib.rs\"}}"),
            }],
            finish_reason: r.completion.take().and_then(|c| c.finish_reason),
        });
        r.usage = crate::record::raw(json!({
            "prompt_tokens": 1000 + i, "completion_tokens": 31, "total_tokens": 1031 + i,
            "prompt_tokens_details": {"cached_tokens": 900}
        }));
        r.timings = crate::record::raw(json!({
            "cache_n": 900, "prompt_n": 100 + i, "prompt_ms": 8.5 + i as f64,
            "prompt_per_token_ms": 0.08, "prompt_per_second": 12_000.0,
            "predicted_n": 31, "predicted_ms": 35.0, "predicted_per_token_ms": 1.1,
            "predicted_per_second": 880.0 + i as f64
        }));
        r.server_timestamps = crate::record::raw(json!({
            "first_token_ns": 9 * ms, "last_token_ns": (44 + i % 5) * ms, "queued_ns": 20_000,
            "received_mono_ns": 9_000_000_000 + at * ms + 40_000,
            "first_token_mono_ns": 9_000_000_000 + at * ms + 9 * ms
        }));
        r.first_chunk = Some(agentload_client::FirstChunk {
            content_bytes: 0,
            reasoning_bytes: 4,
            tool_call: false,
        });
        r.expected_json = format!(
            "{{\"conversation_id\": \"{}\", \"tool_calls\": []}}",
            r.session_id
        ) + &" ".repeat(300);
        r
    }

    /// A phase summarizes the facts it kept of the turns as it wrote them; a rescore or a
    /// merge, the facts of the lines read back: the two are the same facts. And the facts
    /// carry every number a block reads: the server's timings and stamps, both counts, the
    /// cached tokens.
    #[test]
    fn the_facts_of_the_lines_read_back_are_the_facts_kept() {
        let mut whole: Vec<TurnRecord> = (0..24).map(whole_turn).collect();
        whole[5].status = TurnStatus::Failed;
        whole[5].error = Some("HTTP 400: exceed_context_size_error".into());
        whole[9].local_tokens = None;
        let read_back: Vec<TurnRecord> = whole
            .iter()
            .map(|r| {
                let line = serde_json::to_string(r).unwrap();
                let mut back: TurnRecord = serde_json::from_str(&line).unwrap();
                // Counted after the turn, merged in from `turns.tokens.jsonl` on reading.
                back.local_tokens = r.local_tokens;
                back
            })
            .collect();
        let kept = TurnFacts::all(&whole);
        assert_eq!(kept, TurnFacts::all(&read_back));
        assert_eq!(kept[5].failure, crate::Failure::ContextOverflow);
        assert_eq!(kept[3].finish_reason.as_deref(), Some("stop"));
        assert!(
            std::sync::Arc::ptr_eq(&kept[0].session_id, &kept[4].session_id),
            "a session's id is held once"
        );
        for source in [TokenSource::Local, TokenSource::Server] {
            let mut s = summarize(
                &kept,
                Some((0, 5_000_000_000)),
                json!({}),
                manifest(),
                &setup(source),
            );
            s.add_point_metrics();
            s.output_sequence_lengths_full_run = Some(FullRunOsl::of(&kept, source));
            let v = serde_json::to_value(&s).unwrap();
            let extras = &v["agentload"];
            for block in [
                &extras["server_timings_check"]["decode_rate_ratio"],
                &extras["server_timings_check"]["ttft_minus_prompt_ms"],
                &extras["timing_error"]["request_path_ns"],
                &extras["timing_error"]["e2e_minus_server_last_ns"],
                &extras["token_count_check"],
                &extras["send_lag_ns"],
                &extras["ttfb"],
            ] {
                assert!(block.is_object(), "{v}");
            }
            assert_eq!(v["finish_reason_counts"]["tool_calls"], 15, "{v}");
            let turns: Vec<_> = kept
                .iter()
                .map(|f| crate::sessions::SessionTurn::of(f, source))
                .collect();
            let order: Vec<String> = (0..4).map(|i| format!("s{i}")).collect();
            let (each, _) =
                crate::sessions::sessions(&turns, &order, &Default::default(), None, Some(5.0));
            assert!(each.iter().all(|m| m.cached_tokens > 0), "{each:?}");
        }
    }
}
