//! The reference's performance window (`STOP_PERFORMANCE_TRACKING`): with
//! `c` slots refilled as sessions end and a budget of `B` instances,
//! tracking stops at the first session end after every instance has
//! started. Instance `k ≥ c` starts when the `(k − c + 1)`-th session ends,
//! so the last one starts at the `(B − c)`-th end and the window closes at
//! the `(max(B − c, 0) + 1)`-th. A turn counts in the performance metrics
//! when it was issued before that; the tail (turns issued after it) is
//! still sent, journalled and scored. At concurrency 1 the window closes at
//! the last session's end: every turn counts.

use crate::record::{TurnFacts, TurnStatus};
use serde::Serialize;
use std::collections::BTreeMap;

/// The window of one phase (`agentload.tracking` in `result_summary.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tracking {
    /// Sessions planned (the instance budget) and the slots they share.
    pub instances: usize,
    pub concurrency: usize,
    /// When tracking stopped, ns on the phase's clock; none: at the
    /// phase's end (every turn counts).
    pub stop_ns: Option<u64>,
    /// Issued turns counted, and issued after the stop (the tail).
    pub tracked: usize,
    pub tail: usize,
    /// When each failed session failed (its failed turn's completion): the
    /// moment the reference issues the skipped rest of it.
    #[serde(skip)]
    failed_at: BTreeMap<String, u64>,
}

/// The window of `records` (one process's: a resumed run's processes each
/// refilled their own slots, so a run of several counts every turn).
pub fn window(records: &[TurnFacts], instances: usize, concurrency: usize) -> Tracking {
    let one_process = records.windows(2).all(|w| w[0].segment == w[1].segment);
    let mut ends: BTreeMap<&str, u64> = BTreeMap::new();
    for r in records {
        if let Some(end) = r.complete_ns().filter(|_| r.issued_ns().is_some()) {
            let e = ends.entry(&*r.session_id).or_insert(end);
            *e = (*e).max(end);
        }
    }
    let failed_at: BTreeMap<String, u64> = records
        .iter()
        .filter(|r| r.status == TurnStatus::Failed)
        .filter_map(|r| Some((r.session_id.to_string(), r.complete_ns()?)))
        .collect();
    let mut ends: Vec<u64> = ends.into_values().collect();
    ends.sort_unstable();
    let slots = concurrency.clamp(1, instances.max(1));
    let nth = instances.saturating_sub(slots) + 1;
    let stop_ns = ends.get(nth - 1).copied().filter(|_| one_process);
    let tail = records
        .iter()
        .filter(|r| stop_ns.is_some_and(|s| r.issued_ns().is_some_and(|i| i >= s)))
        .count();
    let issued = records.iter().filter(|r| r.issued_ns().is_some()).count();
    Tracking {
        instances,
        concurrency: slots,
        stop_ns,
        tracked: issued - tail,
        tail,
        failed_at,
    }
}

impl Tracking {
    /// Whether `record` counts in the performance metrics. A turn skipped
    /// after its session failed counts when the failure came no later than
    /// the stop: the reference issues the skipped turns as the failure ends
    /// the session, before that end can stop tracking.
    pub fn counts(&self, record: &TurnFacts) -> bool {
        let Some(stop) = self.stop_ns else {
            return true;
        };
        match record.issued_ns() {
            Some(issued) => issued < stop,
            None => self
                .failed_at
                .get(&*record.session_id)
                .is_none_or(|&failed| failed <= stop),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::TurnStatus;
    use crate::TurnRecord;

    fn turn(session: &str, issued: u64, complete: u64) -> TurnRecord {
        let mut r = TurnRecord::aborted(session, 1, "i", "");
        r.status = TurnStatus::Completed;
        r.issued_ns = Some(issued);
        r.complete_ns = Some(complete);
        r
    }

    /// Five sessions on two slots, ending at 10, 20, 30, 40 and 50: the
    /// fifth starts at the third end (30), so tracking stops at the fourth
    /// (40); the turns issued from 40 on are the tail.
    #[test]
    fn the_window_closes_at_the_first_end_after_the_last_start() {
        let records = TurnFacts::all(&[
            turn("a", 0, 10),
            turn("b", 0, 20),
            turn("c", 10, 30),
            turn("d", 20, 35),
            turn("d", 36, 40),
            turn("e", 30, 41),
            turn("e", 41, 50),
        ]);
        let t = window(&records, 5, 2);
        assert_eq!(t.stop_ns, Some(40));
        assert_eq!((t.tracked, t.tail), (6, 1));
        assert!(!t.counts(&records[6]) && t.counts(&records[5]));
        // One slot: the window closes at the last end, every turn counts.
        let one = window(&records, 5, 1);
        assert_eq!((one.stop_ns, one.tail), (Some(50), 0));
        // More slots than sessions: every session starts at once, and the
        // first end closes the window.
        assert_eq!(window(&records, 5, 8).stop_ns, Some(10));
        // Fewer sessions ended than the window needs (a cut phase): no stop.
        assert_eq!(window(&records[..2], 5, 2).stop_ns, None);
    }

    /// The rest of a session that failed counts when the failure came by
    /// the stop (the STOP-triggering failure included), not after it.
    #[test]
    fn skipped_turns_count_with_their_failure() {
        let mut early = turn("a", 0, 10);
        early.status = TurnStatus::Failed;
        let mut late = turn("c", 35, 45);
        late.status = TurnStatus::Failed;
        let records = TurnFacts::all(&[
            early,
            TurnRecord::aborted("a", 2, "a:2", ""),
            turn("b", 0, 40),
            late,
            TurnRecord::aborted("c", 2, "c:2", ""),
        ]);
        // Three sessions on two slots: the window closes at the second end, 40.
        let t = window(&records, 3, 2);
        assert_eq!(t.stop_ns, Some(40));
        assert!(t.counts(&records[1]), "failed at 10, by the stop");
        assert!(t.counts(&records[3]), "the failed turn was issued at 35");
        assert!(
            !t.counts(&records[4]),
            "its session failed at 45, after the stop"
        );
    }

    #[test]
    fn a_resumed_run_counts_every_turn() {
        let mut records = TurnFacts::all(&[turn("a", 0, 10), turn("b", 0, 20), turn("c", 10, 30)]);
        records[2].segment = 1;
        let t = window(&records, 3, 2);
        assert_eq!((t.stop_ns, t.tracked, t.tail), (None, 3, 0));
    }
}
