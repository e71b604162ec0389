//! Declarations that no `connect` reaches: a box, net or wrapper declared but never named by
//! `connect`, nor by a net or wrapper that `connect` names, is not in the graph and never runs.
//! The language accepts it silently, so a forgotten `| Dbg` would go unnoticed; each is said
//! once, as a warning at its name.
//!
//! Uses are recorded as identifiers resolve during evaluation, so a name means what its scope
//! makes of it (a wrapper's own `A` is not the outer `A`), and a net defined through its
//! prototype is one declaration with it.

use std::collections::HashMap;

use super::symbols::Sym;
use crate::diag::Span;
use crate::syntax::ast::Ident;

pub type DeclId = u32;

/// What a declaration is, for the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeclKind {
    Box,
    Net,
    /// `net N(...)`, until an assignment `N = ...` defines it.
    Proto,
    Wrapper,
}

#[derive(Debug)]
struct Declared {
    kind: DeclKind,
    name: String,
    span: Span,
    /// The wrapper whose body holds it.
    within: Option<DeclId>,
    /// The declarations its definition names.
    uses: Vec<DeclId>,
    /// Named by another declaration (used or not).
    named: bool,
}

/// Every declaration with the declarations it names, and those the top-level `connect` names.
#[derive(Debug, Default)]
pub struct Usage {
    decls: Vec<Declared>,
    of_sym: HashMap<Sym, DeclId>,
    connected: Vec<DeclId>,
    /// The declaration whose definition is being evaluated; `None` at the top-level `connect`.
    user: Option<DeclId>,
    /// The wrapper whose body is being declared.
    within: Option<DeclId>,
}

/// Who was evaluating before [`Usage::enter`], for [`Usage::leave`].
pub struct Outer {
    user: Option<DeclId>,
    within: Option<DeclId>,
}

impl Usage {
    /// A new declaration of the current scope.
    pub fn declare(&mut self, kind: DeclKind, name: &Ident) -> DeclId {
        self.decls.push(Declared {
            kind,
            name: name.name.clone(),
            span: name.span,
            within: self.within,
            uses: Vec::new(),
            named: false,
        });
        (self.decls.len() - 1) as DeclId
    }

    /// `sym` now stands for `decl`.
    pub fn bind(&mut self, sym: Sym, decl: DeclId) {
        self.of_sym.insert(sym, decl);
    }

    /// The assignment `net` defines the prototype `proto`: one net, said at its assignment.
    pub fn define(&mut self, proto: Sym, net: DeclId) {
        if let Some(&p) = self.of_sym.get(&proto) {
            self.name_by(net, p);
        }
    }

    /// Evaluates on behalf of `decl` until [`Usage::leave`]; a wrapper's body is declared
    /// within it too.
    pub fn enter(&mut self, decl: DeclId) -> Outer {
        let outer = Outer {
            user: self.user,
            within: self.within,
        };
        self.user = Some(decl);
        if self.decls[decl as usize].kind == DeclKind::Wrapper {
            self.within = Some(decl);
        }
        outer
    }

    pub fn leave(&mut self, outer: Outer) {
        self.user = outer.user;
        self.within = outer.within;
    }

    /// The expression being evaluated names `sym`.
    pub fn uses(&mut self, sym: Sym) {
        let Some(&used) = self.of_sym.get(&sym) else {
            return;
        };
        match self.user {
            Some(user) => self.name_by(user, used),
            None => self.connected.push(used),
        }
    }

    fn name_by(&mut self, user: DeclId, used: DeclId) {
        self.decls[user as usize].uses.push(used);
        self.decls[used as usize].named = true;
    }

    /// Whether each declaration is reached from the top-level `connect`.
    fn reached(&self) -> Vec<bool> {
        let mut reached = vec![false; self.decls.len()];
        let mut todo = self.connected.clone();
        while let Some(d) = todo.pop() {
            if !std::mem::replace(&mut reached[d as usize], true) {
                todo.extend(&self.decls[d as usize].uses);
            }
        }
        reached
    }

    /// The declarations to warn about, in source order. Only the outermost of an unused part is
    /// said: a box named only by an unused net, or declared in an unused wrapper, is left to
    /// that net's or wrapper's warning, since "not used" would be false of it (the net uses
    /// it) and the one fix, using or removing the net, settles it too.
    fn unused(&self) -> Vec<&Declared> {
        let reached = self.reached();
        let mut out: Vec<&Declared> = self
            .decls
            .iter()
            .zip(&reached)
            .filter(|(d, r)| !**r && !d.named && d.within.is_none_or(|w| reached[w as usize]))
            .map(|(d, _)| d)
            .collect();
        out.sort_by_key(|d| d.span.start);
        out
    }

    /// A warning's message and place for every declaration that no `connect` reaches.
    pub fn warnings(&self) -> Vec<(String, Span)> {
        self.unused()
            .into_iter()
            .map(|d| (unused_message(d.kind, &d.name), d.span))
            .collect()
    }
}

fn unused_message(kind: DeclKind, name: &str) -> String {
    let what = match kind {
        DeclKind::Box => "box",
        DeclKind::Net => "net",
        DeclKind::Wrapper => "wrapper",
        DeclKind::Proto => return format!("net '{name}' is declared but neither defined ('{name} = ...') nor used"),
    };
    format!(
        "{what} '{name}' is declared but not used by 'connect', directly or through a net or wrapper, so it will not run"
    )
}

#[cfg(test)]
mod tests {
    use crate::compose::test_support::{BOXES, warnings};
    use crate::compose::{CompileOptions, compile};
    use crate::diag::SourceFile;

    fn unused(kind: &str, name: &str, line: usize, col: usize) -> String {
        format!(
            "t.smx:{line}:{col}: warning: {kind} '{name}' is declared but not used by 'connect', directly or \
             through a net or wrapper, so it will not run"
        )
    }

    #[test]
    fn a_box_no_connect_names_is_warned_of_at_its_name() {
        let text = format!("{BOXES}Dbg = box smx_snk_dump( in data )\nconnect Src.Snk\n");
        assert_eq!(warnings(&text), [unused("box", "Dbg", 3, 1)]);
        let source = SourceFile::new("t.smx", text.as_str());
        let compiled = compile(&source, &CompileOptions::default());
        assert!(
            source
                .render(&compiled.diagnostics[0])
                .ends_with("\n  Dbg = box smx_snk_dump( in data )\n  ^^^\n")
        );
    }

    #[test]
    fn an_unused_net_is_warned_of_and_not_the_boxes_only_it_names() {
        let text = format!("{BOXES}Dbg = box smx_snk_dump( in data )\nN = Src.Dbg\nconnect Src.Snk\n");
        assert_eq!(warnings(&text), [unused("net", "N", 4, 1)]);
    }

    #[test]
    fn names_reached_through_nets_wrappers_and_prototypes_are_used() {
        let through_net = format!("{BOXES}N = Src.Snk\nM = N\nconnect M\n");
        let through_proto = format!("{BOXES}net N( down out data )\nN = Src\nconnect N.Snk\n");
        let through_wrapper =
            format!("{BOXES}wrapper W(in data) {{\n connect Snk\n}} net(up in data)\nconnect Src.W\n");
        for text in [through_net, through_proto, through_wrapper] {
            assert_eq!(warnings(&text), [] as [String; 0], "{text}");
        }
    }

    #[test]
    fn a_wrapper_is_warned_of_as_a_whole_and_its_body_when_it_is_used() {
        let wrapper = |body: &str| {
            format!(
                "{BOXES}wrapper W(in data) {{\n A = box smx_snk_null( in data )\n{body} connect A\n}} net(up in data)\n"
            )
        };
        let unused_wrapper = format!("{}connect Src.Snk\n", wrapper(" B = box smx_snk_dump( in data )\n"));
        assert_eq!(warnings(&unused_wrapper), [unused("wrapper", "W", 3, 9)]);
        let used_wrapper = format!(
            "{}connect Src.(W | Snk)\n",
            wrapper(" B = box smx_snk_dump( in data )\n")
        );
        assert_eq!(warnings(&used_wrapper), [unused("box", "B", 5, 2)]);
    }

    #[test]
    fn a_name_means_what_its_scope_makes_of_it() {
        // The wrapper's own `Snk` shadows the outer one, which nothing names.
        let text = format!(
            "{BOXES}wrapper W(in data) {{\n Snk = box smx_snk_dump( in data )\n connect Snk\n}} net(up in data)\nconnect Src.W\n"
        );
        assert_eq!(warnings(&text), [unused("box", "Snk", 2, 1)]);
    }

    #[test]
    fn a_prototype_never_defined_nor_used_is_warned_of() {
        let text = format!("{BOXES}net P( up in data )\nconnect Src.Snk\n");
        assert_eq!(
            warnings(&text),
            ["t.smx:3:5: warning: net 'P' is declared but neither defined ('P = ...') nor used"]
        );
    }

    #[test]
    fn nothing_is_said_unused_after_an_error() {
        let source = SourceFile::new(
            "t.smx",
            format!("{BOXES}Dbg = box smx_snk_dump( in data )\nconnect Src.Nope.Snk\n"),
        );
        let compiled = compile(&source, &CompileOptions::default());
        let messages: Vec<&str> = compiled.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages, ["use of undeclared identifier 'Nope'"]);
    }
}
