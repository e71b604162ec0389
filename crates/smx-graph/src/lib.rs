//! The flattened net graph: the boundary between the language front end and the runtime.
//!
//! The front end (`smx-lang`) produces a [`NetGraph`] from a checked program; the exporters in this
//! module's submodules write it as GML (byte-compatible with the original compiler), GraphML,
//! Graphviz dot or JSON; the runtime (`smx-runtime`) executes it. The JSON form (serde of these types)
//! is the documented input format of the runtime, so a net can also be built by other tools.
//!
//! The attribute names and their meaning follow `../shared/spec/language.md` §5. Beyond what
//! the original's GML holds, nodes carry their declared ports and edges the real port names on
//! both ends (after wrapper renaming an edge's `label` may differ from the box port it ends
//! at), because the runtime needs to know which port of which box a channel joins.

pub mod check;
pub mod dot;
mod format;
pub mod gml;
pub mod graphml;
pub mod json;
mod vocab;

pub use format::Format;
use serde::{Deserialize, Serialize};

pub use vocab::{Location, PortClass, PortMode, TimeSpec};

/// A whole flattened net: vertices are box instances and routing nodes, edges are channels.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetGraph {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// An instance of a declared box.
    Box,
    /// `smx_rn`: fan-in and fan-out of same-named ports.
    RoutingNode,
    /// A net or wrapper placeholder that could not be expanded (only in rejected programs).
    Unexpanded,
}

/// One vertex. `id` equals its index in [`NetGraph::nodes`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub id: usize,
    /// Instance name (GML `label`), e.g. `Src`; `smx_rn` for routing nodes.
    pub label: String,
    /// Implementation name (GML `func`), e.g. `smx_src_rand`.
    pub func: String,
    pub kind: NodeKind,
    /// Instantiated from a `static` wrapper (GML `static`).
    pub is_static: bool,
    /// Declared `pure` (GML `pure`).
    pub pure: bool,
    pub location: Location,
    /// Thread priority class assigned by `rt`/`tt` (GML `tt`): 0 none, 1 rt, 2 tt network,
    /// 3 tt single box.
    pub priority: u8,
    /// 1-based source line of the instance (0 when it has none, as for routing nodes).
    pub line: usize,
    /// The box's declared ports (empty for routing nodes).
    pub ports: Vec<PortDecl>,
}

/// A port as declared on a box.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortDecl {
    pub name: String,
    pub mode: PortMode,
    pub class: Option<PortClass>,
    pub decoupled: bool,
    pub open: bool,
    pub dynamic: bool,
    pub alt_name: Option<String>,
}

/// What timing annotation a channel carries (GML `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    #[default]
    None,
    /// `tt[...]`: the channel crosses a temporal firewall.
    TimeTriggered,
    /// `tb[...]`: the consumer side is marked time-bounded (a mark of the graph, its drawing
    /// and the report; no runtime times it).
    TimeBounded,
}

impl Timing {
    /// The number the original compiler writes to GML.
    pub fn code(self) -> u8 {
        match self {
            Timing::None => 0,
            Timing::TimeTriggered => 1,
            Timing::TimeBounded => 2,
        }
    }
}

/// One channel, directed from writer to reader. `id` equals its index in [`NetGraph::edges`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    pub id: usize,
    pub source: usize,
    pub target: usize,
    /// Channel name as the original writes it (GML `label`).
    pub label: String,
    /// Name of the port on the source node this channel leaves from (for a routing node, the
    /// channel's label).
    pub source_port: String,
    /// Name of the port on the target node this channel arrives at.
    pub target_port: String,
    /// Alternative port names (GML `nsrc`/`ndst`; `None` is written as `smx_null`).
    pub nsrc: Option<String>,
    pub ndst: Option<String>,
    /// The writer side is decoupled (never blocks, overwrites when full).
    pub dsrc: bool,
    /// The reader side is decoupled (never blocks, re-reads the latest value).
    pub ddst: bool,
    /// Channel length in messages (>= 1), already resolved.
    pub len: u32,
    /// True when `len` came from `[N]` in the source; false when it is the default, which the
    /// runtime's `--channel-len` may then replace.
    pub len_declared: bool,
    pub timing: Timing,
    /// Period on the source side (`sts`/`stns`), zero when not time-annotated.
    pub src_time: TimeSpec,
    /// Period on the destination side (`dts`/`dtns`).
    pub dst_time: TimeSpec,
    pub dynsrc: bool,
    pub dyndst: bool,
}
