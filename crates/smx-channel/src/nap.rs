//! The wait of a read or write with a deadline.
//!
//! The queue's park has no timeout, so an end that must give up at a deadline polls: a few
//! spins, then yields, then naps that grow to 800 us (so it is at most about 1 ms late). Only
//! reads and writes that a box gave a timeout pay for this.

use std::time::{Duration, Instant};

/// Polls until `ready` holds (true) or `deadline` passed (false).
pub(crate) fn poll_until(deadline: Instant, mut ready: impl FnMut() -> bool) -> bool {
    let mut round = 0u32;
    loop {
        if ready() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        round += 1;
        if round < 64 {
            std::hint::spin_loop();
        } else if round < 128 {
            std::thread::yield_now();
        } else {
            let nap = Duration::from_micros(50 << (round - 128).min(4));
            std::thread::sleep(nap.min(deadline - now));
        }
    }
}
