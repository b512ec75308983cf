//! Enough of Python 3.11's expression grammar for the reference extractor's
//! text fallback, which runs `ast.parse(f"dict({args})", mode="eval")`,
//! keeps the keyword arguments, evaluates each with `ast.literal_eval` and,
//! where that raises `ValueError`, keeps `ast.unparse(value)` instead.
//!
//! Covered: the full expression grammar (lambda, conditional, boolean,
//! comparison, arithmetic, unary, power, calls, attributes, subscripts and
//! slices, starred items, literals of every kind, displays and
//! comprehensions, `:=`), the tokenizer rules that decide syntax errors
//! (string prefixes and escapes, number literals with underscores and
//! leading-zero rules, comments, implicit line joining), and `ast.unparse`'s
//! precedence-driven parentheses. Approximated: f-strings (accepted without
//! checking their replacement fields; unparsed from source), `\N{...}`
//! escapes (treated as syntax errors), identifiers are not NFKC-normalized,
//! and `yield`/`await` are rejected.

use crate::pynum::{float_repr, imag_repr, PyInt};
use crate::pyvalue::{str_repr, PyErr, Value};

// ---------------------------------------------------------------- tokens --

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Name(String),
    Num(Const),
    Str(Vec<StrPart>),
    Op(&'static str),
    Newline,
    End,
}

#[derive(Debug, Clone, PartialEq)]
struct StrPart {
    kind: StrKind,
    text: String,
    bytes: Vec<u8>,
    u_prefix: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StrKind {
    Str,
    Bytes,
    FStr,
}

const OPS: [&str; 48] = [
    "**=", "//=", ">>=", "<<=", "...", "!=", "==", "<=", ">=", "->", ":=", "**", "//", "<<", ">>",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", "(", ")", "[", "]", "{", "}", ",", ":",
    ";", ".", "+", "-", "*", "/", "%", "&", "|", "^", "~", "<", ">", "=", "@", "\\",
];

const KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// A syntax error (or the `ValueError` `ast.parse` raises for NUL bytes).
#[derive(Debug)]
struct Syntax;

type P<T> = Result<T, Syntax>;

fn is_id_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_id_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

struct Lexer {
    s: Vec<char>,
    i: usize,
    depth: usize,
    toks: Vec<Tok>,
}

impl Lexer {
    fn peek(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    fn run(mut self) -> P<Vec<Tok>> {
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

    fn push_str(&mut self, part: StrPart) -> P<()> {
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

    fn digits(&mut self, ok: fn(char) -> bool) -> P<String> {
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

    fn number(&mut self) -> P<Const> {
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

    fn string(&mut self, kind: StrKind, prefix: &str) -> P<StrPart> {
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

fn string_prefix(word: &str) -> Option<StrKind> {
    let w = word.to_ascii_lowercase();
    match w.as_str() {
        "r" | "u" => Some(StrKind::Str),
        "b" | "br" | "rb" => Some(StrKind::Bytes),
        "f" | "fr" | "rf" => Some(StrKind::FStr),
        _ => None,
    }
}

/// Escape processing for a non-raw literal body (bytes: chars are 0..=255).
fn unescape(body: &[char], bytes: bool) -> P<String> {
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

// ------------------------------------------------------------------- AST --

#[derive(Debug, Clone, PartialEq)]
pub enum Const {
    None,
    True,
    False,
    Ellipsis,
    Int(PyInt),
    Float(f64),
    Imag(f64),
    Str(String, bool),
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    MatMul,
    Pow,
    LShift,
    RShift,
    BitOr,
    BitXor,
    BitAnd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Not,
    Invert,
    UAdd,
    USub,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Comp {
    target: Expr,
    iter: Expr,
    ifs: Vec<Expr>,
    is_async: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LambdaArgs {
    posonly: Vec<(String, Option<Expr>)>,
    args: Vec<(String, Option<Expr>)>,
    vararg: Option<String>,
    star: bool,
    kwonly: Vec<(String, Option<Expr>)>,
    kwarg: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Name(String),
    Const(Const),
    JoinedStr(String),
    Tuple(Vec<Expr>),
    List(Vec<Expr>),
    Set(Vec<Expr>),
    Dict(Vec<(Option<Expr>, Expr)>),
    Starred(Box<Expr>),
    Attribute(Box<Expr>, String),
    Call(Box<Expr>, Vec<Expr>, Vec<(Option<String>, Expr)>),
    Subscript(Box<Expr>, Box<Expr>),
    Slice(Option<Box<Expr>>, Option<Box<Expr>>, Option<Box<Expr>>),
    BinOp(Box<Expr>, BinOp, Box<Expr>),
    UnaryOp(UnOp, Box<Expr>),
    BoolOp(bool, Vec<Expr>),
    Compare(Box<Expr>, Vec<(&'static str, Expr)>),
    IfExp(Box<Expr>, Box<Expr>, Box<Expr>),
    Lambda(Box<LambdaArgs>, Box<Expr>),
    NamedExpr(Box<Expr>, Box<Expr>),
    ListComp(Box<Expr>, Vec<Comp>),
    SetComp(Box<Expr>, Vec<Comp>),
    DictComp(Box<Expr>, Box<Expr>, Vec<Comp>),
    GenExp(Box<Expr>, Vec<Comp>),
}

// ---------------------------------------------------------------- parser --

const MAX_BRACKETS: usize = 200;

/// Deepest operator nesting accepted (`------1`, `not not ...`). CPython
/// accepts more; the limit keeps the recursion inside a 1 MiB wasm stack.
const MAX_NESTING: usize = 400;

struct Parser {
    t: Vec<Tok>,
    i: usize,
    nest: usize,
}

impl Parser {
    fn nested(&mut self, f: fn(&mut Parser) -> P<Expr>) -> P<Expr> {
        if self.nest >= MAX_NESTING {
            return Err(Syntax);
        }
        self.nest += 1;
        let r = f(self);
        self.nest -= 1;
        r
    }

    fn peek(&self) -> &Tok {
        &self.t[self.i]
    }

    fn peek_at(&self, k: usize) -> &Tok {
        self.t.get(self.i + k).unwrap_or(&Tok::End)
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Name(n) if n == kw)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if self.is_op(op) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect_op(&mut self, op: &str) -> P<()> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(Syntax)
        }
    }

    fn name(&mut self) -> P<String> {
        match self.peek().clone() {
            Tok::Name(n) if !KEYWORDS.contains(&n.as_str()) => {
                self.i += 1;
                Ok(n)
            }
            _ => Err(Syntax),
        }
    }

    /// `expressions`: one expression or an unparenthesized tuple.
    fn expressions(&mut self) -> P<Expr> {
        let first = self.star_or_test()?;
        if !self.is_op(",") {
            if matches!(first, Expr::Starred(_)) {
                return Err(Syntax);
            }
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.at_expr_end() {
                break;
            }
            items.push(self.star_or_test()?);
        }
        Ok(Expr::Tuple(items))
    }

    fn at_expr_end(&self) -> bool {
        matches!(self.peek(), Tok::End | Tok::Newline)
            || matches!(self.peek(), Tok::Op(o) if matches!(*o, ")" | "]" | "}" | "=" | ":"))
            || self.is_kw("in")
    }

    fn star_or_test(&mut self) -> P<Expr> {
        if self.eat_op("*") {
            return Ok(Expr::Starred(Box::new(self.bitor()?)));
        }
        self.test()
    }

    /// `named_expression`.
    fn named(&mut self) -> P<Expr> {
        if matches!(self.peek(), Tok::Name(_)) && matches!(self.peek_at(1), Tok::Op(":=")) {
            let target = self.name()?;
            self.i += 1;
            let value = self.test()?;
            return Ok(Expr::NamedExpr(
                Box::new(Expr::Name(target)),
                Box::new(value),
            ));
        }
        let e = self.test()?;
        if self.is_op(":=") {
            return Err(Syntax);
        }
        Ok(e)
    }

    fn star_named(&mut self) -> P<Expr> {
        if self.eat_op("*") {
            return Ok(Expr::Starred(Box::new(self.bitor()?)));
        }
        self.named()
    }

    fn test(&mut self) -> P<Expr> {
        self.nested(Parser::test_inner)
    }

    fn test_inner(&mut self) -> P<Expr> {
        if self.eat_kw("lambda") {
            return self.lambda();
        }
        let body = self.or_test()?;
        if self.eat_kw("if") {
            let cond = self.or_test()?;
            if !self.eat_kw("else") {
                return Err(Syntax);
            }
            let orelse = self.test()?;
            return Ok(Expr::IfExp(
                Box::new(body),
                Box::new(cond),
                Box::new(orelse),
            ));
        }
        Ok(body)
    }

    fn test_nocond(&mut self) -> P<Expr> {
        if self.eat_kw("lambda") {
            return self.lambda();
        }
        self.or_test()
    }

    fn lambda(&mut self) -> P<Expr> {
        let mut a = LambdaArgs {
            posonly: vec![],
            args: vec![],
            vararg: None,
            star: false,
            kwonly: vec![],
            kwarg: None,
        };
        let mut seen_default = false;
        let mut names: Vec<String> = Vec::new();
        while !self.is_op(":") {
            if self.eat_op("/") {
                if !a.posonly.is_empty() || a.args.is_empty() || a.star {
                    return Err(Syntax);
                }
                a.posonly = std::mem::take(&mut a.args);
            } else if self.eat_op("**") {
                let n = self.name()?;
                names.push(n.clone());
                a.kwarg = Some(n);
            } else if self.eat_op("*") {
                if a.star || a.kwarg.is_some() {
                    return Err(Syntax);
                }
                a.star = true;
                if let Tok::Name(_) = self.peek() {
                    let n = self.name()?;
                    names.push(n.clone());
                    a.vararg = Some(n);
                }
            } else {
                if a.kwarg.is_some() {
                    return Err(Syntax);
                }
                let n = self.name()?;
                names.push(n.clone());
                let default = if self.eat_op("=") {
                    Some(self.test()?)
                } else {
                    None
                };
                if a.star {
                    a.kwonly.push((n, default));
                } else {
                    if default.is_none() && seen_default {
                        return Err(Syntax);
                    }
                    seen_default |= default.is_some();
                    a.args.push((n, default));
                }
            }
            if !self.eat_op(",") {
                break;
            }
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        if sorted.len() != names.len() || (a.star && a.vararg.is_none() && a.kwonly.is_empty()) {
            return Err(Syntax);
        }
        self.expect_op(":")?;
        let body = self.test()?;
        Ok(Expr::Lambda(Box::new(a), Box::new(body)))
    }

    fn or_test(&mut self) -> P<Expr> {
        let first = self.and_test()?;
        if !self.is_kw("or") {
            return Ok(first);
        }
        let mut values = vec![first];
        while self.eat_kw("or") {
            values.push(self.and_test()?);
        }
        Ok(Expr::BoolOp(false, values))
    }

    fn and_test(&mut self) -> P<Expr> {
        let first = self.not_test()?;
        if !self.is_kw("and") {
            return Ok(first);
        }
        let mut values = vec![first];
        while self.eat_kw("and") {
            values.push(self.not_test()?);
        }
        Ok(Expr::BoolOp(true, values))
    }

    fn not_test(&mut self) -> P<Expr> {
        self.nested(Parser::not_test_inner)
    }

    fn not_test_inner(&mut self) -> P<Expr> {
        if self.eat_kw("not") {
            return Ok(Expr::UnaryOp(UnOp::Not, Box::new(self.not_test()?)));
        }
        self.comparison()
    }

    fn comp_op(&mut self) -> Option<&'static str> {
        let op = match self.peek() {
            Tok::Op(o) if matches!(*o, "<" | ">" | "==" | ">=" | "<=" | "!=") => *o,
            Tok::Name(n) if n == "in" => "in",
            Tok::Name(n) if n == "not" && matches!(self.peek_at(1), Tok::Name(m) if m == "in") => {
                self.i += 1;
                "not in"
            }
            Tok::Name(n) if n == "is" => {
                if matches!(self.peek_at(1), Tok::Name(m) if m == "not") {
                    self.i += 1;
                    "is not"
                } else {
                    "is"
                }
            }
            _ => return None,
        };
        self.i += 1;
        Some(op)
    }

    fn comparison(&mut self) -> P<Expr> {
        let left = self.bitor()?;
        let mut rest = Vec::new();
        while let Some(op) = self.comp_op() {
            rest.push((op, self.bitor()?));
        }
        if rest.is_empty() {
            Ok(left)
        } else {
            Ok(Expr::Compare(Box::new(left), rest))
        }
    }

    fn binary(&mut self, ops: &[(&str, BinOp)], next: fn(&mut Parser) -> P<Expr>) -> P<Expr> {
        let mut left = next(self)?;
        'outer: loop {
            for (tok, op) in ops {
                if self.eat_op(tok) {
                    let right = next(self)?;
                    left = Expr::BinOp(Box::new(left), *op, Box::new(right));
                    continue 'outer;
                }
            }
            return Ok(left);
        }
    }

    fn bitor(&mut self) -> P<Expr> {
        self.binary(&[("|", BinOp::BitOr)], Parser::bitxor)
    }

    fn bitxor(&mut self) -> P<Expr> {
        self.binary(&[("^", BinOp::BitXor)], Parser::bitand)
    }

    fn bitand(&mut self) -> P<Expr> {
        self.binary(&[("&", BinOp::BitAnd)], Parser::shift)
    }

    fn shift(&mut self) -> P<Expr> {
        self.binary(
            &[("<<", BinOp::LShift), (">>", BinOp::RShift)],
            Parser::arith,
        )
    }

    fn arith(&mut self) -> P<Expr> {
        self.binary(&[("+", BinOp::Add), ("-", BinOp::Sub)], Parser::term)
    }

    fn term(&mut self) -> P<Expr> {
        self.binary(
            &[
                ("*", BinOp::Mul),
                ("/", BinOp::Div),
                ("//", BinOp::FloorDiv),
                ("%", BinOp::Mod),
                ("@", BinOp::MatMul),
            ],
            Parser::factor,
        )
    }

    fn factor(&mut self) -> P<Expr> {
        self.nested(Parser::factor_inner)
    }

    fn factor_inner(&mut self) -> P<Expr> {
        for (tok, op) in [("+", UnOp::UAdd), ("-", UnOp::USub), ("~", UnOp::Invert)] {
            if self.eat_op(tok) {
                return Ok(Expr::UnaryOp(op, Box::new(self.factor()?)));
            }
        }
        self.power()
    }

    fn power(&mut self) -> P<Expr> {
        if self.is_kw("await") {
            return Err(Syntax);
        }
        let base = self.primary()?;
        if self.eat_op("**") {
            let exp = self.factor()?;
            return Ok(Expr::BinOp(Box::new(base), BinOp::Pow, Box::new(exp)));
        }
        Ok(base)
    }

    fn primary(&mut self) -> P<Expr> {
        let mut e = self.atom()?;
        loop {
            if self.eat_op(".") {
                let n = self.name()?;
                e = Expr::Attribute(Box::new(e), n);
            } else if self.eat_op("(") {
                e = self.call(e)?;
            } else if self.eat_op("[") {
                let s = self.subscript()?;
                self.expect_op("]")?;
                e = Expr::Subscript(Box::new(e), Box::new(s));
            } else {
                return Ok(e);
            }
        }
    }

    fn slice_item(&mut self) -> P<Expr> {
        if self.eat_op("*") {
            return Ok(Expr::Starred(Box::new(self.bitor()?)));
        }
        let lower = if self.is_op(":") {
            None
        } else {
            Some(self.named()?)
        };
        if !self.eat_op(":") {
            return lower.ok_or(Syntax);
        }
        let bound = |p: &mut Parser| -> P<Option<Box<Expr>>> {
            if p.is_op(":") || p.is_op(",") || p.is_op("]") {
                Ok(None)
            } else {
                Ok(Some(Box::new(p.test()?)))
            }
        };
        let upper = bound(self)?;
        let step = if self.eat_op(":") { bound(self)? } else { None };
        Ok(Expr::Slice(lower.map(Box::new), upper, step))
    }

    fn subscript(&mut self) -> P<Expr> {
        let first = self.slice_item()?;
        if !self.is_op(",") {
            if matches!(first, Expr::Starred(_)) {
                return Ok(Expr::Tuple(vec![first]));
            }
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.is_op("]") {
                break;
            }
            items.push(self.slice_item()?);
        }
        Ok(Expr::Tuple(items))
    }

    fn call(&mut self, func: Expr) -> P<Expr> {
        let mut args = Vec::new();
        let mut keywords: Vec<(Option<String>, Expr)> = Vec::new();
        let mut seen_kw = false;
        let mut seen_dstar = false;
        while !self.is_op(")") {
            if self.eat_op("**") {
                keywords.push((None, self.test()?));
                seen_dstar = true;
            } else if self.eat_op("*") {
                if seen_dstar {
                    return Err(Syntax);
                }
                args.push(Expr::Starred(Box::new(self.test()?)));
            } else {
                let e = self.named()?;
                if self.is_op("=") {
                    self.i += 1;
                    let Expr::Name(n) = e else { return Err(Syntax) };
                    keywords.push((Some(n), self.test()?));
                    seen_kw = true;
                } else if self.is_kw("for") || self.is_kw("async") {
                    let comps = self.comprehensions()?;
                    let gen = Expr::GenExp(Box::new(e), comps);
                    if !args.is_empty() || !keywords.is_empty() || !self.is_op(")") {
                        return Err(Syntax);
                    }
                    args.push(gen);
                    break;
                } else {
                    if seen_kw || seen_dstar {
                        return Err(Syntax);
                    }
                    args.push(e);
                }
            }
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op(")")?;
        Ok(Expr::Call(Box::new(func), args, keywords))
    }

    fn target(&mut self) -> P<Expr> {
        // star_targets: a comma list of assignable expressions
        let one = |p: &mut Parser| -> P<Expr> {
            let e = if p.eat_op("*") {
                Expr::Starred(Box::new(p.bitor()?))
            } else {
                p.bitor()?
            };
            if assignable(&e) {
                Ok(e)
            } else {
                Err(Syntax)
            }
        };
        let first = one(self)?;
        if !self.is_op(",") {
            if matches!(first, Expr::Starred(_)) {
                return Err(Syntax);
            }
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.is_kw("in") {
                break;
            }
            items.push(one(self)?);
        }
        Ok(Expr::Tuple(items))
    }

    fn comprehensions(&mut self) -> P<Vec<Comp>> {
        let mut comps = Vec::new();
        loop {
            let is_async = self.eat_kw("async");
            if !self.eat_kw("for") {
                if is_async {
                    return Err(Syntax);
                }
                break;
            }
            let target = self.target()?;
            if !self.eat_kw("in") {
                return Err(Syntax);
            }
            let iter = self.or_test()?;
            let mut ifs = Vec::new();
            while self.eat_kw("if") {
                ifs.push(self.test_nocond()?);
            }
            comps.push(Comp {
                target,
                iter,
                ifs,
                is_async,
            });
        }
        Ok(comps)
    }

    fn atom(&mut self) -> P<Expr> {
        let tok = self.peek().clone();
        self.i += 1;
        Ok(match tok {
            Tok::Name(n) => match n.as_str() {
                "None" => Expr::Const(Const::None),
                "True" => Expr::Const(Const::True),
                "False" => Expr::Const(Const::False),
                k if KEYWORDS.contains(&k) => return Err(Syntax),
                _ => Expr::Name(n),
            },
            Tok::Num(c) => Expr::Const(c),
            Tok::Str(parts) => string_expr(&parts),
            Tok::Op("...") => Expr::Const(Const::Ellipsis),
            Tok::Op("(") => {
                if self.eat_op(")") {
                    return Ok(Expr::Tuple(vec![]));
                }
                if self.is_kw("yield") {
                    return Err(Syntax);
                }
                let first = self.star_named()?;
                if self.is_kw("for") || self.is_kw("async") {
                    if matches!(first, Expr::Starred(_)) {
                        return Err(Syntax);
                    }
                    let comps = self.comprehensions()?;
                    self.expect_op(")")?;
                    return Ok(Expr::GenExp(Box::new(first), comps));
                }
                if self.eat_op(")") {
                    if matches!(first, Expr::Starred(_)) {
                        return Err(Syntax);
                    }
                    return Ok(first);
                }
                let mut items = vec![first];
                while self.eat_op(",") {
                    if self.is_op(")") {
                        break;
                    }
                    items.push(self.star_named()?);
                }
                self.expect_op(")")?;
                Expr::Tuple(items)
            }
            Tok::Op("[") => {
                if self.eat_op("]") {
                    return Ok(Expr::List(vec![]));
                }
                let first = self.star_named()?;
                if self.is_kw("for") || self.is_kw("async") {
                    if matches!(first, Expr::Starred(_)) {
                        return Err(Syntax);
                    }
                    let comps = self.comprehensions()?;
                    self.expect_op("]")?;
                    return Ok(Expr::ListComp(Box::new(first), comps));
                }
                let mut items = vec![first];
                while self.eat_op(",") {
                    if self.is_op("]") {
                        break;
                    }
                    items.push(self.star_named()?);
                }
                self.expect_op("]")?;
                Expr::List(items)
            }
            Tok::Op("{") => self.brace()?,
            _ => return Err(Syntax),
        })
    }

    fn brace(&mut self) -> P<Expr> {
        if self.eat_op("}") {
            return Ok(Expr::Dict(vec![]));
        }
        let dict_item = |p: &mut Parser| -> P<(Option<Expr>, Expr)> {
            if p.eat_op("**") {
                return Ok((None, p.bitor()?));
            }
            let k = p.test()?;
            p.expect_op(":")?;
            Ok((Some(k), p.test()?))
        };
        if self.is_op("**") {
            let first = dict_item(self)?;
            return self.dict_rest(first, dict_item);
        }
        let first = self.star_named()?;
        if self.eat_op(":") {
            if matches!(first, Expr::Starred(_) | Expr::NamedExpr(..)) {
                return Err(Syntax);
            }
            let v = self.test()?;
            if self.is_kw("for") || self.is_kw("async") {
                let comps = self.comprehensions()?;
                self.expect_op("}")?;
                return Ok(Expr::DictComp(Box::new(first), Box::new(v), comps));
            }
            return self.dict_rest((Some(first), v), dict_item);
        }
        if self.is_kw("for") || self.is_kw("async") {
            if matches!(first, Expr::Starred(_)) {
                return Err(Syntax);
            }
            let comps = self.comprehensions()?;
            self.expect_op("}")?;
            return Ok(Expr::SetComp(Box::new(first), comps));
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.is_op("}") {
                break;
            }
            items.push(self.star_named()?);
        }
        self.expect_op("}")?;
        Ok(Expr::Set(items))
    }

    fn dict_rest(
        &mut self,
        first: (Option<Expr>, Expr),
        item: impl Fn(&mut Parser) -> P<(Option<Expr>, Expr)>,
    ) -> P<Expr> {
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.is_op("}") {
                break;
            }
            items.push(item(self)?);
        }
        self.expect_op("}")?;
        Ok(Expr::Dict(items))
    }
}

fn assignable(e: &Expr) -> bool {
    match e {
        Expr::Name(_) | Expr::Attribute(..) | Expr::Subscript(..) => true,
        Expr::Starred(inner) => assignable(inner),
        Expr::Tuple(items) | Expr::List(items) => items.iter().all(assignable),
        _ => false,
    }
}

fn string_expr(parts: &[StrPart]) -> Expr {
    if parts.iter().any(|p| p.kind == StrKind::FStr) {
        let text: String = parts
            .iter()
            .map(|p| match p.kind {
                StrKind::FStr => p.text.clone(),
                _ => p.text.replace('{', "{{").replace('}', "}}"),
            })
            .collect();
        return Expr::JoinedStr(text);
    }
    if parts[0].kind == StrKind::Bytes {
        return Expr::Const(Const::Bytes(
            parts.iter().flat_map(|p| p.bytes.clone()).collect(),
        ));
    }
    Expr::Const(Const::Str(
        parts.iter().map(|p| p.text.as_str()).collect(),
        parts[0].u_prefix,
    ))
}

/// What `ast.parse(f"dict({args})", mode="eval")` gives the extractor.
pub enum CallArgs {
    /// `SyntaxError` or `ValueError`: the extractor keeps `{"_raw": args}`.
    Invalid,
    /// The parsed body is not a call (the argument text closed the
    /// parenthesis early): the extractor keeps `{}`.
    NotCall,
    /// The keyword arguments, in order (`**x` entries dropped).
    Keywords(Vec<(String, Expr)>),
}

pub fn parse_dict_call(args: &str) -> CallArgs {
    let source: Vec<char> = format!("dict({args})").chars().collect();
    let lexer = Lexer {
        s: source,
        i: 0,
        depth: 0,
        toks: Vec::new(),
    };
    let Ok(toks) = lexer.run() else {
        return CallArgs::Invalid;
    };
    let mut p = Parser {
        t: toks,
        i: 0,
        nest: 0,
    };
    let Ok(body) = p.expressions() else {
        return CallArgs::Invalid;
    };
    while matches!(p.peek(), Tok::Newline) {
        p.i += 1;
    }
    if !matches!(p.peek(), Tok::End) {
        return CallArgs::Invalid;
    }
    match body {
        Expr::Call(_, _, keywords) => CallArgs::Keywords(
            keywords
                .into_iter()
                .filter_map(|(k, v)| k.map(|k| (k, v)))
                .collect(),
        ),
        _ => CallArgs::NotCall,
    }
}

// ---------------------------------------------------------- literal_eval --

/// A value `ast.literal_eval` can produce.
#[derive(Debug, Clone)]
pub enum Lit {
    None,
    Bool(bool),
    Int(PyInt),
    Float(f64),
    Str(String),
    List(Vec<Lit>),
    Tuple(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
    /// complex, bytes, Ellipsis or set: `json.dumps` rejects these.
    Other(&'static str),
}

/// Why `literal_eval` failed.
pub enum LitError {
    /// `ValueError` ("malformed node"): the extractor falls back to unparse.
    Malformed,
    /// Any other exception; the reference does not catch it.
    Raised(PyErr),
}

fn unhashable(l: &Lit) -> Option<&'static str> {
    match l {
        Lit::List(_) => Some("list"),
        Lit::Dict(_) => Some("dict"),
        Lit::Other("set") => Some("set"),
        Lit::Tuple(items) => items.iter().find_map(unhashable),
        _ => None,
    }
}

/// Python key equality for literal dict keys (`1 == 1.0 == True`).
fn key_eq(a: &Lit, b: &Lit) -> bool {
    let num = |l: &Lit| -> Option<Value> {
        match l {
            Lit::Bool(b) => Some(Value::Bool(*b)),
            Lit::Int(i) => Some(Value::Int(i.clone())),
            Lit::Float(f) => Some(Value::Float(*f)),
            _ => None,
        }
    };
    match (a, b) {
        (Lit::None, Lit::None) => true,
        (Lit::Str(x), Lit::Str(y)) => x == y,
        (Lit::Tuple(x), Lit::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| key_eq(p, q))
        }
        (Lit::Float(x), Lit::Float(y)) => x == y,
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => crate::pyvalue::py_eq(&x, &y),
            _ => false,
        },
    }
}

fn malformed<T>() -> Result<T, LitError> {
    Err(LitError::Malformed)
}

fn lit_num(e: &Expr) -> Result<Lit, LitError> {
    match e {
        Expr::Const(Const::Int(i)) => Ok(Lit::Int(i.clone())),
        Expr::Const(Const::Float(f)) => Ok(Lit::Float(*f)),
        Expr::Const(Const::Imag(_)) => Ok(Lit::Other("complex")),
        _ => malformed(),
    }
}

fn lit_signed(e: &Expr) -> Result<Lit, LitError> {
    match e {
        Expr::UnaryOp(op @ (UnOp::UAdd | UnOp::USub), operand) => {
            let v = lit_num(operand)?;
            Ok(match (op, v) {
                (UnOp::USub, Lit::Int(i)) => {
                    let neg = !i.is_negative() && !i.is_zero();
                    Lit::Int(PyInt::from_digits(neg, i.magnitude()))
                }
                (UnOp::USub, Lit::Float(f)) => Lit::Float(-f),
                (_, v) => v,
            })
        }
        _ => lit_num(e),
    }
}

/// `ast.literal_eval(node)`.
pub fn literal_eval(e: &Expr) -> Result<Lit, LitError> {
    match e {
        Expr::Const(c) => Ok(match c {
            Const::None => Lit::None,
            Const::True => Lit::Bool(true),
            Const::False => Lit::Bool(false),
            Const::Ellipsis => Lit::Other("ellipsis"),
            Const::Int(i) => Lit::Int(i.clone()),
            Const::Float(f) => Lit::Float(*f),
            Const::Imag(_) => Lit::Other("complex"),
            Const::Str(s, _) => Lit::Str(s.clone()),
            Const::Bytes(_) => Lit::Other("bytes"),
        }),
        Expr::Tuple(items) => Ok(Lit::Tuple(
            items.iter().map(literal_eval).collect::<Result<_, _>>()?,
        )),
        Expr::List(items) => Ok(Lit::List(
            items.iter().map(literal_eval).collect::<Result<_, _>>()?,
        )),
        Expr::Set(items) => {
            for item in items {
                let v = literal_eval(item)?;
                if let Some(t) = unhashable(&v) {
                    return Err(LitError::Raised(PyErr::new(
                        "TypeError",
                        format!("unhashable type: '{t}'"),
                    )));
                }
            }
            Ok(Lit::Other("set"))
        }
        Expr::Call(f, args, kws)
            if **f == Expr::Name("set".into()) && args.is_empty() && kws.is_empty() =>
        {
            Ok(Lit::Other("set"))
        }
        Expr::Dict(items) => {
            let mut out: Vec<(Lit, Lit)> = Vec::new();
            for (k, v) in items {
                let Some(k) = k else { return malformed() };
                let k = literal_eval(k)?;
                let v = literal_eval(v)?;
                if let Some(t) = unhashable(&k) {
                    return Err(LitError::Raised(PyErr::new(
                        "TypeError",
                        format!("unhashable type: '{t}'"),
                    )));
                }
                match out.iter_mut().find(|(ek, _)| key_eq(ek, &k)) {
                    Some(slot) => slot.1 = v,
                    None => out.push((k, v)),
                }
            }
            Ok(Lit::Dict(out))
        }
        Expr::BinOp(l, BinOp::Add | BinOp::Sub, r) => {
            let left = lit_signed(l)?;
            let right = lit_num(r)?;
            match (left, right) {
                (Lit::Int(_) | Lit::Float(_) | Lit::Other("complex"), Lit::Other("complex")) => {
                    Ok(Lit::Other("complex"))
                }
                _ => malformed(),
            }
        }
        _ => lit_signed(e),
    }
}

/// The value after the reference's `json.dumps` / `json.loads` round trip:
/// tuples become lists, non-str keys become their JSON text (colliding keys
/// keep the last value), and complex/bytes/Ellipsis/set raise `TypeError`.
pub fn lit_to_value(l: &Lit) -> Result<Value, PyErr> {
    Ok(match l {
        Lit::None => Value::None,
        Lit::Bool(b) => Value::Bool(*b),
        Lit::Int(i) => Value::Int(i.clone()),
        Lit::Float(f) => Value::Float(*f),
        Lit::Str(s) => Value::Str(s.clone()),
        Lit::List(items) | Lit::Tuple(items) => {
            Value::List(items.iter().map(lit_to_value).collect::<Result<_, _>>()?)
        }
        Lit::Dict(items) => {
            let mut out: Vec<(String, Value)> = Vec::new();
            for (k, v) in items {
                let key = match k {
                    Lit::Str(s) => s.clone(),
                    Lit::Int(i) => i.repr(),
                    Lit::Bool(b) => if *b { "true" } else { "false" }.into(),
                    Lit::None => "null".into(),
                    Lit::Float(f) if f.is_nan() => "NaN".into(),
                    Lit::Float(f) if f.is_infinite() => {
                        if *f > 0.0 { "Infinity" } else { "-Infinity" }.into()
                    }
                    Lit::Float(f) => float_repr(*f),
                    other => {
                        return Err(PyErr::new(
                            "TypeError",
                            format!(
                                "keys must be str, int, float, bool or None, not {}",
                                lit_type(other)
                            ),
                        ))
                    }
                };
                let v = lit_to_value(v)?;
                match out.iter_mut().find(|(ek, _)| *ek == key) {
                    Some(slot) => slot.1 = v,
                    None => out.push((key, v)),
                }
            }
            Value::Dict(out)
        }
        Lit::Other(t) => {
            return Err(PyErr::new(
                "TypeError",
                format!("Object of type {t} is not JSON serializable"),
            ))
        }
    })
}

fn lit_type(l: &Lit) -> &'static str {
    match l {
        Lit::Tuple(_) => "tuple",
        Lit::Other(t) => t,
        Lit::List(_) => "list",
        Lit::Dict(_) => "dict",
        _ => "object",
    }
}

// --------------------------------------------------------------- unparse --

const NAMED_EXPR: u8 = 1;
const TUPLE: u8 = 2;
const TEST: u8 = 4;
const OR: u8 = 5;
const AND: u8 = 6;
const NOT: u8 = 7;
const CMP: u8 = 8;
const EXPR: u8 = 9;
const BOR: u8 = 9;
const BXOR: u8 = 10;
const BAND: u8 = 11;
const SHIFT: u8 = 12;
const ARITH: u8 = 13;
const TERM: u8 = 14;
const FACTOR: u8 = 15;
const POWER: u8 = 16;
const ATOM: u8 = 18;

/// `ast.unparse(node)`.
pub fn unparse(e: &Expr) -> String {
    let mut out = String::new();
    write_expr(e, TEST, &mut out);
    out
}

fn binop_info(op: BinOp) -> (&'static str, u8) {
    match op {
        BinOp::Add => ("+", ARITH),
        BinOp::Sub => ("-", ARITH),
        BinOp::Mul => ("*", TERM),
        BinOp::Div => ("/", TERM),
        BinOp::FloorDiv => ("//", TERM),
        BinOp::Mod => ("%", TERM),
        BinOp::MatMul => ("@", TERM),
        BinOp::Pow => ("**", POWER),
        BinOp::LShift => ("<<", SHIFT),
        BinOp::RShift => (">>", SHIFT),
        BinOp::BitOr => ("|", BOR),
        BinOp::BitXor => ("^", BXOR),
        BinOp::BitAnd => ("&", BAND),
    }
}

fn interleave(items: &[Expr], prec: u8, out: &mut String) {
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_expr(e, prec, out);
    }
}

fn bytes_repr(b: &[u8]) -> String {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') {
        '"'
    } else {
        '\''
    };
    let mut out = format!("b{quote}");
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            c if char::from(c) == quote => {
                out.push('\\');
                out.push(quote);
            }
            0x20..=0x7e => out.push(char::from(c)),
            c => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push(quote);
    out
}

fn write_comps(comps: &[Comp], out: &mut String) {
    for c in comps {
        out.push_str(if c.is_async { " async for " } else { " for " });
        write_expr(&c.target, TUPLE, out);
        out.push_str(" in ");
        write_expr(&c.iter, OR, out);
        for cond in &c.ifs {
            out.push_str(" if ");
            write_expr(cond, OR, out);
        }
    }
}

fn write_params(params: &[(String, Option<Expr>)], parts: &mut Vec<String>) {
    for (n, d) in params {
        let mut s = n.clone();
        if let Some(d) = d {
            s.push('=');
            write_expr(d, TEST, &mut s);
        }
        parts.push(s);
    }
}

fn write_expr(e: &Expr, ctx: u8, out: &mut String) {
    let open = |p: u8, out: &mut String| {
        if ctx > p {
            out.push('(');
        }
    };
    let close = |p: u8, out: &mut String| {
        if ctx > p {
            out.push(')');
        }
    };
    match e {
        Expr::Name(n) => out.push_str(n),
        Expr::Const(c) => match c {
            Const::None => out.push_str("None"),
            Const::True => out.push_str("True"),
            Const::False => out.push_str("False"),
            Const::Ellipsis => out.push_str("..."),
            Const::Int(i) => out.push_str(&i.repr()),
            Const::Float(f) => out.push_str(&float_repr(*f).replace("inf", "1e309")),
            Const::Imag(f) => out.push_str(&imag_repr(*f).replace("inf", "1e309")),
            Const::Str(s, u) => {
                if *u {
                    out.push('u');
                }
                out.push_str(&str_repr(s));
            }
            Const::Bytes(b) => out.push_str(&bytes_repr(b)),
        },
        Expr::JoinedStr(text) => {
            out.push('f');
            out.push_str(&str_repr(text));
        }
        Expr::Tuple(items) => {
            let parens = items.is_empty() || ctx > TUPLE;
            if parens {
                out.push('(');
            }
            interleave(items, TEST, out);
            if items.len() == 1 {
                out.push(',');
            }
            if parens {
                out.push(')');
            }
        }
        Expr::List(items) => {
            out.push('[');
            interleave(items, TEST, out);
            out.push(']');
        }
        Expr::Set(items) => {
            out.push('{');
            interleave(items, TEST, out);
            out.push('}');
        }
        Expr::Dict(items) => {
            out.push('{');
            for (i, (k, v)) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                match k {
                    Some(k) => {
                        write_expr(k, TEST, out);
                        out.push_str(": ");
                        write_expr(v, TEST, out);
                    }
                    None => {
                        out.push_str("**");
                        write_expr(v, EXPR, out);
                    }
                }
            }
            out.push('}');
        }
        Expr::Starred(v) => {
            out.push('*');
            write_expr(v, EXPR, out);
        }
        Expr::Attribute(v, attr) => {
            write_expr(v, ATOM, out);
            if matches!(**v, Expr::Const(Const::Int(_) | Const::True | Const::False)) {
                out.push(' ');
            }
            out.push('.');
            out.push_str(attr);
        }
        Expr::Call(f, args, kws) => {
            write_expr(f, ATOM, out);
            out.push('(');
            let mut first = true;
            for a in args {
                if !first {
                    out.push_str(", ");
                }
                first = false;
                write_expr(a, TEST, out);
            }
            for (k, v) in kws {
                if !first {
                    out.push_str(", ");
                }
                first = false;
                match k {
                    Some(k) => {
                        out.push_str(k);
                        out.push('=');
                    }
                    None => out.push_str("**"),
                }
                write_expr(v, TEST, out);
            }
            out.push(')');
        }
        Expr::Subscript(v, s) => {
            write_expr(v, ATOM, out);
            out.push('[');
            match &**s {
                Expr::Tuple(items) if !items.is_empty() => {
                    interleave(items, TEST, out);
                    if items.len() == 1 {
                        out.push(',');
                    }
                }
                other => write_expr(other, TEST, out),
            }
            out.push(']');
        }
        Expr::Slice(lo, hi, step) => {
            if let Some(lo) = lo {
                write_expr(lo, TEST, out);
            }
            out.push(':');
            if let Some(hi) = hi {
                write_expr(hi, TEST, out);
            }
            if let Some(step) = step {
                out.push(':');
                write_expr(step, TEST, out);
            }
        }
        Expr::BinOp(l, op, r) => {
            let (sym, p) = binop_info(*op);
            open(p, out);
            let (lp, rp) = if *op == BinOp::Pow {
                (p + 1, p)
            } else {
                (p, p + 1)
            };
            write_expr(l, lp, out);
            out.push(' ');
            out.push_str(sym);
            out.push(' ');
            write_expr(r, rp, out);
            close(p, out);
        }
        Expr::UnaryOp(op, v) => {
            let (sym, p) = match op {
                UnOp::Not => ("not", NOT),
                UnOp::Invert => ("~", FACTOR),
                UnOp::UAdd => ("+", FACTOR),
                UnOp::USub => ("-", FACTOR),
            };
            open(p, out);
            out.push_str(sym);
            if p != FACTOR {
                out.push(' ');
            }
            write_expr(v, p, out);
            close(p, out);
        }
        Expr::BoolOp(and, values) => {
            let (sym, mut p) = if *and { (" and ", AND) } else { (" or ", OR) };
            open(p, out);
            let base = p;
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    out.push_str(sym);
                }
                p += 1;
                write_expr(v, p, out);
            }
            close(base, out);
        }
        Expr::Compare(l, rest) => {
            open(CMP, out);
            write_expr(l, CMP + 1, out);
            for (op, r) in rest {
                out.push(' ');
                out.push_str(op);
                out.push(' ');
                write_expr(r, CMP + 1, out);
            }
            close(CMP, out);
        }
        Expr::IfExp(body, test, orelse) => {
            open(TEST, out);
            write_expr(body, TEST + 1, out);
            out.push_str(" if ");
            write_expr(test, TEST + 1, out);
            out.push_str(" else ");
            write_expr(orelse, TEST, out);
            close(TEST, out);
        }
        Expr::Lambda(a, body) => {
            open(TEST, out);
            out.push_str("lambda");
            let mut parts: Vec<String> = Vec::new();
            write_params(&a.posonly, &mut parts);
            if !a.posonly.is_empty() {
                parts.push("/".into());
            }
            write_params(&a.args, &mut parts);
            if let Some(v) = &a.vararg {
                parts.push(format!("*{v}"));
            } else if !a.kwonly.is_empty() {
                parts.push("*".into());
            }
            write_params(&a.kwonly, &mut parts);
            if let Some(k) = &a.kwarg {
                parts.push(format!("**{k}"));
            }
            if !parts.is_empty() {
                out.push(' ');
                out.push_str(&parts.join(", "));
            }
            out.push_str(": ");
            write_expr(body, TEST, out);
            close(TEST, out);
        }
        Expr::NamedExpr(t, v) => {
            open(NAMED_EXPR, out);
            write_expr(t, ATOM, out);
            out.push_str(" := ");
            write_expr(v, ATOM, out);
            close(NAMED_EXPR, out);
        }
        Expr::ListComp(elt, comps) => {
            out.push('[');
            write_expr(elt, TEST, out);
            write_comps(comps, out);
            out.push(']');
        }
        Expr::SetComp(elt, comps) => {
            out.push('{');
            write_expr(elt, TEST, out);
            write_comps(comps, out);
            out.push('}');
        }
        Expr::DictComp(k, v, comps) => {
            out.push('{');
            write_expr(k, TEST, out);
            out.push_str(": ");
            write_expr(v, TEST, out);
            write_comps(comps, out);
            out.push('}');
        }
        Expr::GenExp(elt, comps) => {
            out.push('(');
            write_expr(elt, TEST, out);
            write_comps(comps, out);
            out.push(')');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kws(args: &str) -> Vec<(String, String)> {
        match parse_dict_call(args) {
            CallArgs::Keywords(k) => k
                .into_iter()
                .map(|(n, e)| {
                    let v = match literal_eval(&e) {
                        Ok(l) => match lit_to_value(&l) {
                            Ok(v) => v.repr(),
                            Err(e) => format!("raise {}", e.kind),
                        },
                        Err(LitError::Malformed) => format!("unparse {}", unparse(&e)),
                        Err(LitError::Raised(e)) => format!("raise {}", e.kind),
                    };
                    (n, v)
                })
                .collect(),
            CallArgs::Invalid => vec![("_raw".into(), args.into())],
            CallArgs::NotCall => vec![],
        }
    }

    fn one(args: &str) -> String {
        kws(args)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";")
    }

    #[test]
    fn literals() {
        assert_eq!(
            one("a=1, b='x', c=[1, 2.5], d={'k': None}"),
            "a=1;b='x';c=[1, 2.5];d={'k': None}"
        );
        assert_eq!(
            one("a=-5, b=+2.0, c=(1, 2), d=1_000, e=0x1F"),
            "a=-5;b=2.0;c=[1, 2];d=1000;e=31"
        );
        assert_eq!(
            one("a=True, b=true, c=null"),
            "a=True;b=unparse true;c=unparse null"
        );
        assert_eq!(
            one("a={1: 'x', True: 'y', 2.5: 3}"),
            "a={'1': 'y', '2.5': 3}"
        );
        assert_eq!(one("a=1e400, b='it\\'s'"), "a=inf;b=\"it's\"");
        assert_eq!(one("a=1j"), "a=raise TypeError");
        assert_eq!(one("a={1, 2}"), "a=raise TypeError");
        assert_eq!(one("a={[1]: 2}"), "a=raise TypeError");
        assert_eq!(one("a=1, a=2"), "a=1;a=2");
        assert_eq!(one("1, x=2"), "x=2");
        assert_eq!(one("**k, x=2"), "x=2");
    }

    #[test]
    fn unparse_like_python() {
        assert_eq!(
            one("e=x.y[1:2], f=-(-1), g=not a, h=a if b else c, i=lambda: 1, l=2**-1, m=(a, *b), n={**a}"),
            "e=unparse x.y[1:2];f=unparse --1;g=unparse not a;h=unparse a if b else c;i=unparse lambda: 1;l=unparse 2 ** (-1);m=unparse (a, *b);n=unparse {**a}"
        );
        assert_eq!(one("a=f(x, k=1)(y)"), "a=unparse f(x, k=1)(y)");
        assert_eq!(one("a=(x:=1)"), "a=unparse (x := 1)");
        assert_eq!(
            one("a=[i for i in range(3) if i]"),
            "a=unparse [i for i in range(3) if i]"
        );
        assert_eq!(
            one("a=1 .real, b=a or b and not c"),
            "a=unparse 1 .real;b=unparse a or (b and (not c))"
        );
        assert_eq!(
            one("a=x < y <= z, b=(a+b)*c, c=a-(b-c)"),
            "a=unparse x < y <= z;b=unparse (a + b) * c;c=unparse a - (b - c)"
        );
        assert_eq!(
            one("a=Math.PI, b=1+2j"),
            "a=unparse Math.PI;b=raise TypeError"
        );
    }

    #[test]
    fn syntax_errors_and_non_calls() {
        for bad in [
            "a=1, 2",
            "in square units",
            "a=1 # c",
            "new Date()",
            "a=07",
            "a=1__0",
            "True=1",
            "a.b=1",
            "x for x in y, 1",
            "a='unterminated",
            "a=1 2",
            "a=$x",
            "a=*b",
            "(*a)",
            "a=\\N{DASH}",
        ] {
            assert!(
                matches!(parse_dict_call(bad), CallArgs::Invalid),
                "{bad:?} must be a syntax error"
            );
        }
        let deep = format!("a={}1{}", "(".repeat(250), ")".repeat(250));
        assert!(matches!(parse_dict_call(&deep), CallArgs::Invalid));
        let unary = format!("a={}1", "-".repeat(5000));
        assert!(matches!(parse_dict_call(&unary), CallArgs::Invalid));
        assert!(matches!(parse_dict_call("a) + (b"), CallArgs::NotCall));
        assert!(matches!(parse_dict_call("a), (b"), CallArgs::NotCall));
        for ok in [
            "x for x in y",
            "a=1,",
            "a=\"\"\"x\ny\"\"\"",
            "a=f'{x}'",
            "a=b'\\x00'",
            "a=1 if b else 2",
            "*a, b=1",
            "a=(\n1)",
        ] {
            assert!(
                matches!(parse_dict_call(ok), CallArgs::Keywords(_)),
                "{ok:?} must parse"
            );
        }
    }
}
