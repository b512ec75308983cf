//! Per-phase, per-trajectory salts: a generated first line in front of the
//! first message, the same for every turn of a trajectory (so prefix reuse
//! within it still works) and different in every phase (so no prefix cache
//! carries over between phases).

use agentload_plugin_host::types::{ChatMessage, Role};
use agentload_plugin_host::{Message, TurnRequest};
use sha2::{Digest, Sha256};

/// The salt of trajectory `session` in phase `phase`.
pub fn salt(seed: u64, phase: usize, session: &str) -> String {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update((phase as u64).to_le_bytes());
    h.update(session.as_bytes());
    let digest = h.finalize();
    format!("[run {}]\n", hex::encode(&digest[..8]))
}

/// Puts `salt` in front of the first system message, or adds one. Only
/// this request's first message changes: the others stay shared.
pub fn apply(req: &mut TurnRequest, salt: &str) {
    match req.messages.first() {
        Some(m) if m.role() == Role::System => {
            let mut system = m.to_chat();
            let content = system.content.take().unwrap_or_default();
            system.content = Some(format!("{salt}{content}"));
            req.set_message(0, &system);
        }
        _ => req.messages.insert(
            0,
            std::sync::Arc::new(Message::new(&ChatMessage {
                role: Role::System,
                content: Some(salt.trim_end().to_owned()),
                reasoning_content: None,
                tool_calls: Vec::new(),
                tool_call_id: None,
                name: None,
            })),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salts_differ_per_phase_and_trajectory_but_not_per_turn() {
        assert_eq!(salt(42, 0, "a"), salt(42, 0, "a"));
        assert_ne!(salt(42, 0, "a"), salt(42, 1, "a"));
        assert_ne!(salt(42, 0, "a"), salt(42, 0, "b"));
        assert_ne!(salt(42, 0, "a"), salt(7, 0, "a"));
        assert!(salt(42, 0, "a").starts_with("[run ") && salt(42, 0, "a").ends_with("]\n"));
    }
}
