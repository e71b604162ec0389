//! Messages: what flows through channels.
//!
//! A message carries a sequence number and a send timestamp beside its payload, so that loss,
//! order and latency can be measured anywhere (in-process and over ZMQ) without the boxes
//! doing anything special. Small payloads live inline (no heap allocation per message on the
//! hot path); larger ones are shared behind an `Arc`, so fan-out through a routing node and the
//! "latest value again" reads of decoupled channels copy a pointer, not the bytes.

use std::sync::Arc;
use std::sync::OnceLock;
use std::time::Instant;

/// Payloads up to this many bytes are stored inline.
pub const INLINE_CAPACITY: usize = 48;

#[derive(Clone)]
enum Payload {
    Inline { len: u8, bytes: [u8; INLINE_CAPACITY] },
    Shared(Arc<[u8]>),
}

/// One message. Cloning is cheap: inline bytes are copied, shared ones reference-counted.
#[derive(Clone)]
pub struct Message {
    /// Sequence number given by the producer (a source counts 0, 1, 2, ...).
    pub seq: u64,
    /// Send time in nanoseconds since [`epoch`], on the monotonic clock.
    pub sent_ns: u64,
    payload: Payload,
}

impl Message {
    /// A message holding a copy of `bytes`.
    pub fn new(seq: u64, sent_ns: u64, bytes: &[u8]) -> Self {
        let payload = if bytes.len() <= INLINE_CAPACITY {
            let mut inline = [0u8; INLINE_CAPACITY];
            inline[..bytes.len()].copy_from_slice(bytes);
            Payload::Inline {
                len: bytes.len() as u8,
                bytes: inline,
            }
        } else {
            Payload::Shared(Arc::from(bytes))
        };
        Message { seq, sent_ns, payload }
    }

    /// A message of `len` bytes written in place by `fill`: a small payload goes straight into
    /// the message, without a staging buffer and a copy.
    #[inline]
    pub fn filled(seq: u64, sent_ns: u64, len: usize, fill: impl FnOnce(&mut [u8])) -> Self {
        let payload = if len <= INLINE_CAPACITY {
            let mut inline = [0u8; INLINE_CAPACITY];
            fill(&mut inline[..len]);
            Payload::Inline {
                len: len as u8,
                bytes: inline,
            }
        } else {
            let mut bytes = vec![0u8; len];
            fill(&mut bytes);
            Payload::Shared(Arc::from(bytes))
        };
        Message { seq, sent_ns, payload }
    }

    /// A message sharing an existing buffer (no copy).
    pub fn shared(seq: u64, sent_ns: u64, bytes: Arc<[u8]>) -> Self {
        Message {
            seq,
            sent_ns,
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

    pub fn payload(&self) -> &[u8] {
        match &self.payload {
            Payload::Inline { len, bytes } => &bytes[..*len as usize],
            Payload::Shared(bytes) => bytes,
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

/// The process-wide time origin of message timestamps and reports.
pub fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since [`epoch`] on the monotonic clock.
pub fn now_ns() -> u64 {
    epoch().elapsed().as_nanos() as u64
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
    fn timestamps_are_monotonic() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
    }
}
