//! The page of a datacenter submission's points (`run --points`,
//! `points.json`): each point's `system_tps` against its
//! `e2e_interactivity`, the non-dominated ones marked, and the official
//! curve, a step function through them (Rules v1.0: an interpolated line
//! would have to be labelled as not official).

use super::charts::{color, rgb, Axis, Layer, Plot, Shape};
use super::headline::number;
use super::page::{figure, Block, Cell, Page, Section, Table};
use serde_json::Value;

/// The step function through the non-dominated points `(x, y)`: the best
/// `system_tps` any point reaches at an interactivity of at least x. By x
/// ascending the frontier's y descends; each step holds a point's y until
/// the next point's x.
pub fn step_curve(frontier: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut pts = frontier.to_vec();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut line = Vec::new();
    for (i, &(x, y)) in pts.iter().enumerate() {
        if i > 0 {
            line.push((pts[i - 1].0, y));
        }
        line.push((x, y));
    }
    line
}

/// The page for `points.json`.
pub fn page(points: &Value, title: &str, generated_by: String) -> Page {
    let list: Vec<&Value> = points["points"].as_array().into_iter().flatten().collect();
    let xy = |p: &Value| Some((p["e2e_interactivity"].as_f64()?, p["system_tps"].as_f64()?));
    let all: Vec<(f64, f64, String)> = list
        .iter()
        .filter_map(|p| {
            let (x, y) = xy(p)?;
            Some((x, y, format!(" {}", p["dir"].as_str().unwrap_or("?"))))
        })
        .collect();
    let frontier: Vec<(f64, f64)> = list
        .iter()
        .filter(|p| p["non_dominated"] == true)
        .filter_map(|p| xy(p))
        .collect();
    let plot = Plot::new(
        Axis::linear("e2e_interactivity (tok/s per user: Σ output tokens / Σ turn seconds)"),
        Axis::linear("system_tps (output tok/s)"),
    )
    .size(960, 420)
    .layer(Layer::new(
        "official curve (step function)",
        color(3),
        Shape::Line(step_curve(&frontier)),
    ))
    .layer(Layer::new(
        "points",
        color(0),
        Shape::Dots(all.iter().map(|p| (p.0, p.1)).collect(), 4),
    ))
    .layer(Layer::new(
        "non-dominated",
        color(3),
        Shape::Dots(frontier.clone(), 6),
    ))
    .layer(Layer::unnamed(rgb(40, 40, 40), Shape::Labels(all)));
    let mut s = Section::new("points", "Points and the Pareto curve");
    s.figures(vec![figure(
        "pareto-step",
        "system_tps against e2e_interactivity",
        "One point per concurrency (label: its directory); large dots: not dominated (no other point is at least as good on both axes and better on one); line: the official step function through them.",
        &plot,
    )]);
    let mut table = Table::new(
        "Each point is a full run in its directory (its own report.html)",
        &[
            "point",
            "concurrency",
            "system_tps",
            "e2e_interactivity",
            "not dominated",
            "run",
        ],
    );
    let n = |v: &Value| v.as_f64().map_or("-".to_owned(), number);
    for p in &list {
        table.rows.push(vec![
            Cell::text(p["dir"].as_str().unwrap_or("?")),
            Cell::num(n(&p["concurrency"])),
            Cell::num(n(&p["system_tps"])),
            Cell::num(n(&p["e2e_interactivity"])),
            Cell::text(if p["non_dominated"] == true {
                "yes"
            } else {
                ""
            }),
            Cell::text(p["verdict"].as_str().unwrap_or("?")),
        ]);
    }
    s.push(Block::Table(table));
    if let Some(passed) = points["region_checks_passed"].as_bool() {
        s.note(format!(
            "Rules v1.0 region checks: {} (`agentload check` prints each).",
            if passed { "passed" } else { "FAILED" }
        ));
    }
    Page {
        title: format!("agentload points: {title}"),
        subtitle: format!("{} points", list.len()),
        generated_by,
        sections: vec![s],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_holds_each_points_throughput_until_the_next() {
        let line = step_curve(&[(30.0, 100.0), (10.0, 300.0), (20.0, 200.0)]);
        assert_eq!(
            line,
            [
                (10.0, 300.0),
                (10.0, 200.0),
                (20.0, 200.0),
                (20.0, 100.0),
                (30.0, 100.0)
            ]
        );
        assert!(step_curve(&[]).is_empty());
    }
}
