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

mod lexer;
mod literal;
mod parser;
#[cfg(test)]
mod tests;
mod unparse;

pub use literal::{lit_to_value, literal_eval, Lit, LitError};
pub use parser::{parse_dict_call, CallArgs};
pub use unparse::unparse;

use crate::num::{float_repr, imag_repr, PyInt};
use crate::value::{str_repr, PyErr, Value};

// The syntax tree.

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
