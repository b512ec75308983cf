//! The stream assembler (`client/assemble.rs`): for streamed chunks of the
//! shapes servers send, the answer is the deltas concatenated and tool
//! calls merged by index; chunks of any other shape (any JSON, broken
//! JSON) are counted or ignored, never a panic, and a tool call whose
//! `index` is none (-1, a string, 2.5) is refused. A whole non-streamed
//! response of any shape never panics either.

use crate::{drive, json, Budget, Failure, Report, Target};
use agentload_client::CompletionAssembler;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Streamed chunks.
pub const TARGET: Target = Target {
    name: "assemble",
    about: "stream assembler: content, reasoning and tool calls from any chunks",
    run,
};

/// Non-streamed responses.
pub const RESPONSE: Target = Target {
    name: "assemble-response",
    about: "stream assembler: a whole response of any shape",
    run: run_response,
};

/// One tool-call delta: index, id, name, arguments (each maybe absent).
type CallDelta = (Option<u64>, Option<String>, Option<String>, Option<String>);

/// A chunk as the generator built it.
#[derive(Debug, Clone)]
enum Chunk {
    /// A well-formed delta.
    Delta {
        content: Option<String>,
        reasoning: Option<String>,
        calls: Vec<CallDelta>,
        finish: Option<String>,
    },
    /// A delta whose tool call's `index` is no call's index (refused).
    BadIndex(Value),
    /// Any JSON value.
    Other(Value),
    /// Text that may not be JSON.
    Text(String),
}

fn chunk() -> impl Strategy<Value = Chunk> {
    let opt = || proptest::option::of(json::awkward_string());
    let call = (proptest::option::of(0u64..4), opt(), opt(), opt());
    prop_oneof![
        6 => (opt(), opt(), proptest::collection::vec(call, 0..3), proptest::option::of("stop|length|tool_calls"))
            .prop_map(|(content, reasoning, calls, finish)| Chunk::Delta { content, reasoning, calls, finish }),
        1 => prop_oneof![Just(json!(-1)), Just(json!("1")), Just(json!(2.5)), Just(json!(true)), Just(json!([0]))]
            .prop_map(Chunk::BadIndex),
        2 => json::value().prop_map(Chunk::Other),
        1 => json::text().prop_map(Chunk::Text),
    ]
}

fn delta_json(chunk: &Chunk) -> String {
    match chunk {
        Chunk::Delta {
            content,
            reasoning,
            calls,
            finish,
        } => {
            let calls: Vec<Value> = calls
                .iter()
                .map(|(index, id, name, args)| {
                    let mut c = json!({"type": "function", "function": {}});
                    if let Some(i) = index {
                        c["index"] = json!(i);
                    }
                    if let Some(id) = id {
                        c["id"] = json!(id);
                    }
                    if let Some(n) = name {
                        c["function"]["name"] = json!(n);
                    }
                    if let Some(a) = args {
                        c["function"]["arguments"] = json!(a);
                    }
                    c
                })
                .collect();
            let mut delta = json!({});
            if let Some(c) = content {
                delta["content"] = json!(c);
            }
            if let Some(r) = reasoning {
                delta["reasoning_content"] = json!(r);
            }
            if !calls.is_empty() {
                delta["tool_calls"] = Value::Array(calls);
            }
            json!({"choices": [{"delta": delta, "finish_reason": finish}]}).to_string()
        }
        Chunk::BadIndex(index) => json!({"choices": [{"delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": "a"}},
            {"index": index, "function": {"arguments": "b"}}
        ]}}]})
        .to_string(),
        Chunk::Other(v) => v.to_string(),
        Chunk::Text(t) => t.clone(),
    }
}

fn run(budget: Budget, seed: u64) -> Result<Report, Failure> {
    drive(
        TARGET.name,
        proptest::collection::vec(chunk(), 0..8),
        |chunks| {
            let mut a = CompletionAssembler::default();
            let mut bearing = 0;
            let mut refused = 0;
            for c in &chunks {
                match a.push_chunk(&delta_json(c)) {
                    Ok(true) => bearing += 1,
                    Ok(false) => {}
                    Err(_) => refused += 1,
                }
            }
            let out = a.finish();
            // Only the well-formed deltas have a known meaning.
            if chunks.iter().all(|c| matches!(c, Chunk::Delta { .. })) {
                let mut content = String::new();
                let mut reasoning = String::new();
                let mut args: BTreeMap<u64, String> = BTreeMap::new();
                let mut expected_bearing = 0;
                for c in &chunks {
                    let Chunk::Delta {
                        content: co,
                        reasoning: re,
                        calls,
                        ..
                    } = c
                    else {
                        unreachable!()
                    };
                    content.push_str(co.as_deref().unwrap_or(""));
                    reasoning.push_str(re.as_deref().unwrap_or(""));
                    for (i, _, _, a) in calls {
                        args.entry(i.unwrap_or(0))
                            .or_default()
                            .push_str(a.as_deref().unwrap_or(""));
                    }
                    let nonempty = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
                    if nonempty(co) || nonempty(re) || !calls.is_empty() {
                        expected_bearing += 1;
                    }
                }
                prop_assert_eq!(&out.content, &content);
                prop_assert_eq!(&out.reasoning_content, &reasoning);
                let got: Vec<&str> = out
                    .tool_calls
                    .iter()
                    .map(|c| c.arguments.as_str())
                    .collect();
                let want: Vec<&str> = args.values().map(String::as_str).collect();
                prop_assert_eq!(got, want);
                prop_assert_eq!(bearing, expected_bearing);
                prop_assert_eq!(out.first_chunk.is_some(), expected_bearing > 0);
                prop_assert_eq!(refused, 0);
            }
            let malformed = chunks
                .iter()
                .filter(|c| match serde_json::from_str::<Value>(&delta_json(c)) {
                    Ok(v) => bad_index(&v["choices"][0]["delta"]["tool_calls"]),
                    Err(_) => true,
                })
                .count();
            // A chunk that is not JSON, or whose tool call has an index that is none, is
            // refused (the turn fails on it).
            prop_assert_eq!(refused, malformed);
            Ok(())
        },
        budget,
        seed,
    )
}

/// Whether an array of tool calls holds one whose `index` is there (not null) and not a call's
/// index: an unsigned integer, written as one or as an integral float (as Python reads it).
fn bad_index(calls: &Value) -> bool {
    let index = |i: &Value| {
        i.is_u64()
            || i.as_f64()
                .is_some_and(|f| f >= 0.0 && f.fract() == 0.0 && f < 2f64.powi(53))
    };
    calls.as_array().is_some_and(|calls| {
        calls
            .iter()
            .filter_map(|c| c.get("index"))
            .any(|i| !i.is_null() && !index(i))
    })
}

/// Responses shaped like `chat.completion`, with any value at any place.
fn response() -> impl Strategy<Value = Value> {
    let call = prop_oneof![
        3 => (proptest::option::of(json::value()), json::value(), json::value())
            .prop_map(|(index, name, args)| {
                let mut c = json!({"id": "c", "type": "function", "function": {"name": name, "arguments": args}});
                if let Some(i) = index {
                    c["index"] = i;
                }
                c
            }),
        1 => json::value(),
    ];
    (
        proptest::collection::vec(call, 0..4),
        json::value(),
        json::value(),
        any::<bool>(),
    )
        .prop_map(|(calls, content, other, shaped)| {
            if shaped {
                json!({"choices": [{"finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": content, "tool_calls": calls}}],
                    "usage": other})
            } else {
                other
            }
        })
}

fn run_response(budget: Budget, seed: u64) -> Result<Report, Failure> {
    drive(
        RESPONSE.name,
        response(),
        |body| {
            let mut a = CompletionAssembler::default();
            let calls = &body["choices"][0]["message"]["tool_calls"];
            let taken = a.push_response(&body);
            prop_assert_eq!(taken.is_err(), bad_index(calls));
            let out = a.finish();
            if let (Ok(()), Some(calls)) = (taken, calls.as_array()) {
                prop_assert!(out.tool_calls.len() <= calls.len());
            }
            Ok(())
        },
        budget,
        seed,
    )
}
