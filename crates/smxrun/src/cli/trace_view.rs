//! `smxrun trace-view FILE.json -o PICTURE.svg`: a `--trace` file drawn as a timeline, one row
//! per thread as Perfetto shows it, for a README or a machine without a browser.
//!
//! It draws what the file says and nothing else: slices (`X`) as bars, nested ones (a write
//! inside a step) below their parent, instants (`i`, firewall misses) as red marks; the
//! colour is the category (step, wait, firewall tick). A window (`--from`, `--to`, in µs since
//! the run's start) zooms in; by default the whole trace is shown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use plotters::prelude::*;
use serde_json::Value;

use super::exit::{self, CliError};
use super::output::Output;

#[derive(Debug, Clone, Args)]
pub struct TraceViewArgs {
    /// A trace written by `smxrun run NET --trace FILE.json`
    #[arg(value_name = "FILE.json")]
    pub file: PathBuf,

    /// The picture to write (SVG)
    #[arg(short = 'o', long = "output", value_name = "PATH.svg")]
    pub output: PathBuf,

    /// Start of the window, in microseconds since the run's start
    #[arg(long, value_name = "US")]
    pub from: Option<f64>,

    /// End of the window, in microseconds since the run's start
    #[arg(long, value_name = "US")]
    pub to: Option<f64>,

    /// Width of the picture in pixels
    #[arg(long, default_value_t = 1400, value_parser = clap::value_parser!(u32).range(400..=10_000))]
    pub width: u32,
}

/// The picture is SVG: a name that says another picture format (`t.png`) would make a file
/// that a viewer of that format cannot open.
fn refuse_other_picture(output: &Path) -> Result<(), CliError> {
    let extension = output.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some(other @ ("png" | "pdf" | "jpg" | "jpeg" | "ps" | "eps" | "gif" | "webp")) => {
            Err(CliError::rejected(format!(
                "-o '{}': trace-view draws SVG, not {other}: name the file .svg (a converter such as rsvg-convert or \
             cairosvg makes a {other} of it)",
                output.display()
            )))
        }
        _ => Ok(()),
    }
}

struct Slice {
    ts: f64,
    dur: f64,
    name: String,
    cat: String,
}

struct Track {
    name: String,
    slices: Vec<Slice>,
    /// Time, name and how many misses each stands for: a `missed ticks` event is one late
    /// wake-up that missed `args.ticks` ticks; any other instant is one.
    instants: Vec<(f64, String, u64)>,
    /// Events of this thread the run did not record (past `--trace-limit`, which keeps each
    /// thread's latest events): the time before its first recorded event is unknown, not idle.
    dropped: u64,
}

pub fn trace_view(args: &TraceViewArgs) -> Result<i32, CliError> {
    refuse_other_picture(&args.output)?;
    super::clobber::refuse_clobbering(&[("-o", &args.output)], &[("trace", &args.file)])?;
    super::clobber::refuse_replacing_other_than_picture(&args.output)?;
    let output = Output::open(Some(&args.output))?;
    let fail = |what: String| CliError::rejected(format!("{}: {what}", args.file.display()));
    let text = std::fs::read_to_string(&args.file).map_err(|e| fail(e.to_string()))?;
    let trace: Value = serde_json::from_str(&text).map_err(|e| fail(format!("not JSON: {e}")))?;
    let mut tracks = tracks(&trace).map_err(fail)?;
    for track in &mut tracks {
        track.dropped = trace["otherData"]["dropped_by_thread"][&track.name]
            .as_u64()
            .unwrap_or(0);
    }
    let (first, last) = span(&tracks);
    // A thread that dropped its early events makes the first recorded event a poor start: the
    // whole run is then drawn from its start, with the unrecorded stretch shaded.
    let dropped = tracks.iter().any(|t| t.dropped > 0);
    let from = args.from.unwrap_or(if dropped { 0.0 } else { first });
    let to = args.to.unwrap_or(last);
    if to <= from || !to.is_finite() || !from.is_finite() {
        return Err(CliError::rejected(format!(
            "trace-view: the window {from}..{to} us is empty (the trace spans {first:.1}..{last:.1} us)"
        )));
    }
    let in_window = |ts: f64, end: f64| end >= from && ts <= to;
    let events = tracks
        .iter()
        .map(|t| {
            t.slices.iter().filter(|s| in_window(s.ts, s.ts + s.dur)).count()
                + t.instants.iter().filter(|i| in_window(i.0, i.0)).count()
        })
        .sum::<usize>();
    if events == 0 {
        return Err(CliError::rejected(format!(
            "trace-view: no event in the window {} to {} (the trace's events span {} to {}); \
             nothing drawn",
            duration(from),
            duration(to),
            duration(first),
            duration(last)
        )));
    }
    let title = trace["otherData"]["net"].as_str().unwrap_or("trace").to_string();
    let svg = draw(args.width, &title, &tracks, from, to)
        .map_err(|e| CliError::rejected(format!("{}: {e}", args.output.display())))?;
    output.write(&svg)?;
    Ok(exit::OK)
}

/// The file's tracks in tid order, with their slices and instants.
fn tracks(trace: &Value) -> Result<Vec<Track>, String> {
    let events = trace["traceEvents"]
        .as_array()
        .ok_or("no traceEvents array (not a trace event file)")?;
    let mut by_tid: BTreeMap<u64, Track> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        let tid = e["tid"].as_u64().ok_or_else(|| format!("event {i} has no tid"))?;
        let name = e["name"].as_str().unwrap_or("").to_string();
        if e["ph"] == "M" && name != "thread_name" {
            continue;
        }
        let t = by_tid.entry(tid).or_insert_with(|| Track {
            name: format!("tid {tid}"),
            slices: Vec::new(),
            instants: Vec::new(),
            dropped: 0,
        });
        match e["ph"].as_str() {
            Some("M") if name == "thread_name" => {
                t.name = e["args"]["name"].as_str().unwrap_or("").to_string();
            }
            Some("X") => {
                let ts = e["ts"].as_f64().ok_or_else(|| format!("event {i} has no ts"))?;
                let dur = e["dur"].as_f64().ok_or_else(|| format!("event {i} has no dur"))?;
                let cat = e["cat"].as_str().unwrap_or("").to_string();
                t.slices.push(Slice { ts, dur, name, cat });
            }
            Some("i") => {
                let ts = e["ts"].as_f64().ok_or_else(|| format!("event {i} has no ts"))?;
                let count = e["args"]["ticks"].as_u64().unwrap_or(1);
                t.instants.push((ts, name, count));
            }
            _ => {}
        }
    }
    Ok(by_tid.into_values().collect())
}

/// First and last instant of the trace (µs).
fn span(tracks: &[Track]) -> (f64, f64) {
    let starts = tracks
        .iter()
        .flat_map(|t| t.slices.iter().map(|s| s.ts).chain(t.instants.iter().map(|i| i.0)));
    let ends = tracks.iter().flat_map(|t| {
        t.slices
            .iter()
            .map(|s| s.ts + s.dur)
            .chain(t.instants.iter().map(|i| i.0))
    });
    (
        {
            let first = starts.fold(f64::INFINITY, f64::min);
            if first.is_finite() { first } else { 0.0 }
        },
        ends.fold(0.0, f64::max),
    )
}

/// Narrowest and widest label column in pixels; between them it takes the longest row name.
const LABELS_MIN: i32 = 130;
const LABELS_MAX: i32 = 320;
/// Left margin of a row's name, and the least room between the name and the plot.
const PAD: i32 = 8;
/// Font sizes (plotters' units) of the row names and of the small print.
const NAME_FONT: f64 = 14.0;
const SMALL_FONT: f64 = 11.0;
const ROW: i32 = 46;
const TOP: i32 = 58;
const AXIS: i32 = 44;

fn colour(cat: &str, depth: usize) -> RGBColor {
    match (cat, depth) {
        ("step", 0) => RGBColor(66, 133, 198),
        ("step", _) => RGBColor(120, 170, 220),
        ("wait", _) => RGBColor(240, 170, 60),
        ("firewall", _) => RGBColor(90, 175, 120),
        _ => RGBColor(150, 150, 150),
    }
}

/// The kinds of slice [`draw_shares`] stacks, in its order; anything else is the last.
const KINDS: [&str; 4] = ["step", "wait", "firewall", ""];

/// Per column of `columns` between `from` and `to`: the time each of [`KINDS`] covered, and
/// whether it ran there at all. The outermost slices count, a step with the waits inside it;
/// but a firewall's tick is the frame a cyclic executive steps its boxes in, so the steps
/// inside a tick count as steps, their time taken off the tick's: the row shows that the
/// executive ran its boxes, and no time twice.
fn shares(slices: &[Slice], from: f64, to: f64, columns: usize) -> (Vec<[f64; 4]>, Vec<[bool; 4]>) {
    const FIREWALL: usize = 2;
    let width = (to - from) / columns as f64;
    let mut covered = vec![[0.0f64; 4]; columns];
    let mut present = vec![[false; 4]; columns];
    let kind_of = |s: &Slice| KINDS.iter().position(|k| *k == s.cat).unwrap_or(3);
    let parents = parents(slices);
    for (i, s) in slices.iter().enumerate() {
        let kind = kind_of(s);
        let (start, end) = (s.ts.max(from), (s.ts + s.dur).min(to));
        // Inside a tick, as its own kind; inside anything else, part of what holds it.
        let parent_kind = match parents[i].map(|p| (p, kind_of(&slices[p]))) {
            None => None,
            Some((p, FIREWALL)) if kind != FIREWALL && parents[p].is_none() => Some(FIREWALL),
            Some(_) => continue,
        };
        if end < start {
            continue;
        }
        let first = (((start - from) / width) as usize).min(columns - 1);
        let last = (((end - from) / width) as usize).min(columns - 1);
        for (c, column) in covered.iter_mut().enumerate().take(last + 1).skip(first) {
            let (c0, c1) = (from + c as f64 * width, from + (c + 1) as f64 * width);
            let overlap = (end.min(c1) - start.max(c0)).max(0.0);
            column[kind] += overlap;
            if let Some(parent) = parent_kind {
                column[parent] = (column[parent] - overlap).max(0.0);
            }
            // A slice that ends on a column's edge never ran in the next one; one of no
            // length ran where it stands.
            present[c][kind] |= overlap > 0.0 || start == end;
        }
    }
    (covered, present)
}

/// The slice each slice of a track lies in, if any (slices sorted by start, parents first).
fn parents(slices: &[Slice]) -> Vec<Option<usize>> {
    let mut open: Vec<usize> = Vec::new();
    slices
        .iter()
        .enumerate()
        .map(|(i, s)| {
            while open.last().is_some_and(|&p| slices[p].ts + slices[p].dur <= s.ts) {
                open.pop();
            }
            let parent = open.last().copied();
            open.push(i);
            parent
        })
        .collect()
}

/// Nesting depth of each slice of a track (slices sorted by start, parents first).
fn depths(slices: &[Slice]) -> Vec<usize> {
    let parents = parents(slices);
    let mut depths = Vec::with_capacity(slices.len());
    for parent in &parents {
        // A parent comes before its children, so its depth is known.
        let depth = parent.map_or(0, |p| depths[p] + 1);
        depths.push(depth);
    }
    depths
}

/// Where the plot stands in the picture and the window of the run it shows.
struct Frame {
    /// Left edge of the plot: the label column's width.
    left: i32,
    plot_w: i32,
    from: f64,
    to: f64,
}

impl Frame {
    /// The x of a time (µs since the run's start).
    fn x(&self, us: f64) -> i32 {
        self.left + ((us - self.from) / (self.to - self.from) * self.plot_w as f64).round() as i32
    }
}

/// Width in pixels of `text` written at `size` (plotters writes size S as an SVG font of S/1.24
/// px), from the advances of DejaVu Sans, the widest of the usual sans-serif fonts, rounded up
/// by class: an estimate never short of what a viewer draws, which is all a layout needs.
fn text_px(text: &str, size: f64) -> i32 {
    let em: f64 = text
        .chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | 'I' | 'J' | '\'' | '|' | '.' | ',' | ':' | ';' | '!' => 0.35,
            'f' | 't' | 'r' | ' ' | '(' | ')' | '-' | '/' | '[' | ']' | '{' | '}' => 0.42,
            'm' | 'w' | 'M' | 'W' => 1.0,
            '#' | '%' | '&' | '@' => 0.85,
            '_' => 0.5,
            c if c.is_ascii_lowercase() || c.is_ascii_digit() => 0.64,
            c if c.is_ascii_uppercase() => 0.79,
            c if c.is_ascii() => 0.84,
            _ => 1.0,
        })
        .sum();
    (em * size / 1.24).ceil() as i32
}

/// The label column: as wide as the longest row name, or the longest item of a row's count of
/// misses, needs, within [`LABELS_MIN`] and [`LABELS_MAX`] (a third of a narrow picture at
/// most, so the plot keeps most of it).
fn label_column(width: u32, tracks: &[Track], misses: &[Vec<String>]) -> i32 {
    let max = LABELS_MAX.min(width as i32 / 3).max(LABELS_MIN);
    let names = tracks.iter().map(|t| text_px(&t.name, NAME_FONT));
    // With the comma that follows an item on its line.
    let items = misses.iter().flatten().map(|m| text_px(&format!("{m},"), SMALL_FONT));
    let widest = names.chain(items).max().unwrap_or(0);
    (PAD + widest + PAD).clamp(LABELS_MIN, max)
}

/// `items` joined by commas into lines of at most `room` pixels, an item that is wider alone
/// broken between its words.
fn wrap(items: &[String], size: f64, room: i32) -> Vec<String> {
    let fits = |text: &str| text_px(text, size) <= room;
    let then = |line: &str, more: &str| {
        if line.is_empty() {
            more.to_string()
        } else {
            format!("{line} {more}")
        }
    };
    let mut lines = Vec::new();
    let mut line = String::new();
    for (i, item) in items.iter().enumerate() {
        let item = if i + 1 < items.len() {
            format!("{item},")
        } else {
            item.clone()
        };
        if fits(&then(&line, &item)) {
            line = then(&line, &item);
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        for word in item.split(' ') {
            if line.is_empty() || fits(&then(&line, word)) {
                line = then(&line, word);
            } else {
                lines.push(std::mem::take(&mut line));
                line = word.to_string();
            }
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The count of a row's instants in the window, one item per kind, saying what is counted:
/// `949 missed ticks (76 times)` for 76 late wake-ups that missed 949 ticks in all, then
/// `5 overruns`, `3 produce misses`, `2 consume misses`, and any other kind by its name.
fn misses(track: &Track, from: f64, to: f64) -> Vec<String> {
    // Per kind: the misses counted and the events that said them.
    let mut by_name: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (_, name, count) in track.instants.iter().filter(|(ts, ..)| (from..=to).contains(ts)) {
        let sum = by_name.entry(name.as_str()).or_default();
        // A count is what the file says: one past any real run must not wrap the sum.
        *sum = (sum.0.saturating_add(*count), sum.1 + 1);
    }
    let known = [
        ("missed ticks", "missed tick", "missed ticks"),
        ("overrun", "overrun", "overruns"),
        ("produce miss", "produce miss", "produce misses"),
        ("consume miss", "consume miss", "consume misses"),
    ];
    let mut items = Vec::new();
    for (name, one, many) in known {
        if let Some((count, events)) = by_name.remove(name) {
            let mut item = format!("{count} {}", if count == 1 { one } else { many });
            if events != count {
                item.push_str(&match events {
                    1 => " (once)".to_string(),
                    n => format!(" ({n} times)"),
                });
            }
            items.push(item);
        }
    }
    items.extend(by_name.iter().map(|(name, (count, _))| format!("{name}: {count}")));
    items
}

/// Height of a row whose label has `lines` lines of misses under its name: the plot's
/// [`ROW`] pixels, or more for a name and its lines.
fn row_height(lines: usize) -> i32 {
    ROW.max(MISS_Y + LINE * lines as i32 + 2)
}

/// Top of a row's first line of misses (under its name), and the spacing of those lines.
const MISS_Y: i32 = ROW / 2 + 8;
const LINE: i32 = 13;

/// `name` shortened with an ellipsis to fit `room` pixels. A box's `#id` is kept: it is what
/// tells two boxes of one long name apart, and what the report calls the box by.
fn fit(name: &str, size: f64, room: i32) -> String {
    if text_px(name, size) <= room {
        return name.to_string();
    }
    let (head, tail) = match name.rfind('#') {
        Some(i) if i + 1 < name.len() && name[i + 1..].bytes().all(|b| b.is_ascii_digit()) => name.split_at(i),
        _ => (name, ""),
    };
    let mut head: Vec<char> = head.chars().collect();
    while head.pop().is_some() {
        let short = format!("{}\u{2026}{tail}", head.iter().collect::<String>().trim_end());
        if text_px(&short, size) <= room {
            return short;
        }
    }
    format!("\u{2026}{tail}")
}

/// The picture as SVG text, written by the caller through [`Output`], which checked the path
/// before the trace was read and replaces a file whole.
fn draw(width: u32, title: &str, tracks: &[Track], from: f64, to: f64) -> Result<String, String> {
    // A row's count of misses stands in the label column under its name, wrapped to the
    // column, where it can cover no mark of the plot; the row grows to hold its lines.
    let misses: Vec<Vec<String>> = tracks.iter().map(|t| misses(t, from, to)).collect();
    let left = label_column(width, tracks, &misses);
    let frame = Frame {
        left,
        plot_w: width as i32 - left - 20,
        from,
        to,
    };
    let labels: Vec<Vec<String>> = misses.iter().map(|m| wrap(m, SMALL_FONT, left - 2 * PAD)).collect();
    let height = (TOP + labels.iter().map(|l| row_height(l.len())).sum::<i32>() + AXIS) as u32;
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
    draw_on(&root, width, title, tracks, &labels, &frame)?;
    drop(root);
    Ok(svg)
}

fn draw_on(
    root: &Area,
    width: u32,
    title: &str,
    tracks: &[Track],
    labels: &[Vec<String>],
    frame: &Frame,
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<_>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let Frame { plot_w, from, to, .. } = *frame;
    // A slice drawn as a bar takes a pixel at least, and the gap to the next one needs another:
    // with more slices on one line (a row's level of nesting) than half the plot's pixels, the
    // gaps close, a thread idle half its time reads as always busy, and more slices smear into
    // one bar (a file of megabytes too). Then each column shows the share of its time spent in
    // each kind of slice instead. Rows and levels do not crowd each other: the busiest decides.
    let shown = |s: &Slice| s.ts + s.dur >= from && s.ts <= to;
    let visible: usize = tracks
        .iter()
        .map(|t| t.slices.iter().filter(|s| shown(s)).count())
        .sum();
    let busiest = tracks
        .iter()
        .flat_map(|t| {
            let mut per_level = [0usize; 3];
            for (s, depth) in t.slices.iter().zip(depths(&t.slices)) {
                if shown(s) {
                    // As drawn: the third level and those below it share a line.
                    per_level[depth.min(2)] += 1;
                }
            }
            per_level
        })
        .max()
        .unwrap_or(0);
    let dense = 2 * busiest > plot_w as usize;
    draw_heading(root, title, tracks, frame, dense.then_some(visible)).map_err(e)?;
    let mut y0 = TOP;
    for (row, (track, lines)) in tracks.iter().zip(labels).enumerate() {
        let h = row_height(lines.len());
        let band = if row % 2 == 0 { RGBColor(246, 246, 246) } else { WHITE };
        root.draw(&Rectangle::new([(0, y0), (width as i32, y0 + h)], band.filled()))
            .map_err(e)?;
        root.draw(&Text::new(
            fit(&track.name, NAME_FONT, frame.left - 2 * PAD),
            (PAD, y0 + ROW / 2 - 8),
            ("sans-serif", NAME_FONT).into_font(),
        ))
        .map_err(e)?;
        for (i, line) in lines.iter().enumerate() {
            let small = ("sans-serif", SMALL_FONT).into_font().color(&RED);
            root.draw(&Text::new(line.clone(), (PAD, y0 + MISS_Y + LINE * i as i32), small))
                .map_err(e)?;
        }
        // The plot's marks keep their height in a taller row, centred in it.
        let plot_y = y0 + (h - ROW) / 2;
        draw_unrecorded(root, frame, track, plot_y).map_err(e)?;
        if dense {
            draw_shares(root, frame, track, plot_y).map_err(e)?;
        } else {
            draw_slices(root, frame, track, plot_y).map_err(e)?;
        }
        draw_instants(root, frame, track, plot_y).map_err(e)?;
        y0 += h;
    }
    draw_axis(root, frame, y0, width).map_err(e)?;
    root.present().map_err(|e| e.to_string())
}

/// The title line (the window, and how a dense window is drawn) and the legend.
fn draw_heading(
    root: &Area,
    title: &str,
    tracks: &[Track],
    frame: &Frame,
    dense: Option<usize>,
) -> Result<(), DrawError> {
    let Frame { left, plot_w, from, to } = *frame;
    let small = ("sans-serif", SMALL_FONT).into_font();
    let resolution = (to - from) / 1000.0;
    let mut head = format!(
        "{title}: {} to {} since the run's start",
        precise(from, resolution),
        precise(to, resolution)
    );
    if let Some(visible) = dense {
        let column = (to - from) / f64::from(plot_w / SHARE_PX);
        head.push_str(&format!(
            " ({visible} slices: each bar is the share of {} spent in each kind; --from/--to zoom in)",
            duration(column)
        ));
    }
    root.draw(&Text::new(head, (left, 8), ("sans-serif", NAME_FONT).into_font()))?;
    let legend = [
        ("step", "step / batch of steps"),
        ("wait", "wait on a channel"),
        ("firewall", "firewall tick"),
    ];
    // Each entry as wide as its text, so a wide label column leaves the legend on the picture.
    let mut lx = left;
    for (cat, text) in legend {
        root.draw(&Rectangle::new([(lx, 32), (lx + 14, 44)], colour(cat, 0).filled()))?;
        root.draw(&Text::new(text, (lx + 20, 31), small.clone()))?;
        lx += 20 + text_px(text, SMALL_FONT) + 40;
    }
    let text = "miss / overrun (instant)";
    root.draw(&Polygon::new(vec![(lx, 32), (lx + 12, 32), (lx + 6, 44)], RED.filled()))?;
    root.draw(&Text::new(text, (lx + 18, 31), small.clone()))?;
    let dropped: u64 = tracks.iter().map(|t| t.dropped).sum();
    if dropped > 0 {
        lx += 18 + text_px(text, SMALL_FONT) + 40;
        root.draw(&Rectangle::new([(lx, 32), (lx + 14, 44)], NOT_RECORDED.filled()))?;
        let text = format!("not recorded: {dropped} events past --trace-limit (it keeps each thread's latest)");
        root.draw(&Text::new(text, (lx + 20, 31), small))?;
    }
    Ok(())
}

/// A row's instants (misses, overruns) as red marks, one per mark's width: a thousand misses
/// in one place are one mark, not a blot, and the row's label counts them all.
fn draw_instants(root: &Area, frame: &Frame, track: &Track, y0: i32) -> Result<(), DrawError> {
    let Frame { from, to, .. } = *frame;
    let mut marks: Vec<i32> = Vec::new();
    for (ts, ..) in track.instants.iter().filter(|(ts, ..)| (from..=to).contains(ts)) {
        marks.push(frame.x(*ts) / MARK_PX * MARK_PX + MARK_PX / 2);
    }
    marks.dedup();
    for cx in marks {
        let by = y0 + ROW - 4;
        root.draw(&Polygon::new(
            vec![(cx - 5, by - 9), (cx + 5, by - 9), (cx, by)],
            RED.filled(),
        ))?;
    }
    Ok(())
}

/// The time axis under the rows, its labels kept inside the picture.
fn draw_axis(root: &Area, frame: &Frame, axis_y: i32, width: u32) -> Result<(), DrawError> {
    let Frame { left, plot_w, from, to } = *frame;
    let x = |us: f64| frame.x(us);
    let small = ("sans-serif", SMALL_FONT).into_font();
    root.draw(&PathElement::new(vec![(left, axis_y), (left + plot_w, axis_y)], BLACK))?;
    let step = nice_step((to - from) / 8.0);
    let mut t = (from / step).ceil() * step;
    while t <= to {
        let tx = x(t);
        root.draw(&PathElement::new(vec![(tx, axis_y), (tx, axis_y + 5)], BLACK))?;
        let label = tick_label(t, step, to.abs().max(from.abs()));
        // Centred under its tick, but kept inside the picture (the last tick sits at its edge).
        let half = label.len() as i32 * CHAR_PX / 2;
        let lx = (tx - half).clamp(2, width as i32 - 2 * half - 4);
        root.draw(&Text::new(label, (lx, axis_y + 9), small.clone()))?;
        t += step;
    }
    Ok(())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// A thread that dropped events has a stretch of the window before its first recorded event
/// in which the picture cannot say what it did: that stretch is shaded and labelled.
fn draw_unrecorded(root: &Area, frame: &Frame, track: &Track, y0: i32) -> Result<(), DrawError> {
    let Frame { left, from, to, .. } = *frame;
    let first = track
        .slices
        .iter()
        .map(|s| s.ts)
        .chain(track.instants.iter().map(|i| i.0))
        .fold(f64::INFINITY, f64::min);
    if track.dropped == 0 || first <= from {
        return Ok(());
    }
    let end = frame.x(first.min(to));
    root.draw(&Rectangle::new(
        [(left, y0 + 3), (end, y0 + ROW - 3)],
        NOT_RECORDED.filled(),
    ))?;
    let text = "not recorded";
    if end - left > text_px(text, SMALL_FONT) + 8 {
        let small = ("sans-serif", SMALL_FONT).into_font();
        root.draw(&Text::new(text, (left + 4, y0 + ROW / 2 - 6), small))?;
    }
    Ok(())
}
type DrawError = DrawingAreaErrorKind<<SVGBackend<'static> as DrawingBackend>::ErrorType>;

/// Each slice of the window as a bar, nested ones below their parent, named when there is room.
fn draw_slices(root: &Area, frame: &Frame, track: &Track, y0: i32) -> Result<(), DrawError> {
    let Frame { from, to, .. } = *frame;
    let x = |us: f64| frame.x(us);
    let small = ("sans-serif", SMALL_FONT).into_font();
    for (s, depth) in track.slices.iter().zip(depths(&track.slices)) {
        if s.ts + s.dur < from || s.ts > to {
            continue;
        }
        let top = y0 + 4 + 13 * depth.min(2) as i32;
        let (a, b) = (x(s.ts.max(from)), x((s.ts + s.dur).min(to)).max(x(s.ts.max(from)) + 1));
        root.draw(&Rectangle::new(
            [(a, top), (b, top + 12)],
            colour(&s.cat, depth).filled(),
        ))?;
        if b - a > 7 * s.name.len() as i32 {
            root.draw(&Text::new(s.name.clone(), (a + 3, top), small.clone().color(&WHITE)))?;
        }
    }
    Ok(())
}

/// Columns [`SHARE_PX`] wide, each a stack of bars whose heights are the shares of the column's
/// time the track's slices of each kind covered.
fn draw_shares(root: &Area, frame: &Frame, track: &Track, y0: i32) -> Result<(), DrawError> {
    let Frame { left, plot_w, from, to } = *frame;
    let columns = (plot_w / SHARE_PX).max(1) as usize;
    let (covered, present) = shares(&track.slices, from, to, columns);
    let width = (to - from) / columns as f64;
    let full = ROW - 10;
    for (c, (column, present)) in covered.iter().zip(&present).enumerate() {
        let x0 = left + c as i32 * SHARE_PX;
        let mut bottom = y0 + ROW - 5;
        for (kind, (time, present)) in KINDS.iter().zip(column.iter().zip(present)) {
            let mut h = ((time / width).min(1.0) * f64::from(full)).round() as i32;
            // A kind that took a share under half a pixel still ran in the column: a firewall's
            // ticks of 0.3 us every 10 us would otherwise leave its row blank. One pixel is the
            // picture's resolution, so no share is drawn more than a pixel taller than it is.
            if *present {
                h = h.max(MIN_SHARE_PX);
            }
            h = h.min(bottom - (y0 + ROW - 5 - full));
            if h > 0 {
                let bar = [(x0, bottom - h), (x0 + SHARE_PX - 1, bottom)];
                root.draw(&Rectangle::new(bar, colour(kind, 0).filled()))?;
                bottom -= h;
            }
        }
    }
    Ok(())
}

/// The shade of a stretch a thread did not record.
const NOT_RECORDED: RGBColor = RGBColor(215, 215, 215);

/// Width of a miss mark in pixels: marks closer than that are drawn as one.
const MARK_PX: i32 = 10;

/// Width of a column of [`draw_shares`] in pixels.
const SHARE_PX: i32 = 4;

/// Least height in pixels of a kind of slice in a column of [`draw_shares`] that it ran in,
/// however briefly: enough to be seen, and no more than the rounding of any share to pixels.
const MIN_SHARE_PX: i32 = 1;

/// Width of a character of the axis labels' font, near enough to keep a label on the picture.
const CHAR_PX: i32 = 6;

/// A time since the run's start in the unit that suits its size: `850 us`, `12.5 ms`, `19 s`.
fn duration(us: f64) -> String {
    let (value, unit) = if us.abs() >= 1e6 {
        (us / 1e6, "s")
    } else if us.abs() >= 1e3 {
        (us / 1e3, "ms")
    } else {
        (us, "us")
    };
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {unit}")
}

/// The label of a tick at `t` µs on an axis that reaches `end` µs with ticks `step` µs apart:
/// in the unit of the axis's reach, with as many decimals as the step needs (`19 s`, `0.5 s`,
/// and in a narrow window far into a run `1.70002 s`, never `1700020 us`).
fn tick_label(t: f64, step: f64, end: f64) -> String {
    let (scale, unit) = unit_of(end);
    let decimals = (-(step / scale).log10().floor()).max(0.0) as usize;
    format!("{:.*} {unit}", decimals, t / scale)
}

/// A time since the run's start, precise to `resolution` µs, in the unit that suits its size.
fn precise(us: f64, resolution: f64) -> String {
    let (scale, unit) = unit_of(us);
    let decimals = (-(resolution / scale).log10().floor()).clamp(0.0, 9.0) as usize;
    let text = format!("{:.*}", decimals, us / scale);
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text} {unit}")
}

/// The scale and name of the unit that suits a time of `us` µs.
fn unit_of(us: f64) -> (f64, &'static str) {
    if us.abs() >= 1e6 {
        (1e6, "s")
    } else if us.abs() >= 1e3 {
        (1e3, "ms")
    } else {
        (1.0, "us")
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(ts: f64, dur: f64, cat: &str) -> Slice {
        Slice {
            ts,
            dur,
            name: cat.to_string(),
            cat: cat.to_string(),
        }
    }

    /// A cyclic executive's steps inside its ticks count as steps; a free thread's waits inside
    /// its steps stay part of the step.
    #[test]
    fn steps_inside_a_tick_are_steps_and_waits_inside_a_step_are_the_step() {
        let slices = [
            slice(0.0, 10.0, "firewall"),
            slice(2.0, 3.0, "step"),
            slice(20.0, 10.0, "step"),
            slice(22.0, 6.0, "wait"),
        ];
        let (covered, present) = shares(&slices, 0.0, 40.0, 2);
        assert_eq!(covered[0], [3.0, 0.0, 7.0, 0.0]);
        assert_eq!(present[0], [true, false, true, false]);
        assert_eq!(covered[1], [10.0, 0.0, 0.0, 0.0]);
        assert_eq!(present[1], [true, false, false, false]);
    }
}
