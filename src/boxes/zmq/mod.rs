//! ZeroMQ boxes: `smx_snk_zmq` sends a stream out of a net, `smx_src_zmq` brings one in, in
//! the same process or across processes and hosts, with exact, explained loss accounting.
//!
//! * [`wire`]: the two-frame message format (topic, then header and payload).
//! * [`batch`]: several waiting messages of one topic in one frame.
//! * [`eos`]: the end-of-stream marker and why it is reliable over PUB/SUB.
//! * [`books`]: the receiver's per-stream loss accounting.
//! * [`endpoint`], [`settings`]: validation before the net starts.
//! * [`socket`], [`sender`], [`receiver`]: the ZeroMQ side, usable without the runtime.
//! * [`sink`], [`source`]: the boxes.
//! * [`verdict`]: what a row's books say about its link, in one word.

pub mod batch;
pub mod books;
pub mod endpoint;
pub mod eos;
pub mod receiver;
pub mod sender;
pub mod settings;
pub mod sink;
pub mod socket;
pub mod source;
pub mod verdict;
pub mod wire;

#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::boxes::BoxSpec;

/// The specs of both boxes.
pub fn specs() -> Vec<BoxSpec> {
    vec![
        BoxSpec {
            name: "smx_snk_zmq",
            summary: "sends each message over ZeroMQ (pubsub or pipeline), ending with an end-of-stream marker",
            ports: sink::PORTS,
            config: settings::SINK_KEYS,
            create: sink::create,
        },
        BoxSpec {
            name: "smx_src_zmq",
            summary: "emits each message received over ZeroMQ and accounts for every lost one",
            ports: source::PORTS,
            config: settings::SOURCE_KEYS,
            create: source::create,
        },
    ]
}

/// One line of the text report for a box's `zmq` stats row (see [`sink`] and [`source`]).
pub fn text_line(row: &Value) -> Option<String> {
    let s = |k: &str| row.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
    let n = |k: &str| row.get(k).and_then(Value::as_u64).unwrap_or(0);
    let head = format!("{} {} {} {}", s("name"), s("role"), s("pattern"), s("endpoint"));
    let line = match row.get("role")?.as_str()? {
        "sink" => {
            let sent = n("sent");
            Some(format!(
                "{head}: sent {sent} in {} frame(s), dropped at the sender {} ({:.3} %: {} at the HWM, {} timed out){}{}{}",
                n("frames"),
                n("dropped"),
                percent(n("dropped"), sent),
                n("dropped_hwm"),
                n("dropped_timeout"),
                if s("pattern") == "pubsub" {
                    format!(", {} subscriber(s)", n("subscribers"))
                } else {
                    String::new()
                },
                if row.get("linger_expired") == Some(&Value::Bool(true)) {
                    ", NOT CONFIRMED: receivers still connected when linger expired"
                } else {
                    ""
                },
                if row.get("aborted") == Some(&Value::Bool(true)) {
                    ", ABORTED: ended early with an abort marker"
                } else {
                    ""
                }
            ))
        }
        "source" => {
            let sent = n("sent");
            let tail = if row.get("tail_unknown") == Some(&Value::Bool(true)) {
                " at least: no end marker, messages after the last one received are unknown"
            } else {
                ""
            };
            Some(format!(
                "{head}: sender sent {sent}, received {}, lost {} ({:.3} %{tail}; {} dropped at the sender's HWM, \
                 {} before the first received, {} in transit), duplicates {}, reordered {}, corrupt {}, ended by {}{}",
                n("received"),
                n("lost"),
                percent(n("lost"), sent),
                n("sender_dropped"),
                n("lost_before_first"),
                n("lost_in_transit"),
                n("duplicates"),
                n("reordered"),
                n("corrupt"),
                match s("end").as_str() {
                    "aborted" => "sender aborted".to_string(),
                    other => other.to_string(),
                },
                if n("inconsistent_streams") > 0 {
                    ", BOOKS INCONSISTENT (a sender restarted or reused its id?)"
                } else {
                    ""
                }
            ))
        }
        _ => None,
    }?;
    Some(line + &verdict_note(row))
}

/// For a row whose verdict is `incomplete` or `suspect`, the verdict and its problems (the
/// `lossy` figures are on the line already).
fn verdict_note(row: &Value) -> String {
    let verdict = row.get("verdict").and_then(Value::as_str).unwrap_or("ok");
    if !matches!(verdict, "incomplete" | "suspect") {
        return String::new();
    }
    let problems: Vec<&str> = row
        .get("problems")
        .and_then(Value::as_array)
        .map(|p| p.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    format!("; {}: {}", verdict.to_uppercase(), problems.join("; "))
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}
