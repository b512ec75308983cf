//! [`CountedText`]: a text counted with special tokens recognised, kept so that the next text
//! of its chain (a session's next prompt, which repeats the start of this one) is counted from
//! the last special token both share instead of from its start
//! ([`QwenTokenizer::count_with_special_tokens_after`](crate::QwenTokenizer::count_with_special_tokens_after)).
//!
//! Why a special token's end is a safe place to resume: encoding finds the leftmost special
//! token, encodes the text before it piece by piece, emits it, and goes on from its end, so
//! the tokens up to that end depend on nothing after it but the bytes that decide which
//! special tokens match where. Whether one starts at an offset depends on the
//! [`LONGEST_SPECIAL`] bytes from there. So a special token that ends at least that many bytes
//! inside the prefix two texts share ends at the same place in both, with the same tokens
//! before it.

use crate::{common_prefix_len, SPECIAL_TOKENS};

/// The longest special-token string, in bytes.
pub const LONGEST_SPECIAL: usize = longest(&SPECIAL_TOKENS);

const fn longest(tokens: &[&str]) -> usize {
    let mut i = 0;
    let mut max = 0;
    while i < tokens.len() {
        if tokens[i].len() > max {
            max = tokens[i].len();
        }
        i += 1;
    }
    max
}

/// Where a special token of a [`CountedText`] ends, and the tokens up to there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    /// Byte offset in the normalized text.
    pub end: usize,
    pub tokens: usize,
}

/// A text's token count (special tokens recognised), with what the next text of its chain
/// needs to be counted from where they part: the text (NFC) and the count at the end of each
/// special token in it.
#[derive(Debug, Clone, Default)]
pub struct CountedText {
    text: String,
    marks: Vec<Mark>,
    tokens: usize,
    reused: usize,
}

impl CountedText {
    pub(crate) fn new(text: String, marks: Vec<Mark>, tokens: usize, reused: usize) -> Self {
        Self {
            text,
            marks,
            tokens,
            reused,
        }
    }

    /// The text's tokens.
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// Of [`tokens`](Self::tokens), those taken from the earlier text's count rather than
    /// encoded.
    pub fn reused_tokens(&self) -> usize {
        self.reused
    }

    /// The marks of this text that hold in `text` (normalized): those of special tokens
    /// ending [`LONGEST_SPECIAL`] bytes or more inside the prefix both share.
    pub(crate) fn settled(&self, text: &str) -> &[Mark] {
        let shared = common_prefix_len(self.text.as_bytes(), text.as_bytes());
        let kept = self
            .marks
            .partition_point(|m| m.end + LONGEST_SPECIAL <= shared);
        &self.marks[..kept]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_special_token_is_measured() {
        assert_eq!(LONGEST_SPECIAL, "<tts_text_bos_single>".len());
        assert!(SPECIAL_TOKENS.iter().all(|t| t.len() <= LONGEST_SPECIAL));
    }

    #[test]
    fn only_marks_well_inside_the_shared_prefix_hold() {
        let text = format!("{}<|im_end|>{}", "a".repeat(5), "b".repeat(40));
        let end = 5 + "<|im_end|>".len();
        let counted = CountedText::new(text.clone(), vec![Mark { end, tokens: 6 }], 46, 0);
        assert_eq!(counted.settled(&text).len(), 1);
        // The next text parts right after the special token: too close to trust.
        let parted = format!("{}x", &text[..end]);
        assert!(counted.settled(&parted).is_empty());
        let far = format!("{}x", &text[..end + LONGEST_SPECIAL]);
        assert_eq!(counted.settled(&far).len(), 1);
    }
}
