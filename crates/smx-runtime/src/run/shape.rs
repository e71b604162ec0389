//! Messages a time-triggered net loses by its shape, whatever the machine.
//!
//! A routing node passes one message at a time to all its outputs, and a time-triggered output
//! whose producer side is coupled takes one message per period of its firewall: behind such
//! outputs the node forwards at most one message per period of the slowest. Each
//! time-triggered input delivers up to one message per period of its own into a latest-value
//! buffer that never waits. When the inputs deliver more than the outputs take, as a fan-in
//! `tt[T]((A!B).(C|D))` does (two per `T` in, one per `T` out), the rest is overwritten before
//! the node reads it: consume misses that no machine and no scheduling avoids. The report
//! says so in a warning with what to change in the net, and marks those pairs
//! ([`crate::report::PairReport::consume_misses_by_shape`]) so that the verdict on the period
//! does not blame the machine for them.

use std::collections::BTreeMap;
use std::time::Duration;

use smx_timing::lateness::human_ns;

use crate::firewall::plan::is_time_triggered;
use crate::plan::{ChannelPlan, Plan, Role};
use crate::report::{Report, period_literal};

/// A routing node whose time-triggered inputs deliver more than its outputs take.
struct Narrowing<'p> {
    node: usize,
    inputs: Vec<&'p ChannelPlan>,
    outputs: Vec<&'p ChannelPlan>,
    /// The period of the slowest time-triggered output: the node forwards one message per it.
    pace: Duration,
    /// How many messages the inputs deliver per `pace`, more than one.
    offered: f64,
}

/// Marks the pairs into each routing node that loses messages by the net's shape, and warns
/// with the reason and the remedy where it did lose some.
pub(super) fn explain(report: &mut Report, plan: &Plan) {
    for narrowing in narrowings(plan) {
        let node = plan.nets[narrowing.node].thread_name();
        let pairs = report.firewalls.iter_mut().flat_map(|f| &mut f.pairs);
        let into_node: Vec<_> = pairs.filter(|p| p.consumer == node).collect();
        let misses: u64 = into_node.iter().map(|p| p.consume_misses).sum();
        if misses == 0 {
            continue;
        }
        for pair in into_node {
            pair.consume_misses_by_shape = true;
        }
        report.tell(warning(plan, &narrowing, Some(misses)));
    }
}

/// The warnings of [`explain`] before a run: each routing node that will lose messages by the
/// net's shape, whatever the machine.
pub(super) fn foreseen(plan: &Plan) -> Vec<String> {
    narrowings(plan).iter().map(|n| warning(plan, n, None)).collect()
}

fn narrowings(plan: &Plan) -> Vec<Narrowing<'_>> {
    plan.nets
        .iter()
        .filter(|n| matches!(n.role, Role::Routing))
        .filter_map(|n| narrowing(plan, n.id))
        .collect()
}

fn narrowing(plan: &Plan, node: usize) -> Option<Narrowing<'_>> {
    let timed = plan.channels.iter().filter(|c| is_time_triggered(c));
    let inputs: Vec<&ChannelPlan> = timed.clone().filter(|c| c.to == node).collect();
    // A decoupled producer side never holds the node back: what it cannot take is lost behind
    // the node, not in front of it.
    let outputs: Vec<&ChannelPlan> = timed
        .filter(|c| c.from == node && !c.kind.producer_decoupled())
        .collect();
    let pace = outputs.iter().map(|c| intake_period(c)).max()?;
    let offered: f64 = inputs
        .iter()
        .map(|c| pace.as_secs_f64() / delivery_period(c).as_secs_f64())
        .sum();
    // A hair above one is rounding, not a shape that loses.
    (offered > 1.0 + 1e-9).then_some(Narrowing {
        node,
        inputs,
        outputs,
        pace,
        offered,
    })
}

/// The period at which the firewall of a time-triggered channel hands its consumer a message.
fn delivery_period(c: &ChannelPlan) -> Duration {
    if c.dst_period.is_zero() {
        c.src_period
    } else {
        c.dst_period
    }
}

/// The period at which the firewall of a time-triggered channel takes a message from its
/// producer.
fn intake_period(c: &ChannelPlan) -> Duration {
    if c.src_period.is_zero() {
        c.dst_period
    } else {
        c.src_period
    }
}

/// The warning: where the misses are (`None`: before a run, where they will be), the rule that
/// makes them, and what to change in the net.
fn warning(plan: &Plan, n: &Narrowing<'_>, misses: Option<u64>) -> String {
    let node = plan.nets[n.node].thread_name();
    let needed = fast_enough(n.pace.div_f64(n.offered));
    let lead = match misses {
        Some(misses) => {
            format!(
                "the {misses} consume misses on its time-triggered inputs follow from the net's shape, not from timing"
            )
        }
        None => "its time-triggered inputs will lose messages by the net's shape, whatever the timing".to_string(),
    };
    format!(
        "{node}: {lead}: a routing node passes one message at a time to all its outputs, so behind its time-triggered \
         outputs ({}) it forwards at most one message per {}, while its inputs ({}) deliver {} per {}; about \
         {:.0} % of what they deliver is overwritten before {node} reads it, on any machine. To carry every \
         message, give its outputs a period of {} or shorter (its consumers in a `tt[{}]` of their own), leave \
         its consumers out of the `tt`, or give each producer a `tt` branch of its own with the consumers that \
         need its messages",
        channels(plan, &n.outputs, intake_period),
        human_ns(n.pace.as_nanos() as u64),
        channels(plan, &n.inputs, delivery_period),
        count(n.offered),
        human_ns(n.pace.as_nanos() as u64),
        100.0 * (1.0 - 1.0 / n.offered),
        human_ns(needed.as_nanos() as u64),
        period_literal(needed.as_nanos() as u64),
    )
}

/// `A#0 -> B#1 and C#2 -> B#1, one per 1.00ms each`, a group per period.
fn channels(plan: &Plan, list: &[&ChannelPlan], period: fn(&ChannelPlan) -> Duration) -> String {
    let mut by_period: BTreeMap<Duration, Vec<String>> = BTreeMap::new();
    for c in list {
        let ends = format!(
            "{} -> {}",
            plan.nets[c.from].thread_name(),
            plan.nets[c.to].thread_name()
        );
        by_period.entry(period(c)).or_default().push(ends);
    }
    let groups: Vec<String> = by_period
        .into_iter()
        .map(|(p, ends)| {
            let each = if ends.len() > 1 { " each" } else { "" };
            format!(
                "{}, one per {}{each}",
                ends.join(" and "),
                human_ns(p.as_nanos() as u64)
            )
        })
        .collect();
    groups.join("; ")
}

/// A period that keeps up, written as a net would write it: down to whole microseconds from
/// 10 us on, where nanoseconds would be noise.
fn fast_enough(period: Duration) -> Duration {
    if period >= Duration::from_micros(10) {
        Duration::from_micros(period.as_micros() as u64)
    } else {
        period
    }
}

/// `2`, or `1.5`: messages per period.
fn count(x: f64) -> String {
    if (x - x.round()).abs() < 1e-6 {
        format!("{}", x.round() as u64)
    } else {
        format!("{x:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_that_keeps_up_is_written_in_whole_microseconds() {
        assert_eq!(fast_enough(Duration::from_nanos(333_333)), Duration::from_micros(333));
        assert_eq!(fast_enough(Duration::from_nanos(3_333)), Duration::from_nanos(3_333));
        assert_eq!(count(2.0), "2");
        assert_eq!(count(1.5), "1.5");
    }
}
