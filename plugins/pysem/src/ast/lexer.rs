//! The tokenizer: the rules that decide syntax errors (string prefixes and
//! escapes, number literals, comments, implicit line joining).

use super::parser::MAX_BRACKETS;
use super::*;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Name(String),
    Num(Const),
    Str(Vec<StrPart>),
    Op(&'static str),
    Newline,
    End,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct StrPart {
    pub(super) kind: StrKind,
    pub(super) text: String,
    pub(super) bytes: Vec<u8>,
    pub(super) u_prefix: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StrKind {
    Str,
    Bytes,
    FStr,
}

pub(super) const OPS: [&str; 48] = [
    "**=", "//=", ">>=", "<<=", "...", "!=", "==", "<=", ">=", "->", ":=", "**", "//", "<<", ">>",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", "(", ")", "[", "]", "{", "}", ",", ":",
    ";", ".", "+", "-", "*", "/", "%", "&", "|", "^", "~", "<", ">", "=", "@", "\\",
];

pub(super) const KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// A syntax error (or the `ValueError` `ast.parse` raises for NUL bytes).
#[derive(Debug)]
pub(super) struct Syntax;

pub(super) type P<T> = Result<T, Syntax>;

pub(super) fn is_id_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

pub(super) fn is_id_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

pub(super) struct Lexer {
    s: Vec<char>,
    i: usize,
    depth: usize,
    toks: Vec<Tok>,
}

impl Lexer {
    /// A lexer at the start of `source`.
    pub(super) fn new(source: Vec<char>) -> Self {
        Lexer {
            s: source,
            i: 0,
            depth: 0,
            toks: Vec::new(),
        }
    }

    pub(super) fn peek(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    pub(super) fn run(mut self) -> P<Vec<Tok>> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\u{c}' => self.i += 1,
                '\0' => return Err(Syntax),
                '\\' => {
                    // line continuation
                    if self.peek(1) == Some('\n') {
                        self.i += 2;
                    } else if self.peek(1) == Some('\r') {
                        self.i += if self.peek(2) == Some('\n') { 3 } else { 2 };
                    } else {
                        return Err(Syntax);
                    }
                }
                '#' => {
                    while let Some(c) = self.peek(0) {
                        if c == '\n' || c == '\r' {
                            break;
                        }
                        self.i += 1;
                    }
                }
                '\n' | '\r' => {
                    self.i += 1;
                    if self.depth == 0 && self.toks.last() != Some(&Tok::Newline) {
                        self.toks.push(Tok::Newline);
                    }
                }
                c if c.is_ascii_digit()
                    || (c == '.' && self.peek(1).is_some_and(|d| d.is_ascii_digit())) =>
                {
                    let n = self.number()?;
                    self.toks.push(Tok::Num(n));
                }
                c if is_id_start(c) => {
                    let start = self.i;
                    while self.peek(0).is_some_and(is_id_continue) {
                        self.i += 1;
                    }
                    let word: String = self.s[start..self.i].iter().collect();
                    if matches!(self.peek(0), Some('\'' | '"')) {
                        if let Some(kind) = string_prefix(&word) {
                            let part = self.string(kind, &word)?;
                            self.push_str(part)?;
                            continue;
                        }
                    }
                    self.toks.push(Tok::Name(word));
                }
                '\'' | '"' => {
                    let part = self.string(StrKind::Str, "")?;
                    self.push_str(part)?;
                }
                _ => {
                    let op = OPS
                        .iter()
                        .find(|op| {
                            op.chars()
                                .enumerate()
                                .all(|(k, oc)| self.peek(k) == Some(oc))
                        })
                        .copied()
                        .ok_or(Syntax)?;
                    if op == "\\" {
                        return Err(Syntax);
                    }
                    self.i += op.chars().count();
                    match op {
                        // CPython's tokenizer: "too many nested parentheses".
                        "(" | "[" | "{" if self.depth >= MAX_BRACKETS => return Err(Syntax),
                        "(" | "[" | "{" => self.depth += 1,
                        ")" | "]" | "}" => self.depth = self.depth.checked_sub(1).ok_or(Syntax)?,
                        _ => {}
                    }
                    self.toks.push(Tok::Op(op));
                }
            }
        }
        if self.depth != 0 {
            return Err(Syntax);
        }
        self.toks.push(Tok::End);
        Ok(self.toks)
    }

    pub(super) fn push_str(&mut self, part: StrPart) -> P<()> {
        if let Some(Tok::Str(parts)) = self.toks.last_mut() {
            let bytes = parts[0].kind == StrKind::Bytes;
            if bytes != (part.kind == StrKind::Bytes) {
                return Err(Syntax);
            }
            parts.push(part);
        } else {
            self.toks.push(Tok::Str(vec![part]));
        }
        Ok(())
    }

    pub(super) fn digits(&mut self, ok: fn(char) -> bool) -> P<String> {
        // digits with single underscores between them; at least one digit
        let mut out = String::new();
        let mut last_us = true;
        while let Some(c) = self.peek(0) {
            if ok(c) {
                out.push(c);
                last_us = false;
            } else if c == '_' && !last_us && self.peek(1).is_some_and(ok) {
                last_us = true;
            } else {
                break;
            }
            self.i += 1;
        }
        if out.is_empty() {
            return Err(Syntax);
        }
        Ok(out)
    }

    pub(super) fn number(&mut self) -> P<Const> {
        let c0 = self.peek(0).unwrap_or('0');
        let c1 = self.peek(1).map(|c| c.to_ascii_lowercase());
        let result = if c0 == '0' && matches!(c1, Some('x' | 'o' | 'b')) {
            self.i += 2;
            if self.peek(0) == Some('_') {
                self.i += 1;
            }
            let (radix, ok): (u32, fn(char) -> bool) = match c1 {
                Some('x') => (16, |c| c.is_ascii_hexdigit()),
                Some('o') => (8, |c| ('0'..='7').contains(&c)),
                _ => (2, |c| c == '0' || c == '1'),
            };
            let d = self.digits(ok)?;
            if self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                return Err(Syntax);
            }
            Const::Int(PyInt::from_radix(&d, radix))
        } else {
            let int_part = if c0 == '.' {
                String::new()
            } else {
                self.digits(|c| c.is_ascii_digit())?
            };
            let mut is_float = false;
            let mut text = int_part.clone();
            if self.peek(0) == Some('.') {
                self.i += 1;
                is_float = true;
                text.push('.');
                if self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                    text.push_str(&self.digits(|c| c.is_ascii_digit())?);
                }
            }
            if matches!(self.peek(0), Some('e' | 'E')) {
                let save = self.i;
                self.i += 1;
                let mut exp = String::from("e");
                if let Some(s @ ('+' | '-')) = self.peek(0) {
                    exp.push(s);
                    self.i += 1;
                }
                if self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                    exp.push_str(&self.digits(|c| c.is_ascii_digit())?);
                    text.push_str(&exp);
                    is_float = true;
                } else {
                    self.i = save;
                    return Err(Syntax);
                }
            }
            let text = if text.starts_with('.') {
                format!("0{text}")
            } else {
                text
            };
            if matches!(self.peek(0), Some('j' | 'J')) {
                self.i += 1;
                Const::Imag(text.parse().map_err(|_| Syntax)?)
            } else if is_float {
                Const::Float(text.parse().map_err(|_| Syntax)?)
            } else {
                if int_part.len() > 1
                    && int_part.starts_with('0')
                    && int_part.chars().any(|c| c != '0')
                {
                    return Err(Syntax);
                }
                Const::Int(PyInt::from_digits(false, &int_part))
            }
        };
        // A number directly followed by a name is an error, except the
        // keywords 3.11 still tolerates (`1if x else 2`).
        if self.peek(0).is_some_and(is_id_start) {
            let rest: String = self.s[self.i..]
                .iter()
                .take_while(|c| is_id_continue(**c))
                .collect();
            let ok = ["and", "else", "for", "if", "in", "is", "not", "or"]
                .iter()
                .any(|k| rest.starts_with(k));
            if !ok {
                return Err(Syntax);
            }
        }
        Ok(result)
    }

    pub(super) fn string(&mut self, kind: StrKind, prefix: &str) -> P<StrPart> {
        let raw = prefix.to_ascii_lowercase().contains('r');
        let q = self.peek(0).ok_or(Syntax)?;
        let triple = self.peek(1) == Some(q) && self.peek(2) == Some(q);
        self.i += if triple { 3 } else { 1 };
        let mut body: Vec<char> = Vec::new();
        loop {
            let c = self.peek(0).ok_or(Syntax)?;
            if c == q && (!triple || (self.peek(1) == Some(q) && self.peek(2) == Some(q))) {
                self.i += if triple { 3 } else { 1 };
                break;
            }
            if (c == '\n' || c == '\r') && !triple {
                return Err(Syntax);
            }
            if c == '\\' {
                let n = self.peek(1).ok_or(Syntax)?;
                body.push(c);
                body.push(n);
                self.i += 2;
                continue;
            }
            body.push(c);
            self.i += 1;
        }
        let u_prefix = prefix.eq_ignore_ascii_case("u");
        match kind {
            StrKind::FStr => Ok(StrPart {
                kind,
                text: body.iter().collect(),
                bytes: Vec::new(),
                u_prefix,
            }),
            StrKind::Bytes => {
                if body.iter().any(|c| !c.is_ascii()) {
                    return Err(Syntax);
                }
                let text = if raw {
                    body.iter().collect()
                } else {
                    unescape(&body, true)?
                };
                Ok(StrPart {
                    kind,
                    bytes: text.chars().map(|c| c as u32 as u8).collect(),
                    text: String::new(),
                    u_prefix,
                })
            }
            StrKind::Str => Ok(StrPart {
                kind,
                text: if raw {
                    body.iter().collect()
                } else {
                    unescape(&body, false)?
                },
                bytes: Vec::new(),
                u_prefix,
            }),
        }
    }
}

pub(super) fn string_prefix(word: &str) -> Option<StrKind> {
    let w = word.to_ascii_lowercase();
    match w.as_str() {
        "r" | "u" => Some(StrKind::Str),
        "b" | "br" | "rb" => Some(StrKind::Bytes),
        "f" | "fr" | "rf" => Some(StrKind::FStr),
        _ => None,
    }
}

/// Escape processing for a non-raw literal body (bytes: chars are 0..=255).
pub(super) fn unescape(body: &[char], bytes: bool) -> P<String> {
    let mut out = String::new();
    let mut i = 0;
    let hex = |s: &[char]| -> P<u32> {
        let t: String = s.iter().collect();
        if t.chars().all(|c| c.is_ascii_hexdigit()) {
            u32::from_str_radix(&t, 16).map_err(|_| Syntax)
        } else {
            Err(Syntax)
        }
    };
    while i < body.len() {
        let c = body[i];
        if c != '\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let n = body[i + 1];
        i += 2;
        match n {
            '\n' => {}
            '\r' => {
                if body.get(i) == Some(&'\n') {
                    i += 1;
                }
            }
            '\\' | '\'' | '"' => out.push(n),
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '0'..='7' => {
                let mut v = n.to_digit(8).unwrap_or(0);
                let mut k = 0;
                while k < 2 && body.get(i).is_some_and(|d| ('0'..='7').contains(d)) {
                    v = v * 8 + body[i].to_digit(8).unwrap_or(0);
                    i += 1;
                    k += 1;
                }
                let v = if bytes { v & 0xff } else { v };
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            'x' => {
                let v = hex(body.get(i..i + 2).ok_or(Syntax)?)?;
                i += 2;
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            'u' | 'U' if !bytes => {
                let len = if n == 'u' { 4 } else { 8 };
                let v = hex(body.get(i..i + len).ok_or(Syntax)?)?;
                i += len;
                if v > 0x10ffff {
                    return Err(Syntax);
                }
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            'N' if !bytes => return Err(Syntax),
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Ok(out)
}
