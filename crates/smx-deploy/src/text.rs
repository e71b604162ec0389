//! The merged report as text, laid out as one process's report is (what was asked, tables of
//! nets and channels, the boxes' figures, end-to-end latency, temporal firewalls, what the
//! runtime decided, a total and the verdict on each firewall period), with the processes first,
//! each net's process, and each link's transport, books and latency.

use std::fmt::Write;

use serde_json::Value;
use smx_runtime::LeverWords;
use smx_runtime::latency::LatencySummary;
use smx_runtime::report::{FirewallReport, cells};
use smx_timing::ProbeResult;
use smx_timing::lateness::human_ns;

/// The text form of a merged report (see [`crate::merge`]), naming settings by the
/// `RunOptions` fields.
pub fn render(report: &Value) -> String {
    render_with(report, LeverWords::default())
}

/// The text form of a merged report, naming settings in `words` (the driver's own).
pub fn render_with(report: &Value, words: LeverWords) -> String {
    let mut out = String::new();
    processes(&mut out, report);
    nets(&mut out, report);
    channels(&mut out, report);
    box_figures(&mut out, report);
    end_to_end(&mut out, report);
    let firewalls = firewalls(report);
    let text = smx_runtime::report::firewalls_text(&firewalls);
    if !text.is_empty() {
        let _ = writeln!(out, "{}", text.trim_start_matches('\n'));
    }
    sections(&mut out, report);
    let warnings = notes(&mut out, report);
    total(&mut out, report, warnings);
    for line in period_lines(report, &firewalls, words) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// Sets the merged report's `periods`: the verdict on each firewall period, as its text ends
/// and as one process's JSON report has them.
pub fn judge_periods(report: &mut Value, words: LeverWords) {
    report["periods"] = Value::from(period_lines(report, &firewalls(report), words));
}

/// The verdict on each period of the merged `firewalls`, against the processes' probes.
fn period_lines(report: &Value, firewalls: &[FirewallReport], words: LeverWords) -> Vec<String> {
    smx_runtime::report::period_verdicts(firewalls, &probes(report, firewalls), words)
}

/// The line that opens a text report, saying what was asked (`Asked: WHAT, 2 boxes, 1 channel`),
/// for a report whose net was not run from a net file here (merged from slices' reports).
pub fn asked(what: &str, report: &Value) -> String {
    let nets = report["nets"].as_array().map_or(&[][..], Vec::as_slice);
    let boxes = nets.iter().filter(|n| n["kind"] != "routing_node").count();
    let channels = report["channels"].as_array().map_or(0, Vec::len);
    format!(
        "Asked: {}, {}, {}\n\n",
        clean(what),
        plural(boxes as u64, "box", "boxes"),
        plural(channels as u64, "channel", "channels")
    )
}

/// `1 message`, `3 messages`.
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Text from the slices' reports as it may be shown: control characters escaped, so that
/// nothing in it can move the terminal's cursor or colour it; everything else as written.
fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// A value as a cell: text without quotes, `-` for none.
fn s(v: &Value) -> String {
    match v {
        Value::Null => "-".to_string(),
        Value::String(s) => clean(s),
        other => other.to_string(),
    }
}

/// A node as the single-process report spells it, `Name#id`.
fn node(name: &Value, id: &Value) -> String {
    format!("{}#{}", s(name), s(id))
}

/// A latency summary as one process's report writes it in a cell.
fn latency(v: &Value) -> String {
    serde_json::from_value::<LatencySummary>(v.clone()).map_or("-".to_string(), |l| cells::latency(&l))
}

/// Rows under a header, each column as wide as its widest cell; the columns marked in `right`
/// (the figures) aligned to the right, whatever a cell holds (a host's address is text).
fn table(out: &mut String, title: &str, header: &[(&str, bool)], rows: Vec<Vec<String>>) {
    let mut widths: Vec<usize> = header.iter().map(|(h, _)| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut text = String::new();
        for (i, ((cell, w), (_, right))) in cells.iter().zip(&widths).zip(header).enumerate() {
            let gap = if i == 0 { "" } else { "  " };
            let pad = " ".repeat(w.saturating_sub(cell.chars().count()));
            if *right {
                let _ = write!(text, "{gap}{pad}{cell}");
            } else {
                let _ = write!(text, "{gap}{cell}{pad}");
            }
        }
        text.trim_end().to_string()
    };
    let _ = writeln!(out, "{title}");
    let head: Vec<String> = header.iter().map(|(h, _)| h.to_string()).collect();
    let _ = writeln!(out, "{}", line(&head));
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    let _ = writeln!(out, "{}", line(&rule));
    for row in rows {
        let _ = writeln!(out, "{}", line(&row));
    }
    out.push('\n');
}

fn list<'r>(report: &'r Value, key: &str) -> impl Iterator<Item = &'r Value> {
    report[key].as_array().into_iter().flatten()
}

fn processes(out: &mut String, report: &Value) {
    let rows = list(report, "processes")
        .map(|p| {
            vec![
                s(&p["name"]),
                p["host"].as_str().map_or("(this machine)".to_string(), clean),
                s(&p["pid"]),
                s(&p["status"]),
                s(&p["exit_code"]),
                s(&p["signal"]),
            ]
        })
        .collect();
    let header = [
        ("process", false),
        ("host", false),
        ("pid", true),
        ("status", false),
        ("exit", true),
        ("signal", true),
    ];
    table(out, "Processes", &header, rows);
}

fn nets(out: &mut String, report: &Value) {
    let rows = list(report, "nets")
        .map(|n| {
            let mut status = s(&n["status"]);
            if let Some(error) = n["error"].as_str() {
                let _ = write!(status, ": {}", clean(error));
            }
            vec![
                s(&n["id"]),
                s(&n["name"]),
                s(&n["impl"]),
                s(&n["process"]),
                s(&n["core"]),
                s(&n["loop_count"]),
                n["loop_rate"].as_f64().map_or("-".to_string(), |r| format!("{r:.0}")),
                n["wall_time_s"].as_f64().map_or("-".to_string(), |t| format!("{t:.6}")),
                status,
            ]
        })
        .collect();
    let header = [
        ("id", true),
        ("net", false),
        ("impl", false),
        ("process", false),
        ("core", true),
        ("loop count", true),
        ("loop rate [1/s]", true),
        ("wall time [s]", true),
        ("status", false),
    ];
    table(out, "Nets", &header, rows);
}

/// `tt`, `tb` or `-`, as one process's report writes a channel's timing.
fn timing(t: &Value) -> &'static str {
    match t.as_str() {
        Some("time_triggered") => "tt",
        Some("time_bounded") => "tb",
        _ => "-",
    }
}

fn channels(out: &mut String, report: &Value) {
    let rows = list(report, "channels")
        .map(|c| {
            let link = &c["link"];
            vec![
                s(&c["id"]),
                s(&c["name"]),
                node(&c["from"], &c["from_id"]),
                node(&c["to"], &c["to_id"]),
                s(&c["port"]),
                s(&c["smx_type"]),
                timing(&c["timing"]).to_string(),
                s(&c["len"]),
                s(&c["written"]),
                s(&c["read"]),
                s(&c["overwritten"]),
                s(&c["duplicated"]),
                s(&c["dropped"]),
                s(&c["left"]),
                lost_cell(link),
                latency(&c["latency_ns"]),
                link_text(link),
            ]
        })
        .collect();
    let header = [
        ("id", true),
        ("channel", false),
        ("from", false),
        ("to", false),
        ("port", false),
        ("kind", false),
        ("timing", false),
        ("len", true),
        ("written", true),
        ("read", true),
        ("overwritten", true),
        ("duplicated", true),
        ("dropped", true),
        ("left", true),
        ("lost", true),
        ("latency p50/p99/p99.9/max (samples)", false),
        (
            "link (transport, processes, latency p50/p99 creation to arrival)",
            false,
        ),
    ];
    table(out, "Channels", &header, rows);
    let mut any = false;
    for c in list(report, "channels") {
        for note in [firewall_note(c), unsettled_note(report, c)].into_iter().flatten() {
            let _ = writeln!(out, "  {note}");
            any = true;
        }
    }
    if any {
        out.push('\n');
    }
}

/// As one process's report explains it: a time-triggered channel's overwrites are consume
/// misses of its firewall.
fn firewall_note(c: &Value) -> Option<String> {
    let overwritten = c["overwritten"].as_u64().unwrap_or(0);
    if c["timing"] != "time_triggered" || overwritten == 0 {
        return None;
    }
    let consumer = node(&c["to"], &c["to_id"]);
    let mut note = format!(
        "channel {} is time-triggered: its {overwritten} overwritten are consume misses, messages the firewall's \
         latest-value buffer to {consumer} replaced before {consumer} read them",
        s(&c["id"])
    );
    if c["kind"] == "decoupled_producer" || c["kind"] == "decoupled" {
        note.push_str(", and messages the decoupled producer side dropped before the firewall took them");
    }
    let _ = write!(
        note,
        ". A temporal firewall never waits for its consumer, whatever the kind ({}); see Temporal firewalls.",
        s(&c["smx_type"])
    );
    Some(note)
}

/// The note of a channel one of whose ends is stuck: its figures are a snapshot.
fn unsettled_note(report: &Value, c: &Value) -> Option<String> {
    if c["settled"] != false {
        return None;
    }
    let stuck: Vec<String> = [("from", "from_id"), ("to", "to_id")]
        .into_iter()
        .filter(|(_, id)| list(report, "nets").any(|n| n["id"] == c[*id] && n["status"] == "stuck"))
        .map(|(name, id)| node(&c[name], &c[id]))
        .collect();
    if stuck.is_empty() {
        return None;
    }
    Some(format!(
        "channel {} is not settled: {} is stuck, so its figures are a snapshot and need not balance",
        s(&c["id"]),
        stuck.join(" and ")
    ))
}

/// `name=value` for every figure of a box, as one process's report lists them.
fn pairs(stats: &Value) -> String {
    let figures: Vec<String> = stats
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{}={}", clean(k), s(v)))
        .collect();
    figures.join(" ")
}

/// The boxes' own figures, for the boxes whose figures have no section of their own.
fn box_figures(out: &mut String, report: &Value) {
    let in_section = |name: &Value| {
        report["sections"]
            .as_object()
            .into_iter()
            .flatten()
            .flat_map(|(_, rows)| rows.as_array().into_iter().flatten())
            .any(|row| row["name"] == *name)
    };
    let mut lines = Vec::new();
    for n in list(report, "nets") {
        let mut line = if in_section(&n["name"]) {
            String::new()
        } else {
            pairs(&n["stats"])
        };
        if let Some(writes) = n["unconnected_writes"].as_u64().filter(|w| *w > 0) {
            if !line.is_empty() {
                line.push(' ');
            }
            let _ = write!(line, "unconnected_writes={writes}");
        }
        if !line.is_empty() {
            lines.push(format!("  {}: {line}", node(&n["name"], &n["id"])));
        }
    }
    if !lines.is_empty() {
        let _ = writeln!(out, "Box figures\n{}\n", lines.join("\n"));
    }
}

/// End-to-end latency per sink and per source -> sink path, as one process's report has it.
fn end_to_end(out: &mut String, report: &Value) {
    let l = &report["latency"];
    let sinks: Vec<&Value> = list(l, "sinks").collect();
    let anomalies = l["clock_anomalies"].as_u64().unwrap_or(0);
    if sinks.is_empty() && anomalies == 0 {
        return;
    }
    let how = match l["every"].as_u64() {
        Some(1) => "every message".to_string(),
        n => format!("every {}th message per channel", n.unwrap_or(0)),
    };
    let _ = writeln!(
        out,
        "End-to-end latency (creation to consumption, p50/p99/p99.9/max (samples), {how})"
    );
    for sink in sinks {
        let _ = writeln!(
            out,
            "  sink {}: {}",
            node(&sink["name"], &sink["id"]),
            latency(&sink["latency_ns"])
        );
    }
    for p in list(l, "paths") {
        let _ = writeln!(
            out,
            "  {} -> {}: {}",
            node(&p["from"], &p["from_id"]),
            node(&p["to"], &p["to_id"]),
            latency(&p["latency_ns"])
        );
    }
    if anomalies > 0 {
        let _ = writeln!(
            out,
            "  {anomalies} samples read the clock before their stamp (clock went backwards, or stamps from a clock \
             that does not agree with this one): counted as clock anomalies, not as latency"
        );
    }
    let apart: Vec<String> = list(report, "channels")
        .map(|c| &c["link"])
        .filter(|link| link["clocks_comparable"] == false)
        .map(|link| format!("{} -> {}", s(&link["from_process"]), s(&link["to_process"])))
        .collect();
    if !apart.is_empty() {
        // Such a link's receiver stamps each message on arrival: no figure behind it reaches
        // back to the creation on the other host, and a source there has no path to a sink here.
        let _ = writeln!(
            out,
            "  behind the link{} {} (hosts whose clocks are not comparable) a message's age counts from its \
             arrival, not from its creation",
            if apart.len() == 1 { "" } else { "s" },
            apart.join(", ")
        );
    }
    out.push('\n');
}

/// The slices' firewalls (a firewall never spans two processes); none where a report's are
/// unreadable.
fn firewalls(report: &Value) -> Vec<FirewallReport> {
    serde_json::from_value(report["firewalls"].clone()).unwrap_or_default()
}

/// The empty loops each process ran at its firewalls' periods, with the priority its
/// firewall had (the JSON form leaves the priority out).
fn probes(report: &Value, firewalls: &[FirewallReport]) -> Vec<ProbeResult> {
    list(report, "probes")
        .filter_map(|p| {
            let period_ns = p["period_ns"].as_u64()?;
            Some(ProbeResult {
                period_ns,
                ticks: p["ticks"].as_u64()?,
                misses: p["misses"].as_u64()?,
                miss_rate: p["miss_rate"].as_f64().unwrap_or(0.0),
                lateness_ns: serde_json::from_value(p["lateness_ns"].clone()).unwrap_or_default(),
                clock_source: p["clock_source"].as_str().unwrap_or("").to_string(),
                rt_priority_granted: p["rt_priority_granted"] == true,
                spun_through: p["spun_through"] == true,
                fifo_priority: firewalls
                    .iter()
                    .find(|f| f.period_ns == period_ns)
                    .and_then(|f| f.priority),
                memory_locked: false,
                spin_ns: 0,
                wall: std::time::Duration::ZERO,
                warnings: Vec::new(),
            })
        })
        .collect()
}

/// The figures of the boxes that name a section (`zmq`: one row per ZeroMQ box).
fn sections(out: &mut String, report: &Value) {
    for (name, rows) in report["sections"].as_object().into_iter().flatten() {
        let rows: Vec<&Value> = rows.as_array().into_iter().flatten().collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{}", clean(name));
        for row in rows {
            let _ = writeln!(out, "  {}", pairs(row));
        }
        out.push('\n');
    }
}

/// A link's `lost`; `-` for a channel inside one process. Lost at a process that left no
/// books is what was sent its way, some of which it may have passed on before it went: at
/// most that many, `≤N`, as the `Attention:` line says "up to".
fn lost_cell(link: &Value) -> String {
    if !link.is_object() {
        return "-".to_string();
    }
    match link["lost"].as_u64() {
        Some(lost) if lost > 0 && !lost_exactly(link) => format!("≤{lost}"),
        _ => s(&link["lost"]),
    }
}

/// Whether a link's `lost` is exact (`lost_exact`: lost in transit, both sides counted, or
/// sent to a consumer that never attached, none of it taken); a merged report written before
/// that field by the same rule.
fn lost_exactly(link: &Value) -> bool {
    link["lost_exact"]
        .as_bool()
        .unwrap_or_else(|| link["lost_side"] == "transit" || crate::protocol::consumer_never_came(&link["sender"]))
}

/// `shm main -> sinks, 1.2us/3.4us`; `-` for a channel inside one process.
fn link_text(link: &Value) -> String {
    if !link.is_object() {
        return "-".to_string();
    }
    let mut text = format!(
        "{} {} -> {}",
        s(&link["transport"]),
        s(&link["from_process"]),
        s(&link["to_process"])
    );
    if link["curve"] == true {
        text.push_str(", curve");
    }
    if let Some(side) = link["lost_side"].as_str().filter(|side| *side != "none") {
        let _ = write!(text, ", lost at {}", clean(side));
    }
    // What the sending link box took and then could not send (it gave up on its receivers, or
    // the run stopped) is part of `lost`, or of `left`, not of the channel's `dropped`, which
    // the word would suggest; its own warning counts these.
    if let Some(dropped) = link["sender"]["dropped"].as_u64().filter(|d| *d > 0) {
        let within = if link["lost"].as_u64().unwrap_or(0) > 0 {
            "lost"
        } else {
            "left"
        };
        let _ = write!(
            text,
            ", {dropped} of the {within} held by the sender when the link ended"
        );
    }
    let latency = &link["latency_ns"];
    if let (Some(p50), Some(p99)) = (latency["p50"].as_u64(), latency["p99"].as_u64()) {
        let _ = write!(text, ", {}/{}", human_ns(p50), human_ns(p99));
        if link["clocks_comparable"] != true {
            text.push_str(" (the hosts' clocks are not comparable: from arrival)");
        }
    }
    text
}

/// "How it ran" (each runtime's decisions, and the deployment's: `notes`) and "Warnings" (what
/// did not go as asked: `warnings`); returns how many warnings. The merge sorted them, by the
/// topic that follows a process's name.
fn notes(out: &mut String, report: &Value) -> usize {
    let decisions: Vec<&str> = list(report, "notes").filter_map(Value::as_str).collect();
    let warnings: Vec<&str> = list(report, "warnings").filter_map(Value::as_str).collect();
    if !decisions.is_empty() {
        let _ = writeln!(
            out,
            "How it ran (each process's runtime; the option in brackets changes it)"
        );
        for note in &decisions {
            out.push_str(&cells::note_lines(&clean(note)));
        }
        out.push('\n');
    }
    if !warnings.is_empty() {
        let _ = writeln!(out, "Warnings");
        for w in &warnings {
            let _ = writeln!(out, "  {}", clean(w));
        }
        out.push('\n');
    }
    warnings.len()
}

/// `183378 messages/s, ` when every pair ran free; nothing but a word why when some ran at a
/// firewall's period, as one process's report says it.
fn total_rate(report: &Value) -> String {
    let timed = list(report, "channels").any(|c| c["timing"] == "time_triggered");
    let free = list(report, "channels").any(|c| c["timing"] != "time_triggered");
    if timed && free {
        "no total rate (time-triggered pairs run at their period: see each box's loop rate), ".to_string()
    } else {
        format!("{:.0} messages/s, ", report["messages_per_s"].as_f64().unwrap_or(0.0))
    }
}

/// The last lines: the total, and what needs the reader's attention.
fn total(out: &mut String, report: &Value, warnings: usize) {
    let _ = write!(
        out,
        "Total: wall time {:.6} s, {}, {}status {}",
        report["wall_time_s"].as_f64().unwrap_or(0.0),
        plural(report["messages"].as_u64().unwrap_or(0), "message", "messages"),
        total_rate(report),
        s(&report["status"])
    );
    for (status, words) in [
        ("failed", "failed"),
        ("stuck", "stuck, their threads left running"),
        ("lost", "lost with their process"),
    ] {
        let n = list(report, "nets").filter(|n| n["status"] == status).count();
        if n > 0 {
            let _ = write!(out, " ({n} net(s) {words})");
        }
    }
    out.push('\n');
    // A process the supervisor stopped did nothing wrong: the run's status says it stopped.
    let mut attention: Vec<String> = list(report, "processes")
        .filter(|p| p["status"] != "ok" && p["status"] != "stopped")
        .map(|p| format!("process {} {}", s(&p["name"]), s(&p["status"])))
        .collect();
    // Lost in transit is counted by both sides; lost at a process that left no report is
    // what was sent its way, some of which it may have passed on before it went.
    let lost_where = |exactly: bool, in_transit: bool| -> u64 {
        list(report, "channels")
            .filter(|c| lost_exactly(&c["link"]) == exactly && (c["link"]["lost_side"] == "transit") == in_transit)
            .filter_map(|c| c["link"]["lost"].as_u64())
            .sum()
    };
    let at_processes = lost_where(false, false);
    if at_processes > 0 {
        attention.push(format!(
            "up to {} lost at processes that left no books",
            plural(at_processes, "message", "messages")
        ));
    }
    let never_taken = lost_where(true, false);
    if never_taken > 0 {
        attention.push(format!(
            "{} lost: their consumer's process never attached",
            plural(never_taken, "message", "messages")
        ));
    }
    let lost = lost_where(true, true);
    if lost > 0 {
        attention.push(format!("{} lost on links", plural(lost, "message", "messages")));
    }
    if warnings > 0 {
        attention.push(format!(
            "{} under Warnings above: something did not go as asked",
            plural(warnings as u64, "warning", "warnings")
        ));
    }
    if !attention.is_empty() {
        let _ = writeln!(out, "Attention: {}", attention.join("; "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(lost: u64, sinks_status: &str) -> Value {
        json!({
            "status": if lost > 0 { "failed" } else { "ok" },
            "wall_time_s": 1.5,
            "messages": 10,
            "messages_per_s": 6.67,
            "processes": [
                {"name": "main", "host": null, "pid": 7, "status": "ok", "exit_code": 0, "signal": null},
                {"name": "sinks", "host": "10.0.0.2\u{1b}[31m", "pid": 8, "status": sinks_status, "exit_code": null, "signal": 9},
            ],
            "nets": [
                {"id": 0, "name": "Src", "impl": "smx_src_rand", "process": "main", "loop_count": 10, "wall_time_s": 1.0, "status": "ok", "error": null},
                {"id": 1, "name": "Snk", "impl": "smx_snk_null", "process": "sinks", "loop_count": 10 - lost, "wall_time_s": 1.0, "status": "ok", "error": null},
            ],
            "channels": [
                {"id": 0, "name": "data", "from": "Src", "from_id": 0, "to": "Snk", "to_id": 1, "written": 10, "read": 10 - lost,
                 "overwritten": 0, "dropped": 0, "left": 0,
                 "link": {"transport": "shm", "from_process": "main", "to_process": "sinks", "curve": false,
                          "lost": lost, "lost_side": if lost > 0 { "sinks" } else { "none" }, "clocks_comparable": true,
                          "latency_ns": {"p50": 1250, "p99": 9_437_183}}},
            ],
            "notes": ["main: chaining: something"],
        })
    }

    #[test]
    fn reads_as_one_process_report_does_with_processes_and_links() {
        let text = render(&report(0, "ok"));
        assert!(text.starts_with("Processes\n"), "{text}");
        assert!(text.contains(" Src#0  Snk#1 "), "nodes spelled Name#id: {text}");
        assert!(
            text.contains("shm main -> sinks, 1.2us/9.44ms"),
            "latency in units: {text}"
        );
        assert!(text.contains("How it ran"), "{text}");
        assert!(
            text.contains("\nTotal: wall time 1.500000 s, 10 messages, 7 messages/s, status ok\n"),
            "{text}"
        );
        assert!(!text.contains("Attention"), "{text}");
        assert!(!text.contains('\u{1b}'), "a peer's text is escaped: {text}");
    }

    #[test]
    fn end_to_end_figures_behind_a_link_of_other_clocks_say_they_count_from_arrival() {
        let mut r = report(0, "ok");
        r["latency"] = json!({"every": 64, "clock_anomalies": 0,
                              "sinks": [{"id": 1, "name": "Snk", "latency_ns": {"p50": 300, "count": 5}}]});
        let text = render(&r);
        assert!(text.contains("sink Snk#1: "), "{text}");
        assert!(!text.contains("counts from its arrival"), "{text}");
        r["channels"][0]["link"]["clocks_comparable"] = json!(false);
        assert!(
            render(&r).contains(
                "behind the link main -> sinks (hosts whose clocks are not comparable) a message's age counts from \
                 its arrival, not from its creation"
            ),
            "{}",
            render(&r)
        );
    }

    #[test]
    fn a_dead_process_and_lost_messages_ask_for_attention() {
        let text = render(&report(3, "killed"));
        assert!(text.contains("lost at sinks"), "{text}");
        // The column says it is a bound, as the attention line does.
        assert!(text.contains(" ≤3 "), "{text}");
        assert!(
            text.trim_end()
                .ends_with("Attention: process sinks killed; up to 3 messages lost at processes that left no books"),
            "{text}"
        );
    }
    #[test]
    fn what_the_sender_dropped_is_named_within_the_lost_or_the_left() {
        let mut r = report(3, "killed");
        r["channels"][0]["link"]["sender"] = json!({"dropped": 2});
        assert!(render(&r).contains("lost at sinks, 2 of the lost held by the sender when the link ended"));
        let mut r = report(0, "ok");
        r["channels"][0]["left"] = json!(2);
        r["channels"][0]["link"]["sender"] = json!({"dropped": 2});
        assert!(render(&r).contains("shm main -> sinks, 2 of the left held by the sender when the link ended"));
    }

    #[test]
    fn a_host_is_text_left_under_its_header_and_quotes_stay_as_written() {
        let mut r = report(0, "ok");
        r["processes"][1]["host"] = json!("127.0.0.2");
        r["notes"] = json!(["placement: the channel's producer runs in main"]);
        let text = render(&r);
        let head = text.lines().nth(1).unwrap();
        let row = text.lines().find(|l| l.starts_with("sinks")).unwrap();
        assert_eq!(row.find("127.0.0.2"), head.find("host"), "{text}");
        assert!(text.contains("the channel's producer"), "{text}");
        assert!(!text.contains('\\'), "{text}");
    }

    #[test]
    fn one_message_and_one_warning_are_counted_in_the_singular() {
        let mut r = report(1, "ok");
        r["messages"] = json!(1);
        r["channels"][0]["link"]["lost_side"] = json!("transit");
        r["warnings"] = json!(["sinks: Snk#1: gave up"]);
        let text = render(&r);
        assert!(text.contains(", 1 message, "), "{text}");
        assert!(text.contains("\nWarnings\n  sinks: Snk#1: gave up\n"), "{text}");
        assert!(
            text.contains("Attention: 1 message lost on links; 1 warning under Warnings above"),
            "{text}"
        );
    }

    #[test]
    fn the_nets_and_channels_have_one_process_reports_columns() {
        let mut r = report(0, "ok");
        r["channels"][0]["smx_type"] = json!("FIFO_D");
        r["channels"][0]["timing"] = json!("none");
        r["channels"][0]["port"] = json!("data");
        r["channels"][0]["len"] = json!(8);
        r["channels"][0]["duplicated"] = json!(4);
        r["nets"][0]["core"] = json!(1);
        r["nets"][0]["loop_rate"] = json!(10.0);
        let text = render(&r);
        for column in ["core", "loop rate [1/s]", "port", "kind", "timing", "len", "duplicated"] {
            assert!(text.contains(&format!("  {column}")), "{column}: {text}");
        }
        assert!(text.contains("  data  FIFO_D  -         8"), "{text}");
    }

    #[test]
    fn firewalls_and_the_verdict_on_their_period_are_shown() {
        let mut r = report(0, "ok");
        r["firewalls"] = json!([{
            "name": "tf_10.0us_0", "clock_source": "tsc", "period_ns": 10000, "ticks": 1000,
            "missed_ticks": 579, "overruns": 0, "lateness_ns": {"p50": 1, "p99": 2, "p999": 3, "max": 4},
            "priority": null, "core": 1, "spin_ns": 0,
            "pairs": [{"producer": "Src", "consumer": "Snk", "ticks": 1000, "forwarded": 421,
                       "produce_misses": 0, "consume_misses": 0, "missed_ticks": 579}],
        }]);
        let text = render(&r);
        assert!(text.contains("Temporal firewalls (clock source tsc"), "{text}");
        assert!(text.contains("579 missed"), "{text}");
        assert!(
            text.contains("Attention: period 10.0us not held by this run: this run's firewall lost 57.90 %"),
            "{text}"
        );
    }
}
