//! The check of the context window before a request goes out (live-reply
//! and closed-loop replay). There the model's own replies make the
//! history, so a session can outgrow the window the recording fit in; its
//! next request is then never sent: the turn fails as the server's refusal
//! would (`exceeds the available context`), and the session ends
//! (`context_overflow`; a closed-loop session's end is `context_window`).
//!
//! With the model's tokenizer, an exact count (the chat template's render,
//! tens of ms for a long prompt) runs only where the request might not
//! fit. The bound: a token covers at least one byte of text, and the body
//! spells every byte of the messages at least once, so the next prompt has
//! at most the last one's server-counted tokens plus the bytes the body
//! grew by. A request whose bound is inside the window is sent unchecked.
//! A session's first request is the recording's own and is sent as
//! recorded replay sends it; without the server's `usage` every later
//! request is counted.
//!
//! Without a tokenizer (closed-loop replay only), a lower bound decides: a
//! closed-loop request is the previous request, its reply and the tool
//! results, so its prompt has at least the previous prompt's tokens plus
//! the reply's completion tokens, both as the server counted them (the
//! reply's are left out when it carried reasoning, which a chat template
//! may drop from the history). A request whose lower bound reaches the
//! window is not sent; any other is, and the server judges it.

use crate::tokens::LocalCounter;
use agentload_client::RequestBody;
use serde_json::Value;
use std::sync::Arc;

/// The window, where it came from, and the counter that checks requests
/// against it (none: the lower bound only).
pub struct ContextWindow {
    tokens: u64,
    source: String,
    counter: Option<Arc<LocalCounter>>,
}

/// The size of a session's last answered request: its body's bytes, the
/// prompt tokens the server counted, and its reply's completion tokens
/// that the next request carries at least (0 when unknown, or when the
/// reply carried reasoning).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastPrompt {
    pub bytes: usize,
    pub tokens: u64,
    pub reply_tokens: u64,
}

/// What the check found for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// Sent without counting: it cannot reach the window.
    Bounded,
    /// Counted; it fits.
    Fits(u64),
    /// Counted; it does not fit. The turn's error names both numbers.
    Over {
        tokens: u64,
        window: u64,
        source: String,
    },
    /// Not counted (no tokenizer): its lower bound, the previous prompt's
    /// and reply's tokens as the server counted them, reaches the window.
    AtLeast {
        prompt: u64,
        reply: u64,
        window: u64,
        source: String,
    },
    /// The count failed (the template does not render the messages): the
    /// request is sent and the server judges.
    Uncounted(String),
}

impl Checked {
    /// The failed turn's error for a request over the window (the words the
    /// session metrics read as a context overflow, as in llama.cpp's refusal).
    pub fn error(&self) -> Option<String> {
        match self {
            Self::Over {
                tokens,
                window,
                source,
            } => Some(format!(
                "not sent: the request ({tokens} tokens, local count) exceeds the available \
                 context size ({window} tokens, {source})"
            )),
            Self::AtLeast {
                prompt,
                reply,
                window,
                source,
            } => Some(format!(
                "not sent: the request (at least {} tokens: the previous request's {prompt} \
                 prompt tokens and its reply's {reply}, as the server counted them) exceeds the \
                 available context size ({window} tokens, {source})",
                prompt + reply
            )),
            _ => None,
        }
    }
}

impl ContextWindow {
    /// Checks against `tokens` (as `source` says: `model.context_window`,
    /// or what the server reported), counting with `counter`, or by the
    /// lower bound alone without one.
    pub fn new(tokens: u64, source: &str, counter: Option<Arc<LocalCounter>>) -> Self {
        Self {
            tokens,
            source: source.to_owned(),
            counter,
        }
    }

    /// The window, tokens.
    pub fn tokens(&self) -> u64 {
        self.tokens
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
        let Some(counter) = self.counter.clone() else {
            return match last {
                Some(l) if l.tokens.saturating_add(l.reply_tokens) >= self.tokens => {
                    Checked::AtLeast {
                        prompt: l.tokens,
                        reply: l.reply_tokens,
                        window: self.tokens,
                        source: self.source.clone(),
                    }
                }
                _ => Checked::Bounded,
            };
        };
        if !self.must_count(body.len(), last, first) {
            return Checked::Bounded;
        }
        let bytes = body.to_bytes();
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
                source: self.source.clone(),
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
        let counter = Arc::new(LocalCounter::new(Arc::new(tokenizer)));
        ContextWindow::new(tokens, "model.context_window", Some(counter))
    }

    fn body(text: &str) -> RequestBody {
        let json = serde_json::json!({"messages": [{"role": "user", "content": text}]});
        RequestBody::from_parts(vec![Bytes::from(json.to_string())])
    }

    #[test]
    fn only_a_request_that_might_not_fit_is_counted() {
        let w = window(1000);
        let last = |bytes, tokens| {
            Some(LastPrompt {
                bytes,
                tokens,
                reply_tokens: 0,
            })
        };
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
        let Checked::Over { tokens, window, .. } = over else {
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

    #[tokio::test]
    async fn without_a_tokenizer_the_lower_bound_alone_keeps_a_request_back() {
        let w = ContextWindow::new(1000, "GET /props default_generation_settings.n_ctx", None);
        let last = |tokens, reply_tokens| {
            Some(LastPrompt {
                bytes: 10,
                tokens,
                reply_tokens,
            })
        };
        let b = body(&"x ".repeat(5000));
        // No bound known (the first request, no usage): sent, the server judges.
        assert_eq!(w.check(&b, None, true).await, Checked::Bounded);
        assert_eq!(w.check(&b, None, false).await, Checked::Bounded);
        // Below the window: sent, however large the body.
        assert_eq!(w.check(&b, last(900, 99), false).await, Checked::Bounded);
        let over = w.check(&body("hi"), last(900, 100), false).await;
        assert!(
            matches!(
                over,
                Checked::AtLeast {
                    prompt: 900,
                    reply: 100,
                    ..
                }
            ),
            "{over:?}"
        );
        let error = over.error().unwrap();
        assert!(
            error.contains("at least 1000 tokens")
                && error.contains("exceeds the available context size (1000 tokens, GET /props")
                && error.starts_with("not sent"),
            "{error}"
        );
    }
}
