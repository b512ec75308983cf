//! `performance/result_summary.json` from the turn records, with the
//! reference's keys (all times in ns), plus agentload's own additions under
//! clearly separate keys.

use super::manifest::RunManifest;
use crate::engine::{TurnRecord, TurnStatus};
use crate::metrics::{Series, Spread};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The summary file.
#[derive(Debug, Serialize)]
pub struct PerformanceSummary {
    pub version: &'static str,
    pub git_sha: Option<String>,
    pub test_started_at: String,
    pub n_samples_issued: u64,
    pub n_samples_completed: u64,
    pub n_samples_failed: u64,
    pub duration_ns: u64,
    pub state: &'static str,
    pub complete: bool,
    pub ttft: Option<Series>,
    /// The reference's TPOT: (complete - first token) / tokens after the first chunk.
    pub tpot: Option<Series>,
    pub latency: Option<Series>,
    pub output_sequence_lengths: Option<Series>,
    pub input_sequence_lengths: Option<Series>,
    pub legacy_loadgen_window_duration_ns: u64,
    pub qps: f64,
    pub tps: f64,
    pub finish_reason_counts: BTreeMap<String, u64>,
    pub run_config: Value,
    /// agentload's additions (not in the reference's schema).
    pub agentload: Extras,
}

/// Metrics agentload reports beyond the reference's.
#[derive(Debug, Serialize)]
pub struct Extras {
    /// (e2e - ttft) / (osl - 1): the vLLM/SGLang TPOT, osl from server usage
    /// (local count when the server sent none).
    pub tpot_decode: Option<Series>,
    /// Time to the first byte of the response.
    pub ttfb: Option<Series>,
    /// Where the token counts came from: `server`, `local` or `mixed`.
    pub token_count_source: &'static str,
    /// Turns whose server and local counts differ, and by how much.
    pub token_count_check: Option<TokenCheck>,
    /// Harness TTFT minus the simulator's server-side first-token time.
    pub timing_error: Option<TimingError>,
    /// The harness's timings against llama.cpp's own `timings`.
    pub server_timings_check: Option<ServerTimingsCheck>,
    /// Turns not sent because an earlier turn of their session failed.
    pub n_samples_aborted: u64,
    pub manifest: RunManifest,
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
    /// Harness TTFT minus server-side first-token time.
    pub ttft_minus_server_ns: Series,
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

/// Builds the summary from the phase's records.
pub fn summarize(
    records: &[TurnRecord],
    window_ns: Option<(u64, u64)>,
    run_config: Value,
    manifest: RunManifest,
) -> PerformanceSummary {
    let issued: Vec<&TurnRecord> = records.iter().filter(|r| r.issued_ns.is_some()).collect();
    let done: Vec<&TurnRecord> = issued
        .iter()
        .copied()
        .filter(|r| r.status == TurnStatus::Completed)
        .collect();
    let span = |a: Option<u64>, b: Option<u64>| Some(b?.checked_sub(a?)).flatten();
    let collect = |f: &dyn Fn(&TurnRecord) -> Option<u64>| -> Vec<u64> {
        done.iter().filter_map(|r| f(r)).collect()
    };
    let osl = |r: &TurnRecord| {
        r.server_osl()
            .or(r.local_tokens.map(|l| l.osl as u64))
            .filter(|&n| n > 0)
    };
    let isl = |r: &TurnRecord| r.server_isl().or(r.local_tokens.map(|l| l.isl as u64));
    let ttft = collect(&|r| span(r.issued_ns, r.first_token_ns));
    let latency = collect(&|r| span(r.issued_ns, r.complete_ns));
    let decode = |r: &TurnRecord| span(r.first_token_ns, r.complete_ns);
    let tpot = collect(&|r| {
        let after_first = match r.local_tokens {
            Some(l) => l.osl_after_first as u64,
            None => osl(r)?.saturating_sub(1),
        };
        (after_first > 0)
            .then(|| decode(r).map(|d| d / after_first))
            .flatten()
    });
    let tpot_decode = collect(&|r| {
        let n = osl(r)?;
        (n > 1).then(|| decode(r).map(|d| d / (n - 1))).flatten()
    });
    let osls = collect(&|r| osl(r));
    let isls = collect(&|r| isl(r));
    let duration_ns = window_ns.map_or(0, |(a, b)| b.saturating_sub(a));
    let secs = duration_ns as f64 / 1e9;
    let per_s = |n: f64| if secs > 0.0 { n / secs } else { 0.0 };
    let mut finish_reason_counts = BTreeMap::new();
    for r in &done {
        let reason = r
            .completion
            .as_ref()
            .and_then(|c| c.finish_reason.clone())
            .unwrap_or_else(|| "other".into());
        let bucket = match reason.as_str() {
            "stop" | "length" | "tool_calls" | "content_filter" | "function_call" => reason,
            _ => "other".into(),
        };
        *finish_reason_counts.entry(bucket).or_insert(0) += 1;
    }
    let server_counted = done.iter().filter(|r| r.usage.is_some()).count();
    let token_count_source = match server_counted {
        0 => "local",
        n if n == done.len() => "server",
        _ => "mixed",
    };
    let timing_error = timing_error(&done);
    let server_timings_check = server_timings_check(&done);
    PerformanceSummary {
        version: env!("CARGO_PKG_VERSION"),
        git_sha: option_env!("AGENTLOAD_GIT_SHA").map(str::to_string),
        test_started_at: manifest.test_started_at.clone(),
        n_samples_issued: issued.len() as u64,
        n_samples_completed: done.len() as u64,
        n_samples_failed: (issued.len() - done.len()) as u64,
        duration_ns,
        state: "complete",
        complete: issued.len() == done.len(),
        ttft: Series::of(&ttft, true),
        tpot: Series::of(&tpot, true),
        latency: Series::of(&latency, true),
        output_sequence_lengths: Series::of(&osls, false),
        input_sequence_lengths: Series::of(&isls, false),
        legacy_loadgen_window_duration_ns: duration_ns,
        qps: per_s(done.len() as f64),
        tps: per_s(osls.iter().sum::<u64>() as f64),
        finish_reason_counts,
        run_config,
        agentload: Extras {
            tpot_decode: Series::of(&tpot_decode, true),
            ttfb: Series::of(&collect(&|r| span(r.issued_ns, r.first_byte_ns)), false),
            token_count_source,
            token_count_check: token_check(&done),
            timing_error,
            server_timings_check,
            n_samples_aborted: records
                .iter()
                .filter(|r| r.status == TurnStatus::Aborted)
                .count() as u64,
            manifest,
        },
    }
}

fn token_check(done: &[&TurnRecord]) -> Option<TokenCheck> {
    let pairs: Vec<(i64, i64)> = done
        .iter()
        .filter_map(|r| {
            let l = r.local_tokens?;
            Some((
                l.isl as i64 - r.server_isl()? as i64,
                l.osl as i64 - r.server_osl()? as i64,
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

fn timing_error(done: &[&TurnRecord]) -> Option<TimingError> {
    let server = |r: &TurnRecord, key: &str| r.server_timestamps.as_ref()?.get(key)?.as_u64();
    let diffs = |key: &str, end: &dyn Fn(&TurnRecord) -> Option<u64>| -> Vec<u64> {
        done.iter()
            .filter_map(|r| {
                let harness = end(r)?.checked_sub(r.issued_ns?)?;
                Some(harness.saturating_sub(server(r, key)?))
            })
            .collect()
    };
    let ttft = diffs("first_token_ns", &|r| r.first_token_ns);
    Some(TimingError {
        ttft_minus_server_ns: Series::of(&ttft, false)?,
        e2e_minus_server_last_ns: Series::of(&diffs("last_token_ns", &|r| r.last_token_ns), false),
    })
}

fn server_timings_check(done: &[&TurnRecord]) -> Option<ServerTimingsCheck> {
    let timing = |r: &TurnRecord, key: &str| r.timings.as_ref()?.get(key)?.as_f64();
    let ttft = Spread::of(
        done.iter()
            .filter_map(|r| {
                let ttft_ms = (r.first_token_ns? - r.issued_ns?) as f64 / 1e6;
                Some(ttft_ms - timing(r, "prompt_ms")?)
            })
            .collect(),
    )?;
    let clean: Vec<f64> = done
        .iter()
        .filter(|r| {
            timing(r, "predicted_n") == Some(f64::from(r.token_chunks)) && r.token_chunks >= 2
        })
        .filter_map(|r| {
            let span_s = r.last_token_ns?.checked_sub(r.first_token_ns?)? as f64 / 1e9;
            let server = timing(r, "predicted_per_second")?;
            (span_s > 0.0 && server > 0.0).then(|| f64::from(r.token_chunks - 1) / span_s / server)
        })
        .collect();
    Some(ServerTimingsCheck {
        ttft_minus_prompt_ms: ttft,
        one_token_per_chunk: clean.len(),
        decode_rate_ratio: Spread::of(clean),
    })
}

/// The reference's `config.yaml` keys that its compliance checker reads,
/// from agentload's config (JSON is valid YAML).
pub fn reference_config(
    config: &crate::config::RunConfig,
    phase: Option<&crate::config::PhaseConfig>,
    accuracy_only: bool,
) -> Value {
    let setting = |key: &str| phase.and_then(|p| p.settings.get(key));
    let seed = setting("seed").and_then(|v| v.as_integer()).or(Some(42));
    let temperature = setting("temperature")
        .and_then(|v| v.as_float())
        .or(Some(0.0));
    // `--accuracy-only` forces one worker and one connection, and says so.
    let concurrency = if accuracy_only {
        1
    } else {
        config.load.concurrency
    };
    let mut v = Map::new();
    v.insert("name".into(), config.name.clone().into());
    v.insert("version".into(), config.version.clone().into());
    v.insert("type".into(), "online".into());
    v.insert(
        "model_params".into(),
        serde_json::json!({"name": config.model.name, "temperature": temperature, "seed": seed}),
    );
    v.insert(
        "settings".into(),
        serde_json::json!({
            "load_pattern": {"type": "agentic_inference", "target_concurrency": concurrency},
            "client": {"num_workers": 1, "max_connections": concurrency},
            "runtime": {"max_duration_ms": config.load.max_duration_ms, "dataloader_random_seed": seed},
        }),
    );
    v.insert(
        "endpoint_config".into(),
        serde_json::json!({"endpoints": [config.endpoint.url], "api_type": "openai", "api_key": null}),
    );
    Value::Object(v)
}
