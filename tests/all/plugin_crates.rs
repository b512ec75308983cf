//! The plugin crates' shape, from `cargo metadata`: every plugin component
//! (a `cdylib` crate under `plugins/`) is written on `agentload-sdk`, none
//! uses wit-bindgen itself, none depends on another component, and no
//! plugin crate has features (which would let one build change what another
//! exports). So `scripts/build-plugins.sh` is one cargo build of them.
//!
//! The one exception is the tool environment `shell-tools`: it implements
//! another world (`agentload:tools`), which the SDK does not cover, so it
//! uses wit-bindgen itself (through `tool_sandbox::tool_environment_bindings!`,
//! so its own crate still forbids unsafe code), and it is built by a cargo
//! invocation of its own.

use crate::common::cargo_metadata;
use serde_json::Value;

/// The tool environment: a component of the `agentload:tools` world.
const TOOL_ENVIRONMENT: &str = "shell-tools";

#[test]
fn components_are_thin_crates_on_the_sdk() {
    let meta = cargo_metadata();
    let packages = meta["packages"].as_array().unwrap();
    // plugins/, not the test fixtures under tests/plugins/ (built against an
    // older WIT package, or misbehaving on purpose).
    let in_plugins = |p: &&Value| {
        let path = p["manifest_path"].as_str().unwrap();
        path.contains("/plugins/") && !path.contains("/tests/plugins/")
    };
    let is_component = |p: &Value| {
        p["targets"].as_array().unwrap().iter().any(|t| {
            t["crate_types"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c == "cdylib")
        })
    };
    let components: Vec<&str> = packages
        .iter()
        .filter(in_plugins)
        .filter(|p| is_component(p))
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for official in [
        "coding-replay",
        "shell-iou",
        "bfcl-single",
        "bfcl-ast",
        "bfcl-multi",
        "bfcl-multi-score",
        "bfcl-ast-v2",
    ] {
        assert!(components.contains(&official), "{official}: {components:?}");
    }
    for p in packages.iter().filter(in_plugins) {
        let name = p["name"].as_str().unwrap();
        let deps: Vec<&str> = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null())
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert!(
            p["features"].as_object().unwrap().is_empty(),
            "{name} has features"
        );
        if name == "agentload-sdk" {
            continue;
        }
        if name == TOOL_ENVIRONMENT {
            assert!(deps.contains(&"tool-sandbox"), "{name}: {deps:?}");
            let linked: Vec<&&str> = deps
                .iter()
                .filter(|d| components.contains(d) || **d == "agentload-sdk")
                .collect();
            assert!(linked.is_empty(), "{name} depends on {linked:?}");
            continue;
        }
        assert!(
            !deps.contains(&"wit-bindgen"),
            "{name} uses wit-bindgen: {deps:?}"
        );
        if is_component(p) {
            assert!(deps.contains(&"agentload-sdk"), "{name}: {deps:?}");
            let linked: Vec<&&str> = deps.iter().filter(|d| components.contains(d)).collect();
            assert!(
                linked.is_empty(),
                "component {name} depends on components {linked:?}"
            );
        }
    }
}
