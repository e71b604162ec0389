//! Parallel composition and routing nodes (spec §4.4, §4.5).
//!
//! After `P | Q` and `P ! Q` same-named live ports of the composite are bundled by a routing
//! node (`smx_rn`); after every serial step the same happens for pairs of side ports. Pairs
//! are visited in the original's order ((i, j) over the interface list, i outer), but only
//! within a name group, so a step costs time linear in its live ports for the usual few
//! same-named ports.

use std::collections::HashMap;

use super::context::{Composer, Crit, Iface};
use super::model::rev_live;
use super::model::{Class, Graph, Mode, Name, PId, Port, Rate, Rope, State};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteKind {
    /// After `.`/`:`: only side ports are bundled.
    Serial,
    /// `!`: in+in (copy) and out+out (merge) are bundled, mixed modes are an error.
    Parallel,
    /// `|`: like `!`, but two outputs are nondeterminism, an error.
    ParallelDet,
}

impl Composer<'_> {
    pub fn parallel(&mut self, g: &mut Graph, p: Iface, q: Iface, det: bool, crit: Crit) -> Iface {
        let live: Vec<PId> = rev_live(g, &q.live).chain(rev_live(g, &p.live)).collect();
        let split = rev_live(g, &q.live).count();
        let full = g.rope(Rope::Cat(vec![(q.full, true), (p.full, true)]));
        let left = g.rope(Rope::Cat(vec![(p.left, false), (q.left, false)]));
        let right = g.rope(Rope::Cat(vec![(p.right, false), (q.right, false)]));
        let mut out = Iface {
            full,
            live,
            left,
            right,
        };
        let kind = if det {
            RouteKind::ParallelDet
        } else {
            RouteKind::Parallel
        };
        self.route(g, &mut out, split, kind, crit);
        out
    }

    /// Bundles same-named ports of `i` (`check_connections_cp`); the new routing-node ports
    /// are appended to the interface.
    ///
    /// Only pairs with one port from each operand are considered (`split` = number of ports
    /// of the right operand, which come first in the list). smxc pairs any two ports of the
    /// composite, so ports of one operand that were deliberately left apart (`A(up out x) :
    /// B(in x)`) got joined by a later `|`, and refused pairs were re-reported at every
    /// enclosing step (spec §9.8); a pair inside one operand was already considered when that
    /// operand was composed.
    pub fn route(&mut self, g: &mut Graph, i: &mut Iface, split: usize, kind: RouteKind, crit: Crit) {
        let list = std::mem::take(&mut i.live);
        let mut groups: HashMap<Name, Vec<usize>> = HashMap::new();
        for (pos, &p) in list.iter().enumerate() {
            groups.entry(g.port(p).name).or_default().push(pos);
        }
        let mut added = Vec::new();
        for (pos, &p1) in list.iter().enumerate().take(split) {
            if !g.port(p1).live() {
                continue;
            }
            let group = &groups[&g.port(p1).name];
            if group.len() < 2 {
                continue;
            }
            let start = group.partition_point(|&x| x <= pos.max(split.saturating_sub(1)));
            for &j in &group[start..] {
                if !g.port(p1).live() {
                    break;
                }
                let p2 = list[j];
                if g.port(p2).live() {
                    self.route_pair(g, p1, p2, kind, crit, &mut added);
                }
            }
        }
        i.live = list.into_iter().filter(|&p| g.port(p).live()).collect();
        if !added.is_empty() {
            i.live.extend(added.iter().copied());
            let tail = g.rope(Rope::Leaf(added));
            i.full = g.rope(Rope::Cat(vec![(i.full, false), (tail, false)]));
        }
    }

    fn route_pair(&mut self, g: &mut Graph, p1: PId, p2: PId, kind: RouteKind, crit: Crit, added: &mut Vec<PId>) {
        let (a, b) = (g.port(p1).clone(), g.port(p2).clone());
        let side = a.class == Class::Side && b.class == Class::Side;
        let compatible = side
            || (kind != RouteKind::Serial
                && (a.class == b.class
                    || (a.class == Class::None && b.class != Class::Side)
                    || (b.class == Class::None && a.class != Class::Side)));
        if !compatible {
            return;
        }
        if a.open || b.open {
            if kind == RouteKind::Serial && a.open != b.open {
                self.open_port_error(g, if a.open { p1 } else { p2 });
            }
            return;
        }
        if !side {
            match kind {
                // smxc lets `|` join an output and an input (spec §9.7), a serial connection
                // in disguise; like `!` we report the conflicting modes.
                RouteKind::Parallel | RouteKind::ParallelDet if a.mode != b.mode || a.mode == Mode::Bi => {
                    let span = self.decl_span(g, p1);
                    let msg = format!(
                        "conflicting modes of ports '{}' in {} and {}{}",
                        self.name(a.name),
                        self.quoted_inst(g, a.owner),
                        self.quoted_inst(g, b.owner),
                        self.line_suffix(self.decl_span(g, p2))
                    );
                    self.error(msg, span);
                    return;
                }
                RouteKind::ParallelDet if a.mode == Mode::Out && b.mode == Mode::Out => {
                    let span = self.decl_span(g, p1);
                    let msg = format!(
                        "nondeterminism on deterministic operation '{}|{}', use '!' instead",
                        self.vlabel(g, b.owner),
                        self.vlabel(g, a.owner)
                    );
                    self.error(msg, span);
                    return;
                }
                _ => {}
            }
        }
        let (rn1, rn2) = (g.is_rn_port(p1), g.is_rn_port(p2));
        match (rn1, rn2) {
            (true, true) => {
                if a.owner == b.owner {
                    return;
                }
                let keep = g.merge_vertices(a.owner, b.owner);
                let (kp, gp) = if keep == a.owner { (p1, p2) } else { (p2, p1) };
                g.port_mut(kp).state = State::CpOpen;
                g.port_mut(gp).state = State::Disabled;
            }
            (true, false) => attach(g, p1, p2),
            (false, true) => attach(g, p2, p1),
            (false, false) => {
                let rn = self.new_rn(g, crit);
                let port = g.add_port(Port {
                    name: a.name,
                    sym: a.sym,
                    owner: rn,
                    class: if a.class == b.class { a.class } else { Class::None },
                    mode: if a.mode == b.mode { a.mode } else { Mode::Bi },
                    state: State::Open,
                    decoupled: false,
                    open: false,
                    dynamic: false,
                    ch_len: 0,
                    rate: Rate::default(),
                });
                attach(g, port, p1);
                attach(g, port, p2);
                added.push(port);
            }
        }
    }
}

/// Joins a routing-node port and another port: the other port's mode gives the direction,
/// and only the other port counts as connected (the bundle stays open).
pub fn attach(g: &mut Graph, rn_port: PId, other: PId) {
    if g.port(other).mode == Mode::Out {
        g.add_edge(other, rn_port);
    } else {
        g.add_edge(rn_port, other);
    }
    g.port_mut(other).state = State::Connected;
}
