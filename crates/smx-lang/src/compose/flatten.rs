//! Flattening (spec §4.7): every net or wrapper placeholder is replaced, recursively, by a
//! fresh copy of its graph, and the channels that touched the placeholder are re-attached to
//! the inner ports carrying the same symbol.

use std::collections::HashMap;

use super::context::Composer;
use super::model::{Class, Graph, Mode, PId, State, SymId, VId, VKind};
use super::routing::attach;

impl Composer<'_> {
    /// A flattened copy of `src` (the copy reverses each vertex's port list, as in smxc).
    pub fn flatten(&self, src: &Graph) -> Graph {
        let (mut g, _) = src.deep_copy();
        let mut v = 0;
        while v < g.verts.len() {
            let vert = g.vert(v as VId);
            if vert.alive && matches!(vert.kind, VKind::Net | VKind::Wrapper) {
                self.expand(&mut g, v as VId);
            }
            v += 1;
        }
        g
    }

    fn expand(&self, g: &mut Graph, v: VId) {
        let vert = g.vert(v).clone();
        let is_net = vert.kind == VKind::Net;
        let def_graph = if is_net {
            &self.nets[vert.def as usize].graph
        } else {
            &self.wrappers[vert.def as usize].graph
        };
        let (mut c, _) = def_graph.deep_copy();
        for cv in c.verts.iter_mut() {
            if vert.is_static {
                cv.is_static = true;
            }
            if vert.prio != 0 {
                cv.prio = vert.prio;
            }
        }
        let c = self.flatten(&c).compact();
        // Append C; index its live ports by symbol in vertex order.
        let vbase = g.verts.len() as u32;
        let pbase = g.ports.len() as u32;
        for cv in &c.verts {
            let mut nv = cv.clone();
            nv.ports = cv.ports.iter().map(|p| p + pbase).collect();
            nv.out.clear();
            nv.inn.clear();
            g.verts.push(nv);
        }
        for cp in &c.ports {
            let mut np = cp.clone();
            np.owner += vbase;
            g.ports.push(np);
        }
        for ce in &c.edges {
            let mut ne = ce.clone();
            ne.src += vbase;
            ne.dst += vbase;
            ne.sp += pbase;
            ne.dp += pbase;
            g.push_edge(ne);
        }
        let mut by_sym: HashMap<SymId, Vec<PId>> = HashMap::new();
        for cv in &c.verts {
            for &p in &cv.ports {
                by_sym.entry(c.ports[p as usize].sym).or_default().push(p + pbase);
            }
        }
        // Channels of the placeholder: out-edges by target, then in-edges by source; channels
        // to the same neighbour newest first (igraph 0.7's incidence index lists them so).
        let key = |n: VId, e: u32| (n, std::cmp::Reverse(e));
        let mut outs: Vec<_> = vert.out.iter().map(|&e| key(g.edges[e as usize].dst, e)).collect();
        outs.sort_unstable();
        let mut inns: Vec<_> = vert
            .inn
            .iter()
            .filter(|&&e| g.edges[e as usize].src != v)
            .map(|&e| key(g.edges[e as usize].src, e))
            .collect();
        inns.sort_unstable();
        for (_, std::cmp::Reverse(e)) in outs.into_iter().chain(inns) {
            let ed = g.edges[e as usize].clone();
            let self_loop = ed.src == v && ed.dst == v;
            let (vp, mut q) = if ed.src == v { (ed.sp, ed.dp) } else { (ed.dp, ed.sp) };
            let Some(inner) = find_inner(g, &by_sym, g.port(vp).sym) else {
                continue;
            };
            if self_loop {
                match find_inner(g, &by_sym, g.port(q).sym) {
                    Some(x) => q = x,
                    None => continue,
                }
            }
            if is_net {
                connect_net(g, inner, q);
            } else {
                connect_wrapper(g, inner, q);
            }
        }
        g.delete_vertex(v);
    }
}

/// The inner port for a placeholder port: a live port with its symbol, the first routing-node
/// port if any, else the last box port.
fn find_inner(g: &Graph, by_sym: &HashMap<SymId, Vec<PId>>, sym: SymId) -> Option<PId> {
    let cands = by_sym.get(&sym)?;
    let live = || cands.iter().copied().filter(|&p| g.port(p).live());
    live()
        .find(|&p| g.is_rn_port(p))
        .or_else(|| cands.iter().rev().copied().find(|&p| g.port(p).live()))
}

/// Edge between two ports by their modes; non-rn ends count as connected.
fn direct(g: &mut Graph, a: PId, b: PId) {
    let (arn, brn) = (g.is_rn_port(a), g.is_rn_port(b));
    let (ma, mb) = (g.port(a).mode, g.port(b).mode);
    let a_is_dst = if arn && brn {
        (matches!(ma, Mode::In | Mode::Bi) && matches!(mb, Mode::Out | Mode::Bi)) || (ma == Mode::In && mb == Mode::In)
    } else if arn {
        mb == Mode::Out
    } else {
        ma != Mode::Out
    };
    if a_is_dst {
        g.add_edge(b, a);
    } else {
        g.add_edge(a, b);
    }
    for p in [a, b] {
        if !g.is_rn_port(p) {
            g.port_mut(p).state = State::Connected;
        }
    }
}

fn modes_ok(g: &Graph, a: PId, b: PId) -> bool {
    let (pa, pb) = (g.port(a), g.port(b));
    g.is_rn_port(a) || g.is_rn_port(b) || pa.mode != pb.mode
}

fn connect_net(g: &mut Graph, inner: PId, q: PId) {
    let (ci, cq) = (g.port(inner).class, g.port(q).class);
    let classes_ok = ci == Class::None
        || cq == Class::None
        || (ci == Class::Up && cq == Class::Down)
        || (ci == Class::Down && cq == Class::Up);
    let (irn, qrn) = (g.is_rn_port(inner), g.is_rn_port(q));
    if classes_ok && modes_ok(g, inner, q) {
        direct(g, inner, q);
    } else if ci == cq && g.port(inner).mode == g.port(q).mode && irn != qrn {
        if irn {
            attach(g, inner, q);
        } else {
            attach(g, q, inner);
        }
    } else if ci == Class::Side && cq == Class::Side {
        match (irn, qrn) {
            (true, true) => {
                let (oi, oq) = (g.port(inner).owner, g.port(q).owner);
                if oi != oq {
                    let keep = g.merge_vertices(oi, oq);
                    let (kp, gp) = if keep == oi { (inner, q) } else { (q, inner) };
                    g.port_mut(kp).state = State::CpOpen;
                    g.port_mut(gp).state = State::Disabled;
                }
            }
            (true, false) => attach(g, inner, q),
            (false, true) => attach(g, q, inner),
            (false, false) => {}
        }
    }
}

fn connect_wrapper(g: &mut Graph, inner: PId, q: PId) {
    if modes_ok(g, inner, q) {
        direct(g, inner, q);
    }
}
