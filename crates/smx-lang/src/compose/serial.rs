//! Serial composition `P . Q` and `P : Q` (spec §4.3).
//!
//! Ports connect only by equal name, each port of P with the first fitting live port of Q.
//! `.` then re-classes the leftovers so that they cannot bypass the neighbour; `:` leaves them
//! classless. Matching uses a name index of Q's live ports, so a step costs time linear in
//! the live ports of its operands, not in everything composed so far.

use std::collections::{HashMap, HashSet};

use super::context::{Composer, Crit, Iface};
use super::model::rev_live;
use super::model::{Class, Graph, Mode, Name, PId, Rope, State, VId};
use super::routing::RouteKind;

impl Composer<'_> {
    pub fn serial(&mut self, g: &mut Graph, p: Iface, q: Iface, strict: bool, crit: Crit) -> Iface {
        self.match_ports(g, &p, &q);
        self.merge_rns(g);
        if strict {
            self.propagate_classes(g, &p, &q);
        }
        self.check_connections(g, &p, &q, strict);
        // The result, and the routing of its side ports.
        let live = rev_live(g, &q.live).chain(rev_live(g, &p.live)).collect();
        let split = rev_live(g, &q.live).count();
        let full = g.rope(Rope::Cat(vec![(q.full, true), (p.full, true)]));
        let mut out = Iface {
            full,
            live,
            left: p.left,
            right: q.right,
        };
        self.route(g, &mut out, split, RouteKind::Serial, crit);
        out
    }

    /// Joins each live port of `p` with the first live port of `q` of the same name that it
    /// can be connected to.
    fn match_ports(&mut self, g: &mut Graph, p: &Iface, q: &Iface) {
        let mut by_name: HashMap<Name, Vec<PId>> = HashMap::new();
        for &r in &q.live {
            by_name.entry(g.port(r).name).or_default().push(r);
        }
        for &l in &p.live {
            if !g.port(l).live() {
                continue;
            }
            let Some(cands) = by_name.get(&g.port(l).name) else {
                continue;
            };
            for &r in cands {
                if g.port(r).live() && g.port(l).live() && self.try_connect(g, l, r) {
                    break;
                }
            }
        }
    }

    /// `.` only: the unclassed ports left open become `up` on the left operand and `down` on
    /// the right one; a port whose class points into the combination and that found no partner
    /// is an error (and is disabled).
    fn propagate_classes(&mut self, g: &mut Graph, p: &Iface, q: &Iface) {
        for (list, class) in [(&p.live, Class::Up), (&q.live, Class::Down)] {
            for &x in list {
                let port = g.port(x);
                if port.live() && port.class == Class::None && !g.is_rn_port(x) {
                    g.port_mut(x).class = class;
                }
            }
        }
        for (list, bad) in [(&p.live, Class::Down), (&q.live, Class::Up)] {
            for &x in list {
                let port = g.port(x);
                if port.live() && port.class == bad && !port.open {
                    let v = port.owner;
                    let msg = format!(
                        "unconnected port '{}' in {} of serial combinition '{}.*'",
                        self.pname(g, x),
                        self.quoted_inst(g, v),
                        self.vlabel(g, v)
                    );
                    let span = self.decl_span(g, x);
                    self.diags.push(
                        crate::diag::Diagnostic::error(msg, span)
                            .with_note(" -> for bypassing, use operator ':' or a wrapper"),
                    );
                    g.port_mut(x).state = State::Disabled;
                }
            }
        }
    }

    /// Every net at the right edge of `p` must be joined to every net at the left edge of `q`:
    /// an error for `.` where one pair is not, a warning for `:`.
    fn check_connections(&mut self, g: &Graph, p: &Iface, q: &Iface, strict: bool) {
        let rights = g.rope_items(p.right);
        let lefts = g.rope_items(q.left);
        for &a in &rights {
            let outs_a: HashSet<VId> = g.vert(a).out.iter().map(|&e| g.edges[e as usize].dst).collect();
            let ins_a: HashSet<VId> = g.vert(a).inn.iter().map(|&e| g.edges[e as usize].src).collect();
            for &b in &lefts {
                if near(g, &outs_a, b, true) || near(g, &ins_a, b, false) {
                    continue;
                }
                let (la, lb) = (self.vlabel(g, a).to_owned(), self.vlabel(g, b).to_owned());
                let (ra, rb) = (g.rank(a), g.rank(b));
                let span = g.vert(a).span;
                if strict {
                    self.error(
                        format!("no port connection in serial combinition '{la}({ra}).{lb}({rb})'"),
                        span,
                    );
                } else {
                    self.warning(
                        format!(
                            "no port connection in serial combinition '{la}({ra}):{lb}({rb})'. \
                             Use an abstract net instead of a composed net."
                        ),
                        span,
                    );
                }
            }
        }
    }

    /// One attempt to connect `l` (left operand) with `r` (right operand); true when joined.
    fn try_connect(&mut self, g: &mut Graph, l: PId, r: PId) -> bool {
        let (pl, pr) = (g.port(l), g.port(r));
        if !matches!(pl.class, Class::None | Class::Down) || !matches!(pr.class, Class::None | Class::Up) {
            return false;
        }
        if pl.open || pr.open {
            if pl.open != pr.open {
                self.open_port_error(g, if pl.open { l } else { r });
            }
            return false;
        }
        let (lrn, rrn) = (g.is_rn_port(l), g.is_rn_port(r));
        let (ml, mr) = (pl.mode, pr.mode);
        if !lrn && !rrn && ml == mr && ml != Mode::Bi {
            let (vl, vr) = (pl.owner, pr.owner);
            let span = g.vert(vr).span;
            let msg = format!(
                "conflicting modes of ports '{}' in {} and {}{}",
                self.pname(g, l),
                self.quoted_inst(g, vl),
                self.quoted_inst(g, vr),
                self.line_suffix(span)
            );
            self.error(msg, span);
            return false;
        }
        let l_is_dst = if lrn && rrn {
            (matches!(ml, Mode::In | Mode::Bi) && matches!(mr, Mode::Out | Mode::Bi))
                || (ml == Mode::In && mr == Mode::In)
        } else if lrn {
            mr == Mode::Out
        } else {
            ml != Mode::Out
        };
        if l_is_dst {
            g.add_edge(r, l);
        } else {
            g.add_edge(l, r);
        }
        g.port_mut(l).state = State::Connected;
        g.port_mut(r).state = State::Connected;
        if !(lrn && rrn) {
            g.port_mut(l).class = Class::Down;
            g.port_mut(r).class = Class::Up;
        }
        true
    }
}

/// Whether `b` is within two steps of the vertex whose neighbours (in direction `forward`)
/// are `first`: directly, or through one intermediate vertex.
fn near(g: &Graph, first: &HashSet<VId>, b: VId, forward: bool) -> bool {
    if first.contains(&b) {
        return true;
    }
    let vb = g.vert(b);
    let back = if forward { &vb.inn } else { &vb.out };
    back.iter().any(|&e| {
        let e = &g.edges[e as usize];
        first.contains(if forward { &e.src } else { &e.dst })
    })
}
