//! The end-of-stream protocol.
//!
//! When its input ends, a sink sends an end-of-stream marker: a message of kind
//! [`Kind::EndOfStream`](super::wire::Kind) on the reserved topic [`CONTROL_TOPIC`], whose body
//! lists, per topic it used, how many messages it sent under that topic (sequence numbers are
//! counted per topic, so a subscriber that filters topics still sees gap-free numbering) and how
//! many of them ZeroMQ refused at the sender (HWM drops; they keep their numbers, so the
//! receiver sees them as gaps and can tell them from losses on the way).
//!
//! Why this is reliable over PUB/SUB, where a plain PUB silently drops any message, the marker
//! included, once a subscriber's queue is full: the pubsub sink is an XPUB socket with
//! `ZMQ_XPUB_NODROP`, so a full queue makes the send fail with `EAGAIN` instead of dropping.
//! Data messages refused that way are counted as drops; the marker is retried until it is
//! queued (or the sink's `timeout` passes). Once queued, a frame is only lost if the connection
//! breaks, and then the receiver ends by its idle `timeout` and says so. The marker is also
//! sent [`REPEATS`] times, because repeats cost nothing (the receiver ignores all but the
//! first per sender) and cover a receiver that reconnects during shutdown. Every source
//! subscribes to [`CONTROL_TOPIC`] besides its own prefix, so a topic filter never hides the
//! marker, and the sink's `sync` option counts those control subscriptions to know how many
//! receivers have joined.
//!
//! A sink that fails (a step error, an init error after its socket opened) or gives up (no
//! receiver for `timeout`, a stop while blocked) ends its stream the same way with an *abort*
//! marker ([`Kind::Abort`](super::wire::Kind), same body and topic, sent as reliably): its
//! receivers end at once, report `aborted`, and their books are exact up to what was sent. A
//! sink whose process is killed sends nothing; its receivers end by their idle `timeout`, and
//! messages after the last one received are then unknown (`tail_unknown`).

use std::collections::HashSet;

use super::wire::{Corrupt, MAX_SEQ, MAX_TOPIC_LEN};

/// The topic frame of every end-of-stream marker.
pub const CONTROL_TOPIC: &[u8] = b"\x00smx/eos";

/// What a receiver sends back on the watch connection once its stream ended by the markers,
/// before it closes: the sender then knows the marker arrived. Without it a receiver that left
/// after the first of the [`REPEATS`] looks, to a sender still queuing the others, like a host
/// that stopped answering (both cut the watch), and an end that went well would be booked as
/// a loss.
pub const WATCH_ENDED: &[u8] = b"\x00smx/ended";

/// How long a receiver's close waits for [`WATCH_ENDED`] to leave: far above a hand-over on a
/// live connection, short enough not to hold up the end of a run whose sender is gone.
pub const WATCH_ENDED_LINGER: std::time::Duration = std::time::Duration::from_millis(200);

/// How many times a sink sends its marker.
pub const REPEATS: u64 = 3;

/// Largest number of distinct topics one sink may use (keeps the marker a sane size: with
/// topics of up to [`MAX_TOPIC_LEN`] bytes, at most about 17 MB).
pub const MAX_TOPICS: usize = 16_384;

/// What a sender reports about one topic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicTotal {
    pub topic: Vec<u8>,
    /// Messages sent (numbered) under the topic.
    pub sent: u64,
    /// Of these, refused by ZeroMQ at the sender.
    pub dropped: u64,
}

/// The body of an end-of-stream marker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndOfStream {
    pub topics: Vec<TopicTotal>,
}

impl EndOfStream {
    /// Messages sent under all topics (saturating: a decoded marker's totals are each at most
    /// [`MAX_SEQ`], so the sum only saturates for a marker built by hand).
    pub fn total(&self) -> u64 {
        self.topics.iter().fold(0u64, |sum, t| sum.saturating_add(t.sent))
    }

    /// Bytes of the encoded body of a marker listing `topics` topics of `topic_bytes` bytes in
    /// all.
    pub fn encoded_len(topics: usize, topic_bytes: usize) -> usize {
        4 + topics * (4 + 16) + topic_bytes
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.topics.iter().map(|t| t.topic.len() + 20).sum::<usize>());
        out.extend_from_slice(&(self.topics.len() as u32).to_le_bytes());
        for t in &self.topics {
            out.extend_from_slice(&(t.topic.len() as u32).to_le_bytes());
            out.extend_from_slice(&t.topic);
            out.extend_from_slice(&t.sent.to_le_bytes());
            out.extend_from_slice(&t.dropped.to_le_bytes());
        }
        out
    }

    pub fn decode(mut body: &[u8]) -> Result<EndOfStream, Corrupt> {
        let n = take_u32(&mut body)? as usize;
        if n > MAX_TOPICS {
            return Err(Corrupt::EndOfStream("too many topics"));
        }
        // Not more than the body can hold, whatever the count claims.
        let mut topics = Vec::with_capacity(n.min(body.len() / 20));
        let mut seen = HashSet::new();
        for _ in 0..n {
            let len = take_u32(&mut body)? as usize;
            if body.len() < len {
                return Err(Corrupt::EndOfStream("topic runs past the end"));
            }
            if len > MAX_TOPIC_LEN {
                return Err(Corrupt::Impossible("a marker's topic is longer than 1024 bytes"));
            }
            let (topic, rest) = body.split_at(len);
            body = rest;
            let sent = take_u64(&mut body)?;
            let dropped = take_u64(&mut body)?;
            if dropped > sent {
                return Err(Corrupt::EndOfStream("more dropped than sent"));
            }
            if sent > MAX_SEQ {
                return Err(Corrupt::Impossible("a marker's total is past 2^53"));
            }
            if !seen.insert(topic) {
                return Err(Corrupt::EndOfStream("a topic listed twice"));
            }
            topics.push(TopicTotal {
                topic: topic.to_vec(),
                sent,
                dropped,
            });
        }
        if !body.is_empty() {
            return Err(Corrupt::EndOfStream("trailing bytes"));
        }
        Ok(EndOfStream { topics })
    }
}

fn take_u32(body: &mut &[u8]) -> Result<u32, Corrupt> {
    let (head, rest) = body.split_at_checked(4).ok_or(Corrupt::EndOfStream("truncated"))?;
    *body = rest;
    Ok(u32::from_le_bytes(head.try_into().expect("4 bytes")))
}

fn take_u64(body: &mut &[u8]) -> Result<u64, Corrupt> {
    let (head, rest) = body.split_at_checked(8).ok_or(Corrupt::EndOfStream("truncated"))?;
    *body = rest;
    Ok(u64::from_le_bytes(head.try_into().expect("8 bytes")))
}

/// How a source's stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// Every expected sender's marker arrived and the socket was drained: the books are exact.
    Marker,
    /// No traffic for `timeout`: messages after the last one received are unknown.
    Timeout,
    /// The run was stopped (Ctrl-C) or the consumers ended first.
    Stopped,
    /// With heartbeats on, every sender's connection was cut (its process died, or its host
    /// stopped answering the heartbeats) and none came back within a heartbeat: messages
    /// after the last one received are unknown.
    PeerLost,
    /// A sender's abort marker arrived (it failed or gave up before its input ended) and the
    /// socket was drained: the books are exact up to what the sender had sent.
    Aborted,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Marker => "marker",
            EndReason::Timeout => "timeout",
            EndReason::Stopped => "stopped",
            EndReason::PeerLost => "peer lost",
            EndReason::Aborted => "aborted",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_round_trips() {
        let eos = EndOfStream {
            topics: vec![topic(b"", 10, 4), topic(b"temp/a", 3, 0)],
        };
        assert_eq!(eos.total(), 13);
        assert_eq!(EndOfStream::decode(&eos.encode()), Ok(eos));
    }

    #[test]
    fn truncated_or_padded_markers_are_corrupt() {
        let bytes = EndOfStream {
            topics: vec![topic(b"x", 1, 0)],
        }
        .encode();
        for cut in 0..bytes.len() {
            assert!(EndOfStream::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut padded = bytes.clone();
        padded.push(0);
        assert!(EndOfStream::decode(&padded).is_err());
        assert!(EndOfStream::decode(&[0xff, 0xff, 0xff, 0xff]).is_err());
        let impossible = EndOfStream {
            topics: vec![topic(b"x", 1, 2)],
        };
        assert!(EndOfStream::decode(&impossible.encode()).is_err());
    }

    #[test]
    fn markers_with_impossible_totals_are_corrupt() {
        let at_limit = EndOfStream {
            topics: vec![topic(b"x", MAX_SEQ, 0)],
        };
        assert_eq!(EndOfStream::decode(&at_limit.encode()), Ok(at_limit.clone()));
        for eos in [
            EndOfStream {
                topics: vec![topic(b"x", MAX_SEQ + 1, 0)],
            },
            EndOfStream {
                topics: vec![topic(b"x", u64::MAX, 0)],
            },
            EndOfStream {
                topics: vec![topic(b"x", 1, 0), topic(b"x", 2, 0)],
            },
            EndOfStream {
                topics: vec![topic(&[b'a'; MAX_TOPIC_LEN + 1], 1, 0)],
            },
        ] {
            assert!(EndOfStream::decode(&eos.encode()).is_err(), "{eos:?}");
        }
        assert_eq!(EndOfStream::encoded_len(2, 7), at_limit.encode().len() + 20 + 6);
    }

    fn topic(t: &[u8], sent: u64, dropped: u64) -> TopicTotal {
        TopicTotal {
            topic: t.to_vec(),
            sent,
            dropped,
        }
    }
}
