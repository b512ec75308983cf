//! Character classes and string helpers as CPython 3.12, the reference's
//! Python, sees them: its Unicode database is version 15.0, and every class
//! here is that version's (tables generated from it). Python `str`
//! whitespace, `\d`, `\w` and `strip()` are Unicode-aware and differ from
//! Rust's defaults (`char::is_whitespace` misses U+001C..U+001F;
//! `char::is_numeric` accepts far more than decimal digits).

// Generated (tools/gen_unicode_tables.py): kept as written.
#[rustfmt::skip]
mod tables;

use tables::{ALNUM, DIGIT_ZEROS, NOT_PRINTABLE};

/// The Unicode version of these tables (CPython 3.12's
/// `unicodedata.unidata_version`); `tools/gen_unicode_tables.py` writes them
/// from that database with CPython's own predicates.
pub const UNICODE_VERSION: &str = "15.0.0";

/// Whether `c` lies in one of the sorted, disjoint inclusive `ranges`.
fn in_ranges(ranges: &[(u32, u32)], c: char) -> bool {
    let c = u32::from(c);
    let i = ranges.partition_point(|&(_, hi)| hi < c);
    ranges.get(i).is_some_and(|&(lo, _)| lo <= c)
}

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

/// `str.isalnum()`: alphabetic (category Lm, Lt, Lu, Ll, Lo) or with a
/// numeric value. (Rust's `char::is_alphanumeric` differs: other Unicode
/// tables, and combining marks with the Alphabetic property.)
pub fn is_alnum(c: char) -> bool {
    in_ranges(&ALNUM, c)
}

/// `\w` in a `str` pattern: `str.isalnum()` or `_`.
pub fn is_word(c: char) -> bool {
    c == '_' || is_alnum(c)
}

/// `str.isprintable()` for one character: what `repr()` leaves unescaped.
/// Not printable: categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs but space.
pub fn is_printable(c: char) -> bool {
    !in_ranges(&NOT_PRINTABLE, c)
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
    fn the_hand_written_whitespace_set_is_the_table() {
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            assert_eq!(is_space(c), in_ranges(&tables::SPACE, c), "{c:?}");
        }
    }

    #[test]
    fn alnum_and_printable_at_their_boundaries() {
        // (char, isalnum, isprintable) as CPython 3.12 says.
        for (c, alnum, printable) in [
            ('a', true, true),
            ('_', false, true),
            (' ', false, true),
            ('\u{b2}', true, true),     // superscript two: No, numeric
            ('\u{300}', false, true),   // combining grave: Mn
            ('\u{903}', false, true),   // Devanagari visarga: Mc, Alphabetic in Rust
            ('\u{2160}', true, true),   // Roman numeral one: Nl
            ('\u{4e00}', true, true),   // CJK: Lo
            ('\u{ad}', false, false),   // soft hyphen: Cf
            ('\u{a0}', false, false),   // no-break space: Zs
            ('\u{200b}', false, false), // zero width space: Cf
            ('\u{2028}', false, false), // line separator: Zl
            ('\u{e000}', false, false), // private use: Co
            ('\u{378}', false, false),  // unassigned: Cn
            // New in Unicode 15.0: CJK Extension H and Kawi.
            ('\u{31350}', true, true),
            ('\u{323af}', true, true),
            ('\u{323b0}', false, false),
            ('\u{11f04}', true, true),
            ('\u{11f50}', true, true),
            // Unassigned in 15.0 (assigned later): Garay, Unicode 16.0.
            ('\u{10d40}', false, false),
        ] {
            assert_eq!(is_alnum(c), alnum, "isalnum({c:?})");
            assert_eq!(is_printable(c), printable, "isprintable({c:?})");
        }
        assert!(is_word('_') && is_word('\u{661}') && !is_word('\u{903}'));
        // Where Rust's tables disagree: a combining mark with the Alphabetic
        // property.
        assert!('\u{903}'.is_alphanumeric() && !is_alnum('\u{903}'));
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
