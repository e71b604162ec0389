//! The time-triggered part of a report: one entry per firewall thread, one row per pair.
//!
//! Definitions (spec runtime.md §3.4, with the original's gaps closed):
//! * **ticks**: scheduled ticks `t0 + k·T` that elapsed while the firewall ran, released or
//!   not; **missed ticks**: those whose whole period passed before the firewall woke up
//!   (counted one per lost period, never merged); **overruns**: passes that ended after the
//!   next tick was already due.
//! * **forwarded**: messages moved from producer to consumer.
//! * **produce miss**: a tick at which the producer had delivered nothing new since the
//!   previous tick, including before its first message ("never produced"); those before the
//!   pair's first hand-over are also counted apart: the pipeline filling (under logical
//!   execution time the second firewall of a chain gets its first message a period after the
//!   first does), or a producer that started late.
//! * **consume miss**: a tick whose message overwrote one the consumer had not read yet.
//! * The **miss rate** of a pair is `(produce misses + consume misses) / ticks`.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use smx_timing::LatenessSummary;
use smx_timing::lateness::human_ns;

/// One firewall thread (all pairs it serves share its period and schedule).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FirewallReport {
    /// Thread name, e.g. `tf_100us_0`.
    pub name: String,
    /// The kernel's clock source during the run (`tsc`, `kvm-clock`, ...).
    pub clock_source: String,
    pub period_ns: u64,
    pub ticks: u64,
    pub missed_ticks: u64,
    pub overruns: u64,
    pub lateness_ns: LatenessSummary,
    /// The SCHED_FIFO level in effect (`null`: normal scheduling).
    pub priority: Option<u8>,
    pub core: Option<usize>,
    /// The spin margin before each release, 0 when sleeping only.
    pub spin_ns: u64,
    pub pairs: Vec<PairReport>,
}

/// One producer→consumer pair through a firewall.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairReport {
    pub producer: String,
    pub consumer: String,
    /// Ticks at which this pair was checked (until one of its ends finished).
    pub ticks: u64,
    pub forwarded: u64,
    pub produce_misses: u64,
    /// The produce misses before the pair's first hand-over (part of `produce_misses`): the
    /// pipeline filling. The verdict on the period leaves them out once a message came.
    #[serde(default)]
    pub produce_misses_before_first: u64,
    pub consume_misses: u64,
    /// Ticks the firewall lost (released a whole period late or later) while serving this pair:
    /// deadlines missed without a pass.
    #[serde(default)]
    pub missed_ticks: u64,
    /// The firewall's share of the latency of sampled messages: from the producer's write to
    /// the pass that handed the message to the consumer side (the hold of logical execution
    /// time, a period at most unless ticks were lost). The channel row's latency covers the
    /// whole way to the consumer's read.
    #[serde(default)]
    pub firewall_ns: crate::latency::LatencySummary,
    /// Its consume misses follow from the net's shape, whatever the timing: its consumer is a
    /// routing node whose time-triggered outputs take fewer messages per period than its
    /// time-triggered inputs deliver (the report's warnings say which and what to change).
    #[serde(default)]
    pub consume_misses_by_shape: bool,
    /// Its produce misses follow from the net's shape: its channel crosses from a firewall of
    /// a longer period into this one, whose ticks look for a message more often than one comes
    /// (nothing is lost; the report's warnings say so).
    #[serde(default)]
    pub produce_misses_by_shape: bool,
}

impl PairReport {
    /// Deadlines this pair missed: produce and consume misses at the ticks served, and every
    /// tick the firewall lost.
    pub fn deadline_misses(&self) -> u64 {
        self.produce_misses + self.consume_misses + self.missed_ticks
    }

    /// [`PairReport::deadline_misses`] over the ticks of the pair's schedule.
    pub fn miss_rate(&self) -> f64 {
        self.share_of_due(self.deadline_misses())
    }

    /// [`PairReport::miss_rate`] without the misses the net's shape explains
    /// ([`PairReport::consume_misses_by_shape`], [`PairReport::produce_misses_by_shape`]) and
    /// those of the pipeline filling ([`PairReport::produce_misses_before_first`], once a
    /// message came; a pair that never forwarded one missed every deadline): what the
    /// firewall, the scheduling and the boxes answer for, which a faster machine would lower.
    pub fn timing_miss_rate(&self) -> f64 {
        let consumed = if self.consume_misses_by_shape {
            self.consume_misses
        } else {
            0
        };
        let produced = if self.produce_misses_by_shape {
            self.produce_misses
        } else if self.forwarded > 0 {
            self.produce_misses_before_first.min(self.produce_misses)
        } else {
            0
        };
        self.share_of_due(self.deadline_misses() - consumed - produced)
    }

    fn share_of_due(&self, misses: u64) -> f64 {
        let due = self.ticks + self.missed_ticks;
        if due == 0 { 0.0 } else { misses as f64 / due as f64 }
    }
}

/// The text section; empty when the run had no firewall.
pub fn render(firewalls: &[FirewallReport]) -> String {
    let mut out = String::new();
    let Some(first) = firewalls.first() else {
        return out;
    };
    let clock_source = &first.clock_source;
    let rt: Vec<String> = firewalls
        .iter()
        .map(|f| match f.priority {
            Some(p) => format!("{} SCHED_FIFO {p}", f.name),
            None => format!("{} normal scheduling", f.name),
        })
        .collect();
    let _ = writeln!(
        out,
        "\nTemporal firewalls (clock source {clock_source}; {})",
        rt.join(", ")
    );
    for f in firewalls {
        let rate = |n: u64| {
            if f.ticks == 0 {
                0.0
            } else {
                n as f64 * 100.0 / f.ticks as f64
            }
        };
        let _ = writeln!(
            out,
            "  {}: period {}, {} ticks, {} missed ({:.4} %: periods without a release), {} overruns, spin {}, \
             lateness of the releases {} (one sample per release: a release k periods late misses k ticks)",
            f.name,
            human_ns(f.period_ns),
            f.ticks,
            f.missed_ticks,
            rate(f.missed_ticks),
            f.overruns,
            if f.spin_ns == 0 {
                "off".to_string()
            } else {
                human_ns(f.spin_ns)
            },
            f.lateness_ns.to_text()
        );
        for p in &f.pairs {
            let _ = write!(
                out,
                "    {} -> {}: {} ticks, {} forwarded, produce misses {}, consume misses {}, missed ticks {}, \
                 miss rate {:.4} %",
                p.producer,
                p.consumer,
                p.ticks,
                p.forwarded,
                p.produce_misses,
                p.consume_misses,
                p.missed_ticks,
                p.miss_rate() * 100.0
            );
            if p.produce_misses_before_first > 0 && p.forwarded > 0 {
                let _ = write!(
                    out,
                    " ({} of the produce misses before its first message: the pipeline filling, left out of the \
                     verdict)",
                    p.produce_misses_before_first
                );
            }
            if let (Some(p50), Some(p99), Some(max)) = (p.firewall_ns.p50, p.firewall_ns.p99, p.firewall_ns.max) {
                // How long a message waited in the firewall for its hand-over (a period at
                // most, unless ticks were lost), in words: four bare figures read as a riddle.
                let _ = write!(
                    out,
                    ", time in the firewall p50 {} p99 {} max {} ({} sampled messages)",
                    human_ns(p50),
                    human_ns(p99),
                    human_ns(max),
                    p.firewall_ns.count
                );
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::PairReport;

    fn pair(ticks: u64, forwarded: u64, produce_misses: u64, before_first: u64) -> PairReport {
        PairReport {
            producer: "Fwd#1".into(),
            consumer: "Snk#2".into(),
            ticks,
            forwarded,
            produce_misses,
            produce_misses_before_first: before_first,
            consume_misses: 0,
            missed_ticks: 0,
            firewall_ns: Default::default(),
            consume_misses_by_shape: false,
            produce_misses_by_shape: false,
        }
    }

    #[test]
    fn the_pipeline_filling_is_no_miss_of_the_run() {
        // The second firewall of a chain: its first tick comes before any message can.
        let second = pair(51, 50, 1, 1);
        assert!(second.miss_rate() > 0.0, "the pair's own figures keep the miss");
        assert_eq!(second.timing_miss_rate(), 0.0);
        let later = pair(51, 49, 2, 1);
        assert_eq!(
            later.timing_miss_rate(),
            1.0 / 51.0,
            "a miss after the first message counts"
        );
    }

    #[test]
    fn a_pair_that_never_handed_a_message_over_missed_every_deadline() {
        assert_eq!(pair(10, 0, 10, 10).timing_miss_rate(), 1.0);
    }
}
