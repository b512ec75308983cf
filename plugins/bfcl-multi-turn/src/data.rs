//! The multi-turn dataset as the host grants it (one granted file per
//! logical name), shared by the workload and the scorer:
//!
//! - `multi_turn_<category>`: `BFCL_v4_multi_turn_<category>.json` (JSONL);
//! - `multi_turn_<category>_answers`: its `possible_answer/` file;
//! - `func_doc_<stem>`: `multi_turn_func_doc/<stem>.json` (JSONL), BFCL's
//!   class -> file mapping ([`doc_file_of`]);
//! - `long_context_constants`: the constants of BFCL's `long_context.py` as
//!   JSON (`bfcl_v4_extra/long_context.json`, written from the pinned wheel
//!   by `scripts/fetch-bfcl.sh`).

use crate::py::{from_json, Py};
use serde_json::Value;
use std::collections::BTreeMap;

/// The four multi-turn categories, in BFCL's order.
pub const CATEGORIES: [&str; 4] = ["base", "miss_func", "miss_param", "long_context"];

/// BFCL's `MULTI_TURN_FUNC_DOC_FILE_MAPPING` (class -> doc file stem).
pub fn doc_file_of(class: &str) -> Option<&'static str> {
    Some(match class {
        "GorillaFileSystem" => "gorilla_file_system",
        "MathAPI" => "math_api",
        "MessageAPI" => "message_api",
        "TwitterAPI" => "posting_api",
        "TicketAPI" => "ticket_api",
        "TradingBot" => "trading_bot",
        "TravelAPI" => "travel_booking",
        "VehicleControlAPI" => "vehicle_control",
        _ => return None,
    })
}

/// A problem in a granted file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataErr {
    /// The granted file's logical name.
    pub file: String,
    /// 1-based line; 0 when not tied to a line.
    pub line: u32,
    pub message: String,
}

impl DataErr {
    fn new(file: &str, line: u32, message: impl Into<String>) -> DataErr {
        DataErr {
            file: file.into(),
            line,
            message: message.into(),
        }
    }
}

/// One user-side message of a turn.
#[derive(Debug, Clone)]
pub struct Message {
    pub role: String,
    pub content: String,
}

/// One multi-turn entry.
#[derive(Debug, Clone)]
pub struct Question {
    /// `multi_turn_base_0`.
    pub id: String,
    /// `base`, `miss_func`, ...
    pub category: String,
    /// `question`: the user messages of each turn (a holdout turn is empty).
    pub turns: Vec<Vec<Message>>,
    pub initial_config: Value,
    pub involved_classes: Vec<String>,
    /// `missed_function`: turn index -> held-out function names.
    pub missed_function: BTreeMap<usize, Vec<String>>,
    /// The ground truth (`possible_answer`), when its file was granted.
    pub ground_truth: Option<Vec<Vec<String>>>,
}

impl Question {
    /// Whether BFCL runs this entry with the long-context padding.
    pub fn long_context(&self) -> bool {
        self.category.contains("long_context") || self.category.contains("composite")
    }
}

/// Everything granted.
#[derive(Debug, Default)]
pub struct Dataset {
    /// By category, in file order.
    pub questions: BTreeMap<String, Vec<Question>>,
    /// Doc file stem -> its function docs, in file order.
    pub docs: BTreeMap<String, Vec<Value>>,
    /// `long_context.py`'s constants (`None` when not granted).
    pub long_context: Option<Py>,
}

fn jsonl(name: &str, bytes: &[u8]) -> Result<Vec<Value>, DataErr> {
    let text = std::str::from_utf8(bytes).map_err(|e| DataErr::new(name, 0, e.to_string()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| DataErr::new(name, i as u32 + 1, format!("not JSON: {e}")))?;
        out.push(v);
    }
    Ok(out)
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array()?
        .iter()
        .map(|x| x.as_str().map(str::to_owned))
        .collect()
}

fn question(name: &str, line: u32, v: &Value, category: &str) -> Result<Question, DataErr> {
    let bad = |m: &str| DataErr::new(name, line, m.to_string());
    let id = v["id"].as_str().ok_or_else(|| bad("no string 'id'"))?;
    let turns = v["question"]
        .as_array()
        .ok_or_else(|| bad("no 'question' list"))?
        .iter()
        .map(|turn| {
            turn.as_array()
                .ok_or_else(|| bad("a turn is not a list"))?
                .iter()
                .map(|m| {
                    Ok(Message {
                        role: m["role"]
                            .as_str()
                            .ok_or_else(|| bad("a message has no 'role'"))?
                            .into(),
                        content: m["content"].as_str().unwrap_or_default().into(),
                    })
                })
                .collect::<Result<Vec<_>, DataErr>>()
        })
        .collect::<Result<Vec<_>, DataErr>>()?;
    let involved_classes =
        strings(&v["involved_classes"]).ok_or_else(|| bad("no 'involved_classes' list"))?;
    let mut missed_function = BTreeMap::new();
    if let Some(m) = v.get("missed_function") {
        for (k, names) in m
            .as_object()
            .ok_or_else(|| bad("'missed_function' is not an object"))?
        {
            let t: usize = k
                .parse()
                .map_err(|_| bad("a 'missed_function' key is not a turn index"))?;
            let names = strings(names).ok_or_else(|| bad("'missed_function' lists names"))?;
            missed_function.insert(t, names);
        }
    }
    Ok(Question {
        id: id.into(),
        category: category.into(),
        turns,
        initial_config: v
            .get("initial_config")
            .cloned()
            .unwrap_or(Value::Object(Default::default())),
        involved_classes,
        missed_function,
        ground_truth: None,
    })
}

impl Dataset {
    /// Reads the granted files `(logical name, bytes)`; unknown names are
    /// an error, categories without a question file are simply absent.
    pub fn parse<'a>(
        files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> Result<Dataset, DataErr> {
        let mut d = Dataset::default();
        let mut answers: Vec<(String, String, Vec<Value>)> = Vec::new();
        for (name, bytes) in files {
            if let Some(cat) = name.strip_prefix("multi_turn_") {
                if let Some(cat) = cat.strip_suffix("_answers") {
                    answers.push((name.into(), cat.into(), jsonl(name, bytes)?));
                    continue;
                }
                if !CATEGORIES.contains(&cat) {
                    return Err(DataErr::new(name, 0, format!("unknown category '{cat}'")));
                }
                let qs = jsonl(name, bytes)?
                    .iter()
                    .enumerate()
                    .map(|(i, v)| question(name, i as u32 + 1, v, cat))
                    .collect::<Result<Vec<_>, _>>()?;
                d.questions.insert(cat.into(), qs);
            } else if let Some(stem) = name.strip_prefix("func_doc_") {
                d.docs.insert(stem.into(), jsonl(name, bytes)?);
            } else if name == "long_context_constants" {
                let v: Value = serde_json::from_slice(bytes)
                    .map_err(|e| DataErr::new(name, 0, format!("not JSON: {e}")))?;
                d.long_context = Some(from_json(&v));
            } else {
                return Err(DataErr::new(
                    name,
                    0,
                    "unknown granted file (expected multi_turn_<category>[_answers], \
                     func_doc_<stem> or long_context_constants)",
                ));
            }
        }
        for (name, cat, rows) in answers {
            let Some(qs) = d.questions.get_mut(&cat) else {
                return Err(DataErr::new(
                    &name,
                    0,
                    format!("answers without questions (multi_turn_{cat})"),
                ));
            };
            if rows.len() != qs.len() {
                return Err(DataErr::new(
                    &name,
                    0,
                    format!("{} answers for {} questions", rows.len(), qs.len()),
                ));
            }
            for (i, (q, a)) in qs.iter_mut().zip(&rows).enumerate() {
                let line = i as u32 + 1;
                if a["id"].as_str() != Some(q.id.as_str()) {
                    return Err(DataErr::new(
                        &name,
                        line,
                        format!("answer id {} is not question id {}", a["id"], q.id),
                    ));
                }
                let gt = a["ground_truth"]
                    .as_array()
                    .and_then(|turns| turns.iter().map(strings).collect::<Option<Vec<_>>>())
                    .ok_or_else(|| DataErr::new(&name, line, "no 'ground_truth' list of lists"))?;
                q.ground_truth = Some(gt);
            }
        }
        Ok(d)
    }

    /// The entry with this id.
    pub fn find(&self, id: &str) -> Option<&Question> {
        self.questions.values().flatten().find(|q| q.id == id)
    }

    /// The function docs of an entry's classes, in `involved_classes` order.
    pub fn docs_for(&self, q: &Question) -> Result<Vec<Value>, String> {
        let mut out = Vec::new();
        for class in &q.involved_classes {
            let stem = doc_file_of(class).ok_or_else(|| format!("unknown class {class}"))?;
            let docs = self
                .docs
                .get(stem)
                .ok_or_else(|| format!("func_doc_{stem} not granted (class {class})"))?;
            out.extend(docs.iter().cloned());
        }
        Ok(out)
    }
}

/// How many of a category's first entries are issued: all at 100 %, else
/// `max(1, int(total * pct / 100))`.
pub fn sample_count(total: usize, pct: f64) -> usize {
    if pct >= 100.0 {
        total
    } else {
        ((total as f64 * pct / 100.0).floor() as usize).clamp(1, total.max(1))
    }
}

/// Normalizes a category name (`multi_turn_base` or `base`).
pub fn category_name(name: &str) -> &str {
    name.strip_prefix("multi_turn_").unwrap_or(name)
}

/// `{"base": 100, ...}` or one number for every category.
pub fn parse_pct(v: Option<&Value>) -> Result<BTreeMap<String, f64>, String> {
    let mut out: BTreeMap<String, f64> =
        CATEGORIES.iter().map(|c| (c.to_string(), 100.0)).collect();
    match v {
        None => {}
        Some(Value::Number(n)) => {
            let p = n.as_f64().unwrap_or(100.0);
            out.values_mut().for_each(|x| *x = p);
        }
        Some(Value::Object(m)) => {
            for (k, x) in m {
                let k = category_name(k);
                if !CATEGORIES.contains(&k) {
                    return Err(format!("sample_pct: unknown category '{k}'"));
                }
                let p = x
                    .as_f64()
                    .ok_or_else(|| format!("sample_pct.{k} is not a number"))?;
                out.insert(k.into(), p);
            }
        }
        Some(_) => return Err("sample_pct must be a number or a table".into()),
    }
    if out.values().any(|p| !(*p > 0.0 && *p <= 100.0)) {
        return Err("sample_pct values must be in (0, 100]".into());
    }
    Ok(out)
}

/// `categories`: a list of names (default: all four).
pub fn parse_categories(v: Option<&Value>) -> Result<Vec<String>, String> {
    let Some(v) = v else {
        return Ok(CATEGORIES.iter().map(|c| c.to_string()).collect());
    };
    let names = strings(v).ok_or("categories must be a list of strings")?;
    let mut out = Vec::new();
    for n in names {
        let c = category_name(&n);
        if !CATEGORIES.contains(&c) {
            return Err(format!("unknown category '{n}'"));
        }
        if !out.iter().any(|x: &String| x == c) {
            out.push(c.to_string());
        }
    }
    Ok(out)
}

/// The entries a run issues, in issue order (categories in the order given,
/// each category's first entries).
pub fn select<'a>(
    d: &'a Dataset,
    categories: &[String],
    pct: &BTreeMap<String, f64>,
) -> Result<Vec<&'a Question>, String> {
    let mut out = Vec::new();
    for c in categories {
        let qs = d
            .questions
            .get(c)
            .ok_or_else(|| format!("category {c} selected but multi_turn_{c} not granted"))?;
        let n = sample_count(qs.len(), pct.get(c).copied().unwrap_or(100.0));
        out.extend(qs.iter().take(n));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_takes_the_first_rows() {
        assert_eq!(sample_count(200, 100.0), 200);
        assert_eq!(sample_count(200, 25.0), 50);
        assert_eq!(sample_count(200, 0.1), 1);
        assert_eq!(
            parse_pct(Some(&serde_json::json!({"multi_turn_base": 10})))
                .unwrap()
                .get("base"),
            Some(&10.0)
        );
        assert!(parse_categories(Some(&serde_json::json!(["nope"]))).is_err());
    }
}
