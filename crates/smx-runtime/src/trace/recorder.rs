//! The per-thread half of a trace: a ring of fixed-size events, filled on the hot path.
//!
//! A [`Recorder`] is created (and its ring allocated to full size) when its thread starts;
//! from then on recording is a clock read and a store into the ring, never an allocation, a
//! lock or I/O. When the ring is full the oldest event is overwritten, so a trace keeps the
//! latest `limit` events of each thread and counts the others ([`Ring::dropped`]).

use std::sync::Arc;

use smx_timing::clock::monotonic_ns;

use super::{Labels, TracerInner};

/// Steps and waits shorter than this are folded into a batch instead of getting a slice each:
/// a slice per 100 ns step would fill any ring in milliseconds and hide the picture.
pub const BATCH_BELOW_NS: u64 = 1_000;

/// What an event records. Indexes name a port or a pair through the ring's [`Labels`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// `count` consecutive steps of one box (or messages of a routing node).
    Steps,
    /// The firing rule waited for a message on this input.
    WaitRead(u32),
    /// A write to this output took at least [`BATCH_BELOW_NS`] (a full coupled channel, or
    /// waking a consumer that slept).
    WaitWrite(u32),
    /// A routing node waited for any of its inputs.
    WaitAny,
    /// One firewall tick's pass; `count` is the tick's index, `arg` its lateness in ns.
    Tick,
    /// The firewall woke up `count` periods late: those ticks were lost (instant).
    MissedTicks,
    /// The pass ended after the next tick was due (instant).
    Overrun,
    /// At this tick the pair's producer had delivered nothing new (instant).
    ProduceMiss(u32),
    /// At this tick the pair overwrote a message its consumer had not read (instant).
    ConsumeMiss(u32),
}

/// One event: a slice from `ts` lasting `dur`, or an instant (`dur` 0), in monotonic ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub what: What,
    pub ts: u64,
    pub dur: u64,
    pub count: u64,
    pub arg: u64,
}

/// A bounded ring: the latest `capacity` events in push order.
#[derive(Debug, Clone)]
pub struct Ring {
    events: Vec<Event>,
    capacity: usize,
    /// Slot written next (once full, also the oldest event).
    next: usize,
    pushed: u64,
}

impl Ring {
    pub fn new(capacity: usize) -> Ring {
        let capacity = capacity.max(1);
        Ring {
            events: Vec::with_capacity(capacity),
            capacity,
            next: 0,
            pushed: 0,
        }
    }

    #[inline]
    pub fn push(&mut self, event: Event) {
        if self.events.len() < self.capacity {
            self.events.push(event);
        } else {
            self.events[self.next] = event;
        }
        self.next += 1;
        if self.next == self.capacity {
            self.next = 0;
        }
        self.pushed += 1;
    }

    /// The event pushed last.
    #[inline]
    fn last_mut(&mut self) -> Option<&mut Event> {
        let at = if self.next == 0 {
            self.events.len().checked_sub(1)?
        } else {
            self.next - 1
        };
        self.events.get_mut(at)
    }

    /// Events overwritten because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.pushed - self.events.len() as u64
    }

    /// The kept events, oldest first.
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        let (newer, older) = self.events.split_at(self.next.min(self.events.len()));
        let older = if self.events.len() < self.capacity {
            &[][..]
        } else {
            older
        };
        older.iter().chain(newer)
    }
}

/// The recording end of one thread (or one box of a cyclic executive).
#[derive(Debug)]
pub struct Recorder {
    ring: Ring,
    labels: Labels,
    /// The last event is a batch of short steps that a short step right after may extend.
    open_batch: bool,
    sink: Arc<TracerInner>,
}

impl Recorder {
    pub(super) fn new(sink: Arc<TracerInner>, labels: Labels) -> Recorder {
        Recorder {
            ring: Ring::new(sink.limit),
            labels,
            open_batch: false,
            sink,
        }
    }

    /// The trace clock (the firewalls' clock).
    #[inline]
    pub fn now(&self) -> u64 {
        monotonic_ns()
    }

    /// A step from `start` to `end`. A short step that follows a short step closely extends
    /// that step's batch instead of adding a slice.
    #[inline]
    pub fn step(&mut self, start: u64, end: u64) {
        let dur = end.saturating_sub(start);
        if self.open_batch
            && dur < BATCH_BELOW_NS
            && let Some(last) = self.ring.last_mut()
            && start.saturating_sub(last.ts + last.dur) < BATCH_BELOW_NS
        {
            last.dur = end.saturating_sub(last.ts);
            last.count += 1;
            return;
        }
        self.ring.push(Event {
            what: What::Steps,
            ts: start,
            dur,
            count: 1,
            arg: 0,
        });
        self.open_batch = dur < BATCH_BELOW_NS;
    }

    /// A wait from `start` to `end`; short ones are left inside the surrounding batch.
    #[inline]
    pub fn wait(&mut self, what: What, start: u64, end: u64) {
        let dur = end.saturating_sub(start);
        if dur >= BATCH_BELOW_NS {
            self.slice(what, start, dur, 0, 0);
        }
    }

    /// Any slice.
    #[inline]
    pub fn slice(&mut self, what: What, ts: u64, dur: u64, count: u64, arg: u64) {
        self.ring.push(Event {
            what,
            ts,
            dur,
            count,
            arg,
        });
        self.open_batch = false;
    }

    /// An instant event.
    #[inline]
    pub fn instant(&mut self, what: What, ts: u64, count: u64) {
        self.slice(what, ts, 0, count, 0);
    }

    /// Hands the ring to the run's trace (at the thread's end; dropping it does the same,
    /// so a ring survives a panic that unwinds past its thread's loop).
    pub fn deposit(self) {}
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let empty = Ring {
            events: Vec::new(),
            capacity: 1,
            next: 0,
            pushed: 0,
        };
        let ring = std::mem::replace(&mut self.ring, empty);
        let labels = std::mem::take(&mut self.labels);
        self.sink.rings.lock().push((labels, ring));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: u64) -> Event {
        Event {
            what: What::Steps,
            ts,
            dur: 0,
            count: 1,
            arg: 0,
        }
    }

    #[test]
    fn a_full_ring_keeps_the_latest_events_in_order_and_counts_the_rest() {
        let mut r = Ring::new(3);
        for ts in 0..2 {
            r.push(ev(ts));
        }
        assert_eq!(r.events().map(|e| e.ts).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(r.dropped(), 0);
        for ts in 2..8 {
            r.push(ev(ts));
        }
        assert_eq!(r.events().map(|e| e.ts).collect::<Vec<_>>(), [5, 6, 7]);
        assert_eq!(r.dropped(), 5);
        assert_eq!(r.last_mut().map(|e| e.ts), Some(7));
    }

    #[test]
    fn short_steps_close_together_make_one_batch_and_a_long_one_its_own_slice() {
        let inner = Arc::new(TracerInner::new(16));
        let mut rec = Recorder::new(inner, Labels::default());
        rec.step(0, 100);
        rec.step(150, 300);
        rec.step(400, 500);
        rec.step(600, 5_000); // long
        rec.step(5_100, 5_200);
        rec.step(9_000, 9_100); // short, but long after the last
        rec.wait(What::WaitRead(0), 9_100, 9_200); // short wait: folded
        rec.step(9_300, 9_400);
        let steps: Vec<(u64, u64, u64)> = rec.ring.events().map(|e| (e.ts, e.dur, e.count)).collect();
        assert_eq!(steps, [(0, 500, 3), (600, 4_400, 1), (5_100, 100, 1), (9_000, 400, 2)]);
        rec.wait(What::WaitRead(0), 9_400, 20_000);
        rec.step(20_000, 20_100);
        assert_eq!(rec.ring.events().count(), 6, "a long wait ends the batch");
    }
}
