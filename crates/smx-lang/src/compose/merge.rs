//! Merging routing nodes joined by a channel (spec §4.6).
//!
//! An edge `u -> v` between two routing nodes is contracted when `u` has no other output or
//! `v` no other input: then the set of paths from inputs to outputs cannot change. Only the
//! (few) edges between two routing nodes are candidates; they are kept in an ordered set.

use super::context::Composer;
use std::collections::BTreeSet;

use super::model::{EId, Graph, Mode, State};

impl Composer<'_> {
    /// Merges until no candidate is left, always taking the first candidate in edge order.
    pub fn merge_rns(&mut self, g: &mut Graph) {
        merge_rns(g);
    }
}

pub fn merge_rns(g: &mut Graph) {
    // Candidates in edge order. A merge changes only the degrees of the surviving node, so
    // only its channels need a new look; the others keep their status. This takes the same
    // "first mergeable edge" each round as a full rescan would, without the quadratic cost.
    let mut cand: BTreeSet<EId> = g.rn_edges.iter().copied().filter(|&e| mergeable(g, e)).collect();
    while let Some(e) = cand.pop_first() {
        if !mergeable(g, e) {
            continue;
        }
        let ed = g.edges[e as usize].clone();
        // Decoupling flags of the joined ports move onto the outputs (reproduced literally).
        let (src, dst, target) = if g.port(ed.sp).mode == Mode::Out {
            (ed.sp, ed.dp, ed.dst)
        } else {
            (ed.dp, ed.sp, ed.src)
        };
        let (sd, dd) = (g.port(src).decoupled, g.port(dst).decoupled);
        if sd || dd {
            for oe in g.vert(target).out.clone() {
                let (osp, odp) = (g.edges[oe as usize].sp, g.edges[oe as usize].dp);
                if sd {
                    g.edges[oe as usize].dsrc = true;
                    g.port_mut(osp).decoupled = true;
                }
                if dd {
                    g.edges[oe as usize].ddst = true;
                    g.port_mut(odp).decoupled = true;
                }
            }
        }
        // smxc re-opens the survivor's end here (CP_OPEN), so a bundle already joined could be
        // connected again by a later operator (spec §9.9). Both ends were connected to each
        // other, and stay so: the joined end of the other node is retired.
        let gp = if ed.src < ed.dst { ed.dp } else { ed.sp };
        g.port_mut(gp).state = State::Disabled;
        g.delete_edge(e);
        let keep = g.merge_vertices(ed.src, ed.dst);
        let vert = g.vert(keep);
        let touched: Vec<EId> = vert.out.iter().chain(&vert.inn).copied().collect();
        for t in touched {
            if g.rn_edges.contains(&t) && mergeable(g, t) {
                cand.insert(t);
            } else {
                cand.remove(&t);
            }
        }
    }
}

fn mergeable(g: &Graph, e: EId) -> bool {
    let ed = &g.edges[e as usize];
    ed.alive && ed.src != ed.dst && (g.out_degree(ed.src) == 1 || g.in_degree(ed.dst) == 1)
}
