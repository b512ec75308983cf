//! [`Detail`]: a verdict's detail object, kept in whichever form it was made
//! (a JSON value, or JSON text) until something needs the other one.
//!
//! Verdicts cross the component boundary as JSON text. A scorer that writes
//! its detail as text hands it over untouched, and `aggregate` parses a
//! detail only when it reads it: thousands of verdicts are neither printed
//! and re-parsed on the way out nor parsed on the way back in for nothing.

use serde::de::DeserializeOwned;
use serde_json::Value;
use std::cell::OnceCell;
use std::fmt;

/// A verdict's detail: a JSON object (error type, decoded calls...).
#[derive(Clone)]
pub struct Detail {
    value: OnceCell<Value>,
    json: OnceCell<String>,
}

impl Detail {
    /// A detail of this JSON text (an object; the host ignores anything else).
    pub fn from_json(json: String) -> Self {
        Self {
            value: OnceCell::new(),
            json: OnceCell::from(json),
        }
    }

    /// The detail as a JSON value, parsed on first use (`null` when its text
    /// is not JSON).
    pub fn value(&self) -> &Value {
        self.value.get_or_init(|| {
            self.json
                .get()
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or(Value::Null)
        })
    }

    /// The detail deserialized as `T`, straight from its text when it has
    /// one: reading a few fields does not build the whole tree.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match self.json.get() {
            Some(text) => serde_json::from_str(text),
            None => T::deserialize(self.value()),
        }
    }

    /// The detail as JSON text.
    pub fn json(&self) -> &str {
        self.json.get_or_init(|| self.value().to_string())
    }

    /// The detail as JSON text, without a copy when it was made as text.
    pub fn into_json(mut self) -> String {
        match self.json.take() {
            Some(text) => text,
            None => self.value().to_string(),
        }
    }
}

impl Default for Detail {
    /// An empty object.
    fn default() -> Self {
        Self::from(Value::Object(Default::default()))
    }
}

impl From<Value> for Detail {
    fn from(value: Value) -> Self {
        Self {
            value: OnceCell::from(value),
            json: OnceCell::new(),
        }
    }
}

impl std::ops::Index<&str> for Detail {
    type Output = Value;

    /// `detail["key"]`, `null` when absent (as indexing a [`Value`]).
    fn index(&self, key: &str) -> &Value {
        &self.value()[key]
    }
}

impl PartialEq for Detail {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

impl PartialEq<Value> for Detail {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl fmt::Debug for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.json())
    }
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_passes_through_and_parses_on_demand() {
        let text = r#"{"id":"x_0","error_type":null,"n":1}"#.to_owned();
        let d = Detail::from_json(text.clone());
        assert_eq!(d["id"], "x_0");
        assert_eq!(
            d.into_json(),
            text,
            "text made as text is handed over as is"
        );
    }

    #[test]
    fn parse_reads_fields_from_either_form() {
        #[derive(serde::Deserialize)]
        struct Id {
            id: String,
        }
        let from_text = Detail::from_json(r#"{"id":"a","big":[1,2,3]}"#.into());
        let from_value = Detail::from(json!({"id": "a", "big": [1, 2, 3]}));
        assert_eq!(from_text.parse::<Id>().unwrap().id, "a");
        assert_eq!(from_value.parse::<Id>().unwrap().id, "a");
        assert_eq!(from_text, from_value);
        assert_eq!(from_value.into_json(), r#"{"id":"a","big":[1,2,3]}"#);
    }

    #[test]
    fn text_that_is_not_json_reads_as_null() {
        let d = Detail::from_json("{oops".into());
        assert_eq!(d.value(), &Value::Null);
        assert!(d.parse::<Value>().is_err());
        assert_eq!(d.json(), "{oops");
    }
}
