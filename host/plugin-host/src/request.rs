//! A session's request as the host holds it: the whole history, assembled
//! from what each turn carries across the boundary (`keep` messages of the
//! previous request, then the new ones). Messages are written once and
//! shared (`Arc`) between a session's requests and, through the
//! interner (`intern.rs`), between sessions: a turn costs what it adds, not its
//! history.

use super::intern::Interner;
use super::message::Message;
use super::types::{self, ChatMessage, Sampling};
use std::sync::Arc;

/// One request of a session, as the host sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRequest {
    /// Sent as the `X-Session-ID` header.
    pub session_id: String,
    /// The workload's turn number within the session.
    pub turn: u32,
    /// Key under which the scorer reports this turn's verdict.
    pub item_id: String,
    /// Every message of the request, shared with the session's other
    /// requests (and other sessions' equal messages).
    pub messages: Vec<Arc<Message>>,
    /// JSON array of OpenAI tool definitions; `None` sends no `tools` key.
    pub tools_json: Option<Arc<str>>,
    pub sampling: Sampling,
    /// Wait this long (host clock) before sending.
    pub delay_ms: u64,
    /// Opaque JSON the scorer receives with the completion.
    pub expected_json: String,
}

impl TurnRequest {
    /// A request of exactly these messages (for tests and tools that make
    /// requests themselves).
    pub fn new(session_id: &str, turn: u32, messages: Vec<ChatMessage>) -> Self {
        Self {
            session_id: session_id.into(),
            turn,
            item_id: format!("{session_id}:{turn}"),
            messages: messages.iter().map(|m| Arc::new(Message::new(m))).collect(),
            tools_json: None,
            sampling: Sampling {
                temperature: None,
                top_p: None,
                top_k: None,
                seed: None,
                max_completion_tokens: None,
                tool_choice_json: None,
                max_tokens: None,
                min_p: None,
                ignore_eos: None,
                reasoning_effort: None,
            },
            delay_ms: 0,
            expected_json: "{}".into(),
        }
    }

    /// Replaces message `index` (of this request only: the others that
    /// share it keep theirs).
    pub fn set_message(&mut self, index: usize, message: &ChatMessage) {
        self.messages[index] = Arc::new(Message::new(message));
    }

    /// The bytes of its text fields, its messages as JSON (what the host
    /// sends and logs).
    pub fn text_bytes(&self) -> usize {
        self.session_id.len()
            + self.item_id.len()
            + self.messages.iter().map(|m| m.json().len()).sum::<usize>()
            + self.tools_json.as_deref().map_or(0, str::len)
            + opt(&self.sampling.tool_choice_json)
            + opt(&self.sampling.reasoning_effort)
            + self.expected_json.len()
    }
}

fn opt(s: &Option<String>) -> usize {
    s.as_ref().map_or(0, String::len)
}

/// The bytes of a message's text fields (a verbatim one's JSON).
fn message_bytes(m: &types::Message) -> usize {
    match m {
        types::Message::Chat(m) => chat_bytes(m),
        types::Message::Json(text) => text.len(),
    }
}

/// The bytes of a typed message's text fields.
fn chat_bytes(m: &ChatMessage) -> usize {
    opt(&m.content)
        + opt(&m.reasoning_content)
        + opt(&m.tool_call_id)
        + opt(&m.name)
        + m.tool_calls
            .iter()
            .map(|c| c.id.len() + c.name.len() + c.arguments.len())
            .sum::<usize>()
}

/// The bytes a turn carried across the boundary.
pub(crate) fn wire_bytes(r: &types::TurnRequest) -> usize {
    r.session_id.len()
        + r.item_id.len()
        + r.messages.iter().map(message_bytes).sum::<usize>()
        + opt(&r.tools_json)
        + opt(&r.sampling.tool_choice_json)
        + opt(&r.sampling.reasoning_effort)
        + r.expected_json.len()
}

/// The request a turn describes: the first `keep` messages of `previous`
/// (the session's previous request; none for its first), then the turn's
/// own, each one the live message of equal JSON when there is one
/// (`interner`). A turn that keeps nothing but repeats the previous
/// request's messages (every 0.1.0 plugin's turn) shares them that way.
///
/// # Errors
/// When the turn keeps more messages than `previous` had, or a verbatim
/// message is not a message.
pub(crate) fn assemble(
    previous: Option<&TurnRequest>,
    wire: types::TurnRequest,
    interner: &Interner,
) -> Result<TurnRequest, String> {
    let had = previous.map_or(0, |p| p.messages.len());
    let keep = wire.keep as usize;
    if keep > had {
        return Err(match previous {
            None => format!("a session's first turn keeps {keep} messages (it must keep 0)"),
            Some(_) => format!(
                "turn {} keeps {keep} messages of a previous request that had {had}",
                wire.turn
            ),
        });
    }
    let mut messages = Vec::with_capacity(keep + wire.messages.len());
    if let Some(previous) = previous {
        messages.extend(previous.messages[..keep].iter().cloned());
    }
    for (i, m) in wire.messages.iter().enumerate() {
        let m = interner
            .intern_wire(m)
            .map_err(|why| format!("turn {} message {}: {why}", wire.turn, keep + i + 1))?;
        messages.push(m);
    }
    let tools_json = match (
        previous.and_then(|p| p.tools_json.as_ref()),
        wire.tools_json,
    ) {
        (Some(old), Some(new)) if **old == *new => Some(Arc::clone(old)),
        (_, new) => new.map(Arc::from),
    };
    Ok(TurnRequest {
        session_id: wire.session_id,
        turn: wire.turn,
        item_id: wire.item_id,
        messages,
        tools_json,
        sampling: wire.sampling,
        delay_ms: wire.delay_ms,
        expected_json: wire.expected_json,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use types::Role;

    fn msg(role: Role, text: &str) -> ChatMessage {
        ChatMessage {
            role,
            content: Some(text.into()),
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    fn wire(session: &str, turn: u32, keep: u32, messages: Vec<ChatMessage>) -> types::TurnRequest {
        let r = TurnRequest::new(session, turn, Vec::new());
        types::TurnRequest {
            session_id: r.session_id,
            turn,
            item_id: r.item_id,
            keep,
            messages: messages.into_iter().map(types::Message::Chat).collect(),
            tools_json: Some("[]".into()),
            sampling: r.sampling,
            delay_ms: 0,
            expected_json: r.expected_json,
        }
    }

    fn texts(r: &TurnRequest) -> Vec<String> {
        r.messages
            .iter()
            .map(|m| m.to_chat().content.unwrap())
            .collect()
    }

    #[test]
    fn a_turn_keeps_the_previous_messages_shared() {
        let interner = Interner::default();
        let start = vec![msg(Role::System, "sys"), msg(Role::User, "u1")];
        let first = assemble(None, wire("s", 1, 0, start), &interner).unwrap();
        let next = vec![msg(Role::Assistant, "a1"), msg(Role::User, "u2")];
        let second = assemble(Some(&first), wire("s", 2, 2, next), &interner).unwrap();
        assert_eq!(texts(&second), ["sys", "u1", "a1", "u2"]);
        assert!(Arc::ptr_eq(&first.messages[0], &second.messages[0]));
        assert!(Arc::ptr_eq(&first.messages[1], &second.messages[1]));
        assert!(Arc::ptr_eq(
            first.tools_json.as_ref().unwrap(),
            second.tools_json.as_ref().unwrap()
        ));
        // Keeping fewer drops the rest, in order.
        let third = assemble(
            Some(&second),
            wire("s", 3, 1, vec![msg(Role::User, "x")]),
            &interner,
        )
        .unwrap();
        assert_eq!(texts(&third), ["sys", "x"]);
        assert!(Arc::ptr_eq(&first.messages[0], &third.messages[0]));
    }

    #[test]
    fn a_whole_history_and_another_session_share_equal_messages() {
        let interner = Interner::default();
        let start = vec![msg(Role::System, "sys"), msg(Role::User, "u1")];
        let first = assemble(None, wire("s", 1, 0, start.clone()), &interner).unwrap();
        let again = vec![
            msg(Role::System, "sys"),
            msg(Role::User, "changed"),
            msg(Role::Assistant, "sys"),
        ];
        let second = assemble(Some(&first), wire("s", 2, 0, again.clone()), &interner).unwrap();
        assert!(Arc::ptr_eq(&first.messages[0], &second.messages[0]));
        assert!(!Arc::ptr_eq(&first.messages[1], &second.messages[1]));
        let plain: Vec<ChatMessage> = second.messages.iter().map(|m| m.to_chat()).collect();
        assert_eq!(plain, again);
        // Another session replaying the same trajectory holds no copy.
        let other = assemble(None, wire("t", 1, 0, start), &interner).unwrap();
        assert!(Arc::ptr_eq(&first.messages[1], &other.messages[1]));
    }

    #[test]
    fn verbatim_messages_are_kept_as_written_and_broken_ones_refused() {
        let interner = Interner::default();
        let mut w = wire("s", 1, 0, vec![msg(Role::System, "sys")]);
        w.messages.push(types::Message::Json(
            r#"{"role":"user","content":"u1","extra":[1,2.50]}"#.into(),
        ));
        let first = assemble(None, w, &interner).unwrap();
        assert_eq!(
            first.messages[1].json().as_ref(),
            br#"{"role":"user","content":"u1","extra":[1,2.50]}"#
        );
        let mut broken = wire("s", 2, 2, Vec::new());
        broken
            .messages
            .push(types::Message::Json("{\"role\":\"user\"".into()));
        let err = assemble(Some(&first), broken, &interner).unwrap_err();
        assert!(
            err.starts_with("turn 2 message 3: a verbatim message"),
            "{err}"
        );
    }

    #[test]
    fn keeping_more_than_there_was_is_refused() {
        let interner = Interner::default();
        let one = || vec![msg(Role::User, "u")];
        let err = assemble(None, wire("s", 1, 1, one()), &interner).unwrap_err();
        assert!(err.contains("first turn keeps 1"), "{err}");
        let first = assemble(None, wire("s", 1, 0, one()), &interner).unwrap();
        let err = assemble(Some(&first), wire("s", 2, 2, Vec::new()), &interner).unwrap_err();
        assert_eq!(
            err,
            "turn 2 keeps 2 messages of a previous request that had 1"
        );
    }
}
