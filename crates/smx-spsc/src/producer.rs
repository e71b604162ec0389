//! The producer's end.

use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};
use std::time::Duration;

use crate::ring::{CONSUMER_DONE, PRODUCER_DONE, Ring, free_for, holding, init_checked};
use crate::sync::{Arc, fence, spin_loop, thread};
use crate::wait::{Halt, Spin, WakeMark, halted, light_barrier, park_until, spin_until};
use crate::{Closed, TryPushError};

/// The writing end of a queue (see [`crate::channel`]). Only one thread uses it at a time;
/// it may move between threads.
///
/// Aligned to its own cache lines: the owner may keep it beside other hot data (both
/// ends of many queues side by side), and the fields here change on every
/// message.
#[repr(align(128))]
pub struct Producer<T> {
    ring: Arc<Ring<T>>,
    /// Index of the next message to write. Every write publishes it, so it also equals the
    /// shared `tail`.
    tail: u64,
    /// `tail % slots`, kept beside it so that a write costs no division.
    slot: usize,
    /// The consumer's `head` as last loaded. It only grows, so this is a lower bound and
    /// `tail - head_cache` over-states how full the queue is: while it says there is room the
    /// producer loads nothing; when it says full, a blocking queue's producer asks the stamp
    /// of the slot it writes next, and loads the real `head` only to wait (see
    /// `wait_for_space`), learning of all the room made since in one load.
    head_cache: u64,
    /// Drop-oldest only: the consumer's `reading` as loaded right after the load that gave
    /// `head_cache` (see `push_evicting`).
    reading_cache: u64,
    capacity: u64,
    slots: usize,
    lossy: bool,
    /// The queue's handshake is membarrier: no fence after publishing.
    asymmetric: bool,
    spin: Spin,
    /// The last park of the consumer this end woke.
    woke: WakeMark,
    closed: bool,
    /// Ends a wait for room when set (see [`Halt`]).
    halt: Option<Halt>,
}

impl<T> Producer<T> {
    pub(crate) fn new(ring: Arc<Ring<T>>, capacity: usize, lossy: bool) -> Self {
        Producer {
            slots: ring.slots(),
            asymmetric: ring.asymmetric,
            ring,
            tail: 0,
            slot: 0,
            head_cache: 0,
            reading_cache: crate::ring::IDLE,
            capacity: capacity as u64,
            lossy,
            spin: Spin::new(capacity),
            woke: WakeMark::default(),
            closed: false,
            halt: None,
        }
    }

    /// Writes `value`.
    ///
    /// * Blocking queue: waits while the queue is full (spinning up to the spin budget, then
    ///   parked until the consumer takes a message or closes). Returns `Ok(None)`.
    /// * Drop-oldest queue: never waits. When the queue is full the oldest unread message is
    ///   taken out and returned as `Ok(Some(oldest))`, for the caller to count as overwritten.
    ///
    /// Fails, handing `value` back, once the consumer has closed (or this end has), and when
    /// the queue is still full once this end's [`Halt`] is set.
    #[inline]
    pub fn push(&mut self, value: T) -> Result<Option<T>, Closed<T>> {
        if self.refused() {
            return Err(Closed(value));
        }
        if self.lossy {
            return Ok(self.push_evicting(value));
        }
        if !self.room() && !self.wait_for_space() {
            return Err(Closed(value));
        }
        self.write(value);
        Ok(None)
    }

    /// Whether the slot at `tail` is free (blocking queues): known from the cached head, else
    /// from the slot's stamp (the consumer has taken the message that used it last). With
    /// `slots == capacity` both say "fewer than `capacity` messages inside"; the stamp's load
    /// fetches the line the write needs next anyway.
    ///
    /// A slot the stamp says free may have been freed by a closing consumer's drain: a message
    /// put there would never be read, so a close seen after the stamp wins over the room, as
    /// it does after a wait (the stamp's Acquire orders the flag's load after it).
    #[inline(always)]
    fn room(&self) -> bool {
        self.tail - self.head_cache < self.capacity
            || (self.ring.stamp(self.slot).load(Acquire) == free_for(self.tail)
                && !self.ring.flags.consumer_closed.load(Relaxed))
    }

    /// Whether a write now would find a blocking queue full (a drop-oldest queue never is).
    #[inline]
    pub fn is_full(&self) -> bool {
        !self.lossy && !self.room()
    }

    /// Like [`Producer::push`] but never waits: a full blocking queue hands `value` back as
    /// [`TryPushError::Full`]. A drop-oldest queue is never full.
    #[inline]
    pub fn try_push(&mut self, value: T) -> Result<Option<T>, TryPushError<T>> {
        if self.refused() {
            return Err(TryPushError::Closed(value));
        }
        if self.lossy {
            return Ok(self.push_evicting(value));
        }
        if !self.room() {
            return Err(TryPushError::Full(value));
        }
        self.write(value);
        Ok(None)
    }

    /// True once the consumer has closed: every later write fails.
    pub fn consumer_closed(&self) -> bool {
        self.ring.flags.consumer_closed.load(Acquire)
    }

    /// Ends the producer's side (also done on drop): the consumer reads what is inside and
    /// then sees the end.
    ///
    /// Returns how many of this end's writes nobody will ever read: those that landed after
    /// a consumer's close had counted what was inside (see [`crate::Consumer::close`]); they
    /// are dropped with the queue. Zero while the consumer is open, and on a second call.
    pub fn close(&mut self) -> usize {
        if self.closed {
            return 0;
        }
        self.closed = true;
        self.ring.flags.producer_closed.store(true, Release);
        fence(SeqCst);
        self.ring.data.wake(&mut self.woke);
        // AcqRel: if the consumer finished first, its last head is visible here; if not, it
        // sees every write of this end when it finds this bit.
        let done = self.ring.flags.done.fetch_or(PRODUCER_DONE, AcqRel);
        if done & CONSUMER_DONE == 0 {
            return 0;
        }
        (self.tail - self.ring.consumer.head.load(Acquire)) as usize
    }

    /// How long a write into a full blocking queue spins before it parks (default
    /// [`crate::DEFAULT_SPIN`]); zero parks at once (for ends sharing a core).
    pub fn set_spin(&mut self, spin: Duration) {
        self.spin.budget = spin;
    }

    /// Spin-loop hints between two looks at the consumer's index while waiting for room
    /// (default [`crate::default_settle`] of the capacity).
    pub fn set_settle(&mut self, settle: u32) {
        self.spin.settle = settle;
    }

    /// Yield the core after every look that found nothing while spinning (default off): for
    /// an end whose consumer runs on the same core, which can only make progress once this end
    /// gives the core up. See [`crate::share_core`].
    pub fn set_yield_each_look(&mut self, on: bool) {
        self.spin.yield_each_look = on;
    }

    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// A wait for room ends when `halt` is set (the write is then refused, see [`Halt`]).
    pub fn set_halt(&mut self, halt: Halt) {
        self.halt = Some(halt);
    }

    /// Whether this end's [`Halt`] is set.
    pub fn halted(&self) -> bool {
        halted(self.halt.as_ref())
    }

    #[inline]
    fn refused(&self) -> bool {
        // The flag's line is written once, so this load stays in this core's cache.
        self.closed || self.ring.flags.consumer_closed.load(Relaxed)
    }

    /// [`Producer::push`] of a value that `init` writes straight into its slot, returning it
    /// initialised (`|slot| slot.write(value)` is `push(value)`). A value built on the caller's
    /// stack and then moved in is loaded again right after its own stores, which the CPU
    /// cannot forward to the move's wider loads when the stores were narrower (a payload filled
    /// byte by byte): built in its slot, it is never moved. `init` runs only once there is
    /// room; a drop-oldest queue builds the value beside the ring and pushes it.
    ///
    /// Fails, without calling `init`, as [`Producer::push`] fails. Panics if `init` returns
    /// anything but the slot it was given.
    #[inline]
    pub fn push_with(&mut self, init: impl FnOnce(&mut MaybeUninit<T>) -> &mut T) -> Result<Option<T>, Closed<()>> {
        if self.refused() {
            return Err(Closed(()));
        }
        if self.lossy {
            let mut value = MaybeUninit::uninit();
            init_checked(&mut value, init);
            // Safety: `init_checked` saw it initialised.
            return Ok(self.push_evicting(unsafe { value.assume_init() }));
        }
        if !self.room() && !self.wait_for_space() {
            return Err(Closed(()));
        }
        // Safety: as in `put`; the slot is free.
        unsafe { self.ring.write_with(self.slot, init) };
        self.hand_over();
        self.publish();
        Ok(None)
    }

    /// Writes the slot at `tail` (which the caller has made sure is free), publishes the new
    /// tail and wakes a parked consumer.
    #[inline]
    fn write(&mut self, value: T) {
        self.put(value);
        // There is no separate "flush": every message is published at once, so one that the
        // producer wrote is never stranded behind a batch however long the producer then
        // pauses (what this costs and why it is cheap: see the crate docs).
        self.publish();
    }

    /// Writes the slot at `tail` and, on a blocking queue, hands it to the consumer by its
    /// stamp; the index is published by [`Producer::publish`].
    #[inline(always)]
    fn put(&mut self, value: T) {
        // Safety: the slot's stamp said free (or the eviction rule for drop-oldest), so the
        // consumer is done with it, and only the producer writes slots.
        unsafe { self.ring.write(self.slot, value) };
        self.hand_over();
    }

    /// After the slot at `tail` was written: on a blocking queue hands it to the consumer by
    /// its stamp, and moves on to the next slot.
    #[inline(always)]
    fn hand_over(&mut self) {
        if !self.lossy {
            // Release: the message is visible to whoever loads this stamp with Acquire.
            self.ring.stamp(self.slot).store(holding(self.tail), Release);
        }
        self.tail += 1;
        self.slot += 1;
        if self.slot == self.slots {
            self.slot = 0;
        }
    }

    /// Publishes the tail (what a drop-oldest consumer looks at, and the count `len` and the
    /// ends' closes read) and wakes a parked consumer.
    #[inline(always)]
    fn publish(&mut self) {
        // Release: the slots' contents are visible to whoever loads this tail with Acquire.
        self.ring.tail.store(self.tail, Release);
        light_barrier(self.asymmetric); // the wake-up handshake (crate::wait)
        self.ring.data.wake(&mut self.woke);
    }

    /// Writes every message of `items`, oldest first, taking them out of it: the batched form
    /// of [`Producer::push`]. A blocking queue publishes the tail (and, with fences, pays the
    /// wake-up fence) once per run of free slots instead of once per message, and publishes before it waits
    /// for room, so nothing written is ever held back past this call. A drop-oldest queue
    /// writes them one by one and drops what it evicts. Returns how many were evicted; on
    /// `Err` (the consumer closed) the messages not written are still in `items`.
    pub fn push_from(&mut self, items: &mut VecDeque<T>) -> Result<usize, Closed<()>> {
        let mut evicted = 0;
        while !items.is_empty() {
            if self.refused() {
                return Err(Closed(()));
            }
            if self.lossy {
                let value = items.pop_front().unwrap();
                evicted += self.push_evicting(value).is_some() as usize;
                continue;
            }
            if !self.room() && !self.wait_for_space() {
                return Err(Closed(()));
            }
            while let Some(value) = items.pop_front() {
                self.put(value);
                if items.is_empty() || !self.room() {
                    break;
                }
            }
            self.publish();
        }
        Ok(evicted)
    }

    /// Waits until the consumer has made room (true), or has closed, or the halt was set
    /// while there is still no room (false).
    #[cold]
    #[inline(never)]
    fn wait_for_space(&mut self) -> bool {
        let ring = &*self.ring;
        let (stamp, free) = (ring.stamp(self.slot), free_for(self.tail));
        let (tail, capacity) = (self.tail, self.capacity);
        // Looking at once (capacity 1, or ends told to): the slot's stamp, which the write
        // needs next. Else the consumer's head, so that the wait ends with all the room made
        // meanwhile and the messages that fill it need no look at all: waiting on the stamp
        // there would end a wait per message, each with its settle.
        let by_stamp = self.spin.settle == 0;
        let head_cache = &mut self.head_cache;
        let halt = self.halt.as_ref();
        let mut ready = || {
            let room = if by_stamp {
                stamp.load(Acquire) == free
            } else {
                *head_cache = ring.consumer.head.load(Acquire);
                tail - *head_cache < capacity
            };
            room || ring.flags.consumer_closed.load(Acquire) || halted(halt)
        };
        if !ready() && !spin_until(self.spin, &mut ready) {
            park_until(|| std::iter::once(&*ring.space), ring.asymmetric, ready);
        }
        // The consumer drains the queue when it closes: a message put into the room that the
        // drain made would never be read, so a close wins over room.
        !ring.flags.consumer_closed.load(Acquire) && self.room()
    }

    /// Drop-oldest write. The queue has `capacity + 2` slots, and the order is: write the new
    /// message into a free slot, publish it, then evict the oldest if that made `capacity + 1`.
    /// Publishing before evicting means the producer never makes the queue look emptier than it
    /// was, so a consumer that saw a message can always take one; the one extra message is
    /// inside only between the two steps, and the consumer never counts more than `capacity`
    /// ([`crate::Consumer::len`]).
    ///
    /// Eviction races with the consumer for the oldest message, so on these queues both ends
    /// claim a message by compare-and-swap on `head` before touching its slot, and whoever wins
    /// copies it out. The consumer copies *after* its claim, so the producer must not reuse a
    /// slot whose message the consumer has claimed but not finished copying: the consumer
    /// announces that index in `reading`. The slot being written next last held index
    /// `tail - slots`, which is below every head the producer has loaded (the queue never holds
    /// more than `capacity + 1 < slots`); so if the consumer was copying it, it had announced
    /// it before the claim that moved head past it, and the `reading` loaded after that head
    /// shows it. Only then does the producer wait, for one copy (tens of nanoseconds, unless
    /// the consumer is preempted mid-copy); with two spare slots that needs the producer to
    /// write twice during one copy.
    fn push_evicting(&mut self, value: T) -> Option<T> {
        let slots = self.slots as u64;
        if self.tail >= slots && self.reading_cache == self.tail - slots {
            self.wait_for_copy(self.tail - slots);
        }
        self.write(value);
        if self.tail - self.head_cache <= self.capacity {
            return None;
        }
        let line = &self.ring.consumer;
        let mut evicted = None;
        let mut head = line.head.load(Acquire);
        while self.tail - head > self.capacity {
            match line.head.compare_exchange(head, head + 1, AcqRel, Acquire) {
                Ok(_) => {
                    // Safety: the claim made this slot ours; the consumer cannot claim it now.
                    evicted = Some(unsafe { self.ring.read((head % slots) as usize) });
                    head += 1;
                }
                Err(now) => head = now, // the consumer took it first
            }
        }
        self.head_cache = head;
        self.reading_cache = line.reading.load(Acquire);
        evicted
    }

    /// Waits until the consumer has finished copying out index `index`.
    #[cold]
    #[inline(never)]
    fn wait_for_copy(&mut self, index: u64) {
        let mut spins = 0u32;
        loop {
            self.reading_cache = self.ring.consumer.reading.load(Acquire);
            if self.reading_cache != index {
                return;
            }
            spins += 1;
            if spins.is_multiple_of(64) {
                thread::yield_now();
            } else {
                spin_loop();
            }
        }
    }
}

impl<T> Drop for Producer<T> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<T> std::fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("capacity", &self.capacity)
            .field("drop_oldest", &self.lossy)
            .field("tail", &self.tail)
            .field("closed", &self.closed)
            .finish()
    }
}
