//! The host's crates form one pipeline, and their dependencies point one
//! way, down it. Read from `cargo metadata`, so a new `use` of a higher
//! crate fails here and not in review. Inside the `agentload` crate, its
//! top-level modules are held to one direction the same way (`MODULES`).

use crate::common::{cargo_metadata, manifest_dir};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The host's crates, bottom first: a crate may depend (outside its tests)
/// only on crates before it.
const LAYERS: [&str; 15] = [
    "agentload-fs",
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
const NO_UNSAFE: [&str; 8] = [
    "fs",
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
    let allowed: BTreeSet<String> = ["agentload-results", "agentload-console", "agentload-fs"]
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

/// The `agentload` crate's own top-level modules, bottom first: the CLI
/// calls the commands, the commands call `run` and the pieces below it.
/// A module may use (outside its tests) only modules before it.
const MODULES: [&str; 24] = [
    "aa",
    "agentperf",
    "run_state",
    "authoring",
    "context",
    "endpoint",
    "grants",
    "open_loop",
    "scoring",
    "standin_data",
    "swe_bench",
    "workspace",
    "tools",
    "sweep",
    "shards",
    "run",
    "shard_commands",
    "demo",
    "resume",
    "rescore",
    "points",
    "point_yaml",
    "bench",
    "cli",
];

/// Uses that still point up, each closing a cycle, to be removed (and then
/// struck from this list, which the test requires): nothing may join them.
const KNOWN_UPWARD: [(&str, &str); 0] = [];

/// The top-level modules a piece of source names as `crate::x` or
/// `crate::{x, y::z}`, comments left out.
fn crate_uses(source: &str) -> BTreeSet<String> {
    let code: String = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && !c.is_whitespace() => {
                        out.insert(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out
}

/// Each top-level module of host/agentload/src and the modules it uses.
fn module_uses() -> BTreeMap<String, BTreeSet<String>> {
    fn sources(path: &std::path::Path, out: &mut String) {
        if path.is_dir() {
            for entry in std::fs::read_dir(path).unwrap() {
                sources(&entry.unwrap().path(), out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(path).unwrap();
            // A file's unit tests (at its end) may use anything.
            out.push_str(text.split("#[cfg(test)]").next().unwrap());
        }
    }
    let src = manifest_dir().join("src");
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        if name == "lib" || name == "main" {
            continue;
        }
        let mut text = String::new();
        sources(&path, &mut text);
        let uses = crate_uses(&text)
            .into_iter()
            .filter(|u| *u != name)
            .collect();
        modules.insert(name, uses);
    }
    modules
}

#[test]
fn the_command_modules_of_agentload_use_only_lower_ones() {
    let modules = module_uses();
    let level = |m: &str| MODULES.iter().position(|x| *x == m);
    for name in modules.keys() {
        assert!(
            level(name).is_some(),
            "host/agentload/src/{name}: place the module in MODULES (tests/all/layers.rs)"
        );
    }
    let mut upward = BTreeSet::new();
    for (name, uses) in &modules {
        for used in uses.iter().filter(|u| modules.contains_key(*u)) {
            if level(used) >= level(name) {
                upward.insert((name.as_str(), used.as_str()));
            }
        }
    }
    let known: BTreeSet<(&str, &str)> = KNOWN_UPWARD.into_iter().collect();
    let new: Vec<_> = upward.difference(&known).collect();
    assert!(
        new.is_empty(),
        "these modules use modules above them in MODULES (a cycle in the making): {new:?}"
    );
    let gone: Vec<_> = known.difference(&upward).collect();
    assert!(
        gone.is_empty(),
        "these upward uses are gone: strike them from KNOWN_UPWARD: {gone:?}"
    );
}

#[test]
fn crate_uses_reads_paths_and_groups() {
    let uses = crate_uses(
        "use crate::run::{Mode, X};\n// crate::cli in a comment\nuse crate::{sweep, shards::{a, b}, aa};\nlet t = crate::bench::x;",
    );
    let want: BTreeSet<String> = ["run", "sweep", "shards", "aa", "bench"]
        .map(String::from)
        .into();
    assert_eq!(uses, want);
}
