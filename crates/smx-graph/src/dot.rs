//! Graphviz export for people: boxes as `instance#id : implementation`, routing nodes as small
//! points labelled `smx_rn#id` beside them, time-triggered channels bold and labelled with
//! their periods, time-bounded ones dashed, decoupled ends drawn with an open circle, declared
//! channel lengths in brackets. `instance#id` is the node as the report, the warnings and the
//! configuration (`[net."Snk#3"]`, `--set Snk#3.KEY=VALUE`) name it.

use std::fmt::Write as _;

use super::{NetGraph, NodeKind, TimeSpec, Timing};

/// The dot text of `g` (render with `dot -Tsvg`).
pub fn to_dot(g: &NetGraph) -> String {
    let mut s = String::from(
        "digraph streamix {\n  rankdir=LR;\n  node [fontname=\"Helvetica\", fontsize=11];\n  edge [fontname=\"Helvetica\", fontsize=9];\n",
    );
    for n in &g.nodes {
        let attrs = match n.kind {
            NodeKind::RoutingNode => format!(
                "shape=point, width=0.12, height=0.12, label=\"\", xlabel=\"{}\", fontsize=8",
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
                    let _ = write!(label, "\\nprio {}", n.priority);
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
        };
        let _ = writeln!(s, "  n{} [{attrs}];", n.id);
    }
    for e in &g.edges {
        let mut label = esc(&e.label);
        if e.len_declared {
            let _ = write!(label, " [{}]", e.len);
        }
        let mut attrs = Vec::new();
        match e.timing {
            Timing::TimeTriggered => {
                let _ = write!(label, "\\ntt {}", periods(e.src_time, e.dst_time));
                attrs.push("color=\"#1f4fbf\", penwidth=2, fontcolor=\"#1f4fbf\"".to_owned());
            }
            Timing::TimeBounded => {
                let _ = write!(label, "\\ntb {}", periods(e.src_time, e.dst_time));
                attrs.push("style=dashed, color=\"#2e7d32\", fontcolor=\"#2e7d32\"".to_owned());
            }
            Timing::None => {}
        }
        if e.dsrc || e.ddst {
            attrs.push(format!(
                "dir=both, arrowtail={}, arrowhead={}",
                if e.dsrc { "odot" } else { "none" },
                if e.ddst { "normalodot" } else { "normal" }
            ));
        }
        attrs.push(format!("label=\"{label}\""));
        let _ = writeln!(s, "  n{} -> n{} [{}];", e.source, e.target, attrs.join(", "));
    }
    s.push_str("}\n");
    s
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
