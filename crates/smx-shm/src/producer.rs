//! The producing side of a link: creates the file, copies each payload into a slot once,
//! publishes it, and keeps the books of what it published.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::error::ShmError;
use crate::ring::{
    self, ANSWER_WAIT, CONSUMER_CLOSED, CUT_PENDING, Cursor, PRODUCER_ENDED, PRODUCER_FAILED, Peer, free_stamp,
    futex_wake, wait_for, wake_if_sleeping,
};
use crate::segment::Segment;

/// How the consumer's side ended, as the producer saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerEnd {
    /// It took every message published.
    Drained,
    /// It closed (its own consumers ended) with messages still in the ring: those are `left`.
    Closed,
    /// Its process died: what it had not taken is `lost`.
    Died,
    /// No consumer attached within `timeout`: everything published is `lost`.
    Absent,
    /// The run stopped first: what the consumer had not taken when the producer cut the ring
    /// (after a short grace to take it) is `left`, and the consumer takes none of it.
    Stopped,
}

impl ConsumerEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            ConsumerEnd::Drained => "drained",
            ConsumerEnd::Closed => "closed",
            ConsumerEnd::Died => "died",
            ConsumerEnd::Absent => "absent",
            ConsumerEnd::Stopped => "stopped",
        }
    }
}

/// The producer's books: `written` = what the consumer took + `left` + `lost`, exactly: once
/// they are settled the consumer takes nothing more that they count as `left` or `lost`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProducerBooks {
    /// Messages published into the ring.
    pub written: u64,
    /// Published, not taken, because the consumer closed or the run stopped.
    pub left: u64,
    /// Published, not taken, because the consumer died or never came.
    pub lost: u64,
    /// Times the producer found the ring full and waited.
    pub full_waits: u64,
    pub consumer: Option<ConsumerEnd>,
    /// After a stop the consumer did not answer the cut within [`ANSWER_WAIT`] (its process
    /// frozen while it handed a message on): `left` is from its last count of what it took,
    /// and the one message it was handing on may be counted both as taken and as left.
    pub cut_unanswered: bool,
}

/// What came of one [`Producer::publish`]: [`Sent`] with no error value to build or drop.
enum Publication {
    Published,
    Over(ConsumerEnd),
    TooLarge,
}

/// What became of one [`Producer::send`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    Published,
    /// The consumer will take nothing more: the message was not published, the link is over.
    Over(ConsumerEnd),
}

pub struct Producer {
    seg: Arc<Segment>,
    /// The next position to publish (the positions published).
    head: Cursor,
    /// Slots from `head` on that were free at the last look: a free slot stays free until
    /// this producer writes it, so they are written without another look at their stamps.
    known_free: u64,
    created: Instant,
    timeout: Duration,
    clock_offset: u64,
    /// This side's barrier after a publication is light ([`ring::SleepLine::announce_light`]).
    light: bool,
    books: ProducerBooks,
    finished: bool,
    /// The slots hold less than `max_payload` asked, for want of room in the file system.
    shrunk: bool,
    /// The consumer's process, once it attached.
    consumer: std::sync::OnceLock<Peer>,
}

impl Producer {
    /// Creates the link file at `path`: `capacity` slots of at most `max_payload` bytes; a
    /// consumer has `timeout` to attach.
    pub fn create(path: &Path, capacity: u64, max_payload: u64, timeout: Duration) -> Result<Producer, ShmError> {
        Producer::make(
            Segment::create(path, capacity, max_payload, false)?,
            max_payload,
            timeout,
        )
    }

    /// [`Producer::create`], with smaller slots than `max_payload` where the file system has
    /// too little room for the ring (more than half its free room); none below 64 KiB.
    /// [`Producer::max_payload`] says what the slots hold.
    pub fn create_to_fit(
        path: &Path,
        capacity: u64,
        max_payload: u64,
        timeout: Duration,
    ) -> Result<Producer, ShmError> {
        Producer::make(
            Segment::create(path, capacity, max_payload, true)?,
            max_payload,
            timeout,
        )
    }

    fn make(seg: Segment, asked: u64, timeout: Duration) -> Result<Producer, ShmError> {
        let light = seg.header().producer_sleeps.announce_light();
        Ok(Producer {
            shrunk: seg.layout().max_payload < asked,
            consumer: std::sync::OnceLock::new(),
            seg: Arc::new(seg),
            light,
            head: Cursor::START,
            known_free: 0,
            created: Instant::now(),
            timeout,
            clock_offset: ring::clock_offset(),
            books: ProducerBooks::default(),
            finished: false,
        })
    }

    pub fn books(&self) -> ProducerBooks {
        self.books
    }

    /// The largest payload a slot holds.
    pub fn max_payload(&self) -> u64 {
        self.seg.layout().max_payload
    }

    /// Whether the slots hold less than asked, for want of room ([`Producer::create_to_fit`]).
    pub fn shrunk(&self) -> bool {
        self.shrunk
    }

    /// Waits until a consumer attached, at most what is left of `timeout` since the file was
    /// made, or until `stop`; whether one attached. Its process's nets and the producer's then
    /// start together, as the nets of one process do: a producer that ran ahead alone would
    /// have overwritten what a decoupled channel holds before anyone read it.
    pub fn wait_for_consumer(&self, stop: &dyn Fn() -> bool) -> bool {
        let h = self.seg.header();
        loop {
            if h.consumer_pid.load(Ordering::Acquire) != 0 {
                return true;
            }
            if stop() || self.created.elapsed() >= self.timeout {
                return false;
            }
            std::thread::sleep(ATTACH_LOOK);
        }
    }

    pub fn path(&self) -> &Path {
        self.seg.path()
    }

    /// Copies `payload` into the next slot and publishes it, waiting while the ring is full
    /// (as long as the consumer lives, and `stop` is false).
    pub fn send(&mut self, seq: u64, sent_ns: u64, payload: &[u8], stop: &dyn Fn() -> bool) -> Result<Sent, ShmError> {
        self.send_in_place(seq, sent_ns, payload.len(), |slot| copy_into_slot(slot, payload), stop)
    }

    /// [`Producer::send`] of a payload of `len` bytes that `fill` writes straight into its
    /// slot, so it is written once, where the consumer reads it (a message built in place).
    pub fn send_in_place(
        &mut self,
        seq: u64,
        sent_ns: u64,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
        stop: &dyn Fn() -> bool,
    ) -> Result<Sent, ShmError> {
        match self.publish(seq, sent_ns, len, fill, stop) {
            Publication::Published => Ok(Sent::Published),
            Publication::Over(end) => Ok(Sent::Over(self.settle(end))),
            Publication::TooLarge => Err(ShmError::TooLarge {
                len,
                max_payload: self.seg.layout().max_payload,
                shrunk: self.shrunk,
            }),
        }
    }

    /// [`Producer::send_in_place`] for a message a box's feeder hands over on its write: whether
    /// it was published. Anything else (a payload too large, a consumer that will take nothing
    /// more, the run's stop) returns before `fill` runs and books no message, so that the caller
    /// can hand the message to [`Producer::send_in_place`] to be booked and reported. It is
    /// the path of every message of a chained producer, so it builds no error value.
    #[inline]
    pub fn pass_in_place(
        &mut self,
        seq: u64,
        sent_ns: u64,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
        stop: impl Fn() -> bool,
    ) -> bool {
        matches!(self.publish(seq, sent_ns, len, fill, stop), Publication::Published)
    }

    /// Waits for the next slot, lets `fill` write the payload there and publishes it.
    #[inline(always)]
    fn publish(
        &mut self,
        seq: u64,
        sent_ns: u64,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
        stop: impl Fn() -> bool,
    ) -> Publication {
        let layout = self.seg.layout();
        if len as u64 > layout.max_payload {
            return Publication::TooLarge;
        }
        // The cheap signs first: the consumer's liveness is a look into /proc, paid only while
        // waiting for room (a dead consumer takes nothing, so its ring fills and the wait asks).
        if let Some(end) = self.closed_or_stopped(&stop) {
            return Publication::Over(end);
        }
        let h = self.seg.header();
        let head = self.head;
        let desc = self.seg.slot_descriptor(head.slot);
        let free = head.free();
        if self.known_free == 0 {
            self.known_free = self.seg.run_stamped(head, LOOK_AHEAD, Cursor::free);
            // Caught up with the consumer: room for a batch first, as the in-process queue
            // gathers it (`smx_spsc`), so as not to stay at its heels. On a shared core the
            // consumer cannot free a batch while this side spins.
            let batch = batch_of(layout.capacity).min(LOOK_AHEAD);
            if self.known_free < batch && !ring::sharing_a_core(&h.producer_sleeps, &h.consumer_sleeps) {
                wait_for_batch(&self.seg, head.pos, batch);
                self.known_free = self.seg.run_stamped(head, LOOK_AHEAD, Cursor::free);
            }
        }
        if self.known_free == 0 {
            self.books.full_waits += 1;
            let shared = ring::sharing_a_core(&h.producer_sleeps, &h.consumer_sleeps);
            let has_room = || desc.stamp.load(Ordering::Acquire) == free;
            if let Err(end) = self.wait_on_space(shared, has_room, || self.over(&stop)) {
                return Publication::Over(end);
            }
            self.known_free = self.seg.run_stamped(head, LOOK_AHEAD, Cursor::free).max(1);
        }
        // SAFETY: the slot of `head` is free (stamped so by its release) and lies inside the
        // mapping, with room for `max_payload` bytes; only this producer writes it until it is
        // published.
        fill(unsafe { std::slice::from_raw_parts_mut(self.seg.at(layout.payload_offset(head.slot, len)), len) });
        desc.seq.store(seq, Ordering::Relaxed);
        let created = if sent_ns == 0 {
            0
        } else {
            sent_ns.wrapping_add(self.clock_offset)
        };
        desc.created_mono_ns.store(created, Ordering::Relaxed);
        desc.len.store(len as u64, Ordering::Relaxed);
        desc.stamp.store(head.published(), Ordering::Release);
        // The slot a few positions on was last written by the consumer's release: its line
        // is asked for now, so that the look at its stamp there does not wait for it.
        let ahead = head.slot_ahead(ring::FETCH_AHEAD, layout.capacity);
        ring::prefetch_to_write(self.seg.at(layout.slot_offset(ahead)));
        self.head.advance(layout.capacity);
        self.known_free -= 1;
        self.books.written += 1;
        wake_if_sleeping(&h.consumer_sleeps, &h.producer.data_word, self.light);
        Publication::Published
    }

    /// Ends the stream (`failed`: abnormally) and waits until the consumer took everything,
    /// closed, died, or never came within `timeout`; on `stop`, a grace to take what is in
    /// the ring, then the cut. Then removes the file. Idempotent.
    pub fn finish(&mut self, failed: bool, stop: &dyn Fn() -> bool) -> ProducerBooks {
        if self.finished {
            return self.books;
        }
        let h = self.seg.header();
        let state = if failed { PRODUCER_FAILED } else { PRODUCER_ENDED };
        h.producer_state.store(state, Ordering::SeqCst);
        futex_wake(&h.producer.data_word);
        if self.books.consumer.is_none() {
            let end = match self.wait_until_drained(|| self.over(stop)) {
                Ok(()) => ConsumerEnd::Drained,
                Err(end) => end,
            };
            self.settle(end);
        }
        self.finished = true;
        self.seg.unlink();
        self.books
    }

    /// Waits until the consumer took every message published, or `give_up` says why not.
    fn wait_until_drained(&self, give_up: impl FnMut() -> Option<ConsumerEnd>) -> Result<(), ConsumerEnd> {
        let h = self.seg.header();
        let head = self.head.pos;
        let drained = || h.consumer.taken.load(Ordering::Acquire) >= head;
        // The consumer wakes the producer's space word when it takes a message while the
        // producer sleeps (and when it closes).
        self.wait_on_space(
            ring::sharing_a_core(&h.producer_sleeps, &h.consumer_sleeps),
            drained,
            give_up,
        )
    }

    /// Waits on the space word (which the consumer bumps as it takes, releases and closes)
    /// until `ready`, or until `give_up` names the consumer's end.
    fn wait_on_space(
        &self,
        shared: bool,
        ready: impl FnMut() -> bool,
        give_up: impl FnMut() -> Option<ConsumerEnd>,
    ) -> Result<(), ConsumerEnd> {
        let h = self.seg.header();
        wait_for(
            &h.release.space_word,
            (&h.producer_sleeps, &h.consumer_sleeps),
            (1, shared),
            ready,
            give_up,
        )
    }

    /// Why the consumer will take nothing more, if it will not: the end already booked, the
    /// consumer's close, or the run's stop. A few loads, no system call.
    #[inline(always)]
    fn closed_or_stopped(&self, stop: impl Fn() -> bool) -> Option<ConsumerEnd> {
        if self.books.consumer.is_some() {
            return self.books.consumer;
        }
        if self.seg.header().consumer_state.load(Ordering::Acquire) == CONSUMER_CLOSED {
            return Some(ConsumerEnd::Closed);
        }
        stop().then_some(ConsumerEnd::Stopped)
    }

    /// [`Producer::closed_or_stopped`], and before the stop the consumer's absence past
    /// `timeout` or its death: a look into /proc, for the waits, between their sleeps.
    fn over(&self, stop: impl Fn() -> bool) -> Option<ConsumerEnd> {
        self.closed_or_stopped(|| false)
            .or_else(|| self.absent_or_dead())
            .or_else(|| stop().then_some(ConsumerEnd::Stopped))
    }

    fn absent_or_dead(&self) -> Option<ConsumerEnd> {
        match self.seg.header().consumer_pid.load(Ordering::Acquire) {
            0 => (self.created.elapsed() >= self.timeout).then_some(ConsumerEnd::Absent),
            pid => (!self.consumer.get_or_init(|| Peer::watch(pid)).alive()).then_some(ConsumerEnd::Died),
        }
    }

    /// Books what was not taken when the consumer's side ended: after a stop, what it had not
    /// taken at the cut; else what it had taken by then, which is final (it closed or died, or
    /// took everything). Once booked, the books stay as they are.
    fn settle(&mut self, end: ConsumerEnd) -> ConsumerEnd {
        if let Some(booked) = self.books.consumer {
            return booked;
        }
        let end = if end == ConsumerEnd::Stopped {
            self.grace_after_stop()
        } else {
            end
        };
        let (end, taken) = if end == ConsumerEnd::Stopped {
            self.cut()
        } else {
            (end, self.seg.header().consumer.taken.load(Ordering::Acquire))
        };
        let untaken = self.head.pos.saturating_sub(taken);
        match end {
            ConsumerEnd::Drained => {}
            ConsumerEnd::Closed | ConsumerEnd::Stopped => self.books.left = untaken,
            ConsumerEnd::Died | ConsumerEnd::Absent => self.books.lost = untaken,
        }
        self.books.consumer = Some(end);
        end
    }

    /// After a stop the consumer's process may still run (a supervisor stops the processes
    /// upstream first) and take what is in the ring: it has [`STOP_GRACE`] to take it all,
    /// and a close or death meanwhile is its end. `Stopped` otherwise, also when it took
    /// everything: the run stopped first, and the cut that follows finds nothing left.
    fn grace_after_stop(&self) -> ConsumerEnd {
        let deadline = Instant::now() + STOP_GRACE;
        match self.wait_until_drained(|| self.over(|| Instant::now() >= deadline)) {
            Ok(()) | Err(ConsumerEnd::Stopped) => ConsumerEnd::Stopped,
            Err(end) => end,
        }
    }

    /// Cuts the ring on a stop and waits for the consumer's answer, the count of what it took
    /// (after which it takes nothing), at most [`ANSWER_WAIT`]; a close is an answer too, and
    /// its death ends the wait (what it had not taken is lost). Without an answer by then the
    /// consumer's last count of `taken` stands, and the books say the cut went unanswered.
    /// The consumer's end and what it took.
    fn cut(&mut self) -> (ConsumerEnd, u64) {
        let h = self.seg.header();
        h.cut.store(CUT_PENDING, Ordering::SeqCst);
        // A consumer asleep in its wait for data looks at the cut when it wakes.
        futex_wake(&h.producer.data_word);
        let answer = || h.consumer.answer.load(Ordering::Acquire);
        let closed = || h.consumer_state.load(Ordering::Acquire) == CONSUMER_CLOSED;
        let attached = h.consumer_pid.load(Ordering::SeqCst) != 0;
        let mut end = ConsumerEnd::Stopped;
        // No consumer attached: one that attaches later finds the cut before its first take.
        if attached && answer() == 0 && !closed() {
            let deadline = Instant::now() + ANSWER_WAIT;
            let shared = ring::sharing_a_core(&h.producer_sleeps, &h.consumer_sleeps);
            let give_up = || {
                self.absent_or_dead()
                    .or_else(|| (Instant::now() >= deadline).then_some(ConsumerEnd::Stopped))
            };
            if let Err(ConsumerEnd::Died) = self.wait_on_space(shared, || answer() != 0 || closed(), give_up) {
                end = ConsumerEnd::Died;
            }
        }
        let head = self.head.pos;
        let word = answer();
        if word != 0 {
            return (ConsumerEnd::Stopped, ring::answered(word).min(head));
        }
        let taken = h.consumer.taken.load(Ordering::Acquire).min(head);
        // A consumer that took everything can take nothing more: its count is exact.
        if attached && end == ConsumerEnd::Stopped && !closed() && taken < head {
            self.books.cut_unanswered = true;
        }
        (end, taken)
    }
}

/// How long a stopped producer waits for its consumer to take what is in the ring before it
/// cuts the ring: long enough for a consumer that runs on to drain it, short beside the time
/// a supervisor gives a stopped process.
const STOP_GRACE: Duration = Duration::from_millis(200);

/// The pause between two looks for the consumer while waiting for it to attach: small beside
/// a process's start, which takes milliseconds.
const ATTACH_LOOK: Duration = Duration::from_micros(200);

/// Room for this many messages, a quarter of the ring, is worth a short wait once the producer
/// has caught up with the consumer.
fn batch_of(capacity: u64) -> u64 {
    (capacity / 4).max(1)
}

/// Spins briefly, while the consumer takes messages, until a batch of slots is free: a
/// producer that wrote into each slot as soon as it came free would hand the consumer one
/// message per cache-line round trip between the two cores. The spin is bounded, and a
/// consumer that stops taking leaves the producer to the ordinary wait for one slot. Slots
/// come free in order but for those held in place, so the last of the batch stands for all.
fn wait_for_batch(seg: &Segment, head: u64, batch: u64) {
    let capacity = seg.layout().capacity;
    let last = head + batch - 1;
    let (desc, free) = (seg.descriptor(last), free_stamp(last, capacity));
    for _ in 0..BATCH_PATIENCE {
        if desc.stamp.load(Ordering::Acquire) == free {
            return;
        }
        std::hint::spin_loop();
    }
}

/// Most slots the producer looks at in one go for room (see [`Segment::run_stamped`]).
const LOOK_AHEAD: u64 = 16;

/// Polls after which the producer stops waiting for a batch.
const BATCH_PATIENCE: u32 = 200;

impl Drop for Producer {
    /// A producer dropped without `finish` (a failed box, a panic) marks the stream failed,
    /// so the consumer ends at once, and removes the file.
    fn drop(&mut self) {
        if !self.finished {
            let h = self.seg.header();
            h.producer_state.store(PRODUCER_FAILED, Ordering::SeqCst);
            futex_wake(&h.producer.data_word);
            self.seg.unlink();
        }
    }
}

/// From this payload size on, a copy into a slot bypasses the cache.
const STREAM_FROM: usize = 32 * 1024;

/// Copies `payload` into a slot. A large payload is written with non-temporal stores: the
/// slot's lines were last read by the consumer's core, and an ordinary store would first fetch
/// each line back from there, while a streaming store writes the line without reading it.
/// The closing fence orders the stores before the publication that follows.
pub(crate) fn copy_into_slot(slot: &mut [u8], payload: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if payload.len() >= STREAM_FROM {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        let len = payload.len();
        let lead = slot.as_ptr().align_offset(16).min(len);
        slot[..lead].copy_from_slice(&payload[..lead]);
        let body = (len - lead) / 16 * 16;
        // SAFETY: SSE2 is part of x86_64. `dst` is 16-byte aligned (after `lead` bytes) and
        // both ranges hold `body` bytes past `lead`; the loads are unaligned ones.
        unsafe {
            let dst = slot.as_mut_ptr().add(lead).cast::<__m128i>();
            let src = payload.as_ptr().add(lead).cast::<__m128i>();
            for k in 0..body / 16 {
                _mm_stream_si128(dst.add(k), _mm_loadu_si128(src.add(k)));
            }
            _mm_sfence();
        }
        slot[lead + body..].copy_from_slice(&payload[lead + body..]);
        return;
    }
    slot.copy_from_slice(payload);
}

#[cfg(test)]
mod copy_tests {
    use super::*;

    #[test]
    fn a_copy_into_a_slot_is_exact_at_every_alignment_and_length() {
        let payload: Vec<u8> = (0..STREAM_FROM * 2 + 37).map(|i| (i * 7 + 3) as u8).collect();
        let mut slot = vec![0u8; payload.len() + 16];
        for offset in [0, 1, 7, 15] {
            for len in [0, 15, STREAM_FROM - 1, STREAM_FROM, STREAM_FROM + 5, payload.len()] {
                slot.fill(0);
                copy_into_slot(&mut slot[offset..offset + len], &payload[..len]);
                assert_eq!(&slot[offset..offset + len], &payload[..len], "{offset} {len}");
                assert!(slot[..offset].iter().all(|b| *b == 0), "{offset} {len}");
                assert!(slot[offset + len..].iter().all(|b| *b == 0), "{offset} {len}");
            }
        }
    }
}
