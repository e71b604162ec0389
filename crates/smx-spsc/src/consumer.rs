//! The consumer's end, and waiting on several queues at once.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::time::Duration;

use crate::TryPopError;
use crate::ring::{CONSUMER_DONE, IDLE, PRODUCER_DONE, Ring, free_for, holding};
use crate::sync::Arc;
use crate::wait::{Halt, Spin, WakeMark, halted, heavy_barrier, light_barrier, park_until, spin_until};

/// The reading end of a queue (see [`crate::channel`]). Only one thread uses it at a time;
/// it may move between threads. Aligned to its own cache lines, as [`crate::Producer`] is.
#[repr(align(128))]
pub struct Consumer<T> {
    ring: Arc<Ring<T>>,
    /// Index of the next message to read (on a drop-oldest queue: a lower bound, since the
    /// producer may have evicted past it).
    head: u64,
    /// `head % slots` (blocking queues), so that a read costs no division.
    slot: usize,
    /// The producer's `tail` as last loaded: a lower bound, so while it is ahead of `head`
    /// the consumer knows a message is there without touching the producer's cache line.
    /// When it is not, a blocking queue's consumer asks the stamp of the slot it reads next,
    /// and loads the real `tail` only to wait (see `wait_ready`).
    tail_cache: u64,
    capacity: u64,
    slots: usize,
    lossy: bool,
    /// The queue's handshake is membarrier: no fence after publishing.
    asymmetric: bool,
    spin: Spin,
    /// The last park of the producer this end woke.
    woke: WakeMark,
    closed: bool,
    /// Ends a wait for a message when set (see [`Halt`]).
    halt: Option<Halt>,
}

impl<T> Consumer<T> {
    pub(crate) fn new(ring: Arc<Ring<T>>, capacity: usize, lossy: bool) -> Self {
        Consumer {
            slots: ring.slots(),
            asymmetric: ring.asymmetric,
            ring,
            head: 0,
            slot: 0,
            tail_cache: 0,
            capacity: capacity as u64,
            lossy,
            spin: Spin::new(capacity),
            woke: WakeMark::default(),
            closed: false,
            halt: None,
        }
    }

    /// Whether a message is there now, without taking it and without waiting (the firing
    /// rule's look). Once true it stays true until this end takes a message: the producer
    /// never takes one away without putting a newer one in.
    #[inline]
    pub fn has_message(&mut self) -> bool {
        !self.closed && self.look()
    }

    /// How many messages are there now (at most the capacity).
    pub fn len(&mut self) -> usize {
        if self.closed {
            return 0;
        }
        self.tail_cache = self.ring.tail.load(Acquire);
        let head = if self.lossy {
            self.ring.consumer.head.load(Acquire)
        } else {
            self.head
        };
        // On a drop-oldest queue the head may be loaded after a newer tail (capacity + 1). On a
        // blocking one the stamp of a message comes before its tail: count what `has_message`
        // already sees.
        let inside = self.tail_cache.saturating_sub(head).max(self.published() as u64);
        inside.min(self.capacity) as usize
    }

    pub fn is_empty(&mut self) -> bool {
        !self.has_message()
    }

    /// The next message, left in the queue (blocking queues only: on a drop-oldest queue the
    /// producer may evict the oldest message at any moment, so there is nothing stable to lend
    /// out; use [`Consumer::has_message`] and [`Consumer::try_pop`] there).
    ///
    /// # Panics
    /// On a drop-oldest queue.
    pub fn peek(&mut self) -> Option<&T> {
        assert!(!self.lossy, "peek on a drop-oldest queue");
        if self.has_message() {
            // Safety: the producer does not touch a slot between head and tail.
            Some(unsafe { self.ring.get(self.slot) })
        } else {
            None
        }
    }

    /// [`Consumer::try_pop`] that lends the message to `see` and drops it after, instead of
    /// returning it: a value returned through a few calls is copied at each, and a copy loaded
    /// right after the narrower stores of the one before stalls (see
    /// [`Producer::push_with`](crate::Producer::push_with)). The message still leaves its slot
    /// first, in one move, so that the slot is free before `see` runs: a producer waiting for
    /// it (a queue of one) is not kept waiting by what the consumer does with the message.
    #[inline]
    pub fn try_pop_with<R>(&mut self, see: impl FnOnce(&T) -> R) -> Result<R, TryPopError> {
        if self.closed {
            return Err(TryPopError::Ended);
        }
        if !self.look() {
            return Err(self.empty_or_ended());
        }
        if self.lossy {
            return self.pop_claiming().map(|value| see(&value));
        }
        // Safety: as in `try_pop`.
        let value = unsafe { self.ring.read(self.slot) };
        self.advance();
        Ok(see(&value))
    }

    /// The next message if one is there, without waiting.
    #[inline]
    pub fn try_pop(&mut self) -> Result<T, TryPopError> {
        if self.closed {
            return Err(TryPopError::Ended);
        }
        if !self.look() {
            return Err(self.empty_or_ended());
        }
        if self.lossy {
            return self.pop_claiming();
        }
        // Safety: the slot holds `head` (its stamp said so, or a tail published after the
        // stamp), and the producer will not touch it until the stamp says free again.
        let value = unsafe { self.ring.read(self.slot) };
        self.advance();
        Ok(value)
    }

    /// After the message at `head` was taken out of its slot (blocking queues): frees the
    /// slot, moves on and publishes the head.
    #[inline(always)]
    fn advance(&mut self) {
        self.free_slot();
        self.head += 1;
        self.slot += 1;
        if self.slot == self.slots {
            self.slot = 0;
        }
        // Release: the slot is free for the producer once it sees this head. Published at
        // once, like the tail, so a producer waiting for room is never kept waiting.
        self.ring.consumer.head.store(self.head, Release);
        light_barrier(self.asymmetric); // the wake-up handshake (crate::wait)
        self.ring.space.wake(&mut self.woke);
    }

    /// Moves up to `max` messages that are there now into `out`, without waiting: the batched
    /// form of [`Consumer::try_pop`]. A blocking queue publishes the head (and, with fences,
    /// pays the wake-up fence) once for all of them. Returns how many it moved. Reuse `out`:
    /// it allocates only when it has to grow.
    pub fn pop_into(&mut self, out: &mut VecDeque<T>, max: usize) -> usize {
        if self.closed || self.lossy {
            let mut n = 0;
            while n < max
                && let Ok(value) = self.try_pop()
            {
                out.push_back(value);
                n += 1;
            }
            return n;
        }
        // At most what was there at the call: slots freed here refill while it runs.
        let (mut n, max) = (0, max.min(self.slots));
        while n < max && self.look() {
            // Safety: as in `try_pop`.
            out.push_back(unsafe { self.ring.read(self.slot) });
            self.free_slot();
            n += 1;
            self.head += 1;
            self.slot += 1;
            if self.slot == self.slots {
                self.slot = 0;
            }
        }
        if n > 0 {
            self.ring.consumer.head.store(self.head, Release);
            light_barrier(self.asymmetric);
            self.ring.space.wake(&mut self.woke);
        }
        n
    }

    /// Waits for the next message; `None` once the producer has ended and everything it wrote
    /// has been read, or when this end's [`Halt`] is set while there is nothing to read.
    pub fn pop(&mut self) -> Option<T> {
        loop {
            match self.try_pop() {
                Ok(value) => return Some(value),
                Err(TryPopError::Ended) => return None,
                Err(TryPopError::Empty) => {
                    if !self.wait_ready() && halted(self.halt.as_ref()) {
                        return None;
                    }
                }
            }
        }
    }

    /// Waits until a message is there (true) or the producer has ended and everything it wrote
    /// has been read (false), without taking anything: the firing rule. Spins up to the spin
    /// budget, looking every `settle` hints, then parks until the producer writes or closes.
    /// Also false when this end's [`Halt`] is set while there is nothing to read.
    pub fn wait_ready(&mut self) -> bool {
        if self.closed {
            return false;
        }
        if self.look() {
            return true;
        }
        let ring = &*self.ring;
        let (stamp, holds, head) = (ring.stamp(self.slot), holding(self.head), self.head);
        // As the producer's wait for room: the stamp when looking at once, else the tail, so
        // that the wait ends with every message written meanwhile known.
        let by_stamp = !self.lossy && self.spin.settle == 0;
        let tail_cache = &mut self.tail_cache;
        let halt = self.halt.as_ref();
        let mut ready = || {
            let there = if by_stamp {
                stamp.load(Acquire) == holds
            } else {
                *tail_cache = ring.tail.load(Acquire);
                *tail_cache > head
            };
            there || ring.flags.producer_closed.load(Acquire) || halted(halt)
        };
        if !spin_until(self.spin, &mut ready) {
            park_until(|| std::iter::once(&*ring.data), ring.asymmetric, ready);
        }
        self.look()
    }

    /// True once the producer has ended and everything it wrote has been read (or this end
    /// has closed).
    pub fn ended(&self) -> bool {
        if self.closed {
            return true;
        }
        // The flag first (Acquire): once it is set the tail loaded after it is the last one.
        if !self.ring.flags.producer_closed.load(Acquire) {
            return false;
        }
        // On a drop-oldest queue the producer may have moved the head past this end's copy.
        let head = if self.lossy {
            self.ring.consumer.head.load(Acquire)
        } else {
            self.head
        };
        self.ring.tail.load(Acquire) <= head
    }

    /// True once the producer has closed (messages may still be inside).
    pub fn producer_closed(&self) -> bool {
        self.ring.flags.producer_closed.load(Acquire)
    }

    /// Ends the consumer's side (also done on drop): later writes fail. Takes out and drops
    /// what is still inside and returns how many that was.
    ///
    /// One write can race with the close (the producer checked the flag just before it was
    /// set; the fences order every later one after it): its push returned `Ok`, and the
    /// message is counted exactly once, by one of the two ends: here (so the count can be one
    /// above the capacity) if the producer has closed by the time this end is done, else by
    /// the producer's [`crate::Producer::close`]. So every accepted push is read, evicted, or
    /// counted by one close.
    pub fn close(&mut self) -> usize {
        if self.closed {
            return 0;
        }
        self.ring.flags.consumer_closed.store(true, Release);
        // Heavy: with membarrier the producer's pushes have no fence of their own, and this
        // barrier is what bounds the writes racing with the close to one.
        heavy_barrier(self.asymmetric);
        self.ring.space.wake(&mut self.woke); // a producer waiting for room sees the close
        let mut left = self.drain();
        // AcqRel: a producer that closed first made all its writes visible; a write that came
        // after the drain above is then taken here, else the producer counts it.
        if self.ring.flags.done.fetch_or(CONSUMER_DONE, AcqRel) & PRODUCER_DONE != 0 {
            left += self.drain();
        }
        self.closed = true;
        left
    }

    fn drain(&mut self) -> usize {
        let mut n = 0;
        while self.try_pop().is_ok() {
            n += 1;
        }
        n
    }

    /// How long [`Consumer::wait_ready`] and [`Consumer::pop`] spin before they park (default
    /// [`crate::DEFAULT_SPIN`]); zero parks at once (for ends sharing a core).
    pub fn set_spin(&mut self, spin: Duration) {
        self.spin.budget = spin;
    }

    pub fn spin(&self) -> Duration {
        self.spin.budget
    }

    /// Spin-loop hints between two looks at the producer's index while waiting (default
    /// [`crate::default_settle`] of the capacity; zero looks as often as it can).
    pub fn set_settle(&mut self, settle: u32) {
        self.spin.settle = settle;
    }

    /// Yield the core after every look that found nothing while spinning (default off): for
    /// an end whose producer runs on the same core, which can only make progress once this end
    /// gives the core up. See [`crate::share_core`].
    pub fn set_yield_each_look(&mut self, on: bool) {
        self.spin.yield_each_look = on;
    }

    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// A wait for a message ends when `halt` is set (see [`Halt`]).
    pub fn set_halt(&mut self, halt: Halt) {
        self.halt = Some(halt);
    }

    /// Whether this end's [`Halt`] is set.
    pub fn halted(&self) -> bool {
        halted(self.halt.as_ref())
    }

    /// A message is there: known from the cached tail, else, on a blocking queue, from the
    /// stamp of the slot at `head`, on a drop-oldest one from one load of the real tail.
    #[inline]
    fn look(&mut self) -> bool {
        if self.tail_cache > self.head {
            return true;
        }
        if !self.lossy {
            return self.stamped();
        }
        self.tail_cache = self.ring.tail.load(Acquire);
        self.tail_cache > self.head
    }

    /// [`Consumer::look`] without updating the cache (for a look from `&self`).
    #[inline(always)]
    fn published(&self) -> bool {
        self.tail_cache > self.head
            || if self.lossy {
                self.ring.tail.load(Acquire) > self.head
            } else {
                self.stamped()
            }
    }

    /// The stamp of the slot at `head` says it holds `head` (blocking queues).
    #[inline(always)]
    fn stamped(&self) -> bool {
        // Acquire: the message written before the stamp is visible.
        self.ring.stamp(self.slot).load(Acquire) == holding(self.head)
    }

    /// Hands the slot at `head`, just read, back to the producer for the index that uses it
    /// next (blocking queues).
    #[inline(always)]
    fn free_slot(&self) {
        // Release: the read is done before the producer may write the slot again.
        self.ring
            .stamp(self.slot)
            .store(free_for(self.head + self.slots as u64), Release);
    }

    /// Called after `look` found nothing.
    fn empty_or_ended(&mut self) -> TryPopError {
        // Acquire: everything written before the close is visible, so one more look is final.
        if self.ring.flags.producer_closed.load(Acquire) && !self.look() {
            TryPopError::Ended
        } else {
            TryPopError::Empty
        }
    }

    /// Drop-oldest read: claim the oldest message by compare-and-swap on `head` (the producer
    /// may be evicting it), announcing the index in `reading` first so that the producer does
    /// not overwrite the slot during the copy (see `Producer::push_evicting`).
    #[cold]
    fn pop_claiming(&mut self) -> Result<T, TryPopError> {
        let line = &self.ring.consumer;
        loop {
            let head = line.head.load(Acquire);
            if head >= self.tail_cache {
                self.tail_cache = self.ring.tail.load(Acquire);
                if head >= self.tail_cache {
                    self.head = head;
                    return Err(self.empty_or_ended());
                }
            }
            // Release (here and below): a producer that loads any later value of `reading`
            // also sees the copy before it finished.
            line.reading.store(head, Release);
            if line.head.compare_exchange(head, head + 1, AcqRel, Relaxed).is_ok() {
                // Safety: the claim made this message ours; the producer will not reuse the
                // slot while `reading` names it.
                let value = unsafe { self.ring.read((head % self.slots as u64) as usize) };
                line.reading.store(IDLE, Release);
                self.head = head + 1;
                return Ok(value);
            }
            // The producer evicted it first (and owns it): try the next one.
            line.reading.store(IDLE, Release);
        }
    }
}

impl<T> Drop for Consumer<T> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<T> std::fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("capacity", &self.capacity)
            .field("drop_oldest", &self.lossy)
            .field("head", &self.head)
            .field("closed", &self.closed)
            .finish()
    }
}

/// Waits until one of `consumers` has a message or has ended, parking once for all of them
/// (a fan-in routing node's wait), or the [`Halt`] of one of them is set. Returns at once if
/// one is ready. Spins first for the shortest spin budget among them.
pub fn wait_any<T>(consumers: &[&Consumer<T>]) {
    wait_any_of(|| consumers.iter().copied());
}

/// [`wait_any`] over the consumers an iterator yields (called several times; it must yield
/// the same ones each time), so that a caller whose ends are not in one slice need not
/// collect them (nothing is allocated).
pub fn wait_any_of<'a, T: 'a, I>(consumers: impl Fn() -> I)
where
    I: Iterator<Item = &'a Consumer<T>>,
{
    // Looks at the shared indices directly (the ends' caches need `&mut`); the caller's
    // `has_message` afterwards refreshes them.
    let ready = || consumers().any(|c| c.closed || c.published() || c.producer_closed() || halted(c.halt.as_ref()));
    let mut ready_mut = ready;
    // The shortest budget, the least settle, yielding if any end shares its core.
    let spin = Spin {
        budget: consumers().map(|c| c.spin.budget).min().unwrap_or(Duration::ZERO),
        settle: consumers().map(|c| c.spin.settle).min().unwrap_or(0),
        yield_each_look: consumers().any(|c| c.spin.yield_each_look),
    };
    if ready_mut() || spin_until(spin, &mut ready_mut) {
        return;
    }
    let asymmetric = consumers().any(|c| c.asymmetric);
    park_until(|| consumers().map(|c| &*c.ring.data), asymmetric, ready);
}
