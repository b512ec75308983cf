//! The Python values the checker sees: what `json.loads` produces (None,
//! bool, int, float, str, list, dict with str keys) plus what the Java/JS
//! converters produce (the same types). Type tests are exact (`bool` is not
//! `int`, `int` is not `float`); equality is Python's `==`.
//!
//! Tuples never reach the checker: the reference's extraction round-trips
//! every value through `json.dumps`/`json.loads`, which turns them into lists
//! (`pyexpr::Lit` models tuples before that round trip).

use crate::num::{write_float_repr, PyInt};
use crate::repr::Repr;
use std::borrow::Cow;

#[derive(Debug, Clone)]
pub enum Value {
    None,
    Bool(bool),
    Int(PyInt),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    /// Insertion-ordered; keys are unique.
    Dict(Vec<(String, Value)>),
}

/// A Python exception raised inside the reference's code: its class name and
/// message. The reference does not catch these (its whole scoring pass would
/// stop); the port reports them as an `error_type` of `checker_exception:<Name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyErr {
    pub kind: &'static str,
    pub message: String,
}

impl PyErr {
    pub fn new(kind: &'static str, message: impl Into<String>) -> PyErr {
        PyErr {
            kind,
            message: message.into(),
        }
    }
}

pub type PyResult<T> = Result<T, PyErr>;

/// Python's type objects, for exact `type(x) == T` tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyType {
    NoneType,
    Bool,
    Int,
    Float,
    Str,
    List,
    Dict,
    Set,
}

impl PyType {
    pub fn name(self) -> &'static str {
        match self {
            PyType::NoneType => "NoneType",
            PyType::Bool => "bool",
            PyType::Int => "int",
            PyType::Float => "float",
            PyType::Str => "str",
            PyType::List => "list",
            PyType::Dict => "dict",
            PyType::Set => "set",
        }
    }

    /// `str(T)`, e.g. `<class 'str'>`.
    pub fn class_str(self) -> String {
        format!("<class '{}'>", self.name())
    }
}

impl Value {
    pub fn str(s: impl Into<String>) -> Value {
        Value::Str(s.into())
    }

    pub fn py_type(&self) -> PyType {
        match self {
            Value::None => PyType::NoneType,
            Value::Bool(_) => PyType::Bool,
            Value::Int(_) => PyType::Int,
            Value::Float(_) => PyType::Float,
            Value::Str(_) => PyType::Str,
            Value::List(_) => PyType::List,
            Value::Dict(_) => PyType::Dict,
        }
    }

    pub fn type_name(&self) -> &'static str {
        self.py_type().name()
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_empty_str(&self) -> bool {
        matches!(self, Value::Str(s) if s.is_empty())
    }

    /// `dict[key]` for a str key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(items) => items.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Python truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => !i.is_zero(),
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(v) => !v.is_empty(),
            Value::Dict(v) => !v.is_empty(),
        }
    }

    fn hashable(&self) -> bool {
        !matches!(self, Value::List(_) | Value::Dict(_))
    }

    /// `repr(x)`.
    pub fn repr(&self) -> String {
        let mut out = String::new();
        self.write_repr(&mut out);
        out
    }

    /// JSON text for reports. Non-finite floats (which JSON cannot carry)
    /// are written as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    fn write_json(&self, out: &mut String) {
        match self {
            Value::None => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => out.push_str(&i.repr()),
            Value::Float(f) if f.is_nan() => out.push_str("\"NaN\""),
            Value::Float(f) if f.is_infinite() => out.push_str(if *f > 0.0 {
                "\"Infinity\""
            } else {
                "\"-Infinity\""
            }),
            Value::Float(f) => write_float_repr(out, *f),
            Value::Str(s) => out.push_str(&json_string(s)),
            Value::List(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write_json(out);
                }
                out.push(']');
            }
            Value::Dict(items) => {
                out.push('{');
                for (i, (k, v)) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&json_string(k));
                    out.push(':');
                    v.write_json(out);
                }
                out.push('}');
            }
        }
    }
}

/// A JSON string literal (`json.dumps(s, ensure_ascii=False)`).
pub fn json_string(s: &str) -> String {
    crate::json::string(s, false)
}

/// Python `repr(str)`.
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if crate::chars::is_printable(c) => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push(quote);
    out
}

/// Python `a == b` as `PyObject_RichCompareBool` does it inside `in` and
/// container comparisons. NaN equals NaN: every NaN the checker sees comes
/// from `json.loads`, which returns one shared NaN object, and the identity
/// shortcut makes it equal to itself.
pub fn py_eq(a: &Value, b: &Value) -> bool {
    use Value::*;
    match (a, b) {
        (None, None) => true,
        (Str(x), Str(y)) => x == y,
        (List(x), List(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q)),
        (Dict(x), Dict(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.iter().any(|(k2, v2)| k == k2 && py_eq(v, v2)))
        }
        (Float(x), Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Int(x), Int(y)) => x == y,
        (Bool(x), Bool(y)) => x == y,
        (Int(i), Float(f)) | (Float(f), Int(i)) => i.eq_f64(*f),
        (Bool(b), Int(i)) | (Int(i), Bool(b)) => i == &PyInt::from_i64(i64::from(*b)),
        (Bool(b), Float(f)) | (Float(f), Bool(b)) => *f == f64::from(u8::from(*b)),
        _ => false,
    }
}

/// Python `item in container`.
pub fn contains(container: &Value, item: &Value) -> PyResult<bool> {
    match container {
        Value::List(items) => Ok(items.iter().any(|v| py_eq(v, item))),
        Value::Str(s) => match item {
            Value::Str(sub) => Ok(s.contains(sub.as_str())),
            other => Err(PyErr::new(
                "TypeError",
                format!(
                    "'in <string>' requires string as left operand, not {}",
                    other.type_name()
                ),
            )),
        },
        Value::Dict(items) => {
            if !item.hashable() {
                return Err(PyErr::new(
                    "TypeError",
                    format!("unhashable type: '{}'", item.type_name()),
                ));
            }
            Ok(match item {
                Value::Str(k) => items.iter().any(|(key, _)| key == k),
                _ => false,
            })
        }
        other => Err(PyErr::new(
            "TypeError",
            format!("argument of type '{}' is not iterable", other.type_name()),
        )),
    }
}

/// `list(x)`: the items Python iterates over (list elements, str
/// characters, dict keys).
pub fn iterate(v: &Value) -> PyResult<Vec<Value>> {
    match v {
        Value::List(items) => Ok(items.clone()),
        Value::Str(s) => Ok(s.chars().map(|c| Value::Str(c.to_string())).collect()),
        Value::Dict(items) => Ok(items.iter().map(|(k, _)| Value::Str(k.clone())).collect()),
        other => Err(PyErr::new(
            "TypeError",
            format!("'{}' object is not iterable", other.type_name()),
        )),
    }
}

/// `len(x)`.
pub fn py_len(v: &Value) -> PyResult<usize> {
    match v {
        Value::List(items) => Ok(items.len()),
        Value::Str(s) => Ok(s.chars().count()),
        Value::Dict(items) => Ok(items.len()),
        other => Err(PyErr::new(
            "TypeError",
            format!("object of type '{}' has no len()", other.type_name()),
        )),
    }
}

/// `x[i]` for an int index `0 <= i < len(x)` of a sequence (or a dict, which
/// has no int keys here): a list's element borrowed, a str's character made.
pub fn index(v: &Value, i: usize) -> PyResult<Cow<'_, Value>> {
    match v {
        Value::List(items) => items
            .get(i)
            .map(Cow::Borrowed)
            .ok_or_else(|| PyErr::new("IndexError", "list index out of range")),
        Value::Str(s) => s
            .chars()
            .nth(i)
            .map(|c| Cow::Owned(Value::Str(c.to_string())))
            .ok_or_else(|| PyErr::new("IndexError", "string index out of range")),
        Value::Dict(_) => Err(PyErr::new("KeyError", i.to_string())),
        other => Err(PyErr::new(
            "TypeError",
            format!("'{}' object is not subscriptable", other.type_name()),
        )),
    }
}

/// `x[key]` for a str key, borrowed.
pub fn getitem<'a>(v: &'a Value, key: &str) -> PyResult<&'a Value> {
    match v {
        Value::Dict(_) => v
            .get(key)
            .ok_or_else(|| PyErr::new("KeyError", str_repr(key))),
        Value::List(_) => Err(PyErr::new(
            "TypeError",
            "list indices must be integers or slices, not str",
        )),
        Value::Str(_) => Err(PyErr::new(
            "TypeError",
            "string indices must be integers, not 'str'",
        )),
        other => Err(PyErr::new(
            "TypeError",
            format!("'{}' object is not subscriptable", other.type_name()),
        )),
    }
}

impl Repr for Value {
    fn write_repr(&self, out: &mut String) {
        match self {
            Value::None => out.push_str("None"),
            Value::Bool(true) => out.push_str("True"),
            Value::Bool(false) => out.push_str("False"),
            Value::Int(i) => out.push_str(&i.repr()),
            Value::Float(f) => write_float_repr(out, *f),
            Value::Str(s) => s.write_repr(out),
            Value::List(items) => crate::repr::list(out, items),
            Value::Dict(items) => crate::repr::dict(out, items.iter().map(|(k, v)| (k, v))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(i: i64) -> Value {
        Value::Int(PyInt::from_i64(i))
    }

    #[test]
    fn python_equality() {
        assert!(py_eq(&int(1), &Value::Float(1.0)));
        assert!(py_eq(&Value::Bool(true), &int(1)));
        assert!(py_eq(&Value::Bool(true), &Value::Float(1.0)));
        assert!(!py_eq(&Value::str("1"), &int(1)));
        let d1 = Value::Dict(vec![("a".into(), int(1)), ("b".into(), int(2))]);
        let d2 = Value::Dict(vec![("b".into(), Value::Float(2.0)), ("a".into(), int(1))]);
        assert!(py_eq(&d1, &d2));
        assert!(!py_eq(
            &Value::List(vec![int(1)]),
            &Value::List(vec![int(1), int(2)])
        ));
        assert!(py_eq(&Value::Float(f64::NAN), &Value::Float(f64::NAN)));
        assert!(py_eq(&Value::Float(-0.0), &int(0)));
    }

    #[test]
    fn repr_like_python() {
        let v = Value::List(vec![
            Value::str("it's"),
            Value::None,
            Value::Bool(false),
            Value::Float(5.0),
            Value::Dict(vec![("k".into(), Value::str("a\nb"))]),
            Value::str("\u{7}é"),
        ]);
        assert_eq!(
            v.repr(),
            r#"["it's", None, False, 5.0, {'k': 'a\nb'}, '\x07é']"#
        );
        assert_eq!(Value::str("a'b\"c").repr(), r#"'a\'b"c'"#);
    }

    #[test]
    fn membership() {
        let l = Value::List(vec![Value::str(""), int(3)]);
        assert!(contains(&l, &Value::Float(3.0)).unwrap());
        assert!(contains(&l, &Value::str("")).unwrap());
        assert!(contains(&Value::str("abc"), &Value::str("b")).unwrap());
        assert_eq!(contains(&int(3), &int(3)).unwrap_err().kind, "TypeError");
        let d = Value::Dict(vec![("k".into(), int(1))]);
        assert_eq!(
            contains(&d, &Value::List(vec![])).unwrap_err().kind,
            "TypeError"
        );
        assert!(!contains(&d, &int(1)).unwrap());
    }
}
