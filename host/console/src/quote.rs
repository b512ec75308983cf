//! Text from outside agentload made safe to show: a server's answer, a
//! metrics page, a file's line, a plugin's or a shard's message. Printed
//! raw, an `ESC [2J` clears the user's terminal, an OSC sequence retitles
//! it, a carriage return overwrites the line before it, and a bidirectional
//! override reorders what is read. Every such character is shown as an
//! escape (`\u{1b}`, `\r`) instead; everything else is kept as it is.
//!
//! - [`escape`]: one value put into a message (line ends escaped too, so the
//!   value stays on its line);
//! - [`quote`]: the first bytes of a body, in backticks;
//! - [`printable`]: a whole message or page, its own line ends and tabs
//!   kept. [`crate::line`] and [`crate::out`] pass everything through it, so
//!   nothing reaches the terminal raw even where a caller forgot; HTML
//!   reports pass their page through it too.

use std::borrow::Cow;

/// Whether `c` is shown as an escape: control characters (C0, DEL, C1) and
/// the bidirectional embeddings, overrides and isolates.
fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escaped(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| unsafe_char(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) && !keep(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` with every control character (line ends included) and
/// bidirectional override shown as an escape: for one value from outside
/// agentload put into a message (an HTTP error body, a parse error, a
/// name), so it can neither drive the terminal nor break the line.
pub fn escape(text: &str) -> Cow<'_, str> {
    escaped(text, |_| false)
}

/// A whole message or page: as [`escape`], but its line ends and tabs are
/// kept.
pub fn printable(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c == '\n' || c == '\t')
}

/// The first `max` bytes of `bytes` as text in backticks (invalid UTF-8
/// shown as U+FFFD), escaped as by [`escape`], `…` after it when cut;
/// `(nothing)` when empty.
pub fn quote(bytes: &[u8], max: usize) -> String {
    if bytes.is_empty() {
        return "(nothing)".into();
    }
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(max)]);
    let more = if bytes.len() > max { "…" } else { "" };
    format!("`{}{more}`", escape(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_sequences_are_shown_not_sent() {
        let hostile = "HTTP body \x1b[2J\x1b]0;pwned\x07 NUL\0 \r\n\u{9b}31m \u{202e}txt.exe";
        let e = escape(hostile);
        assert!(!e.chars().any(unsafe_char), "{e}");
        assert_eq!(
            e,
            "HTTP body \\u{1b}[2J\\u{1b}]0;pwned\\u{7} NUL\\u{0} \\r\\n\\u{9b}31m \\u{202e}txt.exe"
        );
        let p = printable("line 1\n\tline 2\x1b[2J\r");
        assert_eq!(p, "line 1\n\tline 2\\u{1b}[2J\\r");
    }

    #[test]
    fn plain_text_is_borrowed_as_it_is() {
        assert!(matches!(escape("tok/s: 12.5 — ok ü"), Cow::Borrowed(_)));
        assert!(matches!(printable("a\nb\tc"), Cow::Borrowed(_)));
    }

    #[test]
    fn quote_cuts_and_marks_the_cut() {
        assert_eq!(quote(b"", 4), "(nothing)");
        assert_eq!(quote(b"abc", 4), "`abc`");
        assert_eq!(quote(b"abcdef\x1b", 4), "`abcd…`");
        assert_eq!(quote(b"a\nb", 4), "`a\\nb`");
        assert_eq!(quote(&[0xff, b'a'], 4), "`\u{fffd}a`");
    }
}
