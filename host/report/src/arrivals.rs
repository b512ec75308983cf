//! An open-loop run's schedule, configured against delivered (`agentload.arrivals`; a rate
//! sweep's phases have theirs in the sweep section): the headline numbers, why it fell
//! behind when it did, the arrivals per second over time (as due and as sent), and the
//! sent gaps' distribution against the configured law.

use super::charts::{color, Axis, Layer, Plot, Shape};
use super::page::{figure, Block, Section, Tile};
use super::read::{RunDir, Turn};
use super::run_page::cdf;
use agentload_results::arrivals::ArrivalsSummary;
use std::collections::BTreeMap;

/// The section; none for a closed-loop run.
pub fn section(run: &RunDir) -> Option<Section> {
    let value = run.summary.as_ref()?["agentload"].get("arrivals")?.clone();
    let a: ArrivalsSummary = serde_json::from_value(value).ok()?;
    let mut s = Section::new(
        "arrivals",
        "Open-loop arrivals: configured against delivered",
    );
    s.push(Block::Tiles { items: tiles(&a) });
    for why in &a.behind {
        s.note(format!("BEHIND SCHEDULE: {why}"));
    }
    let first = first_requests(&run.turns);
    s.figures(vec![over_time(&first, &a), gaps(&first, &a)]);
    s.note(
        "Every arrival keeps its due time (scheduled_ns): a harness or cap that falls behind \
         sends late, and the send lag and the delivered rate show it; the schedule is never \
         stretched. The test of the gaps is Kolmogorov-Smirnov against the configured law, \
         on the harness's send stamps.",
    );
    Some(s)
}

/// The tiles of `a`.
fn tiles(a: &ArrivalsSummary) -> Vec<Tile> {
    let c = &a.configured;
    let d = &a.delivered;
    let mut items = vec![
        Tile::new(
            "configured",
            format!(
                "{} of {} at {:.3}/s{}",
                c.process,
                c.of,
                c.rate,
                c.cv.map_or_else(String::new, |cv| format!(", cv {cv}"))
            ),
        ),
        Tile::new(
            "delivered rate",
            match (d.rate, d.rate_ratio) {
                (Some(r), Some(q)) => format!("{r:.3}/s ({:.2} %)", q * 100.0),
                _ => "-".to_owned(),
            },
        )
        .tone(d.rate_ratio.is_some_and(|q| (q - 1.0).abs() <= 0.01)),
    ];
    if let Some(cv) = d.cv {
        items.push(Tile::new("gap cv", format!("{cv:.3}")));
    }
    if let Some(k) = d.ks {
        items.push(
            Tile::new(
                "K-S against the law",
                format!("D {:.4}, p {:.3}", k.d, k.p_value),
            )
            .tone(k.passes(0.01)),
        );
    }
    if let Some(l) = d.send_lag_ms {
        items.push(Tile::new(
            "send lag p50 / p99 / max",
            format!("{:.3} / {:.3} / {:.3} ms", l.p50, l.p99, l.max),
        ));
    }
    items.push(
        Tile::new(
            "held back by the cap",
            format!("{} of {}", a.dispatch.held_back, a.dispatch.released),
        )
        .tone(a.dispatch.held_back == 0),
    );
    items
}

/// Each session's first request (the arrival): its due and send times, ns.
fn first_requests(turns: &[Turn]) -> Vec<(u64, u64)> {
    let mut first: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for t in turns {
        let (Some(due), Some(sent)) = (t.scheduled_ns, t.issued_ns) else {
            continue;
        };
        let e = first.entry(&t.session_id).or_insert((due, sent));
        if due < e.0 {
            *e = (due, sent);
        }
    }
    first.into_values().collect()
}

/// Arrivals per second over the run, as due and as sent, against the configured rate.
fn over_time(first: &[(u64, u64)], a: &ArrivalsSummary) -> Option<super::page::Figure> {
    let last = first.iter().map(|f| f.0.max(f.1)).max()?;
    // About 60 bins over the run (at least 0.1 s each).
    let bin = ((last as f64 / 60.0).max(1e8) / 1e8).ceil() * 1e8;
    let count = |pick: fn(&(u64, u64)) -> u64| {
        let mut bins = vec![0u32; (last as f64 / bin) as usize + 1];
        for f in first {
            bins[(pick(f) as f64 / bin) as usize] += 1;
        }
        bins.iter()
            .enumerate()
            .map(|(i, &n)| ((i as f64 + 0.5) * bin / 1e9, f64::from(n) / (bin / 1e9)))
            .collect::<Vec<_>>()
    };
    let mut plot = Plot::new(
        Axis::linear("phase time (s)"),
        Axis::linear("arrivals per second"),
    )
    .layer(Layer::new("due", color(0), Shape::Dashed(count(|f| f.0))))
    .layer(Layer::new("sent", color(1), Shape::Line(count(|f| f.1))));
    let end = last as f64 / 1e9;
    if a.configured.process != "trace" {
        plot = plot.layer(Layer::new(
            "configured (after the ramp)",
            color(2),
            Shape::Dots(
                vec![
                    (a.configured.ramp_s, a.configured.rate),
                    (end, a.configured.rate),
                ],
                3,
            ),
        ));
    }
    figure(
        "arrival-rate",
        "Arrivals per second",
        "Arrivals (each session's first request) per time bin, by due time and by send time; \
         the dots mark the configured rate after the ramp.",
        &plot,
    )
}

/// The sent gaps' CDF against the configured law's.
fn gaps(first: &[(u64, u64)], a: &ArrivalsSummary) -> Option<super::page::Figure> {
    let law = a.configured.law().filter(|l| l.testable())?;
    let ramp_ns = (a.configured.ramp_s * 1e9) as u64;
    let mut sent: Vec<u64> = first
        .iter()
        .filter(|f| f.0 >= ramp_ns)
        .map(|f| f.1)
        .collect();
    sent.sort_unstable();
    let gaps: Vec<f64> = sent
        .windows(2)
        .map(|w| ((w[1] - w[0]) as f64 / 1e6).max(1e-3))
        .collect();
    let delivered = cdf(gaps.clone());
    let (lo, hi) = (
        gaps.iter().copied().fold(f64::MAX, f64::min),
        gaps.iter().copied().fold(0.0, f64::max),
    );
    let configured: Vec<(f64, f64)> = (0..=200)
        .map(|i| {
            let x = lo * (hi / lo).powf(f64::from(i) / 200.0);
            (x, law.cdf(x / 1e3) * 100.0)
        })
        .collect();
    let plot = Plot::new(
        Axis::log("gap between arrivals (ms, log scale)"),
        Axis::linear("gaps at or below (%)").range(0.0, 101.0),
    )
    .layer(Layer::new(
        "configured law",
        color(0),
        Shape::Dashed(configured),
    ))
    .layer(Layer::new("sent", color(1), Shape::Line(delivered)));
    figure(
        "arrival-gaps",
        "Gaps between arrivals",
        "The sent gaps' distribution against the configured law's (gaps under 1 µs drawn at \
         1 µs).",
        &plot,
    )
}
