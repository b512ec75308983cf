//! JSON values as YAML that the reference's loader (PyYAML, YAML 1.1) reads
//! back as the same values, with yaml-rust2's emitter: strings a YAML 1.1
//! parser would take for another type are quoted, floats always carry a
//! decimal point and a signed exponent (PyYAML's `!!float` form).

use serde_json::Value;
use yaml_rust2::yaml::{Hash, Yaml};
use yaml_rust2::{YamlEmitter, YamlLoader};

/// Problems writing or reading YAML.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    #[error("YAML emit: {0}")]
    Emit(#[from] yaml_rust2::EmitError),
    #[error("YAML parse: {0}")]
    Parse(#[from] yaml_rust2::ScanError),
    #[error("YAML: {0}")]
    Shape(String),
}

/// `value` as a YAML document (`---` first, a newline last).
pub fn to_yaml(value: &Value) -> Result<String, YamlError> {
    let mut out = String::new();
    YamlEmitter::new(&mut out).dump(&to_node(value)?)?;
    out.push('\n');
    Ok(out)
}

/// The first document of `text` as JSON (for checks and tests).
pub fn from_yaml(text: &str) -> Result<Value, YamlError> {
    let docs = YamlLoader::load_from_str(text)?;
    docs.first()
        .map(to_json)
        .transpose()?
        .ok_or_else(|| YamlError::Shape("no document".into()))
}

fn to_node(value: &Value) -> Result<Yaml, YamlError> {
    Ok(match value {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Boolean(*b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) if !n.is_f64() => Yaml::Integer(i),
            (_, Some(f)) if n.is_f64() => Yaml::Real(float_text(f)),
            _ => return Err(YamlError::Shape(format!("{n} does not fit a YAML integer"))),
        },
        Value::String(s) => Yaml::String(s.clone()),
        Value::Array(items) => Yaml::Array(items.iter().map(to_node).collect::<Result<_, _>>()?),
        Value::Object(map) => {
            let mut hash = Hash::new();
            for (k, v) in map {
                hash.insert(Yaml::String(k.clone()), to_node(v)?);
            }
            Yaml::Hash(hash)
        }
    })
}

/// A float as PyYAML writes one: Python's `repr`, with `.0` put before an
/// exponent that lacks a decimal point (`1e+20` -> `1.0e+20`).
fn float_text(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let repr = pysem::num::float_repr(f).to_lowercase();
    if !repr.contains('.') && repr.contains('e') {
        repr.replacen('e', ".0e", 1)
    } else {
        repr
    }
}

fn to_json(node: &Yaml) -> Result<Value, YamlError> {
    Ok(match node {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(text) => {
            let f: f64 = match text.as_str() {
                ".nan" | ".NaN" => f64::NAN,
                ".inf" | "+.inf" => f64::INFINITY,
                "-.inf" => f64::NEG_INFINITY,
                t => t
                    .parse()
                    .map_err(|_| YamlError::Shape(format!("bad float {t}")))?,
            };
            serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
        }
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Yaml::Hash(hash) => {
            let mut map = serde_json::Map::new();
            for (k, v) in hash {
                let key = k
                    .as_str()
                    .ok_or_else(|| YamlError::Shape(format!("non-string key {k:?}")))?;
                map.insert(key.to_string(), to_json(v)?);
            }
            Value::Object(map)
        }
        other => return Err(YamlError::Shape(format!("unsupported node {other:?}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_and_keeps_key_order() {
        let v = json!({"name": "edge", "version": "1.0", "zeta": 1, "alpha": [0.0, 600.0, 1e20, 2.5e-7],
            "nested": {"on": true, "none": null, "empty": {}}, "list": []});
        let text = to_yaml(&v).unwrap();
        assert_eq!(from_yaml(&text).unwrap(), v, "{text}");
        let keys: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with(' ') && l.contains(':'))
            .map(|l| l.split(':').next().unwrap())
            .collect();
        assert_eq!(keys, ["name", "version", "zeta", "alpha", "nested", "list"]);
    }

    /// Strings a YAML 1.1 loader (PyYAML) would read as another type stay
    /// strings; floats keep PyYAML's float form.
    #[test]
    fn yaml_1_1_ambiguities_are_quoted() {
        for s in [
            "1.0",
            "42",
            "on",
            "off",
            "yes",
            "No",
            "null",
            "~",
            "true",
            "",
            " x",
            "1e3",
            "12:30",
            "http://localhost:8080",
            "- a",
            "#c",
            "0x1F",
        ] {
            let text = to_yaml(&json!({ "k": s })).unwrap();
            let line = text.lines().find(|l| l.starts_with("k:")).unwrap();
            assert!(
                line.contains('"') || line.contains('\''),
                "{s:?} unquoted: {line}"
            );
        }
        let text = to_yaml(&json!({"t": 0.0, "big": 1e20, "count": 7, "n": 1})).unwrap();
        assert!(text.contains("t: 0.0\n"), "{text}");
        assert!(text.contains("big: 1.0e+20\n"), "{text}");
        assert!(
            text.contains("count: 7\n") && text.contains("\"n\": 1\n"),
            "{text}"
        );
    }
}
