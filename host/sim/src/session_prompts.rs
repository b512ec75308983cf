//! Each session's last prompt and its token ends, so that a counter that reuses a shared
//! prefix ([`TokenCounter::ends_after`]) splits only what a session's next prompt adds. An
//! agent's prompt is its whole history, so splitting every prompt whole costs a session the
//! square of its length. Bounded in bytes; the least recently used session goes first.

use crate::tokens::TokenCounter;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What is kept of the sessions' prompts at most, in bytes (text and ends).
const MAX_BYTES: usize = 256 << 20;

/// A session's last prompt and where its tokens end.
struct Kept {
    text: String,
    ends: Vec<u32>,
}

impl Kept {
    fn bytes(&self) -> usize {
        self.text.len() + 4 * self.ends.len()
    }
}

#[derive(Default)]
struct Table {
    /// Session id to (last use, prompt).
    sessions: HashMap<String, (u64, Arc<Kept>)>,
    bytes: usize,
    tick: u64,
}

/// The sessions' last prompts (see the module docs).
pub(crate) struct SessionPrompts {
    table: Mutex<Table>,
    max_bytes: usize,
}

impl SessionPrompts {
    pub(crate) fn new() -> Self {
        Self::with_max_bytes(MAX_BYTES)
    }

    fn with_max_bytes(max_bytes: usize) -> Self {
        Self {
            table: Mutex::new(Table::default()),
            max_bytes,
        }
    }

    /// The token ends of `prompt`, session `session`'s new prompt, split after its last one
    /// when it is kept; `prompt` is then kept in its place.
    pub(crate) fn ends(&self, counter: &dyn TokenCounter, session: &str, prompt: &str) -> Vec<u32> {
        let earlier = self
            .table
            .lock()
            .expect("session prompts lock")
            .sessions
            .get(session)
            .map(|(_, kept)| Arc::clone(kept));
        // Split outside the lock: other sessions' requests go on meanwhile.
        let ends = match earlier {
            Some(kept) => counter.ends_after(&kept.text, &kept.ends, prompt),
            None => counter.ends(prompt, 0),
        };
        let kept = Arc::new(Kept {
            text: prompt.to_owned(),
            ends: ends.clone(),
        });
        let mut table = self.table.lock().expect("session prompts lock");
        table.tick += 1;
        let tick = table.tick;
        table.bytes += kept.bytes();
        if let Some((_, old)) = table.sessions.insert(session.to_owned(), (tick, kept)) {
            table.bytes -= old.bytes();
        }
        while table.bytes > self.max_bytes && table.sessions.len() > 1 {
            let oldest = table
                .sessions
                .iter()
                .min_by_key(|(_, (used, _))| *used)
                .map(|(id, _)| id.clone())
                .expect("more than one session");
            let (_, gone) = table.sessions.remove(&oldest).expect("just found");
            table.bytes -= gone.bytes();
        }
        ends
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::ApproxTokenCounter;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Approximate counts, and how often a split reused an earlier one.
    #[derive(Default)]
    struct Reuses {
        after: AtomicUsize,
    }

    impl TokenCounter for Reuses {
        fn count(&self, text: &str) -> u32 {
            ApproxTokenCounter.count(text)
        }

        fn split<'a>(&self, text: &'a str) -> Vec<&'a str> {
            ApproxTokenCounter.split(text)
        }

        fn ends_after(&self, earlier: &str, earlier_ends: &[u32], text: &str) -> Vec<u32> {
            self.after.fetch_add(1, Ordering::SeqCst);
            assert_eq!(
                earlier_ends,
                self.ends(earlier, 0),
                "the earlier prompt's own ends"
            );
            self.ends(text, 0)
        }

        fn reuses_prefixes(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_session_s_next_prompt_is_split_after_its_last_one() {
        let counter = Reuses::default();
        let prompts = SessionPrompts::new();
        let first = prompts.ends(&counter, "a", "You are helpful. Fix the bug");
        assert_eq!(first, counter.ends("You are helpful. Fix the bug", 0));
        assert_eq!(counter.after.load(Ordering::SeqCst), 0);
        let text = "You are helpful. Fix the bug. Done: tests pass";
        assert_eq!(prompts.ends(&counter, "a", text), counter.ends(text, 0));
        assert_eq!(counter.after.load(Ordering::SeqCst), 1);
        // Another session starts from nothing.
        prompts.ends(&counter, "b", text);
        assert_eq!(counter.after.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_least_recently_used_session_goes_when_the_bytes_run_out() {
        let counter = Reuses::default();
        let prompt = "x".repeat(100);
        let one = Kept {
            text: prompt.clone(),
            ends: counter.ends(&prompt, 0),
        }
        .bytes();
        let prompts = SessionPrompts::with_max_bytes(2 * one);
        prompts.ends(&counter, "a", &prompt);
        prompts.ends(&counter, "b", &prompt);
        prompts.ends(&counter, "a", &prompt); // "a" is used again: "b" is the oldest
        prompts.ends(&counter, "c", &prompt);
        let table = prompts.table.lock().unwrap();
        let mut kept: Vec<&str> = table.sessions.keys().map(String::as_str).collect();
        kept.sort_unstable();
        assert_eq!(kept, ["a", "c"]);
        assert_eq!(table.bytes, 2 * one);
    }
}
