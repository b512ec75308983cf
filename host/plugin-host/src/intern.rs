//! One copy of each distinct message in the process: a message a workload
//! hands over whose JSON equals one some live request already carries is
//! that message, shared. Sessions replaying the same trajectory (repeats,
//! several agents on one conversation) hold its messages once; salts change
//! only the system prompt, which the schedule replaces per session.

use super::message::Message;
#[cfg(test)]
use super::types::ChatMessage;
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, Weak};

/// The messages alive in the process, by a hash of their JSON.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    inner: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    by_hash: HashMap<u64, Vec<Weak<Message>>>,
    /// Entries (dead ones included) at which the dead are swept out next.
    sweep_at: usize,
    entries: usize,
}

/// Entries below which no sweep runs.
const MIN_SWEEP: usize = 1024;

impl Interner {
    /// The live message written as `message` is, or a new one.
    ///
    /// # Errors
    /// When a verbatim message is not a message ([`Message::verbatim`]).
    pub(crate) fn intern_wire(
        &self,
        message: &super::types::Message,
    ) -> Result<Arc<Message>, String> {
        Message::from_wire(message).map(|m| self.intern_message(m))
    }

    /// The live message written as `message` is, or a new one.
    #[cfg(test)]
    pub(crate) fn intern(&self, message: &ChatMessage) -> Arc<Message> {
        self.intern_message(Message::new(message))
    }

    /// The live message equal to `fresh`, or `fresh`, now live.
    fn intern_message(&self, fresh: Message) -> Arc<Message> {
        let hash = sampled_hash(fresh.json());
        let mut table = self.inner.lock().expect("interner lock");
        let slot = table.by_hash.entry(hash).or_default();
        if let Some(live) = slot.iter().filter_map(Weak::upgrade).find(|m| **m == fresh) {
            return live;
        }
        let fresh = Arc::new(fresh);
        slot.retain(|w| w.strong_count() > 0);
        slot.push(Arc::downgrade(&fresh));
        table.entries += 1;
        if table.entries >= table.sweep_at {
            table.sweep();
        }
        fresh
    }

    /// How many distinct messages are alive.
    #[cfg(test)]
    fn live(&self) -> usize {
        let table = self.inner.lock().expect("interner lock");
        table
            .by_hash
            .values()
            .flatten()
            .filter(|w| w.strong_count() > 0)
            .count()
    }
}

/// Bytes hashed at each end of a message: the hash costs the same for a
/// 100 KiB tool output as for a short reply; messages that agree on their
/// length and both ends are told apart by comparing them whole.
const SAMPLE: usize = 1024;

/// A hash of `json`'s length and its first and last [`SAMPLE`] bytes.
fn sampled_hash(json: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    json.len().hash(&mut h);
    if json.len() <= 2 * SAMPLE {
        json.hash(&mut h);
    } else {
        json[..SAMPLE].hash(&mut h);
        json[json.len() - SAMPLE..].hash(&mut h);
    }
    h.finish()
}

impl Table {
    /// Drops the entries of messages no request holds any more; the next
    /// sweep comes when the table has doubled (amortized O(1) per message).
    fn sweep(&mut self) {
        self.by_hash.retain(|_, slot| {
            slot.retain(|w| w.strong_count() > 0);
            !slot.is_empty()
        });
        self.entries = self.by_hash.values().map(Vec::len).sum();
        self.sweep_at = (2 * self.entries).max(MIN_SWEEP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Role;

    fn user(text: &str) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: Some(text.into()),
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    #[test]
    fn equal_messages_are_one_while_alive() {
        let interner = Interner::default();
        let a = interner.intern(&user("hello"));
        let b = interner.intern(&user("hello"));
        let c = interner.intern(&user("other"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(interner.live(), 2);
        drop((a, b));
        assert_eq!(interner.live(), 1);
        // Once dropped, the same text is a new message.
        let d = interner.intern(&user("hello"));
        assert_eq!(d.to_chat(), user("hello"));
        assert_eq!(interner.live(), 2);
    }

    #[test]
    fn long_messages_equal_at_both_ends_stay_apart() {
        let interner = Interner::default();
        let (a, b) = (
            "x".repeat(3 * SAMPLE) + "a" + &"x".repeat(3 * SAMPLE),
            "x".repeat(3 * SAMPLE) + "b" + &"x".repeat(3 * SAMPLE),
        );
        assert_eq!(
            sampled_hash(Message::new(&user(&a)).json()),
            sampled_hash(Message::new(&user(&b)).json())
        );
        let (ma, mb) = (interner.intern(&user(&a)), interner.intern(&user(&b)));
        assert!(!Arc::ptr_eq(&ma, &mb));
        assert_eq!(mb.to_chat(), user(&b));
        assert!(Arc::ptr_eq(&ma, &interner.intern(&user(&a))));
        assert!(Arc::ptr_eq(&mb, &interner.intern(&user(&b))));
    }

    #[test]
    fn dead_entries_are_swept() {
        let interner = Interner::default();
        let keep = interner.intern(&user("kept"));
        for i in 0..10 * MIN_SWEEP {
            drop(interner.intern(&user(&i.to_string())));
        }
        let table = interner.inner.lock().unwrap();
        assert!(table.entries <= 2 * MIN_SWEEP, "{} entries", table.entries);
        drop(table);
        assert!(Arc::ptr_eq(&keep, &interner.intern(&user("kept"))));
    }
}
