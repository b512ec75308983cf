//! What a phase tells the person watching: a progress line every so many
//! turns, and each failed turn with its cause (the first ones in full).

use super::record::{TurnRecord, TurnStatus};
use crate::metrics::LiveStats;
use std::sync::Mutex;
use std::time::Instant;

/// Failed turns printed in full; later ones are only counted.
const FAILURES_SHOWN: usize = 20;

/// The console of one phase.
pub struct Console {
    quiet: bool,
    progress_every: usize,
    planned_turns: usize,
    started: Instant,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    turns: usize,
    unanswered: usize,
    failures: usize,
    live: LiveStats,
}

impl Console {
    /// `planned_turns` is a lower bound when sessions can run longer than
    /// planned (multi-step tool use); `quiet` prints nothing.
    pub fn new(planned_turns: usize, progress_every: usize, quiet: bool) -> Self {
        Self {
            quiet,
            progress_every,
            planned_turns,
            started: Instant::now(),
            state: Mutex::default(),
        }
    }

    /// A console that prints nothing.
    pub fn silent() -> Self {
        Self::new(0, 0, true)
    }

    /// One recorded turn.
    pub fn turn(&self, r: &TurnRecord) {
        let mut s = self.state.lock().expect("console lock");
        s.turns += 1;
        if r.status != TurnStatus::Completed {
            s.unanswered += 1;
        }
        if let (Some(first), Some(issued), Some(done)) =
            (r.first_token_ns, r.issued_ns, r.complete_ns)
        {
            s.live.record(first - issued, done - issued);
        }
        if self.quiet {
            return;
        }
        if r.status == TurnStatus::Failed {
            s.failures += 1;
            if s.failures <= FAILURES_SHOWN {
                crate::log::line(&format!(
                    "  turn {} #{} failed: {}",
                    r.session_id,
                    r.turn,
                    r.error.as_deref().unwrap_or("(no cause recorded)")
                ));
            } else if s.failures == FAILURES_SHOWN + 1 {
                crate::log::line(
                    "  (more failed turns: counted in report.txt, causes in turns.jsonl)",
                );
            }
        }
        let n = s.turns;
        if self.progress_every > 0
            && (n.is_multiple_of(self.progress_every) || n == self.planned_turns)
        {
            let of = if n <= self.planned_turns {
                format!("{n}/{}", self.planned_turns)
            } else {
                format!("{n} (at least {} planned)", self.planned_turns)
            };
            crate::log::line(&format!(
                "  {of} turns, {} failed or missing, {:.1} s; {}",
                s.unanswered,
                self.started.elapsed().as_secs_f64(),
                s.live.line()
            ));
        }
    }
}
