//! One net over several processes: `smxrun NET --config deploy.toml` when the configuration
//! places nets in processes, `smxrun split`, `smxrun report merge`, and the hidden
//! `smxrun __slice` that runs one slice under a supervisor (or from a job file that `split`
//! wrote).

use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::Parser;
use smx_deploy::live::Live;
use smx_deploy::names::SliceNames;
use smx_deploy::protocol::{self, Job};
use smx_deploy::{Deployment, Processes, merge, supervise};
use smx_graph::NetGraph;
use smx_runtime::config::NetSettings;
use smx_runtime::{Progress, Registry};

use super::args::{MergeFormat, ReportArgs, ReportCommand, ReportFormat, RunArgs, RuntimeArgs, SliceArgs, SplitArgs};
use super::exit::{self, CliError};
use super::output::Output;
use super::progress::ProgressLine;
use super::stats;

/// The processes of `deployment` as a drawing frames them: each titled with its name and host,
/// each cut channel named by its link.
pub fn placed(deployment: &Deployment) -> smx_graph::dot::Placed {
    let graph = &deployment.graph;
    let mut placed = smx_graph::dot::Placed {
        processes: Vec::new(),
        process_of_node: vec![0; graph.nodes.len()],
        link_of_edge: vec![None; graph.edges.len()],
    };
    for (k, slice) in deployment.split.slices.iter().enumerate() {
        let host = deployment
            .processes
            .get(&slice.process)
            .and_then(|p| p.host.as_deref())
            .unwrap_or("this machine");
        placed.processes.push(format!("process {} ({host})", slice.process));
        for origin in &slice.origins {
            if let smx_deploy::slice::Origin::Node(id) = origin {
                placed.process_of_node[*id] = k;
            }
        }
    }
    for link in &deployment.split.links {
        let curve = if link.curve { ", curve" } else { "" };
        placed.link_of_edge[link.edge] = Some(format!("{}{curve}", link.transport.as_str()));
    }
    placed
}

/// The deployment of a run or check: `None` when every net runs in `main` here.
pub fn deployment(
    config: Option<&Path>,
    file: &Path,
    graph: &NetGraph,
    settings: &[NetSettings],
    registry: &Registry,
) -> Result<Option<Deployment>, CliError> {
    let processes = match config {
        Some(path) => Processes::from_file(path)?,
        None => Processes::default(),
    };
    let placement = smx_deploy::placement::place(graph, settings, &processes)?;
    let main_only = !placement.is_split() && processes.get(&placement.used()[0]).is_some_and(|p| p.launch.is_none());
    if main_only && placement.used()[0] == smx_deploy::processes::MAIN {
        return Ok(None);
    }
    let problems = smx_deploy::placement::cut_problems(graph, &placement);
    if let Some(first) = problems.first() {
        for p in &problems[1..] {
            crate::cli::say(&format!("error: {}:{}: {}", file.display(), p.line, p.message));
        }
        return Err(CliError::rejected(format!(
            "{}:{}: {}",
            file.display(),
            first.line,
            first.message
        )));
    }
    Deployment::new(graph, settings, &processes, &smx_deploy::run_name(), registry)
        .map(Some)
        .map_err(CliError::rejected)
}

/// `graph` with `--channel-len` applied to the channels whose length the net file leaves to
/// it, as each process applies it to its own: a link between processes then has the length
/// its channel has in one process.
pub fn with_channel_len(graph: &NetGraph, len: Option<u32>) -> NetGraph {
    let mut graph = graph.clone();
    if let Some(len) = len {
        for edge in graph.edges.iter_mut().filter(|e| !e.len_declared) {
            edge.len = len;
        }
    }
    graph
}

/// The options of the run that every slice's process takes over.
fn common_args(args: &RuntimeArgs, libraries: &[PathBuf]) -> Vec<String> {
    let mut common = Vec::new();
    if let Some(n) = args.channel_len {
        common.extend(["--channel-len".to_string(), n.to_string()]);
    }
    if let Some(spin) = args.wait_spin {
        common.extend(["--wait-spin".to_string(), format!("{}ns", spin.as_nanos())]);
    }
    let latency = match args.latency {
        smx_runtime::latency::LatencyMode::Off => "off".to_string(),
        smx_runtime::latency::LatencyMode::Full => "full".to_string(),
        smx_runtime::latency::LatencyMode::Sampled(n) => n.to_string(),
    };
    common.extend(["--latency".to_string(), latency]);
    // These options' values are their variants' names in lower case.
    common.extend(["--rt".to_string(), format!("{:?}", args.rt).to_lowercase()]);
    common.extend(["--tt-mode".to_string(), format!("{:?}", args.tt_mode).to_lowercase()]);
    common.extend(["--chain".to_string(), format!("{:?}", args.chain).to_lowercase()]);
    let pin = match &args.pin {
        super::args::Pin::Auto => "auto".to_string(),
        super::args::Pin::Off => "off".to_string(),
        super::args::Pin::Cores(cores) => cores.iter().map(usize::to_string).collect::<Vec<_>>().join(","),
    };
    // A process's own `cores` come later and win.
    common.extend(["--pin".to_string(), pin]);
    for lib in libraries {
        let lib = std::fs::canonicalize(lib).unwrap_or_else(|_| lib.clone());
        common.extend(["--boxes".to_string(), lib.display().to_string()]);
    }
    common
}

/// Runs a deployment: starts every slice, supervises them, prints the one report.
pub fn run(
    args: &RunArgs,
    deployment: &Deployment,
    libraries: &[PathBuf],
    stop: &Arc<AtomicBool>,
    output: Output,
) -> Result<i32, CliError> {
    if args.report == ReportFormat::Smx {
        return Err(CliError::rejected(
            "--report smx is one process's log; a net over several processes reports as text or json",
        ));
    }
    if args.trace.is_some() {
        return Err(CliError::rejected(
            "--trace covers one process and is not supported for a net over several processes yet; run the net \
             in one process to trace it",
        ));
    }
    let exe = std::env::current_exe().map_err(|e| CliError::rejected(format!("cannot find smxrun itself: {e}")))?;
    let stats_sink = args
        .stats_every
        .map(|_| stats::Sink::open(args.stats_file.as_deref()))
        .transpose()?;
    let common = common_args(&args.runtime, libraries);
    let mut jobs = deployment.jobs(&common);
    for (_, job) in &mut jobs {
        job.stats_every = args.stats_every;
    }
    let live = Arc::new(Live::default());
    let counted = deployment.counted_slices();
    let sampled = Arc::clone(&live);
    let sample_counted = counted.clone();
    // Stats lines on stderr would be torn by the progress line, so they replace it.
    let stats_on_stderr = args.stats_every.is_some() && args.stats_file.is_none();
    let line = ProgressLine::start(!args.quiet && !stats_on_stderr, move || sampled.sample(&sample_counted));
    let stats_lines = args.stats_every.zip(stats_sink).map(|(every, sink)| {
        let (live, split, graph) = (Arc::clone(&live), deployment.split.clone(), deployment.graph.clone());
        stats::StatsLines::sampling(move || live.snapshot(&split, &graph, &counted), every, sink)
    });
    let supervised = supervise::supervise(&exe, jobs, stop, &live);
    line.finish();
    let (outcomes, ending) = match supervised {
        Ok(done) => done,
        Err(e) => {
            if let Some(lines) = stats_lines {
                lines.finish();
            }
            return Err(CliError::rejected(e));
        }
    };
    deployment.clean_up(&outcomes);
    let report = merge::merge(&merge::Parts {
        graph: &deployment.graph,
        split: &deployment.split,
        outcomes: &outcomes,
        bridges: &deployment.bridges,
        notes: &deployment.core_notes(&common),
        told_wall: live.told_wall(),
    });
    // The last line holds the report's counts, also where a process died before its own last.
    if let Some(lines) = stats_lines {
        lines.finish_with(|last| Some(smx_deploy::live::final_snapshot(&report, last)));
    }
    let text = match args.report {
        ReportFormat::Json => serde_json::to_string_pretty(&report).unwrap_or_default(),
        _ => {
            let file = args.file.as_deref().unwrap_or(Path::new("net"));
            let asked = super::words::asked(args, file, &deployment.graph);
            asked + &smx_deploy::text::render_with(&report, smx_runtime::LeverWords(super::words::flag_words))
        }
    };
    output.write(&text)?;
    // A slice stopped by the supervisor (the run was stopped, or another slice died or failed)
    // did nothing wrong: only the processes that ended the run are named.
    let mut causes: Vec<&supervise::Outcome> = outcomes
        .iter()
        .filter(|o| o.status != "ok" && o.status != "stopped")
        .collect();
    // A process that never started is the cause: the others failed waiting for its links.
    if causes.iter().any(|o| o.pid.is_none()) {
        causes.retain(|o| o.pid.is_none());
    }
    // One that died, or refused its run, is the cause of the failures of those that found its
    // links cut, whichever the supervisor saw end first.
    if causes.iter().any(|o| o.status == "died" || o.status == "refused") {
        causes.retain(|o| o.status != "ended");
    }
    for o in &causes {
        let launch = deployment.processes.get(&o.process).and_then(|p| p.launch.as_deref());
        let never_started = match (o.pid, launch, o.status.as_str()) {
            (Some(_), _, _) => String::new(),
            (None, Some(launch), "killed") => format!(
                "; it never said it started (its launch command '{launch}' may be waiting, e.g. for a password)"
            ),
            (None, Some(launch), _) => {
                format!("; its launch command '{launch}' ended before the slice started")
            }
            (None, None, _) => "; it never said it started".to_string(),
        };
        crate::cli::say(&format!(
            "error: process '{}'{} {}: exit code {}, signal {}{never_started}",
            o.process,
            o.pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
            o.status,
            o.exit_code.map_or("-".to_string(), |c| c.to_string()),
            o.signal.map_or("-".to_string(), |s| s.to_string()),
        ));
    }
    if ending == supervise::Ending::Stopped {
        crate::cli::say("smxrun: interrupted; the report covers the run up to the stop");
    }
    Ok(match ending {
        supervise::Ending::Stopped => exit::INTERRUPTED,
        supervise::Ending::Died(_) => exit::BOX_FAILED,
        // It said why on its own line; nothing of the net ran there.
        supervise::Ending::Refused(_) => exit::REJECTED,
        // One that never started did not run a net: its launch command's exit code is not one
        // of smxrun's.
        supervise::Ending::Finished if causes.iter().any(|o| o.pid.is_none()) => exit::BOX_FAILED,
        supervise::Ending::Finished => causes
            .iter()
            .filter_map(|o| o.exit_code)
            .find(|c| *c != 0)
            .unwrap_or(if causes.is_empty() { exit::OK } else { exit::BOX_FAILED }),
    })
}

/// How a slice runs its net: the command line's `run`, handed in, so that this module does not
/// reach back into the one that calls it; the run keeps its figures in the [`Progress`] given.
pub type RunNet = fn(&RunArgs, &Registry, Progress) -> Result<i32, CliError>;

pub fn run_slice(args: &SliceArgs, registry: &Registry, run_net: RunNet) -> Result<i32, CliError> {
    let supervised = args.job.is_none();
    let job = match &args.job {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| CliError::rejected(format!("{}: {e}", path.display())))?;
            Job::read(&mut text.as_bytes()).map_err(|e| CliError::rejected(format!("{}: {e}", path.display())))?
        }
        None => Job::read(&mut std::io::stdin().lock()).map_err(CliError::rejected)?,
    };
    // Under a supervisor stdout is the answer channel alone: what boxes print goes to stderr.
    let answers: Box<dyn Write + Send> = if supervised {
        // SAFETY: duplicating and replacing this process's own standard descriptors.
        unsafe {
            let saved = libc::dup(1);
            if saved < 0 || libc::dup2(2, 1) < 0 {
                return Err(CliError::rejected("cannot set up the slice's answer channel"));
            }
            Box::new(std::fs::File::from_raw_fd(saved))
        }
    } else {
        Box::new(std::io::sink())
    };
    let answers = Arc::new(std::sync::Mutex::new(answers));
    let _ = protocol::write_started(
        &mut *answers.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
        std::process::id(),
    );
    // The user knows the nodes by their ids in the whole net (report, `--set`); a job written
    // without the whole net's plan can only give the slice's own.
    let names = SliceNames::from_plan(&job.plan, &job.process).unwrap_or_default();
    if supervised {
        super::signals::SUPERVISED.store(true, std::sync::atomic::Ordering::SeqCst);
        let names = names.clone();
        super::speak_as(&job.process, move |line| names.rename(line));
        stop_at_end_of_stdin();
    }
    protocol::remove_stale_slice_dirs(&std::env::temp_dir());
    let dir = tempfile::Builder::new()
        .prefix(&format!("{}{}-", protocol::DIR_PREFIX, std::process::id()))
        .tempdir()
        .map_err(|e| CliError::rejected(format!("cannot make the slice's directory: {e}")))?;
    let net = dir.path().join(format!("{}.json", job.process));
    let report_path = dir.path().join("report.json");
    std::fs::write(&net, smx_graph::json::to_json(&job.graph))
        .map_err(|e| CliError::rejected(format!("{}: {e}", net.display())))?;
    let mut argv: Vec<String> = vec!["smxrun".into(), "run".into(), net.display().to_string()];
    argv.extend(["--report", "json", "-q", "-o"].map(str::to_string));
    argv.push(report_path.display().to_string());
    argv.extend(job.args.iter().cloned());
    let cli =
        super::args::Cli::try_parse_from(&argv).map_err(|e| CliError::rejected(format!("slice arguments: {e}")))?;
    let run_args = match cli.command {
        Some(super::args::Command::Run(a)) => a,
        _ => cli.run,
    };
    let progress = Progress::new();
    let telling = supervised.then(|| ProgressTeller::start(progress.clone(), job.stats_every, Arc::clone(&answers)));
    let result = run_net(&run_args, registry, progress);
    drop(telling);
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            // Under a supervisor every line of this process begins with its name already.
            if supervised {
                crate::cli::say(&format!("error: {}", e.message));
            } else {
                crate::cli::say(&format!(
                    "error: process '{}': {}",
                    job.process,
                    names.rename(&e.message)
                ));
            }
            if supervised && !report_path.exists() {
                let _ =
                    protocol::write_refused(&mut *answers.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
            }
            e.code
        }
    };
    if let Ok(text) = std::fs::read_to_string(&report_path)
        && let Ok(mut report) = serde_json::from_str::<serde_json::Value>(&text)
    {
        report["process"] = serde_json::json!(job.process);
        report["host"] = serde_json::json!(job.host);
        report["exit_code"] = serde_json::json!(code);
        report["pid"] = serde_json::json!(std::process::id());
        report["plan"] = job.plan.clone();
        let text = serde_json::to_string(&report).unwrap_or_default();
        match (&args.report, supervised) {
            (_, true) => {
                let _ = protocol::write_report(
                    &mut *answers.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
                    &text,
                );
            }
            (Some(path), false) => {
                std::fs::write(path, &text).map_err(|e| CliError::rejected(format!("{}: {e}", path.display())))?
            }
            (None, false) => Output::open(None)?.write(&text)?,
        }
    }
    Ok(code)
}

/// A supervised slice's stdout, shared by its progress and its report.
type Answers = Arc<std::sync::Mutex<Box<dyn Write + Send>>>;

/// A thread that tells the supervisor the slice's progress every
/// [`protocol::PROGRESS_EVERY`] while its nets run, for the run's one progress line, and its
/// live figures every `stats_every` if asked (and once more at the end, the final counts); it
/// ends when dropped, before the report goes over the same channel.
struct ProgressTeller {
    stop: Option<crossbeam_channel::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    progress: Progress,
    stats: bool,
    answers: Answers,
}

impl ProgressTeller {
    fn start(progress: Progress, stats_every: Option<std::time::Duration>, answers: Answers) -> ProgressTeller {
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let (sampled, out) = (progress.clone(), Arc::clone(&answers));
        let thread = std::thread::Builder::new()
            .name("smx-progress".into())
            .stack_size(256 * 1024)
            .spawn(move || tell_until(&stopped, &sampled, stats_every, &out))
            .ok();
        ProgressTeller {
            stop: Some(stop),
            thread,
            progress,
            stats: stats_every.is_some(),
            answers,
        }
    }
}

fn tell_until(
    stopped: &crossbeam_channel::Receiver<()>,
    progress: &Progress,
    stats_every: Option<std::time::Duration>,
    answers: &Answers,
) {
    let tick = stats_every.map_or(protocol::PROGRESS_EVERY, |every| every.min(protocol::PROGRESS_EVERY));
    let mut next_stats = stats_every.map(|every| std::time::Instant::now() + every);
    while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
        let mut out = answers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let told = match (next_stats, stats_every) {
            (Some(at), Some(every)) if std::time::Instant::now() >= at => {
                next_stats = Some(at.max(std::time::Instant::now() - every) + every);
                progress.snapshot().map(|now| protocol::write_stats(&mut *out, &now))
            }
            _ => progress
                .elapsed()
                .map(|elapsed| protocol::write_progress(&mut *out, progress.messages(), elapsed)),
        };
        if matches!(told, Some(Err(_))) {
            return;
        }
    }
}

impl Drop for ProgressTeller {
    fn drop(&mut self) {
        // Dropping the sender wakes the thread at once.
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // The run is over: its final counts, which are its report's.
        if self.stats
            && let Some(now) = self.progress.snapshot()
        {
            let mut out = self.answers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let _ = protocol::write_stats(&mut *out, &now);
        }
    }
}

/// A thread that turns the end of stdin (the supervisor closed the control pipe or is gone)
/// into the stop a Ctrl-C would be.
fn stop_at_end_of_stdin() {
    let _ = std::thread::Builder::new()
        .name("smx-control".into())
        .stack_size(64 * 1024)
        .spawn(|| {
            let mut buf = [0u8; 256];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
            // SAFETY: sending this process a signal its run handles as a stop.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGTERM);
            }
        });
}

/// Writes, per process: NAME.job (its slice and settings, mode 0600), NAME.sh (the line that
/// starts it) and smx-NAME.service (a systemd unit with its cores and scheduling policy).
pub fn split(args: &SplitArgs, registry: &Registry) -> Result<i32, CliError> {
    let mut layers = smx_runtime::config::ConfigLayers::from_file(&args.config)?;
    for set in &args.sets {
        layers.add_set(set)?;
    }
    if let Some(n) = args.iterations {
        layers.set_iterations(n);
    }
    let graph = super::load::checked_graph(&args.file)?;
    let library_paths = super::load::library_paths(layers.boxes(), &args.boxes);
    let libraries = super::load::open_libraries(&library_paths)?;
    let registry = &super::load::with_c_boxes(&graph, registry, &libraries)?;
    super::load::reject_unknown_implementations(&args.file, &graph, registry, &libraries.names())?;
    let settings = layers.resolve(&graph, registry)?;
    let graph = with_channel_len(&graph, args.runtime.channel_len);
    let mut deployment = deployment(Some(&args.config), &args.file, &graph, &settings, registry)?
        .ok_or_else(|| CliError::rejected("every net runs in `main` on this machine: there is nothing to split"))?;
    deployment.asked = super::words::asked_options(&args.file, args.iterations, &args.sets, Some(&args.config));
    // The cores of `--pin` are this machine's, where the processes without `launch` run.
    let runs_here = |name: &str| deployment.processes.get(name).is_some_and(|p| p.launch.is_none());
    if deployment.split.slices.iter().any(|s| runs_here(&s.process)) {
        super::load::pin_mode(&args.runtime.pin)?;
    }
    let dir = &args.output;
    std::fs::create_dir_all(dir).map_err(|e| CliError::rejected(format!("{}: {e}", dir.display())))?;
    let dir = std::fs::canonicalize(dir).map_err(|e| CliError::rejected(format!("{}: {e}", dir.display())))?;
    set_mode(&dir, 0o700)?;
    let exe = std::env::current_exe().map_err(|e| CliError::rejected(format!("cannot find smxrun itself: {e}")))?;
    let mut written = Vec::new();
    for (process, job) in deployment.jobs(&common_args(&args.runtime, &library_paths)) {
        let name = &process.name;
        let job_path = dir.join(format!("{name}.job"));
        write_private(&job_path, &job.to_line())?;
        let report = dir.join(format!("{name}.report.json"));
        let line = format!(
            "{} {} --job {} --report {}",
            exe.display(),
            protocol::SUBCOMMAND,
            job_path.display(),
            report.display()
        );
        let launch = process.launch.as_deref().map(|l| format!("{l} ")).unwrap_or_default();
        write_private(
            &dir.join(format!("{name}.sh")),
            &format!("#!/bin/sh\n# starts process '{name}' of the split net\nexec {launch}{line}\n"),
        )?;
        set_mode(&dir.join(format!("{name}.sh")), 0o700)?;
        let realtime = args.runtime.rt == smx_runtime::Realtime::On
            || job.graph.nodes.iter().any(|n| n.priority > 0)
            || job.args.iter().any(|a| a.contains(".priority="));
        let mut unit = format!(
            "[Unit]\nDescription=smx: process '{name}' of {}\n\n[Service]\nType=exec\nExecStart={line}\n",
            args.file.display()
        );
        if let Some(cores) = &process.cores {
            let list: Vec<String> = cores.iter().map(usize::to_string).collect();
            unit.push_str(&format!("CPUAffinity={}\n", list.join(" ")));
        }
        // The process starts at normal scheduling, as `smxrun` does: the runtime itself gives
        // each net with a priority (an `rt` or `tt` net, a `priority` key) SCHED_FIFO at its
        // own level, which a policy for the whole unit would override for every thread.
        unit.push_str("CPUSchedulingPolicy=other\n");
        if realtime {
            unit.push_str(
                "# lets the runtime give the nets with a priority SCHED_FIFO\nLimitRTPRIO=99\nLimitMEMLOCK=infinity\n",
            );
        }
        // Enabled, it starts with the machine; the orchestrator may start it itself instead.
        unit.push_str("\n[Install]\nWantedBy=multi-user.target\n");
        write_private(&dir.join(format!("smx-{name}.service")), &unit)?;
        written.push(format!("{name}: {}", dir.join(format!("{name}.sh")).display()));
    }
    let reports: Vec<String> = deployment
        .split
        .slices
        .iter()
        .map(|s| dir.join(format!("{}.report.json", s.process)).display().to_string())
        .collect();
    Output::open(None)?.write(&format!(
        "{}\nwhen all have ended: smxrun report merge {}\n",
        written.join("\n"),
        reports.join(" ")
    ))?;
    Ok(exit::OK)
}

fn write_private(path: &Path, text: &str) -> Result<(), CliError> {
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |e: std::io::Error| CliError::rejected(format!("{}: {e}", path.display()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(fail)?;
    set_mode(path, 0o600)?;
    file.write_all(text.as_bytes()).map_err(fail)
}

fn set_mode(path: &Path, mode: u32) -> Result<(), CliError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| CliError::rejected(format!("{}: {e}", path.display())))
}

pub fn report(args: &ReportArgs, registry: &Registry) -> Result<i32, CliError> {
    let ReportCommand::Merge(args) = &args.command;
    let mut reports = Vec::new();
    let mut given: Vec<(String, &Path)> = Vec::new();
    for path in &args.reports {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            // The report a process that died never wrote: as if it were left off.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                crate::cli::say(&format!(
                    "warning: {}: no such report: its process counts as one that died",
                    path.display()
                ));
                continue;
            }
            Err(e) => return Err(CliError::rejected(format!("{}: {e}", path.display()))),
        };
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| CliError::rejected(format!("{}: not a JSON report: {e}", path.display())))?;
        let process = value["process"].as_str().ok_or_else(|| {
            CliError::rejected(format!(
                "{}: names no process: not the report of a slice that `smxrun split` wrote",
                path.display()
            ))
        })?;
        // A second report of one process would leave another without one, as if it had died.
        if let Some((_, first)) = given.iter().find(|(p, _)| p == process) {
            return Err(CliError::rejected(format!(
                "{}: a second report of process '{process}' ({} is its report already): give each process's report once",
                path.display(),
                first.display()
            )));
        }
        given.push((process.to_string(), path));
        reports.push(value);
    }
    let merged = merge::from_reports(&reports, &bridges(registry)).map_err(CliError::rejected)?;
    let text = match args.format {
        MergeFormat::Json => serde_json::to_string_pretty(&merged).unwrap_or_default(),
        MergeFormat::Text => {
            let files: Vec<String> = args.reports.iter().map(|p| p.display().to_string()).collect();
            // What the split was asked for, when its slices carry it.
            let split_of = reports[0]["plan"]["asked"]
                .as_str()
                .filter(|a| !a.is_empty())
                .map(|a| format!(" (a split of {a})"))
                .unwrap_or_default();
            let asked = smx_deploy::text::asked(&format!("report merge {}{split_of}", files.join(" ")), &merged);
            asked + &smx_deploy::text::render_with(&merged, smx_runtime::LeverWords(super::words::flag_words))
        }
    };
    Output::open(args.output.as_deref())?.write(&text)?;
    // As a supervised run's: 2 for a process that left no report, else the first non-zero
    // exit code a process ended with (3: books not clean).
    let processes = merged["processes"].as_array().cloned().unwrap_or_default();
    let died = processes.iter().any(|p| p["status"] == "died");
    let ended = processes
        .iter()
        .filter_map(|p| p["exit_code"].as_i64())
        .find(|c| *c != 0)
        .and_then(|c| i32::try_from(c).ok());
    Ok(match (died, ended) {
        (true, _) => exit::BOX_FAILED,
        (false, Some(code)) => code,
        (false, None) if merged["status"] == "ok" => exit::OK,
        (false, None) => exit::BOX_FAILED,
    })
}

/// The implementations that pass what they read on out of the net, for the merged report's
/// count of messages.
fn bridges(registry: &Registry) -> Vec<String> {
    registry
        .specs()
        .into_iter()
        .filter(|spec| spec.bridge)
        .map(|spec| spec.name.to_string())
        .collect()
}
