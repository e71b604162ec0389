//! What the threads of one run share with each other, with the thread that joins them, and with
//! the sampler of live figures.
//!
//! It is a leaf of the crate's module graph: the box threads, the routing nodes, the firewalls
//! and the halt all use it and it uses none of them, so starting and ending a run has one
//! owner (the run itself) instead of a circle of modules that each know the others.
//!
//! Threads are created first and wait at the [`Gate`]; only when every thread exists is the
//! gate opened (or, if the system refused a thread, aborted, and the threads that exist return
//! at once). So the start [`Barrier`] is always sized for threads that really run, and a
//! refused thread can never leave the others waiting forever.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::ThreadId;
use std::time::{Duration, SystemTime};

use parking_lot::{Condvar, Mutex};

use crate::channel::Halt;
use crate::report::Status;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GateState {
    Closed,
    Open,
    Aborted,
}

/// Holds every thread back until all threads exist.
#[derive(Debug)]
pub struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new()
    }
}

impl Gate {
    pub fn new() -> Self {
        Gate {
            state: Mutex::new(GateState::Closed),
            changed: Condvar::new(),
        }
    }

    /// Waits until the gate opens (true) or the start was aborted (false).
    pub fn wait(&self) -> bool {
        let mut state = self.state.lock();
        while *state == GateState::Closed {
            self.changed.wait(&mut state);
        }
        *state == GateState::Open
    }

    pub fn open(&self) {
        self.set(GateState::Open);
    }

    pub fn abort(&self) {
        self.set(GateState::Aborted);
    }

    fn set(&self, to: GateState) {
        *self.state.lock() = to;
        self.changed.notify_all();
    }
}

/// Shared by all threads of one run.
#[derive(Debug)]
pub struct RunState {
    pub gate: Gate,
    /// With a held start ([`crate::Progress::hold_start`]): where the threads wait, once their
    /// boxes have initialised, for the run's own thread to let them go (instead of `barrier`).
    pub hold: Option<StartHold>,
    pub barrier: Barrier,
    pub stop: Arc<AtomicBool>,
    /// Some box failed before the start barrier (create or init): no box runs a step, and the
    /// run is rejected like any other bad value.
    pub start_failed: AtomicBool,
    /// The start gate called the run off: no box runs a step, every net ends `stopped`.
    pub called_off: AtomicBool,
    /// Each net's published loop count, by id.
    pub loops: Vec<Arc<LoopCounter>>,
    /// The run's trace, when one was asked for.
    pub trace: Option<crate::trace::Tracer>,
    /// The halt after a stop, and how many threads have ended ([`crate::halt`]).
    pub ends: ThreadEnds,
}

impl RunState {
    /// Where every thread of the run waits once its boxes have initialised, until all have
    /// (and a held start was let go). Returns whether the start was cancelled (a box failed
    /// to start, or the start gate called the run off); the stop is then set, so that no box
    /// waits for its peers.
    pub fn meet_at_start(&self) -> bool {
        match &self.hold {
            Some(hold) => hold.arrive_and_wait(),
            None => {
                self.barrier.wait();
            }
        }
        let cancelled = self.start_failed.load(Ordering::SeqCst) || self.called_off.load(Ordering::SeqCst);
        if cancelled {
            self.stop.store(true, Ordering::SeqCst);
        }
        cancelled
    }
}

/// A held start: the threads say they have initialised and wait to be let go; the run's own
/// thread waits for all of them, or for a stop (a box stuck in its init must not keep the run
/// from its halt, which reports it), and lets them go.
#[derive(Debug, Default)]
pub struct StartHold {
    /// Threads that have initialised, and whether they were let go.
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl StartHold {
    fn arrive_and_wait(&self) {
        let mut state = self.state.lock();
        state.0 += 1;
        self.changed.notify_all();
        while !state.1 {
            self.changed.wait(&mut state);
        }
    }

    /// Waits until `threads` threads have initialised (`true`) or `stop` is set (`false`).
    pub fn wait_for(&self, threads: usize, stop: &AtomicBool) -> bool {
        let mut state = self.state.lock();
        loop {
            if state.0 >= threads {
                return true;
            }
            if stop.load(Ordering::SeqCst) {
                return false;
            }
            self.changed.wait_for(&mut state, Duration::from_millis(20));
        }
    }

    /// Lets every thread go, also those still in their init (they pass straight on).
    pub fn release(&self) {
        self.state.lock().1 = true;
        self.changed.notify_all();
    }
}

/// What a net thread reports back.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub loop_count: u64,
    pub wall: Duration,
    pub status: Status,
    pub error: Option<String>,
    pub stats: smx_box::Stats,
    pub unconnected_writes: u64,
    pub ended_at: SystemTime,
    pub core: Option<usize>,
    pub priority: Option<u8>,
    pub warnings: Vec<String>,
    /// The latency samples of the net's inputs ([`crate::latency`]).
    pub latency: Vec<crate::latency::ChannelSamples>,
}

impl Default for Outcome {
    fn default() -> Self {
        Outcome::new()
    }
}

impl Outcome {
    pub fn new() -> Self {
        Outcome {
            loop_count: 0,
            wall: Duration::ZERO,
            status: Status::Ok,
            error: None,
            stats: smx_box::Stats::new(),
            unconnected_writes: 0,
            ended_at: SystemTime::now(),
            core: None,
            priority: None,
            warnings: Vec::new(),
            latency: Vec::new(),
        }
    }

    /// Marks the net failed; the first failure is the one reported.
    pub fn fail(&mut self, error: String) {
        if self.status != Status::Failed {
            self.status = Status::Failed;
            self.error = Some(error);
        }
    }
}

/// The run's halt and the count of its threads that have ended.
#[derive(Debug, Default)]
pub struct ThreadEnds {
    /// Set by the halt after a stop; every channel end of the run has it
    /// ([`crate::io::PortSet::set_halt`]).
    pub halt: Halt,
    ended: Mutex<u64>,
    changed: Condvar,
    /// The kernel's id of each thread that has started, for the halt's look at it.
    tids: Mutex<HashMap<ThreadId, i32>>,
}

impl ThreadEnds {
    /// Counts the calling thread as ended when the guard drops (also when it unwinds). A
    /// thread of the run takes it first thing, which also tells the halt its kernel id.
    pub fn guard(&self) -> EndGuard<'_> {
        if let Some(tid) = crate::kernel::current_tid() {
            self.tids.lock().insert(std::thread::current().id(), tid);
        }
        EndGuard(self)
    }

    /// The kernel's id of thread `id`, once it has taken its [`ThreadEnds::guard`].
    pub fn kernel_tid(&self, id: ThreadId) -> Option<i32> {
        self.tids.lock().get(&id).copied()
    }

    /// Waits until the count of ended threads differs from `seen` or `timeout` passed; the
    /// count.
    pub fn wait(&self, seen: u64, timeout: Duration) -> u64 {
        let mut ended = self.ended.lock();
        if *ended == seen {
            self.changed.wait_for(&mut ended, timeout);
        }
        *ended
    }
}

/// See [`ThreadEnds::guard`].
pub struct EndGuard<'a>(&'a ThreadEnds);

impl Drop for EndGuard<'_> {
    fn drop(&mut self) {
        *self.0.ended.lock() += 1;
        self.0.changed.notify_all();
    }
}

/// A net's loop count as its thread publishes it (single writer), and how far its box got
/// towards the start ([`Starting`]), so that a run that never started can tell the box that
/// held it up from those that waited for it.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct LoopCounter(AtomicU64, AtomicU8);

/// Where a net stands before the start barrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Starting {
    /// Its create and init have not begun (its thread starts another box first).
    NotBegun,
    /// In its box's create or init.
    InInit,
    /// Create and init are behind it: at the start barrier or past it.
    Ready,
}

impl LoopCounter {
    pub fn set_starting(&self, to: Starting) {
        self.1.store(to as u8, Ordering::Release);
    }

    pub fn starting(&self) -> Starting {
        match self.1.load(Ordering::Acquire) {
            0 => Starting::NotBegun,
            1 => Starting::InInit,
            _ => Starting::Ready,
        }
    }

    #[inline]
    pub fn set(&self, count: u64) {
        self.0.store(count, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// What other threads may read (or poke, in tests) while the firewall runs.
#[derive(Debug, Default)]
pub struct ShardLive {
    /// Index of the tick released last (0 before the first).
    pub tick: AtomicU64,
    /// The schedule origin `t0` on the message clock, once started (0 before).
    pub t0_message_ns: AtomicU64,
    /// Test hook: before its next wait the thread stalls this long, as if preempted (then
    /// resets it).
    pub stall_ns: AtomicU64,
    /// The report's figures so far, published after every tick for live figures.
    pub missed_ticks: AtomicU64,
    pub overruns: AtomicU64,
    pub produce_misses: AtomicU64,
    pub consume_misses: AtomicU64,
}
