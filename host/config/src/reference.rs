//! The configuration reference page, rendered from the run config's JSON
//! Schema: one section per TOML table, one row per key with its type,
//! default and description.

use serde_json::Value;
use std::fmt::Write;

const INTRO: &str = "\
# Configuration reference

<!-- Generated from the config types' doc comments; do not edit. Change a doc
     comment, then run `AGENTLOAD_REGENERATE=1 cargo test -p agentload-config --test schema`. -->

A run config is one TOML file. Every key agentload reads is below, with its
type, its default and what it does. A key that is not here is refused, and
so is a value of the wrong type: the error names the file, the line and
column, and the key's path.

```sh test
agentload config check configs/edge-full-run.toml   # the loader's own checks, nothing run
agentload config schema > agentload.schema.json     # the JSON Schema of a run config
```

The schema is also [`config.schema.json`](config.schema.json), beside this
page. An editor that reads JSON Schema completes and checks keys as you type:
with Taplo (the Even Better TOML extension) a first line
`#:schema ./config.schema.json` in the config points it there.

A workload's `settings` and a scorer's `scorer_settings` are the plugin's
own: the host passes them to the plugin as JSON, and the plugin refuses a key
it does not know, naming it. The SWE-bench phase, which is no plugin, reads
its settings itself; they are the last section here.
";

/// A table of the config: the paths it is written at, and its schema.
struct Section<'a> {
    /// `[load]`, `[[sweep.slo]]`, `[sweep.tool_delays.NAME]`, ...
    headings: Vec<String>,
    /// The key-path prefix of its rows (`load.`, `sweep.slo[i].`).
    prefix: String,
    /// The definition's name, when it is one (shared sections).
    def: Option<String>,
    /// What the keys leading here say of it, by heading.
    notes: Vec<(String, String)>,
    required: bool,
    schema: &'a Value,
}

/// The page for `schema` (the run config's).
pub(crate) fn page(schema: &Value) -> String {
    let defs = &schema["$defs"];
    let mut sections = vec![Section {
        headings: vec!["Top level".into()],
        prefix: String::new(),
        def: None,
        notes: Vec::new(),
        required: true,
        schema,
    }];
    let mut i = 0;
    while i < sections.len() {
        let children = tables_of(&sections[i], defs);
        // Children come right after their parent, in the order of its keys.
        let mut at = i + 1;
        for child in children {
            match sections
                .iter_mut()
                .find(|s| s.def.is_some() && s.def == child.def)
            {
                Some(shared) => {
                    shared.headings.extend(child.headings);
                    shared.notes.extend(child.notes);
                }
                None => {
                    sections.insert(at, child);
                    at += 1;
                }
            }
        }
        i += 1;
    }
    let mut out = String::from(INTRO);
    for section in &sections {
        render(&mut out, section, defs);
    }
    if let Some(settings) = swe_bench_settings(schema) {
        let section = Section {
            headings: vec!["[accuracy.settings]".into()],
            prefix: "accuracy.settings.".into(),
            def: None,
            notes: Vec::new(),
            required: false,
            schema: resolve(settings, defs),
        };
        let mut text = String::new();
        render(&mut text, &section, defs);
        out.push_str(&text.replacen(
            "`[accuracy.settings]`",
            "`[accuracy.settings]` with `workload = \"swe-bench\"`",
            1,
        ));
    }
    out
}

/// The SWE-bench phase's settings, from the schema's conditional.
fn swe_bench_settings(schema: &Value) -> Option<&Value> {
    let then = schema["allOf"].get(0)?.get("then")?;
    then.pointer("/properties/accuracy/properties/settings")
}

/// `schema` itself, or the definition its `$ref` names.
fn resolve<'a>(schema: &'a Value, defs: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => &defs[r.trim_start_matches("#/$defs/")],
        None => schema,
    }
}

fn def_name(schema: &Value) -> Option<String> {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .map(|r| r.trim_start_matches("#/$defs/").to_owned())
}

/// How a key is written: a value in its table's rows, or a table of its own.
enum Shape<'a> {
    Value,
    /// `[a.b]`: a table.
    Table(&'a Value),
    /// `[[a.b]]`: an array of tables.
    Tables(&'a Value),
    /// `[a.b.NAME]`: tables by name.
    Named(&'a Value),
}

fn shape<'a>(schema: &'a Value, defs: &'a Value) -> Shape<'a> {
    let is_table = |s: &Value| resolve(s, defs).get("properties").is_some();
    if is_table(schema) {
        return Shape::Table(schema);
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("array") if is_table(&schema["items"]) => Shape::Tables(&schema["items"]),
        Some("object") if is_table(&schema["additionalProperties"]) => {
            Shape::Named(&schema["additionalProperties"])
        }
        _ => Shape::Value,
    }
}

/// The sections of the tables under `section`'s keys.
fn tables_of<'a>(section: &Section<'a>, defs: &'a Value) -> Vec<Section<'a>> {
    let Some(properties) = section.schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required = required(section.schema);
    let mut out = Vec::new();
    for (key, property) in properties {
        let path = format!("{}{key}", section.prefix);
        let (heading, prefix, table) = match shape(property, defs) {
            Shape::Value => continue,
            Shape::Table(t) => (format!("[{path}]"), format!("{path}."), t),
            Shape::Tables(t) => (format!("[[{path}]]"), format!("{path}[i]."), t),
            Shape::Named(t) => (format!("[{path}.NAME]"), format!("{path}.NAME."), t),
        };
        let note = description(property)
            .filter(|d| Some(d.as_str()) != description(resolve(table, defs)).as_deref());
        out.push(Section {
            notes: note.map(|n| (heading.clone(), n)).into_iter().collect(),
            headings: vec![heading],
            prefix,
            def: def_name(table),
            required: required.contains(&key.as_str()),
            schema: resolve(table, defs),
        });
    }
    out
}

fn required(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn render(out: &mut String, section: &Section<'_>, defs: &Value) {
    let headings: Vec<String> = section
        .headings
        .iter()
        .map(|h| {
            if h == "Top level" {
                h.clone()
            } else {
                format!("`{h}`")
            }
        })
        .collect();
    let _ = writeln!(out, "\n## {}\n", headings.join(", "));
    if section.prefix.is_empty() {
        out.push_str("Keys before the first table.\n\n");
    } else if let Some(d) = description(section.schema) {
        let _ = writeln!(out, "{}\n", prose(&d));
    }
    // A table of its own is described by its type; the key leading to it
    // only adds to that where the type is shared or the table is an array
    // or a map of tables.
    let own_table = section.headings.len() == 1
        && !section.headings[0].starts_with("[[")
        && !section.headings[0].ends_with(".NAME]");
    let notes: &[(String, String)] = if own_table && description(section.schema).is_some() {
        &[]
    } else {
        &section.notes
    };
    for (heading, note) in notes {
        if section.headings.len() > 1 {
            let _ = writeln!(out, "- `{heading}`: {}", prose(note));
        } else {
            let _ = writeln!(out, "{}\n", prose(note));
        }
    }
    if notes.len() > 1 || (section.headings.len() > 1 && !notes.is_empty()) {
        out.push('\n');
    }
    if section.required && !section.prefix.is_empty() {
        out.push_str("This table is required.\n\n");
    }
    let Some(properties) = section.schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required = required(section.schema);
    let rows: Vec<_> = properties
        .iter()
        .filter(|(_, p)| matches!(shape(p, defs), Shape::Value))
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("| key | type | default | description |\n| --- | --- | --- | --- |\n");
    for (key, property) in rows {
        let default = if required.contains(&key.as_str()) {
            "required".to_owned()
        } else {
            property
                .get("default")
                .map_or_else(|| "—".to_owned(), |d| format!("`{}`", cell(&toml_value(d))))
        };
        let mut text = description(property).map(|d| prose(&d)).unwrap_or_default();
        for (value, what) in variants(resolve(property, defs)) {
            let _ = write!(text, "<br>`\"{value}\"`: {}", prose(&what));
        }
        let _ = writeln!(
            out,
            "| `{}{key}` | {} | {default} | {text} |",
            section.prefix,
            type_name(property, defs)
        );
    }
}

/// A value as TOML writes it inline.
fn toml_value(value: &Value) -> String {
    match toml::Value::try_from(value) {
        Ok(toml::Value::String(s)) => format!("{:?}", s),
        Ok(v) => v.to_string(),
        Err(_) => value.to_string(),
    }
}

/// The documented values of an enum, with what each means.
fn variants(schema: &Value) -> Vec<(String, String)> {
    schema["oneOf"]
        .as_array()
        .map(|one| {
            one.iter()
                .filter_map(|v| Some((v["const"].as_str()?.to_owned(), description(v)?)))
                .collect()
        })
        .unwrap_or_default()
}

fn type_name(schema: &Value, defs: &Value) -> String {
    if schema.get("not").is_some() {
        return "refused".into();
    }
    let schema = resolve(schema, defs);
    let values: Vec<String> = match (&schema["enum"], &schema["oneOf"]) {
        (Value::Array(e), _) => e
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        (_, Value::Array(one)) => one
            .iter()
            .filter_map(|v| v["const"].as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    };
    if !values.is_empty() {
        return values
            .iter()
            .map(|v| format!("`\"{v}\"`"))
            .collect::<Vec<_>>()
            .join(" \\| ");
    }
    match schema["type"].as_str() {
        Some("array") => match type_name(&schema["items"], defs).as_str() {
            "string" => "array of strings".into(),
            "integer" => "array of integers".into(),
            "number" => "array of numbers".into(),
            other => format!("array of {other}"),
        },
        Some("object") => match &schema["additionalProperties"] {
            Value::Bool(true) => "table".into(),
            other => format!(
                "table of {}",
                type_name(other, defs).replace("string", "strings")
            ),
        },
        Some(t) => t.into(),
        None => "any".into(),
    }
}

fn description(schema: &Value) -> Option<String> {
    schema["description"].as_str().map(String::from)
}

/// A doc comment as one table cell: lines joined, paragraphs broken,
/// intra-doc links as plain code, `|` and `<` escaped outside code.
fn prose(doc: &str) -> String {
    doc.split("\n\n")
        .map(|p| escaped(&p.split('\n').map(str::trim).collect::<Vec<_>>().join(" ")))
        .collect::<Vec<_>>()
        .join("<br><br>")
}

fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_code, mut in_link) = (false, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            // [`x`] (an intra-doc link) -> `x`
            '[' if !in_code && chars.peek() == Some(&'`') => in_link = true,
            ']' if !in_code && in_link => in_link = false,
            '|' => out.push_str("\\|"),
            '<' if !in_code => out.push_str("&lt;"),
            c => out.push(c),
        }
    }
    out
}

/// A value inside a code span in a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}
