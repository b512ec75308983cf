//! Where a key is in a config file: its line and column, from the TOML
//! parser's spans, and the dotted path of the key at a byte offset (the
//! parser's errors carry an offset; the config's own checks name a path).

use std::ops::Range;
use toml::de::{DeTable, DeValue};

/// A 1-based line and column (in characters) of a config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// The line and column of byte `offset` of `text` (the end of the text when
/// past it).
pub fn position(text: &str, offset: usize) -> Location {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Location {
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

/// One key of the document: its dotted path, the key's span and its value's.
struct Entry {
    path: String,
    key: Range<usize>,
    value: Range<usize>,
}

/// Every key of `text` with its path (`telemetry.scrape[0].url`), or
/// nothing when the text is not TOML.
fn entries(text: &str) -> Vec<Entry> {
    let Ok(doc) = DeTable::parse(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk_table(doc.get_ref(), "", &mut out);
    out
}

fn walk_table(table: &DeTable<'_>, prefix: &str, out: &mut Vec<Entry>) {
    for (key, value) in table.iter() {
        let path = if prefix.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{prefix}.{}", key.get_ref())
        };
        out.push(Entry {
            path: path.clone(),
            key: key.span(),
            value: value.span(),
        });
        walk_value(value.get_ref(), &path, out);
    }
}

fn walk_value(value: &DeValue<'_>, path: &str, out: &mut Vec<Entry>) {
    match value {
        DeValue::Table(table) => walk_table(table, path, out),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let path = format!("{path}[{i}]");
                out.push(Entry {
                    path: path.clone(),
                    key: item.span(),
                    value: item.span(),
                });
                walk_value(item.get_ref(), &path, out);
            }
        }
        _ => {}
    }
}

/// The path of the innermost key whose name or value holds byte `offset`.
pub fn key_at(text: &str, offset: usize) -> Option<String> {
    entries(text)
        .into_iter()
        .flat_map(|e| [(e.key, e.path.clone()), (e.value, e.path)])
        .filter(|(span, _)| span.contains(&offset) || (span.is_empty() && span.start == offset))
        .min_by_key(|(span, _)| span.len())
        .map(|(_, path)| path)
}

/// Where key `path` is written in `text`: the key itself, or for a table
/// written only through its keys (`[a.b]` makes `a`), its first key; for a
/// key the file leaves to its default, the nearest table above it that is
/// written.
pub fn find_key(text: &str, path: &str) -> Option<Location> {
    let entries = entries(text);
    let mut path = path;
    loop {
        if let Some(entry) = entries.iter().find(|e| e.path == path) {
            return Some(position(text, entry.key.start));
        }
        let inside = format!("{path}.");
        if let Some(first) = entries
            .iter()
            .filter(|e| e.path.starts_with(&inside))
            .min_by_key(|e| e.key.start)
        {
            return Some(position(text, first.key.start));
        }
        path = &path[..path.rfind(['.', '['])?];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "name = \"t\"\n\n[load]\nconcurrency = 2\n\n[[telemetry.scrape]]\nurl = \"/metrics\"\n[[telemetry.scrape]]\nurl = \"x\"\n";

    #[test]
    fn positions_count_lines_and_characters() {
        assert_eq!(position("ab\ncd", 0), Location { line: 1, column: 1 });
        assert_eq!(position("ab\ncd", 4), Location { line: 2, column: 2 });
        assert_eq!(position("é = 1\nx", 3), Location { line: 1, column: 3 });
        assert_eq!(position("ab", 99), Location { line: 1, column: 3 });
    }

    #[test]
    fn a_key_is_found_by_its_path_and_a_path_by_its_offset() {
        let at = |p| find_key(TEXT, p).map(|l| l.to_string());
        assert_eq!(at("load.concurrency").as_deref(), Some("4:1"));
        assert_eq!(at("telemetry.scrape[1].url").as_deref(), Some("9:1"));
        // A key left to its default: the table it would be in.
        assert_eq!(at("load.turn_timeout_s").as_deref(), Some("3:2"));
        assert_eq!(at("sweep.levels"), None);
        let offset = TEXT.find("\"x\"").unwrap() + 1;
        assert_eq!(
            key_at(TEXT, offset).as_deref(),
            Some("telemetry.scrape[1].url")
        );
        let offset = TEXT.find("concurrency").unwrap();
        assert_eq!(key_at(TEXT, offset).as_deref(), Some("load.concurrency"));
    }
}
