//! The shared text every message is cut from: one corpus of fixed-width
//! words (five bytes each, a space and four letters), so `n` words are
//! `5 n` bytes and a slice at any word boundary is a valid message.

use crate::draw::Rng;

/// Common four-letter words, each one token with its leading space in the
/// Qwen3 vocabulary (and for the simulator's approximate counter).
const WORDS: [&str; 64] = [
    "code", "file", "test", "line", "type", "name", "path", "list", "read", "call", "make", "from",
    "with", "this", "that", "when", "then", "each", "into", "node", "tree", "edge", "load", "save",
    "open", "sort", "find", "loop", "step", "user", "main", "core", "data", "text", "size", "time",
    "work", "task", "plan", "fast", "slow", "next", "last", "left", "true", "null", "void", "self",
    "enum", "impl", "much", "more", "less", "over", "both", "same", "keep", "drop", "send", "wait",
    "done", "fail", "pass", "note",
];

/// Bytes per word.
pub const WORD_BYTES: usize = 5;

/// The corpus.
#[derive(Debug)]
pub struct Corpus {
    text: String,
}

impl Corpus {
    /// `words` words drawn from `seed`.
    pub fn new(seed: u64, words: u32) -> Self {
        let mut rng = Rng::new(seed, u64::MAX);
        let mut text = String::with_capacity(words as usize * WORD_BYTES);
        for _ in 0..words {
            text.push(' ');
            text.push_str(WORDS[(rng.next_u64() % WORDS.len() as u64) as usize]);
        }
        Self { text }
    }

    /// Words in the corpus.
    pub fn words(&self) -> u32 {
        (self.text.len() / WORD_BYTES) as u32
    }

    /// `count` words from word `at` (wrapping around the end).
    pub fn cut(&self, at: u32, count: u32) -> String {
        let total = self.words();
        let mut out = String::with_capacity(count as usize * WORD_BYTES);
        let (mut at, mut left) = (at % total, count);
        while left > 0 {
            let n = left.min(total - at);
            let start = at as usize * WORD_BYTES;
            out.push_str(&self.text[start..start + n as usize * WORD_BYTES]);
            (at, left) = (0, left - n);
        }
        out
    }
}

/// The `tools` array: the five tools a coding agent calls.
pub const TOOLS_JSON: &str = r#"[{"type":"function","function":{"name":"bash","description":"Run a shell command in the repository and return its output.","parameters":{"type":"object","properties":{"command":{"type":"string","description":"The command line."}},"required":["command"]}}},{"type":"function","function":{"name":"read_file","description":"Read a file of the repository.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},{"type":"function","function":{"name":"write_file","description":"Write a file of the repository.","parameters":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}}},{"type":"function","function":{"name":"search","description":"Search the repository for a pattern.","parameters":{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"]}}},{"type":"function","function":{"name":"edit","description":"Replace text in a file.","parameters":{"type":"object","properties":{"path":{"type":"string"},"old":{"type":"string"},"new":{"type":"string"}},"required":["path","old","new"]}}}]"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_are_whole_words_and_wrap() {
        let corpus = Corpus::new(3, 10);
        assert_eq!(corpus.words(), 10);
        let cut = corpus.cut(8, 5);
        assert_eq!(cut.len(), 5 * WORD_BYTES);
        assert_eq!(&cut[..2 * WORD_BYTES], &corpus.cut(8, 2));
        assert_eq!(&cut[2 * WORD_BYTES..], &corpus.cut(0, 3));
        assert!(cut.split(' ').skip(1).all(|w| WORDS.contains(&w)));
    }

    #[test]
    fn the_tools_are_json_and_named_as_the_plan_names_them() {
        let tools: serde_json::Value = serde_json::from_str(TOOLS_JSON).unwrap();
        let names: Vec<&str> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, crate::plan::TOOLS);
    }
}
