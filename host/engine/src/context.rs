//! Live-reply replay's check of the context window, before a request goes
//! out. In live mode the model's own replies make the history, so a session
//! can outgrow the window the recording fit in; its next request is then
//! never sent: the turn fails as the server's refusal would
//! (`exceeds the available context`), and the session ends
//! `context_overflow`.
//!
//! An exact count (the chat template's render, tens of ms for a long
//! prompt) runs only where the request might not fit. The bound: a token
//! covers at least one byte of text, and the body spells every byte of the
//! messages at least once, so the next prompt has at most the last one's
//! server-counted tokens plus the bytes the body grew by. A request whose
//! bound is inside the window is sent unchecked. A session's first request
//! is the recording's own and is sent as recorded replay sends it; without
//! the server's `usage` every later request is counted.

use crate::tokens::LocalCounter;
use agentload_client::RequestBody;
use serde_json::Value;
use std::sync::Arc;

/// The window and the counter that checks requests against it.
pub struct ContextWindow {
    tokens: u64,
    counter: Arc<LocalCounter>,
}

/// The size of a session's last answered request: its body's bytes and
/// the prompt tokens the server counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastPrompt {
    pub bytes: usize,
    pub tokens: u64,
}

/// What the check found for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// Sent without counting: it cannot reach the window.
    Bounded,
    /// Counted; it fits.
    Fits(u64),
    /// Counted; it does not fit. The turn's error names both numbers.
    Over { tokens: u64, window: u64 },
    /// The count failed (the template does not render the messages): the
    /// request is sent and the server judges.
    Uncounted(String),
}

impl Checked {
    /// The failed turn's error for a request over the window (the words the
    /// session metrics read as a context overflow, as in llama.cpp's refusal).
    pub fn error(&self) -> Option<String> {
        match self {
            Self::Over { tokens, window } => Some(format!(
                "not sent: the request ({tokens} tokens, local count) exceeds the available \
                 context size ({window} tokens, model.context_window)"
            )),
            _ => None,
        }
    }
}

impl ContextWindow {
    /// Checks against `tokens`, counting with `counter`.
    pub fn new(tokens: u64, counter: Arc<LocalCounter>) -> Self {
        Self { tokens, counter }
    }

    /// Whether a request of `bytes` must be counted after `last`; `first`
    /// for the session's first request.
    fn must_count(&self, bytes: usize, last: Option<LastPrompt>, first: bool) -> bool {
        match last {
            None => !first,
            Some(last) => {
                let grown = bytes.saturating_sub(last.bytes) as u64;
                last.tokens.saturating_add(grown) >= self.tokens
            }
        }
    }

    /// Checks a request body (the counting runs on a blocking thread).
    pub async fn check(
        &self,
        body: &RequestBody,
        last: Option<LastPrompt>,
        first: bool,
    ) -> Checked {
        if !self.must_count(body.len(), last, first) {
            return Checked::Bounded;
        }
        let bytes = body.to_bytes();
        let counter = self.counter.clone();
        let counted = tokio::task::spawn_blocking(move || {
            let body: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
            counter.count_prompt(&body)
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        match counted {
            Ok(n) if n as u64 >= self.tokens => Checked::Over {
                tokens: n as u64,
                window: self.tokens,
            },
            Ok(n) => Checked::Fits(n as u64),
            Err(e) => Checked::Uncounted(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentload_tokenizer::{ChatTemplate, Tokenizer};
    use bytes::Bytes;

    /// A word-level vocabulary (one token per word or run of punctuation) with a plain
    /// template: counts a test can see.
    fn window(tokens: u64) -> ContextWindow {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        let vocab = serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
            "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
            "post_processor": null, "decoder": null,
            "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "x": 1}, "unk_token": "[UNK]"}
        });
        std::fs::write(&path, vocab.to_string()).unwrap();
        let template =
            ChatTemplate::new("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}")
                .unwrap();
        let tokenizer = Tokenizer::hugging_face(&path, template).unwrap();
        ContextWindow::new(tokens, Arc::new(LocalCounter::new(Arc::new(tokenizer))))
    }

    fn body(text: &str) -> RequestBody {
        let json = serde_json::json!({"messages": [{"role": "user", "content": text}]});
        RequestBody::from_parts(vec![Bytes::from(json.to_string())])
    }

    #[test]
    fn only_a_request_that_might_not_fit_is_counted() {
        let w = window(1000);
        let last = |bytes, tokens| Some(LastPrompt { bytes, tokens });
        // The first request is the recording's own.
        assert!(!w.must_count(50_000, None, true));
        // Without the server's count, every later one is counted.
        assert!(w.must_count(10, None, false));
        // At most one token per byte the body grew by.
        assert!(!w.must_count(4_000, last(3_500, 499), false));
        assert!(w.must_count(4_000, last(3_500, 500), false));
        // A body that shrank keeps the last count as its bound.
        assert!(!w.must_count(100, last(3_500, 999), false));
        assert!(w.must_count(100, last(3_500, 1000), false));
    }

    #[tokio::test]
    async fn a_request_over_the_window_is_named_with_both_numbers() {
        let w = window(20);
        assert_eq!(w.check(&body("hi"), None, true).await, Checked::Bounded);
        let Checked::Fits(n) = w.check(&body("hi"), None, false).await else {
            panic!("not counted");
        };
        assert!(n < 20, "{n}");
        let over = w.check(&body(&"x ".repeat(40)), None, false).await;
        let Checked::Over { tokens, window } = over else {
            panic!("{over:?}");
        };
        assert!(tokens >= 20 && window == 20, "{tokens}");
        let error = over.error().unwrap();
        assert!(
            error.contains("exceeds the available context")
                && error.contains(&format!("({tokens} tokens"))
                && error.contains("model.context_window"),
            "{error}"
        );
    }
}
