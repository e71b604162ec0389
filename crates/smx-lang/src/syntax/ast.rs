//! The typed syntax tree of a Streamix program.
//!
//! Every node keeps the [`Span`] of the text it came from, so that later stages (composition,
//! diagnostics) can point at the exact place of a problem. The tree mirrors the EBNF of
//! `../shared/spec/language.md` §2.1 one to one; it holds no semantic information (no symbol
//! resolution, no port matching): that is the job of [`crate::compose`].

pub use smx_graph::{Location, PortClass, PortMode, TimeSpec};

use crate::diag::Span;

/// A whole file, or the nested program inside a wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    pub decls: Vec<Decl>,
    pub connect: Connect,
}

/// The final `connect NET` of a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connect {
    /// The `connect` keyword.
    pub keyword: Span,
    pub net: NetExpr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decl {
    /// `A = [extern|intern] [pure] box impl(ports)`
    Box(BoxDecl),
    /// `N = net-expression`
    Net(NetAssign),
    /// `net N(ports)`
    Proto(NetProto),
    /// `[static] wrapper W(ports) { program } net(ports)`
    Wrapper(WrapperDecl),
}

/// An identifier with its place in the source.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoxDecl {
    /// The instance/symbol name left of `=`.
    pub name: Ident,
    pub location: Location,
    pub pure: bool,
    /// The implementation name after `box` (GML attribute `func`).
    pub implementation: Ident,
    pub ports: Vec<BoxPort>,
    /// The whole declaration, from the symbol name to the closing parenthesis.
    pub span: Span,
}

/// Explicit `decoupled` / `coupled` keyword on a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coupling {
    Decoupled,
    Coupled,
}

/// `open` or `dynamic` after a box port (at most one of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PortFlag {
    Open,
    Dynamic,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoxPort {
    pub coupling: Option<Coupling>,
    pub class: Option<PortClass>,
    pub mode: PortMode,
    pub name: Ident,
    /// `in x(alt)`: the name the implementation uses for this port.
    pub alt_name: Option<Ident>,
    /// `[N]`: requested channel length (N >= 1), with its span.
    pub len: Option<(u32, Span)>,
    pub flag: Option<PortFlag>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetAssign {
    pub name: Ident,
    pub net: NetExpr,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetProto {
    pub name: Ident,
    pub ports: Vec<ProtoPort>,
    pub span: Span,
}

/// A port of a net prototype or of a wrapper's trailing `net(...)`: the class is mandatory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoPort {
    pub class: PortClass,
    pub mode: PortMode,
    pub name: Ident,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrapperDecl {
    pub is_static: bool,
    pub name: Ident,
    pub ports: Vec<WrapPort>,
    /// The nested program between the braces (its own scope).
    pub body: Box<Program>,
    /// The prototype of the body net, `net(...)` after the closing brace.
    pub body_proto: Vec<ProtoPort>,
    pub span: Span,
}

/// A wrapper port. A "null" port (only `(a, b)`) has neither mode nor name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrapPort {
    pub coupling: Option<Coupling>,
    pub class: Option<PortClass>,
    pub mode: Option<PortMode>,
    pub name: Option<Ident>,
    /// The inner port names this external port stands for: `in p(a, b)`.
    pub inner: Vec<Ident>,
    pub span: Span,
}

/// The four composition operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `.` serial, locality enforcing (highest precedence)
    Serial,
    /// `:` serial, propagating (bypass allowed)
    SerialProp,
    /// `!` non-deterministic parallel
    Parallel,
    /// `|` deterministic parallel (lowest precedence)
    ParallelDet,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Serial => ".",
            BinOp::SerialProp => ":",
            BinOp::Parallel => "!",
            BinOp::ParallelDet => "|",
        }
    }
}

/// `tt`, `tb` or `tf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeOp {
    /// time-triggered
    Tt,
    /// time-bounded: a mark of the inputs inside (no runtime times it)
    Tb,
    /// temporal firewall; parsed, but has no effect in the original
    Tf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetExpr {
    /// A box, net or wrapper name: every occurrence is a new instance.
    Ident(Ident),
    /// `lhs OP rhs`
    Binary {
        op: BinOp,
        op_span: Span,
        lhs: Box<NetExpr>,
        rhs: Box<NetExpr>,
    },
    /// `( net )`, kept so spans of diagnostics can cover the parentheses.
    Paren { inner: Box<NetExpr>, span: Span },
    /// `rt( net )`
    Rt { inner: Box<NetExpr>, span: Span },
    /// `tt[...]( net )`, `tb[...]( net )`, `tf[...]( net )`
    Timed {
        op: TimeOp,
        time: TimeSpec,
        inner: Box<NetExpr>,
        span: Span,
    },
}

impl NetExpr {
    /// The source text this expression covers.
    ///
    /// Walks operator chains in a loop rather than by recursion: `A.B.C...` with tens of
    /// thousands of operands is one left-leaning chain that deep.
    pub fn span(&self) -> Span {
        let mut first = self;
        while let NetExpr::Binary { lhs, .. } = first {
            first = lhs;
        }
        let mut last = self;
        while let NetExpr::Binary { rhs, .. } = last {
            last = rhs;
        }
        first.own_span().to(last.own_span())
    }

    /// The span of a node that is not a binary operation.
    fn own_span(&self) -> Span {
        match self {
            NetExpr::Ident(id) => id.span,
            NetExpr::Paren { span, .. } | NetExpr::Rt { span, .. } | NetExpr::Timed { span, .. } => *span,
            NetExpr::Binary { op_span, .. } => *op_span,
        }
    }

    /// The boxed sub-expressions (two for a binary operation, one for the prefix forms).
    fn children_mut(&mut self) -> impl Iterator<Item = &mut Box<NetExpr>> {
        let (first, second) = match self {
            NetExpr::Ident(_) => (None, None),
            NetExpr::Binary { lhs, rhs, .. } => (Some(lhs), Some(rhs)),
            NetExpr::Paren { inner, .. } | NetExpr::Rt { inner, .. } | NetExpr::Timed { inner, .. } => {
                (Some(inner), None)
            }
        };
        first.into_iter().chain(second)
    }
}

/// Dropping is iterative: the derived recursive drop would overflow the stack on a chain of
/// tens of thousands of operators (each `.` nests the tree one level deeper). Children are
/// moved onto a heap stack and replaced by leaves before each node is freed.
///
/// Because of this `Drop`, a `NetExpr` cannot be destructured by value (move its fields out
/// with a `match` on a reference and `clone`, or with `std::mem::replace`).
impl Drop for NetExpr {
    fn drop(&mut self) {
        fn detach(node: &mut NetExpr, pending: &mut Vec<NetExpr>) {
            for child in node.children_mut() {
                if !matches!(**child, NetExpr::Ident(_)) {
                    pending.push(std::mem::replace(&mut **child, NetExpr::leaf()));
                }
            }
        }
        let mut pending = Vec::new();
        detach(self, &mut pending);
        while let Some(mut node) = pending.pop() {
            detach(&mut node, &mut pending);
        }
    }
}

impl NetExpr {
    /// A placeholder that owns no heap memory.
    fn leaf() -> NetExpr {
        NetExpr::Ident(Ident {
            name: String::new(),
            span: Span::default(),
        })
    }
}
