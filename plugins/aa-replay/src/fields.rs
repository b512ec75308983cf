//! Reading JSON objects field by field with agentperf-local's rules (its
//! strict pydantic models): an integer field takes only a JSON integer, a
//! number field any number, a text field only a string; each refusal names
//! the file, the line and the key.

use agentload_sdk::Error;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Where an object is: its file, the line it starts on, its key path
/// (`tasks[2]`) and, for a multi-line file, its raw text (a slice of
/// `text`), to find the line of each key.
#[derive(Debug, Clone)]
pub struct At<'a> {
    pub file: &'a str,
    pub line: u32,
    pub path: String,
    /// The whole file's text and the object's raw text in it.
    pub source: Option<(&'a str, &'a RawValue)>,
}

impl<'a> At<'a> {
    /// A one-line object (a JSONL row) at `line`.
    pub fn row(file: &'a str, line: u32) -> Self {
        Self {
            file,
            line,
            path: String::new(),
            source: None,
        }
    }

    /// The key path of `key` in this object.
    pub fn key(&self, key: &str) -> String {
        match (self.path.is_empty(), key.is_empty()) {
            (_, true) => self.path.clone(),
            (true, false) => key.to_owned(),
            (false, false) => format!("{}.{key}", self.path),
        }
    }

    /// The line `key`'s value is on (the object's line when it is absent).
    pub fn line_of(&self, key: &str) -> u32 {
        self.raw_of(key)
            .zip(self.source)
            .map_or(self.line, |(raw, (text, _))| line_of(text, raw.get()))
    }

    /// The raw text of `key`'s value in this object.
    pub fn raw_of(&self, key: &str) -> Option<&'a RawValue> {
        let (_, raw) = self.source?;
        raw_keys(raw)
            .into_iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// Where the value of `key` (an object or a list item inside it, `path`) is.
    pub fn inner(&self, key: &str, path: String, raw: Option<&'a RawValue>) -> At<'a> {
        let line = match (raw, self.source) {
            (Some(raw), Some((text, _))) => line_of(text, raw.get()),
            _ => self.line_of(key),
        };
        At {
            file: self.file,
            line,
            path,
            source: raw.zip(self.source).map(|(raw, (text, _))| (text, raw)),
        }
    }

    /// A data error at `key` (on its line).
    pub fn error(&self, key: &str, rule: impl std::fmt::Display) -> Error {
        let path = self.key(key);
        let what = if path.is_empty() {
            String::new()
        } else {
            format!("`{path}`: ")
        };
        Error::data(self.file, self.line_of(key), format!("{what}{rule}"))
    }
}

/// The 1-based line of `part` (a slice of `text`) in `text`.
pub fn line_of(text: &str, part: &str) -> u32 {
    let offset = (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    let offset = offset.min(text.len());
    1 + text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count() as u32
}

/// The keys of the JSON object `raw` with their values' raw text, in order.
fn raw_keys(raw: &RawValue) -> Vec<(String, &RawValue)> {
    struct Keys<'a>(Vec<(String, &'a RawValue)>);
    impl<'de> serde::Deserialize<'de> for Keys<'de> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Keys<'de>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<M: serde::de::MapAccess<'de>>(
                    self,
                    mut m: M,
                ) -> Result<Keys<'de>, M::Error> {
                    let mut out = Vec::new();
                    while let Some(entry) = m.next_entry::<String, &'de RawValue>()? {
                        out.push(entry);
                    }
                    Ok(Keys(out))
                }
            }
            d.deserialize_map(Visit)
        }
    }
    serde_json::from_str::<Keys<'_>>(raw.get()).map_or_else(|_| Vec::new(), |k| k.0)
}

/// The raw text of each item of the JSON list `raw`.
pub fn raw_items(raw: &RawValue) -> Vec<&RawValue> {
    serde_json::from_str(raw.get()).unwrap_or_default()
}

/// An object being read.
pub struct Obj<'a> {
    pub map: &'a Map<String, Value>,
    pub at: At<'a>,
}

impl<'a> Obj<'a> {
    /// `value` as an object at `at` (`what` names it in a refusal).
    pub fn of(value: &'a Value, at: At<'a>, what: &str) -> Result<Obj<'a>, Error> {
        match value {
            Value::Object(map) => Ok(Obj { map, at }),
            _ => Err(at.error("", format!("{what} must be a JSON object"))),
        }
    }

    /// The object that is the value of `key` (`what` names it), or at
    /// item `index` of the list that is (`index`).
    pub fn child(
        &self,
        key: &str,
        index: Option<usize>,
        value: &'a Value,
        what: &str,
    ) -> Result<Obj<'a>, Error> {
        let raw = self.at.raw_of(key);
        let (path, raw) = match index {
            None => (self.at.key(key), raw),
            Some(i) => (
                format!("{}[{i}]", self.at.key(key)),
                raw.and_then(|r| raw_items(r).get(i).copied()),
            ),
        };
        Obj::of(value, self.at.inner(key, path, raw), what)
    }

    /// A key present but null reads as absent (a field with a default of None).
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// A required key (null is not absent here: it is a wrong type).
    pub fn required(&self, key: &str) -> Result<&'a Value, Error> {
        self.map
            .get(key)
            .ok_or_else(|| self.at.error(key, "is required"))
    }

    /// A non-empty string, required.
    pub fn text(&self, key: &str) -> Result<&'a str, Error> {
        match self.required(key)? {
            Value::String(s) if !s.is_empty() => Ok(s),
            Value::String(_) => Err(self.at.error(key, "must not be empty")),
            _ => Err(self.at.error(key, "must be a string")),
        }
    }

    /// A string or null, optional.
    pub fn opt_text(&self, key: &str) -> Result<Option<&'a str>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.at.error(key, "must be a string or null")),
        }
    }

    /// A non-negative integer, required.
    pub fn count(&self, key: &str) -> Result<u64, Error> {
        let v = self.required(key)?;
        v.as_u64()
            .ok_or_else(|| self.at.error(key, "must be a non-negative integer"))
    }

    /// A non-negative integer or null, optional.
    pub fn opt_count(&self, key: &str) -> Result<Option<u64>, Error> {
        self.get(key)
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| self.at.error(key, "must be a non-negative integer or null"))
            })
            .transpose()
    }

    /// An integer or null, optional.
    pub fn opt_int(&self, key: &str) -> Result<Option<i64>, Error> {
        self.get(key)
            .map(|v| {
                v.as_i64()
                    .ok_or_else(|| self.at.error(key, "must be an integer or null"))
            })
            .transpose()
    }

    /// A non-negative number, required.
    pub fn duration(&self, key: &str) -> Result<f64, Error> {
        match self.required(key)?.as_f64() {
            Some(v) if v >= 0.0 => Ok(v),
            _ => Err(self.at.error(key, "must be a non-negative number")),
        }
    }

    /// A non-negative number or null, optional.
    pub fn opt_duration(&self, key: &str) -> Result<Option<f64>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(v) if v >= 0.0 => Ok(Some(v)),
                _ => Err(self.at.error(key, "must be a non-negative number or null")),
            },
        }
    }

    /// A boolean, required.
    pub fn flag(&self, key: &str) -> Result<bool, Error> {
        self.required(key)?
            .as_bool()
            .ok_or_else(|| self.at.error(key, "must be true or false"))
    }

    /// An object or null, optional.
    pub fn opt_object(&self, key: &str) -> Result<Option<&'a Value>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(v @ Value::Object(_)) => Ok(Some(v)),
            Some(_) => Err(self.at.error(key, "must be a JSON object or null")),
        }
    }

    /// A list, required (`default`: absent reads as empty).
    pub fn list(&self, key: &str, default: bool) -> Result<&'a [Value], Error> {
        match self.map.get(key) {
            None if default => Ok(&[]),
            None => Err(self.at.error(key, "is required")),
            Some(Value::Array(items)) => Ok(items),
            Some(_) => Err(self.at.error(key, "must be a list")),
        }
    }

    /// A path that stays inside the manifest's folder: relative, no `..`.
    /// Returned as agentperf-local's `Path` reads it: `/`-joined parts,
    /// without empty or `.` parts.
    pub fn inside_path(&self, key: &str) -> Result<String, Error> {
        let text = self.text(key)?;
        normal_path(text).ok_or_else(|| {
            self.at.error(
                key,
                format!("{text:?} must stay within the manifest directory"),
            )
        })
    }

    /// The key exists (with any value, null included).
    pub fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }
}

/// `path` as a relative POSIX path with no empty, `.` or `..` parts; none
/// when it is absolute or has a `..` part.
pub fn normal_path(path: &str) -> Option<String> {
    if path.starts_with('/') {
        return None;
    }
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.is_empty() || parts.contains(&"..") {
        return None;
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keys_line_is_found_in_a_multi_line_file() {
        let text = "{\n  \"tasks\": [\n    {\n      \"a\": 1,\n      \"b\":\n 2\n    }\n  ]\n}\n";
        let root: &RawValue = serde_json::from_str(text).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        let top = Obj::of(
            &value,
            At {
                source: Some((text, root)),
                ..At::row("m.json", 1)
            },
            "m",
        )
        .unwrap();
        assert_eq!(top.at.line_of("tasks"), 2);
        let task = top
            .child("tasks", Some(0), &value["tasks"][0], "a task")
            .unwrap();
        assert_eq!(task.at.line, 3);
        assert_eq!(task.at.line_of("a"), 4);
        assert_eq!(task.at.line_of("b"), 6);
        assert_eq!(task.at.line_of("absent"), 3);
        let e = task.count("c").unwrap_err();
        assert_eq!(e, Error::data("m.json", 3, "`tasks[0].c`: is required"));
    }

    #[test]
    fn paths_read_as_posix_paths_and_never_leave() {
        assert_eq!(
            normal_path("traces/a.jsonl").as_deref(),
            Some("traces/a.jsonl")
        );
        assert_eq!(
            normal_path("./traces//a.jsonl").as_deref(),
            Some("traces/a.jsonl")
        );
        for bad in ["/etc/passwd", "../a.jsonl", "traces/../../a", ".", ""] {
            assert_eq!(normal_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn fields_are_read_strictly_naming_file_line_and_key() {
        let v: Value = serde_json::from_str(
            r#"{"n": 5.0, "s": "", "t": 3, "d": -1, "ok": 2, "f": 1.5, "null": null}"#,
        )
        .unwrap();
        let at = At {
            path: "tasks[1]".into(),
            ..At::row("m.json", 7)
        };
        let o = Obj::of(&v, at, "a task").unwrap();
        let text = |e: Error| match e {
            Error::Data {
                file,
                line,
                message,
            } => format!("{file}:{line}: {message}"),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            text(o.count("n").unwrap_err()),
            "m.json:7: `tasks[1].n`: must be a non-negative integer"
        );
        assert!(text(o.text("s").unwrap_err()).ends_with("`tasks[1].s`: must not be empty"));
        assert!(text(o.text("t").unwrap_err()).ends_with("must be a string"));
        assert!(text(o.duration("d").unwrap_err()).contains("`tasks[1].d`"));
        assert!(text(o.count("missing").unwrap_err()).ends_with("`tasks[1].missing`: is required"));
        assert_eq!(o.count("ok").unwrap(), 2);
        assert_eq!(o.duration("ok").unwrap(), 2.0);
        assert_eq!(o.duration("f").unwrap(), 1.5);
        assert_eq!(o.opt_count("null").unwrap(), None);
        assert_eq!(o.opt_text("absent").unwrap(), None);
    }
}
