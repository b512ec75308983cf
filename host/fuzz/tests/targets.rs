//! Every fuzz target, seeded, for a few hundred inputs: a few seconds of
//! the same properties `scripts/fuzz.sh` runs for as long as asked.

use agentload_fuzz::{Budget, TARGETS};

/// The seed of the test command's runs (any fixed number).
const SEED: u64 = 20261201;

#[test]
fn every_target_holds_on_its_seeded_inputs() {
    let mut failures = Vec::new();
    for t in TARGETS {
        match (t.run)(Budget::Inputs(256), SEED) {
            Ok(r) => assert_eq!(r.inputs, 256, "{}", t.name),
            Err(f) => failures.push(f.to_string()),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn target_names_are_unique() {
    let mut names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before);
}
