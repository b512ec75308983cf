//! A datacenter-shaped stand-in data set (`agentload dataset datacenter`):
//! the MLPerf datacenter agentic benchmark's `agentic_combined.jsonl` (613
//! trajectories, coding and workflow) is not public, so tests and the
//! side-by-side run against the reference harness use this one, built from
//! what is:
//!
//! - every edge trajectory under a new id (`dc-<id>`), its recorded tool
//!   delays scaled by `delay_scale`;
//! - `workflow` workflow-domain conversations `sim_1..sim_N`: a support
//!   router that classifies each customer message with an intent code
//!   (`intent_codes` on the assistant rows; the reference scores them on
//!   it), with tool calls, tool delays (turn 1's too, on some) and the
//!   variants the scorer must read: codes in lower case, two codes, the
//!   code in the reasoning only, a bare `I123` without `intent:`, and a
//!   closing reply with no code (excluded, no ground truth).
//!
//! Everything is drawn from `seed`, so the same arguments write the same
//! bytes.

use std::fmt::Write as _;
use std::io::BufRead;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

/// What to build.
#[derive(Debug, Clone)]
pub struct Options {
    /// How many `sim_N` workflow conversations.
    pub workflow: u32,
    /// Every recorded delay (edge and workflow) is multiplied by this.
    pub delay_scale: f64,
    pub seed: u64,
    /// Replace an existing output file (never the input).
    pub force: bool,
}

/// What was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub coding: usize,
    pub workflow: usize,
    pub rows: usize,
}

/// Reads the edge trajectories at `edge` and writes the stand-in to `out`
/// (whole, renamed into place). `out` is never the input, by any name (a
/// link, a hard link), and an existing `out` is replaced only with
/// `options.force`.
pub fn write(edge: &Path, out: &Path, options: &Options) -> Result<Written> {
    if !(options.delay_scale >= 0.0 && options.delay_scale.is_finite()) {
        bail!("--delay-scale must be a finite number >= 0");
    }
    let file =
        agentload_fs::read::open(edge).with_context(|| format!("opening {}", edge.display()))?;
    if let Ok(existing) = std::fs::metadata(out) {
        use std::os::unix::fs::MetadataExt as _;
        let input = file.metadata()?;
        if (existing.dev(), existing.ino()) == (input.dev(), input.ino()) {
            bail!(
                "{} is the input (--edge): refusing to overwrite it, even with --force",
                out.display()
            );
        }
        if !options.force {
            bail!("{} exists: --force replaces it", out.display());
        }
    }
    let mut rows = Vec::new();
    let mut coding = std::collections::BTreeSet::new();
    for (index, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("reading {}", edge.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let mut row: Value = serde_json::from_str(&line)
            .with_context(|| format!("{}:{}: not a JSON row", edge.display(), index + 1))?;
        let Some(id) = row["conversation_id"].as_str() else {
            bail!("{}:{}: no conversation_id", edge.display(), index + 1);
        };
        let id = format!("dc-{id}");
        coding.insert(id.clone());
        row["conversation_id"] = json!(id);
        if let Some(delay) = row["delay_seconds"].as_f64() {
            row["delay_seconds"] = json!(delay * options.delay_scale);
        }
        rows.push(row);
    }
    let mut rng = SplitMix(options.seed);
    for k in 1..=options.workflow {
        rows.extend(workflow_conversation(k, &mut rng, options.delay_scale));
    }
    let mut text = String::new();
    for row in &rows {
        let _ = writeln!(text, "{row}");
    }
    let (dir, name) = agentload_fs::OutDir::of_file(out)?;
    dir.write(&name, text)
        .with_context(|| format!("writing {}", out.display()))?;
    Ok(Written {
        coding: coding.len(),
        workflow: options.workflow as usize,
        rows: rows.len(),
    })
}

/// The router's instructions (the system prompt every `sim_N` shares).
const SYSTEM: &str = "You are the routing agent of an online store's support desk. Read each \
customer message, look the order up when one is named, and answer with one line `intent: \
I<3 digits>` naming the workflow that handles it, then a short reply to the customer.";

/// Customer requests and the intent code each one's workflow has.
const REQUESTS: [(&str, &str); 8] = [
    ("My order {o} arrived broken, I want my money back.", "I014"),
    ("Where is my parcel {o}? It was due on Monday.", "I021"),
    (
        "Please change the delivery address of {o} to my office.",
        "I033",
    ),
    ("I was charged twice for {o}.", "I047"),
    ("Cancel {o}, I ordered the wrong size.", "I052"),
    ("The discount code did not apply to {o}.", "I068"),
    (
        "Can I get an invoice with my company's VAT number for {o}?",
        "I075",
    ),
    ("{o} is missing one of the three items.", "I089"),
];

/// Tools the router may call.
fn tools() -> Value {
    let tool = |name: &str, description: &str| {
        json!({"type": "function", "function": {
            "name": name, "description": description,
            "parameters": {"type": "object",
                           "properties": {"order_id": {"type": "string"}},
                           "required": ["order_id"]}}})
    };
    json!([
        tool("lookup_order", "The order's items, status and payments."),
        tool("open_case", "Opens a support case for the order."),
    ])
}

/// One workflow conversation: 1-3 requests, each looked up, classified
/// and answered, then a closing exchange with no code.
fn workflow_conversation(k: u32, rng: &mut SplitMix, delay_scale: f64) -> Vec<Value> {
    let id = format!("sim_{k}");
    let mut rows = Vec::new();
    let mut turn = 0u32;
    let mut next = || {
        turn += 1;
        turn
    };
    let delay = |rng: &mut SplitMix| {
        // 0.1-1.9 s, median about 1 s (AA-AgentPerf's tool delays).
        let d = (0.1 + 1.8 * rng.unit()).min(5.0);
        (d * 1000.0).round() / 1000.0 * delay_scale
    };
    let requests = 1 + rng.below(3);
    for r in 0..requests {
        let (text, code) = REQUESTS[rng.below(REQUESTS.len() as u64) as usize];
        let order = format!("A-{:05}", rng.below(100_000));
        let mut user = json!({"conversation_id": id, "turn": next(), "role": "user",
                              "content": text.replace("{o}", &order)});
        if r == 0 {
            user["system"] = json!(SYSTEM);
            user["tools"] = tools();
            if rng.below(3) == 0 {
                user["delay_seconds"] = json!(delay(rng));
            }
        } else {
            user["delay_seconds"] = json!(delay(rng));
        }
        rows.push(user);
        let call_id = format!("call_{k}_{r}");
        rows.push(
            json!({"conversation_id": id, "turn": next(), "role": "assistant",
            "reasoning_content": format!("The customer names order {order}; I look it up first."),
            "tool_calls": [{"id": call_id, "type": "function", "function": {
                "name": "lookup_order",
                "arguments": json!({"order_id": order}).to_string()}}]}),
        );
        rows.push(
            json!({"conversation_id": id, "turn": next(), "role": "tool",
            "tool_results": [{"tool_call_id": call_id,
                              "content": json!({"order_id": order, "status": "delivered",
                                                "items": 3, "paid": 2}).to_string()}],
            "delay_seconds": delay(rng)}),
        );
        rows.push(classified(&id, next(), code, rng));
    }
    rows.push(
        json!({"conversation_id": id, "turn": next(), "role": "user",
                     "content": "Thank you, that is all.", "delay_seconds": delay(rng)}),
    );
    rows.push(
        json!({"conversation_id": id, "turn": next(), "role": "assistant",
                     "content": "You are welcome. Have a good day!"}),
    );
    rows
}

/// The assistant row that names the intent, in one of the forms the
/// scorer reads.
fn classified(id: &str, turn: u32, code: &str, rng: &mut SplitMix) -> Value {
    let mut row = json!({"conversation_id": id, "turn": turn, "role": "assistant"});
    let reply = "I have opened a case; you will hear from us within a day.";
    match rng.below(5) {
        // The usual form.
        0 | 1 => {
            row["content"] = json!(format!("intent: {code}\n{reply}"));
            row["intent_codes"] = json!([code]);
        }
        // Lower case in the data; the scorer upper-cases it.
        2 => {
            row["content"] = json!(format!("Intent: {code}\n{reply}"));
            row["intent_codes"] = json!([code.to_lowercase()]);
        }
        // The code in the reasoning only, and a second accepted code.
        3 => {
            row["reasoning_content"] = json!(format!("This is workflow intent: {code}."));
            row["content"] = json!(reply);
            row["intent_codes"] = json!([code, "I099"]);
        }
        // A bare code, no `intent:`.
        _ => {
            row["content"] = json!(format!("Routing to {code}. {reply}"));
            row["intent_codes"] = json!([code]);
        }
    }
    row
}

/// SplitMix64: a small, well-known generator, enough for test data.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("edge.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"conversation_id": "a", "turn": 1, "role": "user", "content": "fix", "system": "s"}"#,
                "\n\n",
                r#"{"conversation_id": "a", "turn": 2, "role": "assistant", "content": "ok"}"#,
                "\n",
                r#"{"conversation_id": "a", "turn": 3, "role": "user", "content": "more", "delay_seconds": 2.0}"#,
                "\n",
            ),
        )
        .unwrap();
        path
    }

    /// Same arguments, same bytes; the edge rows renamed with their delays
    /// scaled; every workflow conversation starts with a system prompt,
    /// counts its turns 1..N and ends with an excluded (codeless) reply.
    #[test]
    fn deterministic_renamed_and_well_formed() {
        let dir = tempfile::tempdir().unwrap();
        let options = Options {
            workflow: 6,
            delay_scale: 0.5,
            seed: 9,
            force: false,
        };
        let (one, two) = (dir.path().join("1.jsonl"), dir.path().join("2.jsonl"));
        let written = write(&edge(dir.path()), &one, &options).unwrap();
        write(&edge(dir.path()), &two, &options).unwrap();
        assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&two).unwrap());
        assert_eq!((written.coding, written.workflow), (1, 6));
        let rows: Vec<Value> = std::fs::read_to_string(&one)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), written.rows);
        assert_eq!(rows[0]["conversation_id"], "dc-a");
        assert_eq!(rows[2]["delay_seconds"], 1.0);
        for k in 1..=6 {
            let id = format!("sim_{k}");
            let conv: Vec<&Value> = rows.iter().filter(|r| r["conversation_id"] == id).collect();
            assert_eq!(conv[0]["system"], SYSTEM, "{id}");
            for (i, row) in conv.iter().enumerate() {
                assert_eq!(row["turn"], i + 1, "{id}");
            }
            let last = conv.last().unwrap();
            assert!(last["intent_codes"].is_null() && last["role"] == "assistant");
            let coded = conv.iter().filter(|r| r["intent_codes"].is_array()).count();
            assert!((1..=3).contains(&coded), "{id}: {coded}");
        }
        let bad = write(
            &edge(dir.path()),
            &one,
            &Options {
                delay_scale: -1.0,
                ..options
            },
        );
        assert!(bad.is_err());
    }

    /// A malformed line names the file and the line.
    #[test]
    fn a_bad_edge_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.jsonl");
        std::fs::write(&path, "{\"conversation_id\": \"a\"}\nnot json\n").unwrap();
        let options = Options {
            workflow: 0,
            delay_scale: 1.0,
            seed: 1,
            force: false,
        };
        let e = write(&path, &dir.path().join("o.jsonl"), &options).unwrap_err();
        assert!(format!("{e:#}").contains("bad.jsonl:2"), "{e:#}");
    }
}
