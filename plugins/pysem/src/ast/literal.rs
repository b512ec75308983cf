//! `ast.literal_eval`, and its result as a Python value.

use super::*;

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

pub(super) fn unhashable(l: &Lit) -> Option<&'static str> {
    match l {
        Lit::List(_) => Some("list"),
        Lit::Dict(_) => Some("dict"),
        Lit::Other("set") => Some("set"),
        Lit::Tuple(items) => items.iter().find_map(unhashable),
        _ => None,
    }
}

/// Python key equality for literal dict keys (`1 == 1.0 == True`).
pub(super) fn key_eq(a: &Lit, b: &Lit) -> bool {
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
            (Some(x), Some(y)) => crate::value::py_eq(&x, &y),
            _ => false,
        },
    }
}

pub(super) fn malformed<T>() -> Result<T, LitError> {
    Err(LitError::Malformed)
}

pub(super) fn lit_num(e: &Expr) -> Result<Lit, LitError> {
    match e {
        Expr::Const(Const::Int(i)) => Ok(Lit::Int(i.clone())),
        Expr::Const(Const::Float(f)) => Ok(Lit::Float(*f)),
        Expr::Const(Const::Imag(_)) => Ok(Lit::Other("complex")),
        _ => malformed(),
    }
}

pub(super) fn lit_signed(e: &Expr) -> Result<Lit, LitError> {
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

pub(super) fn lit_type(l: &Lit) -> &'static str {
    match l {
        Lit::Tuple(_) => "tuple",
        Lit::Other(t) => t,
        Lit::List(_) => "list",
        Lit::Dict(_) => "dict",
        _ => "object",
    }
}
