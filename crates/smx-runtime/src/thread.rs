//! What every net thread shares: the start gate, the start barrier, the stop flag, placement,
//! and the outcome it hands back to the executor.
//!
//! Threads are created first and wait at the [`Gate`]; only when every thread exists is the
//! gate opened (or, if the system refused a thread, aborted, and the threads that exist return
//! at once). So the start [`Barrier`] is always sized for threads that really run, and a
//! refused thread can never leave the others waiting forever (spec runtime.md §7 item 5).

use std::any::Any;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime};

use parking_lot::{Condvar, Mutex};

use crate::plan::NetPlan;
use crate::report::Status;
use smx_timing::sched;

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
pub struct Common {
    pub gate: Gate,
    pub barrier: Barrier,
    pub stop: Arc<AtomicBool>,
    /// Some box failed before the start barrier (create or init): no box runs a step, and the
    /// run is rejected like any other bad value.
    pub start_failed: AtomicBool,
    /// Each net's published loop count, by id.
    pub loops: Vec<Arc<crate::progress::LoopCounter>>,
    /// The run's trace, when one was asked for.
    pub trace: Option<crate::trace::Tracer>,
    /// The halt after a stop, and how many threads have ended ([`crate::halt`]).
    pub ending: crate::halt::Ending,
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

/// Applies the planned core, priority and niceness to the calling thread, recording what took
/// effect and warning about what did not.
pub fn place(plan: &NetPlan, outcome: &mut Outcome) {
    // First, so that a priority or niceness set below is not reset. A refusal only means the
    // kernel's default slice: nothing to warn about.
    let _ = sched::request_short_slice();
    if let Some(core) = plan.core {
        match sched::pin_current_thread(core) {
            Ok(()) => outcome.core = Some(core),
            Err(e) => outcome.warnings.push(format!("{}: {e}", plan.thread_name())),
        }
    }
    if let Some(level) = plan.priority {
        match sched::set_fifo_priority(level) {
            Ok(()) => outcome.priority = Some(level),
            Err(e) => outcome.warnings.push(format!("{}: {e}", plan.thread_name())),
        }
    }
    if let Some(nice) = plan.settings.nice
        && let Err(e) = sched::set_nice(nice)
    {
        outcome.warnings.push(format!("{}: {e}", plan.thread_name()));
    }
}

/// The text of a caught panic.
pub fn panic_text(payload: Box<dyn Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_string()
    }
}
