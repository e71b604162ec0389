//! What a box sees of the runtime: port handles at init, reads and writes in a step.
//!
//! A box's ports are the ports of its declaration, in declaration order; [`InPort`] and
//! [`OutPort`] are indices into them, resolved once by name in `init` so that a step does no
//! string lookups. An `open` port may have no channel: reads give `None`, writes are dropped
//! and counted in the net's report.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::boxes::api::{BoxConfig, BoxError, Disconnected, InPort, OutPort};
use crate::runtime::channel::{Reader, Writer};
use crate::runtime::message::Message;

/// One input port of a net and its channel, if connected.
#[derive(Debug)]
pub struct InputSlot {
    pub name: String,
    pub reader: Option<Reader>,
}

/// One output port of a net and its channel, if connected.
#[derive(Debug)]
pub struct OutputSlot {
    pub name: String,
    pub writer: Option<Writer>,
}

/// The ports of one net, owned by its thread.
#[derive(Debug, Default)]
pub struct PortSet {
    pub inputs: Vec<InputSlot>,
    pub outputs: Vec<OutputSlot>,
    /// Messages written to unconnected (`open`) outputs and discarded.
    pub unconnected_writes: u64,
}

impl PortSet {
    /// Ends every channel of this net: producers downstream see the end after draining,
    /// producers upstream see their writes fail.
    pub fn close_all(&mut self) {
        for input in &mut self.inputs {
            if let Some(reader) = &mut input.reader {
                reader.close();
            }
        }
        for output in &mut self.outputs {
            if let Some(writer) = &mut output.writer {
                writer.close();
            }
        }
    }

    fn names(slots: impl Iterator<Item = String>) -> String {
        let names: Vec<String> = slots.collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    }
}

/// Handed to [`crate::boxes::BoxImpl::init`].
pub struct InitCtx<'a> {
    instance: &'a str,
    config: &'a BoxConfig,
    ports: &'a PortSet,
}

impl<'a> InitCtx<'a> {
    pub(crate) fn new(instance: &'a str, config: &'a BoxConfig, ports: &'a PortSet) -> Self {
        InitCtx {
            instance,
            config,
            ports,
        }
    }

    /// Instance name of this net (`Src`).
    pub fn instance(&self) -> &str {
        self.instance
    }

    pub fn config(&self) -> &BoxConfig {
        self.config
    }

    /// Resolves an input port by name; an error names the box and the known ports.
    pub fn input(&mut self, name: &str) -> Result<InPort, BoxError> {
        match self.ports.inputs.iter().position(|p| p.name == name) {
            Some(index) => Ok(InPort(index)),
            None => Err(BoxError(format!(
                "{}: no input port '{name}' (inputs: {})",
                self.instance,
                PortSet::names(self.ports.inputs.iter().map(|p| p.name.clone()))
            ))),
        }
    }

    /// Resolves an output port by name; an error names the box and the known ports.
    pub fn output(&mut self, name: &str) -> Result<OutPort, BoxError> {
        match self.ports.outputs.iter().position(|p| p.name == name) {
            Some(index) => Ok(OutPort(index)),
            None => Err(BoxError(format!(
                "{}: no output port '{name}' (outputs: {})",
                self.instance,
                PortSet::names(self.ports.outputs.iter().map(|p| p.name.clone()))
            ))),
        }
    }

    /// Whether the port has a channel (an `open` port may be unconnected).
    pub fn input_connected(&self, port: InPort) -> bool {
        self.ports.inputs.get(port.0).is_some_and(|p| p.reader.is_some())
    }

    pub fn output_connected(&self, port: OutPort) -> bool {
        self.ports.outputs.get(port.0).is_some_and(|p| p.writer.is_some())
    }
}

/// Handed to [`crate::boxes::BoxImpl::step`].
pub struct Io<'a> {
    ports: &'a mut PortSet,
    iteration: u64,
    stop: &'a AtomicBool,
    /// The box asked whether to stop and was told yes: an `End` it returns then is a stop,
    /// not the end of its work (the runtime's own check before the step can miss a stop that
    /// arrives while the step runs).
    stop_seen: Cell<bool>,
}

impl<'a> Io<'a> {
    pub(crate) fn new(ports: &'a mut PortSet, iteration: u64, stop: &'a AtomicBool) -> Self {
        Io {
            ports,
            iteration,
            stop,
            stop_seen: Cell::new(false),
        }
    }

    /// Whether [`Io::stop_requested`] answered yes during this step.
    pub(crate) fn stop_seen(&self) -> bool {
        self.stop_seen.get()
    }

    fn reader(&mut self, port: InPort) -> Option<&mut Reader> {
        self.ports.inputs.get_mut(port.0)?.reader.as_mut()
    }

    /// Takes the next message of an input without blocking: `None` when empty (or ended, or
    /// unconnected). For a decoupled input, the latest value again when nothing new came.
    #[inline]
    pub fn read(&mut self, port: InPort) -> Option<Message> {
        self.reader(port)?.read()
    }

    /// Whether a new message is waiting on an input now, without blocking (false when empty,
    /// ended or unconnected; a decoupled input's latest value does not count). A box that
    /// reads several inputs together uses it to take more than the firing rule guaranteed
    /// only while every one of them has a message.
    pub fn has_message(&mut self, port: InPort) -> bool {
        self.reader(port).is_some_and(Reader::has_message)
    }

    /// Blocks until a new message arrives or the producer has ended (also on a decoupled
    /// input, where it never returns a duplicate).
    pub fn read_blocking(&mut self, port: InPort) -> Option<Message> {
        self.reader(port)?.read_blocking()
    }

    /// True once the producer has ended and the buffer is drained (always for an unconnected
    /// port).
    pub fn input_ended(&self, port: InPort) -> bool {
        match self.ports.inputs.get(port.0).and_then(|p| p.reader.as_ref()) {
            Some(reader) => reader.ended(),
            None => true,
        }
    }

    /// Writes a message: blocks on a full coupled channel, overwrites on a decoupled one,
    /// drops silently (counted) on an unconnected open port. `Err` when the consumer has ended
    /// (the message is dropped and counted).
    #[inline]
    pub fn write(&mut self, port: OutPort, msg: Message) -> Result<(), Disconnected> {
        match self.ports.outputs.get_mut(port.0) {
            Some(OutputSlot {
                writer: Some(writer), ..
            }) => writer.write(msg),
            _ => {
                self.ports.unconnected_writes += 1;
                Ok(())
            }
        }
    }

    /// True once the consumer has ended (always for an unconnected port: nobody listens).
    pub fn output_ended(&self, port: OutPort) -> bool {
        match self.ports.outputs.get(port.0).and_then(|p| p.writer.as_ref()) {
            Some(writer) => writer.consumer_ended(),
            None => true,
        }
    }

    /// The number of the current iteration (1-based).
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// True when the run was asked to stop (Ctrl-C): sources should return `Flow::End`.
    /// The runtime stops a source between steps by itself; a box that waits inside its step
    /// (for a socket, say) asks here. An `End` returned after a yes is reported as stopped.
    pub fn stop_requested(&self) -> bool {
        let stop = self.stop.load(Ordering::Relaxed);
        if stop {
            self.stop_seen.set(true);
        }
        stop
    }
}
