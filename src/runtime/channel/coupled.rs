//! The coupled ends: a write blocks while the channel is full; the firing rule waits while it
//! is empty ([`super::doorbell`]), without taking the message out. Both wake when the other side
//! ends.

use crossbeam_channel::{Sender, TrySendError};

use super::Shared;
use crate::runtime::message::Message;

/// Blocking send; false when the consumer is gone.
#[inline]
pub fn send(tx: &Sender<Message>, msg: Message) -> bool {
    tx.send(msg).is_ok()
}

/// Blocking send for a producer whose consumer runs on the same core: while the channel is
/// full it parks at once (crossbeam's own wait spins first, which there only keeps the consumer
/// from running) until the consumer has taken a message and rung `shared.space`.
pub fn send_parking(tx: &Sender<Message>, mut msg: Message, shared: &Shared) -> bool {
    loop {
        match tx.try_send(msg) {
            Ok(()) => return true,
            Err(TrySendError::Full(back)) => {
                msg = back;
                shared
                    .space
                    .wait_until(0, false, || !tx.is_full() || shared.consumer_ended());
            }
            Err(TrySendError::Disconnected(_)) => return false,
        }
    }
}
