//! HTTP error answers, shaped like llama.cpp's `format_error_response`.
//!
//! llama-server answers errors as `{"error": {"code": <status>, "message": ..., "type": ...}}`;
//! the context-size error (`exceed_context_size_error`, HTTP 400) also carries `n_prompt_tokens`
//! and `n_ctx` (llama.cpp `tools/server/server-common.cpp` `format_error_response` and
//! `server-task.cpp` `server_task_result_error::to_json`).

use serde_json::{json, Value};

/// An error answer: HTTP status plus llama.cpp-style JSON body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApiError {
    pub(crate) status: u16,
    kind: &'static str,
    message: String,
    context: Option<(u32, u32)>,
}

impl ApiError {
    /// HTTP 400 `invalid_request_error`.
    pub(crate) fn invalid_request(message: impl Into<String>) -> Self {
        Self::with_status(400, message)
    }

    /// An error with `status`; the `type` follows llama.cpp's status-to-type mapping.
    pub(crate) fn with_status(status: u16, message: impl Into<String>) -> Self {
        let kind = match status {
            400 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            501 => "not_supported_error",
            503 => "unavailable_error",
            _ => "server_error",
        };
        Self {
            status,
            kind,
            message: message.into(),
            context: None,
        }
    }

    /// llama.cpp's answer to a prompt that does not fit the slot's context
    /// (`n_prompt_tokens >= n_ctx`, checked when the slot picks the task up).
    pub(crate) fn exceed_context(n_prompt_tokens: u32, n_ctx: u32) -> Self {
        Self {
            status: 400,
            kind: "exceed_context_size_error",
            message: format!(
                "request ({n_prompt_tokens} tokens) exceeds the available context size \
                 ({n_ctx} tokens), try increasing it"
            ),
            context: Some((n_prompt_tokens, n_ctx)),
        }
    }

    /// The JSON body.
    pub(crate) fn body(&self) -> Value {
        let mut error = json!({
            "code": self.status,
            "message": self.message,
            "type": self.kind,
        });
        if let Some((n_prompt_tokens, n_ctx)) = self.context {
            error["n_prompt_tokens"] = json!(n_prompt_tokens);
            error["n_ctx"] = json!(n_ctx);
        }
        json!({ "error": error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_error_body_matches_llama_cpp() {
        let e = ApiError::exceed_context(40000, 32768);
        assert_eq!(e.status, 400);
        assert_eq!(
            serde_json::to_string(&e.body()).unwrap(),
            r#"{"error":{"code":400,"message":"request (40000 tokens) exceeds the available context size (32768 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":40000,"n_ctx":32768}}"#
        );
    }

    #[test]
    fn status_maps_to_type() {
        assert_eq!(
            ApiError::with_status(503, "x").body()["error"]["type"],
            "unavailable_error"
        );
        assert_eq!(
            ApiError::with_status(500, "x").body()["error"]["type"],
            "server_error"
        );
        assert_eq!(ApiError::with_status(429, "x").body()["error"]["code"], 429);
        assert_eq!(
            ApiError::invalid_request("bad").body()["error"]["type"],
            "invalid_request_error"
        );
    }
}
