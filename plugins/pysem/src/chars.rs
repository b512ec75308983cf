//! Character classes and string helpers as CPython 3.12, the reference's
//! Python, sees them: its Unicode database is version 15.0. Python `str`
//! whitespace, `\d`, `\w` and `strip()` are Unicode-aware and differ from
//! Rust's defaults (`char::is_whitespace` misses U+001C..U+001F;
//! `char::is_numeric` accepts far more than decimal digits).

/// The Unicode version of these tables (CPython 3.12 and 3.13's
/// `unicodedata.unidata_version`).
pub const UNICODE_VERSION: &str = "15.0.0";

/// `str.isspace()`, and what `str.split()` with no argument splits on:
/// bidirectional class WS, B or S, or category Zs (unchanged since Unicode
/// 6.3, when U+180E left the set).
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

/// First code point (digit zero) of each run of ten decimal digits
/// (general category Nd) in Unicode 15.0. Unicode guarantees Nd characters
/// come in contiguous runs 0..=9. (15.0 added Kawi, U+11F50, and Nag
/// Mundari, U+1E4F0, to 14.0's 66 runs.)
const DIGIT_ZEROS: [u32; 68] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66,
    0xde6, 0xe50, 0xed0, 0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90,
    0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10,
    0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650,
    0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x11f50, 0x16a60, 0x16ac0,
    0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e4f0, 0x1e950,
    0x1fbf0,
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

/// `\w` in a `str` pattern: `str.isalnum()` or `_`. Approximated with
/// Rust's `char::is_alphanumeric`, the one class here not pinned to Unicode
/// 15.0: it follows the toolchain's Unicode tables, and its Alphabetic
/// property also admits combining marks (Mn/Mc) that `isalnum()` does not.
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
    fn python_whitespace_set() {
        for c in [
            ' ', '\t', '\n', '\r', '\u{b}', '\u{c}', '\u{1c}', '\u{1f}', '\u{85}', '\u{a0}',
            '\u{1680}', '\u{2000}', '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}',
            '\u{3000}',
        ] {
            assert!(is_space(c), "{c:?} is Python whitespace");
        }
        // Rust and Python disagree on these: neither is in str.split()'s set.
        for c in [
            '\u{200b}', '\u{feff}', '\u{180e}', 'a', '\u{0}', '\u{8}', '\u{e}', '\u{1b}',
        ] {
            assert!(!is_space(c), "{c:?} is not Python whitespace");
        }
    }

    #[test]
    fn unicode_15_decimal_digits_and_their_boundaries() {
        for (c, v) in [
            ('0', 0),
            ('9', 9),
            ('\u{661}', 1),
            ('\u{ff19}', 9),
            ('\u{1d7ff}', 9),
            ('\u{1fbf9}', 9),
            // New in Unicode 15.0 (Python 3.12): Kawi and Nag Mundari.
            ('\u{11f50}', 0),
            ('\u{11f59}', 9),
            ('\u{1e4f0}', 0),
            ('\u{1e4f9}', 9),
        ] {
            assert_eq!(decimal_value(c), Some(v), "{c:?} is Nd");
        }
        // Numeric but not decimal (No / Nl), and the neighbours of runs.
        for c in [
            '\u{b2}',
            '\u{bd}',
            '\u{2160}',
            '\u{2f}',
            '\u{3a}',
            '\u{65f}',
            '\u{66a}',
            '\u{1d7cd}',
            '\u{11f4f}',
            '\u{11f5a}',
            '\u{1e4ef}',
            '\u{1e4fa}',
            '\u{1fbfa}',
            'x',
        ] {
            assert!(!is_decimal(c), "{c:?} is not Nd");
        }
        assert_eq!(DIGIT_ZEROS.len(), 68);
        assert!(
            DIGIT_ZEROS.windows(2).all(|w| w[0] + 10 <= w[1]),
            "sorted, disjoint runs"
        );
    }

    #[test]
    fn strings() {
        assert_eq!(strip("\u{1f} a b\n"), "a b");
        assert_eq!(strip("\u{200b}a"), "\u{200b}a");
        assert_eq!(strip_chars("'\"k'", "'\""), "k");
        assert_eq!(slice_inner("\"é\""), "é");
        assert_eq!(slice_inner("x"), "");
        assert_eq!(drop_last("12n"), "12");
    }
}
