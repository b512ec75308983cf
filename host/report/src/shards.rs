//! The shards of a merged sharded run: how many were merged, how well they
//! started together, how good the clock offsets were, and each shard's
//! target against achieved load (`agentload.distributed`).

use super::page::{Block, Cell, Section, Table, Tile};
use super::read::RunDir;
use serde_json::Value;

fn ms(ns: &Value) -> String {
    ns.as_f64()
        .map_or_else(|| "-".to_owned(), |v| format!("{:.3}", v / 1e6))
}

/// The section; none for a run from one process.
pub fn section(run: &RunDir) -> Option<Section> {
    let d = run.summary.as_ref()?["agentload"].get("distributed")?;
    let merged = d["merged"].as_array().map_or(0, Vec::len);
    let shards = d["shards"].as_u64().unwrap_or(0);
    let mut s = Section::new("shards", "Shards");
    let agrees = d["histogram_check"]["agrees"].as_bool().unwrap_or(false);
    s.push(Block::Tiles {
        items: vec![
            Tile::new("shards merged", format!("{merged} of {shards}"))
                .tone(merged as u64 == shards),
            Tile::new("start skew", format!("{} ms", ms(&d["start_skew_ns"]))),
            Tile::new(
                "first requests within",
                format!("{} ms", ms(&d["first_issue_skew_ns"])),
            ),
            Tile::new(
                "clock offsets good to",
                format!("± {} ms", ms(&d["max_offset_uncertainty_ns"])),
            ),
            Tile::new(
                "histogram cross-check",
                if agrees { "agrees" } else { "DISAGREES" },
            )
            .tone(agrees),
        ],
    });
    if let Some(why) = d["lost"].as_str() {
        s.push(Block::Note {
            text: format!("INVALID: {why}"),
        });
    }
    let mut table = Table::new(
        "Each shard: its share of the slots against the turns it kept in flight; its clock \
         against the coordinator's (latencies are its own durations, exact; only cross-shard \
         times carry the offset's bound)",
        &[
            "shard",
            "host",
            "sessions",
            "target concurrency",
            "mean in flight",
            "completed",
            "failed",
            "offset (ms)",
            "± (ms)",
            "drift (µs)",
            "start (ms)",
        ],
    );
    for p in d["per_shard"].as_array().into_iter().flatten() {
        let int = |k: &str| p[k].as_i64().map_or("-".to_owned(), |v| v.to_string());
        table.rows.push(vec![
            Cell::num(int("index")),
            Cell::text(p["host"].as_str().unwrap_or("?")),
            Cell::num(int("sessions")),
            Cell::num(int("concurrency")),
            Cell::num(
                p["mean_in_flight"]
                    .as_f64()
                    .map_or("-".to_owned(), |v| format!("{v:.2}")),
            ),
            Cell::num(int("turns_completed")),
            Cell::num(int("turns_failed")),
            Cell::num(ms(&p["offset_ns"])),
            Cell::num(ms(&p["offset_uncertainty_ns"])),
            Cell::num(
                p["offset_drift_ns"]
                    .as_f64()
                    .map_or("-".to_owned(), |v| format!("{:.1}", v / 1e3)),
            ),
            Cell::num(ms(&p["start_ns"])),
        ]);
    }
    s.push(Block::Table(table));
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_shard_shows_and_a_single_run_has_no_section() {
        let dir = tempfile::tempdir().unwrap();
        let summary = serde_json::json!({"agentload": {"distributed": {
            "shards": 3, "merged": [0, 1], "lost": "shard 2 (pod-2) stopped answering",
            "start_skew_ns": 1500000, "first_issue_skew_ns": 2000000,
            "max_offset_uncertainty_ns": 250000,
            "histogram_check": {"agrees": true},
            "per_shard": [{"index": 0, "host": "pod-0", "sessions": 4, "concurrency": 2,
                "mean_in_flight": 1.9, "turns_completed": 100, "turns_failed": 0,
                "offset_ns": 12000, "offset_uncertainty_ns": 250000, "offset_drift_ns": -800,
                "start_ns": 0}]
        }}});
        std::fs::create_dir_all(dir.path().join("performance")).unwrap();
        std::fs::write(
            dir.path().join("performance/result_summary.json"),
            summary.to_string(),
        )
        .unwrap();
        let run = RunDir::read(dir.path()).unwrap();
        let html = format!("{:?}", section(&run).unwrap());
        assert!(html.contains("2 of 3"), "{html}");
        assert!(html.contains("INVALID: shard 2"), "{html}");
        assert!(html.contains("pod-0"), "{html}");
        std::fs::write(
            dir.path().join("performance/result_summary.json"),
            "{\"agentload\": {}}",
        )
        .unwrap();
        assert!(section(&RunDir::read(dir.path()).unwrap()).is_none());
    }
}
