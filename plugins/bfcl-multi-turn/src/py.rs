//! The Python values the simulators handle, with Python's semantics where
//! results are compared as text: `repr`/`str`, `json.dumps` (ensure_ascii,
//! `", "` / `": "` separators, insertion order), `==` (numeric across bool,
//! int and float) and the arithmetic the simulators do.

use pysem::num::float_repr;
use pysem::repr::{self, Repr};

/// A Python value. Dicts and sets keep insertion order (sets are only ever
/// compared, never printed, by the checker).
#[derive(Debug, Clone, Default)]
pub enum Py {
    #[default]
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Py>),
    Tuple(Vec<Py>),
    Dict(Vec<(Py, Py)>),
    Set(Vec<Py>),
    /// An object `json.dumps` rejects (mpmath `mpf`, `Decimal`), by its repr.
    Opaque(String),
    /// An instance of a simulator's own class (`Directory`, `File`) whose
    /// `__eq__` compares these attributes and the class.
    Object(&'static str, Vec<(String, Py)>),
    /// `Ellipsis` (the last item of one long-context list).
    Ellipsis,
}

/// A Python exception raised inside a simulator method: the text of
/// `str(e)`, which the executor reports as `Error during execution: {e}`.
pub type PyResult<T> = Result<T, String>;

/// A builder shorthand: `dict([("a", Py::Int(1))])`.
pub fn dict<K: Into<String>>(items: impl IntoIterator<Item = (K, Py)>) -> Py {
    Py::Dict(
        items
            .into_iter()
            .map(|(k, v)| (Py::Str(k.into()), v))
            .collect(),
    )
}

/// `str(x)` of a string.
pub fn s(x: impl Into<String>) -> Py {
    Py::Str(x.into())
}

/// Python `repr(str)`.
pub fn str_repr(s: &str) -> String {
    pysem::value::str_repr(s)
}

impl Py {
    /// `repr(x)`.
    pub fn repr(&self) -> String {
        let mut out = String::new();
        self.write_repr(&mut out);
        out
    }

    /// `str(x)`.
    pub fn to_str(&self) -> String {
        match self {
            Py::Str(s) => s.clone(),
            other => other.repr(),
        }
    }

    /// `json.dumps(x)` with the default settings; `None` where Python raises
    /// (`TypeError: Object of type … is not JSON serializable`).
    pub fn json_dumps(&self) -> Option<String> {
        let mut out = String::new();
        self.write_json(&mut out).then_some(out)
    }

    fn write_json(&self, out: &mut String) -> bool {
        match self {
            Py::None => out.push_str("null"),
            Py::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Py::Int(i) => out.push_str(&i.to_string()),
            Py::Float(f) => pysem::json::write_float(out, *f),
            Py::Str(s) => pysem::json::write_str(out, s, true),
            Py::List(items) | Py::Tuple(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    if !v.write_json(out) {
                        return false;
                    }
                }
                out.push(']');
            }
            Py::Dict(items) => {
                out.push('{');
                for (i, (k, v)) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    let key = match k {
                        Py::Str(s) => s.clone(),
                        Py::Int(i) => i.to_string(),
                        Py::Float(f) => pysem::json::float(*f),
                        Py::Bool(b) => if *b { "true" } else { "false" }.into(),
                        Py::None => "null".into(),
                        _ => return false,
                    };
                    pysem::json::write_str(out, &key, true);
                    out.push_str(": ");
                    if !v.write_json(out) {
                        return false;
                    }
                }
                out.push('}');
            }
            Py::Set(_) | Py::Opaque(_) | Py::Object(..) | Py::Ellipsis => return false,
        }
        true
    }

    /// Python truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Py::None => false,
            Py::Bool(b) => *b,
            Py::Int(i) => *i != 0,
            Py::Float(f) => *f != 0.0,
            Py::Str(s) => !s.is_empty(),
            Py::List(v) | Py::Tuple(v) | Py::Set(v) => !v.is_empty(),
            Py::Dict(v) => !v.is_empty(),
            Py::Opaque(_) | Py::Object(..) | Py::Ellipsis => true,
        }
    }

    /// Python's type name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Py::None => "NoneType",
            Py::Bool(_) => "bool",
            Py::Int(_) => "int",
            Py::Float(_) => "float",
            Py::Str(_) => "str",
            Py::List(_) => "list",
            Py::Tuple(_) => "tuple",
            Py::Dict(_) => "dict",
            Py::Set(_) => "set",
            Py::Opaque(_) => "object",
            Py::Object(class, _) => class,
            Py::Ellipsis => "ellipsis",
        }
    }

    /// The string, if this is a `str`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Py::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The number as `f64`, if this is a bool, int or float.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Py::Bool(b) => Some(*b as i64 as f64),
            Py::Int(i) => Some(*i as f64),
            Py::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// Whether this is an int or float (`isinstance(x, (int, float))`, bool included).
    pub fn is_number(&self) -> bool {
        matches!(self, Py::Bool(_) | Py::Int(_) | Py::Float(_))
    }

    /// `d[key]` for a dict with str keys; `None` when absent or not a dict.
    pub fn get(&self, key: &str) -> Option<&Py> {
        match self {
            Py::Dict(items) => items
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// `d[key]` (any key) for a dict.
    pub fn get_key(&self, key: &Py) -> Option<&Py> {
        match self {
            Py::Dict(items) => items.iter().find(|(k, _)| py_eq(k, key)).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Mutable `d[key]` (any key) for a dict.
    pub fn get_key_mut(&mut self, key: &Py) -> Option<&mut Py> {
        match self {
            Py::Dict(items) => items
                .iter_mut()
                .find(|(k, _)| py_eq(k, key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Mutable `d[key]` for a dict with str keys.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Py> {
        match self {
            Py::Dict(items) => items
                .iter_mut()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// `d[key] = value` (keeps the position of an existing key).
    pub fn set_key(&mut self, key: Py, value: Py) {
        if let Py::Dict(items) = self {
            match items.iter_mut().find(|(k, _)| py_eq(k, &key)) {
                Some(slot) => slot.1 = value,
                None => items.push((key, value)),
            }
        }
    }

    /// `d[key] = value` with a str key.
    pub fn set(&mut self, key: &str, value: Py) {
        self.set_key(Py::Str(key.into()), value)
    }

    /// `del d[key]`; the removed value.
    pub fn del_key(&mut self, key: &Py) -> Option<Py> {
        if let Py::Dict(items) = self {
            let pos = items.iter().position(|(k, _)| py_eq(k, key))?;
            return Some(items.remove(pos).1);
        }
        None
    }

    /// The items of a list or tuple.
    pub fn items(&self) -> Option<&Vec<Py>> {
        match self {
            Py::List(v) | Py::Tuple(v) | Py::Set(v) => Some(v),
            _ => None,
        }
    }
}

/// Python `a == b`.
pub fn py_eq(a: &Py, b: &Py) -> bool {
    use Py::*;
    match (a, b) {
        (None, None) | (Ellipsis, Ellipsis) => true,
        (Str(x), Str(y)) => x == y,
        (Bool(_) | Int(_) | Float(_), Bool(_) | Int(_) | Float(_)) => match (a, b) {
            (Float(_), _) | (_, Float(_)) => a.as_f64() == b.as_f64(),
            _ => int_of(a) == int_of(b),
        },
        (List(x), List(y)) | (Tuple(x), Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Set(x), Set(y)) => x.len() == y.len() && x.iter().all(|p| y.iter().any(|q| py_eq(p, q))),
        (Dict(x), Dict(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| b.get_key(k).is_some_and(|w| py_eq(v, w)))
        }
        (Opaque(x), Opaque(y)) => x == y,
        (Object(c1, a1), Object(c2, a2)) => {
            c1 == c2
                && a1.len() == a2.len()
                && a1
                    .iter()
                    .zip(a2)
                    .all(|((k1, v1), (k2, v2))| k1 == k2 && py_eq(v1, v2))
        }
        _ => false,
    }
}

fn int_of(v: &Py) -> i64 {
    match v {
        Py::Bool(b) => *b as i64,
        Py::Int(i) => *i,
        _ => 0,
    }
}

/// `x in container` for lists, tuples, sets, dict keys and substrings.
pub fn contains(container: &Py, item: &Py) -> PyResult<bool> {
    match container {
        Py::List(v) | Py::Tuple(v) | Py::Set(v) => Ok(v.iter().any(|x| py_eq(x, item))),
        Py::Dict(_) => Ok(container.get_key(item).is_some()),
        Py::Str(s) => match item {
            Py::Str(sub) => Ok(s.contains(sub.as_str())),
            other => Err(format!(
                "'in <string>' requires string as left operand, not {}",
                other.type_name()
            )),
        },
        other => Err(format!(
            "argument of type '{}' is not iterable",
            other.type_name()
        )),
    }
}

/// The binary arithmetic operators the simulators use.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Mod => "%",
            Op::Pow => "** or pow()",
        }
    }
}

/// Python `a <op> b` for numbers (and `+` on str/list).
pub fn arith(a: &Py, op: Op, b: &Py) -> PyResult<Py> {
    use Py::*;
    match (a, b) {
        (Bool(_) | Int(_), Bool(_) | Int(_)) => {
            let (x, y) = (int_of(a), int_of(b));
            let r = match op {
                Op::Add => x.checked_add(y),
                Op::Sub => x.checked_sub(y),
                Op::Mul => x.checked_mul(y),
                Op::Div => {
                    if y == 0 {
                        return Err("division by zero".into());
                    }
                    return Ok(Float(x as f64 / y as f64));
                }
                Op::Mod => {
                    if y == 0 {
                        return Err("integer modulo by zero".into());
                    }
                    Some(x.rem_euclid(y) + if y < 0 && x.rem_euclid(y) != 0 { y } else { 0 })
                }
                Op::Pow => {
                    if y < 0 {
                        return Ok(Float((x as f64).powf(y as f64)));
                    }
                    u32::try_from(y).ok().and_then(|e| x.checked_pow(e))
                }
            };
            r.map(Int)
                .ok_or_else(|| "integer overflow (not modelled)".into())
        }
        (Bool(_) | Int(_) | Float(_), Bool(_) | Int(_) | Float(_)) => {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            Ok(Float(match op {
                Op::Add => x + y,
                Op::Sub => x - y,
                Op::Mul => x * y,
                Op::Div => {
                    if y == 0.0 {
                        return Err("float division by zero".into());
                    }
                    x / y
                }
                Op::Mod => {
                    if y == 0.0 {
                        return Err("float modulo".into());
                    }
                    let m = x % y;
                    if m != 0.0 && ((m < 0.0) != (y < 0.0)) {
                        m + y
                    } else if m == 0.0 {
                        0.0f64.copysign(y)
                    } else {
                        m
                    }
                }
                Op::Pow => x.powf(y),
            }))
        }
        (Str(x), Str(y)) if op == Op::Add => Ok(Str(format!("{x}{y}"))),
        (List(x), List(y)) if op == Op::Add => Ok(List(x.iter().chain(y).cloned().collect())),
        _ => Err(format!(
            "unsupported operand type(s) for {}: '{}' and '{}'",
            op.symbol(),
            a.type_name(),
            b.type_name()
        )),
    }
}

/// Python `a < b` for numbers and strings (`TypeError` otherwise).
pub fn lt(a: &Py, b: &Py) -> PyResult<bool> {
    cmp(a, b, "<").map(|o| o == std::cmp::Ordering::Less)
}

/// Python `a <= b`.
pub fn le(a: &Py, b: &Py) -> PyResult<bool> {
    cmp(a, b, "<=").map(|o| o != std::cmp::Ordering::Greater)
}

/// Python `a > b`.
pub fn gt(a: &Py, b: &Py) -> PyResult<bool> {
    cmp(a, b, ">").map(|o| o == std::cmp::Ordering::Greater)
}

/// Python ordering of two numbers or two strings.
pub fn cmp(a: &Py, b: &Py, sym: &str) -> PyResult<std::cmp::Ordering> {
    use std::cmp::Ordering;
    match (a, b) {
        (Py::Str(x), Py::Str(y)) => Ok(x.cmp(y)),
        (Py::Bool(_) | Py::Int(_), Py::Bool(_) | Py::Int(_)) => Ok(int_of(a).cmp(&int_of(b))),
        _ if a.is_number() && b.is_number() => Ok(a
            .as_f64()
            .partial_cmp(&b.as_f64())
            .unwrap_or(Ordering::Equal)),
        _ => Err(format!(
            "'{sym}' not supported between instances of '{}' and '{}'",
            a.type_name(),
            b.type_name()
        )),
    }
}

/// Python `float(x)` for numbers and numeric strings.
pub fn to_float(v: &Py) -> PyResult<f64> {
    match v {
        Py::Str(s) => pysem::num::py_float(s)
            .ok_or_else(|| format!("could not convert string to float: {}", str_repr(s))),
        v => v.as_f64().ok_or_else(|| {
            format!(
                "float() argument must be a string or a real number, not '{}'",
                v.type_name()
            )
        }),
    }
}

/// A JSON value (from the data files) as the Python value `json.load` gives.
pub fn from_json(v: &serde_json::Value) -> Py {
    match v {
        serde_json::Value::Null => Py::None,
        serde_json::Value::Bool(b) => Py::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Py::Int(i),
            None => Py::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Py::Str(s.clone()),
        serde_json::Value::Array(a) => Py::List(a.iter().map(from_json).collect()),
        serde_json::Value::Object(o) => {
            if o.len() == 1 && o.contains_key("__ellipsis__") {
                return Py::Ellipsis;
            }
            Py::Dict(
                o.iter()
                    .map(|(k, v)| (Py::Str(k.clone()), from_json(v)))
                    .collect(),
            )
        }
    }
}

impl Repr for Py {
    fn write_repr(&self, out: &mut String) {
        match self {
            Py::None => out.push_str("None"),
            Py::Bool(true) => out.push_str("True"),
            Py::Bool(false) => out.push_str("False"),
            Py::Int(i) => out.push_str(&i.to_string()),
            Py::Float(f) => out.push_str(&float_repr(*f)),
            Py::Str(s) => s.write_repr(out),
            Py::List(items) => repr::list(out, items),
            Py::Tuple(items) => repr::tuple(out, items),
            Py::Set(items) => repr::set(out, items),
            Py::Dict(items) => repr::dict(out, items.iter().map(|(k, v)| (k, v))),
            Py::Opaque(r) => out.push_str(r),
            Py::Object(class, _) => {
                out.push_str(&format!("<{class} object>"));
            }
            Py::Ellipsis => out.push_str("Ellipsis"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_repr() {
        let v = dict([
            ("a", Py::Float(0.1 + 0.2)),
            ("b", Py::List(vec![Py::Int(1), Py::None, Py::Bool(true)])),
            ("c", s("é\n\"'")),
        ]);
        assert_eq!(
            v.json_dumps().unwrap(),
            r#"{"a": 0.30000000000000004, "b": [1, null, true], "c": "\u00e9\n\"'"}"#
        );
        assert_eq!(
            v.repr(),
            r#"{'a': 0.30000000000000004, 'b': [1, None, True], 'c': 'é\n"\''}"#
        );
        assert_eq!(s("😀").json_dumps().unwrap(), r#""\ud83d\ude00""#);
        assert_eq!(Py::Tuple(vec![Py::Int(1)]).repr(), "(1,)");
        assert!(Py::Set(vec![]).json_dumps().is_none());
    }

    #[test]
    fn arithmetic() {
        assert_eq!(
            arith(&Py::Int(7), Op::Div, &Py::Int(2)).unwrap().repr(),
            "3.5"
        );
        assert_eq!(
            arith(&Py::Int(-7), Op::Mod, &Py::Int(2)).unwrap().repr(),
            "1"
        );
        assert_eq!(
            arith(&Py::Float(-7.5), Op::Mod, &Py::Int(5))
                .unwrap()
                .repr(),
            "2.5"
        );
        assert!(py_eq(&Py::Int(1), &Py::Float(1.0)));
        assert!(py_eq(&Py::Bool(true), &Py::Int(1)));
    }
}
