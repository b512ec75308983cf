//! A row's top-level keys, read straight into named slots as the line is parsed: no map of
//! the row is built, so no key is hashed, and keys the loader does not read are skipped
//! (still checked to be JSON). As with a JSON object read into a map, a key given twice keeps
//! its last value, and a `null` value counts as an absent key.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::row::GENERATION_PARAMETERS;

/// The keys of one row the loader reads; each `None` when absent or `null`.
#[derive(Debug, Default)]
pub(super) struct Fields {
    /// `_type` (`dataset_metadata` marks a line that is not a row).
    pub kind: Option<Value>,
    pub conversation_id: Option<Value>,
    pub turn: Option<Value>,
    pub role: Option<Value>,
    pub content: Option<Value>,
    pub reasoning_content: Option<Value>,
    pub tool_calls: Option<Value>,
    pub tool_results: Option<Value>,
    /// The workflow domain's ground truth on assistant rows.
    pub intent_codes: Option<Value>,
    pub system: Option<Value>,
    pub name: Option<Value>,
    /// The schema's generation parameters, in [`GENERATION_PARAMETERS`] order.
    pub parameters: [Option<Value>; GENERATION_PARAMETERS.len()],
}

impl Fields {
    /// The generation parameter `key` (one of [`GENERATION_PARAMETERS`]) in `parameters`.
    pub fn parameter_in<'a>(
        parameters: &'a [Option<Value>; GENERATION_PARAMETERS.len()],
        key: &str,
    ) -> Option<&'a Value> {
        let index = GENERATION_PARAMETERS.iter().position(|(k, _)| *k == key);
        parameters[index.expect("a generation parameter")].as_ref()
    }

    fn slot(&mut self, key: Key) -> Option<&mut Option<Value>> {
        Some(match key {
            Key::Kind => &mut self.kind,
            Key::ConversationId => &mut self.conversation_id,
            Key::Turn => &mut self.turn,
            Key::Role => &mut self.role,
            Key::Content => &mut self.content,
            Key::ReasoningContent => &mut self.reasoning_content,
            Key::ToolCalls => &mut self.tool_calls,
            Key::ToolResults => &mut self.tool_results,
            Key::IntentCodes => &mut self.intent_codes,
            Key::System => &mut self.system,
            Key::Name => &mut self.name,
            Key::Parameter(i) => &mut self.parameters[i],
            Key::Other => return None,
        })
    }
}

/// A top-level key, recognised without allocating.
#[derive(Debug, Clone, Copy)]
enum Key {
    Kind,
    ConversationId,
    Turn,
    Role,
    Content,
    ReasoningContent,
    ToolCalls,
    ToolResults,
    IntentCodes,
    System,
    Name,
    Parameter(usize),
    Other,
}

impl Key {
    fn of(key: &str) -> Key {
        match key {
            "_type" => Key::Kind,
            "conversation_id" => Key::ConversationId,
            "turn" => Key::Turn,
            "role" => Key::Role,
            "content" => Key::Content,
            "reasoning_content" => Key::ReasoningContent,
            "tool_calls" => Key::ToolCalls,
            "tool_results" => Key::ToolResults,
            "intent_codes" => Key::IntentCodes,
            "system" => Key::System,
            "name" => Key::Name,
            other => GENERATION_PARAMETERS
                .iter()
                .position(|(k, _)| *k == other)
                .map_or(Key::Other, Key::Parameter),
        }
    }
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(Key::of(key))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> de::Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fields, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = Fields;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
                let mut fields = Fields::default();
                while let Some(key) = map.next_key::<Key>()? {
                    match fields.slot(key) {
                        // `Option<Value>` reads `null` as `None`; a repeated key overwrites.
                        Some(slot) => *slot = map.next_value()?,
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(fields)
            }
        }
        d.deserialize_map(FieldsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_of_a_repeated_key_counts_and_null_is_absent() {
        let f: Fields = serde_json::from_str(
            r#"{"role": "user", "role": "tool", "content": null, "x": {"deep": [1]},
                "temperature": 0.5, "tools": [], "turn": 2}"#,
        )
        .unwrap();
        assert_eq!(f.role, Some(Value::from("tool")));
        assert_eq!(f.content, None);
        assert_eq!(f.turn, Some(Value::from(2)));
        let parameter = |key| Fields::parameter_in(&f.parameters, key);
        assert_eq!(parameter("temperature"), Some(&Value::from(0.5)));
        assert_eq!(parameter("tools"), Some(&Value::Array(Vec::new())));
        assert_eq!(parameter("seed"), None);
        // A key with an escape is still recognised.
        let f: Fields = serde_json::from_str(r#"{"rol\u0065": "user"}"#).unwrap();
        assert_eq!(f.role, Some(Value::from("user")));
        // Skipped values are still checked to be JSON.
        assert!(serde_json::from_str::<Fields>(r#"{"x": [1,}"#).is_err());
    }
}
