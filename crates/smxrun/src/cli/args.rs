//! The command line, declared with clap's derive API.
//!
//! `smxrun FILE [OPTIONS]` is short for `smxrun run FILE [OPTIONS]`: running a net is what
//! users do most, and the original's users typed just the program and a file. A file that is
//! named like a command (`check`) is run with `smxrun run check`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use super::exit;
use smx_graph::Format;

#[derive(Debug, Parser)]
#[command(
    name = "smxrun",
    version,
    about = "Check, inspect and run Streamix nets",
    long_about = "Check, inspect and run Streamix nets.\n\n\
                  `smxrun FILE` runs the net in FILE (the same as `smxrun run FILE`): one thread per box, \
                  joined by bounded channels, then prints a report of loop counts, rates and channel counts.",
    after_help = exit::HELP,
    arg_required_else_help = true,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a net and print its report (the default command)
    #[command(after_help = exit::HELP)]
    Run(RunArgs),
    /// Check a net: diagnostics on stderr; exit 0 when accepted (warnings allowed), 1 when rejected
    ///
    /// Checks the language, the box implementations (built in, --boxes, your own program's), their
    /// ports and, with --config, the settings. With --lang-only, the language alone, as the
    /// original compiler judges it: a net can be checked before its boxes are written.
    Check(CheckArgs),
    /// Print the flattened net graph
    Graph(GraphArgs),
    /// List the box implementations, or show one's ports and configuration keys
    Boxes(BoxesArgs),
    /// Write the port headers (NAME_sig.h, NAME.h) of the C boxes a net declares
    Headers(HeadersArgs),
    /// Draw a --trace file as a timeline (SVG), one row per thread
    #[cfg(feature = "trace-view")]
    TraceView(super::trace_view::TraceViewArgs),
    /// Make a CURVE key pair for the ZeroMQ boxes' curve_* keys (printed, or written with -o DIR)
    Keygen(super::keygen::KeygenArgs),
    /// Measure the platform's timer floor: an empty periodic loop's misses and lateness
    Probe(super::probe::ProbeArgs),
    /// Write each process's slice of a net placed over several processes, and how to start it
    #[cfg(feature = "zmq")]
    Split(SplitArgs),
    /// Work with reports: `report merge` makes one report of the slices' reports of a split net
    #[cfg(feature = "zmq")]
    Report(ReportArgs),
    /// Run one slice of a net placed over several processes (started by smxrun itself)
    #[cfg(feature = "zmq")]
    #[command(name = "__slice", hide = true)]
    Slice(SliceArgs),
}

impl RunArgs {
    /// The report's format: `--report`, or JSON with `--json`.
    pub fn report(&self) -> ReportFormat {
        if self.json { ReportFormat::Json } else { self.report }
    }
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The net to run: a .smx file, or a .json graph from `smxrun graph --format json`
    #[arg(required = true, value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// Cores the run shares with other processes: a slice's job says so, no option does.
    #[arg(skip)]
    pub shared_cores: Option<smx_runtime::SharedCores>,

    /// The run is a slice's, its settings a job's: the user's were checked where they were
    /// written, before the job was made, and the job's own (its links') name no place of theirs.
    #[arg(skip)]
    pub from_job: bool,

    #[command(flatten)]
    pub runtime: RuntimeArgs,

    /// TOML configuration: [default], [impl.NAME] and [net.INSTANCE] tables; [process.NAME] places nets in processes
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Set a key of an instance or implementation, e.g. --set Src.count=1000 (repeatable; beats --config)
    #[arg(long = "set", value_name = "TARGET.KEY=VALUE")]
    pub sets: Vec<String>,

    /// Set `count` of every box that has one (the sources' iterations; 0: until stopped with Ctrl-C)
    #[arg(short = 'n', long, value_name = "N", allow_hyphen_values = true, value_parser = count)]
    pub iterations: Option<u64>,

    /// Load C box implementations from this shared library (repeatable; also `boxes = [...]` at
    /// the top of the --config file)
    #[arg(long = "boxes", value_name = "LIB.so")]
    pub boxes: Vec<PathBuf>,

    /// Report format: a text table, JSON, or the original runtime's log lines
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    report: ReportFormat,

    /// The report as JSON: --report json
    #[arg(long = "json", id = "json_report", conflicts_with = "report")]
    json: bool,

    /// Write the report to PATH instead of stdout (checked before the run starts)
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: Option<PathBuf>,

    /// No progress line
    #[arg(short, long)]
    pub quiet: bool,

    /// Write a timeline of the run to PATH in the Chrome trace event format (open it in
    /// Perfetto or chrome://tracing): box steps, channel waits, firewall ticks and misses
    #[arg(long, value_name = "PATH")]
    pub trace: Option<PathBuf>,

    /// Events kept per thread in the --trace file (the latest; older ones are counted as dropped)
    #[arg(long, value_name = "N", default_value_t = smx_runtime::DEFAULT_TRACE_LIMIT,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000_000))]
    pub trace_limit: usize,

    /// Every DURATION (e.g. 1s), one JSON line of live figures on stderr (or --stats-file):
    /// loop rate per net, rate and fill per channel, misses per firewall
    #[arg(long, value_name = "DURATION", value_parser = super::stats::parse_every)]
    pub stats_every: Option<std::time::Duration>,

    /// Write the --stats-every lines to PATH instead of stderr
    #[arg(long, value_name = "PATH", requires = "stats_every")]
    pub stats_file: Option<PathBuf>,
}

/// How the runtime runs the threads of a net: the options a run and each slice of a split
/// net take alike.
#[derive(Debug, Clone, Args)]
pub struct RuntimeArgs {
    /// Thread placement: auto (decided from the net and the machine: a cyclic executive alone on
    /// a spare core, chains kept on one core when threads outnumber cores and channels are long,
    /// spread otherwise; the report's "How it ran" says what was decided), off, or a list of cores to
    /// spread over (0,1,...)
    #[arg(long, value_name = "auto|off|0,1,...", default_value = "auto", value_parser = parse_pin)]
    pub pin: Pin,

    /// Real-time scheduling of rt/tt nets and firewalls (SCHED_FIFO): auto uses it only for
    /// threads that have a core of their own (every thread when they all fit, else a cyclic
    /// executive that placement put alone on a core; a busy real-time thread starves the others
    /// on its core), on forces it, off never uses it. Under auto, an executive alone on its core
    /// whose period is too short to sleep in spins through it at normal priority instead (the
    /// kernel throttles a real-time thread that never sleeps). An explicit per-net `priority`
    /// always applies.
    #[arg(long, value_name = "auto|on|off", default_value = "auto")]
    pub rt: smx_runtime::Realtime,

    /// Where time-triggered boxes run: threads (each box on its own thread, woken by the
    /// firewall), cyclic (the boxes of one period run inside that period's firewall thread,
    /// once per tick, in declaration order: fewer wake-ups, closer to the timer's floor), or
    /// auto: cyclic when the threads of the threads mode would outnumber the cores
    #[arg(long, value_name = "auto|threads|cyclic", default_value = "auto")]
    pub tt_mode: smx_runtime::TtMode,

    /// Operator chaining: auto runs a box that only its feeder feeds (and that never waits inside
    /// its step) on its feeder's thread when the box threads outnumber the cores and the channels
    /// between them are shorter than 256, so a hand-over
    /// is a call instead of a wake-up (the report's "How it ran" says what was chained); off keeps a
    /// thread per box. Never under --trace
    #[arg(long, value_name = "auto|off", default_value = "auto")]
    pub chain: smx_runtime::ChainMode,

    /// Length of every channel whose length the net does not declare (default 1)
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = channel_length)]
    pub channel_len: Option<u32>,

    /// How long a box waiting on a channel spins before it sleeps, e.g. 50us (the default), 0 to
    /// sleep at once: spinning keeps a hand-over off the scheduler's slow wake-up path
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = smx_box::parse_duration)]
    pub wait_spin: Option<std::time::Duration>,

    /// Latency figures of the report: sampled (every 64th write of each channel, the default),
    /// full (every message), off, or a number N (every Nth write)
    #[arg(long, value_name = "sampled|full|off|N", default_value = "sampled")]
    pub latency: smx_runtime::latency::LatencyMode,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// The net to check (a .smx file)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Also check this TOML configuration against the net (and load its `boxes`)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Also check this setting, as a run takes it, e.g. --set Snk.process=b (repeatable; beats --config)
    #[arg(long = "set", value_name = "TARGET.KEY=VALUE")]
    pub sets: Vec<String>,

    /// Resolve C box implementations in this shared library (repeatable)
    #[arg(long = "boxes", value_name = "LIB.so")]
    pub boxes: Vec<PathBuf>,

    /// Judge the language alone, as the original compiler does: the net may name box
    /// implementations that do not exist yet (design the net before its boxes); their ports and
    /// configuration are not checked
    #[arg(long, conflicts_with_all = ["config", "boxes", "sets", "channel_len"])]
    pub lang_only: bool,

    /// Check as a run with --channel-len N would run: the length of each channel the net file
    /// leaves open, links between processes too, and the memory they reserve
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = channel_length)]
    pub channel_len: Option<u32>,
}

#[derive(Debug, Clone, Args)]
pub struct GraphArgs {
    /// The net (a .smx file)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Output format: gml (the original compiler's), graphml, dot (Graphviz) or json (the
    /// runtime's input) [default: the one the -o file's extension names (.gml, .graphml,
    /// .dot or .gv, .json); else gml, or dot with --config or --set]. Given with an -o whose
    /// extension names another, it is obeyed, with a warning
    #[arg(long, value_name = "gml|graphml|dot|json", value_parser = str::parse::<Format>)]
    pub format: Option<Format>,

    /// Write to PATH instead of stdout; its extension chooses the format when --format is not
    /// given (a picture's, .svg or .png, is refused: draw the .dot with Graphviz)
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: Option<PathBuf>,

    /// Resolve C box implementations in this shared library (repeatable)
    #[arg(long = "boxes", value_name = "LIB.so")]
    pub boxes: Vec<PathBuf>,

    /// Place the net as this TOML configuration does and draw each process as a frame around
    /// its nets, each channel between two processes as its link (dot only)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// A setting of the placement, as a run takes it, e.g. --set Snk.process=b (repeatable;
    /// beats --config)
    #[arg(long = "set", value_name = "TARGET.KEY=VALUE")]
    pub sets: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct BoxesArgs {
    /// Show this implementation's ports and configuration keys
    #[arg(value_name = "NAME")]
    pub name: Option<String>,

    /// Also list the C box implementations this shared library provides (repeatable)
    #[arg(long = "boxes", value_name = "LIB.so")]
    pub boxes: Vec<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct HeadersArgs {
    /// The net (a .smx file): one header pair per box implementation it declares that is not built in
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The directory to write NAME_sig.h and NAME.h to (created if missing)
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,

    /// Only NAME_sig.h (for box sources that bring their own NAME.h)
    #[arg(long)]
    pub sig_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Aligned tables of nets and channels, then totals
    Text,
    /// A stable JSON object (see docs/guide/json-report.md)
    Json,
    /// The original runtime's `terminate net` and `end main thread` log lines
    Smx,
}

/// `--pin`: how threads are placed on cores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pin {
    Auto,
    Off,
    Cores(Vec<usize>),
}

fn parse_pin(text: &str) -> Result<Pin, String> {
    match text {
        "auto" => Ok(Pin::Auto),
        "off" => Ok(Pin::Off),
        list => list
            .split(',')
            .map(|c| {
                c.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("'{c}' is not a core number; write auto, off or a list like 0,1"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Pin::Cores),
    }
}

/// `-n`: a negative or fractional count is named as such (a bare `-1` would otherwise be taken
/// for an option). Digits may be grouped with `_` (`1_000_000`), as in a `count` of --set and
/// the configuration file.
fn count(text: &str) -> Result<u64, String> {
    let digits = text.replace('_', "");
    digits.parse().map_err(|e: std::num::ParseIntError| {
        if *e.kind() == std::num::IntErrorKind::PosOverflow {
            format!("'{text}' is too large: a count is at most {}", u64::MAX)
        } else {
            format!("'{text}' is not a count: write a non-negative integer (0, 1, 2, ..., or 1_000_000)")
        }
    })
}

/// `--channel-len`: at least 1, as a channel declared in a net.
fn channel_length(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(len) if len >= 1 => Ok(len),
        _ => Err(format!(
            "'{text}' is not a channel length: write an integer from 1 to 4294967295"
        )),
    }
}

/// What a command line whose first word is not a command meant, where clap's own reading says
/// nothing useful: since `smxrun FILE` is `smxrun run FILE`, a mistyped command is taken for a
/// net file (`smxrun chekc net.smx`), and a command after the file for a second net. `clap` is
/// the parse's error, if it failed; `command` the command line with every command it has.
/// `None` where the first word is a command, an option or a net file that the parse took as
/// one.
pub fn misread(args: &[std::ffi::OsString], command: &clap::Command, clap: Option<&clap::Error>) -> Option<String> {
    let first = args.get(1)?.to_str()?;
    let commands: Vec<String> = command
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect();
    if first.starts_with('-') || first == "help" || commands.iter().any(|c| c == first) {
        return None;
    }
    let is_file = std::path::Path::new(first).exists();
    let conflict = clap.filter(|e| e.kind() == clap::error::ErrorKind::ArgumentConflict);
    if conflict.is_some()
        && let Some(at) = command_after_file(args, command, &commands)
    {
        let mut words: Vec<String> = args[1..].iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let name = words.remove(at - 1);
        let sub = command.find_subcommand(&name)?;
        // Options of a run that the command lacks would only be refused again.
        let options_fit = words
            .iter()
            .filter(|w| w.starts_with('-'))
            .all(|w| option_of(sub, w).is_some());
        let rest = if options_fit {
            words.join(" ")
        } else {
            first.to_string()
        };
        return Some(format!(
            "'{name}' is a command, and the command comes before the file: smxrun {name} {rest}"
        ));
    }
    if is_file {
        let stray = conflict
            .and_then(|e| e.get(clap::error::ContextKind::InvalidSubcommand))
            .map(ToString::to_string)?;
        return Some(format!(
            "'{first}' is the net to run, and '{stray}' after it is neither an option nor a command: \
             a run takes one net file"
        ));
    }
    match smx_runtime::config::nearest(first, &commands) {
        Some(near) => Some(format!(
            "'{first}' is neither a net file nor a command; did you mean '{near}'?"
        )),
        None => conflict.map(|_| {
            format!(
                "'{first}' is neither a net file nor a command (commands: {})",
                commands.join(", ")
            )
        }),
    }
}

/// The index in `args` of the first command named after the file, skipping the values of the
/// options before it (`-o graph` writes to a file named `graph`).
fn command_after_file(args: &[std::ffi::OsString], command: &clap::Command, commands: &[String]) -> Option<usize> {
    let mut i = 2;
    while let Some(word) = args.get(i).and_then(|a| a.to_str()) {
        if commands.iter().any(|c| c == word) {
            return Some(i);
        }
        let takes_value = !word.contains('=')
            && option_of(command, word).is_some_and(|a| a.get_action().takes_values())
            && (word.starts_with("--") || word.len() == 2);
        i += if takes_value { 2 } else { 1 };
    }
    None
}

/// The option of `command` that `word` (`--name`, `--name=value`, `-x`, `-xVALUE`) gives.
fn option_of<'c>(command: &'c clap::Command, word: &str) -> Option<&'c clap::Arg> {
    if let Some(long) = word.strip_prefix("--") {
        let long = long.split_once('=').map_or(long, |(name, _)| name);
        return command
            .get_arguments()
            .find(|a| a.get_long() == Some(long) || a.get_all_aliases().is_some_and(|all| all.contains(&long)));
    }
    let short = word.strip_prefix('-')?.chars().next()?;
    command
        .get_arguments()
        .find(|a| a.get_short() == Some(short) || a.get_all_short_aliases().is_some_and(|all| all.contains(&short)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// What [`misread`] says of `args` after `smxrun`, with the parse's error as `main_with`
    /// has it.
    fn misread_of(args: &[&str]) -> Option<String> {
        let args: Vec<std::ffi::OsString> = std::iter::once("smxrun")
            .chain(args.iter().copied())
            .map(Into::into)
            .collect();
        let error = Cli::command().try_get_matches_from(&args).err();
        misread(&args, &Cli::command(), error.as_ref())
    }

    #[test]
    fn a_mistyped_command_is_named_with_the_command_it_is_close_to() {
        let net = tempfile::NamedTempFile::new().unwrap();
        let net = net.path().to_str().unwrap();
        assert_eq!(
            misread_of(&["chekc", net]).as_deref(),
            Some("'chekc' is neither a net file nor a command; did you mean 'check'?")
        );
        assert_eq!(
            misread_of(&["grahp", net, "--format", "dot"]).as_deref(),
            Some("'grahp' is neither a net file nor a command; did you mean 'graph'?")
        );
        assert_eq!(
            misread_of(&["chekc"]).as_deref(),
            Some("'chekc' is neither a net file nor a command; did you mean 'check'?"),
            "a lone mistyped command is no file to run either"
        );
        let far = misread_of(&["verify", net]).unwrap();
        assert!(
            far.starts_with("'verify' is neither a net file nor a command (commands: run, check, graph"),
            "{far}"
        );
        assert_eq!(
            misread_of(&["missing.smx"]),
            None,
            "a missing net is said when it is read"
        );
        assert_eq!(misread_of(&["check", net]), None);
        assert_eq!(misread_of(&[net, "-n", "3"]), None);
    }

    #[test]
    fn a_command_after_the_file_is_said_to_come_before_it() {
        let net = tempfile::NamedTempFile::new().unwrap();
        let net = net.path().to_str().unwrap();
        assert_eq!(
            misread_of(&[net, "check"]),
            Some(format!(
                "'check' is a command, and the command comes before the file: smxrun check {net}"
            ))
        );
        // A word that is an option's value is no command.
        let value = misread_of(&[net, "-o", "graph", "extra.smx"]).unwrap_or_default();
        assert!(!value.contains("smxrun graph"), "{value}");
        // Options the command lacks are left out of the command line it is told to write.
        assert_eq!(
            misread_of(&[net, "-n", "5", "graph"]),
            Some(format!(
                "'graph' is a command, and the command comes before the file: smxrun graph {net}"
            ))
        );
        assert_eq!(
            misread_of(&[net, "--channel-len", "4", "check"]),
            Some(format!(
                "'check' is a command, and the command comes before the file: smxrun check {net} --channel-len 4"
            ))
        );
        let two = misread_of(&[net, "other.smx"]).unwrap();
        assert!(
            two.ends_with("'other.smx' after it is neither an option nor a command: a run takes one net file"),
            "{two}"
        );
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("smxrun").chain(args.iter().copied()))
    }

    #[test]
    fn the_declaration_is_consistent() {
        Cli::command().debug_assert();
    }

    /// One spelling of a JSON report works for a run and a merge alike: `--json`, and the
    /// run's `--report json` for a merge too.
    #[test]
    fn json_is_asked_for_alike_of_a_run_and_a_merge() {
        assert_eq!(parse(&["net.smx", "--json"]).unwrap().run.report(), ReportFormat::Json);
        assert_eq!(parse(&["net.smx"]).unwrap().run.report(), ReportFormat::Text);
        assert!(parse(&["net.smx", "--json", "--report", "text"]).is_err());
        let merge = |args: &[&str]| {
            let cli = parse(&[&["report", "merge", "a.json"], args].concat()).unwrap();
            let Some(Command::Report(ReportArgs {
                command: ReportCommand::Merge(merge),
            })) = cli.command
            else {
                panic!("not a merge: {args:?}");
            };
            merge.format()
        };
        assert_eq!(merge(&[]), MergeFormat::Text);
        assert_eq!(merge(&["--json"]), MergeFormat::Json);
        assert_eq!(merge(&["--report", "json"]), MergeFormat::Json);
        assert_eq!(merge(&["--format", "json"]), MergeFormat::Json);
    }

    #[test]
    fn a_bare_file_runs_it_with_options() {
        let cli = parse(&[
            "net.smx",
            "-n",
            "10",
            "--set",
            "Src.size=64",
            "--set",
            "Snk.mode=hex",
            "--pin",
            "0,1",
            "--report",
            "json",
            "-o",
            "r.json",
            "--quiet",
            "--channel-len",
            "64",
        ])
        .unwrap();
        assert!(cli.command.is_none());
        let run = cli.run;
        assert_eq!(run.file, Some(PathBuf::from("net.smx")));
        assert_eq!(run.iterations, Some(10));
        assert_eq!(run.sets, vec!["Src.size=64", "Snk.mode=hex"]);
        assert_eq!(run.runtime.pin, Pin::Cores(vec![0, 1]));
        assert_eq!(run.report(), ReportFormat::Json);
        assert_eq!(run.output, Some(PathBuf::from("r.json")));
        assert!(run.quiet);
        assert_eq!(run.runtime.channel_len, Some(64));
    }

    #[test]
    fn commands_take_their_own_arguments() {
        let cli = parse(&["run", "net.smx", "--pin", "off"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Run(RunArgs {
                runtime: RuntimeArgs { pin: Pin::Off, .. },
                ..
            }))
        ));
        let cli = parse(&["graph", "net.smx", "--format", "dot"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Graph(GraphArgs {
                format: Some(Format::Dot),
                ..
            }))
        ));
        assert!(matches!(
            parse(&["check", "net.smx"]).unwrap().command,
            Some(Command::Check(_))
        ));
        assert!(matches!(
            parse(&["boxes"]).unwrap().command,
            Some(Command::Boxes(BoxesArgs { name: None, .. }))
        ));
    }

    #[test]
    fn box_libraries_and_headers() {
        let cli = parse(&["net.smx", "--boxes", "a.so", "--boxes", "b.so"]).unwrap();
        assert_eq!(cli.run.boxes, vec![PathBuf::from("a.so"), PathBuf::from("b.so")]);
        let Some(Command::Check(check)) = parse(&["check", "n.smx", "--boxes", "a.so"]).unwrap().command else {
            panic!("check")
        };
        assert_eq!(check.boxes, vec![PathBuf::from("a.so")]);
        let Some(Command::Boxes(boxes)) = parse(&["boxes", "--boxes", "a.so"]).unwrap().command else {
            panic!("boxes")
        };
        assert_eq!(boxes.boxes, vec![PathBuf::from("a.so")]);
        let Some(Command::Headers(h)) = parse(&["headers", "n.smx", "-o", "gen"]).unwrap().command else {
            panic!("headers")
        };
        assert_eq!((h.file, h.output, h.sig_only), ("n.smx".into(), "gen".into(), false));
        assert!(parse(&["headers", "n.smx"]).is_err(), "-o is required");
    }

    #[test]
    fn bad_arguments_are_usage_errors() {
        let bare = parse(&[]).unwrap_err();
        assert_eq!(
            bare.kind(),
            clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand,
            "bare smxrun shows the commands"
        );
        assert!(bare.to_string().contains("headers"), "{bare}");
        assert!(parse(&["net.smx", "--pin", "0,x"]).is_err());
        assert_eq!(parse(&["net.smx", "-n", "1_000"]).unwrap().run.iterations, Some(1000));
        let huge = parse(&["net.smx", "-n", "99999999999999999999"])
            .unwrap_err()
            .to_string();
        assert!(
            huge.contains("is too large: a count is at most 18446744073709551615"),
            "{huge}"
        );
        let negative = parse(&["net.smx", "-n", "-1"]).unwrap_err().to_string();
        assert!(negative.contains("'-1' is not a count"), "{negative}");
        assert!(parse(&["net.smx", "--channel-len", "0"]).is_err());
        assert!(parse(&["net.smx", "--report", "xml"]).is_err());
        assert!(parse(&["graph", "net.smx", "--format", "png"]).is_err());
    }
}

/// `smxrun __slice`: runs one slice. Under a supervisor the job comes on stdin, whose end
/// stops the slice, and the report goes back on stdout; with `--job FILE` (what `split`
/// writes) the job comes from the file and the report goes to `--report FILE`.
#[derive(Debug, Clone, Args)]
pub struct SliceArgs {
    /// The job file `smxrun split` wrote (default: the job on stdin, from a supervisor)
    #[arg(long, value_name = "FILE")]
    pub job: Option<PathBuf>,
    /// Where the slice's JSON report goes with --job (default: stdout)
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// The process the slice runs as, so that `ps` tells the slices apart; the job must be
    /// that process's
    #[arg(long, value_name = "NAME")]
    pub process: Option<String>,
}

/// `smxrun split NET --config FILE -o DIR`.
#[derive(Debug, Clone, Args)]
pub struct SplitArgs {
    /// The net: a .smx file or a .json graph
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The configuration that places its nets ([process.NAME] tables, `process` keys)
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Set a key of an instance or implementation (repeatable; beats --config)
    #[arg(long = "set", value_name = "TARGET.KEY=VALUE")]
    pub sets: Vec<String>,
    /// Set `count` of every box that has one
    #[arg(short = 'n', long, value_name = "N")]
    pub iterations: Option<u64>,
    /// The directory to write into (created; mode 0700, as it holds the links' secret keys)
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: PathBuf,
    /// C box libraries (repeatable)
    #[arg(long = "boxes", value_name = "LIB")]
    pub boxes: Vec<PathBuf>,
    /// How long each link waits for its peer's process to appear (default: 5s over shared
    /// memory, 10s over tcp): processes that an orchestrator starts apart need longer
    #[arg(long, value_name = "DURATION", value_parser = smx_box::parse_duration)]
    pub link_timeout: Option<std::time::Duration>,
    /// As a run's: each slice's process takes them (a process's own `cores` beat --pin), and
    /// the links at the cuts take --channel-len
    #[command(flatten)]
    pub runtime: RuntimeArgs,
}

/// `smxrun report merge A.json B.json ...`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    #[command(subcommand)]
    pub command: ReportCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum ReportCommand {
    /// Merge the reports of a split net's slices into one report of the whole net
    Merge(MergeArgs),
}

#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The slices' JSON reports
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// Report format: text or json (also --report, as a run takes it)
    #[arg(long, alias = "report", value_name = "text|json", default_value = "text", value_parser = parse_merge_format)]
    format: MergeFormat,
    /// The report as JSON: --format json
    #[arg(long = "json", id = "json_report", conflicts_with = "format")]
    json: bool,
    /// Write the report here instead of stdout
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The forms of a merged report: `smx`, the original runtime's log, is one process's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeFormat {
    Text,
    Json,
}

impl MergeArgs {
    /// The merged report's format: `--format`, or JSON with `--json`.
    pub fn format(&self) -> MergeFormat {
        if self.json { MergeFormat::Json } else { self.format }
    }
}

fn parse_merge_format(text: &str) -> Result<MergeFormat, String> {
    match text {
        "text" => Ok(MergeFormat::Text),
        "json" => Ok(MergeFormat::Json),
        "smx" => Err("smx is one process's log; a report of a net over several processes is text or json".to_string()),
        other => Err(format!("'{other}' is not a report format: text or json")),
    }
}
