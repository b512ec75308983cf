//! What a phase tells the person watching: live progress (a bar on a
//! terminal, periodic lines otherwise; see [`crate::progress`]) and each
//! failed turn with its cause (the first ones in full).

use crate::progress::Progress;
use crate::{TurnRecord, TurnStatus};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Failed turns printed in full; later ones are only counted.
const FAILURES_SHOWN: usize = 20;

/// The console of one phase.
pub struct Console {
    quiet: bool,
    progress: Progress,
    failures: AtomicUsize,
}

impl Console {
    /// `planned_turns` is a lower bound when sessions can run longer than
    /// planned (multi-step tool use); `quiet` prints nothing.
    pub fn new(phase: &str, planned_turns: Option<u64>, quiet: bool) -> Self {
        Self {
            quiet,
            progress: Progress::start(phase, planned_turns, quiet),
            failures: AtomicUsize::new(0),
        }
    }

    /// The phase's live counts and TTFT histogram.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// A console that prints nothing.
    pub fn silent() -> Self {
        Self::new("", None, true)
    }

    /// One recorded turn (cheap: counters; rendering is on a timer thread).
    pub fn turn(&self, r: &TurnRecord) {
        self.progress.record(r);
        if self.quiet || r.status != TurnStatus::Failed {
            return;
        }
        let n = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
        if n <= FAILURES_SHOWN {
            agentload_console::line(&format!(
                "  turn {} #{} failed: {}",
                r.session_id,
                r.turn,
                r.error.as_deref().unwrap_or("(no cause recorded)")
            ));
        } else if n == FAILURES_SHOWN + 1 {
            agentload_console::line(
                "  (more failed turns: counted in report.txt, causes in turns.jsonl)",
            );
        }
    }

    /// The phase is over: the bar gives way to a last line.
    pub fn finish(&self) {
        self.progress.finish();
    }
}
