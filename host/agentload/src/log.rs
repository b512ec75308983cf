//! Minimal stderr logging for the CLI: progress and plugin log lines.

use std::io::Write;
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

/// Writes `text` to stdout. A closed stdout (`agentload ... | head -1`)
/// ends the program quietly with exit code 0, as Unix tools do; any other
/// write error is reported on stderr.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        line(&format!("error: cannot write to stdout: {e}"));
    }
}
