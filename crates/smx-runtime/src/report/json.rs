//! The JSON report (`--report json`): `serde_json` of [`Report`], documented and stable.
//!
//! Layout (`format_version` 3; it rises on an incompatible change: 3 added the latency fields,
//! 2 moved the ZeroMQ rows into `sections`; docs/guide/json-report.md is the full layout):
//!
//! ```text
//! { "format_version": 3, "wall_time_s": f64, "status": "ok"|"stopped"|"stuck"|"failed",
//!   "messages": u64, "messages_per_s": f64,
//!   "nets": [ { "id", "name", "impl", "kind": "box"|"routing_node", "core": int|null,
//!               "priority": int|null, "loop_count", "loop_rate", "wall_time_s",
//!               "status", "error": string|null, "unconnected_writes", "stats": {..} } ],
//!   "channels": [ { "id", "name", "from", "from_id", "from_port", "to", "to_id", "port",
//!                   "kind", "smx_type", "timing", "len", "written", "read", "overwritten",
//!                   "duplicated", "dropped", "left", "settled": bool,
//!                   "latency_ns": {"p50","p99","p999","max","count"} } ],
//!   "firewalls": [..],
//!   "latency": { "mode", "every", "clock", "clock_anomalies",
//!                "sinks": [ { "id", "name", "latency_ns" } ],
//!                "paths": [ { "from", "from_id", "to", "to_id", "latency_ns" } ] },
//!   "probes": [..], "sections": {"zmq": [..]}, "notes": [string], "warnings": [string],
//!   "periods": [string] }
//! ```
//!
//! Times are seconds, rates per second, counts messages. `notes` are the runtime's choices for
//! this machine (the text's "How it ran"), `warnings` what did not go as asked (its
//! "Warnings"), `periods` the verdict on each firewall period (the text's last lines; one not
//! held starts with `Attention:`): a clean run has no warnings and no such period. Field
//! meanings: [`Report`].

use super::Report;

/// The report as pretty-printed JSON.
pub fn render(report: &Report) -> String {
    // Serialising plain data with string keys cannot fail.
    serde_json::to_string_pretty(report).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
