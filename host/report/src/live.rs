//! The live-reply section of a run (`agentload.live`): a live run is never
//! official; the divergence funnel says how far its replies departed from
//! the recording and what was done about each.

use super::charts::{color, row, Axis, Layer, Plot, Shape};
use super::page::{figure, Block, Cell, Section, Table, Tile};
use super::read::RunDir;
use serde_json::Value;

/// What was done with a class's replies, in the stacking order.
const ACTIONS: [&str; 4] = ["kept", "substituted", "ended", "failed"];

/// The section; none for a run with recorded history.
pub fn section(run: &RunDir) -> Option<Section> {
    let live = run.summary.as_ref()?["agentload"].get("live")?;
    let int = |v: &Value| v.as_u64().unwrap_or(0);
    let mut s = Section::new("live", "Live replies (not official)");
    s.note(
        "NON-OFFICIAL: live-reply replay (history = \"live\"). Each request carried the model's \
         own earlier replies, not the recording: these numbers measure another load than the \
         benchmark's.",
    );
    let (sessions, departed) = (int(&live["sessions"]), int(&live["sessions_diverged"]));
    s.push(Block::Tiles {
        items: vec![
            Tile::new("turns reviewed", int(&live["turns_reviewed"]).to_string()),
            Tile::new(
                "sessions that departed",
                format!("{departed} of {sessions}"),
            ),
            Tile::new(
                "replies substituted",
                int(&live["substitutions"]).to_string(),
            ),
            Tile::new(
                "tool results paired / dropped",
                format!(
                    "{} / {}",
                    int(&live["paired_results"]),
                    int(&live["dropped_results"])
                ),
            ),
            Tile::new(
                "placeholder results",
                int(&live["placeholder_results"]).to_string(),
            ),
        ],
    });
    let rows: Vec<&Value> = live["funnel"].as_array()?.iter().collect();
    let n = rows.len();
    let mut plot = Plot::new(Axis::linear("turns"), Axis::linear("").range(0.0, n as f64))
        .size(960, (n as u32 * 24 + 110).max(200));
    plot.y_categories = rows
        .iter()
        .map(|r| r["class"].as_str().unwrap_or("?").to_owned())
        .collect();
    for (k, action) in ACTIONS.iter().enumerate() {
        let bars: Vec<[f64; 4]> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| int(&r[*action]) > 0)
            .map(|(i, r)| {
                let start: f64 = ACTIONS[..k].iter().map(|a| int(&r[*a]) as f64).sum();
                let end = start + int(&r[*action]) as f64;
                [start, row(n, i) + 0.15, end, row(n, i) + 0.85]
            })
            .collect();
        plot = plot.layer(Layer::new(*action, color(k), Shape::Rects(bars)));
    }
    s.figures(vec![figure(
        "divergence-funnel",
        "Divergence funnel",
        "Every reviewed turn by its class (the first that applies: error, truncated, empty, \
         malformed_args, text_for_call, call_for_text, missing_calls, extra_calls, name_diff, \
         args_diff, match), split by what the workload's policy did with the reply.",
        &plot,
    )]);
    let mut table = Table::new(
        "The funnel",
        &[
            "class",
            "turns",
            "%",
            "kept",
            "substituted",
            "ended",
            "failed",
        ],
    );
    for r in rows {
        table.rows.push(vec![
            Cell::text(r["class"].as_str().unwrap_or("?")),
            Cell::num(int(&r["turns"]).to_string()),
            Cell::num(format!("{:.1}", r["pct"].as_f64().unwrap_or(0.0))),
            Cell::num(int(&r["kept"]).to_string()),
            Cell::num(int(&r["substituted"]).to_string()),
            Cell::num(int(&r["ended"]).to_string()),
            Cell::num(int(&r["failed"]).to_string()),
        ]);
    }
    s.push(Block::Table(table));
    if let Some(table) = lengths(live) {
        s.push(Block::Table(table));
    }
    let first: Vec<String> = live["first_divergent_turn"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| format!("turn {}: {}", p[0], p[1]))
        .collect();
    if !first.is_empty() {
        s.note(format!(
            "Sessions by the turn of their first departure: {}. Per session: the `live` fields of session_metrics.jsonl; per turn: `live` in turns.jsonl.",
            first.join(", ")
        ));
    }
    Some(s)
}

/// The live turns' lengths against the recording's (the recorded twin's local counts); none
/// without them.
fn lengths(live: &Value) -> Option<Table> {
    let mut table = Table::new(
        "Lengths against the recording (live − recorded, local counts, per turn)",
        &[
            "",
            "turns",
            "live",
            "recorded",
            "live/rec p50",
            "live/rec p90",
            "Δ mean",
            "Δ p50",
            "Δ p90",
            "Δ min",
            "Δ max",
            "turns differ",
        ],
    );
    let number = |v: &Value, digits: usize| match v.as_f64() {
        Some(x) => format!("{x:.digits$}"),
        None => "–".into(),
    };
    for (key, name) in [
        ("isl_drift", "ISL: request"),
        ("osl_vs_expected", "OSL: reply"),
    ] {
        let Some(d) = live.get(key) else { continue };
        let delta = &d["delta"];
        table.rows.push(vec![
            Cell::text(name),
            Cell::num(number(&d["turns"], 0)),
            Cell::num(number(&d["live_tokens"], 0)),
            Cell::num(number(&d["recorded_tokens"], 0)),
            Cell::num(number(&d["ratio_p50"], 3)),
            Cell::num(number(&d["ratio_p90"], 3)),
            Cell::num(number(&delta["mean"], 1)),
            Cell::num(number(&delta["p50"], 0)),
            Cell::num(number(&delta["p90"], 0)),
            Cell::num(number(&delta["min"], 0)),
            Cell::num(number(&delta["max"], 0)),
            Cell::num(number(&delta["changed"], 0)),
        ]);
    }
    (!table.rows.is_empty()).then_some(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_run_has_the_section_and_a_recorded_one_has_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("performance")).unwrap();
        let write = |summary: Value| {
            std::fs::write(
                dir.path().join("performance/result_summary.json"),
                summary.to_string(),
            )
            .unwrap();
        };
        write(serde_json::json!({"agentload": {"live": {
            "history": "live", "official": false, "turns_reviewed": 10,
            "funnel": [
                {"class": "match", "turns": 7, "pct": 70.0, "kept": 7, "substituted": 0, "ended": 0, "failed": 0},
                {"class": "text_for_call", "turns": 3, "pct": 30.0, "kept": 0, "substituted": 2, "ended": 0, "failed": 1}
            ],
            "substitutions": 2, "paired_results": 7, "dropped_results": 1, "placeholder_results": 0,
            "sessions": 2, "sessions_diverged": 1, "first_divergent_turn": [[3, 1]]
        }}}));
        let run = RunDir::read(dir.path()).unwrap();
        let text = format!("{:?}", section(&run).unwrap());
        assert!(!text.contains("Lengths against the recording"), "{text}");
        let drift = serde_json::json!({"turns": 9, "live_tokens": 1234, "recorded_tokens": 1200,
            "ratio_p50": 1.0126, "ratio_p90": 1.25,
            "delta": {"changed": 4, "mean": 3.75, "p50": 0.0, "p90": 17.0, "min": -2.0, "max": 20.0}});
        let mut summary: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("performance/result_summary.json")).unwrap(),
        )
        .unwrap();
        summary["agentload"]["live"]["isl_drift"] = drift;
        write(summary);
        let text = format!("{:?}", section(&RunDir::read(dir.path()).unwrap()).unwrap());
        assert!(text.contains("Lengths against the recording"), "{text}");
        assert!(
            text.contains("ISL: request") && !text.contains("OSL: reply"),
            "{text}"
        );
        assert!(text.contains("1234") && text.contains("1.013"), "{text}");
        assert!(text.contains("NON-OFFICIAL"), "{text}");
        assert!(text.contains("1 of 2"), "{text}");
        assert!(text.contains("text_for_call"), "{text}");
        assert!(text.contains("turn 3: 1"), "{text}");
        write(serde_json::json!({"agentload": {}}));
        assert!(section(&RunDir::read(dir.path()).unwrap()).is_none());
    }
}
