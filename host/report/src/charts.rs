//! Charts as SVG strings, drawn with plotters' SVG backend: axes with units,
//! legends, reference marks. Text is left to the browser (no font files).

use plotters::coord::combinators::BindKeyPoints;
use plotters::coord::ranged1d::AsRangedCoord;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A colour.
pub type Rgb = RGBColor;

/// The colour of series `i` (Tableau's 10, then its lighter 10).
pub fn color(i: usize) -> Rgb {
    const PALETTE: [(u8, u8, u8); 20] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
        (174, 199, 232),
        (255, 187, 120),
        (152, 223, 138),
        (255, 152, 150),
        (197, 176, 213),
        (196, 156, 148),
        (247, 182, 210),
        (199, 199, 199),
        (219, 219, 141),
        (158, 218, 229),
    ];
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// The y of category `i` of `n` (the first at the top): its band is
/// `[row, row + 1)`.
pub fn row(n: usize, i: usize) -> f64 {
    n.saturating_sub(i + 1) as f64
}

/// A colour from its components.
pub const fn rgb(r: u8, g: u8, b: u8) -> Rgb {
    RGBColor(r, g, b)
}

/// Failures are drawn in this colour.
pub const FAILED: Rgb = RGBColor(200, 0, 0);
/// Reference marks (thresholds, percentiles).
pub const MARK: Rgb = RGBColor(90, 90, 90);

/// What a layer draws.
#[derive(Debug, Clone)]
pub enum Shape {
    /// A polyline through the points.
    Line(Vec<(f64, f64)>),
    /// A dashed polyline.
    Dashed(Vec<(f64, f64)>),
    /// Filled circles of this radius (px).
    Dots(Vec<(f64, f64)>, u32),
    /// Crosses (failed turns).
    Crosses(Vec<(f64, f64)>),
    /// Filled rectangles `[x0, y0, x1, y1]`.
    Rects(Vec<[f64; 4]>),
    /// Text at data coordinates.
    Labels(Vec<(f64, f64, String)>),
    /// Text ending at data coordinates, centred vertically (values at the
    /// end of a bar, inside it).
    EndLabels(Vec<(f64, f64, String)>),
}

impl Shape {
    fn marks(&self) -> usize {
        match self {
            Shape::Line(p) | Shape::Dashed(p) => usize::from(p.len() >= 2),
            Shape::Dots(p, _) | Shape::Crosses(p) => p.len(),
            Shape::Rects(r) => r.len(),
            Shape::Labels(_) | Shape::EndLabels(_) => 0,
        }
    }
}

/// One series.
#[derive(Debug, Clone)]
pub struct Layer {
    /// Legend entry (none: not in the legend).
    pub name: Option<String>,
    pub color: Rgb,
    pub shape: Shape,
}

impl Layer {
    pub fn new(name: impl Into<String>, color: Rgb, shape: Shape) -> Self {
        Self {
            name: Some(name.into()),
            color,
            shape,
        }
    }

    /// A layer without a legend entry.
    pub fn unnamed(color: Rgb, shape: Shape) -> Self {
        Self {
            name: None,
            color,
            shape,
        }
    }
}

/// A labelled reference line across the plot.
#[derive(Debug, Clone)]
pub enum Mark {
    /// Vertical, at this x.
    X(f64, String),
    /// Horizontal, at this y.
    Y(f64, String),
}

/// An axis.
#[derive(Debug, Clone, Default)]
pub struct Axis {
    /// Name and unit, e.g. `TTFT (ms)`.
    pub label: String,
    pub log: bool,
    /// Fixed range (else from the data, with a margin).
    pub range: Option<(f64, f64)>,
    /// Labelled ticks of a log axis (else 1-2-5 steps).
    pub ticks: Option<Vec<f64>>,
}

impl Axis {
    pub fn linear(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            ..Self::default()
        }
    }

    pub fn log(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            log: true,
            ..Self::default()
        }
    }

    /// Labels a log axis at exactly these values.
    pub fn ticks(mut self, ticks: Vec<f64>) -> Self {
        self.ticks = Some(ticks);
        self
    }

    pub fn range(mut self, lo: f64, hi: f64) -> Self {
        self.range = Some((lo, hi));
        self
    }
}

/// A chart to draw.
#[derive(Debug, Clone)]
pub struct Plot {
    pub x: Axis,
    pub y: Axis,
    pub layers: Vec<Layer>,
    pub marks: Vec<Mark>,
    /// Category names on the y axis (horizontal bar charts: category `i`
    /// spans y in `[i, i + 1)`).
    pub y_categories: Vec<String>,
    pub width: u32,
    pub height: u32,
}

/// How a legend entry looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Glyph {
    Line,
    Dashed,
    Dot,
    Cross,
    Box,
}

/// A legend entry (drawn by the page under the chart, never over data).
#[derive(Debug, Clone)]
pub struct LegendEntry {
    pub name: String,
    pub color: Rgb,
    pub glyph: Glyph,
}

/// A drawn chart.
#[derive(Debug, Clone)]
pub struct Svg {
    pub svg: String,
    /// Data marks drawn (points, bars, lines): 0 means an empty chart.
    pub marks: usize,
    pub legend: Vec<LegendEntry>,
}

impl Plot {
    pub fn new(x: Axis, y: Axis) -> Self {
        Self {
            x,
            y,
            layers: Vec::new(),
            marks: Vec::new(),
            y_categories: Vec::new(),
            width: 720,
            height: 360,
        }
    }

    pub fn layer(mut self, layer: Layer) -> Self {
        self.layers.push(layer);
        self
    }

    pub fn mark(mut self, mark: Mark) -> Self {
        self.marks.push(mark);
        self
    }

    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.width = width;
        self.height = height;
        self
    }

    /// Data marks the chart would draw.
    pub fn data_marks(&self) -> usize {
        self.layers.iter().map(|l| l.shape.marks()).sum()
    }

    /// Draws the chart; none when it would have no data mark.
    pub fn draw(&self) -> Option<Svg> {
        let marks = self.data_marks();
        if marks == 0 {
            return None;
        }
        let mut svg = String::new();
        {
            let root =
                SVGBackend::with_string(&mut svg, (self.width, self.height)).into_drawing_area();
            let x = extent(self, true);
            let y = extent(self, false);
            let log = |axis: &Axis, (lo, hi): (f64, f64)| {
                let ticks = axis.ticks.clone().unwrap_or_else(|| log_ticks(lo, hi));
                (lo..hi).log_scale().with_key_points(ticks)
            };
            let result = match (self.x.log, self.y.log) {
                (false, false) => draw_on(&root, self, x.0..x.1, y.0..y.1),
                (true, false) => draw_on(&root, self, log(&self.x, x), y.0..y.1),
                (false, true) => draw_on(&root, self, x.0..x.1, log(&self.y, y)),
                (true, true) => draw_on(&root, self, log(&self.x, x), log(&self.y, y)),
            };
            if let Err(e) = result.and_then(|()| root.present().map_err(|e| e.to_string())) {
                agentload_console::line(&format!("error: chart not drawn: {e}"));
                return None;
            }
        }
        let legend = self
            .layers
            .iter()
            .filter_map(|l| {
                let glyph = match l.shape {
                    Shape::Line(_) => Glyph::Line,
                    Shape::Dashed(_) => Glyph::Dashed,
                    Shape::Dots(..) => Glyph::Dot,
                    Shape::Crosses(_) => Glyph::Cross,
                    Shape::Rects(_) => Glyph::Box,
                    Shape::Labels(_) | Shape::EndLabels(_) => return None,
                };
                Some(LegendEntry {
                    name: l.name.clone()?,
                    color: l.color,
                    glyph,
                })
            })
            .collect();
        Some(Svg { svg, marks, legend })
    }
}

/// Ticks of a log axis: 1-2-5 steps per decade inside `[lo, hi]` (only the
/// powers of ten over a wide range; every integer multiple over a narrow one).
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let pick = |steps: &[f64]| -> Vec<f64> {
        let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        (a..=b)
            .flat_map(|e| steps.iter().map(move |m| m * 10f64.powi(e)))
            .filter(|v| *v >= lo * 0.999 && *v <= hi * 1.001)
            .collect()
    };
    let t = pick(&[1.0, 2.0, 5.0]);
    if t.len() > 10 {
        pick(&[1.0])
    } else if t.len() < 3 {
        pick(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    } else {
        t
    }
}

/// The axis range: fixed, or the data's with 4 % margins (log axes: the
/// positive data, a factor of 1.1 around it).
fn extent(plot: &Plot, x_axis: bool) -> (f64, f64) {
    let axis = if x_axis { &plot.x } else { &plot.y };
    if let Some(r) = axis.range {
        return r;
    }
    let mut values: Vec<f64> = Vec::new();
    for l in &plot.layers {
        let pick = |p: &(f64, f64)| if x_axis { p.0 } else { p.1 };
        match &l.shape {
            Shape::Line(p) | Shape::Dashed(p) | Shape::Dots(p, _) | Shape::Crosses(p) => {
                values.extend(p.iter().map(pick));
            }
            Shape::Rects(r) => {
                for q in r {
                    values.extend(if x_axis { [q[0], q[2]] } else { [q[1], q[3]] });
                }
            }
            Shape::Labels(_) | Shape::EndLabels(_) => {}
        }
    }
    for m in &plot.marks {
        match m {
            Mark::X(v, _) if x_axis => values.push(*v),
            Mark::Y(v, _) if !x_axis => values.push(*v),
            _ => {}
        }
    }
    values.retain(|v| v.is_finite() && (!axis.log || *v > 0.0));
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return if axis.log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if axis.log {
        let (lo, hi) = if hi <= lo {
            (lo / 2.0, hi * 2.0)
        } else {
            (lo, hi)
        };
        (lo / 1.1, hi * 1.1)
    } else {
        let (lo, hi) = if hi <= lo {
            (lo - 1.0, hi + 1.0)
        } else {
            (lo, hi)
        };
        let pad = (hi - lo) * 0.04;
        // Counts and durations start at zero.
        let lo = if lo >= 0.0 && lo - pad < 0.0 {
            0.0
        } else {
            lo - pad
        };
        (lo, hi + pad)
    }
}

/// A tick label: short, with thousands as `k`, and values under 0.001 in
/// exponent form (`2e-5`: a log axis of TPOTs in ms reaches down there, and
/// three decimals would label each of its ticks `0`).
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a < 1e-3 {
        let s = format!("{v:.1e}");
        match s.split_once('e') {
            Some((m, e)) => format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.')),
            None => s,
        }
    } else if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn font(size: u32) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&BLACK)
}

fn draw_on<X, Y>(root: &Area<'_>, plot: &Plot, x: X, y: Y) -> Result<(), String>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let err = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let y_area = if plot.y_categories.is_empty() {
        64
    } else {
        let longest = plot.y_categories.iter().map(String::len).max().unwrap_or(4);
        (longest as u32 * 7 + 16).min(plot.width / 3)
    };
    let x_marks = plot
        .marks
        .iter()
        .filter(|m| matches!(m, Mark::X(..)))
        .count() as u32;
    let mut chart = ChartBuilder::on(root)
        .margin(10)
        .margin_top(10 + 15 * x_marks)
        .margin_right(24)
        .x_label_area_size(44)
        .y_label_area_size(y_area)
        .build_cartesian_2d(x, y)
        .map_err(|e| err(&e))?;
    let fmt = |v: &f64| tick(*v);
    let no_label = |_: &f64| String::new();
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(plot.x.label.as_str())
        .y_desc(plot.y.label.as_str())
        .axis_desc_style(font(15))
        .label_style(font(13))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(215, 215, 215))
        .x_label_formatter(&fmt)
        .x_labels(8);
    if plot.y_categories.is_empty() {
        mesh.y_label_formatter(&fmt).y_labels(6);
    } else {
        mesh.y_label_formatter(&no_label)
            .y_labels(0)
            .disable_y_mesh();
    }
    mesh.draw().map_err(|e| err(&e))?;
    for layer in &plot.layers {
        let c = layer.color;
        match &layer.shape {
            Shape::Line(p) => {
                chart
                    .draw_series(LineSeries::new(p.iter().copied(), c.stroke_width(2)))
                    .map_err(|e| err(&e))?;
            }
            Shape::Dashed(p) => {
                chart
                    .draw_series(DashedLineSeries::new(
                        p.iter().copied(),
                        6,
                        4,
                        c.stroke_width(2),
                    ))
                    .map_err(|e| err(&e))?;
            }
            Shape::Dots(p, r) => {
                chart
                    .draw_series(
                        p.iter()
                            .map(|&(x, y)| Circle::new((x, y), *r, c.mix(0.75).filled())),
                    )
                    .map_err(|e| err(&e))?;
            }
            Shape::Crosses(p) => {
                chart
                    .draw_series(
                        p.iter()
                            .map(|&(x, y)| Cross::new((x, y), 5, c.stroke_width(2))),
                    )
                    .map_err(|e| err(&e))?;
            }
            Shape::Rects(r) => {
                chart
                    .draw_series(r.iter().map(|q| {
                        Rectangle::new([(q[0], q[1]), (q[2], q[3])], c.mix(0.85).filled())
                    }))
                    .map_err(|e| err(&e))?;
            }
            Shape::Labels(t) => {
                // Right of the point, or left of it where the text would
                // run past the plot's right edge.
                let right_edge = chart.plotting_area().get_pixel_range().0.end;
                let anchored: Vec<_> = t
                    .iter()
                    .map(|(x, y, s)| {
                        let (px, _) = chart.backend_coord(&(*x, *y));
                        let width = (s.chars().count() as f64 * 7.2) as i32;
                        let h = if px + width > right_edge {
                            HPos::Right
                        } else {
                            HPos::Left
                        };
                        (*x, *y, s.clone(), h)
                    })
                    .collect();
                chart
                    .draw_series(anchored.into_iter().map(|(x, y, s, h)| {
                        Text::new(s, (x, y), font(12).color(&c).pos(Pos::new(h, VPos::Bottom)))
                    }))
                    .map_err(|e| err(&e))?;
            }
            Shape::EndLabels(t) => {
                chart
                    .draw_series(t.iter().map(|(x, y, s)| {
                        Text::new(
                            format!("{s} "),
                            (*x, *y),
                            font(12).color(&c).pos(Pos::new(HPos::Right, VPos::Center)),
                        )
                    }))
                    .map_err(|e| err(&e))?;
            }
        }
    }
    draw_marks(root, &mut chart, plot).map_err(|e| err(&e))?;
    if !plot.y_categories.is_empty() {
        let x_lo = chart.x_range().start;
        for (i, name) in plot.y_categories.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(x_lo, row(plot.y_categories.len(), i) + 0.5));
            root.draw(&Text::new(
                name.clone(),
                (px - 6, py),
                font(12).pos(Pos::new(HPos::Right, VPos::Center)),
            ))
            .map_err(|e| err(&e))?;
        }
    }
    Ok(())
}

/// The reference lines, dashed, each labelled; labels that would overlap
/// an earlier one move down a line.
fn draw_marks<X, Y>(
    root: &Area<'_>,
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    plot: &Plot,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>>
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    let (xr, yr) = (chart.x_range(), chart.y_range());
    let style = MARK.stroke_width(1);
    let mut taken: Vec<(i32, i32, i32, i32)> = Vec::new();
    for m in &plot.marks {
        let (line, label) = match m {
            Mark::X(v, label) => (vec![(*v, yr.start), (*v, yr.end)], label),
            Mark::Y(v, label) => (vec![(xr.start, *v), (xr.end, *v)], label),
        };
        chart.draw_series(DashedLineSeries::new(line.clone(), 5, 4, style))?;
        let text = format!(" {label} ");
        let w = (text.chars().count() as f64 * 6.9) as i32;
        let h = 15;
        // X marks: above the plot, right of the line; Y marks: above the
        // line's right end.
        let (px, py, anchor_right) = match m {
            Mark::X(..) => {
                let (px, py) = chart.backend_coord(&line[1]);
                (px, py - h - 1, false)
            }
            Mark::Y(..) => {
                let (px, py) = chart.backend_coord(&line[1]);
                (px, py - h, true)
            }
        };
        let left = if anchor_right { px - w } else { px };
        let mut top = py;
        // Labels stack upwards (X marks into the top margin, Y marks away
        // from the x axis's ticks).
        let step = -h;
        while taken
            .iter()
            .any(|&(l, t, r, b)| left < r && left + w > l && top < b && top + h > t)
        {
            top += step;
        }
        taken.push((left, top, left + w, top + h));
        root.draw(&Rectangle::new(
            [(left, top), (left + w, top + h)],
            WHITE.mix(0.8).filled(),
        ))?;
        root.draw(&Text::new(
            text,
            (left, top + 1),
            font(12).color(&MARK).pos(Pos::new(HPos::Left, VPos::Top)),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_svg_with_axes_legend_and_marks() {
        let svg = Plot::new(Axis::linear("time (s)"), Axis::log("latency (ms)"))
            .layer(Layer::new(
                "conversation a",
                color(0),
                Shape::Dots(vec![(1.0, 10.0), (2.0, 100.0)], 3),
            ))
            .layer(Layer::new(
                "failed",
                FAILED,
                Shape::Crosses(vec![(3.0, 50.0)]),
            ))
            .mark(Mark::Y(80.0, "p99".into()))
            .draw()
            .unwrap();
        assert_eq!(svg.marks, 3);
        assert!(svg.svg.starts_with("<svg"), "{}", &svg.svg[..80]);
        for text in ["time (s)", "latency (ms)", "p99"] {
            assert!(svg.svg.contains(text), "{text} missing");
        }
        let names: Vec<(&str, Glyph)> = svg
            .legend
            .iter()
            .map(|l| (l.name.as_str(), l.glyph))
            .collect();
        assert_eq!(
            names,
            [("conversation a", Glyph::Dot), ("failed", Glyph::Cross)]
        );
    }

    #[test]
    fn empty_charts_are_not_drawn_and_bad_values_do_not_break_ranges() {
        let empty = Plot::new(Axis::linear("x"), Axis::linear("y"))
            .layer(Layer::unnamed(color(1), Shape::Dots(vec![], 2)));
        assert!(empty.draw().is_none());
        // Zeros on a log axis and NaN are left out of the range.
        let p = Plot::new(Axis::log("x"), Axis::linear("y")).layer(Layer::unnamed(
            color(1),
            Shape::Line(vec![(0.0, 1.0), (5.0, f64::NAN), (50.0, 2.0)]),
        ));
        assert!(p.draw().is_some());
        assert_eq!(extent(&p, true), (5.0 / 1.1, 50.0 * 1.1));
    }

    #[test]
    fn log_ticks_step_1_2_5() {
        assert_eq!(log_ticks(3.0, 150.0), [5.0, 10.0, 20.0, 50.0, 100.0]);
        assert_eq!(log_ticks(1.0, 1e9).len(), 10);
        assert_eq!(log_ticks(1.0, 1e9)[1], 10.0);
        assert_eq!(log_ticks(12.0, 30.0), [20.0, 30.0]);
    }

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(12_500.0), "12.5k");
        assert_eq!(tick(2_000_000.0), "2M");
        assert_eq!(tick(250.0), "250");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(1.5), "1.5");
        assert_eq!(tick(0.001), "0.001");
        assert_eq!(tick(0.0005), "5e-4");
        assert_eq!(tick(0.0002), "2e-4");
        assert_eq!(tick(0.00025), "2.5e-4");
        assert_eq!(tick(1e-6), "1e-6");
        assert_eq!(tick(-3e-5), "-3e-5");
    }
}
