//! How a consumer waits for a message without taking it out of the channel.
//!
//! The firing rule must only *look* at an input: the message stays in the channel until the
//! box reads it, so a channel of length `len` never holds more than `len` messages (the
//! original's `await` does the same, spec runtime.md §2.4). crossbeam-channel has no blocking
//! peek, so the consumer spins briefly on `is_empty` and then parks; the producer rings the
//! bell after each write and when it ends. Ringing costs one load while nobody is parked.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::Thread;

use crossbeam_utils::Backoff;
use parking_lot::Mutex;

/// One parked consumer and the flag that says it is parked.
#[derive(Debug, Default)]
pub struct Doorbell {
    parked: AtomicBool,
    waiter: Mutex<Option<Thread>>,
}

impl Doorbell {
    /// Blocks the calling thread until `ready()` holds. `ready` must become true only through
    /// actions that are followed by [`Doorbell::ring`].
    pub fn wait_until(&self, ready: impl Fn() -> bool) {
        let backoff = Backoff::new();
        while !backoff.is_completed() {
            if ready() {
                return;
            }
            backoff.snooze();
        }
        *self.waiter.lock() = Some(std::thread::current());
        loop {
            // SeqCst on both sides: either the producer's ring sees `parked`, or this check
            // sees the producer's write. A wake-up that comes early is harmless: park() then
            // returns at once and the loop checks again.
            self.parked.store(true, Ordering::SeqCst);
            if ready() {
                break;
            }
            std::thread::park();
        }
        self.parked.store(false, Ordering::Relaxed);
    }

    /// Wakes the consumer if it is parked.
    #[inline]
    pub fn ring(&self) {
        // The swap lets only the first write after the consumer parked pay for the wake-up;
        // the writes that follow while it is waking see `false` and cost one load.
        if self.parked.load(Ordering::SeqCst)
            && self.parked.swap(false, Ordering::SeqCst)
            && let Some(thread) = self.waiter.lock().as_ref()
        {
            thread.unpark();
        }
    }
}
