//! The Chat Completions request body for a workload's turn request, written
//! as the reference writes it: absent fields are omitted (an assistant
//! message with tool calls and no content has no `content` key).
//!
//! A body is a list of slices ([`RequestBody`]): its head, each message's
//! JSON as the host holds it (written once per message and shared by every
//! request that carries it, [`agentload_plugin_host::Message`]) and its
//! tail. Nothing a session keeps grows with its history but the messages
//! themselves.

use agentload_client::RequestBody;
use agentload_plugin_host::{Message, TurnRequest};
use bytes::Bytes;
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::Arc;

/// What the host adds to every request.
#[derive(Debug, Clone, Default)]
pub struct BodyOptions {
    /// The `model` field.
    pub model: String,
    /// Ask for a streamed answer.
    pub stream: bool,
    /// Send `stream_options: {include_usage: true}` when streaming.
    pub include_usage: bool,
    /// Extra top-level fields from the run config (e.g. `cache_prompt`).
    pub extra: Map<String, Value>,
    /// The order of the top-level fields.
    pub layout: Layout,
}

/// The order of a body's top-level fields (`endpoint.client`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Layout {
    /// The MLPerf reference's: `model`, `messages`, `tools`, `tool_choice`,
    /// `temperature`, `top_p`, `top_k`, `min_p`, `seed`,
    /// `max_completion_tokens`, `max_tokens`, `ignore_eos`,
    /// `reasoning_effort`, `stream`, `stream_options`.
    #[default]
    Reference,
    /// agentperf-local 0.3.4's: `model`, `messages`, `stream`,
    /// `stream_options`, `max_tokens`, `tools`, `reasoning_effort`,
    /// `temperature`, `top_p`, `ignore_eos`, then its extra keys `top_k`,
    /// `min_p`, `tool_choice`; then `seed` and `max_completion_tokens`, which
    /// it never sends.
    AgentperfLocal,
}

/// The JSON body for `req`, in one buffer (what local token counting and
/// tools read).
///
/// Top-level fields in the order of `opts.layout` ([`Layout`]); then the
/// run config's extra fields. An extra field with one of those names
/// replaces its value in place (as inserting it into the object would).
///
/// # Errors
/// When `tools-json` or `tool-choice-json` is not valid JSON.
pub fn request_body(req: &TurnRequest, opts: &BodyOptions) -> Result<Vec<u8>, String> {
    SessionBodies::default()
        .body(req, opts)
        .map(|b| b.to_bytes().to_vec())
}

/// Writes one session's request bodies ([`request_body`]'s bytes, as
/// slices). The session's `tools` array, normalised once, is reused while
/// its requests carry the same one.
#[derive(Default)]
pub struct SessionBodies {
    /// The last `tools-json` and its bytes as written.
    tools: Option<(Arc<str>, Bytes)>,
}

impl SessionBodies {
    /// The body for `req` (see [`request_body`]).
    ///
    /// # Errors
    /// When `tools-json` or `tool-choice-json` is not valid JSON.
    pub fn body(&mut self, req: &TurnRequest, opts: &BodyOptions) -> Result<RequestBody, String> {
        let tools = req
            .tools_json
            .as_ref()
            .map(|json| self.tools(json))
            .transpose()?;
        let s = &req.sampling;
        let choice: Option<Value> = s
            .tool_choice_json
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| format!("tool-choice-json is not JSON: {e}"))?;
        let mut map = Object {
            parts: Vec::with_capacity(2 * req.messages.len() + 4),
            out: Vec::with_capacity(256),
            started: false,
            extra: &opts.extra,
            written: Vec::new(),
        };
        let usage = serde_json::json!({"include_usage": true});
        let usage = (opts.stream && opts.include_usage).then_some(&usage);
        map.entry("model", &opts.model);
        map.entry_parts("messages", |map| map.messages(&req.messages));
        match opts.layout {
            Layout::Reference => {
                if let Some(tools) = tools {
                    map.entry_parts("tools", |map| map.part(tools));
                }
                map.entry_if("tool_choice", choice.as_ref());
                map.entry_if("temperature", s.temperature.as_ref());
                map.entry_if("top_p", s.top_p.as_ref());
                map.entry_if("top_k", s.top_k.as_ref());
                map.entry_if("min_p", s.min_p.as_ref());
                map.entry_if("seed", s.seed.as_ref());
                map.entry_if("max_completion_tokens", s.max_completion_tokens.as_ref());
                map.entry_if("max_tokens", s.max_tokens.as_ref());
                map.entry_if("ignore_eos", s.ignore_eos.as_ref());
                map.entry_if("reasoning_effort", s.reasoning_effort.as_ref());
                map.entry("stream", &opts.stream);
                map.entry_if("stream_options", usage);
            }
            Layout::AgentperfLocal => {
                map.entry("stream", &opts.stream);
                map.entry_if("stream_options", usage);
                map.entry_if("max_tokens", s.max_tokens.as_ref());
                if let Some(tools) = tools {
                    map.entry_parts("tools", |map| map.part(tools));
                }
                map.entry_if("reasoning_effort", s.reasoning_effort.as_ref());
                map.entry_if("temperature", s.temperature.as_ref());
                map.entry_if("top_p", s.top_p.as_ref());
                map.entry_if("ignore_eos", s.ignore_eos.as_ref());
                map.entry_if("top_k", s.top_k.as_ref());
                map.entry_if("min_p", s.min_p.as_ref());
                map.entry_if("tool_choice", choice.as_ref());
                map.entry_if("seed", s.seed.as_ref());
                map.entry_if("max_completion_tokens", s.max_completion_tokens.as_ref());
            }
        }
        Ok(map.end())
    }

    /// The bytes of the `tools` array `json`: the session's last ones when
    /// it is the same text.
    fn tools(&mut self, json: &Arc<str>) -> Result<Bytes, String> {
        if let Some((last, bytes)) = &self.tools {
            if Arc::ptr_eq(last, json) || **last == **json {
                return Ok(bytes.clone());
            }
        }
        let value: Value =
            serde_json::from_str(json).map_err(|e| format!("tools-json is not JSON: {e}"))?;
        let bytes = Bytes::from(serde_json::to_vec(&value).expect("a JSON value serialises"));
        self.tools = Some((Arc::clone(json), bytes.clone()));
        Ok(bytes)
    }
}

/// The separator between messages.
const COMMA: Bytes = Bytes::from_static(b",");

/// The body's top-level object as it is written (as serde_json's compact
/// writer writes a map), into slices: a field the run config's extra fields
/// also name gets the extra value in its place; the other extra fields
/// follow.
struct Object<'a> {
    /// The slices written so far.
    parts: Vec<Bytes>,
    /// Bytes written since the last slice.
    out: Vec<u8>,
    /// Whether a key was written.
    started: bool,
    extra: &'a Map<String, Value>,
    written: Vec<&'static str>,
}

impl Object<'_> {
    fn key(&mut self, key: &str) {
        self.out.push(if self.started { b',' } else { b'{' });
        self.started = true;
        serde_json::to_writer(&mut self.out, key).expect("a key serialises");
        self.out.push(b':');
    }

    fn value(&mut self, value: &impl Serialize) {
        serde_json::to_writer(&mut self.out, value).expect("a JSON value serialises");
    }

    /// Ends the current slice and adds `part` after it.
    fn part(&mut self, part: Bytes) {
        if !self.out.is_empty() {
            let out = std::mem::replace(&mut self.out, Vec::with_capacity(256));
            self.parts.push(out.into());
        }
        self.parts.push(part);
    }

    /// The `messages` array: each message's shared JSON.
    fn messages(&mut self, messages: &[Arc<Message>]) {
        self.out.push(b'[');
        for (i, m) in messages.iter().enumerate() {
            if i > 0 {
                self.part(COMMA);
            }
            self.part(m.json().clone());
        }
        self.out.push(b']');
    }

    /// Writes `key` with `value`, or with the extra field of that name.
    fn entry(&mut self, key: &'static str, value: &impl Serialize) {
        self.written.push(key);
        self.key(key);
        match self.extra.get(key) {
            Some(extra) => self.value(extra),
            None => self.value(value),
        }
    }

    /// [`Object::entry`] for a value written as slices by `write`.
    fn entry_parts(&mut self, key: &'static str, write: impl FnOnce(&mut Self)) {
        self.written.push(key);
        self.key(key);
        match self.extra.get(key) {
            Some(extra) => self.value(extra),
            None => write(self),
        }
    }

    fn entry_if(&mut self, key: &'static str, value: Option<&impl Serialize>) {
        if let Some(v) = value {
            self.entry(key, v);
        }
    }

    fn end(mut self) -> RequestBody {
        for (key, value) in self.extra {
            if !self.written.contains(&key.as_str()) {
                self.key(key);
                self.value(value);
            }
        }
        self.out.push(b'}');
        let out = std::mem::take(&mut self.out);
        self.parts.push(out.into());
        RequestBody::from_parts(self.parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentload_plugin_host::types::{ChatMessage, Role, Sampling, ToolCall};

    fn request(
        messages: Vec<ChatMessage>,
        tools_json: Option<String>,
        sampling: Sampling,
    ) -> TurnRequest {
        TurnRequest {
            session_id: "c".into(),
            turn: 0,
            item_id: "c/0".into(),
            messages: messages.iter().map(|m| Arc::new(Message::new(m))).collect(),
            tools_json: tools_json.map(Arc::from),
            sampling,
            delay_ms: 0,
            expected_json: "{}".into(),
        }
    }

    /// Sampling with nothing set.
    fn no_sampling() -> Sampling {
        Sampling {
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
        }
    }

    fn msg(role: Role) -> ChatMessage {
        ChatMessage {
            role,
            content: None,
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    #[test]
    fn reference_shape() {
        let mut assistant = msg(Role::Assistant);
        assistant.reasoning_content = Some("think".into());
        assistant.tool_calls.push(ToolCall {
            id: "functions.bash:0".into(),
            name: "bash".into(),
            arguments: r#"{"command":"ls"}"#.into(),
        });
        let mut tool = msg(Role::Tool);
        tool.tool_call_id = Some("functions.bash:0".into());
        tool.content = Some("out".into());
        let req = request(
            vec![assistant, tool],
            Some(r#"[{"type":"function","function":{"name":"bash"}}]"#.into()),
            Sampling {
                temperature: Some(0.0),
                top_p: None,
                top_k: None,
                seed: Some(42),
                max_completion_tokens: Some(1024),
                tool_choice_json: None,
                ..no_sampling()
            },
        );
        let opts = BodyOptions {
            model: "m".into(),
            stream: true,
            include_usage: false,
            extra: Map::new(),
            layout: Layout::Reference,
        };
        let bytes = request_body(&req, &opts).unwrap();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        let a = &body["messages"][0];
        assert!(a.get("content").is_none(), "no content key: {a}");
        assert_eq!(a["reasoning_content"], "think");
        assert_eq!(
            a["tool_calls"][0]["function"]["arguments"],
            r#"{"command":"ls"}"#
        );
        assert_eq!(body["messages"][1]["tool_call_id"], "functions.bash:0");
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["seed"], 42);
        assert_eq!(body["max_completion_tokens"], 1024);
        assert_eq!(body["stream"], true);
        assert!(body.get("tool_choice").is_none());
        assert!(body.get("stream_options").is_none());
        assert_eq!(body["tools"][0]["function"]["name"], "bash");
        // Written straight, byte for byte what the object would print.
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            concat!(
                r#"{"model":"m","messages":[{"role":"assistant","reasoning_content":"think","#,
                r#""tool_calls":[{"id":"functions.bash:0","type":"function","function":{"name":"bash","#,
                r#""arguments":"{\"command\":\"ls\"}"}}]},{"role":"tool","content":"out","#,
                r#""tool_call_id":"functions.bash:0"}],"tools":[{"type":"function","function":"#,
                r#"{"name":"bash"}}],"temperature":0.0,"seed":42,"max_completion_tokens":1024,"#,
                r#""stream":true}"#
            )
        );
    }

    #[test]
    fn extra_fields_replace_in_place_or_follow() {
        let mut user = msg(Role::User);
        user.content = Some("hi \"there\"\n".into());
        user.name = Some("u".into());
        let req = request(
            vec![user],
            None,
            Sampling {
                temperature: Some(0.7),
                top_p: Some(0.95),
                top_k: Some(20),
                seed: None,
                max_completion_tokens: None,
                tool_choice_json: Some(r#""auto""#.into()),
                ..no_sampling()
            },
        );
        let mut extra = Map::new();
        extra.insert("cache_prompt".into(), true.into());
        extra.insert("temperature".into(), 0.0.into());
        extra.insert("tools".into(), Value::Array(vec![]));
        let opts = BodyOptions {
            model: "m".into(),
            stream: true,
            include_usage: true,
            extra,
            layout: Layout::Reference,
        };
        let body = String::from_utf8(request_body(&req, &opts).unwrap()).unwrap();
        assert_eq!(
            body,
            concat!(
                r#"{"model":"m","messages":[{"role":"user","content":"hi \"there\"\n","name":"u"}],"#,
                r#""tool_choice":"auto","temperature":0.0,"top_p":0.95,"top_k":20,"stream":true,"#,
                r#""stream_options":{"include_usage":true},"cache_prompt":true,"tools":[]}"#
            )
        );
        let broken = TurnRequest {
            tools_json: Some("[oops".into()),
            ..req
        };
        let e = request_body(&broken, &opts).unwrap_err();
        assert!(e.starts_with("tools-json is not JSON"), "{e}");
    }

    /// agentperf-local's key order, every field set: built by hand from its
    /// `CompletionRequest.body()` order, not by this writer.
    #[test]
    fn agentperf_local_layout() {
        let mut user = msg(Role::User);
        user.content = Some("hi".into());
        let req = request(
            vec![user],
            Some(r#"[{"type":"function","function":{"name":"bash"}}]"#.into()),
            Sampling {
                temperature: Some(0.7),
                top_p: Some(0.8),
                top_k: Some(20),
                min_p: Some(0.0),
                max_tokens: Some(733),
                ignore_eos: Some(true),
                reasoning_effort: Some("low".into()),
                tool_choice_json: Some(r#""none""#.into()),
                ..no_sampling()
            },
        );
        let opts = BodyOptions {
            model: "m".into(),
            stream: true,
            include_usage: true,
            extra: Map::new(),
            layout: Layout::AgentperfLocal,
        };
        let body = String::from_utf8(request_body(&req, &opts).unwrap()).unwrap();
        assert_eq!(
            body,
            concat!(
                r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"#,
                r#""stream_options":{"include_usage":true},"max_tokens":733,"tools":[{"type":"#,
                r#""function","function":{"name":"bash"}}],"reasoning_effort":"low","#,
                r#""temperature":0.7,"top_p":0.8,"ignore_eos":true,"top_k":20,"min_p":0.0,"#,
                r#""tool_choice":"none"}"#
            )
        );
        // Nothing optional set: the head alone.
        let bare = request(vec![msg(Role::User)], None, no_sampling());
        let body = String::from_utf8(request_body(&bare, &opts).unwrap()).unwrap();
        assert_eq!(
            body,
            r#"{"model":"m","messages":[{"role":"user"}],"stream":true,"stream_options":{"include_usage":true}}"#
        );
    }

    #[test]
    fn a_session_body_is_the_whole_one_in_slices_sharing_the_messages() {
        let text = |role, t: &str| ChatMessage {
            content: Some(t.into()),
            ..msg(role)
        };
        let mut call = msg(Role::Assistant);
        call.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: r#"{"command":"ls"}"#.into(),
        });
        let mut result = text(Role::Tool, "a\nb \"quoted\"");
        result.tool_call_id = Some("c1".into());
        let history = [
            text(Role::System, "sys"),
            text(Role::User, "fix it"),
            call,
            result,
            text(Role::Assistant, "done"),
            text(Role::User, "again"),
        ];
        let tools = Some(r#"[ {"type": "function", "function": {"name": "bash"}} ]"#.to_string());
        let sampling = Sampling {
            temperature: Some(0.0),
            top_p: None,
            top_k: None,
            seed: Some(7),
            max_completion_tokens: Some(64),
            tool_choice_json: None,
            ..no_sampling()
        };
        let at = |n: usize| request(history[..n].to_vec(), tools.clone(), sampling.clone());
        let steps = [
            at(2),
            at(6),
            // The same tools text in another allocation, none, then others.
            at(6),
            TurnRequest {
                tools_json: None,
                ..at(6)
            },
            TurnRequest {
                tools_json: Some(Arc::from("[]")),
                ..at(6)
            },
            at(0),
            at(6),
        ];
        let mut extra = Map::new();
        extra.insert("cache_prompt".into(), true.into());
        let plain = BodyOptions {
            model: "m".into(),
            stream: true,
            include_usage: true,
            extra,
            layout: Layout::Reference,
        };
        let mut replaced = plain.clone();
        replaced
            .extra
            .insert("messages".into(), Value::Array(vec![]));
        for opts in [plain, replaced] {
            let mut bodies = SessionBodies::default();
            for (i, req) in steps.iter().enumerate() {
                let got = bodies.body(req, &opts).unwrap();
                let whole = request_body(req, &opts).unwrap();
                assert_eq!(&got.to_bytes()[..], &whole[..], "step {i}");
                // The same bytes as a JSON value printed whole.
                let value: Value = serde_json::from_slice(&whole).unwrap();
                assert_eq!(serde_json::to_vec(&value).unwrap(), whole, "step {i}");
                if !opts.extra.contains_key("messages") {
                    // Each message is its own shared slice, not a copy.
                    for m in &req.messages {
                        assert!(
                            got.parts().iter().any(|p| p.as_ptr() == m.json().as_ptr()),
                            "step {i}"
                        );
                    }
                }
            }
            // A request that cannot be written leaves the next one whole.
            let broken = TurnRequest {
                tools_json: Some("[oops".into()),
                ..at(6)
            };
            assert!(bodies.body(&broken, &opts).is_err());
            let next = at(4);
            assert_eq!(
                &bodies.body(&next, &opts).unwrap().to_bytes()[..],
                &request_body(&next, &opts).unwrap()[..]
            );
        }
    }
}
