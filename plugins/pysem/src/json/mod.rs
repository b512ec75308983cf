//! Python's `json`: [`dumps`] over `serde_json` values, and [`loads`] as
//! CPython's C scanner implements it, producing [`Value`]s:
//! `5` stays an int and `5.0` a float, integers keep every digit, and the
//! non-standard `NaN`, `Infinity` and `-Infinity` are accepted. Duplicate
//! keys keep the last value at the first key's position (`dict(pairs)`).
//!
//! Known differences, all where Python's own `str` cannot be represented in
//! Rust or Python raises an uncaught error: a lone surrogate escape decodes
//! to U+FFFD, and nesting deeper than [`MAX_DEPTH`] is rejected (Python
//! raises `RecursionError` near its recursion limit).

mod dumps;

pub use dumps::{
    dumps, dumps_with, float, string, write, write_float, write_str, write_with, Format,
};

use crate::num::{PyInt, MAX_STR_DIGITS};
use crate::value::Value;

/// Deepest array/object nesting accepted.
pub const MAX_DEPTH: usize = 900;

/// Parses `text` as `json.loads` would; `None` where it raises
/// `JSONDecodeError` or `ValueError`.
pub fn loads(text: &str) -> Option<Value> {
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        pos: 0,
        depth: 0,
    };
    p.ws();
    let v = p.value()?;
    p.ws();
    (p.pos == p.s.len()).then_some(v)
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while matches!(self.s.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.s[self.pos..].starts_with(lit.as_bytes()) {
            self.pos += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Option<Value> {
        match *self.s.get(self.pos)? {
            b'"' => self.string().map(Value::Str),
            b'{' => self.object(),
            b'[' => self.array(),
            b'n' if self.eat("null") => Some(Value::None),
            b't' if self.eat("true") => Some(Value::Bool(true)),
            b'f' if self.eat("false") => Some(Value::Bool(false)),
            b'N' if self.eat("NaN") => Some(Value::Float(f64::NAN)),
            b'I' if self.eat("Infinity") => Some(Value::Float(f64::INFINITY)),
            b'-' if self.s[self.pos..].starts_with(b"-Infinity") => {
                self.pos += 9;
                Some(Value::Float(f64::NEG_INFINITY))
            }
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.s.get(self.pos), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.pos;
        let neg = self.s[self.pos] == b'-';
        if neg {
            self.pos += 1;
        }
        match self.s.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return None,
        }
        let int_end = self.pos;
        let mut is_float = false;
        if self.s.get(self.pos) == Some(&b'.')
            && matches!(self.s.get(self.pos + 1), Some(b'0'..=b'9'))
        {
            self.pos += 1;
            self.digits();
            is_float = true;
        }
        if matches!(self.s.get(self.pos), Some(b'e' | b'E')) {
            let save = self.pos;
            self.pos += 1;
            if matches!(self.s.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                self.pos = save;
            } else {
                is_float = true;
            }
        }
        let text = &self.text[start..self.pos];
        if is_float {
            text.parse::<f64>().ok().map(Value::Float)
        } else {
            let digits = &self.text[start + usize::from(neg)..int_end];
            if digits.len() > MAX_STR_DIGITS {
                return None;
            }
            Some(Value::Int(PyInt::from_digits(neg, digits)))
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = self.text.get(self.pos..self.pos + 4)?;
        if !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.pos += 4;
        u32::from_str_radix(h, 16).ok()
    }

    fn string(&mut self) -> Option<String> {
        self.pos += 1; // opening quote
        let mut out = String::new();
        loop {
            let b = *self.s.get(self.pos)?;
            match b {
                b'"' => {
                    self.pos += 1;
                    return Some(out);
                }
                b'\\' => {
                    self.pos += 1;
                    let e = *self.s.get(self.pos)?;
                    self.pos += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let u = self.hex4()?;
                            let c = if (0xd800..0xdc00).contains(&u)
                                && self.s[self.pos..].starts_with(b"\\u")
                            {
                                let save = self.pos;
                                self.pos += 2;
                                match self.hex4() {
                                    Some(lo) if (0xdc00..0xe000).contains(&lo) => char::from_u32(
                                        0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00),
                                    ),
                                    _ => {
                                        self.pos = save;
                                        None
                                    }
                                }
                            } else {
                                char::from_u32(u)
                            };
                            out.push(c.unwrap_or('\u{fffd}'));
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                _ => {
                    // The run up to the next quote, backslash or control
                    // character, copied at once (it ends on an ASCII byte,
                    // so on a character boundary).
                    let rest = &self.s[self.pos..];
                    let run = rest
                        .iter()
                        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                        .unwrap_or(rest.len());
                    out.push_str(&self.text[self.pos..self.pos + run]);
                    self.pos += run;
                }
            }
        }
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    fn object(&mut self) -> Option<Value> {
        self.enter()?;
        self.pos += 1;
        let mut items: Vec<(String, Value)> = Vec::new();
        self.ws();
        if self.s.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Some(Value::Dict(items));
        }
        loop {
            if self.s.get(self.pos) != Some(&b'"') {
                return None;
            }
            let key = self.string()?;
            self.ws();
            if self.s.get(self.pos) != Some(&b':') {
                return None;
            }
            self.pos += 1;
            self.ws();
            let v = self.value()?;
            match items.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = v,
                None => items.push((key, v)),
            }
            self.ws();
            match self.s.get(self.pos)? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                b'}' => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Some(Value::Dict(items));
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self) -> Option<Value> {
        self.enter()?;
        self.pos += 1;
        let mut items = Vec::new();
        self.ws();
        if self.s.get(self.pos) == Some(&b']') {
            self.pos += 1;
            self.depth -= 1;
            return Some(Value::List(items));
        }
        loop {
            items.push(self.value()?);
            self.ws();
            match self.s.get(self.pos)? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                b']' => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Some(Value::List(items));
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::py_eq;

    #[test]
    fn keeps_int_and_float_apart() {
        let v =
            loads(r#"{"a": 5, "b": 5.0, "c": 1e2, "d": 123456789012345678901234567890}"#).unwrap();
        assert_eq!(v.get("a").unwrap().type_name(), "int");
        assert_eq!(v.get("b").unwrap().type_name(), "float");
        assert_eq!(v.get("c").unwrap().type_name(), "float");
        assert_eq!(v.get("d").unwrap().repr(), "123456789012345678901234567890");
    }

    #[test]
    fn python_extensions_and_errors() {
        assert!(matches!(loads(" NaN "), Some(Value::Float(f)) if f.is_nan()));
        assert!(matches!(loads("-Infinity"), Some(Value::Float(f)) if f == f64::NEG_INFINITY));
        for bad in [
            "01",
            "1.",
            "[1,]",
            "{\"a\":1,}",
            "'a'",
            "\"a\u{1}\"",
            "1 2",
            "",
            "tru",
            "\u{feff}1",
        ] {
            assert!(loads(bad).is_none(), "{bad:?} must fail");
        }
        let v = loads(r#"{"k": 1, "j": 2, "k": 3}"#).unwrap();
        assert_eq!(v.repr(), "{'k': 3, 'j': 2}");
        assert_eq!(
            loads(r#""\ud83d\ude00\u00e9""#).unwrap().as_str(),
            Some("😀é")
        );
        assert!(loads(&"9".repeat(4301)).is_none());
        assert!(py_eq(
            &loads("1e400").unwrap(),
            &Value::Float(f64::INFINITY)
        ));
    }
}
