//! The thread of a routing node (`smx_rn`): fair fan-in, copying fan-out.
//!
//! Each iteration takes one message from the inputs, scanning them round-robin from the one
//! after the input served last (so a busy producer cannot starve the others), and writes it to
//! every output: clones to all but the last, the original to the last. A clone is cheap
//! (inline bytes or a reference count), unlike the original's deep copy per output.
//! Outputs keep their channel semantics: a coupled output blocks, so the slowest consumer
//! paces the node, as in the original.
//!
//! The node ends when every input has ended and is drained (the v0.7.1+ rule: no input's
//! data is dropped because another ended), or when every consumer has ended, or at the run's
//! halt after a stop ([`crate::halt`]), as `stopped`. Decoupled
//! consumer sides on a node's inputs are read for new messages only; a routing node never
//! forwards duplicates. The loop count of a routing node is the number of messages it
//! forwarded.
//!
//! A node may also run in a chain ([`crate::chain`]), a fan-out on its producer's thread, a
//! fan-in on its consumer's: there it is a box ([`CHAINED`]) whose step forwards one message,
//! taken round-robin as here, and whose firing rule waits for any input
//! ([`crate::net::Driver::fire_on_any_input`]). A producer and its fan-out then hand each
//! message over once per consumer, not once more to a thread in between.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime};

use crate::channel::Poll;
use crate::io::PortSet;
use crate::plan::NetPlan;
use crate::run_state::{LoopCounter, Outcome, RunState};
use crate::thread::{panic_text, place};
use crate::trace::{Recorder, What};
use smx_box::Message;

/// Runs one routing node to the end.
pub fn run_routing(plan: NetPlan, mut ports: PortSet, state: &RunState) -> Outcome {
    let _ended = state.ends.guard();
    let mut outcome = Outcome::new();
    if !state.gate.wait() {
        return outcome;
    }
    place(&plan, &mut outcome);
    let halt = &state.ends.halt;
    ports.set_halt(halt);
    state.loops[plan.id].set_starting(crate::run_state::Starting::Ready);
    // A cancelled start sets the stop: the node passes on the ends of its inputs.
    let _ = state.meet_at_start();
    let start = Instant::now();
    let loops = &state.loops[plan.id];
    let mut rec = state.trace.as_ref().map(|t| {
        let tid = crate::trace::net_tid(plan.id);
        t.recorder(crate::trace::Labels::for_net(&plan, tid, plan.thread_name()))
    });
    match catch_unwind(AssertUnwindSafe(|| route_with(&mut ports, loops, rec.as_mut(), halt))) {
        Ok((count, halted)) => {
            outcome.loop_count = count;
            if halted || halt.load(Ordering::Acquire) {
                outcome.status = crate::report::Status::Stopped;
            }
        }
        Err(panic) => outcome.fail(format!("routing {}", panic_text(panic))),
    }
    outcome.wall = start.elapsed();
    outcome.ended_at = SystemTime::now();
    ports.close_all();
    outcome.latency = ports.take_latency();
    outcome
}

#[cfg(test)]
fn route(ports: &mut PortSet) -> u64 {
    route_with(ports, &LoopCounter::default(), None, &AtomicBool::new(false)).0
}

/// Routes until the end or the run's `halt` ([`crate::halt`]: a cycle never drains),
/// publishing the count to `loops` and, with a recorder, tracing each forwarded message as a
/// step and each wait for input. The count, and whether the halt ended it.
fn route_with(
    ports: &mut PortSet,
    loops: &LoopCounter,
    mut rec: Option<&mut Recorder>,
    halt: &AtomicBool,
) -> (u64, bool) {
    let mut live: Vec<bool> = ports.inputs.iter().map(|p| p.reader.is_some()).collect();
    let mut out_live: Vec<bool> = ports.outputs.iter().map(|p| p.writer.is_some()).collect();
    let mut next = 0;
    let mut forwarded = 0u64;
    let n = live.len();
    while live.contains(&true) && out_live.contains(&true) {
        if halt.load(Ordering::Relaxed) {
            return (forwarded, true);
        }
        let mut taken = None;
        for k in 0..n {
            let i = (next + k) % n;
            if !live[i] {
                continue;
            }
            let Some(poll) = ports.inputs[i].take() else {
                continue;
            };
            match poll {
                Poll::Message(msg) => {
                    taken = Some(msg);
                    next = (i + 1) % n;
                    break;
                }
                Poll::Empty => {}
                Poll::Ended => live[i] = false,
            }
        }
        let begun = rec.as_ref().map(|r| r.now());
        match taken {
            Some(msg) => {
                forward(ports, &mut out_live, msg);
                forwarded += 1;
                loops.set(forwarded);
                if let (Some(r), Some(t)) = (rec.as_deref_mut(), begun) {
                    r.step(t, r.now());
                }
            }
            None => {
                wait_any(ports, &live);
                if let (Some(r), Some(t)) = (rec.as_deref_mut(), begun) {
                    r.wait(What::WaitAny, t, r.now());
                }
            }
        }
    }
    (forwarded, false)
}

/// Writes `msg` to every live output; an output whose consumer ended is dropped from the set.
/// Each copy is stamped at its own write: a wait on one coupled output is not the next one's
/// channel latency. The creation time travels unchanged.
fn forward(ports: &mut PortSet, out_live: &mut [bool], msg: Message) {
    let last = out_live.iter().rposition(|l| *l);
    let mut msg = Some(msg);
    for (i, slot) in ports.outputs.iter_mut().enumerate() {
        if !out_live[i] {
            continue;
        }
        let Some(writer) = slot.writer.as_mut() else {
            continue;
        };
        let copy = if Some(i) == last { msg.take() } else { msg.clone() };
        let Some(mut copy) = copy else { continue };
        slot.stamper.stamp(&mut copy);
        if writer.write(copy).is_err() {
            out_live[i] = false;
        }
    }
}

/// Blocks until some live input has a message or has ended.
fn wait_any(ports: &mut PortSet, live: &[bool]) {
    let mut waiting = (0..live.len()).filter(|&i| live[i]);
    let (Some(first), second) = (waiting.next(), waiting.next()) else {
        return;
    };
    if second.is_none() {
        // One input (fan-out): wait on it directly, without allocating a selection.
        if let Some(reader) = ports.inputs[first].reader.as_mut() {
            reader.wait_message();
        }
        return;
    }
    // One wait for all of them: spins for the shortest budget of the inputs (a producer on
    // this node's core, which yields, only runs once the node gives the core up), then parks
    // until any producer writes or ends.
    let live_readers = || {
        (0..live.len())
            .filter(|&i| live[i])
            .filter_map(|i| ports.inputs[i].reader.as_ref())
    };
    crate::channel::wait_any(live_readers);
}

/// The routing node as a box of a chain: each step forwards one message, taken from the
/// inputs round-robin, to every live output, as the node's own thread does. Its driver fires
/// it on any input ([`crate::net::Driver::fire_on_any_input`]).
pub(crate) const CHAINED: smx_box::BoxSpec = smx_box::BoxSpec::named("smx_rn")
    .summary("copies each message of its inputs to every output")
    .ports_from_net()
    .chainable()
    // It reads only what the firing rule found, and writes.
    .never_waits()
    .create(create_chained);

fn create_chained(_config: &smx_box::BoxConfig) -> Result<Box<dyn smx_box::BoxImpl>, smx_box::BoxError> {
    Ok(Box::new(Chained {
        inputs: Vec::new(),
        next: 0,
        outputs: Vec::new(),
    }))
}

/// A routing node on the thread of a chain.
struct Chained {
    /// The connected inputs.
    inputs: Vec<smx_box::InPort>,
    /// Where the next look for a message starts: after the input served last.
    next: usize,
    /// The outputs whose consumers may still read.
    outputs: Vec<smx_box::OutPort>,
}

impl smx_box::BoxImpl for Chained {
    fn init(&mut self, ctx: &mut smx_box::InitCtx<'_>) -> Result<(), smx_box::BoxError> {
        self.inputs = (0..ctx.input_count())
            .map(smx_box::InPort)
            .filter(|&i| ctx.input_connected(i))
            .collect();
        self.outputs = (0..ctx.output_count())
            .map(smx_box::OutPort)
            .filter(|&o| ctx.output_connected(o))
            .collect();
        Ok(())
    }

    fn step(&mut self, io: &mut smx_box::Io<'_>) -> Result<smx_box::Flow, smx_box::BoxError> {
        let n = self.inputs.len();
        let taken = (0..n).find_map(|k| {
            let at = (self.next + k) % n;
            // Only what is new: a decoupled side would give its last message again.
            let port = self.inputs[at];
            io.has_message(port)
                .then(|| io.read(port))
                .flatten()
                .map(|msg| (at, msg))
        });
        if let Some((at, msg)) = taken {
            self.next = (at + 1) % n;
            let mut msg = Some(msg);
            let last = self.outputs.len().saturating_sub(1);
            let mut k = 0;
            self.outputs.retain(|&o| {
                let copy = if k == last { msg.take() } else { msg.clone() };
                k += 1;
                copy.is_some_and(|copy| io.write(o, copy).is_ok())
            });
        }
        Ok(smx_box::Flow::Return)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::{ChannelKind, channel};
    use crate::io::{InputSlot, OutputSlot};

    fn ports(inputs: Vec<crate::channel::Reader>, outputs: Vec<crate::channel::Writer>) -> PortSet {
        PortSet {
            inputs: inputs
                .into_iter()
                .map(|r| InputSlot::new("x", Some(r), None, false))
                .collect(),
            outputs: outputs
                .into_iter()
                .map(|w| OutputSlot::new("x", Some(w), crate::latency::LatencyMode::Off))
                .collect(),
            unconnected_writes: 0,
        }
    }

    #[test]
    fn fan_in_alternates_between_inputs_with_data_and_drains_all() {
        let (mut wa, ra) = channel(ChannelKind::Coupled, 8);
        let (mut wb, rb) = channel(ChannelKind::Coupled, 8);
        for seq in 0..3 {
            wa.write(Message::new(seq, 0, b"a")).unwrap();
        }
        for seq in 0..6 {
            wb.write(Message::new(seq, 0, b"b")).unwrap();
        }
        drop((wa, wb));
        let (wo, mut ro) = channel(ChannelKind::Coupled, 100);
        let mut set = ports(vec![ra, rb], vec![wo]);
        assert_eq!(route(&mut set), 9);
        set.close_all();
        let order: String = std::iter::from_fn(|| ro.read())
            .map(|m| m.payload()[0] as char)
            .collect();
        assert_eq!(order, "ababab".to_string() + "bbb");
    }

    #[test]
    fn fan_out_gives_every_consumer_every_message() {
        let (mut wi, ri) = channel(ChannelKind::Coupled, 8);
        for seq in 0..5 {
            wi.write(Message::new(seq, 0, &[seq as u8; 100])).unwrap();
        }
        drop(wi);
        let (w1, mut r1) = channel(ChannelKind::Coupled, 8);
        let (w2, mut r2) = channel(ChannelKind::Coupled, 8);
        let mut set = ports(vec![ri], vec![w1, w2]);
        assert_eq!(route(&mut set), 5);
        set.close_all();
        for r in [&mut r1, &mut r2] {
            let seqs: Vec<u64> = std::iter::from_fn(|| r.read()).map(|m| m.seq).collect();
            assert_eq!(seqs, vec![0, 1, 2, 3, 4]);
        }
    }

    #[test]
    fn a_node_whose_consumers_all_ended_ends() {
        let (mut wi, ri) = channel(ChannelKind::Coupled, 8);
        wi.write(Message::new(0, 0, b"x")).unwrap();
        let (wo, ro) = channel(ChannelKind::Coupled, 1);
        drop(ro);
        let mut set = ports(vec![ri], vec![wo]);
        assert_eq!(
            route(&mut set),
            1,
            "the message was taken, its write failed, the node ends"
        );
        drop(set);
        assert!(wi.consumer_ended());
    }
}
