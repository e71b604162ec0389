//! What makes a graph impossible to run, whoever built it: the front end, a JSON file, a
//! program. Checked before any thread exists, so a net that could only hang or crash is an
//! error naming its place instead.
//!
//! - a name that cannot name a thread or be printed (empty, or with a control character such
//!   as NUL: the thread and every report line carry it);
//! - a time-triggered edge without a period, or with a period no timer can wait (longer than
//!   2^64-1 ns, about 584 years);
//! - boxes that can never fire: each waits on a coupled input whose producer is itself waiting
//!   in the same way (a feedback loop that no message can enter, or a cycle of routing nodes),
//!   so the run could never end and no stop could reach them.

use crate::{Edge, NetGraph, NodeKind, TimeSpec, Timing};

/// Every problem of `g` that makes it impossible to run, one sentence each (empty: none).
/// A graph whose ids or edge ends are inconsistent gets one problem saying so.
pub fn problems(g: &NetGraph) -> Vec<String> {
    let mut out = Vec::new();
    let consistent = g.nodes.iter().enumerate().all(|(i, n)| n.id == i)
        && g.edges
            .iter()
            .all(|e| e.source < g.nodes.len() && e.target < g.nodes.len());
    if !consistent {
        // The callers' own checks name what is inconsistent; nothing here may index past it.
        return vec!["node ids or edge ends are inconsistent".to_string()];
    }
    for n in &g.nodes {
        for (what, text) in [("label", &n.label), ("implementation", &n.func)] {
            if text.is_empty() || text.chars().any(char::is_control) {
                out.push(format!(
                    "node {}: {what} {text:?} cannot name a thread (empty, or a control character)",
                    n.id
                ));
            }
        }
    }
    for e in &g.edges {
        if e.timing != Timing::TimeTriggered {
            continue;
        }
        if e.src_time.is_zero() && e.dst_time.is_zero() {
            out.push(format!("{}: time-triggered, but without a period", edge_name(g, e)));
        }
        let sides = if e.src_time == e.dst_time {
            &[e.src_time][..]
        } else {
            &[e.src_time, e.dst_time][..]
        };
        for &t in sides {
            if period_ns(t).is_none() {
                out.push(format!(
                    "{}: period of {} s and {} ns is longer than a timer can wait (2^64-1 ns, about 584 years)",
                    edge_name(g, e),
                    t.secs,
                    t.nanos
                ));
            }
        }
    }
    let stuck = never_firing(g);
    if !stuck.is_empty() {
        const SHOWN: usize = 10;
        let mut names: Vec<String> = stuck.iter().take(SHOWN).map(|&v| node_name(g, v)).collect();
        if stuck.len() > SHOWN {
            names.push(format!("and {} more", stuck.len() - SHOWN));
        }
        out.push(format!(
            "{} can never run: they wait for messages that only they could send (a feedback loop no \
             message can enter), so the net would never end",
            names.join(", ")
        ));
    }
    out
}

/// The period in nanoseconds, if it fits.
pub fn period_ns(t: TimeSpec) -> Option<u64> {
    t.secs.checked_mul(1_000_000_000)?.checked_add(t.nanos)
}

/// Nodes that can never fire, in id order. A box fires once each of its coupled inputs holds a
/// message or has ended; a routing node once any input holds one. Start from every node that
/// waits on something and release, until nothing changes, each whose wait can be met by a
/// node already released: what is left waits only on itself.
pub fn never_firing(g: &NetGraph) -> Vec<usize> {
    let waits = |e: &Edge| !e.ddst || g.nodes[e.target].kind == NodeKind::RoutingNode;
    // Per node, its waited-on inputs not yet met, and the waited-on channels leaving it: each
    // release walks its own channels once, so the whole pass costs the graph once.
    let mut pending = vec![0usize; g.nodes.len()];
    let mut leaving: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    for e in g.edges.iter().filter(|e| waits(e)) {
        pending[e.target] += 1;
        leaving[e.source].push(e.target);
    }
    let mut stuck: Vec<bool> = pending.iter().map(|&p| p > 0).collect();
    let mut released: Vec<usize> = (0..g.nodes.len()).filter(|&v| !stuck[v]).collect();
    while let Some(v) = released.pop() {
        for &t in &leaving[v] {
            if !stuck[t] {
                continue;
            }
            pending[t] -= 1;
            // A routing node fires once any input holds a message, a box once all of them do.
            if g.nodes[t].kind == NodeKind::RoutingNode || pending[t] == 0 {
                stuck[t] = false;
                released.push(t);
            }
        }
    }
    (0..g.nodes.len()).filter(|&v| stuck[v]).collect()
}

fn node_name(g: &NetGraph, v: usize) -> String {
    format!("{}#{}", g.nodes[v].label, v)
}

fn edge_name(g: &NetGraph, e: &Edge) -> String {
    format!(
        "channel '{}' ({} -> {})",
        e.label,
        node_name(g, e.source),
        node_name(g, e.target)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Location, Node};

    fn node(id: usize, kind: NodeKind) -> Node {
        Node {
            id,
            label: format!("N{id}"),
            func: "f".into(),
            kind,
            is_static: false,
            pure: false,
            location: Location::Local,
            priority: 0,
            line: 0,
            ports: Vec::new(),
        }
    }

    fn edge(id: usize, source: usize, target: usize) -> Edge {
        Edge {
            id,
            source,
            target,
            label: "x".into(),
            source_port: "x".into(),
            target_port: "x".into(),
            nsrc: None,
            ndst: None,
            dsrc: false,
            ddst: false,
            len: 1,
            len_declared: false,
            timing: Timing::None,
            src_time: TimeSpec::default(),
            dst_time: TimeSpec::default(),
            dynsrc: false,
            dyndst: false,
        }
    }

    fn graph(kinds: &[NodeKind], edges: &[(usize, usize)]) -> NetGraph {
        NetGraph {
            nodes: kinds.iter().enumerate().map(|(i, k)| node(i, *k)).collect(),
            edges: edges.iter().enumerate().map(|(i, &(s, t))| edge(i, s, t)).collect(),
        }
    }

    const B: NodeKind = NodeKind::Box;
    const R: NodeKind = NodeKind::RoutingNode;

    #[test]
    fn closed_loops_never_fire_and_fed_ones_do() {
        // A self-loop, a cycle of two boxes, a cycle of two routing nodes.
        assert_eq!(never_firing(&graph(&[B], &[(0, 0)])), vec![0]);
        assert_eq!(never_firing(&graph(&[B, B], &[(0, 1), (1, 0)])), vec![0, 1]);
        assert_eq!(never_firing(&graph(&[R, R], &[(0, 1), (1, 0)])), vec![0, 1]);
        // Downstream of a closed loop waits too.
        assert_eq!(never_firing(&graph(&[B, B], &[(0, 0), (0, 1)])), vec![0, 1]);
        // A source feeding a loop through a routing node: messages enter.
        assert!(never_firing(&graph(&[B, R, B], &[(0, 1), (1, 2), (2, 1)])).is_empty());
        // A chain.
        assert!(never_firing(&graph(&[B, B, B], &[(0, 1), (1, 2)])).is_empty());
        // A box needs every coupled input: one from a source does not help.
        assert_eq!(never_firing(&graph(&[B, B], &[(0, 1), (1, 1)])), vec![1]);
    }

    #[test]
    fn a_long_chain_fires_whatever_order_its_nodes_are_listed_in() {
        // Listed from the sink back to the source, a release reaches one node per pass of a
        // fixpoint over the nodes; the release walks each channel once instead.
        let n = 50_000;
        let edges: Vec<(usize, usize)> = (0..n - 1).map(|i| (i + 1, i)).collect();
        assert!(never_firing(&graph(&vec![B; n], &edges)).is_empty());
        // The same chain closed into a ring never fires, every node of it.
        let mut ring = edges.clone();
        ring.push((0, n - 1));
        assert_eq!(never_firing(&graph(&vec![B; n], &ring)).len(), n);
    }

    #[test]
    fn a_decoupled_consumer_side_is_not_waited_on() {
        let mut g = graph(&[B], &[(0, 0)]);
        g.edges[0].ddst = true;
        assert!(problems(&g).is_empty());
    }

    #[test]
    fn periods_that_overflow_or_are_missing_and_bad_labels_are_named() {
        let mut g = graph(&[B, B], &[(0, 1)]);
        g.edges[0].timing = Timing::TimeTriggered;
        assert!(problems(&g)[0].contains("without a period"), "{:?}", problems(&g));
        g.edges[0].src_time = TimeSpec {
            secs: u64::MAX,
            nanos: 0,
        };
        g.edges[0].dst_time = TimeSpec { secs: 1, nanos: 0 };
        let p = problems(&g);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].contains("channel 'x' (N0#0 -> N1#1)") && p[0].contains("584 years"),
            "{p:?}"
        );
        g.edges[0].src_time = TimeSpec { secs: 1, nanos: 0 };
        g.nodes[1].label = "Sn\0k".into();
        let p = problems(&g);
        assert!(
            p.len() == 1 && p[0].contains("\"Sn\\0k\" cannot name a thread"),
            "{p:?}"
        );
    }
}
