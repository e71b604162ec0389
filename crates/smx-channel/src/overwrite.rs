//! The decoupled producer side (`D_FIFO`): a write never blocks. When the channel is full the
//! producer takes out the oldest message itself and counts it as overwritten, so the consumer
//! still sees the remaining messages in order (the original replaced the oldest slot and
//! delivered the newest first, spec runtime.md §2.3 and §7 item 10).

use crossbeam_channel::{Receiver, Sender, TrySendError};

use super::counters::Counter;

/// Non-blocking send that drops the oldest message when full; false when the consumer is gone.
#[inline]
pub fn send<T>(tx: &Sender<T>, evict: &Receiver<T>, mut msg: T, overwritten: &Counter) -> bool {
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

/// The newest message of a channel whose producer is between taking out the oldest and putting
/// in the newest (the consumer saw the channel non-empty and then found it empty). Waits a
/// little for that write, which never blocks; `None` if it does not come (the producer was
/// preempted in between: a real-time consumer must not spin on it) or the producer ended. The
/// message is then read by the next firing.
pub fn recv_after_evict<T>(rx: &Receiver<T>) -> Option<T> {
    let backoff = crossbeam_utils::Backoff::new();
    loop {
        match rx.try_recv() {
            Ok(msg) => return Some(msg),
            Err(crossbeam_channel::TryRecvError::Empty) if !backoff.is_completed() => backoff.snooze(),
            Err(_) => return None,
        }
    }
}
