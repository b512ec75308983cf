//! Character classes as CPython 3.12 sees them (Unicode 15.0).
//!
//! The reference tokenizes with `str.split()` and matches `\d` in a `str`
//! regex; both are Unicode-aware in Python and differ from Rust's defaults
//! (`char::is_whitespace` misses U+001C..U+001F; `char::is_numeric` accepts
//! far more than decimal digits).

/// True for the characters Python's `str.split()` (no argument) splits on:
/// `str.isspace()`, i.e. bidirectional class WS, B or S, or category Zs.
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
/// (general category Nd) in Unicode 15.0, the database of CPython 3.12 and
/// 3.13. Unicode guarantees Nd characters come in contiguous runs 0..=9.
const DIGIT_ZEROS: [u32; 68] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66,
    0xde6, 0xe50, 0xed0, 0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90,
    0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10,
    0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650,
    0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x11f50, 0x16a60, 0x16ac0,
    0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e4f0, 0x1e950,
    0x1fbf0,
];

/// True for what `\d` matches in a Python `str` pattern: a Unicode decimal
/// digit (category Nd), not only `0-9`.
pub fn is_decimal(c: char) -> bool {
    let c = u32::from(c);
    DIGIT_ZEROS
        .iter()
        .any(|&zero| (zero..zero + 10).contains(&c))
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
        for c in ['\u{200b}', '\u{feff}', '\u{180e}', 'a', '\u{0}'] {
            assert!(!is_space(c), "{c:?} is not Python whitespace");
        }
    }

    #[test]
    fn unicode_decimal_digits() {
        for c in [
            '0',
            '9',
            '\u{661}',
            '\u{ff19}',
            '\u{1d7ff}',
            '\u{11f59}',
            '\u{1e4f0}',
        ] {
            assert!(is_decimal(c), "{c:?} is Nd");
        }
        // Numeric but not decimal (No / Nl), and neighbours of runs.
        for c in [
            '\u{b2}',
            '\u{bd}',
            '\u{2160}',
            '\u{2f}',
            '\u{3a}',
            '\u{1d7cd}',
            'x',
        ] {
            assert!(!is_decimal(c), "{c:?} is not Nd");
        }
    }
}
