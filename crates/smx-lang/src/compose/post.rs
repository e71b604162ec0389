//! Post-processing of the flattened graph (spec §4.12): merge routing nodes, report
//! unconnected box ports and one-sided routing nodes, replace pass-through routing nodes by
//! direct channels, and push "decoupled writer" flags through routing nodes.

use super::context::Composer;
use super::merge::merge_rns;
use super::model::{Edge, Graph, RateKind, State, VId, VKind};

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
        self.warn_tb_beside_tt(g);
    }

    /// A channel whose producer's end is time-triggered and whose consumer's end is
    /// time-bounded (`tb[5ms](tt[1ms](Src).Snk)`) keeps both periods, and a runtime that times
    /// the channel's ends runs the `tb` end as a second temporal firewall of the `tb`'s period:
    /// not what a `tb`, a label elsewhere, reads as. Warned of at the consumer.
    fn warn_tb_beside_tt(&mut self, g: &Graph) {
        for e in g.edges.iter().filter(|e| e.alive) {
            let (sp, dp) = (g.port(e.sp), g.port(e.dp));
            if sp.rate.kind != RateKind::Tt || dp.rate.kind != RateKind::Tb {
                continue;
            }
            let (tt, tb) = (sp.rate.time.as_duration(), dp.rate.time.as_duration());
            let msg = format!(
                "port '{}' in {} is time-bounded (tb[{tb:?}]) on a channel from {}, whose end is time-triggered \
                 (tt[{tt:?}]): the channel is time-triggered, and its tb end becomes a second temporal firewall \
                 of period {tb:?}; put one tt around both ends, or leave the tb out",
                self.pname(g, e.dp),
                self.quoted_inst(g, e.dst),
                self.quoted_inst(g, e.src),
            );
            self.warning(msg, g.vert(e.dst).span);
        }
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

#[cfg(test)]
mod tests {
    use crate::compose::test_support::{BOXES, warnings as said};

    /// A `tb` end on a channel whose other end is `tt` becomes a second firewall: warned of at
    /// the consumer; a `tt` around both ends (the outer one wins) or a `tb` alone is not.
    #[test]
    fn a_tb_end_beside_a_tt_end_is_warned_of() {
        let warned = said(&format!("{BOXES}connect tb[5ms](tt[1ms](Src).Snk)\n"));
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(
            warned[0].starts_with("t.smx:3:30: warning: port 'data' in 'Snk'(1) is time-bounded (tb[5ms])")
                && warned[0].contains("second temporal firewall of period 5ms"),
            "{warned:?}"
        );
        assert!(said(&format!("{BOXES}connect tt[1ms](Src.tb[5ms](Snk))\n")).is_empty());
        assert!(said(&format!("{BOXES}connect tb[5ms](Src.Snk)\n")).is_empty());
    }
}
