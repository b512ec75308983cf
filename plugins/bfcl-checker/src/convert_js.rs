//! Port of BFCL's `type_convertor/js_type_converter.py`: JavaScript source
//! literals (as strings) to Python values. Values that fail to parse come
//! back unchanged as strings. The regular expressions are the original ones.

use std::sync::OnceLock;

use pysem::chars::{drop_last, slice_inner, strip, strip_chars};
use pysem::num::{py_float, py_int};
use pysem::re::{chars, Regex};
use pysem::value::{PyErr, PyResult, PyType, Value};

/// `JS_TYPE_CONVERSION` from `constants/type_mappings.py`.
pub fn js_type(t: &str) -> Option<PyType> {
    Some(match t {
        "String" | "any" => PyType::Str,
        "integer" | "Bigint" => PyType::Int,
        "float" => PyType::Float,
        "Boolean" => PyType::Bool,
        "dict" => PyType::Dict,
        "array" => PyType::List,
        _ => return None,
    })
}

macro_rules! re {
    ($name:ident, $pat:expr) => {
        fn $name() -> &'static Regex {
            static R: OnceLock<Regex> = OnceLock::new();
            R.get_or_init(|| Regex::new($pat, false))
        }
    };
}

re!(re_int, r"^-?\d+$");
re!(re_float, r"^-?\d+(\.\d+)?$");
re!(re_bigint, r"^-?\d+n$");
re!(
    re_array_2d,
    r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)"
);
re!(re_array, r"\[(.*?)\]|\bnew\s+Array\((.*?)\)");
re!(re_inner_array, r"\[(.*?)\]");
re!(re_dict, r"\{(.*?)\}");
re!(re_pairs, r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)");

fn quoted(s: &str) -> bool {
    (s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\''))
}

fn int_or_raise(s: &str) -> PyResult<Value> {
    py_int(s).map(Value::Int).ok_or_else(|| {
        PyErr::new(
            "ValueError",
            format!(
                "invalid literal for int() with base 10: {}",
                Value::str(s).repr()
            ),
        )
    })
}

/// `js_type_converter(value, expected_type, nested_type=None)`.
pub fn js_type_converter(
    value: &str,
    expected_type: &str,
    nested: Option<&str>,
) -> PyResult<Value> {
    if js_type(expected_type).is_none() {
        return Err(PyErr::new(
            "ValueError",
            format!("Unsupported type: {expected_type}"),
        ));
    }
    let is = |re: &Regex| re.match_at(&chars(value), 0).is_some();
    match expected_type {
        "String" => Ok(if quoted(value) {
            Value::Str(slice_inner(value))
        } else {
            Value::str(value)
        }),
        "integer" => {
            if !is(re_int()) {
                return Ok(Value::str(value));
            }
            int_or_raise(value)
        }
        "float" => {
            if !is(re_float()) {
                return Ok(Value::str(value));
            }
            py_float(value).map(Value::Float).ok_or_else(|| {
                PyErr::new(
                    "ValueError",
                    format!("could not convert string to float: {value:?}"),
                )
            })
        }
        "Bigint" => {
            if !is(re_bigint()) {
                return Ok(Value::str(value));
            }
            int_or_raise(drop_last(value))
        }
        "Boolean" => Ok(match value {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::str(value),
        }),
        "dict" => Ok(parse_dict(value)),
        "array" => Ok(parse_array(value, nested)),
        _ => Ok(Value::str(value)), // any
    }
}

fn truthy(nested: Option<&str>) -> Option<&str> {
    nested.filter(|n| !n.is_empty())
}

/// `parse_js_collection(code, "array", nested_type)`; any exception inside
/// returns the stripped code unchanged (the reference's bare `except`).
fn parse_array(code: &str, nested: Option<&str>) -> Value {
    let code = strip(code);
    let t = chars(code);
    let attempt = || -> PyResult<Value> {
        if let Some(m) = re_array_2d().match_at(&t, 0) {
            let whole: Vec<char> = chars(&m.group(&t, 0).unwrap_or_default());
            let mut rows = Vec::new();
            for (idx, inner) in re_inner_array().finditer(&whole).iter().enumerate() {
                let inner = inner.group(&whole, 1).unwrap_or_default();
                let mut inner = strip(&inner);
                if idx == 0 && inner.starts_with('[') {
                    inner = &inner[1..];
                }
                let row = inner.split(',').map(|e| parse_js_value(strip(e))).collect();
                rows.push(Value::List(row));
            }
            return Ok(Value::List(rows));
        }
        let Some(m) = re_array().match_at(&t, 0) else {
            return Ok(Value::str(code));
        };
        let elements_str = m.group(&t, 1).or_else(|| m.group(&t, 2));
        let elements: Vec<String> = match elements_str {
            Some(s) if !strip(&s).is_empty() => strip(&s).split(',').map(str::to_owned).collect(),
            _ => Vec::new(),
        };
        let items = elements
            .iter()
            .map(|e| {
                let e = strip(e);
                match truthy(nested) {
                    Some(n) if e.starts_with('\'') || e.starts_with('"') => {
                        js_type_converter(e, n, Some("String"))
                    }
                    Some(n) => js_type_converter(e, n, None),
                    None => Ok(parse_js_value(e)),
                }
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Value::List(items))
    };
    attempt().unwrap_or_else(|_| Value::str(code))
}

/// `parse_js_collection(code, "dict")`.
fn parse_dict(code: &str) -> Value {
    let code = strip(code);
    if code == "{}" {
        return Value::Dict(Vec::new());
    }
    let t = chars(code);
    let Some(m) = re_dict().match_at(&t, 0) else {
        return Value::str(code);
    };
    let content: Vec<char> = chars(&m.group(&t, 1).unwrap_or_default());
    let mut items: Vec<(String, Value)> = Vec::new();
    for pair in re_pairs().finditer(&content) {
        let key = pair.group(&content, 1).unwrap_or_default();
        let key = strip_chars(strip(&key), "'\"").to_owned();
        let value = pair.group(&content, 2).unwrap_or_default();
        let value = strip(&value);
        let parsed = if value.starts_with('[') && value.ends_with(']') {
            parse_array(value, None)
        } else if value.starts_with('{') && value.ends_with('}') {
            parse_dict(value)
        } else {
            parse_js_value(strip_chars(value, "'\""))
        };
        match items.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = parsed,
            None => items.push((key, parsed)),
        }
    }
    Value::Dict(items)
}

/// `parse_js_value`.
pub fn parse_js_value(s: &str) -> Value {
    let s = strip(s);
    match s {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ if quoted(s) => Value::Str(slice_inner(s)),
        _ => py_int(s)
            .map(Value::Int)
            .or_else(|| py_float(s).map(Value::Float))
            .unwrap_or_else(|| Value::str(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(v: &str, t: &str, n: Option<&str>) -> String {
        js_type_converter(v, t, n).unwrap().repr()
    }

    #[test]
    fn reference_examples() {
        assert_eq!(conv("123n", "Bigint", None), "123");
        assert_eq!(conv("'abc'", "String", None), "'abc'");
        assert_eq!(conv("abc", "String", None), "'abc'");
        assert_eq!(conv("3.14", "float", None), "3.14");
        assert_eq!(conv("3", "float", None), "3.0");
        assert_eq!(conv("[1, 2, 3]", "array", None), "[1, 2, 3]");
        assert_eq!(conv("new Array(1, 2, 3)", "array", None), "[1, 2, 3]");
        assert_eq!(conv("[]", "array", None), "[]");
        assert_eq!(conv("[1, 'two', true]", "array", None), "[1, 'two', True]");
        assert_eq!(conv("[1n, 2n]", "array", Some("Bigint")), "[1, 2]");
        assert_eq!(
            conv(r#"["hello", "world"]"#, "array", Some("String")),
            "['hello', 'world']"
        );
        assert_eq!(
            conv(" [ [ 1, 2 ], [ 3,   4], [5, 6]]", "array", Some("array")),
            "[[1, 2], [3, 4], [5, 6]]"
        );
        assert_eq!(conv("{'key': 'value'}", "dict", None), "{'key': 'value'}");
        assert_eq!(
            conv(
                "{'key1': 123, 'key2': 'value', 'key3': false}",
                "dict",
                None
            ),
            "{'key1': 123, 'key2': 'value', 'key3': False}"
        );
        assert_eq!(
            conv(
                r#"{"initialState": initialStateObject, "middlewares": ["loggerMiddleware"], "enhancers": ["applyMiddleware", "myMiddleWare"]}"#,
                "dict",
                None
            ),
            "{'initialState': 'initialStateObject', 'middlewares': ['loggerMiddleware'], 'enhancers': ['applyMiddleware', 'myMiddleWare']}"
        );
        assert_eq!(
            js_type_converter("1", "Array", None).unwrap_err().kind,
            "ValueError"
        );
        assert_eq!(
            js_type_converter("5n\n", "Bigint", None).unwrap_err().kind,
            "ValueError"
        );
    }
}
