//! Chat Completions JSON objects and SSE framing, as llama-server writes them
//! (`tools/server/server-task.cpp`: `to_json_oaicompat_chat_stream`, `to_json_oaicompat_chat`).
//!
//! A stream is `data: {chunk}\n\n` events: a role chunk (`{"role":"assistant","content":null}`)
//! together with the first token's chunk, one chunk per token piece, a chunk with an empty delta
//! and the finish reason, a usage chunk with `choices: []` when `stream_options.include_usage`
//! is set, then `data: [DONE]`. `timings` goes on the last chunk; the simulator's own
//! `agentload_sim` timestamps go on the finish chunk and the usage chunk.

use serde_json::{json, Value};

/// The fields every chunk of one completion shares.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChunkMeta {
    /// `chatcmpl-` plus 32 random alphanumerics, like llama.cpp's `gen_chatcmplid`.
    pub(crate) id: String,
    /// Unix seconds.
    pub(crate) created: u64,
    pub(crate) model: String,
}

/// Reported as `system_fingerprint` (llama.cpp reports its build, `b<number>-<commit>`).
pub(crate) const SYSTEM_FINGERPRINT: &str = concat!("b0-agentload-sim-", env!("CARGO_PKG_VERSION"));

/// The end-of-stream event.
pub(crate) const DONE_EVENT: &str = "data: [DONE]\n\n";

/// Token counts of one completion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub(crate) prompt_tokens: u32,
    pub(crate) cached_tokens: u32,
    pub(crate) completion_tokens: u32,
}

impl Usage {
    pub(crate) fn to_json(self) -> Value {
        json!({
            "completion_tokens": self.completion_tokens,
            "prompt_tokens": self.prompt_tokens,
            "total_tokens": self.completion_tokens + self.prompt_tokens,
            "prompt_tokens_details": { "cached_tokens": self.cached_tokens },
        })
    }
}

/// Server-side timestamps of one completion, nanoseconds from the request's arrival, and the
/// arrival on the machine's monotonic clock (see the crate docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SimStamps {
    pub(crate) first_token_ns: u64,
    pub(crate) last_token_ns: u64,
    pub(crate) queued_ns: u64,
    pub(crate) received_mono_ns: u64,
}

impl SimStamps {
    pub(crate) fn to_json(self) -> Value {
        json!({
            "first_token_ns": self.first_token_ns,
            "last_token_ns": self.last_token_ns,
            "queued_ns": self.queued_ns,
            "received_mono_ns": self.received_mono_ns,
            "first_token_mono_ns": self.received_mono_ns + self.first_token_ns,
        })
    }
}

/// A stream's closing events, rendered when the response body reaches them (so that the first
/// token's write stamp, taken after the scheduler closed the stream, can go into them).
#[derive(Debug)]
pub(crate) struct Closing {
    pub(crate) meta: ChunkMeta,
    pub(crate) finish_reason: String,
    pub(crate) usage: Option<Usage>,
    pub(crate) timings: Value,
    pub(crate) stamps: SimStamps,
    /// A token-bearing chunk went before (else the first write is the closing events' own).
    pub(crate) after_tokens: bool,
}

impl Closing {
    pub(crate) fn render(&self) -> String {
        self.meta.closing_events(
            &self.finish_reason,
            self.usage,
            self.timings.clone(),
            self.stamps,
        )
    }
}

/// What the scheduler sends a stream's body: a frame of token events, or the closing events.
#[derive(Debug)]
pub(crate) enum Out {
    Frame(bytes::Bytes),
    Closing(Box<Closing>),
}

impl ChunkMeta {
    fn chunk(&self, choices: Value) -> Value {
        json!({
            "choices": choices,
            "created": self.created,
            "id": self.id,
            "model": self.model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "object": "chat.completion.chunk",
        })
    }

    fn delta_choice(delta: Value, finish_reason: Option<&str>) -> Value {
        json!([{ "finish_reason": finish_reason, "index": 0, "delta": delta }])
    }

    /// The first chunk: `delta: {"role": "assistant", "content": null}`.
    pub(crate) fn role_chunk(&self) -> Value {
        self.chunk(Self::delta_choice(
            json!({ "role": "assistant", "content": null }),
            None,
        ))
    }

    /// A chunk carrying one token's `delta`.
    pub(crate) fn delta_chunk(&self, delta: Value) -> Value {
        self.chunk(Self::delta_choice(delta, None))
    }

    /// `data: <delta chunk>\n\n` for one token, the bytes
    /// `sse_event(&self.delta_chunk(delta))` prints, written straight: the
    /// envelope is text around the delta, not a tree of maps per token (at
    /// 1,000 streams the simulator writes 100,000 of these a second).
    pub(crate) fn delta_event(&self, delta: &Value) -> String {
        use std::fmt::Write as _;
        let quoted = |s: &str| serde_json::to_string(s).expect("a string serialises");
        let mut out = String::with_capacity(192);
        out.push_str(r#"data: {"choices":[{"finish_reason":null,"index":0,"delta":"#);
        let _ = write!(out, "{delta}");
        let _ = write!(
            out,
            r#"}}],"created":{},"id":{},"model":{},"system_fingerprint":{},"object":"chat.completion.chunk"}}"#,
            self.created,
            quoted(&self.id),
            quoted(&self.model),
            quoted(SYSTEM_FINGERPRINT),
        );
        out.push_str("\n\n");
        out
    }

    /// The chunk with an empty delta and the finish reason.
    pub(crate) fn finish_chunk(&self, finish_reason: &str) -> Value {
        self.chunk(Self::delta_choice(json!({}), Some(finish_reason)))
    }

    /// The `include_usage` chunk: `choices: []` plus `usage`.
    pub(crate) fn usage_chunk(&self, usage: Usage) -> Value {
        let mut chunk = self.chunk(json!([]));
        chunk["usage"] = usage.to_json();
        chunk
    }

    /// The closing events of a stream, one string: finish chunk, usage chunk (when asked for),
    /// `[DONE]`. `timings` lands on the last chunk, `agentload_sim` on every closing chunk.
    pub(crate) fn closing_events(
        &self,
        finish_reason: &str,
        usage: Option<Usage>,
        timings: Value,
        stamps: SimStamps,
    ) -> String {
        let mut chunks = vec![self.finish_chunk(finish_reason)];
        chunks.extend(usage.map(|u| self.usage_chunk(u)));
        for chunk in &mut chunks {
            chunk["agentload_sim"] = stamps.to_json();
        }
        if let Some(last) = chunks.last_mut() {
            last["timings"] = timings;
        }
        let mut out: String = chunks.iter().map(sse_event).collect();
        out.push_str(DONE_EVENT);
        out
    }

    /// The non-streaming `chat.completion` object.
    pub(crate) fn completion(
        &self,
        message: Value,
        finish_reason: &str,
        usage: Usage,
        timings: Value,
        stamps: SimStamps,
    ) -> Value {
        json!({
            "choices": [{ "finish_reason": finish_reason, "index": 0, "message": message }],
            "created": self.created,
            "model": self.model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "object": "chat.completion",
            "usage": usage.to_json(),
            "id": self.id,
            "timings": timings,
            "agentload_sim": stamps.to_json(),
        })
    }
}

/// One SSE event: `data: {compact json}\n\n`.
pub(crate) fn sse_event(value: &Value) -> String {
    format!("data: {value}\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> ChunkMeta {
        ChunkMeta {
            id: "chatcmpl-abc".into(),
            created: 1_700_000_000,
            model: "m".into(),
        }
    }

    #[test]
    fn chunks_have_llama_cpp_shape() {
        let m = meta();
        let role = m.role_chunk();
        assert_eq!(
            role.to_string(),
            format!(
                r#"{{"choices":[{{"finish_reason":null,"index":0,"delta":{{"role":"assistant","content":null}}}}],"created":1700000000,"id":"chatcmpl-abc","model":"m","system_fingerprint":"{SYSTEM_FINGERPRINT}","object":"chat.completion.chunk"}}"#
            )
        );
        let delta = m.delta_chunk(json!({"content": "Hi"}));
        assert_eq!(delta["choices"][0]["delta"]["content"], "Hi");
        assert!(delta["choices"][0]["finish_reason"].is_null());
        assert_eq!(sse_event(&json!({"a": 1})), "data: {\"a\":1}\n\n");
    }

    #[test]
    fn a_delta_event_is_the_delta_chunk_as_an_event() {
        let mut m = meta();
        m.model = "qwen \"3\"\n/é".into();
        for delta in [
            json!({"content": "Hi"}),
            json!({"content": "a \"quote\", a \\ and \u{1}"}),
            json!({"reasoning_content": "hm"}),
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                "function": {"name": "bash", "arguments": "{\"a\":"}}]}),
        ] {
            assert_eq!(
                m.delta_event(&delta),
                sse_event(&m.delta_chunk(delta.clone()))
            );
        }
    }

    #[test]
    fn closing_events_with_usage() {
        let m = meta();
        let usage = Usage {
            prompt_tokens: 100,
            cached_tokens: 60,
            completion_tokens: 5,
        };
        let stamps = SimStamps {
            first_token_ns: 1,
            last_token_ns: 2,
            queued_ns: 3,
            received_mono_ns: 10,
        };
        let text = m.closing_events("tool_calls", Some(usage), json!({"cache_n": 60}), stamps);
        assert!(text.ends_with("data: [DONE]\n\n"));
        let events: Vec<Value> = text
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter(|e| e.starts_with('{'))
            .map(|e| serde_json::from_str(e).unwrap())
            .collect();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(events[0]["choices"][0]["delta"], json!({}));
        assert_eq!(events[0]["agentload_sim"]["queued_ns"], 3);
        assert!(events[0].get("timings").is_none());
        assert_eq!(events[1]["choices"], json!([]));
        assert_eq!(events[1]["usage"]["total_tokens"], 105);
        assert_eq!(
            events[1]["usage"]["prompt_tokens_details"]["cached_tokens"],
            60
        );
        assert_eq!(events[1]["timings"]["cache_n"], 60);
        assert_eq!(events[1]["agentload_sim"]["first_token_ns"], 1);
        assert_eq!(events[1]["agentload_sim"]["received_mono_ns"], 10);
        assert_eq!(events[1]["agentload_sim"]["first_token_mono_ns"], 11);

        let text = m.closing_events("stop", None, json!({}), stamps);
        let first: Value = serde_json::from_str(
            text.split("\n\n")
                .next()
                .unwrap()
                .strip_prefix("data: ")
                .unwrap(),
        )
        .unwrap();
        assert_eq!(first["timings"], json!({}));
        assert_eq!(text.matches("data: ").count(), 2);
    }

    #[test]
    fn completion_object() {
        let c = meta().completion(
            json!({"role": "assistant", "content": "x"}),
            "stop",
            Usage {
                prompt_tokens: 1,
                cached_tokens: 0,
                completion_tokens: 2,
            },
            json!({}),
            SimStamps::default(),
        );
        assert_eq!(c["object"], "chat.completion");
        assert_eq!(c["choices"][0]["message"]["content"], "x");
        assert_eq!(c["usage"]["total_tokens"], 3);
        assert!(c.get("agentload_sim").is_some());
    }
}
