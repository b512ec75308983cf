//! `closed`: closed-loop agents (`history = "closed"`) against the
//! in-process simulator, in a child `agentload run`: each agent's model
//! (the simulator's script) searches a generated repository, views, edits
//! and diffs it, then answers without a call. One agent's second reply is a
//! slow call (thirty repository-wide `grep -rn`). Reported: each command
//! class's per-call sandbox time (p50, p99) and fuel, the sandbox's total
//! fuel and time, the run's process CPU, and the send lag (issued − due) of
//! every request and of the other agents' requests issued while the slow
//! call ran: tool calls run on the pool's own threads, so the slow call
//! must not show there. Last, what each request's sha256 costs.

use super::{percentile, Row};
use agentload_client::RequestBody;
use agentload_engine::closed::SentRequest;
use agentload_sim::{ResponderConfig, SimConfig};
use anyhow::{Context as _, Result};
use bytes::Bytes;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

const SECTION: &str = "closed";

/// The slow call: thirty repository-wide searches in one `bash` call.
const SLOW: &str = "for i in $(seq 30); do grep -rn value . > /dev/null; done; echo searched";

/// Runs `agents` closed-loop agents in `dir`.
pub async fn run(dir: &Path, agents: usize) -> Result<Vec<Row>> {
    std::fs::create_dir_all(dir)?;
    let repo = dir.join("repo");
    super::tools::generate(&repo, 300)?;
    let packed = crate::workspace::pack(&repo, &dir.join("repo.tar"))?;
    let tools: Value = json!([{"type": "function", "function": {"name": "bash",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]);
    let call = |c: &str| json!({"function": {"name": "bash", "arguments": {"command": c}}});
    let (mut task, mut script) = (String::new(), String::new());
    for i in 0..agents {
        let id = format!("agent-{i:04}");
        task.push_str(&format!(
            "{}\n",
            json!({"conversation_id": id, "turn": 1, "role": "user", "tools": tools,
                   "system": "You can run shell commands.", "content": "Fix the TODO."})
        ));
        let second = if i == 0 {
            SLOW
        } else {
            "sed -n '1,20p' pkg_0/mod_0/file_0.py"
        };
        for (n, reply) in [
            (1, vec![call("grep -rn 'TODO: check 7' .")]),
            (2, vec![call(second)]),
            (3, vec![call("sed -i 's/TODO/DONE/' pkg_0/mod_0/file_0.py")]),
            (4, vec![call("git diff --stat")]),
        ] {
            let line = json!({"session_id": id, "turn": n, "tool_calls": reply});
            script.push_str(&format!("{line}\n"));
        }
        let line = json!({"session_id": id, "turn": 5, "content": "Done."});
        script.push_str(&format!("{line}\n"));
    }
    std::fs::write(dir.join("task.jsonl"), task)?;
    std::fs::write(dir.join("model.jsonl"), script)?;
    let sim = agentload_sim::start(
        SimConfig {
            time_scale: 0.0,
            slots: agents as u32,
            responder: ResponderConfig::Script {
                path: dir.join("model.jsonl"),
            },
            ..Default::default()
        },
        Arc::new(agentload_sim::ApproxTokenCounter),
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await?;
    let config = format!(
        "name = \"bench-closed\"\ndata_dir = \"{dir}\"\n[model]\nname = \"m\"\ntokenizer = \"none\"\n\
         [endpoint]\nurl = \"{url}\"\n[load]\nconcurrency = {agents}\n[performance]\n\
         workload = \"coding-replay\"\n[performance.data]\ntrajectories = \"task.jsonl\"\n\
         [performance.settings]\nhistory = \"closed\"\n[tools.workspace]\narchive = \"repo.tar\"\n\
         sha256 = \"{sha}\"\n",
        dir = dir.display(),
        url = sim.url(),
        sha = packed.sha256
    );
    std::fs::write(dir.join("closed.toml"), config)?;
    let exe = std::env::current_exe().context("cannot find the agentload binary")?;
    let out = dir.join("out");
    let t = Instant::now();
    let status = tokio::process::Command::new(exe)
        .arg("run")
        .arg(dir.join("closed.toml"))
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .context("cannot run agentload run")?;
    let wall = t.elapsed().as_secs_f64();
    sim.shutdown().await;
    anyhow::ensure!(status.success(), "the closed-loop run failed ({status})");
    let usage = super::children_usage();
    let turns = crate::tools::closed::read_turns(&out.join("turns.jsonl"))?;
    let mut rows = vec![
        Row::new(
            SECTION,
            format!("{agents} agents: run wall time"),
            wall,
            "s",
        ),
        Row::new(SECTION, "run process CPU (user + system)", usage.cpu_s, "s"),
    ];
    // Per call, by class: the turns of one call.
    let mut by: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let (mut fuel, mut sandbox_ms, mut calls) = (0u64, 0.0, 0usize);
    for t in &turns {
        let closed = &t["closed"];
        let list = closed["calls"].as_array().cloned().unwrap_or_default();
        calls += list.len();
        fuel += list
            .iter()
            .map(|c| c["fuel"].as_u64().unwrap_or(0))
            .sum::<u64>();
        let ms = closed["sandbox_us"].as_f64().unwrap_or(0.0) / 1e3;
        sandbox_ms += ms;
        if let [c] = list.as_slice() {
            let class = if t["session_id"] == "agent-0000" && closed["index"] == 2 {
                "slow (30x grep -rn)".to_owned()
            } else {
                c["class"].as_str().unwrap_or("?").to_owned()
            };
            let e = by.entry(class).or_default();
            e.0.push(ms);
            e.1.push(c["fuel"].as_f64().unwrap_or(0.0));
        }
    }
    for (class, (mut ms, mut fuels)) in by {
        let n = ms.len();
        for p in [50.0, 99.0] {
            let what = format!("{class}: sandbox time per call p{p:.0} ({n} calls)");
            rows.push(Row::new(SECTION, what, percentile(&mut ms, p), "ms"));
        }
        let what = format!("{class}: fuel per call p50");
        rows.push(Row::new(
            SECTION,
            what,
            percentile(&mut fuels, 50.0) / 1e6,
            "M",
        ));
    }
    rows.push(Row::new(
        SECTION,
        format!("sandbox fuel, all {calls} calls"),
        fuel as f64 / 1e9,
        "G",
    ));
    rows.push(Row::new(
        SECTION,
        "sandbox time, all calls",
        sandbox_ms / 1e3,
        "s",
    ));
    // What each session's copy-on-write overlay held when it ended.
    let mut overlay: Vec<f64> = turns
        .iter()
        .filter_map(|t| t["closed"]["overlay_bytes"].as_f64())
        .map(|b| b / 1024.0)
        .collect();
    let n = overlay.len();
    for p in [50.0, 100.0] {
        let what = format!("overlay per session at its end, p{p:.0} ({n} sessions)");
        rows.push(Row::new(SECTION, what, percentile(&mut overlay, p), "KiB"));
    }
    // Send lag: every request, then the others' while the slow call ran
    // (from its turn's answer to its session's next request).
    let ns = |t: &Value, k: &str| t[k].as_u64();
    let lag = |t: &Value| Some((ns(t, "issued_ns")? as f64 - ns(t, "scheduled_ns")? as f64) / 1e6);
    let mut all: Vec<f64> = turns.iter().filter_map(lag).collect();
    let slow = |index: u64| {
        turns
            .iter()
            .find(|t| t["session_id"] == "agent-0000" && t["closed"]["index"] == index)
    };
    let span = slow(2)
        .and_then(|a| Some((ns(a, "complete_ns")?, ns(slow(3)?, "issued_ns")?)))
        .context("the slow agent's turns are missing")?;
    let mut during: Vec<f64> = turns
        .iter()
        .filter(|t| t["session_id"] != "agent-0000")
        .filter(|t| ns(t, "issued_ns").is_some_and(|i| i >= span.0 && i <= span.1))
        .filter_map(lag)
        .collect();
    rows.push(Row::new(
        SECTION,
        "slow call span",
        (span.1 - span.0) as f64 / 1e6,
        "ms",
    ));
    for (who, v) in [
        ("every request", &mut all),
        ("others' requests during the slow call", &mut during),
    ] {
        let n = v.len();
        if n == 0 {
            rows.push(Row::new(
                SECTION,
                format!("send lag, {who}: none issued"),
                0.0,
                "n",
            ));
            continue;
        }
        for p in [50.0, 99.0, 100.0] {
            let what = format!("send lag, {who}, p{p:.0} ({n})");
            rows.push(Row::new(SECTION, what, percentile(v, p), "ms"));
        }
    }
    rows.extend(digest_cost(&turns));
    Ok(rows)
}

/// What keeping each request's sha256 (for `agentload resume`) costs:
/// timed on a body the size of the run's largest request, then projected
/// over every request's bytes.
fn digest_cost(turns: &[Value]) -> Vec<Row> {
    let sizes: Vec<u64> = turns
        .iter()
        .filter_map(|t| t["closed"]["request_bytes"].as_u64())
        .collect();
    let largest = sizes.iter().copied().max().unwrap_or(0) as usize;
    if largest == 0 {
        return Vec::new();
    }
    let body = RequestBody::from_parts(vec![Bytes::from(vec![b'x'; largest])]);
    let reps = 1000;
    let t = Instant::now();
    for _ in 0..reps {
        std::hint::black_box(SentRequest::of(Some(std::hint::black_box(&body))));
    }
    let per_request = t.elapsed().as_secs_f64() / f64::from(reps);
    let all: u64 = sizes.iter().sum();
    vec![
        Row::new(
            SECTION,
            format!(
                "request sha256, one request of {:.1} KiB (the largest), measured",
                largest as f64 / 1024.0
            ),
            per_request * 1e6,
            "us",
        ),
        Row::new(
            SECTION,
            format!("request sha256, all {} requests (projected)", sizes.len()),
            per_request / largest as f64 * all as f64 * 1e3,
            "ms",
        ),
    ]
}
