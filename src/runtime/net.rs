//! The thread of one box instance: create and init, start barrier, the net loop, termination.
//!
//! The net loop, one iteration:
//! 1. **Firing rule**: wait until each triggering input (consumer side coupled) holds a
//!    message or has ended. Decoupled-consumer inputs and unconnected ports are not waited on.
//! 2. **End-of-stream**: if the box has triggering inputs, all of them have ended and are
//!    drained, and its last step returned `Return` (or a stop was requested), the net ends
//!    without running the step again.
//! 3. **Stop**: a net without triggering inputs (a source) ends when a stop is requested.
//! 4. **Step**: run the box once (caught: an `Err` or a panic ends the net as failed) and
//!    count it. `End` ends the net; `Continue` loops; `Return` ends the net when every
//!    connected output's consumer has ended, else loops (the triggering-inputs half of the
//!    spec's §1.6 rule is step 2 of the next iteration).
//!
//! The loop count is the number of steps run (see [`crate::report`]). On exit every channel
//! of the net is closed, which is how its neighbours learn that it ended (spec §1.7), and then
//! the box's `cleanup` runs (after its `abort` when init or a step failed). A failed create or init skips the loop but still closes the
//! channels after the start barrier, so the neighbours end too and nothing waits forever.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime};

use crate::boxes::{BoxImpl, BoxSpec, Flow};
use crate::report::Status;
use crate::runtime::io::{InitCtx, Io, PortSet};
use crate::runtime::plan::NetPlan;
use crate::runtime::thread::{Common, Outcome, panic_text, place};

/// Runs one box instance to the end.
pub fn run_box(plan: NetPlan, spec: BoxSpec, mut ports: PortSet, common: &Common) -> Outcome {
    let mut outcome = Outcome::new();
    if !common.gate.wait() {
        return outcome;
    }
    place(&plan, &mut outcome);
    let config = &plan.settings.box_config;
    let mut instance: Option<Box<dyn BoxImpl>> = None;
    let created = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        let mut made = (spec.create)(config).map_err(|e| format!("create failed: {e}"))?;
        let result = made.init(&mut InitCtx::new(&plan.name, config, &ports));
        instance = Some(made);
        result.map_err(|e| format!("init failed: {e}"))
    }));
    match created {
        Ok(Ok(())) => {}
        Ok(Err(e)) => outcome.fail(e),
        Err(panic) => outcome.fail(format!("init {}", panic_text(panic))),
    }
    common.barrier.wait();
    let start = Instant::now();
    if outcome.status == Status::Ok
        && let Some(instance) = instance.as_mut()
    {
        net_loop(instance.as_mut(), &mut ports, common, &mut outcome);
    }
    outcome.wall = start.elapsed();
    outcome.ended_at = SystemTime::now();
    ports.close_all();
    outcome.unconnected_writes = ports.unconnected_writes;
    if let Some(mut instance) = instance {
        let failure = (outcome.status == Status::Failed).then(|| outcome.error.clone().unwrap_or_default());
        match catch_unwind(AssertUnwindSafe(|| {
            if let Some(why) = &failure {
                instance.abort(why);
            }
            instance.cleanup();
            instance.stats()
        })) {
            Ok(stats) => outcome.stats = stats,
            Err(panic) => outcome.fail(format!("cleanup {}", panic_text(panic))),
        }
    }
    outcome
}

fn net_loop(instance: &mut dyn BoxImpl, ports: &mut PortSet, common: &Common, outcome: &mut Outcome) {
    let triggering: Vec<usize> = ports
        .inputs
        .iter()
        .enumerate()
        .filter(|(_, p)| p.reader.as_ref().is_some_and(|r| r.triggering()))
        .map(|(i, _)| i)
        .collect();
    let has_outputs = ports.outputs.iter().any(|p| p.writer.is_some());
    let mut last = Flow::Return;
    let mut count = 0u64;
    loop {
        for &i in &triggering {
            if let Some(reader) = ports.inputs[i].reader.as_mut() {
                reader.wait_ready();
            }
        }
        let stop = common.stop.load(Ordering::Relaxed);
        if !triggering.is_empty()
            && (last == Flow::Return || stop)
            && triggering
                .iter()
                .all(|&i| ports.inputs[i].reader.as_ref().is_none_or(|r| r.ended()))
        {
            break;
        }
        if stop && triggering.is_empty() {
            outcome.status = Status::Stopped;
            break;
        }
        count += 1;
        let result = catch_unwind(AssertUnwindSafe(|| {
            instance.step(&mut Io::new(ports, count, &common.stop))
        }));
        last = match result {
            Ok(Ok(flow)) => flow,
            Ok(Err(e)) => {
                outcome.fail(format!("step {count} failed: {e}"));
                break;
            }
            Err(panic) => {
                outcome.fail(format!("step {count} {}", panic_text(panic)));
                break;
            }
        };
        match last {
            Flow::End => break,
            Flow::Continue => {}
            Flow::Return => {
                if has_outputs
                    && ports
                        .outputs
                        .iter()
                        .all(|p| p.writer.as_ref().is_none_or(|w| w.consumer_ended()))
                {
                    break;
                }
            }
        }
    }
    outcome.loop_count = count;
}
