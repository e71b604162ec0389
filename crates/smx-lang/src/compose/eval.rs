//! Evaluating a net expression bottom-up into a graph and an interface (spec §4.2, §4.11).
//!
//! Every identifier occurrence is a new instance. Evaluation recurses over the expression;
//! [`super::compose`] runs it on a thread with a large stack, so deeply nested expressions
//! (tens of thousands of levels) are fine.

use super::context::{Composer, Crit, Iface};
use super::model::{Class, Graph, Mode, PId, Port, Rate, RateKind, Rope, State, VId, VKind, Vertex};
use super::symbols::{PortTemplate, Sym};
use crate::syntax::ast::{BinOp, Ident, Location, NetExpr, TimeOp, TimeSpec};

impl Composer<'_> {
    /// Evaluates `e` into `g`; `None` means "nothing" (an error was reported, or `tf`).
    pub fn eval(&mut self, g: &mut Graph, e: &NetExpr, crit: Crit) -> Option<Iface> {
        match e {
            NetExpr::Ident(id) => self.instantiate(g, id, crit),
            NetExpr::Paren { inner, .. } => self.eval(g, inner, crit),
            NetExpr::Rt { inner, .. } => self.eval(g, inner, Crit::Rt),
            NetExpr::Timed { op, time, inner, span } => match op {
                TimeOp::Tt => {
                    let i = self.eval(g, inner, Crit::Tt)?;
                    if self.apply_rate(g, &i, RateKind::Tt, *time) == 0 {
                        self.reaches_no_channel("tt", inner, *span);
                    }
                    Some(i)
                }
                TimeOp::Tb => {
                    let i = self.eval(g, inner, crit)?;
                    if self.apply_rate(g, &i, RateKind::Tb, *time) == 0 {
                        self.reaches_no_channel("tb", inner, *span);
                    }
                    Some(i)
                }
                TimeOp::Tf => {
                    // Deliberate difference from smxc, which silently turns the whole net
                    // into an empty graph: say why the net cannot be built.
                    let _ = self.eval(g, inner, crit);
                    self.error(
                        "operator 'tf' (temporal firewall) is not supported; use 'tt' on the channels instead"
                            .to_owned(),
                        Some(*span),
                    );
                    None
                }
            },
            NetExpr::Binary { op, lhs, rhs, .. } => {
                // As smxc: when the left operand fails, the right one is not evaluated, so the
                // user sees the cause and not a cascade of messages about the rest.
                let p = self.eval(g, lhs, crit)?;
                let q = self.eval(g, rhs, crit)?;
                Some(match op {
                    BinOp::Serial => self.serial(g, p, q, true, crit),
                    BinOp::SerialProp => self.serial(g, p, q, false, crit),
                    BinOp::Parallel => self.parallel(g, p, q, false, crit),
                    BinOp::ParallelDet => self.parallel(g, p, q, true, crit),
                })
            }
        }
    }

    fn prio(&self, crit: Crit, single: bool) -> u8 {
        match (crit, single) {
            (Crit::None, _) => 0,
            (Crit::Rt, true) => self.opts.rt_prio_single,
            (Crit::Rt, false) => self.opts.rt_prio_network,
            (Crit::Tt, true) => self.opts.tt_prio_single,
            (Crit::Tt, false) => self.opts.tt_prio_network,
        }
    }

    /// A new routing node (appended), with the priority of the current mode.
    pub fn new_rn(&mut self, g: &mut Graph, crit: Crit) -> VId {
        let rn = self.names.intern("smx_rn");
        let prio = self.prio(crit, false);
        g.add_vertex(Vertex {
            kind: VKind::Rn,
            label: rn,
            func: rn,
            span: None,
            is_static: false,
            pure: false,
            location: Location::Local,
            prio,
            def: 0,
            rn_label: None,
            ports: Vec::new(),
            out: Vec::new(),
            inn: Vec::new(),
            alive: true,
        })
    }

    fn instantiate(&mut self, g: &mut Graph, id: &Ident, crit: Crit) -> Option<Iface> {
        let n = self.names.intern(&id.name);
        let null = self.names.intern("smx_null");
        let base = |kind, func, def, prio| Vertex {
            kind,
            label: n,
            func,
            span: Some(id.span),
            is_static: false,
            pure: false,
            location: Location::Local,
            prio,
            def,
            rn_label: None,
            ports: Vec::new(),
            out: Vec::new(),
            inn: Vec::new(),
            alive: true,
        };
        let sym = self.scopes.lookup(n);
        if let Some(sym) = sym {
            self.usage.uses(sym);
        }
        let (v, list) = match sym {
            None => {
                self.error(format!("use of undeclared identifier '{}'", id.name), Some(id.span));
                return None;
            }
            Some(Sym::Proto(_)) => {
                self.error(format!("undefined reference to net '{}'", id.name), Some(id.span));
                return None;
            }
            Some(Sym::FailedNet) => return None,
            Some(Sym::Box(b)) => {
                let def = &self.boxes[b as usize];
                let mut vert = base(VKind::Box, def.func, b, self.prio(crit, true));
                vert.pure = def.pure;
                vert.location = def.location;
                let v = g.add_vertex(vert);
                let templates = self.boxes[b as usize].ports.clone();
                let mut list = self.add_ports(g, v, &templates);
                list.reverse();
                self.self_loops(g, &list);
                (v, list)
            }
            Some(Sym::Wrapper(w)) => {
                let def = &self.wrappers[w as usize];
                let kind = if def.usable { VKind::Wrapper } else { VKind::Unexpanded };
                let mut vert = base(kind, null, w, self.prio(crit, false));
                vert.is_static = def.is_static;
                let v = g.add_vertex(vert);
                let templates = self.wrappers[w as usize].ports.clone();
                let mut list = self.add_ports(g, v, &templates);
                list.reverse();
                self.self_loops(g, &list);
                (v, list)
            }
            Some(Sym::Net(k)) => {
                let v = g.add_vertex(base(VKind::Net, null, k, self.prio(crit, false)));
                let def = &self.nets[k as usize];
                let list = def
                    .exposed
                    .iter()
                    .map(|&p| {
                        let mut port = def.graph.port(p).clone();
                        port.owner = v;
                        port.state = State::Open;
                        g.add_port(port)
                    })
                    .collect::<Vec<_>>();
                (v, list)
            }
        };
        let live = list.iter().copied().filter(|&p| g.port(p).live()).collect();
        let full = g.rope(Rope::Leaf(list));
        let ends = g.rope(Rope::Leaf(vec![v]));
        Some(Iface {
            full,
            live,
            left: ends,
            right: ends,
        })
    }

    /// Fresh ports from templates, in template order.
    fn add_ports(&mut self, g: &mut Graph, v: VId, templates: &[PortTemplate]) -> Vec<PId> {
        templates
            .iter()
            .map(|t| {
                g.add_port(Port {
                    name: t.name,
                    sym: t.sym,
                    owner: v,
                    class: t.class,
                    mode: t.mode,
                    state: State::Open,
                    decoupled: t.decoupled,
                    open: t.open,
                    dynamic: t.dynamic,
                    ch_len: t.ch_len,
                    rate: Rate::default(),
                })
            })
            .collect()
    }

    /// A box or wrapper with `in x` and `out x` (both classless) feeds back to itself.
    /// Open ports are left alone (they must stay unconnected; smxc does not check).
    fn self_loops(&mut self, g: &mut Graph, list: &[PId]) {
        for (i, &a) in list.iter().enumerate() {
            for &b in &list[i + 1..] {
                let (pa, pb) = (g.port(a), g.port(b));
                if pa.name != pb.name || pa.class != Class::None || pb.class != Class::None {
                    continue;
                }
                if !pa.live() || !pb.live() || pa.open || pb.open {
                    continue;
                }
                let (src, dst) = match (pa.mode, pb.mode) {
                    (Mode::Out, Mode::In) => (a, b),
                    (Mode::In, Mode::Out) => (b, a),
                    _ => continue,
                };
                g.add_edge(src, dst);
                g.port_mut(a).state = State::Connected;
                g.port_mut(b).state = State::Connected;
            }
        }
    }

    /// `tt[T](E)` / `tb[T](E)`: annotate every non-disabled port of E's list (spec §4.11).
    /// A `tt` or `tb` that marked no port: around the name of a net or wrapper, whose channels
    /// its definition made, it times none of them (as in smxc), which reads as if it did.
    fn reaches_no_channel(&mut self, op: &str, inner: &NetExpr, span: crate::diag::Span) {
        let mut named = inner;
        while let NetExpr::Paren { inner, .. } = named {
            named = inner;
        }
        // Only the name of a net or wrapper: a box without the ports it would mark (a `tb`
        // around a source) has no channel to miss.
        let NetExpr::Ident(id) = named else { return };
        let n = self.names.intern(&id.name);
        if !matches!(self.scopes.lookup(n), Some(Sym::Net(_) | Sym::Wrapper(_))) {
            return;
        }
        let name = &id.name;
        self.warning(
            format!(
                "operator '{op}' around '{name}' reaches no channel: the channels of '{name}' are made in its \
                 definition, so its boxes are marked for real-time scheduling and its channels are not {}; write \
                 the '{op}' in the definition ({name} = {op}[...](...))",
                if op == "tt" { "time-triggered" } else { "time-bounded" }
            ),
            Some(span),
        );
    }

    /// Marks the ports of `i` with the rate; how many it marked.
    fn apply_rate(&mut self, g: &mut Graph, i: &Iface, kind: RateKind, time: TimeSpec) -> usize {
        let mut marked = 0;
        for p in g.rope_items(i.full) {
            let port = g.port(p);
            if port.state == State::Disabled {
                continue;
            }
            if kind == RateKind::Tb {
                if port.mode == Mode::In {
                    g.port_mut(p).rate = Rate { kind, time };
                    marked += 1;
                }
                continue;
            }
            if port.ch_len > 1 {
                let v = port.owner;
                let msg = format!(
                    "operator tt resets buffer size of port '{}' in '{}({})' from {} to 1.",
                    self.pname(g, p),
                    self.vlabel(g, v),
                    g.rank(v),
                    port.ch_len
                );
                let span = g.vert(v).span;
                self.warning(msg, span);
            }
            let port = g.port_mut(p);
            port.rate = Rate { kind, time };
            port.ch_len = 0;
            marked += 1;
        }
        marked
    }
}

#[cfg(test)]
mod tests {
    use crate::compose::test_support::{BOXES, warnings as said};

    /// `tt` around the name of a net marks its boxes and none of its channels, made in its
    /// definition: a net that reads as timed and runs free is warned of at the operator.
    #[test]
    fn a_timing_operator_around_a_nets_name_is_warned_of() {
        let warned = said(&format!("{BOXES}Pair = Src.Snk\nconnect tt[1ms](Pair)\n"));
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(
            warned[0].starts_with("t.smx:4:9: warning: operator 'tt' around 'Pair' reaches no channel"),
            "{warned:?}"
        );
        assert!(said(&format!("{BOXES}Pair = tt[1ms](Src.Snk)\nconnect Pair\n")).is_empty());
        assert!(said(&format!("{BOXES}connect tt[1ms](Src.Snk)\n")).is_empty());
        // A box whose ports `tb` does not mark (a source has no input) has no channel to miss.
        assert!(said(&format!("{BOXES}connect tb[1ms](Src).Snk\n")).is_empty());
    }
}
