//! Periodic release on an absolute schedule: tick `k` is due at `t0 + k·T`.
//!
//! The schedule is computed, never accumulated: each wait targets `t0 + k·T` with an absolute
//! sleep, so a late wake-up does not shift later ticks (the original re-armed a relative
//! `timerfd` and ignored its expiration count, so a late wake-up shifted every later tick and
//! hid the periods it lost). When a wake-up
//! comes whole periods late, the ticks whose periods passed unserved are counted as missed,
//! exactly one per lost period, and the ticker resumes at the newest due tick instead of
//! releasing a burst of catch-up ticks.
//!
//! Sleeping alone wakes tens of microseconds late on a loaded, non-real-time kernel. With a
//! spin margin `s`, the ticker sleeps until `due - s` and then polls the clock until `due`,
//! which trades CPU time for precision. [`Spin::Auto`] measures the wake-up latency of the
//! calling thread first and spins only when that latency is a noticeable share of the period.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::clock::{MonotonicClock, TimeSource};
use crate::lateness::Lateness;

/// How to wait for the release instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Spin {
    /// Sleep only.
    Off,
    /// Sleep until this long before the instant, then poll the clock.
    Fixed(Duration),
    /// Measure this thread's wake-up latency and spin for about that long when it exceeds
    /// [`AUTO_SPIN_SHARE`] of the period; otherwise sleep only.
    #[default]
    Auto,
}

impl Spin {
    /// Parses `off`, `auto` or a duration such as `20us`.
    pub fn parse(text: &str) -> Result<Spin, String> {
        match text {
            "off" | "0" => Ok(Spin::Off),
            "auto" => Ok(Spin::Auto),
            _ => smx_box::parse_duration(text)
                .map(Spin::Fixed)
                .map_err(|e| format!("spin: {e}; or write 'off' or 'auto'")),
        }
    }

    /// Whether a thread releasing ticks at `period` should spin through the whole period and
    /// never sleep: only `Auto`, when the margin it measures on the calling thread is at least
    /// half the period. A sleep that short only makes the next release late.
    pub fn spins_through(self, period: Duration) -> bool {
        self == Spin::Auto && self.resolve(period).saturating_mul(2) >= period.as_nanos() as u64
    }

    /// The spin margin in nanoseconds for `period`; `Auto` measures the calling thread's
    /// wake-up latency (about 2 ms), so call it on the thread that will wait, after its
    /// priority is set.
    pub fn resolve(self, period: Duration) -> u64 {
        resolve_spin(self, period.as_nanos() as u64, &MonotonicClock)
    }
}

/// [`Spin::Auto`] spins when the measured wake-up latency is at least this share of the
/// period (1/20 = 5 %): below it, sleeping alone already releases well inside the period.
pub const AUTO_SPIN_SHARE: u64 = 20;

/// The longest single sleep of a [`Ticker::wait_or_stop`]: how late, at most, a stop is seen
/// (20 ms; a period shorter than that is slept in one piece, as before).
pub const STOP_POLL_NS: u64 = 20_000_000;

/// One release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    /// Index `k` of the tick released (`t0 + k·T`).
    pub index: u64,
    /// Its scheduled instant (clock nanoseconds).
    pub scheduled_ns: u64,
    /// When the thread actually got going.
    pub woke_ns: u64,
    /// Ticks skipped just before this one because their whole period had passed.
    pub missed: u64,
}

/// A periodic release schedule and its accounting.
#[derive(Debug)]
pub struct Ticker<C: TimeSource = MonotonicClock> {
    clock: C,
    t0_ns: u64,
    period_ns: u64,
    next: u64,
    spin_ns: u64,
    released: u64,
    missed: u64,
    lateness: Lateness,
}

impl Ticker<MonotonicClock> {
    /// A ticker on the monotonic clock whose tick 0 is `t0_ns`, with a spin margin from
    /// [`Spin::resolve`].
    pub fn new(t0_ns: u64, period: Duration, spin_ns: u64) -> Self {
        Ticker::with_clock(MonotonicClock, t0_ns, period.as_nanos() as u64, spin_ns)
    }
}

impl<C: TimeSource> Ticker<C> {
    /// A ticker on any clock, with the spin margin already in nanoseconds.
    pub fn with_clock(clock: C, t0_ns: u64, period_ns: u64, spin_ns: u64) -> Self {
        Ticker {
            clock,
            t0_ns,
            period_ns: period_ns.max(1),
            next: 0,
            spin_ns,
            released: 0,
            missed: 0,
            lateness: Lateness::new(),
        }
    }

    /// Starts the schedule at tick `index` instead of 0 (e.g. 1, when tick 0 is the start).
    pub fn skip_to(&mut self, index: u64) {
        self.next = index;
    }

    /// Waits for the next due tick and releases it. Does not allocate, lock or log.
    #[inline]
    pub fn wait(&mut self) -> Tick {
        let never = AtomicBool::new(false);
        // Without a stop flag nothing can end the wait early.
        self.wait_or_stop(&never).unwrap_or_else(|| unreachable!())
    }

    /// [`Ticker::wait`], but gives up as soon as `stop` is set (`None`: no tick released, the
    /// schedule's books unchanged). A long period is slept in slices of at most
    /// [`STOP_POLL_NS`], so a stop is seen within that long whatever the period; the last
    /// slice still ends on the absolute instant, so precision is the same.
    #[inline]
    pub fn wait_or_stop(&mut self, stop: &AtomicBool) -> Option<Tick> {
        let due = self.due(self.next);
        let mut now = self.clock.now_ns();
        if now < due {
            let wake = due.saturating_sub(self.spin_ns);
            while now < wake {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                self.clock.sleep_until(wake.min(now.saturating_add(STOP_POLL_NS)));
                now = self.clock.now_ns();
            }
            while now < due {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                std::hint::spin_loop();
                now = self.clock.now_ns();
            }
        }
        let late = now.saturating_sub(due);
        let lost = late / self.period_ns;
        self.lateness.record(late);
        let index = self.next + lost;
        self.missed += lost;
        self.released += 1;
        self.next = index + 1;
        Some(Tick {
            index,
            scheduled_ns: self.due(index),
            woke_ns: now,
            missed: lost,
        })
    }

    /// The scheduled instant of tick `index`.
    #[inline]
    pub fn due(&self, index: u64) -> u64 {
        self.t0_ns.saturating_add(index.saturating_mul(self.period_ns))
    }

    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }

    pub fn t0_ns(&self) -> u64 {
        self.t0_ns
    }

    /// The spin margin in effect (0: sleep only).
    pub fn spin_ns(&self) -> u64 {
        self.spin_ns
    }

    /// Ticks released so far.
    pub fn released(&self) -> u64 {
        self.released
    }

    /// Ticks missed so far (whole periods that passed without a release).
    pub fn missed(&self) -> u64 {
        self.missed
    }

    /// Lateness of every release relative to the earliest tick it was waiting for.
    pub fn lateness(&self) -> &Lateness {
        &self.lateness
    }

    pub fn clock(&self) -> &C {
        &self.clock
    }
}

/// The spin margin for `spin` at this period, measured on the calling thread for `Auto`.
pub fn resolve_spin(spin: Spin, period_ns: u64, clock: &impl TimeSource) -> u64 {
    match spin {
        Spin::Off => 0,
        Spin::Fixed(d) => d.as_nanos() as u64,
        Spin::Auto => {
            let latency = wakeup_latency_ns(clock, 32);
            if latency.saturating_mul(AUTO_SPIN_SHARE) >= period_ns {
                // Spin for a little more than the typical late wake-up, never more than a period.
                (latency + latency / 2).min(period_ns)
            } else {
                0
            }
        }
    }
}

/// The 90th percentile of how late `samples` short absolute sleeps of the calling thread wake
/// up (its scheduling class and timer slack included).
pub fn wakeup_latency_ns(clock: &impl TimeSource, samples: usize) -> u64 {
    let mut late: Vec<u64> = (0..samples.max(1))
        .map(|_| {
            let due = clock.now_ns() + 50_000;
            clock.sleep_until(due);
            clock.now_ns().saturating_sub(due)
        })
        .collect();
    late.sort_unstable();
    late[(late.len() * 9 / 10).min(late.len() - 1)]
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// A clock that jumps to the sleep deadline, plus an injectable extra delay; each reading
    /// advances it by `per_read` (so that spinning ends).
    struct FakeClock {
        now: Cell<u64>,
        stall_next_sleep: Cell<u64>,
        per_read: u64,
    }

    impl TimeSource for FakeClock {
        fn now_ns(&self) -> u64 {
            self.now.set(self.now.get() + self.per_read);
            self.now.get()
        }
        fn sleep_until(&self, deadline_ns: u64) {
            let woke = deadline_ns.max(self.now.get()) + self.stall_next_sleep.replace(0);
            self.now.set(woke);
        }
    }

    fn fake(t0: u64) -> FakeClock {
        FakeClock {
            now: Cell::new(t0),
            stall_next_sleep: Cell::new(0),
            per_read: 0,
        }
    }

    #[test]
    fn ticks_follow_the_absolute_schedule() {
        let mut t = Ticker::with_clock(fake(1_000), 1_000, 100, 0);
        for k in 0..5 {
            let tick = t.wait();
            assert_eq!((tick.index, tick.scheduled_ns, tick.missed), (k, 1_000 + 100 * k, 0));
        }
        assert_eq!((t.released(), t.missed()), (5, 0));
    }

    #[test]
    fn a_stall_counts_exactly_the_lost_periods() {
        let mut t = Ticker::with_clock(fake(0), 0, 100, 0);
        t.wait(); // tick 0 at 0
        // Woken 350 ns after tick 1 was due: ticks 1, 2, 3 lost their periods, tick 4 runs.
        t.clock().stall_next_sleep.set(350);
        let tick = t.wait();
        assert_eq!(
            (tick.index, tick.missed, tick.scheduled_ns, tick.woke_ns),
            (4, 3, 400, 450)
        );
        // A stall shorter than a period costs nothing.
        t.clock().stall_next_sleep.set(99);
        assert_eq!(t.wait().missed, 0);
        assert_eq!((t.released(), t.missed()), (3, 3));
        assert_eq!(t.lateness().summary().max, 350);
    }

    #[test]
    fn a_thread_busy_past_several_periods_is_not_given_a_burst() {
        let mut t = Ticker::with_clock(fake(0), 0, 100, 0);
        t.wait();
        t.clock().now.set(1_000); // the body took 10 periods
        let tick = t.wait();
        assert_eq!((tick.index, tick.missed), (10, 9));
        assert_eq!(t.wait().index, 11);
    }

    #[test]
    fn spinning_releases_at_the_instant() {
        let clock = FakeClock {
            per_read: 100,
            ..fake(0)
        };
        let mut t = Ticker::with_clock(clock, 0, 1_000, 300);
        t.skip_to(2);
        let tick = t.wait();
        assert_eq!((tick.index, tick.woke_ns), (2, 2_000));
    }

    #[test]
    fn a_stop_ends_a_long_wait_without_releasing_a_tick() {
        let stop = AtomicBool::new(false);
        let mut t = Ticker::with_clock(fake(0), 0, 3_600 * 1_000_000_000, 0);
        t.skip_to(1);
        stop.store(true, Ordering::Relaxed);
        assert_eq!(t.wait_or_stop(&stop), None);
        assert_eq!((t.released(), t.missed()), (0, 0));
        // The real clock: an hour's period, stopped from another thread, returns at once.
        let clock = MonotonicClock;
        let mut t = Ticker::new(clock.now_ns(), Duration::from_secs(3_600), 0);
        t.skip_to(1);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let setter = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                stop.store(true, Ordering::Relaxed);
            })
        };
        assert_eq!(t.wait_or_stop(&stop), None, "a stop ends the hour's wait");
        setter.join().unwrap();
    }

    #[test]
    fn spin_settings_parse() {
        assert_eq!(Spin::parse("off"), Ok(Spin::Off));
        assert_eq!(Spin::parse("auto"), Ok(Spin::Auto));
        assert_eq!(Spin::parse("20us"), Ok(Spin::Fixed(Duration::from_micros(20))));
        assert!(Spin::parse("soon").is_err());
        assert_eq!(
            resolve_spin(Spin::Fixed(Duration::from_micros(5)), 10_000, &fake(0)),
            5_000
        );
        assert_eq!(resolve_spin(Spin::Off, 10_000, &fake(0)), 0);
    }

    #[test]
    fn the_real_clock_never_releases_early() {
        let clock = MonotonicClock;
        let t0 = clock.now_ns() + 1_000_000;
        let period = Duration::from_millis(1);
        let mut t = Ticker::new(t0, period, Spin::Fixed(Duration::from_micros(50)).resolve(period));
        for _ in 0..3 {
            let tick = t.wait();
            assert!(tick.woke_ns >= tick.scheduled_ns);
        }
        let last = t.wait();
        assert_eq!(t.released() + t.missed(), last.index + 1);
    }
}
