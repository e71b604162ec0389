//! What a thread of the run does to itself: take its planned core and priority, and turn a
//! caught panic into the text of its outcome.

use std::any::Any;

use crate::plan::NetPlan;
use crate::run_state::Outcome;
use smx_timing::sched;

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
