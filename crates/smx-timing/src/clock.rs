//! The clock every periodic release reads and sleeps on: `CLOCK_MONOTONIC`, in nanoseconds.
//!
//! [`TimeSource`] exists so that tests can drive a [`crate::Ticker`] with a fake clock
//! and check its missed-tick arithmetic exactly, without depending on how busy the machine is.

/// Reading and sleeping on a monotonic clock, in nanoseconds.
pub trait TimeSource {
    fn now_ns(&self) -> u64;
    /// Sleeps until the clock reads at least `deadline_ns` (or returns at once if it already
    /// does). May return a little early only if interrupted; callers re-check the clock.
    fn sleep_until(&self, deadline_ns: u64);
}

/// `CLOCK_MONOTONIC` through `clock_gettime` / `clock_nanosleep(TIMER_ABSTIME)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct MonotonicClock;

impl TimeSource for MonotonicClock {
    #[inline]
    fn now_ns(&self) -> u64 {
        monotonic_ns()
    }

    #[inline]
    fn sleep_until(&self, deadline_ns: u64) {
        let ts = libc::timespec {
            tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
        };
        // Absolute sleep: an interruption (EINTR) just resumes towards the same instant.
        loop {
            // SAFETY: `ts` is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
            let rc =
                unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
            if rc != libc::EINTR {
                return;
            }
        }
    }
}

/// `CLOCK_MONOTONIC` now, in nanoseconds.
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC_COARSE` now, in nanoseconds: the time of the kernel's last tick (a few
/// milliseconds apart), read without touching the hardware clock, so about four times cheaper
/// than [`monotonic_ns`]. For bounds of milliseconds checked on every message.
#[inline]
pub fn coarse_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: as in `monotonic_ns`; CLOCK_MONOTONIC_COARSE exists on Linux since 2.6.32.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The kernel's current clock source (`tsc`, `hpet`, `kvm-clock`, ...), which decides how
/// cheap and precise every clock reading is; `unknown` when it cannot be read.
pub fn clock_source() -> String {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_sleep_never_returns_before_its_deadline() {
        let clock = MonotonicClock;
        let deadline = clock.now_ns() + 2_000_000;
        clock.sleep_until(deadline);
        assert!(clock.now_ns() >= deadline);
        // A deadline in the past returns at once (no error, no hang).
        clock.sleep_until(1);
    }

    #[test]
    fn the_coarse_clock_moves_with_the_fine_one() {
        let (coarse, fine) = (coarse_ns(), monotonic_ns());
        // The coarse clock lags by at most a tick (at most 10 ms at HZ=100).
        assert!(
            coarse <= fine && fine - coarse < 20_000_000,
            "coarse {coarse}, fine {fine}"
        );
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert!(coarse_ns() > coarse);
    }

    #[test]
    fn clock_source_is_a_single_word() {
        let source = clock_source();
        assert!(
            !source.is_empty() && !source.contains(char::is_whitespace),
            "{source:?}"
        );
    }
}
