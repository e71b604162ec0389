//! Lateness statistics: how long after its scheduled instant each release really happened.
//!
//! One [`Lateness`] per periodic thread, allocated before the loop starts; recording a value
//! is an array increment (no allocation, no lock, no I/O), so it can sit on the real-time
//! path. Values above the histogram's range are clamped to its top, so a pathological stall
//! still shows up as the maximum instead of being lost.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The largest lateness kept exactly (one minute); anything later is recorded as this.
const MAX_TRACKED_NS: u64 = 60_000_000_000;

/// A lateness histogram in nanoseconds (3 significant digits).
#[derive(Debug, Clone)]
pub struct Lateness {
    histogram: Histogram<u64>,
}

impl Default for Lateness {
    fn default() -> Self {
        Self::new()
    }
}

impl Lateness {
    pub fn new() -> Self {
        // Bounds are constants known to be valid, so construction cannot fail.
        let histogram = Histogram::new_with_bounds(1, MAX_TRACKED_NS, 3).expect("constant histogram bounds are valid");
        Lateness { histogram }
    }

    /// Records one release `ns` nanoseconds after its scheduled instant.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.histogram.saturating_record(ns.min(MAX_TRACKED_NS));
    }

    /// Adds every value of `other` (for per-net totals over several threads).
    pub fn merge(&mut self, other: &Lateness) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.histogram.add(&other.histogram);
    }

    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// Percentiles and maximum; all zero when nothing was recorded.
    pub fn summary(&self) -> LatenessSummary {
        if self.histogram.is_empty() {
            return LatenessSummary::default();
        }
        let h = &self.histogram;
        LatenessSummary {
            p50: h.value_at_quantile(0.50),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

/// The figures of a [`Lateness`] histogram the reports print, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatenessSummary {
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl LatenessSummary {
    /// `p50 1.2us  p99 8.0us  p99.9 31us  max 2.1ms`
    pub fn to_text(&self) -> String {
        format!(
            "p50 {}  p99 {}  p99.9 {}  max {}",
            human_ns(self.p50),
            human_ns(self.p99),
            human_ns(self.p999),
            human_ns(self.max)
        )
    }
}

/// A duration in nanoseconds with a readable unit (`850ns`, `12.5us`, `3.20ms`, `1.50s`).
pub fn human_ns(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns}ns"),
        1_000..1_000_000 => format!("{:.1}us", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2}ms", ns as f64 / 1e6),
        _ => format!("{:.2}s", ns as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_follow_the_recorded_values() {
        let mut l = Lateness::new();
        for v in 1..=1000 {
            l.record(v * 1000);
        }
        let s = l.summary();
        assert_eq!(l.count(), 1000);
        assert!((499_000..=501_000).contains(&s.p50), "{s:?}");
        assert!((989_000..=991_000).contains(&s.p99), "{s:?}");
        assert!(s.p999 <= s.max && s.max >= 999_000 && s.max <= 1_001_000, "{s:?}");
    }

    #[test]
    fn empty_and_huge_values_are_handled() {
        assert_eq!(Lateness::new().summary(), LatenessSummary::default());
        let mut l = Lateness::new();
        l.record(0);
        l.record(u64::MAX);
        assert_eq!(l.count(), 2);
        assert!(l.summary().max >= MAX_TRACKED_NS / 2);
    }

    #[test]
    fn merging_adds_counts() {
        let mut a = Lateness::new();
        let mut b = Lateness::new();
        a.record(10);
        b.record(20);
        b.record(30);
        a.merge(&b);
        assert_eq!(a.count(), 3);
        assert_eq!(human_ns(1_500), "1.5us");
    }
}
