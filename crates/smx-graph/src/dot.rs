//! Graphviz export for people: boxes as `instance#id : implementation`, routing nodes as small
//! grey circles named `smx_rn#id` (the channels into one end there without an arrowhead or a
//! name: the channel out of it names them all; a link between processes keeps both), time-triggered channels bold and labelled with
//! their periods, time-bounded ones dashed, decoupled ends drawn with an open circle, declared
//! channel lengths in brackets, boxes the language marks for real-time scheduling (inside `rt`
//! or `tt`) filled, with the level of the mark (whether a run grants it, and at which SCHED_FIFO
//! priority, depends on `--rt` and the machine: the run's report says). `instance#id` is the node as the report, the warnings and the
//! configuration (`[net."Snk#3"]`, `--set Snk#3.KEY=VALUE`) name it. A net placed over
//! several processes ([`to_dot_placed`]) draws each process as a frame around its nodes and
//! each channel between two processes in the colour of links, named by its transport.

use std::fmt::Write as _;

use super::{NetGraph, NodeKind, TimeSpec, Timing};

/// Where the nodes of a net run, for a drawing: the processes, the process of each node, and
/// what carries each channel between two processes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Placed {
    /// Per process, its frame's title (`process sinks (this machine)`).
    pub processes: Vec<String>,
    /// Per node id, its index in `processes`.
    pub process_of_node: Vec<usize>,
    /// Per edge id, the link that carries it (`shm`, `zmq, curve`), or `None` within a process.
    pub link_of_edge: Vec<Option<String>>,
}

/// The dot text of `g` (render with `dot -Tsvg`).
pub fn to_dot(g: &NetGraph) -> String {
    to_dot_placed(g, None)
}

/// The dot text of `g`, with each process of `placed` as a frame around its nodes.
pub fn to_dot_placed(g: &NetGraph, placed: Option<&Placed>) -> String {
    let mut s = String::from(
        "digraph streamix {\n  rankdir=LR;\n  node [fontname=\"Helvetica\", fontsize=11, margin=\"0.15,0.08\"];\n  edge [fontname=\"Helvetica\", fontsize=9];\n",
    );
    match placed {
        None => {
            for n in &g.nodes {
                let _ = writeln!(s, "  n{} [{}];", n.id, node_attrs(n));
            }
        }
        Some(placed) => {
            for (k, title) in placed.processes.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "  subgraph cluster_p{k} {{\n    label=\"{}\";\n    style=\"rounded,dashed\";\n    color=\"#777777\";\n    fontname=\"Helvetica\";\n    fontsize=11;",
                    esc(title)
                );
                for n in g.nodes.iter().filter(|n| placed.process_of_node.get(n.id) == Some(&k)) {
                    let _ = writeln!(s, "    n{} [{}];", n.id, node_attrs(n));
                }
                s.push_str("  }\n");
            }
            // A node of no process is still drawn as itself, outside every frame.
            let placed_here = |id: usize| {
                placed
                    .process_of_node
                    .get(id)
                    .is_some_and(|&k| k < placed.processes.len())
            };
            for n in g.nodes.iter().filter(|n| !placed_here(n.id)) {
                let _ = writeln!(s, "  n{} [{}];", n.id, node_attrs(n));
            }
        }
    }
    for e in &g.edges {
        let _ = writeln!(s, "  n{} -> n{} [{}];", e.source, e.target, edge_attrs(g, e, placed));
    }
    s.push_str("}\n");
    s
}

/// The attributes of channel `e`: its label (name, declared length, timing, link), its colour
/// and its ends.
fn edge_attrs(g: &NetGraph, e: &super::Edge, placed: Option<&Placed>) -> String {
    let routing = |id: usize| g.nodes.get(id).is_some_and(|n| n.kind == NodeKind::RoutingNode);
    // A routing node's point is where its inputs meet: arrowheads there would pile up on the
    // point and its name, one per input of a fan-in; and every channel of a routing node has
    // the same name, so the one out of it says it, not each one into it. A link into one keeps
    // both: which way it carries, and what, matter across processes, whose producer dials and
    // whose consumer binds.
    let link = placed.and_then(|p| p.link_of_edge.get(e.id)).and_then(Option::as_ref);
    let into_routing = routing(e.target) && link.is_none();
    let mut lines = Vec::new();
    let name = if into_routing { String::new() } else { esc(&e.label) };
    match (name.is_empty(), e.len_declared) {
        (_, true) => lines.push(format!("{name} [{}]", e.len).trim_start().to_owned()),
        (false, false) => lines.push(name),
        (true, false) => {}
    }
    let mut attrs = Vec::new();
    match e.timing {
        Timing::TimeTriggered => {
            lines.push(format!("tt {}", periods(e.src_time, e.dst_time)));
            attrs.push("color=\"#1f4fbf\", penwidth=2, fontcolor=\"#1f4fbf\"".to_owned());
        }
        Timing::TimeBounded => {
            lines.push(format!("tb {}", periods(e.src_time, e.dst_time)));
            attrs.push("style=dashed, color=\"#2e7d32\", fontcolor=\"#2e7d32\"".to_owned());
        }
        Timing::None => {}
    }
    if let Some(link) = link {
        lines.push(format!("link: {}", esc(link)));
        // Twice the room between the frames, where the label goes beside the edge rather than
        // on the slope it takes to reach a frame of another row.
        attrs.push("color=\"#b8560f\", penwidth=2, fontcolor=\"#b8560f\", minlen=2".to_owned());
    } else if routing(e.target) || routing(e.source) {
        // The channels of a fan-in or fan-out meet at one point: twice the room lets their
        // labels stand apart along the edges instead of in a stack beside the point.
        attrs.push("minlen=2".to_owned());
    }
    if e.dsrc || e.ddst {
        attrs.push(format!(
            "dir=both, arrowtail={}, arrowhead={}",
            if e.dsrc { "odot" } else { "none" },
            match (e.ddst, into_routing) {
                (true, true) => "odot",
                (true, false) => "normalodot",
                (false, true) => "none",
                (false, false) => "normal",
            }
        ));
    } else if into_routing {
        attrs.push("arrowhead=none".to_owned());
    }
    attrs.push(format!("label=\"{}\"", lines.join("\\n")));
    attrs.join(", ")
}

fn node_attrs(n: &super::Node) -> String {
    match n.kind {
        // Its name inside a small circle: beside a point, the engine set it where the channels
        // of a fan-in crossed it, or on the frame of its process.
        NodeKind::RoutingNode => format!(
            "shape=circle, margin=0.01, style=filled, fillcolor=\"#eeeeee\", fontsize=8, label=\"{}\"",
            esc(&format!("{}#{}", n.label, n.id))
        ),
        NodeKind::Box => {
            let mut style = vec!["rounded"];
            if n.is_static {
                style.push("bold");
            }
            if n.priority > 0 {
                style.push("filled");
            }
            let mut label = esc(&format!("{}#{} : {}", n.label, n.id, n.func));
            if n.priority > 0 {
                let _ = write!(label, "\\nreal-time mark {}", n.priority);
            }
            format!(
                "shape=box, style=\"{}\", fillcolor=\"#dde8ff\", label=\"{}\"",
                style.join(","),
                label
            )
        }
        NodeKind::Unexpanded => format!(
            "shape=box, style=dashed, color=red, label=\"{}\"",
            esc(&format!("{}#{}", n.label, n.id))
        ),
    }
}

/// `1s -> 500ms` when the two ends differ, else the one period.
fn periods(src: TimeSpec, dst: TimeSpec) -> String {
    match (src.is_zero(), dst.is_zero()) {
        (false, false) if src != dst => format!("{} -> {}", human(src), human(dst)),
        (false, _) => human(src),
        (true, false) => human(dst),
        (true, true) => "0s".to_owned(),
    }
}

/// A period in the largest units that keep it exact, e.g. `1s500ms`, `250us`.
pub fn human(t: TimeSpec) -> String {
    let total = u128::from(t.secs) * 1_000_000_000 + u128::from(t.nanos);
    if total == 0 {
        return "0s".to_owned();
    }
    let mut out = String::new();
    let mut rest = total;
    for (unit, scale) in [("s", 1_000_000_000u128), ("ms", 1_000_000), ("us", 1_000), ("ns", 1)] {
        if rest >= scale {
            let _ = write!(out, "{}{unit}", rest / scale);
            rest %= scale;
        }
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Src.Snk` as the composer makes it.
    fn src_snk() -> NetGraph {
        let port = |mode: &str| {
            format!(
                r#"{{"name": "data", "mode": "{mode}", "class": null, "decoupled": false, "open": false, "dynamic": false, "alt_name": null}}"#
            )
        };
        let node = |id: usize, label: &str, func: &str, mode: &str| {
            format!(
                r#"{{"id": {id}, "label": "{label}", "func": "{func}", "kind": "box", "is_static": false, "pure": false, "location": "local", "priority": 0, "line": 1, "ports": [{}]}}"#,
                port(mode)
            )
        };
        let zero = r#"{"secs": 0, "nanos": 0}"#;
        let edge = format!(
            r#"{{"id": 0, "source": 0, "target": 1, "label": "data", "source_port": "data", "target_port": "data", "nsrc": null, "ndst": null, "dsrc": false, "ddst": false, "len": 1, "len_declared": false, "timing": "none", "src_time": {zero}, "dst_time": {zero}, "dynsrc": false, "dyndst": false}}"#
        );
        let text = format!(
            r#"{{"nodes": [{}, {}], "edges": [{edge}]}}"#,
            node(0, "Src", "smx_src_rand", "out"),
            node(1, "Snk", "smx_snk_null", "in")
        );
        crate::json::from_json(&text).unwrap()
    }

    /// A box's level of real-time marking is the language's, not a priority a run used.
    #[test]
    fn a_real_time_mark_is_not_drawn_as_a_runs_priority() {
        let mut g = src_snk();
        g.nodes[0].priority = 3;
        let dot = to_dot(&g);
        assert!(dot.contains("Src#0 : smx_src_rand\\nreal-time mark 3"), "{dot}");
        assert!(!dot.contains("prio"), "{dot}");
    }

    #[test]
    fn each_process_frames_its_nodes_and_a_link_is_named() {
        let placed = Placed {
            processes: vec!["process main (this machine)".into(), "process b (10.0.0.2)".into()],
            process_of_node: vec![0, 1],
            link_of_edge: vec![Some("zmq, curve".into())],
        };
        let dot = to_dot_placed(&src_snk(), Some(&placed));
        let frame = |k: usize| {
            let start = dot.find(&format!("subgraph cluster_p{k} {{")).unwrap();
            dot[start..start + dot[start..].find("  }\n").unwrap()].to_string()
        };
        assert!(frame(0).contains("label=\"process main (this machine)\"") && frame(0).contains("\n    n0 ["));
        assert!(frame(1).contains("label=\"process b (10.0.0.2)\"") && frame(1).contains("\n    n1 ["));
        assert!(!frame(0).contains("n1 [") && !frame(1).contains("n0 ["), "{dot}");
        assert!(
            dot.contains(
                "  n0 -> n1 [color=\"#b8560f\", penwidth=2, fontcolor=\"#b8560f\", minlen=2, label=\"data\\nlink: zmq, curve\"];"
            ),
            "{dot}"
        );
    }

    #[test]
    fn a_routing_node_is_a_named_circle_its_inputs_end_at_unnamed_and_without_arrowheads() {
        let mut g = src_snk();
        g.nodes[1].kind = NodeKind::RoutingNode;
        let dot = to_dot(&g);
        assert!(
            dot.contains("shape=circle") && dot.contains("label=\"Snk#1\"];"),
            "{dot}"
        );
        assert!(
            dot.contains("  n0 -> n1 [minlen=2, arrowhead=none, label=\"\"];"),
            "{dot}"
        );
        g.edges[0].len_declared = true;
        g.edges[0].len = 5;
        assert!(to_dot(&g).contains("  n0 -> n1 [minlen=2, arrowhead=none, label=\"[5]\"];"));
        g.edges[0].len_declared = false;
        g.edges[0].ddst = true;
        let dot = to_dot(&g);
        assert!(dot.contains("dir=both, arrowtail=none, arrowhead=odot"), "{dot}");
        // Out of it, the arrow points at the box it feeds.
        g.nodes[1].kind = NodeKind::Box;
        g.nodes[0].kind = NodeKind::RoutingNode;
        g.edges[0].ddst = false;
        assert!(to_dot(&g).contains("  n0 -> n1 [minlen=2, label=\"data\"];"));
    }

    #[test]
    fn a_link_into_a_routing_node_keeps_its_arrowhead_and_its_name() {
        let mut g = src_snk();
        g.nodes[1].kind = NodeKind::RoutingNode;
        let placed = Placed {
            processes: vec!["process main (this machine)".into(), "process b (10.0.0.2)".into()],
            process_of_node: vec![0, 1],
            link_of_edge: vec![Some("zmq, curve".into())],
        };
        let dot = to_dot_placed(&g, Some(&placed));
        assert!(
            dot.contains(
                "  n0 -> n1 [color=\"#b8560f\", penwidth=2, fontcolor=\"#b8560f\", minlen=2, label=\"data\\nlink: zmq, curve\"];"
            ),
            "{dot}"
        );
    }

    #[test]
    fn a_node_of_no_process_is_drawn_outside_the_frames() {
        let placed = Placed {
            processes: vec!["process main (this machine)".into()],
            process_of_node: vec![0],
            link_of_edge: vec![None],
        };
        let dot = to_dot_placed(&src_snk(), Some(&placed));
        assert!(dot.lines().any(|l| l.starts_with("  n1 [")), "{dot}");
        assert!(!dot.contains("link:"), "{dot}");
    }

    #[test]
    fn without_a_placement_the_drawing_has_no_frames() {
        let dot = to_dot(&src_snk());
        assert_eq!(dot, to_dot_placed(&src_snk(), None));
        assert!(
            !dot.contains("subgraph") && dot.contains("\n  n0 [") && dot.contains("\n  n1 ["),
            "{dot}"
        );
    }
}
