//! The report of a run that ended: net rows, channel rows (a time-triggered channel's two
//! segments as one), latency and totals.

use std::sync::Arc;
use std::time::SystemTime;

use crate::report::{ChannelReport, NetReport, Report, Status, rate};
use crate::run_state::Outcome;
use crate::{channel, firewall, latency, plan, report};
use channel::ChannelState;
use plan::{Plan, Role};

use super::Wired;

/// A time-triggered channel's row shows its consumer side's length and covers the way from
/// the producer (see [`merge_producer_segment`]).
pub(super) fn fold_producer_segments(report: &mut Report, plan: &Plan, wired: &Wired) {
    for (row, c) in report.channels.iter_mut().zip(&plan.channels) {
        if firewall::plan::is_time_triggered(c) {
            row.len = firewall::plan::consumer_side_len(c);
        }
        if let Some(producer) = &wired.producer_side[c.id] {
            let in_series = !c.src_period.is_zero() && !c.dst_period.is_zero() && c.src_period != c.dst_period;
            merge_producer_segment(row, &producer.counters.final_snapshot(), in_series);
        }
    }
}

/// Per net, whether it is a sink: a net without a connected output.
pub(super) fn sinks(plan: &Plan) -> Vec<bool> {
    let mut sink = vec![true; plan.nets.len()];
    for c in &plan.channels {
        sink[c.from] = false;
    }
    sink
}

/// The channels whose reads are the run's `messages`: into each final sink net (a net without
/// a connected output that is not a bridge out of the net, such as a ZeroMQ sink, unless every
/// sink is one) its first connected input in port order, so that a sink reading data and topic
/// in pairs counts each pair once; all channels when there is no sink.
pub(super) fn counted_channels(plan: &Plan, shared: &[Arc<ChannelState>]) -> Vec<Arc<ChannelState>> {
    let sink = sinks(plan);
    let is_sink = |net: usize| sink[net];
    let bridge = |n: &plan::NetPlan| matches!(&n.role, Role::Box(spec) if spec.bridge);
    let sinks: Vec<&plan::NetPlan> = plan.nets.iter().filter(|n| is_sink(n.id)).collect();
    let only_bridges = sinks.iter().all(|n| bridge(n));
    let into_sinks: Vec<Arc<ChannelState>> = sinks
        .into_iter()
        .filter(|n| only_bridges || !bridge(n))
        .filter_map(|n| n.inputs.iter().find_map(|p| p.channel))
        .map(|id| shared[id].clone())
        .collect();
    if into_sinks.is_empty() {
        shared.to_vec()
    } else {
        into_sinks
    }
}

/// Folds the producer→firewall segment of a time-triggered channel into its report row, so
/// that the row's books cover the whole way from producer to consumer: `written` is what the
/// producer wrote and losses of both segments are added. Messages the firewalls took but did
/// not pass on were overwritten in the latest-value buffer between two firewalls of different
/// periods (`in_series`), or else held by the firewall when the run ended (`left`).
fn merge_producer_segment(row: &mut crate::report::ChannelReport, producer: &channel::CountSnapshot, in_series: bool) {
    let not_passed_on = producer.read.saturating_sub(row.written);
    row.written = producer.written;
    row.overwritten += producer.overwritten;
    row.dropped += producer.dropped;
    row.left += producer.left;
    if in_series {
        row.overwritten += not_passed_on;
    } else {
        row.left += not_passed_on;
    }
}

pub(super) fn assemble(
    plan: &Plan,
    shared: &[Arc<ChannelState>],
    outcomes: Vec<Outcome>,
    started_at: SystemTime,
    wall: f64,
    latency_mode: latency::LatencyMode,
) -> Report {
    let mut warnings: Vec<String> = Vec::new();
    let mut samples = Vec::new();
    let nets = net_rows(plan, outcomes, &mut samples, &mut warnings);
    let mut channels = channel_rows(plan, shared);
    let latency = report::latency::assemble(plan, latency_mode, samples, &mut channels);
    if latency.clock_anomalies > 0 {
        warnings.push(format!(
            "{} latency samples read the clock before their stamp (the clock went backwards): counted as clock \
             anomalies, not as latency",
            latency.clock_anomalies
        ));
    }
    let messages = counted_channels(plan, shared)
        .iter()
        .map(|c| c.counters.final_snapshot().read)
        .sum();
    let status = if nets.iter().any(|n| n.status == Status::Failed) {
        Status::Failed
    } else if nets.iter().any(|n| n.status == Status::Stopped) {
        Status::Stopped
    } else {
        Status::Ok
    };
    warnings.extend(nets.iter().flat_map(|n| n.stats.warnings.iter().cloned()));
    let mut sections: std::collections::BTreeMap<String, Vec<smx_box::Stats>> = Default::default();
    for n in &nets {
        if let Some(section) = n.stats.section {
            sections.entry(section.to_string()).or_default().push(n.stats.clone());
        }
    }
    let mut report = Report {
        format_version: 3,
        wall_time_s: wall,
        status,
        messages,
        messages_per_s: rate(messages, wall),
        nets,
        channels,
        firewalls: Vec::new(),
        latency,
        probes: Vec::new(),
        sections,
        notes: Vec::new(),
        warnings: Vec::new(),
        periods: Vec::new(),
        started_at,
        ended_at: SystemTime::now(),
    };
    for line in warnings {
        report.tell(line);
    }
    report
}

/// A report row per net from its outcome; the outcomes' latency samples go to `samples`, their
/// warnings (and a rate outside the expected one) to `warnings`.
fn net_rows(
    plan: &Plan,
    outcomes: Vec<Outcome>,
    samples: &mut Vec<latency::ChannelSamples>,
    warnings: &mut Vec<String>,
) -> Vec<NetReport> {
    let mut nets = Vec::with_capacity(plan.nets.len());
    for (net, mut outcome) in plan.nets.iter().zip(outcomes) {
        samples.append(&mut outcome.latency);
        for w in outcome.warnings {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        let wall_time_s = outcome.wall.as_secs_f64();
        let loop_rate = rate(outcome.loop_count, wall_time_s);
        if let Some(expected) = net.settings.expected_rate.filter(|r| *r > 0)
            && outcome.status != Status::Failed
        {
            let share = 100.0 * loop_rate / expected as f64;
            if !(80.0..=120.0).contains(&share) {
                warnings.push(format!(
                    "{}: net rate at {share:.0}% of the expected rate ({expected})",
                    net.thread_name()
                ));
            }
        }
        nets.push(NetReport {
            id: net.id,
            name: net.name.clone(),
            implementation: net.implementation.clone(),
            kind: match net.role {
                Role::Box(_) => "box",
                Role::Routing => "routing_node",
            },
            core: outcome.core,
            priority: outcome.priority,
            loop_count: outcome.loop_count,
            loop_rate,
            wall_time_s,
            status: outcome.status,
            error: outcome.error,
            unconnected_writes: outcome.unconnected_writes,
            stats: outcome.stats,
            ended_at: outcome.ended_at,
        });
    }
    nets
}

/// A report row per channel from its final counts (latency is added by the latency report).
fn channel_rows(plan: &Plan, shared: &[Arc<ChannelState>]) -> Vec<ChannelReport> {
    plan.channels
        .iter()
        .map(|c| {
            let counts = shared[c.id].counters.final_snapshot();
            ChannelReport {
                id: c.id,
                name: c.label.clone(),
                from: plan.nets[c.from].name.clone(),
                from_id: c.from,
                from_port: c.from_port.clone(),
                to: plan.nets[c.to].name.clone(),
                to_id: c.to,
                port: c.to_port.clone(),
                kind: c.kind.name(),
                smx_type: c.kind.smx_name(),
                timing: match c.timing {
                    smx_graph::Timing::None => "none",
                    smx_graph::Timing::TimeTriggered => "time_triggered",
                    smx_graph::Timing::TimeBounded => "time_bounded",
                },
                len: c.len,
                written: counts.written,
                read: counts.read,
                overwritten: counts.overwritten,
                duplicated: counts.duplicated,
                dropped: counts.dropped,
                left: counts.left,
                settled: true,
                latency_ns: Default::default(),
                arrival_ns: None,
            }
        })
        .collect()
}
