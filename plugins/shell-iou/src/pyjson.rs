//! Just enough of Python's `json.loads` to read a bash call's arguments.
//!
//! The reference decodes a string `arguments` with `json.loads` and skips the
//! call on `JSONDecodeError`. Python accepts more than `serde_json` does
//! (`NaN`, `Infinity`, `-Infinity`, numbers beyond `f64`, lone surrogate
//! escapes), so this scanner follows CPython's `_json` scanner instead: it
//! validates the whole text and keeps, of the top-level object, only the
//! last `command` and `cmd` members (duplicate keys keep the last value).
//!
//! A lone surrogate escape decodes to U+FFFD: like the surrogate in Python,
//! it is neither whitespace, a quote, a separator, `/`, `.` nor a digit, so
//! canonicalization treats both alike. Two differences remain, both cases
//! where the reference raises instead of skipping: integers over 4300 digits
//! (accepted here) and nesting deeper than [`MAX_DEPTH`] (rejected here).

/// What canonicalization needs from one argument value: its text if it is a
/// string, else its Python truthiness (`command or cmd` picks by truthiness).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// A JSON string.
    Str(String),
    /// Any other value; `true` when Python's `bool()` of it is true.
    NotStr(bool),
}

/// The `command` and `cmd` members of a top-level JSON object.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CommandArgs {
    /// Last value of the `command` key, if present.
    pub command: Option<Arg>,
    /// Last value of the `cmd` key, if present.
    pub cmd: Option<Arg>,
}

/// Deepest array/object nesting accepted (CPython raises `RecursionError`
/// near its recursion limit, which the reference does not catch).
const MAX_DEPTH: usize = 1000;

/// Decodes `text` as `json.loads` would. Returns `None` when it would raise
/// or when the document is not an object (the reference skips both).
pub fn command_args(text: &str) -> Option<CommandArgs> {
    let mut scanner = Scanner {
        bytes: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    scanner.skip_ws();
    if scanner.peek() != Some(b'{') {
        // Still a decode error or a non-object: skipped either way.
        return None;
    }
    let (_, args) = scanner.object(true).ok()?;
    scanner.skip_ws();
    (scanner.pos == scanner.bytes.len()).then_some(args)
}

/// A decode error; the reference only needs to know that one occurred.
struct Invalid;

type Scan<T> = Result<T, Invalid>;

struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn next(&mut self) -> Scan<u8> {
        let b = self.peek().ok_or(Invalid)?;
        self.pos += 1;
        Ok(b)
    }

    fn eat(&mut self, literal: &[u8]) -> bool {
        let found = self.bytes[self.pos..].starts_with(literal);
        if found {
            self.pos += literal.len();
        }
        found
    }

    fn expect(&mut self, b: u8) -> Scan<()> {
        (self.next()? == b).then_some(()).ok_or(Invalid)
    }

    /// JSON whitespace only: `str.isspace()` is not used by the decoder.
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Scan<Arg> {
        let truthy = match self.peek().ok_or(Invalid)? {
            b'"' => return self.string().map(Arg::Str),
            b'{' => self.object(false)?.0,
            b'[' => self.array()?,
            _ if self.eat(b"null") || self.eat(b"false") => false,
            _ if self.eat(b"true") => true,
            // float('nan') and float('±inf') are truthy.
            _ if self.eat(b"NaN") || self.eat(b"Infinity") || self.eat(b"-Infinity") => true,
            _ => self.number()?,
        };
        Ok(Arg::NotStr(truthy))
    }

    /// Scans `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?` (ASCII digits,
    /// as CPython's C scanner does) and returns whether it is non-zero. A
    /// partial fraction or exponent is left unconsumed, so the caller fails.
    fn number(&mut self) -> Scan<bool> {
        let start = self.pos;
        self.eat(b"-");
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(Invalid),
        }
        let before_fraction = self.pos;
        if self.eat(b".") && self.digits() == 0 {
            self.pos = before_fraction;
        }
        let before_exponent = self.pos;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                self.pos = before_exponent;
            }
        }
        let literal = std::str::from_utf8(&self.bytes[start..self.pos]).map_err(|_| Invalid)?;
        // Python's int/float are zero exactly when the correctly rounded f64
        // is zero (1e-400 underflows to 0.0; huge values are non-zero).
        let value: f64 = literal.parse().map_err(|_| Invalid)?;
        Ok(value != 0.0)
    }

    /// Consumes ASCII digits; returns how many.
    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn string(&mut self) -> Scan<String> {
        self.expect(b'"')?;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while matches!(self.peek(), Some(b) if b != b'"' && b != b'\\' && b >= 0x20) {
                self.pos += 1;
            }
            // Runs end on ASCII bytes, so they are whole UTF-8 sequences.
            out.push_str(std::str::from_utf8(&self.bytes[start..self.pos]).map_err(|_| Invalid)?);
            match self.next()? {
                b'"' => return Ok(out),
                b'\\' => out.push(self.escape()?),
                // A raw control character (strict mode).
                _ => return Err(Invalid),
            }
        }
    }

    fn escape(&mut self) -> Scan<char> {
        Ok(match self.next()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                if (0xd800..0xdc00).contains(&unit) {
                    // A high surrogate joins a following low-surrogate escape;
                    // otherwise it stays alone and the next escape is read anew.
                    let save = self.pos;
                    if self.eat(b"\\u") {
                        let low = self.hex4()?;
                        if (0xdc00..0xe000).contains(&low) {
                            let c = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
                            return char::from_u32(c).ok_or(Invalid);
                        }
                    }
                    self.pos = save;
                }
                char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER)
            }
            _ => return Err(Invalid),
        })
    }

    fn hex4(&mut self) -> Scan<u32> {
        let mut unit = 0;
        for _ in 0..4 {
            let digit = char::from(self.next()?).to_digit(16).ok_or(Invalid)?;
            unit = unit * 16 + digit;
        }
        Ok(unit)
    }

    fn enter(&mut self) -> Scan<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(()).ok_or(Invalid)
    }

    /// Scans an array; returns whether it is non-empty.
    fn array(&mut self) -> Scan<bool> {
        self.enter()?;
        self.expect(b'[')?;
        self.skip_ws();
        let non_empty = !self.eat(b"]");
        if non_empty {
            loop {
                self.value()?;
                self.skip_ws();
                match self.next()? {
                    b',' => self.skip_ws(),
                    b']' => break,
                    _ => return Err(Invalid),
                }
            }
        }
        self.depth -= 1;
        Ok(non_empty)
    }

    /// Scans an object; returns whether it is non-empty and, when `capture`
    /// is set, its `command` and `cmd` members.
    fn object(&mut self, capture: bool) -> Scan<(bool, CommandArgs)> {
        self.enter()?;
        self.expect(b'{')?;
        self.skip_ws();
        let mut args = CommandArgs::default();
        let non_empty = !self.eat(b"}");
        if non_empty {
            loop {
                if self.peek() != Some(b'"') {
                    return Err(Invalid);
                }
                let key = self.string()?;
                self.skip_ws();
                self.expect(b':')?;
                self.skip_ws();
                let value = self.value()?;
                if capture {
                    match key.as_str() {
                        "command" => args.command = Some(value),
                        "cmd" => args.cmd = Some(value),
                        _ => {}
                    }
                }
                self.skip_ws();
                match self.next()? {
                    b',' => self.skip_ws(),
                    b'}' => break,
                    _ => return Err(Invalid),
                }
            }
        }
        self.depth -= 1;
        Ok((non_empty, args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Option<Arg> {
        Some(Arg::Str(text.to_owned()))
    }

    fn command(text: &str) -> Option<Arg> {
        command_args(text).expect("decodes").command
    }

    #[test]
    fn plain_object() {
        let args = command_args(r#" {"command": "ls -la", "cmd": 3} "#).unwrap();
        assert_eq!(args.command, s("ls -la"));
        assert_eq!(args.cmd, Some(Arg::NotStr(true)));
    }

    #[test]
    fn duplicate_keys_keep_the_last_value() {
        assert_eq!(
            command(r#"{"command": "ls", "command": "cat x"}"#),
            s("cat x")
        );
        assert_eq!(
            command(r#"{"command": "ls", "command": null}"#),
            Some(Arg::NotStr(false))
        );
    }

    #[test]
    fn escapes_and_surrogates() {
        assert_eq!(
            command(r#"{"comm\u0061nd": "a\tb\/c\"d\\"}"#),
            s("a\tb/c\"d\\")
        );
        assert_eq!(command(r#"{"command": "\ud83d\ude00"}"#), s("\u{1f600}"));
        // Lone surrogates are kept by Python; U+FFFD stands in for them.
        assert_eq!(
            command(r#"{"command": "\ud800/bin/ls"}"#),
            s("\u{fffd}/bin/ls")
        );
        assert_eq!(command(r#"{"command": "\ud800\u0041"}"#), s("\u{fffd}A"));
        assert_eq!(command(r#"{"command": "\udc00"}"#), s("\u{fffd}"));
        assert_eq!(command_args(r#"{"command": "\ud800\u00zz"}"#), None);
        assert_eq!(command_args(r#"{"command": "\x"}"#), None);
    }

    #[test]
    fn python_extensions_are_accepted() {
        for text in [
            r#"{"command": "ls", "x": NaN}"#,
            r#"{"command": "ls", "x": [Infinity, -Infinity]}"#,
            r#"{"command": "ls", "x": 1e400}"#,
            r#"{"command": "ls", "x": 123456789012345678901234567890}"#,
        ] {
            assert_eq!(command(text), s("ls"), "{text}");
        }
    }

    #[test]
    fn truthiness_of_non_strings() {
        for (literal, truthy) in [
            ("0", false),
            ("-0", false),
            ("0.0", false),
            ("0e5", false),
            ("1e-400", false),
            ("0.5", true),
            ("-1", true),
            ("NaN", true),
            ("-Infinity", true),
            ("[]", false),
            ("[0]", true),
            ("{}", false),
            ("{\"a\": 1}", true),
            ("false", false),
            ("true", true),
            ("null", false),
        ] {
            let text = format!("{{\"command\": {literal}}}");
            assert_eq!(command(&text), Some(Arg::NotStr(truthy)), "{literal}");
        }
    }

    #[test]
    fn decode_errors() {
        for text in [
            "",
            "   ",
            "{",
            r#"{"command": "ls",}"#,
            r#"{"command": "ls"} x"#,
            r#"{"command": 01}"#,
            r#"{"command": 1.}"#,
            r#"{"command": 1e}"#,
            r#"{"command": -}"#,
            r#"{"command": nan}"#,
            r#"{'command': 'ls'}"#,
            "{\"command\": \"a\nb\"}",
            "\u{feff}{\"command\": \"ls\"}",
            r#"{"command": "ls"  "cmd": "x"}"#,
            r#"{"command": [1,]}"#,
        ] {
            assert_eq!(command_args(text), None, "{text:?}");
        }
    }

    #[test]
    fn non_objects_are_skipped() {
        for text in ["[1]", "\"{}\"", "3", "null"] {
            assert_eq!(command_args(text), None, "{text}");
        }
    }

    #[test]
    fn nesting_limit() {
        let deep = |n: usize| {
            format!(
                "{{\"command\": \"ls\", \"x\": {}{}}}",
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        assert_eq!(command_args(&deep(MAX_DEPTH - 1)).unwrap().command, s("ls"));
        assert_eq!(command_args(&deep(MAX_DEPTH)), None);
    }
}
