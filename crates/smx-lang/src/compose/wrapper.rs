//! Wrappers (spec §4.8): a nested program whose body net is offered under a new interface.
//!
//! Plain ports (`in x`) pass a body port through; ports with inner names (`in x(a, b)`) are
//! grouped by shared inner names and routed through a routing node, which copies, renames or
//! (when an inner name is absent from the body) bypasses. Instance ports carry the symbol of
//! their inner counterpart, which flattening uses to attach the outer channels.

use std::collections::HashMap;

use super::context::{Composer, Crit, Iface};
use super::declare::{class_of, is_decoupled, mode_of};
use super::model::{Class, Graph, Mode, Name, PId, Port, Rate, State, SymId, VKind};
use super::routing::attach;
use super::symbols::{PortTemplate, Sym, WrapperDef};
use super::usage::DeclKind;
use crate::syntax::ast;

/// A named wrapper port, resolved.
struct WPort {
    name: Name,
    own_sym: SymId,
    class: Class,
    mode: Mode,
    decoupled: bool,
    inner: Vec<Name>,
}

impl Composer<'_> {
    pub fn declare_wrapper(&mut self, w: &ast::WrapperDecl) {
        self.scopes.open();
        let decl = self.usage.declare(DeclKind::Wrapper, &w.name);
        let outer = self.usage.enter(decl);
        let (mut g, body) = self.program(&w.body);
        self.usage.leave(outer);
        let mut seen = std::collections::HashSet::new();
        let mut ports = Vec::new();
        let mut null_inner = Vec::new();
        for p in &w.ports {
            let (Some(mode), Some(name)) = (p.mode, &p.name) else {
                null_inner.extend(p.inner.iter().map(|i| self.names.intern(&i.name)));
                continue;
            };
            let mode = mode_of(mode);
            if !self.port_unique(&mut seen, name, mode) {
                continue;
            }
            let class = class_of(p.class);
            let n = self.names.intern(&name.name);
            let own_sym = self.new_sym(None, Some(name.span));
            ports.push(WPort {
                name: n,
                own_sym,
                class,
                mode,
                decoupled: is_decoupled(p.coupling, class, mode),
                inner: p.inner.iter().map(|i| self.names.intern(&i.name)).collect(),
            });
        }
        self.scopes.open();
        let proto = self.proto_ports(&w.body_proto);
        self.scopes.close();
        self.scopes.close();

        let usable = match &body {
            Some(iface) => self.check_prototype(&mut g, iface, &proto, &w.name.name),
            None => false,
        };
        let mut templates: Vec<PortTemplate> = ports
            .iter()
            .map(|p| PortTemplate {
                sym: p.own_sym,
                name: p.name,
                class: p.class,
                mode: p.mode,
                decoupled: p.decoupled,
                open: false,
                dynamic: false,
                ch_len: 0,
            })
            .collect();
        if let (true, Some(iface)) = (usable, &body) {
            self.build_interface(&mut g, iface, &ports, &mut templates, &null_inner);
        }
        let name = self.names.intern(&w.name.name);
        if self.scopes.in_current(name) {
            self.error(format!("redefinition of '{}'", w.name.name), Some(w.name.span));
            return;
        }
        let flat_size = self.flat_size(&g);
        self.wrappers.push(WrapperDef {
            flat_size,
            is_static: w.is_static,
            usable,
            graph: g,
            ports: templates,
        });
        let sym = Sym::Wrapper((self.wrappers.len() - 1) as u32);
        self.scopes.insert(name, sym);
        self.usage.bind(sym, decl);
    }

    fn build_interface(
        &mut self,
        g: &mut Graph,
        body: &Iface,
        ports: &[WPort],
        templates: &mut [PortTemplate],
        null_inner: &[Name],
    ) {
        let full = g.rope_items(body.full);
        // Plain pass-through ports: the first routing-node port, else the last match.
        for (k, p) in ports.iter().enumerate() {
            if !p.inner.is_empty() {
                continue;
            }
            let cands: Vec<PId> = self
                .named(g, &full, p.name)
                .into_iter()
                .filter(|&c| g.port(c).mode == p.mode || g.port(c).mode == Mode::Bi)
                .collect();
            let hit = cands
                .iter()
                .copied()
                .find(|&c| g.is_rn_port(c))
                .or(cands.last().copied());
            if let Some(c) = hit {
                templates[k].sym = g.port(c).sym;
            }
        }
        // Renaming groups: ports sharing inner names, joined transitively.
        let mut parent: Vec<usize> = (0..ports.len()).collect();
        fn find(parent: &mut [usize], mut x: usize) -> usize {
            while parent[x] != x {
                parent[x] = parent[parent[x]];
                x = parent[x];
            }
            x
        }
        let mut owner_of: HashMap<Name, usize> = HashMap::new();
        for (k, p) in ports.iter().enumerate() {
            for &n in &p.inner {
                match owner_of.get(&n) {
                    Some(&o) => {
                        let (a, b) = (find(&mut parent, o), find(&mut parent, k));
                        parent[a.max(b)] = a.min(b);
                    }
                    None => {
                        owner_of.insert(n, k);
                    }
                }
            }
        }
        let mut done = vec![false; ports.len()];
        for k in (0..ports.len()).rev() {
            if ports[k].inner.is_empty() || done[k] {
                continue;
            }
            let root = find(&mut parent, k);
            let members: Vec<usize> = (0..ports.len())
                .rev()
                .filter(|&m| !ports[m].inner.is_empty() && find(&mut parent, m) == root)
                .collect();
            for &m in &members {
                done[m] = true;
            }
            self.route_group(g, &full, ports, &members);
        }
        // Null ports `(a, b)`: smxc crashes on them; we switch the named inner ports off.
        for &n in null_inner {
            for p in self.named(g, &full, n) {
                if g.port(p).live() {
                    g.port_mut(p).state = State::Disabled;
                }
            }
        }
    }

    /// One routing node for a group of renaming wrapper ports.
    fn route_group(&mut self, g: &mut Graph, full: &[PId], ports: &[WPort], members: &[usize]) {
        let rn = self.new_rn(g, Crit::None);
        for &m in members {
            let p = &ports[m];
            g.add_port(Port {
                name: p.name,
                sym: p.own_sym,
                owner: rn,
                class: p.class,
                mode: p.mode,
                state: State::Open,
                decoupled: p.decoupled,
                open: false,
                dynamic: false,
                ch_len: 0,
                rate: Rate::default(),
            });
        }
        g.verts[rn as usize].rn_label = members.last().map(|&m| ports[m].name);
        let mut inner: Vec<Name> = Vec::new();
        for &m in members {
            for &n in &ports[m].inner {
                if !inner.contains(&n) {
                    inner.push(n);
                }
            }
        }
        // smxc keeps inner-name lists reversed (bison builds them by prepending).
        for n in inner.into_iter().rev() {
            let cands = self.named(g, full, n);
            let hit = cands
                .iter()
                .copied()
                .find(|&c| g.port(c).live())
                .or(cands.first().copied());
            let Some(body_port) = hit else {
                // Bypass: the group joins external ports only; processing stops here.
                g.verts[rn as usize].rn_label = Some(n);
                break;
            };
            let bp = g.port(body_port).clone();
            let rp = g.add_port(Port {
                name: bp.name,
                sym: bp.sym,
                owner: rn,
                class: bp.class,
                mode: if bp.mode == Mode::In { Mode::Out } else { Mode::In },
                state: State::Connected,
                decoupled: false,
                open: false,
                dynamic: false,
                ch_len: 0,
                rate: Rate::default(),
            });
            debug_assert_eq!(g.vert(rn).kind, VKind::Rn);
            attach(g, rp, body_port);
        }
    }
}
