//! Per-channel counters: cheap enough for the per-message path, exact at the end of a run.
//!
//! Every counter has exactly one writing thread (the producer writes `written`, `overwritten`,
//! `dropped` and its share of `left`; the consumer writes `read`, `duplicated` and `left`), so an increment is a
//! relaxed load and store, not a locked read-modify-write. The two sides live on separate
//! cache lines so that the producer's stores do not keep evicting the consumer's line. Other
//! threads (the progress line, the report) only read them.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

/// A counter with a single writer.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds one. Only the owning side may call this (single writer).
    #[inline]
    pub fn bump(&self) {
        self.add(1);
    }

    #[inline]
    pub fn add(&self, n: u64) {
        let v = self.0.load(Ordering::Relaxed);
        self.0.store(v + n, Ordering::Relaxed);
    }

    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counters written by the producer.
#[derive(Debug, Default)]
pub struct ProducerCounts {
    /// Messages the producer wrote (each write call, including refused ones).
    pub written: Counter,
    /// Messages pushed out of a full decoupled-producer channel to make room for a newer one.
    pub overwritten: Counter,
    /// Writes refused because the consumer had ended (the message was discarded and never
    /// entered the channel).
    pub dropped: Counter,
    /// Writes that entered the channel after the consumer's close had counted what was left
    /// (a write racing with the close), counted by the producer's close: part of `left`.
    pub left: Counter,
}

/// Counters written by the consumer.
#[derive(Debug, Default)]
pub struct ConsumerCounts {
    /// Messages handed to the consumer (duplicates not included).
    pub read: Counter,
    /// Reads of a decoupled-consumer channel that returned the latest value again.
    pub duplicated: Counter,
    /// Messages still inside the channel when its consumer ended.
    pub left: Counter,
}

/// All counters of one channel.
#[derive(Debug, Default)]
pub struct Counters {
    pub producer: CachePadded<ProducerCounts>,
    pub consumer: CachePadded<ConsumerCounts>,
}

/// A consistent copy of a channel's counters, taken after every thread has ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountSnapshot {
    pub written: u64,
    pub read: u64,
    pub overwritten: u64,
    pub duplicated: u64,
    pub dropped: u64,
    pub left: u64,
}

impl Counters {
    /// The counters after the run (call it once both ends are gone). `left` counts what was
    /// still in the channel when its consumer ended, including a write that landed after the
    /// consumer drained it (counted by the producer's close), so for every channel
    /// `written = read + overwritten + dropped + left`. Nothing is filled in to make it so:
    /// a message lost without a counter shows as a channel that does not balance.
    pub fn final_snapshot(&self) -> CountSnapshot {
        self.snapshot()
    }

    /// The counters now (possibly mid-run).
    pub fn snapshot(&self) -> CountSnapshot {
        CountSnapshot {
            written: self.producer.written.get(),
            read: self.consumer.read.get(),
            overwritten: self.producer.overwritten.get(),
            duplicated: self.consumer.duplicated.get(),
            dropped: self.producer.dropped.get(),
            left: self.consumer.left.get() + self.producer.left.get(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_lost_without_a_counter_shows_as_an_imbalance() {
        let c = Counters::default();
        c.producer.written.bump();
        c.producer.written.bump();
        c.consumer.read.bump();
        let s = c.final_snapshot();
        assert_eq!((s.written, s.read + s.overwritten + s.dropped + s.left), (2, 1));
    }
}
