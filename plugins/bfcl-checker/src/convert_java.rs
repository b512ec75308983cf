//! Port of BFCL's `type_convertor/java_type_converter.py`: Java source
//! literals (as strings) to Python values. Values that fail to parse come
//! back unchanged as strings. The regular expressions are the original ones.

use std::sync::OnceLock;

use pysem::chars::{drop_last, slice_inner, strip};
use pysem::num::{py_float, py_int};
use pysem::re::{chars, Regex};
use pysem::value::{PyErr, PyResult, PyType, Value};

/// `JAVA_TYPE_CONVERSION` from `constants/type_mappings.py`.
pub fn java_type(t: &str) -> Option<PyType> {
    Some(match t {
        "byte" | "short" | "integer" | "long" => PyType::Int,
        "float" | "double" => PyType::Float,
        "boolean" => PyType::Bool,
        "char" | "String" | "any" => PyType::Str,
        "Array" | "ArrayList" | "Queue" | "Stack" => PyType::List,
        "Set" => PyType::Set,
        "HashMap" | "Hashtable" => PyType::Dict,
        _ => return None,
    })
}

macro_rules! re {
    ($name:ident, $pat:expr, $dotall:expr) => {
        fn $name() -> &'static Regex {
            static R: OnceLock<Regex> = OnceLock::new();
            R.get_or_init(|| Regex::new($pat, $dotall))
        }
    };
}

re!(re_int, r"^-?\d+$", false);
re!(re_float, r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$", false);
re!(re_f_suffix, r"[fF]$", false);
re!(re_double, r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$", false);
re!(re_long, r"^-?\d+[lL]$", false);
re!(re_l_suffix, r"[lL]$", false);
re!(re_char, r"^\'.$\'", false);
re!(
    re_as_list,
    r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)",
    false
);
re!(
    re_add_block,
    r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}",
    true
);
re!(re_add, r"add\((.+?)\)", false);
re!(re_empty_list, r"new\s+ArrayList<\w*>\(\)", false);
re!(re_array, r"new\s+\w+\[\]\s*\{(.*?)\}", false);
re!(
    re_hashmap,
    r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}",
    true
);
re!(re_put, r#"put\(\"(.*?)\",\s*(.*?)\)"#, false);
re!(re_empty_map, r"new\s+HashMap<.*?>\s*\(\)", false);

fn matches(re: &Regex, s: &str) -> bool {
    re.match_at(&chars(s), 0).is_some()
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

fn float_or_raise(s: &str) -> PyResult<Value> {
    py_float(s).map(Value::Float).ok_or_else(|| {
        PyErr::new(
            "ValueError",
            format!(
                "could not convert string to float: {}",
                Value::str(s).repr()
            ),
        )
    })
}

/// `java_type_converter(value, expected_type, nested_type=None)`.
pub fn java_type_converter(
    value: &str,
    expected_type: &str,
    nested: Option<&str>,
) -> PyResult<Value> {
    if java_type(expected_type).is_none() {
        return Err(PyErr::new(
            "ValueError",
            format!("Unsupported type: {expected_type}"),
        ));
    }
    match expected_type {
        "byte" | "short" | "integer" => {
            if !matches(re_int(), value) {
                return Ok(Value::str(value));
            }
            int_or_raise(value)
        }
        "float" => {
            if !matches(re_float(), value) {
                return Ok(Value::str(value));
            }
            float_or_raise(&re_f_suffix().sub(value, ""))
        }
        "double" => {
            if !matches(re_double(), value) {
                return Ok(Value::str(value));
            }
            float_or_raise(value)
        }
        "long" => {
            if !matches(re_long(), value) {
                return Ok(Value::str(value));
            }
            int_or_raise(&re_l_suffix().sub(value, ""))
        }
        "boolean" => Ok(match value {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::str(value),
        }),
        // The reference's char pattern can never match.
        "char" => {
            let _ = matches(re_char(), value);
            Ok(Value::str(value))
        }
        "Array" => parse_array(value, nested),
        "ArrayList" => parse_arraylist(value, nested),
        "HashMap" => parse_hashmap(value),
        "Set" => Err(PyErr::new(
            "NotImplementedError",
            "Set conversion is not implemented",
        )),
        "Hashtable" => Err(PyErr::new(
            "NotImplementedError",
            "Set conversion is not implemented",
        )),
        "Queue" | "Stack" => Err(PyErr::new(
            "NotImplementedError",
            format!("{expected_type} conversion is not implemented"),
        )),
        _ => Ok(Value::str(value)), // String, any
    }
}

fn truthy(nested: Option<&str>) -> Option<&str> {
    nested.filter(|n| !n.is_empty())
}

/// One ArrayList element: quotes sliced off for char/String, else converted.
fn arraylist_element(s: &str, nested: Option<&str>) -> PyResult<Value> {
    let s = strip(s);
    match truthy(nested) {
        Some("char") | Some("String") => Ok(Value::Str(slice_inner(s))),
        Some(n) => java_type_converter(s, n, None),
        None => parse_java_value(s),
    }
}

fn parse_arraylist(input: &str, nested: Option<&str>) -> PyResult<Value> {
    let t = chars(input);
    if let Some(c) = re_as_list().search(&t, 0) {
        let elements = c.group(&t, 1).unwrap_or_default();
        let items = elements
            .split(',')
            .map(|e| arraylist_element(e, nested))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(Value::List(items));
    }
    if let Some(c) = re_add_block().search(&t, 0) {
        let adds: Vec<char> = chars(&c.group(&t, 1).unwrap_or_default());
        let items = re_add()
            .finditer(&adds)
            .iter()
            .map(|m| arraylist_element(&m.group(&adds, 1).unwrap_or_default(), nested))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(Value::List(items));
    }
    if re_empty_list().search(&t, 0).is_some() {
        return Ok(Value::List(Vec::new()));
    }
    Ok(Value::str(input))
}

fn parse_array(input: &str, nested: Option<&str>) -> PyResult<Value> {
    let t = chars(input);
    let Some(c) = re_array().search(&t, 0) else {
        return Ok(Value::str(input));
    };
    let elements = c.group(&t, 1).unwrap_or_default();
    let items = elements
        .split(',')
        .filter(|x| !strip(x).is_empty())
        .map(|x| match truthy(nested) {
            Some(n) => java_type_converter(strip(x), n, None),
            None => parse_java_value(strip(x)),
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Value::List(items))
}

fn parse_hashmap(input: &str) -> PyResult<Value> {
    let t = chars(input);
    if let Some(c) = re_hashmap().search(&t, 0) {
        let puts: Vec<char> = chars(&c.group(&t, 1).unwrap_or_default());
        let mut items: Vec<(String, Value)> = Vec::new();
        if !strip(&puts.iter().collect::<String>()).is_empty() {
            for m in re_put().finditer(&puts) {
                let key = m.group(&puts, 1).unwrap_or_default();
                let value = parse_java_value(strip(&m.group(&puts, 2).unwrap_or_default()))?;
                match items.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = value,
                    None => items.push((key, value)),
                }
            }
        }
        return Ok(Value::Dict(items));
    }
    if re_empty_map().search(&t, 0).is_some() {
        return Ok(Value::Dict(Vec::new()));
    }
    Ok(Value::str(input))
}

/// `parse_java_value`: a literal without type information.
pub fn parse_java_value(s: &str) -> PyResult<Value> {
    if s == "true" {
        return Ok(Value::Bool(true));
    }
    if s == "false" {
        return Ok(Value::Bool(false));
    }
    if s.starts_with('"') && s.ends_with('"') {
        return Ok(Value::Str(slice_inner(s)));
    }
    if matches(re_long(), s) {
        return int_or_raise(drop_last(s));
    }
    if matches(re_float(), s) {
        return float_or_raise(&re_f_suffix().sub(s, ""));
    }
    if let Some(i) = py_int(s) {
        return Ok(Value::Int(i));
    }
    if let Some(f) = py_float(s) {
        return Ok(Value::Float(f));
    }
    Ok(Value::str(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(v: &str, t: &str, n: Option<&str>) -> String {
        java_type_converter(v, t, n).unwrap().repr()
    }

    #[test]
    fn reference_examples() {
        assert_eq!(conv("true", "boolean", None), "True");
        assert_eq!(conv("-123", "integer", None), "-123");
        assert_eq!(conv("3.14f", "float", None), "3.14");
        assert_eq!(conv("3e-3F", "float", None), "0.003");
        assert_eq!(conv("3.14", "float", None), "'3.14'");
        assert_eq!(
            conv("-9223372036854775808L", "long", None),
            "-9223372036854775808"
        );
        assert_eq!(conv("a", "char", None), "'a'");
        assert_eq!(conv("123", "any", None), "'123'");
        assert_eq!(conv("new int[]{1, 2, 3}", "Array", None), "[1, 2, 3]");
        assert_eq!(conv("new int[] { }", "Array", None), "[]");
        assert_eq!(
            conv(r#"new Object[]{1, "abc", true}"#, "Array", None),
            "[1, 'abc', True]"
        );
        assert_eq!(
            conv("new long[]{1L, 2, 3L}", "Array", Some("long")),
            "[1, '2', 3]"
        );
        assert_eq!(
            conv(
                r#"new ArrayList<>(Arrays.asList("a", "b"))"#,
                "ArrayList",
                Some("String")
            ),
            "['a', 'b']"
        );
        assert_eq!(
            conv("new ArrayList<>()", "ArrayList", Some("integer")),
            "[]"
        );
        assert_eq!(
            conv(
                "new ArrayList<Float>() {{ add(1.0f); add(2.0f); }}",
                "ArrayList",
                Some("float")
            ),
            "[1.0, 2.0]"
        );
        assert_eq!(
            conv(
                "new ArrayList<Character>() {{ add('a'); add('b'); }}",
                "ArrayList",
                Some("char")
            ),
            "['a', 'b']"
        );
        assert_eq!(conv("new HashMap<>() {{ }}", "HashMap", None), "{}");
        assert_eq!(
            conv(
                r#"new HashMap<String, Object>() {{ put("key1", 1); put("key2", "value"); put("key3", true); }}"#,
                "HashMap",
                None
            ),
            "{'key1': 1, 'key2': 'value', 'key3': True}"
        );
        assert_eq!(conv("oops", "HashMap", None), "'oops'");
        assert_eq!(
            java_type_converter("x", "Set", None).unwrap_err().kind,
            "NotImplementedError"
        );
        assert_eq!(
            java_type_converter("x", "list", None).unwrap_err().kind,
            "ValueError"
        );
    }
}
