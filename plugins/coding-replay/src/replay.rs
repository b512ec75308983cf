//! Turning a recorded conversation into the requests the reference sends.
//!
//! Every `user` and `tool` row is a client turn. Its request carries the
//! system message (the first non-empty `system` of the conversation), every
//! earlier row and the row itself, all as recorded: the model's own replies are
//! never fed back. The whole conversation is converted once, so a turn's
//! messages are a prefix of one list and building a request is a single copy.

use crate::dataset::{self, Body, Conversation, Row};
use crate::settings::Settings;
use agentload_sdk::{Message, Role, Sampling, ToolCall, Turn};

/// A conversation ready to replay.
#[derive(Debug)]
pub struct ConversationReplay {
    /// The dataset's `conversation_id`.
    pub id: String,
    /// `id` as a JSON string, for `expected-json`.
    id_json: String,
    /// The system message, then every row's messages, in turn order.
    messages: Vec<Message>,
    /// The system prompt (`messages[0]`), when the conversation has one.
    system: Option<String>,
    /// Distinct `tools` arrays (compact JSON) that client turns send.
    tools: Vec<String>,
    /// The client turns, in order.
    turns: Vec<ClientTurn>,
}

/// What one client turn sends, computed once.
#[derive(Debug)]
struct ClientTurn {
    /// Dataset `turn` of the user or tool row.
    turn: u32,
    /// The request's messages are `messages[..end]`.
    end: usize,
    /// Index into `tools`.
    tools: Option<usize>,
    delay_ms: u64,
    sampling: Sampling,
    /// Turn of the assistant row after this one (see [`ConversationReplay::new`]).
    assistant_turn: u32,
    /// That assistant row's `tool_calls` as recorded, `[]` when none.
    expected_tool_calls: String,
    /// That assistant row's `intent_codes` as recorded (workflow
    /// conversations' ground truth), when it has them.
    expected_intent_codes: Option<String>,
    /// An assistant row follows this client row (the reference scores, and
    /// counts as issued, only such turns).
    answer_row: bool,
}

impl ConversationReplay {
    /// Converts a validated conversation.
    ///
    /// Per-turn choices follow the reference loader:
    /// - `tools`: the row's own `tools`, else those of the conversation's first user row;
    /// - `max_completion_tokens`: the row's `max_new_tokens`, else the first user row's
    ///   `max_new_tokens`, else the row's `max_completion_tokens`, else the setting;
    /// - delay: the row's `delay_seconds` (user or tool row) when `inject_tool_delay` is on.
    ///
    /// A client row with no assistant row after it (the edge data has none) is still
    /// sent, as the reference does; the reference never scores it, so its expected
    /// tool calls are `[]` (nothing to score) and its `assistant_turn` is the turn the
    /// reply would have had.
    pub fn new(conversation: &Conversation, settings: &Settings) -> Self {
        let rows = &conversation.rows;
        // Validation guarantees the first row (turn 1) is a user row.
        let first_user = &rows[0];
        let mut messages = Vec::with_capacity(rows.len() + 1);
        let system = rows
            .iter()
            .find_map(|row| row.system.as_deref().filter(|s| !s.is_empty()))
            .map(str::to_owned);
        if let Some(system) = &system {
            messages.push(Message::system(system.clone()));
        }
        let mut tools: Vec<String> = first_user.tools_json.iter().cloned().collect();
        let default_tools = (!tools.is_empty()).then_some(0);
        let mut turns = Vec::new();
        for (index, row) in rows.iter().enumerate() {
            push_messages(&mut messages, row);
            if row.role() == dataset::Role::Assistant {
                continue;
            }
            let own_tools = match &row.tools_json {
                Some(json) if index > 0 => {
                    tools.push(json.clone());
                    Some(tools.len() - 1)
                }
                _ => default_tools,
            };
            let max_tokens = row
                .max_new_tokens
                .or(first_user.max_new_tokens)
                .or(row.max_completion_tokens)
                .unwrap_or(settings.max_completion_tokens);
            let delay_ms = match row.delay_seconds {
                Some(seconds) if settings.inject_tool_delay => (seconds * 1000.0).round() as u64,
                _ => 0,
            };
            let (assistant_turn, expected_tool_calls, expected_intent_codes, answer_row) =
                match rows.get(index + 1) {
                    Some(Row {
                        turn,
                        body:
                            Body::Assistant {
                                tool_calls_json,
                                intent_codes_json,
                                ..
                            },
                        ..
                    }) => (
                        *turn,
                        tool_calls_json.clone(),
                        intent_codes_json.clone(),
                        true,
                    ),
                    _ => (row.turn.saturating_add(1), "[]".to_owned(), None, false),
                };
            turns.push(ClientTurn {
                turn: row.turn,
                end: messages.len(),
                tools: own_tools,
                delay_ms,
                sampling: Sampling {
                    temperature: Some(settings.temperature),
                    top_p: settings.top_p,
                    top_k: settings.top_k,
                    seed: settings.send_seed.then_some(settings.seed),
                    max_completion_tokens: Some(max_tokens),
                    tool_choice_json: None,
                    ..Sampling::default()
                },
                assistant_turn,
                expected_tool_calls,
                expected_intent_codes,
                answer_row,
            });
        }
        Self {
            id: conversation.id.clone(),
            id_json: serde_json::Value::from(conversation.id.as_str()).to_string(),
            messages,
            system,
            tools,
            turns,
        }
    }

    /// The recorded answer to client turn `index`: the assistant row right
    /// after it, when there is one.
    pub fn recorded_reply(&self, index: usize) -> Option<&Message> {
        self.messages
            .get(self.turns[index].end)
            .filter(|m| m.role == Role::Assistant)
    }

    /// What client turn `index` (after the first) adds after the recorded
    /// answer to the turn before it: its tool results (leading `tool`
    /// messages), then the rest (a user message).
    pub fn added_rows(&self, index: usize) -> (&[Message], &[Message]) {
        let previous = index - 1;
        let start = self.turns[previous].end + usize::from(self.recorded_reply(previous).is_some());
        let rows = &self.messages[start..self.turns[index].end];
        let results = rows.iter().take_while(|m| m.role == Role::Tool).count();
        rows.split_at(results)
    }

    /// The dataset turn number of client turn `index`.
    pub fn turn_number(&self, index: usize) -> u32 {
        self.turns[index].turn
    }

    /// Number of client turns (requests) in the conversation.
    pub fn turn_count(&self) -> usize {
        self.turns.len()
    }

    /// Whether the conversation has a system prompt (salting needs one).
    pub fn has_system(&self) -> bool {
        self.system.is_some()
    }

    /// The request for client turn `index` of session `session_id`, pass
    /// `repeat`: the previous client turn's request (the conversation up to
    /// its end) kept, and the rows since then added. With `salt`, the first
    /// turn's system prompt is the instance's salted one (later turns keep
    /// it).
    pub fn request(
        &self,
        index: usize,
        session_id: &str,
        repeat: u32,
        salt: Option<&Salt>,
    ) -> Turn {
        let kept = index.checked_sub(1).map_or(0, |i| self.turns[i].end);
        let mut new = self.messages[kept..self.turns[index].end].to_vec();
        if let (0, Some(salt), Some(system)) = (kept, salt, &self.system) {
            // The reference counts passes from 1.
            let pass = repeat.max(1);
            new[0] = Message::system(crate::salt::salted(
                system, salt.mode, salt.seed, pass, &self.id, session_id,
            ));
        }
        self.request_of(index, session_id, repeat, kept, new)
    }

    /// The request of client turn `index` (after the first) that keeps
    /// `keep` messages of the session's previous request and adds `new`: a
    /// live-reply replay's, whose history is its own.
    pub fn request_of(
        &self,
        index: usize,
        session_id: &str,
        repeat: u32,
        keep: usize,
        new: Vec<Message>,
    ) -> Turn {
        let turn = &self.turns[index];
        Turn::after(turn.turn, keep as u32, new)
            .with_item_id(format!("{session_id}/{}", turn.assistant_turn))
            .with_tools_json(turn.tools.map(|i| self.tools[i].clone()))
            .with_sampling(turn.sampling.clone())
            .with_delay_ms(turn.delay_ms)
            // The recorded tool calls and intent codes verbatim.
            .with_expected_json(turn.expected_json(&self.id_json, repeat))
    }
}

impl ClientTurn {
    /// The scorer's view of the turn: the conversation, the pass, the
    /// recorded assistant row's turn and tool calls, and its `intent_codes`
    /// when it has them; `"answer_row":false` when no assistant row follows.
    /// Both keys are left out otherwise, so a coding turn's JSON is what it
    /// was before they existed.
    fn expected_json(&self, id_json: &str, repeat: u32) -> String {
        let mut json = format!(
            "{{\"conversation_id\":{id_json},\"repeat\":{repeat},\"assistant_turn\":{},\"tool_calls\":{}",
            self.assistant_turn, self.expected_tool_calls
        );
        if let Some(codes) = &self.expected_intent_codes {
            json.push_str(",\"intent_codes\":");
            json.push_str(codes);
        }
        if !self.answer_row {
            json.push_str(",\"answer_row\":false");
        }
        json.push('}');
        json
    }
}

/// How instances are salted (`enable_salt`).
#[derive(Debug, Clone, Copy)]
pub struct Salt {
    pub mode: crate::salt::SaltMode,
    pub seed: u64,
}

/// Appends a row's OpenAI messages: one for a user or assistant row, one per result
/// for a tool row.
fn push_messages(messages: &mut Vec<Message>, row: &Row) {
    match &row.body {
        Body::User { content } => messages.push(Message {
            name: row.name.clone(),
            ..Message::user(content.clone())
        }),
        Body::Assistant {
            content,
            reasoning_content,
            tool_calls,
            ..
        } => messages.push(Message {
            // No `content` key unless the row has one (the reference sends `content: None`).
            reasoning_content: reasoning_content.clone(),
            tool_calls: tool_calls
                .iter()
                .map(|call| ToolCall::new(&call.id, &call.name, &call.arguments))
                .collect(),
            name: row.name.clone(),
            ..Message::assistant_calls(content.clone(), Vec::new())
        }),
        Body::Tool { results } => messages.extend(
            results
                .iter()
                .map(|result| Message::tool(result.tool_call_id.clone(), result.content.clone())),
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::fixtures::{call, jsonl, reply, result, shape, two_conversations, user, with};
    use agentload_sdk::{History, TurnRequest};

    fn replays(text: &str, settings: &Settings) -> Vec<ConversationReplay> {
        crate::dataset::parse("t.jsonl", text.as_bytes())
            .unwrap()
            .conversations
            .iter()
            .map(|conversation| ConversationReplay::new(conversation, settings))
            .collect()
    }

    /// The request as the host assembles it (`messages`: the whole
    /// history), after the session's earlier requests.
    fn req(replay: &ConversationReplay, index: usize, session: &str, repeat: u32) -> TurnRequest {
        let mut history = History::default();
        let mut last: Option<TurnRequest> = None;
        for i in 0..=index {
            let mut r = replay
                .request(i, session, repeat, None)
                .into_request(session);
            // Each request keeps the whole previous one.
            assert_eq!(
                r.keep as usize,
                last.as_ref().map_or(0, |l| l.messages.len())
            );
            r.messages = history.apply(r.keep, &r.messages).to_vec();
            last = Some(r);
        }
        last.expect("index 0 at least")
    }

    fn shapes(request: &TurnRequest) -> Vec<Value> {
        request.messages.iter().map(shape).collect()
    }

    fn expected(request: &TurnRequest) -> Value {
        serde_json::from_str(&request.expected_json).unwrap()
    }

    const TOOLS: &str = r#"[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]"#;

    /// A workflow conversation's assistant rows carry `intent_codes`: the
    /// expected JSON passes them on verbatim (any JSON value: the scorer
    /// keeps the string entries of a list), and a row without them adds
    /// no key.
    #[test]
    fn intent_codes_reach_the_expected_json_verbatim() {
        let text = jsonl(&[
            user("sim_7", 1),
            with(reply("sim_7", 2), "intent_codes", json!(["i042", 3, null])),
            with(user("sim_7", 3), "content", json!("and then?")),
            with(reply("sim_7", 4), "intent_codes", json!("I001")),
            user("sim_7", 5),
            reply("sim_7", 6),
        ]);
        let replays = replays(&text, &Settings::default());
        let json = |i| {
            replays[0]
                .request(i, "sim_7", 0, None)
                .into_request("sim_7")
                .expected_json
        };
        assert_eq!(
            json(0),
            r#"{"conversation_id":"sim_7","repeat":0,"assistant_turn":2,"tool_calls":[],"intent_codes":["i042",3,null]}"#
        );
        assert_eq!(expected_of(&json(1))["intent_codes"], "I001");
        assert!(expected_of(&json(2)).get("intent_codes").is_none());
    }

    fn expected_of(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn conversation_with_system_tools_and_parallel_calls() {
        let replays = replays(&two_conversations(), &Settings::default());
        let a = &replays[0];
        assert_eq!(a.turn_count(), 3);

        let first = req(a, 0, "a", 0);
        assert_eq!(first.session_id, "a");
        assert_eq!(first.turn, 1);
        assert_eq!(first.item_id, "a/2");
        assert_eq!(
            shapes(&first),
            [
                json!({"role": "system", "content": "You are a shell agent."}),
                json!({"role": "user", "content": "fix the bug"}),
            ]
        );
        assert_eq!(first.tools_json.as_deref(), Some(TOOLS));
        assert_eq!(first.delay_ms, 0);
        assert_eq!(
            first.expected_json,
            r#"{"conversation_id":"a","repeat":0,"assistant_turn":2,"tool_calls":[{"id":"functions.bash:0","type":"function","function":{"name":"bash","arguments":"{\"command\": \"ls\"}"}},{"id":"functions.bash:1","type":"function","function":{"name":"bash","arguments":"{\"command\": \"pwd\"}"}}]}"#
        );
        let sampling = &first.sampling;
        assert_eq!(sampling.temperature, Some(0.0));
        assert_eq!(sampling.seed, Some(42));
        assert_eq!(sampling.max_completion_tokens, Some(1024));
        assert_eq!((sampling.top_p, sampling.top_k), (None, None));
        assert_eq!(sampling.tool_choice_json, None);

        let second = req(a, 1, "a", 0);
        assert_eq!((second.turn, second.item_id.as_str()), (3, "a/4"));
        assert_eq!(
            shapes(&second)[2..],
            [
                // No content key, reasoning kept.
                json!({"role": "assistant", "reasoning_content": "look first", "tool_calls": [
                    {"id": "functions.bash:0", "name": "bash", "arguments": "{\"command\": \"ls\"}"},
                    {"id": "functions.bash:1", "name": "bash", "arguments": "{\"command\": \"pwd\"}"}]}),
                // One tool message per result.
                json!({"role": "tool", "content": "a.py", "tool_call_id": "functions.bash:0"}),
                json!({"role": "tool", "content": "/repo", "tool_call_id": "functions.bash:1"}),
            ]
        );
        assert_eq!(
            second.tools_json.as_deref(),
            Some(TOOLS),
            "tools on every turn"
        );
        assert_eq!(
            expected(&second)["tool_calls"],
            json!([]),
            "a reply without calls"
        );

        let third = req(a, 2, "a", 0);
        assert_eq!((third.turn, third.item_id.as_str()), (5, "a/6"));
        assert_eq!(third.messages.len(), 7);
        assert_eq!(shapes(&third)[0]["role"], "system");
        assert_eq!(
            shapes(&third)[5..],
            [
                json!({"role": "assistant", "content": "done"}),
                json!({"role": "user", "content": "and the tests"}),
            ]
        );
        assert_eq!(third.tools_json.as_deref(), Some(TOOLS));
        assert_eq!(expected(&third)["assistant_turn"], 6);
    }

    #[test]
    fn conversation_without_system_or_tools_and_object_arguments() {
        let replays = replays(&two_conversations(), &Settings::default());
        let b = &replays[1];
        assert_eq!(b.turn_count(), 3);
        let first = req(b, 0, "b", 0);
        assert_eq!(
            shapes(&first),
            [json!({"role": "user", "content": "fix the bug"})]
        );
        assert_eq!(first.tools_json, None);

        let last = req(b, 2, "b", 0);
        assert_eq!(last.turn, 5);
        assert_eq!(
            shapes(&last)[3..],
            [
                json!({"role": "assistant", "tool_calls": [
                    {"id": "call_9", "name": "bash", "arguments": r#"{"command":"cat a.py","timeout":5}"#}]}),
                json!({"role": "tool", "content": "print(1)", "tool_call_id": "call_9"}),
            ]
        );
        // The scorer gets the recorded calls exactly, the object kept an object.
        let request = req(b, 1, "b", 0);
        assert_eq!(
            expected(&request)["tool_calls"][0]["function"]["arguments"],
            json!({"command": "cat a.py", "timeout": 5})
        );
    }

    #[test]
    fn repeat_and_session_id_reach_the_request() {
        let replays = replays(&two_conversations(), &Settings::default());
        let request = req(&replays[0], 1, "a__repeat_2", 2);
        assert_eq!(request.session_id, "a__repeat_2");
        assert_eq!(request.item_id, "a__repeat_2/4");
        assert_eq!(expected(&request)["conversation_id"], "a");
        assert_eq!(expected(&request)["repeat"], 2);
    }

    #[test]
    fn delays_only_when_injected() {
        let text = jsonl(&[
            with(user("a", 1), "delay_seconds", json!(2)),
            call("a", 2),
            with(result("a", 3), "delay_seconds", json!(0.0625)),
            reply("a", 4),
        ]);
        let off = &replays(&text, &Settings::default())[0];
        assert_eq!(
            [req(off, 0, "a", 0).delay_ms, req(off, 1, "a", 0).delay_ms],
            [0, 0]
        );
        let settings = Settings {
            inject_tool_delay: true,
            ..Settings::default()
        };
        let on = &replays(&text, &settings)[0];
        // The reference delays every client row that records a delay, user rows included.
        assert_eq!(
            [req(on, 0, "a", 0).delay_ms, req(on, 1, "a", 0).delay_ms],
            [2000, 63]
        );
    }

    #[test]
    fn token_limits_follow_the_reference_precedence() {
        let text = jsonl(&[
            with(user("a", 1), "max_new_tokens", json!(256)),
            call("a", 2),
            with(result("a", 3), "max_new_tokens", json!(100)),
            call("a", 4),
            result("a", 5),
            reply("a", 6),
            with(user("b", 1), "max_completion_tokens", json!(300)),
            call("b", 2),
            with(result("b", 3), "max_completion_tokens", json!(50)),
            call("b", 4),
            result("b", 5),
            reply("b", 6),
        ]);
        let settings = Settings {
            max_completion_tokens: 512,
            ..Settings::default()
        };
        let replays = replays(&text, &settings);
        let limits = |replay: &ConversationReplay| -> Vec<Option<u32>> {
            (0..replay.turn_count())
                .map(|i| req(replay, i, "s", 0).sampling.max_completion_tokens)
                .collect()
        };
        // The first user row's max_new_tokens covers the conversation; a row's own wins.
        assert_eq!(limits(&replays[0]), [Some(256), Some(100), Some(256)]);
        // max_completion_tokens only covers its own row; others get the setting.
        assert_eq!(limits(&replays[1]), [Some(300), Some(50), Some(512)]);
    }

    #[test]
    fn a_row_with_its_own_tools_sends_them() {
        let text = jsonl(&[
            user("a", 1),
            call("a", 2),
            with(result("a", 3), "tools", json!([{"type": "function"}])),
            reply("a", 4),
        ]);
        let replay = &replays(&text, &Settings::default())[0];
        assert_eq!(req(replay, 0, "a", 0).tools_json, None);
        assert_eq!(
            req(replay, 1, "a", 0).tools_json.as_deref(),
            Some(r#"[{"type":"function"}]"#)
        );
    }

    #[test]
    fn trailing_client_row_is_sent_with_nothing_to_score() {
        let text = jsonl(&[user("a", 1), call("a", 2), result("a", 3)]);
        let replay = &replays(&text, &Settings::default())[0];
        assert_eq!(replay.turn_count(), 2);
        let last = req(replay, 1, "a", 0);
        assert_eq!((last.turn, last.item_id.as_str()), (3, "a/4"));
        assert_eq!(
            last.expected_json,
            r#"{"conversation_id":"a","repeat":0,"assistant_turn":4,"tool_calls":[],"answer_row":false}"#
        );
    }

    #[test]
    fn names_are_forwarded_on_user_and_assistant_messages() {
        let text = jsonl(&[
            with(user("a", 1), "name", json!("Bob")),
            with(reply("a", 2), "name", json!("Ann")),
            user("a", 3),
            reply("a", 4),
        ]);
        let replay = &replays(&text, &Settings::default())[0];
        assert_eq!(
            shapes(&req(replay, 1, "a", 0))[..2],
            [
                json!({"role": "user", "content": "fix the bug", "name": "Bob"}),
                json!({"role": "assistant", "content": "done", "name": "Ann"}),
            ]
        );
    }
}
