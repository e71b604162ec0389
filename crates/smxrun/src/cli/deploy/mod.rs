//! One net over several processes: `smxrun NET --config deploy.toml` when the configuration
//! places nets in processes, `smxrun split`, `smxrun report merge`, and the hidden
//! `smxrun __slice` that runs one slice under a supervisor (or from a job file that `split`
//! wrote).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use smx_deploy::live::Live;
use smx_deploy::{Deployment, Processes, merge, supervise};
use smx_graph::NetGraph;
use smx_runtime::Registry;
use smx_runtime::config::{ConfigLayers, NetSettings};

use super::args::{ReportFormat, RunArgs, RuntimeArgs};
use super::exit::{self, CliError};
use super::output::Output;
use super::progress::ProgressLine;
use super::stats;

mod report_merge;
mod slice;
mod split;

pub use report_merge::report;
pub use slice::run_slice;
pub use split::split;

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

/// `--pin` checked as one process checks it, when a slice runs on this machine (without
/// `launch`): its cores are this machine's.
pub fn check_pin_here(deployment: &Deployment, pin: &super::args::Pin) -> Result<(), CliError> {
    let runs_here = |name: &str| deployment.processes.get(name).is_some_and(|p| p.launch.is_none());
    if deployment.split.slices.iter().any(|s| runs_here(&s.process)) {
        super::load::pin_mode(pin)?;
    }
    Ok(())
}

/// What the configuration makes of a net's placement.
pub struct Placed {
    /// Over several processes (or in one started elsewhere); `None`: every net runs in `main`
    /// here, as one process.
    pub deployment: Option<Deployment>,
    /// The `cores` of `[process.main]`, which that one process then keeps.
    pub main_cores: Option<Vec<usize>>,
    /// The warnings said on the way (processes that hold no net, cores named twice), without
    /// their `warning: `, for the report.
    pub warnings: Vec<String>,
}

/// What a deployment is read for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// To start it, or check it for a start, from this machine: what its processes need here
    /// (programs, cores, addresses, network namespaces) is checked too.
    Start,
    /// To draw it as planned, from whatever machine.
    Drawing,
}

/// The placement of a run, check or drawing, its warnings said.
pub fn deployment(
    layers: &ConfigLayers,
    file: &Path,
    graph: &NetGraph,
    settings: &[NetSettings],
    registry: &Registry,
    purpose: Purpose,
) -> Result<Placed, CliError> {
    // From the text the settings came from: a file read twice may not say the same twice, and
    // a pipe says nothing the second time.
    let processes = match (layers.file_text(), purpose) {
        (Some((path, text)), Purpose::Start) => Processes::from_toml(path, text)?,
        (Some((path, text)), Purpose::Drawing) => Processes::from_toml_as_planned(path, text)?,
        (None, _) => Processes::default(),
    };
    processes.check_namespaces()?;
    let placement = smx_deploy::placement::place(graph, settings, &processes)?;
    let mut idle = idle_processes(&processes, &placement);
    idle.extend(processes_on_the_same_cores(&processes, &placement));
    for line in &idle {
        crate::cli::say(&format!("warning: {line}"));
    }
    let main = processes.get(smx_deploy::processes::MAIN);
    // A net without nodes runs nowhere else either: as one process, as without `--config`.
    let main_only = match placement.used().as_slice() {
        [] => true,
        [only] => only == smx_deploy::processes::MAIN && processes.get(only).is_some_and(|p| p.launch.is_none()),
        _ => false,
    };
    if main_only {
        return Ok(Placed {
            deployment: None,
            main_cores: main.and_then(|p| p.cores.clone()),
            warnings: idle,
        });
    }
    let problems = smx_deploy::placement::cut_problems(graph, settings, &placement);
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
    let deployment =
        Deployment::new(graph, settings, &processes, &smx_deploy::run_name(), registry).map_err(CliError::rejected)?;
    Ok(Placed {
        deployment: Some(deployment),
        main_cores: None,
        warnings: idle,
    })
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

/// A warning for each declared process that holds no net: nothing would run there, which is
/// rarely what a configuration that names it meant.
fn idle_processes(processes: &Processes, placement: &smx_deploy::Placement) -> Vec<String> {
    let used = placement.used();
    processes
        .iter()
        .filter(|p| p.name != smx_deploy::processes::MAIN && !used.contains(&p.name))
        .map(|p| {
            format!(
                "{}: process '{}' holds no net, so nothing runs there (place one with `process = \"{}\"`)",
                p.origin, p.name, p.name
            )
        })
        .collect()
}

/// A warning for each process on this machine whose `cores` name a core that a process before
/// it names too ([`smx_deploy::cores_named_twice`]).
fn processes_on_the_same_cores(processes: &Processes, placement: &smx_deploy::Placement) -> Vec<String> {
    smx_deploy::cores_named_twice(processes, placement)
        .into_iter()
        .map(|(origin, what)| {
            format!(
                "{origin}: {what}: their threads take turns there, and neither takes real-time \
                 scheduling there under `--rt auto` (`cores` of its own for each avoid both)"
            )
        })
        .collect()
}

/// Runs a deployment: starts every slice, supervises them, prints the one report, whose
/// warnings begin with `said_before` (the warnings said before the start).
pub fn run(
    args: &RunArgs,
    deployment: &Deployment,
    libraries: &[PathBuf],
    stop: &Arc<AtomicBool>,
    output: Output,
    said_before: &[String],
) -> Result<i32, CliError> {
    refuse_one_process_options(args)?;
    let exe = std::env::current_exe().map_err(|e| CliError::rejected(format!("cannot find smxrun itself: {e}")))?;
    let stats_sink = args
        .stats_every
        .map(|_| stats::Sink::open(args.stats_file.as_deref()))
        .transpose()?;
    let common = common_args(&args.runtime, libraries);
    let mut jobs = deployment.jobs(&common);
    for (_, job) in &mut jobs {
        job.stats_every = args.stats_every;
        job.start_together = true;
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
        // Looked at often: a line is made as soon as every slice told its figures of the
        // same instant (`Live::snapshot`), not up to an interval later.
        let look = (every / 16).max(std::time::Duration::from_millis(1));
        stats::StatsLines::sampling(move || live.snapshot(&split, &graph, &counted), look, sink)
    });
    let supervised = supervise::supervise(&exe, jobs, stop, &live);
    line.finish();
    let (outcomes, ending) = match supervised {
        Ok(done) => done,
        Err(not_started) => {
            // The slices started before it were killed: their files go as a killed slice's do.
            deployment.clean_up(&not_started.outcomes);
            clean_up_launched_here(deployment, &not_started.outcomes);
            if let Some(lines) = stats_lines {
                lines.finish();
            }
            return Err(CliError::rejected(not_started.error));
        }
    };
    deployment.clean_up(&outcomes);
    clean_up_launched_here(deployment, &outcomes);
    let mut report = merge::merge(&merge::Parts {
        graph: &deployment.graph,
        split: &deployment.split,
        outcomes: &outcomes,
        bridges: &deployment.bridges,
        notes: &deployment.core_notes(&common),
        told_wall: live.told_wall(),
        told_messages: &live.told_messages(),
    });
    if let Some(warnings) = report["warnings"].as_array_mut() {
        warnings.splice(
            0..0,
            said_before.iter().map(|line| serde_json::Value::from(line.as_str())),
        );
    }
    // The last line holds the report's counts, also where a process died before its own last.
    if let Some(lines) = stats_lines {
        lines.finish_with(|last| Some(smx_deploy::live::final_snapshot(&report, last)));
    }
    output.write(&rendered(args, deployment, &report))?;
    let causes = causes(&outcomes, &ending);
    for o in &causes {
        crate::cli::say(&cause_line(o, deployment));
    }
    match &ending {
        supervise::Ending::Stopped(None) => {
            crate::cli::say("smxrun: interrupted; the report covers the run up to the stop")
        }
        supervise::Ending::Stopped(Some(process)) => crate::cli::say(&format!(
            "smxrun: process '{process}' was stopped from outside (a SIGTERM or SIGINT to it alone), and the \
             run stopped with it; the report covers the run up to the stop"
        )),
        _ => {}
    }
    if matches!(ending, supervise::Ending::Stopped(_)) {
        for o in outcomes.iter().filter(|o| o.pid.is_none() && o.status == "stopped") {
            let launch = deployment.processes.get(&o.process).and_then(|p| p.launch.as_deref());
            let waiting = launch
                .map(|l| format!(" (its launch command '{l}' may have been waiting, e.g. for a password)"))
                .unwrap_or_default();
            crate::cli::say(&format!(
                "note: process '{}' had not said it started when the run was stopped{waiting}; none of its nets ran",
                o.process
            ));
        }
    }
    Ok(exit_code(&ending, &causes, ran(&report)))
}

/// Whether a net of the whole net ran a step. The processes hold their nets until every one is
/// ready, so a refusal (which comes before a process is ready) leaves none run; the exit code
/// still asks, as one process's does, rather than assume it.
fn ran(report: &serde_json::Value) -> bool {
    report["nets"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|n| n["loop_count"].as_u64().is_some_and(|c| c > 0))
}

/// Removes what slices started on this machine through a `launch` (in a network namespace, or
/// at an address of this machine) left behind when they did not end by themselves (killed,
/// crashed), as [`Deployment::clean_up`] does for the slices started without one: their private
/// directories (`smx-slice-PID-*` in the temporary directory, which they share with this
/// process) and the shared-memory files of their links, which have this run's names. A slice
/// that ended cleans up itself.
fn clean_up_launched_here(deployment: &Deployment, outcomes: &[supervise::Outcome]) {
    let launched_here = |name: &str| {
        deployment
            .processes
            .get(name)
            .is_some_and(|p| p.launch.is_some() && p.on_this_machine())
    };
    let gone: Vec<&supervise::Outcome> = outcomes
        .iter()
        .filter(|o| o.report.is_none() && launched_here(&o.process))
        .collect();
    let temp = std::env::temp_dir();
    for pid in gone.iter().filter_map(|o| o.pid) {
        let prefix = format!("{}{pid}-", smx_deploy::protocol::DIR_PREFIX);
        for entry in std::fs::read_dir(&temp).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    for link in &deployment.split.links {
        let served_by_gone = gone
            .iter()
            .any(|o| o.process == link.to_process || o.process == link.from_process);
        if served_by_gone && link.transport == smx_deploy::slice::Transport::Shm {
            let _ = std::fs::remove_file(&link.endpoint);
        }
    }
}

/// The options whose output belongs to one process.
fn refuse_one_process_options(args: &RunArgs) -> Result<(), CliError> {
    if args.report() == ReportFormat::Smx {
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
    Ok(())
}

/// The merged report as `--report` asks for it: JSON, or the text with its `Asked:` line.
fn rendered(args: &RunArgs, deployment: &Deployment, report: &serde_json::Value) -> String {
    match args.report() {
        ReportFormat::Json => {
            let mut report = report.clone();
            smx_deploy::text::judge_periods(&mut report, smx_runtime::LeverWords(super::words::flag_words));
            serde_json::to_string_pretty(&report).unwrap_or_default()
        }
        _ => {
            let file = args.file.as_deref().unwrap_or(Path::new("net"));
            let asked = super::words::asked(args, file, &deployment.graph);
            asked + &smx_deploy::text::render_with(report, smx_runtime::LeverWords(super::words::flag_words))
        }
    }
}

/// The processes that ended the run. A slice stopped by the supervisor (the run was stopped,
/// or another slice died or failed) did nothing wrong.
fn causes<'o>(outcomes: &'o [supervise::Outcome], ending: &supervise::Ending) -> Vec<&'o supervise::Outcome> {
    let mut causes: Vec<&supervise::Outcome> = outcomes
        .iter()
        .filter(|o| o.status != "ok" && o.status != "stopped")
        .collect();
    // One the supervisor refused (it speaks another protocol) ended the run at once.
    if causes.iter().any(|o| o.refusal.is_some()) {
        causes.retain(|o| o.refusal.is_some());
        return causes;
    }
    // The process whose death or refusal ended the run: the others ended because of it, also
    // one that had not started yet and was killed for it.
    if let supervise::Ending::Died(name) | supervise::Ending::Refused(name) = ending
        && causes.iter().any(|o| o.process == *name)
    {
        causes.retain(|o| o.process == *name);
        return causes;
    }
    // A process that never started is the cause: the others failed waiting for its links.
    if causes.iter().any(|o| o.pid.is_none()) {
        causes.retain(|o| o.pid.is_none());
    }
    // One that died, or refused its run, is the cause of the failures of those that found its
    // links cut, whichever the supervisor saw end first.
    if causes
        .iter()
        .any(|o| o.status == "died" || o.status == "lost" || o.status == "refused")
    {
        causes.retain(|o| o.status != "ended");
    }
    causes
}

/// `error: process 'b' (pid 42) died: killed by signal 9 (SIGKILL)`, and why one never started.
fn cause_line(o: &supervise::Outcome, deployment: &Deployment) -> String {
    if let Some(refusal) = &o.refusal {
        return format!(
            "error: process '{}'{} on {} refused: {refusal}",
            o.process,
            o.pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
            o.host
                .as_deref()
                .map_or("this machine".to_string(), |h| format!("host {h}")),
        );
    }
    let launch = deployment.processes.get(&o.process).and_then(|p| p.launch.as_deref());
    if o.status == "lost" {
        let why = match launch {
            Some(_) => "its host, or the connection its launch command made, is gone",
            None => "its lines no longer reach smxrun",
        };
        return format!(
            "error: process '{}'{} on {} lost: it said nothing for {} s ({why}); what it started here \
             was killed",
            o.process,
            o.pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
            o.host
                .as_deref()
                .map_or("this machine".to_string(), |h| format!("host {h}")),
            supervise::SILENT_FOR.as_secs(),
        );
    }
    let never_started = match (o.pid, launch, o.status.as_str()) {
        // Its kill is the supervisor's own, not a crash: say so, and why.
        (Some(_), _, "killed") => {
            "; smxrun killed it: it had not ended when its share of the stop ran out (paused, or stuck in a box)"
                .to_string()
        }
        (Some(_), _, _) => String::new(),
        (None, Some(launch), "killed") => {
            format!("; it never said it started (its launch command '{launch}' may be waiting, e.g. for a password)")
        }
        (None, Some(launch), _) => {
            format!("; its launch command '{launch}' ended before the slice started")
        }
        (None, None, _) => "; it never said it started".to_string(),
    };
    let how = match (o.exit_code, o.signal) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal} ({})", signal_name(signal)),
        (None, None) => "no exit status".to_string(),
    };
    // `killed` and `killed by signal 9` say one thing: once.
    let status = match (o.status.as_str(), o.signal) {
        ("killed", Some(_)) => String::new(),
        (status, _) => format!(" {status}:"),
    };
    format!(
        "error: process '{}'{}{status} {how}{never_started}",
        o.process,
        o.pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
    )
}

/// The name of a signal that ends a process, as `kill -l` gives it.
fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

/// The run's exit code from how the supervision ended, the processes that ended it and whether
/// any net ran (`ran`).
fn exit_code(ending: &supervise::Ending, causes: &[&supervise::Outcome], ran: bool) -> i32 {
    match ending {
        supervise::Ending::Stopped(_) => exit::INTERRUPTED,
        supervise::Ending::Died(_) => exit::BOX_FAILED,
        // It said why on its own line; nothing of the net ran there, and 1 says that nothing
        // ran anywhere (the processes start together); had another process's nets run, the run
        // would have failed as one with a box that could not start while others ran.
        supervise::Ending::Refused(_) if ran => exit::BOX_FAILED,
        supervise::Ending::Refused(_) => exit::REJECTED,
        // One that never started did not run a net: its launch command's exit code is not one
        // of smxrun's.
        supervise::Ending::Finished if causes.iter().any(|o| o.pid.is_none()) => exit::BOX_FAILED,
        supervise::Ending::Finished => causes
            .iter()
            .filter_map(|o| o.exit_code)
            .find(|c| *c != 0)
            .unwrap_or(if causes.is_empty() { exit::OK } else { exit::BOX_FAILED }),
    }
}
