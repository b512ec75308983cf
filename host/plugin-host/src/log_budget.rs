//! How much a plugin may write through `host.log`: lines and bytes per call,
//! bytes over the plugin's life (all its instances together), and a cap on
//! one line. What is over a limit is dropped and counted; at the end of the
//! call one note says how much was dropped and which limit dropped it.

use agentload_config::Limits;
use std::sync::{Arc, Mutex};

/// The longest line written; a longer one is cut and says so.
pub const LINE_BYTES: usize = 8 * 1024;

/// One plugin's `host.log` budget, shared by all its stores.
#[derive(Debug, Clone)]
pub struct LogBudget {
    state: Arc<Mutex<State>>,
    lines_per_call: u64,
    bytes_per_call: u64,
    bytes_per_plugin: u64,
}

#[derive(Debug, Default)]
struct State {
    call_lines: u64,
    call_bytes: u64,
    plugin_bytes: u64,
    dropped_lines: u64,
    dropped_bytes: u64,
    /// The limit that dropped the call's first dropped line.
    dropped_by: Option<&'static str>,
}

/// What to do with one log message.
#[derive(Debug, PartialEq, Eq)]
pub enum Admit {
    /// Write this text (the message, cut to [`LINE_BYTES`] if longer).
    Write(String),
    /// Over a limit: counted, not written.
    Drop,
}

impl LogBudget {
    /// A fresh budget under `limits`.
    pub fn new(limits: &Limits) -> Self {
        Self {
            state: Arc::default(),
            lines_per_call: limits.log_lines_per_call,
            bytes_per_call: limits.log_bytes_per_call,
            bytes_per_plugin: limits.log_bytes_per_plugin,
        }
    }

    /// Starts counting a new call.
    pub fn begin_call(&self) {
        let mut s = self.lock();
        s.call_lines = 0;
        s.call_bytes = 0;
        s.dropped_lines = 0;
        s.dropped_bytes = 0;
        s.dropped_by = None;
    }

    /// Whether `message` may be written, and as what.
    pub fn admit(&self, message: &str) -> Admit {
        let mut s = self.lock();
        let bytes = message.len() as u64;
        let over = if s.call_lines >= self.lines_per_call {
            Some("log_lines_per_call")
        } else if s.call_bytes.saturating_add(bytes) > self.bytes_per_call {
            Some("log_bytes_per_call")
        } else if s.plugin_bytes.saturating_add(bytes) > self.bytes_per_plugin {
            Some("log_bytes_per_plugin")
        } else {
            None
        };
        if let Some(limit) = over {
            s.dropped_lines += 1;
            s.dropped_bytes = s.dropped_bytes.saturating_add(bytes);
            s.dropped_by.get_or_insert(limit);
            return Admit::Drop;
        }
        s.call_lines += 1;
        s.call_bytes += bytes;
        s.plugin_bytes += bytes;
        Admit::Write(cut(message))
    }

    /// The note for the call that just ended, when lines were dropped.
    pub fn end_call(&self, call: &str) -> Option<String> {
        let s = self.lock();
        let limit = s.dropped_by?;
        let value = match limit {
            "log_lines_per_call" => self.lines_per_call,
            "log_bytes_per_call" => self.bytes_per_call,
            _ => self.bytes_per_plugin,
        };
        Some(format!(
            "note: `{call}` logged {} more lines ({} bytes) that were dropped: over \
             plugins.limits.{limit} = {value}",
            s.dropped_lines, s.dropped_bytes
        ))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves only counters behind.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `message`, cut at a character boundary to [`LINE_BYTES`], with a marker.
fn cut(message: &str) -> String {
    if message.len() <= LINE_BYTES {
        return message.to_string();
    }
    let mut end = LINE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… [{} bytes cut: lines are at most {LINE_BYTES} bytes]",
        &message[..end],
        message.len() - end
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(lines: u64, call: u64, plugin: u64) -> LogBudget {
        LogBudget::new(&Limits {
            log_lines_per_call: lines,
            log_bytes_per_call: call,
            log_bytes_per_plugin: plugin,
            ..Limits::default()
        })
    }

    #[test]
    fn lines_per_call_are_capped_and_the_note_counts_the_rest() {
        let b = budget(3, 1 << 20, 1 << 20);
        b.begin_call();
        let written = (0..10)
            .filter(|i| matches!(b.admit(&format!("line {i}")), Admit::Write(_)))
            .count();
        assert_eq!(written, 3);
        let note = b.end_call("configure").unwrap();
        assert!(
            note.contains("`configure` logged 7 more lines (42 bytes)"),
            "{note}"
        );
        assert!(
            note.contains("plugins.limits.log_lines_per_call = 3"),
            "{note}"
        );
        // The next call starts afresh.
        b.begin_call();
        assert!(matches!(b.admit("again"), Admit::Write(_)));
        assert_eq!(b.end_call("next-turn"), None);
    }

    #[test]
    fn bytes_per_call_and_per_plugin_are_capped() {
        let b = budget(100, 10, 15);
        b.begin_call();
        assert!(matches!(b.admit("12345678"), Admit::Write(_)));
        assert_eq!(b.admit("123"), Admit::Drop);
        assert!(b.end_call("c").unwrap().contains("log_bytes_per_call = 10"));
        // A clone is the same plugin: its stores share the budget.
        let other = b.clone();
        other.begin_call();
        assert!(matches!(other.admit("1234567"), Admit::Write(_)));
        assert_eq!(other.admit("1"), Admit::Drop);
        assert!(b
            .end_call("c")
            .unwrap()
            .contains("log_bytes_per_plugin = 15"));
    }

    #[test]
    fn a_long_line_is_cut_at_a_char_boundary() {
        let b = budget(10, 1 << 20, 1 << 20);
        let long = "é".repeat(LINE_BYTES);
        let Admit::Write(text) = b.admit(&long) else {
            panic!("dropped")
        };
        assert!(text.len() < LINE_BYTES + 100);
        assert!(text.contains(&format!("{} bytes cut", long.len() - LINE_BYTES)));
    }
}
