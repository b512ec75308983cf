//! Several runs on one page: the runs side by side, overlaid curves, and
//! the delta table of every headline number.

use super::charts::{color, Axis, Layer, Plot, Shape};
use super::headline::{compare, headlines, number};
use super::page::{figure, Block, Cell, Section, Swatch, Table};
use super::read::{RunDir, Turn};
use super::run_page::cdf;
use agentload_results::metrics::lower_percentile;

/// The runs side by side.
pub fn runs_table(runs: &[RunDir], labels: &[String]) -> Section {
    let mut s = Section::new("runs", "Runs compared");
    s.push(Block::Legend {
        title: "Runs (colours of the charts below)".into(),
        items: labels
            .iter()
            .enumerate()
            .map(|(i, l)| Swatch::new(l, color(i)))
            .collect(),
    });
    let mut head = vec!["".to_owned()];
    head.extend(labels.iter().cloned());
    let mut t = Table {
        caption: String::new(),
        head,
        rows: Vec::new(),
        more: 0,
        folded: false,
    };
    let row = |name: &str, f: &dyn Fn(&RunDir) -> Cell| {
        let mut r = vec![Cell::text(name)];
        r.extend(runs.iter().map(f));
        r
    };
    t.rows.push(row("results", &|r| {
        Cell::text(r.path.display().to_string()).class("wrap")
    }));
    t.rows.push(row("config", &|r| Cell::text(r.name())));
    t.rows.push(row("endpoint", &|r| {
        Cell::text(r.manifest_str("endpoint").unwrap_or("-"))
    }));
    t.rows.push(row("model", &|r| {
        Cell::text(r.manifest_str("model").unwrap_or("-"))
    }));
    t.rows.push(row("started", &|r| {
        Cell::text(r.manifest_str("test_started_at").unwrap_or("-"))
    }));
    t.rows.push(row("history", &|r| {
        let live = r
            .summary
            .as_ref()
            .is_some_and(|s| s["agentload"].get("live").is_some());
        if live {
            Cell::verdict("live (not official)", false)
        } else {
            Cell::text("recorded")
        }
    }));
    t.rows.push(row("validity", &|r| match r.valid() {
        Some(v) => Cell::verdict(if v { "VALID" } else { "INVALID" }, v)
            .title(r.invalid_reasons().join("; ")),
        None => Cell::text("-"),
    }));
    t.rows.push(row("seal", &|r| match r
        .manifest
        .as_ref()
        .and_then(|m| m["seal"]["sealed"].as_bool())
    {
        Some(v) => Cell::verdict(if v { "SEALED" } else { "UNSEALED" }, v),
        None => Cell::text("-"),
    }));
    t.rows.push(row("plugins", &|r| {
        let list: Vec<String> = r
            .manifest
            .as_ref()
            .and_then(|m| m["plugins"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|p| {
                format!(
                    "{}@{} {}",
                    p["name"].as_str().unwrap_or("?"),
                    p["version"].as_str().unwrap_or("?"),
                    p["digest"]
                        .as_str()
                        .and_then(|d| d.get(7..19))
                        .unwrap_or("")
                )
            })
            .collect();
        Cell::text(list.join(", ")).class("wrap")
    }));
    s.push(Block::Table(t));
    s
}

/// A per-turn quantity, ns, given whether the run counts tokens locally
/// first ([`RunDir::local_counts_first`]).
type Metric = fn(&Turn, bool) -> Option<f64>;

/// Overlaid distributions of the runs that have turn logs, and overlaid
/// sweep curves of the runs that are sweeps.
pub fn overlays(runs: &[RunDir], labels: &[String]) -> Option<Section> {
    let mut s = Section::new("overlays", "Overlaid curves");
    let mut figs = Vec::new();
    let metrics: [(&str, &str, Metric); 3] = [
        ("ttft", "TTFT", |t, _| t.ttft_ns().map(|ns| ns as f64)),
        ("tpot", "TPOT", Turn::tpot_ns),
        ("latency", "Latency", |t, _| {
            t.latency_ns().map(|ns| ns as f64)
        }),
    ];
    for (id, name, pick) in metrics {
        let mut plot = Plot::new(
            Axis::log(format!("{name} (ms, log scale)")),
            Axis::linear("turns at or below (%)").range(0.0, 101.0),
        );
        for (i, r) in runs.iter().enumerate() {
            let local_first = r.local_counts_first();
            let values: Vec<f64> = r
                .turns
                .iter()
                .filter_map(|t| pick(t, local_first))
                .map(|ns| ns / 1e6)
                .collect();
            if !values.is_empty() {
                plot = plot.layer(Layer::new(&labels[i], color(i), line(i, cdf(values))));
            }
        }
        figs.push(figure(
            &format!("{id}-cdf-overlay"),
            &format!("{name}: CDF per run"),
            "Every completed turn of each run.",
            &plot,
        ));
    }
    let isl = by_turn_index(
        runs,
        labels,
        "mean ISL (tokens)",
        |t| Some(t.isl()? as f64),
        |v| v.iter().sum::<f64>() / v.len() as f64,
    );
    figs.push(figure(
        "isl-overlay",
        "Context growth per run",
        "Mean ISL over the conversations, by turn index (a live run against its recorded twin: the ISL drift).",
        &isl,
    ));
    let ttft_by_turn = by_turn_index(
        runs,
        labels,
        "median TTFT (ms)",
        |t| Some(t.ttft_ns()? as f64 / 1e6),
        |v| lower_percentile(v, 50.0),
    );
    figs.push(figure(
        "ttft-by-turn-overlay",
        "TTFT by turn index per run",
        "Median TTFT of each turn index over the conversations (the lower median): a recorded \
         and a live run of the same data overlaid show what carrying the model's own replies \
         does to prefix-cache reuse.",
        &ttft_by_turn,
    ));
    let sweeps: Vec<(usize, &super::read::Sweep)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((i, r.sweep.as_ref()?)))
        .collect();
    if !sweeps.is_empty() {
        let mut pareto = Plot::new(
            Axis::linear("total server throughput (tok/s)"),
            Axis::linear("P25 output speed per request (tok/s)"),
        )
        .size(1400, 440);
        let mut ttft = Plot::new(
            Axis::log("concurrent agents (log scale)"),
            Axis::log("TTFT p90 (ms, log scale)"),
        );
        let mut speed = Plot::new(
            Axis::log("concurrent agents (log scale)"),
            Axis::linear("P25 output speed (tok/s)"),
        );
        for (i, sw) in &sweeps {
            let (pts, frontier) = super::sweep::points(sw);
            pareto = pareto
                .layer(Layer::new(
                    &labels[*i],
                    color(*i),
                    Shape::Dots(pts.iter().map(|p| (p.0, p.1)).collect(), 5),
                ))
                .layer(Layer::unnamed(color(*i), line(*i, frontier)))
                .layer(Layer::unnamed(
                    color(*i),
                    Shape::Labels(
                        pts.iter()
                            .map(|p| (p.0, p.1, format!(" c{}", p.2)))
                            .collect(),
                    ),
                ));
            ttft = ttft.layer(Layer::new(
                &labels[*i],
                color(*i),
                line(
                    *i,
                    super::sweep::by_level(sw, |p| p["ttft_ms"]["p90"].as_f64()),
                ),
            ));
            speed = speed.layer(Layer::new(
                &labels[*i],
                color(*i),
                line(
                    *i,
                    super::sweep::by_level(sw, |p| p["output_speed_tps"]["p25"].as_f64()),
                ),
            ));
        }
        figs.push(figure(
            "pareto-overlay",
            "Throughput vs P25 output speed per run",
            "Each run's phases and its own frontier.",
            &pareto,
        ));
        figs.push(figure(
            "ttft-overlay",
            "TTFT p90 by concurrency per run",
            "",
            &ttft,
        ));
        figs.push(figure(
            "speed-overlay",
            "P25 output speed by concurrency per run",
            "",
            &speed,
        ));
    }
    s.figures(figs);
    (!s.blocks.is_empty()).then_some(s)
}

/// Every headline number of every run, with each run's delta against the
/// first (absolute and %); worse deltas in red.
pub fn deltas(runs: &[RunDir], labels: &[String]) -> Section {
    let mut s = Section::new("deltas", "Deltas");
    let rows = compare(&runs.iter().map(headlines).collect::<Vec<_>>());
    let mut head = vec!["metric".to_owned(), "unit".to_owned(), labels[0].clone()];
    for l in &labels[1..] {
        head.push(l.clone());
        head.push("Δ".to_owned());
        head.push("Δ %".to_owned());
    }
    let mut t = Table {
        caption: format!("Against {} (red: worse)", labels[0]),
        head,
        rows: Vec::new(),
        more: 0,
        folded: false,
    };
    for row in &rows {
        let v = |i: usize| row.values[i].map_or("-".into(), number);
        let mut cells = vec![
            Cell::text(&row.label),
            Cell::text(row.unit),
            Cell::num(v(0)),
        ];
        for i in 1..runs.len() {
            cells.push(Cell::num(v(i)));
            let class = if row.worse(i) { "bad" } else { "" };
            match row.delta(i) {
                Some((d, pct)) => {
                    cells.push(Cell::num(signed(d)).class(class));
                    cells.push(
                        Cell::num(pct.map_or("-".into(), |p| format!("{:+.1} %", p))).class(class),
                    );
                }
                None => {
                    cells.push(Cell::num("-"));
                    cells.push(Cell::num("-"));
                }
            }
        }
        t.rows.push(cells);
    }
    s.push(Block::Table(t));
    s
}

/// Run `i`'s curve: solid for the baseline and every other run, dashed
/// between (identical curves stay visible, and apart in black and white).
fn line(i: usize, points: Vec<(f64, f64)>) -> Shape {
    if i % 2 == 1 {
        Shape::Dashed(points)
    } else {
        Shape::Line(points)
    }
}

/// `+1,234` / `-0.5` / `0`.
pub fn signed(d: f64) -> String {
    if d == 0.0 {
        "0".into()
    } else if d > 0.0 {
        format!("+{}", number(d))
    } else {
        number(d)
    }
}

/// One line per run over the turn index in its conversations: `reduce` of
/// the `value`s of the turns at each index (given sorted).
fn by_turn_index(
    runs: &[RunDir],
    labels: &[String],
    y: &str,
    value: impl Fn(&Turn) -> Option<f64>,
    reduce: impl Fn(&[f64]) -> f64,
) -> Plot {
    let mut plot = Plot::new(
        Axis::linear("turn index in the conversation"),
        Axis::linear(y),
    );
    for (i, r) in runs.iter().enumerate() {
        let mut by_turn: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
        for t in &r.turns {
            if let Some(v) = value(t) {
                by_turn.entry(t.turn).or_default().push(v);
            }
        }
        let pts: Vec<(f64, f64)> = by_turn
            .into_iter()
            .map(|(k, mut v)| {
                v.sort_by(f64::total_cmp);
                (f64::from(k), reduce(&v))
            })
            .collect();
        if !pts.is_empty() {
            plot = plot.layer(Layer::new(&labels[i], color(i), line(i, pts)));
        }
    }
    plot
}
