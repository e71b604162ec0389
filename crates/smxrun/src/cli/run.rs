//! `smxrun [run] FILE`: check the net, resolve its configuration, run it, print the report.
//!
//! Everything that can be wrong before the run (the report path, the config file, the net,
//! the settings) is found before any thread starts, so a long run never ends in an error that
//! could have been reported at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::args::{ReportFormat, RunArgs};
use super::exit::{self, CliError};
use super::output::Output;
use super::progress::ProgressLine;
use super::{load, say, signals, stats, words};
use smx_runtime::Registry;
use smx_runtime::Tracer;
use smx_runtime::config::ConfigLayers;
use smx_runtime::report::{self, Report, Status};
use smx_runtime::{self, PinMode, Progress, RunOptions};

pub fn run(args: &RunArgs, registry: &Registry) -> Result<i32, CliError> {
    run_observed(args, registry, Progress::new())
}

/// [`run`], its figures as the nets run kept in `progress` (a slice tells them its supervisor).
pub fn run_observed(args: &RunArgs, registry: &Registry, progress: Progress) -> Result<i32, CliError> {
    // First of all, so that a signal during the checks below still ends in a report.
    let stop = Arc::new(AtomicBool::new(false));
    let report_out = signals::install(&stop).map_err(|e| CliError::rejected(format!("cannot handle Ctrl-C: {e}")))?;
    let file = args
        .file
        .as_deref()
        .ok_or_else(|| CliError::rejected("no net file given"))?;
    let layers = config_layers(args)?;
    refuse_clobbering(args, file, &layers, &[])?;
    let output = Output::open(args.output.as_deref())?;
    let graph = load::checked_graph(file)?;
    let libraries = load::open_libraries(&load::library_paths(layers.boxes(), &args.boxes))?;
    let own_boxes = registry;
    let registry = &load::with_c_boxes(&graph, registry, &libraries)?;
    load::reject_unknown_implementations(file, &graph, registry, &libraries.names())?;
    let port_errors = load::port_errors(file, &graph, registry);
    if !port_errors.is_empty() {
        for error in &port_errors {
            crate::cli::say(error);
        }
        return Err(CliError::silent(super::exit::REJECTED));
    }
    for warning in load::port_warnings(file, &graph, registry) {
        crate::cli::say(&warning);
    }
    let settings = layers.resolve(&graph, registry)?;
    refuse_clobbering(
        args,
        file,
        &layers,
        &super::clobber::written_by_boxes(&graph, registry, &settings),
    )?;
    // Said now, before a run that may be long, and again in the report's warnings.
    #[cfg_attr(not(feature = "zmq"), allow(unused_mut))]
    let mut said_before = what_options_miss(args, &graph, registry, own_boxes);
    for line in &said_before {
        crate::cli::say(&format!("warning: {line}"));
    }
    #[cfg(feature = "zmq")]
    let placed = super::deploy::deployment(
        &layers,
        file,
        &super::deploy::with_channel_len(&graph, args.runtime.channel_len),
        &settings,
        registry,
        super::deploy::Purpose::Start,
    )?;
    #[cfg(feature = "zmq")]
    said_before.extend(placed.warnings);
    // Refused before any thread starts, at the place each value was written (the runtime
    // would check them too, but knows no file or option); over several processes they would
    // otherwise surface only once every process had started. A slice's settings are its job's,
    // checked so before the job was made: what the runtime finds there (a link's port taken
    // on its host) it says in its own words.
    let bad_values = match args.from_job {
        true => Vec::new(),
        false => load::bad_values(&graph, registry, &settings),
    };
    if !bad_values.is_empty() {
        for line in &bad_values {
            crate::cli::say(&format!("error: {line}"));
        }
        return Err(CliError::silent(super::exit::REJECTED));
    }
    #[cfg(feature = "zmq")]
    if let Some(deployment) = placed.deployment {
        super::deploy::check_pin_here(&deployment, &args.runtime.pin)?;
        let libraries = load::library_paths(layers.boxes(), &args.boxes);
        let code = super::deploy::run(args, &deployment, &libraries, &stop, output, &said_before);
        report_out.store(true, Ordering::SeqCst);
        return code;
    }
    #[cfg(feature = "zmq")]
    let main_cores = placed.main_cores;
    #[cfg(not(feature = "zmq"))]
    let main_cores: Option<Vec<usize>> = None;
    let pin = match main_cores {
        // As over several processes, a process's own cores beat `--pin`.
        Some(cores) => smx_runtime::PinMode::List(cores),
        None => load::pin_mode(&args.runtime.pin)?,
    };
    // Opened last before the run, so that a net or setting rejected above leaves no file.
    let trace_file = open_trace(args)?;
    let stats_sink = args
        .stats_every
        .map(|_| stats::Sink::open(args.stats_file.as_deref()))
        .transpose()?;
    let opts = run_options(args, pin, settings, &stop, trace_file.is_some(), progress);
    let result = run_with_progress(args, &graph, registry, &opts, stats_sink);
    if result.is_err()
        && let Some(trace) = &trace_file
        && trace.created
    {
        // Nothing ran: no empty file is left behind to be taken for a trace. A file that was
        // there before is not this run's to remove.
        let _ = std::fs::remove_file(&trace.path);
    }
    let mut report = result.map_err(|e| load::run_error(file, &e))?;
    report.warnings.splice(0..0, said_before);
    // What a box's own books say was not clean, or a peer its link refused, is a warning of the
    // report as well as a line on stderr: a script that reads the report sees why the exit code
    // is not 0, and the report of a net over processes carries each process's.
    let from_books: Vec<String> = unclean_books(&report)
        .into_iter()
        .chain(refused_peers(&report))
        .collect();
    report.warnings.extend(from_books);
    // A side output that fails, fails alone: its own line, and the report still comes.
    let side_output_failed = match (trace_file, &opts.trace) {
        (Some(trace), Some(tracer)) => !save_trace(args, trace, tracer, stop.load(Ordering::SeqCst)),
        _ => false,
    };
    if !stop.load(Ordering::SeqCst) {
        // After the net, an empty loop at each firewall period: the report's last lines say
        // whether the platform could hold the period at all.
        report::probe_periods(&mut report);
    }
    report::judge_periods(&mut report, smx_runtime::LeverWords(words::flag_words));

    let mut text = render(&report, args.report());
    if args.report() == ReportFormat::Text {
        text.insert_str(0, &words::asked(args, file, &graph));
    }
    output.write(&text)?;
    // Only now: a report whose write blocks (a pipe nobody reads) must not outlive a stop.
    report_out.store(true, Ordering::SeqCst);
    let interrupted = stop.load(Ordering::SeqCst);
    summarise_problems(&report, interrupted);
    Ok(exit_code(&report, interrupted, side_output_failed))
}

/// Writes the trace (`partial`: the run was stopped); whether it was written, else the line
/// that says why.
fn save_trace(args: &RunArgs, trace: TraceFile, tracer: &Tracer, partial: bool) -> bool {
    match write_trace(trace, tracer, &file_name(file_path_of(args)), partial) {
        Ok(()) => true,
        Err(e) => {
            say(&format!("smxrun: {e}; the report follows"));
            false
        }
    }
}

/// The options of the run the command line asked for.
fn run_options(
    args: &RunArgs,
    pin: PinMode,
    settings: Vec<smx_runtime::config::NetSettings>,
    stop: &Arc<AtomicBool>,
    tracing: bool,
    progress: Progress,
) -> RunOptions {
    RunOptions {
        pin,
        default_channel_len: args.runtime.channel_len,
        settings,
        stop: Arc::clone(stop),
        progress,
        realtime: args.runtime.rt,
        wait_spin: args.runtime.wait_spin.unwrap_or(smx_runtime::channel::DEFAULT_SPIN),
        latency: args.runtime.latency,
        chain: args.runtime.chain,
        firewall: smx_runtime::FirewallOptions {
            mode: args.runtime.tt_mode,
            ..Default::default()
        },
        trace: tracing.then(|| Tracer::new(args.trace_limit)),
        lever_words: smx_runtime::LeverWords(words::flag_words),
        shared_cores: args.shared_cores.clone(),
        ..RunOptions::default()
    }
}

/// Runs the net with the progress line (or the stats lines, which replace it on stderr).
fn run_with_progress(
    args: &RunArgs,
    graph: &smx_graph::NetGraph,
    registry: &Registry,
    opts: &RunOptions,
    stats_sink: Option<stats::Sink>,
) -> Result<Report, smx_runtime::RunError> {
    let sampler = opts.progress.clone();
    // Stats lines on stderr would be torn by the progress line, so they replace it.
    let stats_on_stderr = args.stats_every.is_some() && args.stats_file.is_none();
    let show_line = !args.quiet && !stats_on_stderr;
    let line = ProgressLine::start(show_line, move || sampler.snapshot().map(|s| (s.messages, s.elapsed)));
    let stats_lines = args
        .stats_every
        .zip(stats_sink)
        .map(|(every, sink)| stats::StatsLines::start(opts.progress.clone(), every, sink));
    let result = smx_runtime::run(graph, registry, opts);
    line.finish();
    if let Some(lines) = stats_lines {
        lines.finish();
    }
    result
}

/// The exit code of a run that made a report (see `smxrun --help`).
fn exit_code(report: &Report, interrupted: bool, side_output_failed: bool) -> i32 {
    if interrupted {
        exit::INTERRUPTED
    } else if report.failed() {
        exit::BOX_FAILED
    } else if side_output_failed {
        exit::REJECTED
    } else if !unclean_books(report).is_empty() {
        exit::BOOKS_NOT_CLEAN
    } else {
        exit::OK
    }
}

/// What an option asked for that this net will not do, or at a cost the user would not guess:
/// `-n` where no box has a `count`, or where a source does not (a C box has only the keys it
/// reads itself), and a `--channel-len` that reserves more memory than a short run could fill
/// (every slot is set up before the start).
fn what_options_miss(
    args: &RunArgs,
    graph: &smx_graph::NetGraph,
    registry: &Registry,
    own_boxes: &Registry,
) -> Vec<String> {
    let mut lines = Vec::new();
    let boxes = || graph.nodes.iter().filter(|n| n.kind == smx_graph::NodeKind::Box);
    if let Some(n) = args.iterations {
        let has_count = |func: &str| {
            registry
                .get(func)
                .is_some_and(|s| s.config.iter().any(|k| k.name == "count"))
        };
        // Only a box that no channel feeds decides how many messages there are; a box fed by
        // another ends when its feeders end, so -n reaches it through them.
        let fed: std::collections::HashSet<usize> = graph.edges.iter().map(|e| e.target).collect();
        let mut missed: Vec<&str> = boxes()
            .filter(|b| own_boxes.get(&b.func).is_none() && !has_count(&b.func) && !fed.contains(&b.id))
            .map(|b| b.label.as_str())
            .collect();
        missed.dedup();
        if !missed.is_empty() {
            lines.push(format!(
                "-n {n} does not reach the C {} {}, which no channel feeds: -n sets the `count` key of \
                 built-in and Rust boxes, and a C box has only the keys it reads itself (give them in \
                 --config under [net.NAME], or --set NAME.KEY=VALUE)",
                if missed.len() == 1 { "source" } else { "sources" },
                missed.join(", ")
            ));
        } else if !boxes().any(|b| has_count(&b.func)) {
            lines.push(format!(
                "-n {n} reaches no box of this net: none has a `count` key (`smxrun boxes NAME` lists a box's keys)"
            ));
        }
    }
    // A slice's supervisor said it once for the whole net, whose channels its slices share out.
    let supervised = signals::SUPERVISED.load(Ordering::SeqCst);
    if let Some(len) = args.runtime.channel_len.filter(|_| !supervised) {
        lines.extend(channel_memory(graph, len, args.iterations));
    }
    if !supervised {
        lines.extend(declared_memory(graph));
    }
    lines
}

/// What `--channel-len len` reserves, when that is worth a word: every slot of the channels
/// whose length the net file leaves to it is written before the start. `iterations`: `-n`.
pub(super) fn channel_memory(graph: &smx_graph::NetGraph, len: u32, iterations: Option<u64>) -> Option<String> {
    // A time-triggered channel's messages wait in its firewall's pair, not in a queue of that
    // length.
    let channels = graph
        .edges
        .iter()
        .filter(|e| !e.len_declared && e.timing != smx_graph::Timing::TimeTriggered)
        .count() as u64;
    let slot = smx_runtime::CHANNEL_SLOT_BYTES;
    let bytes = channels * u64::from(len) * slot;
    if bytes < LARGE_CHANNELS {
        return None;
    }
    let fewer = match iterations {
        Some(n) if n < u64::from(len) => format!(", more than the {n} messages of this run"),
        _ => String::new(),
    };
    Some(format!(
        "--channel-len {len} reserves {:.1} GiB for {channels} channel{} ({} bytes a message{fewer}), \
         all of it written before the start: that alone can take seconds; a channel needs \
         room only for the messages in flight (64 to 4096 is plenty)",
        bytes as f64 / (1u64 << 30) as f64,
        if channels == 1 { "" } else { "s" },
        slot
    ))
}

/// The channels whose declared length (`in data[N]`) reserves a large share of memory, one
/// line each, as [`channel_memory`] says it of `--channel-len`: a default length leaves them
/// alone, so only the net can shorten them. Where no one channel is that large but together
/// they are, one line says so, as [`channel_memory`] sums the channels it lengthens.
pub(super) fn declared_memory(graph: &smx_graph::NetGraph) -> Vec<String> {
    let slot = smx_runtime::CHANNEL_SLOT_BYTES;
    let declared: Vec<&smx_graph::Edge> = graph
        .edges
        .iter()
        .filter(|e| e.len_declared && e.timing != smx_graph::Timing::TimeTriggered)
        .collect();
    let total: u64 = declared.iter().map(|e| u64::from(e.len).saturating_mul(slot)).sum();
    let large: Vec<&&smx_graph::Edge> = declared
        .iter()
        .filter(|e| u64::from(e.len).saturating_mul(slot) >= LARGE_CHANNELS)
        .collect();
    if large.is_empty() && total >= LARGE_CHANNELS {
        return vec![format!(
            "{} channels declare lengths in the net that together reserve {:.1} GiB ({} bytes a message) \
             before the start, which a run refuses beyond the memory available; a channel needs room only \
             for the messages in flight (64 to 4096 is plenty)",
            declared.len(),
            total as f64 / (1u64 << 30) as f64,
            slot
        )];
    }
    large
        .into_iter()
        .map(|e| {
            let node = |id: usize| {
                graph
                    .nodes
                    .get(id)
                    .map_or_else(|| format!("#{id}"), |n| format!("{}#{id}", n.label))
            };
            format!(
                "channel '{}' ({} -> {}) declares a length of {} in the net: {:.1} GiB ({} bytes a message) reserved \
                 before the start, which a run refuses beyond the memory available; a channel needs room only \
                 for the messages in flight (64 to 4096 is plenty)",
                e.label,
                node(e.source),
                node(e.target),
                e.len,
                (u64::from(e.len) as f64 * slot as f64) / (1u64 << 30) as f64,
                slot
            )
        })
        .collect()
}

/// Channel memory from which `--channel-len` is worth a word (256 MiB).
const LARGE_CHANNELS: u64 = 256 << 20;

/// `--trace PATH`, created before the run so that a bad path is reported at once.
/// Writes the trace (after a stop too: it then covers the run up to the stop). A trace that
/// cannot be written is not left behind half written: a file this run created is removed, one
/// that was there is left empty.
fn write_trace(trace: TraceFile, tracer: &Tracer, net: &str, partial: bool) -> Result<(), String> {
    let TraceFile {
        path,
        mut file,
        created,
    } = trace;
    let regular = file.metadata().is_ok_and(|m| m.is_file());
    // Emptied only now that there is a trace to replace what was there.
    let written =
        if regular { file.set_len(0) } else { Ok(()) }.and_then(|()| tracer.write_chrome(net, partial, &mut file));
    written.map_err(|e| {
        if regular {
            if created {
                let _ = std::fs::remove_file(&path);
            } else {
                let _ = file.set_len(0);
            }
        }
        format!("--trace {}: cannot write the trace: {e}", path.display())
    })
}

/// The `--trace` file, opened before the run so that a path that cannot be written is an error
/// before the start.
struct TraceFile {
    path: std::path::PathBuf,
    file: std::fs::File,
    /// This run created the file (it did not exist before).
    created: bool,
}

/// Opens the `--trace` file without emptying one that exists: a run that cannot start leaves it
/// as it was.
fn open_trace(args: &RunArgs) -> Result<Option<TraceFile>, CliError> {
    let Some(path) = &args.trace else {
        return Ok(None);
    };
    let failed = |e: std::io::Error| {
        CliError::rejected(format!(
            "--trace {}: {}",
            path.display(),
            super::output::why_no_file(path, &e)
        ))
    };
    let (file, created) = match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(file) => (file, true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => (
            std::fs::OpenOptions::new().write(true).open(path).map_err(failed)?,
            false,
        ),
        Err(e) => return Err(failed(e)),
    };
    Ok(Some(TraceFile {
        path: path.clone(),
        file,
        created,
    }))
}

fn file_path_of(args: &RunArgs) -> &std::path::Path {
    args.file.as_deref().unwrap_or(std::path::Path::new("net"))
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// The nets whose own figures say their books are not clean (`verdict` `incomplete` or
/// `suspect`), each with its `problems`; one line each on stderr.
fn unclean_books(report: &Report) -> Vec<String> {
    use smx_box::StatValue;
    let text = |stats: &smx_box::Stats, key| match stats.get(key) {
        Some(StatValue::Text(t)) => t.clone(),
        _ => String::new(),
    };
    report
        .nets
        .iter()
        .filter(|n| matches!(text(&n.stats, "verdict").as_str(), "incomplete" | "suspect"))
        .map(|n| {
            format!(
                "{}#{} ({}): books {}: {}",
                n.name,
                n.id,
                n.implementation,
                text(&n.stats, "verdict"),
                text(&n.stats, "problems")
            )
        })
        .collect()
}

/// The nets with clean books whose link refused a peer at the handshake (a run with the wrong
/// keys, or a stranger): nothing of it reached the books, so it leaves the exit alone, but the
/// knock is said; one line each on stderr.
fn refused_peers(report: &Report) -> Vec<String> {
    use smx_box::StatValue;
    report
        .nets
        .iter()
        .filter(|n| matches!(n.stats.get("verdict"), Some(StatValue::Text(v)) if v == "ok" || v == "lossy"))
        .filter(|n| matches!(n.stats.get("refused_handshakes"), Some(StatValue::U64(k)) if *k > 0))
        .map(|n| {
            let problems = match n.stats.get("problems") {
                Some(StatValue::Text(t)) => t.as_str(),
                _ => "",
            };
            format!("{}#{} ({}): {problems}", n.name, n.id, n.implementation)
        })
        .collect()
}

/// Refuses a result of the run onto an input (the net, its configuration, a library of boxes)
/// or onto another result: the command line's (`-o`, `--trace`, `--stats-file`), and the files
/// its boxes write (`by_boxes`, known once the settings are resolved).
fn refuse_clobbering(
    args: &RunArgs,
    file: &std::path::Path,
    layers: &ConfigLayers,
    by_boxes: &[(String, std::path::PathBuf)],
) -> Result<(), CliError> {
    let outputs: Vec<(&str, &std::path::Path)> = [
        ("-o", &args.output),
        ("--trace", &args.trace),
        ("--stats-file", &args.stats_file),
    ]
    .into_iter()
    .filter_map(|(what, path)| Some((what, path.as_deref()?)))
    .chain(by_boxes.iter().map(|(what, path)| (what.as_str(), path.as_path())))
    .collect();
    let inputs = super::clobber::inputs(file, args.config.as_deref(), args.boxes.iter().chain(layers.boxes()));
    super::clobber::refuse_clobbering(&outputs, &inputs)?;
    if let Some(path) = &args.trace {
        super::clobber::refuse_replacing_other_than_trace(path)?;
    }
    if let Some(path) = &args.stats_file {
        super::clobber::refuse_replacing_other_than_stats(path)?;
    }
    match &args.output {
        Some(path) => super::clobber::refuse_replacing_other_than_report(path),
        None => Ok(()),
    }
}

/// The run's configuration layers: `--config`, then every `--set` in order, then `-n`.
fn config_layers(args: &RunArgs) -> Result<ConfigLayers, CliError> {
    let mut layers = match &args.config {
        Some(path) => ConfigLayers::from_file(path)?,
        None => ConfigLayers::new(),
    };
    for set in &args.sets {
        layers.add_set(set)?;
    }
    if let Some(n) = args.iterations {
        layers.set_iterations(n);
    }
    Ok(layers)
}

fn render(report: &Report, format: ReportFormat) -> String {
    match format {
        ReportFormat::Text => report::text::render_with(report, smx_runtime::LeverWords(words::flag_words)),
        ReportFormat::Json => report::json::render(report),
        ReportFormat::Smx => report::smxlog::render(report),
    }
}

/// One line on stderr per failed net, and a note when the run was interrupted, so that the
/// exit code is explained even when the report went to a file.
fn summarise_problems(report: &Report, interrupted: bool) {
    for net in report
        .nets
        .iter()
        .filter(|n| matches!(n.status, Status::Failed | Status::Stuck))
    {
        crate::cli::say(&format!(
            "error: net '{}' (id {}, {}) {}: {}",
            net.name,
            net.id,
            net.implementation,
            net.status.as_str(),
            net.error.as_deref().unwrap_or("no reason given")
        ));
    }
    for line in unclean_books(report) {
        crate::cli::say(&format!("warning: {line}"));
    }
    for line in refused_peers(report) {
        crate::cli::say(&format!("warning: {line}"));
    }
    if interrupted && !signals::SUPERVISED.load(Ordering::SeqCst) {
        crate::cli::say("smxrun: interrupted; the report covers the run up to the stop");
    }
}
