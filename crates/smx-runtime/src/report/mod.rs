//! What happened in a run: per net, per channel, totals; and three ways to print it.
//!
//! [`Report`] is plain data filled in by [`crate::run`] after every thread has ended,
//! so its figures are final and consistent (for each channel
//! `written = read + overwritten + dropped + left`), except where a net is `stuck` after a
//! stop (its thread never ended): its figures and those of its channels (`settled: false`)
//! are a snapshot. The renderers are [`text`] (an aligned
//! table for people), [`json`] (a stable, documented object for scripts) and [`smxlog`] (the
//! original runtime's log lines, for scripts written against it).
//!
//! Definitions used throughout:
//! * **loop count**: the number of times the net's step ran (for a routing node: messages it
//!   forwarded). The iteration that only discovers end-of-stream, which the original counted
//!   (its sinks usually report N+1), does not run the step and is not counted: a source with
//!   `count = N` and its sink both report N.
//! * **wall time** of a net: from the start barrier (all nets initialised) to the end of its
//!   loop, before its termination is signalled and before `cleanup` (as the original).
//! * **loop rate**: loop count / wall time (iterations per second).
//! * **messages**: messages read by sink nets (nets with no connected output; a bridge out of
//!   the net, such as a ZeroMQ sink, only when every sink is one), on the first connected
//!   input of each (a sink reading data and topic in pairs counts a pair once); when a net
//!   has no sink, from all channels. For `n` pairs `Src.Snk` this is
//!   `n·N`, the report's "msg rate" numerator.

pub mod cells;
mod firewall;
pub mod json;
pub(crate) mod latency;
mod platform;
pub mod smxlog;
mod stats_json;
pub mod text;

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::Serialize;
use smx_box::Stats;

pub use firewall::{FirewallReport, PairReport, render as firewalls_text};
pub use latency::{LatencyReport, PathLatency, SinkLatency};
pub(crate) use platform::exact as period_literal;
pub use platform::{MIN_PROBE_TICKS, judge_periods, period_verdicts, probe_periods};

/// How a run or a net ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Ended on its own (End, or the automatic rule).
    Ok,
    /// Ended because the run was asked to stop (Ctrl-C).
    Stopped,
    /// Its box failed (error or panic in create, init or a step).
    Failed,
    /// It had not ended when the run gave up waiting for it after a stop (a box that never
    /// returns from its step): its figures are what it had published ([`crate::halt`]).
    Stuck,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Stopped => "stopped",
            Status::Failed => "failed",
            Status::Stuck => "stuck",
        }
    }
}

/// One net (thread).
#[derive(Debug, Clone, Serialize)]
pub struct NetReport {
    pub id: usize,
    /// Instance name.
    pub name: String,
    #[serde(rename = "impl")]
    pub implementation: String,
    /// `box` or `routing_node`.
    pub kind: &'static str,
    /// The core the thread was pinned to (`null`: not pinned).
    pub core: Option<usize>,
    /// The SCHED_FIFO level in effect (`null`: normal scheduling).
    pub priority: Option<u8>,
    pub loop_count: u64,
    pub loop_rate: f64,
    pub wall_time_s: f64,
    pub status: Status,
    /// Why the net failed or is stuck (`null` unless `status` is `failed` or `stuck`).
    pub error: Option<String>,
    /// Messages written to unconnected `open` outputs and discarded.
    pub unconnected_writes: u64,
    /// The box's own figures ([`smx_box::BoxImpl::stats`]).
    #[serde(serialize_with = "stats_json::serialize")]
    pub stats: Stats,
    /// When the loop ended (for the original's log timestamps).
    #[serde(skip)]
    pub ended_at: SystemTime,
}

/// One channel.
#[derive(Debug, Clone, Serialize)]
pub struct ChannelReport {
    pub id: usize,
    /// Channel name (the edge label, usually the port name).
    pub name: String,
    /// Producer instance name and id.
    pub from: String,
    pub from_id: usize,
    pub from_port: String,
    /// Consumer instance name and id.
    pub to: String,
    pub to_id: usize,
    /// The consumer's port.
    pub port: String,
    /// `coupled`, `decoupled_producer`, `decoupled_consumer` or `decoupled`.
    pub kind: &'static str,
    /// The original's name of the kind: `FIFO`, `D_FIFO`, `FIFO_D`, `D_FIFO_D`.
    pub smx_type: &'static str,
    /// `none`, `time_triggered` or `time_bounded`.
    pub timing: &'static str,
    pub len: usize,
    pub written: u64,
    pub read: u64,
    pub overwritten: u64,
    pub duplicated: u64,
    pub dropped: u64,
    /// Messages still in the channel when its consumer ended.
    pub left: u64,
    /// False when one of its ends belongs to a `stuck` net: the figures are a snapshot taken
    /// while that end could still run, and need not balance (what is missing is still in the
    /// channel or in the stuck box).
    pub settled: bool,
    /// Write → read of the sampled messages ([`crate::latency`] says what is a sample). On a
    /// time-triggered row: the producer's write → the consumer's read, the firewall's hold
    /// included (the firewall's own share is on its pair row).
    pub latency_ns: crate::latency::LatencySummary,
    /// Creation → read of the sampled messages, on a channel whose producer brings messages in
    /// from another process (the source of a link): the link's own latency, from the message's
    /// creation there to its first read here. Absent on every other channel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrival_ns: Option<crate::latency::LatencySummary>,
}

/// A whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Version of this JSON layout; bumped only on incompatible changes.
    pub format_version: u32,
    /// Application wall time: from the start of `run` (before threads start) to the end of
    /// the last join.
    pub wall_time_s: f64,
    /// `failed` if any net failed, else `stuck` if a net had not ended when the run gave up on
    /// it after a stop, else `stopped` if the run was interrupted, else `ok`.
    pub status: Status,
    /// See the module docs for which channels count.
    pub messages: u64,
    pub messages_per_s: f64,
    pub nets: Vec<NetReport>,
    pub channels: Vec<ChannelReport>,
    /// Temporal firewalls (filled by the time-triggered runtime).
    pub firewalls: Vec<FirewallReport>,
    /// How latency was sampled, end-to-end latency per sink and per source → sink path.
    pub latency: latency::LatencyReport,
    /// Empty loops at the firewalls' periods, run after the net ([`platform::probe_periods`];
    /// empty unless asked for): the platform's floor to compare the firewalls with. Each entry
    /// has the fields of `smxrun probe --json`.
    pub probes: Vec<smx_timing::ProbeResult>,
    /// The figures of boxes that name a section ([`Stats::section`]), gathered per section
    /// (e.g. `zmq`: one row per ZeroMQ box), in net order.
    #[serde(serialize_with = "stats_json::serialize_sections")]
    pub sections: BTreeMap<String, Vec<Stats>>,
    /// What the runtime chose for this machine and why (an `auto` mode's cyclic executive,
    /// placement, chaining, real-time scheduling, spinning through a period), each once: the
    /// text report's "How it ran" ([`text::is_decision`] tells them).
    pub notes: Vec<String>,
    /// Things that did not go as asked (a refused priority, a core that could not be pinned,
    /// messages a net's shape loses), each once: the text report's "Warnings".
    pub warnings: Vec<String>,
    /// One line per firewall period, whether the platform and this run held it, as the text
    /// report ends ([`platform::verdicts`]); a period not held starts with `Attention:`. Filled
    /// by the driver once the probes ran ([`platform::probe_periods`]).
    pub periods: Vec<String>,
    #[serde(skip)]
    pub started_at: SystemTime,
    #[serde(skip)]
    pub ended_at: SystemTime,
}

impl Report {
    /// True when some net failed.
    pub fn failed(&self) -> bool {
        self.status == Status::Failed
    }

    pub fn net(&self, name: &str) -> Option<&NetReport> {
        self.nets.iter().find(|n| n.name == name)
    }

    /// Adds a line of the runtime's once: to `notes` when it explains a choice made for this
    /// machine, else to `warnings`, so that a script that checks `warnings` for problems is not
    /// told of the choices of a clean run.
    pub fn tell(&mut self, line: String) {
        let list = if text::is_decision(&line) {
            &mut self.notes
        } else {
            &mut self.warnings
        };
        if !list.contains(&line) {
            list.push(line);
        }
    }
}

/// `count / seconds`, 0 for an empty interval.
pub fn rate(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 { count as f64 / seconds } else { 0.0 }
}
