//! Per-session metrics (`session_metrics.jsonl`, one line per session,
//! beside `sessions.jsonl`, the engine's journal of session outcomes that
//! resume reads) and their
//! run-level summary (`agentload.sessions` in `result_summary.json`): where
//! a session's time went (model, tool, queue), its cold and warm TTFT, its
//! tokens and KV-cache hits, its own e2e interactivity, its SLO verdict;
//! session goodput, TTFT by turn index and by ISL bucket.
//!
//! Times are differences of one process's stamps: a session resumed by a
//! later process adds each process's part.

use crate::live::{Divergence, LiveAction, LiveFact};
use crate::metrics::Spread;
pub use crate::record::Failure;
use crate::record::{TurnFacts, TurnStatus};
use crate::summary::chosen_counts;
pub use crate::summary::Counts;
use agentload_config::{SessionSlo, TokenSource};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One session (a line of `session_metrics.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMetrics {
    pub session_id: String,
    /// `finished`, `failed`, `context_overflow`, `timeout`, `plugin_error`,
    /// `stopped` or `interrupted`.
    pub end_reason: String,
    pub turns: u32,
    pub completed: u32,
    pub failed: u32,
    pub aborted: u32,
    /// First turn due to last answer complete, s.
    pub wall_s: Option<f64>,
    /// Σ (complete − issued): the model's time.
    pub model_s: f64,
    /// Σ (due − previous answer complete): tool delays honoured.
    pub tool_s: f64,
    /// Σ (issued − due): the harness's own lateness.
    pub queue_s: f64,
    pub model_share: Option<f64>,
    /// TTFT of the session's first turn, ms.
    pub ttft_cold_ms: Option<f64>,
    /// TTFT of its later turns, ms ("lower" percentiles).
    pub ttft_warm_p50_ms: Option<f64>,
    pub ttft_warm_p90_ms: Option<f64>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// `usage.prompt_tokens_details.cached_tokens`, summed.
    pub cached_tokens: u64,
    /// 100 · cached / the server's prompt tokens.
    pub kv_hit_pct: Option<f64>,
    /// Σ output tokens / Σ (complete − issued) s of its completed turns.
    pub e2e_interactivity: Option<f64>,
    /// Completed turns within every `[session_slo]` target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns_meeting_slo: Option<u32>,
    /// Finished, with at least `min_turn_share` of its completed turns
    /// meeting the targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_ok: Option<bool>,
    /// Live-reply replay: how the session's replies departed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<SessionLive>,
}

/// A live-reply session's departures from the recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionLive {
    /// The first turn whose reply departed (any class but `match`).
    pub first_divergent_turn: Option<u32>,
    /// Reviewed turns by class (classes that occurred).
    pub by_class: BTreeMap<String, u32>,
    /// Replies replaced by the recorded message.
    pub substituted: u32,
}

/// The run's sessions together (`agentload.sessions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionsSummary {
    pub sessions: usize,
    /// Sessions by end reason.
    pub ended: BTreeMap<String, usize>,
    /// Share of the sessions that ended on the context window, and whether
    /// it is above 1 % (InferenceX AgentX flags such a run: its results
    /// speak for shorter sessions than the workload's).
    pub context_overflow_pct: f64,
    pub context_overflow_flagged: bool,
    pub wall_s: Option<Spread>,
    /// Σ over sessions.
    pub model_s: f64,
    pub tool_s: f64,
    pub queue_s: f64,
    /// The SLO the verdicts are against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<SessionSlo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_ok: Option<usize>,
    /// 100 · SLO-meeting sessions / sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_attainment_pct: Option<f64>,
    /// SLO-meeting sessions per hour of the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_goodput_per_hour: Option<f64>,
    /// TTFT by the turn's index in its session.
    pub ttft_by_turn: Vec<TtftRow>,
    /// TTFT by ISL bucket (powers of two).
    pub ttft_by_isl: Vec<TtftRow>,
}

/// TTFT (ms) of one group of completed turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TtftRow {
    /// The turn index, or the bucket's lower bound (tokens).
    pub from: u64,
    /// The bucket's upper bound (exclusive), for ISL buckets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<u64>,
    pub n: usize,
    pub p50_ms: f64,
    pub p90_ms: f64,
}

/// What the session metrics read of one turn.
#[derive(Debug, Clone, Copy)]
pub struct SessionTurn<'a> {
    pub session: &'a str,
    pub turn: u32,
    pub segment: u32,
    pub status: TurnStatus,
    pub failure: Failure,
    pub scheduled_ns: Option<u64>,
    pub issued_ns: Option<u64>,
    pub first_token_ns: Option<u64>,
    pub complete_ns: Option<u64>,
    /// ISL, OSL and output after the first chunk, from the chosen source.
    pub counts: Option<Counts>,
    /// The server's `usage.prompt_tokens` and cached tokens.
    pub server_prompt: Option<u64>,
    pub cached: Option<u64>,
    /// Live-reply replay: the reply's review.
    pub live: Option<LiveFact>,
}

impl<'a> SessionTurn<'a> {
    /// A turn's view; counts from `source`, else the other source.
    pub fn of(f: &'a TurnFacts, source: TokenSource) -> Self {
        Self {
            session: &f.session_id,
            turn: f.turn,
            segment: f.segment,
            status: f.status,
            failure: f.failure,
            scheduled_ns: f.scheduled_ns(),
            issued_ns: f.issued_ns(),
            first_token_ns: f.first_token_ns(),
            complete_ns: f.complete_ns(),
            counts: chosen_counts(f, source),
            server_prompt: f.server_isl(),
            cached: f.cached_tokens(),
            live: f.live,
        }
    }
}

/// A completed turn's group: (from, to) of its turn index or ISL bucket.
type GroupKey<'a> = dyn Fn(&SessionTurn<'_>) -> Option<(u64, Option<u64>)> + 'a;

/// How a session ended, as the engine says it (`SessionEnd`'s snake-case
/// name), for each session id.
pub type Ends = BTreeMap<String, String>;

fn ms(a: Option<u64>, b: Option<u64>) -> Option<f64> {
    Some(b?.checked_sub(a?)? as f64 / 1e6)
}

fn lower(mut v: Vec<f64>, p: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[((p / 100.0) * (v.len() - 1) as f64).floor() as usize])
}

/// The end reason: the engine's, with a failed session's cause named when
/// it is the context window or the turn timeout.
fn end_reason(end: Option<&str>, turns: &[&SessionTurn<'_>]) -> String {
    let end = end.unwrap_or("finished");
    if end != "failed" {
        return end.to_owned();
    }
    match turns
        .iter()
        .map(|t| t.failure)
        .find(|f| *f != Failure::None)
    {
        Some(Failure::ContextOverflow) => "context_overflow".into(),
        Some(Failure::Timeout) => "timeout".into(),
        _ => "failed".into(),
    }
}

/// One session's metrics from its turns (any order).
pub fn session(
    id: &str,
    turns: &[&SessionTurn<'_>],
    end: Option<&str>,
    slo: Option<&SessionSlo>,
) -> SessionMetrics {
    let mut turns: Vec<&SessionTurn<'_>> = turns.to_vec();
    turns.sort_by_key(|t| (t.segment, t.turn));
    let issued: Vec<&SessionTurn<'_>> = turns
        .iter()
        .copied()
        .filter(|t| t.issued_ns.is_some())
        .collect();
    let done: Vec<&SessionTurn<'_>> = issued
        .iter()
        .copied()
        .filter(|t| t.status == TurnStatus::Completed)
        .collect();
    let secs = |a: Option<u64>, b: Option<u64>| ms(a, b).map_or(0.0, |m| m / 1e3);
    let model_s: f64 = issued
        .iter()
        .map(|t| secs(t.issued_ns, t.complete_ns))
        .sum();
    let queue_s: f64 = issued
        .iter()
        .map(|t| secs(t.scheduled_ns, t.issued_ns))
        .sum();
    let tool_s: f64 = issued
        .windows(2)
        .filter(|w| w[0].segment == w[1].segment)
        .map(|w| secs(w[0].complete_ns, w[1].scheduled_ns))
        .sum();
    // Per process: first due (or issue) to last completion.
    let mut spans: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    for t in &issued {
        let (Some(start), Some(end)) = (t.scheduled_ns.or(t.issued_ns), t.complete_ns) else {
            continue;
        };
        let span = spans.entry(t.segment).or_insert((start, end));
        span.0 = span.0.min(start);
        span.1 = span.1.max(end);
    }
    let wall_s = (!spans.is_empty()).then(|| {
        spans
            .values()
            .map(|(a, b)| b.saturating_sub(*a) as f64 / 1e9)
            .sum::<f64>()
    });
    let first_turn = issued.first().map(|t| (t.segment, t.turn));
    let ttft_cold_ms = done
        .iter()
        .find(|t| Some((t.segment, t.turn)) == first_turn)
        .and_then(|t| ms(t.issued_ns, t.first_token_ns));
    let warm: Vec<f64> = done
        .iter()
        .filter(|t| Some((t.segment, t.turn)) != first_turn)
        .filter_map(|t| ms(t.issued_ns, t.first_token_ns))
        .collect();
    let counted: Vec<(&SessionTurn<'_>, Counts)> =
        done.iter().filter_map(|t| Some((*t, t.counts?))).collect();
    let output_tokens: u64 = counted.iter().map(|(_, c)| c.osl).sum();
    let e2e: f64 = counted
        .iter()
        .map(|(t, _)| secs(t.issued_ns, t.complete_ns))
        .sum();
    let cached_tokens: u64 = done.iter().filter_map(|t| t.cached).sum();
    let server_prompt: u64 = done.iter().filter_map(|t| t.server_prompt).sum();
    let meets = |t: &SessionTurn<'_>, slo: &SessionSlo| -> bool {
        let ttft_ok = slo
            .ttft_ms
            .is_none_or(|limit| ms(t.issued_ns, t.first_token_ns).is_some_and(|v| v <= limit));
        let tpot_ok = slo.tpot_ms.is_none_or(|limit| {
            let Some(c) = t.counts.filter(|c| c.after_first > 0) else {
                // One token or none: nothing after the first to be slow.
                return true;
            };
            ms(t.first_token_ns, t.complete_ns).is_some_and(|d| d / c.after_first as f64 <= limit)
        });
        ttft_ok && tpot_ok
    };
    let end_reason = end_reason(end, &turns);
    let turns_meeting_slo = slo.map(|slo| done.iter().filter(|t| meets(t, slo)).count() as u32);
    let slo_ok = slo.zip(turns_meeting_slo).map(|(slo, n)| {
        end_reason == "finished"
            && !done.is_empty()
            && n as f64 >= slo.min_turn_share * done.len() as f64
    });
    let count = |s: TurnStatus| turns.iter().filter(|t| t.status == s).count() as u32;
    SessionMetrics {
        session_id: id.to_owned(),
        end_reason,
        turns: issued.len() as u32,
        completed: done.len() as u32,
        failed: count(TurnStatus::Failed),
        aborted: count(TurnStatus::Aborted),
        wall_s,
        model_s,
        tool_s,
        queue_s,
        model_share: wall_s.filter(|w| *w > 0.0).map(|w| model_s / w),
        ttft_cold_ms,
        ttft_warm_p50_ms: lower(warm.clone(), 50.0),
        ttft_warm_p90_ms: lower(warm, 90.0),
        input_tokens: counted.iter().map(|(_, c)| c.isl).sum(),
        output_tokens,
        cached_tokens,
        kv_hit_pct: (server_prompt > 0)
            .then(|| 100.0 * cached_tokens as f64 / server_prompt as f64),
        e2e_interactivity: (e2e > 0.0).then(|| output_tokens as f64 / e2e),
        turns_meeting_slo,
        slo_ok,
        live: session_live(&turns),
    }
}

/// The departures of a session's reviewed turns; none without reviews.
fn session_live(turns: &[&SessionTurn<'_>]) -> Option<SessionLive> {
    let reviewed: Vec<(u32, LiveFact)> = turns
        .iter()
        .filter_map(|t| Some((t.turn, t.live?)))
        .collect();
    if reviewed.is_empty() {
        return None;
    }
    let mut by_class = BTreeMap::new();
    for (_, r) in &reviewed {
        *by_class.entry(r.divergence.name().to_owned()).or_insert(0) += 1;
    }
    Some(SessionLive {
        first_divergent_turn: reviewed
            .iter()
            .filter(|(_, r)| r.divergence != Divergence::Match)
            .map(|(turn, _)| *turn)
            .min(),
        by_class,
        substituted: reviewed
            .iter()
            .filter(|(_, r)| r.action == LiveAction::Substituted)
            .count() as u32,
    })
}

/// Every session of a phase, in the order of `order` (the plan's, or the
/// order sessions ended), and the summary; `seconds` is the phase's
/// duration (for goodput).
pub fn sessions(
    turns: &[SessionTurn<'_>],
    order: &[String],
    ends: &Ends,
    slo: Option<&SessionSlo>,
    seconds: Option<f64>,
) -> (Vec<SessionMetrics>, SessionsSummary) {
    let mut by_session: BTreeMap<&str, Vec<&SessionTurn<'_>>> = BTreeMap::new();
    for t in turns {
        by_session.entry(t.session).or_default().push(t);
    }
    let metrics: Vec<SessionMetrics> = order
        .iter()
        .filter_map(|id| {
            let turns = by_session.get(id.as_str())?;
            Some(session(id, turns, ends.get(id).map(String::as_str), slo))
        })
        .collect();
    let mut ended = BTreeMap::new();
    for m in &metrics {
        *ended.entry(m.end_reason.clone()).or_insert(0) += 1;
    }
    let slo_ok = slo.map(|_| metrics.iter().filter(|m| m.slo_ok == Some(true)).count());
    let completed: Vec<&SessionTurn<'_>> = turns
        .iter()
        .filter(|t| t.status == TurnStatus::Completed)
        .collect();
    let rows = |key: &GroupKey<'_>| -> Vec<TtftRow> {
        let mut groups: BTreeMap<(u64, Option<u64>), Vec<f64>> = BTreeMap::new();
        for t in &completed {
            if let (Some(k), Some(v)) = (key(t), ms(t.issued_ns, t.first_token_ns)) {
                groups.entry(k).or_default().push(v);
            }
        }
        groups
            .into_iter()
            .map(|((from, to), v)| TtftRow {
                from,
                to,
                n: v.len(),
                p50_ms: lower(v.clone(), 50.0).unwrap_or(f64::NAN),
                p90_ms: lower(v, 90.0).unwrap_or(f64::NAN),
            })
            .collect()
    };
    let overflowed = ended.get("context_overflow").copied().unwrap_or(0);
    let context_overflow_pct = if metrics.is_empty() {
        0.0
    } else {
        100.0 * overflowed as f64 / metrics.len() as f64
    };
    let summary = SessionsSummary {
        sessions: metrics.len(),
        ended,
        context_overflow_pct,
        context_overflow_flagged: context_overflow_pct > 1.0,
        wall_s: Spread::of(metrics.iter().filter_map(|m| m.wall_s).collect()),
        model_s: metrics.iter().map(|m| m.model_s).sum(),
        tool_s: metrics.iter().map(|m| m.tool_s).sum(),
        queue_s: metrics.iter().map(|m| m.queue_s).sum(),
        slo: slo.cloned(),
        slo_ok,
        slo_attainment_pct: slo_ok
            .filter(|_| !metrics.is_empty())
            .map(|n| 100.0 * n as f64 / metrics.len() as f64),
        session_goodput_per_hour: slo_ok
            .zip(seconds.filter(|s| *s > 0.0))
            .map(|(n, s)| n as f64 * 3600.0 / s),
        ttft_by_turn: rows(&|t| Some((u64::from(t.turn), None))),
        ttft_by_isl: rows(&|t| {
            let isl = t.counts?.isl.max(1);
            let from = 1u64 << (63 - isl.leading_zeros());
            Some((from, Some(from * 2)))
        }),
    };
    (metrics, summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TurnRecord;
    use serde_json::json;

    const MS: u64 = 1_000_000;

    fn fact(r: &TurnRecord) -> TurnFacts {
        TurnFacts::all([r]).remove(0)
    }

    fn view(f: &TurnFacts) -> SessionTurn<'_> {
        SessionTurn::of(f, TokenSource::Server)
    }

    /// A completed turn: due at `due` ms, issued `lag` later, first token
    /// after `ttft`, complete after `e2e` (ms), with server usage.
    fn turn(
        id: &str,
        n: u32,
        due: u64,
        lag: u64,
        ttft: u64,
        e2e: u64,
        usage: (u64, u64, u64),
    ) -> TurnRecord {
        let mut r = TurnRecord::aborted(id, n, "item", "");
        r.status = TurnStatus::Completed;
        r.scheduled_ns = Some(due * MS);
        r.issued_ns = Some((due + lag) * MS);
        r.first_token_ns = Some((due + lag + ttft) * MS);
        r.last_token_ns = Some((due + lag + e2e) * MS);
        r.complete_ns = Some((due + lag + e2e) * MS);
        r.usage = crate::record::raw(
            json!({"prompt_tokens": usage.0, "completion_tokens": usage.1,
                              "prompt_tokens_details": {"cached_tokens": usage.2}}),
        );
        r
    }

    #[test]
    fn a_sessions_time_tokens_and_verdict() {
        // Turn 1 due at 0, issued at 1, TTFT 100, e2e 500 (11 tokens);
        // a 1,000 ms tool delay; turn 2 due at 1,501, issued at 1,503, TTFT
        // 50, e2e 300 (21 tokens).
        let a = fact(&turn("s", 1, 0, 1, 100, 500, (1000, 11, 0)));
        let b = fact(&turn("s", 2, 1501, 2, 50, 300, (1500, 21, 1000)));
        let slo = SessionSlo {
            ttft_ms: Some(80.0),
            tpot_ms: Some(20.0),
            min_turn_share: 0.5,
        };
        let (va, vb) = (view(&a), view(&b));
        let m = session("s", &[&vb, &va], None, Some(&slo));
        assert_eq!(
            (m.turns, m.completed, m.end_reason.as_str()),
            (2, 2, "finished")
        );
        assert!((m.wall_s.unwrap() - 1.803).abs() < 1e-9, "{m:?}");
        assert!((m.model_s - 0.8).abs() < 1e-9);
        assert!((m.tool_s - 1.0).abs() < 1e-9);
        assert!((m.queue_s - 0.003).abs() < 1e-9);
        assert_eq!(m.ttft_cold_ms, Some(100.0));
        assert_eq!(m.ttft_warm_p50_ms, Some(50.0));
        assert_eq!(
            (m.input_tokens, m.output_tokens, m.cached_tokens),
            (2500, 32, 1000)
        );
        assert_eq!(m.kv_hit_pct, Some(40.0));
        assert!((m.e2e_interactivity.unwrap() - 32.0 / 0.8).abs() < 1e-9);
        // Turn 1: TTFT 100 > 80 fails; turn 2: TTFT 50, TPOT 250/20 = 12.5: meets.
        assert_eq!(m.turns_meeting_slo, Some(1));
        assert_eq!(m.slo_ok, Some(true));
        let strict = SessionSlo {
            min_turn_share: 1.0,
            ..slo.clone()
        };
        let m = session("s", &[&va, &vb], None, Some(&strict));
        assert_eq!(m.slo_ok, Some(false));
    }

    #[test]
    fn failed_sessions_name_the_cause_and_never_meet_the_slo() {
        let mut a = turn("s", 1, 0, 0, 10, 20, (10, 2, 0));
        let mut b = turn("s", 2, 30, 0, 10, 20, (10, 2, 0));
        b.status = TurnStatus::Failed;
        b.error = Some("HTTP 400: exceed_context_size_error".into());
        let slo = SessionSlo {
            ttft_ms: Some(1000.0),
            tpot_ms: None,
            min_turn_share: 1.0,
        };
        let (fa, fb) = (fact(&a), fact(&b));
        let m = session("s", &[&view(&fa), &view(&fb)], Some("failed"), Some(&slo));
        assert_eq!(m.end_reason, "context_overflow");
        assert_eq!(m.slo_ok, Some(false));
        b.error = Some("the turn timed out after 600 s".into());
        let fb = fact(&b);
        let m = session("s", &[&view(&fa), &view(&fb)], Some("failed"), None);
        assert_eq!((m.end_reason.as_str(), m.slo_ok), ("timeout", None));
        a.segment = 0;
        let fa = fact(&a);
        assert_eq!(
            session("s", &[&view(&fa)], Some("interrupted"), None).end_reason,
            "interrupted"
        );
    }

    /// One session in two ending on the context window flags the run.
    #[test]
    fn context_overflows_above_one_percent_flag_the_run() {
        let ok = turn("a", 1, 0, 0, 10, 20, (10, 2, 0));
        let mut over = turn("b", 1, 0, 0, 10, 20, (10, 2, 0));
        over.status = TurnStatus::Failed;
        over.error = Some("HTTP 400: exceed_context_size_error".into());
        let facts = TurnFacts::all(&[ok, over]);
        let turns: Vec<SessionTurn<'_>> = facts.iter().map(view).collect();
        let order = vec!["a".to_owned(), "b".to_owned()];
        let ends = Ends::from([("b".to_owned(), "failed".to_owned())]);
        let (_, s) = sessions(&turns, &order, &ends, None, None);
        assert_eq!(s.ended["context_overflow"], 1);
        assert_eq!(
            (s.context_overflow_pct, s.context_overflow_flagged),
            (50.0, true)
        );
    }

    #[test]
    fn the_summary_counts_goodput_and_groups_ttft() {
        let records = [
            turn("a", 1, 0, 0, 100, 200, (1000, 5, 0)),
            turn("a", 2, 300, 0, 20, 100, (3000, 5, 0)),
            turn("b", 1, 0, 0, 300, 400, (1500, 5, 0)),
        ];
        let slo = SessionSlo {
            ttft_ms: Some(150.0),
            tpot_ms: None,
            min_turn_share: 1.0,
        };
        let order = vec!["a".to_owned(), "b".to_owned()];
        let facts = TurnFacts::all(&records);
        let turns: Vec<SessionTurn<'_>> = facts.iter().map(view).collect();
        let (each, s) = sessions(&turns, &order, &Ends::new(), Some(&slo), Some(1800.0));
        assert_eq!(each.len(), 2);
        assert_eq!(s.slo_ok, Some(1));
        assert_eq!(s.slo_attainment_pct, Some(50.0));
        assert_eq!(s.session_goodput_per_hour, Some(2.0));
        assert_eq!(s.ended["finished"], 2);
        assert_eq!(
            (s.context_overflow_pct, s.context_overflow_flagged),
            (0.0, false)
        );
        let by_turn: Vec<(u64, usize, f64)> = s
            .ttft_by_turn
            .iter()
            .map(|r| (r.from, r.n, r.p90_ms))
            .collect();
        // "Lower" p90 of two values is the smaller one.
        assert_eq!(by_turn, [(1, 2, 100.0), (2, 1, 20.0)]);
        let by_isl: Vec<(u64, Option<u64>, usize)> =
            s.ttft_by_isl.iter().map(|r| (r.from, r.to, r.n)).collect();
        assert_eq!(
            by_isl,
            [
                (512, Some(1024), 1),
                (1024, Some(2048), 1),
                (2048, Some(4096), 1)
            ]
        );
    }
}
