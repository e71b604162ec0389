//! The shared part of a queue: the slots with their stamps, the two indices, the close flags
//! and the two parking spots, each group on its own cache line.

use std::mem::MaybeUninit;
use std::sync::atomic::Ordering::Relaxed;

use crate::sync::{AtomicBool, AtomicU64, UnsafeCell};
use crate::wait::Waiter;

/// Aligned (and so padded) to 128 bytes: two cache lines, because Intel's spatial prefetcher
/// fetches lines in pairs, so 64 would still let two neighbours disturb each other.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// `reading` when the consumer is not copying a message out (drop-oldest queues only).
pub(crate) const IDLE: u64 = u64::MAX;

/// What the consumer writes on every message.
#[derive(Debug, Default)]
pub(crate) struct ConsumerLine {
    /// Index of the next message to read; messages `head..tail` are in the queue. Only the
    /// consumer moves it, except on a drop-oldest queue, where the producer may also move it
    /// (by compare-and-swap) to evict the oldest message.
    pub(crate) head: AtomicU64,
    /// Drop-oldest queues only: the index whose slot the consumer is copying out, else
    /// [`IDLE`]. The producer must not overwrite that slot until the copy is done.
    pub(crate) reading: AtomicU64,
}

/// Written once each, read on every message: on a line of their own, which therefore stays
/// in both ends' caches.
#[derive(Debug, Default)]
pub(crate) struct Flags {
    pub(crate) producer_closed: AtomicBool,
    pub(crate) consumer_closed: AtomicBool,
    /// Which ends have finished closing ([`PRODUCER_DONE`], [`CONSUMER_DONE`]), set by a
    /// read-modify-write so that exactly one end, the second, sees the other's bit and counts
    /// what is still inside (see `Consumer::close`).
    pub(crate) done: AtomicU64,
}

/// The producer has closed: it writes nothing more.
pub(crate) const PRODUCER_DONE: u64 = 1;
/// The consumer has closed and drained the queue: it takes nothing more.
pub(crate) const CONSUMER_DONE: u64 = 2;

/// One message's place, with the stamp that hands it between the ends of a blocking queue.
///
/// The stamp says whose turn the slot is, for the index that uses it next: [`free_for`]`(i)`
/// while the producer may write index `i` into it, [`holding`]`(i)` once index `i` is in it.
/// A blocking queue's ends look at the stamp, not at the other end's index: the look then
/// fetches the very cache lines the message travels in, so a hand-over moves the slot's lines
/// and nothing else, where an index look moves the index's line first and the slot's after it.
/// The stamp comes last, on the line the message's last bytes share, so that it is written
/// after them; a message of up to 56 bytes makes the slot one line, so that a
/// hand-over moves one line and the consumer does not miss again on the first line after it
/// saw the stamp on the second ([`slot_bytes`]). Drop-oldest queues keep to the indices (their
/// producer takes messages back).
#[repr(C, align(64))]
pub(crate) struct Slot<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    pub(crate) stamp: AtomicU64,
}

/// How many bytes a slot of a queue of `T` takes: 64 (one cache line) for a `T` of up to 56 bytes.
pub fn slot_bytes<T>() -> usize {
    std::mem::size_of::<Slot<T>>()
}

/// The stamp of a slot that index `i` may be written into.
#[inline(always)]
pub(crate) const fn free_for(i: u64) -> u64 {
    2 * i
}

/// The stamp of a slot that holds index `i`. Odd, so that it never equals a [`free_for`]
/// stamp, not even at capacity 1, where index `i + 1` uses the slot next.
#[inline(always)]
pub(crate) const fn holding(i: u64) -> u64 {
    2 * i + 1
}

/// Indices are 64-bit and only ever grow (they do not wrap in practice: 2^64 messages), so
/// `tail - head` is the number of messages inside and the slot of index `i` is `i % slots`.
pub(crate) struct Ring<T> {
    /// Index of the next message the producer will write, published after the slot is written.
    pub(crate) tail: Padded<AtomicU64>,
    pub(crate) consumer: Padded<ConsumerLine>,
    pub(crate) flags: Padded<Flags>,
    /// The consumer parks here waiting for a message.
    pub(crate) data: Padded<Waiter>,
    /// The producer parks here waiting for room (blocking queues only).
    pub(crate) space: Padded<Waiter>,
    slots: Box<[Slot<T>]>,
    /// The queue's handshake is membarrier (see `wait`); fixed at creation, so both ends agree.
    pub(crate) asymmetric: bool,
}

// Safety: a slot is only written by the producer and read by the consumer (or, on eviction,
// by the producer), never both at once: the stamps (blocking queues) or the indices
// (drop-oldest) hand each slot over with release/acquire.
unsafe impl<T: Send> Send for Ring<T> {}
unsafe impl<T: Send> Sync for Ring<T> {}

impl<T> Ring<T> {
    pub(crate) fn new(slots: usize, asymmetric: bool) -> Self {
        Ring {
            tail: Padded::default(),
            consumer: Padded(ConsumerLine {
                head: AtomicU64::new(0),
                reading: AtomicU64::new(IDLE),
            }),
            flags: Padded::default(),
            data: Padded::default(),
            space: Padded::default(),
            slots: (0..slots as u64)
                .map(|i| Slot {
                    value: UnsafeCell::new(MaybeUninit::uninit()),
                    stamp: AtomicU64::new(free_for(i)),
                })
                .collect(),
            asymmetric,
        }
    }

    pub(crate) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// The stamp of slot `i` (blocking queues).
    #[inline(always)]
    pub(crate) fn stamp(&self, i: usize) -> &AtomicU64 {
        &self.slots[i].stamp
    }

    /// Safety: the caller owns slot `i` (it is empty and only this thread may write it).
    #[inline(always)]
    pub(crate) unsafe fn write(&self, i: usize, value: T) {
        debug_assert!(i < self.slots.len());
        unsafe { self.slots.get_unchecked(i).value.with_mut(|p| (*p).write(value)) };
    }

    /// [`Ring::write`] of a value that `init` writes in place (and returns, as
    /// `MaybeUninit::write` does). Panics if `init` returns anything but the slot.
    ///
    /// Safety: as [`Ring::write`].
    #[inline(always)]
    pub(crate) unsafe fn write_with(&self, i: usize, init: impl FnOnce(&mut MaybeUninit<T>) -> &mut T) {
        debug_assert!(i < self.slots.len());
        unsafe {
            self.slots
                .get_unchecked(i)
                .value
                .with_mut(|p| init_checked(&mut *p, init))
        };
    }

    /// Safety: the caller owns slot `i`, which holds a message; it is empty afterwards.
    #[inline(always)]
    pub(crate) unsafe fn read(&self, i: usize) -> T {
        debug_assert!(i < self.slots.len());
        unsafe { self.slots.get_unchecked(i).value.with(|p| (*p).assume_init_read()) }
    }

    /// Safety: slot `i` holds a message that nobody else touches while the borrow lives.
    #[inline(always)]
    pub(crate) unsafe fn get(&self, i: usize) -> &T {
        debug_assert!(i < self.slots.len());
        unsafe { self.slots.get_unchecked(i).value.with(|p| (*p).assume_init_ref()) }
    }
}

impl<T> Drop for Ring<T> {
    /// Both ends are gone: drop what is still inside (what a consumer left unread, or what a
    /// producer slipped in while the consumer was closing).
    fn drop(&mut self) {
        let head = self.consumer.head.load(Relaxed);
        let tail = self.tail.load(Relaxed);
        for i in head..tail {
            drop(unsafe { self.read((i % self.slots.len() as u64) as usize) });
        }
    }
}

/// Runs `init` on `slot` and checks that it returned the slot itself, initialised (anything
/// else would leave the slot uninitialised while it is handed on as a value).
#[inline(always)]
pub(crate) fn init_checked<T>(slot: &mut MaybeUninit<T>, init: impl FnOnce(&mut MaybeUninit<T>) -> &mut T) {
    let at = slot.as_mut_ptr();
    let written: *mut T = init(slot);
    assert!(
        std::ptr::eq(written, at),
        "push_with: init must return the slot it was given"
    );
}
