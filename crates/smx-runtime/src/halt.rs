//! How a run ends after a stop, within a bound: drain, then halt, then leave what is stuck.
//!
//! A stop ends the sources, and the nets drain what is buffered and end through their
//! channels. That is not always enough: a cycle fed by a source never drains (its routing
//! node and its boxes keep forwarding, or wait on each other's full channels), and a box may
//! never return from its step. So the thread that joins the run keeps time from the stop:
//! * for [`DRAIN`] the nets drain on their own, as before;
//! * then it sets the run's halt ([`ThreadEnds::halt`]) and unparks every thread of the run: every
//!   wait on a channel gives up (a write into a full channel is refused and counted as
//!   dropped, a wait for a message returns with nothing), routing nodes and box loops end as
//!   `stopped`, and firewalls close their pairs. The books stay exact: what is still inside a
//!   channel is counted `left` when its consumer closes.
//! * at [`GIVE_UP`] it stops waiting for the threads that have still not ended (a box stuck in
//!   its own step, which the runtime cannot interrupt): their nets are reported `stuck`, from
//!   the live counters, and the channels they hold are marked as not settled (their books are
//!   a snapshot and need not balance). Their threads are left running; a process exits
//!   without them.
//! * except a thread that the kernel shows runnable with next to no CPU time since the halt
//!   ([`kernel`]): it was kept off the cores, not stuck, so the wait goes on for it, up to
//!   [`STARVED_LIMIT`]. A loaded machine then gets a late report that is right rather than a
//!   timely one that calls healthy boxes stuck.
//!
//! Nothing here runs before a stop except the wait itself, which wakes when a thread ends.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::thread::{JoinHandle, Thread, ThreadId};
use std::time::{Duration, Instant};

use crate::firewall::{RunningFirewall, RunningShard};
use crate::kernel;
use crate::report::{FirewallReport, Report, Status};
use crate::run_state::Starting;
use crate::run_state::{Outcome, RunState, ThreadEnds};
use crate::thread::panic_text;

/// After a stop, how long the nets may drain on their own before the halt.
pub const DRAIN: Duration = Duration::from_millis(300);

/// After a stop, how long the run waits for its threads before it reports the rest `stuck`.
/// A box's own waits after a stop must fit in it (the ZeroMQ sink's `STOP_GRACE` does), and the
/// report must still be out within a second of the stop.
pub const GIVE_UP: Duration = Duration::from_millis(850);

/// After a stop, how long the run waits at most for a thread that only had no CPU ([`kernel`]).
pub const STARVED_LIMIT: Duration = Duration::from_secs(4);

/// CPU time since the halt below which a runnable thread has not yet had its chance to end.
const STARVED_CPU_NS: u64 = 20_000_000;

/// How often the joining thread looks at the stop flag while no thread ends.
const LOOK: Duration = Duration::from_millis(20);

/// CPU time of the thread `id` now, when the kernel says.
fn cpu_ns(ends: &ThreadEnds, id: ThreadId) -> Option<u64> {
    Some(kernel::look(ends.kernel_tid(id)?)?.cpu_ns)
}

/// Whether thread `id` is runnable and had less than [`STARVED_CPU_NS`] since `at_halt`
/// (its CPU time at the halt), or has not even started (on Linux, where every started
/// thread is known).
fn starved(ends: &ThreadEnds, id: ThreadId, at_halt: Option<u64>) -> bool {
    let Some(tid) = ends.kernel_tid(id) else {
        return cfg!(target_os = "linux");
    };
    match kernel::look(tid) {
        Some(seen) => seen.runnable && seen.cpu_ns.saturating_sub(at_halt.unwrap_or(0)) < STARVED_CPU_NS,
        None => false,
    }
}

/// What the joins gave.
pub(crate) struct Joined {
    /// By net id; `None` for a net no thread took.
    pub outcomes: Vec<Option<Outcome>>,
    pub firewalls: Vec<FirewallReport>,
    pub warnings: Vec<String>,
    /// Nets whose thread had not ended at [`GIVE_UP`].
    pub stuck: Vec<usize>,
}

/// What a box thread hands back: the outcome of each net it ran (one, or a chain's).
pub(crate) type NetsHandle = JoinHandle<Vec<(usize, Outcome)>>;

enum Running {
    /// A box thread and the nets it runs.
    Net(Vec<usize>, NetsHandle),
    /// A firewall thread and its place in the run's list of them.
    Shard(usize, RunningShard),
}

impl Running {
    fn finished(&self) -> bool {
        match self {
            Running::Net(_, h) => h.is_finished(),
            Running::Shard(_, s) => s.is_finished(),
        }
    }

    fn thread(&self) -> &Thread {
        match self {
            Running::Net(_, h) => h.thread(),
            Running::Shard(_, s) => s.thread(),
        }
    }
}

/// Joins every thread of a run: nets (`(id, handle)`) and firewalls, ending the run within
/// [`GIVE_UP`] of a stop as the module docs say. `nets`: how many nets the plan has;
/// `started`: when the nets were released (the wall time of a stuck net).
pub(crate) fn join(
    handles: impl IntoIterator<Item = (Vec<usize>, NetsHandle)>,
    firewalls: RunningFirewall,
    run: &RunState,
    nets: usize,
    started: Instant,
) -> Joined {
    let mut running: Vec<Running> = handles.into_iter().map(|(id, h)| Running::Net(id, h)).collect();
    let shards = firewalls.shards.len();
    running.extend(
        firewalls
            .shards
            .into_iter()
            .enumerate()
            .map(|(k, s)| Running::Shard(k, s)),
    );
    let mut joined = Joined {
        outcomes: vec![None; nets],
        firewalls: Vec::new(),
        warnings: Vec::new(),
        stuck: Vec::new(),
    };
    // Firewall reports and warnings in the run's order of firewalls, whichever ends first.
    let mut by_shard: Vec<Option<(FirewallReport, Vec<String>)>> = (0..shards).map(|_| None).collect();
    let mut stopped_at: Option<Instant> = None;
    // CPU time of each running thread when the halt was first set.
    let mut cpu_at_halt: Option<HashMap<ThreadId, u64>> = None;
    let mut seen = 0;
    loop {
        let (done, left): (Vec<Running>, Vec<Running>) = running.into_iter().partition(Running::finished);
        running = left;
        for r in done {
            collect(r, &mut joined, &mut by_shard);
        }
        if running.is_empty() {
            break;
        }
        if stopped_at.is_none() && run.stop.load(Ordering::Relaxed) {
            stopped_at = Some(Instant::now());
        }
        let mut look = LOOK;
        if let Some(at) = stopped_at {
            let since = at.elapsed();
            if since >= GIVE_UP && !waiting_for_a_cpu(&run.ends, &running, cpu_at_halt.as_ref(), since) {
                break;
            }
            if since >= DRAIN {
                halt(&run.ends, &running);
                cpu_at_halt.get_or_insert_with(|| {
                    let ids = running.iter().map(|r| r.thread().id());
                    ids.filter_map(|id| Some((id, cpu_ns(&run.ends, id)?))).collect()
                });
            }
            let next = [DRAIN, GIVE_UP].into_iter().find(|&t| t > since);
            look = look.min(next.map_or(LOOK, |t| t - since));
        }
        seen = run.ends.wait(seen, look);
    }
    for r in running {
        leave(r, run, started, &mut joined, &mut by_shard);
    }
    for (report, warnings) in by_shard.into_iter().flatten() {
        joined.firewalls.push(report);
        joined.warnings.extend(warnings);
    }
    joined
}

/// Whether, `since` the stop, some thread still running has only been kept off the cores
/// (and [`STARVED_LIMIT`] has not passed): the halt waits longer for it.
fn waiting_for_a_cpu(
    ends: &ThreadEnds,
    running: &[Running],
    cpu_at_halt: Option<&HashMap<ThreadId, u64>>,
    since: Duration,
) -> bool {
    since < STARVED_LIMIT
        && running.iter().any(|r| {
            let id = r.thread().id();
            starved(ends, id, cpu_at_halt.and_then(|m| m.get(&id).copied()))
        })
}

/// Sets the halt and wakes every thread still running (again on each call: a thread that
/// parks somewhere else than on a channel takes the wake-up as spurious, and one more costs
/// nothing).
fn halt(ends: &ThreadEnds, running: &[Running]) {
    ends.halt.store(true, Ordering::Release);
    for r in running {
        r.thread().unpark();
    }
}

fn collect(r: Running, joined: &mut Joined, by_shard: &mut [Option<(FirewallReport, Vec<String>)>]) {
    match r {
        Running::Net(ids, h) => match h.join() {
            Ok(outcomes) => {
                for (id, outcome) in outcomes {
                    joined.outcomes[id] = Some(outcome);
                }
            }
            Err(panic) => {
                let text = panic_text(panic);
                for id in ids {
                    let mut outcome = Outcome::new();
                    outcome.fail(format!("runtime thread {text}"));
                    joined.outcomes[id] = Some(outcome);
                }
            }
        },
        Running::Shard(k, s) => {
            let r = s.join();
            by_shard[k] = Some((r.report, r.warnings));
            for (id, outcome) in r.outcomes {
                joined.outcomes[id] = Some(outcome);
            }
        }
    }
}

/// A thread that did not end: its nets are `stuck`, with what the live counters say.
fn leave(
    r: Running,
    run: &RunState,
    started: Instant,
    joined: &mut Joined,
    by_shard: &mut [Option<(FirewallReport, Vec<String>)>],
) {
    let (ids, whose) = match &r {
        Running::Net(ids, _) => (ids.clone(), "its thread".to_string()),
        Running::Shard(k, s) => {
            let warning = format!(
                "{}: did not end within {} ms of the stop (a box of its cyclic executive is stuck); its \
                 figures are those it had published",
                s.name(),
                GIVE_UP.as_millis()
            );
            by_shard[*k] = Some((s.live_report(), vec![warning]));
            (
                s.nets().to_vec(),
                format!("the cyclic executive that runs it ({})", s.name()),
            )
        }
    };
    // Every thread passes the start barrier only once all have reached it.
    let run_started = run.loops.iter().all(|l| l.starting() == Starting::Ready);
    for id in ids {
        let mut outcome = Outcome::new();
        outcome.status = Status::Stuck;
        outcome.loop_count = run.loops[id].get();
        if run_started {
            outcome.wall = started.elapsed();
            outcome.error = Some(format!(
                "{whose} did not end within {} ms of the stop (at or after step {}) and is left running; \
                 the figures are those published by then",
                GIVE_UP.as_millis(),
                outcome.loop_count
            ));
        } else if run.loops[id].starting() == Starting::InInit {
            outcome.error = Some(format!(
                "blocked in its create or init: {whose} had not returned from it {} ms after the stop, \
                 so no box of the run ever started",
                GIVE_UP.as_millis()
            ));
        } else {
            // Waiting at the start for the box above: never started, and not stuck itself.
            outcome.status = Status::Stopped;
            outcome.error =
                Some("never started: it waited for another box's init (see the box stuck in its init)".to_string());
            joined.outcomes[id] = Some(outcome);
            continue;
        }
        joined.outcomes[id] = Some(outcome);
        joined.stuck.push(id);
    }
    // Detached: joining would wait for ever.
    drop(r);
}

/// Marks what the stuck nets leave open: the report's status, and every channel one of them
/// holds, whose figures are a snapshot that need not balance.
pub(crate) fn mark_stuck(report: &mut Report, stuck: &[usize]) {
    if stuck.is_empty() {
        return;
    }
    if report.status != Status::Failed {
        report.status = Status::Stuck;
    }
    for c in &mut report.channels {
        if stuck.contains(&c.from_id) || stuck.contains(&c.to_id) {
            c.settled = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    /// A thread of `ends` that sleeps (`spin` false, parked) or burns its CPU until `done`.
    fn started(ends: &Arc<ThreadEnds>, spin: bool, done: &Arc<AtomicBool>) -> JoinHandle<()> {
        let (mine, stop) = (ends.clone(), done.clone());
        let handle = std::thread::spawn(move || {
            let _ended = mine.guard();
            while !stop.load(Ordering::Relaxed) {
                if !spin {
                    std::thread::park();
                }
            }
        });
        while ends.kernel_tid(handle.thread().id()).is_none() {
            std::thread::sleep(Duration::from_millis(1));
        }
        handle
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn only_a_runnable_thread_short_of_cpu_since_the_halt_counts_as_kept_off_the_cores() {
        let ends = Arc::new(ThreadEnds::default());
        let done = Arc::new(AtomicBool::new(false));
        let sleeper = started(&ends, false, &done);
        let spinner = started(&ends, true, &done);
        let (sleeping, spinning) = (sleeper.thread().id(), spinner.thread().id());
        std::thread::sleep(Duration::from_millis(30));
        assert!(
            !starved(&ends, sleeping, cpu_ns(&ends, sleeping)),
            "asleep in its step: stuck"
        );
        // Until the spinner has burnt more CPU than the window below: on a loaded machine its
        // 30 ms of wall time may have given it less, and the window would start before it.
        let mut now = cpu_ns(&ends, spinning).expect("the kernel tells");
        while now < 3 * STARVED_CPU_NS {
            std::thread::sleep(Duration::from_millis(5));
            now = cpu_ns(&ends, spinning).expect("the kernel tells");
        }
        // Just sampled: the spinner has had no CPU since, like a thread that gets none.
        assert!(starved(&ends, spinning, Some(now + STARVED_CPU_NS / 2)));
        // Burning its CPU since the halt: stuck in its step.
        assert!(!starved(&ends, spinning, Some(now.saturating_sub(2 * STARVED_CPU_NS))));
        // A thread that never reached its start has had no chance at all.
        let never = std::thread::spawn(|| {}).thread().id();
        assert!(starved(&ends, never, None));
        done.store(true, Ordering::Relaxed);
        sleeper.thread().unpark();
        sleeper.join().unwrap();
        spinner.join().unwrap();
    }
}
