//! Post-processing of the flattened graph (spec §4.12): merge routing nodes, report
//! unconnected box ports and one-sided routing nodes, replace pass-through routing nodes by
//! direct channels, and push "decoupled writer" flags through routing nodes.

use super::context::Composer;
use super::merge::merge_rns;
use super::model::{Edge, Graph, State, VId, VKind};

impl Composer<'_> {
    pub fn post_process(&mut self, g: &mut Graph) {
        merge_rns(g);
        let mut doomed: Vec<VId> = Vec::new();
        // The printed id is the rank among live vertices, counted as we go (no rescans).
        let mut rank = 0usize;
        for v in 0..g.verts.len() as VId {
            let vert = g.vert(v);
            if !vert.alive {
                continue;
            }
            rank += 1;
            let id = rank - 1;
            match vert.kind {
                VKind::Box => {
                    for &p in &vert.ports {
                        let port = g.port(p);
                        if port.state == State::Open && !port.open {
                            let msg = format!(
                                "port '{}' in {} is not connected",
                                self.pname(g, p),
                                self.quoted_inst(g, v)
                            );
                            self.error(msg, vert.span);
                        }
                    }
                }
                VKind::Rn => {
                    let (ins, outs) = (g.in_degree(v), g.out_degree(v));
                    if ins == 0 || outs == 0 {
                        self.error(format!("single mode in routing node 'smx_rn'({id})"), None);
                    } else if vert.inn.len() == 1 && vert.out.len() == 1 {
                        let (ie, oe) = (
                            g.edges[vert.inn[0] as usize].clone(),
                            g.edges[vert.out[0] as usize].clone(),
                        );
                        let (sp, dp) = (ie.sp, oe.dp);
                        let label = Some(vert.rn_label.unwrap_or(g.port(sp).name));
                        g.push_edge(Edge {
                            src: ie.src,
                            dst: oe.dst,
                            sp,
                            dp,
                            dsrc: g.port(sp).decoupled,
                            ddst: g.port(dp).decoupled,
                            label,
                            alive: true,
                        });
                        doomed.push(v);
                    }
                }
                _ => {}
            }
        }
        for v in doomed {
            g.delete_vertex(v);
        }
        self.push_decoupling(g);
    }

    /// Moves `dsrc` from channels entering a routing node onto the channels leaving it. smxc
    /// loops until nothing changes, which never ends on a cycle of routing nodes carrying the
    /// flag; we stop after as many rounds as there are routing nodes (enough for every chain).
    fn push_decoupling(&self, g: &mut Graph) {
        let rns: Vec<VId> = (0..g.verts.len() as VId)
            .filter(|&v| g.vert(v).alive && g.vert(v).kind == VKind::Rn)
            .collect();
        for _ in 0..=rns.len() {
            let mut changed = false;
            for &v in &rns {
                let flagged: Vec<_> = g
                    .vert(v)
                    .inn
                    .iter()
                    .copied()
                    .filter(|&e| g.edges[e as usize].dsrc)
                    .collect();
                if flagged.is_empty() {
                    continue;
                }
                for e in flagged {
                    g.edges[e as usize].dsrc = false;
                }
                for e in g.vert(v).out.clone() {
                    g.edges[e as usize].dsrc = true;
                }
                changed = true;
            }
            if !changed {
                break;
            }
        }
    }
}
