//! The AA (agentperf-local) section: Artificial Analysis's own headline of the
//! run, from `aa/summary.json` (written from the same records as the rest of
//! the page, with AA's definitions).

use super::headline::number;
use super::page::{Block, Cell, Section, Tile};
use super::read::RunDir;
use super::run_page::ms_label;
use serde_json::Value;

fn tps(v: &Value) -> String {
    v.as_f64()
        .map_or_else(|| "n/a".into(), |x| format!("{} tok/s", number(x)))
}

fn ms(v: &Value) -> String {
    v.as_f64().map_or_else(|| "n/a".into(), ms_label)
}

/// The section; none without `aa/summary.json`.
pub fn section(run: &RunDir) -> Option<Section> {
    let s = run.aa_summary.as_ref()?;
    let mut section = Section::new("aa", "AA-AgentPerf (agentperf-local)");
    let totals = &s["totals"];
    let failed = totals["failed_turns"].as_u64().unwrap_or(0);
    let d = &s["latency_distributions_ms"];
    let mut tiles = vec![
        Tile::new("output tok/s (decode)", tps(&s["output_tokens_per_second"])),
        Tile::new(
            "end-to-end tok/s",
            tps(&s["end_to_end_output_tokens_per_second"]),
        ),
        Tile::new("TTFT p50", ms(&d["time_to_first_token"]["p50"])),
        Tile::new("TTFT p95", ms(&d["time_to_first_token"]["p95"])),
        Tile::new("e2e p50", ms(&d["e2e"]["p50"])),
        Tile::new("e2e p95", ms(&d["e2e"]["p95"])),
        Tile::new(
            "turns ok / failed",
            format!(
                "{} / {failed}",
                totals["successful_turns"].as_u64().unwrap_or(0)
            ),
        )
        .tone(failed == 0),
    ];
    let reduced = s["config"]["context"]["reduced"].as_bool();
    if let Some(reduced) = reduced {
        tiles.push(Tile::new("context", if reduced { "reduced" } else { "full" }).tone(!reduced));
    }
    section.push(Block::Tiles { items: tiles });
    let c = &s["config"];
    let text = |v: &Value| v.as_str().map_or_else(|| "-".to_owned(), str::to_owned);
    section.push(Block::Facts {
        items: vec![
            (
                "output policy".into(),
                Cell::text(text(&c["output_tokens"]["policy"])),
            ),
            (
                "tool mode".into(),
                Cell::text(text(&c["tool_replay"]["mode"])),
            ),
            (
                "cache isolation".into(),
                Cell::text(text(&c["cache_isolation"]["mode"])),
            ),
            (
                "context observed".into(),
                Cell::num(
                    c["context"]["observed_tokens"]
                        .as_u64()
                        .map_or_else(|| text(&c["context"]["observed_reason"]), |n| n.to_string()),
                ),
            ),
            (
                "normalized e2e p50 / p95".into(),
                Cell::num(format!(
                    "{} / {}",
                    ms(&d["normalized_e2e"]["p50"]),
                    ms(&d["normalized_e2e"]["p95"])
                )),
            ),
            (
                "run id".into(),
                Cell::text(text(&s["run_id"])).class("mono"),
            ),
        ],
    });
    section.note(
        "AA's definitions over the same records: TTFT at the first visible-output event, decode \
         rate Σ(n−1)/Σ(first→last visible event) over successful turns without tool calls, \
         end-to-end Σn/Σe2e, p50/p95 interpolated linearly over successful turns. The files \
         are in aa/ (turns.jsonl, tasks.json, tools.json, failures.json, summary.json).",
    );
    Some(section)
}
