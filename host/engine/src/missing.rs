//! Missing turns, counted per session (the reference's `missing`).

use crate::{TurnFacts, TurnStatus};
use agentload_plugin_host::SessionPlan;
use std::collections::HashMap;

/// Expected turns that did not complete, summed over the planned sessions.
/// Each session counts the planned turns it did not complete, or the turns
/// it recorded as failed or aborted, whichever is more (a session's
/// `expected_turns` is a lower bound when its length depends on the model,
/// as in bfcl-multi's one request per step). A session never issued counts
/// all its turns: no other session's extra turns can hide it.
pub fn missing_turns(plans: &[SessionPlan], turns: &[TurnFacts]) -> u64 {
    let mut per: HashMap<&str, (u64, u64)> = HashMap::new();
    for r in turns {
        let (completed, unanswered) = per.entry(&r.session_id).or_default();
        match r.status {
            TurnStatus::Completed => *completed += 1,
            TurnStatus::Failed | TurnStatus::Aborted => *unanswered += 1,
            TurnStatus::Interrupted => {}
        }
    }
    plans
        .iter()
        .map(|p| {
            let (completed, unanswered) = per.get(p.id.as_str()).copied().unwrap_or_default();
            u64::from(p.expected_turns)
                .saturating_sub(completed)
                .max(unanswered)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(id: &str, turns: u32) -> SessionPlan {
        SessionPlan {
            id: id.into(),
            expected_turns: turns,
            workspace: None,
        }
    }

    fn rec(session: &str, status: TurnStatus) -> TurnFacts {
        let mut r = crate::TurnRecord::aborted(session, 1, "x", "{}");
        r.status = status;
        TurnFacts::all([&r]).remove(0)
    }

    #[test]
    fn extra_turns_of_one_session_do_not_hide_another_never_issued() {
        let plans = [plan("a", 2), plan("b", 2)];
        let records: Vec<_> = (0..4).map(|_| rec("a", TurnStatus::Completed)).collect();
        assert_eq!(missing_turns(&plans, &records), 2);
    }

    #[test]
    fn failed_and_aborted_turns_count_even_past_the_plan() {
        let plans = [plan("a", 2)];
        let records = vec![
            rec("a", TurnStatus::Completed),
            rec("a", TurnStatus::Completed),
            rec("a", TurnStatus::Failed),
            rec("a", TurnStatus::Aborted),
        ];
        assert_eq!(missing_turns(&plans, &records), 2);
        let cut = vec![
            rec("a", TurnStatus::Completed),
            rec("a", TurnStatus::Interrupted),
        ];
        assert_eq!(missing_turns(&plans, &cut), 1);
    }

    #[test]
    fn a_closed_loop_session_is_whole_when_it_ends_by_its_own_rule() {
        // Planned with one expected turn (the recording's first request).
        let plans = [plan("a", 1), plan("b", 1), plan("c", 1)];
        let records = vec![
            rec("a", TurnStatus::Completed),
            rec("a", TurnStatus::Completed),
            rec("b", TurnStatus::Completed),
            rec("b", TurnStatus::Failed),
        ];
        // a: shorter than its recording, whole; b: one turn failed (or not
        // sent); c: never issued.
        assert_eq!(missing_turns(&plans, &records), 2);
        let recorded = [plan("a", 30), plan("b", 30), plan("c", 30)];
        assert_eq!(missing_turns(&recorded, &records), 28 + 29 + 30);
    }
}
