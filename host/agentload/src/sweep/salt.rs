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
        Some(m) if m.role() == Role::System => match m.with_content_prefix(salt) {
            Some(salted) => req.messages[0] = std::sync::Arc::new(salted),
            None => {
                let mut system = m.to_chat();
                system.content = Some(salt.to_owned());
                req.set_message(0, &system);
            }
        },
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

    fn message(role: Role, content: Option<&str>) -> ChatMessage {
        ChatMessage {
            role,
            content: content.map(str::to_owned),
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    /// The salt goes in front of the system prompt (or is one); the other messages stay
    /// the shared ones.
    #[test]
    fn the_salt_leads_the_system_prompt_and_nothing_else_changes() {
        let s = salt(42, 0, "a");
        let mut req = TurnRequest::new(
            "a",
            1,
            vec![
                message(Role::System, Some("You are \"terse\".")),
                message(Role::User, Some("hi")),
            ],
        );
        let user = req.messages[1].clone();
        apply(&mut req, &s);
        let system = req.messages[0].to_chat();
        assert_eq!(system.content, Some(format!("{s}You are \"terse\".")));
        assert_eq!(req.messages[0].json(), Message::new(&system).json());
        assert!(std::sync::Arc::ptr_eq(&req.messages[1], &user));

        let mut bare = TurnRequest::new("a", 1, vec![message(Role::System, None)]);
        apply(&mut bare, &s);
        assert_eq!(bare.messages[0].to_chat().content.as_deref(), Some(&*s));

        let mut none = TurnRequest::new("a", 1, vec![message(Role::User, Some("hi"))]);
        apply(&mut none, &s);
        assert_eq!(none.messages.len(), 2);
        assert_eq!(none.messages[0].role(), Role::System);
        assert_eq!(
            none.messages[0].to_chat().content.as_deref(),
            Some(s.trim_end())
        );
    }
}
