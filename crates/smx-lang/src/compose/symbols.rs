//! Names, declarations and scopes (spec §3).
//!
//! Boxes, nets, net prototypes and wrappers share one namespace per scope; lookups search
//! from the innermost scope outwards. Keys are proper `(scope, name)` pairs, so the original's
//! key-concatenation collisions (spec §9.14) cannot happen.

use std::collections::HashMap;

use super::model::{Class, Graph, Mode, Name, PId, SymId};
use crate::diag::Span;
use crate::syntax::ast::Location;
use smx_graph::PortDecl;

/// String interning, so that port matching compares and hashes integers.
#[derive(Debug, Default)]
pub struct Names {
    map: HashMap<String, Name>,
    list: Vec<String>,
}

impl Names {
    pub fn intern(&mut self, s: &str) -> Name {
        if let Some(&n) = self.map.get(s) {
            return n;
        }
        let n = self.list.len() as Name;
        self.list.push(s.to_owned());
        self.map.insert(s.to_owned(), n);
        n
    }

    pub fn get(&self, n: Name) -> &str {
        &self.list[n as usize]
    }
}

/// What every instance of one declared port shares.
#[derive(Debug, Clone)]
pub struct SymInfo {
    pub alt: Option<Name>,
    /// The declaration, for diagnostics that point at "the port's declaration line".
    pub span: Option<Span>,
}

/// A declared port, instantiated afresh for every instance.
#[derive(Debug, Clone)]
pub struct PortTemplate {
    pub sym: SymId,
    pub name: Name,
    pub class: Class,
    pub mode: Mode,
    pub decoupled: bool,
    pub open: bool,
    pub dynamic: bool,
    pub ch_len: u32,
}

#[derive(Debug)]
pub struct BoxDef {
    pub func: Name,
    pub location: Location,
    pub pure: bool,
    /// Declaration order.
    pub ports: Vec<PortTemplate>,
    /// The same ports as the output graph describes them.
    pub decls: Vec<PortDecl>,
}

/// A net assignment `N = expr`, evaluated once into its own graph.
#[derive(Debug)]
pub struct NetDef {
    pub graph: Graph,
    /// The live interface ports, in interface-list order: what each use exposes.
    pub exposed: Vec<PId>,
    /// Vertices of the flattened net.
    pub flat_size: usize,
}

#[derive(Debug, Clone)]
pub struct ProtoPortDef {
    pub name: Name,
    pub class: Class,
    pub mode: Mode,
    pub span: Span,
}

#[derive(Debug)]
pub struct ProtoDef {
    pub ports: Vec<ProtoPortDef>,
}

#[derive(Debug)]
pub struct WrapperDef {
    pub is_static: bool,
    /// False when the body failed or did not match its prototype: instances stay unexpanded.
    pub usable: bool,
    pub graph: Graph,
    /// The instance ports in declaration order, each carrying the symbol of its inner
    /// counterpart (which flattening uses to attach outer channels).
    pub ports: Vec<PortTemplate>,
    /// Vertices of the flattened wrapper graph.
    pub flat_size: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sym {
    Box(u32),
    Net(u32),
    /// A net whose definition failed; its uses evaluate to nothing without a further message.
    FailedNet,
    Proto(u32),
    Wrapper(u32),
}

/// The stack of open scopes.
#[derive(Debug, Default)]
pub struct Scopes {
    stack: Vec<HashMap<Name, Sym>>,
}

impl Scopes {
    pub fn new() -> Self {
        Scopes {
            stack: vec![HashMap::new()],
        }
    }

    pub fn open(&mut self) {
        self.stack.push(HashMap::new());
    }

    pub fn close(&mut self) {
        if self.stack.len() > 1 {
            self.stack.pop();
        }
    }

    pub fn lookup(&self, n: Name) -> Option<Sym> {
        self.stack.iter().rev().find_map(|s| s.get(&n).copied())
    }

    /// The innermost scope holding `n`, counted from the innermost (0 = current scope).
    pub fn lookup_depth(&self, n: Name) -> Option<(Sym, usize)> {
        self.stack
            .iter()
            .rev()
            .enumerate()
            .find_map(|(d, s)| s.get(&n).map(|&x| (x, d)))
    }

    pub fn in_current(&self, n: Name) -> bool {
        self.stack.last().is_some_and(|s| s.contains_key(&n))
    }

    /// Installs `n` in the current scope (replacing an earlier binding there).
    pub fn insert(&mut self, n: Name, s: Sym) {
        if let Some(top) = self.stack.last_mut() {
            top.insert(n, s);
        }
    }

    /// Replaces the binding of `n` in the innermost scope that holds it.
    pub fn rebind(&mut self, n: Name, s: Sym) {
        if let Some(scope) = self.stack.iter_mut().rev().find(|x| x.contains_key(&n)) {
            scope.insert(n, s);
        }
    }
}
