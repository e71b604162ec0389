//! The platform floor: an empty periodic loop released exactly like a temporal firewall.
//!
//! `smxrun probe --period 10us --ticks 1000000` runs [`probe`] on its own thread with the
//! firewalls' timer method, priority and memory locking, and reports how many ticks the
//! platform itself misses and how late releases come. Whatever a time-triggered net misses
//! beyond this floor is the runtime's (or the boxes') doing.
//!
//! A tick counts as missed when its whole period passed before the thread woke up (see
//! [`crate::Ticker`]); a late release within its period is not a miss but shows up in
//! the lateness percentiles.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::clock::{clock_source, monotonic_ns};
use crate::lateness::{LatenessSummary, human_ns};
use crate::realtime::{self, RtRequest};
use crate::ticker::{Spin, Ticker};

/// SCHED_FIFO level of temporal firewalls and of the probe unless configured otherwise: above
/// the levels the runtime gives time-triggered boxes (2 to 4), so a firewall preempts them.
pub const DEFAULT_FIREWALL_PRIORITY: u8 = 5;

/// What to probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeOptions {
    pub period: Duration,
    /// Scheduled ticks to run through (released plus missed).
    pub ticks: u64,
    pub spin: Spin,
    /// SCHED_FIFO level; `None`: normal scheduling.
    pub priority: Option<u8>,
    pub lock_memory: bool,
    /// Pin the probing thread to this core.
    pub core: Option<usize>,
    /// Where the loop spins through its whole period ([`Spin::spins_through`]), run it at
    /// normal priority instead of `priority`, as smx's cyclic executive alone on its core does
    /// under `--rt auto`: the kernel throttles a real-time thread that never sleeps.
    pub may_spin_through: bool,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            period: Duration::from_micros(10),
            ticks: 1_000_000,
            spin: Spin::Auto,
            priority: Some(DEFAULT_FIREWALL_PRIORITY),
            lock_memory: true,
            core: None,
            may_spin_through: true,
        }
    }
}

/// What the probe measured. The JSON form has exactly the fields not marked `skip`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeResult {
    pub period_ns: u64,
    pub ticks: u64,
    pub misses: u64,
    pub miss_rate: f64,
    pub lateness_ns: LatenessSummary,
    /// The kernel's clock source (`tsc`, `kvm-clock`, ...).
    pub clock_source: String,
    /// Whether the SCHED_FIFO priority asked for was granted.
    pub rt_priority_granted: bool,
    /// Whether the loop spun through every period, never sleeping: by
    /// [`ProbeOptions::may_spin_through`], or by a spin given as long as the period.
    pub spun_through: bool,
    #[serde(skip)]
    pub fifo_priority: Option<u8>,
    #[serde(skip)]
    pub memory_locked: bool,
    /// The spin margin in effect (0: sleep only).
    #[serde(skip)]
    pub spin_ns: u64,
    #[serde(skip)]
    pub wall: Duration,
    /// Refusals of priority, memory locking or pinning, one line each.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Runs the empty periodic loop on a new thread and waits for it.
pub fn probe(opts: &ProbeOptions) -> Result<ProbeResult, String> {
    if opts.period.is_zero() {
        return Err("probe: the period must be greater than zero".to_string());
    }
    if opts.ticks == 0 {
        return Err("probe: --ticks must be at least 1".to_string());
    }
    let opts = opts.clone();
    std::thread::Builder::new()
        .name("smx_probe".to_string())
        .spawn(move || run_probe(&opts))
        .map_err(|e| format!("probe: could not start the probing thread: {e}"))?
        .join()
        .map_err(|_| "probe: the probing thread panicked".to_string())
}

fn run_probe(opts: &ProbeOptions) -> ProbeResult {
    let mut warnings = Vec::new();
    if let Some(core) = opts.core
        && let Err(e) = pin(core)
    {
        warnings.push(e);
    }
    let through = opts.may_spin_through && opts.spin.spins_through(opts.period);
    let priority = opts.priority.filter(|_| !through);
    let grant = realtime::apply(RtRequest {
        fifo_priority: priority,
        lock_memory: opts.lock_memory,
    });
    warnings.extend(grant.warnings.iter().cloned());
    let spin_ns = if through {
        opts.period.as_nanos() as u64
    } else {
        opts.spin.resolve(opts.period)
    };
    let mut ticker = Ticker::new(monotonic_ns(), opts.period, spin_ns);
    ticker.skip_to(1);
    let end = 1 + opts.ticks;
    let mut served = 0u64;
    let started = Instant::now();
    loop {
        let tick = ticker.wait();
        if tick.index < end {
            served += 1;
        }
        if tick.index + 1 >= end {
            break;
        }
    }
    let wall = started.elapsed();
    let misses = opts.ticks - served;
    ProbeResult {
        period_ns: ticker.period_ns(),
        ticks: opts.ticks,
        misses,
        miss_rate: misses as f64 / opts.ticks as f64,
        lateness_ns: ticker.lateness().summary(),
        clock_source: clock_source(),
        rt_priority_granted: priority.is_some() && grant.fifo_priority.is_some(),
        // Also a loop given a fixed spin of a whole period (the after-run probe of a firewall
        // that spun through) never slept.
        spun_through: spin_ns >= ticker.period_ns(),
        fifo_priority: grant.fifo_priority,
        memory_locked: grant.memory_locked,
        spin_ns,
        wall,
        warnings,
    }
}

fn pin(core: usize) -> Result<(), String> {
    crate::sched::pin_current_thread(core).map_err(|e| format!("probe: {e}"))
}

impl ProbeResult {
    /// The human-readable report.
    pub fn to_text(&self) -> String {
        let rt = match self.fifo_priority {
            Some(level) => format!("SCHED_FIFO {level} granted"),
            None if self.spun_through => "normal scheduling, spinning through each period as smx's executive alone \
                                          on its core does (--priority 5: SCHED_FIFO)"
                .to_string(),
            None => "normal scheduling (no real-time priority)".to_string(),
        };
        let spin = if self.spin_ns == 0 {
            "off".to_string()
        } else {
            human_ns(self.spin_ns)
        };
        format!(
            "probe: period {}, {} ticks in {:.2} s, spin {spin}\n\
             clock source: {}; {rt}; memory {}\n\
             missed ticks: {} of {} ({:.4} %): periods that passed without a release\n\
             lateness of the releases: {}\n{}",
            human_ns(self.period_ns),
            self.ticks,
            self.wall.as_secs_f64(),
            self.clock_source,
            if self.memory_locked { "locked" } else { "not locked" },
            self.misses,
            self.ticks,
            self.miss_rate * 100.0,
            self.lateness_ns.to_text(),
            self.how_misses_and_lateness_agree(),
        )
    }

    /// Why many missed ticks can stand beside a small p99 lateness: lateness has one sample per
    /// release, and one release k periods late loses k ticks, so a few long stalls (the tail
    /// and the max) miss many ticks while almost every release is on time.
    fn how_misses_and_lateness_agree(&self) -> String {
        if self.misses == 0 {
            return String::new();
        }
        format!(
            "  (one lateness sample per release; a release k periods late loses k ticks, so the {} missed \
             ticks come from the few releases in the tail, up to {} late)\n",
            self.misses,
            human_ns(self.lateness_ns.max)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_missed_ticks_beside_a_small_p99_are_explained() {
        let result = ProbeResult {
            period_ns: 10_000,
            ticks: 20_000,
            misses: 12_860,
            miss_rate: 0.643,
            lateness_ns: LatenessSummary {
                p50: 19,
                p99: 39,
                p999: 16_000,
                max: 14_320_000,
            },
            clock_source: "tsc".into(),
            rt_priority_granted: false,
            spun_through: true,
            fifo_priority: None,
            memory_locked: true,
            spin_ns: 10_000,
            wall: Duration::from_millis(200),
            warnings: Vec::new(),
        };
        let text = result.to_text();
        assert!(
            text.contains("missed ticks: 12860 of 20000 (64.3000 %): periods that passed without a release"),
            "{text}"
        );
        assert!(text.contains("lateness of the releases: p50 19ns"), "{text}");
        assert!(text.contains("a release k periods late loses k ticks"), "{text}");
        assert!(text.contains("up to 14.32ms late"), "{text}");
    }

    fn short(period_us: u64, ticks: u64) -> ProbeOptions {
        ProbeOptions {
            period: Duration::from_micros(period_us),
            ticks,
            spin: Spin::Off,
            priority: None,
            lock_memory: false,
            core: None,
            may_spin_through: false,
        }
    }

    #[test]
    fn every_scheduled_tick_is_released_or_missed() {
        let r = probe(&short(1_000, 20)).unwrap();
        assert_eq!(r.ticks, 20);
        assert!(r.misses <= 20);
        assert_eq!(r.miss_rate, r.misses as f64 / 20.0);
        assert!(r.lateness_ns.p50 <= r.lateness_ns.max);
        assert!(!r.rt_priority_granted);
    }

    /// A loop whose spin is the whole period never sleeps, however it came to spin so (the
    /// after-run probe of a firewall that spun through gets its spin as a fixed one).
    #[test]
    fn a_fixed_spin_of_a_whole_period_is_spinning_through() {
        let whole = ProbeOptions {
            spin: Spin::Fixed(Duration::from_micros(100)),
            ..short(100, 20)
        };
        assert!(probe(&whole).unwrap().spun_through);
        let part = ProbeOptions {
            spin: Spin::Fixed(Duration::from_micros(20)),
            ..short(100, 20)
        };
        assert!(!probe(&part).unwrap().spun_through);
        assert!(!probe(&short(100, 20)).unwrap().spun_through);
    }

    #[test]
    fn json_has_exactly_the_documented_fields() {
        let r = probe(&short(500, 3)).unwrap();
        let v: serde_json::Value = serde_json::to_value(&r).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "clock_source",
                "lateness_ns",
                "miss_rate",
                "misses",
                "period_ns",
                "rt_priority_granted",
                "spun_through",
                "ticks"
            ]
        );
        let mut lat: Vec<&str> = v["lateness_ns"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        lat.sort_unstable();
        assert_eq!(lat, ["max", "p50", "p99", "p999"]);
        assert_eq!(v["period_ns"], 500_000);
    }

    #[test]
    fn bad_options_are_errors() {
        assert!(probe(&short(0, 10)).is_err());
        assert!(probe(&short(10, 0)).is_err());
    }
}
