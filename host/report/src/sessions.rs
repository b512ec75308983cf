//! The sessions section of a run: session goodput and SLO attainment,
//! interactivity by each definition, TTFT by turn index and by ISL bucket,
//! and where each session's time went (model, tool, queue).

use super::charts::{color, row, Axis, Layer, Plot, Shape};
use super::headline::number;
use super::page::{figure, Block, Cell, Section, Table, Tile};
use super::read::{RunDir, SessionTime};
use serde_json::Value;

/// Sessions drawn one bar each; more are summed into one bar.
const MAX_BARS: usize = 40;

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// The section; none when the run's summary has no session block.
pub fn section(run: &RunDir) -> Option<Section> {
    let summary = run.summary.as_ref()?;
    let sessions = summary["agentload"].get("sessions")?;
    let mut s = Section::new("sessions", "Sessions and interactivity");
    let n = |v: &Value| f(v).map_or("-".to_owned(), number);
    let mut tiles = vec![Tile::new("sessions", n(&sessions["sessions"]))];
    if let Some(pct) = f(&sessions["slo_attainment_pct"]) {
        tiles.push(Tile::new("session SLO attainment", format!("{pct:.1} %")).tone(pct >= 90.0));
        tiles.push(Tile::new(
            "session goodput",
            format!("{} / h", n(&sessions["session_goodput_per_hour"])),
        ));
    }
    for (label, key) in [("session wall p50", "p50"), ("session wall p90", "p90")] {
        if let Some(v) = f(&sessions["wall_s"][key]) {
            tiles.push(Tile::new(label, format!("{} s", number(v))));
        }
    }
    let i = &summary["agentload"]["interactivity"];
    for (label, key) in [
        ("MLPerf e2e interactivity", "mlperf_e2e_interactivity"),
        ("MLPerf tps_per_user", "mlperf_tps_per_user"),
        ("AgentX E2E-normalized P90", "agentx_e2e_normalized_p90"),
        ("AA output speed P25", "aa_output_speed_p25"),
    ] {
        if let Some(v) = f(&i[key]) {
            tiles.push(Tile::new(label, format!("{} tok/s", number(v))));
        }
    }
    s.push(Block::Tiles { items: tiles });
    let mut defs = Table::new(
        "Interactivity, three definitions (they disagree by construction; each is named)",
        &["definition", "formula", "value (tok/s)"],
    );
    for (name, formula, key) in [
        ("MLPerf Endpoints e2e_interactivity", "Σ output tokens / Σ (complete − issued) s, completed turns (tool time is outside every turn)", "mlperf_e2e_interactivity"),
        ("MLPerf Endpoints tps_per_user", "1000 / TPOT p90 (ms)", "mlperf_tps_per_user"),
        ("InferenceX AgentX E2E-normalized", "1 / P90(E2EL_i / OSL_i), numpy's default percentile", "agentx_e2e_normalized_p90"),
        ("AA-AgentPerf output speed", "P25 of tokens after the first / (last − first token) s", "aa_output_speed_p25"),
    ] {
        defs.rows.push(vec![Cell::text(name), Cell::text(formula), Cell::num(n(&i[key]))]);
    }
    s.push(Block::Table(defs));

    let series = |rows: &Value, key: &str| -> Vec<(f64, f64)> {
        rows.as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| Some((f(&r["from"])?, f(&r[key])?)))
            .collect()
    };
    let by_turn = Plot::new(
        Axis::linear("turn index in its session"),
        Axis::linear("TTFT (ms)"),
    )
    .size(960, 320)
    .layer(Layer::new(
        "p50",
        color(0),
        Shape::Line(series(&sessions["ttft_by_turn"], "p50_ms")),
    ))
    .layer(Layer::new(
        "p90",
        color(3),
        Shape::Line(series(&sessions["ttft_by_turn"], "p90_ms")),
    ));
    let isl_p50 = series(&sessions["ttft_by_isl"], "p50_ms");
    let isl_p90 = series(&sessions["ttft_by_isl"], "p90_ms");
    let by_isl = Plot::new(
        Axis::log("ISL bucket, from (tokens, log scale)"),
        Axis::linear("TTFT (ms)"),
    )
    .size(960, 320)
    .layer(Layer::new("p50", color(0), Shape::Line(isl_p50.clone())))
    .layer(Layer::unnamed(color(0), Shape::Dots(isl_p50, 4)))
    .layer(Layer::new("p90", color(3), Shape::Line(isl_p90.clone())))
    .layer(Layer::unnamed(color(3), Shape::Dots(isl_p90, 4)));
    s.figures(vec![
        figure(
            "ttft-by-turn",
            "TTFT by turn index",
            "Completed turns grouped by their index in the session (1: the cold first turn).",
            &by_turn,
        ),
        figure(
            "ttft-by-isl",
            "TTFT by input length",
            "Completed turns grouped by ISL, powers of two.",
            &by_isl,
        ),
        time_bars(&run.session_metrics),
    ]);
    s.note("Each session's numbers are in session_metrics.jsonl (wall, model, tool and queue time, cold and warm TTFT, tokens, KV hit %, its own e2e interactivity, the SLO verdict, the end reason).");
    Some(s)
}

/// One horizontal bar per row, model, tool and queue stacked (the run's
/// sessions, the sweep's levels).
pub(super) fn time_split(rows: &[(String, [f64; 3])], x: Axis, width: u32) -> Plot {
    let n = rows.len();
    let mut plot = Plot::new(x, Axis::linear("").range(0.0, n as f64))
        .size(width, (n as u32 * 24 + 110).max(200));
    plot.y_categories = rows.iter().map(|(name, _)| name.clone()).collect();
    for (k, name) in ["model", "tool", "queue"].iter().enumerate() {
        let bars: Vec<[f64; 4]> = rows
            .iter()
            .enumerate()
            .map(|(i, (_, r))| {
                let start: f64 = r[..k].iter().sum();
                [start, row(n, i) + 0.15, start + r[k], row(n, i) + 0.85]
            })
            .collect();
        plot = plot.layer(Layer::new(*name, color(k), Shape::Rects(bars)));
    }
    plot
}

/// Model, tool and queue seconds per session, stacked.
fn time_bars(metrics: &[SessionTime]) -> Option<super::page::Figure> {
    if metrics.is_empty() {
        return None;
    }
    let mut rows: Vec<(String, [f64; 3])> = metrics
        .iter()
        .map(|m| (m.session_id.clone(), [m.model_s, m.tool_s, m.queue_s]))
        .collect();
    if rows.len() > MAX_BARS {
        let mut all = [0.0; 3];
        for (_, r) in &rows {
            for k in 0..3 {
                all[k] += r[k];
            }
        }
        rows = vec![(format!("all {} sessions", rows.len()), all)];
    }
    let widest = rows
        .iter()
        .map(|(_, r)| r.iter().sum::<f64>())
        .fold(0.0, f64::max);
    let plot = time_split(
        &rows,
        Axis::linear("seconds").range(0.0, widest.max(1e-9) * 1.05),
        1400,
    );
    figure(
        "session-time",
        "Where each session's time went",
        "model: Σ (complete − issued); tool: Σ delays before a turn was due; queue: Σ (issued − due), the harness's lateness.",
        &plot,
    )
}
