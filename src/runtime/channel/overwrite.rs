//! The decoupled producer side (`D_FIFO`): a write never blocks. When the channel is full the
//! producer takes out the oldest message itself and counts it as overwritten, so the consumer
//! still sees the remaining messages in order (the original replaced the oldest slot and
//! delivered the newest first, spec runtime.md §2.3 and §7 item 10).

use crossbeam_channel::{Receiver, Sender, TrySendError};

use super::counters::Counter;
use crate::runtime::message::Message;

/// Non-blocking send that drops the oldest message when full; false when the consumer is gone.
#[inline]
pub fn send(tx: &Sender<Message>, evict: &Receiver<Message>, mut msg: Message, overwritten: &Counter) -> bool {
    loop {
        match tx.try_send(msg) {
            Ok(()) => return true,
            Err(TrySendError::Full(back)) => {
                // The consumer may empty the slot between the two calls; then nothing is lost.
                if evict.try_recv().is_ok() {
                    overwritten.bump();
                }
                msg = back;
            }
            Err(TrySendError::Disconnected(_)) => return false,
        }
    }
}
