//! The assistant's answer, its token pieces, and what of it was generated.

use std::time::Duration;

use serde_json::{json, Value};

use crate::prompt::{render_body, CallText};
use crate::tokens::TokenCounter;

/// What a responder wants the assistant to say.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Answer {
    pub(crate) reasoning_content: String,
    pub(crate) content: String,
    pub(crate) tool_calls: Vec<ToolCall>,
    /// Replaces the natural finish reason (`stop` / `tool_calls`) when the answer is not cut by
    /// the token limit (script responder).
    pub(crate) finish_reason: Option<String>,
    /// Wall-clock stall before the first token (script `delay_ms`; not scaled).
    pub(crate) stall: Duration,
    /// Sent whole even past the request's `max_tokens` (the context limit still applies).
    pub(crate) uncapped: bool,
}

/// One tool call of an answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCall {
    pub(crate) id: String,
    pub(crate) name: String,
    /// The arguments text, streamed verbatim.
    pub(crate) arguments: String,
}

/// One generated token, as streamed in one chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Piece<'a> {
    Reasoning(&'a str),
    Content(&'a str),
    /// Opens tool call `index` (id, type, name, empty arguments); costs one token.
    CallHeader(usize),
    /// A piece of tool call `index`'s arguments.
    CallArguments(usize, &'a str),
}

/// A [`Piece`] as byte ranges into its [`Answer`], so it can be stored next to the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Span {
    Reasoning(usize, usize),
    Content(usize, usize),
    CallHeader(usize),
    CallArguments(usize, usize, usize),
}

/// A word that is one token for the [`ApproxTokenCounter`](crate::ApproxTokenCounter)
/// (four letters after a space) and one for the Qwen vocabulary: the filler of answers made
/// to a length.
pub(crate) const FILLER_WORD: &str = " data";

/// `(start, end)` byte ranges of `counter`'s pieces of `text`.
fn ranges(counter: &dyn TokenCounter, text: &str) -> Vec<(usize, usize)> {
    let mut start = 0;
    counter
        .split(text)
        .iter()
        .map(|p| {
            start += p.len();
            (start - p.len(), start)
        })
        .collect()
}

impl Answer {
    /// The answer's token pieces in stream order: reasoning, content, then each tool call's
    /// header followed by its argument pieces.
    pub(crate) fn spans(&self, counter: &dyn TokenCounter) -> Vec<Span> {
        let mut spans: Vec<Span> = ranges(counter, &self.reasoning_content)
            .into_iter()
            .map(|(a, b)| Span::Reasoning(a, b))
            .chain(
                ranges(counter, &self.content)
                    .into_iter()
                    .map(|(a, b)| Span::Content(a, b)),
            )
            .collect();
        for (index, call) in self.tool_calls.iter().enumerate() {
            spans.push(Span::CallHeader(index));
            spans.extend(
                ranges(counter, &call.arguments)
                    .into_iter()
                    .map(|(a, b)| Span::CallArguments(index, a, b)),
            );
        }
        spans
    }

    /// Generation past the answer's end, as a model asked to `ignore_eos` goes on: filler
    /// content pieces ([`FILLER_WORD`], one token each) appended to `spans`, after everything
    /// else the answer streams, until there are `tokens` of them.
    pub(crate) fn extend_to(&mut self, spans: &mut Vec<Span>, tokens: usize) {
        let missing = tokens.saturating_sub(spans.len());
        self.content.reserve(missing * FILLER_WORD.len());
        for _ in 0..missing {
            let start = self.content.len();
            self.content.push_str(FILLER_WORD);
            spans.push(Span::Content(start, self.content.len()));
        }
    }

    /// The piece a span of this answer stands for.
    pub(crate) fn piece(&self, span: Span) -> Piece<'_> {
        match span {
            Span::Reasoning(a, b) => Piece::Reasoning(&self.reasoning_content[a..b]),
            Span::Content(a, b) => Piece::Content(&self.content[a..b]),
            Span::CallHeader(index) => Piece::CallHeader(index),
            Span::CallArguments(index, a, b) => {
                Piece::CallArguments(index, &self.tool_calls[index].arguments[a..b])
            }
        }
    }

    /// The answer as token pieces in stream order (see [`Answer::spans`]).
    #[cfg(test)]
    pub(crate) fn pieces<'a>(&'a self, counter: &dyn TokenCounter) -> Vec<Piece<'a>> {
        self.spans(counter)
            .into_iter()
            .map(|s| self.piece(s))
            .collect()
    }

    /// The `delta` object llama.cpp streams for `piece`
    /// (`common_chat_msg_diff_to_json_oaicompat`).
    pub(crate) fn delta(&self, piece: Piece<'_>) -> Value {
        match piece {
            Piece::Reasoning(text) => json!({ "reasoning_content": text }),
            Piece::Content(text) => json!({ "content": text }),
            Piece::CallHeader(index) => {
                let call = &self.tool_calls[index];
                json!({ "tool_calls": [{
                    "index": index,
                    "id": call.id,
                    "type": "function",
                    "function": { "name": call.name, "arguments": "" },
                }]})
            }
            Piece::CallArguments(index, text) => json!({ "tool_calls": [{
                "index": index,
                "function": { "arguments": text },
            }]}),
        }
    }
}

/// What has been generated so far: the answer's pieces folded back together.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Transcript {
    pub(crate) reasoning_content: String,
    pub(crate) content: String,
    /// `(id, call)` of the tool calls opened so far, with the arguments generated so far.
    pub(crate) tool_calls: Vec<(String, CallText)>,
}

impl Transcript {
    pub(crate) fn push(&mut self, answer: &Answer, piece: Piece<'_>) {
        match piece {
            Piece::Reasoning(text) => self.reasoning_content.push_str(text),
            Piece::Content(text) => self.content.push_str(text),
            Piece::CallHeader(index) => {
                let call = &answer.tool_calls[index];
                self.tool_calls.push((
                    call.id.clone(),
                    CallText {
                        name: call.name.clone(),
                        arguments: String::new(),
                    },
                ));
            }
            Piece::CallArguments(_, text) => {
                if let Some((_, call)) = self.tool_calls.last_mut() {
                    call.arguments.push_str(text);
                }
            }
        }
    }

    /// Appends the canonical rendering of what was generated (see [`crate::prompt`]).
    pub(crate) fn render_into(&self, out: &mut String) {
        let calls: Vec<CallText> = self.tool_calls.iter().map(|(_, c)| c.clone()).collect();
        render_body(out, &self.reasoning_content, &self.content, &calls);
    }

    /// The non-streaming `message` object, shaped like llama.cpp's
    /// `common_chat_msg::to_json_oaicompat`: `content` is null when there are only tool calls.
    pub(crate) fn message(&self) -> Value {
        let mut message = json!({ "role": "assistant" });
        message["content"] = if self.content.is_empty() && !self.tool_calls.is_empty() {
            Value::Null
        } else {
            json!(self.content)
        };
        if !self.reasoning_content.is_empty() {
            message["reasoning_content"] = json!(self.reasoning_content);
        }
        if !self.tool_calls.is_empty() {
            message["tool_calls"] = self
                .tool_calls
                .iter()
                .map(|(id, call)| {
                    json!({
                        "type": "function",
                        "function": { "name": call.name, "arguments": call.arguments },
                        "id": id,
                    })
                })
                .collect();
        }
        message
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::ApproxTokenCounter;

    fn sample() -> Answer {
        Answer {
            reasoning_content: "Let me look at the files.".into(),
            content: "Running it.".into(),
            tool_calls: vec![
                ToolCall {
                    id: "functions.bash:0".into(),
                    name: "bash".into(),
                    arguments: r#"{"command": "find . -name \"*.py\" | head -20"}"#.into(),
                },
                ToolCall {
                    id: "functions.bash:1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command": "git status"}"#.into(),
                },
            ],
            ..Answer::default()
        }
    }

    #[test]
    fn pieces_follow_stream_order() {
        let a = sample();
        let pieces = a.pieces(&ApproxTokenCounter);
        let first_content = pieces
            .iter()
            .position(|p| matches!(p, Piece::Content(_)))
            .unwrap();
        let first_header = pieces
            .iter()
            .position(|p| matches!(p, Piece::CallHeader(_)))
            .unwrap();
        assert!(matches!(pieces[0], Piece::Reasoning(_)));
        assert!(first_content < first_header);
        assert_eq!(
            pieces
                .iter()
                .filter(|p| matches!(p, Piece::CallHeader(_)))
                .count(),
            2
        );
    }

    #[test]
    fn streamed_tool_call_deltas_reassemble_to_original_arguments() {
        let a = sample();
        // Merge the way clients do: group by index, id/name as set, arguments concatenated.
        let mut merged: Vec<(String, String, String)> = Vec::new();
        for piece in a.pieces(&ApproxTokenCounter) {
            let delta = a.delta(piece);
            let Some(calls) = delta.get("tool_calls") else {
                continue;
            };
            let call = &calls[0];
            let index = call["index"].as_u64().unwrap() as usize;
            if merged.len() <= index {
                merged.resize(index + 1, Default::default());
            }
            if let Some(id) = call.get("id") {
                assert_eq!(call["type"], "function");
                merged[index].0 = id.as_str().unwrap().to_owned();
                merged[index].1 = call["function"]["name"].as_str().unwrap().to_owned();
                assert_eq!(call["function"]["arguments"], "");
            } else {
                assert!(call["function"].get("name").is_none());
            }
            merged[index]
                .2
                .push_str(call["function"]["arguments"].as_str().unwrap());
        }
        let expected: Vec<_> = a
            .tool_calls
            .iter()
            .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
            .collect();
        assert_eq!(merged, expected);
    }

    #[test]
    fn an_answer_extended_goes_on_after_its_tool_calls() {
        let mut a = sample();
        let mut spans = a.spans(&ApproxTokenCounter);
        let natural = spans.len();
        a.extend_to(&mut spans, natural + 3);
        assert_eq!(spans.len(), natural + 3);
        let tail: Vec<_> = spans[natural..].iter().map(|&s| a.piece(s)).collect();
        assert_eq!(tail, vec![Piece::Content(FILLER_WORD); 3]);
        assert_eq!(a.content, format!("Running it.{}", FILLER_WORD.repeat(3)));
        // Already long enough: nothing added.
        a.extend_to(&mut spans, 1);
        assert_eq!(spans.len(), natural + 3);
    }

    #[test]
    fn transcript_rebuilds_answer_and_message() {
        let a = sample();
        let mut t = Transcript::default();
        for piece in a.pieces(&ApproxTokenCounter) {
            t.push(&a, piece);
        }
        assert_eq!(t.reasoning_content, a.reasoning_content);
        assert_eq!(t.content, a.content);
        let m = t.message();
        assert_eq!(m["content"], "Running it.");
        assert_eq!(
            m["tool_calls"][1]["function"]["arguments"],
            a.tool_calls[1].arguments
        );
        assert_eq!(m["tool_calls"][0]["id"], "functions.bash:0");

        let only_calls = Transcript {
            tool_calls: t.tool_calls.clone(),
            ..Transcript::default()
        };
        assert!(only_calls.message()["content"].is_null());
        assert!(only_calls.message().get("reasoning_content").is_none());
        assert_eq!(Transcript::default().message()["content"], "");
    }
}
