//! The ports of one net as its thread holds them, and the box contract's view of them
//! ([`smx_box::io::host::Ports`]).
//!
//! A box's ports stand in the order of its spec (`InPort(i)` is the spec's `i`-th input), or
//! in declaration order for a spec whose ports come from the net; [`crate::plan`] lays them
//! out. An optional port may have no channel: reads give `None`, writes are dropped and
//! counted in the net's report.
//!
//! Every write goes through the output's [`Stamper`] and every message taken through the
//! input's [`InputLatency`] ([`crate::latency`]): the per-channel and end-to-end latency of the
//! report are recorded here, by the thread that owns the port.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use smx_box::io::host::Ports;
use smx_box::{Disconnected, Message, WriteError};

use crate::channel::{Reader, Refused, Writer};
use crate::latency::{ChannelSamples, InputLatency, LatencyMode, Stamper};

/// One input port of a net and its channel, if connected.
#[derive(Debug)]
pub struct InputSlot {
    pub name: String,
    pub reader: Option<Reader>,
    /// How long the firing rule waits for this input (set by the box, `None`: no bound).
    pub read_timeout: Option<Duration>,
    /// The channel's id in the plan (for the report's latency rows).
    pub channel: Option<usize>,
    pub latency: InputLatency,
}

impl InputSlot {
    /// `sink`: the port's net has no connected output, so its reads also measure end to end.
    pub fn new(name: &str, reader: Option<Reader>, channel: Option<usize>, sink: bool) -> Self {
        InputSlot {
            name: name.to_string(),
            reader,
            channel,
            latency: InputLatency::new(sink),
            read_timeout: None,
        }
    }

    /// Also measures creation → read on this input: its channel's producer brings messages in
    /// from another process ([`smx_box::SpecBuilder::brings_in`]).
    pub fn with_arrival(mut self, arrival: bool) -> Self {
        self.latency = self.latency.with_arrival(arrival);
        self
    }

    /// Takes the next message as the runtime's non-blocking readers do, noting its latency.
    #[inline]
    pub fn take(&mut self) -> Option<crate::channel::Poll<Message>> {
        let poll = self.reader.as_mut()?.take();
        if let crate::channel::Poll::Message(msg) = &poll {
            self.latency.note(msg);
        }
        Some(poll)
    }
}

/// One output port of a net and its channel, if connected.
#[derive(Debug)]
pub struct OutputSlot {
    pub name: String,
    pub writer: Option<Writer>,
    pub stamper: Stamper,
}

impl OutputSlot {
    pub fn new(name: &str, writer: Option<Writer>, mode: LatencyMode) -> Self {
        OutputSlot {
            name: name.to_string(),
            writer,
            stamper: Stamper::new(mode),
        }
    }
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

    /// Every wait of these ports on a channel gives up at `halt` ([`crate::halt`]).
    pub fn set_halt(&mut self, halt: &crate::channel::Halt) {
        for reader in self.inputs.iter_mut().filter_map(|p| p.reader.as_mut()) {
            reader.set_halt(halt.clone());
        }
        for writer in self.outputs.iter_mut().filter_map(|p| p.writer.as_mut()) {
            writer.set_halt(halt.clone());
        }
    }

    fn reader(&mut self, port: usize) -> Option<&mut Reader> {
        self.inputs.get_mut(port)?.reader.as_mut()
    }

    /// The latency samples of every connected input, for the report (taken once, at the end).
    pub fn take_latency(&mut self) -> Vec<ChannelSamples> {
        self.inputs
            .iter_mut()
            .filter_map(|p| {
                Some(ChannelSamples {
                    channel: p.channel?,
                    latency: std::mem::take(&mut p.latency),
                })
            })
            .collect()
    }

    /// Writes `msg` to `port` like [`Ports::write`], calling `make_room` instead of waiting
    /// while the channel is full ([`Writer::write_making_room`], for [`crate::chain`]).
    pub fn write_making_room(
        &mut self,
        port: usize,
        msg: Message,
        make_room: impl FnMut(),
    ) -> Result<(), Disconnected> {
        self.send_with(port, msg, |writer, msg| {
            writer.write_making_room(msg, make_room).map_err(|_| Disconnected)
        })
    }

    /// [`PortSet::write_making_room`] of the message [`Message::filled`] would build, built in
    /// the channel's slot.
    pub fn write_filled_making_room(
        &mut self,
        port: usize,
        (seq, sent_ns, len): (u64, u64, usize),
        fill: &mut dyn FnMut(&mut [u8]),
        make_room: impl FnMut(),
    ) -> Result<(), Disconnected> {
        self.with_writer(port, |writer, stamper| {
            writer
                .write_with_making_room(
                    |slot| stamped(Message::fill_into(slot, seq, sent_ns, len, fill), stamper),
                    make_room,
                )
                .map_err(|_| Disconnected)
        })
    }

    /// Stamps `msg` and hands it with the writer of output `port` to `send`; an unconnected
    /// port drops the message and counts it instead.
    #[inline]
    fn send_with<E>(
        &mut self,
        port: usize,
        mut msg: Message,
        send: impl FnOnce(&mut Writer, Message) -> Result<(), E>,
    ) -> Result<(), E> {
        self.with_writer(port, |writer, stamper| {
            stamper.stamp(&mut msg);
            send(writer, msg)
        })
    }

    /// Runs `write` with the writer and stamper of output `port`; an unconnected port counts
    /// the write as dropped instead.
    #[inline]
    fn with_writer<E>(
        &mut self,
        port: usize,
        write: impl FnOnce(&mut Writer, &mut Stamper) -> Result<(), E>,
    ) -> Result<(), E> {
        match self.outputs.get_mut(port) {
            Some(OutputSlot {
                writer: Some(writer),
                stamper,
                ..
            }) => write(writer, stamper),
            _ => {
                self.unconnected_writes += 1;
                Ok(())
            }
        }
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
        let slot = self.inputs.get_mut(port)?;
        let msg = slot.reader.as_mut()?.read()?;
        slot.latency.note(&msg);
        Some(msg)
    }

    #[inline]
    fn read_with(&mut self, port: usize, see: &mut dyn FnMut(&Message)) -> bool {
        let Some(slot) = self.inputs.get_mut(port) else {
            return false;
        };
        let Some(reader) = slot.reader.as_mut() else {
            return false;
        };
        let latency = &mut slot.latency;
        reader
            .read_with(|msg| {
                latency.note(msg);
                see(msg)
            })
            .is_some()
    }

    fn has_message(&mut self, port: usize) -> bool {
        self.reader(port).is_some_and(Reader::has_message)
    }

    fn read_again(&self, port: usize) -> bool {
        self.inputs
            .get(port)
            .and_then(|slot| slot.reader.as_ref())
            .is_some_and(Reader::read_again)
    }

    fn read_blocking(&mut self, port: usize) -> Option<Message> {
        let slot = self.inputs.get_mut(port)?;
        let msg = slot.reader.as_mut()?.read_blocking()?;
        slot.latency.note(&msg);
        Some(msg)
    }

    fn input_ended(&self, port: usize) -> bool {
        match self.inputs.get(port).and_then(|p| p.reader.as_ref()) {
            Some(reader) => reader.ended(),
            None => true,
        }
    }

    #[inline]
    fn write(&mut self, port: usize, msg: Message) -> Result<(), Disconnected> {
        self.send_with(port, msg, |writer, msg| writer.write(msg).map_err(|_| Disconnected))
    }

    fn write_filled(
        &mut self,
        port: usize,
        seq: u64,
        sent_ns: u64,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Result<(), Disconnected> {
        self.with_writer(port, |writer, stamper| {
            writer
                .write_with(|slot| stamped(Message::fill_into(slot, seq, sent_ns, len, fill), stamper))
                .map_err(|_| Disconnected)
        })
    }

    fn wait_until(&mut self, port: usize, deadline: std::time::Instant, stop: &AtomicBool) -> bool {
        match self.reader(port) {
            Some(reader) => reader.wait_ready_until(deadline, || stop.load(Ordering::Relaxed)),
            // Nothing will come: the port has ended.
            None => true,
        }
    }

    fn write_within(&mut self, port: usize, msg: Message, timeout: Duration) -> Result<(), WriteError> {
        self.send_with(port, msg, |writer, msg| {
            let done = match std::time::Instant::now().checked_add(timeout) {
                Some(deadline) => writer.write_by(msg, deadline),
                // A timeout past the clock's range is no bound at all.
                None => writer.write(msg).map_err(|_| Refused::Closed),
            };
            done.map_err(|refused| match refused {
                Refused::Closed => WriteError::Disconnected,
                Refused::TimedOut => WriteError::TimedOut,
            })
        })
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

/// `msg`, just built in its slot, stamped for its write.
#[inline]
fn stamped<'m>(msg: &'m mut Message, stamper: &mut Stamper) -> &'m mut Message {
    stamper.stamp(msg);
    msg
}

/// The [`Ports`] methods that a view of a [`PortSet`] passes on unchanged, for an `impl Ports`
/// of a type whose field `ports` is a `&mut PortSet`: a traced step's view
/// ([`crate::trace::ports`]) and a chain's ([`crate::chain`]) differ only in their waits and
/// writes.
macro_rules! pass_ports_through {
    () => {
        fn input_count(&self) -> usize {
            self.ports.input_count()
        }

        fn output_count(&self) -> usize {
            self.ports.output_count()
        }

        fn input_name(&self, port: usize) -> Option<&str> {
            self.ports.input_name(port)
        }

        fn output_name(&self, port: usize) -> Option<&str> {
            self.ports.output_name(port)
        }

        fn input_connected(&self, port: usize) -> bool {
            self.ports.input_connected(port)
        }

        fn output_connected(&self, port: usize) -> bool {
            self.ports.output_connected(port)
        }

        fn read(&mut self, port: usize) -> Option<smx_box::Message> {
            self.ports.read(port)
        }

        fn read_with(&mut self, port: usize, see: &mut dyn FnMut(&smx_box::Message)) -> bool {
            self.ports.read_with(port, see)
        }

        fn has_message(&mut self, port: usize) -> bool {
            self.ports.has_message(port)
        }

        fn read_again(&self, port: usize) -> bool {
            self.ports.read_again(port)
        }

        fn input_ended(&self, port: usize) -> bool {
            self.ports.input_ended(port)
        }

        fn output_ended(&self, port: usize) -> bool {
            self.ports.output_ended(port)
        }

        fn set_read_timeout(&mut self, port: usize, timeout: Option<std::time::Duration>) {
            self.ports.set_read_timeout(port, timeout);
        }
    };
}
pub(crate) use pass_ports_through;
