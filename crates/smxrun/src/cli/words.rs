//! How the text report words the command line: the opening line that says what was asked, and
//! the flags that would change a decision the runtime took. Both the run of one process and
//! the run over several processes open their reports this way.

use super::args::RunArgs;
use super::load;

/// The text report's first line: what was asked of this run, so that the tables below read
/// against it (`Asked: nets/src_snk.smx, 4 boxes, 2 channels, -n 20000`).
pub fn asked(args: &RunArgs, file: &std::path::Path, graph: &smx_graph::NetGraph) -> String {
    let boxes = graph
        .nodes
        .iter()
        .filter(|n| n.kind == smx_graph::NodeKind::Box)
        .count();
    let mut line = format!(
        "Asked: {}, {}, {}",
        file.display(),
        load::plural(boxes, "box"),
        load::plural(graph.edges.len(), "channel"),
    );
    line.push_str(&options(args.iterations, &args.sets, args.config.as_deref()));
    line.push_str("\n\n");
    line
}

/// The net and the options of the `Asked:` line, as `smxrun split` keeps them for the merge of
/// its slices' reports: `net.smx, -n 1000, --config deploy.toml`.
pub fn asked_options(
    file: &std::path::Path,
    iterations: Option<u64>,
    sets: &[String],
    config: Option<&std::path::Path>,
) -> String {
    format!("{}{}", file.display(), options(iterations, sets, config))
}

fn options(iterations: Option<u64>, sets: &[String], config: Option<&std::path::Path>) -> String {
    let mut line = String::new();
    if let Some(n) = iterations {
        line.push_str(&format!(", -n {n}"));
    }
    for set in sets {
        line.push_str(&format!(", --set {set}"));
    }
    if let Some(config) = config {
        line.push_str(&format!(", --config {}", config.display()));
    }
    line
}

/// How the report's notes name the settings that would change a decision: by this command
/// line's flags.
pub fn flag_words(lever: smx_runtime::Lever) -> &'static str {
    use smx_runtime::Lever;
    match lever {
        Lever::ChainOff => "--chain off",
        Lever::TtThreads => "--tt-mode threads",
        Lever::TtCyclic => "--tt-mode cyclic",
        Lever::RealtimeOn => "--rt on",
        Lever::CoreList => "--pin 0,1,...",
        Lever::TraceLimit => "--trace-limit",
        Lever::Trace => "--trace",
        Lever::ChannelLen => "--channel-len",
        Lever::ProbePeriod => "smxrun probe --period",
    }
}
