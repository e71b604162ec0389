//! A bounded single-producer single-consumer queue with blocking ends.
//!
//! It is built for a dataflow channel with exactly one writer and one reader, where a general
//! multi-producer channel plus a wake-up mechanism would pay for sharing that never happens,
//! and for messages of up to a cache line.
//!
//! # Shape
//!
//! A ring of slots and two 64-bit indices that only grow: the producer's `tail` (next index to
//! write) and the consumer's `head` (next index to read); messages `head..tail` are inside.
//! Each index is on its own pair of cache lines, written only by its end, and each end keeps a
//! private copy of the other end's index ([`Producer`]'s `head_cache`, [`Consumer`]'s
//! `tail_cache`). The copy is a lower bound, so it is always safe to act on: the producer
//! loads the real head only when its copy says full, the consumer loads the real tail only
//! when its copy says empty. While the two ends run at different speeds that is one load of
//! the other end's line per batch of messages, not per message. Nothing is allocated per
//! message: the ring is allocated once, and a message is moved in and out of its slot.
//!
//! On a blocking queue each slot also carries a stamp, beside the message's last bytes: "free
//! for index i" or "holding index i". When its copy says full (or empty), an end first asks the
//! stamp of the slot it needs next, and loads the other end's index only to wait. At length 1,
//! where every message finds the copy out of date, a hand-over then moves the slot's lines and
//! nothing else: an index look moved the index's line and only then the slot's, one more
//! round trip between the cores per message (`examples/bench.rs` measures it against other
//! queues). A wait that looks at once (`settle` 0, the default at capacity 1) looks
//! at the stamp; one that settles looks at the index, so that it ends knowing of every slot
//! made free or full meanwhile, and the messages that follow need no look at all.
//!
//! # Capacity
//!
//! A queue of capacity `n >= 1` never holds more than `n` messages (a blocking queue has `n`
//! slots; capacity 1 is one slot, no rounding to a power of two, and a slot index is kept
//! beside each index so that no message pays for a division). A slot is its message and its
//! stamp (see above) rounded up to whole cache lines, so that neighbouring slots never share
//! a line: 64 bytes for a message of up to 56 bytes, 128 for one of 80.
//!
//! # Publication
//!
//! Both ends publish their index after every message: a `Release` store, which on x86 is a
//! plain `mov` and costs the writer nothing while the other end is not looking. What costs is
//! the other end *looking* (each look moves the line), and that is what the cached copies and
//! the waiting end's `settle` (a pause between looks while waiting, so several messages
//! gather before one look picks them all up) cut down: the batching is done by the reader of
//! an index, never by its writer. So a message is visible as soon as its `push` returns,
//! however long the producer then pauses: no batch can strand a message, and there is no
//! `flush` to forget. Where several messages are at hand in one call, [`Producer::push_from`]
//! and [`Consumer::pop_into`] publish once per run of them (and pay one barrier); that is
//! safe because the publication happens before the call returns or waits.
//!
//! # Waiting
//!
//! A consumer with nothing to read ([`Consumer::wait_ready`], [`Consumer::pop`]) and a
//! producer with no room ([`Producer::push`] on a blocking queue) spin for a configurable
//! budget ([`DEFAULT_SPIN`], zero parks at once), looking at the other end's index every
//! `settle` spin-loop hints ([`default_settle`]), then park with `std::thread::park`. Ends on
//! one core ([`share_core`]) yield after each look instead. The hand-shake that makes the park
//! safe is a store-barrier-load pair on each side (module `wait`): after publishing, every push
//! and every pop issues a barrier and then loads a flag that stays in its cache unless the
//! other end is parked. With [`Handshake::Membarrier`] (the default on Linux) that barrier is
//! only a compiler fence, and the end about to park pays instead, with one `membarrier` system
//! call; with [`Handshake::Fences`] it is a `SeqCst` fence (`lock or` on x86) on every message.
//!
//! # Ending
//!
//! Either end may close (also on drop). After [`Producer::close`] the consumer reads what is
//! inside and then sees the end ([`Consumer::pop`] returns `None`, [`Consumer::wait_ready`]
//! false). After [`Consumer::close`], which returns how many messages were left inside, every
//! later push fails and hands its message back. Either close wakes a parked other end.
//!
//! # Kinds
//!
//! [`Kind::Blocking`] (a producer that must not lose messages): a push into a full queue waits.
//! [`Kind::DropOldest`] (a producer that must never wait): a push never waits; a full queue
//! evicts its oldest unread message, which `push` returns for the caller to count as
//! overwritten. There the producer and the consumer race for the oldest message, so on that
//! kind only both claim it by compare-and-swap on `head` (see `Producer::push_evicting`); the
//! blocking kind's path has no read-modify-write at all. A consumer that should return the
//! latest value again when nothing new came needs nothing from the queue: it keeps its last
//! value itself.
//!
//! ```
//! let (mut tx, mut rx) = smx_spsc::channel::<u64>(2, smx_spsc::Kind::DropOldest);
//! for i in 0..5 {
//!     tx.push(i).unwrap();
//! }
//! drop(tx);
//! assert_eq!(std::iter::from_fn(|| rx.pop()).collect::<Vec<_>>(), [3, 4]);
//! ```

mod consumer;
mod producer;
mod ring;
mod sync;
mod wait;

pub use consumer::{Consumer, wait_any, wait_any_of};
pub use producer::Producer;
pub use ring::slot_bytes;
pub use wait::{DEFAULT_SPIN, Halt, Handshake, default_settle};

/// What a push does when the queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Waits for room.
    Blocking,
    /// Evicts the oldest unread message.
    DropOldest,
}

/// Creates a queue holding up to `capacity` messages, with the default [`Handshake`]
/// (membarrier where the kernel has it).
///
/// # Panics
/// If `capacity` is zero.
pub fn channel<T>(capacity: usize, kind: Kind) -> (Producer<T>, Consumer<T>) {
    channel_with(capacity, kind, Handshake::default())
}

/// [`channel`] with a chosen [`Handshake`]: `Fences` for a process where the occasional
/// inter-processor interrupt of a membarrier (each time an end parks) must not disturb other
/// threads, such as a real-time thread spinning on its own core.
///
/// # Panics
/// If `capacity` is zero.
pub fn channel_with<T>(capacity: usize, kind: Kind, handshake: Handshake) -> (Producer<T>, Consumer<T>) {
    assert!(capacity >= 1, "a queue holds at least one message");
    let lossy = kind == Kind::DropOldest;
    // Drop-oldest needs two spare slots: one for the message published before the oldest is
    // evicted, one so that the consumer's copy of its last claim is never in the way (see
    // `Producer::push_evicting`).
    let slots = if lossy { capacity + 2 } else { capacity };
    let asymmetric = handshake.resolve() == Handshake::Membarrier;
    let ring = sync::Arc::new(ring::Ring::new(slots, asymmetric));
    (
        Producer::new(ring.clone(), capacity, lossy),
        Consumer::new(ring, capacity, lossy),
    )
}

/// Sets both ends of a queue for producer and consumer threads that run on the same core:
/// a waiting end yields the core after every look that finds nothing, for up to its spin
/// budget, and then parks. Spinning there only keeps the other end from running; a yield
/// hands the core straight to it (when it is runnable), which is cheaper than a park and the
/// wake-up that ends it. `set_spin(Duration::ZERO)` on both ends parks at once instead.
/// Nor does it wait between looks (`settle` 0): nothing can gather while this end holds the core.
pub fn share_core<T>(producer: &mut Producer<T>, consumer: &mut Consumer<T>) {
    producer.set_yield_each_look(true);
    consumer.set_yield_each_look(true);
    producer.set_settle(0);
    consumer.set_settle(0);
}

/// A push refused because an end has closed; the message is handed back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed<T>(pub T);

/// Why [`Producer::try_push`] handed its message back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryPushError<T> {
    /// A blocking queue is full.
    Full(T),
    /// An end has closed.
    Closed(T),
}

/// Why [`Consumer::try_pop`] returned no message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryPopError {
    /// Nothing there now; the producer may still write.
    Empty,
    /// The producer has ended and everything it wrote has been read (or this end closed).
    Ended,
}
