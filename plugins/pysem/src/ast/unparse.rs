//! `ast.unparse`, with its precedence-driven parentheses.

use super::*;

pub(super) const NAMED_EXPR: u8 = 1;
pub(super) const TUPLE: u8 = 2;
pub(super) const TEST: u8 = 4;
pub(super) const OR: u8 = 5;
pub(super) const AND: u8 = 6;
pub(super) const NOT: u8 = 7;
pub(super) const CMP: u8 = 8;
pub(super) const EXPR: u8 = 9;
pub(super) const BOR: u8 = 9;
pub(super) const BXOR: u8 = 10;
pub(super) const BAND: u8 = 11;
pub(super) const SHIFT: u8 = 12;
pub(super) const ARITH: u8 = 13;
pub(super) const TERM: u8 = 14;
pub(super) const FACTOR: u8 = 15;
pub(super) const POWER: u8 = 16;
pub(super) const ATOM: u8 = 18;

/// `ast.unparse(node)`.
pub fn unparse(e: &Expr) -> String {
    let mut out = String::new();
    write_expr(e, TEST, &mut out);
    out
}

pub(super) fn binop_info(op: BinOp) -> (&'static str, u8) {
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

pub(super) fn interleave(items: &[Expr], prec: u8, out: &mut String) {
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_expr(e, prec, out);
    }
}

pub(super) fn bytes_repr(b: &[u8]) -> String {
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

pub(super) fn write_comps(comps: &[Comp], out: &mut String) {
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

pub(super) fn write_params(params: &[(String, Option<Expr>)], parts: &mut Vec<String>) {
    for (n, d) in params {
        let mut s = n.clone();
        if let Some(d) = d {
            s.push('=');
            write_expr(d, TEST, &mut s);
        }
        parts.push(s);
    }
}

pub(super) fn write_expr(e: &Expr, ctx: u8, out: &mut String) {
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
