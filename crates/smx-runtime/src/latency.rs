//! Latency of every run: stamps at channel writes, samples at reads, histograms per reader.
//!
//! A write that is sampled stamps the message with the write time
//! ([`smx_box::Message::written_ns`]); every other write clears the stamp, so a stamp never
//! survives a hop it does not describe. The reader of the channel, on taking a stamped message,
//! reads the clock once and records two samples into histograms it owns alone: the channel's
//! latency (now − write stamp) and, when the reader is a sink, the end-to-end latency (now −
//! the message's creation time, [`smx_box::Message::sent_ns`]). Nothing is shared on the hot
//! path: each histogram lives in the port of the thread that reads the channel and goes to the
//! report when the thread ends.
//!
//! What is a sample: a message taken from a channel for the first time with a stamp. Not
//! samples: a decoupled input's latest value read again (same stamp as the last sample),
//! overwritten or dropped messages (never read), and unstamped writes (sampling). A sample
//! whose clock reading lies before its stamp (the clock went backwards, or two clocks that do
//! not agree) is counted as a clock anomaly instead of being recorded.

use hdrhistogram::Histogram;
use serde::Serialize;
use smx_box::{Message, now_ns};

/// Every `DEFAULT_EVERY`-th write is sampled by default: so rarely that the sampling costs less
/// than the noise of a hand-over, where sampling every message adds two clock reads and a
/// histogram record to each (docs/performance.md, "The report's latency figures").
pub const DEFAULT_EVERY: u32 = 64;

/// Largest latency the histograms resolve (about 18 minutes); larger samples count at this
/// value in the percentiles, and `max` stays exact.
const MAX_TRACKED_NS: u64 = 1 << 40;

/// Which writes are stamped (`--latency`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyMode {
    Off,
    /// Every Nth write of each channel end (N at least 2).
    Sampled(u32),
    Full,
}

impl Default for LatencyMode {
    fn default() -> Self {
        LatencyMode::Sampled(DEFAULT_EVERY)
    }
}

impl LatencyMode {
    /// Writes per stamp: 0 = never, 1 = every write.
    pub fn every(self) -> u32 {
        match self {
            LatencyMode::Off => 0,
            LatencyMode::Sampled(n) => n,
            LatencyMode::Full => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LatencyMode::Off => "off",
            LatencyMode::Sampled(_) => "sampled",
            LatencyMode::Full => "full",
        }
    }
}

impl std::str::FromStr for LatencyMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(LatencyMode::Off),
            "full" => Ok(LatencyMode::Full),
            "sampled" => Ok(LatencyMode::default()),
            _ => match s.parse::<u32>() {
                Ok(0) => Ok(LatencyMode::Off),
                Ok(1) => Ok(LatencyMode::Full),
                Ok(n) => Ok(LatencyMode::Sampled(n)),
                Err(_) => Err(format!(
                    "'{s}' is not one of: off, sampled, full, or a number N (every Nth message)"
                )),
            },
        }
    }
}

/// The writer's half: which writes to stamp.
#[derive(Debug, Clone)]
pub struct Stamper {
    every: u32,
    left: u32,
}

impl Default for Stamper {
    fn default() -> Self {
        Stamper::new(LatencyMode::Off)
    }
}

impl Stamper {
    pub fn new(mode: LatencyMode) -> Self {
        Stamper {
            every: mode.every(),
            left: 1,
        }
    }

    /// Stamps `msg` if this write is sampled, clears its stamp otherwise.
    #[inline]
    pub fn stamp(&mut self, msg: &mut Message) {
        msg.set_written_ns(self.next_stamp());
    }

    /// The stamp of this write: the time if it is sampled, else 0.
    #[inline]
    pub fn next_stamp(&mut self) -> u64 {
        if self.every != 0 {
            self.left -= 1;
            if self.left == 0 {
                self.left = self.every;
                // 0 means "not stamped": a write at the epoch's first nanosecond is 1.
                return now_ns().max(1);
            }
        }
        0
    }
}

/// A histogram of nanoseconds with its exact maximum and its clock anomalies.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    /// Created at the first sample: a channel that is never sampled costs no memory.
    hist: Option<Box<Histogram<u64>>>,
    max: u64,
    /// Samples whose reading came before their stamp.
    pub clock_anomalies: u64,
}

impl Samples {
    pub fn new() -> Self {
        Samples::default()
    }

    /// Records `now - since`, or a clock anomaly when `now` is before `since`.
    #[inline]
    pub fn record(&mut self, since: u64, now: u64) {
        match now.checked_sub(since) {
            Some(ns) => {
                self.max = self.max.max(ns);
                self.hist_mut().saturating_record(ns);
            }
            None => self.clock_anomalies += 1,
        }
    }

    fn hist_mut(&mut self) -> &mut Histogram<u64> {
        self.hist.get_or_insert_with(|| {
            // Two significant digits: percentiles within 1 %, 34 KiB per histogram.
            Box::new(Histogram::new_with_bounds(1, MAX_TRACKED_NS, 2).expect("constant bounds are valid"))
        })
    }

    pub fn count(&self) -> u64 {
        self.hist.as_ref().map_or(0, |h| h.len())
    }

    /// Adds `other`'s samples (histograms of two threads, or the inputs of one sink).
    pub fn merge(&mut self, other: &Samples) {
        self.clock_anomalies += other.clock_anomalies;
        self.max = self.max.max(other.max);
        if let Some(h) = &other.hist {
            // Equal bounds on both sides: adding cannot fail.
            let _ = self.hist_mut().add(h.as_ref());
        }
    }

    /// The report's figures.
    pub fn summary(&self) -> LatencySummary {
        match &self.hist {
            Some(h) if !h.is_empty() => LatencySummary {
                p50: Some(h.value_at_quantile(0.50).min(self.max)),
                p99: Some(h.value_at_quantile(0.99).min(self.max)),
                p999: Some(h.value_at_quantile(0.999).min(self.max)),
                max: Some(self.max),
                count: h.len(),
            },
            _ => LatencySummary::default(),
        }
    }
}

/// Percentiles of one set of samples, in nanoseconds (`null` when there is no sample).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LatencySummary {
    pub p50: Option<u64>,
    pub p99: Option<u64>,
    pub p999: Option<u64>,
    pub max: Option<u64>,
    pub count: u64,
}

/// The reader's half, one per connected input port.
#[derive(Debug, Clone, Default)]
pub struct InputLatency {
    /// Write → read of this channel.
    pub channel: Samples,
    /// Creation → read, kept only when the reader is a sink.
    pub end_to_end: Option<Samples>,
    /// Creation → read again, kept only when the channel's producer brings messages in from
    /// another process ([`smx_box::SpecBuilder::brings_in`]): the latency of that link.
    pub arrival: Option<Samples>,
    /// The stamp of the last sample: a decoupled input's latest value read again carries it
    /// again and is not a new sample.
    last: u64,
}

impl InputLatency {
    pub fn new(sink: bool) -> Self {
        InputLatency {
            end_to_end: sink.then(Samples::new),
            ..InputLatency::default()
        }
    }

    /// Also keeps the creation → read samples of a channel whose producer brings messages in.
    pub fn with_arrival(mut self, arrival: bool) -> Self {
        self.arrival = arrival.then(Samples::new);
        self
    }

    /// Called for every message taken from the channel.
    #[inline]
    pub fn note(&mut self, msg: &Message) {
        self.note_stamp(msg.written_ns(), msg.sent_ns);
    }

    /// [`InputLatency::note`] of a message stamped `stamp` and created at `sent_ns`.
    #[inline]
    pub fn note_stamp(&mut self, stamp: u64, sent_ns: u64) {
        if stamp != 0 && stamp != self.last {
            self.sample(stamp, sent_ns);
        }
    }

    #[cold]
    fn sample(&mut self, stamp: u64, created: u64) {
        self.last = stamp;
        let now = now_ns();
        self.channel.record(stamp, now);
        if created == 0 {
            return;
        }
        if let Some(e2e) = &mut self.end_to_end {
            e2e.record(created, now);
        }
        if let Some(arrival) = &mut self.arrival {
            arrival.record(created, now);
        }
    }
}

/// What a thread hands back: its inputs' samples, by channel id.
#[derive(Debug, Clone)]
pub struct ChannelSamples {
    pub channel: usize,
    pub latency: InputLatency,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamped(written: u64, created: u64) -> Message {
        let mut m = Message::new(0, created, b"x");
        m.set_written_ns(written);
        m
    }

    #[test]
    fn sampling_stamps_every_nth_write_and_clears_the_rest() {
        let mut s = Stamper::new(LatencyMode::Sampled(4));
        let stamps: Vec<bool> = (0..9)
            .map(|_| {
                let mut m = stamped(77, 1);
                s.stamp(&mut m);
                m.written_ns() != 0
            })
            .collect();
        assert_eq!(stamps, [true, false, false, false, true, false, false, false, true]);
        let mut off = Stamper::new(LatencyMode::Off);
        let mut m = stamped(77, 1);
        off.stamp(&mut m);
        assert_eq!(m.written_ns(), 0, "an unsampled write clears an earlier hop's stamp");
    }

    #[test]
    fn a_reading_before_its_stamp_is_an_anomaly_not_a_sample() {
        let mut s = Samples::new();
        s.record(100, 350);
        s.record(500, 400);
        assert_eq!((s.count(), s.clock_anomalies), (1, 1));
        let sum = s.summary();
        assert_eq!(sum.max, Some(250));
        assert!(sum.p50.unwrap().abs_diff(250) <= 3, "{sum:?}");
    }

    #[test]
    fn a_re_read_latest_value_is_not_a_second_sample() {
        let mut input = InputLatency::new(true);
        let m = stamped(now_ns().max(1), 1);
        input.note(&m);
        input.note(&m.clone());
        input.note(&stamped(0, 1));
        assert_eq!(input.channel.count(), 1);
        assert_eq!(input.end_to_end.as_ref().map(Samples::count), Some(1));
    }

    #[test]
    fn a_stamp_from_the_future_counts_as_a_clock_anomaly() {
        let mut input = InputLatency::new(true);
        input.note(&stamped(u64::MAX - 1, u64::MAX - 1));
        assert_eq!((input.channel.count(), input.channel.clock_anomalies), (0, 1));
        assert_eq!(input.end_to_end.unwrap().clock_anomalies, 1);
    }

    #[test]
    fn merged_samples_keep_counts_and_the_larger_max() {
        let mut a = Samples::new();
        a.record(0, 1_000);
        let mut b = Samples::new();
        b.record(0, 5_000);
        b.record(10, 0);
        a.merge(&b);
        let s = a.summary();
        assert_eq!((s.count, s.max, a.clock_anomalies), (2, Some(5_000), 1));
        assert_eq!(Samples::new().summary(), LatencySummary::default());
    }

    #[test]
    fn modes_parse() {
        assert_eq!("off".parse(), Ok(LatencyMode::Off));
        assert_eq!("full".parse(), Ok(LatencyMode::Full));
        assert_eq!("sampled".parse(), Ok(LatencyMode::Sampled(DEFAULT_EVERY)));
        assert_eq!("16".parse(), Ok(LatencyMode::Sampled(16)));
        assert!(
            "often"
                .parse::<LatencyMode>()
                .unwrap_err()
                .contains("off, sampled, full")
        );
    }
}
