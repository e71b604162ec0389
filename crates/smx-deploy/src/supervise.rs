//! Starting the slices, watching them, and stopping all of them.
//!
//! Each slice is a child of this process, directly or through its `launch` prefix, in a
//! process group of its own (a Ctrl-C at the terminal reaches the supervisor only, which then
//! stops the slices in order), with `PR_SET_PDEATHSIG` (SIGTERM) so that it stops with the
//! supervisor even when that is killed with SIGKILL, and with its stdin as the control pipe: a slice ends
//! at that pipe's end of file, which also reaches a slice behind a `launch` connection.
//!
//! The slices start together: each says when its boxes have initialised, and its nets wait
//! until every slice said so and the supervisor wrote each the go ([`protocol`]); a slice that
//! refuses its run or dies before then ends the others before any of their nets ran. So does a
//! slice that says it started in another protocol than this supervisor's, or in none (the
//! `smxrun` of another version on its host): it would never say it is ready, or misread its
//! job, and the run ends at once, the slice `refused` and the reason in its [`Outcome`].
//!
//! The job goes down that pipe as the pipe takes it, from the watch loop, never in one write
//! that could wait: a job can be larger than a pipe holds, and a `launch` that does not read
//! yet (`ssh` at a password prompt) would otherwise hold up the watching, the stops and the
//! kill of a slice that never started.

use std::io::{BufReader, ErrorKind, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::live::Live;
use crate::processes::Process;
use crate::protocol::{self, Event, Job};

/// How long the slices have to end on their own once one of them died, before they are killed:
/// the run ends within two seconds of a death.
pub const AFTER_DEATH: Duration = Duration::from_millis(1200);

/// How long the slices that run have to end on their own once one of them ended with a
/// non-zero exit code and a report, before they are stopped in order as on a stop: a slice that
/// waits for a peer that has gone may otherwise wait for as long as its links allow, or forever.
pub const AFTER_FAILURE: Duration = ALL_STOPS;

/// How long a slice that has not said it runs has, once the run ends without it (another slice
/// ended with a non-zero exit, died, or a stop was asked for), before its process group is
/// killed: a `launch` that waits (`ssh` at a password prompt) would never end by itself.
pub const UNSTARTED: Duration = Duration::from_millis(500);

/// How long the slices that are ready wait for a slice that has not even said it started (its
/// `launch` waits, e.g. for a password) before the run fails without it: as long as a link
/// waits for the process at its other end (a tcp link's timeout). A slice that started is
/// waited for as long as its boxes' init takes, as one process waits for all of its boxes.
pub const READY_WAIT: Duration = Duration::from_secs(10);

/// How long a slice that said it started may say nothing before the supervisor counts it lost
/// (its host, or the connection its `launch` made, is gone) and kills what it started here: a
/// slice says something every [`protocol::PROGRESS_EVERY`], from its start to its report, from
/// a thread of its own, so a slice whose boxes hang still speaks. A lost host is found so also
/// while the slices wait for each other (before any link's heartbeat runs), and a slow one has
/// forty times the interval. A slice on this machine that someone stopped (`SIGSTOP`, a
/// debugger) is left alone until it goes on; one on another host cannot be told apart.
pub const SILENT_FOR: Duration = Duration::from_secs(10);

/// How long all slices together have to end after a stop, one after the other, before what
/// remains is killed: within the 5 s after which `smxrun` gives up on a stopped run.
pub const ALL_STOPS: Duration = Duration::from_secs(3);

/// How long one slice has to end after its control pipe closed on a stop, before the next is
/// stopped: an equal share of [`ALL_STOPS`], at most a second.
fn per_stop(slices: usize) -> Duration {
    (ALL_STOPS / (slices.max(1) as u32 + 1)).min(Duration::from_secs(1))
}

/// How a slice's process ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub process: String,
    pub host: Option<String>,
    /// The slice's own pid (on its host), once it said it runs.
    pub pid: Option<u32>,
    /// `ok`, `stopped` (ended with a report after the supervisor stopped it: the run was stopped,
    /// or another slice died or failed), `ended` (non-zero exit with a report, by itself),
    /// `died` (no report: killed, crashed, connection lost), `refused` (its run was refused
    /// before it started, and it said why, or the supervisor refused it: see `refusal`),
    /// `killed` (by the supervisor, after it did not stop, or because it never said it
    /// started; then `pid` is `None`), `lost` (it said nothing for [`SILENT_FOR`]: its host
    /// or `launch` connection is gone; what it started here was killed).
    pub status: String,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// The slice's JSON report, when it wrote one.
    pub report: Option<String>,
    /// Why the supervisor refused the slice, when it did (`refused`): it speaks another
    /// protocol, with what to do about it.
    pub refusal: Option<String>,
}

/// Why the supervision ended early, if it did.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// Every slice ended by itself.
    Finished,
    /// A stop was asked for: a signal to `smxrun` (`None`), or to one of the slices alone
    /// (stopped from outside, it ends with its report and exit 130: its name).
    Stopped(Option<String>),
    /// This process died first.
    Died(String),
    /// This process refused its run before it started.
    Refused(String),
}

struct Running {
    process: Process,
    child: Child,
    stdin: Option<ChildStdin>,
    /// The job's line, and how much of it went down `stdin` so far.
    job: Vec<u8>,
    sent: usize,
    status: Option<ExitStatus>,
    pid: Option<u32>,
    report: Option<String>,
    closed_at: Option<Instant>,
    killed: bool,
    /// It said its run was refused before it started.
    refused: bool,
    /// It said every box of it has initialised; its nets wait for the go.
    ready: bool,
    /// When it last said anything.
    heard_at: Instant,
    /// It said nothing for [`SILENT_FOR`] and was killed for it.
    silent: bool,
    /// The protocol it said it started in, when that is not this supervisor's (`Some(None)`:
    /// it gave none).
    other_protocol: Option<Option<u32>>,
    /// It was asked to stop (or the run was stopping) before its end was seen.
    asked: bool,
    /// The run was stopped before it said it started: closed, or killed, for the stop.
    stopped_unstarted: bool,
    /// The pass of the watch loop in which its end was seen.
    seen_in: u64,
    /// It ended, with a report, because another slice died or refused its run: whatever ended
    /// it (the stop, or its links cut by that slice's end, before the stop reached it) came of
    /// that slice's end, not of its own run.
    after_cause: bool,
}

/// A slice's process that could not be started, and how those started before it ended: killed,
/// their files to be removed as those of any killed slice ([`crate::Deployment::clean_up`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NotStarted {
    pub error: String,
    pub outcomes: Vec<Outcome>,
}

/// Starts every job (`order`: the processes upstream first, the order they are stopped in),
/// supervises them until all ended, and returns how each ended and why the run ended. Their
/// progress goes to `live` as they tell it. The jobs go out once every process has started, so
/// a start that fails finds no slice that made anything yet.
pub fn supervise(
    exe: &Path,
    jobs: Vec<(Process, Job)>,
    stop: &AtomicBool,
    live: &Live,
) -> Result<(Vec<Outcome>, Ending), NotStarted> {
    let (events, inbox) = mpsc::channel::<(usize, Event)>();
    let mut running: Vec<Running> = Vec::new();
    for (i, (process, job)) in jobs.into_iter().enumerate() {
        match start(exe, &process, i, events.clone()) {
            Ok((child, stdin)) => running.push(Running {
                process,
                child,
                stdin: Some(stdin),
                job: job.to_line().into_bytes(),
                sent: 0,
                status: None,
                pid: None,
                report: None,
                closed_at: None,
                killed: false,
                refused: false,
                ready: false,
                heard_at: Instant::now(),
                silent: false,
                other_protocol: None,
                asked: false,
                stopped_unstarted: false,
                seen_in: 0,
                after_cause: false,
            }),
            Err(e) => {
                for r in &mut running {
                    kill(r);
                }
                let command = match &process.launch {
                    Some(launch) => format!("launch command '{launch}'"),
                    None => format!("command '{}'", exe.display()),
                };
                return Err(NotStarted {
                    error: format!(
                        "cannot start process '{}' with {command}: {}",
                        process.name,
                        plain_error(&e)
                    ),
                    outcomes: running.into_iter().map(outcome).collect(),
                });
            }
        }
    }
    drop(events);
    for r in &mut running {
        send_job(r);
    }
    let ending = watch(&mut running, &inbox, stop, live);
    let outcomes = running.into_iter().map(outcome).collect();
    Ok((outcomes, ending))
}

fn start(
    exe: &Path,
    process: &Process,
    index: usize,
    events: mpsc::Sender<(usize, Event)>,
) -> std::io::Result<(Child, ChildStdin)> {
    // `--process` for `ps`: which child is which process.
    let command = [
        exe.display().to_string(),
        protocol::SUBCOMMAND.to_string(),
        "--process".to_string(),
        process.name.clone(),
    ];
    // Behind `ssh`, quoted for the remote shell: `smxrun`'s path may hold a space.
    let words = process.launch_words(&command);
    let mut command = Command::new(&words[0]);
    command
        .args(&words[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // SAFETY: a plain system call that reads this process's pid.
    let supervisor = unsafe { libc::getpid() };
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            libc::setpgid(0, 0);
            // SIGTERM, not SIGKILL: the slice stops as on Ctrl-C, removes its files, and a slice
            // that cannot stop still exits once its stop timer runs out.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // A supervisor that died between the fork and the line above sent no signal: the
            // child then has another parent, and goes before it becomes a slice nobody watches.
            if libc::getppid() != supervisor {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let mut child = command.spawn()?;
    let stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    // The job is written as the pipe takes it ([`send_job`]): a write never waits.
    // SAFETY: file status flags of a pipe end this process owns; the slice's end keeps its own.
    unsafe {
        let fd = stdin.as_raw_fd();
        libc::fcntl(fd, libc::F_SETFL, libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK);
    }
    let watcher = std::thread::Builder::new()
        .name(format!("smx-watch-{index}"))
        .spawn(move || {
            let mut out = BufReader::new(stdout);
            while let Some(event) = protocol::read_event(&mut out) {
                if events.send((index, event)).is_err() {
                    break;
                }
            }
        });
    if let Err(e) = watcher {
        // Unwatched, it would run on untracked: it goes, with what its `launch` started.
        kill_group(&mut child);
        return Err(e);
    }
    Ok((child, stdin))
}

/// Writes to a slice's stdin what the pipe takes of the rest of its job, without waiting. A
/// slice that is gone before reading all of it makes the write fail: the rest is dropped, and
/// the watch notices its end.
fn send_job(r: &mut Running) {
    let Some(stdin) = r.stdin.as_mut() else { return };
    while r.sent < r.job.len() {
        match stdin.write(&r.job[r.sent..]) {
            Ok(n) if n > 0 => r.sent += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            _ => break,
        }
    }
    r.job = Vec::new();
    r.sent = 0;
}

/// Lets a ready slice's nets run: the go goes down its control pipe as its job did (the job is
/// all written by then: a slice is ready only once it read it).
fn let_go(r: &mut Running) {
    r.job = format!("{}\n", protocol::GO).into_bytes();
    r.sent = 0;
    send_job(r);
}

/// Waits up to `most` for a pipe with a job still to write to take more (or for its reader to
/// be gone); without one, sleeps `most`.
fn pause(running: &[Running], most: Duration) {
    let mut fds: Vec<libc::pollfd> = running
        .iter()
        .filter(|r| r.sent < r.job.len())
        .filter_map(|r| r.stdin.as_ref())
        .map(|stdin| libc::pollfd {
            fd: stdin.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        })
        .collect();
    if fds.is_empty() {
        std::thread::sleep(most);
        return;
    }
    // SAFETY: `fds` is a valid array of its length for the duration of the call.
    unsafe {
        libc::poll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            most.as_millis() as libc::c_int,
        );
    }
}

/// The supervision loop: jobs sent, events, exits, stops, deaths, failures, kills.
fn watch(running: &mut [Running], inbox: &mpsc::Receiver<(usize, Event)>, stop: &AtomicBool, live: &Live) -> Ending {
    let mut ending = Ending::Finished;
    let mut kill_at: Option<Instant> = None;
    // Once a slice ended by itself with a non-zero exit code: when the others are stopped.
    let mut stop_from: Option<Instant> = None;
    let mut kill_unstarted_at: Option<Instant> = None;
    // The pass in which a slice died or refused its run: those that end with it or after it
    // ended because of it, and so did those seen to end before it whose own run was stopped
    // or cut short by another process's end.
    let mut pass: u64 = 0;
    let mut cause_pass: Option<u64> = None;
    // Every slice said it is ready, and was told to go.
    let mut released = false;
    // When the first slice said it is ready.
    let mut first_ready: Option<Instant> = None;
    loop {
        pass += 1;
        for r in running.iter_mut() {
            send_job(r);
        }
        while let Ok((i, event)) = inbox.try_recv() {
            running[i].heard_at = Instant::now();
            match event {
                Event::Started(pid, protocol) => started(&mut running[i], pid, protocol),
                Event::Progress(messages, elapsed) => live.record(i, messages, elapsed),
                Event::Stats(snapshot) => live.record_stats(i, *snapshot),
                Event::Refused => running[i].refused = true,
                Event::Ready => running[i].ready = true,
                Event::Alive => {}
                Event::Report(json) => running[i].report = Some(json),
            }
        }
        kill_the_silent(running);
        // A slice of another protocol ends the run at once, before any net ran: it would
        // misread its job, or never say it is ready while the others wait for the go.
        if let Some(other) = running
            .iter()
            .find(|r| r.other_protocol.is_some() && r.status.is_none())
            && ending == Ending::Finished
            && !stop.load(Ordering::SeqCst)
        {
            ending = Ending::Refused(other.process.name.clone());
            cause_pass = Some(pass);
            for r in running.iter_mut() {
                close(r);
            }
            kill_at = Some(Instant::now() + AFTER_DEATH);
        }
        // Not into a run that is failing or stopping: its slices are being stopped, and would
        // run their nets for a moment first.
        let going_on = ending == Ending::Finished && stop_from.is_none() && !stop.load(Ordering::SeqCst);
        if !released && going_on && running.iter().all(|r| r.ready && r.status.is_none()) {
            released = true;
            for r in running.iter_mut() {
                let_go(r);
            }
        }
        if first_ready.is_none() && running.iter().any(|r| r.ready) {
            first_ready = Some(Instant::now());
        }
        // The ready slices waited long enough for one that never said it started: the run
        // fails as when a slice ends with a failure, and the slice that never started is the
        // cause (killed below, as any slice that never started once the run ends).
        let unstarted = running.iter().any(|r| r.status.is_none() && r.pid.is_none());
        if !released && stop_from.is_none() && unstarted && first_ready.is_some_and(|at| at.elapsed() >= READY_WAIT) {
            stop_from = Some(Instant::now());
        }
        for i in 0..running.len() {
            if running[i].status.is_none()
                && let Ok(Some(status)) = running[i].child.try_wait()
            {
                running[i].status = Some(status);
                running[i].seen_in = pass;
                running[i].asked = running[i].closed_at.is_some() || matches!(ending, Ending::Stopped(_));
                // The watcher thread may still be handing over the report that came just
                // before the exit.
                collect_late_report(running, inbox, i, live);
                if ending != Ending::Finished || running[i].asked {
                    continue;
                }
                if running[i].report.is_none() {
                    let name = running[i].process.name.clone();
                    ending = if running[i].refused || running[i].other_protocol.is_some() {
                        Ending::Refused(name)
                    } else {
                        Ending::Died(name)
                    };
                    cause_pass = Some(pass);
                    for r in running.iter_mut() {
                        close(r);
                    }
                    kill_at = Some(Instant::now() + AFTER_DEATH);
                } else if status.code() == Some(STOPPED_EXIT) && stop_from.is_none() {
                    // Stopped from outside (a SIGTERM to this process alone, as an operator or
                    // an orchestrator sends): the run stops with it, in order and at once, as
                    // on a stop asked of `smxrun`, and it is `stopped`, not failed.
                    running[i].asked = true;
                    // A stop that reached `smxrun` as well (a whole service stopped at once)
                    // is not this slice's alone.
                    let alone = !stop.load(Ordering::SeqCst);
                    ending = Ending::Stopped(alone.then(|| running[i].process.name.clone()));
                    cause_pass = Some(pass);
                } else if !status.success() && stop_from.is_none() {
                    stop_from = Some(Instant::now() + AFTER_FAILURE);
                }
            }
        }
        if running.iter().all(|r| r.status.is_some()) {
            let cause = match &ending {
                Ending::Died(cause) | Ending::Refused(cause) => Some(cause),
                Ending::Stopped(from_outside) => from_outside.as_ref(),
                Ending::Finished => None,
            };
            if let (Some(at), Some(cause)) = (cause_pass, cause) {
                for r in running.iter_mut().filter(|r| r.process.name != *cause) {
                    let stopped = r.status.and_then(|s| s.code()) == Some(STOPPED_EXIT);
                    r.after_cause = r
                        .report
                        .as_deref()
                        .is_some_and(|report| r.seen_in >= at || stopped || cut_short(report));
                }
            }
            return ending;
        }
        let stop_asked = stop.load(Ordering::SeqCst);
        if stop_asked && ending == Ending::Finished && stop_from.is_none() {
            ending = Ending::Stopped(None);
        }
        // A slice that has not said it runs cannot take part any more once the run is ending,
        // and its `launch` may wait for ever. Before that it is left alone: a password typed
        // at the terminal may still start it, and its nets may not need the others'.
        let ending_anyway = ending != Ending::Finished || stop_from.is_some();
        if ending_anyway && kill_unstarted_at.is_none() {
            for r in running.iter_mut().filter(|r| r.status.is_none() && r.pid.is_none()) {
                r.stopped_unstarted = matches!(ending, Ending::Stopped(_));
                close(r);
            }
            kill_unstarted_at = Some(Instant::now() + UNSTARTED);
        }
        if kill_unstarted_at.is_some_and(|at| Instant::now() >= at) {
            for r in running.iter_mut().filter(|r| r.status.is_none() && r.pid.is_none()) {
                r.stopped_unstarted |= matches!(ending, Ending::Stopped(_));
                kill(r);
            }
        }
        let failure_stops = stop_from.is_some_and(|at| stop_asked || Instant::now() >= at);
        if matches!(ending, Ending::Stopped(_)) || failure_stops {
            stop_next(running, &mut kill_at);
        }
        if kill_at.is_some_and(|at| Instant::now() >= at) {
            for r in running.iter_mut().filter(|r| r.status.is_none()) {
                kill(r);
            }
            kill_at = None;
        }
        // The ends of the slices killed in this pass.
        for r in running.iter_mut().filter(|r| r.status.is_some() && r.seen_in == 0) {
            r.seen_in = pass;
        }
        pause(running, Duration::from_millis(10));
    }
}

/// Whether a slice's report shows its run cut short by another process's end: a link whose
/// consumer closed before it took the end of the stream. Such a slice may end before the
/// supervisor sees the end that caused it (a process that dies is seen once it is reaped; its
/// peers may see it go before that).
fn cut_short(report: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(report).is_ok_and(|r| {
        r["nets"]
            .as_array()
            .is_some_and(|nets| nets.iter().any(protocol::consumer_gone))
    })
}

/// Stops the slices one after the other, in placement order (the process of the net's first
/// nodes, its sources, first): the next once the previous ended or had its share of
/// [`ALL_STOPS`]; what is left is killed a share after the last.
fn stop_next(running: &mut [Running], kill_at: &mut Option<Instant>) {
    let share = per_stop(running.len());
    let waiting = running
        .iter()
        .any(|r| r.status.is_none() && r.closed_at.is_some_and(|at| at.elapsed() < share));
    if waiting {
        return;
    }
    match running.iter_mut().find(|r| r.status.is_none() && r.closed_at.is_none()) {
        Some(next) => close(next),
        None if kill_at.is_none() => *kill_at = Some(Instant::now() + share),
        None => {}
    }
}

fn collect_late_report(running: &mut [Running], inbox: &mpsc::Receiver<(usize, Event)>, i: usize, live: &Live) {
    let until = Instant::now() + Duration::from_millis(200);
    let told = |r: &Running| r.report.is_some() || r.refused || r.other_protocol.is_some();
    while !told(&running[i]) && Instant::now() < until {
        match inbox.recv_timeout(Duration::from_millis(20)) {
            Ok((j, Event::Report(json))) => running[j].report = Some(json),
            Ok((j, Event::Refused)) => running[j].refused = true,
            Ok((j, Event::Started(pid, protocol))) => started(&mut running[j], pid, protocol),
            Ok((j, Event::Ready)) => running[j].ready = true,
            Ok((_, Event::Alive)) => {}
            // Too late for a progress line, not for the live figures' last line.
            Ok((_, Event::Progress(..))) => {}
            Ok((j, Event::Stats(snapshot))) => live.record_stats(j, *snapshot),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
}

/// A slice said it started: its pid, and the protocol it speaks, kept when it is another.
fn started(r: &mut Running, pid: u32, protocol: Option<u32>) {
    r.pid = Some(pid);
    if protocol != Some(protocol::PROTOCOL) {
        r.other_protocol = Some(protocol);
    }
}

/// An error as the system words it, without Rust's `(os error N)`.
fn plain_error(e: &std::io::Error) -> String {
    let text = e.to_string();
    match e.raw_os_error() {
        Some(code) => text
            .strip_suffix(&format!(" (os error {code})"))
            .unwrap_or(&text)
            .to_string(),
        None => text,
    }
}

/// Closes the slice's control pipe, which stops it; what of its job was not written yet is
/// dropped.
fn close(r: &mut Running) {
    r.job = Vec::new();
    r.sent = 0;
    if r.stdin.take().is_some() {
        r.closed_at = Some(Instant::now());
    }
}

/// Kills the slice's whole process group (the `launch` command and what it started).
fn kill(r: &mut Running) {
    r.killed = true;
    if let Some(status) = kill_group(&mut r.child) {
        r.status = Some(status);
    }
}

/// Kills a child's process group (it leads one of its own) and reaps it.
fn kill_group(child: &mut Child) -> Option<ExitStatus> {
    signal_group(child, libc::SIGKILL);
    child.wait().ok()
}

/// Kills each slice that said it started and then nothing for [`SILENT_FOR`]; its end is then
/// seen as any death is.
fn kill_the_silent(running: &mut [Running]) {
    let waiting = |r: &&mut Running| r.status.is_none() && r.pid.is_some() && r.report.is_none() && !r.silent;
    for r in running.iter_mut().filter(waiting) {
        if r.heard_at.elapsed() >= SILENT_FOR / 2 && stopped_on_purpose(r) {
            // Paused time is no silence: once it goes on, it has the whole span to speak.
            r.heard_at = Instant::now();
        }
        if r.heard_at.elapsed() >= SILENT_FOR {
            r.silent = true;
            r.killed = true;
            signal_group(&r.child, libc::SIGKILL);
        }
    }
}

/// Whether the slice's process is on this machine and stopped (a `SIGSTOP`, a debugger that
/// attached): it says nothing because someone paused it, and goes on when they let it.
fn stopped_on_purpose(r: &Running) -> bool {
    let Some(pid) = r.pid.filter(|_| r.process.on_this_machine()) else {
        return false;
    };
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat[stat.rfind(')').map_or(0, |at| at + 1)..].trim_start();
        state.starts_with('T') || state.starts_with('t')
    })
}

/// Sends `signal` to the child's process group and to the child.
fn signal_group(child: &Child, signal: libc::c_int) {
    let pid = child.id() as i32;
    // SAFETY: plain system calls on a child this process started.
    unsafe {
        libc::kill(-pid, signal);
        libc::kill(pid, signal);
    }
}

/// The exit code of a slice whose run was stopped (as `smxrun`'s on a stop).
pub const STOPPED_EXIT: i32 = 130;

fn outcome(r: Running) -> Outcome {
    let status = r.status.expect("every slice ended");
    let status_word = match (&r.report, status.success(), r.killed) {
        // Stopped because another slice died or refused its run: `stopped`, also when its own
        // end came before the stop reached it because that slice's end cut its links short
        // (its consumer closed); `ended` when it found its links cut and its books say so.
        // One killed after its report came was stopped, and slow to exit.
        (Some(_), _, _) if r.after_cause => match status.code() {
            Some(0 | STOPPED_EXIT) | None => "stopped",
            _ => "ended",
        },
        (Some(_), true, _) => "ok",
        (Some(_), false, false) if r.asked => "stopped",
        (Some(_), false, _) => "ended",
        // Refused by the supervisor, and killed when it did not stop.
        (None, _, _) if r.other_protocol.is_some() => "refused",
        (None, _, _) if r.silent => "lost",
        // Closed or killed because the run was stopped before it started: no failure, also
        // when its `launch` ended by itself once its slice's pipe closed.
        (None, _, _) if r.stopped_unstarted && r.pid.is_none() => "stopped",
        (None, _, true) => "killed",
        (None, _, false) if r.refused => "refused",
        (None, _, false) => "died",
    };
    let refusal = r.other_protocol.filter(|_| r.report.is_none()).map(|theirs| {
        let host = r.process.host.as_deref().unwrap_or("this machine");
        format!(
            "its smxrun speaks {}, this smxrun speaks {}: run the same smxrun version on {host} as here",
            protocol::protocol_words(theirs),
            protocol::protocol_words(Some(protocol::PROTOCOL))
        )
    });
    Outcome {
        process: r.process.name,
        host: r.process.host,
        pid: r.pid,
        status: status_word.to_string(),
        exit_code: status.code(),
        signal: status.signal(),
        report: r.report,
        refusal,
    }
}
