//! A phase's numbers, over its steady-state window only: requests issued
//! once every agent has been active for `warmup_s`, up to the moment the
//! end rules held. Ramp-up (and anything after the stop) is counted apart.

use super::agents::PhaseRun;
use agentload_engine::{TurnFacts, TurnStatus};
use agentload_results::metrics::{Interactivity, Spread, TurnTimes};
use serde::Serialize;

/// Server throughput over the window, from the server's `usage`.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Throughput {
    /// Prompt tokens per second, cached prompt tokens included.
    pub input_tps: f64,
    pub output_tps: f64,
    pub total_tps: f64,
    /// `prompt_tokens_details.cached_tokens` summed, when the server gives it.
    pub cached_tokens: Option<u64>,
    /// Cached share of the prompt tokens.
    pub cached_fraction: Option<f64>,
}

/// The window itself.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
    pub seconds: f64,
    /// Requests counted.
    pub measured: usize,
    /// Issued before the window (ramp-up, warm-up).
    pub ramp_up: usize,
    /// Issued after the stop (none by construction; reported for audit).
    pub after_stop: usize,
}

/// Server counts checked against the local tokenizer.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct TokenCheck {
    pub compared: usize,
    pub prompt_mismatches: usize,
    pub completion_mismatches: usize,
    pub completion_mean_diff: f64,
}

/// Errors in the phase (all requests, not only the window).
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Errors {
    pub failed_turns: usize,
    pub context_overflows: usize,
}

/// Everything measured in one phase.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseMetrics {
    pub window: Option<Window>,
    /// TTFT (ms) of the window's requests.
    pub ttft_ms: Option<Spread>,
    /// Output tokens per second after the first token, per request.
    pub output_speed_tps: Option<Spread>,
    pub throughput: Throughput,
    pub token_check: TokenCheck,
    pub errors: Errors,
    /// Issued minus due (previous completion + tool delay), ms: how late the
    /// harness sent turns (coordinated omission).
    pub send_lag_ms: Option<Spread>,
    /// The window's completed turns by each interactivity definition.
    pub interactivity: Interactivity,
}

/// The phase's metrics (see the module docs).
pub fn measure(run: &PhaseRun, warmup_s: f64) -> PhaseMetrics {
    let facts = &run.facts;
    let errors = Errors {
        failed_turns: facts
            .iter()
            .filter(|r| r.status == TurnStatus::Failed)
            .count(),
        context_overflows: facts.iter().filter(|r| r.context_overflow()).count(),
    };
    let lag = Spread::of(
        facts
            .iter()
            .filter_map(|r| Some(r.issued_ns()?.saturating_sub(r.scheduled_ns()?) as f64 / 1e6))
            .collect(),
    );
    let Some(all_active) = run.all_active_ns else {
        return PhaseMetrics {
            window: None,
            ttft_ms: None,
            output_speed_tps: None,
            throughput: Throughput::default(),
            token_check: TokenCheck::default(),
            errors,
            send_lag_ms: lag,
            interactivity: Interactivity::default(),
        };
    };
    let start = all_active + (warmup_s * 1e9) as u64;
    let end = run.stopped_ns.max(start);
    let measured: Vec<&TurnFacts> = facts
        .iter()
        .filter(|r| r.issued_ns().is_some_and(|t| t >= start && t <= end))
        .collect();
    let window = Window {
        start_ns: start,
        end_ns: end,
        seconds: (end - start) as f64 / 1e9,
        measured: measured.len(),
        ramp_up: facts
            .iter()
            .filter(|r| r.issued_ns().is_some_and(|t| t < start))
            .count(),
        after_stop: facts
            .iter()
            .filter(|r| r.issued_ns().is_some_and(|t| t > end))
            .count(),
    };
    let ok: Vec<&&TurnFacts> = measured
        .iter()
        .filter(|r| r.status == TurnStatus::Completed)
        .collect();
    let ttft = Spread::of(
        ok.iter()
            .filter_map(|r| Some((r.first_token_ns()? - r.issued_ns()?) as f64 / 1e6))
            .collect(),
    );
    let speed = Spread::of(
        ok.iter()
            .filter_map(|r| {
                let n = r.server_osl()?;
                let span = r.last_token_ns()?.checked_sub(r.first_token_ns()?)?;
                (n >= 2 && span > 0).then(|| (n - 1) as f64 / (span as f64 / 1e9))
            })
            .collect(),
    );
    let prompt: u64 = ok.iter().filter_map(|r| r.server_isl()).sum();
    let completion: u64 = ok.iter().filter_map(|r| r.server_osl()).sum();
    let cached: Vec<u64> = ok.iter().filter_map(|r| r.cached_tokens()).collect();
    let secs = window.seconds.max(f64::MIN_POSITIVE);
    let cached_tokens = (!cached.is_empty()).then(|| cached.iter().sum::<u64>());
    let throughput = Throughput {
        input_tps: prompt as f64 / secs,
        output_tps: completion as f64 / secs,
        total_tps: (prompt + completion) as f64 / secs,
        cached_tokens,
        cached_fraction: cached_tokens
            .filter(|_| prompt > 0)
            .map(|c| c as f64 / prompt as f64),
    };
    let mut check = TokenCheck::default();
    let mut diff = 0i64;
    for r in &ok {
        let (Some(local), Some(sp), Some(sc)) = (r.local_tokens, r.server_isl(), r.server_osl())
        else {
            continue;
        };
        check.compared += 1;
        check.prompt_mismatches += usize::from(u64::from(local.isl) != sp);
        check.completion_mismatches += usize::from(u64::from(local.osl) != sc);
        diff += i64::from(local.osl) - sc as i64;
    }
    if check.compared > 0 {
        check.completion_mean_diff = diff as f64 / check.compared as f64;
    }
    // Output counts: the local tokenizer's where it counted, else the server's.
    let times: Vec<TurnTimes> = ok
        .iter()
        .filter_map(|r| {
            let (osl, after_first) = match r.local_tokens {
                Some(l) => (u64::from(l.osl), u64::from(l.osl_after_first)),
                None => {
                    let n = r.server_osl()?;
                    (n, n.saturating_sub(1))
                }
            };
            Some(TurnTimes {
                issued_ns: r.issued_ns()?,
                first_token_ns: r.first_token_ns(),
                last_token_ns: r.last_token_ns(),
                complete_ns: r.complete_ns()?,
                osl,
                after_first,
            })
        })
        .collect();
    PhaseMetrics {
        window: Some(window),
        ttft_ms: ttft,
        output_speed_tps: speed,
        throughput,
        token_check: check,
        errors,
        send_lag_ms: lag,
        interactivity: Interactivity::of(&times, None),
    }
}
