//! The coupled ends: a write blocks while the channel is full, the firing rule blocks while it
//! is empty. Both wake when the other side ends (crossbeam's disconnection).

use crossbeam_channel::{Receiver, Sender};

use crate::runtime::message::Message;

/// Blocking send; false when the consumer is gone.
#[inline]
pub fn send(tx: &Sender<Message>, msg: Message) -> bool {
    tx.send(msg).is_ok()
}

/// Blocking receive; `None` once the producer has ended and the buffer is drained.
#[inline]
pub fn recv(rx: &Receiver<Message>) -> Option<Message> {
    rx.recv().ok()
}
