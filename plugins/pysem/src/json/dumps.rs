//! `json.dumps` over `serde_json` values, byte for byte: keys in input
//! order, floats as Python's `repr` (`NaN`, `Infinity`, `-Infinity` for the
//! non-finite ones, as `json.dumps` writes them), either `ensure_ascii`,
//! any separators, and `indent`.

use crate::num::write_float_repr;
use serde_json::Value;
use std::fmt::Write as _;

/// The keyword arguments of `json.dumps` that change its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    /// `ensure_ascii`: escape everything outside printable ASCII.
    pub ensure_ascii: bool,
    /// `indent`: `None` writes everything on one line.
    pub indent: Option<usize>,
    /// The item separator (`separators[0]`).
    pub item_separator: &'static str,
    /// The key separator (`separators[1]`).
    pub key_separator: &'static str,
}

impl Format {
    /// `json.dumps(x)`: `ensure_ascii=True`, separators `", "` and `": "`.
    pub const DEFAULT: Format = Format {
        ensure_ascii: true,
        indent: None,
        item_separator: ", ",
        key_separator: ": ",
    };

    /// `json.dumps(x, indent=n)`: as Python does when `indent` is given and
    /// `separators` is not, the item separator becomes `","`.
    pub const fn indented(n: usize) -> Format {
        Format {
            indent: Some(n),
            item_separator: ",",
            ..Format::DEFAULT
        }
    }

    /// The same format with `ensure_ascii` set.
    pub const fn ensure_ascii(self, ensure_ascii: bool) -> Format {
        Format {
            ensure_ascii,
            ..self
        }
    }

    /// The same format with `separators=(item, key)`.
    pub const fn separators(self, item: &'static str, key: &'static str) -> Format {
        Format {
            item_separator: item,
            key_separator: key,
            ..self
        }
    }
}

/// `json.dumps(value, ensure_ascii=ensure_ascii)`.
pub fn dumps(value: &Value, ensure_ascii: bool) -> String {
    dumps_with(value, &Format::DEFAULT.ensure_ascii(ensure_ascii))
}

/// `json.dumps(value, **format)`.
pub fn dumps_with(value: &Value, format: &Format) -> String {
    let mut out = String::new();
    write_with(&mut out, value, format);
    out
}

/// Appends `json.dumps(value, ensure_ascii=ensure_ascii)` to `out`.
pub fn write(out: &mut String, value: &Value, ensure_ascii: bool) {
    write_with(out, value, &Format::DEFAULT.ensure_ascii(ensure_ascii));
}

/// Appends `json.dumps(value, **format)` to `out`.
pub fn write_with(out: &mut String, value: &Value, format: &Format) {
    write_at(out, value, format, 0);
}

fn newline(out: &mut String, format: &Format, depth: usize) {
    if let Some(n) = format.indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', n * depth));
    }
}

fn write_at(out: &mut String, value: &Value, format: &Format, depth: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => write!(out, "{i}").expect("write to String"),
            (_, Some(u), _) => write!(out, "{u}").expect("write to String"),
            (_, _, Some(f)) => write_float(out, f),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_str(out, s, format.ensure_ascii),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(format.item_separator);
                }
                newline(out, format, depth + 1);
                write_at(out, item, format, depth + 1);
            }
            newline(out, format, depth);
            out.push(']');
        }
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(format.item_separator);
                }
                newline(out, format, depth + 1);
                write_str(out, key, format.ensure_ascii);
                out.push_str(format.key_separator);
                write_at(out, item, format, depth + 1);
            }
            newline(out, format, depth);
            out.push('}');
        }
    }
}

/// `json.dumps(s, ensure_ascii=ensure_ascii)` of a string.
pub fn string(s: &str, ensure_ascii: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_str(&mut out, s, ensure_ascii);
    out
}

/// Appends a JSON string literal as `json.dumps` writes it: `"` and `\`
/// escaped, control characters as `\n`-style or `\u00XX` escapes; with
/// `ensure_ascii`, also everything outside printable ASCII (DEL included, as
/// CPython's `[^\ -~]`) as `\uXXXX`, surrogate pairs above the BMP.
pub fn write_str(out: &mut String, s: &str, ensure_ascii: bool) {
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

/// A float as `json.dumps` writes it: `repr(f)`, but `NaN`, `Infinity` and
/// `-Infinity` for the values whose `repr` is `nan`, `inf` and `-inf`.
pub fn float(f: f64) -> String {
    let mut out = String::new();
    write_float(&mut out, f);
    out
}

/// Appends [`float`]'s text to `out`.
pub fn write_float(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("NaN");
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        write_float_repr(out, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_as_python_writes_them() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (123456789012345.0, "123456789012345.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (0.0001, "0.0001"),
            (0.00012, "0.00012"),
            (1e-5, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (12345678901234567890.0, "1.2345678901234567e+19"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::NAN, "NaN"),
        ];
        for (f, want) in cases {
            assert_eq!(float(f), want, "{f:e}");
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
        assert_eq!(string("a\u{1f}\u{20}~\u{7f}", true), r#""a\u001f ~\u007f""#);
    }

    #[test]
    fn separators_and_indent() {
        let v = json!({"a": [1, {"b": []}], "c": {}, "d": "é", "e": 1e-05});
        // json.dumps(v, separators=(",", ":"))
        assert_eq!(
            dumps_with(&v, &Format::DEFAULT.separators(",", ":")),
            r#"{"a":[1,{"b":[]}],"c":{},"d":"\u00e9","e":1e-05}"#
        );
        // json.dumps(v, indent=2)
        assert_eq!(
            dumps_with(&v, &Format::indented(2)),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n  \"c\": {},\n  \
             \"d\": \"\\u00e9\",\n  \"e\": 1e-05\n}"
        );
        // json.dumps(v, indent=0, ensure_ascii=False)
        assert_eq!(
            dumps_with(&json!([1, "é"]), &Format::indented(0).ensure_ascii(false)),
            "[\n1,\n\"é\"\n]"
        );
        // serde_json's pretty printer agrees on layout where floats and
        // escapes do not differ.
        let plain = json!({"k": [1, 2, {"x": true}], "e": {}, "l": []});
        assert_eq!(
            dumps_with(&plain, &Format::indented(2)),
            serde_json::to_string_pretty(&plain).unwrap()
        );
    }
}
