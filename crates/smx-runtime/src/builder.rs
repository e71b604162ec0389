//! Building a [`NetGraph`] in Rust, without Streamix source text.
//!
//! For programs that embed the runtime and for tests. The graph is the same data the language
//! front end produces, so everything else (planning, running, the report) is unchanged.
//!
//! ```
//! use smx_runtime::NetBuilder;
//! let mut net = NetBuilder::new();
//! let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
//! let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
//! net.connect(src, "data", snk, "data");
//! let graph = net.build();
//! assert_eq!(graph.edges.len(), 1);
//! ```

use smx_graph::{Edge, Location, NetGraph, Node, NodeKind, PortDecl, PortMode, TimeSpec, Timing};

/// Accumulates nodes and edges; ids are assigned in insertion order.
#[derive(Debug, Default, Clone)]
pub struct NetBuilder {
    graph: NetGraph,
}

/// Per-channel options of [`NetBuilder::connect_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Link {
    /// Producer side decoupled (overwrite when full).
    pub decoupled_producer: bool,
    /// Consumer side decoupled (latest value again when empty).
    pub decoupled_consumer: bool,
    /// `Some(n)`: declared length; `None`: default length 1 (replaceable by
    /// `RunOptions::default_channel_len`).
    pub len: Option<u32>,
}

impl NetBuilder {
    pub fn new() -> Self {
        NetBuilder::default()
    }

    /// Adds a box instance; `ports` are `(name, is_input)` in declaration order. Returns its id.
    pub fn add_box(&mut self, label: &str, func: &str, ports: &[(&str, bool)]) -> usize {
        let ports = ports
            .iter()
            .map(|&(name, input)| PortDecl {
                name: name.to_string(),
                mode: if input { PortMode::In } else { PortMode::Out },
                class: None,
                decoupled: false,
                open: false,
                dynamic: false,
                alt_name: None,
            })
            .collect();
        self.add_node(label, func, NodeKind::Box, ports)
    }

    /// Adds a routing node (fan-in and fan-out). Returns its id.
    pub fn add_routing_node(&mut self) -> usize {
        self.add_node("smx_rn", "smx_rn", NodeKind::RoutingNode, Vec::new())
    }

    fn add_node(&mut self, label: &str, func: &str, kind: NodeKind, ports: Vec<PortDecl>) -> usize {
        let id = self.graph.nodes.len();
        self.graph.nodes.push(Node {
            id,
            label: label.to_string(),
            func: func.to_string(),
            kind,
            is_static: false,
            pure: false,
            location: Location::Local,
            priority: 0,
            line: 0,
            ports,
        });
        id
    }

    /// A coupled channel of default length from `from.out_port` to `to.in_port`.
    pub fn connect(&mut self, from: usize, out_port: &str, to: usize, in_port: &str) -> usize {
        self.connect_with(from, out_port, to, in_port, Link::default())
    }

    /// A channel with explicit kind and length. Returns its id.
    pub fn connect_with(&mut self, from: usize, out_port: &str, to: usize, in_port: &str, link: Link) -> usize {
        let id = self.graph.edges.len();
        self.graph.edges.push(Edge {
            id,
            source: from,
            target: to,
            label: in_port.to_string(),
            source_port: out_port.to_string(),
            target_port: in_port.to_string(),
            nsrc: None,
            ndst: None,
            dsrc: link.decoupled_producer,
            ddst: link.decoupled_consumer,
            len: link.len.unwrap_or(1),
            len_declared: link.len.is_some(),
            timing: Timing::None,
            src_time: TimeSpec::default(),
            dst_time: TimeSpec::default(),
            dynsrc: false,
            dyndst: false,
        });
        id
    }

    /// Gives node `id` a scheduling class as `rt`/`tt` would (0 none ... 3 tt single box).
    pub fn set_priority(&mut self, id: usize, priority: u8) {
        self.graph.nodes[id].priority = priority;
    }

    pub fn build(self) -> NetGraph {
        self.graph
    }
}
