//! Batch frames (kind 3): several messages of one topic in one ZeroMQ message.
//!
//! libzmq's cost is per frame, not per byte: for small messages, sending two frames per message
//! (topic, body) costs the sink and the source far more than the bytes do. A sink therefore
//! coalesces the messages that are *already waiting* on its input into one body frame; it never
//! waits for more, so batching adds no latency. After the usual header (kind 3, whose frame
//! number, time and message number are the first message's; message `i` of the batch has frame
//! number `first + i`) the body holds:
//!
//! | bytes | content |
//! |---|---|
//! | 30..34 | count of messages, u32 little endian, at least 1 |
//! | then, `count` times | the message's own sequence number, u64 LE; its creation time, u64 LE (as the header's); its payload's length, u32 LE; the payload |
//!
//! Each record keeps its message's own number and creation time: a sink behind the link sees
//! the gaps and streams the producer made, and its latency counts from each message's creation.
//!
//! A batch of one is never written: a lone message goes out as a plain data frame (kind 0),
//! byte for byte what an unbatched sink sends. A body that does not parse exactly (a count or
//! a length running past the end, bytes left over, a count of 0, numbers past 2^53) is
//! rejected as a whole before any of its messages is booked: the receiver counts it as one
//! corrupt message, and the numbers it carried then show as lost.

use std::ops::Range;

use super::wire::{Corrupt, HEADER_LEN, Header, Kind, MAX_SEQ};

/// Largest batch body, header included: big payloads are not concatenated into huge frames
/// (a payload that alone does not fit goes out as a plain data frame).
pub const MAX_BATCH_BYTES: usize = 64 * 1024;

/// Bytes of the message count after the header.
const COUNT_LEN: usize = 4;
/// Bytes of a record before its payload: the message's number, its creation time, the
/// payload's length.
const PREFIX_LEN: usize = 8 + 8 + 4;
/// Where the first record starts in a batch body.
const RECORDS_AT: usize = HEADER_LEN + COUNT_LEN;
/// Where a plain data frame for a lone pending message starts in the writer's buffer: its
/// header then ends exactly where the payload begins, so no byte of the payload moves.
const LONE_AT: usize = RECORDS_AT + PREFIX_LEN - HEADER_LEN;

/// Collects the payloads of one topic into a body frame, reusing its buffer.
#[derive(Debug)]
pub struct BatchWriter {
    /// Header and count placeholders, then the records.
    buf: Vec<u8>,
    /// Largest body: [`MAX_BATCH_BYTES`], or less when the link's `max_message` is smaller.
    limit: usize,
    count: u32,
    /// `seal` rewrote the placeholders: the buffer must be cleared before the next push.
    sealed: bool,
}

impl Default for BatchWriter {
    fn default() -> Self {
        BatchWriter::new()
    }
}

impl BatchWriter {
    pub fn new() -> BatchWriter {
        BatchWriter::with_limit(MAX_BATCH_BYTES)
    }

    /// A writer whose bodies stay within `limit` bytes (and [`MAX_BATCH_BYTES`]).
    pub fn with_limit(limit: usize) -> BatchWriter {
        let mut buf = Vec::with_capacity(512);
        buf.resize(RECORDS_AT, 0);
        BatchWriter {
            buf,
            limit: limit.min(MAX_BATCH_BYTES),
            count: 0,
            sealed: false,
        }
    }

    /// Messages collected.
    pub fn count(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether a payload of `len` bytes can join without the body passing the limit.
    pub fn fits(&self, len: usize) -> bool {
        self.buf.len() + PREFIX_LEN + len <= self.limit
    }

    /// Whether a payload of `len` bytes fits into an empty batch at all.
    pub fn fits_alone(&self, len: usize) -> bool {
        RECORDS_AT + PREFIX_LEN + len <= self.limit
    }

    /// Adds a message: its own sequence number, its creation time (wall clock, ns since the
    /// Unix epoch) and its payload; the caller checked [`BatchWriter::fits`].
    pub fn push(&mut self, msg_seq: u64, created_unix_ns: u64, payload: &[u8]) {
        debug_assert!(!self.sealed, "BatchWriter::push after seal without clear");
        debug_assert!(self.fits(payload.len()));
        self.buf.extend_from_slice(&msg_seq.to_le_bytes());
        self.buf.extend_from_slice(&created_unix_ns.to_le_bytes());
        self.buf.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(payload);
        self.count += 1;
    }

    /// The body frame of the collected messages, the first with link number `first_seq`: a
    /// batch (kind 3), or for a single message a plain data frame (kind 0). The header carries
    /// the first message's number and creation time. Call [`BatchWriter::clear`] before
    /// collecting again.
    pub fn seal(&mut self, sender: u32, first_seq: u64) -> &[u8] {
        debug_assert!(self.count > 0, "BatchWriter::seal of no message");
        self.sealed = true;
        let u64_at = |at: usize| u64::from_le_bytes(self.buf[at..at + 8].try_into().expect("8 bytes"));
        let mut header = Header {
            kind: Kind::Batch,
            sender,
            seq: first_seq,
            sent_unix_ns: u64_at(RECORDS_AT + 8),
            msg_seq: u64_at(RECORDS_AT),
        };
        let at = if self.count == 1 {
            header.kind = Kind::Data;
            LONE_AT
        } else {
            self.buf[HEADER_LEN..RECORDS_AT].copy_from_slice(&self.count.to_le_bytes());
            0
        };
        let head: &mut [u8; HEADER_LEN] = (&mut self.buf[at..at + HEADER_LEN]).try_into().expect("header bytes");
        header.write_to(head);
        &self.buf[at..]
    }

    /// Forgets the collected messages, keeping the allocation.
    pub fn clear(&mut self) {
        self.buf.truncate(RECORDS_AT);
        self.count = 0;
        self.sealed = false;
    }
}

/// One message of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its number in the link's books.
    pub seq: u64,
    /// Its own sequence number, as its producer gave it.
    pub msg_seq: u64,
    /// Its creation time, ns since the Unix epoch.
    pub created_unix_ns: u64,
    /// Where its payload lies in the bytes after the header.
    pub payload: Range<usize>,
}

/// The records of a batch body that parsed, read one at a time from the same bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Records {
    left: u32,
    /// Offset of the next record in the bytes after the header.
    at: usize,
    next_seq: u64,
}

impl Records {
    /// Checks the whole body (`rest`: the bytes after the header) before anything is read from
    /// it, so a bad batch is rejected as a whole.
    pub fn parse(rest: &[u8], first_seq: u64) -> Result<Records, Corrupt> {
        let (count, mut records) = take_u32(rest).ok_or(Corrupt::Batch("truncated message count"))?;
        if count == 0 {
            return Err(Corrupt::Batch("message count 0"));
        }
        if first_seq.checked_add(u64::from(count)).is_none_or(|end| end > MAX_SEQ) {
            return Err(Corrupt::Impossible("a batch numbered past 2^53"));
        }
        for _ in 0..count {
            let prefix = records
                .get(PREFIX_LEN - 4..)
                .ok_or(Corrupt::Batch("more messages announced than present"))?;
            let (len, after) = take_u32(prefix).ok_or(Corrupt::Batch("more messages announced than present"))?;
            records = after
                .get(len as usize..)
                .ok_or(Corrupt::Batch("a payload runs past the end"))?;
        }
        if !records.is_empty() {
            return Err(Corrupt::Batch("bytes left after the last message"));
        }
        Ok(Records {
            left: count,
            at: COUNT_LEN,
            next_seq: first_seq,
        })
    }

    /// Messages not yet read.
    pub fn left(&self) -> u32 {
        self.left
    }

    /// The next message, its payload in `rest`, which must be the bytes given to
    /// [`Records::parse`] (other bytes end the records early, never panic).
    pub fn next(&mut self, rest: &[u8]) -> Option<Record> {
        if self.left == 0 {
            return None;
        }
        let record = rest.get(self.at..)?;
        let (msg_seq, record) = take_u64(record)?;
        let (created_unix_ns, record) = take_u64(record)?;
        let (len, after) = take_u32(record)?;
        if after.len() < len as usize {
            self.left = 0;
            return None;
        }
        let start = self.at + PREFIX_LEN;
        let end = start + len as usize;
        let seq = self.next_seq;
        self.left -= 1;
        self.at = end;
        // No overflow: parse checked `first + count <= MAX_SEQ`.
        self.next_seq += 1;
        Some(Record {
            seq,
            msg_seq,
            created_unix_ns,
            payload: start..end,
        })
    }
}

fn take_u32(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let (head, rest) = bytes.split_at_checked(4)?;
    Some((u32::from_le_bytes(head.try_into().ok()?), rest))
}

fn take_u64(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let (head, rest) = bytes.split_at_checked(8)?;
    Some((u64::from_le_bytes(head.try_into().ok()?), rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire;

    /// The number a test gives message `i`: not the link number, and not consecutive, as in a
    /// fan-in or behind a channel that overwrote some.
    fn msg_seq(i: usize) -> u64 {
        1000 + 3 * i as u64
    }

    fn created(i: usize) -> u64 {
        99 + i as u64
    }

    fn encode(payloads: &[&[u8]], first: u64) -> Vec<u8> {
        let mut w = BatchWriter::new();
        for (i, p) in payloads.iter().enumerate() {
            w.push(msg_seq(i), created(i), p);
        }
        w.seal(7, first).to_vec()
    }

    /// Link numbers, messages' numbers, creation times and payloads read back from a batch.
    type Decoded = Vec<(u64, u64, u64, Vec<u8>)>;

    fn decode(body: &[u8]) -> Result<(Header, Decoded), Corrupt> {
        let (header, rest) = Header::parse(body)?;
        assert_eq!(header.kind, Kind::Batch);
        let mut records = Records::parse(rest, header.seq)?;
        let mut out = Vec::new();
        while let Some(r) = records.next(rest) {
            out.push((r.seq, r.msg_seq, r.created_unix_ns, rest[r.payload].to_vec()));
        }
        Ok((header, out))
    }

    #[test]
    fn a_batch_round_trips_with_consecutive_frame_numbers_and_each_message_s_own() {
        let body = encode(&[b"one", b"", b"three"], 40);
        let (header, records) = decode(&body).unwrap();
        assert_eq!(
            (header.sender, header.seq, header.sent_unix_ns, header.msg_seq),
            (7, 40, 99, 1000)
        );
        assert_eq!(
            records,
            vec![
                (40, 1000, 99, b"one".to_vec()),
                (41, 1003, 100, Vec::new()),
                (42, 1006, 101, b"three".to_vec())
            ]
        );
        assert_eq!(body.len(), HEADER_LEN + 4 + 3 * PREFIX_LEN + 3 + 5);
    }

    #[test]
    fn a_lone_message_is_byte_identical_to_a_plain_data_frame() {
        let mut plain = Vec::new();
        let header = Header {
            kind: Kind::Data,
            sender: 7,
            seq: 5,
            sent_unix_ns: created(0),
            msg_seq: msg_seq(0),
        };
        wire::encode_body(&header, b"payload", &mut plain);
        assert_eq!(encode(&[b"payload"], 5), plain);
    }

    #[test]
    fn the_writer_is_reusable_after_clear() {
        let mut w = BatchWriter::new();
        w.push(0, 0, b"a");
        let _ = w.seal(1, 0);
        w.clear();
        w.push(8, 2, b"b");
        w.push(9, 3, b"c");
        let body = w.seal(1, 1).to_vec();
        assert_eq!(
            decode(&body).unwrap().1,
            vec![(1, 8, 2, b"b".to_vec()), (2, 9, 3, b"c".to_vec())]
        );
    }

    #[test]
    fn the_size_cap_is_kept() {
        let mut w = BatchWriter::new();
        let payload = [0u8; 1000];
        while w.fits(payload.len()) {
            w.push(0, 0, &payload);
        }
        let body = w.seal(1, 0);
        assert!(body.len() <= MAX_BATCH_BYTES && body.len() + 1000 + PREFIX_LEN > MAX_BATCH_BYTES);
        let alone = MAX_BATCH_BYTES - RECORDS_AT - PREFIX_LEN;
        assert!(w.fits_alone(alone));
        assert!(!w.fits_alone(alone + 1));
        let small = BatchWriter::with_limit(1000);
        let alone = 1000 - RECORDS_AT - PREFIX_LEN;
        assert!(small.fits_alone(alone) && !small.fits_alone(alone + 1));
    }

    #[test]
    fn malformed_batches_are_rejected_whole() {
        let body = encode(&[b"ab", b"cd"], 0);
        let rest = &body[HEADER_LEN..];
        for cut in 0..rest.len() {
            assert!(Records::parse(&rest[..cut], 0).is_err(), "cut at {cut}");
        }
        let mut padded = rest.to_vec();
        padded.push(0);
        assert_eq!(
            Records::parse(&padded, 0),
            Err(Corrupt::Batch("bytes left after the last message"))
        );
        assert_eq!(Records::parse(&[0, 0, 0, 0], 0), Err(Corrupt::Batch("message count 0")));
        let mut huge_len = rest.to_vec();
        let len_at = COUNT_LEN + PREFIX_LEN - 4;
        huge_len[len_at..len_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            Records::parse(&huge_len, 0),
            Err(Corrupt::Batch("a payload runs past the end"))
        );
        assert!(Records::parse(rest, MAX_SEQ - 2).is_ok());
        assert_eq!(
            Records::parse(rest, MAX_SEQ - 1),
            Err(Corrupt::Impossible("a batch numbered past 2^53"))
        );
        assert!(Records::parse(rest, u64::MAX).is_err(), "numbers would wrap");
        let mut records = Records::parse(rest, 0).unwrap();
        assert_eq!(records.next(&rest[..6]), None, "other bytes end the records, no panic");
    }

    proptest::proptest! {
        #[test]
        fn payloads_round_trip(payloads in proptest::collection::vec(
            proptest::collection::vec(proptest::num::u8::ANY, 0..40), 2..20), first in 0u64..MAX_SEQ - 20) {
            let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
            let (header, records) = decode(&encode(&refs, first)).unwrap();
            proptest::prop_assert_eq!(header.seq, first);
            let expected: Decoded = (first..)
                .zip(payloads)
                .enumerate()
                .map(|(i, (seq, p))| (seq, msg_seq(i), created(i), p))
                .collect();
            proptest::prop_assert_eq!(records, expected);
        }

        /// Any bytes after a valid batch header parse or fail cleanly; what parses reads back
        /// exactly the announced number of in-bounds records.
        #[test]
        fn any_batch_body_parses_or_fails_cleanly(
            rest in proptest::collection::vec(proptest::num::u8::ANY, 0..160),
            small_count in 0u32..6,
            first in proptest::prop_oneof![0u64..MAX_SEQ, (MAX_SEQ - 8)..MAX_SEQ],
        ) {
            let mut bodies = vec![rest.clone()];
            // Also with a plausible count, so that parsing gets past the first check.
            let mut counted = small_count.to_le_bytes().to_vec();
            counted.extend_from_slice(&rest);
            bodies.push(counted);
            for body in bodies {
                let mut frame = vec![0u8; HEADER_LEN];
                let header = Header { kind: Kind::Batch, sender: 1, seq: first, sent_unix_ns: 0, msg_seq: 0 };
                header.write_to((&mut frame[..]).try_into().unwrap());
                frame.extend_from_slice(&body);
                let (parsed, rest) = Header::parse(&frame).unwrap();
                if let Ok(mut records) = Records::parse(rest, parsed.seq) {
                    let count = records.left();
                    let mut read = 0u32;
                    while let Some(record) = records.next(rest) {
                        proptest::prop_assert_eq!(record.seq, first + u64::from(read));
                        proptest::prop_assert!(record.payload.end <= rest.len());
                        read += 1;
                    }
                    proptest::prop_assert!(count >= 1);
                    proptest::prop_assert_eq!(read, count);
                }
            }
        }
    }
}
