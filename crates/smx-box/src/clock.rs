//! The message clock: nanoseconds on the monotonic clock since a process-wide epoch.
//!
//! Every message a source makes is stamped with [`now_ns`], so on a busy channel the clock read
//! is a large part of what a message costs: `Instant::now` followed by `elapsed` reads the clock
//! through three layers, subtracts two `timespec`s with overflow checks and converts through a
//! `u128`. On Linux this reads `CLOCK_MONOTONIC` (the clock `Instant` reads) with one
//! `clock_gettime` call and subtracts the epoch as one integer, which a sink's latency sample
//! pays too (docs/performance.md, "The message clock").

use std::sync::OnceLock;
use std::time::Instant;

/// The process-wide time origin of message timestamps and reports.
pub fn epoch() -> Instant {
    origin().instant
}

/// Nanoseconds since [`epoch`] on the monotonic clock.
#[inline]
pub fn now_ns() -> u64 {
    let origin = origin();
    monotonic::now_ns(origin)
}

/// The epoch as an `Instant` and, where the clock is read directly, as that clock's reading.
struct Origin {
    instant: Instant,
    #[cfg_attr(not(all(target_os = "linux", target_pointer_width = "64")), allow(dead_code))]
    raw_ns: u64,
}

#[inline]
fn origin() -> &'static Origin {
    static ORIGIN: OnceLock<Origin> = OnceLock::new();
    ORIGIN.get_or_init(|| {
        // Read right after the `Instant`: the two name the same moment to within one clock
        // read, and `now_ns` never goes below zero since it reads the clock after both.
        let instant = Instant::now();
        Origin {
            instant,
            raw_ns: monotonic::raw_ns(),
        }
    })
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod monotonic {
    /// `struct timespec` of a 64-bit Linux: `time_t` and `long` are both 64 bits.
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }

    const CLOCK_MONOTONIC: i32 = 1;

    unsafe extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }

    /// `CLOCK_MONOTONIC` in nanoseconds (since boot: no overflow for 584 years). `smx-timing`'s
    /// `monotonic_ns` reads the same; it is not shared because this crate, the box contract,
    /// depends on nothing and exports nothing a box author does not need.
    #[inline]
    pub(super) fn raw_ns() -> u64 {
        let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
        // Safety: `ts` is a valid `timespec`; CLOCK_MONOTONIC exists on every Linux, so the
        // call cannot fail (and a failure would leave zeros, an earlier time, not UB).
        unsafe { clock_gettime(CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(ts.tv_nsec as u64)
    }

    #[inline]
    pub(super) fn now_ns(origin: &super::Origin) -> u64 {
        raw_ns().saturating_sub(origin.raw_ns)
    }
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
mod monotonic {
    pub(super) fn raw_ns() -> u64 {
        0
    }

    #[inline]
    pub(super) fn now_ns(origin: &super::Origin) -> u64 {
        origin.instant.elapsed().as_nanos() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn counts_from_the_epoch_as_the_instant_does() {
        // The two clocks are one clock read apart at the epoch; a bound of a millisecond leaves
        // room for a preempted test thread without letting a wrong unit (us, ms) through; the
        // sleep puts the readings well past the epoch, where a clock stuck at zero shows.
        epoch();
        std::thread::sleep(Duration::from_millis(3));
        for _ in 0..100 {
            let before = epoch().elapsed().as_nanos() as u64;
            let ns = now_ns();
            let after = epoch().elapsed().as_nanos() as u64;
            assert!(
                ns + 1_000_000 >= before && ns <= after + 1_000_000,
                "{before} {ns} {after}"
            );
        }
    }

    #[test]
    fn never_goes_back_and_follows_a_sleep() {
        let mut last = now_ns();
        for _ in 0..10_000 {
            let ns = now_ns();
            assert!(ns >= last);
            last = ns;
        }
        std::thread::sleep(Duration::from_millis(5));
        assert!(now_ns() - last >= 5_000_000);
    }

    #[test]
    fn agrees_across_threads() {
        // A reading taken on another thread after this one's is not earlier.
        let mine = now_ns();
        let theirs = std::thread::spawn(now_ns).join().unwrap();
        assert!(theirs >= mine);
    }
}
