//! The end-of-stream protocol.
//!
//! When its input ends, a sink sends an end-of-stream marker: a message of kind
//! [`Kind::EndOfStream`](super::wire::Kind) on the reserved topic [`CONTROL_TOPIC`], whose body
//! lists, per topic it used, how many messages it sent under that topic (sequence numbers are
//! counted per topic, so a subscriber that filters topics still sees gap-free numbering), plus
//! the messages ZeroMQ refused at the sender (HWM drops).
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

use super::wire::Corrupt;

/// The topic frame of every end-of-stream marker.
pub const CONTROL_TOPIC: &[u8] = b"\x00smx/eos";

/// How many times a sink sends its marker.
pub const REPEATS: u64 = 3;

/// Largest number of distinct topics one sink may use (keeps the marker a sane size).
pub const MAX_TOPICS: usize = 65_536;

/// The body of an end-of-stream marker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndOfStream {
    /// Per topic: messages sent (handed to ZeroMQ and accepted) under it.
    pub topics: Vec<(Vec<u8>, u64)>,
    /// Messages ZeroMQ refused at the sender (not numbered, so not seen as gaps).
    pub dropped: u64,
}

impl EndOfStream {
    /// Messages sent under all topics.
    pub fn total(&self) -> u64 {
        self.topics.iter().map(|(_, n)| *n).sum()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + self.topics.iter().map(|(t, _)| t.len() + 12).sum::<usize>());
        out.extend_from_slice(&(self.topics.len() as u32).to_le_bytes());
        for (topic, count) in &self.topics {
            out.extend_from_slice(&(topic.len() as u32).to_le_bytes());
            out.extend_from_slice(topic);
            out.extend_from_slice(&count.to_le_bytes());
        }
        out.extend_from_slice(&self.dropped.to_le_bytes());
        out
    }

    pub fn decode(mut body: &[u8]) -> Result<EndOfStream, Corrupt> {
        let n = take_u32(&mut body)? as usize;
        if n > MAX_TOPICS {
            return Err(Corrupt::EndOfStream("too many topics"));
        }
        let mut topics = Vec::with_capacity(n);
        for _ in 0..n {
            let len = take_u32(&mut body)? as usize;
            if body.len() < len {
                return Err(Corrupt::EndOfStream("topic runs past the end"));
            }
            let (topic, rest) = body.split_at(len);
            body = rest;
            topics.push((topic.to_vec(), take_u64(&mut body)?));
        }
        let dropped = take_u64(&mut body)?;
        if !body.is_empty() {
            return Err(Corrupt::EndOfStream("trailing bytes"));
        }
        Ok(EndOfStream { topics, dropped })
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
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Marker => "marker",
            EndReason::Timeout => "timeout",
            EndReason::Stopped => "stopped",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_round_trips() {
        let eos = EndOfStream {
            topics: vec![(b"".to_vec(), 10), (b"temp/a".to_vec(), 3)],
            dropped: 4,
        };
        assert_eq!(eos.total(), 13);
        assert_eq!(EndOfStream::decode(&eos.encode()), Ok(eos));
    }

    #[test]
    fn truncated_or_padded_markers_are_corrupt() {
        let bytes = EndOfStream {
            topics: vec![(b"x".to_vec(), 1)],
            dropped: 0,
        }
        .encode();
        for cut in 0..bytes.len() {
            assert!(EndOfStream::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut padded = bytes.clone();
        padded.push(0);
        assert!(EndOfStream::decode(&padded).is_err());
        assert!(EndOfStream::decode(&[0xff, 0xff, 0xff, 0xff]).is_err());
    }
}
