//! Reading and compiling a net file, with its diagnostics on stderr.

use std::path::{Path, PathBuf};

use super::exit::{self, CliError};
use smx_cbox::BoxLibraries;
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

/// `FILE:LINE: error: box 'A' uses unknown implementation 'x' (known boxes: ...)`, and the
/// libraries that were searched for it (`libs`, empty when none).
pub fn unknown_implementation(file: &Path, node: &Node, registry: &Registry, severity: &str, libs: &str) -> String {
    let searched = if libs.is_empty() {
        String::new()
    } else {
        format!("; no symbol '{}' in {libs}", node.func)
    };
    format!(
        "{}:{}: {severity}: box '{}' uses unknown implementation '{}' (known boxes: {}){searched}",
        file.display(),
        node.line,
        node.label,
        node.func,
        registry.names().join(", ")
    )
}

/// The C box libraries of a command: the config file's `boxes`, then `--boxes`.
pub fn library_paths(from_config: &[PathBuf], from_args: &[PathBuf]) -> Vec<PathBuf> {
    from_config.iter().chain(from_args).cloned().collect()
}

/// Opens the box libraries; an error (a missing library, one that needs an `smx_*` function
/// this program lacks) is exit 1.
pub fn open_libraries(paths: &[PathBuf]) -> Result<BoxLibraries, CliError> {
    BoxLibraries::open(paths).map_err(|e| CliError::rejected(e.0))
}

/// `registry` and the C boxes `libraries` provide for `graph`'s implementations that are not
/// built in. An implementation found in two libraries, or without all three of its symbols, is
/// exit 1 (every such problem on a line of its own); one that no library has is left to the
/// caller's unknown-implementation message.
pub fn with_c_boxes(graph: &NetGraph, registry: &Registry, libraries: &BoxLibraries) -> Result<Registry, CliError> {
    let specs = libraries
        .specs_for(graph, |name| registry.get(name).is_some())
        .map_err(|e| CliError::rejected(e.0.replace('\n', "\nerror: ")))?;
    let mut all = registry.clone();
    for spec in specs {
        all.register(spec);
    }
    Ok(all)
}
