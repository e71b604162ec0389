//! The consuming side of a link: attaches to the file, makes each published slot a
//! [`Message`], and releases the slot when the message no longer needs it.
//!
//! A payload up to `copy_limit` bytes is copied into an ordinary message and its slot released
//! at once (a small copy costs less than keeping a slot). A larger one is read in place: the
//! message's payload is the slot itself, and dropping the message (and every clone of it),
//! on whatever thread, releases the slot.

use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use smx_box::{ForeignVTable, Message};

use crate::error::ShmError;
use crate::ring::{
    self, CONSUMER_CLOSED, CONSUMER_RUNNING, CUT_NONE, Cursor, PRODUCER_ENDED, PRODUCER_FAILED, Peer, futex_wake,
    published_stamp, wait_for, wake_if_sleeping,
};
use crate::segment::Segment;

/// How the producer's side ended, as the consumer saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducerEnd {
    /// End of stream: its input ended, everything published was taken.
    Ended,
    /// It failed or was stopped, ending the stream early; everything published was taken.
    Failed,
    /// Its process died without ending the stream; everything published was taken.
    Died,
    /// Its run stopped and it cut the ring: what was published from the cut on is its `left`,
    /// and none of it was taken.
    Stopped,
}

impl ProducerEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            ProducerEnd::Ended => "end of stream",
            ProducerEnd::Failed => "producer failed",
            ProducerEnd::Died => "producer died",
            ProducerEnd::Stopped => "producer stopped",
        }
    }
}

/// The consumer's books: `received` = `copied` + `in_place`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConsumerBooks {
    pub received: u64,
    pub copied: u64,
    pub in_place: u64,
    pub end: Option<ProducerEnd>,
}

/// What [`Consumer::next`] found.
#[derive(Debug)]
pub enum Next {
    Message(Message),
    /// The stream is over and drained.
    Ended(ProducerEnd),
    /// Nothing within the wait given.
    Idle,
    /// The run stops.
    Stopped,
}

/// Payloads up to this many bytes are copied by default (a page: copying it costs about as
/// much as the bookkeeping of a slot held in place).
pub const COPY_LIMIT: usize = 4096;

pub struct Consumer {
    seg: Arc<Segment>,
    /// The next position to take (the positions taken).
    next: Cursor,
    producer: Peer,
    clock_offset: u64,
    /// This side's barrier after a release is light ([`ring::SleepLine::announce_light`]).
    light: bool,
    copy_limit: usize,
    books: ConsumerBooks,
    closed: bool,
}

enum Wake {
    Data,
    End(ProducerEnd),
    Stopped,
    Idle,
}

impl Consumer {
    /// Attaches to the link file at `path` once its producer made it (within `timeout`).
    pub fn open(path: &Path, timeout: Duration, stop: &dyn Fn() -> bool) -> Result<Consumer, ShmError> {
        let seg = Segment::open(path, timeout, stop)?;
        let h = seg.header();
        let me = std::process::id();
        if let Err(pid) = h
            .consumer_pid
            .compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst)
        {
            return Err(ShmError::Taken {
                path: path.to_path_buf(),
                pid,
            });
        }
        let light = h.consumer_sleeps.announce_light();
        h.consumer_state.store(CONSUMER_RUNNING, Ordering::SeqCst);
        let producer = Peer::watch(h.producer_pid.load(Ordering::Acquire));
        Ok(Consumer {
            seg: Arc::new(seg),
            next: Cursor::START,
            producer,
            clock_offset: ring::clock_offset(),
            light,
            copy_limit: COPY_LIMIT,
            books: ConsumerBooks::default(),
            closed: false,
        })
    }

    /// Payloads above `limit` bytes are read in place, the others copied.
    pub fn set_copy_limit(&mut self, limit: usize) {
        self.copy_limit = limit;
    }

    pub fn books(&self) -> ConsumerBooks {
        self.books
    }

    pub fn path(&self) -> &Path {
        self.seg.path()
    }

    /// Positions the producer has published so far: those taken, and those after them
    /// whose slots are stamped published (a look at each, for tests and onlookers; the
    /// consumer itself looks at the next slot only).
    pub fn published(&self) -> u64 {
        let capacity = self.capacity();
        let next = self.next.pos;
        (next..next + capacity)
            .find(|&pos| !self.is_published(pos))
            .unwrap_or(next + capacity)
    }

    /// Whether position `pos` is published in its slot (and not taken since).
    fn is_published(&self, pos: u64) -> bool {
        self.seg.descriptor(pos).stamp.load(Ordering::Acquire) == published_stamp(pos, self.capacity())
    }

    /// Whether the next position is published: a look at its slot's stamp.
    #[inline(always)]
    fn next_published(&self) -> bool {
        self.seg.slot_descriptor(self.next.slot).stamp.load(Ordering::Acquire) == self.next.published()
    }

    pub fn capacity(&self) -> u64 {
        self.seg.layout().capacity
    }

    /// The next message, waiting for it at most `wait` (`None`: until the stream ends or
    /// `stop`).
    pub fn next(&mut self, wait: Option<Duration>, stop: &dyn Fn() -> bool) -> Next {
        if let Some(end) = self.books.end {
            return Next::Ended(end);
        }
        if wait == Some(Duration::ZERO) {
            return self.poll(stop);
        }
        let deadline = wait.map(|w| std::time::Instant::now() + w);
        if self.next_published() {
            return self.take();
        }
        // Each look moves the slot's line to this core while the producer may be writing it:
        // on a ring with room for more than one message the looks after the first are spaced
        // out, so that several messages gather per look (as the in-process channels settle,
        // `smx_spsc::default_settle`).
        let settle = (2 * self.capacity().saturating_sub(1)).clamp(1, 32) as u32;
        loop {
            let h = self.seg.header();
            let (desc, want) = (self.seg.slot_descriptor(self.next.slot), self.next.published());
            let ready = || desc.stamp.load(Ordering::Acquire) == want;
            let shared = ring::sharing_a_core(&h.consumer_sleeps, &h.producer_sleeps);
            let woke = wait_for(
                &h.producer.data_word,
                (&h.consumer_sleeps, &h.producer_sleeps),
                (settle, shared),
                ready,
                || self.why_not(stop, deadline),
            );
            match woke {
                Ok(()) | Err(Wake::Data) => {
                    if self.next_published() {
                        return self.take();
                    }
                }
                Err(Wake::End(end)) => {
                    self.end(end);
                    if end == ProducerEnd::Died {
                        // Its creator cannot remove the file any more.
                        self.seg.unlink();
                    }
                    return Next::Ended(end);
                }
                Err(Wake::Stopped) => return Next::Stopped,
                Err(Wake::Idle) => return Next::Idle,
            }
        }
    }

    /// [`Consumer::next`] without waiting: a message when one is published, the end when the
    /// producer ended (by its state word; its death is noticed by the waits), else `Idle`.
    fn poll(&mut self, stop: &dyn Fn() -> bool) -> Next {
        if self.next_published() {
            return self.take();
        }
        match self.producer_said() {
            // Published between the two loads: taken first, so nothing is left behind.
            Some(_) if self.next_published() => self.take(),
            Some(end) => {
                self.end(end);
                Next::Ended(end)
            }
            None if stop() => Next::Stopped,
            None => Next::Idle,
        }
    }

    /// How the producer ended the stream by its state word, if it did.
    fn producer_said(&self) -> Option<ProducerEnd> {
        match self.seg.header().producer_state.load(Ordering::SeqCst) {
            PRODUCER_ENDED => Some(ProducerEnd::Ended),
            PRODUCER_FAILED => Some(ProducerEnd::Failed),
            _ => None,
        }
    }

    /// Tells the producer that nothing more will be taken (the box's consumers ended, or the
    /// run stops). Idempotent.
    pub fn close(&mut self) {
        if !self.closed {
            self.closed = true;
            let h = self.seg.header();
            // What it took is final: the answer to a cut, should the producer make one.
            h.consumer
                .answer
                .store(ring::answer_word(self.next.pos), Ordering::Release);
            h.consumer_state.store(CONSUMER_CLOSED, Ordering::SeqCst);
            futex_wake(&h.release.space_word);
        }
    }

    /// Why the wait is over although nothing is ready. A producer that ended or died may have
    /// published more since `ready` looked: then `Data`, so nothing published is left behind.
    /// A cut found here ends the stream: the producer waits for the answer.
    fn why_not(&self, stop: &dyn Fn() -> bool, deadline: Option<std::time::Instant>) -> Option<Wake> {
        if self.cut() {
            return Some(Wake::End(ProducerEnd::Stopped));
        }
        let end = self
            .producer_said()
            .or_else(|| (!self.producer.alive()).then_some(ProducerEnd::Died));
        if let Some(end) = end {
            return Some(if self.next_published() {
                Wake::Data
            } else {
                Wake::End(end)
            });
        }
        if stop() {
            return Some(Wake::Stopped);
        }
        deadline.filter(|d| std::time::Instant::now() >= *d).map(|_| Wake::Idle)
    }

    /// [`Consumer::next`] without waiting, of a payload of up to `copy_limit` bytes: lends it
    /// where it lies to `see` (which copies it where it goes, a message built in a channel's
    /// slot) and frees its slot. `None`, with nothing taken, when no message is published now,
    /// the next one is read in place, or the producer's cut ended the stream before it;
    /// [`Consumer::next`] then says what there is.
    pub fn take_small<R>(&mut self, see: impl FnOnce(u64, u64, &[u8]) -> R) -> Option<R> {
        if self.books.end.is_some() || !self.next_published() {
            return None;
        }
        let slot = self.slot();
        if slot.len > self.copy_limit {
            return None;
        }
        if self.cut() {
            self.end(ProducerEnd::Stopped);
            return None;
        }
        // SAFETY: the slot is published and not released: the producer does not touch it.
        let seen = see(slot.seq, slot.sent_ns, unsafe {
            std::slice::from_raw_parts(slot.at, slot.len)
        });
        self.books.copied += 1;
        self.advance(true);
        Some(seen)
    }

    /// Makes the message of position `next` (published) and moves on; the end instead when
    /// the producer cut the ring before it (then nothing more is taken).
    fn take(&mut self) -> Next {
        if self.cut() {
            self.end(ProducerEnd::Stopped);
            return Next::Ended(ProducerEnd::Stopped);
        }
        let pos = self.next;
        let Slot { seq, sent_ns, len, at } = self.slot();
        let copied = len <= self.copy_limit;
        let msg = if copied {
            // SAFETY: the slot is published and not released: the producer does not touch it.
            let bytes = unsafe { std::slice::from_raw_parts(at, len) };
            self.books.copied += 1;
            Message::new(seq, sent_ns, bytes)
        } else {
            self.books.in_place += 1;
            let lease = Arc::new(Lease {
                seg: Arc::clone(&self.seg),
                pos,
                at,
                len,
            });
            let object = NonNull::new(Box::into_raw(Box::new(lease))).expect("a box is never null");
            // SAFETY: a live `Box<Arc<Lease>>` that LEASE's functions take; shareable.
            unsafe { Message::from_foreign(seq, sent_ns, object.cast(), &LEASE) }
        };
        self.advance(copied);
        Next::Message(msg)
    }

    /// Whether the producer cut the ring: one look at the cut word, before each message is
    /// taken. No store precedes it and no fence: the answer to a cut is this side's own count
    /// ([`Consumer::end`]), which covers every message handed on before the look, in program
    /// order, whatever the producer saw of `taken`.
    #[inline(always)]
    fn cut(&self) -> bool {
        self.seg.header().cut.load(Ordering::Relaxed) != CUT_NONE
    }

    /// Ends the stream: nothing more is taken, and the count of what was taken, final, is the
    /// answer to the producer's cut (made or to come), which the producer waits for.
    #[cold]
    fn end(&mut self, end: ProducerEnd) {
        self.books.end = Some(end);
        let h = self.seg.header();
        h.consumer
            .answer
            .store(ring::answer_word(self.next.pos), Ordering::Release);
        futex_wake(&h.release.space_word);
    }

    /// The published message at the next position, as its descriptor gives it.
    fn slot(&self) -> Slot {
        let layout = self.seg.layout();
        let desc = self.seg.slot_descriptor(self.next.slot);
        let created = desc.created_mono_ns.load(Ordering::Relaxed);
        let len = (desc.len.load(Ordering::Relaxed) as usize).min(layout.max_payload as usize);
        Slot {
            seq: desc.seq.load(Ordering::Relaxed),
            sent_ns: if created == 0 {
                0
            } else {
                created.saturating_sub(self.clock_offset).max(1)
            },
            len,
            at: self.seg.at(layout.payload_offset(self.next.slot, len)) as *const u8,
        }
    }

    /// Moves on from the message at `next`, just taken; `release`: its slot is free now (its
    /// payload was copied), else its message's last drop frees it.
    fn advance(&mut self, release_now: bool) {
        let pos = self.next;
        self.next.advance(self.seg.layout().capacity);
        self.books.received += 1;
        let h = self.seg.header();
        h.consumer.taken.store(self.next.pos, Ordering::Release);
        if release_now {
            release(&self.seg, pos);
        }
        wake_if_sleeping(&h.producer_sleeps, &h.release.space_word, self.light);
    }
}

/// A published message in its slot.
struct Slot {
    seq: u64,
    sent_ns: u64,
    len: usize,
    at: *const u8,
}

impl Drop for Consumer {
    fn drop(&mut self) {
        self.close();
    }
}

/// Frees the slot of `pos`: stamps it free for the position a lap later.
fn release(seg: &Segment, pos: Cursor) {
    seg.slot_descriptor(pos.slot)
        .stamp
        .store(pos.free() + 2, Ordering::Release);
}

/// A slot read in place: alive while any message (or clone) refers to it.
struct Lease {
    seg: Arc<Segment>,
    pos: Cursor,
    at: *const u8,
    len: usize,
}

// SAFETY: the bytes are not written while the lease lives (the slot is not released).
unsafe impl Send for Lease {}
unsafe impl Sync for Lease {}

impl Drop for Lease {
    fn drop(&mut self) {
        release(&self.seg, self.pos);
        let h = self.seg.header();
        let light = h.consumer_sleeps.light.load(Ordering::Relaxed) != 0;
        wake_if_sleeping(&h.producer_sleeps, &h.release.space_word, light);
    }
}

static LEASE: ForeignVTable = ForeignVTable {
    bytes: lease_bytes,
    clone: lease_clone,
    drop: lease_drop,
};

unsafe fn lease_bytes(object: NonNull<()>) -> (*const u8, usize) {
    // SAFETY: made by `take` as a `Box<Arc<Lease>>`.
    let lease = unsafe { &*(object.as_ptr() as *const Arc<Lease>) };
    (lease.at, lease.len)
}

unsafe fn lease_clone(object: NonNull<()>) -> NonNull<()> {
    // SAFETY: as in `lease_bytes`. A clone shares the slot: it is released after the last.
    let lease = unsafe { &*(object.as_ptr() as *const Arc<Lease>) };
    NonNull::new(Box::into_raw(Box::new(Arc::clone(lease))))
        .expect("a box is never null")
        .cast()
}

unsafe fn lease_drop(object: NonNull<()>) {
    // SAFETY: as in `lease_bytes`, dropped once.
    drop(unsafe { Box::from_raw(object.as_ptr() as *mut Arc<Lease>) });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::producer::Producer;

    /// A consumer in its wait for data finds the cut when the producer wakes it, and
    /// answers with what it took: the wait is where a consumer with nothing to take answers.
    #[test]
    fn a_consumer_waiting_for_data_answers_the_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut");
        let never = || false;
        let mut producer = Producer::create(&path, 4, 64, Duration::from_secs(5)).unwrap();
        let mut consumer = Consumer::open(&path, Duration::from_secs(5), &never).unwrap();
        producer.send(0, 0, b"x", &never).unwrap();
        assert!(matches!(consumer.next(None, &never), Next::Message(_)));
        let seg = Arc::clone(&consumer.seg);
        let waiter = std::thread::spawn(move || {
            let end = consumer.next(None, &|| false);
            (end, consumer)
        });
        let h = seg.header();
        h.cut.store(ring::CUT_PENDING, Ordering::SeqCst);
        futex_wake(&h.producer.data_word);
        let (end, consumer) = waiter.join().unwrap();
        assert!(matches!(end, Next::Ended(ProducerEnd::Stopped)), "{end:?}");
        assert_eq!(h.consumer.answer.load(Ordering::Acquire), ring::answer_word(1));
        assert_eq!(consumer.books().received, 1);
        drop(producer);
    }
}
