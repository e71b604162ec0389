//! Turning the working graph into the public [`NetGraph`] (spec §5): compact ids, channel
//! attributes computed from the final port values.

use super::context::Composer;
use super::model::{Graph, PId, RateKind, VKind};
use smx_graph::{Edge, NetGraph, Node, NodeKind, Timing};

impl Composer<'_> {
    pub fn build(&self, g: &Graph) -> NetGraph {
        let mut ids = vec![usize::MAX; g.verts.len()];
        let mut out = NetGraph::default();
        for (i, v) in g.verts.iter().enumerate() {
            if !v.alive {
                continue;
            }
            ids[i] = out.nodes.len();
            let kind = match v.kind {
                VKind::Box => NodeKind::Box,
                VKind::Rn => NodeKind::RoutingNode,
                _ => NodeKind::Unexpanded,
            };
            out.nodes.push(Node {
                id: ids[i],
                label: self.name(v.label).to_owned(),
                func: self.name(v.func).to_owned(),
                kind,
                is_static: v.is_static,
                pure: v.pure,
                location: v.location,
                priority: v.prio,
                line: self.line_of(v.span).unwrap_or(0),
                ports: if kind == NodeKind::Box {
                    self.boxes[v.def as usize].decls.clone()
                } else {
                    Vec::new()
                },
            });
        }
        for e in g.edges.iter().filter(|e| e.alive) {
            let (s_rn, d_rn) = (g.is_rn_port(e.sp), g.is_rn_port(e.dp));
            let (sp, dp) = (g.port(e.sp), g.port(e.dp));
            let label = match e.label {
                Some(l) => self.name(l).to_owned(),
                None if d_rn => self.name(sp.name).to_owned(),
                None => self.name(dp.name).to_owned(),
            };
            let port_name = |p: PId, rn: bool| {
                if rn {
                    label.clone()
                } else {
                    self.name(g.port(p).name).to_owned()
                }
            };
            // A routing node's port carries the symbol of the first port of the pair it was
            // made for, so its end shows that port's alternative name, as in smxc.
            let alt = |p: PId| self.syms[g.port(p).sym as usize].alt.map(|a| self.name(a).to_owned());
            let sum = sp.ch_len.saturating_add(dp.ch_len);
            let kinds = [sp.rate.kind, dp.rate.kind];
            let timing = if kinds.contains(&RateKind::Tt) {
                Timing::TimeTriggered
            } else if kinds.contains(&RateKind::Tb) {
                Timing::TimeBounded
            } else {
                Timing::None
            };
            out.edges.push(Edge {
                id: out.edges.len(),
                source: ids[e.src as usize],
                target: ids[e.dst as usize],
                source_port: port_name(e.sp, s_rn),
                target_port: port_name(e.dp, d_rn),
                nsrc: alt(e.sp),
                ndst: alt(e.dp),
                label,
                dsrc: e.dsrc,
                ddst: e.ddst,
                len: if sum == 0 { self.opts.default_len } else { sum },
                len_declared: sum != 0,
                timing,
                src_time: sp.rate.time,
                dst_time: dp.rate.time,
                dynsrc: sp.dynamic,
                dyndst: dp.dynamic,
            });
        }
        out
    }
}
