//! Loss accounting of a receiving source, per (sender, topic) stream.
//!
//! Sequence numbers are counted by the sender per topic from 0 over every message it sent,
//! including those ZeroMQ refused at its HWM (the sender counts those and announces them in its
//! marker, so the receiver can tell loss at the sender from loss on the way). For each stream,
//! once the sender's end-of-stream total `n` is known:
//!
//! * `lost = n - unique received`, the figure from the sender's total, and independently
//! * `lost = missing numbers below the first received` (the slow joiner's share)
//!   `+ gaps between received numbers + numbers after the last received up to n`,
//!
//! which must agree; a disagreement (e.g. a restarted sender reusing its id) is reported as
//! inconsistent books rather than papered over. A number seen again is a duplicate; a missing
//! number that arrives late is counted as reordered and removed from the gaps.

use std::collections::{BTreeMap, HashMap};

use super::eos::TopicTotal;

/// More open gaps than this are not tracked individually: the oldest is forgotten (still
/// counted as lost; a late arrival in it then counts as a duplicate).
const MAX_GAPS: usize = 1 << 20;

/// The books of one (sender, topic) stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamBook {
    /// First sequence number received.
    first: Option<u64>,
    /// One past the highest sequence number received.
    next: u64,
    /// Distinct sequence numbers received.
    pub unique: u64,
    pub duplicates: u64,
    pub reordered: u64,
    /// Missing ranges `start -> end` (exclusive), including `0 -> first`.
    gaps: BTreeMap<u64, u64>,
    /// Numbers inside `gaps` (plus forgotten gaps).
    gap_total: u64,
    /// The sender's total for this stream, from its end-of-stream marker.
    pub announced: Option<u64>,
    /// Of these, refused at the sender (HWM), from the same marker.
    pub sender_dropped: u64,
}

impl StreamBook {
    /// Books one received sequence number.
    pub fn record(&mut self, seq: u64) {
        if self.first.is_none() {
            self.first = Some(seq);
            self.open_gap(0, seq);
            self.next = seq + 1;
            self.unique += 1;
        } else if seq == self.next {
            self.next += 1;
            self.unique += 1;
        } else if seq > self.next {
            self.open_gap(self.next, seq);
            self.next = seq + 1;
            self.unique += 1;
        } else if self.fill_gap(seq) {
            self.reordered += 1;
            self.unique += 1;
        } else {
            self.duplicates += 1;
        }
    }

    fn open_gap(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        self.gaps.insert(start, end);
        self.gap_total += end - start;
        if self.gaps.len() > MAX_GAPS {
            self.gaps.pop_first();
        }
    }

    fn fill_gap(&mut self, seq: u64) -> bool {
        let Some((&start, &end)) = self.gaps.range(..=seq).next_back() else {
            return false;
        };
        if seq >= end {
            return false;
        }
        self.gaps.remove(&start);
        if start < seq {
            self.gaps.insert(start, seq);
        }
        if seq + 1 < end {
            self.gaps.insert(seq + 1, end);
        }
        self.gap_total -= 1;
        true
    }

    /// Numbers missing below the first one received: the slow joiner's loss. With nothing
    /// received, every announced message counts here.
    pub fn lost_before_first(&self) -> u64 {
        match self.first {
            None => self.announced.unwrap_or(0),
            Some(first) => self.gaps.range(..first).map(|(&s, &e)| e.min(first) - s).sum(),
        }
    }

    /// Loss counted from sequence numbers: gaps, plus the tail after the last received number
    /// when the sender's total is known.
    pub fn lost_from_gaps(&self) -> u64 {
        match (self.first, self.announced) {
            (None, announced) => announced.unwrap_or(0),
            (Some(_), Some(n)) => self.gap_total + n.saturating_sub(self.next),
            (Some(_), None) => self.gap_total,
        }
    }

    /// Loss counted from the sender's total, if known.
    pub fn lost_from_total(&self) -> Option<u64> {
        self.announced.map(|n| n.saturating_sub(self.unique))
    }

    /// Both counts agree and no number lies beyond the announced total.
    pub fn consistent(&self) -> bool {
        match self.announced {
            None => true,
            Some(n) => self.next <= n && self.lost_from_total() == Some(self.lost_from_gaps()),
        }
    }
}

/// Totals of a source over all its streams.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Sum of the senders' announced totals (streams without a marker count what was seen).
    pub sent: u64,
    /// Data messages received, duplicates included.
    pub received: u64,
    /// Every message sent but not received, wherever it was lost.
    pub lost: u64,
    /// Of `lost`: refused by the senders' ZeroMQ at the HWM (from their markers).
    pub sender_dropped: u64,
    /// Of `lost`: missing before the first message received (slow joiner).
    pub lost_before_first: u64,
    /// Of `lost`: the rest, lost between the sender's socket and this one.
    pub lost_in_transit: u64,
    pub duplicates: u64,
    pub reordered: u64,
    /// Streams whose two loss counts disagree.
    pub inconsistent: u64,
    /// Streams still without an end-of-stream marker (their tail is unknown).
    pub unannounced: u64,
}

/// One (sender, topic) stream of a [`SourceBooks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamId(usize);

/// All streams of a source.
#[derive(Debug, Default)]
pub struct SourceBooks {
    streams: Vec<StreamBook>,
    index: HashMap<u32, HashMap<Vec<u8>, usize>>,
    /// The last stream looked up: consecutive messages almost always share it.
    last: Option<(u32, Vec<u8>, usize)>,
    /// Senders whose marker arrived.
    finished: std::collections::HashSet<u32>,
    /// Of these, senders whose marker was an abort marker (their stream ended early).
    aborted: std::collections::HashSet<u32>,
}

impl SourceBooks {
    /// The stream of `(sender, topic)`, created on first use; an index for [`Self::record_in`].
    pub fn stream_of(&mut self, sender: u32, topic: &[u8]) -> StreamId {
        if let Some((s, t, i)) = &self.last
            && *s == sender
            && t.as_slice() == topic
        {
            return StreamId(*i);
        }
        let topics = self.index.entry(sender).or_default();
        let i = match topics.get(topic) {
            Some(&i) => i,
            None => {
                self.streams.push(StreamBook::default());
                topics.insert(topic.to_vec(), self.streams.len() - 1);
                self.streams.len() - 1
            }
        };
        self.last = Some((sender, topic.to_vec(), i));
        StreamId(i)
    }

    /// Books a data message of a stream found with [`Self::stream_of`] (every message of a
    /// batch frame shares its sender and topic, so a batch looks its stream up once).
    pub fn record_in(&mut self, stream: StreamId, seq: u64) {
        self.streams[stream.0].record(seq);
    }

    fn stream(&mut self, sender: u32, topic: &[u8]) -> &mut StreamBook {
        let StreamId(i) = self.stream_of(sender, topic);
        &mut self.streams[i]
    }

    /// Books a data message.
    pub fn record(&mut self, sender: u32, topic: &[u8], seq: u64) {
        self.stream(sender, topic).record(seq);
    }

    /// Books a sender's end-of-stream marker; `wanted` says which of its topics this source
    /// subscribed to. Returns false for a repeat of a marker already booked.
    pub fn finish(&mut self, sender: u32, topics: &[TopicTotal], wanted: impl Fn(&[u8]) -> bool) -> bool {
        if !self.finished.insert(sender) {
            return false;
        }
        for t in topics.iter().filter(|t| wanted(&t.topic)) {
            let stream = self.stream(sender, &t.topic);
            stream.announced = Some(t.sent);
            stream.sender_dropped = t.dropped;
        }
        true
    }

    /// Records that `sender`'s (already booked) marker was an abort marker: its totals are
    /// exact, but its stream ended before its input did.
    pub fn mark_aborted(&mut self, sender: u32) {
        self.aborted.insert(sender);
    }

    /// Senders that ended with an abort marker.
    pub fn aborted_senders(&self) -> usize {
        self.aborted.len()
    }

    /// Senders whose marker arrived.
    pub fn finished_senders(&self) -> usize {
        self.finished.len()
    }

    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for s in &self.streams {
            let lost = s.lost_from_gaps();
            let before_first = s.lost_before_first();
            t.sent += s.announced.unwrap_or(s.unique + lost);
            t.received += s.unique + s.duplicates;
            t.lost += lost;
            t.sender_dropped += s.sender_dropped;
            t.lost_before_first += before_first;
            t.lost_in_transit += lost.saturating_sub(s.sender_dropped + before_first);
            t.duplicates += s.duplicates;
            t.reordered += s.reordered;
            t.inconsistent += u64::from(!s.consistent());
            t.unannounced += u64::from(s.announced.is_none());
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(seqs: &[u64], announced: Option<u64>) -> StreamBook {
        let mut b = StreamBook::default();
        for &s in seqs {
            b.record(s);
        }
        b.announced = announced;
        b
    }

    #[test]
    fn gap_free_stream_balances() {
        let b = book(&[0, 1, 2, 3], Some(4));
        assert_eq!(b.lost_from_total(), Some(0));
        assert_eq!(b.lost_from_gaps(), 0);
        assert!(b.consistent());
    }

    #[test]
    fn slow_joiner_gaps_and_tail_add_up() {
        let b = book(&[3, 4, 6, 7], Some(10));
        assert_eq!(b.lost_before_first(), 3);
        assert_eq!(b.lost_from_gaps(), 3 + 1 + 2);
        assert_eq!(b.lost_from_total(), Some(6));
        assert!(b.consistent());
    }

    #[test]
    fn duplicates_and_late_arrivals_are_told_apart() {
        let b = book(&[0, 2, 1, 2, 0, 5, 3], Some(6));
        assert_eq!(b.reordered, 2);
        assert_eq!(b.duplicates, 2);
        assert_eq!(b.unique, 5);
        assert_eq!(b.lost_from_total(), Some(1));
        assert_eq!(b.lost_from_gaps(), 1);
        assert!(b.consistent());
    }

    #[test]
    fn numbers_beyond_the_total_are_inconsistent() {
        assert!(!book(&[0, 1, 2], Some(2)).consistent());
    }

    #[test]
    fn unannounced_stream_counts_only_known_gaps() {
        let b = book(&[0, 5], None);
        assert_eq!(b.lost_from_gaps(), 4);
        assert_eq!(b.lost_from_total(), None);
    }

    #[test]
    fn source_books_follow_markers_and_filters() {
        let mut books = SourceBooks::default();
        books.record(7, b"a", 0);
        books.record(7, b"a", 1);
        books.record(7, b"b", 1);
        let total = |t: &[u8], sent, dropped| TopicTotal {
            topic: t.to_vec(),
            sent,
            dropped,
        };
        let topics = vec![total(b"a", 3, 1), total(b"b", 2, 0), total(b"zz", 5, 4)];
        assert!(books.finish(7, &topics, |t| t != b"zz"));
        assert!(!books.finish(7, &topics, |_| true), "a repeated marker is ignored");
        let t = books.totals();
        assert_eq!((t.sent, t.received, t.lost), (5, 3, 2));
        assert_eq!((t.sender_dropped, t.lost_before_first, t.lost_in_transit), (1, 1, 0));
        assert_eq!((t.inconsistent, t.unannounced), (0, 0));
        assert_eq!(books.finished_senders(), 1);
    }

    proptest::proptest! {
        #[test]
        fn books_always_balance(seqs in proptest::collection::vec(0u64..50, 0..200)) {
            let n = 50;
            let b = book(&seqs, Some(n));
            proptest::prop_assert!(b.consistent());
            proptest::prop_assert_eq!(b.unique + b.lost_from_gaps(), n);
            proptest::prop_assert_eq!(b.unique + b.duplicates, seqs.len() as u64);
        }
    }
}
