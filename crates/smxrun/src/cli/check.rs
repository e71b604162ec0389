//! `smxrun check FILE` and `smxrun graph FILE`: the front end alone, no thread started.

use super::args::{CheckArgs, GraphArgs};
use super::exit::{self, CliError};
use super::load;
use super::output::Output;
use std::path::Path;

use smx_graph::{NetGraph, NodeKind};
use smx_runtime::Registry;
use smx_runtime::config::ConfigLayers;

/// Exit 0 when the net is accepted (warnings allowed), 1 when rejected. Diagnostics go to
/// stderr; an accepted net gets a one-line summary on stdout. With `--boxes` (or a `--config`
/// naming libraries) the C boxes are resolved too, and with `--config` its settings are applied
/// to the net: a library, symbol or setting that a run would reject is exit 1 here already.
/// The layers of `--config` and `--set`, if either is given.
fn config_layers(args: &CheckArgs) -> Result<Option<ConfigLayers>, CliError> {
    let mut layers = match &args.config {
        Some(path) => Some(ConfigLayers::from_file(path)?),
        None if !args.sets.is_empty() => Some(ConfigLayers::new()),
        None => None,
    };
    if let Some(layers) = layers.as_mut() {
        for set in &args.sets {
            layers.add_set(set)?;
        }
    }
    Ok(layers)
}

/// Says `error` and the verdict, as for every other mistake `check` finds: the exit code of a
/// rejected net.
fn rejected(file: &Path, error: &CliError, counts: &str) -> i32 {
    crate::cli::say(&format!("error: {error}"));
    crate::cli::say(&format!("{}: rejected ({counts})", file.display()));
    exit::REJECTED
}

pub fn check(args: &CheckArgs, registry: &Registry) -> Result<i32, CliError> {
    if args.lang_only {
        return check_language(&args.file, registry);
    }
    let file = args.file.as_path();
    // A JSON graph (`smxrun graph --format json`) is checked from its graph on, as a run
    // takes it; a .smx net from its source text. The net first, so that every verdict counts
    // its warnings too.
    let (graph, compiled) = if load::is_json(file) {
        (load::checked_graph(file)?, None)
    } else {
        let compiled = load::compile_file(file)?;
        if !compiled.accepted() {
            crate::cli::say(&format!("{}: rejected ({})", file.display(), load::counts(&compiled)));
            return Ok(exit::REJECTED);
        }
        (compiled.graph.clone(), Some(compiled))
    };
    // What `--channel-len` would reserve, said as a run says it before its start, and what the
    // net's own declared lengths reserve.
    let memory: Vec<String> = args
        .channel_len
        .and_then(|len| super::run::channel_memory(&graph, len, None))
        .into_iter()
        .chain(super::run::declared_memory(&graph))
        .collect();
    for line in &memory {
        crate::cli::say(&format!("warning: {line}"));
    }
    // The verdict's tally: the net file's own, with what the checks after it found.
    let tally = |more_errors: usize, more_warnings: usize| {
        let (errors, warnings) = compiled.as_ref().map_or((0, 0), |c| {
            let errors = c
                .diagnostics
                .iter()
                .map(smx_lang::diag::Diagnostic::errors)
                .sum::<usize>();
            let warnings = c.diagnostics.iter().filter(|d| !d.is_error()).count();
            (errors, warnings)
        });
        format!(
            "{}, {}",
            load::plural(errors + more_errors, "error"),
            load::plural(warnings + more_warnings + memory.iter().len(), "warning")
        )
    };
    let counts = |more_errors: usize| tally(more_errors, 0);
    let with_warnings = |more_warnings: usize| tally(0, more_warnings);
    let layers = match config_layers(args) {
        Ok(layers) => layers,
        Err(e) => return Ok(rejected(file, &e, &counts(1))),
    };
    let from_config = layers.as_ref().map_or(&[][..], |l| l.boxes());
    let libraries = load::open_libraries(&load::library_paths(from_config, &args.boxes))?;
    let registry = &load::with_c_boxes(&graph, registry, &libraries)?;
    if load::reject_unknown_implementations(file, &graph, registry, &libraries.names()).is_err() {
        let unknown = load::unknown_implementations(&graph, registry).len();
        crate::cli::say(&format!("{}: rejected ({})", file.display(), counts(unknown)));
        return Ok(exit::REJECTED);
    }
    if let Err(e) = load::unrunnable(file, &graph) {
        if !e.message.is_empty() {
            crate::cli::say(&format!("error: {e}"));
        }
        let problems = smx_graph::check::problems(&graph).len();
        crate::cli::say(&format!("{}: rejected ({})", file.display(), counts(problems)));
        return Ok(exit::REJECTED);
    }
    // The ports a run would refuse (a port the implementation requires, a channel at a port
    // it does not have) are refused here too.
    let port_errors = load::port_errors(file, &graph, registry);
    if !port_errors.is_empty() {
        for error in &port_errors {
            crate::cli::say(error);
        }
        crate::cli::say(&format!("{}: rejected ({})", file.display(), counts(port_errors.len())));
        return Ok(exit::REJECTED);
    }
    let port_warnings = load::port_warnings(file, &graph, registry);
    for warning in &port_warnings {
        crate::cli::say(warning);
    }
    // What a time-triggered net loses by its shape is known before it runs.
    let by_shape = smx_runtime::losses_by_shape(&graph, registry);
    for line in &by_shape {
        crate::cli::say(&format!("warning: {line}"));
    }
    let with_warnings = |more_warnings: usize| with_warnings(more_warnings + by_shape.len() + port_warnings.len());
    if let Some(layers) = &layers {
        // The values a run would refuse before its start (the boxes' own checks) are refused
        // here too, so that check and run give one verdict.
        // Every failing box is named, so that one bad value (or a port taken for the moment)
        // does not hide another.
        let settings = match layers.resolve(&graph, registry) {
            Ok(settings) => settings,
            Err(e) => return Ok(rejected(file, &e.into(), &counts(1))),
        };
        let bad_values = load::bad_values(&graph, registry, &settings);
        for line in &bad_values {
            crate::cli::say(&format!("error: {line}"));
        }
        let bad = bad_values.len();
        if bad > 0 {
            let boxes = if bad == 1 { "box" } else { "boxes" };
            crate::cli::say(&format!(
                "{}: rejected ({}: {bad} {boxes} with bad values)",
                file.display(),
                counts(bad)
            ));
            return Ok(exit::REJECTED);
        }
        // A file a box would write onto the net or its configuration, as a run refuses it.
        let written = super::clobber::written_by_boxes(&graph, registry, &settings);
        let outputs: Vec<(&str, &Path)> = written
            .iter()
            .map(|(what, path)| (what.as_str(), path.as_path()))
            .collect();
        let inputs = super::clobber::inputs(file, args.config.as_deref(), args.boxes.iter().chain(layers.boxes()));
        if let Err(e) = super::clobber::refuse_clobbering(&outputs, &inputs) {
            return Ok(rejected(file, &e, &counts(1)));
        }
        // Placement: unknown processes, hosts that cannot be reached, channels a cut cannot carry.
        #[cfg(feature = "zmq")]
        {
            let sized = super::deploy::with_channel_len(&graph, args.channel_len);
            let purpose = super::deploy::Purpose::Start;
            match super::deploy::deployment(layers, file, &sized, &settings, registry, purpose) {
                Err(e) => {
                    crate::cli::say(&format!("error: {}", e.message));
                    crate::cli::say(&format!("{}: rejected ({})", file.display(), counts(1)));
                    return Ok(exit::REJECTED);
                }
                Ok(placed) => {
                    accepted(file, &graph, &with_warnings(placed.warnings.len()), "")?;
                    if let Some(deployment) = placed.deployment {
                        Output::open(None)?.write(&placement_lines(&deployment))?;
                    }
                    return Ok(exit::OK);
                }
            }
        }
    }
    accepted(file, &graph, &with_warnings(0), "")
}

/// Where an accepted net over several processes runs: each process with its nets, and each cut
/// channel with the link that carries it, as the run will make them.
#[cfg(feature = "zmq")]
fn placement_lines(deployment: &smx_deploy::Deployment) -> String {
    let graph = &deployment.graph;
    let node = |id: usize| format!("{}#{id}", graph.nodes[id].label);
    let mut out = String::new();
    for slice in &deployment.split.slices {
        let process = deployment.processes.get(&slice.process);
        let host = process.and_then(|p| p.host.as_deref()).unwrap_or("this machine");
        let via = process
            .and_then(|p| p.launch.as_deref())
            .map(|l| format!(", started by `{l}`"))
            .unwrap_or_default();
        let nets: Vec<String> = slice
            .origins
            .iter()
            .filter_map(|o| match o {
                smx_deploy::slice::Origin::Node(id) => Some(node(*id)),
                _ => None,
            })
            .collect();
        out.push_str(&format!(
            "  process {} ({host}{via}): {}\n",
            slice.process,
            nets.join(", ")
        ));
    }
    for link in &deployment.split.links {
        let edge = &graph.edges[link.edge];
        out.push_str(&format!(
            "  link {}.{} -> {}.{}: {} {} -> {}{}\n",
            node(edge.source),
            edge.source_port,
            node(edge.target),
            edge.target_port,
            link.transport.as_str(),
            link.from_process,
            link.to_process,
            if link.curve { ", curve" } else { "" },
        ));
    }
    out
}

/// `FILE: accepted: 3 boxes, ...` on stdout; exit 0.
fn accepted(file: &Path, g: &NetGraph, counts: &str, scope: &str) -> Result<i32, CliError> {
    let boxes = g.nodes.iter().filter(|n| n.kind == NodeKind::Box).count();
    let routing = g.nodes.len() - boxes;
    Output::open(None)?.write(&format!(
        "{}: accepted{scope}: {}, {}, {} ({counts})\n",
        file.display(),
        load::plural(boxes, "box"),
        load::plural(routing, "routing node"),
        load::plural(g.edges.len(), "channel"),
    ))?;
    Ok(exit::OK)
}

/// `check --lang-only`: the verdict of the language alone, as the original compiler gives it.
/// Implementations that smxrun does not know are fine here (the net is designed before its
/// boxes); what would stop a run of an accepted net is said as warnings.
fn check_language(file: &Path, registry: &Registry) -> Result<i32, CliError> {
    if load::is_json(file) {
        let graph = load::checked_graph(file)?;
        return accepted(file, &graph, &load::plural(0, "error"), " (language only)");
    }
    let compiled = load::compile_file(file)?;
    if !compiled.accepted() {
        crate::cli::say(&format!("{}: rejected ({})", file.display(), load::counts(&compiled)));
        return Ok(exit::REJECTED);
    }
    let graph = &compiled.graph;
    let mut warnings = 0;
    for line in refused_by_a_run(file, graph) {
        crate::cli::say(&line);
        warnings += 1;
    }
    if let Some(line) = load::unknown_implementations_warning(file, graph, registry) {
        crate::cli::say(&line);
        warnings += 1;
    }
    let errors = load::counts(&compiled);
    let counts = if warnings == 0 {
        errors
    } else {
        load::counts_with_warnings(&compiled, warnings)
    };
    accepted(file, graph, &counts, " (language only)")
}

/// What a run would refuse in an accepted net, one warning each. A period's problem is said at
/// the `tt` that gives it, as the full check says it, since the fix goes there and a long net
/// has many operators to search.
fn refused_by_a_run(file: &Path, graph: &NetGraph) -> Vec<String> {
    const AFTER: &str = " (a run would refuse this net)";
    let problems = smx_graph::check::problems(graph);
    load::placed_problems(file, graph, &problems, "warning", AFTER).unwrap_or_else(|| {
        problems
            .iter()
            .map(|p| format!("{}: warning: {p}{AFTER}", file.display()))
            .collect()
    })
}

/// Writes the flattened graph of an accepted net in `args.format`, placed over its processes
/// with `--config` or `--set`.
pub fn graph(args: &GraphArgs, registry: &Registry) -> Result<i32, CliError> {
    // A placement is a drawing: --config alone asks for dot.
    let placing = args.config.is_some() || !args.sets.is_empty();
    let (format, asked) = graph_format(args, placing)?;
    if placing && !matches!(format, smx_graph::Format::Dot) {
        return Err(CliError::rejected(format!(
            "{asked}: writes the net as its file gives it, without settings or processes; --config and \
             --set are read only to draw where its nets run (--format dot): leave them out, or draw with dot"
        )));
    }
    let mut layers = match &args.config {
        Some(path) => ConfigLayers::from_file(path)?,
        None => ConfigLayers::new(),
    };
    for set in &args.sets {
        layers.add_set(set)?;
    }
    if let Some(output) = &args.output {
        let inputs = super::clobber::inputs(
            &args.file,
            args.config.as_deref(),
            args.boxes.iter().chain(layers.boxes()),
        );
        super::clobber::refuse_clobbering(&[("-o", output)], &inputs)?;
        super::clobber::refuse_replacing_other_than_graph(output)?;
    }
    let output = Output::open(args.output.as_deref())?;
    let g = load::checked_graph(&args.file)?;
    let libraries = load::open_libraries(&load::library_paths(layers.boxes(), &args.boxes))?;
    let registry = &load::with_c_boxes(&g, registry, &libraries)?;
    // A net is drawn before its boxes exist: an implementation nobody provides yet is one
    // warning. A misspelt built-in box, or a port a known implementation lacks, is refused as
    // `check` refuses it.
    load::reject_misspelt_builtins(&args.file, &g, registry)?;
    let port_errors = load::port_errors(&args.file, &g, registry);
    if !port_errors.is_empty() {
        for error in &port_errors {
            crate::cli::say(error);
        }
        return Err(CliError::silent(exit::REJECTED));
    }
    if let Some(line) = load::unknown_implementations_warning(&args.file, &g, registry) {
        crate::cli::say(&line);
    }
    let text = if placing {
        smx_graph::dot::to_dot_placed(&g, placed(&args.file, &g, &layers, registry)?.as_ref())
    } else {
        format.export(&g)
    };
    output.write(&text)?;
    Ok(exit::OK)
}

/// What the extension of an output file says it holds.
enum Named {
    Graph(smx_graph::Format),
    /// A picture, which only Graphviz draws.
    Picture,
}

fn named(path: &Path) -> Option<Named> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    match extension.as_str() {
        "svg" | "png" | "pdf" | "jpg" | "jpeg" | "ps" | "eps" => Some(Named::Picture),
        other => other.parse().ok().map(Named::Graph),
    }
}

/// The format `graph` writes and the words that asked for it (`--format dot`, `-o 'net.dot'
/// names dot`):
/// `--format`; else the one the -o file's extension names, since a file named `.dot` that
/// holds GML fails in the program it was named for; else dot for a placement, gml otherwise. An
/// explicit `--format` is obeyed against the extension (it may be meant, and a script that
/// says it should get it), with a warning; a picture's extension without `--format` is refused,
/// because no format of a graph is one.
fn graph_format(args: &GraphArgs, placing: bool) -> Result<(smx_graph::Format, String), CliError> {
    let output = args.output.as_deref().filter(|path| *path != Path::new("-"));
    let by_name = output.and_then(|path| Some((path, named(path)?)));
    match (args.format, by_name) {
        (Some(format), Some((path, name))) => {
            if !matches!(name, Named::Graph(f) if f == format) {
                crate::cli::say(&format!(
                    "warning: -o '{}': writing {}, as --format asks, into a file whose name says otherwise",
                    path.display(),
                    format.name()
                ));
            }
            Ok((format, format!("--format {}", format.name())))
        }
        (Some(format), None) => Ok((format, format!("--format {}", format.name()))),
        (None, Some((path, Named::Graph(format)))) => {
            Ok((format, format!("-o '{}' names {}", path.display(), format.name())))
        }
        (None, Some((path, Named::Picture))) => {
            let dot = path.with_extension("dot");
            let kind = path
                .extension()
                .unwrap_or_default()
                .to_string_lossy()
                .to_ascii_lowercase();
            Err(CliError::rejected(format!(
                "-o '{}': graph writes a graph (gml, graphml, dot or json), not a picture: write '{}' and \
                 draw it with `dot -T{kind} '{}' -o '{}'`",
                path.display(),
                dot.display(),
                dot.display(),
                path.display()
            )))
        }
        (None, None) if placing => Ok((smx_graph::Format::Dot, "--format dot".into())),
        (None, None) => Ok((smx_graph::Format::Gml, "--format gml".into())),
    }
}

/// Where the configuration places the nets of `g`, for a drawing; `None` when every net runs
/// in this one process.
#[cfg(feature = "zmq")]
fn placed(
    file: &Path,
    g: &NetGraph,
    layers: &ConfigLayers,
    registry: &Registry,
) -> Result<Option<smx_graph::dot::Placed>, CliError> {
    // A net is placed and drawn before its boxes exist too: an implementation not written yet
    // takes any key here (its values are checked once it exists, by `check` and the run).
    let mut registry = registry.clone();
    for node in load::unknown_implementations(g, &registry) {
        let name: &'static str = Box::leak(node.func.clone().into_boxed_str());
        registry.register(
            smx_box::BoxSpec::named(name)
                .ports_from_net()
                .open_config()
                .factory(|_| Err(smx_box::BoxError("not written yet".into()))),
        );
    }
    let registry = &registry;
    let settings = layers.resolve(g, registry)?;
    let placed = super::deploy::deployment(layers, file, g, &settings, registry, super::deploy::Purpose::Drawing)?;
    Ok(placed.deployment.map(|d| super::deploy::placed(&d)))
}

#[cfg(not(feature = "zmq"))]
fn placed(_: &Path, _: &NetGraph, _: &ConfigLayers, _: &Registry) -> Result<Option<smx_graph::dot::Placed>, CliError> {
    Err(CliError::rejected(
        "this smxrun was built without the `zmq` feature, which places nets over processes",
    ))
}
