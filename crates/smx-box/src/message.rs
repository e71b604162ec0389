//! Messages: what flows through channels.
//!
//! A message carries a sequence number and a creation timestamp beside its payload, so that loss,
//! order and latency can be measured anywhere (in-process and over ZMQ) without the boxes
//! doing anything special. Small payloads live inline (no heap allocation per message
//! on the hot path); larger ones are shared behind an `Arc`, so fan-out through a routing node
//! and the "latest value again" reads of decoupled channels copy a pointer, not the bytes.

use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::clock::now_ns;

/// Payloads up to this many bytes are stored inline. 24, so that the message is 56 bytes and,
/// with the 8-byte stamp of `smx-spsc`'s slot, fills exactly one 64-byte cache line: a hand-over
/// between two threads then moves one line. At 48 inline bytes (an 80-byte message) it moved
/// two, one after the other: the consumer saw the stamp on the second line, then missed on the
/// first.
pub const INLINE_CAPACITY: usize = 24;

/// `repr(u8)`: the layout is defined (a leading tag, `Inline` is 0), so that all zero bytes are
/// an empty inline payload, which [`Message::fill_into`] relies on.
#[derive(Clone)]
#[repr(u8)]
enum Payload {
    Inline { len: u8, bytes: InlineBytes } = 0,
    Shared(Arc<[u8]>),
    Foreign(Foreign),
}

/// An inline payload's bytes, aligned to 8 so that filling, zeroing and moving them are whole
/// aligned words: as a bare byte array they sit at offset 2 of the enum, and every word
/// written there straddles what the next move of the message loads.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct InlineBytes([u8; INLINE_CAPACITY]);

/// How the runtime sees, copies and frees a payload owned by code outside Rust: a C box's
/// `smx_msg_t` travels through channels as it is, with no conversion between two C boxes.
/// The functions must be callable from any thread.
#[derive(Debug)]
pub struct ForeignVTable {
    /// The payload's bytes: a pointer and a length, valid while the object lives and is not
    /// changed (the pointer may be null when the length is 0).
    pub bytes: unsafe fn(NonNull<()>) -> (*const u8, usize),
    /// A deep copy (fan-out, a decoupled input's latest value read again). Must not fail: an
    /// object that cannot be copied gives an empty one.
    pub clone: unsafe fn(NonNull<()>) -> NonNull<()>,
    /// Frees the object.
    pub drop: unsafe fn(NonNull<()>),
}

/// An owned foreign object and its functions.
struct Foreign {
    ptr: NonNull<()>,
    vtable: &'static ForeignVTable,
}

// SAFETY: `Message::from_foreign`'s contract: the object may move to and be used from any
// thread, and reading its bytes from two threads at once is fine.
unsafe impl Send for Foreign {}
unsafe impl Sync for Foreign {}

impl Clone for Foreign {
    fn clone(&self) -> Self {
        // SAFETY: `ptr` is owned by `self` and alive.
        let ptr = unsafe { (self.vtable.clone)(self.ptr) };
        Foreign {
            ptr,
            vtable: self.vtable,
        }
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        // SAFETY: `ptr` is owned by `self`, dropped once.
        unsafe { (self.vtable.drop)(self.ptr) }
    }
}

/// One message. Cloning is cheap: inline bytes are copied, shared ones reference-counted (a
/// foreign payload, a C box's message, is copied by its own copy function).
///
/// **Which time a message carries.** `sent_ns` is when the message was *created*: the box that
/// makes a new message (a source, or a box whose output is not one of its inputs) stamps it
/// with [`now_ns`]; a box that passes a message on (forwarding it as it is, or
/// [`Message::with_payload`] for a new payload standing for the same datum) keeps it, and so do
/// routing nodes, firewalls and ZeroMQ links. The run's end-to-end latency at a sink is the
/// time since that stamp. A box that computes a new datum from several inputs (an average, a
/// join) starts a new message with a new stamp: which input's age the output should inherit is
/// the box's decision, not the runtime's, and a latency that silently took the oldest or the
/// newest input would say something the box never meant.
///
/// Beside it the runtime keeps a second stamp of its own, the time of the last write into a
/// channel ([`Message::written_ns`]), for the per-channel latency of the report; it is
/// overwritten at every write and not for boxes to set.
#[derive(Clone)]
pub struct Message {
    /// Sequence number given by the producer (a source counts 0, 1, 2, ...).
    pub seq: u64,
    /// Creation time in nanoseconds since [`epoch`](crate::epoch), on the monotonic clock (see [`Message`] for
    /// who keeps it and who starts a new one). 0: unknown (no end-to-end latency).
    pub sent_ns: u64,
    /// When the runtime last wrote the message into a channel (0: not stamped, the write was
    /// not sampled). The runtime's alone: see [`Message::written_ns`].
    written_ns: u64,
    payload: Payload,
}

impl Message {
    /// A message holding a copy of `bytes`.
    pub fn new(seq: u64, sent_ns: u64, bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE_CAPACITY {
            Message::filled(seq, sent_ns, bytes.len(), |inline| inline.copy_from_slice(bytes))
        } else {
            Message::shared(seq, sent_ns, Arc::from(bytes))
        }
    }

    /// A message of `len` bytes written in place by `fill`: a small payload goes straight into
    /// the message, without a staging buffer and a copy.
    #[inline]
    pub fn filled(seq: u64, sent_ns: u64, len: usize, fill: impl FnOnce(&mut [u8])) -> Self {
        if len > INLINE_CAPACITY {
            let mut bytes = vec![0u8; len];
            fill(&mut bytes);
            return Message::shared(seq, sent_ns, Arc::from(bytes));
        }
        // Filled where the bytes stay: filled in a local array and then moved into the enum,
        // they are loaded back right away across the fill's narrower stores, which the CPU
        // cannot forward to the load (a stall of most of a source's step).
        let mut msg = Message {
            seq,
            sent_ns,
            written_ns: 0,
            payload: Payload::Inline {
                len: len as u8,
                bytes: InlineBytes([0u8; INLINE_CAPACITY]),
            },
        };
        if let Payload::Inline { bytes, .. } = &mut msg.payload {
            fill(&mut bytes.0[..len]);
        }
        msg
    }

    /// [`Message::filled`] built straight into `slot` (a channel's slot: see
    /// [`Io::write_filled`](crate::Io::write_filled)), returned initialised.
    #[inline]
    pub fn fill_into(
        slot: &mut MaybeUninit<Message>,
        seq: u64,
        sent_ns: u64,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> &mut Message {
        if len > INLINE_CAPACITY {
            return slot.write(Message::filled(seq, sent_ns, len, fill));
        }
        // Zeroed and then written field by field, in the slot: a `Message { .. }` literal is
        // assembled on the stack and copied in, across its narrower stores.
        let at = slot.as_mut_ptr();
        // Safety: all zero bytes are a valid message, an empty inline payload (`Payload` is
        // `repr(u8)` with `Inline` = 0); the fields written are plain integers of it.
        let msg = unsafe {
            at.write_bytes(0, 1);
            std::ptr::addr_of_mut!((*at).seq).write(seq);
            std::ptr::addr_of_mut!((*at).sent_ns).write(sent_ns);
            slot.assume_init_mut()
        };
        if let Payload::Inline { len: at, bytes } = &mut msg.payload {
            *at = len as u8;
            fill(&mut bytes.0[..len]);
        }
        msg
    }

    /// A message sharing an existing buffer (no copy).
    pub fn shared(seq: u64, sent_ns: u64, bytes: Arc<[u8]>) -> Self {
        Message {
            seq,
            sent_ns,
            written_ns: 0,
            payload: Payload::Shared(bytes),
        }
    }

    /// A new payload that keeps this message's sequence number and timestamp: what a filter
    /// writes, so that order and end-to-end latency stay measurable across it.
    pub fn with_payload(&self, bytes: &[u8]) -> Self {
        Message::new(self.seq, self.sent_ns, bytes)
    }

    /// A message stamped with the current time.
    pub fn now(seq: u64, bytes: &[u8]) -> Self {
        Message::new(seq, now_ns(), bytes)
    }

    /// When the runtime last wrote this message into a channel, in [`now_ns`] time; 0 when
    /// that write was not sampled for latency. The reader of the channel records the time
    /// since then; a box never needs it.
    #[inline]
    pub fn written_ns(&self) -> u64 {
        self.written_ns
    }

    /// The runtime's stamp at a write (0: not sampled). Every write sets it, so a forwarded
    /// message never carries the stamp of an earlier hop.
    #[doc(hidden)]
    #[inline]
    pub fn set_written_ns(&mut self, ns: u64) {
        self.written_ns = ns;
    }

    pub fn payload(&self) -> &[u8] {
        match &self.payload {
            Payload::Inline { len, bytes } => &bytes.0[..*len as usize],
            Payload::Shared(bytes) => bytes,
            Payload::Foreign(f) => {
                // SAFETY: the object is alive while `self` is; see `ForeignVTable::bytes`.
                let (ptr, len) = unsafe { (f.vtable.bytes)(f.ptr) };
                if ptr.is_null() || len == 0 {
                    &[]
                } else {
                    // SAFETY: as above.
                    unsafe { std::slice::from_raw_parts(ptr, len) }
                }
            }
        }
    }

    /// A message owning a foreign object (a C box's message), seen through `vtable`.
    ///
    /// # Safety
    /// `ptr` must be a live object that `vtable`'s functions accept; the message owns it from
    /// now on (it is freed with `vtable.drop` when the message is dropped). The object may be
    /// moved to and used from any thread.
    pub unsafe fn from_foreign(seq: u64, sent_ns: u64, ptr: NonNull<()>, vtable: &'static ForeignVTable) -> Self {
        Message {
            seq,
            sent_ns,
            written_ns: 0,
            payload: Payload::Foreign(Foreign { ptr, vtable }),
        }
    }

    /// Takes the foreign object out of a message made by [`Message::from_foreign`] with this
    /// `vtable` (compared by address); the caller owns it then. Any other message comes back.
    pub fn into_foreign(self, vtable: &'static ForeignVTable) -> Result<NonNull<()>, Message> {
        match &self.payload {
            Payload::Foreign(f) if std::ptr::eq(f.vtable, vtable) => {
                let ptr = f.ptr;
                std::mem::forget(self);
                Ok(ptr)
            }
            _ => Err(self),
        }
    }

    pub fn len(&self) -> usize {
        self.payload().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("seq", &self.seq)
            .field("sent_ns", &self.sent_ns)
            .field("len", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_payloads_are_inline_and_large_ones_shared() {
        let small = Message::new(1, 2, b"hello");
        assert_eq!(small.payload(), b"hello");
        assert!(matches!(small.payload, Payload::Inline { .. }));
        let big = Message::new(3, 4, &[7u8; 100]);
        assert_eq!(big.len(), 100);
        let copy = big.clone();
        match (&big.payload, &copy.payload) {
            (Payload::Shared(a), Payload::Shared(b)) => assert!(Arc::ptr_eq(a, b)),
            _ => panic!("large payload must be shared"),
        }
    }

    #[test]
    fn filled_messages_hold_what_was_written() {
        let small = Message::filled(1, 2, 3, |b| b.copy_from_slice(b"abc"));
        assert_eq!((small.seq, small.sent_ns, small.payload()), (1, 2, &b"abc"[..]));
        assert!(matches!(small.payload, Payload::Inline { .. }));
        let big = Message::filled(3, 4, 100, |b| b.fill(9));
        assert_eq!(big.payload(), &[9u8; 100][..]);
        assert!(matches!(big.payload, Payload::Shared(_)));
    }

    #[test]
    fn every_inline_length_keeps_its_bytes_and_the_message_stays_56_bytes() {
        for len in 0..=INLINE_CAPACITY {
            let bytes: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(37)).collect();
            let msg = Message::new(7, 9, &bytes);
            assert!(matches!(msg.payload, Payload::Inline { .. }), "{len}");
            assert_eq!(msg.payload(), &bytes[..]);
            assert_eq!(msg.clone().payload(), &bytes[..]);
        }
        // With the queue's 8-byte stamp, one 64-byte cache line (see `INLINE_CAPACITY`).
        assert_eq!(std::mem::size_of::<Message>(), 56);
    }

    #[test]
    fn a_message_filled_into_a_slot_is_the_message_filled_on_the_stack() {
        for len in [0, 1, 8, INLINE_CAPACITY, INLINE_CAPACITY + 1, 100] {
            let fill = |b: &mut [u8]| b.iter_mut().enumerate().for_each(|(i, x)| *x = i as u8 ^ 0x5a);
            // A slot holding garbage, as a reused ring slot may.
            let mut slot = MaybeUninit::new(Message::new(99, 98, &[0xff; 20]));
            // Safety: the slot holds a message; dropped here, it is uninitialised below.
            unsafe { slot.assume_init_drop() };
            let built = Message::fill_into(&mut slot, 3, 4, len, fill).clone();
            // Safety: `fill_into` initialised it.
            unsafe { slot.assume_init_drop() };
            let expected = Message::filled(3, 4, len, fill);
            assert_eq!((built.seq, built.sent_ns, built.written_ns()), (3, 4, 0), "{len}");
            assert_eq!(built.payload(), expected.payload(), "{len}");
            assert_eq!(
                matches!(built.payload, Payload::Inline { .. }),
                len <= INLINE_CAPACITY,
                "{len}"
            );
        }
    }

    static LIVE: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

    unsafe fn boxed_bytes(p: NonNull<()>) -> (*const u8, usize) {
        let v = unsafe { &*(p.as_ptr() as *const Vec<u8>) };
        (v.as_ptr(), v.len())
    }
    unsafe fn boxed_clone(p: NonNull<()>) -> NonNull<()> {
        let v = unsafe { &*(p.as_ptr() as *const Vec<u8>) };
        LIVE.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        NonNull::from(Box::leak(Box::new(v.clone()))).cast()
    }
    unsafe fn boxed_drop(p: NonNull<()>) {
        LIVE.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        drop(unsafe { Box::from_raw(p.as_ptr() as *mut Vec<u8>) });
    }
    static BOXED: ForeignVTable = ForeignVTable {
        bytes: boxed_bytes,
        clone: boxed_clone,
        drop: boxed_drop,
    };
    static OTHER: ForeignVTable = ForeignVTable {
        bytes: boxed_bytes,
        clone: boxed_clone,
        drop: boxed_drop,
    };

    #[test]
    fn foreign_payloads_are_seen_copied_and_freed_through_their_functions() {
        let ptr = NonNull::from(Box::leak(Box::new(b"abc".to_vec()))).cast();
        LIVE.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let msg = unsafe { Message::from_foreign(5, 6, ptr, &BOXED) };
        assert_eq!((msg.seq, msg.sent_ns, msg.payload()), (5, 6, &b"abc"[..]));
        let copy = msg.clone();
        assert_eq!(LIVE.load(std::sync::atomic::Ordering::SeqCst), 2);
        drop(copy);
        let msg = msg.into_foreign(&OTHER).unwrap_err();
        let back = msg.into_foreign(&BOXED).unwrap();
        assert_eq!(back, ptr);
        assert_eq!(LIVE.load(std::sync::atomic::Ordering::SeqCst), 1);
        unsafe { boxed_drop(back) };
        assert!(Message::new(1, 2, b"x").into_foreign(&BOXED).is_err());
    }

    #[test]
    fn timestamps_are_monotonic() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
    }
}
