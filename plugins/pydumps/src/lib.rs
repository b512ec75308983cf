//! Python's `json.dumps(value, ensure_ascii=...)` with its default
//! separators (`", "` and `": "`), keys in input order, and floats in
//! Python's `repr` form — byte for byte, for the places where agentload must
//! write JSON the way a Python reference does (the chat template's `tojson`,
//! BFCL's language hints).

use serde_json::Value;
use std::fmt::Write;

/// `json.dumps(value, ensure_ascii=ensure_ascii)`.
pub fn dumps(value: &Value, ensure_ascii: bool) -> String {
    let mut out = String::new();
    write(&mut out, value, ensure_ascii);
    out
}

/// Appends `json.dumps(value, ensure_ascii=ensure_ascii)` to `out`.
pub fn write(out: &mut String, value: &Value, ensure_ascii: bool) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => write!(out, "{i}").expect("write to String"),
            (_, Some(u), _) => write!(out, "{u}").expect("write to String"),
            (_, _, Some(f)) => out.push_str(&float_repr(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_str(out, s, ensure_ascii),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(out, item, ensure_ascii);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str(out, key, ensure_ascii);
                out.push_str(": ");
                write(out, item, ensure_ascii);
            }
            out.push('}');
        }
    }
}

/// A JSON string literal: `"` and `\` escaped, control characters as
/// `\n`-style or `\u00XX` escapes; with `ensure_ascii`, also everything
/// outside printable ASCII (DEL included, as CPython's `[^\ -~]`) as
/// `\uXXXX`, surrogate pairs above the BMP.
fn write_str(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ensure_ascii && (c as u32) > 0x7e) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(out, "\\u{unit:04x}").expect("write to String");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `float.__repr__` (as `json.dumps` writes floats): the shortest
/// digits that round-trip, positional for decimal exponents -4 to 15 (always
/// with a fraction, `1.0`), otherwise `1.5e+16` / `1e-05`; `NaN`,
/// `Infinity`, `-Infinity`.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // Rust's `{:e}` prints the shortest round-trip digits too: "-1.25e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let (sign, mantissa) = mantissa
        .strip_prefix('-')
        .map_or(("", mantissa), |m| ("-", m));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..16).contains(&exp) {
        let frac = &digits[1..];
        let frac = if frac.is_empty() {
            String::new()
        } else {
            format!(".{frac}")
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{}{frac}e{exp_sign}{:02}", &digits[..1], exp.abs());
    }
    let point = exp + 1;
    if point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!(
            "{sign}{digits}{}.0",
            "0".repeat(point as usize - digits.len())
        )
    } else {
        let p = point as usize;
        format!("{sign}{}.{}", &digits[..p], &digits[p..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_match_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (123.456, "123.456"),
            (123456789012345.0, "123456789012345.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (0.0001, "0.0001"),
            (0.00012, "0.00012"),
            (1e-5, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (-2.5e-10, "-2.5e-10"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (12345678901234567890.0, "1.2345678901234567e+19"),
            (f64::INFINITY, "Infinity"),
        ];
        for (f, want) in cases {
            assert_eq!(float_repr(f), want, "{f:e}");
        }
    }

    #[test]
    fn dumps_like_python_with_and_without_ensure_ascii() {
        let v = json!({"b": [1, 2.0, null, true], "a": {"x": "é\"\\\n\u{1}"}, "c": {}, "d": []});
        assert_eq!(
            dumps(&v, false),
            r#"{"b": [1, 2.0, null, true], "a": {"x": "é\"\\\n\u0001"}, "c": {}, "d": []}"#
        );
        assert_eq!(
            dumps(&json!({"b": "x\u{7f}é😀"}), true),
            r#"{"b": "x\u007f\u00e9\ud83d\ude00"}"#
        );
        assert_eq!(dumps(&json!("\u{7f}"), false), "\"\u{7f}\"");
        assert_eq!(dumps(&json!(-5), true), "-5");
        assert_eq!(dumps(&json!(u64::MAX), false), "18446744073709551615");
    }
}
