//! Turning a call string into a method call the way BFCL's
//! `execute_multi_turn_func_call` does: the name rewriting of
//! `_process_method_calls` (regex `\b([a-zA-Z_]\w*)\s*(?=\()`, applied to the
//! whole text, string literals included), the blocklist, then `eval` of a
//! call whose arguments are literals.

use crate::py::Py;
use pysem::ast::{self, CallArgs, Expr, Lit};
// Python's `\s` and `\w` (str patterns are Unicode-aware).
use pysem::chars::{is_space, is_word};

/// `_process_method_calls`: every identifier that starts at a word boundary
/// with `[a-zA-Z_]` and is followed by optional whitespace and `(` is
/// replaced (whitespace included) by `instance.name` when `instance_of`
/// knows it, else by the bare name.
pub fn rewrite(call: &str, instance_of: &dyn Fn(&str) -> Option<String>) -> String {
    let chars: Vec<char> = call.chars().collect();
    let mut out = String::with_capacity(call.len() + 64);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if !is_word(c) {
            out.push(c);
            i += 1;
            continue;
        }
        // A maximal run of word characters.
        let start = i;
        while i < chars.len() && is_word(chars[i]) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        if !(c == '_' || c.is_ascii_alphabetic()) {
            out.push_str(&word);
            continue;
        }
        let mut j = i;
        while j < chars.len() && is_space(chars[j]) {
            j += 1;
        }
        if j < chars.len() && chars[j] == '(' {
            match instance_of(&word) {
                Some(inst) => {
                    out.push_str(&inst);
                    out.push('.');
                    out.push_str(&word);
                }
                None => out.push_str(&word),
            }
            i = j;
        } else {
            out.push_str(&word);
        }
    }
    out
}

/// The names `execute_multi_turn_func_call` refuses to evaluate.
pub const BLOCKLIST: [&str; 8] = [
    "kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run",
];

/// The blocklist check on a rewritten call: the text before the first `(`,
/// then the part after its first `.` if any.
pub fn blocked(rewritten: &str) -> Option<String> {
    let mut name = rewritten.split('(').next().unwrap_or("");
    if name.contains('.') {
        name = name.split('.').nth(1).unwrap_or("");
    }
    BLOCKLIST
        .contains(&name)
        .then(|| format!("Function call {name} is not allowed."))
}

/// The arguments of one call.
#[derive(Debug, Clone, Default)]
pub struct Args {
    /// Positional arguments, in order.
    pub pos: Vec<Py>,
    /// Keyword arguments, in order.
    pub kw: Vec<(String, Py)>,
}

/// What the callee of a parsed call is.
#[derive(Debug)]
pub enum Callee {
    /// `instance.method(...)`.
    Method(String, String),
    /// A bare `name(...)`.
    Name(String),
}

/// A parsed call, or why it cannot be evaluated by this port.
pub enum Parsed {
    Call(Callee, Args),
    /// Python would raise this (`str(e)`).
    Error(String),
    /// Valid Python that the port does not evaluate (nested calls, operators).
    Unsupported(String),
}

fn lit_to_py(l: &Lit) -> Result<Py, String> {
    Ok(match l {
        Lit::None => Py::None,
        Lit::Bool(b) => Py::Bool(*b),
        Lit::Int(i) => Py::Int(
            i.repr()
                .parse()
                .map_err(|_| "int out of the modelled range".to_string())?,
        ),
        Lit::Float(f) => Py::Float(*f),
        Lit::Str(s) => Py::Str(s.clone()),
        Lit::List(v) => Py::List(v.iter().map(lit_to_py).collect::<Result<_, _>>()?),
        Lit::Tuple(v) => Py::Tuple(v.iter().map(lit_to_py).collect::<Result<_, _>>()?),
        Lit::Dict(v) => Py::Dict(
            v.iter()
                .map(|(k, x)| Ok((lit_to_py(k)?, lit_to_py(x)?)))
                .collect::<Result<_, String>>()?,
        ),
        Lit::Other(t) => return Err(format!("{t} literal")),
    })
}

/// `eval` of a rewritten call string, as far as the port goes.
pub fn parse(rewritten: &str) -> Parsed {
    // `dict(__c=<call>)` lets bfcl-ast's parser hand back the call node.
    let expr = match ast::parse_dict_call(&format!("__c={rewritten}")) {
        CallArgs::Keywords(mut kws) if kws.len() == 1 => kws.remove(0).1,
        _ => return Parsed::Error("invalid syntax (<string>, line 1)".into()),
    };
    let Expr::Call(func, pos, kws) = expr else {
        return Parsed::Unsupported("not a call".into());
    };
    let callee = match *func {
        Expr::Name(n) => Callee::Name(n),
        Expr::Attribute(obj, m) => match *obj {
            Expr::Name(inst) => Callee::Method(inst, m),
            _ => return Parsed::Unsupported("attribute of an expression".into()),
        },
        _ => return Parsed::Unsupported("callee is an expression".into()),
    };
    let mut args = Args::default();
    for e in &pos {
        match ast::literal_eval(e)
            .map_err(|_| ())
            .and_then(|l| lit_to_py(&l).map_err(|_| ()))
        {
            Ok(v) => args.pos.push(v),
            Err(()) => return Parsed::Unsupported("non-literal positional argument".into()),
        }
    }
    for (k, e) in &kws {
        let Some(k) = k else {
            return Parsed::Unsupported("**kwargs".into());
        };
        match ast::literal_eval(e)
            .map_err(|_| ())
            .and_then(|l| lit_to_py(&l).map_err(|_| ()))
        {
            Ok(v) => args.kw.push((k.clone(), v)),
            Err(()) => return Parsed::Unsupported("non-literal keyword argument".into()),
        }
    }
    Parsed::Call(callee, args)
}

/// A parameter of a simulator method: its name and default.
pub type Param = (&'static str, Option<Py>);

impl Args {
    /// Binds the arguments to the parameters (after `self`) the way Python
    /// does, with CPython's `TypeError` texts; `qualname` is `Class.method`.
    pub fn bind(&self, qualname: &str, params: &[Param]) -> Result<Vec<Py>, String> {
        if self.pos.len() > params.len() {
            let required = params.iter().filter(|p| p.1.is_none()).count() + 1;
            let total = params.len() + 1;
            let takes = if required == total {
                format!("{total}")
            } else {
                format!("from {required} to {total}")
            };
            let given = self.pos.len() + 1;
            return Err(format!(
                "{qualname}() takes {takes} positional argument{} but {given} {} given",
                if total == 1 && required == total {
                    ""
                } else {
                    "s"
                },
                if given == 1 { "was" } else { "were" }
            ));
        }
        let mut slots: Vec<Option<Py>> = vec![None; params.len()];
        for (i, v) in self.pos.iter().enumerate() {
            slots[i] = Some(v.clone());
        }
        for (k, v) in &self.kw {
            match params.iter().position(|p| p.0 == k) {
                None => {
                    return Err(format!(
                        "{qualname}() got an unexpected keyword argument '{k}'"
                    ))
                }
                Some(i) if slots[i].is_some() => {
                    return Err(format!(
                        "{qualname}() got multiple values for argument '{k}'"
                    ))
                }
                Some(i) => slots[i] = Some(v.clone()),
            }
        }
        let missing: Vec<String> = params
            .iter()
            .zip(&slots)
            .filter(|(p, s)| s.is_none() && p.1.is_none())
            .map(|(p, _)| format!("'{}'", p.0))
            .collect();
        if !missing.is_empty() {
            let names = match missing.len() {
                1 => missing[0].clone(),
                2 => format!("{} and {}", missing[0], missing[1]),
                n => format!("{}, and {}", missing[..n - 1].join(", "), missing[n - 1]),
            };
            return Err(format!(
                "{qualname}() missing {} required positional argument{}: {names}",
                missing.len(),
                if missing.len() == 1 { "" } else { "s" }
            ));
        }
        Ok(slots
            .into_iter()
            .zip(params)
            .map(|(s, p)| s.or_else(|| p.1.clone()).unwrap_or(Py::None))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_like_the_regex() {
        let f = |n: &str| (n == "ls" || n == "echo").then(|| "inst".to_string());
        assert_eq!(
            rewrite("echo(content='run ls () now, x (y)')", &f),
            "inst.echo(content='run inst.ls() now, x(y)')"
        );
        assert_eq!(rewrite("a1b(2) 9ls(3)", &f), "a1b(2) 9ls(3)");
        assert_eq!(
            blocked("inst.kill(x=1)").unwrap(),
            "Function call kill is not allowed."
        );
    }

    #[test]
    fn parses_calls() {
        let Parsed::Call(Callee::Method(i, m), a) =
            parse("inst.f(1, 'a', b=[1, 2.5], c={'k': None})")
        else {
            panic!()
        };
        assert_eq!((i.as_str(), m.as_str()), ("inst", "f"));
        assert_eq!(a.pos.len(), 2);
        assert_eq!(a.kw[0].1.repr(), "[1, 2.5]");
        assert_eq!(a.kw[1].1.repr(), "{'k': None}");
    }
}
