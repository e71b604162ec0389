//! Diagnostics that teach the language: the rule behind a group of errors, and the fix.
//!
//! The composition rules report what they see (`no port connection in serial combinition`,
//! `port 'x' in 'A' is not connected`), word for word as the original compiler does, which the
//! conformance suite compares. A newcomer needs the cause instead: [`explain`] recognises two
//! common ones in those diagnostics and the program, and rewrites the list for people (the
//! verdict and the lines that carry an error stay the same):
//!
//! - a box whose input and output share a name and have no class is joined to itself (a
//!   feedback loop), so its neighbours find no port of that name: one error naming that rule
//!   and the fix (`up in x, down out x`) replaces the missing-connection errors it causes on
//!   the same line;
//! - two unconnected ports of opposite directions whose names differ by a letter or two get
//!   "did you mean", since ports connect only by equal name.

use crate::diag::{Diagnostic, SourceFile, Span};
use crate::syntax::ast::{self, BoxDecl, Decl};
use smx_graph::PortMode;

/// `diagnostics` with the causes above explained (see the module documentation).
pub fn explain(source: &SourceFile, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    if !crate::diag::has_errors(&diagnostics) {
        return diagnostics;
    }
    let Some(program) = crate::syntax::parse(source).program else {
        return diagnostics;
    };
    let mut boxes = Vec::new();
    collect_boxes(&program, &mut boxes);
    let diagnostics = explain_self_loops(source, &boxes, diagnostics);
    let diagnostics = explain_conflicting_modes(source, &boxes, diagnostics);
    let diagnostics = suggest_port_names(&boxes, diagnostics);
    let diagnostics = explain_redefinitions(source, &boxes, diagnostics);
    suggest_declared_names(source, &program, diagnostics)
}

/// A box declared twice under one name: the first declaration stands and the second is
/// ignored, so the errors that follow about that name are about the first one, which reads as
/// nonsense beside the second. The redefinition says which one stands.
fn explain_redefinitions(source: &SourceFile, boxes: &[&BoxDecl], mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    for d in diagnostics.iter_mut().filter(|d| d.is_error()) {
        let Some(name) = d
            .message
            .strip_prefix("redefinition of '")
            .and_then(|rest| rest.strip_suffix('\''))
        else {
            continue;
        };
        let Some(at) = d.span.map(|span| span.start) else {
            continue;
        };
        let Some(first) = boxes
            .iter()
            .filter(|b| b.name.name == name && b.span.start < at)
            .min_by_key(|b| b.span.start)
        else {
            continue;
        };
        d.notes.push(format!(
            " -> '{name}' stays the box declared on line {}, with implementation '{}': this declaration is \
             ignored, and every use of '{name}' means that one (give this one a name of its own)",
            source.line(first.span.start),
            first.implementation.name
        ));
    }
    diagnostics
}

/// A `tt`, `tb` or `tf` of the program that the connected net uses: its operator (two letters,
/// where the period that follows belongs to), its period, and every name that may label a box
/// it times.
#[derive(Debug, Clone)]
pub struct PeriodPlace {
    pub at: Span,
    pub time: ast::TimeSpec,
    /// The names within its operand, with those of the nets and wrappers they name (by name in
    /// any scope): more than the boxes it times, never fewer.
    pub names: std::collections::BTreeSet<String>,
}

impl PeriodPlace {
    /// Whether the operator may time the box labelled `label`.
    pub fn covers(&self, label: &str) -> bool {
        self.names.contains(label)
    }
}

/// The `tt`, `tb` and `tf` of `source` that give no period (`tt[]`) and those whose period no
/// timer can wait (more than 2^64-1 ns), in source order, each only if the connected net may use
/// it. The language accepts both, so the graph check that refuses them knows the channel but not
/// the place: these are the candidates, to be matched by the boxes they time.
pub fn period_places(source: &SourceFile) -> (Vec<PeriodPlace>, Vec<PeriodPlace>) {
    use std::collections::{BTreeMap, BTreeSet};
    /// Every net and wrapper, by name, in any scope: a name may stand for any of them.
    fn defs<'p>(p: &'p ast::Program, out: &mut BTreeMap<&'p str, Vec<Def<'p>>>) {
        for decl in &p.decls {
            match decl {
                Decl::Net(n) => out.entry(n.name.name.as_str()).or_default().push(Def::Net(&n.net)),
                Decl::Wrapper(w) => {
                    out.entry(w.name.name.as_str()).or_default().push(Def::Wrapper(&w.body));
                    defs(&w.body, out);
                }
                _ => {}
            }
        }
    }
    #[derive(Clone, Copy)]
    enum Def<'p> {
        Net(&'p ast::NetExpr),
        Wrapper(&'p ast::Program),
    }
    /// The expressions a use of `def` evaluates.
    fn exprs<'p>(def: Def<'p>, out: &mut Vec<&'p ast::NetExpr>) {
        match def {
            Def::Net(e) => out.push(e),
            Def::Wrapper(body) => {
                out.push(&body.connect.net);
                for decl in &body.decls {
                    if let Decl::Net(n) = decl {
                        out.push(&n.net);
                    }
                }
            }
        }
    }
    /// The identifiers of `e`, the timed expressions within it, and the definitions it names.
    fn scan<'p>(e: &'p ast::NetExpr, names: &mut Vec<&'p str>, timed: &mut Vec<&'p ast::NetExpr>) {
        match e {
            ast::NetExpr::Ident(id) => names.push(&id.name),
            ast::NetExpr::Binary { lhs, rhs, .. } => {
                scan(lhs, names, timed);
                scan(rhs, names, timed);
            }
            ast::NetExpr::Paren { inner, .. } | ast::NetExpr::Rt { inner, .. } => scan(inner, names, timed),
            ast::NetExpr::Timed { inner, .. } => {
                timed.push(e);
                scan(inner, names, timed);
            }
        }
    }
    /// `roots` and every definition they name, transitively: the names and the timed
    /// expressions they hold.
    fn closure<'p>(
        roots: Vec<&'p ast::NetExpr>,
        defs: &BTreeMap<&'p str, Vec<Def<'p>>>,
    ) -> (BTreeSet<&'p str>, Vec<&'p ast::NetExpr>) {
        let (mut seen, mut timed) = (BTreeSet::new(), Vec::new());
        let mut todo = roots;
        while let Some(e) = todo.pop() {
            let mut names = Vec::new();
            scan(e, &mut names, &mut timed);
            for name in names {
                if seen.insert(name) {
                    for &def in defs.get(name).into_iter().flatten() {
                        exprs(def, &mut todo);
                    }
                }
            }
        }
        (seen, timed)
    }
    let (mut zero, mut long) = (Vec::new(), Vec::new());
    let Some(p) = crate::syntax::parse(source).program else {
        return (zero, long);
    };
    let mut all = BTreeMap::new();
    defs(&p, &mut all);
    let (_, used) = closure(vec![&p.connect.net], &all);
    for e in used {
        let ast::NetExpr::Timed { time, inner, span, .. } = e else {
            continue;
        };
        let list = if time.secs == 0 && time.nanos == 0 {
            &mut zero
        } else if time
            .secs
            .checked_mul(1_000_000_000)
            .and_then(|n| n.checked_add(time.nanos))
            .is_none()
        {
            &mut long
        } else {
            continue;
        };
        let (names, _) = closure(vec![&**inner], &all);
        list.push(PeriodPlace {
            at: Span::new(span.start, span.start + 2),
            time: *time,
            names: names.into_iter().map(str::to_owned).collect(),
        });
    }
    for list in [&mut zero, &mut long] {
        list.sort_by_key(|p| p.at.start);
        // A net used twice holds its operators once.
        list.dedup_by_key(|p| p.at.start);
    }
    (zero, long)
}

/// `'Src'(0)` → (`Src`, `0`).
fn instance(text: &str) -> Option<(&str, &str)> {
    let (label, id) = text.strip_prefix('\'')?.rsplit_once("'(")?;
    Some((label, id.strip_suffix(')')?))
}

/// The port and the two instances of `conflicting modes of ports 'x' in 'A'(0) and 'B'(1) (line 3)`,
/// the left operand first.
fn conflicting_modes(message: &str) -> Option<(&str, &str, &str)> {
    let rest = message.strip_prefix("conflicting modes of ports '")?;
    let (port, rest) = rest.split_once("' in ")?;
    let (left, right) = rest.split_once(" and ")?;
    let right = right.split_once(" (line ").map_or(right, |(r, _)| r);
    instance(left)?;
    instance(right)?;
    Some((port, left, right))
}

/// One conflict of port modes, as its first error names it, and the errors on its line that
/// only repeat it.
struct Conflict {
    line: usize,
    port: String,
    left: String,
    right: String,
    /// Errors folded into it; its note is said once, so it is emptied once said.
    folded: usize,
    said: bool,
}

impl Conflict {
    /// Whether `d` only repeats this conflict: no connection in its pair, or its port not
    /// connected in either box, on its line.
    fn repeated_by(&self, d: &Diagnostic, source: &SourceFile) -> bool {
        if !d.is_error() || source.line_of(d) != self.line {
            return false;
        }
        let (Some((ll, li)), Some((rl, ri))) = (instance(&self.left), instance(&self.right)) else {
            return false;
        };
        let port = &self.port;
        d.message == format!("no port connection in serial combinition '{ll}({li}).{rl}({ri})'")
            || d.message == format!("port '{port}' in {} is not connected", self.left)
            || d.message == format!("port '{port}' in {} is not connected", self.right)
    }
}

/// A first-hour mistake: a port declared with the wrong direction, so that two inputs (or two
/// outputs) meet. The original's four errors name the symptoms; the first gets the cause in
/// plain words, and the errors that only repeat it on the same line (no connection in that
/// pair, the port not connected in either box) are folded into it.
fn explain_conflicting_modes(source: &SourceFile, boxes: &[&BoxDecl], diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::with_capacity(diagnostics.len());
    let mut conflicts: Vec<Conflict> = Vec::new();
    for d in &diagnostics {
        if let Some((port, left, right)) = d.is_error().then(|| conflicting_modes(&d.message)).flatten() {
            conflicts.push(Conflict {
                line: source.line_of(d),
                port: port.to_string(),
                left: left.to_string(),
                right: right.to_string(),
                folded: 0,
                said: false,
            });
        }
    }
    let mut kept = Vec::new();
    for d in diagnostics {
        match conflicts.iter_mut().find(|c| c.repeated_by(&d, source)) {
            Some(conflict) => conflict.folded += 1,
            None => kept.push(d),
        }
    }
    for mut d in kept {
        if let Some((port, left, right)) = d.is_error().then(|| conflicting_modes(&d.message)).flatten()
            && let Some(conflict) = conflicts.iter_mut().find(|c| {
                !c.said && c.line == source.line_of(&d) && c.port == port && c.left == left && c.right == right
            })
        {
            let serial = conflict.folded > 0;
            let (l, r) = (
                instance(left).map_or(left, |i| i.0),
                instance(right).map_or(right, |i| i.0),
            );
            let modes = (port_mode(boxes, l, port), port_mode(boxes, r, port));
            d.notes.push(match modes {
                (Some(PortMode::Out), Some(PortMode::In)) => bundle_note(port, l, r),
                (Some(PortMode::In), Some(PortMode::Out)) => bundle_note(port, r, l),
                (left_mode, right_mode) => mode_note(port, l, r, left_mode.or(right_mode), serial),
            });
            if serial {
                d.follow_on_errors += conflict.folded;
                d.notes.push(format!(
                    " -> {} more error{} on this line about '{port}' not being connected follow from it (not shown)",
                    conflict.folded,
                    if conflict.folded == 1 { "" } else { "s" }
                ));
            }
            conflict.said = true;
        }
        out.push(d);
    }
    out
}

/// The cause in plain words; with the fix when the two meet in a serial connection, where
/// messages flow from the left operand to the right one.
fn mode_note(port: &str, left: &str, right: &str, mode: Option<PortMode>, serial: bool) -> String {
    let (what, fix) = match mode {
        Some(PortMode::In) => (
            format!("both declare '{port}' as an input ('in'), and two inputs cannot be joined"),
            format!("'{left}' should declare 'out {port}'"),
        ),
        Some(PortMode::Out) => (
            format!("both declare '{port}' as an output ('out'), and two outputs cannot be joined"),
            format!("'{right}' should declare 'in {port}'"),
        ),
        _ => (format!("declare '{port}' in the same direction"), String::new()),
    };
    let mut note = format!(
        " -> '{left}' and '{right}' {what}: a channel runs from an output (declared 'out') to an input \
         (declared 'in')"
    );
    if serial && !fix.is_empty() {
        note.push_str(&format!(". Messages flow from '{left}' to '{right}', so {fix}"));
    }
    note
}

/// An output and an input of one name side by side (`|`, `!`): a routing node bundles ports of
/// one name that are all inputs or all outputs, and a channel from one to the other is `.`.
fn bundle_note(port: &str, from: &str, to: &str) -> String {
    format!(
        " -> '{from}' declares '{port}' as an output and '{to}' as an input: side by side ('|' or '!'), ports of one \
         name are bundled into one, and that takes only inputs or only outputs. To send from '{from}' to '{to}', \
         join them in series: {from}.{to}"
    )
}

/// Every name declared in `program` and the wrappers in it, with its place.
fn collect_names<'p>(program: &'p ast::Program, out: &mut Vec<&'p ast::Ident>) {
    for decl in &program.decls {
        match decl {
            Decl::Box(b) => out.push(&b.name),
            Decl::Net(n) => out.push(&n.name),
            Decl::Proto(p) => out.push(&p.name),
            Decl::Wrapper(w) => {
                out.push(&w.name);
                collect_names(&w.body, out);
            }
        }
    }
}

/// "did you mean" on an undeclared identifier that differs from a declared name by case or a
/// letter or two (`Sink` for `Snk`).
fn suggest_declared_names(
    source: &SourceFile,
    program: &ast::Program,
    mut diagnostics: Vec<Diagnostic>,
) -> Vec<Diagnostic> {
    let mut names = Vec::new();
    collect_names(program, &mut names);
    for d in diagnostics.iter_mut().filter(|d| d.is_error()) {
        let Some(used) = d
            .message
            .strip_prefix("use of undeclared identifier '")
            .and_then(|rest| rest.strip_suffix('\''))
        else {
            continue;
        };
        // A name declared somewhere under exactly this spelling is a matter of scope or order,
        // not of spelling.
        if names.iter().any(|n| n.name == used) {
            continue;
        }
        let lower = used.to_lowercase();
        let closest = names
            .iter()
            .map(|n| (strsim::levenshtein(&n.name.to_lowercase(), &lower), *n))
            .filter(|(distance, n)| *distance <= 2 && 2 * distance < n.name.len().max(used.len()))
            .min_by_key(|(distance, _)| *distance);
        if let Some((_, name)) = closest {
            let line = source.line(name.span.start);
            d.notes.push(format!(
                " -> did you mean '{}'? It is declared on line {line}",
                name.name
            ));
        }
    }
    diagnostics
}

fn collect_boxes<'p>(program: &'p ast::Program, out: &mut Vec<&'p BoxDecl>) {
    for decl in &program.decls {
        match decl {
            Decl::Box(b) => out.push(b),
            Decl::Wrapper(w) => collect_boxes(&w.body, out),
            _ => {}
        }
    }
}

/// The names that are both an input and an output of `b` without a class: the language joins
/// each such pair to itself.
fn self_joined_names(b: &BoxDecl) -> Vec<&str> {
    let classless = |mode: PortMode| {
        b.ports
            .iter()
            .filter(move |p| p.mode == mode && p.class.is_none() && p.flag.is_none())
            .map(|p| p.name.name.as_str())
    };
    let outputs: Vec<&str> = classless(PortMode::Out).collect();
    let mut names: Vec<&str> = classless(PortMode::In).filter(|n| outputs.contains(n)).collect();
    names.dedup();
    names
}

/// The two instance labels of `no port connection in serial combinition 'A(0).B(1)'`.
fn serial_pair(message: &str) -> Option<(&str, &str)> {
    let pair = message.strip_prefix("no port connection in serial combinition '")?;
    let (left, rest) = pair.split_once('(')?;
    let rest = rest.split_once(')')?.1;
    let right = rest.get(1..)?.split_once('(')?.0;
    Some((left, right))
}

/// The port and instance of `port 'x' in 'A'(0) is not connected`.
fn unconnected_port(message: &str) -> Option<(&str, &str)> {
    let rest = message.strip_prefix("port '")?;
    let (port, rest) = rest.split_once("' in '")?;
    let (instance, rest) = rest.split_once("'(")?;
    rest.ends_with(") is not connected").then_some((port, instance))
}

fn explain_self_loops(source: &SourceFile, boxes: &[&BoxDecl], mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    for b in boxes {
        let names = self_joined_names(b);
        if names.is_empty() {
            continue;
        }
        let label = b.name.name.as_str();
        // The neighbours that found no connection to this box, and the errors saying so.
        let mut neighbours: Vec<String> = Vec::new();
        let mut first: Option<usize> = None;
        for (i, d) in diagnostics.iter().enumerate() {
            if let Some((l, r)) = d.is_error().then(|| serial_pair(&d.message)).flatten()
                && (l == label || r == label)
            {
                first.get_or_insert(i);
                neighbours.push(if l == label { r } else { l }.to_string());
            }
        }
        let Some(first) = first else { continue };
        let line = source.line_of(&diagnostics[first]);
        let follows = |d: &Diagnostic| {
            d.is_error()
                && source.line_of(d) == line
                && (serial_pair(&d.message).is_some_and(|(l, r)| l == label || r == label)
                    || unconnected_port(&d.message)
                        .is_some_and(|(p, x)| names.contains(&p) && neighbours.iter().any(|n| n == x)))
        };
        let folded = diagnostics.iter().filter(|d| follows(d)).count();
        let taught = self_loop_error(source, b, &names, &neighbours, diagnostics[first].span, folded);
        let mut kept: Vec<Diagnostic> = Vec::with_capacity(diagnostics.len());
        for (i, d) in diagnostics.into_iter().enumerate() {
            if i == first {
                kept.push(taught.clone());
            } else if !follows(&d) {
                kept.push(d);
            }
        }
        diagnostics = kept;
    }
    diagnostics
}

fn self_loop_error(
    source: &SourceFile,
    b: &BoxDecl,
    names: &[&str],
    neighbours: &[String],
    at: Option<Span>,
    folded: usize,
) -> Diagnostic {
    let label = &b.name.name;
    let quoted = |list: &[&str]| list.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
    let mut others: Vec<&str> = Vec::new();
    for n in neighbours {
        if !others.contains(&n.as_str()) {
            others.push(n);
        }
    }
    let others = match others.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and '{last}'", quoted(rest)),
        _ => quoted(&others),
    };
    let message = format!(
        "box '{label}' is connected to itself, so {others} cannot connect to it: a box whose input \
         and output share a name ({}) and have no class is joined to itself",
        quoted(names)
    );
    let (line, col) = source.line_col(b.span.start);
    let mut diag = Diagnostic::error(message, at)
        .with_note(format!(
            "{}:{line}:{col}: note: '{label}' is declared here",
            source.name
        ))
        .with_note(format!("  {}", source.line_text(line)))
        .with_note(format!(
            " -> to pass messages through it, give the ports their class: {}",
            with_classes(source, b, names)
        ));
    if folded > 1 {
        diag = diag.with_note(format!(
            " -> {} more errors about missing connections on this line follow from it (not shown)",
            folded - 1
        ));
        diag.follow_on_errors = folded - 1;
    }
    diag
}

/// The declaration's text with `up` before each self-joined input and `down` before each
/// self-joined output.
fn with_classes(source: &SourceFile, b: &BoxDecl, names: &[&str]) -> String {
    let text = &source.text;
    let mut out = String::new();
    let mut at = b.span.start;
    for port in b.ports.iter().filter(|p| names.contains(&p.name.name.as_str())) {
        let keyword = if port.mode == PortMode::In { "in" } else { "out" };
        let port_text = &text[port.span.start..port.span.end];
        let Some(offset) = word_offset(port_text, keyword) else {
            continue;
        };
        let class = if port.mode == PortMode::In { "up " } else { "down " };
        out.push_str(&text[at..port.span.start + offset]);
        out.push_str(class);
        at = port.span.start + offset;
    }
    out.push_str(&text[at..b.span.end]);
    out
}

/// Where `word` stands as a whole word in `text`.
fn word_offset(text: &str, word: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).map(|(i, _)| i).find(|&i| {
        let before = text[..i].chars().next_back().is_none_or(|c| !is_ident(c));
        let after = text[i + word.len()..].chars().next().is_none_or(|c| !is_ident(c));
        before && after
    })
}

/// The declared direction of port `port` of instance `instance`.
fn port_mode(boxes: &[&BoxDecl], instance: &str, port: &str) -> Option<PortMode> {
    let b = boxes.iter().find(|b| b.name.name == instance)?;
    Some(b.ports.iter().find(|p| p.name.name == port)?.mode)
}

/// "did you mean" on an unconnected input whose name is a letter or two away from an unconnected
/// output.
fn suggest_port_names(boxes: &[&BoxDecl], mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let unconnected: Vec<(String, String, PortMode)> = diagnostics
        .iter()
        .filter(|d| d.is_error())
        .filter_map(|d| unconnected_port(&d.message))
        .filter_map(|(p, x)| Some((p.to_string(), x.to_string(), port_mode(boxes, x, p)?)))
        .collect();
    let mut suggested: Vec<String> = Vec::new();
    for d in diagnostics.iter_mut().filter(|d| d.is_error()) {
        let Some((port, instance)) = unconnected_port(&d.message) else {
            continue;
        };
        // Said once per pair, at the input: it names the output's name, as the upstream box
        // usually fixes the name.
        let Some(mode) = port_mode(boxes, instance, port).filter(|m| *m == PortMode::In) else {
            continue;
        };
        let closest = unconnected
            .iter()
            .filter(|(p, _, m)| *m != mode && p != port)
            .map(|(p, x, m)| (strsim::levenshtein(p, port), p, x, m))
            .filter(|(distance, ..)| *distance <= 2)
            .min_by_key(|(distance, ..)| *distance);
        if let Some((_, name, other, other_mode)) = closest
            && !suggested.contains(name)
        {
            let direction = if *other_mode == PortMode::In { "input" } else { "output" };
            let note = format!(
                " -> did you mean '{name}'? Ports connect only by equal name, and the {direction} \
                 '{name}' of '{other}' is not connected either"
            );
            suggested.push(port.to_string());
            suggested.push(name.clone());
            d.notes.push(note);
        }
    }
    // Without a likely misspelling, the port may be meant to stay unconnected (an optional
    // port of the box): the language says so with `open`.
    for d in diagnostics.iter_mut().filter(|d| d.is_error() && d.notes.is_empty()) {
        let Some((port, instance)) = unconnected_port(&d.message) else {
            continue;
        };
        // The other half of a likely misspelling is fixed with it, not left open.
        if suggested.iter().any(|name| name == port) {
            continue;
        }
        let Some(mode) = port_mode(boxes, instance, port) else {
            continue;
        };
        let class = if mode == PortMode::In { "in" } else { "out" };
        d.notes.push(format!(
            " -> if it stays unconnected on purpose (a port the box may go without), declare it `{class} {port} open`"
        ));
    }
    diagnostics
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compose::{CompileOptions, compile};

    fn explained(text: &str) -> (SourceFile, Vec<Diagnostic>) {
        let source = SourceFile::new("t.smx", text);
        let compiled = compile(&source, &CompileOptions::default());
        let diagnostics = explain(&source, compiled.diagnostics);
        (source, diagnostics)
    }

    #[test]
    fn a_box_joined_to_itself_is_one_error_that_names_the_rule_and_the_fix() {
        let (source, diags) = explained(
            "Src = box smx_src_rand( out data )\nF = box smx_fwd( in data, out data )\n\
             Snk = box smx_snk_null( in data )\nconnect Src.F.Snk\n",
        );
        assert_eq!(diags.len(), 1, "{diags:?}");
        let text = source.render(&diags[0]);
        assert!(
            text.starts_with("t.smx:4:9: error: box 'F' is connected to itself"),
            "{text}"
        );
        assert!(text.contains("share a name ('data') and have no class"), "{text}");
        assert!(text.contains("t.smx:2:1: note: 'F' is declared here"), "{text}");
        assert!(text.contains("F = box smx_fwd( up in data, down out data )"), "{text}");
        assert!(text.contains("3 more errors about missing connections"), "{text}");
    }

    #[test]
    fn an_undeclared_name_close_to_a_declared_one_gets_did_you_mean() {
        let (source, diags) =
            explained("Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Sink\n");
        assert_eq!(diags.len(), 1, "{diags:?}");
        let text = source.render(&diags[0]);
        assert!(
            text.starts_with("t.smx:3:13: error: use of undeclared identifier 'Sink'"),
            "{text}"
        );
        assert!(
            text.contains(" -> did you mean 'Snk'? It is declared on line 2"),
            "{text}"
        );
        // Case alone counts as a letter; a name with nothing close gets no guess.
        let (_, diags) = explained("Src = box a( out data )\nSnk = box b( in data )\nconnect src.Snk\n");
        assert!(
            diags[0].notes.iter().any(|n| n.contains("did you mean 'Src'?")),
            "{diags:?}"
        );
        let (_, diags) = explained("Src = box a( out data )\nSnk = box b( in data )\nconnect Src.Q\n");
        assert!(diags[0].notes.is_empty(), "{diags:?}");
    }

    #[test]
    fn an_output_and_an_input_side_by_side_are_told_to_join_in_series() {
        for op in ["|", "!"] {
            let (source, diags) = explained(&format!(
                "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src{op}Snk\n"
            ));
            let text: String = diags.iter().map(|d| source.render(d)).collect();
            assert!(text.contains("conflicting modes of ports 'data'"), "{text}");
            assert!(
                text.contains("'Src' declares 'data' as an output and 'Snk' as an input"),
                "{text}"
            );
            assert!(text.contains("join them in series: Src.Snk"), "{text}");
            assert!(!text.contains("both declare"), "{text}");
        }
    }

    #[test]
    fn two_inputs_joined_are_one_error_that_says_which_port_to_turn() {
        let (source, diags) =
            explained("Src = box smx_src_rand( in data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n");
        assert_eq!(diags.len(), 1, "{diags:?}");
        let text = source.render(&diags[0]);
        assert!(
            text.starts_with("t.smx:3:13: error: conflicting modes of ports 'data' in 'Src'(0) and 'Snk'(1) (line 3)"),
            "{text}"
        );
        assert!(
            text.contains("both declare 'data' as an input ('in'), and two inputs cannot be joined"),
            "{text}"
        );
        assert!(text.contains("so 'Src' should declare 'out data'"), "{text}");
        assert!(text.contains("3 more errors on this line"), "{text}");
        assert_eq!(diags[0].errors(), 4, "a tally counts those not shown too");
        // Two outputs: the right one is turned.
        let (_, diags) =
            explained("Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( out data )\nconnect Src.Snk\n");
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert!(
            diags[0].notes[0].contains("so 'Snk' should declare 'in data'"),
            "{diags:?}"
        );
    }

    #[test]
    fn periods_that_no_timer_can_wait_are_found_at_their_operator() {
        let source = SourceFile::new(
            "t.smx",
            "A = box a(out x)\nB = box b(in x)\nN = tb[1s](A)\nconnect tt[](N).tt[20000000000s](B)\n",
        );
        let (zero, long) = period_places(&source);
        assert_eq!(
            zero.iter().map(|p| source.line_col(p.at.start)).collect::<Vec<_>>(),
            [(4, 9)]
        );
        assert_eq!(
            long.iter().map(|p| source.line_col(p.at.start)).collect::<Vec<_>>(),
            [(4, 17)]
        );
        // The net named in the operand stands for the boxes it holds.
        let names: Vec<&str> = zero[0].names.iter().map(String::as_str).collect();
        assert_eq!(names, ["A", "N"]);
        assert!(long[0].covers("B") && !long[0].covers("A"));
    }

    #[test]
    fn a_period_in_a_net_the_connected_net_does_not_use_has_no_place() {
        let source = SourceFile::new(
            "t.smx",
            "A = box a(out x)\nB = box b(in x)\nU = tt[](A)\nM = A.tt[](B)\nconnect M\n",
        );
        let (zero, _) = period_places(&source);
        assert_eq!(
            zero.iter().map(|p| source.line_col(p.at.start)).collect::<Vec<_>>(),
            [(4, 7)]
        );
    }

    #[test]
    fn a_feedback_loop_that_composes_is_left_alone() {
        let (_, diags) = explained("A = box a( in x, out x, out y )\nB = box b( in y )\nconnect A.B\n");
        assert!(diags.is_empty(), "{diags:?}");
    }

    /// An unconnected port that misspells none is perhaps meant to stay so: `open` is named;
    /// the two halves of a misspelling are not.
    #[test]
    fn an_unconnected_port_without_a_likely_misspelling_names_open() {
        let (source, diags) =
            explained("Src = box smx_src_rand( out data )\nD = box smx_snk_dump( in data, in topic )\nconnect Src.D\n");
        let text: String = diags.iter().map(|d| source.render(d)).collect();
        assert!(text.contains("declare it `in topic open`"), "{text}");
        let (source, diags) =
            explained("Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in dat )\nconnect Src.Snk\n");
        let text: String = diags.iter().map(|d| source.render(d)).collect();
        assert!(!text.contains("open`"), "{text}");
    }

    /// A redefinition says which declaration stands, which the errors after it are about.
    #[test]
    fn a_redefinition_says_which_declaration_stands() {
        let (source, diags) =
            explained("Src = box smx_src_rand(out data)\nSrc = box smx_snk_null(in data)\nconnect Src.Src\n");
        let text: String = diags.iter().map(|d| source.render(d)).collect();
        assert!(
            text.contains("-> 'Src' stays the box declared on line 1, with implementation 'smx_src_rand'"),
            "{text}"
        );
    }

    #[test]
    fn a_port_name_a_letter_away_gets_did_you_mean() {
        let (source, diags) =
            explained("Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in dat )\nconnect Src.Snk\n");
        let text: String = diags.iter().map(|d| source.render(d)).collect();
        assert_eq!(text.matches("did you mean").count(), 1, "{text}");
        assert!(
            text.contains("did you mean 'data'? Ports connect only by equal name, and the output 'data' of 'Src'"),
            "{text}"
        );
    }
}
