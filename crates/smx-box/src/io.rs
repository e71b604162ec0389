//! What a box sees of the runtime: its configuration and ports at init, reads and writes in a
//! step.
//!
//! Port handles are positions: [`InPort`]`(i)` is the `i`-th input of the box's spec (for a
//! spec whose ports come from the net, the `i`-th input the net declares), so a step does no
//! lookups and a box can name its ports as constants. An optional port may have no channel:
//! reads give `None`, writes are dropped and counted in the net's report.
//!
//! The runtime side is the [`host::Ports`] trait: this crate knows no channel, so any runtime
//! (smx's threads, a test harness, a cyclic executive) can drive a box.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::{BoxConfig, BoxError, Disconnected, Message, WriteError};

/// An input port: the `i`-th input of the box's spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InPort(pub usize);

/// An output port: the `i`-th output of the box's spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OutPort(pub usize);

pub mod host {
    //! The runtime's side of the contract. Box authors do not need this module.

    use super::*;

    /// The ports of one box instance as a runtime holds them, indexed like [`InPort`] and
    /// [`OutPort`]. An index past the end, like an unconnected port, has no channel.
    pub trait Ports {
        fn input_count(&self) -> usize;
        fn output_count(&self) -> usize;
        fn input_name(&self, port: usize) -> Option<&str>;
        fn output_name(&self, port: usize) -> Option<&str>;
        fn input_connected(&self, port: usize) -> bool;
        fn output_connected(&self, port: usize) -> bool;
        /// Takes the next message without blocking (a decoupled input's latest value again
        /// when nothing new came).
        fn read(&mut self, port: usize) -> Option<Message>;
        /// Reads as [`Ports::read`] and lends the message to `see` instead of returning it
        /// ([`Io::read_with`]); false when there was none. By default read, then lent.
        fn read_with(&mut self, port: usize, see: &mut dyn FnMut(&Message)) -> bool {
            match self.read(port) {
                Some(msg) => {
                    see(&msg);
                    true
                }
                None => false,
            }
        }
        fn has_message(&mut self, port: usize) -> bool;
        /// The last read of the port gave a decoupled input's latest value again
        /// ([`Io::read_again`]). By default never: a host without decoupled inputs.
        fn read_again(&self, port: usize) -> bool {
            let _ = port;
            false
        }
        /// Waits for a new message or the producer's end.
        fn read_blocking(&mut self, port: usize) -> Option<Message>;
        /// The producer ended and everything it wrote was taken (true when unconnected).
        fn input_ended(&self, port: usize) -> bool;
        /// Writes; `Err` when the consumer has ended (an unconnected port drops and counts).
        fn write(&mut self, port: usize, msg: Message) -> Result<(), Disconnected>;
        /// Writes the message [`Message::filled`] would build, built where it stays if the
        /// runtime can ([`Io::write_filled`]); by default built, then [`Ports::write`]n. The
        /// parts come as separate arguments, in registers: a struct of them would be passed
        /// through memory and loaded back across its own stores on every message.
        fn write_filled(
            &mut self,
            port: usize,
            seq: u64,
            sent_ns: u64,
            len: usize,
            fill: &mut dyn FnMut(&mut [u8]),
        ) -> Result<(), Disconnected> {
            self.write(port, Message::filled(seq, sent_ns, len, fill))
        }
        /// The consumer ended (true when unconnected: nobody listens).
        fn output_ended(&self, port: usize) -> bool;
        /// Waits until a new message is on the input or its producer has ended (true), or until
        /// `deadline` or a stop (false). See [`Io::wait_until`].
        fn wait_until(&mut self, port: usize, deadline: Instant, stop: &AtomicBool) -> bool;
        /// Writes, waiting at most `timeout` for room in a full coupled channel.
        fn write_within(&mut self, port: usize, msg: Message, timeout: Duration) -> Result<(), WriteError>;
        /// Bounds how long the firing rule waits for a message on this input (`None`: until
        /// one comes or the producer ends). See [`Io::set_read_timeout`].
        fn set_read_timeout(&mut self, port: usize, timeout: Option<Duration>);
    }

    /// The context of one step.
    pub fn step_io<'a>(ports: &'a mut dyn Ports, iteration: u64, stop: &'a AtomicBool) -> Io<'a> {
        Io {
            ports,
            iteration,
            stop,
            stop_seen: Cell::new(false),
        }
    }

    /// Whether [`Io::stop_requested`] answered yes during the step: an `End` returned after
    /// that is a stop, not the end of the box's work (a check before the step misses a stop
    /// that arrives while the step runs).
    pub fn stop_seen(io: &Io<'_>) -> bool {
        io.stop_seen.get()
    }

    /// The context of `init`.
    pub fn init_ctx<'a>(
        instance: &'a str,
        config: &'a BoxConfig,
        ports: &'a mut dyn Ports,
        stop: &Arc<AtomicBool>,
    ) -> InitCtx<'a> {
        InitCtx {
            instance,
            config,
            ports,
            stop: Arc::clone(stop),
        }
    }
}

/// Handed to [`BoxImpl::init`](crate::BoxImpl::init).
pub struct InitCtx<'a> {
    instance: &'a str,
    config: &'a BoxConfig,
    ports: &'a mut dyn host::Ports,
    stop: Arc<AtomicBool>,
}

impl<'a> InitCtx<'a> {
    /// The run's stop request, to keep: set when the run is asked to stop (Ctrl-C). For a box
    /// whose `cleanup` or `abort` waits on something outside the net (a peer that must confirm,
    /// a retry), so that those waits end at a stop too.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// Instance name of this net (`Src`).
    pub fn instance(&self) -> &str {
        self.instance
    }

    pub fn config(&self) -> &BoxConfig {
        self.config
    }

    /// Whether the port has a channel (an optional port may be unconnected).
    pub fn input_connected(&self, port: InPort) -> bool {
        self.ports.input_connected(port.0)
    }

    pub fn output_connected(&self, port: OutPort) -> bool {
        self.ports.output_connected(port.0)
    }

    pub fn input_count(&self) -> usize {
        self.ports.input_count()
    }

    pub fn output_count(&self) -> usize {
        self.ports.output_count()
    }

    /// Bounds how long the firing rule waits for this input before the first step; see
    /// [`Io::set_read_timeout`].
    pub fn set_read_timeout(&mut self, port: InPort, timeout: Option<Duration>) {
        self.ports.set_read_timeout(port.0, timeout);
    }

    /// Finds an input by name (for boxes whose ports come from the net); an error names the
    /// box and the ports it has.
    pub fn input(&self, name: &str) -> Result<InPort, BoxError> {
        let n = self.ports.input_count();
        (0..n)
            .find(|&i| self.ports.input_name(i) == Some(name))
            .map(InPort)
            .ok_or_else(|| self.no_port("input", name, (0..n).filter_map(|i| self.ports.input_name(i))))
    }

    /// Finds an output by name.
    pub fn output(&self, name: &str) -> Result<OutPort, BoxError> {
        let n = self.ports.output_count();
        (0..n)
            .find(|&i| self.ports.output_name(i) == Some(name))
            .map(OutPort)
            .ok_or_else(|| self.no_port("output", name, (0..n).filter_map(|i| self.ports.output_name(i))))
    }

    fn no_port<'n>(&self, what: &str, name: &str, known: impl Iterator<Item = &'n str>) -> BoxError {
        let known: Vec<&str> = known.collect();
        let known = if known.is_empty() {
            "none".to_string()
        } else {
            known.join(", ")
        };
        BoxError(format!("{}: no {what} port '{name}' ({what}s: {known})", self.instance))
    }
}

/// Handed to [`BoxImpl::step`](crate::BoxImpl::step).
pub struct Io<'a> {
    ports: &'a mut dyn host::Ports,
    iteration: u64,
    stop: &'a AtomicBool,
    stop_seen: Cell<bool>,
}

impl<'a> Io<'a> {
    /// Takes the next message of an input without blocking: `None` when empty (or ended, or
    /// unconnected). For a decoupled input, the latest value again when nothing new came.
    #[inline]
    pub fn read(&mut self, port: InPort) -> Option<Message> {
        self.ports.read(port.0)
    }

    /// Reads like [`Io::read`], but lends the message to `see` instead of returning it: a
    /// message returned to the box is copied at each return on the way, each copy loaded right
    /// after the stores of the one before, which for a sink whose step is little more than a
    /// look at its message is a noticeable part of the step. smx's runtime moves it out of the
    /// channel once and lends it from there. `None` when there was nothing to read; the message
    /// is gone afterwards (clone it to keep it).
    #[inline]
    pub fn read_with<R>(&mut self, port: InPort, see: impl FnOnce(&Message) -> R) -> Option<R> {
        let (mut see, mut seen) = (Some(see), None);
        self.ports
            .read_with(port.0, &mut |msg| seen = see.take().map(|see| see(msg)));
        seen
    }

    /// Whether the last read of an input ([`Io::read`], [`Io::read_with`]) gave its latest
    /// value again rather than a new message: a decoupled input with nothing new. A box that
    /// checks the order of what it reads tells a value read again from a message that came
    /// twice by this; their numbers, and even their creation times, can be the same.
    #[inline]
    pub fn read_again(&self, port: InPort) -> bool {
        self.ports.read_again(port.0)
    }

    /// Whether a new message is waiting on an input now, without blocking (false when empty,
    /// ended or unconnected; a decoupled input's latest value does not count). A box that
    /// reads several inputs together uses it to take more than the firing rule guaranteed
    /// only while every one of them has a message.
    #[inline]
    pub fn has_message(&mut self, port: InPort) -> bool {
        self.ports.has_message(port.0)
    }

    /// Blocks until a new message arrives or the producer has ended (also on a decoupled
    /// input, where it never returns a duplicate).
    pub fn read_blocking(&mut self, port: InPort) -> Option<Message> {
        self.ports.read_blocking(port.0)
    }

    /// Waits until a new message is on an input or its producer has ended (true), or until
    /// `deadline` passed or the run is asked to stop (false); the message stays for a read.
    /// For a box with a timeout of its own on one input, such as a C box's timed blocking read.
    pub fn wait_until(&mut self, port: InPort, deadline: Instant) -> bool {
        self.ports.wait_until(port.0, deadline, self.stop)
    }

    /// True once the producer has ended and the buffer is drained (always for an unconnected
    /// port).
    pub fn input_ended(&self, port: InPort) -> bool {
        self.ports.input_ended(port.0)
    }

    /// Writes a message: blocks on a full coupled channel, overwrites the oldest on a
    /// decoupled one, drops it (counted) on an unconnected optional port. `Err` when the
    /// consumer has ended (the message is dropped and counted).
    #[inline]
    pub fn write(&mut self, port: OutPort, msg: Message) -> Result<(), Disconnected> {
        self.ports.write(port.0, msg)
    }

    /// Writes the message `Message::filled(seq, sent_ns, len, fill)` like [`Io::write`], but
    /// has it built in the channel's slot where the runtime can, instead of built here and moved
    /// there: for a source whose step is little more than making its message, the move (loads
    /// right after the fill's narrower stores, which the CPU cannot forward) is a noticeable
    /// part of the step. `fill` writes the payload's `len` bytes (smx's runtime does not call
    /// it when the write fails).
    #[inline]
    pub fn write_filled(
        &mut self,
        port: OutPort,
        seq: u64,
        sent_ns: u64,
        len: usize,
        mut fill: impl FnMut(&mut [u8]),
    ) -> Result<(), Disconnected> {
        self.ports.write_filled(port.0, seq, sent_ns, len, &mut fill)
    }

    /// Writes like [`Io::write`], but waits at most `timeout` for room in a full coupled
    /// channel; then the message is dropped (counted in the channel's `dropped`) and the
    /// result says so. This is the original runtime's write timeout: a box that must not stall
    /// behind a slow consumer gives up on one message instead. Decoupled and unconnected
    /// outputs never wait, so there it is [`Io::write`].
    pub fn write_within(&mut self, port: OutPort, msg: Message, timeout: Duration) -> Result<(), WriteError> {
        self.ports.write_within(port.0, msg, timeout)
    }

    /// True once the consumer has ended (always for an unconnected port: nobody listens).
    pub fn output_ended(&self, port: OutPort) -> bool {
        self.ports.output_ended(port.0)
    }

    /// Bounds how long the firing rule waits for a message on a triggering (coupled) input
    /// before the next step: once `timeout` passed with nothing on it, the step runs anyway and
    /// a read of that input gives `None` while [`Io::input_ended`] is false. `None` waits until a
    /// message comes or the producer ends (the default). This is the original runtime's read
    /// timeout: a box that must act on silence (a watchdog, a heartbeat) needs a step without
    /// a message. A cyclic executive never waits, so there it changes nothing.
    pub fn set_read_timeout(&mut self, port: InPort, timeout: Option<Duration>) {
        self.ports.set_read_timeout(port.0, timeout);
    }

    /// The number of the current iteration (1-based).
    #[inline]
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// True when the run was asked to stop (Ctrl-C). The runtime stops a source between
    /// steps by itself; a box that waits inside its step (for a socket, say) asks here and
    /// returns `Flow::End`, which is then reported as stopped.
    #[inline]
    pub fn stop_requested(&self) -> bool {
        let stop = self.stop.load(Ordering::Relaxed);
        if stop {
            self.stop_seen.set(true);
        }
        stop
    }
}
