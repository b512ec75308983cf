//! Live-reply replay (`history = "live"`): requests carry the model's own
//! replies, each reviewed against the recording.

use serde_json::{json, Value};

use crate::fixtures::{config, shape, two_conversations};
use crate::session::Run;
use agentload_sdk::live::{Divergence, LiveAction, Review};
use agentload_sdk::{Completion, History, Message, Outcome, Role, ToolCall, Turn};

fn run(live: Value) -> Run {
    let settings = json!({"history": "live", "live": live});
    Run::configure(&config(settings, &two_conversations())).unwrap()
}

fn recorded_run() -> Run {
    Run::configure(&config(json!({}), &two_conversations())).unwrap()
}

fn calls(calls: &[(&str, &str, &str)]) -> Completion {
    Completion {
        content: String::new(),
        reasoning_content: String::new(),
        tool_calls: calls
            .iter()
            .map(|(id, name, args)| ToolCall::new(*id, *name, *args))
            .collect(),
        finish_reason: Some("tool_calls".into()),
        usage: None,
    }
}

fn text(content: &str) -> Completion {
    Completion::text(content)
}

/// The whole message lists a session's requests stand for, as the host
/// assembles them, with each turn's review.
struct Driven {
    requests: Vec<Vec<Message>>,
    reviews: Vec<Review>,
    ended: bool,
}

fn drive(run: &mut Run, session: &str, replies: Vec<Outcome>) -> Driven {
    let mut history = History::default();
    let mut requests = Vec::new();
    let apply =
        |history: &mut History, turn: &Turn| history.apply(turn.keep, &turn.messages).to_vec();
    requests.push(apply(&mut history, &run.start(session).unwrap()));
    let mut reviews = Vec::new();
    let mut ended = false;
    for reply in replies {
        let next = run.next_live(session, &reply).unwrap();
        reviews.extend(run.take_review(session));
        match next {
            Some(turn) => requests.push(apply(&mut history, &turn)),
            None => {
                ended = true;
                break;
            }
        }
    }
    Driven {
        requests,
        reviews,
        ended,
    }
}

fn recorded_requests(session: &str) -> Vec<Vec<Message>> {
    let mut run = recorded_run();
    let mut history = History::default();
    let first = run.start(session).unwrap();
    let mut out = vec![history.apply(first.keep, &first.messages).to_vec()];
    while let Some(turn) = run.next(session).unwrap() {
        out.push(history.apply(turn.keep, &turn.messages).to_vec());
    }
    out
}

/// Every call in `messages` is answered by a tool message with its id
/// before the next assistant message, and every tool message answers a
/// call of the assistant message before it.
fn every_call_answered(messages: &[Message]) {
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        match m.role {
            Role::Assistant => {
                assert!(
                    open.is_empty(),
                    "unanswered calls {open:?} in {messages:#?}"
                );
                open = m.tool_calls.iter().map(|c| c.id.clone()).collect();
            }
            Role::Tool => {
                let id = m.tool_call_id.clone().unwrap();
                let at = open.iter().position(|o| *o == id);
                assert!(
                    at.is_some(),
                    "tool result {id} answers no open call: {messages:#?}"
                );
                open.remove(at.unwrap());
            }
            _ => assert!(
                open.is_empty(),
                "unanswered calls {open:?} before a {:?}",
                m.role
            ),
        }
    }
}

fn ids_blanked(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| {
            let mut v = shape(m);
            if let Some(calls) = v.get_mut("tool_calls").and_then(Value::as_array_mut) {
                for c in calls {
                    c["id"] = json!("*");
                }
            }
            if v.get("tool_call_id").is_some() {
                v["tool_call_id"] = json!("*");
            }
            v
        })
        .collect()
}

#[test]
fn the_recorded_replies_replayed_live_match_and_send_the_recorded_requests() {
    // The oracle's replies: the recorded ones, with other call ids.
    let mut run = run(json!({}));
    let d = drive(
        &mut run,
        "a",
        vec![
            Outcome::Completed(Completion {
                reasoning_content: "look first".into(),
                ..calls(&[
                    ("x0", "bash", r#"{"command": "ls"}"#),
                    ("x1", "bash", r#"{"command": "pwd"}"#),
                ])
            }),
            Outcome::Completed(text("done")),
            Outcome::Completed(calls(&[("x2", "bash", r#"{"command":"ls"}"#)])),
        ],
    );
    assert!(d.ended);
    assert_eq!(d.reviews.len(), 3);
    for r in &d.reviews {
        assert_eq!(
            (r.divergence, r.action),
            (Divergence::Match, LiveAction::Kept),
            "{r:?}"
        );
    }
    assert_eq!(
        (d.reviews[0].paired_results, d.reviews[0].dropped_results),
        (2, 0)
    );
    let recorded = recorded_requests("a");
    assert_eq!(d.requests.len(), recorded.len());
    for (live, rec) in d.requests.iter().zip(&recorded) {
        every_call_answered(live);
        assert_eq!(ids_blanked(live), ids_blanked(rec));
    }
    // Only the ids differ, and they are the live ones.
    let second = &d.requests[1];
    assert_eq!(second[2].tool_calls[0].id, "x0");
    assert_eq!(second[3].tool_call_id.as_deref(), Some("x0"));
    assert_eq!(second[4].tool_call_id.as_deref(), Some("x1"));
    assert_eq!(second[4].content.as_deref(), Some("/repo"));
}

#[test]
fn with_the_recorded_ids_the_live_requests_are_the_recorded_ones() {
    let mut run = run(json!({}));
    let d = drive(
        &mut run,
        "b",
        vec![
            Outcome::Completed(text("done")),
            Outcome::Completed(calls(&[(
                "call_9",
                "bash",
                r#"{"command":"cat a.py","timeout":5}"#,
            )])),
            Outcome::Completed(text("done")),
        ],
    );
    let recorded = recorded_requests("b");
    // The live arguments are as sent (compact here, so equal to the recorded ones' text).
    assert_eq!(
        d.requests
            .iter()
            .map(|r| r.iter().map(shape).collect::<Vec<_>>())
            .collect::<Vec<_>>(),
        recorded
            .iter()
            .map(|r| r.iter().map(shape).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
}

#[test]
fn each_departure_is_classed_and_its_policy_applied() {
    let two = || {
        calls(&[
            ("x0", "bash", r#"{"command": "ls"}"#),
            ("x1", "bash", r#"{"command": "pwd"}"#),
        ])
    };
    // (reply to turn 1, its class, what was done, paired/dropped/placeholders)
    let cases = [
        (
            text("I will look."),
            Divergence::TextForCall,
            LiveAction::Substituted,
            (0, 0, 0),
        ),
        (
            calls(&[("y", "bash", r#"{"command":"ls"}"#)]),
            Divergence::MissingCalls,
            LiveAction::Kept,
            (1, 1, 0),
        ),
        (
            calls(&[
                ("y0", "bash", "{}"),
                ("y1", "bash", "{}"),
                ("y2", "grep", "{}"),
            ]),
            Divergence::ExtraCalls,
            LiveAction::Kept,
            (2, 0, 1),
        ),
        (
            calls(&[("y0", "find", "{}"), ("y1", "grep", "{}")]),
            Divergence::NameDiff,
            LiveAction::Kept,
            (2, 0, 0),
        ),
        (
            calls(&[
                ("y0", "bash", r#"{"command":"ls -la"}"#),
                ("y1", "bash", r#"{"command":"pwd"}"#),
            ]),
            Divergence::ArgsDiff,
            LiveAction::Kept,
            (2, 0, 0),
        ),
        (
            calls(&[("y0", "bash", r#"{"command": "#)]),
            Divergence::MalformedArgs,
            LiveAction::Substituted,
            (0, 0, 0),
        ),
        (
            Completion {
                finish_reason: Some("length".into()),
                ..two()
            },
            Divergence::Truncated,
            LiveAction::Substituted,
            (0, 0, 0),
        ),
        (
            text(""),
            Divergence::Empty,
            LiveAction::Substituted,
            (0, 0, 0),
        ),
    ];
    let recorded = recorded_requests("a");
    for (reply, class, action, (paired, dropped, placeholders)) in cases {
        let mut run = run(json!({}));
        let d = drive(&mut run, "a", vec![Outcome::Completed(reply.clone())]);
        let r = &d.reviews[0];
        assert_eq!(
            (r.divergence, r.action),
            (class, action),
            "{reply:?}: {r:?}"
        );
        assert_eq!(
            (r.paired_results, r.dropped_results, r.placeholder_results),
            (paired, dropped, placeholders),
            "{class:?}"
        );
        every_call_answered(&d.requests[1]);
        if action == LiveAction::Substituted {
            // The recorded message and results, as recorded.
            assert_eq!(d.requests[1], recorded[1], "{class:?}");
        } else {
            assert_eq!(d.requests[1][2].tool_calls, reply.tool_calls, "{class:?}");
        }
    }
}

#[test]
fn a_call_where_the_recording_has_text_gets_a_placeholder_result() {
    let mut run = run(json!({"placeholder": "no result recorded"}));
    let d = drive(
        &mut run,
        "a",
        vec![
            Outcome::Completed(calls(&[
                ("x0", "bash", r#"{"command":"ls"}"#),
                ("x1", "bash", r#"{"command":"pwd"}"#),
            ])),
            Outcome::Completed(calls(&[("z", "bash", r#"{"command":"git diff"}"#)])),
        ],
    );
    let r = &d.reviews[1];
    assert_eq!(
        (r.divergence, r.action, r.placeholder_results),
        (Divergence::CallForText, LiveAction::Kept, 1)
    );
    let third = &d.requests[2];
    every_call_answered(third);
    let n = third.len();
    assert_eq!(third[n - 2].tool_call_id.as_deref(), Some("z"));
    assert_eq!(third[n - 2].content.as_deref(), Some("no result recorded"));
    assert_eq!(third[n - 1].content.as_deref(), Some("and the tests"));
}

#[test]
fn policies_end_the_session_or_fail_the_turn() {
    let mut ended = run(json!({"policy": {"args_diff": "end"}}));
    let d = drive(
        &mut ended,
        "a",
        vec![Outcome::Completed(calls(&[
            ("x0", "bash", "{}"),
            ("x1", "bash", "{}"),
        ]))],
    );
    assert!(d.ended);
    assert_eq!(d.reviews[0].action, LiveAction::Ended);
    assert_eq!(d.requests.len(), 1);

    let mut failed = run(json!({"policy": {"text_for_call": "fail"}}));
    let d = drive(&mut failed, "a", vec![Outcome::Completed(text("no"))]);
    assert_eq!(d.reviews[0].action, LiveAction::Failed);
    // What follows is returned for the host to record as missing.
    assert_eq!(d.requests.len(), 2);

    let mut error = run(json!({}));
    let d = drive(&mut error, "a", vec![Outcome::Failed("HTTP 500".into())]);
    assert_eq!(
        (
            d.reviews[0].divergence,
            d.reviews[0].action,
            d.reviews[0].detail.as_str()
        ),
        (Divergence::Error, LiveAction::Failed, "HTTP 500")
    );
}

#[test]
fn a_text_reply_to_a_tool_row_falls_back_even_under_continue() {
    // `empty = "continue"`: an empty reply cannot take the recorded results.
    let mut run = run(json!({"policy": {"empty": "continue"}}));
    let d = drive(&mut run, "a", vec![Outcome::Completed(text(""))]);
    assert_eq!(d.reviews[0].action, LiveAction::Substituted);
    assert!(
        d.reviews[0].detail.contains("no call of the reply"),
        "{:?}",
        d.reviews[0]
    );
    assert_eq!(d.requests[1], recorded_requests("a")[1]);
}

#[test]
fn continue_on_text_for_call_is_refused_naming_the_key() {
    let err = Run::configure(&config(
        json!({"history": "live", "live": {"policy": {"text_for_call": "continue"}}}),
        &two_conversations(),
    ))
    .unwrap_err();
    assert!(
        err.to_string().contains("live.policy.text_for_call"),
        "{err}"
    );
}

#[test]
fn reasoning_is_carried_unless_turned_off() {
    let reply = || {
        Outcome::Completed(Completion {
            reasoning_content: "hmm".into(),
            ..calls(&[("x0", "bash", "{}"), ("x1", "bash", "{}")])
        })
    };
    let d = drive(&mut run(json!({})), "a", vec![reply()]);
    assert_eq!(d.requests[1][2].reasoning_content.as_deref(), Some("hmm"));
    let d = drive(&mut run(json!({"reasoning": false})), "a", vec![reply()]);
    assert_eq!(d.requests[1][2].reasoning_content, None);
}
