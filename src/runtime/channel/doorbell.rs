//! How a consumer waits for a message without taking it out of the channel.
//!
//! The firing rule must only *look* at an input: the message stays in the channel until the
//! box reads it, so a channel of length `len` never holds more than `len` messages (the
//! original's `await` does the same, spec runtime.md §2.4). crossbeam-channel has no blocking
//! peek, so the consumer spins briefly on `is_empty` and then parks; the producer rings the
//! bell after each write and when it ends. Ringing costs one load while nobody is parked.

use std::sync::atomic::{AtomicBool, Ordering};

/// How long a consumer that found its channel empty lets messages accumulate before each look,
/// in spin-loop hints (`pause`, about 25 ns each on the AMD EPYC this was tuned on).
///
/// Every look at the queue takes the cache line the producer writes on every send (crossbeam's
/// tail) away from the producer, so a consumer that keeps up and looks as often as it can
/// costs a streaming producer a cache miss per message: `Src.Snk` at length 64 moved 6.4
/// million messages per second looking at once, 12 million after 32 hints (0.8 us). Waiting
/// longer than the channel takes to fill half-way only stalls the producer, so the wait grows
/// with the room the producer has: none at length 1 (the producer waits for the consumer after
/// one message, so a hand-over must be seen at once: 2.8 instead of 3.6 million per second
/// with 8 hints), 2 hints per extra slot, at most 32. Measured (million messages per second,
/// hints 0 / 8 / 16): length 2: 6.3 / 5.9 / 3.9; 4: 6.8 / 9.2 / 7.2; 8: 6.2 / 9.0 / 10.8. The
/// price is latency: a message that arrives in a spinning consumer's wait is seen up to one
/// wait later, at most 32 hints (0.8 us here) for channels of 17 or more.
pub fn settle_spins(capacity: usize) -> u32 {
    (2 * capacity.saturating_sub(1)).min(32) as u32
}
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
    /// actions that are followed by [`Doorbell::ring`]. While spinning, each look is preceded
    /// by `settle` spin-loop hints (see [`settle_spins`]). With `spin` false it parks at once:
    /// for a consumer whose producer runs on the same core, where spinning only keeps the
    /// producer from running.
    pub fn wait_until(&self, settle: u32, spin: bool, ready: impl Fn() -> bool) {
        let backoff = Backoff::new();
        while spin && !backoff.is_completed() {
            for _ in 0..settle {
                std::hint::spin_loop();
            }
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
