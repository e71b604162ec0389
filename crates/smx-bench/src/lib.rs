//! `smxrun bench`: the ISPW60 report's experiments in one command, measured carefully.
//!
//! The `smxrun` binary adds this crate's [`command`] to the command line's own (the `smxrun`
//! library knows no benchmark, so a crate of boxes compiles none of this).
//!
//! Each experiment builds the report's nets as `.smx` text, compiles and runs them through the
//! library (the same path as `smxrun`), and measures a baseline beside them in the same
//! invocation: a plain crossbeam-channel program, raw ZeroMQ, the platform's timer floor, or
//! GStreamer. Every configuration gets a discarded warm-up and then `--runs` measured runs; the
//! tables print medians with the min-max range, never a lone average. Every run is validated
//! (all messages arrived, no box failed) and an invalid run is flagged and left out of the
//! summaries. A result carries its [`machine::MachineHeader`] and every raw run, and can be
//! saved as JSON, CSV or Markdown, compared with an earlier JSON, and drawn as SVG charts.
//!
//! Layout: [`stats`] (order statistics, fits), [`machine`] (the header), [`result`] (the data
//! model), [`output`] (files and `--compare`), [`plot`] (charts), [`interrupt`] (a Ctrl-C keeps
//! the runs measured before it), [`baseline`] (the plain
//! programs) and one module per experiment (`tune`, with `tune_rows`, `tune_sweep` and
//! `tune_verdict`, sweeps the others' settings).

pub mod args;
pub mod baseline;
pub mod cpu;
pub mod hosts;
pub mod interrupt;
pub mod latency;
pub mod latency_boxes;
pub mod latency_cost;
pub mod latency_raw;
pub mod load;
pub mod machine;
pub mod net;
pub mod output;
pub mod plot;
pub mod processes;
pub mod result;
pub mod scaling;
pub mod stats;
pub mod tt;
pub mod tune;
pub mod tune_rows;
pub mod tune_sweep;
pub mod tune_verdict;
pub mod zmq;

use std::collections::BTreeMap;
use std::path::Path;

pub use args::{BenchArgs, CommonArgs, Experiment};
use clap::{Args, FromArgMatches};
use result::{BenchResult, Case, FORMAT_VERSION, Run};
use smx_runtime::Registry;

/// The `bench` command's clap definition, for the `smxrun` binary to add to its own.
pub fn command() -> clap::Command {
    BenchArgs::augment_args(clap::Command::new("bench"))
}

/// Runs `bench` from the matches of [`command`] and returns the exit status (see [`run`]).
pub fn run_matches(matches: &clap::ArgMatches) -> i32 {
    match BenchArgs::from_arg_matches(matches) {
        Ok(args) => run(&args),
        Err(e) => {
            let _ = e.format(&mut command()).print();
            1
        }
    }
}

/// The boxes the experiments' nets use: the built-in ones, as `smxrun` has them.
pub(crate) fn builtin_registry() -> Registry {
    Registry::of(smx_boxes::specs().into_iter().chain(zmq_specs()).collect::<Vec<_>>())
}

#[cfg(feature = "zmq")]
fn zmq_specs() -> Vec<smx_box::BoxSpec> {
    smx_zmq::specs()
}

#[cfg(not(feature = "zmq"))]
fn zmq_specs() -> Vec<smx_box::BoxSpec> {
    Vec::new()
}

/// What every experiment shares: the flags and the command line, and the progress lines.
pub struct Session {
    pub quick: bool,
    pub runs: Option<usize>,
    pub command: String,
}

impl Session {
    /// The measured runs per configuration: `--runs`, else the experiment's quick or full default.
    /// (`--runs 0` is refused when the command line is read.)
    pub fn runs(&self, quick_default: usize, full_default: usize) -> usize {
        self.runs
            .unwrap_or(if self.quick { quick_default } else { full_default })
            .max(1)
    }

    /// A new result with the machine header taken now.
    pub fn start(&self, experiment: &str) -> BenchResult {
        eprintln!("bench {experiment}: reading the machine and calibrating the timer");
        BenchResult {
            format: FORMAT_VERSION,
            experiment: experiment.to_string(),
            command: self.command.clone(),
            machine: machine::MachineHeader::collect(),
            settings: BTreeMap::new(),
            cases: Vec::new(),
            tables: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// One line on stderr per run, so a long experiment shows it is alive.
    pub fn progress(&self, experiment: &str, case: &Case, index: usize, runs: usize, run: &Run, metric: &str) {
        if run.interrupted {
            return;
        }
        let which = if index == 0 {
            "warm-up".to_string()
        } else {
            format!("run {index}/{runs}")
        };
        let value = run
            .metrics
            .get(metric)
            .map(|v| format!("{metric} {}", output::format_number(*v)))
            .unwrap_or_default();
        let steal = match run.metrics.get(cpu::STEAL_MS) {
            Some(ms) if *ms > 0.0 => format!(" (hypervisor steal {ms:.0} ms)"),
            _ => String::new(),
        };
        let problems = if run.valid {
            String::new()
        } else {
            format!(" INVALID: {}", run.problems.join("; "))
        };
        eprintln!("bench {experiment}: {} {which}: {value}{steal}{problems}", case.key());
    }
}

/// Runs `smxrun bench` and returns the exit status (0 valid, 1 error, 2 some runs invalid, 130
/// finished early by a signal: [`interrupt`]).
pub fn run(args: &BenchArgs) -> i32 {
    let session = Session {
        quick: args.common.quick,
        runs: args.common.runs,
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    // Check every output path and read the comparison first: a bad path should fail before
    // minutes of measuring, not lose their results.
    let draws = args.experiment.names().iter().any(|name| draws_charts(name));
    if args.common.plot.is_some() && !draws {
        eprintln!("note: {NO_TABLE_CHART}; --plot writes nothing for it");
    }
    if let Experiment::Tune(a) = &args.experiment
        && let Err(e) = tune::check(a)
    {
        eprintln!("error: {e}");
        return 1;
    }
    if let Err(e) = check_outputs(&args.common, draws) {
        eprintln!("error: {e}");
        return 1;
    }
    let earlier = match &args.common.compare {
        Some(path) => match output::read_json(path) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("error: {e}");
                return 1;
            }
        },
        None => None,
    };
    // Refused before the runs: a comparison with nothing of this bench's would print an empty
    // table after them.
    if let (Some(old), Some(path)) = (&earlier, &args.common.compare) {
        let wanted = args.experiment.names();
        if !old.iter().any(|r| wanted.contains(&r.experiment.as_str())) {
            let held: Vec<&str> = old.iter().map(|r| r.experiment.as_str()).collect();
            eprintln!(
                "error: --compare {}: it holds results of bench {}, none of bench {}: nothing to compare",
                path.display(),
                held.join(", "),
                wanted.join(", ")
            );
            return 1;
        }
    }
    let results = run_experiments(&args.experiment, session);
    for r in &results {
        println!("\n== smxrun bench {} ==", r.experiment);
        for line in r.machine.describe() {
            println!("{line}");
        }
        for t in &r.tables {
            println!("\n{}", t.to_text());
        }
        for note in &r.notes {
            println!("note: {note}");
        }
    }
    let mut status = if results.iter().flat_map(|r| &r.cases).any(|c| c.invalid_runs() > 0) {
        2
    } else {
        0
    };
    if let Some(old) = earlier {
        println!("\n{}", output::compare(&results, &old).to_text());
        for line in output::settings_changes(&results, &old) {
            println!("note: settings differ from the earlier result: {line}");
        }
    }
    if let Err(e) = save(&args.common, &results) {
        eprintln!("error: {e}");
        status = 1;
    }
    // A bench cut short says so in its status, unless an error says more.
    if interrupt::requested().is_some() && status != 1 {
        status = interrupt::EXIT_INTERRUPTED;
    }
    status
}

fn run_experiments(experiment: &Experiment, mut session: Session) -> Vec<BenchResult> {
    let mut results = Vec::new();
    let mut finish = |mut r: BenchResult| {
        r.machine.finish();
        r.note_invalid_runs();
        r.note_stolen_runs();
        r.note_busy_machine();
        if let Some(signal) = interrupt::requested() {
            r.notes.push(format!(
                "INTERRUPTED by {signal}: this result holds only the runs measured before it (the run it cut \
                 short is left out), so cases may have fewer runs than asked and some none"
            ));
        }
        results.push(r);
    };
    match experiment {
        Experiment::Scaling(a) => finish(scaling::run(a, &mut session)),
        Experiment::Tt(a) => finish(tt::run(a, &mut session)),
        Experiment::Zmq(a) => finish(zmq::run(a, &mut session)),
        Experiment::Hosts(a) => finish(hosts::run(a, &mut session)),
        Experiment::Processes(a) => finish(processes::run(a, &mut session)),
        Experiment::Load(a) => finish(load::run(a, &mut session)),
        Experiment::Latency(a) => finish(latency::run(a, &mut session)),
        Experiment::Tune(a) => finish(tune::run(a, &mut session)),
        Experiment::All => {
            // After a signal, the experiments not begun are not begun: each would only say
            // that it measured nothing.
            finish(scaling::run(&Default::default(), &mut session));
            if interrupt::requested().is_none() {
                finish(tt::run(&Default::default(), &mut session));
            }
            if interrupt::requested().is_none() {
                finish(zmq::run(&Default::default(), &mut session));
            }
            if interrupt::requested().is_none() {
                finish(latency::run(&Default::default(), &mut session));
            }
        }
    }
    results
}

fn save(common: &CommonArgs, results: &[BenchResult]) -> Result<(), String> {
    let err = |e: output::OutputError| e.to_string();
    if let Some(p) = &common.json {
        output::write_json(p, results).map_err(err)?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = &common.csv {
        output::write_csv(p, results).map_err(err)?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = &common.markdown {
        output::write_markdown(p, results).map_err(err)?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(dir) = &common.plot {
        write_plots(dir, results)?;
    }
    Ok(())
}

/// Why `bench zmq --plot` and `bench hosts --plot` write no file.
/// `made`, a directory for an experiment's files, or `None` after a note that nothing was
/// measured without one.
pub(crate) fn scratch_dir(
    result: &mut BenchResult,
    made: std::io::Result<tempfile::TempDir>,
) -> Option<tempfile::TempDir> {
    match made {
        Ok(dir) => Some(dir),
        Err(e) => {
            result
                .notes
                .push(format!("nothing measured: no temporary directory: {e}"));
            None
        }
    }
}

const NO_TABLE_CHART: &str = "bench zmq, hosts, processes, load and tune draw no chart: their results are a \
                              few table rows (see --markdown or --csv)";

/// Whether the experiment of this name draws charts (`--plot`).
fn draws_charts(experiment: &str) -> bool {
    ["scaling", "tt", "latency"].contains(&experiment)
}

/// Every output file and the plot directory, checked before any run. A file that does not exist
/// yet is created to prove it can be, and removed again; an existing one is left as it is.
pub fn check_outputs(common: &CommonArgs, draws: bool) -> Result<(), String> {
    fn json(text: &str) -> bool {
        output::parse_json(text).is_ok()
    }
    fn csv(text: &str) -> bool {
        text.starts_with("experiment,series")
    }
    fn markdown(text: &str) -> bool {
        text.starts_with("## smxrun bench ")
    }
    let files: [(&str, &Option<std::path::PathBuf>, OursFn); 3] = [
        ("--json", &common.json, json),
        ("--csv", &common.csv, csv),
        ("--markdown", &common.markdown, markdown),
    ];
    for (flag, path, ours) in files {
        if let Some(path) = path {
            check_file(flag, path, ours)?;
        }
    }
    // The directory is made only for a bench that draws into it.
    if let Some(dir) = common.plot.as_ref().filter(|_| draws) {
        check_dir(dir)?;
    }
    Ok(())
}

/// `ours`: whether a file's text is what `flag` writes. Any other file that holds something (a
/// net, a report, a script) is refused: a slip of the flag would replace it for good, while a
/// result written over is one a bench writes again.
/// Larger than any result a bench writes.
const RESULT_MAX_BYTES: u64 = 256 << 20;

/// Whether a file's text is what an output flag writes.
type OursFn = fn(&str) -> bool;

fn check_file(flag: &str, path: &Path, ours: OursFn) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!("{flag} {}: is a directory, not a file", path.display()));
    }
    if let Ok(meta) = std::fs::metadata(path)
        && meta.is_file()
        && meta.len() > 0
    {
        // Larger than any result: something else, not read to find out.
        let text = (meta.len() <= RESULT_MAX_BYTES)
            .then(|| std::fs::read(path).ok())
            .flatten()
            .and_then(|b| String::from_utf8(b).ok());
        if !text.is_some_and(|t| t.trim().is_empty() || ours(&t)) {
            return Err(format!(
                "{flag} {}: the file holds something other than what {flag} writes: writing there would replace \
                 it; choose another path",
                path.display()
            ));
        }
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| format!("{flag} {}: cannot write this file: {e}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

fn check_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("--plot {}: cannot create the directory: {e}", dir.display()))?;
    let probe = dir.join(format!(".smxrun-bench-check-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| format!("--plot {}: cannot write there: {e}", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

fn write_plots(dir: &Path, results: &[BenchResult]) -> Result<(), String> {
    if !results.iter().any(|r| draws_charts(&r.experiment)) {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for r in results {
        let charts = match r.experiment.as_str() {
            "scaling" => scaling::charts(r),
            "tt" => tt::charts(r),
            "latency" => latency::charts(r),
            _ => {
                eprintln!(
                    "note: bench {} draws no chart; nothing written to {} for it",
                    r.experiment,
                    dir.display()
                );
                continue;
            }
        };
        for (name, chart) in charts {
            let path = dir.join(name);
            match plot::write_svg(&chart, &path) {
                Ok(()) => eprintln!("wrote {}", path.display()),
                // A chart with nothing valid to show is not worth failing the whole run.
                Err(e) => eprintln!("warning: {e}"),
            }
        }
    }
    Ok(())
}
