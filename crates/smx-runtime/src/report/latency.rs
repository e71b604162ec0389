//! The latency part of the report: per channel (on the channel rows), per sink and per
//! source → sink path, assembled from the samples the reading threads handed back
//! ([`crate::latency`]).

use serde::Serialize;

use crate::latency::{ChannelSamples, LatencyMode, LatencySummary, Samples};
use crate::plan::Plan;

use super::cells;

/// How the run measured latency and what it found end to end.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyReport {
    /// `off`, `sampled` or `full`.
    pub mode: &'static str,
    /// Writes per sample on each channel: 0 (off), 1 (full) or N (every Nth).
    pub every: u32,
    /// The clock of all stamps: `monotonic` (one per host; comparable between the processes
    /// of one host, not between hosts).
    pub clock: &'static str,
    /// Samples whose clock reading came before their stamp, all channels and sinks together:
    /// the clock went backwards, or a stamp came from a clock that does not agree with ours.
    pub clock_anomalies: u64,
    pub sinks: Vec<SinkLatency>,
    pub paths: Vec<PathLatency>,
}

impl Default for LatencyReport {
    fn default() -> Self {
        LatencyReport {
            mode: LatencyMode::Off.name(),
            every: 0,
            clock: "monotonic",
            clock_anomalies: 0,
            sinks: Vec::new(),
            paths: Vec::new(),
        }
    }
}

/// Creation → consumption at one sink, over all its inputs.
#[derive(Debug, Clone, Serialize)]
pub struct SinkLatency {
    pub id: usize,
    pub name: String,
    pub latency_ns: LatencySummary,
}

/// Creation → consumption of what one source sends to one sink, where that sink's input
/// channel is reached by this source alone.
#[derive(Debug, Clone, Serialize)]
pub struct PathLatency {
    pub from: String,
    pub from_id: usize,
    pub to: String,
    pub to_id: usize,
    pub latency_ns: LatencySummary,
}

/// Which sources reach a net: none yet, exactly one, or several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    None,
    One(usize),
    Many,
}

impl Reach {
    fn join(self, other: Reach) -> Reach {
        match (self, other) {
            (Reach::None, x) | (x, Reach::None) => x,
            (Reach::One(a), Reach::One(b)) if a == b => Reach::One(a),
            _ => Reach::Many,
        }
    }
}

/// Per net, the sources upstream of it (a source is a net without a connected input). A value
/// only rises (none → one → many), so the work list ends after a few passes per channel, on
/// any graph, loops included.
fn reach(plan: &Plan) -> Vec<Reach> {
    let n = plan.nets.len();
    let mut has_input = vec![false; n];
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    for c in &plan.channels {
        has_input[c.to] = true;
        out[c.from].push(c.to);
    }
    let mut reach: Vec<Reach> = (0..n)
        .map(|i| if has_input[i] { Reach::None } else { Reach::One(i) })
        .collect();
    let mut work: Vec<usize> = (0..n).filter(|&i| !has_input[i]).collect();
    while let Some(net) = work.pop() {
        for &to in &out[net] {
            let joined = reach[to].join(reach[net]);
            if joined != reach[to] {
                reach[to] = joined;
                work.push(to);
            }
        }
    }
    reach
}

/// Puts each channel's samples on its row (by channel id, `rows[i].id == i`) and builds the
/// end-to-end part.
pub fn assemble(
    plan: &Plan,
    mode: LatencyMode,
    samples: Vec<ChannelSamples>,
    rows: &mut [super::ChannelReport],
) -> LatencyReport {
    let mut report = LatencyReport {
        mode: mode.name(),
        every: mode.every(),
        ..LatencyReport::default()
    };
    let reach = reach(plan);
    let mut per_sink: Vec<Option<Samples>> = vec![None; plan.nets.len()];
    let mut per_path: std::collections::BTreeMap<(usize, usize), Samples> = Default::default();
    for s in samples {
        let Some(c) = plan.channels.get(s.channel) else {
            continue;
        };
        report.clock_anomalies += s.latency.channel.clock_anomalies;
        if let Some(row) = rows.get_mut(s.channel) {
            row.latency_ns = s.latency.channel.summary();
            row.arrival_ns = s.latency.arrival.as_ref().map(Samples::summary);
        }
        // The same samples as the end-to-end ones when the reader is also a sink.
        if let (Some(arrival), None) = (&s.latency.arrival, &s.latency.end_to_end) {
            report.clock_anomalies += arrival.clock_anomalies;
        }
        let Some(e2e) = s.latency.end_to_end else {
            continue;
        };
        report.clock_anomalies += e2e.clock_anomalies;
        per_sink[c.to].get_or_insert_with(Samples::new).merge(&e2e);
        if let Reach::One(source) = reach[c.from] {
            per_path.entry((source, c.to)).or_default().merge(&e2e);
        }
    }
    let name = |id: usize| plan.nets[id].name.clone();
    report.sinks = per_sink
        .iter()
        .enumerate()
        .filter(|(_, s)| s.as_ref().is_some_and(|s| s.count() > 0 || s.clock_anomalies > 0))
        .filter_map(|(id, s)| {
            Some(SinkLatency {
                id,
                name: name(id),
                latency_ns: s.as_ref()?.summary(),
            })
        })
        .collect();
    report.paths = per_path
        .iter()
        .filter(|(_, s)| s.count() > 0)
        .map(|(&(from, to), s)| PathLatency {
            from: name(from),
            from_id: from,
            to: name(to),
            to_id: to,
            latency_ns: s.summary(),
        })
        .collect();
    report
}

/// The text report's end-to-end section (empty when nothing was sampled end to end).
pub fn render(report: &LatencyReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if report.sinks.is_empty() && report.clock_anomalies == 0 {
        return out;
    }
    let how = match report.every {
        1 => "every message".to_string(),
        n => format!("every {n}th message per channel"),
    };
    let _ = writeln!(
        out,
        "\nEnd-to-end latency (creation to consumption, p50/p99/p99.9/max (samples), {how})"
    );
    for s in &report.sinks {
        let _ = writeln!(
            out,
            "  sink {}: {}",
            cells::node(&s.name, s.id),
            cells::latency(&s.latency_ns)
        );
    }
    for p in &report.paths {
        let _ = writeln!(
            out,
            "  {} -> {}: {}",
            cells::node(&p.from, p.from_id),
            cells::node(&p.to, p.to_id),
            cells::latency(&p.latency_ns)
        );
    }
    if report.clock_anomalies > 0 {
        let _ = writeln!(
            out,
            "  {} samples read the clock before their stamp (clock went backwards, or stamps from a clock that \
             does not agree with this one): counted as clock anomalies, not as latency",
            report.clock_anomalies
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::Reach;

    #[test]
    fn reach_joins_to_many_only_for_two_different_sources() {
        assert_eq!(Reach::None.join(Reach::One(3)), Reach::One(3));
        assert_eq!(Reach::One(3).join(Reach::One(3)), Reach::One(3));
        assert_eq!(Reach::One(3).join(Reach::One(4)), Reach::Many);
        assert_eq!(Reach::Many.join(Reach::None), Reach::Many);
    }
}
