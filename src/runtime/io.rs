//! What a box sees of the runtime: port handles at init, reads and writes in a step.
//!
//! PLACEHOLDER SIGNATURES ONLY: the runtime work replaces these bodies with the real
//! channel-backed implementation. Other modules may rely on the method names and types.

use crate::boxes::api::{BoxConfig, BoxError, Disconnected, InPort, OutPort};
use crate::runtime::message::Message;

/// Handed to [`crate::boxes::BoxImpl::init`].
pub struct InitCtx<'a> {
    _p: std::marker::PhantomData<&'a ()>,
}

impl InitCtx<'_> {
    /// Instance name of this net (`Src`).
    pub fn instance(&self) -> &str {
        unimplemented!()
    }
    pub fn config(&self) -> &BoxConfig {
        unimplemented!()
    }
    /// Resolves an input port by name; an error names the box and the known ports.
    pub fn input(&mut self, _name: &str) -> Result<InPort, BoxError> {
        unimplemented!()
    }
    pub fn output(&mut self, _name: &str) -> Result<OutPort, BoxError> {
        unimplemented!()
    }
    /// Whether the port has a channel (an `open` port may be unconnected).
    pub fn input_connected(&self, _port: InPort) -> bool {
        unimplemented!()
    }
    pub fn output_connected(&self, _port: OutPort) -> bool {
        unimplemented!()
    }
}

/// Handed to [`crate::boxes::BoxImpl::step`].
pub struct Io<'a> {
    _p: std::marker::PhantomData<&'a ()>,
}

impl Io<'_> {
    /// Takes the next message of an input without blocking: `None` when empty (or ended, or
    /// unconnected). For a decoupled input, the latest value again when nothing new came.
    pub fn read(&mut self, _port: InPort) -> Option<Message> {
        unimplemented!()
    }
    /// Blocks until a message arrives or the producer has ended.
    pub fn read_blocking(&mut self, _port: InPort) -> Option<Message> {
        unimplemented!()
    }
    /// True once the producer has ended and the buffer is drained.
    pub fn input_ended(&self, _port: InPort) -> bool {
        unimplemented!()
    }
    /// Writes a message: blocks on a full coupled channel, overwrites on a decoupled one,
    /// drops silently (counted) on an unconnected open port.
    pub fn write(&mut self, _port: OutPort, _msg: Message) -> Result<(), Disconnected> {
        unimplemented!()
    }
    /// True once the consumer has ended.
    pub fn output_ended(&self, _port: OutPort) -> bool {
        unimplemented!()
    }
    /// The number of the current iteration (1-based).
    pub fn iteration(&self) -> u64 {
        unimplemented!()
    }
    /// True when the run was asked to stop (Ctrl-C): sources should return `Flow::End`.
    pub fn stop_requested(&self) -> bool {
        unimplemented!()
    }
}
