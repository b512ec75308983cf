//! Every dataset loader, on mutated real rows (`seeds/`): the trajectory
//! loader of coding-replay (and the whole workload on what it accepts), the
//! BFCL v4 single-turn loader with its tool conversion, and the BFCL v4
//! multi-turn loader. Whatever the file holds, a loader returns a dataset
//! or an error naming the problem, never a panic; what it accepts the
//! workload can run.

use crate::{drive, mutate, Budget, Failure, Report, Target};
use proptest::prelude::*;

pub const CODING_REPLAY: Target = Target {
    name: "coding-replay-data",
    about: "trajectory loader and replay: mutated rows load and replay, or are refused",
    run: run_coding_replay,
};

pub const BFCL_SINGLE: Target = Target {
    name: "bfcl-single-data",
    about: "BFCL v4 single-turn loader and tool conversion on mutated entries",
    run: run_bfcl_single,
};

pub const BFCL_MULTI: Target = Target {
    name: "bfcl-multi-data",
    about: "BFCL v4 multi-turn loader on mutated entries, answers and docs",
    run: run_bfcl_multi,
};

const TRAJECTORIES: &[u8] = include_bytes!("../../seeds/coding_replay.jsonl");

fn settings() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{}".to_string()),
        (1u32..5).prop_map(|n| format!(r#"{{"num_trajectories_to_issue": {n}}}"#)),
        Just(r#"{"max_completion_tokens": 7, "temperature": 0.5, "seed": -1}"#.into()),
        Just(r#"{"conversations": ["astropy__astropy-12907"]}"#.into()),
        Just(r#"{"inject_tool_delay": true}"#.into()),
    ]
}

fn run_coding_replay(budget: Budget, seed: u64) -> Result<Report, Failure> {
    use agentload_sdk::{Config as PluginConfig, GrantedFile};
    drive(
        CODING_REPLAY.name,
        (mutate::edits(4), settings()),
        |(edits, settings_json)| {
            let bytes = mutate::apply(TRAJECTORIES, &edits);
            let parsed = coding_replay::dataset::parse("t.jsonl", &bytes);
            let config = PluginConfig {
                settings_json,
                files: vec![GrantedFile {
                    name: "trajectories".into(),
                    file_name: "t.jsonl".into(),
                    bytes,
                }],
                nonce: String::new(),
            };
            let Ok(mut run) = coding_replay::session::Run::configure(&config) else {
                return Ok(());
            };
            prop_assert!(parsed.is_ok(), "the workload ran data its loader refused");
            for plan in run.plans() {
                let first = run
                    .start(&plan.id)
                    .map_err(|e| TestCaseError::fail(format!("start {}: {e:?}", plan.id)))?;
                prop_assert!(!first.messages.is_empty());
                let mut turns = 1;
                while let Some(next) = run
                    .next(&plan.id)
                    .map_err(|e| TestCaseError::fail(format!("next {}: {e:?}", plan.id)))?
                {
                    prop_assert!(!next.messages.is_empty());
                    turns += 1;
                    prop_assert!(turns <= plan.expected_turns, "more turns than planned");
                }
                prop_assert_eq!(turns, plan.expected_turns, "session {}", plan.id);
            }
            Ok(())
        },
        budget,
        seed,
    )
}

/// A question file, its answer file and the subset's language.
type SingleSeed = (&'static [u8], Option<&'static [u8]>, &'static str);

const SINGLE: &[SingleSeed] = &[
    (
        include_bytes!("../../seeds/simple_python.json"),
        Some(include_bytes!("../../seeds/simple_python_answers.json")),
        "python",
    ),
    (
        include_bytes!("../../seeds/parallel_multiple.json"),
        Some(include_bytes!("../../seeds/parallel_multiple_answers.json")),
        "java",
    ),
    (
        include_bytes!("../../seeds/irrelevance.json"),
        None,
        "javascript",
    ),
];

fn run_bfcl_single(budget: Budget, seed: u64) -> Result<Report, Failure> {
    drive(
        BFCL_SINGLE.name,
        (
            0..SINGLE.len(),
            mutate::edits(3),
            mutate::edits(2),
            proptest::option::of(0usize..4),
        ),
        |(which, q_edits, a_edits, limit)| {
            let (q, a, language) = SINGLE[which];
            let q = mutate::apply(q, &q_edits);
            let a = a.map(|a| mutate::apply(a, &a_edits));
            let Ok(entries) = bfcl_single::dataset::read(
                ("q.json", &q),
                a.as_deref().map(|a| ("a.json", a)),
                limit,
            ) else {
                return Ok(());
            };
            prop_assert!(entries.len() <= limit.unwrap_or(usize::MAX));
            for entry in entries {
                let _ = bfcl_tools::tools::convert(&entry.functions);
                let mut functions = entry.functions.clone();
                if bfcl_tools::tools::add_language_hints(&mut functions, language).is_ok() {
                    let _ = bfcl_tools::tools::convert(&functions);
                }
            }
            Ok(())
        },
        budget,
        seed,
    )
}

const MULTI: [(&str, &[u8]); 4] = [
    (
        "multi_turn_base",
        include_bytes!("../../seeds/multi_turn_base.json"),
    ),
    (
        "multi_turn_base_answers",
        include_bytes!("../../seeds/multi_turn_base_answers.json"),
    ),
    (
        "func_doc_gorilla_file_system",
        include_bytes!("../../seeds/func_doc_gorilla_file_system.json"),
    ),
    (
        "func_doc_posting_api",
        include_bytes!("../../seeds/func_doc_posting_api.json"),
    ),
];

fn run_bfcl_multi(budget: Budget, seed: u64) -> Result<Report, Failure> {
    drive(
        BFCL_MULTI.name,
        proptest::collection::vec(mutate::edits(2), MULTI.len()),
        |edits| {
            let files: Vec<(&str, Vec<u8>)> = MULTI
                .iter()
                .zip(&edits)
                .map(|((name, bytes), e)| (*name, mutate::apply(bytes, e)))
                .collect();
            let Ok(d) = bfcl_multi_turn::data::Dataset::parse(
                files.iter().map(|(n, b)| (*n, b.as_slice())),
            ) else {
                return Ok(());
            };
            for q in d.questions.values().flatten() {
                if let Ok(docs) = d.docs_for(q) {
                    let _ = bfcl_tools::tools::convert(&docs);
                }
            }
            Ok(())
        },
        budget,
        seed,
    )
}
