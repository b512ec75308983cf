//! A strict single-pass reader of the chunk shapes streaming servers send: the fields the
//! assembler reads are taken (strings borrowed unless they hold escapes), every other value is
//! checked and skipped, and nothing is built for it.
//!
//! It reads a subset of JSON and gives up (`None`) on anything outside it, so that whatever it
//! does read is read as `serde_json` reads it:
//! - a key with an escape, a known key given twice, a known field of another type than the
//!   usual one (`content` a number, `choices` an object, a first choice that is not an
//!   object, a tool call that is not an object, an `index` that is not a plain unsigned
//!   integer), a non-null `error`;
//! - anything that is not JSON: a bad escape or number, a lone surrogate, a control
//!   character in a string, trailing bytes, nesting deeper than [`MAX_DEPTH`].
//!
//! The caller then reads the chunk as a `serde_json::Value`, which takes any shape and names
//! the error of what is not JSON.

use std::borrow::Cow;

/// Nesting this deep is left to `serde_json` (whose own limit is 128).
const MAX_DEPTH: u32 = 64;

/// Integer digits plus exponent of the largest number read here (an `f64` ends near 1e308).
const MAX_MAGNITUDE: usize = 300;

/// Whether any byte of `w` is a quote, a backslash or a control character (below 0x20).
fn has_special(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let quote = zero_byte(w ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(w ^ (ONES * u64::from(b'\\')));
    // A byte below 0x20 (and not 0x80 or above): subtracting 0x20 borrows into its top bit.
    let control = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    quote | backslash | control != 0
}

/// A chunk's fields the assembler reads.
#[derive(Debug, Default)]
pub(super) struct Chunk<'a> {
    /// The completion's `id`, when a string.
    pub id: Option<Cow<'a, str>>,
    /// `choices`, when an array: its first element, if any.
    pub choices: Option<Option<Choice<'a>>>,
    /// The raw text of `usage`, `timings` and `agentload_sim` (the simulator's stamps), when
    /// present and not null.
    pub extras: [Option<&'a str>; 3],
}

#[derive(Debug, Default)]
pub(super) struct Choice<'a> {
    pub finish_reason: Option<Cow<'a, str>>,
    pub delta: Option<Delta<'a>>,
}

#[derive(Debug, Default)]
pub(super) struct Delta<'a> {
    pub content: Option<Cow<'a, str>>,
    pub reasoning_content: Option<Cow<'a, str>>,
    pub reasoning: Option<Cow<'a, str>>,
    pub tool_calls: Option<Vec<Call<'a>>>,
}

#[derive(Debug, Default)]
pub(super) struct Call<'a> {
    pub index: Option<u64>,
    pub id: Option<Cow<'a, str>>,
    pub function: Option<Function<'a>>,
}

#[derive(Debug, Default)]
pub(super) struct Function<'a> {
    pub name: Option<Cow<'a, str>>,
    pub arguments: Option<Cow<'a, str>>,
}

/// Reads `data` as a chunk; `None` when it is outside the shapes read here.
pub(super) fn chunk(data: &str) -> Option<Chunk<'_>> {
    let mut s = Scan {
        text: data,
        at: 0,
        depth: 0,
    };
    let chunk = s.chunk()?;
    s.ws();
    (s.at == data.len()).then_some(chunk)
}

/// The reader's place in the text.
struct Scan<'a> {
    text: &'a str,
    at: usize,
    depth: u32,
}

impl<'a> Scan<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// Skips JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes().get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, not taken.
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.bytes().get(self.at).copied()
    }

    /// Takes `byte` (after whitespace).
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Takes the literal `word` (`null`, `true`, `false`).
    fn literal(&mut self, word: &str) -> Option<()> {
        self.ws();
        self.text[self.at..]
            .starts_with(word)
            .then(|| self.at += word.len())
    }

    /// `null` (taken: `Some(true)`), or something else (not taken: `Some(false)`).
    fn null(&mut self) -> Option<bool> {
        if self.peek()? == b'n' {
            self.literal("null")?;
            return Some(true);
        }
        Some(false)
    }

    /// A string or null.
    fn text_or_null(&mut self) -> Option<Option<Cow<'a, str>>> {
        self.unless_null(Self::string)
    }

    /// A string: borrowed when it has no escapes.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let start = self.at;
        let end = self.plain_run()?;
        if self.bytes()[end] == b'"' {
            self.at = end + 1;
            return Some(Cow::Borrowed(&self.text[start..end]));
        }
        let mut owned = String::with_capacity(end - start + 16);
        owned.push_str(&self.text[start..end]);
        self.at = end + 1;
        loop {
            self.escape(&mut owned)?;
            let from = self.at;
            let end = self.plain_run()?;
            owned.push_str(&self.text[from..end]);
            self.at = end + 1;
            if self.bytes()[end] == b'"' {
                return Some(Cow::Owned(owned));
            }
        }
    }

    /// Where the run of plain string bytes from here ends: at a quote or a backslash; `None`
    /// at a control character (not JSON) or the end of the text.
    fn plain_run(&self) -> Option<usize> {
        let b = self.bytes();
        let mut i = self.at;
        // Eight bytes at a time while none of them is special.
        while let Some(word) = b.get(i..i + 8) {
            let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
            if has_special(w) {
                break;
            }
            i += 8;
        }
        loop {
            match *b.get(i)? {
                b'"' | b'\\' => return Some(i),
                0..=0x1f => return None,
                _ => i += 1,
            }
        }
    }

    /// One escape after its backslash.
    fn escape(&mut self, out: &mut String) -> Option<()> {
        let byte = *self.bytes().get(self.at)?;
        self.at += 1;
        let c = match byte {
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
                match unit {
                    0xD800..=0xDBFF => {
                        // A high surrogate pairs only with an escaped low one.
                        if !self.text[self.at..].starts_with("\\u") {
                            return None;
                        }
                        self.at += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        let c = 0x10000
                            + ((u32::from(unit) - 0xD800) << 10)
                            + (u32::from(low) - 0xDC00);
                        char::from_u32(c)?
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => char::from_u32(u32::from(unit))?,
                }
            }
            _ => return None,
        };
        out.push(c);
        Some(())
    }

    fn hex4(&mut self) -> Option<u16> {
        let digits = self.text.get(self.at..self.at + 4)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.at += 4;
        u16::from_str_radix(digits, 16).ok()
    }

    /// A key: a string without escapes, and its colon.
    fn key(&mut self) -> Option<&'a str> {
        match self.string()? {
            Cow::Borrowed(key) => {
                self.eat(b':')?;
                Some(key)
            }
            Cow::Owned(_) => None,
        }
    }

    /// An object whose members `member` takes (it must take each value).
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.items(b'{', b'}', |s, _| {
            let key = s.key()?;
            member(s, key)
        })
    }

    /// An array whose elements `element` takes, with their position.
    fn array(&mut self, element: impl FnMut(&mut Self, usize) -> Option<()>) -> Option<()> {
        self.items(b'[', b']', element)
    }

    /// Items between `open` and `close`, separated by commas, each taken by `item` with its
    /// position.
    fn items(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        self.eat(open)?;
        self.nest()?;
        if self.peek()? == close {
            self.at += 1;
        } else {
            for i in 0.. {
                item(self, i)?;
                match self.peek()? {
                    b',' => self.at += 1,
                    c if c == close => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    fn nest(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// Any value, checked and skipped.
    fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|s, _| s.skip()),
            b'[' => self.array(|s, _| s.skip()),
            b'n' => self.literal("null"),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            _ => self.number(),
        }
    }

    /// A number as JSON writes it: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`, and
    /// one that `serde_json` reads as a finite value: its integer digits and its exponent
    /// together stay under [`MAX_MAGNITUDE`] (beyond, `serde_json` may refuse it as out of
    /// range).
    fn number(&mut self) -> Option<()> {
        self.ws();
        let b = self.bytes();
        let mut i = self.at;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        let digits = |i: &mut usize| {
            let from = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i > from
        };
        let int_start = i;
        match b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => {
                digits(&mut i);
            }
            _ => return None,
        }
        let mut magnitude = i - int_start;
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !digits(&mut i) {
                return None;
            }
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            let negative = b.get(i) == Some(&b'-');
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            let from = i;
            if !digits(&mut i) || i - from > 3 {
                return None;
            }
            if !negative {
                magnitude += self.text[from..i].parse::<usize>().ok()?;
            }
        }
        if magnitude > MAX_MAGNITUDE {
            return None;
        }
        self.at = i;
        Some(())
    }

    /// An unsigned integer without fraction or exponent that fits a `u64`.
    fn index(&mut self) -> Option<u64> {
        self.ws();
        let start = self.at;
        self.number()?;
        let text = &self.text[start..self.at];
        if text.len() > 1 && text.starts_with('0') {
            return None;
        }
        text.parse().ok()
    }

    /// A value's raw text, checked; `None` for null.
    fn raw(&mut self) -> Option<Option<&'a str>> {
        if self.null()? {
            return Some(None);
        }
        let start = self.at;
        self.skip()?;
        Some(Some(&self.text[start..self.at]))
    }

    /// An object whose members named in `known` go to `field` with their position there
    /// (each once at most: a second one gives up); every other member is checked and skipped.
    fn fields<const N: usize>(
        &mut self,
        known: [&str; N],
        mut field: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        let mut seen = [false; N];
        self.object(|s, key| match known.iter().position(|k| *k == key) {
            Some(slot) if !std::mem::replace(&mut seen[slot], true) => field(s, slot),
            Some(_) => None,
            None => s.skip(),
        })
    }

    /// A value that may be null: `read` takes it otherwise.
    fn unless_null<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.null()? {
            return Some(None);
        }
        read(self).map(Some)
    }

    fn chunk(&mut self) -> Option<Chunk<'a>> {
        let mut chunk = Chunk::default();
        let known = [
            "choices",
            "usage",
            "timings",
            "agentload_sim",
            "error",
            "id",
        ];
        self.fields(known, |s, slot| {
            match slot {
                0 => chunk.choices = s.unless_null(Self::choices)?,
                // Only a null error is read here.
                4 => s.literal("null")?,
                5 => chunk.id = s.text_or_null()?,
                n => chunk.extras[n - 1] = s.raw()?,
            }
            Some(())
        })?;
        Some(chunk)
    }

    /// The choices array: its first element (an object), the others skipped.
    fn choices(&mut self) -> Option<Option<Choice<'a>>> {
        let mut first = None;
        self.array(|s, i| {
            if i > 0 {
                return s.skip();
            }
            let mut choice = Choice::default();
            s.fields(["finish_reason", "delta"], |s, slot| {
                match slot {
                    0 => choice.finish_reason = s.text_or_null()?,
                    _ => choice.delta = s.unless_null(Self::delta)?,
                }
                Some(())
            })?;
            first = Some(choice);
            Some(())
        })?;
        Some(first)
    }

    fn delta(&mut self) -> Option<Delta<'a>> {
        let mut d = Delta::default();
        let known = ["content", "reasoning_content", "reasoning", "tool_calls"];
        self.fields(known, |s, slot| {
            match slot {
                0 => d.content = s.text_or_null()?,
                1 => d.reasoning_content = s.text_or_null()?,
                2 => d.reasoning = s.text_or_null()?,
                _ => {
                    d.tool_calls = s.unless_null(|s| {
                        let mut calls = Vec::new();
                        s.array(|s, _| {
                            calls.push(s.call()?);
                            Some(())
                        })?;
                        Some(calls)
                    })?;
                }
            }
            Some(())
        })?;
        Some(d)
    }

    fn call(&mut self) -> Option<Call<'a>> {
        let mut call = Call::default();
        self.fields(["index", "id", "function"], |s, slot| {
            match slot {
                0 => call.index = s.unless_null(Self::index)?,
                1 => call.id = s.text_or_null()?,
                _ => call.function = s.unless_null(Self::function)?,
            }
            Some(())
        })?;
        Some(call)
    }

    fn function(&mut self) -> Option<Function<'a>> {
        let mut f = Function::default();
        self.fields(["name", "arguments"], |s, slot| {
            let text = s.text_or_null()?;
            match slot {
                0 => f.name = text,
                _ => f.arguments = text,
            }
            Some(())
        })?;
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_servers_send_is_read_and_borrowed() {
        let c = chunk(
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hi","role":"assistant"}}],"created":1,"id":"x","object":"chat.completion.chunk","usage":{"a":[1,2.5e-3,{"b":null}]} , "timings":null}"#,
        )
        .unwrap();
        let choice = c.choices.unwrap().unwrap();
        assert!(choice.finish_reason.is_none());
        let content = choice.delta.unwrap().content.unwrap();
        assert!(matches!(content, Cow::Borrowed("Hi")));
        assert_eq!(
            c.extras,
            [Some(r#"{"a":[1,2.5e-3,{"b":null}]}"#), None, None]
        );
    }

    #[test]
    fn escapes_are_decoded_as_json_says() {
        let c = chunk(r#"{"choices":[{"delta":{"content":"a\"b\\c\/\n\t\u00e9\ud83d\ude00"}}]}"#)
            .unwrap();
        let content = c.choices.unwrap().unwrap().delta.unwrap().content.unwrap();
        assert_eq!(content, "a\"b\\c/\n\té😀");
    }

    #[test]
    fn tool_calls_are_read() {
        let c = chunk(
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c","type":"function","function":{"name":"bash","arguments":"{\"a\""}}]}}]}"#,
        )
        .unwrap();
        let calls = c
            .choices
            .unwrap()
            .unwrap()
            .delta
            .unwrap()
            .tool_calls
            .unwrap();
        assert_eq!(calls[0].index, Some(1));
        let f = calls[0].function.as_ref().unwrap();
        assert_eq!(f.arguments.as_deref(), Some(r#"{"a""#));
        assert_eq!(f.name.as_deref(), Some("bash"));
    }

    /// What it does not read is left to `serde_json`, and so is what is not JSON.
    #[test]
    fn it_gives_up_outside_its_subset() {
        for data in [
            // Not JSON.
            "",
            "{",
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":-}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":"\udc00"}"#,
            "{\"a\":\"\u{1}\"}",
            r#"{"a":1,}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":1} x"#,
            r#"{"a":tru}"#,
            r#"{"a":1e400}"#,
            r#"{"a":1e0001}"#,
            // JSON, but another shape.
            r#"{"cho\u0069ces":[]}"#,
            r#"{"choices":[],"choices":[]}"#,
            r#"{"choices":{}}"#,
            r#"{"choices":["x"]}"#,
            r#"{"choices":[{"delta":{"content":1}}]}"#,
            r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
            r#"{"choices":[{"finish_reason":5}]}"#,
            r#"{"choices":[{"delta":"text"}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":{}}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[3]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1.0}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":-1}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":18446744073709551616}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":{}}}]}}]}"#,
            r#"{"error":{"message":"boom"}}"#,
            r#"[]"#,
        ] {
            assert!(chunk(data).is_none(), "{data}");
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(70), "]".repeat(70));
        assert!(chunk(&deep).is_none());
        assert!(chunk(" {\"error\":null,\"x\":[true,false,null,-0.5E+2,1e-400]} \n").is_some());
    }
}

/// The scanner against `serde_json::Value` on generated chunks: wherever it reads a chunk, the
/// assembler's answer is the one the general path gives.
#[cfg(test)]
mod agreement {
    use super::super::CompletionAssembler;

    /// A known field and how its usual value is made.
    type Field<'k> = (&'k str, fn(&mut Gen) -> String);

    /// A small deterministic generator (xorshift), so failures reproduce by seed.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn one_in(&mut self, n: u64) -> bool {
            self.next().is_multiple_of(n)
        }

        fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
            from[(self.next() % from.len() as u64) as usize]
        }

        fn ws(&mut self) -> &'static str {
            self.pick(&["", "", "", " ", "\n", "\t "])
        }

        /// A value of any kind, `depth` levels deep at most.
        fn value(&mut self, depth: u32) -> String {
            let kinds = if depth == 0 { 6 } else { 8 };
            match self.next() % kinds {
                0 => self.string(),
                1 => "null".into(),
                2 => self
                    .pick(&[
                        "0",
                        "-0",
                        "7",
                        "1.5",
                        "-2e-3",
                        "1E+2",
                        "1796329485",
                        "1e400",
                        "01",
                        "1.",
                        "-",
                    ])
                    .into(),
                3 => self.pick(&["true", "false", "true", "false", "tru"]).into(),
                4 | 5 => self.string(),
                6 => {
                    let n = self.next() % 3;
                    let items: Vec<String> = (0..n).map(|_| self.value(depth - 1)).collect();
                    format!("[{}]", items.join(","))
                }
                _ => {
                    let n = self.next() % 3;
                    let members: Vec<String> = (0..n)
                        .map(|_| {
                            let key = self.key();
                            format!("{key}:{}", self.value(depth - 1))
                        })
                        .collect();
                    format!("{{{}}}", members.join(","))
                }
            }
        }

        fn string(&mut self) -> String {
            let parts = [
                "",
                "a",
                "word",
                " ",
                r#"\""#,
                r"\\",
                r"\/",
                r"\n",
                r"\t",
                r"\u00e9",
                "é",
                r"\ud83d\ude00",
                "{\\\"command\\\":",
            ];
            // Not JSON: a lone surrogate, a bad escape, a raw control character.
            let bad = [r"\ud800", r"\udc00x", r"\x", "\u{1}", "\u{1f}", r"\u12"];
            let n = self.next() % 4;
            let mut text: String = (0..n).map(|_| self.pick(&parts)).collect();
            if self.one_in(40) {
                text.push_str(self.pick(&bad));
            }
            format!("\"{text}\"")
        }

        fn key(&mut self) -> String {
            let key = self.pick(&[
                "choices",
                "delta",
                "content",
                "reasoning_content",
                "reasoning",
                "tool_calls",
                "index",
                "id",
                "function",
                "name",
                "arguments",
                "finish_reason",
                "usage",
                "timings",
                "agentload_sim",
                "error",
                "role",
                "x",
                r"cho\u0069ces",
            ]);
            format!("\"{key}\"")
        }

        /// An object with the known `fields` (each present or not, sometimes twice, of its
        /// usual kind or another), among unknown ones.
        fn object(&mut self, fields: &[Field<'_>]) -> String {
            let mut members = Vec::new();
            for (key, usual) in fields {
                let times = [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2][(self.next() % 12) as usize];
                for _ in 0..times {
                    let value = if self.one_in(24) {
                        self.value(2)
                    } else {
                        usual(self)
                    };
                    members.push(format!("\"{key}\"{}:{}{value}", self.ws(), self.ws()));
                }
            }
            if self.one_in(4) {
                let extra = format!("{}:{}", self.key(), self.value(2));
                let at = (self.next() as usize) % (members.len() + 1);
                members.insert(at, extra);
            }
            format!("{{{}{}}}", self.ws(), members.join(","))
        }

        fn text(&mut self) -> String {
            if self.one_in(5) {
                "null".into()
            } else {
                self.string()
            }
        }

        fn call(&mut self) -> String {
            self.object(&[
                ("index", |g| g.pick(&["0", "1", "2", "null"]).into()),
                ("id", Gen::text),
                ("function", |g| {
                    g.object(&[("name", Gen::text), ("arguments", Gen::text)])
                }),
            ])
        }

        fn delta(&mut self) -> String {
            self.object(&[
                ("content", Gen::text),
                ("reasoning_content", Gen::text),
                ("reasoning", Gen::text),
                ("tool_calls", |g| {
                    let n = g.next() % 3;
                    let calls: Vec<String> = (0..n).map(|_| g.call()).collect();
                    format!("[{}]", calls.join(","))
                }),
            ])
        }

        fn chunk(&mut self) -> String {
            let mut text = self.object(&[
                ("choices", |g| {
                    let n = g.next() % 3;
                    let choices: Vec<String> = (0..n)
                        .map(|_| {
                            g.object(&[
                                ("finish_reason", |g| {
                                    g.pick(&["null", "\"stop\"", "\"tool_calls\""]).into()
                                }),
                                ("delta", Gen::delta),
                            ])
                        })
                        .collect();
                    format!("[{}]", choices.join(","))
                }),
                ("usage", |g| g.value(2)),
                ("timings", |g| g.value(2)),
                ("agentload_sim", |g| g.value(2)),
                ("error", |g| {
                    g.pick(&["null", "null", "null", "{\"message\":\"boom\"}"])
                        .into()
                }),
            ]);
            // Now and then a byte is cut or one is added.
            match self.next() % 24 {
                0 if !text.is_empty() => {
                    let at = (self.next() as usize) % text.len();
                    if text.is_char_boundary(at) && text.is_char_boundary(at + 1) {
                        text.remove(at);
                    }
                }
                1 => text.push_str(self.pick(&[" ", "x", "}", "\n"])),
                _ => {}
            }
            text
        }
    }

    #[test]
    fn the_scanner_and_the_general_path_agree() {
        let mut gen = Gen(0x9E37_79B9_7F4A_7C15);
        let (mut read, mut refused) = (0, 0);
        for case in 0..20_000 {
            let (mut scanned, mut general) = (
                CompletionAssembler::default(),
                CompletionAssembler::default(),
            );
            let chunks: Vec<String> = (0..3).map(|_| gen.chunk()).collect();
            for c in &chunks {
                if super::chunk(c).is_some() {
                    read += 1;
                } else {
                    refused += 1;
                }
                let (a, b) = (scanned.push_chunk(c), general.push_value_chunk(c));
                assert_eq!(a.is_ok(), b.is_ok(), "case {case}: {c}");
                assert_eq!(a.ok(), b.ok(), "case {case}: {c}");
            }
            // The extras are kept as sent by the scanner and re-written by the general path:
            // compared as values.
            let json = |a: CompletionAssembler| serde_json::to_value(a.finish()).unwrap();
            assert_eq!(json(scanned), json(general), "case {case}: {chunks:#?}");
        }
        // Both sides of the scanner are exercised.
        assert!(
            read > 10_000 && refused > 10_000,
            "read {read}, refused {refused}"
        );
    }
}
