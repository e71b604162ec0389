//! The merged report as text, laid out as one process's report is (tables of nets and
//! channels, what the runtime decided, a total), with the processes first, each net's process,
//! and each link's transport, books and latency.

use std::fmt::Write;

use serde_json::Value;

/// The text form of a merged report (see [`crate::merge`]).
pub fn render(report: &Value) -> String {
    let mut out = String::new();
    processes(&mut out, report);
    nets(&mut out, report);
    channels(&mut out, report);
    how_it_ran(&mut out, report);
    total(&mut out, report);
    out
}

/// A value as a cell: text without quotes, `-` for none. Text comes from the slices' reports,
/// so it is escaped: nothing in a cell can move the terminal's cursor or colour it.
fn s(v: &Value) -> String {
    match v {
        Value::Null => "-".to_string(),
        Value::String(s) => s.escape_debug().to_string(),
        other => other.to_string(),
    }
}

/// A node as the single-process report spells it, `Name#id`.
fn node(name: &Value, id: &Value) -> String {
    format!("{}#{}", s(name), s(id))
}

/// Rows under a header, each column as wide as its widest cell (numbers to the right).
fn table(out: &mut String, title: &str, header: &[&str], rows: Vec<Vec<String>>) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            let numeric = !cell.is_empty() && cell.chars().all(|c| c.is_ascii_digit() || c == '.');
            let gap = if i == 0 { "" } else { "  " };
            if numeric {
                let _ = write!(text, "{gap}{cell:>w$}");
            } else {
                let _ = write!(text, "{gap}{cell:<w$}");
            }
        }
        text.trim_end().to_string()
    };
    let _ = writeln!(out, "{title}");
    let head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let _ = writeln!(out, "{}", line(&head));
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    let _ = writeln!(out, "{}", line(&rule));
    for row in rows {
        let _ = writeln!(out, "{}", line(&row));
    }
    out.push('\n');
}

fn processes(out: &mut String, report: &Value) {
    let rows = report["processes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            vec![
                s(&p["name"]),
                p["host"]
                    .as_str()
                    .map_or("(this machine)".to_string(), |h| h.escape_debug().to_string()),
                s(&p["pid"]),
                s(&p["status"]),
                s(&p["exit_code"]),
                s(&p["signal"]),
            ]
        })
        .collect();
    table(
        out,
        "Processes",
        &["process", "host", "pid", "status", "exit", "signal"],
        rows,
    );
}

fn nets(out: &mut String, report: &Value) {
    let rows = report["nets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| {
            let mut status = s(&n["status"]);
            if let Some(error) = n["error"].as_str() {
                let _ = write!(status, ": {}", error.escape_debug());
            }
            vec![
                s(&n["id"]),
                s(&n["name"]),
                s(&n["impl"]),
                s(&n["process"]),
                s(&n["loop_count"]),
                n["wall_time_s"].as_f64().map_or("-".to_string(), |t| format!("{t:.6}")),
                status,
            ]
        })
        .collect();
    let header = ["id", "net", "impl", "process", "loop count", "wall time [s]", "status"];
    table(out, "Nets", &header, rows);
}

fn channels(out: &mut String, report: &Value) {
    let rows = report["channels"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let link = &c["link"];
            vec![
                s(&c["id"]),
                s(&c["name"]),
                node(&c["from"], &c["from_id"]),
                node(&c["to"], &c["to_id"]),
                s(&c["written"]),
                s(&c["read"]),
                s(&c["overwritten"]),
                s(&c["dropped"]),
                s(&c["left"]),
                if link.is_object() {
                    s(&link["lost"])
                } else {
                    "-".to_string()
                },
                link_text(link),
            ]
        })
        .collect();
    let header = [
        "id",
        "channel",
        "from",
        "to",
        "written",
        "read",
        "overwritten",
        "dropped",
        "left",
        "lost",
        "link (transport, processes, latency p50/p99 creation to arrival)",
    ];
    table(out, "Channels", &header, rows);
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
        let _ = write!(text, ", lost at {}", side.escape_debug());
    }
    let latency = &link["latency_ns"];
    if let (Some(p50), Some(p99)) = (latency["p50"].as_u64(), latency["p99"].as_u64()) {
        let _ = write!(text, ", {}/{}", nanos(p50), nanos(p99));
        if link["clocks_comparable"] != true {
            text.push_str(" (the hosts' clocks are not comparable: from arrival)");
        }
    }
    text
}

/// A duration in the unit that suits it: `110ns`, `9.44ms`.
fn nanos(ns: u64) -> String {
    let ns = ns as f64;
    if ns >= 1e9 {
        format!("{:.2}s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1}us", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

/// The runtime's notes, each already prefixed with its process by the merge.
fn how_it_ran(out: &mut String, report: &Value) {
    let notes: Vec<String> = report["warnings"].as_array().into_iter().flatten().map(s).collect();
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "How it ran (each process's runtime; the option in brackets changes it)"
    );
    for note in notes {
        let _ = writeln!(out, "  {note}");
    }
    out.push('\n');
}

/// The last lines: the total, and what needs the reader's attention.
fn total(out: &mut String, report: &Value) {
    let _ = writeln!(
        out,
        "Total: wall time {:.6} s, {} messages, status {}",
        report["wall_time_s"].as_f64().unwrap_or(0.0),
        s(&report["messages"]),
        s(&report["status"])
    );
    let failed: Vec<String> = report["processes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["status"] != "ok")
        .map(|p| format!("process {} {}", s(&p["name"]), s(&p["status"])))
        .collect();
    let lost: u64 = report["channels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["link"]["lost"].as_u64())
        .sum();
    let mut attention = failed;
    if lost > 0 {
        attention.push(format!("{lost} messages lost on links"));
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
            "warnings": ["main: chaining: something"],
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
            text.contains("\nTotal: wall time 1.500000 s, 10 messages, status ok\n"),
            "{text}"
        );
        assert!(!text.contains("Attention"), "{text}");
        assert!(!text.contains('\u{1b}'), "a peer's text is escaped: {text}");
    }

    #[test]
    fn a_dead_process_and_lost_messages_ask_for_attention() {
        let text = render(&report(3, "killed"));
        assert!(text.contains("lost at sinks"), "{text}");
        assert!(
            text.trim_end()
                .ends_with("Attention: process sinks killed; 3 messages lost on links"),
            "{text}"
        );
    }
}
