use super::*;
use agentload_sdk::live::{Divergence, LiveAction};
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
            turn = run.next(&session.id, &Outcome::Aborted).unwrap();
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
        let t2 = run.next(&id, &Outcome::Aborted).unwrap().unwrap();
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
    while let Some(t) = run.next(&id, &Outcome::Aborted).unwrap() {
        // Each turn keeps the whole previous request and adds an answer and its result.
        assert_eq!(t.keep as usize, m.len().max(2), "turn {}", t.turn);
        assert_eq!(t.messages.len(), 2);
        m = history.apply(t.keep, &t.messages).to_vec();
        last = t;
    }
    assert!(
        run.next(&id, &Outcome::Aborted).is_err(),
        "an ended session is not running"
    );
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

/// A live session driven with `reply` (given each drawn answer) for every
/// turn: the whole requests and the reviews.
fn live_session(
    settings: &str,
    reply: impl Fn(&Message) -> agentload_sdk::Completion,
) -> (Vec<Vec<Message>>, Vec<Review>, Vec<Vec<Message>>) {
    let mut recorded = run(settings.replace("\"live\"", "\"recorded\"").as_str());
    let mut live = run(settings);
    let id = live.sessions()[0].id.clone();
    let (mut a, mut b) = (History::default(), History::default());
    let mut turn = Some(recorded.start(&id).unwrap());
    let mut want = Vec::new();
    while let Some(t) = turn {
        want.push(a.apply(t.keep, &t.messages).to_vec());
        turn = recorded.next(&id, &Outcome::Aborted).unwrap();
    }
    let mut got = Vec::new();
    let mut reviews = Vec::new();
    let mut turn = Some(live.start(&id).unwrap());
    let mut n = 0;
    while let Some(t) = turn {
        got.push(b.apply(t.keep, &t.messages).to_vec());
        n += 1;
        // The drawn answer to this request is the next recorded request's
        // first new message (a text one after the last).
        let drawn = want.get(n).map_or_else(
            || Message::assistant("done"),
            |w| w[got[n - 1].len()].clone(),
        );
        turn = live.next(&id, &Outcome::Completed(reply(&drawn))).unwrap();
        reviews.extend(live.take_review(&id));
    }
    (got, reviews, want)
}

const LIVE: &str = r#"{"trajectories": 1, "context": {"median": 200, "sigma": 0.1, "min": 100, "max": 400},
    "tool_output": {"median": 50, "sigma": 0.1, "min": 20, "max": 80}, "system_words": 20,
    "history": "live"}"#;

#[test]
fn live_replies_equal_to_the_drawn_ones_match_and_send_the_drawn_requests() {
    let (got, reviews, want) = live_session(LIVE, |drawn| agentload_sdk::Completion {
        content: drawn.content.clone().unwrap_or_default(),
        reasoning_content: String::new(),
        tool_calls: drawn
            .tool_calls
            .iter()
            .map(|c| ToolCall::new(c.id.clone(), &c.name, &c.arguments))
            .collect(),
        finish_reason: Some("tool_calls".into()),
        usage: None,
    });
    assert_eq!(got, want);
    assert_eq!(reviews.len(), want.len());
    assert!(reviews
        .iter()
        .all(|r| (r.divergence, r.action) == (Divergence::Match, LiveAction::Kept)));
}

#[test]
fn a_text_reply_falls_back_and_an_extra_call_gets_a_placeholder() {
    let (got, reviews, want) = live_session(LIVE, |_| agentload_sdk::Completion::text("hi"));
    assert_eq!(got, want, "every text reply replaced by the drawn answer");
    let last = reviews.len() - 1;
    for r in &reviews[..last] {
        assert_eq!(
            (r.divergence, r.action),
            (Divergence::TextForCall, LiveAction::Substituted)
        );
    }
    // The last drawn answer is text: a text reply matches it.
    assert_eq!(reviews[last].divergence, Divergence::Match);
    let (got, reviews, _) = live_session(LIVE, |drawn| agentload_sdk::Completion {
        content: String::new(),
        reasoning_content: String::new(),
        tool_calls: drawn
            .tool_calls
            .iter()
            .map(|c| ToolCall::new("x", &c.name, &c.arguments))
            .chain([ToolCall::new("y", "grep", r#"{"pattern":"fn"}"#)])
            .collect(),
        finish_reason: Some("tool_calls".into()),
        usage: None,
    });
    assert_eq!(reviews[0].divergence, Divergence::ExtraCalls);
    assert_eq!(reviews[0].placeholder_results, 1);
    let second = &got[1];
    let n = second.len();
    assert_eq!(second[n - 1].tool_call_id.as_deref(), Some("y"));
    assert_eq!(second[n - 2].tool_call_id.as_deref(), Some("x"));
    assert_eq!(second[n - 1].role, Role::Tool);
}
