//! The declaration pass (spec §3): boxes, net prototypes, net assignments and wrappers are
//! processed in source order, each net expression into its own graph.

use std::collections::HashSet;

use super::context::{Composer, Crit, Iface};
use super::model::{Class, Graph, Mode, PId, RateKind, State};
use super::symbols::{BoxDef, NetDef, PortTemplate, ProtoDef, ProtoPortDef, Sym};
use super::usage::DeclKind;
use crate::syntax::ast::{self, Coupling, PortFlag, Program};
use smx_graph::PortDecl;

pub fn class_of(c: Option<ast::PortClass>) -> Class {
    match c {
        None => Class::None,
        Some(ast::PortClass::Up) => Class::Up,
        Some(ast::PortClass::Down) => Class::Down,
        Some(ast::PortClass::Side) => Class::Side,
    }
}

pub fn mode_of(m: ast::PortMode) -> Mode {
    match m {
        ast::PortMode::In => Mode::In,
        ast::PortMode::Out => Mode::Out,
    }
}

/// Side outputs are decoupled unless declared `coupled`.
pub fn is_decoupled(coupling: Option<Coupling>, class: Class, mode: Mode) -> bool {
    coupling == Some(Coupling::Decoupled) || (coupling.is_none() && class == Class::Side && mode == Mode::Out)
}

impl Composer<'_> {
    /// Processes a (top-level or wrapper body) program; returns the `connect` graph.
    pub fn program(&mut self, prog: &Program) -> (Graph, Option<Iface>) {
        for decl in &prog.decls {
            match decl {
                ast::Decl::Box(b) => self.declare_box(b),
                ast::Decl::Proto(p) => self.declare_proto(p),
                ast::Decl::Net(n) => self.declare_net(n),
                ast::Decl::Wrapper(w) => self.declare_wrapper(w),
            }
        }
        let mut g = Graph::default();
        let i = self.eval(&mut g, &prog.connect.net, Crit::None);
        (g, i)
    }

    /// Reports a duplicate `(name, mode)` in one port list; true when `key` is new.
    pub fn port_unique(&mut self, seen: &mut HashSet<(String, Mode)>, name: &ast::Ident, mode: Mode) -> bool {
        if seen.insert((name.name.clone(), mode)) {
            true
        } else {
            self.error(format!("redefinition of '{}'", name.name), Some(name.span));
            false
        }
    }

    fn declare_box(&mut self, b: &ast::BoxDecl) {
        let mut seen = HashSet::new();
        let mut ports = Vec::new();
        let mut decls = Vec::new();
        for p in &b.ports {
            let mode = mode_of(p.mode);
            if !self.port_unique(&mut seen, &p.name, mode) {
                continue;
            }
            let class = class_of(p.class);
            let name = self.names.intern(&p.name.name);
            let alt = p.alt_name.as_ref().map(|a| self.names.intern(&a.name));
            let sym = self.new_sym(alt, Some(p.name.span));
            let decoupled = is_decoupled(p.coupling, class, mode);
            ports.push(PortTemplate {
                sym,
                name,
                class,
                mode,
                decoupled,
                open: p.flag == Some(PortFlag::Open),
                dynamic: p.flag == Some(PortFlag::Dynamic),
                ch_len: p.len.map_or(0, |(n, _)| n),
            });
            decls.push(PortDecl {
                name: p.name.name.clone(),
                mode: p.mode,
                class: p.class,
                decoupled,
                open: p.flag == Some(PortFlag::Open),
                dynamic: p.flag == Some(PortFlag::Dynamic),
                alt_name: p.alt_name.as_ref().map(|a| a.name.clone()),
            });
        }
        let name = self.names.intern(&b.name.name);
        if self.scopes.in_current(name) {
            self.error(format!("redefinition of '{}'", b.name.name), Some(b.name.span));
            return;
        }
        let func = self.names.intern(&b.implementation.name);
        self.boxes.push(BoxDef {
            func,
            location: b.location,
            pure: b.pure,
            ports,
            decls,
        });
        let sym = Sym::Box((self.boxes.len() - 1) as u32);
        self.scopes.insert(name, sym);
        let decl = self.usage.declare(DeclKind::Box, &b.name);
        self.usage.bind(sym, decl);
    }

    pub fn proto_ports(&mut self, ports: &[ast::ProtoPort]) -> Vec<ProtoPortDef> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for p in ports {
            let mode = mode_of(p.mode);
            if self.port_unique(&mut seen, &p.name, mode) {
                out.push(ProtoPortDef {
                    name: self.names.intern(&p.name.name),
                    class: class_of(Some(p.class)),
                    mode,
                    span: p.name.span,
                });
            }
        }
        out
    }

    fn declare_proto(&mut self, p: &ast::NetProto) {
        let ports = self.proto_ports(&p.ports);
        let name = self.names.intern(&p.name.name);
        if self.scopes.in_current(name) {
            self.error(format!("redefinition of '{}'", p.name.name), Some(p.name.span));
            return;
        }
        self.protos.push(ProtoDef { ports });
        let sym = Sym::Proto((self.protos.len() - 1) as u32);
        self.scopes.insert(name, sym);
        let decl = self.usage.declare(DeclKind::Proto, &p.name);
        self.usage.bind(sym, decl);
    }

    fn declare_net(&mut self, n: &ast::NetAssign) {
        let mut g = Graph::default();
        let decl = self.usage.declare(DeclKind::Net, &n.name);
        let outer = self.usage.enter(decl);
        let result = self.eval(&mut g, &n.net, Crit::None);
        self.usage.leave(outer);
        let name = self.names.intern(&n.name.name);
        let found = self.scopes.lookup_depth(name);
        // Re-assigning a name of the same scope crashes smxc; we report it instead.
        if let Some((sym, 0)) = found
            && !matches!(sym, Sym::Proto(_))
        {
            self.error(format!("redefinition of '{}'", n.name.name), Some(n.name.span));
            return;
        }
        let Some(iface) = result else {
            if !matches!(found, Some((Sym::Proto(_), _))) {
                self.scopes.insert(name, Sym::FailedNet);
            }
            return;
        };
        if let Some((proto @ Sym::Proto(k), _)) = found {
            let ports = self.protos[k as usize].ports.clone();
            if !self.check_prototype(&mut g, &iface, &ports, &n.name.name) {
                return;
            }
            let idx = self.push_net(g, &iface);
            self.scopes.rebind(name, Sym::Net(idx));
            self.usage.define(proto, decl);
            self.usage.bind(Sym::Net(idx), decl);
        } else {
            let idx = self.push_net(g, &iface);
            self.scopes.insert(name, Sym::Net(idx));
            self.usage.bind(Sym::Net(idx), decl);
        }
    }

    fn push_net(&mut self, graph: Graph, iface: &Iface) -> u32 {
        let exposed = iface.live.iter().copied().filter(|&p| graph.port(p).live()).collect();
        let flat_size = self.flat_size(&graph);
        self.nets.push(NetDef {
            graph,
            exposed,
            flat_size,
        });
        (self.nets.len() - 1) as u32
    }

    /// `check_prototype` (spec §3.5); on a match the interface takes over the prototype's
    /// classes and modes, on a mismatch `conflicting types` is reported with a dump.
    pub fn check_prototype(&mut self, g: &mut Graph, iface: &Iface, proto: &[ProtoPortDef], name: &str) -> bool {
        let full = g.rope_items(iface.full);
        let count = full
            .iter()
            // smxc counts only OPEN ports, so the live bundle of two merged routing nodes
            // (CP_OPEN) was missing from the count (spec §9.17); we count every live port.
            .filter(|&&p| g.port(p).live() && !g.port(p).open)
            .count();
        let mut ok = count == proto.len();
        if ok {
            for pp in proto {
                let hit = full.iter().copied().find(|&v| {
                    let port = g.port(v);
                    port.name == pp.name
                        && (port.class == pp.class || port.class == Class::None)
                        && (port.mode == pp.mode || port.mode == Mode::Bi)
                });
                match hit {
                    Some(v) => {
                        let port = g.port_mut(v);
                        port.mode = pp.mode;
                        port.class = pp.class;
                    }
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
        }
        if !ok {
            let span = proto.last().map(|p| p.span);
            let mut d = crate::diag::Diagnostic::error(format!("conflicting types for '{name}'"), span);
            d.notes = self.dump(g, iface, proto, name);
            self.diags.push(d);
        }
        ok
    }

    /// The port dump printed after `conflicting types` (spec §7).
    fn dump(&self, g: &Graph, iface: &Iface, proto: &[ProtoPortDef], name: &str) -> Vec<String> {
        let mut lines = vec![" net:".to_owned()];
        for &p in iface.live.iter().filter(|&&p| g.port(p).live()) {
            let port = g.port(p);
            let prefix = if port.state == State::CpOpen {
                "-"
            } else if port.open {
                "/"
            } else {
                ""
            };
            let rate = if port.mode == Mode::In && port.rate.kind != RateKind::None && port.rate.time.nanos == 0 {
                format!("[{}s]", port.rate.time.secs)
            } else {
                String::new()
            };
            lines.push(format!(
                "  {prefix}{}({}){}{}{}{rate}{}",
                self.vlabel(g, port.owner),
                g.rank(port.owner),
                class_mark(port.class),
                if port.decoupled { "d" } else { "" },
                arrow(port.mode),
                self.name(port.name)
            ));
        }
        lines.push("  ".to_owned());
        lines.push(" prototype:".to_owned());
        for pp in proto.iter().rev() {
            lines.push(format!(
                "  {name}{}{}{}",
                class_mark(pp.class),
                arrow(pp.mode),
                self.name(pp.name)
            ));
        }
        lines.push("  ".to_owned());
        lines
    }

    /// Ports of `full` with a given name, for wrapper interface lookups.
    pub fn named(&self, g: &Graph, full: &[PId], name: u32) -> Vec<PId> {
        full.iter().copied().filter(|&p| g.port(p).name == name).collect()
    }
}

fn class_mark(c: Class) -> &'static str {
    match c {
        Class::None => "",
        Class::Up => "^",
        Class::Down => "_",
        Class::Side => "|",
    }
}

fn arrow(m: Mode) -> &'static str {
    match m {
        Mode::In => "<--",
        Mode::Out => "-->",
        Mode::Bi => "<->",
    }
}
