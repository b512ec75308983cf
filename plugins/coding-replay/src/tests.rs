//! Tests through the `Workload` calls the export glue makes: the abort flow
//! and the edge dataset.

use std::collections::HashMap;

use serde_json::{json, Value};

use agentload_sdk::{package_info, Completion, Error, History, Outcome, Role, Workload};

use crate::fixtures::{config, two_conversations};
use crate::CodingReplay;

fn completed() -> Outcome {
    Outcome::Completed(Completion::text("anything"))
}

#[test]
fn describe_names_the_plugin() {
    let info = CodingReplay::describe(package_info!());
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("coding-replay", "0.3.1")
    );
}

#[test]
fn calls_before_configure_are_invalid_input() {
    assert!(matches!(
        CodingReplay::default().start("a"),
        Err(Error::Input(_))
    ));
}

#[test]
fn abort_flow_hands_out_every_remaining_turn() {
    let mut w = CodingReplay::default();
    let plans = w
        .configure(config(json!({}), &two_conversations()))
        .unwrap();
    assert_eq!(plans.len(), 2);
    assert_eq!(w.start("b").unwrap().turn, 1);
    let mut next = |outcome| w.next("b", outcome);
    assert_eq!(next(completed()).unwrap().unwrap().turn, 3);
    // Turn 3 failed: the host takes the rest, recording them as missing, until none.
    let failed = Outcome::Failed("HTTP 400: context overflow".into());
    assert_eq!(next(failed).unwrap().unwrap().turn, 5);
    assert!(next(Outcome::Aborted).unwrap().is_none());
    match next(Outcome::Aborted) {
        Err(Error::Input(message)) => assert_eq!(message, "session 'b' is over"),
        other => panic!("expected invalid-input, got {other:?}"),
    }
}

/// The committed edge dataset, replayed in full.
#[test]
fn edge_dataset_replays_1007_turns() {
    let dir = std::env::var("AGENTLOAD_DATA_DIR").unwrap_or_else(|_| "/work/shared/data".into());
    let path = std::path::Path::new(&dir).join("agentic_coding_2.5h.jsonl");
    let Ok(text) = std::fs::read_to_string(&path) else {
        assert!(
            std::env::var_os("AGENTLOAD_REQUIRE_DATA").is_none(),
            "{} is absent",
            path.display()
        );
        println!(
            "skipped: {} is absent (set AGENTLOAD_DATA_DIR)",
            path.display()
        );
        return;
    };
    let mut w = CodingReplay::default();
    let plans = w.configure(config(json!({}), &text)).unwrap();
    assert_eq!(plans.len(), 20);
    assert_eq!(plans.iter().map(|p| p.expected_turns).sum::<u32>(), 1007);

    // Role of every (conversation, turn), to check the expected assistant rows.
    let mut roles = HashMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let row: Value = serde_json::from_str(line).unwrap();
        let key = (
            row["conversation_id"].as_str().unwrap().to_owned(),
            row["turn"].as_u64().unwrap(),
        );
        roles.insert(key, row["role"].as_str().unwrap().to_owned());
    }

    let (mut turns, mut largest) = (0, 0);
    for plan in &plans {
        let mut request = w.start(&plan.id).unwrap().into_request(&plan.id);
        assert_eq!(request.messages.len(), 2, "{}: system + user", plan.id);
        assert!(matches!(request.messages[0].role, Role::System));
        assert!(matches!(request.messages[1].role, Role::User));
        let mut history = History::default();
        let mut had = 0;
        let mut count = 0;
        loop {
            count += 1;
            // Each request keeps the whole previous one.
            assert_eq!(
                request.keep as usize, had,
                "{} turn {}",
                plan.id, request.turn
            );
            had = history.apply(request.keep, &request.messages).len();
            largest = largest.max(had);
            assert!(request.tools_json.is_some(), "tools on every turn");
            assert_eq!(request.delay_ms, 0, "edge runs ignore delay_seconds");
            let expected: Value = serde_json::from_str(&request.expected_json).unwrap();
            let assistant_turn = expected["assistant_turn"].as_u64().unwrap();
            assert_eq!(assistant_turn, u64::from(request.turn) + 1);
            assert_eq!(
                roles
                    .get(&(plan.id.clone(), assistant_turn))
                    .map(String::as_str),
                Some("assistant"),
                "{} turn {assistant_turn}",
                plan.id
            );
            assert_eq!(request.item_id, format!("{}/{assistant_turn}", plan.id));
            match w.next(&plan.id, completed()).unwrap() {
                Some(next) => request = next.into_request(&plan.id),
                None => break,
            }
        }
        assert_eq!(count, plan.expected_turns);
        turns += count;
    }
    assert_eq!(turns, 1007);
    // pytest-dev__pytest-6202 turn 121: the system message + rows 1..=121 (~100 KB).
    assert_eq!(largest, 122);
}

/// `enable_salt`: each instance's first request carries its salted system
/// prompt (the reference's bytes), later requests keep it; a conversation
/// without a system prompt is refused at configure, before any request.
#[test]
fn salted_instances_carry_the_reference_salt_from_their_first_turn() {
    let mut w = CodingReplay::default();
    match w.configure(config(json!({"enable_salt": true}), &two_conversations())) {
        Err(Error::Config(message)) => assert!(
            message.contains("conversation 'b' has no system message"),
            "{message}"
        ),
        other => panic!("expected invalid-config, got {other:?}"),
    }
    let settings =
        json!({"enable_salt": true, "conversations": ["a"], "num_trajectories_to_issue": 2});
    let plans = w.configure(config(settings, &two_conversations())).unwrap();
    let ids: Vec<&str> = plans.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["a", "a__repeat_2"]);
    let system = "You are a shell agent.";
    for (session, pass) in [("a", 1), ("a__repeat_2", 2)] {
        let first = w.start(session).unwrap();
        assert_eq!(first.keep, 0);
        assert_eq!(first.messages[0].role, Role::System);
        let r = if pass == 1 { "4461" } else { "ba75" };
        let c = crate::salt::salted(
            system,
            crate::salt::SaltMode::Reference,
            0,
            pass,
            "a",
            session,
        );
        assert_eq!(first.messages[0].content.as_deref(), Some(c.as_str()));
        assert!(
            c.starts_with(&format!("[salt: {r}]\n\n{system}\n\n[salt: ")),
            "{c}"
        );
        // The next request keeps the salted prompt and sends no other.
        let next = w.next(session, completed()).unwrap().unwrap();
        assert!(next.keep > 0);
        assert!(next.messages.iter().all(|m| m.role != Role::System));
    }
    // Unsalted, the same conversation sends its prompt as recorded.
    let plain = json!({"conversations": ["a"]});
    w.configure(config(plain, &two_conversations())).unwrap();
    assert_eq!(
        w.start("a").unwrap().messages[0].content.as_deref(),
        Some(system)
    );
}

/// The datacenter presets' sampling: top_p and top_k sent, no seed.
#[test]
fn top_p_top_k_and_no_seed_reach_every_turn() {
    let mut w = CodingReplay::default();
    let settings = json!({"temperature": 1.0, "top_p": 0.95, "top_k": 20, "send_seed": false});
    w.configure(config(settings, &two_conversations())).unwrap();
    let first = w.start("a").unwrap();
    let next = w.next("a", completed()).unwrap().unwrap();
    for turn in [first, next] {
        assert_eq!(turn.sampling.temperature, Some(1.0));
        assert_eq!(turn.sampling.top_p, Some(0.95));
        assert_eq!(turn.sampling.top_k, Some(20));
        assert_eq!(turn.sampling.seed, None);
    }
    for (bad, key) in [
        (json!({"top_p": 0.0}), "top_p"),
        (json!({"top_k": 0}), "top_k"),
    ] {
        match w.configure(config(bad, &two_conversations())) {
            Err(Error::Config(message)) => assert!(message.contains(key), "{message}"),
            other => panic!("expected invalid-config, got {other:?}"),
        }
    }
}
