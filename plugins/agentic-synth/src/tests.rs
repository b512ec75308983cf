use super::*;
use agentload_sdk::{History, Role};

fn run(settings: &str) -> Run {
    Run::configure(&Config::with_settings(settings)).unwrap()
}

/// Every request of every session: (prompt words, delay ms, osl).
fn requests(run: &mut Run) -> Vec<(u32, u64, u32)> {
    let mut out = Vec::new();
    for session in run.sessions() {
        let mut turn = Some(run.start(&session.id).unwrap());
        let mut history = History::default();
        let mut n = 0;
        while let Some(t) = turn {
            n += 1;
            let words: usize = history
                .apply(t.keep, &t.messages)
                .iter()
                .map(|m| {
                    m.content
                        .as_deref()
                        .map_or(0, |c| c.len() / text::WORD_BYTES)
                })
                .sum();
            let osl = t.sampling.max_completion_tokens.unwrap();
            out.push((words as u32, t.delay_ms, osl));
            turn = run.next(&session.id).unwrap();
        }
        assert_eq!(n, session.expected_turns, "{}", session.id);
    }
    out
}

#[test]
fn the_default_shape_is_aa_agentperfs() {
    let mut run = run(r#"{"trajectories": 600}"#);
    let reqs = requests(&mut run);
    let n = reqs.len() as f64;
    let mean = reqs.iter().map(|r| f64::from(r.0)).sum::<f64>() / n;
    let (min, max) = (
        reqs.iter().map(|r| r.0).min().unwrap(),
        reqs.iter().map(|r| r.0 + r.2).max().unwrap(),
    );
    assert!((24_000.0..30_000.0).contains(&mean), "mean prompt {mean}");
    assert!(min >= 5_000 && max <= 131_072, "prompts {min}..{max}");
    let mut delays: Vec<u64> = reqs.iter().map(|r| r.1).filter(|&d| d > 0).collect();
    delays.sort_unstable();
    let median = delays[delays.len() / 2];
    assert!((850..1_150).contains(&median), "median delay {median} ms");
    assert!(*delays.last().unwrap() <= 5_000 && delays[0] >= 50);
    // Short tool calls and long reasoning both occur.
    let short = reqs.iter().filter(|r| r.2 <= 300).count() as f64 / n;
    assert!(
        (0.5..0.9).contains(&short),
        "share of short outputs {short}"
    );
    assert!(reqs.iter().any(|r| r.2 >= 4_000));
}

#[test]
fn a_seed_gives_the_same_requests_and_another_seed_others() {
    let first = |settings: &str| {
        let mut run = run(settings);
        let id = run.sessions()[3].id.clone();
        let t1 = run.start(&id).unwrap();
        let t2 = run.next(&id).unwrap().unwrap();
        (t1.messages, t2.keep, t2.messages, t2.delay_ms)
    };
    let a = first(r#"{"seed": 5, "trajectories": 10}"#);
    assert_eq!(a, first(r#"{"seed": 5, "trajectories": 10}"#));
    assert_ne!(a, first(r#"{"seed": 6, "trajectories": 10}"#));
}

#[test]
fn turns_carry_the_history_with_answered_calls() {
    let mut run = run(r#"{"trajectories": 2, "turns_min": 5, "turns_max": 5}"#);
    let id = run.sessions()[0].id.clone();
    let first = run.start(&id).unwrap();
    assert_eq!(first.keep, 0);
    let mut history = History::default();
    history.apply(first.keep, &first.messages);
    let mut last = first.clone();
    let mut m = Vec::new();
    while let Some(t) = run.next(&id).unwrap() {
        // Each turn keeps the whole previous request and adds an answer and its result.
        assert_eq!(t.keep as usize, m.len().max(2), "turn {}", t.turn);
        assert_eq!(t.messages.len(), 2);
        m = history.apply(t.keep, &t.messages).to_vec();
        last = t;
    }
    assert!(run.next(&id).is_err(), "an ended session is not running");
    assert_eq!(m.len(), 2 + 2 * (last.turn as usize - 1));
    assert_eq!(&m[..2], &first.messages[..]);
    for pair in m[2..].chunks(2) {
        assert_eq!(pair[0].role, Role::Assistant);
        assert_eq!(pair[1].role, Role::Tool);
        assert_eq!(
            pair[1].tool_call_id.as_deref(),
            Some(&*pair[0].tool_calls[0].id)
        );
    }
    assert_eq!(last.tools_json.as_deref(), Some(TOOLS_JSON));
    assert_eq!(first.delay_ms, 0);
}

#[test]
fn sweeps_set_the_count_and_switch_delays_off() {
    let mut run = run(r#"{"num_trajectories_to_issue": 7, "inject_tool_delay": false}"#);
    assert_eq!(run.sessions().len(), 7);
    assert!(requests(&mut run).iter().all(|r| r.1 == 0));
}

#[test]
fn bad_settings_name_their_key() {
    for (settings, key) in [
        (r#"{"turns_min": 0}"#, "turns_min"),
        (r#"{"trajectories": 0}"#, "trajectories"),
        (
            r#"{"context": {"median": -1, "sigma": 1, "min": 1, "max": 2}}"#,
            "context",
        ),
        (r#"{"reasoning_share": 2}"#, "reasoning_share"),
        (r#"{"max_context": 1000}"#, "max_context"),
        (r#"{"colour": 1}"#, "colour"),
    ] {
        let err = Run::configure(&Config::with_settings(settings)).unwrap_err();
        assert!(err.to_string().contains(key), "{settings}: {err}");
    }
}

#[test]
fn unknown_and_twice_started_sessions_are_refused() {
    let mut run = run(r#"{"trajectories": 2}"#);
    assert!(run.start("synth-2").is_err());
    assert!(run.start("other").is_err());
    run.start("synth-1").unwrap();
    assert!(run.start("synth-1").is_err());
}
