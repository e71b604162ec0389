//! A box's ports as a traced step sees them: the same [`PortSet`], with blocking reads and
//! slow writes recorded as wait slices inside the step.

use smx_box::io::host::Ports;
use smx_box::{Disconnected, Message};

use super::{Recorder, What};
use crate::io::PortSet;

pub struct TracedPorts<'a> {
    pub ports: &'a mut PortSet,
    pub rec: &'a mut Recorder,
}

impl Ports for TracedPorts<'_> {
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

    fn read(&mut self, port: usize) -> Option<Message> {
        self.ports.read(port)
    }

    fn has_message(&mut self, port: usize) -> bool {
        self.ports.has_message(port)
    }

    fn read_blocking(&mut self, port: usize) -> Option<Message> {
        let start = self.rec.now();
        let msg = self.ports.read_blocking(port);
        self.rec.wait(What::WaitRead(port as u32), start, self.rec.now());
        msg
    }

    fn input_ended(&self, port: usize) -> bool {
        self.ports.input_ended(port)
    }

    fn write(&mut self, port: usize, msg: Message) -> Result<(), Disconnected> {
        let start = self.rec.now();
        let done = self.ports.write(port, msg);
        self.rec.wait(What::WaitWrite(port as u32), start, self.rec.now());
        done
    }

    fn wait_until(&mut self, port: usize, deadline: std::time::Instant, stop: &std::sync::atomic::AtomicBool) -> bool {
        let start = self.rec.now();
        let ready = self.ports.wait_until(port, deadline, stop);
        self.rec.wait(What::WaitRead(port as u32), start, self.rec.now());
        ready
    }

    fn write_within(
        &mut self,
        port: usize,
        msg: Message,
        timeout: std::time::Duration,
    ) -> Result<(), smx_box::WriteError> {
        let start = self.rec.now();
        let done = self.ports.write_within(port, msg, timeout);
        self.rec.wait(What::WaitWrite(port as u32), start, self.rec.now());
        done
    }

    fn output_ended(&self, port: usize) -> bool {
        self.ports.output_ended(port)
    }

    fn set_read_timeout(&mut self, port: usize, timeout: Option<std::time::Duration>) {
        self.ports.set_read_timeout(port, timeout);
    }
}
