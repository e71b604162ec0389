//! The human-readable report: aligned tables of nets and channels, then totals.

use std::fmt::Write;

use super::cells::{self, node};
use super::{Report, Status};

/// A column-aligned table; numbers are right-aligned, text left-aligned.
struct Table {
    header: Vec<&'static str>,
    rows: Vec<Vec<String>>,
    right: Vec<bool>,
}

impl Table {
    fn new(header: Vec<&'static str>, right: Vec<bool>) -> Self {
        Table {
            header,
            rows: Vec::new(),
            right,
        }
    }

    fn render(&self, out: &mut String) {
        let mut width: Vec<usize> = self.header.iter().map(|h| h.len()).collect();
        for row in &self.rows {
            for (w, cell) in width.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: Vec<&str>, out: &mut String| {
            let mut text = String::new();
            for (i, cell) in cells.iter().enumerate() {
                if i > 0 {
                    text.push_str("  ");
                }
                let pad = width[i].saturating_sub(cell.chars().count());
                if self.right[i] {
                    text.push_str(&" ".repeat(pad));
                    text.push_str(cell);
                } else {
                    text.push_str(cell);
                    text.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(self.header.clone(), out);
        let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
        line(rule.iter().map(String::as_str).collect(), out);
        for row in &self.rows {
            line(row.iter().map(String::as_str).collect(), out);
        }
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".to_string())
}

/// The report as text tables, naming settings by the `RunOptions` fields.
pub fn render(report: &Report) -> String {
    render_with(report, crate::lever::LeverWords::default())
}

/// The report as text tables, naming settings in `words` (the driver's own).
pub fn render_with(report: &Report, words: crate::lever::LeverWords) -> String {
    let mut out = String::new();
    render_nets(&mut out, report);
    render_channels(&mut out, report);
    render_box_figures(&mut out, report);
    out.push_str(&super::latency::render(&report.latency));
    out.push_str(&super::firewall::render(&report.firewalls));
    for (section, rows) in &report.sections {
        let _ = writeln!(out, "\n{section}");
        for row in rows {
            let _ = writeln!(out, "  {}", row.summary.clone().unwrap_or_else(|| pairs(row)));
        }
    }
    let warnings = render_notes(&mut out, report);
    render_total(&mut out, report, warnings);
    for line in super::platform::verdicts(report, words) {
        let _ = writeln!(out, "{line}");
    }
    out
}

fn render_nets(out: &mut String, report: &Report) {
    let mut nets = Table::new(
        vec![
            "id",
            "net",
            "impl",
            "core",
            "loop count",
            "loop rate [1/s]",
            "wall time [s]",
            "status",
        ],
        vec![true, false, false, true, true, true, true, false],
    );
    for n in &report.nets {
        nets.rows.push(vec![
            n.id.to_string(),
            n.name.clone(),
            n.implementation.clone(),
            opt(n.core),
            n.loop_count.to_string(),
            format!("{:.0}", n.loop_rate),
            format!("{:.6}", n.wall_time_s),
            match &n.error {
                Some(e) => format!("{}: {e}", n.status.as_str()),
                None => n.status.as_str().to_string(),
            },
        ]);
    }
    out.push_str("Nets\n");
    nets.render(out);
}

fn render_channels(out: &mut String, report: &Report) {
    let mut channels = Table::new(
        vec![
            "id",
            "channel",
            "from",
            "to",
            "port",
            "kind",
            "timing",
            "len",
            "written",
            "read",
            "overwritten",
            "duplicated",
            "dropped",
            "left",
            "latency p50/p99/p99.9/max (samples)",
        ],
        vec![
            true, false, false, false, false, false, false, true, true, true, true, true, true, true, false,
        ],
    );
    for c in &report.channels {
        channels.rows.push(vec![
            c.id.to_string(),
            c.name.clone(),
            node(&c.from, c.from_id),
            node(&c.to, c.to_id),
            c.port.clone(),
            c.smx_type.to_string(),
            timing(c.timing).to_string(),
            c.len.to_string(),
            c.written.to_string(),
            c.read.to_string(),
            c.overwritten.to_string(),
            c.duplicated.to_string(),
            c.dropped.to_string(),
            c.left.to_string(),
            cells::latency(&c.latency_ns),
        ]);
    }
    if !report.channels.is_empty() {
        out.push_str("\nChannels\n");
        channels.render(out);
        for c in &report.channels {
            for note in [channel_note(report, c), unsettled_note(report, c)]
                .into_iter()
                .flatten()
            {
                out.push_str(&cells::note_lines(&note));
            }
        }
    }
}

/// The boxes' own figures, for the boxes whose figures have no section of their own.
fn render_box_figures(out: &mut String, report: &Report) {
    let with_stats: Vec<_> = report
        .nets
        .iter()
        .filter(|n| (n.stats.section.is_none() && !n.stats.is_empty()) || n.unconnected_writes > 0)
        .collect();
    if !with_stats.is_empty() {
        out.push_str("\nBox figures\n");
        for n in with_stats {
            let _ = writeln!(out, "  {}: {}", node(&n.name, n.id), figures_line(n));
        }
    }
}

/// "How it ran" (the runtime's decisions, [`Report::notes`]) and "Warnings"; returns how many
/// warnings.
fn render_notes(out: &mut String, report: &Report) -> usize {
    if !report.notes.is_empty() {
        out.push_str("\nHow it ran (what the runtime chose for this machine; the option in brackets changes it)\n");
        for note in &report.notes {
            out.push_str(&cells::note_lines(note));
        }
    }
    if !report.warnings.is_empty() {
        out.push_str("\nWarnings\n");
        for w in &report.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
    report.warnings.len()
}

/// The total line, and the line that asks for attention to the warnings.
fn render_total(out: &mut String, report: &Report, warnings: usize) {
    let _ = write!(
        out,
        "\nTotal: wall time {:.6} s, {} messages, {}status {}",
        report.wall_time_s,
        report.messages,
        total_rate(report),
        report.status.as_str()
    );
    if report.status == Status::Failed {
        let failed = report.nets.iter().filter(|n| n.status == Status::Failed).count();
        let _ = write!(out, " ({failed} net(s) failed)");
    }
    let stuck = report.nets.iter().filter(|n| n.status == Status::Stuck).count();
    if stuck > 0 {
        let _ = write!(out, " ({stuck} net(s) stuck, their threads left running)");
    }
    out.push('\n');
    if warnings > 0 {
        let _ = writeln!(
            out,
            "Attention: {} under Warnings above: something did not go as asked",
            if warnings == 1 {
                "1 warning".to_string()
            } else {
                format!("{warnings} warnings")
            }
        );
    }
}

/// Whether a runtime note explains a choice made for this machine by an `auto` mode (the
/// cyclic executive, placement, chaining, real-time scheduling, spinning through a period, the
/// slots of a link's ring fitted to the room of its file system)
/// rather than something that did not go as asked: choices are listed apart, as how the run
/// went ([`super::Report::notes`]), so that a first run does not read as a list of problems.
pub fn is_decision(note: &str) -> bool {
    const TOPICS: [&str; 5] = [
        "tt-mode auto:",
        "placement:",
        "chaining:",
        "real-time scheduling",
        "link ring:",
    ];
    TOPICS.iter().any(|t| note.starts_with(t)) || note.contains(": spins through each")
}

/// `183378 messages/s, ` when every pair ran free; nothing when some ran at a firewall's
/// period: a time-triggered pair's rate is its period's, and a sum with a free-running pair's
/// would be neither (the Nets table gives each box's loop rate).
fn total_rate(report: &Report) -> String {
    let timed = report.channels.iter().any(|c| c.timing == "time_triggered");
    let free = report.channels.iter().any(|c| c.timing != "time_triggered");
    match (timed, free) {
        (true, true) => "no total rate (time-triggered pairs run at their period: see each box's loop rate), ".into(),
        _ => format!("{:.0} messages/s, ", report.messages_per_s),
    }
}

fn timing(t: &str) -> &'static str {
    match t {
        "time_triggered" => "tt",
        "time_bounded" => "tb",
        _ => "-",
    }
}

/// The explanation a channel row needs where its figures would surprise: a time-triggered
/// channel of a coupled kind that shows overwrites.
fn channel_note(report: &Report, c: &super::ChannelReport) -> Option<String> {
    if c.timing != "time_triggered" || c.overwritten == 0 {
        return None;
    }
    let consumer = node(&c.to, c.to_id);
    let mut note = format!(
        "channel {} is time-triggered: its {} overwritten are consume misses, messages the firewall's \
         latest-value buffer to {consumer} replaced before {consumer} read them",
        c.id, c.overwritten
    );
    if c.kind == "decoupled_producer" || c.kind == "decoupled" {
        note.push_str(", and messages the decoupled producer side dropped before the firewall took them");
    }
    note.push_str(&format!(
        ". A temporal firewall never waits for its consumer, whatever the kind ({}); see Temporal firewalls.",
        c.smx_type
    ));
    if by_shape(report, &consumer) {
        note.push_str(&format!(
            " {consumer} forwards fewer messages per period than its inputs deliver: the net's shape \
             makes these misses (see Warnings)."
        ));
    }
    Some(note)
}

/// Whether the consume misses into `consumer` follow from the net's shape.
fn by_shape(report: &Report, consumer: &str) -> bool {
    report
        .firewalls
        .iter()
        .flat_map(|f| &f.pairs)
        .any(|p| p.consume_misses_by_shape && p.consumer == consumer)
}

/// The note of a channel one of whose ends is stuck: its figures do not close.
fn unsettled_note(report: &Report, c: &super::ChannelReport) -> Option<String> {
    if c.settled {
        return None;
    }
    let stuck: Vec<String> = [(&c.from, c.from_id), (&c.to, c.to_id)]
        .into_iter()
        .filter(|(_, id)| report.nets.iter().any(|n| n.id == *id && n.status == Status::Stuck))
        .map(|(name, id)| node(name, id))
        .collect();
    let accounted = c.read + c.overwritten + c.dropped + c.left;
    Some(format!(
        "channel {} is not settled: {} is stuck, so its figures are a snapshot and need not balance: of {} \
         writes, {} are not accounted (still in the channel or in the stuck box)",
        c.id,
        stuck.join(" and "),
        c.written,
        c.written.saturating_sub(accounted)
    ))
}

/// `name=value` for every figure of a box.
fn pairs(stats: &smx_box::Stats) -> String {
    let figures: Vec<String> = stats
        .entries
        .iter()
        .map(|(k, v)| format!("{k}={}", cells::stat_value(v)))
        .collect();
    figures.join(" ")
}

/// A box's line in "Box figures": its own sentence, or its figures, and unconnected writes.
fn figures_line(n: &super::NetReport) -> String {
    let mut line = n.stats.summary.clone().unwrap_or_else(|| pairs(&n.stats));
    if n.unconnected_writes > 0 {
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&format!("unconnected_writes={}", n.unconnected_writes));
    }
    line
}
