//! The gate against the real BFCL v4 data (when fetched) and small inputs.

use crate::gate::Gate;
use crate::settings::Settings;
use crate::subsets;
use agentload_sdk::Config;
use std::path::PathBuf;

fn bfcl_dir() -> Option<PathBuf> {
    bfcl_test_data::bfcl_dir("BFCL_v4_simple_python.json")
}

fn grant(dir: &std::path::Path) -> Config {
    let mut config = Config::with_settings("{}");
    for s in subsets::ALL {
        let q = format!("BFCL_v4_{}.json", s.name);
        config = config.grant(s.name, q.clone(), std::fs::read(dir.join(&q)).unwrap());
        if s.has_answers {
            config = config.grant(
                format!("{}_answers", s.name),
                q.clone(),
                std::fs::read(dir.join("possible_answer").join(&q)).unwrap(),
            );
        }
    }
    config
}

#[test]
fn the_reference_sample_is_995_entries_in_subset_order() {
    let Some(dir) = bfcl_dir() else { return };
    let gate = Gate::configure(Settings::default(), &grant(&dir)).unwrap();
    assert_eq!(gate.samples.len(), 995);
    let count = |cat: &str| {
        gate.samples
            .iter()
            .filter(|s| s.subset.category == cat)
            .count()
    };
    assert_eq!(
        (count("non_live"), count("live"), count("hallucination")),
        (713, 170, 112)
    );
    // Alphabetical subsets, first rows in file order.
    assert_eq!(gate.samples[0].entry.id, "irrelevance_0");
    assert_eq!(gate.samples[24].entry.id, "live_irrelevance_0-0-0");
    assert_eq!(gate.samples.last().unwrap().entry.id, "simple_python_247");

    let req = gate
        .request("simple_python_0")
        .unwrap()
        .into_request("simple_python_0");
    assert_eq!(req.session_id, "simple_python_0");
    assert_eq!(req.item_id, "simple_python_0");
    assert_eq!(req.sampling.temperature, Some(0.0));
    assert_eq!(req.sampling.seed, Some(42));
    assert_eq!(req.sampling.max_completion_tokens, Some(1024));
    assert_eq!(req.sampling.tool_choice_json.as_deref(), Some("\"auto\""));
    let tools: serde_json::Value =
        serde_json::from_str(req.tools_json.as_deref().unwrap()).unwrap();
    assert_eq!(tools[0]["function"]["parameters"]["type"], "object");
    let expected: serde_json::Value = serde_json::from_str(&req.expected_json).unwrap();
    assert_eq!(expected["subset"], "simple_python");
    assert_eq!(
        expected["ground_truth"][0]["calculate_triangle_area"]["unit"][1],
        ""
    );
    let java = gate.request("simple_java_0").unwrap();
    let expected: serde_json::Value = serde_json::from_str(&java.expected_json).unwrap();
    assert_eq!(expected["language"], "java");
    let irrelevant = gate.request("irrelevance_0").unwrap();
    let expected: serde_json::Value = serde_json::from_str(&irrelevant.expected_json).unwrap();
    assert!(expected["ground_truth"].is_null());
}

#[test]
fn a_missing_grant_is_a_config_error_naming_it() {
    let Some(dir) = bfcl_dir() else { return };
    let mut files = grant(&dir);
    files.files.retain(|f| f.name != "live_simple_answers");
    let err = Gate::configure(Settings::default(), &files).unwrap_err();
    assert!(
        format!("{err:?}").contains("live_simple_answers"),
        "{err:?}"
    );
    // Only the chosen categories are read.
    let settings = Settings::from_config(&Config::with_settings(
        r#"{"categories": ["hallucination"]}"#,
    ))
    .unwrap();
    let gate = Gate::configure(settings, &files).unwrap();
    assert_eq!(gate.samples.len(), 112);
}
