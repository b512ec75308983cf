//! The run config's JSON Schema against the loader it is derived from:
//! every shipped config validates and loads with the same keys, every key
//! of the schema is one the loader reads (the files of tests/every-key/
//! write them all between them), and the checked-in reference page and schema file are the
//! generator's.

use agentload_config::{schema, RunConfig};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn shipped_configs() -> Vec<PathBuf> {
    let mut configs: Vec<PathBuf> = std::fs::read_dir(repo().join("configs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    configs.sort();
    assert!(configs.len() >= 5, "{configs:?}");
    configs
}

/// tests/every-key/*.toml: every key of the schema, set between them.
fn every_key_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/every-key");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    files
}

/// A TOML file as the JSON a schema validator reads.
fn as_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    serde_json::to_value(table).unwrap()
}

/// Each schema error of `instance`, with its place.
fn schema_errors(instance: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(&schema::run_config()).expect("a valid schema");
    validator
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Every key path of a TOML table (`load.concurrency`,
/// `telemetry.scrape[0].url`), the keys inside free-form tables left out.
fn key_paths(value: &Value, prefix: &str, free: &[&str], out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(path.clone());
                if !free.iter().any(|f| k == f) {
                    key_paths(v, &path, free, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                key_paths(v, &format!("{prefix}[{i}]"), free, out);
            }
        }
        _ => {}
    }
}

/// The keys the loader read and writes back (`config.toml` of a run).
fn loaded_keys(path: &Path) -> BTreeSet<String> {
    let config = RunConfig::load(path).unwrap_or_else(|e| panic!("{e}"));
    let again: toml::Table = toml::from_str(&toml::to_string(&config).unwrap()).unwrap();
    let mut keys = BTreeSet::new();
    key_paths(&serde_json::to_value(again).unwrap(), "", FREE, &mut keys);
    keys
}

/// Free-form tables: the plugin's settings, extra request fields, grants.
const FREE: &[&str] = &[
    "settings",
    "scorer_settings",
    "extra_body",
    "data",
    "scorer_data",
];

#[test]
fn the_schema_is_a_valid_2020_12_schema() {
    let schema = schema::run_config();
    jsonschema::meta::validate(&schema).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
}

#[test]
fn shipped_configs_validate_against_the_schema_and_load_with_the_same_keys() {
    for path in shipped_configs().into_iter().chain(every_key_files()) {
        let json = as_json(&path);
        let errors = schema_errors(&json);
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
        let mut written = BTreeSet::new();
        key_paths(&json, "", FREE, &mut written);
        let loaded = loaded_keys(&path);
        let lost: Vec<_> = written.difference(&loaded).collect();
        assert!(
            lost.is_empty(),
            "{}: the loader dropped {lost:?}",
            path.display()
        );
    }
}

/// Keys the schema holds that a file may not set: read only to be refused.
fn refused(property: &Value) -> bool {
    property.get("not").is_some()
}

/// Marks each (table, key) of `value` that `schema` describes; names what
/// it does not.
fn cover(
    value: &Value,
    schema: &Value,
    root: &Value,
    seen: &mut BTreeSet<(String, String)>,
    def: &str,
) {
    let (def, schema) = match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.trim_start_matches("#/$defs/");
            (name.to_owned(), &root["$defs"][name])
        }
        None => (def.to_owned(), schema),
    };
    match value {
        Value::Object(map) if schema.get("properties").is_some() => {
            for (k, v) in map {
                seen.insert((def.clone(), k.clone()));
                if let Some(p) = schema["properties"].get(k) {
                    cover(v, p, root, seen, &format!("{def}.{k}"));
                }
            }
        }
        Value::Object(map) => {
            if let Some(items) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for v in map.values() {
                    cover(v, items, root, seen, &def);
                }
            }
        }
        Value::Array(items) => {
            for v in items {
                cover(v, &schema["items"], root, seen, &def);
            }
        }
        _ => {}
    }
}

/// Every (table, key) the schema describes.
fn described(schema: &Value, def: &str, out: &mut BTreeSet<(String, String)>) {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (k, p) in properties {
            if !refused(p) {
                out.insert((def.to_owned(), k.clone()));
            }
            if p.get("$ref").is_none() {
                described(p, &format!("{def}.{k}"), out);
            }
        }
    }
}

#[test]
fn every_key_of_the_schema_is_one_the_loader_reads() {
    // The files of tests/every-key/ set every key the schema has (but those
    // read only to be refused); they validate and load above, so the loader
    // reads each one and the schema knows each one.
    let schema = schema::run_config();
    let mut all = BTreeSet::new();
    described(&schema, "RunConfig", &mut all);
    for (name, def) in schema["$defs"].as_object().unwrap() {
        described(def, name, &mut all);
    }
    let mut seen = BTreeSet::new();
    // The SWE-bench settings are the accuracy phase's when it is one.
    let settings = &schema["allOf"][0]["then"]["properties"]["accuracy"]["properties"]["settings"];
    for path in every_key_files() {
        let file = as_json(&path);
        cover(&file, &schema, &schema, &mut seen, "RunConfig");
        if file["accuracy"]["workload"] == "swe-bench" {
            cover(
                &file["accuracy"]["settings"],
                settings,
                &schema,
                &mut seen,
                "",
            );
        }
    }
    let missing: Vec<String> = all
        .difference(&seen)
        .map(|(table, key)| format!("{table}.{key}"))
        .collect();
    assert!(
        missing.is_empty(),
        "set these keys in a file of host/config/tests/every-key/ (by the type and \
         field that declares them): {missing:#?}"
    );
}

#[test]
fn every_key_has_a_description() {
    let schema = schema::run_config();
    let mut all = BTreeSet::new();
    described(&schema, "RunConfig", &mut all);
    for (name, def) in schema["$defs"].as_object().unwrap() {
        described(def, name, &mut all);
    }
    let undocumented: Vec<String> = all
        .iter()
        .filter(|(table, key)| {
            let def = table.split('.').next().unwrap();
            let owner = if def == "RunConfig" {
                &schema
            } else {
                &schema["$defs"][def]
            };
            let property = &owner["properties"][key.as_str()];
            // A table is documented by its type's doc comment.
            let table = property["$ref"]
                .as_str()
                .map(|r| &schema["$defs"][r.trim_start_matches("#/$defs/")]);
            [Some(property), table]
                .into_iter()
                .flatten()
                .all(|s| s["description"].as_str().is_none_or(str::is_empty))
        })
        .map(|(table, key)| format!("{table}.{key}"))
        .collect();
    assert!(
        undocumented.is_empty(),
        "every config key needs a doc comment (it is the reference's description): {undocumented:#?}"
    );
}

/// `AGENTLOAD_REGENERATE=1` writes the generated files instead of comparing.
const REGENERATE: &str = "AGENTLOAD_REGENERATE";

#[test]
fn the_checked_in_reference_and_schema_are_generated_from_the_code() {
    for (file, generated) in [
        (schema::REFERENCE_PAGE, schema::reference()),
        (schema::SCHEMA_FILE, schema::run_config_text()),
    ] {
        let path = repo().join(file);
        if std::env::var_os(REGENERATE).is_some() {
            std::fs::write(&path, &generated).unwrap();
            continue;
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == generated,
            "{file} is not what the config types generate: regenerate it with \
             `{REGENERATE}=1 cargo test -p agentload-config --test schema` and commit it"
        );
    }
}
