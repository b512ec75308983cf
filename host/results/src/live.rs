//! Live-reply replay (`history = "live"`): each turn's review, as the
//! record keeps it, and the run's divergence funnel.
//!
//! In live-reply replay the next request carries the model's own reply
//! instead of the recorded one. The workload reviews every reply against
//! the recording (one [`Divergence`] class per turn) and says what it did
//! about it ([`LiveAction`]). A live run is never official: only recorded
//! history measures what the benchmark defines.

use crate::metrics::{lower_percentile, Spread};
use crate::record::{TurnFacts, TurnStatus};
use serde::{Deserialize, Serialize};

/// How a reply departed from the recorded one; the first class that
/// applies, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Divergence {
    Error,
    Truncated,
    Empty,
    MalformedArgs,
    TextForCall,
    CallForText,
    MissingCalls,
    ExtraCalls,
    NameDiff,
    ArgsDiff,
    Match,
}

impl Divergence {
    /// Every class, in the funnel's order: `match` first, then the
    /// departures in the reverse of the order they are tried.
    pub const ALL: [Self; 11] = [
        Self::Match,
        Self::ArgsDiff,
        Self::NameDiff,
        Self::ExtraCalls,
        Self::MissingCalls,
        Self::CallForText,
        Self::TextForCall,
        Self::MalformedArgs,
        Self::Empty,
        Self::Truncated,
        Self::Error,
    ];

    /// Its name in the result files (`args_diff`...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Truncated => "truncated",
            Self::Empty => "empty",
            Self::MalformedArgs => "malformed_args",
            Self::TextForCall => "text_for_call",
            Self::CallForText => "call_for_text",
            Self::MissingCalls => "missing_calls",
            Self::ExtraCalls => "extra_calls",
            Self::NameDiff => "name_diff",
            Self::ArgsDiff => "args_diff",
            Self::Match => "match",
        }
    }
}

/// What the workload did with a reviewed reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LiveAction {
    /// The live reply went into the next request.
    Kept,
    /// The recorded message went instead (a fallback).
    Substituted,
    /// The session ended after the turn.
    Ended,
    /// The turn was recorded as failed.
    Failed,
}

/// A turn's review (`live` in `turns.jsonl`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveReview {
    pub divergence: Divergence,
    pub action: LiveAction,
    /// Recorded tool results answered to a live call (ids rewritten).
    pub paired_results: u32,
    /// Recorded tool results left without a live call, dropped.
    pub dropped_results: u32,
    /// Live calls answered with the placeholder result.
    pub placeholder_results: u32,
    /// What differed, for humans.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// A review as the turn facts keep it (one per turn in memory): the class,
/// the action and the result counts, each held to [`LiveFact::MAX_COUNT`]
/// (thousands of calls in one reply count whole); a count above it is
/// clamped and the turn flagged (`clamped`), never wrapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveFact {
    pub divergence: Divergence,
    pub action: LiveAction,
    pub paired_results: u16,
    pub dropped_results: u16,
    pub placeholder_results: u16,
    /// A count was over [`LiveFact::MAX_COUNT`] and is held to it.
    pub clamped: bool,
}

impl LiveFact {
    /// The largest count kept per turn.
    pub const MAX_COUNT: u32 = u16::MAX as u32;

    /// The fact of `review`.
    pub fn of(review: &LiveReview) -> Self {
        let counts = [
            review.paired_results,
            review.dropped_results,
            review.placeholder_results,
        ];
        let held = |n: u32| u16::try_from(n).unwrap_or(u16::MAX);
        Self {
            divergence: review.divergence,
            action: review.action,
            paired_results: held(counts[0]),
            dropped_results: held(counts[1]),
            placeholder_results: held(counts[2]),
            clamped: counts.iter().any(|&n| n > Self::MAX_COUNT),
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One class's row of the funnel.
#[derive(Debug, Clone, Serialize)]
pub struct ClassRow {
    pub class: &'static str,
    pub turns: u64,
    /// Share of the reviewed turns, %.
    pub pct: f64,
    pub kept: u64,
    pub substituted: u64,
    pub ended: u64,
    pub failed: u64,
}

/// The run's live-reply facts (`agentload.live` in `result_summary.json`).
#[derive(Debug, Clone, Serialize)]
pub struct LiveSummary {
    /// Always `live`: this block exists only for live runs.
    pub history: &'static str,
    /// Always false: a live run measures another load than the benchmark's.
    pub official: bool,
    /// Turns with a review.
    pub turns_reviewed: u64,
    /// Every class, in funnel order, with what was done about it.
    pub funnel: Vec<ClassRow>,
    /// Replies replaced by the recorded message.
    pub substitutions: u64,
    pub paired_results: u64,
    pub dropped_results: u64,
    pub placeholder_results: u64,
    /// Turns whose result counts were over [`LiveFact::MAX_COUNT`]: their
    /// counts are held to it in the sums above.
    #[serde(skip_serializing_if = "is_zero")]
    pub turns_counts_clamped: u64,
    /// Sessions with a reviewed turn, and those where some turn departed
    /// from the recording (any class but `match`).
    pub sessions: u64,
    pub sessions_diverged: u64,
    /// Sessions by the turn number of their first departure (ascending).
    pub first_divergent_turn: Vec<(u32, u64)>,
    /// Each completed turn's ISL against the recorded request's (local counts; absent
    /// without local counting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isl_drift: Option<LengthDrift>,
    /// Each completed turn's OSL against the recorded reply's (local counts; turns with a
    /// recorded reply after them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub osl_vs_expected: Option<LengthDrift>,
}

/// How per-turn lengths of a live run compare with the recording's, turn by turn.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LengthDrift {
    /// Turns with both lengths.
    pub turns: usize,
    /// Sums over those turns: the live run's and the recording's.
    pub live_tokens: u64,
    pub recorded_tokens: u64,
    /// Percentiles of live / recorded (lower; turns with a recorded length of 0 left out).
    pub ratio_p50: f64,
    pub ratio_p90: f64,
    /// Live − recorded, tokens.
    pub delta: DriftStats,
}

impl LengthDrift {
    /// The drift of (live, recorded) pairs; none without any.
    pub fn of(pairs: &[(u32, u32)]) -> Option<Self> {
        let delta = DriftStats::of(
            pairs
                .iter()
                .map(|&(live, recorded)| f64::from(live) - f64::from(recorded))
                .collect(),
        )?;
        let ratios = Spread::of(
            pairs
                .iter()
                .filter(|(_, recorded)| *recorded > 0)
                .map(|&(live, recorded)| f64::from(live) / f64::from(recorded))
                .collect(),
        );
        Some(Self {
            turns: pairs.len(),
            live_tokens: pairs.iter().map(|p| u64::from(p.0)).sum(),
            recorded_tokens: pairs.iter().map(|p| u64::from(p.1)).sum(),
            ratio_p50: ratios.as_ref().map_or(f64::NAN, |r| r.p50),
            ratio_p90: ratios.as_ref().map_or(f64::NAN, |r| r.p90),
            delta,
        })
    }

    /// One line of `report.txt`.
    fn line(&self, what: &str) -> String {
        format!(
            "  {what}: {} turns, live {} vs recorded {} tokens; live/recorded p50 {:.3} p90 {:.3}; \
             live - recorded mean {:+.1} p50 {:+.0} p90 {:+.0} (min {:+.0}, max {:+.0}); {} turns differ\n",
            self.turns,
            self.live_tokens,
            self.recorded_tokens,
            self.ratio_p50,
            self.ratio_p90,
            self.delta.mean,
            self.delta.p50,
            self.delta.p90,
            self.delta.min,
            self.delta.max,
            self.delta.changed
        )
    }
}

/// Statistics of per-turn differences (lower percentiles).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DriftStats {
    /// Pairs whose values differ.
    pub changed: usize,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub min: f64,
    pub max: f64,
}

impl DriftStats {
    /// The statistics of `d`; none when it is empty.
    pub fn of(mut d: Vec<f64>) -> Option<Self> {
        if d.is_empty() {
            return None;
        }
        d.sort_by(f64::total_cmp);
        Some(Self {
            changed: d.iter().filter(|v| **v != 0.0).count(),
            mean: d.iter().sum::<f64>() / d.len() as f64,
            p50: lower_percentile(&d, 50.0),
            p90: lower_percentile(&d, 90.0),
            min: d[0],
            max: d[d.len() - 1],
        })
    }
}

impl LiveSummary {
    /// The funnel of `records`' reviews, with their lengths against the recording's;
    /// none when no turn has a review.
    pub fn of(records: &[TurnFacts]) -> Option<Self> {
        let mut summary = Self::of_reviews(
            records
                .iter()
                .filter_map(|r| Some((&*r.session_id, r.turn, r.live?))),
        )?;
        let counted: Vec<_> = records
            .iter()
            .filter(|r| r.status == TurnStatus::Completed)
            .filter_map(|r| Some((r.local_tokens?, r.recorded_tokens?)))
            .collect();
        let isl: Vec<(u32, u32)> = counted.iter().map(|(l, r)| (l.isl, r.isl)).collect();
        let osl: Vec<(u32, u32)> = counted
            .iter()
            .filter_map(|(l, r)| Some((l.osl, r.osl?)))
            .collect();
        summary.isl_drift = LengthDrift::of(&isl);
        summary.osl_vs_expected = LengthDrift::of(&osl);
        Some(summary)
    }

    /// The funnel of reviews given as (session, turn, review); none when
    /// there is none.
    pub fn of_reviews<S: std::hash::Hash + Eq + Copy>(
        reviews: impl IntoIterator<Item = (S, u32, LiveFact)>,
    ) -> Option<Self> {
        use std::collections::{BTreeMap, HashMap, HashSet};
        let reviewed: Vec<(S, u32, LiveFact)> = reviews.into_iter().collect();
        if reviewed.is_empty() {
            return None;
        }
        let total = reviewed.len() as u64;
        let mut rows: Vec<ClassRow> = Divergence::ALL
            .iter()
            .map(|d| ClassRow {
                class: d.name(),
                turns: 0,
                pct: 0.0,
                kept: 0,
                substituted: 0,
                ended: 0,
                failed: 0,
            })
            .collect();
        let mut first: HashMap<S, u32> = HashMap::new();
        let mut sessions: HashSet<S> = HashSet::new();
        let (mut paired, mut dropped, mut placeholders, mut clamped) = (0, 0, 0, 0);
        for &(session, turn, review) in &reviewed {
            let index = Divergence::ALL
                .iter()
                .position(|d| *d == review.divergence)
                .expect("every class is in ALL");
            let row = &mut rows[index];
            row.turns += 1;
            match review.action {
                LiveAction::Kept => row.kept += 1,
                LiveAction::Substituted => row.substituted += 1,
                LiveAction::Ended => row.ended += 1,
                LiveAction::Failed => row.failed += 1,
            }
            paired += u64::from(review.paired_results);
            dropped += u64::from(review.dropped_results);
            placeholders += u64::from(review.placeholder_results);
            clamped += u64::from(review.clamped);
            sessions.insert(session);
            if review.divergence != Divergence::Match {
                let at = first.entry(session).or_insert(turn);
                *at = (*at).min(turn);
            }
        }
        for row in &mut rows {
            row.pct = 100.0 * row.turns as f64 / total as f64;
        }
        let mut by_turn: BTreeMap<u32, u64> = BTreeMap::new();
        for turn in first.values() {
            *by_turn.entry(*turn).or_insert(0) += 1;
        }
        Some(Self {
            history: "live",
            official: false,
            turns_reviewed: total,
            substitutions: rows.iter().map(|r| r.substituted).sum(),
            funnel: rows,
            paired_results: paired,
            dropped_results: dropped,
            placeholder_results: placeholders,
            turns_counts_clamped: clamped,
            sessions: sessions.len() as u64,
            sessions_diverged: first.len() as u64,
            first_divergent_turn: by_turn.into_iter().collect(),
            isl_drift: None,
            osl_vs_expected: None,
        })
    }

    /// `report.txt`'s lines.
    pub fn report_lines(&self) -> String {
        let mut text = format!(
            "NON-OFFICIAL: live-reply replay (history = \"live\"): requests carry the model's own \
             replies, not the recording\nlive replies: {} turns reviewed; {} of {} sessions \
             departed from the recording; {} replies substituted by the recorded message; tool \
             results {} paired, {} dropped, {} placeholders\n",
            self.turns_reviewed,
            self.sessions_diverged,
            self.sessions,
            self.substitutions,
            self.paired_results,
            self.dropped_results,
            self.placeholder_results
        );
        if self.turns_counts_clamped > 0 {
            text.push_str(&format!(
                "flagged: {} turns had more than {} tool results of a kind; their counts are \
                 held to it in the sums above\n",
                self.turns_counts_clamped,
                LiveFact::MAX_COUNT
            ));
        }
        for row in self.funnel.iter().filter(|r| r.turns > 0) {
            text.push_str(&format!(
                "  {:<15} {:>7} turns ({:5.1} %)  kept {}  substituted {}  ended {}  failed {}\n",
                row.class, row.turns, row.pct, row.kept, row.substituted, row.ended, row.failed
            ));
        }
        if let Some(d) = &self.isl_drift {
            text.push_str(&d.line("ISL against the recorded request"));
        }
        if let Some(d) = &self.osl_vs_expected {
            text.push_str(&d.line("OSL against the recorded reply"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::TurnStatus;
    use crate::TurnRecord;

    fn record(session: &str, turn: u32, divergence: Divergence, action: LiveAction) -> TurnRecord {
        let mut r = TurnRecord::aborted(session, turn, "i", "{}");
        r.status = TurnStatus::Completed;
        r.live = Some(Box::new(LiveReview {
            divergence,
            action,
            paired_results: 1,
            dropped_results: u32::from(action == LiveAction::Kept),
            placeholder_results: 0,
            detail: String::new(),
        }));
        r
    }

    #[test]
    fn the_funnel_counts_classes_actions_and_first_departures() {
        use Divergence::*;
        use LiveAction::*;
        let records = vec![
            record("a", 1, Match, Kept),
            record("a", 3, ArgsDiff, Kept),
            record("a", 5, TextForCall, Substituted),
            record("b", 1, Match, Kept),
            record("b", 3, Match, Kept),
            record("c", 1, MalformedArgs, Ended),
            TurnRecord::aborted("d", 1, "i", "{}"),
        ];
        let s = LiveSummary::of(&TurnFacts::all(&records)).unwrap();
        assert_eq!(
            (s.turns_reviewed, s.sessions, s.sessions_diverged),
            (6, 3, 2)
        );
        let row = |c: &str| s.funnel.iter().find(|r| r.class == c).unwrap().clone();
        assert_eq!(row("match").turns, 3);
        assert_eq!(row("match").pct, 50.0);
        assert_eq!(
            (row("text_for_call").turns, row("text_for_call").substituted),
            (1, 1)
        );
        assert_eq!(row("malformed_args").ended, 1);
        assert_eq!(row("error").turns, 0);
        assert_eq!(s.substitutions, 1);
        assert_eq!((s.paired_results, s.dropped_results), (6, 4));
        // a departs at turn 3, c at turn 1; b never.
        assert_eq!(s.first_divergent_turn, vec![(1, 1), (3, 1)]);
        assert_eq!(s.funnel[0].class, "match");
        assert!(s
            .report_lines()
            .starts_with("NON-OFFICIAL: live-reply replay"));
        assert!(LiveSummary::of(&TurnFacts::all(&records[6..])).is_none());
    }

    #[test]
    fn result_counts_over_a_byte_are_summed_whole_and_over_the_bound_clamped_and_flagged() {
        let mut r = record("a", 1, Divergence::ExtraCalls, LiveAction::Kept);
        r.live.as_mut().unwrap().placeholder_results = 5_000;
        let twice = [r.clone(), r.clone()];
        let s = LiveSummary::of(&TurnFacts::all(&twice)).unwrap();
        assert_eq!(s.placeholder_results, 10_000);
        assert_eq!(s.turns_counts_clamped, 0);
        assert!(s.report_lines().contains("10000 placeholders"));
        assert!(!s.report_lines().contains("flagged"));
        // Past the bound: held to it (never wrapped), and said.
        let review = r.live.as_mut().unwrap();
        review.paired_results = 70_000;
        review.dropped_results = u32::MAX;
        let s = LiveSummary::of(&TurnFacts::all(&[r.clone(), r])).unwrap();
        assert_eq!(s.paired_results, 2 * 65_535);
        assert_eq!(s.dropped_results, 2 * 65_535);
        assert_eq!(s.placeholder_results, 10_000);
        assert_eq!(s.turns_counts_clamped, 2);
        let text = s.report_lines();
        assert!(
            text.contains("flagged: 2 turns had more than 65535 tool results"),
            "{text}"
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["turns_counts_clamped"], 2);
    }

    #[test]
    fn names_are_the_serde_names() {
        for d in Divergence::ALL {
            assert_eq!(serde_json::to_value(d).unwrap(), d.name());
        }
    }

    #[test]
    fn length_drift_is_of_the_per_turn_pairs() {
        // Live against recorded: equal, +10 %, +50 %, -1 token, and a recorded 0.
        let d = LengthDrift::of(&[(100, 100), (110, 100), (30, 20), (9, 10), (4, 0)]).unwrap();
        assert_eq!(d.turns, 5);
        assert_eq!((d.live_tokens, d.recorded_tokens), (253, 230));
        // Ratios 0.9, 1.0, 1.1, 1.5 (the 0 left out): lower p50 1.0, lower p90 1.1.
        assert_eq!((d.ratio_p50, d.ratio_p90), (1.0, 1.1));
        assert_eq!(d.delta.changed, 4);
        assert_eq!((d.delta.min, d.delta.max), (-1.0, 10.0));
        assert_eq!(d.delta.mean, (0.0 + 10.0 + 10.0 - 1.0 + 4.0) / 5.0);
        assert!(LengthDrift::of(&[]).is_none());
        let text = d.line("ISL");
        assert!(text.contains("5 turns, live 253 vs recorded 230"), "{text}");
    }
}
