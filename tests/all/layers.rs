//! The host's crates form one pipeline, and their dependencies point one
//! way, down it. Read from `cargo metadata`, so a new `use` of a higher
//! crate fails here and not in review.

use crate::common::{cargo_metadata, manifest_dir};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The host's crates, bottom first: a crate may depend (outside its tests)
/// only on crates before it.
const LAYERS: [&str; 14] = [
    "agentload-wire",
    "agentload-console",
    "agentload-client",
    "agentload-swebench",
    "agentload-tokenizer",
    "agentload-sim",
    "agentload-config",
    "agentload-telemetry",
    "agentload-plugin-host",
    "agentload-results",
    "agentload-shards",
    "agentload-engine",
    "agentload-report",
    "agentload",
];

/// Crates that need no unsafe code and must say so at their root.
const NO_UNSAFE: [&str; 7] = [
    "console",
    "swebench",
    "config",
    "telemetry",
    "results",
    "shards",
    "report",
];

/// Each workspace crate's normal (not dev, not build) dependencies.
fn normal_deps() -> BTreeMap<String, BTreeSet<String>> {
    let meta = cargo_metadata();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_owned())
                .collect();
            (p["name"].as_str().unwrap().to_owned(), deps)
        })
        .collect()
}

/// Every workspace crate `name` reaches through normal dependencies.
fn reaches(deps: &BTreeMap<String, BTreeSet<String>>, name: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![name.to_owned()];
    while let Some(n) = todo.pop() {
        for d in deps.get(&n).into_iter().flatten() {
            if deps.contains_key(d) && seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

/// The host crates `name` depends on directly.
fn host_deps(deps: &BTreeMap<String, BTreeSet<String>>, name: &str) -> BTreeSet<String> {
    deps[name]
        .iter()
        .filter(|d| LAYERS.contains(&d.as_str()))
        .cloned()
        .collect()
}

#[test]
fn every_host_crate_depends_only_on_lower_ones() {
    let deps = normal_deps();
    for (level, name) in LAYERS.iter().enumerate() {
        assert!(deps.contains_key(*name), "{name} is not in the workspace");
        for d in host_deps(&deps, name) {
            let at = LAYERS.iter().position(|l| *l == d).unwrap();
            assert!(
                at < level,
                "{name} depends on {d}, which is above it in the host's layers {LAYERS:?}"
            );
        }
    }
}

#[test]
fn the_wire_and_the_client_know_nothing_of_plugins_engines_or_results() {
    let deps = normal_deps();
    for low in [
        "agentload-wire",
        "agentload-client",
        "agentload-swebench",
        "agentload-sim",
    ] {
        let reached = reaches(&deps, low);
        for high in [
            "agentload-plugin-host",
            "agentload-engine",
            "agentload-results",
            "agentload-shards",
            "agentload-config",
        ] {
            assert!(!reached.contains(high), "{low} reaches {high}");
        }
    }
    // Neither the client nor the engine links the simulator (their tests may).
    for measuring in ["agentload-client", "agentload-engine"] {
        assert!(
            !reaches(&deps, measuring).contains("agentload-sim"),
            "{measuring} links the simulator"
        );
    }
}

#[test]
fn reports_read_results_only() {
    let deps = normal_deps();
    let direct = host_deps(&deps, "agentload-report");
    let allowed: BTreeSet<String> = ["agentload-results", "agentload-console"]
        .map(String::from)
        .into();
    assert!(
        direct.is_subset(&allowed),
        "agentload-report depends on {direct:?}"
    );
    // Nothing below the report links wasmtime or the engine.
    for reached in reaches(&deps, "agentload-report") {
        assert!(
            !deps[&reached].contains("wasmtime"),
            "agentload-report reaches {reached}, which links wasmtime"
        );
        assert_ne!(reached, "agentload-engine");
    }
}

#[test]
fn only_the_plugin_host_links_wasmtime() {
    let deps = normal_deps();
    let linking: Vec<&String> = LAYERS
        .iter()
        .map(|l| deps.get_key_value(*l).unwrap())
        .filter(|(_, d)| d.contains("wasmtime") || d.contains("wasmtime-wasi"))
        .map(|(n, _)| n)
        .collect();
    assert_eq!(linking, ["agentload-plugin-host"]);
}

#[test]
fn crates_without_unsafe_forbid_it_and_every_host_crate_takes_the_workspace_lints() {
    let host = manifest_dir().join("..");
    for dir in NO_UNSAFE {
        let lib = std::fs::read_to_string(host.join(dir).join("src/lib.rs")).unwrap();
        assert!(
            lib.contains("#![forbid(unsafe_code)]"),
            "host/{dir}/src/lib.rs lacks #![forbid(unsafe_code)]"
        );
    }
    // Every crate under plugins/ (the SDK, the libraries, the components).
    let plugins = host.join("../plugins");
    let mut checked = 0;
    for entry in std::fs::read_dir(&plugins).unwrap() {
        let lib = entry.unwrap().path().join("src/lib.rs");
        if lib.is_file() {
            let text = std::fs::read_to_string(&lib).unwrap();
            assert!(
                text.contains("#![forbid(unsafe_code)]"),
                "{} lacks #![forbid(unsafe_code)]",
                lib.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 13, "{checked} plugin crates found");
    let meta = cargo_metadata();
    for p in meta["packages"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        if !LAYERS.contains(&name) {
            continue;
        }
        let manifest = std::fs::read_to_string(p["manifest_path"].as_str().unwrap()).unwrap();
        let lints: Value = toml::from_str::<toml::Value>(&manifest)
            .map(|t| serde_json::to_value(t.get("lints").cloned()).unwrap())
            .unwrap();
        assert_eq!(
            lints["workspace"],
            Value::Bool(true),
            "{name}: [lints] workspace = true"
        );
    }
}
