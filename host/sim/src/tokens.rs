//! Token counting: the [`TokenCounter`] trait, the default [`ApproxTokenCounter`], and the
//! Qwen3.6 BPE ([`agentload_tokenizer::QwenTokenizer`]) for token-exact simulation.

use agentload_tokenizer::QwenTokenizer;

/// Counts and splits text into tokens.
///
/// The simulator uses it for prompt lengths (context limit, prefill time, prefix reuse) and to cut
/// answers into the pieces it streams, one piece per chunk. A real tokenizer (for example the Qwen
/// BPE) can be plugged in by implementing this trait.
pub trait TokenCounter: Send + Sync {
    /// Number of tokens in `text`; must equal `self.split(text).len()`.
    fn count(&self, text: &str) -> u32;

    /// Splits `text` into consecutive pieces, one per token, whose concatenation is `text`.
    ///
    /// Pieces must be non-empty. Splitting should be stable under appending text: the pieces of
    /// `a` should be the first pieces of `a + b`, except possibly the last one (the simulator's
    /// prefix reuse compares pieces).
    fn split<'a>(&self, text: &'a str) -> Vec<&'a str>;

    /// [`TokenCounter::ends`] of `text` (from 0), given those of an `earlier` text of the same
    /// session (`earlier_ends`): a counter may reuse the ends of the prefix both share. The
    /// default splits `text` whole.
    fn ends_after(&self, earlier: &str, earlier_ends: &[u32], text: &str) -> Vec<u32> {
        let _ = (earlier, earlier_ends);
        self.ends(text, 0)
    }

    /// Whether [`TokenCounter::ends_after`] reuses anything: the simulator keeps each session's
    /// last prompt and its ends only for a counter that does.
    fn reuses_prefixes(&self) -> bool {
        false
    }

    /// Where each of [`TokenCounter::split`]'s pieces ends, in bytes from the start of
    /// `text` plus `base`.
    fn ends(&self, text: &str, base: u32) -> Vec<u32> {
        let mut end = base;
        self.split(text)
            .iter()
            .map(|piece| {
                end = end.saturating_add(u32::try_from(piece.len()).unwrap_or(u32::MAX));
                end
            })
            .collect()
    }
}

/// Deterministic approximate tokenizer: about 4 bytes per token.
///
/// Pieces are cut greedily from the left, on char boundaries. A piece takes whole chars up to
/// [`ApproxTokenCounter::MAX_PIECE_BYTES`] bytes, and ends early before a whitespace char that
/// follows a non-whitespace char, so words start new pieces with their leading space
/// (`"We need to modify"` gives `"We"`, `" need"`, `" to"`, `" modi"`, `"fy"`). On the
/// agentic-coding dataset's text this averages about 4.15 bytes per token.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproxTokenCounter;

impl ApproxTokenCounter {
    /// Largest piece, in bytes (a single char is never split).
    pub const MAX_PIECE_BYTES: usize = 5;

    /// Byte length of the first piece of a non-empty `text`: on bytes when its first
    /// [`Self::MAX_PIECE_BYTES`] are ASCII (the common case, and the simulator's hot loop
    /// over every prompt), else on chars.
    fn first_piece_len(text: &str) -> usize {
        let bytes = text.as_bytes();
        let window = &bytes[..bytes.len().min(Self::MAX_PIECE_BYTES)];
        if !window.is_ascii() {
            return Self::first_piece_len_chars(text);
        }
        // `char::is_whitespace` on ASCII.
        let space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r');
        let mut prev = space(window[0]);
        for (i, &b) in window.iter().enumerate().skip(1) {
            let now = space(b);
            if now && !prev {
                return i;
            }
            prev = now;
        }
        window.len()
    }

    /// [`Self::first_piece_len`] on chars.
    fn first_piece_len_chars(text: &str) -> usize {
        let mut len = 0;
        let mut prev_whitespace = false;
        for (i, c) in text.char_indices() {
            let whitespace = c.is_whitespace();
            if i > 0 {
                if i + c.len_utf8() > Self::MAX_PIECE_BYTES {
                    break;
                }
                if whitespace && !prev_whitespace {
                    break;
                }
            }
            len = i + c.len_utf8();
            prev_whitespace = whitespace;
        }
        len
    }
}

impl TokenCounter for ApproxTokenCounter {
    fn count(&self, text: &str) -> u32 {
        let mut rest = text;
        let mut n = 0u32;
        while !rest.is_empty() {
            rest = &rest[Self::first_piece_len(rest)..];
            n += 1;
        }
        n
    }

    fn split<'a>(&self, text: &'a str) -> Vec<&'a str> {
        let mut pieces = Vec::with_capacity(text.len() / 4 + 1);
        let mut rest = text;
        while !rest.is_empty() {
            let (piece, tail) = rest.split_at(Self::first_piece_len(rest));
            pieces.push(piece);
            rest = tail;
        }
        pieces
    }

    fn ends(&self, text: &str, base: u32) -> Vec<u32> {
        let mut ends = Vec::with_capacity(text.len() / 4 + 1);
        let (mut at, mut end) = (0, base);
        while at < text.len() {
            let len = Self::first_piece_len(&text[at..]);
            at += len;
            end = end.saturating_add(len as u32);
            ends.push(end);
        }
        ends
    }
}

/// The Qwen3.6 vocabulary: answers are cut at real token boundaries (joined where a token ends
/// inside a UTF-8 character), so `max_tokens` truncates where a Qwen server would.
impl TokenCounter for QwenTokenizer {
    fn count(&self, text: &str) -> u32 {
        self.split_tokens(text).len() as u32
    }

    fn split<'a>(&self, text: &'a str) -> Vec<&'a str> {
        self.split_tokens(text)
    }

    fn ends(&self, text: &str, base: u32) -> Vec<u32> {
        let mut ends = self.token_ends(text);
        if base != 0 {
            for end in &mut ends {
                *end = end.saturating_add(base);
            }
        }
        ends
    }

    /// A session's prompt is mostly its last one: only what follows their shared prefix is
    /// split again ([`QwenTokenizer::token_ends_after`]).
    fn ends_after(&self, earlier: &str, earlier_ends: &[u32], text: &str) -> Vec<u32> {
        self.token_ends_after(earlier, earlier_ends, text)
    }

    fn reuses_prefixes(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_words_with_leading_space() {
        let c = ApproxTokenCounter;
        assert_eq!(
            c.split("We need to modify"),
            vec!["We", " need", " to", " modi", "fy"]
        );
        assert_eq!(c.count("We need to modify"), 5);
    }

    #[test]
    fn pieces_reassemble_and_respect_char_boundaries() {
        let c = ApproxTokenCounter;
        let text = "héllo wörld 🎉🎉 tabs\t\tand\nnewlines   x";
        let pieces = c.split(text);
        assert_eq!(pieces.concat(), text);
        assert_eq!(pieces.len() as u32, c.count(text));
        for p in &pieces {
            assert!(!p.is_empty());
            assert!(p.len() <= ApproxTokenCounter::MAX_PIECE_BYTES);
        }
    }

    #[test]
    fn the_ascii_path_cuts_as_the_char_path() {
        let alphabet = [
            "a", "Z", "0", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1f", "é", "🎉", "\u{a0}",
            "\u{85}", ".",
        ];
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..(x % 12) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                text.push_str(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            x = x.wrapping_add(1);
            if text.is_empty() {
                continue;
            }
            assert_eq!(
                ApproxTokenCounter::first_piece_len(&text),
                ApproxTokenCounter::first_piece_len_chars(&text),
                "{text:?}"
            );
            let mut end = 7;
            let ends: Vec<u32> = ApproxTokenCounter
                .split(&text)
                .iter()
                .map(|p| {
                    end += p.len() as u32;
                    end
                })
                .collect();
            assert_eq!(ApproxTokenCounter.ends(&text, 7), ends, "{text:?}");
        }
    }

    #[test]
    fn empty_text_has_no_tokens() {
        assert_eq!(ApproxTokenCounter.count(""), 0);
        assert!(ApproxTokenCounter.split("").is_empty());
    }

    #[test]
    fn split_is_stable_under_appending() {
        let c = ApproxTokenCounter;
        let a = "fn main() { println!(\"hi\"); }";
        let ab = format!("{a} // more text");
        let pa = c.split(a);
        let pab = c.split(&ab);
        assert_eq!(pa[..pa.len() - 1], pab[..pa.len() - 1]);
    }
}
