//! The contract between a Streamix box and the runtime that runs it.
//!
//! A *box* is the unit of computation a Streamix net composes: it has named input and output
//! ports, a configuration, and a step that the runtime calls whenever the box can fire. This
//! crate is all a box author needs: it depends on nothing but `std`, so a crate of boxes builds
//! in seconds and pulls in none of the language front end, the runtime or the command line.
//!
//! # Writing a box
//!
//! 1. Declare the box once, as a [`BoxSpec`] constant: its implementation name (what a net
//!    writes after `box`), its ports and its configuration keys with defaults.
//! 2. Implement [`BoxImpl`] for the instance type; its `step` reads with [`Io::read`] and
//!    writes with [`Io::write`]. Port handles are positions in the spec's lists:
//!    [`InPort`]`(0)` is the first input. A sink that only looks at its message can borrow it
//!    with [`Io::read_with`], and a source can have its small message built in the channel
//!    with [`Io::write_filled`]; both save moving the message through the runtime's layers.
//! 3. Hand the spec to the command line: `smxrun::main_with_boxes(&[SPEC])` gives every
//!    `smxrun` command, option and report with your boxes beside the built-in ones.
//!
//! ```
//! use smx_box::prelude::*;
//!
//! /// `scale(in x, out y)`: multiplies every little-endian f64 by `factor`.
//! pub const SCALE: BoxSpec = BoxSpec::named("scale")
//!     .summary("multiplies every number by `factor`")
//!     .inputs(&[PortSpec::new("x").help("numbers, 8-byte little-endian f64")])
//!     .outputs(&[PortSpec::new("y").help("the scaled numbers")])
//!     .config(&[ConfigKey::float("factor").default_value("2.0").help("the factor")])
//!     .create(|config| Ok(Box::new(Scale { factor: config.float("factor")?, scaled: 0 })));
//!
//! const X: InPort = InPort(0);
//! const Y: OutPort = OutPort(0);
//!
//! struct Scale {
//!     factor: f64,
//!     scaled: u64,
//! }
//!
//! impl BoxImpl for Scale {
//!     fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
//!         // The firing rule guarantees a message (or the producer's end) on `x`.
//!         let Some(msg) = io.read(X) else { return Ok(Flow::Return) };
//!         let bytes: [u8; 8] = msg.payload().try_into().map_err(|_| BoxError::new("x: not an f64"))?;
//!         let y = f64::from_le_bytes(bytes) * self.factor;
//!         // A refused write means the consumer ended; `Return` then ends this box too.
//!         let _ = io.write(Y, msg.with_payload(&y.to_le_bytes()));
//!         self.scaled += 1;
//!         Ok(Flow::Return)
//!     }
//!
//!     fn stats(&self) -> Stats {
//!         Stats::new().with("scaled", self.scaled)
//!     }
//! }
//! # let _ = SCALE.create(&BoxConfig::with_defaults("S", &SCALE).unwrap()).unwrap();
//! ```
//!
//! # What the runtime guarantees
//!
//! * **One thread at a time.** An instance is created, initialised, stepped and cleaned up by
//!   one thread; it needs `Send`, never `Sync`.
//! * **The firing rule.** `step` runs once every coupled input holds a message or has ended,
//!   so one [`Io::read`] per coupled input never waits. Decoupled inputs (`decoupled in x`)
//!   never hold the box back and give their latest value again when nothing new came.
//! * **Chaining, if the box allows it.** A spec marked [`SpecBuilder::chainable`] (its step
//!   reads only what the firing rule found, and never waits on an input) lets the runtime step
//!   the box on the thread of the one box that feeds it, when threads outnumber cores. Nothing
//!   above changes: one thread still does all of the instance's work, and the firing rule,
//!   termination and the books are the same. A chainable box that sends each message out of
//!   the net may also say [`SpecBuilder::passes_on`]: chained, it is offered its feeder's
//!   writes ([`BoxImpl::pass_on`]) while its input is empty, and a message it takes needs
//!   neither the channel nor a step.
//! * **Work held across steps is asked for before any wait.** [`BoxImpl::idle`] runs whenever
//!   the box's thread may wait or nothing new came: before its firing rule waits; chained,
//!   before any box ahead of it on the thread steps unless that box is
//!   [`SpecBuilder::never_waits`], and after every pass of the chain in which it did not step;
//!   after each time-triggered step. A box that collects messages to send them together (the
//!   ZeroMQ sink's frames) releases them there, so nothing it holds waits while nothing
//!   happens.
//! * **Termination.** A box ends when its step returns [`Flow::End`]; or, after
//!   [`Flow::Return`], when all its triggering inputs have ended and are drained, or when all
//!   consumers of its outputs have ended. Whatever the step returns, a box whose every
//!   connected input has ended and is drained ends: [`Flow::Continue`] cannot keep it spinning
//!   on inputs that will never bring anything again.
//! * **A box that cannot start stops the run.** An `Err` (or a panic) from the constructor or
//!   from `init` is a configuration problem: no box runs a step, every box is cleaned up, and
//!   the run is rejected with the message, like any other bad value.
//! * **Failure while running is contained.** An `Err` from `step`, `idle` or `cleanup` (or a panic)
//!   ends this box as failed with the message in the report; its channels close, so its
//!   neighbours end cleanly. [`BoxImpl::abort`] then [`BoxImpl::cleanup`] still run.
//! * **Latency is measured for you.** Every run reports each channel's latency and each sink's
//!   end-to-end latency, counted from [`Message::sent_ns`], the message's creation. Pass a
//!   message on as it is or with [`Message::with_payload`] and its age goes on counting; make a
//!   new message (a source, or a box that combines several inputs into a new datum) with
//!   [`now_ns`] and a new age starts there (the [`Message`] docs say why).
//! * **Every message is booked.** A write to an ended consumer returns [`Disconnected`] and is
//!   counted as dropped; nothing is lost without a counter.
//!
//! The runtime's half of the contract is [`io::host`].

mod clock;
mod config;
mod error;
pub mod io;
mod message;
mod spec;
mod stats;
mod value;

pub use clock::{epoch, now_ns};
pub use config::{BoxConfig, ConfigValue};
pub use error::{BoxError, Disconnected, WriteError};
pub use io::{InPort, InitCtx, Io, OutPort};
pub use message::{ForeignVTable, INLINE_CAPACITY, Message};
pub use spec::{BoxSpec, ConfigKey, Constructor, Factory, PortSpec, Ports, SharedConstructor, SpecBuilder, ValueKind};
pub use stats::{StatValue, Stats};
pub use value::{parse_duration, parse_value};

/// What a box's step asks the runtime to do next (the original's `SMX_NET_RETURN`,
/// `SMX_NET_CONTINUE`, `SMX_NET_END`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Let the runtime decide: end when every triggering input has ended and is drained, or
    /// when every consumer has ended; otherwise go on.
    Return,
    /// Go on even when every consumer has ended (a box with side effects of its own). A box
    /// whose every connected input has ended still ends.
    Continue,
    /// Stop after this iteration.
    End,
}

/// One box instance's behaviour. Runs entirely on one thread (see the crate docs).
pub trait BoxImpl: Send {
    /// Prepare: open resources, check the ports that are connected. Runs before the start
    /// barrier; an error here stops the whole run before any box steps.
    fn init(&mut self, _ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        Ok(())
    }

    /// One iteration, called when the box can fire (see the crate docs).
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError>;

    /// Nothing more may come for a while: work the box holds back across steps must go now.
    /// A box that collects what several steps read (a ZeroMQ sink filling one frame with many
    /// messages) can then let messages that come in quick succession share the cost of
    /// sending, and still never keep one while nothing else happens.
    ///
    /// A runtime calls it whenever the box's thread may wait, or a step found nothing new:
    /// before the firing rule waits; on a chain's thread, before the step of any box ahead of
    /// it that may wait ([`SpecBuilder::never_waits`]) and after a pass in which this box
    /// did not step; after each step of a time-triggered box. `Ok(Flow::End)` ends the box
    /// as a step's `End` would (a sink that had to give up), any other flow lets it go on; an
    /// error fails the box, as a step's would.
    fn idle(&mut self) -> Result<Flow, BoxError> {
        Ok(Flow::Return)
    }

    /// The box is ending abnormally: `init` or a step failed. Called once, just before
    /// [`BoxImpl::cleanup`], so that a box talking to peers outside the net (a ZeroMQ sink)
    /// can tell them at once instead of leaving them to wait for a timeout.
    fn abort(&mut self, _why: &str) {}

    /// Release resources and flush what was buffered. Called once after the last step, also
    /// after a failed init. An error here (a flush that failed: a full disk) fails the box.
    fn cleanup(&mut self) -> Result<(), BoxError> {
        Ok(())
    }

    /// The box's own figures for the report, read after `cleanup`.
    fn stats(&self) -> Stats {
        Stats::new()
    }

    /// Takes `msg`, which the box's feeder writes into the box's one input, as a step that
    /// read it would, when its spec says so ([`SpecBuilder::passes_on`]). A runtime asks only
    /// on the box's own thread, between its steps, while the box runs and its input channel
    /// is empty, so the order is the channel's. `true`: the message is taken (it counts as
    /// written into and read from the channel; no step sees it). `false`: it is not, and goes
    /// into the channel as if this method did not exist, for the step to meet (a box that
    /// cannot send it now, or must fail or end on it, leaves that to its step).
    fn pass_on(&mut self, _msg: &Message) -> bool {
        false
    }

    /// [`BoxImpl::pass_on`] of the message [`Message::filled`] would build: `fill` writes its
    /// `len` bytes straight where the box sends them. `false` only before `fill` was called:
    /// the message is then built for the channel.
    fn pass_on_filled(&mut self, _seq: u64, _sent_ns: u64, _len: usize, _fill: &mut dyn FnMut(&mut [u8])) -> bool {
        false
    }
}

/// Everything a box file needs: `use smx_box::prelude::*;`.
pub mod prelude {
    pub use crate::{
        BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, ConfigValue, Disconnected, Flow, InPort, InitCtx, Io,
        Message, OutPort, PortSpec, StatValue, Stats, ValueKind, WriteError, now_ns,
    };
}
