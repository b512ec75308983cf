//! A full edge run (`agentload demo`: 1,007 replay turns and the 995-sample
//! gate against the in-process simulator) in a child process, for its wall
//! time, peak RSS and gap between turns; then the machine's floor for that
//! gap; then the run's recorded completions re-scored.
//!
//! The gap is an answer's end (the kernel's arrival stamp of its last bytes)
//! to the session's next request, over turns without a delay. The floor
//! replays as many turns on one [`StreamFloor`] connection against a
//! simulator in the bench's own process (as the demo's simulator is in the
//! demo's): each request is written as soon as the last answer's end was
//! read, nothing parsed, so its gap is the machine's wake-up and one byte
//! search. Its simulator echoes (no tokenizer work beside the client, where
//! the demo's oracle tokenizes), so the floor is a lower bound.

use super::floor::{self, StreamFloor};
use super::{percentile, Row};
use crate::rescore::{rescore, RescoreOptions};
use anyhow::{Context as _, Result};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Runs the demo into `dir` and re-scores it `repeats` times.
pub fn run(dir: &Path, repeats: usize) -> Result<Vec<Row>> {
    let exe = std::env::current_exe().context("cannot find the agentload binary")?;
    let t = Instant::now();
    let status = std::process::Command::new(exe)
        .args(["demo", "--out"])
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("cannot run agentload demo")?;
    anyhow::ensure!(status.success(), "agentload demo failed ({status})");
    let wall = t.elapsed().as_secs_f64();
    let mut rows = vec![Row::new("edge", "demo wall time (both phases)", wall, "s")];
    rows.push(Row::new(
        "edge",
        "demo peak RSS",
        super::children_usage().max_rss_kib as f64 / 1024.0,
        "MiB",
    ));
    let mut gaps = replay_gaps(&dir.join("turns.jsonl"))?;
    anyhow::ensure!(
        !gaps.is_empty(),
        "the demo's replay has no gap between turns"
    );
    let mut floor = tokio::runtime::Handle::current().block_on(floor_gaps(gaps.len()))?;
    let n = gaps.len();
    let mut spread = |who: &str, v: &mut Vec<f64>| {
        let (p50, p99) = (percentile(v, 50.0), percentile(v, 99.0));
        for (p, ms) in [("p50", p50), ("p99", p99)] {
            let what = format!("{who} gap between turns {p} ({n} gaps)");
            rows.push(Row::new("edge", what, ms, "ms"));
        }
        p99
    };
    let ratio = spread("agentload", &mut gaps) / spread("floor", &mut floor);
    rows.push(Row::new("edge", "gap p99 / floor p99", ratio, "x"));
    let mut times: Vec<(String, Vec<f64>)> = Vec::new();
    for i in 0..repeats {
        let out = dir.join(format!("rescore-{i}"));
        let result = rescore(&RescoreOptions {
            run_dir: dir.to_path_buf(),
            scorer: None,
            phase: None,
            out: Some(out),
            instances: None,
        })?;
        for p in result.phases {
            let label = format!("score {} ({} items)", p.scorer.name, p.items);
            match times.iter_mut().find(|(l, _)| *l == label) {
                Some((_, v)) => v.push(p.scoring_ms),
                None => times.push((label, vec![p.scoring_ms])),
            }
        }
    }
    for (label, mut v) in times {
        rows.push(Row::new(
            "edge",
            format!("{label}, median"),
            super::percentile(&mut v, 50.0),
            "ms",
        ));
    }
    Ok(rows)
}

/// The replay's gaps between turns, ms: each turn's issue minus its session's previous turn's
/// end, where the turn was due at that end (no delay). Signed: a turn issued before the last
/// one ended would show as a negative gap, not as none.
fn replay_gaps(turns: &Path) -> Result<Vec<f64>> {
    let text = std::fs::read_to_string(turns)
        .with_context(|| format!("cannot read {}", turns.display()))?;
    let mut by_session: HashMap<String, Vec<(u64, u64, u64, u64)>> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let r: Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not JSON", turns.display(), i + 1))?;
        let ns = |k: &str| r[k].as_u64();
        let (Some(session), Some(turn)) = (r["session_id"].as_str(), ns("turn")) else {
            continue;
        };
        if let (Some(due), Some(issued), Some(end)) =
            (ns("scheduled_ns"), ns("issued_ns"), ns("complete_ns"))
        {
            let turns = by_session.entry(session.to_owned()).or_default();
            turns.push((turn, due, issued, end));
        }
    }
    let mut gaps = Vec::new();
    for turns in by_session.values_mut() {
        turns.sort_unstable();
        for w in turns.windows(2) {
            let ((_, _, _, end), (_, due, issued, _)) = (w[0], w[1]);
            if due <= end {
                gaps.push((issued as i64 - end as i64) as f64 / 1e6);
            }
        }
    }
    Ok(gaps)
}

/// The floor's gaps between turns, ms: `turns` + 1 exchanges of about 100-token answers on
/// one connection, against a simulator in this process at the demo's time scale.
async fn floor_gaps(turns: usize) -> Result<Vec<f64>> {
    let sim = agentload_sim::start(
        agentload_sim::SimConfig {
            time_scale: crate::demo::TIME_SCALE,
            ..Default::default()
        },
        Arc::new(agentload_sim::ApproxTokenCounter),
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await
    .context("cannot start the floor's simulator")?;
    let body = serde_json::json!({
        "model": "bench",
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "word ".repeat(100)}],
    });
    let request = floor::request(&sim.addr().to_string(), &serde_json::to_vec(&body)?);
    let mut conn = StreamFloor::connect(sim.addr()).await?;
    let mut gaps = Vec::with_capacity(turns);
    let mut last_end = None;
    for _ in 0..=turns {
        let seen = conn.exchange(&request).await.context("floor replay")?;
        if let Some(end) = last_end {
            gaps.push((seen.issued_ns as i64 - end as i64) as f64 / 1e6);
        }
        last_end = Some(seen.ended_ns);
    }
    sim.shutdown().await;
    Ok(gaps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_taken_within_a_session_and_only_where_no_delay_was_due() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("turns.jsonl");
        let line = |s: &str, turn: u32, due: u64, issued: u64, end: u64| {
            format!(
                r#"{{"session_id":"{s}","turn":{turn},"scheduled_ns":{due},"issued_ns":{issued},"complete_ns":{end}}}"#
            )
        };
        let text = [
            // Out of order in the file: turns are paired by number.
            line("a", 2, 1_000_000, 1_300_000, 2_000_000),
            line("a", 1, 0, 10, 1_000_000),
            line("b", 1, 0, 10, 500_000),
            // Due 1 ms after b's first answer ended: a delay, not a gap.
            line("b", 2, 1_500_000, 1_500_100, 3_000_000),
            line("a", 3, 2_000_000, 2_100_000, 3_000_000),
            // Issued before the previous answer ended: a clock gone wrong shows, not hidden.
            line("c", 1, 0, 10, 1_000_000),
            line("c", 2, 1_000_000, 950_000, 2_000_000),
        ]
        .join("\n");
        std::fs::write(&path, text).unwrap();
        let mut gaps = replay_gaps(&path).unwrap();
        gaps.sort_by(f64::total_cmp);
        assert_eq!(gaps, vec![-0.05, 0.1, 0.3]);
        std::fs::write(&path, "{not json").unwrap();
        let e = replay_gaps(&path).unwrap_err().to_string();
        assert!(e.contains("turns.jsonl:1"), "{e}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_floor_replays_one_gap_per_turn_after_the_first() {
        let gaps = floor_gaps(5).await.unwrap();
        assert_eq!(gaps.len(), 5);
        // Each request is written after the last answer's end arrived (strictly: the write
        // follows the read that took those bytes), and well within a second of it.
        assert!(gaps.iter().all(|&ms| ms > 0.0 && ms < 1000.0), "{gaps:?}");
    }
}
