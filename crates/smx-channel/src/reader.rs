//! The consumer's end: the firing rule's look, the reads with their counts, and the latest
//! value of a decoupled consumer side.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use smx_spsc::{Consumer, TryPopError};

use super::{ChannelKind, ChannelState, latest};

/// What a non-blocking take found.
#[derive(Debug)]
pub enum Poll<T> {
    Message(T),
    Empty,
    Ended,
}

/// The consumer's end (cache-line aligned, see [`super::Writer`]).
#[derive(Debug)]
#[repr(align(128))]
pub struct Reader<T> {
    rx: Option<Consumer<T>>,
    /// `Some(last value)` on a decoupled consumer side.
    latest: Option<Option<T>>,
    /// The last read gave the latest value again ([`Reader::read_again`]).
    again: bool,
    kind: ChannelKind,
    shared: Arc<ChannelState>,
}

impl<T: Clone> Reader<T> {
    pub(crate) fn new(rx: Consumer<T>, kind: ChannelKind, shared: Arc<ChannelState>) -> Self {
        Reader {
            rx: Some(rx),
            latest: kind.consumer_decoupled().then_some(None),
            again: false,
            kind,
            shared,
        }
    }

    /// [`Reader::take`] takes only messages whose write has completed, and never waits on a
    /// slot the producer is still writing: a consumer of higher real-time priority on the
    /// producer's core (a SCHED_FIFO firewall) would wait there forever, since the producer it
    /// waits for cannot run. The queue always works that way (a message becomes visible when
    /// its index is published, after the slot is written, and a decoupled producer publishes
    /// before it evicts), so this only states that the caller relies on it.
    pub fn take_published_only(&mut self) {}

    pub fn kind(&self) -> ChannelKind {
        self.kind
    }

    /// How long the firing rule spins on an empty channel before it parks (default
    /// [`super::DEFAULT_SPIN`]; zero parks at once).
    pub fn set_spin(&mut self, spin: Duration) {
        if let Some(rx) = &mut self.rx {
            rx.set_spin(spin);
        }
    }

    /// A wait for a message gives up when `halt` is set (see [`smx_spsc::Halt`] for who must
    /// wake the waiting thread); the channel itself stays as it is.
    pub fn set_halt(&mut self, halt: smx_spsc::Halt) {
        if let Some(rx) = &mut self.rx {
            rx.set_halt(halt);
        }
    }

    /// Whether this end's halt is set.
    pub fn halted(&self) -> bool {
        self.rx.as_ref().is_some_and(|rx| rx.halted())
    }

    pub fn spin(&self) -> Duration {
        self.rx.as_ref().map_or(Duration::ZERO, |rx| rx.spin())
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
        match &mut self.rx {
            Some(rx) => rx.has_message() || rx.producer_closed(),
            None => true,
        }
    }

    /// The firing rule with a deadline: waits until a message is there or the producer has
    /// ended (true), `deadline` passed, or `give_up` says so (false). See [`crate::nap`].
    pub fn wait_ready_until(&mut self, deadline: std::time::Instant, give_up: impl Fn() -> bool) -> bool {
        let mut gave_up = false;
        let ready = crate::nap::poll_until(deadline, || {
            gave_up = give_up() || self.halted();
            gave_up || self.ready_now()
        });
        ready && !gave_up
    }

    /// Looks at once whenever it waits, whatever the length: for a channel whose producer
    /// writes once per period (a firewall), where nothing gathers while the consumer waits
    /// and a late look only costs the consumer time of its period.
    pub fn look_at_once(&mut self) {
        if let Some(rx) = &mut self.rx {
            rx.set_settle(0);
        }
    }

    /// Whether a new message is waiting now (never a duplicate; no waiting).
    #[inline]
    pub fn has_message(&mut self) -> bool {
        self.rx.as_mut().is_some_and(|rx| rx.has_message())
    }

    /// Blocks until a new message is there or the producer has ended, whatever the kind. The
    /// message stays in the channel (and keeps its slot) until it is read.
    #[inline]
    pub fn wait_message(&mut self) {
        if let Some(rx) = &mut self.rx {
            rx.wait_ready();
        }
    }

    /// The next message without blocking; on a decoupled consumer side the latest value again
    /// when nothing new came (counted as duplicated).
    #[inline]
    pub fn read(&mut self) -> Option<T> {
        match self.take() {
            Poll::Message(msg) => Some(msg),
            Poll::Empty | Poll::Ended => self.again(),
        }
    }

    /// Whether the last [`Reader::read`] or [`Reader::read_with`] gave the latest value again
    /// (a decoupled consumer side with nothing new): a reader that checks order tells a value
    /// read again from a message that came twice by this, not by its number.
    pub fn read_again(&self) -> bool {
        self.again
    }

    /// The latest value again, noted as read again.
    fn again(&mut self) -> Option<T> {
        let last = self.duplicate();
        self.again = last.is_some();
        last
    }

    /// [`Reader::read`] that lends the message to `see` instead of returning it
    /// ([`smx_spsc::Consumer::try_pop_with`]); `None` when there was nothing to read. Counted
    /// as `read` counts.
    // Always inlined: as a call of its own it took the caller's closure through memory, its
    // captures stored as words and loaded again as wider moves, and that reload waited for the
    // stores to land on every read (docs/performance.md, "A read that waited for its own
    // stores").
    #[inline(always)]
    pub fn read_with<R>(&mut self, see: impl FnOnce(&T) -> R) -> Option<R> {
        let Some(rx) = &mut self.rx else {
            return self.again().map(|last| see(&last));
        };
        let (latest, again) = (&mut self.latest, &mut self.again);
        // Called by the pop only when there is a message; else kept for the duplicate.
        let mut see = Some(see);
        let popped = rx.try_pop_with(|msg| {
            if let Some(last) = latest {
                *last = Some(msg.clone());
                *again = false;
            }
            see.take().map(|see| see(msg))
        });
        match (popped, see) {
            (Ok(seen), _) => {
                self.shared.counters.consumer.read.bump();
                seen
            }
            (Err(_), Some(see)) => self.again().map(|last| see(&last)),
            (Err(_), None) => None,
        }
    }

    #[inline(never)]
    fn duplicate(&self) -> Option<T> {
        let last = self.latest.as_ref()?;
        latest::duplicate(last, &self.shared.counters.consumer.duplicated)
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
        let Some(rx) = &mut self.rx else {
            return Poll::Ended;
        };
        match rx.try_pop() {
            Ok(msg) => {
                self.shared.counters.consumer.read.bump();
                if let Some(last) = &mut self.latest {
                    *last = Some(msg.clone());
                    self.again = false;
                }
                Poll::Message(msg)
            }
            Err(TryPopError::Empty) => Poll::Empty,
            Err(TryPopError::Ended) => Poll::Ended,
        }
    }

    /// Books a message that went from the producer's write straight to the consumer, past
    /// the queue, as written and read. Only where both ends are on one thread (a chain), so
    /// each counter keeps its single writer, and only while the queue is empty, so the order
    /// is the queue's.
    pub fn count_passed(&mut self) {
        self.shared.counters.producer.written.bump();
        self.shared.counters.consumer.read.bump();
    }

    /// True once the producer has ended and everything buffered has been read.
    pub fn ended(&self) -> bool {
        self.rx.as_ref().is_none_or(|rx| rx.ended())
    }

    pub fn shared(&self) -> &Arc<ChannelState> {
        &self.shared
    }

    pub(crate) fn queue(&mut self) -> Option<&mut Consumer<T>> {
        self.rx.as_mut()
    }
}

impl<T> Reader<T> {
    pub(crate) fn queue_ref(&self) -> Option<&Consumer<T>> {
        self.rx.as_ref()
    }

    /// Ends the consumer side: counts what is still buffered as left and makes later writes
    /// fail.
    pub fn close(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            self.shared.consumer_done.store(true, Ordering::Release);
            let left = rx.close();
            self.shared.counters.consumer.left.add(left as u64);
        }
    }
}

impl<T> Drop for Reader<T> {
    fn drop(&mut self) {
        self.close();
    }
}
