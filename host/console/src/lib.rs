//! What agentload prints: log lines on stderr, drawn above a live progress
//! bar when one is shown ([`show_bar`]), and stdout that ends the program
//! quietly when its reader went away. Nothing reaches the terminal raw:
//! text from outside agentload is shown through [`escape`] / [`quote`], and
//! every line through [`printable`] (see [`quote`'s module](mod@quote)).
#![forbid(unsafe_code)]

pub mod quote;

pub use quote::{escape, printable, quote};

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

static VERBOSE: AtomicBool = AtomicBool::new(false);

/// The progress bar being drawn, if any.
static BAR: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);

/// Shows `bar` as the live progress bar (lines are drawn above it), or
/// none.
pub fn show_bar(bar: Option<indicatif::ProgressBar>) {
    *BAR.lock().expect("bar lock") = bar;
}

/// Turns debug lines on or off.
pub fn set_verbose(on: bool) {
    VERBOSE.store(on, Ordering::Relaxed);
}

/// Whether debug lines are shown.
pub fn verbose() -> bool {
    VERBOSE.load(Ordering::Relaxed)
}

/// Writes one line to stderr (above the progress bar, when one is drawn),
/// control characters other than line ends and tabs escaped ([`printable`]).
pub fn line(message: &str) {
    let message = printable(message);
    let bar = BAR.lock().expect("bar lock").clone();
    match bar {
        Some(bar) => bar.suspend(|| {
            let _ = writeln!(std::io::stderr().lock(), "{message}");
        }),
        None => {
            let _ = writeln!(std::io::stderr().lock(), "{message}");
        }
    }
}

/// Writes `text` to stdout, control characters other than line ends and
/// tabs escaped ([`printable`]). A closed stdout (`agentload ... | head -1`)
/// ends the program quietly with exit code 0, as Unix tools do; any other
/// write error is reported on stderr.
pub fn out(text: &str) {
    let text = printable(text);
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
