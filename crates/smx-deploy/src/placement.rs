//! Which process each node of a net runs in, and which channels cannot cross a cut.

use smx_graph::{Edge, NetGraph, NodeKind, Timing};
use smx_runtime::config::{ConfigError, NetSettings};

use crate::processes::{MAIN, Processes};

/// The process of every node, by node id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub process_of: Vec<String>,
}

impl Placement {
    /// The processes the net actually uses, in the order of their first node.
    pub fn used(&self) -> Vec<String> {
        let mut used: Vec<String> = Vec::new();
        for p in &self.process_of {
            if !used.contains(p) {
                used.push(p.clone());
            }
        }
        used
    }

    /// The channels whose two ends are in different processes.
    pub fn cuts<'g>(&self, graph: &'g NetGraph) -> Vec<&'g Edge> {
        graph
            .edges
            .iter()
            .filter(|e| self.process_of[e.source] != self.process_of[e.target])
            .collect()
    }

    pub fn is_split(&self) -> bool {
        self.used().len() > 1
    }
}

/// Places every node: its `process` setting, else `main`. A routing node that names no process
/// goes where the node feeding its first input is, so that a fan-in or fan-out between boxes of
/// one process never crosses a cut twice. A process that the configuration does not declare is
/// an error at the place the `process` key was written.
pub fn place(graph: &NetGraph, settings: &[NetSettings], processes: &Processes) -> Result<Placement, ConfigError> {
    let mut process_of: Vec<Option<String>> = vec![None; graph.nodes.len()];
    for (node, s) in graph.nodes.iter().zip(settings) {
        if let Some((name, origin)) = &s.process {
            if processes.get(name).is_none() {
                return Err(ConfigError::new(origin.clone(), format!("unknown process '{name}'"))
                    .net(&node.label)
                    .key("process")
                    .choices(processes.names()));
            }
            process_of[node.id] = Some(name.clone());
        }
    }
    // Routing nodes follow their feeders, as far as chains of routing nodes reach.
    for _ in 0..graph.nodes.len() {
        let mut changed = false;
        for node in graph.nodes.iter().filter(|n| n.kind == NodeKind::RoutingNode) {
            if process_of[node.id].is_some() {
                continue;
            }
            let feeder = graph.edges.iter().find(|e| e.target == node.id).map(|e| e.source);
            let found = match feeder {
                Some(f) => process_of[f].clone(),
                None => Some(MAIN.to_string()),
            };
            if found.is_some() {
                process_of[node.id] = found;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    Ok(Placement {
        process_of: process_of
            .into_iter()
            .map(|p| p.unwrap_or_else(|| MAIN.to_string()))
            .collect(),
    })
}

/// A channel that cannot keep its meaning across a cut: the source line of its consumer and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutProblem {
    pub line: usize,
    pub message: String,
}

/// What a cut would change about a channel: temporal firewalls and rate guards are kept by one
/// runtime's clock and schedule, and a dynamic port is wired at run time inside one process, so
/// these are refused before the start. Each problem names the channel and its two processes.
pub fn cut_problems(graph: &NetGraph, placement: &Placement) -> Vec<CutProblem> {
    placement
        .cuts(graph)
        .into_iter()
        .filter_map(|e| {
            let why = match e.timing {
                Timing::TimeTriggered => {
                    "crosses a temporal firewall (tt): its logical execution time is kept by one process's \
                     executive and cannot span two processes; place both ends in one process"
                }
                Timing::TimeBounded => {
                    "has a rate guard (tb) whose period is kept by one process's clock; place both ends in one \
                     process"
                }
                Timing::None if e.dynsrc || e.dyndst => {
                    "ends at a dynamic port, which is wired inside one process; place both ends in one process"
                }
                Timing::None => return None,
            };
            let (from, to) = (&graph.nodes[e.source], &graph.nodes[e.target]);
            Some(CutProblem {
                line: to.line.max(from.line),
                message: format!(
                    "channel {}.{} -> {}.{} between processes '{}' and '{}' {why}",
                    from.label,
                    e.source_port,
                    to.label,
                    e.target_port,
                    placement.process_of[e.source],
                    placement.process_of[e.target]
                ),
            })
        })
        .collect()
}
