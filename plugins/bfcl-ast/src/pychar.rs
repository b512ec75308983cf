//! Character classes and string helpers as CPython 3.11 (Unicode 14.0) sees
//! them. The checker and the extractor run on Python `str` values, whose
//! whitespace, `\w`, `\d` and `strip()` are Unicode-aware and differ from
//! Rust's defaults.

/// `str.isspace()`: bidirectional class WS, B or S, or category Zs.
/// (Rust's `char::is_whitespace` misses U+001C..U+001F.)
pub fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1c}'..='\u{20}'
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// First code point of each run of ten decimal digits (category Nd) in
/// Unicode 14.0, the database of CPython 3.11.
const DIGIT_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66,
    0xde6, 0xe50, 0xed0, 0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90,
    0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10,
    0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650,
    0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0, 0x16b50,
    0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
];

/// The value of a Unicode decimal digit (what `\d` matches and `int()` reads).
pub fn decimal_value(c: char) -> Option<u32> {
    let c = u32::from(c);
    DIGIT_ZEROS
        .iter()
        .find(|&&zero| (zero..zero + 10).contains(&c))
        .map(|&zero| c - zero)
}

/// `\d` in a `str` pattern.
pub fn is_decimal(c: char) -> bool {
    decimal_value(c).is_some()
}

/// `\w` in a `str` pattern: `str.isalnum()` or `_`. Approximated with Rust's
/// alphanumeric test (which also admits a few combining marks).
pub fn is_word(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// `str.strip()` with no argument.
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// `str.strip(chars)`.
pub fn strip_chars<'a>(s: &'a str, chars: &str) -> &'a str {
    s.trim_matches(|c| chars.contains(c))
}

/// `s[1:-1]` on code points.
pub fn slice_inner(s: &str) -> String {
    let n = s.chars().count();
    if n <= 2 {
        return String::new();
    }
    s.chars().skip(1).take(n - 2).collect()
}

/// `s[:-1]` on code points.
pub fn drop_last(s: &str) -> &str {
    match s.char_indices().last() {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_and_digits() {
        assert!(is_space('\u{1c}') && is_space('\u{3000}') && !is_space('\u{200b}'));
        assert_eq!(decimal_value('\u{663}'), Some(3));
        assert_eq!(decimal_value('7'), Some(7));
        assert!(!is_decimal('\u{b2}'));
        assert_eq!(strip("\u{1f} a b\n"), "a b");
        assert_eq!(strip_chars("'\"k'", "'\""), "k");
        assert_eq!(slice_inner("\"é\""), "é");
        assert_eq!(slice_inner("x"), "");
        assert_eq!(drop_last("12n"), "12");
    }
}
