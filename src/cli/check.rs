//! `smxrun check FILE` and `smxrun graph FILE`: the front end alone, no thread started.

use std::path::Path;

use super::args::GraphArgs;
use super::exit::{self, CliError};
use super::load;
use super::output::Output;
use smx_graph::{NetGraph, NodeKind};
use smx_runtime::Registry;

/// Exit 0 when the net is accepted (warnings allowed), 1 when rejected. Diagnostics go to
/// stderr; an accepted net gets a one-line summary on stdout.
pub fn check(file: &Path, registry: &Registry) -> Result<i32, CliError> {
    let compiled = load::compile_file(file)?;
    if !compiled.accepted() {
        eprintln!("{}: rejected ({})", file.display(), load::counts(&compiled));
        return Ok(exit::REJECTED);
    }
    warn_unknown_implementations(file, &compiled.graph, registry);
    let g = &compiled.graph;
    let boxes = g.nodes.iter().filter(|n| n.kind == NodeKind::Box).count();
    let routing = g.nodes.len() - boxes;
    Output::open(None)?.write(&format!(
        "{}: accepted: {boxes} boxes, {routing} routing nodes, {} channels ({})\n",
        file.display(),
        g.edges.len(),
        load::counts(&compiled)
    ))?;
    Ok(exit::OK)
}

/// The language does not know implementations, so an accepted net may still name one that
/// `smxrun` cannot run; say so without changing the verdict.
fn warn_unknown_implementations(file: &Path, graph: &NetGraph, registry: &Registry) {
    for node in load::unknown_implementations(graph, registry) {
        eprintln!("{}", load::unknown_implementation(file, node, registry, "warning"));
    }
}

/// Writes the flattened graph of an accepted net in `args.format`.
pub fn graph(args: &GraphArgs, _registry: &Registry) -> Result<i32, CliError> {
    let output = Output::open(args.output.as_deref())?;
    let g = load::checked_graph(&args.file)?;
    let text = args.format.export(&g);
    output.write(&text)?;
    Ok(exit::OK)
}
