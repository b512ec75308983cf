//! The expression parser, and `dict(...)` call arguments as the reference
//! extractor reads them.

use super::lexer::*;
use super::*;

pub(super) const MAX_BRACKETS: usize = 200;

/// Deepest operator nesting accepted (`------1`, `not not ...`). CPython
/// accepts more; the limit keeps the recursion inside a 1 MiB wasm stack.
pub(super) const MAX_NESTING: usize = 400;

pub(super) struct Parser {
    t: Vec<Tok>,
    i: usize,
    nest: usize,
}

impl Parser {
    pub(super) fn nested(&mut self, f: fn(&mut Parser) -> P<Expr>) -> P<Expr> {
        if self.nest >= MAX_NESTING {
            return Err(Syntax);
        }
        self.nest += 1;
        let r = f(self);
        self.nest -= 1;
        r
    }

    pub(super) fn peek(&self) -> &Tok {
        &self.t[self.i]
    }

    pub(super) fn peek_at(&self, k: usize) -> &Tok {
        self.t.get(self.i + k).unwrap_or(&Tok::End)
    }

    pub(super) fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    pub(super) fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Name(n) if n == kw)
    }

    pub(super) fn eat_op(&mut self, op: &str) -> bool {
        if self.is_op(op) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn expect_op(&mut self, op: &str) -> P<()> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(Syntax)
        }
    }

    pub(super) fn name(&mut self) -> P<String> {
        match self.peek().clone() {
            Tok::Name(n) if !KEYWORDS.contains(&n.as_str()) => {
                self.i += 1;
                Ok(n)
            }
            _ => Err(Syntax),
        }
    }

    /// `expressions`: one expression or an unparenthesized tuple.
    pub(super) fn expressions(&mut self) -> P<Expr> {
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

    pub(super) fn at_expr_end(&self) -> bool {
        matches!(self.peek(), Tok::End | Tok::Newline)
            || matches!(self.peek(), Tok::Op(o) if matches!(*o, ")" | "]" | "}" | "=" | ":"))
            || self.is_kw("in")
    }

    pub(super) fn star_or_test(&mut self) -> P<Expr> {
        if self.eat_op("*") {
            return Ok(Expr::Starred(Box::new(self.bitor()?)));
        }
        self.test()
    }

    /// `named_expression`.
    pub(super) fn named(&mut self) -> P<Expr> {
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

    pub(super) fn star_named(&mut self) -> P<Expr> {
        if self.eat_op("*") {
            return Ok(Expr::Starred(Box::new(self.bitor()?)));
        }
        self.named()
    }

    pub(super) fn test(&mut self) -> P<Expr> {
        self.nested(Parser::test_inner)
    }

    pub(super) fn test_inner(&mut self) -> P<Expr> {
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

    pub(super) fn test_nocond(&mut self) -> P<Expr> {
        if self.eat_kw("lambda") {
            return self.lambda();
        }
        self.or_test()
    }

    pub(super) fn lambda(&mut self) -> P<Expr> {
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

    pub(super) fn or_test(&mut self) -> P<Expr> {
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

    pub(super) fn and_test(&mut self) -> P<Expr> {
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

    pub(super) fn not_test(&mut self) -> P<Expr> {
        self.nested(Parser::not_test_inner)
    }

    pub(super) fn not_test_inner(&mut self) -> P<Expr> {
        if self.eat_kw("not") {
            return Ok(Expr::UnaryOp(UnOp::Not, Box::new(self.not_test()?)));
        }
        self.comparison()
    }

    pub(super) fn comp_op(&mut self) -> Option<&'static str> {
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

    pub(super) fn comparison(&mut self) -> P<Expr> {
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

    pub(super) fn binary(
        &mut self,
        ops: &[(&str, BinOp)],
        next: fn(&mut Parser) -> P<Expr>,
    ) -> P<Expr> {
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

    pub(super) fn bitor(&mut self) -> P<Expr> {
        self.binary(&[("|", BinOp::BitOr)], Parser::bitxor)
    }

    pub(super) fn bitxor(&mut self) -> P<Expr> {
        self.binary(&[("^", BinOp::BitXor)], Parser::bitand)
    }

    pub(super) fn bitand(&mut self) -> P<Expr> {
        self.binary(&[("&", BinOp::BitAnd)], Parser::shift)
    }

    pub(super) fn shift(&mut self) -> P<Expr> {
        self.binary(
            &[("<<", BinOp::LShift), (">>", BinOp::RShift)],
            Parser::arith,
        )
    }

    pub(super) fn arith(&mut self) -> P<Expr> {
        self.binary(&[("+", BinOp::Add), ("-", BinOp::Sub)], Parser::term)
    }

    pub(super) fn term(&mut self) -> P<Expr> {
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

    pub(super) fn factor(&mut self) -> P<Expr> {
        self.nested(Parser::factor_inner)
    }

    pub(super) fn factor_inner(&mut self) -> P<Expr> {
        for (tok, op) in [("+", UnOp::UAdd), ("-", UnOp::USub), ("~", UnOp::Invert)] {
            if self.eat_op(tok) {
                return Ok(Expr::UnaryOp(op, Box::new(self.factor()?)));
            }
        }
        self.power()
    }

    pub(super) fn power(&mut self) -> P<Expr> {
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

    pub(super) fn primary(&mut self) -> P<Expr> {
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

    pub(super) fn slice_item(&mut self) -> P<Expr> {
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

    pub(super) fn subscript(&mut self) -> P<Expr> {
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

    pub(super) fn call(&mut self, func: Expr) -> P<Expr> {
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

    pub(super) fn target(&mut self) -> P<Expr> {
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

    pub(super) fn comprehensions(&mut self) -> P<Vec<Comp>> {
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

    pub(super) fn atom(&mut self) -> P<Expr> {
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

    pub(super) fn brace(&mut self) -> P<Expr> {
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

    pub(super) fn dict_rest(
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

pub(super) fn assignable(e: &Expr) -> bool {
    match e {
        Expr::Name(_) | Expr::Attribute(..) | Expr::Subscript(..) => true,
        Expr::Starred(inner) => assignable(inner),
        Expr::Tuple(items) | Expr::List(items) => items.iter().all(assignable),
        _ => false,
    }
}

pub(super) fn string_expr(parts: &[StrPart]) -> Expr {
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
    let lexer = Lexer::new(source);
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
