//! JSON text exactly as the chat template's `tojson` filter writes it: the
//! Hugging Face template runner maps `tojson` to Python's `json.dumps` with
//! `ensure_ascii=False`, default separators (`", "` and `": "`), keys in
//! input order, and floats in Python's `repr` form.

use serde_json::Value;

/// Appends `value` as Python's `json.dumps(value, ensure_ascii=False)`.
pub(crate) fn write(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string());
            } else if let Some(f) = n.as_f64() {
                out.push_str(&float_repr(f));
            }
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str(out, key);
                out.push_str(": ");
                write(out, item);
            }
            out.push('}');
        }
    }
}

/// A JSON string literal: `"` and `\` escaped, control chars as `\n`-style
/// or `\u00XX` escapes, everything else as is.
fn write_str(out: &mut String, s: &str) {
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
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr` of a finite float: the shortest digits that round-trip,
/// in positional form for decimal exponents -4 to 15 (always with a
/// fraction, `1.0`), otherwise as `1.5e+16` / `1e-05`.
fn float_repr(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    // Rust's `{:e}` also prints the shortest round-trip digits: "-1.25e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    if !(-4..16).contains(&exp) {
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{mantissa}e{exp_sign}{:02}", exp.abs());
    }
    let digits: String = mantissa.chars().filter(|&c| c != '.').collect();
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let int_len = exp as usize + 1;
    if digits.len() <= int_len {
        let zeros = "0".repeat(int_len - digits.len());
        format!("{sign}{digits}{zeros}.0")
    } else {
        format!("{sign}{}.{}", &digits[..int_len], &digits[int_len..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dumps(v: &Value) -> String {
        let mut s = String::new();
        write(&mut s, v);
        s
    }

    #[test]
    fn floats_match_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (123.456, "123.456"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (0.0001, "0.0001"),
            (0.00012, "0.00012"),
            (1e-5, "1e-05"),
            (-2.5e-10, "-2.5e-10"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (12345678901234567890.0, "1.2345678901234567e+19"),
        ];
        for (f, want) in cases {
            assert_eq!(float_repr(f), want, "{f:e}");
        }
    }

    #[test]
    fn dumps_like_python() {
        let v = json!({"b": [1, 2.0, null, true], "a": {"x": "é\"\\\n\u{1}"}, "c": {}, "d": []});
        assert_eq!(
            dumps(&v),
            r#"{"b": [1, 2.0, null, true], "a": {"x": "é\"\\\n\u0001"}, "c": {}, "d": []}"#
        );
        assert_eq!(dumps(&json!(-5)), "-5");
        assert_eq!(dumps(&json!(u64::MAX)), "18446744073709551615");
    }
}
