//! `smxrun __slice`: one slice of a split net, under a supervisor (its job on stdin, its
//! answers on stdout) or from a job file that `smxrun split` wrote.

use std::io::{BufRead, Read, Write};
use std::os::fd::FromRawFd;
use std::path::Path;
use std::sync::Arc;

use clap::Parser;
use smx_deploy::names::SliceNames;
use smx_deploy::protocol::{self, Job};
use smx_runtime::{Progress, Registry};

use crate::cli::args::{RunArgs, SliceArgs};
use crate::cli::exit::CliError;
use crate::cli::output::Output;
use crate::cli::signals;

/// How a slice runs its net: the command line's `run`, handed in, so that this module does not
/// reach back into the one that calls it; the run keeps its figures in the [`Progress`] given.
pub type RunNet = fn(&RunArgs, &Registry, Progress) -> Result<i32, CliError>;

/// A supervised slice's stdout, shared by its progress and its report.
type Answers = Arc<std::sync::Mutex<Box<dyn Write + Send>>>;

/// Runs the slice of a job (from stdin under a supervisor, else from `--job`) as `smxrun run`
/// runs a net, and hands its report, with the process, host, pid, exit code and the split's
/// plan added, to the supervisor (or writes it to `--report`). Once the job is read, whatever
/// keeps its nets from starting is a refusal: the supervisor (or the merge) learns why.
pub fn run_slice(args: &SliceArgs, registry: &Registry, run_net: RunNet) -> Result<i32, CliError> {
    let supervised = args.job.is_none();
    if !supervised && let Some(path) = &args.report {
        keep_earlier_report(path)?;
    }
    // Started by hand, its report's destination is made ready before the run, as `-o` is: a
    // slice that ran and then could not write its report would have disturbed its peers'
    // links for nothing, and its books would be gone.
    let report_to = match (supervised, &args.report) {
        (false, Some(path)) => {
            Some(Output::open(Some(path)).map_err(|e| CliError::rejected(format!("--report: {}", e.message)))?)
        }
        _ => None,
    };
    let started = unix_seconds();
    let answers = answer_channel(supervised)?;
    // Before the job: a supervisor of another protocol learns it from this line, whose form
    // stays, and ends the run naming both versions, while this slice refuses the job.
    let _ = protocol::write_started(&mut *lock(&answers), std::process::id());
    // From here to the report the supervisor hears from this slice at least every
    // `PROGRESS_EVERY`: one it does not hear from is lost (its host, or its `launch` connection).
    let progress = Progress::new();
    let stats_every = Arc::new(std::sync::OnceLock::new());
    let telling =
        supervised.then(|| ProgressTeller::start(progress.clone(), Arc::clone(&stats_every), Arc::clone(&answers)));
    let job = read_job(args)?;
    let _ = stats_every.set(job.stats_every);
    // The user knows the nodes by their ids in the whole net (report, `--set`); a job written
    // without the whole net's plan can only give the slice's own.
    let names = SliceNames::from_plan(&job.plan, &job.process).unwrap_or_default();
    if supervised {
        signals::SUPERVISED.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    // Started by hand too: the slices of a split run side by side, and their lines say whose
    // they are.
    let speaking = names.clone();
    crate::cli::speak_as(&job.process, move |line| speaking.rename(line));
    let answers = supervised.then_some(&answers);
    let slice = Slice {
        args,
        job: &job,
        names: &names,
        answers,
        started,
        nets: progress.clone(),
        report_to: std::cell::RefCell::new(report_to),
    };
    let go = Arc::new(Go::default());
    let ready = admit(args, &job).and_then(|()| {
        if supervised {
            watch_control_pipe(Arc::clone(&go));
        }
        workspace(&job)
    });
    let (dir, mut run_args) = match ready {
        Ok(ready) => ready,
        Err(e) => return slice.refuse(&e).map(|()| e.code),
    };
    run_args.shared_cores = job.shared_cores.clone();
    if let Some(answers) = answers.filter(|_| job.start_together) {
        let answers = Arc::clone(answers);
        progress.hold_start(move |stop| {
            let _ = protocol::write_ready(&mut *lock(&answers));
            go.wait(stop)
        });
    }
    let result = run_net(&run_args, registry, progress);
    drop(telling);
    let report = read_report(&dir.path().join(REPORT));
    match (result, report) {
        (Ok(code), Some(mut report)) => {
            let code = if supervised {
                code
            } else {
                slice.peers_that_never_came(&mut report);
                slice.links_that_carried_nothing(&mut report, code)
            };
            slice.hand_in(report, code).map(|()| code)
        }
        (Ok(code), None) => Ok(code),
        (Err(e), Some(report)) => {
            slice.say_error(&e);
            slice.hand_in(report, e.code).map(|()| e.code)
        }
        (Err(e), None) => slice.refuse(&e).map(|()| e.code),
    }
}

/// Refuses a `--report` that already holds something: a slice started again by mistake
/// would otherwise replace the report of its earlier, finished run with that of a run that
/// found no peers, and the merge would then read a good run as a lost one.
fn keep_earlier_report(path: &Path) -> Result<(), CliError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() > 0 => Err(CliError::rejected(format!(
            "--report {}: the file exists (the report of an earlier run of this slice?) and is never replaced: \
             move it away, or give another --report, to run the slice again",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// What makes the links of a split wait longer for the processes at their other ends.
const LINK_TIMEOUT_HINT: &str = "for processes that an orchestrator starts apart, `smxrun split ... --link-timeout \
                                 120s` makes every link wait longer";

/// Now, in seconds since the Unix epoch.
fn unix_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The name of the slice's report in its private directory.
const REPORT: &str = "report.json";

/// What a slice knows of itself once its job is read: to say its errors and hand in its report.
struct Slice<'a> {
    args: &'a SliceArgs,
    job: &'a Job,
    names: &'a SliceNames,
    /// The supervisor's channel; `None`: started by hand.
    answers: Option<&'a Answers>,
    /// When its process started, in seconds since the Unix epoch.
    started: f64,
    /// The run's progress, which knows since when its nets ran.
    nets: Progress,
    /// Started by hand with `--report`: that file, opened before the run.
    report_to: std::cell::RefCell<Option<Output>>,
}

impl Slice<'_> {
    /// Where the ports of this process's links come from, when `e` says that one of them is
    /// taken: the link box and endpoint its line names are the split's, not the user's words.
    fn port_taken(&self, e: &CliError) -> Option<String> {
        let process = &self.job.process;
        let into_this = |link: &&serde_json::Value| {
            link["to_process"].as_str() == Some(process.as_str())
                && link["source_label"]
                    .as_str()
                    .is_some_and(|label| e.message.contains(&format!("{label}:")))
        };
        let links = self.job.plan["links"].as_array()?;
        // Over tcp: a link over ipc has no port.
        let taken = e.message.contains("address in use") && e.message.contains("tcp://");
        links.iter().find(into_this).filter(|_| taken)?;
        Some(format!(
            "the links into process '{process}' listen on tcp ports from its `port` on, two each (the \
             configuration's [process.{process}], {} by default): give it ports no other program holds",
            smx_deploy::processes::DEFAULT_PORT
        ))
    }

    fn say_error(&self, e: &CliError) {
        // Every line of this process begins with its name already, and names its boxes as
        // the whole net does.
        crate::cli::say(&format!("error: {}", e.message));
    }

    /// The slice's run was refused before its nets started: it says why, and tells the
    /// supervisor so, or, started by hand, hands in a stand-in report from which the merge
    /// learns that the run was refused, not that the process died.
    fn refuse(&self, e: &CliError) -> Result<(), CliError> {
        self.say_error(e);
        if let Some(note) = self.port_taken(e) {
            crate::cli::say(&format!("note: {note}"));
        }
        match self.answers {
            Some(answers) => {
                let _ = protocol::write_refused(&mut *lock(answers));
                Ok(())
            }
            None => {
                // A link's source whose producer's process did not come in time.
                if e.message.contains(" within timeout ") {
                    crate::cli::say(&format!("note: {LINK_TIMEOUT_HINT}"));
                }
                self.hand_in(serde_json::json!({"refused": self.names.rename(&e.message)}), e.code)
            }
        }
    }

    /// Started apart from its peers, a slice whose link gave up on a peer that did not come
    /// (the link's sink found no consumer attached within its timeout, the ZeroMQ link's
    /// source heard from no sender) says how to make the links wait longer.
    fn peers_that_never_came(&self, report: &mut serde_json::Value) {
        let never_came: Vec<String> = report["nets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|n| {
                let stats = &n["stats"];
                stats["peer"] == "absent" || (stats["end"] == "timeout" && stats["senders_seen"] == 0)
            })
            .filter_map(|n| n["name"].as_str().map(str::to_string))
            .collect();
        if never_came.is_empty() {
            return;
        }
        let line = format!(
            "{}: the process at the other end did not come within the link's timeout; {LINK_TIMEOUT_HINT}",
            never_came.join(", ")
        );
        crate::cli::say(&format!("note: {line}"));
        if let Some(warnings) = report["warnings"].as_array_mut() {
            warnings.push(serde_json::Value::from(line));
        }
    }

    /// Started apart from its peers (by an orchestrator), a slice whose links carried nothing
    /// did not run as part of the whole net: the process at a link's other end never came, or
    /// came and refused its run (its box could not start), or stopped before its nets ran. Its
    /// clean exit would hide that, so it ends with books not clean (3), as a ZeroMQ link that
    /// delivered or received nothing does, each such link named on stderr and in the report's
    /// warnings; with no supervisor, nothing else would tell the orchestrator.
    fn links_that_carried_nothing(&self, report: &mut serde_json::Value, code: i32) -> i32 {
        let count = |stats: &serde_json::Value, key: &str| stats[key].as_u64().unwrap_or(0);
        let mut lines = Vec::new();
        for net in report["nets"].as_array().into_iter().flatten() {
            let stats = &net["stats"];
            let name = net["name"].as_str().unwrap_or_default();
            // A link box's figures name its role and its peer's end.
            let Some(peer) = stats["peer"].as_str() else { continue };
            let taken = count(stats, "written").saturating_sub(count(stats, "left") + count(stats, "lost"));
            let nothing = match stats["role"].as_str() {
                // Its consumer ended without taking one (a sink left with nothing to send sees
                // its consumer drain the empty stream).
                Some("sink") => taken == 0 && peer != "drained",
                Some("source") => count(stats, "received") == 0,
                _ => false,
            };
            if nothing {
                lines.push(format!(
                    "{name}: nothing crossed the link (its peer: {peer}): the process at its other end ran \
                     none of its nets (it may have refused its run: its report says why), or none past the start"
                ));
            }
        }
        if lines.is_empty() || code != 0 {
            return code;
        }
        for line in &lines {
            crate::cli::say(&format!("warning: {line}"));
        }
        if let Some(warnings) = report["warnings"].as_array_mut() {
            warnings.extend(lines.into_iter().map(serde_json::Value::from));
        }
        crate::cli::exit::BOOKS_NOT_CLEAN
    }

    /// The slice's report with its process, host, pid, exit code and the split's plan added: to
    /// the supervisor, else to `--report` or stdout.
    fn hand_in(&self, mut report: serde_json::Value, code: i32) -> Result<(), CliError> {
        report["process"] = serde_json::json!(self.job.process);
        report["host"] = serde_json::json!(self.job.host);
        report["exit_code"] = serde_json::json!(code);
        report["pid"] = serde_json::json!(std::process::id());
        report["plan"] = self.job.plan.clone();
        // When it ran, on its host's clock: the slices of one run of a split ran at one time,
        // which tells their reports from those of another run of the same split.
        let now = unix_seconds();
        report[protocol::RAN] = serde_json::json!({"from_unix_s": self.started, "to_unix_s": now});
        // When its nets were released, on the same clock: the slices of a split started by hand
        // do not start together, and the whole net ran from the last one's start.
        if let Some(ran) = self.nets.elapsed() {
            report[protocol::RAN]["nets_from_unix_s"] = serde_json::json!(now - ran.as_secs_f64());
        }
        let text = serde_json::to_string(&report).unwrap_or_default();
        match (self.answers, &self.args.report) {
            (Some(answers), _) => {
                let _ = protocol::write_report(&mut *lock(answers), &text);
            }
            (None, Some(path)) => match self.report_to.borrow_mut().take() {
                Some(output) => output.write(&text)?,
                None => Output::open(Some(path))?.write(&text)?,
            },
            (None, None) => Output::open(None)?.write(&text)?,
        }
        Ok(())
    }
}

/// Whether this process may run the job: it is the job of the process it was started as, and
/// its cores can be kept to. Before any thread: the ones this slice starts inherit the
/// narrower mask.
fn admit(args: &SliceArgs, job: &Job) -> Result<(), CliError> {
    if let Some(process) = args.process.as_ref().filter(|p| **p != job.process) {
        return Err(CliError::rejected(format!(
            "--process {process}: the job is the slice of process '{}'",
            job.process
        )));
    }
    if let Some(cores) = &job.cores_allowed {
        smx_timing::sched::keep_to_cores(cores)
            .map_err(|e| CliError::rejected(format!("process '{}': its job's cores_allowed: {e}", job.process)))?;
    }
    // A slice that a supervisor starts is cleaned up after when it dies; one that an
    // orchestrator starts is not, and the link files of those killed before their end would
    // keep their room in memory: a slice with links in shared memory sweeps them first.
    let shm = [smx_deploy::slice::SHM_SINK, smx_deploy::slice::SHM_SOURCE];
    if job.graph.nodes.iter().any(|n| shm.contains(&n.func.as_str())) {
        smx_shm::remove_stale_links(Path::new(smx_deploy::slice::SHM_DIR), smx_deploy::slice::SHM_PREFIX);
    }
    Ok(())
}

/// The slice's private directory (its graph and its report; mode 0700, the graph holds the
/// links' keys) and the options its net runs with.
fn workspace(job: &Job) -> Result<(Workspace, RunArgs), CliError> {
    use std::os::unix::fs::PermissionsExt;
    protocol::remove_stale_slice_dirs(&std::env::temp_dir());
    let dir = tempfile::Builder::new()
        .prefix(&format!("{}{}-", protocol::DIR_PREFIX, std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .map_err(|e| CliError::rejected(format!("cannot make the slice's directory: {e}")))?;
    // Made with that mode, less the umask, which may leave it wider than asked or narrower.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
        .map_err(|e| CliError::rejected(format!("cannot make the slice's directory private: {e}")))?;
    let held = protocol::hold_slice_dir(dir.path())
        .map_err(|e| CliError::rejected(format!("cannot hold the slice's directory: {e}")))?;
    let run_args = run_args(job, dir.path(), &dir.path().join(REPORT))?;
    Ok((Workspace { dir, _held: held }, run_args))
}

/// The slice's private directory, held ([`protocol::hold_slice_dir`]) until it is removed.
struct Workspace {
    dir: tempfile::TempDir,
    _held: std::fs::File,
}

impl Workspace {
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The report the slice's run wrote, if it wrote one that reads as JSON.
fn read_report(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// The job: from `--job`, else the supervisor's line on stdin.
fn read_job(args: &SliceArgs) -> Result<Job, CliError> {
    match &args.job {
        Some(path) => {
            let text =
                protocol::read_capped(path).map_err(|e| CliError::rejected(format!("{}: {e}", path.display())))?;
            Job::parse(&text).map_err(|e| CliError::rejected(format!("{}: {e}", path.display())))
        }
        // Under a supervisor, its own lines are not yet prefixed with the process's name.
        None => Job::read(&mut std::io::stdin().lock()).map_err(|e| match &args.process {
            Some(process) => CliError::rejected(format!("process '{process}': {e}")),
            None => CliError::rejected(e),
        }),
    }
}

/// Where the slice's answers go: under a supervisor stdout, which is then the answer channel
/// alone (what boxes print goes to stderr); else nowhere.
fn answer_channel(supervised: bool) -> Result<Answers, CliError> {
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
    Ok(Arc::new(std::sync::Mutex::new(answers)))
}

fn lock(answers: &Answers) -> std::sync::MutexGuard<'_, Box<dyn Write + Send>> {
    answers.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The options of `smxrun run` for the job's slice, written as a graph into `dir`, its JSON
/// report going to `report`.
fn run_args(job: &Job, dir: &Path, report: &Path) -> Result<RunArgs, CliError> {
    let net = dir.join(format!("{}.json", job.process));
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&net)?;
        file.write_all(smx_graph::json::to_json(&job.graph).as_bytes())
    };
    write().map_err(|e| CliError::rejected(format!("{}: {e}", net.display())))?;
    let mut argv: Vec<String> = vec!["smxrun".into(), "run".into(), net.display().to_string()];
    argv.extend(["--report", "json", "-q", "-o"].map(str::to_string));
    argv.push(report.display().to_string());
    argv.extend(job.args.iter().cloned());
    let cli = crate::cli::args::Cli::try_parse_from(&argv)
        .map_err(|e| CliError::rejected(format!("slice arguments: {e}")))?;
    let mut args = match cli.command {
        Some(crate::cli::args::Command::Run(a)) => a,
        _ => cli.run,
    };
    args.from_job = true;
    Ok(args)
}

/// The live figures' interval the job asks for, once the job is read (`None` inside: none).
type StatsEvery = Arc<std::sync::OnceLock<Option<std::time::Duration>>>;

/// A thread that tells the supervisor, every [`protocol::PROGRESS_EVERY`], that the slice is
/// there until its nets run and their progress while they run, for the run's one progress
/// line, and its live figures every `stats_every` if the job asks (and once more at the end,
/// the final counts); it ends when dropped, before the report goes over the same channel.
struct ProgressTeller {
    stop: Option<crossbeam_channel::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    progress: Progress,
    stats_every: StatsEvery,
    answers: Answers,
}

impl ProgressTeller {
    fn start(progress: Progress, stats_every: StatsEvery, answers: Answers) -> ProgressTeller {
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let (sampled, asked, out) = (progress.clone(), Arc::clone(&stats_every), Arc::clone(&answers));
        let thread = std::thread::Builder::new()
            .name("smx-progress".into())
            .stack_size(256 * 1024)
            .spawn(move || tell_until(&stopped, &sampled, &asked, &out))
            .ok();
        ProgressTeller {
            stop: Some(stop),
            thread,
            progress,
            stats_every,
            answers,
        }
    }
}

fn tell_until(stopped: &crossbeam_channel::Receiver<()>, progress: &Progress, asked: &StatsEvery, answers: &Answers) {
    let mut next_stats: Option<std::time::Instant> = None;
    let mut next_progress = std::time::Instant::now() + protocol::PROGRESS_EVERY;
    loop {
        let stats_every = asked.get().copied().flatten();
        // Until the nets run, looked at often enough that the first figures are due half an
        // interval after their start, not after the next progress telling.
        let before_start = stats_every
            .filter(|_| next_stats.is_none())
            .map(|every| std::time::Instant::now() + (every / 8).max(std::time::Duration::from_millis(1)));
        let wake = next_stats
            .or(before_start)
            .map_or(next_progress, |at| at.min(next_progress));
        if !matches!(
            stopped.recv_deadline(wake),
            Err(crossbeam_channel::RecvTimeoutError::Timeout)
        ) {
            return;
        }
        let now = std::time::Instant::now();
        // The live figures come at instants on one grid of the machine's monotonic clock, the
        // first at least half an interval after the nets started: every slice on this machine
        // counts at the same instants, so that the supervisor's line of the whole net puts
        // together counts of one moment, not a source's of one and its sink's of another.
        if let (Some(every), Some(elapsed)) = (stats_every, progress.elapsed()) {
            let started = now.checked_sub(elapsed).unwrap_or(now);
            let at = *next_stats.get_or_insert_with(|| on_grid_after((started + every / 2).max(now), every));
            if now >= at
                && let Some(snapshot) = progress.snapshot()
            {
                next_stats = Some(on_grid_after(now, every));
                next_progress = now + protocol::PROGRESS_EVERY;
                let mut out = answers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if protocol::write_stats(&mut *out, &snapshot).is_err() {
                    return;
                }
                continue;
            }
        }
        if now < next_progress {
            continue;
        }
        next_progress = now + protocol::PROGRESS_EVERY;
        let mut out = answers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let told = match progress.elapsed() {
            None => protocol::write_alive(&mut *out),
            Some(elapsed) => protocol::write_progress(&mut *out, progress.messages(), elapsed),
        };
        if told.is_err() {
            return;
        }
    }
}

/// The first instant after `after` at which the machine's monotonic clock is a whole multiple
/// of `every`: the same instants in every process of this machine.
fn on_grid_after(after: std::time::Instant, every: std::time::Duration) -> std::time::Instant {
    let clock_ns = u128::from(smx_timing::clock::monotonic_ns());
    let now = std::time::Instant::now();
    let after_ns = clock_ns + after.saturating_duration_since(now).as_nanos();
    let every_ns = every.as_nanos().max(1);
    let grid_ns = (after_ns / every_ns + 1) * every_ns;
    now + std::time::Duration::from_nanos((grid_ns - clock_ns).min(u64::MAX as u128) as u64)
}

impl Drop for ProgressTeller {
    fn drop(&mut self) {
        // Dropping the sender wakes the thread at once.
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // The run is over: its final counts, which are its report's.
        if self.stats_every.get().copied().flatten().is_some()
            && let Some(now) = self.progress.snapshot()
        {
            let mut out = self.answers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let _ = protocol::write_stats(&mut *out, &now);
        }
    }
}

/// The supervisor's answer to a slice that said it is ready: go (`true`), or the end of the
/// control pipe before it (`false`: the run ends before the slice's nets ran).
#[derive(Default)]
struct Go {
    answer: std::sync::Mutex<Option<bool>>,
    answered: std::sync::Condvar,
}

impl Go {
    fn answer(&self, go: bool) {
        let mut answer = self.answer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        answer.get_or_insert(go);
        self.answered.notify_all();
    }

    /// The answer, or `false` once `stop` is set (a signal to this process alone).
    fn wait(&self, stop: &std::sync::atomic::AtomicBool) -> bool {
        let mut answer = self.answer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            if let Some(go) = *answer {
                return go;
            }
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                return false;
            }
            answer = self
                .answered
                .wait_timeout(answer, std::time::Duration::from_millis(20))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }
}

/// A thread that reads the control pipe (stdin): the supervisor's go lets the slice's nets
/// run, and its end (the supervisor closed the pipe or is gone) is the stop a Ctrl-C would be,
/// also for nets still waiting for the go.
fn watch_control_pipe(go: Arc<Go>) {
    let _ = std::thread::Builder::new()
        .name("smx-control".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut line = Vec::new();
            loop {
                line.clear();
                // A line is at most the go; anything longer is not the supervisor's.
                match (&mut stdin).take(256).read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if line.trim_ascii_end() == protocol::GO.as_bytes() => go.answer(true),
                    Ok(_) => {}
                }
            }
            go.answer(false);
            // SAFETY: sending this process a signal its run handles as a stop.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGTERM);
            }
        });
}
