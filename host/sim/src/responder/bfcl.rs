//! The `oracle`'s BFCL v4 answers: for a session id that is a BFCL
//! single-turn entry id, the gold calls (the first acceptable value of each
//! parameter; parameters whose first value is `""`, "may be omitted", are
//! left out); for the hallucination subsets, a plain answer with no call.
//!
//! Function names are sent as the model sees them in `tools`: dots become
//! underscores (BFCL's OpenAI conversion).

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::answer::{Answer, ToolCall};

mod literal;
use crate::SimError;

/// Session ids with these prefixes are hallucination samples: no call.
const NO_CALL_PREFIXES: [&str; 2] = ["irrelevance_", "live_irrelevance_"];

/// The raw function docs of every entry that has an answer file, by id
/// (for the parameters' types and which ones are required).
fn read_docs(
    dir: &Path,
    answer_files: &[std::path::PathBuf],
) -> Result<HashMap<String, Vec<Value>>, SimError> {
    let mut docs = HashMap::new();
    for answers in answer_files {
        let Some(name) = answers.file_name() else {
            continue;
        };
        let path = dir.join(name);
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|source| SimError::Read {
            path: path.clone(),
            source,
        })?;
        for line in super::jsonl_lines(&path, &text) {
            let (_, row) = line?;
            if let (Some(id), Some(functions)) = (row["id"].as_str(), row["function"].as_array()) {
                docs.insert(id.to_owned(), functions.clone());
            }
        }
    }
    Ok(docs)
}

/// Gold answers by BFCL entry id.
#[derive(Debug, Default)]
pub(crate) struct BfclGold {
    calls: HashMap<String, Vec<ToolCall>>,
}

impl BfclGold {
    /// Reads every `possible_answer/BFCL_v4_*.json` under `dir` (the
    /// `bfcl_v4` data folder).
    pub(crate) fn load(dir: &Path) -> Result<Self, SimError> {
        let answers = dir.join("possible_answer");
        let entries = std::fs::read_dir(&answers).map_err(|source| SimError::Read {
            path: answers.clone(),
            source,
        })?;
        let mut gold = Self::default();
        let mut paths: Vec<_> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        let docs = read_docs(dir, &paths)?;
        for path in paths {
            let text = std::fs::read_to_string(&path).map_err(|source| SimError::Read {
                path: path.clone(),
                source,
            })?;
            for line in super::jsonl_lines(&path, &text) {
                let (line, row) = line?;
                let bad = |reason: &str| SimError::Parse {
                    path: path.clone(),
                    line,
                    reason: reason.to_owned(),
                };
                let id = row
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("answer without a string 'id'"))?;
                // Multi-turn answers are lists of call strings: not ours.
                let Some(truth) = row.get("ground_truth").and_then(Value::as_array) else {
                    continue;
                };
                if truth.iter().any(|c| !c.is_object()) {
                    continue;
                }
                let entry_docs = docs.get(id).map(Vec::as_slice);
                let calls = truth
                    .iter()
                    .enumerate()
                    .map(|(i, call)| {
                        gold_call(id, i, call, entry_docs)
                            .ok_or_else(|| bad("malformed ground_truth call"))
                    })
                    .collect::<Result<_, _>>()?;
                gold.calls.insert(id.to_owned(), calls);
            }
        }
        Ok(gold)
    }

    /// The gold answer for `session`, if it is a BFCL entry id.
    pub(crate) fn answer(&self, session: &str) -> Option<Answer> {
        if let Some(calls) = self.calls.get(session) {
            return Some(Answer {
                tool_calls: calls.clone(),
                ..Answer::default()
            });
        }
        NO_CALL_PREFIXES
            .iter()
            .any(|p| session.starts_with(p))
            .then(|| Answer {
                content: "None of the available functions can answer this request.".to_owned(),
                ..Answer::default()
            })
    }
}

/// The value sent for a candidate list: `None` (omit) when `""` ("may be
/// omitted") is among the candidates and the schema does not require the
/// parameter, else the first other candidate, resolved one level as BFCL's
/// value checkers compare it.
fn pick(candidates: &Value, required: bool) -> Option<Value> {
    let list = candidates.as_array()?;
    let optional = list.iter().any(|c| c.as_str() == Some(""));
    if optional && !required {
        return None;
    }
    list.iter().find(|c| c.as_str() != Some("")).map(resolve)
}

/// A dict candidate maps keys to candidate lists (`dict_checker`), a list
/// of dicts holds such dicts (`list_dict_checker`); deeper values are
/// compared as they are, so they are sent as they are.
fn resolve(candidate: &Value) -> Value {
    let one_level = |map: &Map<String, Value>| {
        Value::Object(
            map.iter()
                .filter_map(|(k, v)| {
                    let list = v.as_array()?;
                    if list.iter().any(|c| c.as_str() == Some("")) {
                        return None;
                    }
                    list.first().map(|first| (k.clone(), first.clone()))
                })
                .collect(),
        )
    };
    match candidate {
        Value::Object(map) => one_level(map),
        Value::Array(items) if items.iter().any(Value::is_object) => Value::Array(
            items
                .iter()
                .map(|item| item.as_object().map_or_else(|| item.clone(), one_level))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `{func: {param: [values…]}}` to a tool call (see [`pick`]); for Java and
/// JavaScript entries each value is written as the source literal BFCL's
/// converters parse back.
fn gold_call(id: &str, index: usize, call: &Value, docs: Option<&[Value]>) -> Option<ToolCall> {
    let (name, params) = call.as_object()?.iter().next()?;
    let language = Language::of(id);
    let doc = docs.and_then(|d| d.iter().find(|f| f["name"].as_str() == Some(name.as_str())));
    let required = |param: &str| {
        doc.and_then(|d| d["parameters"]["required"].as_array())
            .is_some_and(|r| r.iter().any(|p| p.as_str() == Some(param)))
    };
    let mut arguments = Map::new();
    for (param, values) in params.as_object()? {
        let Some(value) = pick(values, required(param)) else {
            continue;
        };
        let value = match (language, doc, &value) {
            // A string where a value of another type is expected is a
            // variable name: BFCL compares it as it is.
            (Some(_), _, Value::String(_)) | (None, _, _) | (_, None, _) => value,
            (Some(lang), Some(doc), _) => {
                let spec = &doc["parameters"]["properties"][param];
                let ty = spec["type"].as_str().unwrap_or("String");
                let items = spec["items"]["type"].as_str();
                Value::String(literal::render(lang, ty, items, &value))
            }
        };
        arguments.insert(param.clone(), value);
    }
    Some(ToolCall {
        id: format!("call_{id}_{index}"),
        name: name.replace('.', "_"),
        arguments: Value::Object(arguments).to_string(),
    })
}

/// The source language of an entry whose arguments are literal strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Language {
    Java,
    JavaScript,
}

impl Language {
    fn of(id: &str) -> Option<Self> {
        if id.starts_with("simple_javascript_") {
            Some(Self::JavaScript)
        } else if id.starts_with("simple_java_") {
            Some(Self::Java)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gold_calls_take_first_values_and_drop_optional_ones() {
        let call = gold_call(
            "parallel_0",
            1,
            &json!({"spotify.play": {"artist": ["Maroon 5"], "duration": [15.0, 15], "unit": ["", "min"], "none": [],
                "prefs": [{"size": ["large"], "milk": ["", "oat"], "deep": [{"a": [1]}]}],
                "rows": [[{"field": ["age"], "op": [">", "gt"]}]]}}),
            None,
        )
        .unwrap();
        assert_eq!(call.name, "spotify_play");
        assert_eq!(call.id, "call_parallel_0_1");
        assert_eq!(
            call.arguments,
            r#"{"artist":"Maroon 5","duration":15.0,"prefs":{"size":"large","deep":{"a":[1]}},"rows":[{"field":"age","op":">"}]}"#
        );
    }

    #[test]
    fn loads_answers_and_answers_hallucination_without_calls() {
        let dir = std::env::temp_dir().join(format!("agentload-bfcl-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("possible_answer")).unwrap();
        std::fs::write(
            dir.join("possible_answer/BFCL_v4_simple_python.json"),
            "{\"id\": \"simple_python_0\", \"ground_truth\": [{\"area\": {\"b\": [10]}}]}\n",
        )
        .unwrap();
        let gold = BfclGold::load(&dir).unwrap();
        let a = gold.answer("simple_python_0").unwrap();
        assert_eq!(a.tool_calls[0].arguments, r#"{"b":10}"#);
        let none = gold.answer("live_irrelevance_3-0-0").unwrap();
        assert!(none.tool_calls.is_empty() && !none.content.is_empty());
        assert!(gold.answer("django__django-1").is_none());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
