//! The run config's JSON Schema, derived from the config types themselves
//! (`schemars`: each key's doc comment is its description; serde's
//! defaults, renames and `deny_unknown_fields` are read), and the reference
//! page generated from it (`agentload config reference`).
//!
//! A key added to a config type is in both without anything else to do;
//! its type must derive `schemars::JsonSchema` (see [`Table`] for a
//! free-form table and [`refused`] for a key the checks refuse).

use serde_json::{json, Map, Value};

/// A free-form table (`extra_body`, a phase's `settings`): any keys. Mark
/// a `toml::Table` field with `#[schemars(with = "crate::schema::Table")]`.
pub type Table = Map<String, Value>;

/// The schema of a key that is read only to be refused with a reason (its
/// doc comment says why): every value is invalid. Mark the field with
/// `#[schemars(schema_with = "crate::schema::refused")]`.
pub fn refused(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "not": {} })
}

/// Where the generated reference page is, from the repository's root.
pub const REFERENCE_PAGE: &str = "docs/reference/config.md";
/// Where the schema is, beside the page (editors can point at it).
pub const SCHEMA_FILE: &str = "docs/reference/config.schema.json";

/// The JSON Schema (draft 2020-12) of a run config file, as TOML reads it:
/// an optional key is left out, never `null`.
pub fn run_config() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let swe_bench = generator.subschema_for::<crate::swe_bench::Settings>();
    let mut schema = generator
        .into_root_schema_for::<crate::RunConfig>()
        .to_value();
    let root = schema.as_object_mut().expect("an object schema");
    root.insert("title".into(), "agentload run config".into());
    // `[accuracy] workload = "swe-bench"` reads its settings itself.
    root.insert(
        "allOf".into(),
        json!([{
            "if": {
                "properties": {"accuracy": {
                    "properties": {"workload": {"const": crate::swe_bench::WORKLOAD}},
                    "required": ["workload"],
                }},
                "required": ["accuracy"],
            },
            "then": {"properties": {"accuracy": {"properties": {"settings": swe_bench}}}},
        }]),
    );
    without_null(&mut schema);
    schema
}

/// The schema as the checked-in file holds it: pretty JSON, a final newline.
pub fn run_config_text() -> String {
    serde_json::to_string_pretty(&run_config()).expect("a schema serialises") + "\n"
}

/// Drops what TOML cannot write: `null` among a key's types and `null`
/// defaults (an `Option` key is simply left out).
fn without_null(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.pop().expect("one type");
                    map.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(any)) = map.get("anyOf") {
                let kept: Vec<Value> = any
                    .iter()
                    .filter(|s| s.get("type") != Some(&json!("null")))
                    .cloned()
                    .collect();
                if kept.len() == 1 {
                    map.remove("anyOf");
                    if let Value::Object(inner) = &kept[0] {
                        for (k, v) in inner {
                            map.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                    }
                }
            }
            map.values_mut().for_each(without_null);
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}

/// The configuration reference page (Markdown), every key with its type,
/// default and description, generated from [`run_config`].
pub fn reference() -> String {
    crate::reference::page(&run_config())
}
