//! The working graph of the composition stage: instances, their ports and channels.
//!
//! This mirrors the original compiler's dependency graph closely, because its vertex and edge
//! *order* is observable (GML ids, which routing node survives a merge, which port a net
//! placeholder is attached to). Vertices, ports and edges live in append-only arenas; the
//! arena index is the creation order, and a deleted element is only flagged dead. The "id" the
//! original prints is the rank among live vertices ([`Graph::rank`]), which is what the C
//! vectors' positions amount to: deletions shift later ids down, merges re-point edges in place.

use std::collections::BTreeSet;

use crate::diag::Span;
use crate::syntax::ast::{Location, TimeSpec};

pub type VId = u32;
pub type PId = u32;
pub type EId = u32;
/// Interned identifier (see [`super::symbols::Names`]).
pub type Name = u32;
/// Identity of a port declaration (shared by all instances of one declared port).
pub type SymId = u32;

/// Port class; `None` is the unannotated class that `.`/`:` may re-class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    None,
    Up,
    Down,
    Side,
}

/// Only routing-node ports (and wrapper null ports) are bidirectional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    In,
    Out,
    Bi,
}

/// `Open` and `CpOpen` ports are "live" (may still be connected).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Open,
    /// Re-exposed bundle port of a merged routing node.
    CpOpen,
    Connected,
    /// Given up on (after an error, or merged away); never connected or reported again.
    Disabled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RateKind {
    #[default]
    None,
    Tt,
    Tb,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Rate {
    pub kind: RateKind,
    pub time: TimeSpec,
}

#[derive(Debug, Clone)]
pub struct Port {
    pub name: Name,
    pub sym: SymId,
    pub owner: VId,
    pub class: Class,
    pub mode: Mode,
    pub state: State,
    pub decoupled: bool,
    pub open: bool,
    pub dynamic: bool,
    /// Declared channel length, 0 = unspecified.
    pub ch_len: u32,
    pub rate: Rate,
}

impl Port {
    pub fn live(&self) -> bool {
        matches!(self.state, State::Open | State::CpOpen)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VKind {
    Box,
    Net,
    Wrapper,
    Rn,
    /// A wrapper placeholder whose wrapper could not be built (prototype mismatch).
    Unexpanded,
}

#[derive(Debug, Clone)]
pub struct Vertex {
    pub kind: VKind,
    pub label: Name,
    pub func: Name,
    /// The identifier occurrence that created the instance (`None` for routing nodes).
    pub span: Option<Span>,
    pub is_static: bool,
    pub pure: bool,
    pub location: Location,
    pub prio: u8,
    /// Box: index of its declaration; net/wrapper placeholder: index of the definition.
    pub def: u32,
    /// Routing nodes built for wrapper renaming carry the name their reduced edge is given.
    pub rn_label: Option<Name>,
    pub ports: Vec<PId>,
    pub out: Vec<EId>,
    pub inn: Vec<EId>,
    pub alive: bool,
}

#[derive(Debug, Clone)]
pub struct Edge {
    pub src: VId,
    pub dst: VId,
    pub sp: PId,
    pub dp: PId,
    pub dsrc: bool,
    pub ddst: bool,
    /// Label fixed when the edge replaced a routing node; otherwise derived from the ports.
    pub label: Option<Name>,
    pub alive: bool,
}

/// An immutable list of ids built by O(1) concatenation of reversed or plain parts; the
/// interface lists of the spec are `reverse(Q) ++ reverse(P)` at every step, which would be
/// quadratic over a long chain if copied.
#[derive(Debug, Clone)]
pub enum Rope {
    Leaf(Vec<u32>),
    Cat(Vec<(RopeId, bool)>),
}

pub type RopeId = u32;

#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub verts: Vec<Vertex>,
    pub ports: Vec<Port>,
    pub edges: Vec<Edge>,
    /// Live edges whose both ends are routing nodes, the only merge candidates (edge order).
    pub rn_edges: BTreeSet<EId>,
    pub ropes: Vec<Rope>,
}

impl Graph {
    pub fn add_vertex(&mut self, v: Vertex) -> VId {
        self.verts.push(v);
        (self.verts.len() - 1) as VId
    }

    pub fn add_port(&mut self, p: Port) -> PId {
        let owner = p.owner;
        self.ports.push(p);
        let id = (self.ports.len() - 1) as PId;
        self.verts[owner as usize].ports.push(id);
        id
    }

    pub fn port(&self, p: PId) -> &Port {
        &self.ports[p as usize]
    }

    pub fn port_mut(&mut self, p: PId) -> &mut Port {
        &mut self.ports[p as usize]
    }

    pub fn vert(&self, v: VId) -> &Vertex {
        &self.verts[v as usize]
    }

    pub fn owner_kind(&self, p: PId) -> VKind {
        self.verts[self.ports[p as usize].owner as usize].kind
    }

    pub fn is_rn_port(&self, p: PId) -> bool {
        self.owner_kind(p) == VKind::Rn
    }

    /// Adds a channel `sp -> dp`; the decoupling flags come from the ports.
    pub fn add_edge(&mut self, sp: PId, dp: PId) -> EId {
        let (s, d) = (self.port(sp), self.port(dp));
        let e = Edge {
            src: s.owner,
            dst: d.owner,
            sp,
            dp,
            dsrc: s.decoupled,
            ddst: d.decoupled,
            label: None,
            alive: true,
        };
        self.push_edge(e)
    }

    pub fn push_edge(&mut self, e: Edge) -> EId {
        let id = self.edges.len() as EId;
        let (src, dst) = (e.src, e.dst);
        self.edges.push(e);
        self.verts[src as usize].out.push(id);
        self.verts[dst as usize].inn.push(id);
        if self.verts[src as usize].kind == VKind::Rn && self.verts[dst as usize].kind == VKind::Rn {
            self.rn_edges.insert(id);
        }
        id
    }

    pub fn delete_edge(&mut self, e: EId) {
        let edge = &mut self.edges[e as usize];
        if !edge.alive {
            return;
        }
        edge.alive = false;
        let (src, dst) = (edge.src, edge.dst);
        self.verts[src as usize].out.retain(|&x| x != e);
        self.verts[dst as usize].inn.retain(|&x| x != e);
        self.rn_edges.remove(&e);
    }

    pub fn delete_vertex(&mut self, v: VId) {
        let mut incident = std::mem::take(&mut self.verts[v as usize].out);
        incident.extend(std::mem::take(&mut self.verts[v as usize].inn));
        for e in incident {
            // The edge may already be gone from the other list (self-loop listed twice).
            if self.edges[e as usize].alive {
                self.edges[e as usize].alive = false;
                let (s, d) = (self.edges[e as usize].src, self.edges[e as usize].dst);
                if s != v {
                    self.verts[s as usize].out.retain(|&x| x != e);
                }
                if d != v {
                    self.verts[d as usize].inn.retain(|&x| x != e);
                }
                self.rn_edges.remove(&e);
            }
        }
        self.verts[v as usize].alive = false;
    }

    /// Merges two routing nodes: the older one survives and takes over the other's ports and
    /// channels in place (their positions in the edge order do not change).
    pub fn merge_vertices(&mut self, a: VId, b: VId) -> VId {
        let (keep, gone) = if a < b { (a, b) } else { (b, a) };
        if keep == gone {
            return keep;
        }
        let outs = std::mem::take(&mut self.verts[gone as usize].out);
        let inns = std::mem::take(&mut self.verts[gone as usize].inn);
        let ports = std::mem::take(&mut self.verts[gone as usize].ports);
        for &e in &outs {
            self.edges[e as usize].src = keep;
        }
        for &e in &inns {
            self.edges[e as usize].dst = keep;
        }
        for &p in &ports {
            self.ports[p as usize].owner = keep;
        }
        let kv = &mut self.verts[keep as usize];
        kv.out.extend(outs);
        kv.inn.extend(inns);
        kv.ports.extend(ports);
        self.verts[gone as usize].alive = false;
        keep
    }

    /// The id the original compiler would print for `v`: its rank among live vertices.
    pub fn rank(&self, v: VId) -> usize {
        self.verts[..v as usize].iter().filter(|x| x.alive).count()
    }

    /// Out-degree ignoring self-loops.
    pub fn out_degree(&self, v: VId) -> usize {
        self.verts[v as usize]
            .out
            .iter()
            .filter(|&&e| self.edges[e as usize].dst != v)
            .count()
    }

    pub fn in_degree(&self, v: VId) -> usize {
        self.verts[v as usize]
            .inn
            .iter()
            .filter(|&&e| self.edges[e as usize].src != v)
            .count()
    }

    pub fn rope(&mut self, r: Rope) -> RopeId {
        self.ropes.push(r);
        (self.ropes.len() - 1) as RopeId
    }

    /// The ids of a rope in order (iteratively: ropes can be as deep as the expression).
    pub fn rope_items(&self, root: RopeId) -> Vec<u32> {
        let mut out = Vec::new();
        let mut stack = vec![(root, false)];
        while let Some((id, rev)) = stack.pop() {
            match &self.ropes[id as usize] {
                Rope::Leaf(items) => {
                    if rev {
                        out.extend(items.iter().rev());
                    } else {
                        out.extend(items.iter());
                    }
                }
                Rope::Cat(parts) => {
                    // Pushed in reverse of the visiting order.
                    if rev {
                        for &(p, r) in parts.iter() {
                            stack.push((p, !r));
                        }
                    } else {
                        for &(p, r) in parts.iter().rev() {
                            stack.push((p, r));
                        }
                    }
                }
            }
        }
        out
    }

    /// A compact deep copy (live elements only, in order) in which, as in the original, each
    /// vertex's own port list is reversed. Returns the copy and the old-to-new port map.
    pub fn deep_copy(&self) -> (Graph, Vec<PId>) {
        self.copy_live(true)
    }

    /// A compact copy keeping each vertex's port order.
    pub fn compact(&self) -> Graph {
        self.copy_live(false).0
    }

    fn copy_live(&self, reverse_ports: bool) -> (Graph, Vec<PId>) {
        let mut g = Graph::default();
        let mut vmap = vec![u32::MAX; self.verts.len()];
        let mut pmap = vec![u32::MAX; self.ports.len()];
        for (i, v) in self.verts.iter().enumerate() {
            if !v.alive {
                continue;
            }
            let nv = g.add_vertex(Vertex {
                ports: Vec::with_capacity(v.ports.len()),
                out: Vec::new(),
                inn: Vec::new(),
                ..v.clone()
            });
            vmap[i] = nv;
            let order: Vec<PId> = if reverse_ports {
                v.ports.iter().rev().copied().collect()
            } else {
                v.ports.clone()
            };
            for p in order {
                let mut port = self.ports[p as usize].clone();
                port.owner = nv;
                pmap[p as usize] = g.add_port(port);
            }
        }
        for e in self.edges.iter().filter(|e| e.alive) {
            g.push_edge(Edge {
                src: vmap[e.src as usize],
                dst: vmap[e.dst as usize],
                sp: pmap[e.sp as usize],
                dp: pmap[e.dp as usize],
                ..e.clone()
            });
        }
        (g, pmap)
    }
}

/// The still-live ports of `list`, reversed.
pub fn rev_live<'g>(g: &'g Graph, list: &'g [PId]) -> impl Iterator<Item = PId> + 'g {
    list.iter().rev().copied().filter(|&p| g.port(p).live())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ropes_concatenate_reversed_parts_lazily() {
        let mut g = Graph::default();
        let a = g.rope(Rope::Leaf(vec![1, 2, 3]));
        let b = g.rope(Rope::Leaf(vec![4, 5]));
        let c = g.rope(Rope::Cat(vec![(b, true), (a, true)]));
        assert_eq!(g.rope_items(c), [5, 4, 3, 2, 1]);
        let tail = g.rope(Rope::Leaf(vec![9]));
        let d = g.rope(Rope::Cat(vec![(c, true), (tail, false)]));
        assert_eq!(g.rope_items(d), [1, 2, 3, 4, 5, 9]);
        let e = g.rope(Rope::Cat(vec![(d, true), (a, false)]));
        assert_eq!(g.rope_items(e), [9, 5, 4, 3, 2, 1, 1, 2, 3]);
    }

    fn vertex(kind: VKind) -> Vertex {
        Vertex {
            kind,
            label: 0,
            func: 0,
            span: None,
            is_static: false,
            pure: false,
            location: Location::Local,
            prio: 0,
            def: 0,
            rn_label: None,
            ports: Vec::new(),
            out: Vec::new(),
            inn: Vec::new(),
            alive: true,
        }
    }

    fn port(owner: VId, mode: Mode) -> Port {
        Port {
            name: 0,
            sym: 0,
            owner,
            class: Class::None,
            mode,
            state: State::Open,
            decoupled: false,
            open: false,
            dynamic: false,
            ch_len: 0,
            rate: Rate::default(),
        }
    }

    #[test]
    fn merging_keeps_the_older_vertex_and_edge_positions() {
        let mut g = Graph::default();
        let a = g.add_vertex(vertex(VKind::Box));
        let r1 = g.add_vertex(vertex(VKind::Rn));
        let r2 = g.add_vertex(vertex(VKind::Rn));
        let b = g.add_vertex(vertex(VKind::Box));
        let pa = g.add_port(port(a, Mode::Out));
        let p1 = g.add_port(port(r1, Mode::Bi));
        let p2 = g.add_port(port(r2, Mode::Bi));
        let pb = g.add_port(port(b, Mode::In));
        g.add_edge(pa, p1);
        let mid = g.add_edge(p1, p2);
        g.add_edge(p2, pb);
        assert!(g.rn_edges.contains(&mid));
        g.delete_edge(mid);
        assert_eq!(g.merge_vertices(r2, r1), r1);
        assert_eq!(g.rank(b), 2);
        assert_eq!((g.edges[2].src, g.edges[2].dst), (r1, b));
        assert_eq!(g.port(p2).owner, r1);
        let (c, _) = g.deep_copy();
        assert_eq!(c.verts.len(), 3);
        assert_eq!(c.edges.len(), 2);
        assert_eq!(c.verts[1].ports.len(), 2);
    }
}
