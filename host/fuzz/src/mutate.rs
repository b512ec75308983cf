//! Mutations of valid seed inputs (dataset files, configs): line-level
//! (drop, duplicate, swap, cut), JSON-level (a value replaced by another,
//! a key dropped), and byte-level (flip, insert, truncate). Mutating real
//! inputs reaches the checks a random byte string never gets past.

use crate::json;
use proptest::prelude::*;
use serde_json::Value;

/// One edit of a line-oriented text.
#[derive(Debug, Clone)]
pub enum Edit {
    DropLine(prop::sample::Index),
    DuplicateLine(prop::sample::Index),
    SwapLines(prop::sample::Index, prop::sample::Index),
    CutLine(prop::sample::Index, prop::sample::Index),
    /// In a JSON line: the value at a path (chosen by the indexes) replaced.
    ReplaceValue(prop::sample::Index, Vec<prop::sample::Index>, Value),
    /// In a JSON line: a key removed from an object at a path.
    DropKey(prop::sample::Index, Vec<prop::sample::Index>),
    FlipByte(prop::sample::Index, u8),
    InsertByte(prop::sample::Index, u8),
    Truncate(prop::sample::Index),
}

/// Up to `max` edits.
pub fn edits(max: usize) -> impl Strategy<Value = Vec<Edit>> {
    use prop::sample::Index;
    let path = || proptest::collection::vec(any::<Index>(), 0..5);
    let edit = prop_oneof![
        2 => any::<Index>().prop_map(Edit::DropLine),
        1 => any::<Index>().prop_map(Edit::DuplicateLine),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::CutLine(a, b)),
        6 => (any::<Index>(), path(), json::value()).prop_map(|(l, p, v)| Edit::ReplaceValue(l, p, v)),
        3 => (any::<Index>(), path()).prop_map(|(l, p)| Edit::DropKey(l, p)),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::FlipByte(i, b)),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::InsertByte(i, b)),
        1 => any::<Index>().prop_map(Edit::Truncate),
    ];
    proptest::collection::vec(edit, 0..=max)
}

/// `text` with `edits` applied (lines split on `\n`).
pub fn apply(text: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    for edit in edits {
        let n = lines.len().max(1);
        match edit {
            Edit::DropLine(i) if lines.len() > 1 => {
                lines.remove(i.index(n));
            }
            Edit::DuplicateLine(i) if !lines.is_empty() => {
                let l = lines[i.index(n)].clone();
                lines.insert(i.index(n), l);
            }
            Edit::SwapLines(a, b) if !lines.is_empty() => lines.swap(a.index(n), b.index(n)),
            Edit::CutLine(i, at) if !lines.is_empty() => {
                let line = &mut lines[i.index(n)];
                let cut = at.index(line.len() + 1);
                line.truncate(cut);
            }
            Edit::ReplaceValue(i, path, v) if !lines.is_empty() => {
                edit_json(&mut lines[i.index(n)], |root| *walk(root, path) = v.clone())
            }
            Edit::DropKey(i, path) if !lines.is_empty() => {
                edit_json(&mut lines[i.index(n)], |root| {
                    let (last, path) = match path.split_last() {
                        Some(p) => p,
                        None => return,
                    };
                    if let Value::Object(m) = walk(root, path) {
                        if !m.is_empty() {
                            let key = m.keys().nth(last.index(m.len())).cloned();
                            if let Some(key) = key {
                                m.remove(&key);
                            }
                        }
                    }
                })
            }
            Edit::FlipByte(i, b) | Edit::InsertByte(i, b) => {
                let mut flat = lines.join(&b'\n');
                if flat.is_empty() {
                    flat.push(*b);
                } else if matches!(edit, Edit::FlipByte(..)) {
                    let at = i.index(flat.len());
                    flat[at] ^= b | 1;
                } else {
                    let at = i.index(flat.len() + 1);
                    flat.insert(at, *b);
                }
                lines = flat.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
            }
            Edit::Truncate(i) => {
                let mut flat = lines.join(&b'\n');
                flat.truncate(i.index(flat.len() + 1));
                lines = flat.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
            }
            _ => {}
        }
    }
    lines.join(&b'\n')
}

/// Applies `f` to `line` parsed as JSON, writing it back (a line that is
/// not JSON is left as it is).
fn edit_json(line: &mut Vec<u8>, f: impl FnOnce(&mut Value)) {
    if let Ok(mut v) = serde_json::from_slice::<Value>(line) {
        f(&mut v);
        *line = serde_json::to_vec(&v).expect("a value serialises");
    }
}

/// The value at `path` (each index picks a child of an array or object;
/// the walk stops at a leaf).
fn walk<'a>(mut at: &'a mut Value, path: &[prop::sample::Index]) -> &'a mut Value {
    for i in path {
        let n = match &*at {
            Value::Array(a) if !a.is_empty() => a.len(),
            Value::Object(m) if !m.is_empty() => m.len(),
            _ => break,
        };
        at = match at {
            Value::Array(a) => &mut a[i.index(n)],
            Value::Object(m) => m.values_mut().nth(i.index(n)).expect("index below len"),
            _ => unreachable!("checked above"),
        };
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    #[test]
    fn no_edits_is_the_identity() {
        assert_eq!(apply(b"a\nb\n", &[]), b"a\nb\n");
    }

    #[test]
    fn edits_change_something_sometimes() {
        let mut runner = TestRunner::deterministic();
        let seed = b"{\"a\": [1, 2], \"b\": \"x\"}\n{\"c\": null}";
        let changed = (0..64)
            .filter(|_| {
                let e = edits(3).new_tree(&mut runner).unwrap().current();
                apply(seed, &e) != seed.to_vec()
            })
            .count();
        assert!(changed > 16, "{changed}");
    }
}
