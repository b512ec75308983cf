//! The sections of a sweep (levels of concurrency, or of arrival rate): the
//! Pareto frontier with the SLO tiers, TTFT and output speed by level,
//! cached-token share, phase windows, the phase table (a rate level's
//! delivered rate beside its configured one).

use super::charts::{color, rgb, Axis, Layer, Mark, Plot, Shape};
use super::headline::number;
use super::page::{figure, Block, Cell, Section, Table, Tile};
use super::read::{RunDir, Sweep, Turn};
use serde_json::Value;

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// A phase's level on a chart's axis: its arrival rate (a rate sweep), else its agents.
pub fn level_of(p: &Value) -> Option<f64> {
    p["rate"].as_f64().or_else(|| p["level"].as_f64())
}

/// A phase's label: `c16` (agents) or `r2.5` (arrivals per second).
pub fn label(p: &Value) -> String {
    match p["rate"].as_f64() {
        Some(r) => format!("r{r}"),
        None => format!("c{}", p["level"].as_u64().unwrap_or(0)),
    }
}

/// Whether `sw` sweeps arrival rates.
fn rates(sw: &Sweep) -> bool {
    sw.phases().iter().any(|p| p["rate"].is_number())
}

/// (level, value) for every phase that has the value.
pub fn by_level(sw: &Sweep, pick: impl Fn(&Value) -> Option<f64>) -> Vec<(f64, f64)> {
    sw.phases()
        .iter()
        .filter_map(|p| Some((level_of(p)?, pick(p)?)))
        .collect()
}

/// (total tok/s, P25 speed, label) of each phase.
pub type Points = Vec<(f64, f64, String)>;

/// Throughput vs P25 speed points and the frontier of one sweep.
pub fn points(sw: &Sweep) -> (Points, Vec<(f64, f64)>) {
    let pts: Points = sw
        .phases()
        .iter()
        .filter_map(|p| {
            Some((
                f(&p["throughput"]["total_tps"])?,
                f(&p["output_speed_tps"]["p25"])?,
                label(p),
            ))
        })
        .collect();
    let frontier: Vec<(f64, f64)> = sw
        .pareto
        .as_ref()
        .and_then(|p| p["frontier"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|p| Some((f(&p["total_tps"])?, f(&p["speed_p25_tps"])?)))
        .collect();
    (pts, frontier)
}

/// The SLO tiers' speed floors, as marks.
fn tier_marks(sw: &Sweep) -> Vec<Mark> {
    sw.summary["slo"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let speed = f(&t["speed_p25_tps"])?;
            Some(Mark::Y(
                speed,
                format!(
                    "SLO {}: P25 ≥ {} tok/s, TTFT p90 ≤ {} ms",
                    t["tier"].as_str().unwrap_or("?"),
                    number(speed),
                    number(f(&t["ttft_p90_ms"]).unwrap_or(f64::NAN))
                ),
            ))
        })
        .collect()
}

/// Where the phase's session time went, per concurrency: model, tool and
/// queue seconds summed over its sessions, as shares.
fn session_time_by_level(sw: &Sweep) -> Option<super::page::Figure> {
    let rows: Vec<(String, [f64; 3])> = sw
        .phases()
        .iter()
        .filter_map(|p| {
            let s = &p["sessions"];
            let parts = [f(&s["model_s"])?, f(&s["tool_s"])?, f(&s["queue_s"])?];
            let total: f64 = parts.iter().sum();
            (total > 0.0).then(|| (label(p), parts.map(|x| 100.0 * x / total)))
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let plot = super::sessions::time_split(
        &rows,
        Axis::linear("share of session time (%)").range(0.0, 100.0),
        720,
    );
    figure(
        "session-time-by-level",
        "Where session time went, by level",
        "model: Σ (complete − issued); tool: Σ delays before a turn was due; queue: Σ (issued − due), the harness's lateness; over each phase's sessions.",
        &plot,
    )
}

/// Throughput against one interactivity definition, with that definition's
/// own frontier (a phase is on it when no phase beats it on both).
fn interactivity_pareto(
    sw: &Sweep,
    key: &str,
    id: &str,
    title: &str,
    x_label: &str,
) -> Option<super::page::Figure> {
    let pts: Points = sw
        .phases()
        .iter()
        .filter_map(|p| {
            Some((
                f(&p["interactivity"][key])?,
                f(&p["throughput"]["total_tps"])?,
                label(p),
            ))
        })
        .collect();
    let mut front: Vec<(f64, f64)> = pts
        .iter()
        .filter(|(x, y, _)| {
            !pts.iter()
                .any(|(qx, qy, _)| qx >= x && qy >= y && (qx > x || qy > y))
        })
        .map(|(x, y, _)| (*x, *y))
        .collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    let plot = Plot::new(
        Axis::linear(x_label),
        Axis::linear("total server throughput (tok/s)"),
    )
    .size(720, 360)
    .layer(Layer::new(
        "phases",
        color(0),
        Shape::Dots(pts.iter().map(|p| (p.0, p.1)).collect(), 5),
    ))
    .layer(Layer::new("frontier", color(3), Shape::Line(front)))
    .layer(Layer::unnamed(
        rgb(40, 40, 40),
        Shape::Labels(
            pts.iter()
                .map(|p| (p.0, p.1, format!(" {}", p.2)))
                .collect(),
        ),
    ));
    figure(
        id,
        title,
        "The MLPerf agentic chart's axes (throughput up, interactivity right); line: this definition's frontier.",
        &plot,
    )
}

/// The sweep section; none when the run is no sweep.
pub fn section(run: &RunDir) -> Option<Section> {
    let sw = run.sweep.as_ref()?;
    let by_rate = rates(sw);
    let mut s = Section::new(
        "sweep",
        if by_rate {
            "Rate sweep"
        } else {
            "Concurrency sweep"
        },
    );
    if sw.summary.get("live").is_some() {
        s.note(
            "NON-OFFICIAL: live-reply replay (history = \"live\"). Each request carried the \
             model's own earlier replies, not the recording; each phase's divergence funnel is \
             `live` in sweep/summary.json.",
        );
    }
    let phases = sw.phases();
    let frontier_levels = sw.frontier_levels();
    let mut tiles = vec![Tile::new("phases", phases.len().to_string())];
    if let Some(best) = phases
        .iter()
        .filter_map(|p| f(&p["throughput"]["total_tps"]))
        .reduce(f64::max)
    {
        tiles.push(Tile::new("peak total tok/s", number(best)));
    }
    for t in sw.summary["slo"].as_array().into_iter().flatten() {
        let (what, best) = match by_rate {
            true => (
                "highest rate",
                t["max_rate"].as_f64().map(|r| format!("{}/s", number(r))),
            ),
            false => (
                "max agents",
                t["max_agents"].as_u64().map(|n| n.to_string()),
            ),
        };
        tiles.push(
            Tile::new(
                format!("SLO {}: {what}", t["tier"].as_str().unwrap_or("?")),
                best.clone().unwrap_or_else(|| "none".into()),
            )
            .tone(best.is_some()),
        );
    }
    s.push(Block::Tiles { items: tiles });

    let (pts, frontier) = points(sw);
    let mut pareto = Plot::new(
        Axis::linear("total server throughput (tok/s, prompt + completion)"),
        Axis::linear("P25 output speed per request (tok/s)"),
    )
    .size(1400, 440)
    .layer(Layer::new(
        "phases",
        color(0),
        Shape::Dots(pts.iter().map(|p| (p.0, p.1)).collect(), 5),
    ))
    .layer(Layer::new(
        "Pareto frontier",
        color(3),
        Shape::Line(frontier),
    ))
    .layer(Layer::unnamed(
        rgb(40, 40, 40),
        Shape::Labels(
            pts.iter()
                .map(|p| (p.0, p.1, format!(" {}", p.2)))
                .collect(),
        ),
    ));
    for m in tier_marks(sw) {
        pareto = pareto.mark(m);
    }
    let lv = |pick: &dyn Fn(&Value) -> Option<f64>| by_level(sw, pick);
    let levels: Vec<f64> = phases.iter().filter_map(level_of).collect();
    let agents = || {
        Axis::log(if by_rate {
            "arrivals per second (log scale)"
        } else {
            "concurrent agents (log scale)"
        })
        .ticks(levels.clone())
    };
    // `phase[group][key]` by level: a line (or, `dashed`, a dashed line) per
    // `(label, key, color, dashed)`.
    let lines = |y: Axis, group: &str, lines: &[(&str, &str, usize, bool)]| {
        lines
            .iter()
            .fold(Plot::new(agents(), y), |plot, &(label, key, c, dashed)| {
                let values = lv(&|p| f(&p[group][key]));
                let shape = match dashed {
                    true => Shape::Dashed(values),
                    false => Shape::Line(values),
                };
                plot.layer(Layer::new(label, color(c), shape))
            })
    };
    let ttft = lines(
        Axis::log("TTFT (ms, log scale)"),
        "ttft_ms",
        &[
            ("p50", "p50", 0, false),
            ("p90", "p90", 1, false),
            ("p99", "p99", 3, true),
        ],
    );
    let speed = lines(
        Axis::linear("output speed per request (tok/s)"),
        "output_speed_tps",
        &[
            ("P25", "p25", 0, false),
            ("P50", "p50", 1, false),
            ("P90", "p90", 2, true),
        ],
    );
    let throughput = lines(
        Axis::linear("server throughput (tok/s)"),
        "throughput",
        &[
            ("total", "total_tps", 0, false),
            ("input", "input_tps", 1, false),
            ("output", "output_tps", 2, false),
        ],
    );
    let cached = lv(&|p| f(&p["throughput"]["cached_fraction"]).map(|c| c * 100.0));
    let cached_plot = Plot::new(
        agents(),
        Axis::linear("cached prompt tokens (%)").range(0.0, 101.0),
    )
    .layer(Layer::new(
        "cached share",
        color(4),
        Shape::Line(cached.clone()),
    ))
    .layer(Layer::unnamed(color(4), Shape::Dots(cached.clone(), 4)));
    let lag = Plot::new(agents(), Axis::log("send lag (ms, log scale)"))
        .layer(Layer::new(
            "p50",
            color(0),
            Shape::Line(lv(&|p| f(&p["send_lag_ms"]["p50"]).map(|v| v.max(1e-3)))),
        ))
        .layer(Layer::new(
            "p99",
            color(3),
            Shape::Line(lv(&|p| f(&p["send_lag_ms"]["p99"]).map(|v| v.max(1e-3)))),
        ));
    let by_definition = lines(
        Axis::linear("interactivity (tok/s)"),
        "interactivity",
        &[
            ("AA P25 output speed", "aa_output_speed_p25", 0, false),
            (
                "MLPerf e2e interactivity",
                "mlperf_e2e_interactivity",
                1,
                false,
            ),
            ("MLPerf tps_per_user", "mlperf_tps_per_user", 2, true),
            (
                "AgentX E2E-normalized P90",
                "agentx_e2e_normalized_p90",
                3,
                false,
            ),
        ],
    );
    s.figures(vec![
        figure("pareto", "Total throughput vs P25 output speed", "One point per phase (label: its level, c = agents, r = arrivals per second); line: the frontier; dashed: each SLO tier's speed floor (its TTFT ceiling is in the label).", &pareto),
        figure("interactivity-by-level", "Interactivity by level, each definition", "MLPerf Endpoints: Σ output tokens / Σ turn seconds, and 1000 / TPOT p90; InferenceX AgentX: 1 / P90(E2EL / OSL); AA-AgentPerf: P25 output speed after the first token.", &by_definition),
        session_time_by_level(sw),
        figure("session-goodput-by-level", "Session goodput by level", "Sessions meeting [session_slo] per hour of the phase; a trajectory cut at the phase's end does not count.", &Plot::new(agents(), Axis::linear("SLO-meeting sessions per hour")).layer(Layer::new("session goodput", color(2), Shape::Line(lv(&|p| f(&p["sessions"]["session_goodput_per_hour"]))))).layer(Layer::unnamed(color(2), Shape::Dots(lv(&|p| f(&p["sessions"]["session_goodput_per_hour"])), 4)))),
        interactivity_pareto(sw, "mlperf_e2e_interactivity", "pareto-mlperf-e2e", "Total throughput vs MLPerf e2e interactivity", "MLPerf e2e interactivity (tok/s)"),
        interactivity_pareto(sw, "mlperf_tps_per_user", "pareto-tps-per-user", "Total throughput vs MLPerf tps_per_user", "tps_per_user = 1000 / TPOT p90 (tok/s)"),
        interactivity_pareto(sw, "agentx_e2e_normalized_p90", "pareto-agentx", "Total throughput vs AgentX E2E-normalized interactivity", "1 / P90(E2EL / OSL) (tok/s)"),
        figure("ttft-by-level", "TTFT by level", "Over each phase's steady-state window.", &ttft),
        figure("speed-by-level", "Output speed by level", "Per request, tokens/s after the first token.", &speed),
        figure("throughput-by-level", "Server throughput by level", "From the server's usage counts over the window.", &throughput),
        if cached.is_empty() { None } else { figure("cached-by-level", "Cached-token share by level", "Cached prompt tokens / prompt tokens, from usage.prompt_tokens_details.", &cached_plot) },
        phase_cdf(sw, "ttft-per-phase", "TTFT per phase", "TTFT (ms, log scale)", |t| t.ttft_ns().map(super::run_page::ms)),
        phase_cdf(sw, "speed-per-phase", "Output speed per phase", "output speed per request (tok/s, log scale)", Turn::output_speed_tps),
        figure("send-lag-by-level", "Send lag by level", "Issued minus due (coordinated omission); values under 1 µs drawn at 1 µs.", &lag),
        phase_windows(sw),
    ]);
    if cached.is_empty() {
        s.note("Cached-token share: the server reported no cached prompt tokens (usage.prompt_tokens_details.cached_tokens).");
    }
    let tiers = sw.summary["slo"].as_array().map_or(0, Vec::len);
    let mut t = Table::new(
        "Phases (★ = on the Pareto frontier)",
        &[
            "",
            if by_rate {
                "arrivals/s: configured (delivered)"
            } else {
                "agents"
            },
            "meets SLO",
            "requests",
            "measured",
            "window (s)",
            "total tok/s",
            "P25 speed",
            "MLPerf e2e",
            "tps/user",
            "AgentX P90",
            "TTFT p90 (ms)",
            "cached %",
            "failed",
            "send lag p99 (ms)",
            "end",
        ],
    );
    for p in phases {
        let level = p["level"].as_u64().unwrap_or(0);
        let on = frontier_levels.contains(&label(p));
        let n = |v: &Value| v.as_f64().map_or("-".into(), number);
        let delivered = &p["arrivals"]["delivered"];
        // The harness or the cap delivered a lighter load than the level's schedule (the
        // phase meets no SLO).
        let behind = p["arrivals"]["lighter"].as_bool() == Some(true);
        t.rows.push(vec![
            Cell::text(if on { "★" } else { "" }),
            Cell::num(match p["rate"].as_f64() {
                Some(r) => format!(
                    "{} ({})",
                    number(r),
                    delivered["rate"]
                        .as_f64()
                        .map_or("-".into(), |d| format!("{d:.3}/s"))
                ),
                None => level.to_string(),
            })
            .class(if behind { "bad" } else { "" }),
            match p["meets_slo"].as_array() {
                _ if tiers == 0 => Cell::text("-"),
                _ if behind => Cell::verdict("none: load delivered short", false),
                Some(met) if !met.is_empty() => Cell::text(
                    met.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", "),
                )
                .class("good"),
                _ => Cell::verdict("none", false),
            },
            Cell::num(n(&p["requests"])),
            Cell::num(n(&p["window"]["measured"])),
            Cell::num(n(&p["window"]["seconds"])),
            Cell::num(n(&p["throughput"]["total_tps"])),
            Cell::num(n(&p["output_speed_tps"]["p25"])),
            Cell::num(n(&p["interactivity"]["mlperf_e2e_interactivity"])),
            Cell::num(n(&p["interactivity"]["mlperf_tps_per_user"])),
            Cell::num(n(&p["interactivity"]["agentx_e2e_normalized_p90"])),
            Cell::num(n(&p["ttft_ms"]["p90"])),
            Cell::num(
                f(&p["throughput"]["cached_fraction"])
                    .map_or("-".into(), |c| format!("{:.1}", c * 100.0)),
            ),
            Cell::num(n(&p["errors"]["failed_turns"])),
            Cell::num(n(&p["send_lag_ms"]["p99"])),
            Cell::text(p["end_reason"].as_str().unwrap_or_default()).class("wrap"),
        ]);
    }
    s.push(Block::Table(t));
    for p in phases {
        for why in p["arrivals"]["behind"].as_array().into_iter().flatten() {
            s.note(format!(
                "{}: BEHIND SCHEDULE: {}",
                label(p),
                why.as_str().unwrap_or_default()
            ));
        }
    }
    let mut slo = Table::new(
        "SLO tiers",
        &[
            "tier",
            "TTFT p90 ≤ (ms)",
            "P25 speed ≥ (tok/s)",
            if by_rate {
                "highest rate (per s)"
            } else {
                "max agents"
            },
        ],
    );
    for tier in sw.summary["slo"].as_array().into_iter().flatten() {
        let best = match by_rate {
            true => tier["max_rate"].as_f64().map(number),
            false => tier["max_agents"].as_u64().map(|n| n.to_string()),
        };
        slo.rows.push(vec![
            Cell::text(tier["tier"].as_str().unwrap_or("?")),
            Cell::num(tier["ttft_p90_ms"].to_string()),
            Cell::num(tier["speed_p25_tps"].to_string()),
            match best {
                Some(n) => Cell::num(n).class("good"),
                None => Cell::verdict("none", false),
            },
        ]);
    }
    if !slo.rows.is_empty() {
        s.push(Block::Table(slo));
    }
    Some(s)
}

/// One CDF per phase (every completed request of the phase, ramp-up and
/// drain included), by concurrency.
fn phase_cdf(
    sw: &Sweep,
    id: &str,
    title: &str,
    x_label: &str,
    pick: impl Fn(&Turn) -> Option<f64>,
) -> Option<super::page::Figure> {
    let mut plot = Plot::new(
        Axis::log(x_label),
        Axis::linear("requests at or below (%)").range(0.0, 101.0),
    );
    for (i, (p, turns)) in sw.phases().iter().zip(&sw.phase_turns).enumerate() {
        let values: Vec<f64> = turns
            .iter()
            .filter_map(&pick)
            .filter(|v| *v > 0.0)
            .collect();
        if values.is_empty() {
            continue;
        }
        let name = label(p);
        let curve = super::run_page::cdf(values);
        let shape = if i % 2 == 1 {
            Shape::Dashed(curve)
        } else {
            Shape::Line(curve)
        };
        plot = plot.layer(Layer::new(name, color(i), shape));
    }
    figure(
        id,
        title,
        "Every completed request of each phase (ramp-up and drain included).",
        &plot,
    )
}

/// Each phase's parts on its own clock: ramp-up, warm-up, the measured
/// window, the drain after the stop.
fn phase_windows(sw: &Sweep) -> Option<super::page::Figure> {
    let phases = sw.phases();
    let names: Vec<String> = phases.iter().map(label).collect();
    let mut parts: [Vec<[f64; 4]>; 4] = Default::default();
    for (i, p) in phases.iter().enumerate() {
        let y = super::charts::row(phases.len(), i);
        let (y0, y1) = (y + 0.15, y + 0.85);
        let active = f(&p["all_active_s"]);
        let start = f(&p["window"]["start_ns"]).map(|n| n / 1e9);
        let end = f(&p["window"]["end_ns"]).map(|n| n / 1e9);
        let stopped = f(&p["stopped_s"]).unwrap_or(0.0);
        let wall = f(&p["wall_s"]).unwrap_or(stopped);
        if let Some(a) = active {
            parts[0].push([0.0, y0, a, y1]);
            if let Some(st) = start {
                parts[1].push([a, y0, st, y1]);
            }
        }
        if let (Some(a), Some(b)) = (start, end) {
            parts[2].push([a, y0, b, y1]);
        }
        parts[3].push([stopped, y0, wall.max(stopped), y1]);
    }
    let height = (names.len() as u32 * 28 + 110).max(220);
    let mut plot = Plot::new(
        Axis::linear("time since the phase started (s)"),
        Axis::linear("").range(0.0, names.len() as f64),
    )
    .size(1400, height);
    plot.y_categories = names;
    for (i, (rects, name)) in parts
        .into_iter()
        .zip([
            "ramp-up (agents starting)",
            "warm-up",
            "measured window",
            "drain (after the stop)",
        ])
        .enumerate()
    {
        let c = [
            rgb(200, 200, 200),
            rgb(255, 187, 120),
            color(0),
            rgb(150, 150, 150),
        ][i];
        plot = plot.layer(Layer::new(name, c, Shape::Rects(rects)));
    }
    figure(
        "phase-windows",
        "Phase windows",
        "Only requests issued inside the measured window count.",
        &plot,
    )
}
