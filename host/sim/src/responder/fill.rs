//! `fill`: answers with exactly the requested number of tokens.

use crate::answer::{Answer, FILLER_WORD as WORD};
use crate::prompt::ChatRequest;
use crate::rng::SplitMix64;

use super::{Rejection, Responder};

/// Answers with `max_tokens` tokens of filler text (the request's cap;
/// `default_tokens` when it sets none), so the answer ends with
/// `finish_reason: "length"` at exactly the requested length: a load whose
/// output lengths the workload chooses (the synthetic agentic workload puts
/// each turn's drawn length in `max_completion_tokens`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fill {
    pub(crate) default_tokens: u32,
}

impl Responder for Fill {
    fn answer(
        &self,
        request: &ChatRequest,
        _session: Option<&str>,
        _ids: &mut SplitMix64,
    ) -> Result<Answer, Rejection> {
        let tokens = request.max_tokens.unwrap_or(self.default_tokens) as usize;
        // One word more than the cap: the cap cuts it, as it cuts a model.
        Ok(Answer {
            content: WORD.repeat(tokens + 1),
            ..Answer::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ApproxTokenCounter, TokenCounter};
    use serde_json::json;

    #[test]
    fn answers_one_token_past_the_cap_in_one_token_words() {
        let request = ChatRequest::parse(&json!({
            "messages": [{"role": "user", "content": "go"}],
            "max_completion_tokens": 7
        }))
        .unwrap();
        let fill = Fill { default_tokens: 3 };
        let a = fill
            .answer(&request, None, &mut SplitMix64::new(0))
            .unwrap();
        assert_eq!(ApproxTokenCounter.count(&a.content), 8);
        let none =
            ChatRequest::parse(&json!({"messages": [{"role": "user", "content": "go"}]})).unwrap();
        let a = fill.answer(&none, None, &mut SplitMix64::new(0)).unwrap();
        assert_eq!(ApproxTokenCounter.count(&a.content), 4);
    }
}
