//! Channels between nets: one bounded FIFO per graph edge, in one of four kinds.
//!
//! The kind comes from the two decoupling bits of an edge (spec runtime.md §2.1):
//!
//! | kind | written as | write when full | read when empty | triggering |
//! |---|---|---|---|---|
//! | [`ChannelKind::Coupled`] (`FIFO`) | `out x` → `in x` | blocks | the firing rule waits | yes |
//! | [`ChannelKind::DecoupledProducer`] (`D_FIFO`) | `decoupled out x` | drops the oldest, counted `overwritten` | the firing rule waits | yes |
//! | [`ChannelKind::DecoupledConsumer`] (`FIFO_D`) | `decoupled in x` | blocks | latest value again, counted `duplicated` | no |
//! | [`ChannelKind::Decoupled`] (`D_FIFO_D`) | both | drops the oldest | latest value again | no |
//!
//! All four are a `crossbeam_channel::bounded` array queue (no allocation per message) plus
//! two end flags; the flavour files add the non-blocking behaviours: [`overwrite`] for the
//! producer side, [`latest`] for the consumer side, [`coupled`] for the plain blocking ends.
//! Unlike the original, an overwrite keeps the order (drop-oldest, spec §7 item 10).
//!
//! Termination travels through the ends in both directions (spec §1.7): when the producer
//! ends ([`Writer::close`], also on drop) the consumer drains what is buffered and then sees
//! the end; when the consumer ends ([`Reader::close`]) the rest of the buffer is counted as
//! `left` and every later write fails and is counted as `dropped`.

pub mod counters;
pub mod coupled;
pub mod doorbell;
pub mod latest;
pub mod overwrite;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use crossbeam_utils::CachePadded;

pub use counters::{CountSnapshot, Counters};
pub use doorbell::DEFAULT_SPIN;
use doorbell::Doorbell;

/// A write found the consumer gone; the item was dropped and counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// The four channel kinds, from the decoupling bits of the producer and consumer port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelKind {
    Coupled,
    DecoupledProducer,
    DecoupledConsumer,
    Decoupled,
}

impl ChannelKind {
    /// The kind of an edge with the given decoupling bits (`dsrc`, `ddst`).
    pub fn from_bits(producer_decoupled: bool, consumer_decoupled: bool) -> Self {
        match (producer_decoupled, consumer_decoupled) {
            (false, false) => ChannelKind::Coupled,
            (true, false) => ChannelKind::DecoupledProducer,
            (false, true) => ChannelKind::DecoupledConsumer,
            (true, true) => ChannelKind::Decoupled,
        }
    }

    /// Writes never block; a full channel drops its oldest message.
    pub fn producer_decoupled(self) -> bool {
        matches!(self, ChannelKind::DecoupledProducer | ChannelKind::Decoupled)
    }

    /// Reads never block; an empty channel returns the latest value again.
    pub fn consumer_decoupled(self) -> bool {
        matches!(self, ChannelKind::DecoupledConsumer | ChannelKind::Decoupled)
    }

    /// The original runtime's type name (`FIFO`, `D_FIFO`, `FIFO_D`, `D_FIFO_D`).
    pub fn smx_name(self) -> &'static str {
        match self {
            ChannelKind::Coupled => "FIFO",
            ChannelKind::DecoupledProducer => "D_FIFO",
            ChannelKind::DecoupledConsumer => "FIFO_D",
            ChannelKind::Decoupled => "D_FIFO_D",
        }
    }

    /// The name used in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ChannelKind::Coupled => "coupled",
            ChannelKind::DecoupledProducer => "decoupled_producer",
            ChannelKind::DecoupledConsumer => "decoupled_consumer",
            ChannelKind::Decoupled => "decoupled",
        }
    }
}

/// State both ends see: the counters and who has ended.
#[derive(Debug, Default)]
pub struct Shared {
    pub counters: Counters,
    producer_done: CachePadded<AtomicBool>,
    consumer_done: CachePadded<AtomicBool>,
    /// Wakes a consumer waiting in the firing rule.
    doorbell: CachePadded<Doorbell>,
    /// Wakes a producer waiting for room in a full coupled channel ([`coupled::send`]); the
    /// consumer rings it after each message it takes.
    space: CachePadded<Doorbell>,
    /// The consumer takes only what [`Shared::published`] counts ([`Reader::take_published_only`]).
    guarded: AtomicBool,
    /// Writes the producer has completed, counted only on a guarded channel.
    published: CachePadded<AtomicU64>,
}

impl Shared {
    pub fn producer_ended(&self) -> bool {
        // SeqCst: part of the doorbell's handshake (see `doorbell`).
        self.producer_done.load(Ordering::SeqCst)
    }

    pub fn consumer_ended(&self) -> bool {
        self.consumer_done.load(Ordering::Acquire)
    }
}

/// Creates a channel of `kind` holding up to `len` messages (at least 1).
pub fn channel<T: Clone>(kind: ChannelKind, len: usize) -> (Writer<T>, Reader<T>) {
    let (tx, rx) = crossbeam_channel::bounded(len.max(1));
    let shared = Arc::new(Shared::default());
    let evict = kind.producer_decoupled().then(|| rx.clone());
    let writer = Writer {
        tx: Some(tx),
        evict,
        spin: DEFAULT_SPIN,
        shared: shared.clone(),
    };
    let reader = Reader {
        rx: Some(rx),
        known_ready: 0,
        latest: kind.consumer_decoupled().then_some(None),
        settle: doorbell::settle_spins(len.max(1)),
        spin: DEFAULT_SPIN,
        kind,
        shared,
        taken: None,
    };
    (writer, reader)
}

/// Marks a channel whose two ends are pinned to the same core. Spinning there only keeps the
/// other end from running (a hand-over then waits out a whole spin phase), so both ends park
/// at once instead: the consumer when the channel is empty, the producer when a coupled
/// channel is full.
pub fn share_core<T: Clone>(writer: &mut Writer<T>, reader: &mut Reader<T>) {
    debug_assert!(Arc::ptr_eq(&writer.shared, &reader.shared), "two ends of one channel");
    writer.set_spin(Duration::ZERO);
    reader.set_spin(Duration::ZERO);
}

/// The producer's end.
///
/// Aligned to its own cache lines, as is [`Reader`]: both ends are allocated side by side by
/// the thread that builds the net, and the reader's per-message bookkeeping would otherwise
/// keep evicting the line the writer reads on every send (false sharing).
#[derive(Debug)]
#[repr(align(128))]
pub struct Writer<T> {
    tx: Option<Sender<T>>,
    /// A receiver the producer uses to drop the oldest message (decoupled producer side only).
    evict: Option<Receiver<T>>,
    /// How long a write into a full coupled channel spins before it parks.
    spin: Duration,
    shared: Arc<Shared>,
}

impl<T> Writer<T> {
    /// Writes `msg`: blocks while a coupled channel is full, drops the oldest message of a full
    /// decoupled one. Fails (and counts the message as dropped) once the consumer has ended.
    #[inline]
    pub fn write(&mut self, msg: T) -> Result<(), Closed> {
        let counts = &self.shared.counters.producer;
        counts.written.bump();
        let delivered = match (&self.tx, &self.evict) {
            _ if self.shared.consumer_ended() => false,
            (Some(tx), None) => coupled::send(tx, msg, &self.shared, self.spin),
            (Some(tx), Some(evict)) => overwrite::send(tx, evict, msg, &counts.overwritten),
            (None, _) => false,
        };
        if delivered {
            if self.shared.guarded.load(Ordering::Relaxed) {
                self.shared.published.fetch_add(1, Ordering::Release);
            }
            self.shared.doorbell.ring();
            Ok(())
        } else {
            counts.dropped.bump();
            Err(Closed)
        }
    }

    /// True once the consumer has ended.
    pub fn consumer_ended(&self) -> bool {
        self.shared.consumer_ended()
    }

    /// How long a write into a full coupled channel spins before it parks (default
    /// [`DEFAULT_SPIN`]; zero parks at once).
    pub fn set_spin(&mut self, spin: Duration) {
        self.spin = spin;
    }

    /// Ends the producer side: the consumer drains the buffer and then sees the end.
    pub fn close(&mut self) {
        if self.tx.is_some() {
            self.shared.producer_done.store(true, Ordering::SeqCst);
            self.tx = None;
            // A decoupled producer's write can land after the consumer ended and drained the
            // channel (its eviction end keeps the queue open): the consumer will never count it,
            // so the producer counts it as left here instead of letting it vanish.
            if let Some(evict) = self.evict.take()
                && self.shared.consumer_ended()
            {
                let mut left = 0;
                while evict.try_recv().is_ok() {
                    left += 1;
                }
                self.shared.counters.consumer.left.add(left);
            }
            self.shared.doorbell.ring();
        }
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

impl<T> Drop for Writer<T> {
    fn drop(&mut self) {
        self.close();
    }
}

/// What a non-blocking take found.
#[derive(Debug)]
pub enum Poll<T> {
    Message(T),
    Empty,
    Ended,
}

/// The consumer's end (cache-line aligned, see [`Writer`]).
#[derive(Debug)]
#[repr(align(128))]
pub struct Reader<T> {
    rx: Option<Receiver<T>>,
    /// How many messages the channel held when the consumer last looked, less those it took
    /// since. The channel holds at least that many (only this consumer takes messages out;
    /// a decoupled producer's overwrite puts one back at once), so while it is above zero
    /// the firing rule need not look at the producer's end of the queue, whose cache line
    /// the producer writes on every send.
    known_ready: usize,
    /// `Some(last value)` on a decoupled consumer side.
    latest: Option<Option<T>>,
    /// Spin-loop hints between looks while waiting ([`doorbell::settle_spins`]).
    settle: u32,
    /// How long the firing rule spins on an empty channel before it parks.
    spin: Duration,
    kind: ChannelKind,
    shared: Arc<Shared>,
    /// Messages taken, on a guarded channel ([`Reader::take_published_only`]).
    taken: Option<u64>,
}

impl<T: Clone> Reader<T> {
    /// From now on [`Reader::take`] takes only messages whose write has completed, and never
    /// looks at a slot the producer is still writing. The queue's own `try_recv` waits, without
    /// yielding, for a slot whose write has begun: a consumer of higher real-time priority on
    /// the producer's core (a SCHED_FIFO firewall) would wait there forever, since the producer
    /// it waits for cannot run. Call it before the producer's first write, on a channel whose
    /// producer side is coupled (a decoupled producer also takes messages out, which these
    /// counts do not follow); a decoupled one is left as it is.
    pub fn take_published_only(&mut self) {
        if !self.kind.producer_decoupled() {
            self.shared.guarded.store(true, Ordering::Relaxed);
            self.taken = Some(0);
        }
    }

    pub fn kind(&self) -> ChannelKind {
        self.kind
    }

    /// How long the firing rule spins on an empty channel before it parks (default
    /// [`DEFAULT_SPIN`]; zero parks at once).
    pub fn set_spin(&mut self, spin: Duration) {
        self.spin = spin;
    }

    pub fn spin(&self) -> Duration {
        self.spin
    }

    /// Whether the firing rule waits on this input (its consumer side is coupled).
    pub fn triggering(&self) -> bool {
        !self.kind.consumer_decoupled()
    }

    /// The firing rule for one input: blocks until a message is there or the producer has
    /// ended. Returns at once on a decoupled consumer side.
    #[inline]
    pub fn wait_ready(&mut self) {
        if self.triggering() {
            self.wait_message();
        }
    }

    /// The firing rule without waiting: whether a message is there or the producer has ended.
    pub fn ready_now(&mut self) -> bool {
        self.rx.is_none() || self.has_message() || self.shared.producer_ended()
    }

    /// Looks at once whenever it waits, whatever the length: for a channel whose producer
    /// writes once per period (a firewall), where nothing gathers while the consumer waits
    /// and a late look only costs the consumer time of its period.
    pub fn look_at_once(&mut self) {
        self.settle = 0;
    }

    /// Whether a new message is waiting now (never a duplicate; no waiting).
    pub fn has_message(&mut self) -> bool {
        if self.known_ready > 0 {
            return true;
        }
        match &self.rx {
            Some(rx) => {
                self.known_ready = rx.len();
                self.known_ready > 0
            }
            None => false,
        }
    }

    /// Blocks until a new message is there or the producer has ended, whatever the kind. The
    /// message stays in the channel (and keeps its slot) until it is read.
    #[inline]
    pub fn wait_message(&mut self) {
        if self.has_message() {
            return;
        }
        if let Some(rx) = &self.rx {
            let shared = &self.shared;
            shared
                .doorbell
                .wait_until(self.settle, self.spin, || !rx.is_empty() || shared.producer_ended());
            self.known_ready = rx.len();
        }
    }

    /// The next message without blocking; on a decoupled consumer side the latest value again
    /// when nothing new came (counted as duplicated).
    #[inline]
    pub fn read(&mut self) -> Option<T> {
        // The common case, kept short because it runs once per message: the firing rule saw a
        // message and there is no latest value to keep.
        if self.known_ready > 0
            && self.latest.is_none()
            && let Some(rx) = &self.rx
            && let Ok(msg) = rx.try_recv()
        {
            self.known_ready -= 1;
            self.shared.counters.consumer.read.bump();
            self.shared.space.ring();
            return Some(msg);
        }
        self.read_slow()
    }

    #[inline(never)]
    fn read_slow(&mut self) -> Option<T> {
        match self.take() {
            Poll::Message(msg) => Some(msg),
            Poll::Empty | Poll::Ended => match &self.latest {
                Some(last) => latest::duplicate(last, &self.shared.counters.consumer.duplicated),
                None => None,
            },
        }
    }

    /// Blocks until a new message arrives (never a duplicate) or the producer has ended.
    pub fn read_blocking(&mut self) -> Option<T> {
        self.wait_message();
        match self.take() {
            Poll::Message(msg) => Some(msg),
            Poll::Empty | Poll::Ended => None,
        }
    }

    /// A new message if one is there (never a duplicate), without blocking.
    #[inline]
    pub fn take(&mut self) -> Poll<T> {
        let Some(rx) = &self.rx else {
            return Poll::Ended;
        };
        if let Some(taken) = self.taken {
            if self.shared.published.load(Ordering::Acquire) <= taken {
                // Nothing completed; the end only once the producer closed after its last write.
                let ended = self.shared.producer_ended() && self.shared.published.load(Ordering::Acquire) <= taken;
                return if ended { Poll::Ended } else { Poll::Empty };
            }
            self.taken = Some(taken + 1);
        }
        let seen_ready = self.known_ready > 0;
        self.known_ready = self.known_ready.saturating_sub(1);
        let msg = match rx.try_recv() {
            Ok(msg) => msg,
            // A message the firing rule saw can only be missing while a decoupled producer is
            // between taking out the oldest and putting in the newest: wait for the newest.
            Err(crossbeam_channel::TryRecvError::Empty) if seen_ready && self.kind.producer_decoupled() => {
                match overwrite::recv_after_evict(rx) {
                    Some(msg) => msg,
                    None => return Poll::Empty,
                }
            }
            Err(crossbeam_channel::TryRecvError::Empty) => return Poll::Empty,
            Err(crossbeam_channel::TryRecvError::Disconnected) => return Poll::Ended,
        };
        self.shared.counters.consumer.read.bump();
        self.shared.space.ring();
        if let Some(last) = &mut self.latest {
            *last = Some(msg.clone());
        }
        Poll::Message(msg)
    }

    /// True once the producer has ended and everything buffered has been read.
    pub fn ended(&self) -> bool {
        // A message the firing rule counted is still there: no need to look at the producer's
        // end of the queue (its cache line), which the producer writes on every send.
        if self.known_ready > 0 {
            return false;
        }
        match &self.rx {
            Some(rx) => self.shared.producer_ended() && rx.is_empty(),
            None => true,
        }
    }

    /// The underlying receiver, for waiting on several inputs at once (routing nodes).
    pub fn receiver(&self) -> Option<&Receiver<T>> {
        self.rx.as_ref()
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

impl<T> Reader<T> {
    /// Ends the consumer side: counts what is still buffered as left and makes later writes
    /// fail.
    pub fn close(&mut self) {
        if let Some(rx) = self.rx.take() {
            self.shared.consumer_done.store(true, Ordering::Release);
            let mut left = 0;
            while rx.try_recv().is_ok() {
                left += 1;
            }
            self.shared.counters.consumer.left.add(left);
            self.shared.space.ring();
        }
    }
}

impl<T> Drop for Reader<T> {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guarded_reader_takes_every_completed_write_then_sees_the_end() {
        let (mut w, mut r) = channel::<u32>(ChannelKind::Coupled, 4);
        r.take_published_only();
        assert!(matches!(r.take(), Poll::Empty));
        for i in 0..3 {
            w.write(i).unwrap();
        }
        let got: Vec<u32> = (0..3)
            .map(|_| match r.take() {
                Poll::Message(m) => m,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(got, [0, 1, 2]);
        assert!(matches!(r.take(), Poll::Empty));
        w.close();
        assert!(matches!(r.take(), Poll::Ended));
    }

    #[test]
    fn a_decoupled_producer_side_is_not_guarded() {
        let (mut w, mut r) = channel::<u32>(ChannelKind::DecoupledProducer, 1);
        r.take_published_only();
        w.write(1).unwrap();
        w.write(2).unwrap();
        assert!(matches!(r.take(), Poll::Message(2)));
    }
}
