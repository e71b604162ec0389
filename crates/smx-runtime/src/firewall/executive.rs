//! The cyclic executive (`--tt-mode cyclic`): the boxes of one period run inside the
//! firewall's own thread, in a fixed order, once per tick.
//!
//! In the default mode every time-triggered box has its own thread, which the firewall wakes
//! at each tick through a channel. On a machine whose timer and wake-up latencies are a good
//! part of the period (a VM at 10-100 µs), each of those wake-ups is one more chance to miss
//! the deadline: the producer must be scheduled in time to deliver, the consumer in time to
//! read. Here only one thread wakes per tick, as in the platform probe, and then does all the
//! period's work itself: the firewall pass first (what was delivered during the last period
//! becomes visible), then one firing of each box in declaration order. Logical execution time
//! makes the order within a tick irrelevant to the data: nothing a box writes is visible before
//! the next tick.
//!
//! A box runs here when every channel it has is time-triggered at one and the same period on
//! its side (`tt[T](Src.Snk)` makes both `Src` and `Snk` eligible); any other box keeps its
//! thread. A box fires at most once per tick and only when its triggering inputs are ready
//! (a message or the end), so it never blocks the thread: its writes into the firewall never
//! wait either (a second write in one period replaces the first and is counted as
//! overwritten). A box whose step takes longer than the period makes the executive late, and
//! the late ticks are counted as missed ticks and overruns like any firewall's.

use std::time::Duration;

use crate::io::PortSet;
use crate::plan::NetPlan;
use smx_box::BoxSpec;
use smx_graph::{NetGraph, NodeKind, Timing};

/// For each node of `graph`, the period of the executive that runs it, or `None` when it
/// keeps its own thread.
pub fn periods(graph: &NetGraph) -> Vec<Option<Duration>> {
    let mut period: Vec<Option<Duration>> = vec![None; graph.nodes.len()];
    let mut eligible: Vec<bool> = graph.nodes.iter().map(|n| n.kind == NodeKind::Box).collect();
    for e in &graph.edges {
        let tt = e.timing == Timing::TimeTriggered;
        for (node, side) in [
            (e.source, e.src_time.as_duration()),
            (e.target, e.dst_time.as_duration()),
        ] {
            if !tt || side.is_zero() || period[node].is_some_and(|p| p != side) {
                eligible[node] = false;
            }
            period[node] = Some(side);
        }
    }
    period
        .into_iter()
        .zip(eligible)
        .map(|(p, ok)| if ok { p.filter(|p| !p.is_zero()) } else { None })
        .collect()
}

/// A box handed to an executive, as it would have been handed to its own thread.
pub struct ExecBox {
    pub plan: NetPlan,
    pub spec: BoxSpec,
    pub ports: PortSet,
    /// Where its loop count is published.
    pub loops: std::sync::Arc<crate::run_state::LoopCounter>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::NetBuilder;
    use smx_graph::TimeSpec;

    const T: Duration = Duration::from_millis(2);

    fn tt(graph: &mut NetGraph, edge: usize, src: Duration, dst: Duration) {
        let spec = |d: Duration| TimeSpec {
            secs: 0,
            nanos: d.as_nanos() as u64,
        };
        graph.edges[edge].timing = Timing::TimeTriggered;
        graph.edges[edge].src_time = spec(src);
        graph.edges[edge].dst_time = spec(dst);
    }

    /// `A.B.C` (two edges) with the given sides of each edge time-triggered.
    fn chain(first: (Duration, Duration), second: Option<(Duration, Duration)>) -> NetGraph {
        let mut net = NetBuilder::new();
        let a = net.add_box("A", "smx_src_rand", &[("data", false)]);
        let b = net.add_box("B", "smx_fwd", &[("data", true), ("data", false)]);
        let c = net.add_box("C", "smx_snk_null", &[("data", true)]);
        net.connect(a, "data", b, "data");
        net.connect(b, "data", c, "data");
        let mut graph = net.build();
        tt(&mut graph, 0, first.0, first.1);
        if let Some((s, d)) = second {
            tt(&mut graph, 1, s, d);
        }
        graph
    }

    #[test]
    fn boxes_whose_channels_all_run_at_one_period_are_eligible() {
        let g = chain((T, T), Some((T, T)));
        assert_eq!(periods(&g), vec![Some(T), Some(T), Some(T)]);
    }

    #[test]
    fn a_box_with_an_untimed_channel_keeps_its_thread() {
        // B -> C is not time-triggered: B and C keep their threads, A does not need one.
        let g = chain((T, T), None);
        assert_eq!(periods(&g), vec![Some(T), None, None]);
    }

    #[test]
    fn a_box_between_two_periods_keeps_its_thread() {
        let g = chain((T, T), Some((2 * T, 2 * T)));
        assert_eq!(periods(&g), vec![Some(T), None, Some(2 * T)]);
    }

    #[test]
    fn the_untimed_side_of_a_half_time_triggered_edge_keeps_its_thread() {
        let g = chain((T, Duration::ZERO), None);
        assert_eq!(periods(&g)[..2], [Some(T), None]);
    }
}
