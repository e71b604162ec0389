//! How a consumer waits for a message without taking it out of the channel.
//!
//! The firing rule must only *look* at an input: the message stays in the channel until the
//! box reads it, so a channel of length `len` never holds more than `len` messages (the
//! original's `await` does the same, spec runtime.md §2.4). crossbeam-channel has no blocking
//! peek, so the consumer spins on `is_empty` for a while ([`DEFAULT_SPIN`]) and then parks; the
//! producer rings the bell after each write and when it ends. A producer waiting for room in a
//! full coupled channel does the same with a second bell, which the consumer rings after each
//! message it takes. Ringing costs one load while nobody is parked.
//!
//! The handshake needs the ringing side's change to the queue and its look at `parked` to be
//! ordered as they are written: crossbeam's array queue moves its head and tail with `SeqCst`
//! read-modify-writes and reads them `SeqCst` in `is_empty`, `is_full` and `len`, and `parked`
//! is stored and loaded `SeqCst`, so either the ringer sees `parked` or the waiter's last look
//! sees the change. That is crossbeam-channel 0.5.17's code, not its documented contract, so
//! `Cargo.toml` pins that version: check `flavors/array.rs` before moving it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::Thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long a consumer that found its channel empty lets messages accumulate before each look,
/// in spin-loop hints (`pause`, about 25 ns each on the AMD EPYC this was tuned on, 9.4 ns on
/// the Intel Xeon of a later CI machine).
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

/// How long a waiting end spins before it parks, unless the run sets another
/// (`RunOptions::wait_spin` of smx-runtime).
///
/// A park costs the other end a wake-up when it next writes (or reads), and on a virtual
/// machine that wake-up is slow: on the 2-vCPU Firecracker VM of this project's CI, `Src.Snk`
/// at length 1 moved 120,000 messages per second when each wait parked after crossbeam's
/// default few microseconds of spinning, because once one end had parked each hand-over cost a
/// wake-up and the other end gave up too. Spinning through the wake-up latency keeps both ends
/// awake: 2.4 million per second (median of 11 runs; single runs while tuning: 2.5 to 3.3
/// million with 25 to 100 us, 2.1 to 3.0 with 10 us, which also lost a third of the report's
/// ZeroMQ net's rate). The spin
/// yields every few microseconds, so threads sharing the core still run; a wait longer than
/// this parks, so an idle net costs no CPU.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(50);

/// Spin-loop hints between two reads of the clock (each followed by a yield): 2.4 us of hints
/// on the CI's Xeon (9.4 ns each), plus the looks between them. 64 (yielding four times as
/// often) cost the streaming `Src.Snk` and ZeroMQ nets at length 64 a few percent.
const HINTS_PER_CHECK: u32 = 256;

/// Looks at `ready` until it holds (true) or `budget` has passed (false). Each look is preceded
/// by `settle` spin-loop hints (see [`settle_spins`]); after every [`HINTS_PER_CHECK`] hints the
/// clock is read and the core is offered to other threads (a yield).
#[inline]
pub fn spin_until(settle: u32, budget: Duration, ready: &impl Fn() -> bool) -> bool {
    if budget.is_zero() {
        return ready();
    }
    let looks = (HINTS_PER_CHECK / settle.max(1)).max(1);
    let start = Instant::now();
    loop {
        for _ in 0..looks {
            for _ in 0..settle.max(1) {
                std::hint::spin_loop();
            }
            if ready() {
                return true;
            }
        }
        if start.elapsed() >= budget {
            return false;
        }
        std::thread::yield_now();
    }
}

/// One parked end (the consumer on `doorbell`, the producer on `space`) and the flag that says
/// it is parked.
#[derive(Debug, Default)]
pub struct Doorbell {
    parked: AtomicBool,
    waiter: Mutex<Option<Thread>>,
}

impl Doorbell {
    /// Blocks the calling thread until `ready()` holds. `ready` must become true only through
    /// actions that are followed by [`Doorbell::ring`]. It spins for up to `spin` first (see
    /// [`spin_until`]), then parks; with `spin` zero it parks at once: for an end whose other
    /// end runs on the same core, where spinning only keeps that end from running.
    pub fn wait_until(&self, settle: u32, spin: Duration, ready: impl Fn() -> bool) {
        if spin_until(settle, spin, &ready) {
            return;
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

    /// Wakes the waiting end if it is parked.
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
