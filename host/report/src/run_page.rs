//! The sections of one run: header, performance, accuracy.

use super::charts::{color, row, Axis, Layer, Mark, Plot, Shape, FAILED, MARK};
use super::headline::number;
use super::page::{figure, Block, Cell, Figure, Section, Swatch, Table, Tile};
use super::read::{self, RunDir, Status, Turn};
use serde_json::Value;
use std::collections::BTreeMap;

/// The CDF of `values` as (value, % at or below), from 0 % at the
/// smallest value, at most ~1,500 points.
pub fn cdf(mut values: Vec<f64>) -> Vec<(f64, f64)> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let step = n.div_ceil(1500).max(1);
    let mut out: Vec<(f64, f64)> = values
        .iter()
        .enumerate()
        .filter(|(i, _)| i % step == 0 || i + 1 == n)
        .map(|(i, &v)| (v, (i + 1) as f64 / n as f64 * 100.0))
        .collect();
    out.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    // The curve rises from 0 % at the smallest value (one value: a step).
    if let Some(&(v, _)) = out.first() {
        out.insert(0, (v, 0.0));
    }
    out
}

pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Conversations in order of first appearance, each with its colour index.
pub fn conversations(turns: &[Turn]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for t in turns {
        if !seen.contains(&t.session_id) {
            seen.push(t.session_id.clone());
        }
    }
    seen
}

fn by_conversation<'a>(turns: &'a [Turn], names: &[String]) -> Vec<Vec<&'a Turn>> {
    let index: BTreeMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut out = vec![Vec::new(); names.len()];
    for t in turns {
        out[index[t.session_id.as_str()]].push(t);
    }
    out
}

/// Dots drawn per scatter chart, at most (about).
const MAX_DOTS: usize = 5000;

/// The percentile labels drawn on CDFs (the grid's table has them all).
const LABELLED: [&str; 2] = ["50.0", "99.0"];

/// A latency CDF with the reference percentile grid marked as points (the
/// summary's own values), labelled at p50 and p99.
fn latency_cdf(values: Vec<f64>, series: &Value, unit_label: &str) -> Plot {
    let mut plot = Plot::new(
        Axis::log(format!("{unit_label} (ms, log scale)")),
        Axis::linear("turns at or below (%)").range(0.0, 101.0),
    )
    .layer(Layer::new("CDF", color(0), Shape::Line(cdf(values))));
    let mut grid = Vec::new();
    let mut labels = Vec::new();
    for (p, v) in series["percentiles"].as_object().into_iter().flatten() {
        let (Ok(pct), Some(v)) = (p.parse::<f64>(), v.as_f64()) else {
            continue;
        };
        grid.push((v / 1e6, pct));
        if LABELLED.contains(&p.as_str()) {
            labels.push((
                v / 1e6,
                pct,
                format!("p{} {}", pct_label(pct), ms_label(v / 1e6)),
            ));
        }
    }
    if !grid.is_empty() {
        plot = plot
            .layer(Layer::new(
                "percentile grid",
                color(1),
                Shape::Dots(grid, 4),
            ))
            .layer(Layer::unnamed(MARK, Shape::Labels(labels)));
    }
    plot
}

fn pct_label(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p}")
    }
}

/// `12.3 ms`, `1.52 s`, `850 µs`.
pub fn ms_label(v: f64) -> String {
    if v >= 1000.0 {
        format!("{} s", number(v / 1000.0))
    } else if v >= 1.0 {
        format!("{} ms", number(v))
    } else {
        format!("{} µs", number(v * 1000.0))
    }
}

/// The summary's percentile grid of every latency series, in ms.
fn grid_table(summary: &Value) -> Table {
    let grid: Vec<f64> = agentload_results::metrics::PERCENTILE_GRID
        .iter()
        .rev()
        .copied()
        .collect();
    let mut head = vec!["ms".to_owned()];
    head.extend(grid.iter().map(|p| format!("p{}", pct_label(*p))));
    head.extend(["max".to_owned(), "mean".to_owned()]);
    let mut t = Table {
        caption: "Percentile grid (the reference's, \"lower\" method; dots on the CDFs)".into(),
        head,
        rows: Vec::new(),
        more: 0,
        folded: false,
    };
    let series = [
        ("TTFT", &summary["ttft"]),
        ("TPOT", &summary["tpot"]),
        ("TPOT decode", &summary["agentload"]["tpot_decode"]),
        ("latency", &summary["latency"]),
    ];
    for (name, v) in series {
        if v.is_null() {
            continue;
        }
        let mut row = vec![Cell::text(name)];
        let cell = |x: Option<f64>| Cell::num(x.map_or("-".into(), |x| number(x / 1e6)));
        for p in &grid {
            let key = if p.fract() == 0.0 {
                format!("{p:.1}")
            } else {
                format!("{p}")
            };
            row.push(cell(v["percentiles"][&key].as_f64()));
        }
        row.push(cell(v["max"].as_f64()));
        row.push(cell(v["avg"].as_f64()));
        t.rows.push(row);
    }
    t
}

/// The summary's histogram (either shape) as bars, scaled by `scale`, on
/// a log axis, with p50 and p99 marked.
fn histogram(series: &Value, scale: f64, x_label: &str) -> Option<Plot> {
    let h = read::histogram(series)?;
    let rects: Vec<[f64; 4]> = h
        .buckets
        .iter()
        .zip(&h.counts)
        .filter(|(_, &c)| c > 0)
        .map(|(&(lo, hi), &c)| [lo * scale, 0.0, hi * scale, c as f64])
        .collect();
    let mut plot = Plot::new(Axis::log(x_label), Axis::linear("turns"))
        .layer(Layer::unnamed(color(0), Shape::Rects(rects)));
    for (p, l) in [("50.0", "p50"), ("99.0", "p99")] {
        if let Some(v) = series["percentiles"][p].as_f64() {
            plot = plot.mark(Mark::X(v * scale, l.to_owned()));
        }
    }
    Some(plot)
}

/// The header: what ran, against what, sealed or not, valid or not.
pub fn header(run: &RunDir) -> Section {
    let mut s = Section::new("run", "Run");
    let valid = run.valid();
    let reasons = run.invalid_reasons();
    let mut tiles = vec![match valid {
        Some(v) => Tile::new("validity", if v { "VALID" } else { "INVALID" }).tone(v),
        None => Tile::new("validity", "unknown"),
    }];
    let sealed = run
        .manifest
        .as_ref()
        .and_then(|m| m["seal"]["sealed"].as_bool());
    if let Some(sealed) = sealed {
        tiles.push(Tile::new("seal", if sealed { "SEALED" } else { "UNSEALED" }).tone(sealed));
    }
    if run.closed_loop.is_some() {
        // Valid as a measurement, never an official result.
        tiles.push(Tile::new("history", "CLOSED LOOP: NOT OFFICIAL").tone(false));
    }
    if let Some(gate) = run.accuracy.as_ref().and_then(|a| a.gate.as_ref()) {
        let passed = gate["passed"].as_bool();
        tiles.push(match passed {
            Some(p) => Tile::new("accuracy gate", if p { "PASS" } else { "FAIL" }).tone(p),
            None => Tile::new("accuracy gate", "unknown"),
        });
    }
    s.push(Block::Tiles { items: tiles });
    if !reasons.is_empty() {
        s.note(format!("Why: {}.", reasons.join("; ")));
    }
    let mut facts: Vec<(String, Cell)> = Vec::new();
    let mut fact = |k: &str, v: Option<String>| {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            facts.push((k.to_owned(), Cell::text(v)));
        }
    };
    let cfg = |p: &str| {
        run.config_at(p).map(|v| match v {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    };
    fact(
        "config",
        cfg("name").map(|n| format!("{n} (version {})", cfg("version").unwrap_or_default())),
    );
    fact("results", Some(run.path.display().to_string()));
    fact(
        "mode",
        run.manifest
            .as_ref()
            .and_then(|m| m["seal"]["mode"].as_str().map(str::to_owned)),
    );
    fact(
        "endpoint",
        run.manifest_str("endpoint")
            .map(str::to_owned)
            .or_else(|| cfg("endpoint.url")),
    );
    fact(
        "model",
        run.manifest_str("model")
            .map(str::to_owned)
            .or_else(|| cfg("model.name")),
    );
    fact(
        "started",
        run.manifest_str("test_started_at").map(str::to_owned),
    );
    fact(
        "agentload",
        run.manifest_str("agentload_version")
            .map(|v| format!("version {v}")),
    );
    let phases: Vec<String> = ["performance", "accuracy"]
        .iter()
        .filter_map(|p| {
            let w = cfg(&format!("{p}.workload"))?;
            let sc =
                cfg(&format!("{p}.scorer")).map_or(String::new(), |s| format!(", scored by {s}"));
            let ran = match *p {
                "performance" => run.summary.is_some() || run.sweep.is_some(),
                _ => run.accuracy.is_some() || !run.accuracy_turns.is_empty(),
            };
            let not_run = if ran { "" } else { " (not run)" };
            Some(format!("{p}: {w}{sc}{not_run}"))
        })
        .collect();
    fact("phases", Some(phases.join("; ")));
    if run.sweep.is_none() {
        fact("concurrency", cfg("load.concurrency").or(Some("1".into())));
    }
    fact(
        "turn timeout",
        cfg("load.turn_timeout_s").map(|t| format!("{t} s")),
    );
    s.push(Block::Facts { items: facts });
    if let Some(text) = &run.config_text {
        s.push(Block::Code {
            title: "The resolved config (config.toml)".into(),
            text: text.clone(),
        });
    }
    if let Some(m) = &run.manifest {
        let seals: Vec<&Value> = m["seal"]["plugins"]
            .as_array()
            .into_iter()
            .flatten()
            .collect();
        let mut t = Table::new("Plugins", &["kind", "name", "version", "digest", "seal"]);
        for p in m["plugins"].as_array().into_iter().flatten() {
            let digest = p["digest"].as_str().unwrap_or_default();
            let seal = seals.iter().find(|s| s["digest"].as_str() == Some(digest));
            let seal_cell = match seal.and_then(|s| s["status"].as_str()) {
                Some("sealed") => Cell::verdict("sealed (official.lock)", true),
                Some(other) => Cell::verdict(other, false).title(
                    seal.and_then(|s| s["reason"].as_str())
                        .unwrap_or_default()
                        .to_owned(),
                ),
                None => Cell::text("-"),
            };
            t.rows.push(vec![
                Cell::text(p["kind"].as_str().unwrap_or_default()),
                Cell::text(p["name"].as_str().unwrap_or_default()),
                Cell::text(p["version"].as_str().unwrap_or_default()),
                Cell::text(digest).class("mono"),
                seal_cell,
            ]);
        }
        if !t.rows.is_empty() {
            s.push(Block::Table(t));
        }
        let mut d = Table::new("Datasets", &["name", "file", "digest"]);
        for ds in m["datasets"].as_array().into_iter().flatten() {
            let digest = ds["digest"].as_str().unwrap_or_default();
            d.rows.push(vec![
                Cell::text(ds["name"].as_str().unwrap_or_default()),
                Cell::text(ds["path"].as_str().unwrap_or_default()).class("wrap"),
                Cell::text(format!("{}…", digest.get(..19).unwrap_or(digest)))
                    .class("mono")
                    .title(digest),
            ]);
        }
        d.folded = d.rows.len() > 4;
        if !d.rows.is_empty() {
            s.push(Block::Table(d));
        }
    }
    if let Some(gate) = run.accuracy.as_ref().and_then(|a| a.gate.as_ref()) {
        s.push(Block::Table(gate_table(gate)));
    }
    s
}

/// The gate: each metric against its threshold (golden × factor).
fn gate_table(gate: &Value) -> Table {
    let factor = gate["factor"].as_f64().unwrap_or(1.0);
    let mut t = Table::new(
        "Accuracy gate",
        &["metric", "value", "threshold", "golden × factor", "verdict"],
    );
    for (name, m) in gate["metrics"].as_object().into_iter().flatten() {
        let f = |k: &str| m[k].as_f64().map_or("-".into(), |v| format!("{v:.2}"));
        let ok = m["passed"].as_bool() == Some(true);
        t.rows.push(vec![
            Cell::text(name.as_str()),
            Cell::num(f("value")),
            Cell::num(f("threshold")),
            Cell::num(format!("{} × {factor}", f("golden"))),
            Cell::verdict(if ok { "PASS" } else { "FAIL" }, ok),
        ]);
    }
    t
}

/// The performance section; none without performance results.
pub fn performance(run: &RunDir) -> Option<Section> {
    let summary = run.summary.as_ref()?;
    let mut s = Section::new("performance", "Performance");
    let turns = &run.turns;
    let p = |series: &Value, k: &str| series["percentiles"][k].as_f64().map(|v| ms_label(v / 1e6));
    let mut tiles = vec![Tile::new(
        "turns completed",
        format!(
            "{} / {}",
            number(crate::read::succeeded(summary).unwrap_or(0.0)),
            number(summary["n_samples_issued"].as_f64().unwrap_or(0.0))
        ),
    )];
    let failed = summary["n_samples_failed"].as_u64().unwrap_or(0);
    let aborted = summary["agentload"]["n_samples_aborted"]
        .as_u64()
        .unwrap_or(0);
    tiles.push(
        Tile::new("failed / aborted", format!("{failed} / {aborted}")).tone(failed + aborted == 0),
    );
    tiles.push(Tile::new(
        "duration",
        format!(
            "{} s",
            number(summary["duration_ns"].as_f64().unwrap_or(0.0) / 1e9)
        ),
    ));
    tiles.push(Tile::new(
        "turns/s",
        number(summary["qps"].as_f64().unwrap_or(0.0)),
    ));
    tiles.push(Tile::new(
        "output tok/s",
        number(summary["tps"].as_f64().unwrap_or(0.0)),
    ));
    for (name, key) in [("TTFT", "ttft"), ("TPOT", "tpot"), ("latency", "latency")] {
        for (pk, pl) in [("50.0", "p50"), ("99.0", "p99")] {
            if let Some(v) = p(&summary[key], pk) {
                tiles.push(Tile::new(format!("{name} {pl}"), v));
            }
        }
    }
    if let Some(score) = run.scores.as_ref().and_then(|x| x["score"].as_f64()) {
        tiles.push(Tile::new("inline score", format!("{score:.4}")));
    }
    s.push(Block::Tiles { items: tiles });
    s.note(format!(
        "{} turns in turns.jsonl; token counts from {}. Percentiles are the reference's \"lower\" method on its grid (p1 … p99.9).",
        turns.len(),
        summary["agentload"]["token_count_source"].as_str().unwrap_or("?")
    ));

    let ttft: Vec<f64> = turns.iter().filter_map(Turn::ttft_ns).map(ms).collect();
    let tpot: Vec<f64> = run.tpot_ns().into_iter().map(|ns| ns / 1e6).collect();
    let latency: Vec<f64> = turns.iter().filter_map(Turn::latency_ns).map(ms).collect();
    let mut figs: Vec<Option<Figure>> = Vec::new();
    for (id, name, key, values) in [
        ("ttft", "TTFT", "ttft", ttft),
        ("tpot", "TPOT", "tpot", tpot),
        ("latency", "Latency", "latency", latency),
    ] {
        let series = &summary[key];
        figs.push(figure(
            &format!("{id}-cdf"),
            &format!("{name}: cumulative distribution"),
            "Every completed turn; dots: the summary's percentile grid.",
            &latency_cdf(values, series, name),
        ));
        if let Some(h) = histogram(series, 1e-6, &format!("{name} (ms, log scale)")) {
            figs.push(figure(
                &format!("{id}-hist"),
                &format!("{name}: histogram"),
                "The summary's 30 log-spaced buckets; dashed: p50 and p99.",
                &h,
            ));
        }
    }
    s.figures(figs);
    s.push(Block::Table(grid_table(summary)));

    let names = conversations(turns);
    if !turns.is_empty() {
        s.push(Block::Legend {
            title: "Conversations (colours of the charts below)".into(),
            items: names
                .iter()
                .enumerate()
                .map(|(i, n)| Swatch::new(n, color(i)))
                .collect(),
        });
    }
    let groups = by_conversation(turns, &names);
    // Long runs: every k-th completed turn is drawn as a dot (failures
    // always), so the page stays a few MB at most.
    let stride = turns.len().div_ceil(MAX_DOTS).max(1);
    let thinned = if stride > 1 {
        format!(" 1 turn in {stride} drawn ({} turns).", turns.len())
    } else {
        String::new()
    };
    let keep =
        |pts: Vec<(f64, f64)>| -> Vec<(f64, f64)> { pts.into_iter().step_by(stride).collect() };
    let mut figs = Vec::new();
    // ISL vs TTFT.
    let mut scatter = Plot::new(
        Axis::linear("ISL (tokens)"),
        Axis::log("TTFT (ms, log scale)"),
    );
    for (i, g) in groups.iter().enumerate() {
        let pts: Vec<(f64, f64)> = g
            .iter()
            .filter_map(|t| Some((t.isl()? as f64, ms(t.ttft_ns()?))))
            .collect();
        scatter = scatter.layer(Layer::unnamed(color(i), Shape::Dots(keep(pts), 3)));
    }
    figs.push(figure(
        "isl-ttft",
        "ISL vs TTFT",
        &format!("One dot per completed turn, coloured by conversation.{thinned}"),
        &scatter,
    ));
    // Time line.
    let mut timeline = Plot::new(
        Axis::linear("time since the phase started (s)"),
        Axis::log("latency (ms, log scale)"),
    )
    .size(1400, 380);
    for (i, g) in groups.iter().enumerate() {
        let pts: Vec<(f64, f64)> = g
            .iter()
            .filter_map(|t| Some((t.issued_ns? as f64 / 1e9, ms(t.latency_ns()?))))
            .collect();
        timeline = timeline.layer(Layer::unnamed(color(i), Shape::Dots(keep(pts), 3)));
    }
    let floor = turns
        .iter()
        .filter_map(Turn::latency_ns)
        .min()
        .map_or(1.0, ms);
    let failed_pts: Vec<(f64, f64)> = turns
        .iter()
        .filter(|t| t.status == Status::Failed)
        .filter_map(|t| {
            let at = t.issued_ns?;
            let y = t
                .complete_ns
                .map_or(floor, |c| ms(c.saturating_sub(at)).max(floor));
            Some((at as f64 / 1e9, y))
        })
        .collect();
    let aborted_pts = aborted_positions(turns, floor);
    let (n_failed, n_aborted) = (failed_pts.len(), aborted_pts.len());
    if n_failed > 0 {
        timeline = timeline.layer(Layer::new(
            format!("failed ({n_failed})"),
            FAILED,
            Shape::Crosses(failed_pts),
        ));
    }
    if n_aborted > 0 {
        timeline = timeline.layer(Layer::new(
            format!("aborted, not sent ({n_aborted})"),
            super::charts::rgb(230, 120, 0),
            Shape::Crosses(aborted_pts),
        ));
    }
    figs.push(figure(
        "timeline",
        "Every turn on the run's time line",
        &format!("x: when the turn was issued; y: its latency; coloured by conversation. Failed turns: red crosses at their issue time; aborted turns (never sent): orange crosses where their conversation failed, on the floor of the chart.{thinned}"),
        &timeline,
    ));
    // Context growth.
    let mut growth = Plot::new(
        Axis::linear("turn index in the conversation"),
        Axis::linear("ISL (tokens)"),
    );
    for (i, g) in groups.iter().enumerate() {
        let pts: Vec<(f64, f64)> = g
            .iter()
            .filter_map(|t| Some((f64::from(t.turn), t.isl()? as f64)))
            .collect();
        growth = growth.layer(Layer::unnamed(color(i), Shape::Line(pts)));
    }
    figs.push(figure(
        "context-growth",
        "Context growth",
        "Prompt tokens (ISL) by turn index, one line per conversation.",
        &growth,
    ));
    for (id, name, key) in [
        ("isl-hist", "ISL", "input_sequence_lengths"),
        ("osl-hist", "OSL", "output_sequence_lengths"),
    ] {
        if let Some(h) = histogram(&summary[key], 1.0, &format!("{name} (tokens, log scale)")) {
            figs.push(figure(
                id,
                &format!("{name} distribution"),
                "The summary's histogram; dashed: p50 and p99.",
                &h,
            ));
        }
    }
    // Send lag.
    let lag: Vec<f64> = turns.iter().filter_map(Turn::send_lag_ns).map(ms).collect();
    if lag.is_empty() {
        s.figures(figs);
        s.note("Send lag: the turn records carry no due time (scheduled_ns), so the lag between when a turn was due and when it was sent is not shown.");
    } else {
        let pts = cdf(lag.iter().map(|v| v.max(1e-3)).collect());
        figs.push(figure(
            "send-lag",
            "Send lag (issued − due)",
            "How late the harness sent each turn after it was due (coordinated omission); values under 1 µs drawn at 1 µs.",
            &Plot::new(Axis::log("send lag (ms, log scale)"), Axis::linear("turns at or below (%)").range(0.0, 101.0))
                .layer(Layer::new("CDF", color(0), Shape::Line(pts))),
        ));
        s.figures(figs);
    }
    let failed: Vec<&Turn> = turns
        .iter()
        .filter(|t| t.status == Status::Failed)
        .collect();
    let aborted = |session: &str| {
        turns
            .iter()
            .filter(|t| t.status == Status::Aborted && t.session_id == session)
            .count()
    };
    if !failed.is_empty() {
        let mut t = Table::new(
            "Failed turns (each aborts the rest of its conversation)",
            &[
                "conversation",
                "turn",
                "issued (s)",
                "turns aborted after it",
                "error",
            ],
        );
        for f in failed.iter().take(50) {
            t.rows.push(vec![
                Cell::text(&f.session_id),
                Cell::num(f.turn.to_string()),
                Cell::num(
                    f.issued_ns
                        .map_or("-".into(), |n| format!("{:.3}", n as f64 / 1e9)),
                ),
                Cell::num(aborted(&f.session_id).to_string()),
                Cell::text(f.error.clone().unwrap_or_default()).class("wrap"),
            ]);
        }
        t.more = failed.len().saturating_sub(50);
        s.push(Block::Table(t));
    }
    let n_aborted = turns.iter().filter(|t| t.status == Status::Aborted).count();
    if n_aborted > 0 {
        s.note(format!(
            "{n_aborted} turns were aborted (never sent) after an earlier turn of their conversation failed; they count as missing."
        ));
    }
    Some(s)
}

/// Aborted turns have no time: each is drawn where its conversation's
/// last sent turn ended, on the chart's floor.
fn aborted_positions(turns: &[Turn], floor: f64) -> Vec<(f64, f64)> {
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for t in turns {
        if let Some(c) = t.complete_ns.or(t.issued_ns) {
            last.insert(&t.session_id, c);
        }
        if t.status == Status::Aborted {
            if let Some(&at) = last.get(t.session_id.as_str()) {
                out.push((at as f64 / 1e9, floor));
            }
        }
    }
    out
}

/// Score bins of the per-turn heat map.
const BINS: [(f64, &str, (u8, u8, u8)); 5] = [
    (0.0, "0", (214, 39, 40)),
    (0.5, "(0, 0.5)", (255, 152, 80)),
    (0.999_9, "[0.5, 1)", (188, 209, 90)),
    (1.0, "1", (44, 160, 44)),
    (f64::INFINITY, "missing", (170, 170, 170)),
];

/// The accuracy section; none without any score.
pub fn accuracy(run: &RunDir) -> Option<Section> {
    let mut s = Section::new("accuracy", "Accuracy");
    let mut any = false;
    if let Some(scores) = &run.scores {
        any = true;
        inline_scores(&mut s, scores);
    }
    if let Some(a) = &run.accuracy {
        if let Some(b) = a.bfcl() {
            any = true;
            bfcl(&mut s, b, a.gate.as_ref(), &a.file);
        }
        if let Some(m) = a.multi_turn() {
            any = true;
            multi_turn(&mut s, m, &a.file);
        }
    }
    any.then_some(s)
}

fn inline_scores(s: &mut Section, scores: &Value) {
    let rows: Vec<&Value> = scores["per_turn"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    s.note(format!(
        "Inline replay score (scores.json): {} over {} scored turns.",
        scores["score"]
            .as_f64()
            .map_or("-".into(), |v| format!("{v:.4}")),
        rows.len()
    ));
    let mut convs: Vec<String> = Vec::new();
    for r in &rows {
        let c = r["conversation_id"].as_str().unwrap_or("?").to_owned();
        if !convs.contains(&c) {
            convs.push(c);
        }
    }
    let mut bins: Vec<Vec<[f64; 4]>> = vec![Vec::new(); BINS.len()];
    let mut sums = vec![(0.0, 0usize); convs.len()];
    // Cells as wide as the closest turns of a conversation (the replay
    // scores every other dataset turn).
    let mut turns_of: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in &rows {
        turns_of
            .entry(r["conversation_id"].as_str().unwrap_or("?"))
            .or_default()
            .push(r["turn"].as_f64().unwrap_or(0.0));
    }
    let width = turns_of
        .values_mut()
        .filter_map(|t| {
            t.sort_by(f64::total_cmp);
            t.windows(2)
                .map(|w| w[1] - w[0])
                .filter(|d| *d > 0.0)
                .reduce(f64::min)
        })
        .reduce(f64::min)
        .unwrap_or(1.0);
    let n = convs.len();
    for r in &rows {
        let c = convs
            .iter()
            .position(|x| Some(x.as_str()) == r["conversation_id"].as_str())
            .unwrap_or(0);
        let turn = r["turn"].as_f64().unwrap_or(0.0);
        let score = r["score"].as_f64().unwrap_or(0.0);
        let missing = r["missing"].as_bool() == Some(true);
        let bin = if missing {
            BINS.len() - 1
        } else {
            BINS.iter().position(|b| score <= b.0).unwrap_or(3)
        };
        let y = row(n, c);
        bins[bin].push([turn - width / 2.0, y + 0.08, turn + width / 2.0, y + 0.92]);
        sums[c].0 += score;
        sums[c].1 += 1;
    }
    let height = (convs.len() as u32 * 22 + 90).max(220);
    let mut heat = Plot::new(
        Axis::linear("turn index in the conversation"),
        Axis::linear("").range(0.0, convs.len() as f64),
    )
    .size(1400, height);
    heat.y_categories = convs.clone();
    for (b, rects) in BINS.iter().zip(bins) {
        let (r, g, bl) = b.2;
        if !rects.is_empty() {
            heat = heat.layer(Layer::new(
                format!("score {}", b.1),
                super::charts::rgb(r, g, bl),
                Shape::Rects(rects),
            ));
        }
    }
    let mut per_conv = Plot::new(
        Axis::linear("mean score").range(0.0, 1.05),
        Axis::linear("").range(0.0, convs.len() as f64),
    )
    .size(1400, height);
    per_conv.y_categories = convs.clone();
    let bars: Vec<[f64; 4]> = sums
        .iter()
        .enumerate()
        .filter(|(_, (_, n))| *n > 0)
        .map(|(i, (sum, k))| [0.0, row(n, i) + 0.15, sum / *k as f64, row(n, i) + 0.85])
        .collect();
    let labels = bar_labels(&bars, 1.05, 3);
    per_conv = per_conv.layer(Layer::unnamed(color(0), Shape::Rects(bars)));
    for l in labels {
        per_conv = per_conv.layer(l);
    }
    if let Some(mean) = scores["score"].as_f64() {
        per_conv = per_conv.mark(Mark::X(mean, format!("overall {mean:.4}")));
    }
    s.figures(vec![
        figure(
            "score-per-turn",
            "Inline score per turn",
            "One cell per scored turn, by conversation (rows) and turn (columns).",
            &heat,
        ),
        figure(
            "score-per-conversation",
            "Inline score per conversation",
            "Mean over the conversation's scored turns; dashed: the run's score.",
            &per_conv,
        ),
    ]);
}

/// Each horizontal bar's value: inside its end in white, or after it in
/// black when the bar is too short to hold it.
fn bar_labels(bars: &[[f64; 4]], axis_max: f64, decimals: usize) -> Vec<Layer> {
    let (mut inside, mut after) = (Vec::new(), Vec::new());
    for b in bars {
        let text = format!("{:.*}", decimals, b[2]);
        let mid = (b[1] + b[3]) / 2.0;
        if b[2] > axis_max * 0.12 {
            inside.push((b[2], mid, text));
        } else {
            after.push((b[2], mid - 0.25, format!(" {text}")));
        }
    }
    vec![
        Layer::unnamed(super::charts::rgb(255, 255, 255), Shape::EndLabels(inside)),
        Layer::unnamed(super::charts::rgb(30, 30, 30), Shape::Labels(after)),
    ]
}

fn bars_against(names: &[String], values: &[f64], gate: Option<&Value>, x_label: &str) -> Plot {
    let height = (names.len() as u32 * 22 + 90).max(200);
    let mut p = Plot::new(
        Axis::linear(x_label).range(0.0, 105.0),
        Axis::linear("").range(0.0, names.len() as f64),
    )
    .size(1400, height);
    p.y_categories = names.to_vec();
    let n = names.len();
    let bars: Vec<[f64; 4]> = values
        .iter()
        .enumerate()
        .map(|(i, v)| [0.0, row(n, i) + 0.15, *v, row(n, i) + 0.85])
        .collect();
    let labels = bar_labels(&bars, 105.0, 2);
    p = p.layer(Layer::unnamed(color(0), Shape::Rects(bars)));
    for l in labels {
        p = p.layer(l);
    }
    for (metric, m) in gate
        .and_then(|g| g["metrics"].as_object())
        .into_iter()
        .flatten()
    {
        if let Some(t) = m["threshold"].as_f64() {
            let short = metric.trim_start_matches("bfcl_").replace("_accuracy", "");
            p = p.mark(Mark::X(t, format!("{short} gate {t:.2}")));
        }
    }
    p
}

fn bfcl(s: &mut Section, entry: &Value, gate: Option<&Value>, file: &str) {
    let br = &entry["breakdown"];
    let mut top_names = Vec::new();
    let mut top_values = Vec::new();
    for (k, label) in [
        ("overall_accuracy", "overall"),
        ("normalized_single_turn_score", "normalized"),
    ] {
        if let Some(v) = br[k].as_f64() {
            top_names.push(label.to_owned());
            top_values.push(v);
        }
    }
    for (name, v) in br["category_scores"].as_object().into_iter().flatten() {
        if let Some(v) = v.as_f64() {
            top_names.push(format!("category {name}"));
            top_values.push(v);
        }
    }
    let (subset_names, subset_values): (Vec<String>, Vec<f64>) = br["subset_scores"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
        .unzip();
    s.note(format!(
        "BFCL v4 single-turn ({file}): {} samples issued, {} scored. Dashed lines: the gate's two thresholds (they apply to overall and normalized).",
        br["issued_samples"].as_u64().or(entry["unit_samples"].as_u64()).unwrap_or(0),
        br["total_samples"].as_u64().unwrap_or(0),
    ));
    s.figures(vec![
        figure(
            "bfcl-categories",
            "BFCL: overall, normalized and by category",
            "Accuracy in %.",
            &bars_against(&top_names, &top_values, gate, "accuracy (%)"),
        ),
        figure(
            "bfcl-subsets",
            "BFCL: by subset",
            "Accuracy in % per subset.",
            &bars_against(&subset_names, &subset_values, gate, "accuracy (%)"),
        ),
    ]);
}

fn multi_turn(s: &mut Section, entry: &Value, file: &str) {
    let br = &entry["breakdown"];
    let mut names = Vec::new();
    let mut values = Vec::new();
    let mut t = Table::new(
        "BFCL multi-turn by category",
        &["category", "accuracy (%)", "correct", "total"],
    );
    for (name, v) in br["category_scores"].as_object().into_iter().flatten() {
        if let Some(a) = v["accuracy"].as_f64() {
            names.push(name.clone());
            values.push(a);
            t.rows.push(vec![
                Cell::text(name.as_str()),
                Cell::num(format!("{a:.2}")),
                Cell::num(v["correct_count"].to_string()),
                Cell::num(v["total_count"].to_string()),
            ]);
        }
    }
    s.note(format!(
        "BFCL v4 multi-turn ({file}, not gated): accuracy {} % (mean of the categories).",
        br["multi_turn_accuracy"]
            .as_f64()
            .map_or("-".into(), |v| format!("{v:.2}"))
    ));
    s.figures(vec![figure(
        "multi-turn",
        "BFCL multi-turn by category",
        "Accuracy in %.",
        &bars_against(&names, &values, None, "accuracy (%)"),
    )]);
    s.push(Block::Table(t));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_is_monotone_and_ends_at_100() {
        let c = cdf((0..5000).rev().map(f64::from).collect());
        assert!(c.len() <= 1502);
        assert!(c.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        assert_eq!(c.last().unwrap(), &(4999.0, 100.0));
        assert_eq!(c[..2], [(0.0, 0.0), (0.0, 100.0 / 5000.0)]);
        assert_eq!(cdf(vec![7.0]), [(7.0, 0.0), (7.0, 100.0)]);
        assert!(cdf(vec![f64::NAN]).is_empty());
    }

    #[test]
    fn labels_pick_units() {
        assert_eq!(ms_label(0.25), "250 µs");
        assert_eq!(ms_label(12.5), "12.50 ms");
        assert_eq!(ms_label(1520.0), "1.52 s");
    }
}
