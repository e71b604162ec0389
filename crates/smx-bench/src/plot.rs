//! SVG line charts with plotters: the pictures a person would rather look at than a table.
//!
//! One generic chart (named series of points, each point a median with its min-max range drawn
//! as a vertical bar) serves every experiment; the experiments only choose axes and series.
//! The rules every chart keeps, so that none misleads at a glance:
//! * the x axis is labelled at the measured x values only (thread counts, hop counts, periods),
//!   so a count never gets a fractional tick;
//! * tick labels are short numbers (`2.5M`, `10k`, `0.001`), never `2500000.0`;
//! * a logarithmic y axis ([`Chart::log_y`]) keeps small values visible beside large ones (miss
//!   rates, latency percentiles); a value of 0, which a log axis cannot show, is drawn as a
//!   hollow marker on the bottom edge and the legend says so;
//! * the legend has its own panel beside the plot, never over the data.
//!
//! Text is left to the SVG viewer's fonts, so no font files are needed.

use std::path::Path;

use std::ops::Range;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// One point: the median and the range of the runs behind it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub y_min: f64,
    pub y_max: f64,
}

impl Point {
    pub fn exact(x: f64, y: f64) -> Point {
        Point {
            x,
            y,
            y_min: y,
            y_max: y,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
    /// Drawn thin and without markers: reference lines such as a baseline or a floor.
    pub reference: bool,
}

/// What to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Logarithmic y axis; values <= 0 are drawn on the bottom edge, hollow.
    pub log_y: bool,
    /// Logarithmic x axis (doubling thread counts, periods); needs every x > 0.
    pub log_x: bool,
}

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

const SIZE: (u32, u32) = (1000, 560);
/// Width of the legend panel on the right.
const LEGEND_WIDTH: u32 = 270;

/// The axes of a chart, computed once from its points.
#[derive(Debug, Clone, PartialEq)]
struct Axes {
    x: (f64, f64),
    y: (f64, f64),
    x_ticks: Vec<f64>,
    y_ticks: Vec<f64>,
    /// Some point is 0 on a log y axis (drawn on the bottom edge).
    zeros_on_floor: bool,
    /// Some point has a min-max range (drawn as a bar).
    bars: bool,
}

fn finite(p: &Point) -> bool {
    p.x.is_finite() && p.y.is_finite()
}

/// Writes `chart` as an SVG file at `path`. Charts without any point are an error.
pub fn write_svg(chart: &Chart, path: &Path) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    let axes = axes(chart).ok_or_else(|| format!("cannot draw {}: no measured point", path.display()))?;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let (plot, legend) = root.split_horizontally(SIZE.0 - LEGEND_WIDTH);
    let (x, y) = (axes.x.0..axes.x.1, axes.y.0..axes.y.1);
    let (xt, yt) = (&axes.x_ticks, &axes.y_ticks);
    let lin = |r: Range<f64>, t: &Vec<f64>| Ticked::new(RangedCoordf64::from(r), t);
    let log = |r: Range<f64>, t: &Vec<f64>| Ticked::new(LogCoord::from(r.log_scale()), t);
    match (chart.log_x, chart.log_y) {
        (false, false) => draw(&plot, chart, &axes, lin(x, xt), lin(y, yt)),
        (true, false) => draw(&plot, chart, &axes, log(x, xt), lin(y, yt)),
        (false, true) => draw(&plot, chart, &axes, lin(x, xt), log(y, yt)),
        (true, true) => draw(&plot, chart, &axes, log(x, xt), log(y, yt)),
    }
    .map_err(|e| fail(&e))?;
    draw_legend(&legend, chart, &axes).map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))
}

fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

fn axes(chart: &Chart) -> Option<Axes> {
    let points: Vec<&Point> = chart
        .series
        .iter()
        .flat_map(|s| &s.points)
        .filter(|p| finite(p) && (!chart.log_x || p.x > 0.0))
        .collect();
    if points.is_empty() {
        return None;
    }
    let mut xs: Vec<f64> = points.iter().map(|p| p.x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let (x0, x1) = (xs[0], xs[xs.len() - 1]);
    let x = if chart.log_x {
        let (a, b) = if x0 == x1 { (x0 / 2.0, x1 * 2.0) } else { (x0, x1) };
        let pad = (b / a).powf(0.05);
        (a / pad, b * pad)
    } else {
        let (a, b) = if x0 == x1 { (x0 - 1.0, x1 + 1.0) } else { (x0, x1) };
        let pad = (b - a) * 0.05;
        (a - pad, b + pad)
    };
    let x_ticks = if xs.len() <= 12 { xs } else { linear_ticks(x0, x1) };
    let (y, y_ticks, zeros_on_floor) = if chart.log_y {
        let positive = points
            .iter()
            .flat_map(|p| [p.y, p.y_min, p.y_max])
            .filter(|v| *v > 0.0 && v.is_finite());
        let (lo, hi) = bounds(positive).unwrap_or((0.01, 1.0));
        let zeros = points.iter().any(|p| p.y <= 0.0);
        let lo = snap_down(lo / 1.5);
        // With zeros on the bottom edge, one more step down, so the lowest number stays.
        let (lo, hi) = (if zeros { snap_down(lo * 0.99) } else { lo }, snap_up(hi * 1.1));
        let mut ticks = log_ticks(lo, hi);
        if zeros {
            // The bottom edge stands for 0 there: no number on it.
            ticks.retain(|t| *t > lo * 1.000_001);
        }
        ((lo, hi), ticks, zeros)
    } else {
        let (lo, hi) = bounds(
            points
                .iter()
                .flat_map(|p| [p.y, p.y_min, p.y_max])
                .filter(|v| v.is_finite()),
        )?;
        let lo = lo.min(0.0);
        let hi = if hi <= lo { lo + 1.0 } else { hi + (hi - lo) * 0.1 };
        ((lo, hi), linear_ticks(lo, hi), false)
    };
    let bars = points.iter().any(|p| p.y_max > p.y_min);
    Some(Axes {
        x,
        y,
        x_ticks,
        y_ticks,
        zeros_on_floor,
        bars,
    })
}

/// About six ticks at 1, 2 or 5 times a power of ten, within `lo..=hi`.
fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = hi - lo;
    if span <= 0.0 || !span.is_finite() {
        return vec![lo];
    }
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|k| round_sig(k as f64 * step)).collect()
}

/// The largest of 1, 2, 5 times a power of ten at or below `v` (> 0).
fn snap_down(v: f64) -> f64 {
    let mag = 10f64.powf(v.log10().floor());
    let m = [5.0, 2.0, 1.0].into_iter().find(|m| m * mag <= v).unwrap_or(1.0);
    round_sig(m * mag)
}

/// The smallest of 1, 2, 5 times a power of ten at or above `v` (> 0).
fn snap_up(v: f64) -> f64 {
    let mag = 10f64.powf(v.log10().floor());
    let m = [1.0, 2.0, 5.0, 10.0].into_iter().find(|m| m * mag >= v).unwrap_or(10.0);
    round_sig(m * mag)
}

/// Powers of ten within `lo..=hi`, with 2 and 5 times them when the range spans few decades.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let mults: &[f64] = if b - a <= 3 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    let mut ticks = Vec::new();
    for e in a..=b {
        for m in mults {
            let v = round_sig(m * 10f64.powi(e));
            if v >= lo && v <= hi {
                ticks.push(v);
            }
        }
    }
    if ticks.is_empty() {
        ticks.push(round_sig((lo * hi).sqrt()));
    }
    ticks
}

/// `v` rounded to 7 significant digits, so `0.1 * 3` prints as `0.3`.
fn round_sig(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let p = 10f64.powi(6 - v.abs().log10().floor() as i32);
    (v * p).round() / p
}

/// A tick label: `0`, `0.001`, `2.5`, `100`, `2000`, `10k`, `2.5M`, `1.2G`.
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    format!("{}{suffix}", round_sig(scaled))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// An axis (linear or log) with exactly the given ticks, labelled by [`tick_label`]; no light
/// grid lines.
struct Ticked<R: Ranged<ValueType = f64>> {
    inner: R,
    ticks: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ticked<R> {
    fn new(inner: R, ticks: &[f64]) -> Self {
        Ticked {
            inner,
            ticks: ticks.to_vec(),
        }
    }
}

impl<R: Ranged<ValueType = f64>> Ranged for Ticked<R> {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }

    fn axis_pixel_range(&self, limit: (i32, i32)) -> Range<i32> {
        self.inner.axis_pixel_range(limit)
    }
}

impl<R: Ranged<ValueType = f64>> ValueFormatter<f64> for Ticked<R> {
    fn format(value: &f64) -> String {
        tick_label(*value)
    }
}

fn draw<X, Y>(
    root: &Area<'_>,
    chart: &Chart,
    axes: &Axes,
    x: Ticked<X>,
    y: Ticked<Y>,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)?;
    ctx.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(WHITE)
        .draw()?;
    let floor = axes.y.0;
    let shown = |v: f64| if chart.log_y && v <= 0.0 { floor } else { v };
    for (i, series) in chart.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let pts: Vec<Point> = series
            .points
            .iter()
            .copied()
            .filter(|p| finite(p) && (!chart.log_x || p.x > 0.0))
            .collect();
        let width = if series.reference { 1 } else { 2 };
        ctx.draw_series(LineSeries::new(
            pts.iter().map(|p| (p.x, shown(p.y))),
            colour.stroke_width(width),
        ))?;
        if !series.reference {
            ctx.draw_series(
                pts.iter()
                    .filter(|p| !chart.log_y || p.y > 0.0)
                    .map(|p| Circle::new((p.x, p.y), 3, colour.filled())),
            )?;
        }
        let hollow = pts.iter().filter(|p| chart.log_y && p.y <= 0.0);
        ctx.draw_series(hollow.map(|p| Circle::new((p.x, floor), 4, colour.stroke_width(2))))?;
        let bars = pts
            .iter()
            .filter(|p| p.y_max > p.y_min && (!chart.log_y || p.y_max > 0.0))
            .map(|p| PathElement::new(vec![(p.x, shown(p.y_min)), (p.x, p.y_max)], colour.stroke_width(1)));
        ctx.draw_series(bars)?;
    }
    Ok(())
}

/// Splits a legend entry into lines of at most `width` characters at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + word.len() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

fn draw_legend(area: &Area<'_>, chart: &Chart, axes: &Axes) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let font = ("sans-serif", 13).into_font();
    let mut y = 60;
    for (i, series) in chart.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let width = if series.reference { 1 } else { 2 };
        area.draw(&PathElement::new(vec![(8, y), (36, y)], colour.stroke_width(width)))?;
        if !series.reference {
            area.draw(&Circle::new((22, y), 3, colour.filled()))?;
        }
        for line in wrap(&series.name, 30) {
            area.draw(&Text::new(line, (44, y - 7), font.clone()))?;
            y += 17;
        }
        y += 8;
    }
    let mut notes = Vec::new();
    if axes.bars {
        notes.push("bars: min-max of the runs".to_string());
    }
    if axes.zeros_on_floor {
        notes.push("hollow marker on the bottom edge: a value of 0 (a log axis cannot show it)".to_string());
    }
    y += 8;
    let small = ("sans-serif", 12).into_font().color(&RGBColor(90, 90, 90));
    for note in notes {
        for line in wrap(&note, 34) {
            area.draw(&Text::new(line, (8, y), small.clone()))?;
            y += 15;
        }
        y += 4;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(log_y: bool) -> Chart {
        Chart {
            title: "rate vs threads".into(),
            x_label: "threads".into(),
            y_label: "messages/s".into(),
            series: vec![
                Series {
                    name: "smx".into(),
                    points: vec![
                        Point {
                            x: 2.0,
                            y: 10.0,
                            y_min: 8.0,
                            y_max: 12.0,
                        },
                        Point::exact(4.0, 20.0),
                    ],
                    reference: false,
                },
                Series {
                    name: "crossbeam baseline".into(),
                    points: vec![Point::exact(2.0, 11.0), Point::exact(4.0, 0.0)],
                    reference: true,
                },
            ],
            log_y,
            log_x: false,
        }
    }

    #[test]
    fn writes_an_svg_with_the_series_names() {
        let dir = tempfile::tempdir().unwrap();
        for log_y in [false, true] {
            let path = dir.path().join(format!("c{log_y}.svg"));
            write_svg(&chart(log_y), &path).unwrap();
            let svg = std::fs::read_to_string(&path).unwrap();
            assert!(svg.starts_with("<svg"));
            assert!(svg.contains("crossbeam baseline") && svg.contains("rate vs threads"));
        }
    }

    #[test]
    fn a_chart_without_points_is_an_error() {
        let mut empty = chart(false);
        for s in &mut empty.series {
            s.points.clear();
        }
        let dir = tempfile::tempdir().unwrap();
        let err = write_svg(&empty, &dir.path().join("e.svg")).unwrap_err();
        assert!(err.contains("no measured point"));
    }

    #[test]
    fn tick_labels_are_short_numbers() {
        assert_eq!(tick_label(2_500_000.0), "2.5M");
        assert_eq!(tick_label(3_000_000.0), "3M");
        assert_eq!(tick_label(10_000.0), "10k");
        assert_eq!(tick_label(2000.0), "2000");
        assert_eq!(tick_label(0.1 * 3.0), "0.3");
        assert_eq!(tick_label(0.001), "0.001");
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_label(16.0), "16");
    }

    #[test]
    fn counts_are_labelled_at_their_values_only() {
        let mut c = chart(false);
        c.series[0].points = [2.0, 4.0, 8.0, 16.0, 32.0]
            .iter()
            .map(|&x| Point::exact(x, x * 1e5))
            .collect();
        c.series.truncate(1);
        c.log_x = true;
        let a = axes(&c).unwrap();
        assert_eq!(a.x_ticks, [2.0, 4.0, 8.0, 16.0, 32.0]);
        assert!(a.y_ticks.iter().all(|t| tick_label(*t).len() <= 5), "{:?}", a.y_ticks);
    }

    #[test]
    fn a_log_axis_keeps_small_values_and_puts_zeros_on_the_floor() {
        let mut c = chart(true);
        c.series[0].points = vec![
            Point::exact(10.0, 0.002),
            Point::exact(20.0, 0.0),
            Point::exact(40.0, 60.0),
        ];
        c.series.truncate(1);
        let a = axes(&c).unwrap();
        assert!(a.y.0 <= 0.002 && a.y.1 >= 60.0, "{a:?}");
        assert_eq!(
            (a.y.0, a.y.1),
            (0.0005, 100.0),
            "the ends are round, one step below for the zeros"
        );
        assert!(a.zeros_on_floor);
        assert!(
            a.y_ticks.contains(&0.01) && a.y_ticks.contains(&10.0),
            "{:?}",
            a.y_ticks
        );
        assert!(
            a.y_ticks.contains(&0.001) && !a.y_ticks.contains(&0.0005),
            "{:?}",
            a.y_ticks
        );
    }

    #[test]
    fn linear_ticks_are_round() {
        assert_eq!(linear_ticks(0.0, 110.0), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(linear_ticks(0.0, 2.2e6), [0.0, 500_000.0, 1e6, 1.5e6, 2e6]);
    }
}
