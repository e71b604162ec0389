//! The coupled ends: a write blocks while the channel is full; the firing rule waits while it
//! is empty ([`super::doorbell`]), without taking the message out. Both wake when the other side
//! ends.

use std::time::Duration;

use crossbeam_channel::{Sender, TrySendError};

use super::Shared;

/// Blocking send; false when the consumer is gone. While the channel is full the producer
/// spins for up to `spin` and then parks until the consumer has taken a message and rung
/// `shared.space` (crossbeam's own blocking send gives up spinning after a few microseconds,
/// too soon on a machine whose wake-ups are slow; see [`super::doorbell::DEFAULT_SPIN`]).
#[inline]
pub fn send<T>(tx: &Sender<T>, mut msg: T, shared: &Shared, spin: Duration) -> bool {
    loop {
        match tx.try_send(msg) {
            Ok(()) => return true,
            Err(TrySendError::Full(back)) => {
                msg = back;
                shared
                    .space
                    .wait_until(0, spin, || !tx.is_full() || shared.consumer_ended());
                // The consumer's end drains the queue before it drops it: a retry could slip a
                // message into the room the drain made, where nobody reads it.
                if shared.consumer_ended() {
                    return false;
                }
            }
            Err(TrySendError::Disconnected(_)) => return false,
        }
    }
}
