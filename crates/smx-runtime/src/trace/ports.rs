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
    crate::io::pass_ports_through!();

    fn read_blocking(&mut self, port: usize) -> Option<Message> {
        let start = self.rec.now();
        let msg = self.ports.read_blocking(port);
        self.rec.wait(What::WaitRead(port as u32), start, self.rec.now());
        msg
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
}
