//! The wire format of one smx message on a ZeroMQ socket.
//!
//! Every ZeroMQ message is two frames, so that SUB prefix filtering sees the topic alone and the
//! receiver never has to guess where the header ends:
//!
//! | frame | bytes | content |
//! |---|---|---|
//! | 1 | any | topic (may be empty) |
//! | 2 | 0 | format version, [`VERSION`] |
//! |   | 1 | kind: 0 = data, 1 = end of stream, 2 = abort (end of stream before the input ended), 3 = batch |
//! |   | 2..6 | sender id, u32 little endian (random per sink instance) |
//! |   | 6..14 | link number, u64 LE, counted per (sender, topic) from 0 (batch: the first message's) |
//! |   | 14..22 | creation time of the message, ns since the Unix epoch (wall clock; batch: the first message's) |
//! |   | 22..30 | the message's own sequence number (`smx_box::Message::seq`), u64 LE (batch: the first message's) |
//! |   | 30.. | payload (data), the end-of-stream body for kinds 1 and 2 (see [`super::eos`]), or for kind 3 a count and records (see [`super::batch`]) |
//!
//! Two numbers, because they answer two questions. The link number is the link's own: the
//! receiver's books find what the link lost, duplicated or reordered by it. The message's own
//! number is what the producing box gave it, which the receiving box passes on unchanged, so
//! that a sink behind the link still sees the gaps of what was overwritten before the link and
//! tells the streams of a fan-in apart, as it would in one process.
//!
//! A batch (kind 3) carries several messages of one topic that were already waiting at the
//! sink, so small messages pay libzmq's per-frame cost once per batch instead of once each.
//! Anything that does not parse is a [`Corrupt`] value, never a panic.
//!
//! The time field carries the message's creation time (`smx_box::Message::sent_ns`, placed on
//! the wall clock by the sink), so that the receiving net's end-to-end latency counts from the
//! creation in the sending process, not from the hand-over to ZeroMQ; a message without one
//! carries its send time. Both processes convert between their monotonic message clock and the
//! wall clock, so on one host the figures are exact up to the wall clock's adjustments during
//! the run; between hosts they are as good as the hosts' clock synchronisation.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// The format version written by this implementation.
pub const VERSION: u8 = 2;

/// Size of the fixed header at the start of the second frame.
pub const HEADER_LEN: usize = 30;

/// Every sequence number is below this, and every total a marker announces is at most this:
/// 2^53, the largest count a JSON number (an IEEE double) holds exactly, and more messages than
/// a sender at 100 million per second sends in two and a half years. A frame carrying a larger
/// one cannot come from an honest sender: it is [`Corrupt::Impossible`], so that no crafted
/// number can wrap or inflate a receiver's books past what they can state.
pub const MAX_SEQ: u64 = 1 << 53;

/// Longest topic frame a receiver books (a sink refuses longer topics): topics are the keys of
/// a receiver's per-stream books, so their length bounds what a peer can make it keep.
pub const MAX_TOPIC_LEN: usize = 1024;

/// What the second frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Data,
    EndOfStream,
    /// An end-of-stream marker from a sink that failed or gave up before its input ended: the
    /// same body (exact totals of what it sent), so the receiver ends at once and says why.
    /// Added without a version change: a reader that predates it counts it as corrupt and
    /// ends by its timeout, as it would have anyway.
    Abort,
    /// Several data messages of one topic with consecutive numbers (see [`super::batch`]).
    /// Added without a version change, like [`Kind::Abort`]: a reader that predates it counts
    /// each batch as one corrupt message and the messages in it as lost, so its books still
    /// balance. A sink with `batch = 1` never sends one.
    Batch,
}

/// The fixed header of the second frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub sender: u32,
    /// The message's number in the link's books, counted per (sender, topic).
    pub seq: u64,
    pub sent_unix_ns: u64,
    /// The message's own sequence number, as its producer gave it.
    pub msg_seq: u64,
}

/// Why a frame was rejected (the receiver counts it as corrupt and skips it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Corrupt {
    /// The body frame is shorter than the header.
    Short(usize),
    /// A format version this implementation does not know.
    Version(u8),
    /// An unknown kind byte.
    Kind(u8),
    /// The message had the wrong number of frames.
    Frames(usize),
    /// An end-of-stream body that does not parse.
    EndOfStream(&'static str),
    /// A batch body that does not parse exactly.
    Batch(&'static str),
    /// A frame that parses but cannot come from an honest sender (a number past [`MAX_SEQ`],
    /// more senders or streams than the books keep, a topic longer than [`MAX_TOPIC_LEN`]).
    Impossible(&'static str),
}

impl fmt::Display for Corrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Corrupt::Short(n) => write!(
                f,
                "body frame of {n} bytes is shorter than the {HEADER_LEN}-byte header"
            ),
            Corrupt::Version(v) => write!(f, "unknown wire format version {v} (this build reads {VERSION})"),
            Corrupt::Kind(k) => write!(f, "unknown message kind {k}"),
            Corrupt::Frames(n) => write!(f, "message has {n} frames, expected 2 (topic, body)"),
            Corrupt::EndOfStream(why) => write!(f, "malformed end-of-stream marker: {why}"),
            Corrupt::Batch(why) => write!(f, "malformed batch of messages: {why}"),
            Corrupt::Impossible(why) => write!(f, "impossible message: {why}"),
        }
    }
}

impl Header {
    /// Writes the header into the first [`HEADER_LEN`] bytes of `out`.
    pub fn write_to(&self, out: &mut [u8; HEADER_LEN]) {
        out[0] = VERSION;
        out[1] = match self.kind {
            Kind::Data => 0,
            Kind::EndOfStream => 1,
            Kind::Abort => 2,
            Kind::Batch => 3,
        };
        out[2..6].copy_from_slice(&self.sender.to_le_bytes());
        out[6..14].copy_from_slice(&self.seq.to_le_bytes());
        out[14..22].copy_from_slice(&self.sent_unix_ns.to_le_bytes());
        out[22..30].copy_from_slice(&self.msg_seq.to_le_bytes());
    }

    /// Splits a body frame into its header and the rest.
    pub fn parse(body: &[u8]) -> Result<(Header, &[u8]), Corrupt> {
        // The version first: a peer of another format (an older build, whose header was
        // shorter) is said to be one, not to send short frames.
        match body.first() {
            Some(&v) if v != VERSION => return Err(Corrupt::Version(v)),
            _ if body.len() < HEADER_LEN => return Err(Corrupt::Short(body.len())),
            _ => {}
        }
        let kind = match body[1] {
            0 => Kind::Data,
            1 => Kind::EndOfStream,
            2 => Kind::Abort,
            3 => Kind::Batch,
            other => return Err(Corrupt::Kind(other)),
        };
        let u64_at = |at: usize| u64::from_le_bytes(body[at..at + 8].try_into().expect("8 bytes"));
        let header = Header {
            kind,
            sender: u32::from_le_bytes(body[2..6].try_into().expect("4 bytes")),
            seq: u64_at(6),
            sent_unix_ns: u64_at(14),
            msg_seq: u64_at(22),
        };
        if header.seq >= MAX_SEQ {
            return Err(Corrupt::Impossible("sequence number of 2^53 or more"));
        }
        Ok((header, &body[HEADER_LEN..]))
    }
}

/// Builds a body frame (header followed by `rest`) into `buf`, reusing its allocation.
pub fn encode_body(header: &Header, rest: &[u8], buf: &mut Vec<u8>) {
    let mut head = [0u8; HEADER_LEN];
    header.write_to(&mut head);
    buf.clear();
    buf.extend_from_slice(&head);
    buf.extend_from_slice(rest);
}

/// Wall-clock nanoseconds since the Unix epoch (0 if the clock is before 1970).
pub fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let header = Header {
            kind: Kind::Data,
            sender: 0xdead_beef,
            seq: 1 << 40,
            sent_unix_ns: 1_700_000_000_000_000_000,
            msg_seq: u64::MAX - 3,
        };
        let mut buf = Vec::new();
        encode_body(&header, b"payload", &mut buf);
        assert_eq!(buf.len(), HEADER_LEN + 7);
        let (parsed, rest) = Header::parse(&buf).unwrap();
        assert_eq!(parsed, header);
        assert_eq!(rest, b"payload");
    }

    #[test]
    fn garbage_is_rejected_not_panicking() {
        assert_eq!(Header::parse(b""), Err(Corrupt::Short(0)));
        assert_eq!(Header::parse(&[VERSION, 0, 0]), Err(Corrupt::Short(3)));
        // A frame of the first format (a 22-byte header and an 8-byte payload) is of another
        // version, whatever its length.
        assert_eq!(Header::parse(&[1u8; 30]), Err(Corrupt::Version(1)));
        let mut buf = vec![0u8; HEADER_LEN];
        buf[0] = 9;
        assert_eq!(Header::parse(&buf), Err(Corrupt::Version(9)));
        buf[0] = VERSION;
        buf[1] = 7;
        assert_eq!(Header::parse(&buf), Err(Corrupt::Kind(7)));
        buf[1] = 3;
        assert_eq!(Header::parse(&buf).unwrap().0.kind, Kind::Batch);
    }

    #[test]
    fn numbers_past_the_books_are_impossible() {
        for seq in [MAX_SEQ, u64::MAX] {
            let mut buf = Vec::new();
            let header = Header {
                kind: Kind::Data,
                sender: 1,
                seq,
                sent_unix_ns: 0,
                msg_seq: 0,
            };
            encode_body(&header, b"", &mut buf);
            assert!(matches!(Header::parse(&buf), Err(Corrupt::Impossible(_))), "{seq}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse_or_fail_cleanly(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let _ = Header::parse(&bytes);
        }
    }
}
