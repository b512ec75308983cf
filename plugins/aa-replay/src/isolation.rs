//! agentperf-local's cache isolation (`replay/cache_isolation.py`): one
//! namespace per run, put in front of the first message of every request,
//! so a prefix cache works within a run (and across tasks that share a
//! system prompt) but never across runs. Probe requests are not prefixed.

use agentload_sdk::Error;
use serde_json::{Map, Value};

/// Digits in a namespace.
pub const NAMESPACE_DIGITS: usize = 32;

/// The text put in front of the first message: the namespace, then AA's line.
pub fn prefix(namespace: &str) -> String {
    format!("{namespace}\nPerformance replay cache namespace. Ignore the digits above.\n\n")
}

/// `first` (the first message of a request, as agentperf-local writes it)
/// with the namespace's prefix: in front of string content, as a leading
/// text part of list content, as the content (trailing whitespace trimmed)
/// of a message whose content is null or absent (then added after its
/// other keys, as a Python dict does).
///
/// # Errors
/// Content of another type (a number, an object...): agentperf-local would
/// send Python's `str()` of it; refused rather than guessed.
pub fn isolate(first: &Map<String, Value>, namespace: &str) -> Result<Map<String, Value>, String> {
    let prefix = prefix(namespace);
    let mut out = first.clone();
    let content = match first.get("content") {
        Some(Value::String(text)) => Value::String(format!("{prefix}{text}")),
        Some(Value::Array(parts)) => {
            let mut with = Vec::with_capacity(parts.len() + 1);
            let mut part = Map::new();
            part.insert("type".into(), Value::String("text".into()));
            part.insert("text".into(), Value::String(prefix));
            with.push(Value::Object(part));
            with.extend(parts.iter().cloned());
            Value::Array(with)
        }
        None | Some(Value::Null) => Value::String(prefix.trim_end().to_owned()),
        Some(other) => {
            return Err(format!(
                "the first message's content is {other}, neither text, a list of parts nor null: \
                 agentperf-local would prefix Python's str() of it"
            ))
        }
    };
    out.insert("content".into(), content);
    Ok(out)
}

/// Checks a namespace given in the settings (any non-empty text is AA's rule too).
pub fn check(namespace: &str) -> Result<(), Error> {
    if namespace.trim().is_empty() {
        return Err(Error::config(
            "settings: `cache_namespace` must not be blank",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn the_prefix_is_agentperf_locals_byte_for_byte() {
        let ns = "1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2";
        assert_eq!(
            prefix(ns),
            format!("{ns}\nPerformance replay cache namespace. Ignore the digits above.\n\n")
        );
        let text = isolate(&obj(r#"{"role":"system","content":"You are"}"#), "7").unwrap();
        assert_eq!(
            serde_json::to_string(&text).unwrap(),
            r#"{"role":"system","content":"7\nPerformance replay cache namespace. Ignore the digits above.\n\nYou are"}"#
        );
        let parts = isolate(
            &obj(r#"{"role":"user","content":[{"type":"text","text":"a"}]}"#),
            "7",
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&parts).unwrap(),
            r#"{"role":"user","content":[{"type":"text","text":"7\nPerformance replay cache namespace. Ignore the digits above.\n\n"},{"type":"text","text":"a"}]}"#
        );
        // Null content is replaced in place; absent content is added last.
        let null = isolate(&obj(r#"{"role":"user","content":null,"name":"n"}"#), "7").unwrap();
        assert_eq!(
            serde_json::to_string(&null).unwrap(),
            r#"{"role":"user","content":"7\nPerformance replay cache namespace. Ignore the digits above.","name":"n"}"#
        );
        let absent = isolate(&obj(r#"{"role":"assistant","tool_calls":[]}"#), "7").unwrap();
        assert_eq!(
            serde_json::to_string(&absent).unwrap(),
            r#"{"role":"assistant","tool_calls":[],"content":"7\nPerformance replay cache namespace. Ignore the digits above."}"#
        );
        assert!(isolate(&obj(r#"{"role":"user","content":5}"#), "7").is_err());
    }
}
