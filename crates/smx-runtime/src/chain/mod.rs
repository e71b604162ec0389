//! Operator chaining: the boxes of a chain run on one thread, one after the other.
//!
//! When a run has more box threads than cores, most hand-overs between threads are also
//! hand-overs of a core: the producer writes, the consumer must be scheduled to read, and on
//! short channels that happens for every message or two. Stream processors answer this by
//! chaining operators (Flink's operator chaining); so does smx, within the Streamix rules:
//!
//! * **What chains**: a link from box `A` to box `B` where
//!   - every connected input of `B` comes from `A`, and every output of `A` goes to `B`: `B`
//!     can only fire after `A` wrote, and `A` feeds nobody else, so when `B` blocks on a write
//!     of its own, `A` has nothing else to do, as on a thread of its own. `A` may instead feed
//!     several followers when none of them writes anywhere (sinks): `A`'s writes step them in
//!     place, so none can hold up another, and the chain is a small tree, `A` before its
//!     followers;
//!   - a routing node counts as a box that never waits ([`crate::routing::CHAINED`]): a
//!     fan-out follows its producer, and a fan-in, which has several feeders, may lead a chain
//!     with its consumer, firing on whichever input holds a message. Without this a fan-out
//!     `Src.(Snk|Snk)` on two cores hands every message over three times between four threads,
//!     each a wake-up that a busy program beside it delays;
//!   - those channels are plain coupled ones shorter than [`CHAIN_MAX_LEN`]; if one is
//!     [`crate::placement::GROUP_MIN_LEN`] long or longer, `A`'s spec must also say that its
//!     step never waits ([`smx_box::SpecBuilder::never_waits`]) or writes all it has at hand
//!     once it waited ([`smx_box::SpecBuilder::writes_in_batches`]): such a head runs ahead
//!     and its follower takes a channelful at a time, while behind a head that waits for each
//!     message the follower takes the messages one at a time, and threads of one core taking
//!     turns a channelful per turn beat that;
//!   - `B`'s spec says its step never waits on an input ([`smx_box::SpecBuilder::chainable`]);
//!   - neither has a core, priority or niceness of its own, nor runs in a cyclic executive.
//!
//!   `B` then runs on `A`'s thread, and so may its own follower: a chain is a head and a line
//!   of followers.
//! * **How it runs**: the thread fires the head as the head's own thread would (blocking in the
//!   firing rule on the head's inputs). A write into a full channel of the chain does not wait:
//!   it steps the follower in place while its input holds something, which makes room
//!   ([`crate::channel::Writer::write_making_room`]). Before the head may wait, and at least
//!   once per tick of the kernel's coarse clock, every follower steps while its input holds
//!   something; a head that never waits otherwise runs ahead, and its follower takes a
//!   channelful at a time. The firing rule, the books, the order and termination are those of
//!   threads of their own; only the thread changes, and a follower's channel never waits, so
//!   its spin and park settings do not apply. A follower whose spec says it takes its feeder's
//!   writes ([`smx_box::SpecBuilder::passes_on`], a link's sink) is offered each write while
//!   its channel is empty ([`crate::net::Driver::pass_on`]): what it takes goes out from the
//!   write, booked on the channel as written and read, and needs no step of its own. What
//!   differs is slack: behind a head that may wait, a follower runs as soon as its input holds
//!   something, so while it blocks on a write of its own the head cannot run ahead and fill the
//!   channel between them, as a head on its own thread could. A net that needs that slack to
//!   make progress (another path from the head's own producers into the follower's consumer)
//!   already depends on channel lengths; `--chain off` gives it back.
//! * **When**: by [`decide`], only when the run's box threads outnumber the cores they may use
//!   (`--chain auto`, the default), never under `--trace` (whose timeline is per box thread),
//!   and never with `--chain off`.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

use smx_box::io::host::Ports;
use smx_box::{BoxImpl, Disconnected, Message, WriteError};

use crate::io::PortSet;
use crate::net::{Driver, StepOn, Stepped, step_once};
use crate::plan::Role;
use crate::run_state::{Outcome, RunState, Starting};
use crate::thread::place;

mod decide;

pub use decide::{decide, never_waiting, never_waiting_note};

/// A box of a chain as it arrives on the chain's thread.
pub(crate) struct Member {
    pub plan: crate::plan::NetPlan,
    pub spec: smx_box::BoxSpec,
    pub ports: PortSet,
}

/// One running box of a chain and where its ports meet the chain.
struct Link {
    driver: Driver,
    /// Its spec says its step never waits ([`smx_box::SpecBuilder::never_waits`]).
    never_waits: bool,
    /// Its spec says it takes messages from its feeder's writes ([`smx_box::SpecBuilder::passes_on`]).
    passes_on: bool,
    /// Its joints with the links around it.
    joint: Joint,
}

/// Where one link's ports meet the chain. A chain lists each link before its followers, so a
/// link's followers and theirs (its subtree) are the `subtree` links right after it: stepping
/// a link touches those and no other (a sink beside it is not behind it).
#[derive(Debug, Clone, Default)]
struct Joint {
    /// Per output port, the follower it feeds, as an index into the links after this one.
    downstream: Vec<Option<usize>>,
    /// Per input port, whether the link before this one feeds it.
    upstream: Vec<bool>,
    /// How many links follow this one, directly or through its followers.
    subtree: usize,
}

/// Runs the boxes of one chain (head first) to the end on the calling thread: each is created,
/// started and cleaned up as on a thread of its own. Their outcomes by net id.
pub(crate) fn run_chain(members: Vec<Member>, state: &RunState) -> Vec<(usize, Outcome)> {
    let _ended = state.ends.guard();
    let ids: Vec<usize> = members.iter().map(|m| m.plan.id).collect();
    if !state.gate.wait() {
        return ids.into_iter().map(|id| (id, Outcome::new())).collect();
    }
    let mut links: Vec<Link> = Vec::with_capacity(members.len());
    let joints = joints(&members);
    for (k, member) in members.into_iter().enumerate() {
        let mut outcome = Outcome::new();
        if k == 0 {
            place(&member.plan, &mut outcome);
        } else {
            outcome.core = links[0].driver.core();
        }
        let starting = &state.loops[member.plan.id];
        starting.set_starting(Starting::InInit);
        let mut driver = Driver::new(&member.plan, &member.spec, member.ports, outcome, &state.stop);
        if matches!(member.plan.role, Role::Routing) {
            driver.fire_on_any_input();
        }
        starting.set_starting(Starting::Ready);
        driver.halt_on(&state.ends.halt);
        driver.instrument(state.loops[member.plan.id].clone(), None);
        if driver.failed() {
            state.start_failed.store(true, Ordering::SeqCst);
        }
        let joint = joints[k].clone();
        links.push(Link {
            driver,
            joint,
            never_waits: member.spec.never_waits,
            passes_on: member.spec.passes_on,
        });
    }
    let cancelled = state.meet_at_start();
    for link in &mut links {
        link.driver.start(cancelled);
    }
    run_links(&mut links, &state.stop);
    // The last link first: what a follower still holds goes out before the links ahead of it
    // clean up (a ZeroMQ source's linger, say).
    let mut outcomes: Vec<(usize, Outcome)> = ids
        .into_iter()
        .zip(links)
        .rev()
        .map(|(id, link)| (id, link.driver.finish()))
        .collect();
    outcomes.reverse();
    outcomes
}

/// Per member, its joint: which outputs feed which member after it, which inputs come from
/// the member before it, and how many members follow it.
fn joints(members: &[Member]) -> Vec<Joint> {
    let mut joints: Vec<Joint> = members
        .iter()
        .map(|m| Joint {
            downstream: vec![None; m.ports.outputs.len()],
            upstream: vec![false; m.ports.inputs.len()],
            subtree: 0,
        })
        .collect();
    let mut parent: Vec<Option<usize>> = vec![None; members.len()];
    // Each channel's writer, by the address of the state its two ends share.
    let mut writers: std::collections::HashMap<*const (), (usize, usize)> = std::collections::HashMap::new();
    for (k, member) in members.iter().enumerate() {
        for (i, input) in member.ports.inputs.iter().enumerate() {
            let Some(reader) = &input.reader else { continue };
            if let Some(&(j, o)) = writers.get(&std::sync::Arc::as_ptr(reader.shared()).cast::<()>()) {
                joints[j].downstream[o] = Some(k - j - 1);
                joints[k].upstream[i] = true;
                parent[k] = Some(j);
            }
        }
        for (o, output) in member.ports.outputs.iter().enumerate() {
            if let Some(w) = &output.writer {
                writers.insert(std::sync::Arc::as_ptr(w.shared()).cast::<()>(), (k, o));
            }
        }
    }
    // Followers come after their feeder, so from the last member back each one's subtree is
    // complete before it is added to its feeder's.
    for k in (0..members.len()).rev() {
        if let Some(j) = parent[k] {
            joints[j].subtree += joints[k].subtree + 1;
        }
    }
    joints
}

/// The chain's loop: the head as its own thread would fire it, its followers drained before it
/// may wait and whenever it ran ahead for a tick of the coarse clock while they had something
/// to do (see [`RunAhead`]); once the head has ended, the followers to their ends.
fn run_links(links: &mut [Link], stop: &AtomicBool) {
    let pending = Cell::new(false);
    let lane = Lane {
        stop,
        pending: &pending,
    };
    let mut ahead = RunAhead::new();
    loop {
        let running = if ahead.may_go_on(&mut links[0], &pending) {
            let since = ahead.since;
            fire_while(links, lane, true, |head| still_ahead(head, since, &pending))
        } else {
            let stepped = drain_followers(links, lane);
            ahead.drained(&pending, stepped);
            fire(links, lane, true)
        };
        if !running {
            break;
        }
    }
    // The head has closed its outputs: each follower drains its input and sees the end.
    for k in 1..links.len() {
        while fire(&mut links[k..], lane, true) {}
    }
}

/// What every step of a chain shares: the run's stop, and whether the followers have
/// something to do: a message written into a follower's channel since they last drained
/// (rather than taken from the write by a follower, [`ChainPorts::pass_on`]), or a follower
/// that stepped in that drain and may hold what it took until it finds its input empty
/// ([`BoxImpl::idle`]).
#[derive(Clone, Copy)]
struct Lane<'a> {
    stop: &'a AtomicBool,
    pending: &'a Cell<bool>,
}

/// Whether a chain's head may step again before its followers run.
///
/// A head that never waits and whose firing rule will not wait runs ahead of its followers as
/// it would on a thread of its own: its messages collect in the channel, and the follower
/// takes a channelful at a time when a write finds the channel full ([`ChainPorts::write_down`]),
/// so each box's code and data stay in the cache for a whole batch. Before a head that may wait,
/// the followers take what it left, as a consumer thread would while its producer waits. The
/// coarse clock bounds how long a message can sit behind a head that keeps running but writes
/// rarely (a long computation per step): the followers run at least once per kernel tick. The
/// clock is read only while the followers have something to do ([`Lane::pending`]): a head
/// whose every write went out at once through its follower ([`ChainPorts::pass_on`]) leaves
/// them nothing, and the read would cost it a few nanoseconds a message.
struct RunAhead {
    since: u64,
}

impl RunAhead {
    fn new() -> Self {
        RunAhead {
            since: smx_timing::coarse_ns(),
        }
    }

    fn may_go_on(&self, head: &mut Link, pending: &Cell<bool>) -> bool {
        head.never_waits && still_ahead(&mut head.driver, self.since, pending)
    }

    /// After the followers drained; `stepped`: one of them took something, which it may hold.
    fn drained(&mut self, pending: &Cell<bool>, stepped: bool) {
        pending.set(stepped);
        self.since = smx_timing::coarse_ns();
    }
}

/// For a head that never waits: its firing rule will not wait, and its followers have had
/// nothing to do or the coarse clock still reads `since`.
#[inline(always)]
fn still_ahead(head: &mut Driver, since: u64, pending: &Cell<bool>) -> bool {
    head.ready() && (!pending.get() || smx_timing::coarse_ns() == since)
}

/// [`drain_all`] of the links after the head; whether one of them stepped.
fn drain_followers(links: &mut [Link], lane: Lane<'_>) -> bool {
    match links.split_first_mut() {
        Some((_, followers)) => drain_all(followers, lane),
        None => false,
    }
}

/// Steps each of `links` in turn while its input holds something (a pass of the chain's tail);
/// one that got nothing releases what it holds, as on a thread of its own it would now wait.
/// Whether one of them stepped.
fn drain_all(links: &mut [Link], lane: Lane<'_>) -> bool {
    let mut stepped = false;
    for k in 0..links.len() {
        if drain(&mut links[k..], lane) {
            stepped = true;
        } else {
            links[k].driver.release_held();
        }
    }
    stepped
}

/// Fires the first of `links` while its firing rule lets it step; whether it stepped.
fn drain(links: &mut [Link], lane: Lane<'_>) -> bool {
    if !links[0].driver.ready() {
        return false;
    }
    fire_while(links, lane, false, Driver::ready);
    true
}

/// Fires the first of `links` once, its step seeing the chain's view of its ports.
///
/// The links after it release what they hold across steps ([`BoxImpl::idle`]) first unless
/// this step is sure not to wait: the box never waits and its firing rule will not either.
fn fire(links: &mut [Link], lane: Lane<'_>, block: bool) -> bool {
    let Some((first, rest)) = links.split_first_mut() else {
        return false;
    };
    let rest = &mut rest[..first.joint.subtree];
    if !(first.never_waits && (!block || first.driver.ready())) {
        release(rest);
    }
    let mut via = Through {
        joint: &first.joint,
        never_waits: first.never_waits,
        release_first: false,
        rest,
        pending: lane.pending,
    };
    first.driver.fire_via(lane.stop, block, &mut via)
}

/// Fires the first of `links` as [`fire`] does, again and again while `more` says so after a
/// firing, under one unwind guard. With `block`, only for a box that never waits and whose
/// firing rule will not wait, as `more` must keep it: the links after it are not asked to
/// release what they hold. Without, a box that may wait has them release before each step.
fn fire_while(links: &mut [Link], lane: Lane<'_>, block: bool, more: impl FnMut(&mut Driver) -> bool) -> bool {
    let Some((first, rest)) = links.split_first_mut() else {
        return false;
    };
    let rest = &mut rest[..first.joint.subtree];
    let mut via = Through {
        joint: &first.joint,
        never_waits: first.never_waits,
        release_first: !first.never_waits,
        rest,
        pending: lane.pending,
    };
    first.driver.fire_via_while(lane.stop, block, &mut via, more)
}

/// Asks every link of `links` to release what it holds.
fn release(links: &mut [Link]) {
    for link in links {
        link.driver.release_held();
    }
}

/// A link's step through the chain's view of its ports ([`ChainPorts`]).
struct Through<'a> {
    joint: &'a Joint,
    /// The stepping link's spec says it never waits.
    never_waits: bool,
    /// The links after it release what they hold before each step.
    release_first: bool,
    rest: &'a mut [Link],
    pending: &'a Cell<bool>,
}

impl StepOn for Through<'_> {
    #[inline(always)]
    fn step(&mut self, instance: &mut dyn BoxImpl, ports: &mut PortSet, count: u64, stop: &AtomicBool) -> Stepped {
        if self.release_first {
            release(self.rest);
        }
        let mut view = ChainPorts {
            ports,
            joint: self.joint,
            never_waits: self.never_waits,
            rest: self.rest,
            lane: Lane {
                stop,
                pending: self.pending,
            },
        };
        step_once(instance, &mut view, count, stop)
    }
}

/// A link's ports as its step sees them: a write into the next link's full channel steps the
/// next link in place, and a wait on the input from the previous link does not wait (nothing
/// can arrive while this thread waits), as [`smx_box::SpecBuilder::chainable`] promises it never
/// does.
struct ChainPorts<'a> {
    ports: &'a mut PortSet,
    joint: &'a Joint,
    never_waits: bool,
    rest: &'a mut [Link],
    lane: Lane<'a>,
}

impl ChainPorts<'_> {
    /// The follower that `port` feeds, if it feeds one: its index among the links after this
    /// one.
    fn follower_of(&self, port: usize) -> Option<usize> {
        self.joint.downstream.get(port).copied().flatten()
    }

    /// Whether the link before this one feeds input `port`.
    fn fed_in_chain(&self, port: usize) -> bool {
        self.joint.upstream.get(port).copied().unwrap_or(false)
    }

    /// Writes into a follower's channel, stepping that follower (and what follows it) while
    /// the channel is full. A link that may wait later in this step has them release what the
    /// steps in place collected.
    fn write_down(&mut self, port: usize, at: usize, msg: Message) -> Result<(), Disconnected> {
        self.down(at, |ports, make_room| ports.write_making_room(port, msg, make_room))
    }

    /// Offers a message written to `port` to the follower at `at` when it takes messages
    /// from writes ([`Driver::pass_on`]); whether it took it.
    #[inline(always)]
    fn pass_on(&mut self, port: usize, at: usize, sent_ns: u64, pass: impl FnOnce(&mut dyn BoxImpl) -> bool) -> bool {
        let follower = &mut self.rest[at];
        if !follower.passes_on {
            return false;
        }
        let Some(output) = self.ports.outputs.get_mut(port) else {
            return false;
        };
        follower.driver.pass_on(sent_ns, &mut output.stamper, pass)
    }

    /// Runs `write` (one of the port set's writes that make room) with the room maker of
    /// [`ChainPorts::write_down`] for the follower at `at`.
    fn down(
        &mut self,
        at: usize,
        write: impl FnOnce(&mut PortSet, &mut dyn FnMut()) -> Result<(), Disconnected>,
    ) -> Result<(), Disconnected> {
        let ChainPorts {
            ports,
            rest,
            lane,
            never_waits,
            ..
        } = self;
        lane.pending.set(true);
        let end = at + 1 + rest[at].joint.subtree;
        let behind = &mut rest[at..end];
        let mut made_room = false;
        let written = write(ports, &mut || {
            made_room = true;
            drain_all(behind, *lane);
        });
        if made_room && !*never_waits {
            release(behind);
        }
        written
    }
}

impl Ports for ChainPorts<'_> {
    crate::io::pass_ports_through!();

    fn read_blocking(&mut self, port: usize) -> Option<Message> {
        if self.fed_in_chain(port) {
            return self.ports.read(port);
        }
        self.ports.read_blocking(port)
    }

    #[inline]
    fn write(&mut self, port: usize, msg: Message) -> Result<(), Disconnected> {
        match self.follower_of(port) {
            Some(at) if self.pass_on(port, at, msg.sent_ns, |b| b.pass_on(&msg)) => Ok(()),
            Some(at) => self.write_down(port, at, msg),
            None => self.ports.write(port, msg),
        }
    }

    fn write_filled(
        &mut self,
        port: usize,
        seq: u64,
        sent_ns: u64,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Result<(), Disconnected> {
        let Some(at) = self.follower_of(port) else {
            return self.ports.write_filled(port, seq, sent_ns, len, fill);
        };
        if self.pass_on(port, at, sent_ns, |b| b.pass_on_filled(seq, sent_ns, len, fill)) {
            return Ok(());
        }
        self.down(at, |ports, make_room| {
            ports.write_filled_making_room(port, (seq, sent_ns, len), fill, make_room)
        })
    }

    fn wait_until(&mut self, port: usize, deadline: std::time::Instant, stop: &AtomicBool) -> bool {
        if self.fed_in_chain(port) {
            return self.ports.has_message(port) || self.ports.input_ended(port);
        }
        self.ports.wait_until(port, deadline, stop)
    }

    fn write_within(&mut self, port: usize, msg: Message, timeout: std::time::Duration) -> Result<(), WriteError> {
        match self.follower_of(port) {
            // Room is made at once, so there is nothing to time out.
            Some(at) if self.pass_on(port, at, msg.sent_ns, |b| b.pass_on(&msg)) => Ok(()),
            Some(at) => self.write_down(port, at, msg).map_err(|_| WriteError::Disconnected),
            None => self.ports.write_within(port, msg, timeout),
        }
    }
}
