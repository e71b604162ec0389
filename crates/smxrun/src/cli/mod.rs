//! `smxrun`: the command line, a thin layer over the library.
//!
//! Each command parses its arguments ([`args`]), calls the library (front end, configuration,
//! runtime, exporters) and turns the outcome into output and an exit code ([`exit`]). Nothing
//! here knows how a net is checked or run; what is here is what only a command line needs:
//! where output goes ([`output`]), Ctrl-C ([`signals`]), the progress line ([`progress`]).

pub mod args;
pub mod boxes;
pub mod check;
pub mod clobber;
#[cfg(feature = "zmq")]
pub mod deploy;
pub mod exit;
mod foreign_exit;
pub mod headers;
pub mod keygen;
pub mod load;
pub mod memory;
pub mod output;
pub mod probe;
pub mod progress;
pub mod run;
pub mod signals;
pub mod stats;
#[cfg(feature = "trace-view")]
pub mod trace_view;
pub mod words;

use clap::{ArgMatches, CommandFactory, FromArgMatches};

use args::{Cli, Command};
use exit::CliError;
use smx_runtime::Registry;

/// A command that a binary adds to smxrun's own: its clap definition (whose name is the
/// command's) and the function that runs it from the parsed arguments and returns the exit code.
/// The `smxrun` binary adds `bench` this way, so the command line knows no benchmark.
pub struct ExtraCommand {
    command: clap::Command,
    run: fn(&ArgMatches) -> i32,
}

impl ExtraCommand {
    pub fn new(command: clap::Command, run: fn(&ArgMatches) -> i32) -> ExtraCommand {
        ExtraCommand { command, run }
    }
}

/// Runs `smxrun` with `args` (the first is the program name), the boxes of `registry` and the
/// commands of `extras` after its own; returns the exit code.
pub fn main_with<I, T>(args: I, registry: Registry, extras: &[ExtraCommand]) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    memory::share_one_arena();
    init_logging();
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let command = extras.iter().fold(Cli::command(), |command, extra| {
        command.subcommand(extra.command.clone())
    });
    let parsed = command
        .clone()
        .try_get_matches_from(&args)
        .and_then(|matches| parse(matches, extras));
    if let Some(message) = args::misread(&args, &command, parsed.as_ref().err()) {
        say(&format!("error: {message}"));
        return exit::REJECTED;
    }
    let exit_guard = foreign_exit::Guard::arm();
    let outcome = match parsed {
        Ok(Parsed::Own(cli)) => guarded(|| dispatch(*cli, &registry)),
        Ok(Parsed::Extra(extra, matches)) => guarded(|| Ok((extra.run)(&matches))),
        Err(e) => {
            let _ = e.print();
            // --help and --version are not errors; every usage error exits with 1.
            return if e.use_stderr() { exit::REJECTED } else { exit::OK };
        }
    };
    drop(exit_guard);
    match outcome {
        Ok(code) => code,
        Err(e) => {
            if !e.message.is_empty() {
                say(&format!("error: {}", e.message));
            }
            e.code
        }
    }
}

/// A parsed command line: one of smxrun's own commands, or an extra one with its arguments.
enum Parsed<'a> {
    Own(Box<Cli>),
    Extra(&'a ExtraCommand, ArgMatches),
}

fn parse(mut matches: ArgMatches, extras: &[ExtraCommand]) -> Result<Parsed<'_>, clap::Error> {
    if let Some((name, sub)) = matches.subcommand()
        && let Some(extra) = extras.iter().find(|e| e.command.get_name() == name)
    {
        return Ok(Parsed::Extra(extra, sub.clone()));
    }
    Cli::from_arg_matches_mut(&mut matches)
        .map(|cli| Parsed::Own(Box::new(cli)))
        .map_err(|e| e.format(&mut Cli::command()))
}

fn dispatch(cli: Cli, registry: &Registry) -> Result<i32, CliError> {
    match cli.command {
        None => run::run(&cli.run, registry),
        Some(Command::Run(a)) => run::run(&a, registry),
        Some(Command::Check(a)) => check::check(&a, registry),
        Some(Command::Graph(a)) => check::graph(&a, registry),
        Some(Command::Boxes(a)) => {
            let libraries = load::open_libraries(&a.boxes)?;
            let text = boxes::describe_with(registry, &libraries, a.name.as_deref())?;
            output::Output::open(None)?.write(&text)?;
            Ok(exit::OK)
        }
        Some(Command::Headers(a)) => headers::headers(&a, registry),
        Some(Command::Probe(a)) => probe::probe(&a),
        Some(Command::Keygen(a)) => keygen::keygen(&a),
        #[cfg(feature = "trace-view")]
        Some(Command::TraceView(a)) => trace_view::trace_view(&a),
        #[cfg(feature = "zmq")]
        Some(Command::Split(a)) => deploy::split(&a, registry),
        #[cfg(feature = "zmq")]
        Some(Command::Report(a)) => deploy::report(&a, registry),
        #[cfg(feature = "zmq")]
        Some(Command::Slice(a)) => deploy::run_slice(&a, registry, run::run_observed),
    }
}

/// Runs a command; a `print!` onto a closed stdout or stderr (which panics in the standard
/// library: `smxrun bench ... | head -1`) ends it quietly with exit 1 instead of a panic
/// message and 101. Every other panic goes on as before.
fn guarded(command: impl FnOnce() -> Result<i32, CliError>) -> Result<i32, CliError> {
    fn is_print_failure(text: &str) -> bool {
        text.starts_with("failed printing to std")
    }
    fn text(payload: &(dyn std::any::Any + Send)) -> &str {
        payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("")
    }
    let previous = std::sync::Arc::new(std::panic::take_hook());
    let hook = previous.clone();
    std::panic::set_hook(Box::new(move |info| {
        if !is_print_failure(text(info.payload())) {
            hook(info);
        }
    }));
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(command)) {
        Ok(result) => result,
        Err(payload) if is_print_failure(text(payload.as_ref())) => Err(CliError::silent(exit::REJECTED)),
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// Writes `line` and a newline to stderr. A closed or full stderr is ignored: a message that
/// cannot be shown must not turn into a panic (`smxrun check bad.smx 2>&1 | head -c1`).
pub fn say(line: &str) {
    use std::io::Write;
    let line = escape_controls(line);
    let line = spoken(&line);
    let mut err = std::io::stderr().lock();
    let _ = err
        .write_all(speaker().as_bytes())
        .and_then(|()| err.write_all(line.as_bytes()))
        .and_then(|()| err.write_all(b"\n"));
}

/// How a slice of a split net speaks, once its supervisor started it.
struct Speaker {
    /// `NAME: `, the process's name.
    prefix: String,
    /// A line with the slice's nodes named as in the whole net.
    rename: Box<dyn Fn(&str) -> String + Send + Sync>,
}

static SPEAKER: std::sync::OnceLock<Speaker> = std::sync::OnceLock::new();

/// From now on this process's lines on stderr ([`say`] and the log) begin with `NAME: `, as
/// the merged report's lines of a process do (the slices of a net over several processes
/// share the supervisor's terminal), and name nodes through `rename` as the whole net does:
/// a slice's own ids (`Snk#0`) are not those of the report and of `--set` (`Snk#3`).
pub fn speak_as(process: &str, rename: impl Fn(&str) -> String + Send + Sync + 'static) {
    let _ = SPEAKER.set(Speaker {
        prefix: format!("{}: ", escape_controls(process)),
        rename: Box::new(rename),
    });
}

fn speaker() -> &'static str {
    SPEAKER.get().map_or("", |s| s.prefix.as_str())
}

fn spoken(line: &str) -> std::borrow::Cow<'_, str> {
    match SPEAKER.get() {
        Some(speaker) => std::borrow::Cow::Owned((speaker.rename)(line)),
        None => std::borrow::Cow::Borrowed(line),
    }
}

/// `text` with every control character but line breaks and tabs escaped (`\u{1b}`): a value a
/// line echoes (a file name, a setting, what a peer sent) cannot move the cursor, clear the
/// screen or set the terminal's title.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let keep = |c: char| !c.is_control() || c == '\n' || c == '\t';
    if text.chars().all(keep) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| {
                if keep(c) {
                    c.to_string()
                } else {
                    c.escape_default().to_string()
                }
            })
            .collect(),
    )
}

/// `RUST_LOG` controls logging (default: warnings and errors), on stderr, never per message.
/// Each line is escaped as [`say`]'s are: a log line may echo what a peer sent.
fn init_logging() {
    use std::io::Write;
    let env = env_logger::Env::default().default_filter_or("warn");
    let _ = env_logger::Builder::from_env(env)
        .format(|buf, record| {
            let line = log_line(record.level(), record.target(), &record.args().to_string());
            writeln!(buf, "{}{}", speaker(), spoken(&line))
        })
        .try_init();
}

/// One log line as `[LEVEL target] message`, its control characters escaped.
fn log_line(level: impl std::fmt::Display, target: &str, message: &str) -> String {
    escape_controls(&format!("[{level:<5} {target}] {message}")).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_shows_what_a_peer_sent_escaped() {
        let line = log_line("WARN", "smx_zmq::sink", "topic \u{1b}]0;owned\u{7} from a peer");
        assert_eq!(line, "[WARN  smx_zmq::sink] topic \\u{1b}]0;owned\\u{7} from a peer");
        assert!(!line.chars().any(char::is_control), "{line:?}");
    }
}
