//! The Chat Completions request body for a workload's turn request, written
//! as the reference writes it: absent fields are omitted (an assistant
//! message with tool calls and no content has no `content` key).

use agentload_plugin_host::types::{ChatMessage, Role, ToolCall};
use agentload_plugin_host::TurnRequest;
use serde::ser::{SerializeMap, Serializer};
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
}

/// The JSON body for `req`, written straight to bytes: the fields borrowed
/// from the request, no intermediate JSON value.
///
/// Top-level fields in order: `model`, `messages`, `tools`, `tool_choice`,
/// `temperature`, `top_p`, `top_k`, `seed`, `max_completion_tokens`,
/// `stream`, `stream_options`; then the run config's extra fields. An extra
/// field with one of those names replaces its value in place (as inserting
/// it into the object would).
///
/// # Errors
/// When `tools-json` or `tool-choice-json` is not valid JSON.
pub fn request_body(req: &TurnRequest, opts: &BodyOptions) -> Result<Vec<u8>, String> {
    SessionBodies::default().write(req, None, opts)
}

/// Writes one session's request bodies. A session's history grows by a few
/// messages a turn (the body of a long coding session is ~100 KiB, built
/// between one turn's end and the next request), so the messages the
/// previous request also had, equal field for field, are not written again:
/// their bytes are reused. The output is byte for byte [`request_body`]'s.
#[derive(Default)]
pub struct SessionBodies {
    /// The last body's `messages` array, without its closing `]`.
    messages: Vec<u8>,
    /// Where each of its messages ends in `messages`.
    ends: Vec<usize>,
    /// The last body's `tools` value, as written.
    tools: Option<Vec<u8>>,
    /// The request the last body was written for (what `messages` and
    /// `tools` hold).
    last: Option<Arc<TurnRequest>>,
    /// The one before it, kept until [`SessionBodies::release`].
    retired: Option<Arc<TurnRequest>>,
}

impl SessionBodies {
    /// The body for `req` (see [`request_body`]); `req` is kept as the base
    /// of the next body.
    ///
    /// # Errors
    /// When `tools-json` or `tool-choice-json` is not valid JSON.
    pub fn body(&mut self, req: &Arc<TurnRequest>, opts: &BodyOptions) -> Result<Vec<u8>, String> {
        let last = self.last.take();
        let body = self.write(req, last.as_deref(), opts);
        if body.is_ok() {
            self.last = Some(Arc::clone(req));
        }
        self.retired = last;
        body
    }

    /// Writes the body for `req`, reusing what was written for `last` (the
    /// request the bytes held now were written for).
    fn write(
        &mut self,
        req: &TurnRequest,
        last: Option<&TurnRequest>,
        opts: &BodyOptions,
    ) -> Result<Vec<u8>, String> {
        let same_tools = last.is_some_and(|l| l.tools_json == req.tools_json);
        if !same_tools {
            self.tools = req
                .tools_json
                .as_deref()
                .map(|json| {
                    let value: Value = serde_json::from_str(json)
                        .map_err(|e| format!("tools-json is not JSON: {e}"))?;
                    Ok::<_, String>(serde_json::to_vec(&value).expect("a JSON value serialises"))
                })
                .transpose()
                .inspect_err(|_| self.forget())?;
        }
        let s = &req.sampling;
        let choice: Option<Value> = s
            .tool_choice_json
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| format!("tool-choice-json is not JSON: {e}"))
            .inspect_err(|_| self.forget())?;
        let kept = last.map_or(0, |l| shared_prefix(&l.messages, &req.messages));
        self.write_messages(&req.messages, kept);

        let mut out = Vec::with_capacity(self.messages.len() + estimate_rest(req));
        let mut map = Object {
            out: &mut out,
            extra: &opts.extra,
            written: Vec::new(),
        };
        map.entry("model", &opts.model);
        map.entry_raw("messages", &[&self.messages, b"]"]);
        if let Some(tools) = &self.tools {
            map.entry_raw("tools", &[tools]);
        }
        map.entry_if("tool_choice", choice.as_ref());
        map.entry_if("temperature", s.temperature.as_ref());
        map.entry_if("top_p", s.top_p.as_ref());
        map.entry_if("top_k", s.top_k.as_ref());
        map.entry_if("seed", s.seed.as_ref());
        map.entry_if("max_completion_tokens", s.max_completion_tokens.as_ref());
        map.entry("stream", &opts.stream);
        let usage = serde_json::json!({"include_usage": true});
        map.entry_if(
            "stream_options",
            (opts.stream && opts.include_usage).then_some(&usage),
        );
        map.end();
        Ok(out)
    }

    /// Drops the request before the last one. Freeing a long history takes
    /// tens of microseconds: a session calls this once its next request is
    /// out, not between an answer and that request.
    pub fn release(&mut self) {
        self.retired = None;
    }

    /// Nothing written is reused: the next body is written whole.
    fn forget(&mut self) {
        self.messages.clear();
        self.ends.clear();
        self.tools = None;
    }

    /// Keeps the first `kept` messages' bytes and writes the rest of `messages`.
    fn write_messages(&mut self, messages: &[Arc<ChatMessage>], kept: usize) {
        let end = match kept {
            0 => 0,
            n => self.ends[n - 1],
        };
        self.messages.truncate(end);
        self.ends.truncate(kept);
        if kept == 0 {
            self.messages.push(b'[');
        }
        for (i, m) in messages.iter().enumerate().skip(kept) {
            if i > 0 {
                self.messages.push(b',');
            }
            serde_json::to_writer(&mut self.messages, &Message(m)).expect("a message serialises");
            self.ends.push(self.messages.len());
        }
    }
}

/// How many leading messages `a` and `b` share: the same message, or one
/// equal field for field.
fn shared_prefix(a: &[Arc<ChatMessage>], b: &[Arc<ChatMessage>]) -> usize {
    a.iter()
        .zip(b)
        .take_while(|(x, y)| Arc::ptr_eq(x, y) || x == y)
        .count()
}

/// The body's top-level object as it is written (as serde_json's compact
/// writer writes a map): a field the run config's extra fields also name
/// gets the extra value in its place; the other extra fields follow.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    extra: &'a Map<String, Value>,
    written: Vec<&'static str>,
}

impl Object<'_> {
    fn key(&mut self, key: &str) {
        self.out.push(if self.out.is_empty() { b'{' } else { b',' });
        serde_json::to_writer(&mut *self.out, key).expect("a key serialises");
        self.out.push(b':');
    }

    fn value(&mut self, value: &impl Serialize) {
        serde_json::to_writer(&mut *self.out, value).expect("a JSON value serialises");
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

    /// [`Object::entry`] for a value already written as JSON (in parts).
    fn entry_raw(&mut self, key: &'static str, parts: &[&[u8]]) {
        self.written.push(key);
        self.key(key);
        match self.extra.get(key) {
            Some(extra) => self.value(extra),
            None => parts.iter().for_each(|p| self.out.extend_from_slice(p)),
        }
    }

    fn entry_if(&mut self, key: &'static str, value: Option<&impl Serialize>) {
        if let Some(v) = value {
            self.entry(key, v);
        }
    }

    fn end(mut self) {
        for (key, value) in self.extra {
            if !self.written.contains(&key.as_str()) {
                self.key(key);
                self.value(value);
            }
        }
        self.out.push(b'}');
    }
}

/// Room for the body beside its messages.
fn estimate_rest(req: &TurnRequest) -> usize {
    req.tools_json.as_deref().map_or(0, str::len) + 256
}

/// One message in OpenAI form: absent fields are left out.
struct Message<'a>(&'a ChatMessage);

impl Serialize for Message<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let role = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("role", role)?;
        if let Some(c) = &m.content {
            map.serialize_entry("content", c)?;
        }
        if let Some(r) = &m.reasoning_content {
            map.serialize_entry("reasoning_content", r)?;
        }
        if !m.tool_calls.is_empty() {
            map.serialize_entry("tool_calls", &ToolCalls(&m.tool_calls))?;
        }
        if let Some(id) = &m.tool_call_id {
            map.serialize_entry("tool_call_id", id)?;
        }
        if let Some(n) = &m.name {
            map.serialize_entry("name", n)?;
        }
        map.end()
    }
}

/// An assistant message's `tool_calls`.
struct ToolCalls<'a>(&'a [ToolCall]);

impl Serialize for ToolCalls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Function<'a>(&'a ToolCall);
        impl Serialize for Function<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("name", &self.0.name)?;
                map.serialize_entry("arguments", &self.0.arguments)?;
                map.end()
            }
        }
        struct Call<'a>(&'a ToolCall);
        impl Serialize for Call<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(3))?;
                map.serialize_entry("id", &self.0.id)?;
                map.serialize_entry("type", "function")?;
                map.serialize_entry("function", &Function(self.0))?;
                map.end()
            }
        }
        s.collect_seq(self.0.iter().map(Call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentload_plugin_host::types::{Sampling, ToolCall};

    fn request(
        messages: Vec<ChatMessage>,
        tools_json: Option<String>,
        sampling: Sampling,
    ) -> TurnRequest {
        TurnRequest {
            session_id: "c".into(),
            turn: 0,
            item_id: "c/0".into(),
            messages: messages.into_iter().map(Arc::new).collect(),
            tools_json: tools_json.map(Arc::from),
            sampling,
            delay_ms: 0,
            expected_json: "{}".into(),
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
            },
        );
        let opts = BodyOptions {
            model: "m".into(),
            stream: true,
            include_usage: false,
            extra: Map::new(),
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

    #[test]
    fn a_session_body_is_byte_for_byte_the_whole_one_however_its_history_changes() {
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
            call.clone(),
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
        };
        let at = |n: usize| request(history[..n].to_vec(), tools.clone(), sampling.clone());
        let mut edited = at(5);
        edited.message_mut(2).unwrap().tool_calls[0].arguments = r#"{"command":"pwd"}"#.into();
        let mut renamed = at(5);
        renamed.message_mut(1).unwrap().name = Some("u".into());
        let steps = [
            at(2),
            at(3),
            at(5),
            at(6),
            // The same history again, then one with other tools.
            at(6),
            TurnRequest {
                tools_json: None,
                ..at(6)
            },
            at(6),
            // An earlier message edited, or given a field: written again from there.
            edited,
            renamed,
            // A shorter history, none, and a longer one again.
            at(3),
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
        };
        let mut replaced = plain.clone();
        replaced
            .extra
            .insert("messages".into(), Value::Array(vec![]));
        for opts in [plain, replaced] {
            let mut bodies = SessionBodies::default();
            for (i, req) in steps.iter().enumerate() {
                let req = Arc::new(req.clone());
                let got = String::from_utf8(bodies.body(&req, &opts).unwrap()).unwrap();
                let whole = String::from_utf8(request_body(&req, &opts).unwrap()).unwrap();
                assert_eq!(got, whole, "step {i}");
                if i % 2 == 0 {
                    bodies.release();
                }
            }
            // A request that cannot be written leaves the next one whole.
            let broken = Arc::new(TurnRequest {
                tools_json: Some("[oops".into()),
                ..at(6)
            });
            assert!(bodies.body(&broken, &opts).is_err());
            let next = Arc::new(at(4));
            assert_eq!(
                bodies.body(&next, &opts).unwrap(),
                request_body(&next, &opts).unwrap()
            );
        }
    }
}
