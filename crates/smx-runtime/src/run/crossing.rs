//! Misses a channel between two temporal firewalls of different periods has by its shape.
//!
//! A channel written `tt[1ms](Src.F).tt[2ms](Snk)` crosses from a firewall that takes one
//! message from its producer per 1 ms into one that hands its consumer one per 2 ms: half of
//! what crosses is overwritten in the latest-value buffer before the consumer's firewall
//! passes it on, consume misses at the crossing that no machine avoids. The other way round
//! (`tt[2ms](Src).tt[1ms](Snk)`), the consumer's firewall looks for a message twice per
//! message the producer's side delivers: half its ticks find none, produce misses that lose
//! nothing. The report warns of the first with the rule and the remedy, and marks the pairs
//! of both ([`crate::report::PairReport::consume_misses_by_shape`],
//! [`crate::report::PairReport::produce_misses_by_shape`]) so that the verdict on the period
//! does not blame the machine for them.

use std::time::Duration;

use smx_timing::lateness::human_ns;

use crate::firewall::plan::is_time_triggered;
use crate::plan::{ChannelPlan, Plan};
use crate::report::{Report, period_literal};

/// The name a firewall's pair gives the other firewall of a channel that crosses between two.
const OTHER_FIREWALL: &str = "tf_";

/// Marks the pairs of each channel between firewalls of different periods whose misses the
/// periods explain, and warns where there were some.
pub(super) fn explain(report: &mut Report, plan: &Plan) {
    for c in plan.channels.iter().filter(|c| crosses(c)) {
        let (from, to) = (plan.nets[c.from].thread_name(), plan.nets[c.to].thread_name());
        let faster_in = c.src_period < c.dst_period;
        let pairs = report.firewalls.iter_mut().flat_map(|f| &mut f.pairs);
        let mut misses = 0;
        for pair in pairs {
            if faster_in && pair.producer == from && pair.consumer.starts_with(OTHER_FIREWALL) {
                misses += pair.consume_misses;
                pair.consume_misses_by_shape |= pair.consume_misses > 0;
            } else if !faster_in && pair.producer.starts_with(OTHER_FIREWALL) && pair.consumer == to {
                misses += pair.produce_misses;
                pair.produce_misses_by_shape |= pair.produce_misses > 0;
            }
        }
        // Produce misses lose nothing: the verdict on the period says what they are.
        if misses > 0 && faster_in {
            report.tell(warning(c, &from, &to, Some(misses)));
        }
    }
}

/// The warnings of [`explain`] before a run: each channel that will lose messages where it
/// crosses into a firewall of a longer period.
pub(super) fn foreseen(plan: &Plan) -> Vec<String> {
    plan.channels
        .iter()
        .filter(|c| crosses(c) && c.src_period < c.dst_period)
        .map(|c| {
            let (from, to) = (plan.nets[c.from].thread_name(), plan.nets[c.to].thread_name());
            warning(c, &from, &to, None)
        })
        .collect()
}

/// A time-triggered channel whose two sides keep different periods.
fn crosses(c: &ChannelPlan) -> bool {
    is_time_triggered(c) && !c.src_period.is_zero() && !c.dst_period.is_zero() && c.src_period != c.dst_period
}

fn warning(c: &ChannelPlan, from: &str, to: &str, misses: Option<u64>) -> String {
    let (src, dst) = (period(c.src_period), period(c.dst_period));
    let lead = match misses {
        Some(misses) => format!(
            "the {misses} consume misses where its channel crosses from the {src} firewall into the {dst} one follow \
             from the net's shape, not from timing"
        ),
        None => format!(
            "where its channel crosses from the {src} firewall into the {dst} one it will lose messages by the net's \
             shape, whatever the timing"
        ),
    };
    format!(
        "{from} -> {to}: {lead}: the {dst} side hands {to} one message per {dst} \
         while the {src} side takes one per {src} from {from}; about {:.0} % of them are overwritten before {to} \
         gets them, on any machine. To carry every message, give {to} the period of {from} (`tt[{}]` around both), \
         or leave {to} out of the `tt`",
        100.0 * (1.0 - c.src_period.as_secs_f64() / c.dst_period.as_secs_f64()),
        period_literal(c.src_period.as_nanos() as u64),
    )
}

fn period(d: Duration) -> String {
    human_ns(d.as_nanos() as u64)
}
