//! The coupled ends: a write blocks while the channel is full; the firing rule waits while it
//! is empty ([`super::doorbell`]), without taking the message out. Both wake when the other side
//! ends.

use crossbeam_channel::Sender;

use crate::runtime::message::Message;

/// Blocking send; false when the consumer is gone.
#[inline]
pub fn send(tx: &Sender<Message>, msg: Message) -> bool {
    tx.send(msg).is_ok()
}
