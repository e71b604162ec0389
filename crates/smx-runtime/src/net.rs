//! The thread of one box instance: create and init, start barrier, the net loop, termination.
//!
//! The net loop, one iteration:
//! 1. **Firing rule**: wait until each triggering input (consumer side coupled) holds a
//!    message or has ended, or its read timeout (set by the box) passed. Decoupled-consumer
//!    inputs and unconnected ports are not waited on.
//! 2. **End-of-stream**: if the box has triggering inputs, all of them have ended and are
//!    drained, and its last step returned `Return` (or a stop was requested), the net ends
//!    without running the step again.
//! 3. **Stop**: a net without triggering inputs (a source) ends when a stop is requested;
//!    so does a box that asks [`Io::stop_requested`] during a step and then returns `End`,
//!    and every net at the run's halt, a while after the stop ([`crate::halt`]).
//! 4. **Step**: run the box once (an `Err` or a panic ends the net as failed) and
//!    count it. `End` ends the net; `Continue` loops; `Return` ends the net when every
//!    connected output's consumer has ended, else loops (the triggering-inputs half of the
//!    spec's §1.6 rule is step 2 of the next iteration).
//!
//! The loop count is the number of steps run (see [`crate::report`]). On exit every channel
//! of the net is closed, which is how its neighbours learn that it ended (spec §1.7), and then
//! the box's `cleanup` runs (after its `abort` when init or a step failed). A failed create
//! or init skips the loop but still closes the channels after the start barrier, so the
//! neighbours end too and nothing waits forever.
//!
//! [`Driver`] holds one box between init and cleanup and runs one iteration at a time, so
//! that the same rules serve a box on its own thread ([`run_box`], which blocks in the firing
//! rule) and a box run by a cyclic executive ([`crate::firewall::executive`], which
//! fires each box at most once per tick and skips a box whose inputs are not ready).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::report::Status;
use smx_box::io::host;
use smx_box::{BoxImpl, BoxSpec, Flow};

use crate::io::PortSet;
use crate::plan::NetPlan;
use crate::run_state::{LoopCounter, Outcome, RunState, Starting};
use crate::thread::{panic_text, place};
use crate::trace::ports::TracedPorts;
use crate::trace::{Labels, Recorder, What};

/// Runs one box instance to the end on the calling thread.
pub fn run_box(plan: NetPlan, spec: BoxSpec, ports: PortSet, state: &RunState) -> Outcome {
    let _ended = state.ends.guard();
    let mut outcome = Outcome::new();
    if !state.gate.wait() {
        return outcome;
    }
    place(&plan, &mut outcome);
    state.loops[plan.id].set_starting(Starting::InInit);
    let mut driver = Driver::new(&plan, &spec, ports, outcome, &state.stop);
    driver.halt_on(&state.ends.halt);
    let tid = crate::trace::net_tid(plan.id);
    let recorder = state
        .trace
        .as_ref()
        .map(|t| t.recorder(Labels::for_net(&plan, tid, plan.thread_name())));
    driver.instrument(state.loops[plan.id].clone(), recorder);
    if driver.failed() {
        state.start_failed.store(true, Ordering::SeqCst);
    }
    state.loops[plan.id].set_starting(Starting::Ready);
    // Cancelled, no box runs: a box that opened a connection in init must not wait for its
    // peers in cleanup (a ZeroMQ sink's marker), so the refused run ends at once.
    let cancelled = state.meet_at_start();
    driver.start(cancelled);
    driver.run_to_end(&state.stop, plan.offers_core);
    driver.finish()
}

/// The firing rule's wait on one triggering input.
#[inline]
fn wait_input(reader: &mut crate::channel::Reader, read_timeout: Option<Duration>, stop: &AtomicBool) {
    // A timeout past the clock's range is no bound at all.
    match read_timeout.and_then(|timeout| Instant::now().checked_add(timeout)) {
        Some(deadline) => {
            reader.wait_ready_until(deadline, || stop.load(Ordering::Relaxed));
        }
        None => reader.wait_ready(),
    }
}

/// One box between its init and its cleanup, and where its net loop stands.
pub struct Driver {
    instance: Option<Box<dyn BoxImpl>>,
    ports: PortSet,
    /// Inputs the firing rule waits on (consumer side coupled).
    triggering: Vec<usize>,
    /// The firing rule waits for a message on any one of them, not on each (a fan-in routing
    /// node in a chain, [`crate::routing::CHAINED`]).
    any_input: bool,
    /// The inputs a wait of [`Driver::fire_on_any_input`] looks at, kept to be reused.
    waiting: Vec<usize>,
    has_outputs: bool,
    last: Flow,
    outcome: Outcome,
    started: Instant,
    running: bool,
    /// Where the loop count is published for live figures.
    loops: Arc<LoopCounter>,
    /// The trace ring, when the run is traced.
    trace: Option<Box<Recorder>>,
    /// The run's halt ([`crate::halt`]), looked at only after a stop.
    halt: crate::channel::Halt,
}

impl Driver {
    /// Creates and initialises the box; a failure is recorded in the outcome and the box will
    /// not run (its channels still close at [`Driver::start`], so its neighbours end).
    pub fn new(
        plan: &NetPlan,
        spec: &BoxSpec,
        mut ports: PortSet,
        mut outcome: Outcome,
        stop: &Arc<AtomicBool>,
    ) -> Driver {
        let config = &plan.settings.box_config;
        let mut instance: Option<Box<dyn BoxImpl>> = None;
        // The error, and whether init gave it (rather than create).
        let created = catch_unwind(AssertUnwindSafe(|| -> Result<(), (String, bool)> {
            let mut made = spec
                .create(config)
                .map_err(|e| (format!("create failed: {e}"), false))?;
            let result = made.init(&mut host::init_ctx(&plan.name, config, &mut ports, stop));
            instance = Some(made);
            result.map_err(|e| (format!("init failed: {e}"), true))
        }));
        match created {
            Ok(Ok(())) => {}
            // An init that waits (for a link's peer, a connection) gives up when the run is
            // stopped: the stop ended it, not a fault of the box, and the run ends stopped
            // rather than refused.
            Ok(Err((e, true))) if stop.load(Ordering::SeqCst) => {
                outcome.status = Status::Stopped;
                outcome.error = Some(format!("stopped in its init ({e})"));
            }
            Ok(Err((e, _))) => outcome.fail(e),
            Err(panic) => outcome.fail(format!("init {}", panic_text(panic))),
        }
        let triggering = ports
            .inputs
            .iter()
            .enumerate()
            .filter(|(_, p)| p.reader.as_ref().is_some_and(|r| r.triggering()))
            .map(|(i, _)| i)
            .collect();
        let has_outputs = ports.outputs.iter().any(|p| p.writer.is_some());
        Driver {
            instance,
            ports,
            triggering,
            any_input: false,
            waiting: Vec::new(),
            has_outputs,
            last: Flow::Return,
            outcome,
            started: Instant::now(),
            running: false,
            loops: Arc::default(),
            trace: None,
            halt: Default::default(),
        }
    }

    /// Ends the net loop at the run's `halt`, and every wait of its ports on a channel
    /// ([`crate::halt`]).
    pub fn halt_on(&mut self, halt: &crate::channel::Halt) {
        self.halt = halt.clone();
        self.ports.set_halt(halt);
    }

    /// Ends the net loop now, as stopped (the run's halt, for a box that is not waiting).
    pub fn halt_now(&mut self) {
        if self.running {
            self.outcome.status = Status::Stopped;
            self.end();
        }
    }

    /// Publishes the loop count to `loops` and, with a recorder, traces the steps.
    pub fn instrument(&mut self, loops: Arc<LoopCounter>, trace: Option<Recorder>) {
        self.loops = loops;
        self.trace = trace.map(Box::new);
    }

    /// The core the box's thread was pinned to, as recorded.
    pub(crate) fn core(&self) -> Option<usize> {
        self.outcome.core
    }

    /// Whether create or init failed.
    pub fn failed(&self) -> bool {
        self.outcome.status == Status::Failed
    }

    /// The run starts now (after the start barrier). A box that failed to start ends here, and
    /// so does every box when `cancelled` (another box failed to start).
    pub fn start(&mut self, cancelled: bool) {
        self.started = Instant::now();
        self.running = true;
        if cancelled && self.outcome.status == Status::Ok {
            self.outcome.status = Status::Stopped;
        }
        if self.outcome.status != Status::Ok || self.instance.is_none() {
            self.end();
        }
    }

    /// Lets the box fire when any triggering input holds a message (or every one has ended),
    /// as a fan-in routing node does, instead of when each does.
    pub(crate) fn fire_on_any_input(&mut self) {
        self.any_input = true;
    }

    /// Whether the net loop still runs.
    pub fn running(&self) -> bool {
        self.running
    }

    /// Runs the net loop to its end on this thread, blocking in the firing rule.
    ///
    /// One unwind guard covers the whole loop instead of one per step: a guard per step sat
    /// between the loop and the box on every message and cost about a tenth of `Src.Snk`'s
    /// rate. A panic ends the net as failed all the same (see [`Driver::panicked`]).
    /// Fires the net until it ends. `offer_core`: after each step the thread offers its core
    /// to the threads beside it, which a net that never waits would otherwise hold until the
    /// scheduler takes it away.
    pub fn run_to_end(&mut self, stop: &AtomicBool, offer_core: bool) {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| {
            while self.fire_unguarded(stop, true, &mut Direct) {
                if offer_core {
                    std::thread::yield_now();
                }
            }
        })) {
            self.panicked(panic);
        }
    }

    /// One iteration of the net loop; false once the net has ended. With `block`, the firing
    /// rule waits for the inputs; without, a net whose inputs are not ready is left as it is
    /// (true, nothing ran). A panic of the box ends the net as failed.
    pub fn fire(&mut self, stop: &AtomicBool, block: bool) -> bool {
        self.fire_via(stop, block, &mut Direct)
    }

    /// [`Driver::fire`] with the step run through `via` (a chain's view of the ports).
    pub(crate) fn fire_via(&mut self, stop: &AtomicBool, block: bool, via: &mut impl StepOn) -> bool {
        match catch_unwind(AssertUnwindSafe(|| self.fire_unguarded(stop, block, via))) {
            Ok(running) => running,
            Err(panic) => {
                self.panicked(panic);
                false
            }
        }
    }

    /// [`Driver::fire_via`] again and again while the net runs and `more` says so after a
    /// firing, under one unwind guard: a chain's run of steps of one box pays for the guard
    /// once, as [`Driver::run_to_end`] does. False once the net has ended.
    pub(crate) fn fire_via_while(
        &mut self,
        stop: &AtomicBool,
        block: bool,
        via: &mut impl StepOn,
        mut more: impl FnMut(&mut Driver) -> bool,
    ) -> bool {
        let fired = catch_unwind(AssertUnwindSafe(|| {
            loop {
                if !self.fire_unguarded(stop, block, via) {
                    return false;
                }
                if !more(self) {
                    return true;
                }
            }
        }));
        match fired {
            Ok(running) => running,
            Err(panic) => {
                self.panicked(panic);
                false
            }
        }
    }

    /// A panic unwound out of the net loop (from the box's step, the only code there that
    /// runs user logic): the net fails and ends. The loop count already includes the step
    /// that panicked.
    fn panicked(&mut self, panic: Box<dyn std::any::Any + Send>) {
        let count = self.outcome.loop_count;
        self.outcome.fail(format!("step {count} {}", panic_text(panic)));
        self.end();
    }

    /// [`Driver::fire`] without the unwind guard: the caller catches panics. Tracing costs an
    /// untraced run this one branch per step.
    #[inline]
    fn fire_unguarded(&mut self, stop: &AtomicBool, block: bool, via: &mut impl StepOn) -> bool {
        if !self.running {
            return false;
        }
        if self.trace.is_some() {
            return self.fire_traced(stop, block);
        }
        if let Some(running) = self.wait_on_any_input(block) {
            return running;
        }
        let mut released = false;
        for &i in self.triggering.iter().filter(|_| !self.any_input) {
            let slot = &mut self.ports.inputs[i];
            if let Some(reader) = slot.reader.as_mut()
                && !reader.ready_now()
            {
                if !block {
                    return true;
                }
                if !released {
                    released = true;
                    let idled = idle(&mut self.instance);
                    if !matches!(idled, Ok(Flow::Return | Flow::Continue)) {
                        return self.after_idle(idled);
                    }
                }
                wait_input(reader, slot.read_timeout, stop);
            }
        }
        if let Some(running) = self.before_step(stop) {
            return running;
        }
        let Some(instance) = self.instance.as_mut() else {
            self.end();
            return false;
        };
        // Counted before it runs: a step that panics is counted.
        self.outcome.loop_count += 1;
        let count = self.outcome.loop_count;
        self.loops.set(count);
        let (stepped, stopped) = via.step(instance.as_mut(), &mut self.ports, count, stop);
        self.after_step(count, stepped, stopped)
    }

    /// Offers the box a message its feeder on this thread writes ([`BoxImpl::pass_on`]):
    /// only while the box runs and its one input is empty, so the order stays the channel's.
    /// Taken, the message is booked on that channel as written and read, and its latency as a
    /// read at once. `pass` makes the offer; `stamper` is the feeder's output's. Inlined into
    /// the feeder's write: it is the path of every message a link's sink takes.
    #[inline(always)]
    pub(crate) fn pass_on(
        &mut self,
        sent_ns: u64,
        stamper: &mut crate::latency::Stamper,
        pass: impl FnOnce(&mut dyn BoxImpl) -> bool,
    ) -> bool {
        let (Some(instance), [input]) = (self.instance.as_mut(), self.ports.inputs.as_mut_slice()) else {
            return false;
        };
        let Some(reader) = input.reader.as_mut() else {
            return false;
        };
        if !self.running || reader.has_message() {
            return false;
        }
        match catch_unwind(AssertUnwindSafe(|| pass(instance.as_mut()))) {
            Ok(true) => {
                reader.count_passed();
                input.latency.note_stamp(stamper.next_stamp(), sent_ns);
                true
            }
            Ok(false) => false,
            // The box failed as a step of its own would have; the write then finds it ended.
            Err(panic) => {
                let count = self.outcome.loop_count;
                let why = panic_text(panic);
                self.outcome
                    .fail(format!("a message passed on to it after step {count} {why}"));
                self.end();
                false
            }
        }
    }

    /// Whether the net still runs and the firing rule would let it step now (every triggering
    /// input holds a message or has ended).
    pub(crate) fn ready(&mut self) -> bool {
        if self.any_input {
            return self.running && self.ready_for_any();
        }
        self.running
            && self
                .triggering
                .iter()
                .all(|&i| self.ports.inputs[i].reader.as_mut().is_none_or(|r| r.ready_now()))
    }

    /// The firing rule of [`Driver::fire_on_any_input`], when the box fires so: the box
    /// releases what it holds and waits for an input, unless `block` is off (then `Some(true)`:
    /// not now) or its idle ends it (`Some` of whether it goes on). `None`: fire.
    fn wait_on_any_input(&mut self, block: bool) -> Option<bool> {
        // The wait also ends when one input ends while the others are still empty: that is no
        // reason to step (a routing node's loop count is the messages it forwarded), so it
        // waits again, until the halt.
        while self.any_input && !self.ready_for_any() {
            if !block {
                return Some(true);
            }
            let idled = idle(&mut self.instance);
            if !matches!(idled, Ok(Flow::Return | Flow::Continue)) {
                return Some(self.after_idle(idled));
            }
            self.wait_for_any();
            if self.halt.load(Ordering::Acquire) {
                break;
            }
        }
        None
    }

    /// The firing rule of [`Driver::fire_on_any_input`]: some triggering input holds a message,
    /// or none can hold one any more.
    fn ready_for_any(&mut self) -> bool {
        let inputs = &mut self.ports.inputs;
        self.triggering
            .iter()
            .any(|&i| inputs[i].reader.as_mut().is_some_and(|r| r.has_message()))
            || self
                .triggering
                .iter()
                .all(|&i| inputs[i].reader.as_mut().is_none_or(|r| r.ready_now()))
    }

    /// Blocks until a triggering input that has not ended holds a message or ends.
    fn wait_for_any(&mut self) {
        // The wait looks at its inputs several times and must see the same ones each time: an
        // input that ended between two looks and dropped out would lose the wake-up of its end.
        let mut waiting = std::mem::take(&mut self.waiting);
        waiting.clear();
        let inputs = &self.ports.inputs;
        waiting.extend(
            self.triggering
                .iter()
                .copied()
                .filter(|&i| inputs[i].reader.as_ref().is_some_and(|r| !r.ended())),
        );
        crate::channel::wait_any(|| waiting.iter().filter_map(|&i| inputs[i].reader.as_ref()));
        self.waiting = waiting;
    }

    /// [`Driver::fire_unguarded`] recording the firing rule's waits, the step, and the waits
    /// inside the step.
    #[inline(never)]
    fn fire_traced(&mut self, stop: &AtomicBool, block: bool) -> bool {
        let Some(mut rec) = self.trace.take() else {
            return true;
        };
        let running = self.fire_traced_with(&mut rec, stop, block);
        self.trace = Some(rec);
        running
    }

    fn fire_traced_with(&mut self, rec: &mut Recorder, stop: &AtomicBool, block: bool) -> bool {
        if let Some(running) = self.wait_on_any_input(block) {
            return running;
        }
        let mut released = false;
        for &i in self.triggering.iter().filter(|_| !self.any_input) {
            let slot = &mut self.ports.inputs[i];
            if let Some(reader) = slot.reader.as_mut() {
                if !block {
                    if !reader.ready_now() {
                        return true;
                    }
                } else if reader.triggering() && !reader.has_message() {
                    if !released && !reader.ready_now() {
                        released = true;
                        let idled = idle(&mut self.instance);
                        if !matches!(idled, Ok(Flow::Return | Flow::Continue)) {
                            return self.after_idle(idled);
                        }
                    }
                    let start = rec.now();
                    wait_input(reader, slot.read_timeout, stop);
                    rec.wait(What::WaitRead(i as u32), start, rec.now());
                }
            }
        }
        if let Some(running) = self.before_step(stop) {
            return running;
        }
        let Some(instance) = self.instance.as_mut() else {
            self.end();
            return false;
        };
        // Counted before it runs: a step that panics is counted.
        self.outcome.loop_count += 1;
        let count = self.outcome.loop_count;
        self.loops.set(count);
        let start = rec.now();
        let mut ports = TracedPorts {
            ports: &mut self.ports,
            rec,
        };
        let (stepped, stopped) = step_once(instance.as_mut(), &mut ports, count, stop);
        let end = ports.rec.now();
        ports.rec.step(start, end);
        self.after_step(count, stepped, stopped)
    }

    /// Asks the box to release what it holds across steps ([`BoxImpl::idle`]), as before a
    /// wait; false once its net has ended (the box asked to end, or failed).
    pub(crate) fn release_held(&mut self) -> bool {
        if !self.running {
            return false;
        }
        let idled = idle(&mut self.instance);
        self.after_idle(idled)
    }

    /// What [`BoxImpl::idle`] said: `End` ends the net as a step's would, an error fails it;
    /// true while it goes on.
    fn after_idle(&mut self, idled: Result<Flow, String>) -> bool {
        match idled {
            Ok(Flow::End) => {
                self.end();
                false
            }
            Ok(_) => true,
            Err(why) => {
                self.outcome.fail(why);
                self.end();
                false
            }
        }
    }

    /// Steps 2 and 3 of the loop (end of stream, stop): `Some(false)` when the net ends here.
    #[inline(always)]
    fn before_step(&mut self, stop: &AtomicBool) -> Option<bool> {
        let stopping = stop.load(Ordering::Relaxed);
        if !self.triggering.is_empty()
            && (self.last == Flow::Return || stopping)
            && self
                .triggering
                .iter()
                .all(|&i| self.ports.inputs[i].reader.as_ref().is_none_or(|r| r.ended()))
        {
            self.end();
            return Some(false);
        }
        if self.triggering.is_empty() && self.last == Flow::Return && self.ports.all_inputs_ended() {
            // Only decoupled inputs, whose producers have all ended and whose last values were
            // read: no firing rule waits here, and nothing new can come.
            self.end();
            return Some(false);
        }
        if stopping && (self.triggering.is_empty() || self.halt.load(Ordering::Acquire)) {
            // A source ends at the stop; any other net at the halt, drained or not.
            self.outcome.status = Status::Stopped;
            self.end();
            return Some(false);
        }
        None
    }

    /// Decides, after step `count`, whether the net goes on. Inlined into the loop, with the
    /// failure out of line: this runs once per message.
    #[inline(always)]
    fn after_step(&mut self, count: u64, stepped: Result<Flow, smx_box::BoxError>, stopped: bool) -> bool {
        match stepped {
            Ok(flow) => self.after_flow(flow, stopped),
            Err(e) => self.step_failed(count, e),
        }
    }

    #[cold]
    #[inline(never)]
    fn step_failed(&mut self, count: u64, e: smx_box::BoxError) -> bool {
        self.outcome.fail(format!("step {count} failed: {e}"));
        self.end();
        false
    }

    /// [`Driver::after_step`] for a step that returned `flow`.
    #[inline(always)]
    fn after_flow(&mut self, flow: Flow, stopped: bool) -> bool {
        self.last = flow;
        if stopped && self.last == Flow::End {
            self.outcome.status = Status::Stopped;
        }
        let ended = match self.last {
            Flow::End => true,
            // Nothing can come any more: a box that keeps asking to go on would spin forever.
            Flow::Continue => self.ports.all_inputs_ended(),
            Flow::Return => {
                self.has_outputs
                    && self
                        .ports
                        .outputs
                        .iter()
                        .all(|p| p.writer.as_ref().is_none_or(|w| w.consumer_ended()))
            }
        };
        if ended {
            self.end();
        }
        !ended
    }

    /// The net ends: its wall time stops and its channels close, which is how its neighbours
    /// learn it ended (spec §1.7).
    #[cold]
    fn end(&mut self) {
        if self.running {
            if self.outcome.status == Status::Ok && self.halt.load(Ordering::Acquire) {
                // Whatever ended it (a refused write, an input the halt ended), the halt did.
                self.outcome.status = Status::Stopped;
            }
            self.running = false;
            self.outcome.wall = self.started.elapsed();
            self.outcome.ended_at = SystemTime::now();
            self.ports.close_all();
        }
    }

    /// Runs the box's cleanup and hands back what happened.
    pub fn finish(mut self) -> Outcome {
        self.end();
        if let Some(rec) = self.trace.take() {
            rec.deposit();
        }
        self.outcome.unconnected_writes = self.ports.unconnected_writes;
        self.outcome.latency = self.ports.take_latency();
        if let Some(mut instance) = self.instance.take() {
            let failure =
                (self.outcome.status == Status::Failed).then(|| self.outcome.error.clone().unwrap_or_default());
            if let Some(why) = &failure
                && let Err(panic) = catch_unwind(AssertUnwindSafe(|| instance.abort(why)))
            {
                self.outcome.fail(format!("abort {}", panic_text(panic)));
            }
            match catch_unwind(AssertUnwindSafe(|| instance.cleanup())) {
                Ok(Err(e)) if self.outcome.status != Status::Failed => {
                    self.outcome.fail(format!("cleanup failed: {e}"));
                }
                Ok(_) => {}
                Err(panic) => self.outcome.fail(format!("cleanup {}", panic_text(panic))),
            }
            // Its own call: a panic there loses the box's figures, not its cleanup.
            match catch_unwind(AssertUnwindSafe(|| instance.stats())) {
                Ok(stats) => self.outcome.stats = stats,
                Err(panic) => self.outcome.fail(format!("stats() {}", panic_text(panic))),
            }
        }
        self.outcome
    }
}

/// What one step gave: the box's result, and whether it saw a stop.
pub(crate) type Stepped = (Result<Flow, smx_box::BoxError>, bool);

/// How a firing runs the box's step on the net's ports: on them as they are ([`Direct`]), or
/// through a view of them that does more (a chain's, [`crate::chain`]).
pub(crate) trait StepOn {
    /// Runs one step of `instance`.
    fn step(&mut self, instance: &mut dyn BoxImpl, ports: &mut PortSet, count: u64, stop: &AtomicBool) -> Stepped;
}

/// The step on the net's own ports.
pub(crate) struct Direct;

impl StepOn for Direct {
    #[inline(always)]
    fn step(&mut self, instance: &mut dyn BoxImpl, ports: &mut PortSet, count: u64, stop: &AtomicBool) -> Stepped {
        step_once(instance, ports, count, stop)
    }
}

/// [`BoxImpl::idle`] of the box, if it was created; a panic there is an error like a failed one.
fn idle(instance: &mut Option<Box<dyn BoxImpl>>) -> Result<Flow, String> {
    let Some(instance) = instance.as_mut() else {
        return Ok(Flow::Return);
    };
    match catch_unwind(AssertUnwindSafe(|| instance.idle())) {
        Ok(Ok(flow)) => Ok(flow),
        Ok(Err(e)) => Err(format!("idle failed: {e}")),
        Err(panic) => Err(format!("idle {}", panic_text(panic))),
    }
}

/// Runs one step of `instance` on `ports`.
#[inline]
pub(crate) fn step_once(
    instance: &mut dyn BoxImpl,
    ports: &mut dyn host::Ports,
    count: u64,
    stop: &AtomicBool,
) -> Stepped {
    let mut io = host::step_io(ports, count, stop);
    let stepped = instance.step(&mut io);
    (stepped, host::stop_seen(&io))
}
