//! Java and JavaScript source literals for gold values: BFCL's checker
//! requires Java/JS arguments as strings and parses them back with its
//! regex-based converters (`java_type_converter`, `js_type_converter`), so
//! the oracle writes each value in the form those converters read.

use serde_json::Value;

use super::Language;

/// The literal of `value` for a parameter of BFCL type `ty` (element type `items`).
pub(crate) fn render(lang: Language, ty: &str, items: Option<&str>, value: &Value) -> String {
    match lang {
        Language::Java => java(ty, items, value),
        Language::JavaScript => js(ty, items, value),
    }
}

/// A number as Python's `str()` writes JSON numbers (ints plain, floats with a point).
fn number(value: &Value) -> String {
    match value {
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Strings as they are; anything else as its JSON text.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => number(other),
    }
}

fn java(ty: &str, items: Option<&str>, value: &Value) -> String {
    match ty {
        "long" => format!("{}L", number(value)),
        "float" => format!("{}f", number(value)),
        "boolean" | "byte" | "short" | "integer" | "double" => number(value),
        "Array" => {
            let elements: Vec<String> = list(value)
                .iter()
                .map(|e| java(items.unwrap_or("String"), None, e))
                .collect();
            format!(
                "new {}[]{{{}}}",
                items.unwrap_or("Object"),
                elements.join(", ")
            )
        }
        "ArrayList" => {
            let elements = list(value);
            if elements.is_empty() {
                return "new ArrayList<>()".to_owned();
            }
            let rendered: Vec<String> = elements
                .iter()
                .map(|e| match items {
                    // String and char elements lose their first and last character.
                    Some("String") | Some("char") => format!("\"{}\"", plain(e)),
                    Some(t) => java(t, None, e),
                    None => java_value(e),
                })
                .collect();
            format!("new ArrayList<>(Arrays.asList({}))", rendered.join(", "))
        }
        "HashMap" => {
            let puts: Vec<String> = value
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("put(\"{k}\", {}); ", java_value(v)))
                .collect();
            format!("new HashMap<String, String>() {{{{ {}}}}}", puts.concat())
        }
        _ => plain(value),
    }
}

/// A value read back by `parse_java_value` (untyped).
fn java_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("\"{s}\""),
        other => number(other),
    }
}

fn js(ty: &str, items: Option<&str>, value: &Value) -> String {
    match ty {
        "Bigint" => format!("{}n", number(value)),
        "integer" | "float" | "Boolean" => number(value),
        "array" => js_array(items, value),
        "dict" => js_dict(value),
        _ => plain(value),
    }
}

fn js_array(items: Option<&str>, value: &Value) -> String {
    let elements: Vec<String> = list(value)
        .iter()
        .map(|e| match e {
            Value::Array(_) => js_array(None, e),
            Value::String(s) => format!("\"{s}\""),
            other => match items {
                Some(t) => js(t, None, other),
                None => number(other),
            },
        })
        .collect();
    format!("[{}]", elements.join(", "))
}

fn js_dict(value: &Value) -> String {
    let pairs: Vec<String> = value
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let v = match v {
                Value::Array(_) => js_array(None, v),
                Value::Object(_) => js_dict(v),
                Value::String(s) => format!("'{s}'"),
                other => number(other),
            };
            format!("{k}: {v}")
        })
        .collect();
    format!("{{{}}}", pairs.join(", "))
}

fn list(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn java_literals_match_the_converter_forms() {
        let j = |ty, items, v| render(Language::Java, ty, items, &v);
        assert_eq!(j("long", None, json!(5)), "5L");
        assert_eq!(j("float", None, json!(2.5)), "2.5f");
        assert_eq!(j("boolean", None, json!(true)), "true");
        assert_eq!(j("String", None, json!("mapController")), "mapController");
        assert_eq!(j("Array", Some("int"), json!([1, 2])), "new int[]{1, 2}");
        assert_eq!(
            j("ArrayList", Some("String"), json!(["a", "b"])),
            "new ArrayList<>(Arrays.asList(\"a\", \"b\"))"
        );
        assert_eq!(
            j("HashMap", None, json!({"k": "v", "n": 3})),
            "new HashMap<String, String>() {{ put(\"k\", \"v\"); put(\"n\", 3); }}"
        );
    }

    #[test]
    fn js_literals_match_the_converter_forms() {
        let s = |ty, items, v| render(Language::JavaScript, ty, items, &v);
        assert_eq!(s("Boolean", None, json!(true)), "true");
        assert_eq!(s("Bigint", None, json!(12)), "12n");
        assert_eq!(
            s("array", Some("String"), json!(["a", "b"])),
            "[\"a\", \"b\"]"
        );
        assert_eq!(s("array", Some("float"), json!([60, 30])), "[60, 30]");
        assert_eq!(s("array", None, json!([[1, 2], [3]])), "[[1, 2], [3]]");
        assert_eq!(
            s(
                "dict",
                None,
                json!({"initialState": "x", "list": ["a"], "n": 1})
            ),
            "{initialState: 'x', list: [\"a\"], n: 1}"
        );
    }
}
