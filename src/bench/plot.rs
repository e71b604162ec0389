//! SVG line charts with plotters: the pictures a person would rather look at than a table.
//!
//! One generic chart (named series of points, each point a median with its min-max range drawn
//! as a vertical bar) serves every experiment; the experiments only choose axes and series.
//! Text is left to the SVG viewer's fonts, so no font files are needed.

use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
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
    /// Drawn dashed-looking (thin, no markers): reference lines such as a baseline or a floor.
    pub reference: bool,
}

/// What to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Logarithmic y axis (values <= 0 are dropped from the drawing).
    pub log_y: bool,
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

/// Writes `chart` as an SVG file at `path`. Charts without any point are an error.
pub fn write_svg(chart: &Chart, path: &Path) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    let points: Vec<&Point> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|p| p.x.is_finite() && p.y.is_finite() && (!chart.log_y || p.y > 0.0))
        .collect();
    if points.is_empty() {
        return Err(format!("cannot draw {}: no measured point", path.display()));
    }
    let (mut x0, mut x1) = bounds(points.iter().map(|p| p.x));
    let lows = points
        .iter()
        .map(|p| if chart.log_y && p.y_min <= 0.0 { p.y } else { p.y_min });
    let (mut y0, _) = bounds(lows);
    let (_, mut y1) = bounds(points.iter().map(|p| p.y_max.max(p.y)));
    if x0 == x1 {
        x0 -= 1.0;
        x1 += 1.0;
    }
    let pad = (x1 - x0) * 0.05;
    x0 -= pad;
    x1 += pad;
    if chart.log_y {
        y0 /= 2.0;
        y1 *= 2.0;
    } else {
        y0 = y0.min(0.0);
        y1 = if y1 <= y0 { y0 + 1.0 } else { y1 + (y1 - y0) * 0.1 };
    }
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    if chart.log_y {
        draw(&root, chart, x0..x1, (y0..y1).log_scale()).map_err(|e| fail(&e))?;
    } else {
        draw(&root, chart, x0..x1, y0..y1).map_err(|e| fail(&e))?;
    }
    root.present().map_err(|e| fail(&e))
}

fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw<Y>(
    root: &Area<'_>,
    chart: &Chart,
    x: std::ops::Range<f64>,
    y: Y,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(80)
        .build_cartesian_2d(x, y)?;
    ctx.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .draw()?;
    for (i, series) in chart.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let pts: Vec<Point> = series
            .points
            .iter()
            .copied()
            .filter(|p| p.x.is_finite() && p.y.is_finite() && (!chart.log_y || p.y > 0.0))
            .collect();
        let width = if series.reference { 1 } else { 2 };
        ctx.draw_series(LineSeries::new(
            pts.iter().map(|p| (p.x, p.y)),
            colour.stroke_width(width),
        ))?
        .label(series.name.as_str())
        .legend(move |(lx, ly)| PathElement::new(vec![(lx, ly), (lx + 20, ly)], colour.stroke_width(2)));
        if !series.reference {
            ctx.draw_series(pts.iter().map(|p| Circle::new((p.x, p.y), 3, colour.filled())))?;
        }
        let bars = pts
            .iter()
            .filter(|p| p.y_max > p.y_min && (!chart.log_y || p.y_min > 0.0))
            .map(|p| PathElement::new(vec![(p.x, p.y_min), (p.x, p.y_max)], colour.stroke_width(1)));
        ctx.draw_series(bars)?;
    }
    ctx.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
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
}
