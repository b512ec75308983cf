//! The SWE-bench instance list: JSONL, one object with a string
//! `instance_id` per line, in Hugging Face order (the rows of
//! `princeton-nlp/SWE-bench_Verified`, split `test`, as the reference loads
//! them). The reference evaluates the first `min(num_instances, rows)`,
//! without any shuffling.

use crate::Error;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// Every instance id of the list in `bytes` (read from `path`), in order.
/// Blank lines are skipped.
///
/// # Errors
/// [`Error::Instances`] naming the file and line of a line that is not a
/// JSON object with a non-empty string `instance_id`, of an id listed
/// twice, or when the list has no instance.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<String>, Error> {
    let bad = |why: String| Error::Instances {
        path: path.to_path_buf(),
        why,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| bad(format!("not UTF-8 ({e})")))?;
    let mut ids = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (at, line) in text.lines().enumerate() {
        let number = at + 1;
        if line.trim().is_empty() {
            continue;
        }
        let row: Value = serde_json::from_str(line)
            .map_err(|e| bad(format!("line {number} is not JSON ({e})")))?;
        let id = match row.get("instance_id") {
            Some(Value::String(id)) if !id.is_empty() => id.clone(),
            Some(other) => {
                return Err(bad(format!(
                    "line {number}: `instance_id` must be a non-empty string, not {}",
                    crate::error::shortened(&other.to_string(), 80)
                )))
            }
            None => return Err(bad(format!("line {number} has no `instance_id`"))),
        };
        if let Some(first) = seen.insert(id.clone(), number) {
            return Err(bad(format!(
                "line {number}: instance `{id}` is listed twice (first on line {first})"
            )));
        }
        ids.push(id);
    }
    if ids.is_empty() {
        return Err(bad("it lists no instance".to_owned()));
    }
    Ok(ids)
}

/// The first `min(num_instances, ids.len())` ids, as the reference takes them.
pub fn first(mut ids: Vec<String>, num_instances: usize) -> Vec<String> {
    ids.truncate(num_instances);
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_in_file_order_and_bad_lines_are_named() {
        let path = Path::new("swe.jsonl");
        let ids = parse(
            path,
            b"{\"instance_id\": \"b__b-2\", \"repo\": \"b\"}\n\n{\"instance_id\": \"a__a-1\"}\n",
        )
        .unwrap();
        assert_eq!(ids, ["b__b-2", "a__a-1"]);
        assert_eq!(first(ids.clone(), 1), ["b__b-2"]);
        assert_eq!(first(ids, 100).len(), 2);
        for (text, why) in [
            ("{\"instance_id\": \"a\"}\nnot json\n", "line 2 is not JSON"),
            ("{\"id\": \"a\"}\n", "line 1 has no `instance_id`"),
            (
                "{\"instance_id\": 7}\n",
                "line 1: `instance_id` must be a non-empty string, not 7",
            ),
            (
                "{\"instance_id\": \"a\"}\n{\"instance_id\": \"a\"}\n",
                "line 2: instance `a` is listed twice (first on line 1)",
            ),
            ("\n", "lists no instance"),
        ] {
            let err = parse(path, text.as_bytes()).unwrap_err().to_string();
            assert!(
                err.contains("swe.jsonl") && err.contains(why),
                "{text:?}: {err}"
            );
        }
    }
}
