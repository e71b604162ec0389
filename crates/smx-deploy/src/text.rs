//! The merged report as text: processes, then nets and channels as one process would print
//! them, with each net's process and each link's transport and books.

use std::fmt::Write;

use serde_json::Value;

/// The text form of a merged report (see [`crate::merge`]).
pub fn render(report: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "status {}  wall {:.3} s  messages {}",
        s(&report["status"]),
        report["wall_time_s"].as_f64().unwrap_or(0.0),
        s(&report["messages"])
    );
    processes(&mut out, report);
    nets(&mut out, report);
    channels(&mut out, report);
    for w in report["warnings"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "warning: {}", s(w));
    }
    out
}

/// A value as a cell: text without quotes, `-` for none.
fn s(v: &Value) -> String {
    match v {
        Value::Null => "-".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn processes(out: &mut String, report: &Value) {
    let _ = writeln!(
        out,
        "\nprocesses\n  {:<12} {:<16} {:>8} {:<8} {:>5} {:>6}",
        "name", "host", "pid", "status", "exit", "signal"
    );
    for p in report["processes"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  {:<12} {:<16} {:>8} {:<8} {:>5} {:>6}",
            s(&p["name"]),
            p["host"].as_str().unwrap_or("(here)"),
            s(&p["pid"]),
            s(&p["status"]),
            s(&p["exit_code"]),
            s(&p["signal"])
        );
    }
}

fn nets(out: &mut String, report: &Value) {
    let _ = writeln!(
        out,
        "\nnets\n  {:>4} {:<16} {:<16} {:<12} {:>12} {:<8}",
        "id", "name", "impl", "process", "loops", "status"
    );
    for n in report["nets"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  {:>4} {:<16} {:<16} {:<12} {:>12} {:<8}{}",
            s(&n["id"]),
            s(&n["name"]),
            s(&n["impl"]),
            s(&n["process"]),
            s(&n["loop_count"]),
            s(&n["status"]),
            n["error"].as_str().map(|e| format!("  {e}")).unwrap_or_default()
        );
    }
}

fn channels(out: &mut String, report: &Value) {
    let _ = writeln!(
        out,
        "\nchannels\n  {:>4} {:<28} {:>10} {:>10} {:>8} {:>8} {:>6} {:>8}  link",
        "id", "from -> to", "written", "read", "overwr", "dropped", "left", "lost"
    );
    for c in report["channels"].as_array().into_iter().flatten() {
        let link = &c["link"];
        let link_text = if link.is_object() {
            format!(
                "{} {} -> {}{}{}{}",
                s(&link["transport"]),
                s(&link["from_process"]),
                s(&link["to_process"]),
                if link["curve"] == true { ", curve" } else { "" },
                match link["lost_side"].as_str() {
                    Some("none") | None => String::new(),
                    Some(side) => format!(", lost at {side}"),
                },
                match link["latency_ns"]["p50"].as_u64() {
                    Some(p50) if link["clocks_comparable"] == true => format!(", latency p50 {p50} ns"),
                    Some(p50) => format!(", latency p50 {p50} ns (clocks not comparable: from arrival)"),
                    None => String::new(),
                }
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {:>4} {:<28} {:>10} {:>10} {:>8} {:>8} {:>6} {:>8}  {link_text}",
            s(&c["id"]),
            format!(
                "{}.{} -> {}.{}",
                s(&c["from"]),
                s(&c["from_port"]),
                s(&c["to"]),
                s(&c["port"])
            ),
            s(&c["written"]),
            s(&c["read"]),
            s(&c["overwritten"]),
            s(&c["dropped"]),
            s(&c["left"]),
            if link.is_object() {
                s(&link["lost"])
            } else {
                "-".to_string()
            }
        );
    }
}
