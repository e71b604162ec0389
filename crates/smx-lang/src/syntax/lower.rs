//! From pest's untyped pairs to the typed [`ast`](super::ast).
//!
//! The grammar already guarantees the shape of every pair, so lowering only reads children in
//! order; the only errors left are numbers too large for their type (channel lengths, time
//! literals), which are collected as diagnostics. Punctuation pairs (`lparen`, `comma`, ...)
//! exist for the benefit of error messages and are skipped here.

use std::sync::LazyLock;

use pest::iterators::{Pair, Pairs};
use pest::pratt_parser::{Assoc, Op, PrattParser};

use super::ast::*;
use super::grammar::Rule;
use super::time::{self, Unit};
use crate::diag::{Diagnostic, Span};

/// `|` < `!` < `:` < `.`, all left-associative (spec §2.2).
static PRATT: LazyLock<PrattParser<Rule>> = LazyLock::new(|| {
    PrattParser::new()
        .op(Op::infix(Rule::op_par_det, Assoc::Left))
        .op(Op::infix(Rule::op_par, Assoc::Left))
        .op(Op::infix(Rule::op_serp, Assoc::Left))
        .op(Op::infix(Rule::op_ser, Assoc::Left))
});

/// Lowers a successfully parsed `file` pair. Returns the program and the errors found (numbers out of range).
pub(crate) fn file(pair: Pair<'_, Rule>) -> (Program, Vec<Diagnostic>) {
    let mut lower = Lower { errors: Vec::new() };
    let program_pair = pair
        .into_inner()
        .find(|p| p.as_rule() == Rule::program)
        .expect("the grammar's file rule contains a program");
    let program = lower.program(program_pair);
    (program, lower.errors)
}

fn span(pair: &Pair<'_, Rule>) -> Span {
    let s = pair.as_span();
    Span::new(s.start(), s.end())
}

fn ident(pair: Pair<'_, Rule>) -> Ident {
    debug_assert_eq!(pair.as_rule(), Rule::ident);
    Ident {
        name: pair.as_str().to_string(),
        span: span(&pair),
    }
}

/// The children of a pair without punctuation.
fn parts(pair: Pair<'_, Rule>) -> impl Iterator<Item = Pair<'_, Rule>> {
    pair.into_inner().filter(|p| {
        !matches!(
            p.as_rule(),
            Rule::lparen
                | Rule::rparen
                | Rule::lbrack
                | Rule::rbrack
                | Rule::lbrace
                | Rule::rbrace
                | Rule::comma
                | Rule::equals
        )
    })
}

fn port_class(pair: &Pair<'_, Rule>) -> PortClass {
    match pair.clone().into_inner().next().map(|p| p.as_rule()) {
        Some(Rule::k_up) => PortClass::Up,
        Some(Rule::k_down) => PortClass::Down,
        _ => PortClass::Side,
    }
}

fn port_mode(pair: &Pair<'_, Rule>) -> PortMode {
    match pair.clone().into_inner().next().map(|p| p.as_rule()) {
        Some(Rule::k_in) => PortMode::In,
        _ => PortMode::Out,
    }
}

fn coupling(pair: &Pair<'_, Rule>) -> Coupling {
    match pair.clone().into_inner().next().map(|p| p.as_rule()) {
        Some(Rule::k_decoupled) => Coupling::Decoupled,
        _ => Coupling::Coupled,
    }
}

struct Lower {
    errors: Vec<Diagnostic>,
}

impl Lower {
    fn program(&mut self, pair: Pair<'_, Rule>) -> Program {
        let mut decls = Vec::new();
        let mut connect = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::assign => decls.push(self.assign(p)),
                Rule::net_proto => decls.push(Decl::Proto(self.net_proto(p))),
                Rule::wrapper_decl => decls.push(Decl::Wrapper(self.wrapper(p))),
                Rule::connect => connect = Some(self.connect(p)),
                rule => unreachable!("program child {rule:?}"),
            }
        }
        Program {
            decls,
            connect: connect.expect("the grammar's program rule ends with connect"),
        }
    }

    fn connect(&mut self, pair: Pair<'_, Rule>) -> Connect {
        let mut inner = pair.into_inner();
        let keyword = inner.next().map(|k| span(&k)).unwrap_or_default();
        let net = self.net(inner.next().expect("connect has a net"));
        Connect { keyword, net }
    }

    fn assign(&mut self, pair: Pair<'_, Rule>) -> Decl {
        let whole = span(&pair);
        let mut inner = parts(pair);
        let name = ident(inner.next().expect("assign starts with a name"));
        let rhs = inner.next().expect("assign has a right-hand side");
        match rhs.as_rule() {
            Rule::box_def => Decl::Box(self.box_def(name, rhs, whole)),
            _ => Decl::Net(NetAssign {
                name,
                net: self.net(rhs),
                span: whole,
            }),
        }
    }

    fn box_def(&mut self, name: Ident, pair: Pair<'_, Rule>, whole: Span) -> BoxDecl {
        let mut location = Location::Local;
        let mut pure = false;
        let mut implementation = None;
        let mut ports = Vec::new();
        for p in parts(pair) {
            match p.as_rule() {
                Rule::location => {
                    location = match p.into_inner().next().map(|k| k.as_rule()) {
                        Some(Rule::k_extern) => Location::Extern,
                        _ => Location::Intern,
                    }
                }
                Rule::k_pure => pure = true,
                Rule::k_box => {}
                Rule::ident => implementation = Some(ident(p)),
                Rule::box_port => ports.push(self.box_port(p)),
                rule => unreachable!("box_def child {rule:?}"),
            }
        }
        BoxDecl {
            name,
            location,
            pure,
            implementation: implementation.expect("box has an implementation name"),
            ports,
            span: whole,
        }
    }

    fn box_port(&mut self, pair: Pair<'_, Rule>) -> BoxPort {
        let whole = span(&pair);
        let (mut coupling_kw, mut class, mut mode, mut name) = (None, None, PortMode::In, None);
        let (mut alt_name, mut len, mut flag) = (None, None, None);
        for p in parts(pair) {
            match p.as_rule() {
                Rule::coupling => coupling_kw = Some(coupling(&p)),
                Rule::port_class => class = Some(port_class(&p)),
                Rule::port_mode => mode = port_mode(&p),
                Rule::ident => name = Some(ident(p)),
                Rule::alt_name => alt_name = parts(p).next().map(ident),
                Rule::chlen_spec => len = parts(p).next().map(|n| self.chlen(n)),
                Rule::port_flag => {
                    flag = Some(match p.into_inner().next().map(|k| k.as_rule()) {
                        Some(Rule::k_open) => PortFlag::Open,
                        _ => PortFlag::Dynamic,
                    })
                }
                rule => unreachable!("box_port child {rule:?}"),
            }
        }
        BoxPort {
            coupling: coupling_kw,
            class,
            mode,
            name: name.expect("box port has a name"),
            alt_name,
            len,
            flag,
            span: whole,
        }
    }

    fn chlen(&mut self, pair: Pair<'_, Rule>) -> (u32, Span) {
        let at = span(&pair);
        let value = pair.as_str().parse::<u32>().unwrap_or_else(|_| {
            self.errors.push(Diagnostic::error(
                format!("channel length {} is too large (at most {})", pair.as_str(), u32::MAX),
                Some(at),
            ));
            u32::MAX
        });
        (value, at)
    }

    fn net_proto(&mut self, pair: Pair<'_, Rule>) -> NetProto {
        let whole = span(&pair);
        let mut name = None;
        let mut ports = Vec::new();
        for p in parts(pair) {
            match p.as_rule() {
                Rule::k_net => {}
                Rule::ident => name = Some(ident(p)),
                Rule::proto_port => ports.push(proto_port(p)),
                rule => unreachable!("net_proto child {rule:?}"),
            }
        }
        NetProto {
            name: name.expect("net prototype has a name"),
            ports,
            span: whole,
        }
    }

    fn wrapper(&mut self, pair: Pair<'_, Rule>) -> WrapperDecl {
        let whole = span(&pair);
        let (mut is_static, mut name, mut ports, mut body, mut body_proto) =
            (false, None, Vec::new(), None, Vec::new());
        for p in parts(pair) {
            match p.as_rule() {
                Rule::k_static => is_static = true,
                Rule::k_wrapper | Rule::k_net => {}
                Rule::ident => name = Some(ident(p)),
                Rule::wrap_port => ports.push(wrap_port(p)),
                Rule::program => body = Some(self.program(p)),
                Rule::proto_port => body_proto.push(proto_port(p)),
                rule => unreachable!("wrapper child {rule:?}"),
            }
        }
        WrapperDecl {
            is_static,
            name: name.expect("wrapper has a name"),
            ports,
            body: Box::new(body.expect("wrapper has a body")),
            body_proto,
            span: whole,
        }
    }

    fn net(&mut self, pair: Pair<'_, Rule>) -> NetExpr {
        debug_assert_eq!(pair.as_rule(), Rule::net);
        self.net_terms(pair.into_inner())
    }

    /// Applies the operator precedence. The Pratt parser folds a chain of equal operators in a
    /// loop, so long chains (`A.B.C...`) cost no stack; only parentheses recurse.
    fn net_terms(&mut self, pairs: Pairs<'_, Rule>) -> NetExpr {
        PRATT
            .map_primary(|p| self.term(p))
            .map_infix(|lhs, op, rhs| NetExpr::Binary {
                op: match op.as_rule() {
                    Rule::op_ser => BinOp::Serial,
                    Rule::op_serp => BinOp::SerialProp,
                    Rule::op_par => BinOp::Parallel,
                    _ => BinOp::ParallelDet,
                },
                op_span: span(&op),
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            })
            .parse(pairs)
    }

    fn term(&mut self, pair: Pair<'_, Rule>) -> NetExpr {
        let whole = span(&pair);
        match pair.as_rule() {
            Rule::ident => NetExpr::Ident(ident(pair)),
            Rule::paren => NetExpr::Paren {
                inner: Box::new(self.inner_net(pair)),
                span: whole,
            },
            Rule::rt => NetExpr::Rt {
                inner: Box::new(self.inner_net(pair)),
                span: whole,
            },
            Rule::timed => {
                let mut op = TimeOp::Tt;
                let mut time = TimeSpec::default();
                let mut inner = None;
                for p in parts(pair) {
                    match p.as_rule() {
                        Rule::time_op => {
                            op = match p.into_inner().next().map(|k| k.as_rule()) {
                                Some(Rule::k_tt) => TimeOp::Tt,
                                Some(Rule::k_tb) => TimeOp::Tb,
                                _ => TimeOp::Tf,
                            }
                        }
                        Rule::time => time = self.time(p),
                        Rule::net => inner = Some(self.net(p)),
                        rule => unreachable!("timed child {rule:?}"),
                    }
                }
                NetExpr::Timed {
                    op,
                    time,
                    inner: Box::new(inner.expect("timed operator has an operand")),
                    span: whole,
                }
            }
            rule => unreachable!("net term {rule:?}"),
        }
    }

    /// The `net` inside `( ... )` of a paren or `rt`.
    fn inner_net(&mut self, pair: Pair<'_, Rule>) -> NetExpr {
        let net = parts(pair)
            .find(|p| p.as_rule() == Rule::net)
            .expect("parenthesised term has a net");
        self.net(net)
    }

    fn time(&mut self, pair: Pair<'_, Rule>) -> TimeSpec {
        let at = span(&pair);
        let literals: Option<Vec<TimeSpec>> = pair
            .into_inner()
            .map(|lit| {
                let (unit, suffix) = match lit.as_rule() {
                    Rule::t_sec => (Unit::Sec, 1),
                    Rule::t_msec => (Unit::Milli, 2),
                    Rule::t_usec => (Unit::Micro, 2),
                    _ => (Unit::Nano, 2),
                };
                let text = lit.as_str();
                time::literal(&text[..text.len() - suffix], unit)
            })
            .collect();
        match literals.and_then(time::sum) {
            Some(t) => t,
            None => {
                self.errors.push(Diagnostic::error(
                    "time value is too large (seconds must fit in 64 bits)",
                    Some(at),
                ));
                TimeSpec::default()
            }
        }
    }
}

fn proto_port(pair: Pair<'_, Rule>) -> ProtoPort {
    let whole = span(&pair);
    let (mut class, mut mode, mut name) = (PortClass::Up, PortMode::In, None);
    for p in parts(pair) {
        match p.as_rule() {
            Rule::port_class => class = port_class(&p),
            Rule::port_mode => mode = port_mode(&p),
            Rule::ident => name = Some(ident(p)),
            rule => unreachable!("proto_port child {rule:?}"),
        }
    }
    ProtoPort {
        class,
        mode,
        name: name.expect("prototype port has a name"),
        span: whole,
    }
}

fn wrap_port(pair: Pair<'_, Rule>) -> WrapPort {
    let whole = span(&pair);
    let mut port = WrapPort {
        coupling: None,
        class: None,
        mode: None,
        name: None,
        inner: Vec::new(),
        span: whole,
    };
    for p in parts(pair) {
        match p.as_rule() {
            Rule::coupling => port.coupling = Some(coupling(&p)),
            Rule::port_class => port.class = Some(port_class(&p)),
            Rule::port_mode => port.mode = Some(port_mode(&p)),
            Rule::ident => port.name = Some(ident(p)),
            Rule::inner_names => port.inner = parts(p).map(ident).collect(),
            rule => unreachable!("wrap_port child {rule:?}"),
        }
    }
    port
}
