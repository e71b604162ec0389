//! Reading and compiling a net file, with its diagnostics on stderr.

use std::path::Path;

use super::exit::{self, CliError};
use smx_graph::{self, NetGraph, Node, NodeKind};
use smx_lang::compose::{self, CompileOptions, Compiled};
use smx_lang::diag::{Severity, SourceFile};
use smx_runtime::Registry;

/// Reads and compiles `path`, printing every diagnostic to stderr in our format
/// (`FILE:LINE:COL: error: ...`, the line, a caret). A file that cannot be read is an error
/// naming it.
pub fn compile_file(path: &Path) -> Result<Compiled, CliError> {
    let source =
        SourceFile::read(path).map_err(|e| CliError::rejected(format!("cannot read '{}': {e}", path.display())))?;
    let compiled = compose::compile(&source, &CompileOptions::default());
    let mut err = std::io::stderr().lock();
    for diag in &compiled.diagnostics {
        use std::io::Write;
        let _ = err.write_all(source.render(diag).as_bytes());
    }
    Ok(compiled)
}

/// The graph of an accepted net; a rejected one (its diagnostics already shown) is exit 1.
/// A `.json` file is read as a graph as `smxrun graph --format json` writes it, so that nets
/// produced by other tools run too.
pub fn checked_graph(path: &Path) -> Result<NetGraph, CliError> {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::rejected(format!("cannot read '{}': {e}", path.display())))?;
        return smx_graph::json::from_json(&text).map_err(|e| CliError::rejected(format!("{}: {e}", path.display())));
    }
    let compiled = compile_file(path)?;
    if compiled.accepted() {
        Ok(compiled.graph)
    } else {
        Err(CliError::silent(exit::REJECTED))
    }
}

/// `2 errors, 1 warning` for the summary of `smxrun check`.
pub fn counts(compiled: &Compiled) -> String {
    let errors = compiled
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = compiled.diagnostics.len() - errors;
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    format!("{}, {}", plural(errors, "error"), plural(warnings, "warning"))
}

/// One box per implementation that `registry` does not know, in node order.
pub fn unknown_implementations<'g>(graph: &'g NetGraph, registry: &Registry) -> Vec<&'g Node> {
    let mut seen = std::collections::BTreeSet::new();
    graph
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Box && registry.get(&n.func).is_none() && seen.insert(n.func.as_str()))
        .collect()
}

/// `FILE:LINE: error: box 'A' uses unknown implementation 'x' (known boxes: ...)`.
pub fn unknown_implementation(file: &Path, node: &Node, registry: &Registry, severity: &str) -> String {
    format!(
        "{}:{}: {severity}: box '{}' uses unknown implementation '{}' (known boxes: {})",
        file.display(),
        node.line,
        node.label,
        node.func,
        registry.names().join(", ")
    )
}
