//! The telemetry section: what the server and its accelerators reported
//! over each phase's time line (the turns' clock): the server's throughput
//! from its own token counters, KV-cache usage, requests running and
//! waiting, accelerator power; failed readings as red crosses on the time
//! axis, and every source's failures in a table.

use super::charts::{color, Axis, Layer, Plot, Shape, FAILED};
use super::headline::number;
use super::page::{figure, Block, Cell, Section, Table, Tile};
use super::read::{PhaseTelemetry, RunDir, TelemetrySample};
use serde_json::Value;

/// A value of one sample, or none.
type Pick = fn(&TelemetrySample) -> Option<f64>;

/// A line to draw: a field of every source that has it.
struct Series {
    label: &'static str,
    pick: Pick,
    /// A counter: drawn as its rate between consecutive readings.
    rate: bool,
    dashed: bool,
}

fn field(s: &TelemetrySample, name: &str) -> Option<f64> {
    s.fields.get(name).copied()
}

/// All prompt tokens: vLLM's and SGLang's counter, or llama.cpp's processed
/// plus cached.
fn prompt_tokens(s: &TelemetrySample) -> Option<f64> {
    field(s, "prompt_tokens_total").or_else(|| {
        Some(
            field(s, "prompt_tokens_processed_total")?
                + field(s, "prompt_tokens_cached_total").unwrap_or(0.0),
        )
    })
}

/// The section; none when no phase has telemetry.
pub fn section(run: &RunDir) -> Option<Section> {
    if run.telemetry.is_empty() {
        return None;
    }
    let mut s = Section::new("telemetry", "Server telemetry");
    s.push(Block::Tiles {
        items: tiles(&run.telemetry),
    });
    let t_axis = || Axis::linear("time in the phase (s)");
    let charts: [(&str, &str, &str, Vec<Series>); 6] = [
        (
            "telemetry-output",
            "Server output throughput (its own token counter)",
            "generated tokens per second",
            vec![Series {
                label: "generated",
                pick: |s| field(s, "generation_tokens_total"),
                rate: true,
                dashed: false,
            }],
        ),
        (
            "telemetry-prompt",
            "Server prompt throughput (its own token counters, cached tokens included)",
            "prompt tokens per second",
            vec![Series {
                label: "prompt",
                pick: prompt_tokens,
                rate: true,
                dashed: false,
            }],
        ),
        (
            "telemetry-kv",
            "KV-cache usage",
            "KV cache used (%)",
            vec![Series {
                label: "KV cache",
                pick: |s| field(s, "kv_cache_usage").map(|v| v * 100.0),
                rate: false,
                dashed: false,
            }],
        ),
        (
            "telemetry-queue",
            "Requests running and waiting",
            "requests",
            vec![
                Series {
                    label: "running",
                    pick: |s| field(s, "requests_running"),
                    rate: false,
                    dashed: false,
                },
                Series {
                    label: "waiting",
                    pick: |s| field(s, "requests_waiting"),
                    rate: false,
                    dashed: true,
                },
            ],
        ),
        (
            "telemetry-power",
            "Accelerator power",
            "power (W)",
            vec![Series {
                label: "power",
                pick: |s| field(s, "power_w"),
                rate: false,
                dashed: false,
            }],
        ),
        (
            "telemetry-gpu-util",
            "GPU utilisation",
            "utilisation (%)",
            vec![Series {
                label: "utilisation",
                pick: |s| field(s, "gpu_util_pct"),
                rate: false,
                dashed: false,
            }],
        ),
    ];
    let mut figures = Vec::new();
    for (id, title, y_label, series) in charts {
        let plot = chart(&run.telemetry, &series, t_axis(), Axis::linear(y_label));
        figures.push(figure(
            id,
            title,
            "Each source's readings on the phase's clock (the turns' clock); a gap and a red cross: a failed reading.",
            &plot,
        ));
    }
    s.figures(figures);
    s.push(Block::Table(sources_table(&run.telemetry)));
    s.note(format!(
        "Raw samples: {}.",
        run.telemetry
            .iter()
            .map(|t| t.file.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Some(s)
}

/// Headline tiles from the phase summaries.
fn tiles(phases: &[PhaseTelemetry]) -> Vec<Tile> {
    let mut tiles = Vec::new();
    let failed: u64 = phases
        .iter()
        .flat_map(|p| {
            p.summary
                .iter()
                .flat_map(|s| s["sources"].as_array().into_iter().flatten())
        })
        .filter_map(|s| s["failed"].as_u64())
        .sum();
    let samples = phases.iter().map(|p| p.samples.len()).sum::<usize>();
    tiles.push(Tile::new("readings / failed", format!("{samples} / {failed}")).tone(failed == 0));
    for p in phases {
        let Some(summary) = &p.summary else { continue };
        let power = &summary["power"];
        if let Some(w) = power["window_mean_w"]
            .as_f64()
            .or_else(|| power["mean_w"].as_f64())
        {
            tiles.push(Tile::new(
                format!(
                    "{} power ({})",
                    p.phase,
                    power["source"].as_str().unwrap_or("?")
                ),
                format!("{} W", number(w)),
            ));
        }
        if let Some(j) = summary["energy_per_output_token_j"].as_f64() {
            tiles.push(Tile::new(
                format!("{} J / output token", p.phase),
                number(j),
            ));
        }
        let check = &summary["usage_check"];
        if let (Some(server), Some(usage)) = (
            check["server_completion_tokens"].as_f64(),
            check["usage_completion_tokens"].as_f64(),
        ) {
            tiles.push(
                Tile::new(
                    format!("{} server / usage output tokens", p.phase),
                    format!("{} / {}", number(server), number(usage)),
                )
                .tone(server == usage),
            );
        }
    }
    tiles
}

/// One chart: every (phase, source, series) that has values is a line.
fn chart(phases: &[PhaseTelemetry], series: &[Series], x: Axis, y: Axis) -> Plot {
    let mut plot = Plot::new(x, y).size(960, 320);
    let sources: Vec<(usize, &PhaseTelemetry, &str)> = phases
        .iter()
        .enumerate()
        .flat_map(|(i, p)| {
            let mut names: Vec<&str> = p.samples.iter().map(|s| s.source.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            names.into_iter().map(move |n| (i, p, n))
        })
        .collect();
    let mut lines = 0;
    let mut top = 0.0_f64;
    let mut failures = Vec::new();
    for (i, (phase_index, phase, source)) in sources.iter().enumerate() {
        let readings: Vec<&TelemetrySample> = phase
            .samples
            .iter()
            .filter(|s| s.source == *source)
            .collect();
        let mut drawn = false;
        for (k, line) in series.iter().enumerate() {
            let segments = segments(&readings, line);
            if segments.iter().all(Vec::is_empty) {
                continue;
            }
            drawn = true;
            let c = color(if phases.len() > 1 { *phase_index } else { i });
            let name = match (phases.len() > 1, sources.len() > phases.len()) {
                (true, true) => format!("{} {source} {}", phase.phase, line.label),
                (true, false) => format!("{} {}", phase.phase, line.label),
                (false, true) => format!("{source} {}", line.label),
                (false, false) => line.label.to_owned(),
            };
            for (n, points) in segments.into_iter().filter(|p| !p.is_empty()).enumerate() {
                top = points.iter().map(|p| p.1).fold(top, f64::max);
                let shape = match (points.len(), line.dashed) {
                    (1, _) => Shape::Dots(points, 3),
                    (_, true) => Shape::Dashed(points),
                    (_, false) => Shape::Line(points),
                };
                plot = plot.layer(if n == 0 {
                    Layer::new(name.clone(), c, shape)
                } else {
                    Layer::unnamed(c, shape)
                });
            }
            lines += usize::from(k == 0);
        }
        if drawn {
            failures.extend(
                readings
                    .iter()
                    .filter(|s| s.error.is_some())
                    .map(|s| (secs(s), 0.0)),
            );
        }
    }
    if lines > 0 && !failures.is_empty() {
        plot = plot.layer(Layer::new(
            "failed reading",
            FAILED,
            Shape::Crosses(failures),
        ));
    }
    plot
}

fn secs(s: &TelemetrySample) -> f64 {
    s.t_ns as f64 / 1e9
}

/// The line's points, broken at failed readings (a counter: its rate
/// between consecutive good readings; a drop, a restart, is left out).
fn segments(readings: &[&TelemetrySample], line: &Series) -> Vec<Vec<(f64, f64)>> {
    let mut out = vec![Vec::new()];
    let mut previous: Option<(f64, f64)> = None;
    for s in readings {
        let value = if s.error.is_none() {
            (line.pick)(s)
        } else {
            None
        };
        let Some(v) = value else {
            if s.error.is_some() {
                out.push(Vec::new());
                previous = None;
            }
            continue;
        };
        let t = secs(s);
        if line.rate {
            if let Some((t0, v0)) = previous {
                if t > t0 && v >= v0 {
                    out.last_mut()
                        .expect("a segment")
                        .push(((t0 + t) / 2.0, (v - v0) / (t - t0)));
                }
            }
        } else {
            out.last_mut().expect("a segment").push((t, v));
        }
        previous = Some((t, v));
    }
    out
}

/// Every source of every phase: readings, failures and their causes.
fn sources_table(phases: &[PhaseTelemetry]) -> Table {
    let mut t = Table::new(
        "Telemetry sources (a failed reading is kept with its cause; the run went on)",
        &[
            "phase",
            "source",
            "what",
            "readings",
            "failed",
            "first failure",
            "last failure",
        ],
    );
    for p in phases {
        let Some(summary) = &p.summary else { continue };
        for src in summary["sources"].as_array().into_iter().flatten() {
            let failed = src["failed"].as_u64().unwrap_or(0);
            let error = |k: &str| -> Cell {
                let e = &src[k];
                match e["error"].as_str() {
                    Some(text) => {
                        Cell::text(format!("{:.1} s: {text}", e["t_s"].as_f64().unwrap_or(0.0)))
                            .class("bad")
                    }
                    None => Cell::text("-"),
                }
            };
            let what = src["url"].as_str().map_or_else(
                || text(&src["kind"]),
                |u| format!("{} {u}", text(&src["kind"])),
            );
            t.rows.push(vec![
                Cell::text(p.phase.clone()),
                Cell::text(text(&src["name"])),
                Cell::text(what).class("mono"),
                Cell::num(src["samples"].as_u64().unwrap_or(0).to_string()),
                Cell::num(failed.to_string()).class(if failed == 0 { "good" } else { "bad" }),
                error("first_error"),
                error("last_error"),
            ]);
        }
    }
    t
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or("?").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t_s: f64, fields: &[(&str, f64)], error: Option<&str>) -> TelemetrySample {
        TelemetrySample {
            t_ns: (t_s * 1e9) as u64,
            source: "server".into(),
            fields: fields.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            error: error.map(str::to_owned),
        }
    }

    #[test]
    fn a_failed_reading_breaks_the_line_and_counters_become_rates() {
        let readings = [
            sample(
                0.0,
                &[("generation_tokens_total", 0.0), ("requests_running", 1.0)],
                None,
            ),
            sample(
                1.0,
                &[
                    ("generation_tokens_total", 100.0),
                    ("requests_running", 2.0),
                ],
                None,
            ),
            sample(2.0, &[], Some("timed out")),
            sample(
                3.0,
                &[
                    ("generation_tokens_total", 400.0),
                    ("requests_running", 3.0),
                ],
                None,
            ),
            sample(
                4.0,
                &[
                    ("generation_tokens_total", 600.0),
                    ("requests_running", 4.0),
                ],
                None,
            ),
        ];
        let refs: Vec<&TelemetrySample> = readings.iter().collect();
        let gauge = Series {
            label: "running",
            pick: |s| field(s, "requests_running"),
            rate: false,
            dashed: false,
        };
        assert_eq!(
            segments(&refs, &gauge),
            [vec![(0.0, 1.0), (1.0, 2.0)], vec![(3.0, 3.0), (4.0, 4.0)]]
        );
        let counter = Series {
            label: "generated",
            pick: |s| field(s, "generation_tokens_total"),
            rate: true,
            dashed: false,
        };
        // No rate across the failure: the gap stays a gap.
        assert_eq!(
            segments(&refs, &counter),
            [vec![(0.5, 100.0)], vec![(3.5, 200.0)]]
        );
    }

    #[test]
    fn llama_cpp_prompt_tokens_are_processed_plus_cached() {
        let s = sample(
            0.0,
            &[
                ("prompt_tokens_processed_total", 10.0),
                ("prompt_tokens_cached_total", 5.0),
            ],
            None,
        );
        assert_eq!(prompt_tokens(&s), Some(15.0));
    }
}
