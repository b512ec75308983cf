//! `echo`: answers with the last user message's content.

use crate::answer::Answer;
use crate::prompt::ChatRequest;
use crate::rng::SplitMix64;

use super::{Rejection, Responder};

/// Answers with the content of the last `user` message, or of the last message when there is no
/// user message. The token budget truncates it like any answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Echo;

impl Responder for Echo {
    fn answer(
        &self,
        request: &ChatRequest,
        _session: Option<&str>,
        _ids: &mut SplitMix64,
    ) -> Result<Answer, Rejection> {
        let message = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == "user")
            .or(request.messages.last());
        Ok(Answer {
            content: message.map(|m| m.content.clone()).unwrap_or_default(),
            ..Answer::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(body: serde_json::Value) -> Answer {
        let request = ChatRequest::parse(&body).unwrap();
        Echo.answer(&request, None, &mut SplitMix64::new(0))
            .unwrap()
    }

    #[test]
    fn echoes_last_user_message() {
        let a = answer(json!({"messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "reply"},
            {"role": "user", "content": "second"},
            {"role": "tool", "content": "tool output"}
        ]}));
        assert_eq!(a.content, "second");
        assert!(a.tool_calls.is_empty() && a.reasoning_content.is_empty());
    }

    #[test]
    fn falls_back_to_last_message() {
        let a = answer(json!({"messages": [{"role": "system", "content": "only system"}]}));
        assert_eq!(a.content, "only system");
    }
}
