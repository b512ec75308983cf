//! The CPU of one streamed answer's parse, in this process and nothing else: its SSE events
//! read as they arrive (one `data:` line per read), each chunk assembled, then the turn's
//! record line and its facts. Three shapes, as llama.cpp and the simulator send them: a
//! short content answer, reasoning then content, and a tool call; each ends with the
//! `usage`, `timings` and simulator stamps a closing chunk carries. At 1,000 streams this
//! parse is agentload's own user-space cost beside the floor's (which reads the same bytes
//! and parses nothing), so this section measures it without the machine's noise around it.

use super::Row;
use agentload_client::{CompletionAssembler, SseParser};
use agentload_engine::{Interner, TurnFacts, TurnRecord, TurnStatus};
use anyhow::{Context as _, Result};
use std::hint::black_box;
use std::time::Instant;

/// Answers per timed run.
const ANSWERS: usize = 20_000;
/// Timed runs of each shape; the fastest counts (the others are the machine's noise).
const RUNS: usize = 7;

/// One answer's shape: its token-bearing deltas, as JSON `delta` objects.
struct Shape {
    name: &'static str,
    deltas: Vec<String>,
}

/// Each shape's per-answer parse, record line and facts, ns, and per chunk.
pub fn run() -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for shape in shapes() {
        let events = events(&shape);
        let chunks = events.len() as f64;
        let [parse, line, facts] = best_of(&events)
            .with_context(|| format!("the {} answer does not parse", shape.name))?;
        let what = |s: &str| format!("{} ({} chunks) {s}", shape.name, events.len());
        rows.push(Row::new(
            "answers",
            what("parse per chunk"),
            parse / chunks,
            "ns",
        ));
        rows.push(Row::new("answers", what("parse per answer"), parse, "ns"));
        rows.push(Row::new("answers", what("record line"), line, "ns"));
        rows.push(Row::new("answers", what("facts"), facts, "ns"));
    }
    Ok(rows)
}

fn shapes() -> [Shape; 3] {
    let text = |key: &str, n: usize| -> Vec<String> {
        (0..n)
            .map(|i| format!(r#"{{"{key}":"tok{i} "}}"#))
            .collect()
    };
    let mut thinking = text("reasoning_content", 24);
    thinking.extend(text("content", 8));
    let mut call = vec![
        r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":""}}]}"#
            .to_owned(),
    ];
    call.extend((0..8).map(|i| {
        format!(r#"{{"tool_calls":[{{"index":0,"function":{{"arguments":"{{\"cmd\":\"ls -la d{i}\"}}"}}}}]}}"#)
    }));
    [
        Shape {
            name: "content",
            deltas: text("content", 11),
        },
        Shape {
            name: "reasoning",
            deltas: thinking,
        },
        Shape {
            name: "tool call",
            deltas: call,
        },
    ]
}

/// The answer's SSE events, each as one read brings it: the role chunk, the deltas, the
/// closing chunk with its extras, `[DONE]`.
fn events(shape: &Shape) -> Vec<String> {
    let chunk = |delta: &str, finish: &str, extras: &str| {
        format!(
            "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1764000000,\
             \"model\":\"synthetic\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]\
             {extras}}}\n\n"
        )
    };
    let mut events = vec![chunk(r#"{"role":"assistant","content":null}"#, "null", "")];
    events.extend(shape.deltas.iter().map(|d| chunk(d, "null", "")));
    events.push(chunk(
        "{}",
        r#""stop""#,
        r#","usage":{"completion_tokens":11,"prompt_tokens":5303,"total_tokens":5314,"prompt_tokens_details":{"cached_tokens":4936}},"timings":{"cache_n":4936,"prompt_n":367,"prompt_ms":0.367,"prompt_per_token_ms":0.001,"prompt_per_second":999999.99,"predicted_n":11,"predicted_ms":14.69,"predicted_per_token_ms":1.33,"predicted_per_second":748.8},"agentload_sim":{"first_token_ns":2115980,"last_token_ns":16090102,"queued_ns":29764,"received_mono_ns":3949393478295,"first_token_mono_ns":3949395594275}"#,
    ));
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// The fastest of [`RUNS`] runs of [`ANSWERS`] answers: parse, record line and facts, ns
/// per answer.
fn best_of(events: &[String]) -> Result<[f64; 3]> {
    let mut best = [f64::INFINITY; 3];
    let mut strings = Interner::default();
    for _ in 0..RUNS {
        let mut spent = [0u128; 3];
        for _ in 0..ANSWERS {
            let started = Instant::now();
            let (mut parser, mut answer) = (SseParser::default(), CompletionAssembler::default());
            for event in events {
                parser.feed(event.as_bytes(), |e| {
                    if !e.is_done() {
                        black_box(answer.push_chunk(e.data)?);
                    }
                    anyhow::Ok(())
                })?;
            }
            let assembled = answer.finish();
            let parsed = Instant::now();
            let mut record = TurnRecord::aborted("session", 3, "item", "{}");
            record.status = TurnStatus::Completed;
            record.set_answer(assembled);
            black_box(serde_json::to_string(&record)?);
            let written = Instant::now();
            black_box(TurnFacts::of(&record, 1, &mut strings));
            let done = Instant::now();
            for (s, (from, to)) in
                spent
                    .iter_mut()
                    .zip([(started, parsed), (parsed, written), (written, done)])
            {
                *s += (to - from).as_nanos();
            }
        }
        for (b, s) in best.iter_mut().zip(spent) {
            *b = b.min(s as f64 / ANSWERS as f64);
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_assembles_to_its_answer_with_its_extras() {
        for shape in shapes() {
            let (mut parser, mut answer) = (SseParser::default(), CompletionAssembler::default());
            let mut bearing = 0;
            for event in events(&shape) {
                parser
                    .feed(event.as_bytes(), |e| {
                        if !e.is_done() {
                            bearing += u32::from(answer.push_chunk(e.data)?);
                        }
                        anyhow::Ok(())
                    })
                    .unwrap();
            }
            assert_eq!(bearing as usize, shape.deltas.len(), "{}", shape.name);
            let a = answer.finish();
            assert_eq!(a.finish_reason.as_deref(), Some("stop"));
            let mut record = TurnRecord::aborted("s", 1, "i", "{}");
            record.status = TurnStatus::Completed;
            record.set_answer(a);
            assert_eq!(record.usage_counts(), [Some(5303), Some(11), Some(4936)]);
            let facts = TurnFacts::of(&record, 1, &mut Interner::default());
            assert_eq!(
                facts.server_stamp(agentload_results::record::ServerStamp::FirstTokenMono),
                Some(3949395594275)
            );
            if shape.name == "tool call" {
                assert_eq!(record.completion.unwrap().tool_calls[0].name, "bash");
            }
        }
    }
}
