//! The closed-loop section of a run (`performance/closed_loop.json`): a
//! closed-loop run is never official; what the sandbox ran for the model,
//! how the sessions ended, how long the model followed the recording, and
//! how its requests grew against the recording's.

use super::charts::{color, Axis, Layer, Plot, Shape};
use super::page::{figure, Block, Cell, Section, Table, Tile};
use super::read::RunDir;
use serde_json::Value;

/// The section; none for a run that is not closed-loop.
pub fn section(run: &RunDir) -> Option<Section> {
    let c = run.closed_loop.as_ref()?;
    let int = |v: &Value| v.as_u64().unwrap_or(0);
    let mut s = Section::new("closed-loop", "Closed loop (not official)");
    s.note(
        "NON-OFFICIAL: closed-loop replay (history = \"closed\"). After the recording's first \
         request, each request carried the model's own replies and the results of its own tool \
         calls, run in the sandbox: these numbers measure another load than the benchmark's.",
    );
    let calls = &c["calls"];
    let sessions = c["sessions"].as_array()?;
    s.push(Block::Tiles {
        items: vec![
            Tile::new("sessions", sessions.len().to_string()),
            Tile::new("turns", int(&c["turns"]).to_string()),
            Tile::new(
                "tool calls executed / stubbed / error",
                format!(
                    "{} / {} / {}",
                    int(&calls["executed"]),
                    int(&calls["stubbed"]),
                    int(&calls["error"])
                ),
            ),
            Tile::new("tool output", format!("{} bytes", int(&c["output_bytes"]))),
            Tile::new(
                "sandbox fuel",
                format!("{:.2} G", int(&c["fuel"]) as f64 / 1e9),
            ),
            Tile::new(
                "overlay per session (mean / max)",
                match int(&c["overlay_bytes"]["sessions"]) {
                    0 => "-".to_owned(),
                    _ => format!(
                        "{:.1} / {:.1} KiB",
                        c["overlay_bytes"]["mean"].as_f64().unwrap_or(0.0) / 1024.0,
                        int(&c["overlay_bytes"]["max"]) as f64 / 1024.0
                    ),
                },
            ),
            Tile::new(
                "turns following the recording",
                format!(
                    "{:.1} (mean)",
                    c["actions_followed_mean"].as_f64().unwrap_or(0.0)
                ),
            ),
        ],
    });
    let growth: Vec<&Value> = c["context_growth"].as_array()?.iter().collect();
    if !growth.is_empty() {
        let points = |key: &str| -> Vec<(f64, f64)> {
            growth
                .iter()
                .map(|g| {
                    (
                        int(&g["index"]) as f64,
                        g[key].as_f64().unwrap_or(0.0) / 1024.0,
                    )
                })
                .collect()
        };
        let plot = Plot::new(
            Axis::linear("request in the session"),
            Axis::linear("mean request size, KiB"),
        )
        .layer(Layer::new(
            "closed loop",
            color(0),
            Shape::Line(points("closed_bytes")),
        ))
        .layer(Layer::new(
            "recording",
            color(1),
            Shape::Dashed(points("recorded_bytes")),
        ));
        s.figures(vec![figure(
            "closed-context-growth",
            "Context growth against the recording",
            "The mean request body at each place of a session, closed-loop and recorded (the \
             sessions that have both at that place).",
            &plot,
        )]);
    }
    let ends: Vec<String> = c["ends"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k} {}", int(v)))
        .collect();
    let empty = match int(&c["workspaces"]["empty"]) {
        0 => String::new(),
        n => format!(
            " {n} session(s) of a task with no workspace granted worked in an empty workspace."
        ),
    };
    s.note(format!(
        "Sessions ended: {}.{empty} Per turn: `closed` in turns.jsonl; per session and run: \
         performance/closed_loop.json.",
        ends.join(", ")
    ));
    let mut table = Table::new(
        "Sessions",
        &[
            "session",
            "workspace",
            "turns",
            "end",
            "calls (executed / stubbed / error)",
            "tool output bytes",
            "fuel (M)",
            "sandbox ms",
            "followed recording",
            "last request bytes",
            "overlay KiB",
        ],
    );
    for x in sessions.iter().take(200) {
        let mut by = [0u64; 3];
        for statuses in x["calls"].as_object().into_iter().flatten().map(|(_, v)| v) {
            for (i, k) in ["executed", "stubbed", "error"].iter().enumerate() {
                by[i] += int(&statuses[*k]);
            }
        }
        table.rows.push(vec![
            Cell::text(x["session_id"].as_str().unwrap_or("?")),
            Cell::text(x["workspace"].as_str().unwrap_or("")),
            Cell::num(int(&x["turns"]).to_string()),
            Cell::text(x["end"].as_str().unwrap_or("stopped")),
            Cell::num(format!("{} / {} / {}", by[0], by[1], by[2])),
            Cell::num(int(&x["output_bytes"]).to_string()),
            Cell::num(format!("{:.1}", int(&x["fuel"]) as f64 / 1e6)),
            Cell::num(format!("{:.1}", x["sandbox_ms"].as_f64().unwrap_or(0.0))),
            Cell::num(int(&x["actions_followed"]).to_string()),
            Cell::num(int(&x["last_request_bytes"]).to_string()),
            Cell::num(match x["overlay_bytes"].as_u64() {
                Some(b) => format!("{:.1}", b as f64 / 1024.0),
                None => "-".to_owned(),
            }),
        ]);
    }
    s.push(Block::Table(table));
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_loop_run_has_the_section_and_another_has_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("performance")).unwrap();
        std::fs::write(
            dir.path().join("performance/result_summary.json"),
            r#"{"agentload": {}}"#,
        )
        .unwrap();
        assert!(section(&RunDir::read(dir.path()).unwrap()).is_none());
        let summary = serde_json::json!({
            "history": "closed", "official": false, "turns": 5,
            "calls": {"executed": 3, "stubbed": 1}, "classes": {"search": 2},
            "output_bytes": 900, "fuel": 12_000_000, "sandbox_ms": 4.5,
            "ends": {"no_tool_call": 1, "turn_cap": 1},
            "workspaces": {"empty": 1, "tools.workspaces.fix": 1},
            "overlay_bytes": {"sessions": 2, "mean": 1536.0, "max": 2048, "total": 3072},
            "actions_followed": {"0": 1, "2": 1}, "actions_followed_mean": 1.0,
            "context_growth": [
                {"index": 1, "sessions": 2, "closed_bytes": 400.0, "recorded_bytes": 400.0, "ratio": 1.0},
                {"index": 2, "sessions": 2, "closed_bytes": 900.0, "recorded_bytes": 700.0, "ratio": 1.29}
            ],
            "sessions": [{"session_id": "fix-1", "turns": 3, "end": "no_tool_call",
                "workspace": "tools.workspaces.fix", "overlay_bytes": 2048,
                "calls": {"bash": {"executed": 3, "stubbed": 1}}, "output_bytes": 900,
                "fuel": 12_000_000, "sandbox_ms": 4.5, "actions_followed": 2,
                "first_request_bytes": 400, "last_request_bytes": 1200}]
        });
        std::fs::write(
            dir.path().join("performance/closed_loop.json"),
            summary.to_string(),
        )
        .unwrap();
        let text = format!("{:?}", section(&RunDir::read(dir.path()).unwrap()).unwrap());
        assert!(text.contains("NON-OFFICIAL"), "{text}");
        assert!(text.contains("3 / 1 / 0"), "{text}");
        assert!(text.contains("no_tool_call 1, turn_cap 1"), "{text}");
        assert!(text.contains("closed-context-growth"), "{text}");
        assert!(text.contains("fix-1") && text.contains("12.0"), "{text}");
        assert!(text.contains("1.5 / 2.0 KiB"), "{text}");
        assert!(text.contains("tools.workspaces.fix"), "{text}");
        assert!(
            text.contains("1 session(s) of a task with no workspace granted worked in an empty"),
            "{text}"
        );
    }
}
