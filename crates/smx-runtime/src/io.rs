//! The ports of one net as its thread holds them, and the box contract's view of them
//! ([`smx_box::io::host::Ports`]).
//!
//! A box's ports stand in the order of its spec (`InPort(i)` is the spec's `i`-th input), or
//! in declaration order for a spec whose ports come from the net; [`crate::plan`] lays them
//! out. An optional port may have no channel: reads give `None`, writes are dropped and
//! counted in the net's report.

use std::time::Duration;

use smx_box::io::host::Ports;
use smx_box::{Disconnected, Message};

use crate::channel::{Reader, Writer};

/// One input port of a net and its channel, if connected.
#[derive(Debug)]
pub struct InputSlot {
    pub name: String,
    pub reader: Option<Reader>,
    /// How long the firing rule waits for this input (set by the box, `None`: no bound).
    pub read_timeout: Option<Duration>,
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

    fn reader(&mut self, port: usize) -> Option<&mut Reader> {
        self.inputs.get_mut(port)?.reader.as_mut()
    }

    /// Whether every connected input has ended and been drained (false for a net without
    /// connected inputs: a source ends by itself).
    pub fn all_inputs_ended(&self) -> bool {
        let mut connected = self.inputs.iter().filter_map(|p| p.reader.as_ref()).peekable();
        connected.peek().is_some() && connected.all(Reader::ended)
    }
}

impl Ports for PortSet {
    fn input_count(&self) -> usize {
        self.inputs.len()
    }

    fn output_count(&self) -> usize {
        self.outputs.len()
    }

    fn input_name(&self, port: usize) -> Option<&str> {
        self.inputs.get(port).map(|p| p.name.as_str())
    }

    fn output_name(&self, port: usize) -> Option<&str> {
        self.outputs.get(port).map(|p| p.name.as_str())
    }

    fn input_connected(&self, port: usize) -> bool {
        self.inputs.get(port).is_some_and(|p| p.reader.is_some())
    }

    fn output_connected(&self, port: usize) -> bool {
        self.outputs.get(port).is_some_and(|p| p.writer.is_some())
    }

    #[inline]
    fn read(&mut self, port: usize) -> Option<Message> {
        self.reader(port)?.read()
    }

    fn has_message(&mut self, port: usize) -> bool {
        self.reader(port).is_some_and(Reader::has_message)
    }

    fn read_blocking(&mut self, port: usize) -> Option<Message> {
        self.reader(port)?.read_blocking()
    }

    fn input_ended(&self, port: usize) -> bool {
        match self.inputs.get(port).and_then(|p| p.reader.as_ref()) {
            Some(reader) => reader.ended(),
            None => true,
        }
    }

    #[inline]
    fn write(&mut self, port: usize, msg: Message) -> Result<(), Disconnected> {
        match self.outputs.get_mut(port) {
            Some(OutputSlot {
                writer: Some(writer), ..
            }) => writer.write(msg).map_err(|_| Disconnected),
            _ => {
                self.unconnected_writes += 1;
                Ok(())
            }
        }
    }

    fn output_ended(&self, port: usize) -> bool {
        match self.outputs.get(port).and_then(|p| p.writer.as_ref()) {
            Some(writer) => writer.consumer_ended(),
            None => true,
        }
    }

    fn set_read_timeout(&mut self, port: usize, timeout: Option<Duration>) {
        if let Some(slot) = self.inputs.get_mut(port) {
            slot.read_timeout = timeout;
        }
    }
}
