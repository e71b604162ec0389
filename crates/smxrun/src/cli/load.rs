//! Reading and compiling a net file, with its diagnostics on stderr.

use std::path::{Path, PathBuf};

use super::args::Pin;
use super::exit::{self, CliError};
use smx_cbox::BoxLibraries;
use smx_graph::{self, NetGraph, Node, NodeKind};
use smx_lang::compose::{self, CompileOptions, Compiled};
use smx_lang::diag::{Diagnostic, Severity, SourceFile, Span};
use smx_lang::syntax::ast;
use smx_lang::teach::PeriodPlace;
use smx_runtime::{PinMode, Registry};

/// Reads and compiles `path`, printing every diagnostic to stderr in our format
/// (`FILE:LINE:COL: error: ...`, the line, a caret). A file that cannot be read is an error
/// naming it.
pub fn compile_file(path: &Path) -> Result<Compiled, CliError> {
    let bytes = read_capped(path)?;
    let source = SourceFile::new(path.display().to_string(), String::from_utf8_lossy(&bytes).into_owned());
    let mut compiled = compose::compile(&source, &CompileOptions::default());
    // Shown with the rule behind common mistakes (the verdict and the error lines stay).
    compiled.diagnostics = smx_lang::teach::explain(&source, std::mem::take(&mut compiled.diagnostics));
    let mut err = std::io::stderr().lock();
    use std::io::Write;
    for diag in compiled.diagnostics.iter().take(MAX_DIAGNOSTICS) {
        let _ = err.write_all(source.render(diag).as_bytes());
    }
    let rest = &compiled.diagnostics[compiled.diagnostics.len().min(MAX_DIAGNOSTICS)..];
    if !rest.is_empty() {
        let errors = rest.iter().filter(|d| d.severity == Severity::Error).count();
        let _ = writeln!(
            err,
            "note: ... and {} more ({errors} errors, {} warnings) not shown; the first {MAX_DIAGNOSTICS} are above",
            rest.len(),
            rest.len() - errors
        );
    }
    Ok(compiled)
}

/// Diagnostics printed for one file; the rest are counted (as rustc and gcc do), so that a
/// file with thousands of mistakes does not bury the first under megabytes.
pub const MAX_DIAGNOSTICS: usize = 100;

/// The largest net file read (16 MiB; a 50,000-box net is about 1 MB).
pub const MAX_SOURCE_BYTES: u64 = 16 << 20;

/// The bytes of `path`, refused when there are more than [`MAX_SOURCE_BYTES`] (read up to one
/// past the limit, so a FIFO or a device cannot make it read for ever either).
pub fn read_capped(path: &Path) -> Result<Vec<u8>, CliError> {
    use std::io::Read;
    let cannot = |e: std::io::Error| CliError::rejected(format!("cannot read '{}': {e}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_SOURCE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_SOURCE_BYTES {
        return Err(CliError::rejected(format!(
            "cannot read '{}': larger than the limit of {MAX_SOURCE_BYTES} bytes (16 MiB) for a net file",
            path.display()
        )));
    }
    Ok(bytes)
}

/// Whether `path` names a JSON graph (by its extension, as every command decides).
pub fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// The graph of an accepted net; a rejected one (its diagnostics already shown) is exit 1.
/// A `.json` file is read as a graph as `smxrun graph --format json` writes it, so that nets
/// produced by other tools run too.
pub fn checked_graph(path: &Path) -> Result<NetGraph, CliError> {
    if is_json(path) {
        let bytes = read_capped(path)?;
        let text = String::from_utf8(bytes)
            .map_err(|e| CliError::rejected(format!("cannot read '{}': not UTF-8 ({e})", path.display())))?;
        return smx_graph::json::from_json(&text).map_err(|e| CliError::rejected(format!("{}: {e}", path.display())));
    }
    let compiled = compile_file(path)?;
    if !compiled.accepted() {
        return Err(CliError::silent(exit::REJECTED));
    }
    unrunnable(path, &compiled.graph)?;
    Ok(compiled.graph)
}

/// The problems that make an accepted net impossible to run ([`smx_graph::check`]: a feedback
/// loop no message can enter, a period no timer can wait), one error line each; exit 1.
pub fn unrunnable(path: &Path, graph: &NetGraph) -> Result<(), CliError> {
    let problems = smx_graph::check::problems(graph);
    if problems.is_empty() {
        return Ok(());
    }
    if let Some(shown) = placed_problems(path, graph, &problems, "error", "") {
        for line in shown {
            crate::cli::say(&line);
        }
        return Err(CliError::silent(exit::REJECTED));
    }
    let lines: Vec<String> = problems.iter().map(|p| format!("{}: {p}", path.display())).collect();
    Err(CliError::rejected(lines.join("\nerror: ")))
}

/// The graph check's `problems` of a net file, those about a period at the `tt`, `tb` or `tf`
/// that gives it (`FILE:LINE:COL: SEVERITY: ...`, the line, a caret), the others as
/// `FILE: SEVERITY: ...`, each message followed by `after`; `None` when no problem has such a
/// place (or the file is JSON).
pub fn placed_problems(
    path: &Path,
    graph: &NetGraph,
    problems: &[String],
    severity: &str,
    after: &str,
) -> Option<Vec<String>> {
    if is_json(path) {
        return None;
    }
    let source = SourceFile::read(path).ok()?;
    let places = smx_lang::teach::period_places(&source);
    let mut placed = false;
    let shown = problems
        .iter()
        .map(|p| {
            match period_diagnostic(graph, p, &places, severity, after)
                .or_else(|| loop_diagnostic(graph, p, &source, severity, after))
            {
                Some(diag) => {
                    placed = true;
                    source.render(&diag).trim_end().to_string()
                }
                None => format!("{}: {severity}: {p}{after}", path.display()),
            }
        })
        .collect();
    placed.then_some(shown)
}

/// `problem` said at the operator that gave its period, with the way to write one; `None` when
/// it is not about a period or no one operator can have given it.
fn period_diagnostic(
    graph: &NetGraph,
    problem: &str,
    (zero, long): &(Vec<PeriodPlace>, Vec<PeriodPlace>),
    severity: &str,
    after: &str,
) -> Option<Diagnostic> {
    let (places, hint) = if problem.ends_with(": time-triggered, but without a period") {
        (zero, "a period is written between the brackets, e.g. tt[10ms]")
    } else if problem.contains("is longer than a timer can wait") {
        (long, "a period is at most 18446744073s709551615ns")
    } else {
        return None;
    };
    let span = Some(period_place(graph, problem, places)?);
    let message = format!("{problem}{after}");
    let diag = if severity == "error" {
        Diagnostic::error(message, span)
    } else {
        Diagnostic::warning(message, span)
    };
    Some(diag.with_note(format!(" -> {hint}")))
}

/// `problem`, a feedback loop no message can enter (`A#0, B#1 can never run: ...`), said at
/// the first of its boxes where the net instantiates it, with the way to let a message in;
/// `None` when it is no such loop or that box has no place in the file.
fn loop_diagnostic(
    graph: &NetGraph,
    problem: &str,
    source: &SourceFile,
    severity: &str,
    after: &str,
) -> Option<Diagnostic> {
    let (names, _) = problem.split_once(" can never run: ")?;
    let first = names.split(", ").next()?;
    let id: usize = first.rsplit_once('#')?.1.parse().ok()?;
    let node = graph.nodes.get(id).filter(|n| n.line > 0)?;
    let start = source.line_start(node.line)?;
    let text = source.line_text(node.line);
    let word = |at: usize| {
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        let before = text[..at].chars().next_back().is_none_or(|c| !ident(c));
        let after = text[at + node.label.len()..].chars().next().is_none_or(|c| !ident(c));
        before && after
    };
    // The box's name on its line, else the line's first word.
    let at = text
        .match_indices(node.label.as_str())
        .map(|(at, _)| at)
        .find(|&at| word(at))
        .map_or_else(
            || Span::new(start + (text.len() - text.trim_start().len()), start + text.len()),
            |at| Span::new(start + at, start + at + node.label.len()),
        );
    let message = format!("{problem}{after}");
    let diag = if severity == "error" {
        Diagnostic::error(message, Some(at))
    } else {
        Diagnostic::warning(message, Some(at))
    };
    Some(diag.with_note(loop_note(graph)))
}

/// How a message can enter the loops that never run. A loop fed from outside is held by a box
/// that waits for its outside input and the loop's both: a `decoupled in` on the loop's input
/// lets it fire on the outside one. A loop fed by nothing needs a feed, unless one of its boxes
/// makes messages of its own (a controller), which a `decoupled in` then lets fire: a box that
/// only passes messages on would then spin with nothing to pass.
fn loop_note(graph: &NetGraph) -> &'static str {
    let stuck = smx_graph::check::never_firing(graph);
    let fed = graph
        .edges
        .iter()
        .any(|e| stuck.binary_search(&e.target).is_ok() && stuck.binary_search(&e.source).is_err());
    if fed {
        " -> a box of the loop also waits for the loop's own message: declare the input that closes the loop \
         `decoupled in`, so that the box fires on its input from outside"
    } else {
        " -> a message must enter the loop: feed one of its boxes from outside it (declaring the input that closes \
         the loop `decoupled in` lets its box fire without a message, which helps only a box that makes messages \
         of its own, such as a controller)"
    }
}

/// The one operator among `places` that can have given the period of `problem`'s channel
/// (`channel 'x' (A#0 -> B#1): ...`): it times the channel's producer or consumer and, for a
/// period that is too long, writes that period. Problems come in channel order, places in
/// source order, so only their content pairs them; `None` unless exactly one place fits, since
/// a caret at the wrong operator misleads more than none.
fn period_place(graph: &NetGraph, problem: &str, places: &[PeriodPlace]) -> Option<Span> {
    let (channel, _) = problem.split_once("): ")?;
    let (_, ends) = channel.rsplit_once(" (")?;
    let (from, to) = ends.split_once(" -> ")?;
    let node = |end: &str| -> Option<&Node> {
        let id: usize = end.rsplit_once('#')?.1.parse().ok()?;
        // A routing node or wrapper end is timed by operators whose names do not include it.
        graph.nodes.get(id).filter(|n| n.kind == NodeKind::Box)
    };
    let (from, to) = (node(from)?, node(to)?);
    let mut fits = places.iter().filter(|place| {
        (place.covers(&from.label) || place.covers(&to.label))
            && (problem.ends_with("without a period")
                || problem.contains(&format!("period of {} s and {} ns ", place.time.secs, place.time.nanos)))
    });
    let first = fits.next()?;
    fits.all(|other| other.at == first.at).then_some(first.at)
}

/// A net the runtime refused, as `FILE:LINE: message` where the error is about one box.
pub fn run_error(path: &Path, e: &smx_runtime::RunError) -> CliError {
    match e.line() {
        Some(line) if is_json(path) => CliError::rejected(format!("{}: {e} (line {line} of its net)", path.display())),
        Some(line) => CliError::rejected(format!("{}:{line}: {e}", path.display())),
        None => CliError::rejected(e.to_string()),
    }
}

/// `2 errors, 1 warning` for the summary of `smxrun check`.
pub fn counts(compiled: &Compiled) -> String {
    counts_with(compiled, 0)
}

/// [`counts`] with `more_errors` found after the front end (unknown implementations).
pub fn counts_with(compiled: &Compiled, more_errors: usize) -> String {
    tally(compiled, more_errors, 0)
}

/// [`counts`] with `more_warnings` found after the front end.
pub fn counts_with_warnings(compiled: &Compiled, more_warnings: usize) -> String {
    tally(compiled, 0, more_warnings)
}

/// Errors (with those that follow from one and are not shown) and warnings of the front end,
/// and those found after it.
fn tally(compiled: &Compiled, more_errors: usize, more_warnings: usize) -> String {
    let errors = more_errors + compiled.diagnostics.iter().map(Diagnostic::errors).sum::<usize>();
    let warnings = more_warnings
        + compiled
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .count();
    format!("{}, {}", plural(errors, "error"), plural(warnings, "warning"))
}

/// `1 error`, `2 errors`, `1 box`, `2 boxes`.
pub fn plural(n: usize, what: &str) -> String {
    let ending = match (n, what.ends_with('x')) {
        (1, _) => "",
        (_, true) => "es",
        (_, false) => "s",
    };
    format!("{n} {what}{ending}")
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

/// `FILE:LINE:COL: error: box 'A' uses unknown implementation 'x' (known boxes: ...)` with the
/// declaration's line and a caret under the implementation name, and the libraries that were
/// searched for it (`libs`, empty when none). A graph read from JSON has no text to point at:
/// then the node's line alone.
/// The way to bring a box of one's own is not repeated here: [`own_boxes_hint`] says it once
/// after all of them.
pub fn unknown_implementation(file: &Path, node: &Node, registry: &Registry, severity: &str, libs: &str) -> String {
    let names = registry.names();
    let hint = match (closest_implementation(registry, &node.func), libs.is_empty()) {
        (Some(name), _) => format!("; did you mean '{name}'?"),
        (None, true) => String::new(),
        (None, false) => format!("; no symbol '{}' in {libs}", node.func),
    };
    let message = format!(
        "box '{}' uses unknown implementation '{}' (known boxes: {}){hint}",
        node.label,
        node.func,
        names.join(", ")
    );
    if is_json(file) {
        // A node's line is one of the net the graph was drawn from, not of the JSON file.
        return format!(
            "{}: {severity}: {message} (line {} of its net)",
            file.display(),
            node.line
        );
    }
    let source = SourceFile::read(file).ok();
    let span = source
        .as_ref()
        .and_then(|s| implementation_span(s, &node.label, &node.func));
    match (source, span) {
        (Some(source), Some(span)) => {
            let diag = if severity == "error" {
                Diagnostic::error(message, Some(span))
            } else {
                Diagnostic::warning(message, Some(span))
            };
            source.render(&diag).trim_end().to_string()
        }
        _ => format!("{}:{}: {severity}: {message}", file.display(), node.line),
    }
}

/// The known implementation that `func` most likely misspells.
pub fn closest_implementation(registry: &Registry, func: &str) -> Option<&'static str> {
    registry
        .names()
        .into_iter()
        .map(|name| (strsim::levenshtein(name, func), name))
        .filter(|(distance, _)| *distance <= 2)
        .min()
        .map(|(_, name)| name)
}

/// One line, after the errors of every unknown implementation, for those that are no
/// misspelling of a known one: boxes of the user's own, which may simply not exist yet. It says
/// where such a box comes from and how to check the net before it does; once, because the way
/// is the same for every box.
pub fn own_boxes_hint(file: &Path, unknown: &[&Node], registry: &Registry) -> Option<String> {
    unknown
        .iter()
        .any(|node| closest_implementation(registry, &node.func).is_none())
        .then(|| {
            format!(
                "hint: a box of your own comes from its C library (--boxes PATH, or `boxes` in --config) \
                 or a program of your own (docs/guide/rust-boxes.md); before its boxes exist, \
                 `smxrun check --lang-only {}` checks the net's language alone",
                file.display()
            )
        })
}

/// Where `label = box func(...)` names its implementation, in any scope of the program.
fn implementation_span(source: &SourceFile, label: &str, func: &str) -> Option<Span> {
    fn find(program: &ast::Program, label: &str, func: &str) -> Option<Span> {
        program.decls.iter().find_map(|decl| match decl {
            ast::Decl::Box(b) if b.implementation.name == func && b.name.name == label => Some(b.implementation.span),
            ast::Decl::Wrapper(w) => find(&w.body, label, func),
            _ => None,
        })
    }
    find(smx_lang::syntax::parse(source).program.as_ref()?, label, func)
}

/// Every implementation of `graph` that `registry` does not know, as errors on stderr; exit 1
/// when there is one. `check`, `graph` and `run` all ask here, so they give one verdict.
pub fn reject_unknown_implementations(
    file: &Path,
    graph: &NetGraph,
    registry: &Registry,
    libs: &str,
) -> Result<usize, CliError> {
    let unknown = unknown_implementations(graph, registry);
    for node in &unknown {
        crate::cli::say(&unknown_implementation(file, node, registry, "error", libs));
    }
    // With libraries given, each box's error already names the one that lacks its symbol.
    if let Some(hint) = own_boxes_hint(file, &unknown, registry).filter(|_| libs.is_empty()) {
        crate::cli::say(&hint);
    }
    if unknown.is_empty() {
        Ok(0)
    } else {
        Err(CliError::silent(exit::REJECTED))
    }
}

/// One warning line for every implementation of `graph` that `registry` does not know, or
/// `None` when it knows them all: a net may be checked, drawn and given headers before its
/// boxes are written.
pub fn unknown_implementations_warning(file: &Path, graph: &NetGraph, registry: &Registry) -> Option<String> {
    let unknown = unknown_implementations(graph, registry);
    if unknown.is_empty() {
        return None;
    }
    let names: Vec<String> = unknown.iter().map(|n| format!("'{}'", n.func)).collect();
    let (these, are) = if unknown.len() == 1 {
        ("implementation", "is")
    } else {
        ("implementations", "are")
    };
    Some(format!(
        "{}: warning: box {these} {} {are} not known to smxrun yet; a run needs them (C boxes: \
         --boxes LIB.so, whose headers `smxrun headers` writes; Rust boxes: a program of your own)",
        file.display(),
        names.join(", ")
    ))
}

/// An `smx_` implementation that is not built in is a misspelt built-in box, not a box of the
/// user's yet to be written: an error at its declaration with the closest name; exit 1.
pub fn reject_misspelt_builtins(file: &Path, graph: &NetGraph, registry: &Registry) -> Result<(), CliError> {
    let misspelt: Vec<&Node> = unknown_implementations(graph, registry)
        .into_iter()
        .filter(|n| n.func.starts_with("smx_"))
        .collect();
    for node in &misspelt {
        crate::cli::say(&unknown_implementation(file, node, registry, "error", ""));
    }
    if misspelt.is_empty() {
        Ok(())
    } else {
        Err(CliError::silent(exit::REJECTED))
    }
}

/// A port that a known implementation lacks or requires, as `FILE:LINE:COL: error: ...` at the
/// box's declaration with its line and a caret under the port list (where the fix goes), not at
/// the line that connects it.
pub fn port_error(file: &Path, e: &smx_runtime::RunError) -> String {
    use smx_runtime::RunError;
    let instance = match e {
        RunError::MissingPort { instance, .. } | RunError::BadPort { instance, .. } => instance,
        _ => return format!("error: {}", run_error(file, e).message),
    };
    at_declaration(file, instance, Diagnostic::error(e.to_string(), None))
        .unwrap_or_else(|| format!("error: {}", run_error(file, e).message))
}

/// Every port problem a run would refuse, one rendered error per box ([`port_error`]); empty
/// when the ports are right.
pub fn port_errors(file: &Path, graph: &NetGraph, registry: &Registry) -> Vec<String> {
    smx_runtime::port_problems(graph, registry)
        .iter()
        .map(|e| port_error(file, e))
        .collect()
}

/// A warning for each port the net declares that its box's implementation does not have
/// ([`smx_runtime::unimplemented_ports`]), at the box's declaration.
pub fn port_warnings(file: &Path, graph: &NetGraph, registry: &Registry) -> Vec<String> {
    smx_runtime::unimplemented_ports(graph, registry)
        .into_iter()
        .map(|port| {
            let closest = port
                .implemented
                .iter()
                .map(|name| (strsim::levenshtein(name, &port.port), *name))
                .filter(|(distance, _)| *distance <= 2)
                .min();
            let message = match closest {
                Some((_, name)) => format!("{} (did you mean '{name}'?)", port.message),
                None => port.message.clone(),
            };
            at_declaration(file, &port.instance, Diagnostic::warning(message.clone(), None))
                .unwrap_or_else(|| format!("{}: warning: {message}", file.display()))
        })
        .collect()
}

/// `diagnostic` rendered at the declaration of `instance` in the net's text, if the net is text
/// and declares it.
fn at_declaration(file: &Path, instance: &str, diagnostic: Diagnostic) -> Option<String> {
    let source = (!is_json(file)).then(|| SourceFile::read(file).ok()).flatten()?;
    let span = declaration_span(&source, instance)?;
    let diagnostic = Diagnostic {
        span: Some(span),
        ..diagnostic
    };
    Some(source.render(&diagnostic).trim_end().to_string())
}

/// The declaration `label = box func( ... )`, in any scope of the program.
fn declaration_span(source: &SourceFile, label: &str) -> Option<Span> {
    fn find(program: &ast::Program, label: &str) -> Option<Span> {
        program.decls.iter().find_map(|decl| match decl {
            ast::Decl::Box(b) if b.name.name == label => Some(b.span),
            ast::Decl::Wrapper(w) => find(&w.body, label),
            _ => None,
        })
    }
    find(smx_lang::syntax::parse(source).program.as_ref()?, label)
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

/// The values each box's own checks refuse (`Src#0: size ... is larger than ...`), every
/// failing box named, so that one bad value does not hide another. A run refuses them before
/// its start, and so does `check`.
pub fn bad_values(
    graph: &smx_graph::NetGraph,
    registry: &smx_runtime::Registry,
    settings: &[smx_runtime::config::NetSettings],
) -> Vec<String> {
    graph
        .nodes
        .iter()
        .zip(settings)
        .filter_map(|(node, set)| {
            let spec = registry
                .get(&node.func)
                .filter(|_| node.kind == smx_graph::NodeKind::Box)?;
            let e = spec.check(&set.box_config).err()?;
            // At the place of the key the message names, as any other bad value is told; the
            // box's own words alone where it names none a layer set.
            let named = set.box_origins.iter().find(|(key, _)| {
                e.0.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|w| w == key.as_str())
            });
            Some(match named {
                Some((key, origin)) => {
                    let at = smx_runtime::config::ConfigError::new(origin.clone(), e.to_string());
                    CliError::from(at.net(&node.label).key(key)).message
                }
                None => format!("{}#{}: {e}", node.label, node.id),
            })
        })
        .collect()
}

/// `--pin` for the runtime; listed cores must be ones this process may run on.
pub fn pin_mode(pin: &Pin) -> Result<PinMode, CliError> {
    Ok(match pin {
        Pin::Auto => PinMode::Auto,
        Pin::Off => PinMode::Off,
        Pin::Cores(cores) => {
            let allowed = smx_timing::sched::allowed_cores();
            if let Some(bad) = cores.iter().find(|c| !allowed.contains(c)) {
                let list: Vec<String> = allowed.iter().map(usize::to_string).collect();
                return Err(CliError::rejected(format!(
                    "--pin: core {bad} is not available to this process (available: {})",
                    list.join(",")
                )));
            }
            PinMode::List(cores.clone())
        }
    })
}
