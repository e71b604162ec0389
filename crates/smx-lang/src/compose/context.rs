//! The state shared by all composition steps: declarations, scopes, diagnostics, options.

use super::CompileOptions;
use super::model::{Graph, Name, PId, RopeId, SymId, VId};
use super::symbols::{BoxDef, Names, NetDef, ProtoDef, Scopes, SymInfo, WrapperDef};
use super::usage::Usage;
use crate::diag::{Diagnostic, SourceFile, Span};

/// The interface of an evaluated expression (the original's "virtual net").
#[derive(Debug, Clone)]
pub struct Iface {
    /// Every port ever contributed, in the spec's list order (states filter them).
    pub full: RopeId,
    /// The live ports of `full`, in the same order.
    pub live: Vec<PId>,
    /// Boundary instances for the missing-connection check of serial composition.
    pub left: RopeId,
    pub right: RopeId,
}

/// Criticality mode set by `rt(...)` / `tt[...](...)`: decides the priority of new vertices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crit {
    None,
    Rt,
    Tt,
}

pub struct Composer<'a> {
    pub opts: &'a CompileOptions,
    pub src: Option<&'a SourceFile>,
    pub names: Names,
    pub syms: Vec<SymInfo>,
    pub boxes: Vec<BoxDef>,
    pub nets: Vec<NetDef>,
    pub protos: Vec<ProtoDef>,
    pub wrappers: Vec<WrapperDef>,
    pub scopes: Scopes,
    pub usage: Usage,
    pub diags: Vec<Diagnostic>,
}

/// The most vertices a flattened net may have. Nets used twice in nets used twice ... grow
/// exponentially; such a net is refused before flattening instead of exhausting memory.
pub const FLAT_LIMIT: usize = 20_000_000;

impl<'a> Composer<'a> {
    pub fn new(opts: &'a CompileOptions, src: Option<&'a SourceFile>) -> Self {
        Composer {
            opts,
            src,
            names: Names::default(),
            syms: Vec::new(),
            boxes: Vec::new(),
            nets: Vec::new(),
            protos: Vec::new(),
            wrappers: Vec::new(),
            scopes: Scopes::new(),
            usage: Usage::default(),
            diags: Vec::new(),
        }
    }

    pub fn error(&mut self, msg: String, span: Option<Span>) {
        self.diags.push(Diagnostic::error(msg, span));
    }

    /// A warning at the name of every declaration that no `connect` reaches. Not after an
    /// error: evaluation stops at a failed operand, so what follows it would look unused.
    pub fn warn_unused(&mut self) {
        if crate::diag::has_errors(&self.diags) {
            return;
        }
        for (msg, span) in self.usage.warnings() {
            self.warning(msg, Some(span));
        }
    }

    pub fn warning(&mut self, msg: String, span: Option<Span>) {
        self.diags.push(Diagnostic::warning(msg, span));
    }

    pub fn new_sym(&mut self, alt: Option<Name>, span: Option<Span>) -> SymId {
        self.syms.push(SymInfo { alt, span });
        (self.syms.len() - 1) as SymId
    }

    pub fn name(&self, n: Name) -> &str {
        self.names.get(n)
    }

    pub fn vlabel(&self, g: &Graph, v: VId) -> &str {
        self.names.get(g.vert(v).label)
    }

    pub fn pname(&self, g: &Graph, p: PId) -> &str {
        self.names.get(g.port(p).name)
    }

    /// Vertices `g` will have once flattened (saturating).
    pub fn flat_size(&self, g: &Graph) -> usize {
        g.verts
            .iter()
            .filter(|v| v.alive)
            .map(|v| match v.kind {
                super::model::VKind::Net => self.nets[v.def as usize].flat_size,
                super::model::VKind::Wrapper => self.wrappers[v.def as usize].flat_size,
                _ => 1,
            })
            .fold(0usize, usize::saturating_add)
    }

    /// `'A'(3)`: an instance as the original's messages name it.
    pub fn quoted_inst(&self, g: &Graph, v: VId) -> String {
        format!("'{}'({})", self.vlabel(g, v), g.rank(v))
    }

    /// `cannot connect open port 'x' in 'A'(0)`: an open port met a port it may not join.
    pub fn open_port_error(&mut self, g: &Graph, port: PId) {
        let msg = format!(
            "cannot connect open port '{}' in {}",
            self.pname(g, port),
            self.quoted_inst(g, g.port(port).owner)
        );
        let span = self.inst_span(g, port);
        self.error(msg, span);
    }

    pub fn inst_span(&self, g: &Graph, p: PId) -> Option<Span> {
        g.vert(g.port(p).owner).span
    }

    pub fn decl_span(&self, g: &Graph, p: PId) -> Option<Span> {
        self.syms[g.port(p).sym as usize].span
    }

    /// The 1-based line of a span, for message texts that quote a line ("(line 10)").
    pub fn line_of(&self, span: Option<Span>) -> Option<usize> {
        match (self.src, span) {
            (Some(src), Some(s)) => Some(src.line(s.start)),
            (_, None) => Some(0),
            _ => None,
        }
    }

    /// ` (line N)`, or nothing when the source text is unknown.
    pub fn line_suffix(&self, span: Option<Span>) -> String {
        self.line_of(span).map(|l| format!(" (line {l})")).unwrap_or_default()
    }
}
