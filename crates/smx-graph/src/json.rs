//! JSON form of the graph: the documented input format of the runtime (serde of
//! [`NetGraph`]), so that other tools can produce nets without the Streamix language.

use super::{NetGraph, NodeKind, PortMode};

/// Pretty-printed JSON of `g`.
pub fn to_json(g: &NetGraph) -> String {
    // Serialising plain data with string keys cannot fail.
    serde_json::to_string_pretty(g).unwrap_or_default()
}

/// Reads a graph written by [`to_json`] (or by another tool) and checks that its ids and
/// edge ends are consistent, so the runtime never indexes out of range, and that it can run
/// at all ([`crate::check::problems`]).
pub fn from_json(text: &str) -> Result<NetGraph, String> {
    let g: NetGraph = serde_json::from_str(text).map_err(|e| format!("invalid net graph JSON: {e}"))?;
    for (i, n) in g.nodes.iter().enumerate() {
        if n.id != i {
            return Err(format!("node {i} has id {}", n.id));
        }
    }
    for (i, e) in g.edges.iter().enumerate() {
        if e.id != i {
            return Err(format!("edge {i} has id {}", e.id));
        }
        if e.source >= g.nodes.len() || e.target >= g.nodes.len() {
            return Err(format!("edge {i} joins a node that does not exist"));
        }
        if e.len == 0 {
            return Err(format!("edge {i} has length 0"));
        }
    }
    unconnected_ports(&g)?;
    // A graph from another tool gets the checks a compiled net gets from the front end and
    // the runtime, before anything runs.
    let problems = crate::check::problems(&g);
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    Ok(g)
}

/// The front end's rule for a box's declared ports: each one not declared `open` has a channel.
/// A box waiting on an input that nothing feeds never fires, and one writing to an output that
/// leads nowhere has nowhere to put its messages.
fn unconnected_ports(g: &NetGraph) -> Result<(), String> {
    use std::collections::HashSet;
    let ends: HashSet<(usize, PortMode, &str)> = g
        .edges
        .iter()
        .flat_map(|e| {
            [
                (e.target, PortMode::In, e.target_port.as_str()),
                (e.source, PortMode::Out, e.source_port.as_str()),
            ]
        })
        .collect();
    let unconnected: Vec<String> = g
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Box)
        .flat_map(|n| {
            n.ports
                .iter()
                .filter(|p| !p.open && !ends.contains(&(n.id, p.mode, p.name.as_str())))
                .map(move |p| format!("port '{}' of {}#{} is not connected", p.name, n.label, n.id))
        })
        .collect();
    if unconnected.is_empty() {
        Ok(())
    } else {
        Err(format!("{} (connect it, or declare it open)", unconnected.join("; ")))
    }
}
