//! Minimal stderr logging for the CLI: progress and plugin log lines.

use std::sync::atomic::{AtomicBool, Ordering};

static VERBOSE: AtomicBool = AtomicBool::new(false);

/// Turns debug lines on or off.
pub fn set_verbose(on: bool) {
    VERBOSE.store(on, Ordering::Relaxed);
}

/// Whether debug lines are shown.
pub fn verbose() -> bool {
    VERBOSE.load(Ordering::Relaxed)
}

/// Writes one line to stderr (above the progress bar, when one is drawn).
pub fn line(message: &str) {
    crate::progress::write_line(message);
}
