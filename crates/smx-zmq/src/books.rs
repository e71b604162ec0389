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
//! inconsistent books rather than papered over. A number seen again is a duplicate (counted, and
//! not passed on by the receiver); a missing number that arrives late is counted as reordered
//! and removed from the gaps.
//!
//! The books are written for a port that anyone may reach, so nothing a peer sends can make
//! them wrong without saying so, or make them grow without bound:
//!
//! * every count is checked: numbers and totals are below [`MAX_SEQ`] (the wire rejects larger
//!   ones as impossible) and sums saturate, so no crafted number wraps a figure;
//! * a stream is flagged inconsistent when its sender contradicts itself: a number past the
//!   total its marker announced, data after its marker, a topic its marker does not list, or
//!   a second marker whose totals differ from the first;
//! * a marker from a sender none of whose data arrived is booked (an honest sender whose
//!   messages were all lost sends one too) but counted as a *silent* sender, and while a sender
//!   that did send data has no marker yet, the stream has not ended
//!   ([`SourceBooks::complete`]), so an invented sender id cannot end someone else's stream;
//! * at most [`MAX_SENDERS`] senders and [`MAX_STREAMS`] streams are kept, and
//!   [`MAX_GAPS`] open gaps over all streams: a frame that would need more is refused (counted
//!   corrupt by the receiver), and the oldest gap of a stream past the gap budget is forgotten
//!   (still counted as lost; a late arrival in it then counts as a duplicate).

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};

use super::eos::TopicTotal;
use super::wire::{Corrupt, MAX_SEQ, MAX_TOPIC_LEN};

/// Most sender ids a source's figures list ([`SourceBooks::sender_ids`]).
pub const SENDER_IDS_SHOWN: usize = 16;

/// A sender's id as the figures of both ends write it: eight hex digits.
pub fn sender_id_text(id: u32) -> String {
    format!("{id:08x}")
}

/// Most senders one source keeps books for.
pub const MAX_SENDERS: usize = 1024;

/// Most (sender, topic) streams one source keeps books for.
pub const MAX_STREAMS: usize = 16_384;

/// Most open gaps kept over all streams of a source (about 10 MB).
pub const MAX_GAPS: usize = 1 << 18;

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
    /// The sender contradicted itself about this stream (see the module docs).
    pub contradicted: bool,
}

impl StreamBook {
    /// Books one received sequence number: new, a duplicate, or (nothing booked) a number of
    /// [`MAX_SEQ`] or more, which no honest sender sends.
    pub fn record(&mut self, seq: u64) -> Booked {
        if seq >= MAX_SEQ {
            return Booked::Impossible;
        }
        let mut booked = Booked::New;
        if self.announced.is_some() {
            // An honest sender's marker follows all its data on the same connection.
            self.contradicted = true;
        }
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
            booked = Booked::Duplicate;
        }
        if self.gaps.len() > MAX_GAPS {
            self.forget_oldest_gap();
        }
        booked
    }

    fn open_gap(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        self.gaps.insert(start, end);
        self.gap_total += end - start;
    }

    /// Stops tracking the oldest gap; its numbers stay counted as lost.
    fn forget_oldest_gap(&mut self) {
        self.gaps.pop_first();
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
            Some(first) => self
                .gaps
                .range(..first)
                .fold(0u64, |sum, (&s, &e)| sum.saturating_add(e.min(first) - s)),
        }
    }

    /// Loss counted from sequence numbers: gaps, plus the tail after the last received number
    /// when the sender's total is known.
    pub fn lost_from_gaps(&self) -> u64 {
        match (self.first, self.announced) {
            (None, announced) => announced.unwrap_or(0),
            (Some(_), Some(n)) => self.gap_total.saturating_add(n.saturating_sub(self.next)),
            (Some(_), None) => self.gap_total,
        }
    }

    /// Loss counted from the sender's total, if known.
    pub fn lost_from_total(&self) -> Option<u64> {
        self.announced.map(|n| n.saturating_sub(self.unique))
    }

    /// Both counts agree, no number lies beyond the announced total, and the sender did not
    /// contradict itself.
    pub fn consistent(&self) -> bool {
        if self.contradicted {
            return false;
        }
        match self.announced {
            None => true,
            Some(n) => n <= MAX_SEQ && self.next <= n && self.lost_from_total() == Some(self.lost_from_gaps()),
        }
    }
}

/// What booking a received sequence number found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Booked {
    /// Not seen before: the message is passed on.
    New,
    /// Seen before (a replay, a second sender using the same id, overlapping batches): counted
    /// and not passed on, so nothing downstream reads a message twice.
    Duplicate,
    /// A number no honest sender sends: nothing booked.
    Impossible,
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
    /// Streams whose two loss counts disagree, or whose sender contradicted itself (a sum
    /// that would pass `u64::MAX` counts one more).
    pub inconsistent: u64,
    /// Streams still without an end-of-stream marker (their tail is unknown).
    pub unannounced: u64,
}

/// One (sender, topic) stream of a [`SourceBooks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamId(usize);

/// What [`SourceBooks::finish`] made of a marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// The sender's first marker: its totals are booked.
    First,
    /// A repeat with the same body: ignored.
    Repeat,
    /// A repeat whose body differs from the first: the sender's streams are flagged
    /// inconsistent.
    Conflicting,
}

/// What a source knows about one sender.
#[derive(Debug, Default)]
struct SenderBook {
    /// Its streams by topic.
    topics: HashMap<Vec<u8>, usize>,
    /// Some data message of it was booked (or a batch of it arrived).
    data: bool,
    /// A hash of its first marker's body (header aside), to tell a repeat from a conflict.
    marker: Option<u64>,
    aborted: bool,
    conflicting: bool,
}

/// All streams of a source.
#[derive(Debug, Default)]
pub struct SourceBooks {
    streams: Vec<StreamBook>,
    senders: HashMap<u32, SenderBook>,
    /// The last stream looked up: consecutive messages almost always share it.
    last: Option<(u32, Vec<u8>, usize)>,
    /// Open gaps over all streams.
    gap_entries: usize,
}

impl SourceBooks {
    /// The book of `sender`, created on first use unless [`MAX_SENDERS`] are kept already.
    fn sender(&mut self, sender: u32) -> Result<&mut SenderBook, Corrupt> {
        let full = self.senders.len() >= MAX_SENDERS;
        match self.senders.entry(sender) {
            std::collections::hash_map::Entry::Occupied(e) => Ok(e.into_mut()),
            std::collections::hash_map::Entry::Vacant(_) if full => {
                Err(Corrupt::Impossible("more senders than the books keep (1024)"))
            }
            std::collections::hash_map::Entry::Vacant(e) => Ok(e.insert(SenderBook::default())),
        }
    }

    /// The stream of `(sender, topic)` for a data message or batch, created on first use; an
    /// index for [`Self::record_in`]. Refused past the limits (see the module docs).
    pub fn stream_of(&mut self, sender: u32, topic: &[u8]) -> Result<StreamId, Corrupt> {
        if let Some((s, t, i)) = &self.last
            && *s == sender
            && t.as_slice() == topic
        {
            return Ok(StreamId(*i));
        }
        let i = self.stream_index(sender, topic)?;
        self.senders.get_mut(&sender).expect("booked sender").data = true;
        self.last = Some((sender, topic.to_vec(), i));
        Ok(StreamId(i))
    }

    fn stream_index(&mut self, sender: u32, topic: &[u8]) -> Result<usize, Corrupt> {
        if topic.len() > MAX_TOPIC_LEN {
            return Err(Corrupt::Impossible("a topic longer than 1024 bytes"));
        }
        let next = self.streams.len();
        let book = self.sender(sender)?;
        if let Some(&i) = book.topics.get(topic) {
            return Ok(i);
        }
        if next >= MAX_STREAMS {
            return Err(Corrupt::Impossible("more streams than the books keep (16384)"));
        }
        book.topics.insert(topic.to_vec(), next);
        let after_marker = book.marker.is_some();
        self.streams.push(StreamBook {
            // A stream its sender's marker did not list.
            contradicted: after_marker,
            ..StreamBook::default()
        });
        Ok(next)
    }

    /// Books a data message of a stream found with [`Self::stream_of`] (every message of a
    /// batch frame shares its sender and topic, so a batch looks its stream up once).
    pub fn record_in(&mut self, stream: StreamId, seq: u64) -> Booked {
        let book = &mut self.streams[stream.0];
        let before = book.gaps.len();
        let booked = book.record(seq);
        let after = book.gaps.len();
        self.gap_entries = (self.gap_entries + after).saturating_sub(before);
        if self.gap_entries > MAX_GAPS && after > 0 {
            book.forget_oldest_gap();
            self.gap_entries -= 1;
        }
        booked
    }

    /// Books a data message: whether it is new (a duplicate is counted, not to be passed on).
    pub fn record(&mut self, sender: u32, topic: &[u8], seq: u64) -> Result<bool, Corrupt> {
        let stream = self.stream_of(sender, topic)?;
        match self.record_in(stream, seq) {
            Booked::New => Ok(true),
            Booked::Duplicate => Ok(false),
            Booked::Impossible => Err(Corrupt::Impossible("sequence number of 2^53 or more")),
        }
    }

    /// Books a sender's end-of-stream marker (`body`: its bytes after the header, to tell a
    /// repeat from a conflicting marker); `wanted` says which of its topics this source
    /// subscribed to. Refused, with nothing booked, past the limits.
    pub fn finish(
        &mut self,
        sender: u32,
        body: &[u8],
        topics: &[TopicTotal],
        wanted: impl Fn(&[u8]) -> bool,
    ) -> Result<Marker, Corrupt> {
        let mut hasher = DefaultHasher::new();
        body.hash(&mut hasher);
        let digest = hasher.finish();
        let new_streams = match self.senders.get(&sender) {
            Some(book) => match book.marker {
                Some(first) if first == digest => return Ok(Marker::Repeat),
                Some(_) => {
                    self.conflict(sender);
                    return Ok(Marker::Conflicting);
                }
                None => topics
                    .iter()
                    .filter(|t| wanted(&t.topic) && !book.topics.contains_key(&t.topic))
                    .count(),
            },
            None => topics.iter().filter(|t| wanted(&t.topic)).count(),
        };
        if self.streams.len() + new_streams > MAX_STREAMS {
            return Err(Corrupt::Impossible("more streams than the books keep (16384)"));
        }
        self.sender(sender)?;
        let mut listed = Vec::new();
        for t in topics.iter().filter(|t| wanted(&t.topic)) {
            let i = self.stream_index(sender, &t.topic)?;
            let stream = &mut self.streams[i];
            stream.announced = Some(t.sent);
            stream.sender_dropped = t.dropped;
            listed.push(i);
        }
        let book = self.senders.get_mut(&sender).expect("booked sender");
        book.marker = Some(digest);
        for &i in book.topics.values() {
            if !listed.contains(&i) {
                // Data under a topic its own marker does not list.
                self.streams[i].contradicted = true;
            }
        }
        Ok(Marker::First)
    }

    /// A second marker of `sender` differs from its first: every stream of it is flagged.
    fn conflict(&mut self, sender: u32) {
        if let Some(book) = self.senders.get_mut(&sender) {
            book.conflicting = true;
            for &i in book.topics.values() {
                self.streams[i].contradicted = true;
            }
        }
    }

    /// Records that `sender`'s (already booked) marker was an abort marker: its totals are
    /// exact, but its stream ended before its input did.
    pub fn mark_aborted(&mut self, sender: u32) {
        if let Some(book) = self.senders.get_mut(&sender) {
            book.aborted = true;
        }
    }

    /// Senders that ended with an abort marker.
    pub fn aborted_senders(&self) -> usize {
        self.senders.values().filter(|b| b.aborted).count()
    }

    /// Senders whose marker arrived.
    pub fn finished_senders(&self) -> usize {
        self.senders.values().filter(|b| b.marker.is_some()).count()
    }

    /// Senders heard from (data or marker).
    pub fn senders_seen(&self) -> usize {
        self.senders.len()
    }

    /// The ids of the senders heard from, in order, as [`sender_id_text`] writes them, the first
    /// [`SENDER_IDS_SHOWN`] of them: a link's one sender, or a few of a pipeline's.
    pub fn sender_ids(&self) -> String {
        let mut ids: Vec<u32> = self.senders.keys().copied().collect();
        ids.sort_unstable();
        ids.iter()
            .take(SENDER_IDS_SHOWN)
            .map(|id| sender_id_text(*id))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Senders whose marker arrived without any data of theirs: an honest sender whose
    /// messages were all lost, or a marker with an invented sender id.
    pub fn silent_senders(&self) -> usize {
        self.senders.values().filter(|b| b.marker.is_some() && !b.data).count()
    }

    /// Senders that sent two different markers.
    pub fn conflicting_senders(&self) -> usize {
        self.senders.values().filter(|b| b.conflicting).count()
    }

    /// Senders that sent data but no marker yet.
    pub fn unfinished_senders(&self) -> usize {
        self.senders.values().filter(|b| b.data && b.marker.is_none()).count()
    }

    /// Whether the stream has ended: the markers of at least `expected` senders arrived, and
    /// every sender whose data arrived has sent its marker.
    pub fn complete(&self, expected: u64) -> bool {
        self.finished_senders() as u64 >= expected && self.unfinished_senders() == 0
    }

    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        let mut overflow = false;
        let mut add = |sum: &mut u64, v: u64| {
            *sum = sum.checked_add(v).unwrap_or_else(|| {
                overflow = true;
                u64::MAX
            });
        };
        for s in &self.streams {
            let lost = s.lost_from_gaps();
            let before_first = s.lost_before_first();
            add(&mut t.sent, s.announced.unwrap_or(s.unique.saturating_add(lost)));
            add(&mut t.received, s.unique.saturating_add(s.duplicates));
            add(&mut t.lost, lost);
            add(&mut t.sender_dropped, s.sender_dropped);
            add(&mut t.lost_before_first, before_first);
            add(
                &mut t.lost_in_transit,
                lost.saturating_sub(s.sender_dropped.saturating_add(before_first)),
            );
            add(&mut t.duplicates, s.duplicates);
            add(&mut t.reordered, s.reordered);
            add(&mut t.inconsistent, u64::from(!s.consistent()));
            add(&mut t.unannounced, u64::from(s.announced.is_none()));
        }
        if overflow {
            t.inconsistent = t.inconsistent.saturating_add(1);
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

    fn total(t: &[u8], sent: u64, dropped: u64) -> TopicTotal {
        TopicTotal {
            topic: t.to_vec(),
            sent,
            dropped,
        }
    }

    #[test]
    fn source_books_follow_markers_and_filters() {
        let mut books = SourceBooks::default();
        books.record(7, b"a", 0).unwrap();
        books.record(7, b"a", 1).unwrap();
        books.record(7, b"b", 1).unwrap();
        let topics = vec![total(b"a", 3, 1), total(b"b", 2, 0), total(b"zz", 5, 4)];
        assert!(!books.complete(1), "data but no marker yet");
        assert_eq!(books.finish(7, b"m", &topics, |t| t != b"zz"), Ok(Marker::First));
        assert_eq!(
            books.finish(7, b"m", &topics, |_| true),
            Ok(Marker::Repeat),
            "a repeated marker is ignored"
        );
        let t = books.totals();
        assert_eq!((t.sent, t.received, t.lost), (5, 3, 2));
        assert_eq!((t.sender_dropped, t.lost_before_first, t.lost_in_transit), (1, 1, 0));
        assert_eq!((t.inconsistent, t.unannounced), (0, 0));
        assert_eq!((books.finished_senders(), books.silent_senders()), (1, 0));
        assert!(books.complete(1));
    }

    /// Numbers a lying peer may send: a sequence number of 2^64-1, or a marker claiming 2^64-1
    /// sent, must never wrap the books (they once gave `lost 18446744073709551613` and consistent
    /// books).
    #[test]
    fn crafted_numbers_never_wrap_the_books() {
        let mut b = StreamBook::default();
        assert_eq!(b.record(0), Booked::New);
        assert_eq!(
            b.record(u64::MAX),
            Booked::Impossible,
            "an impossible number is refused, not booked"
        );
        assert_eq!(b.record(MAX_SEQ), Booked::Impossible);
        assert_eq!(b.record(1), Booked::New);
        assert_eq!(b.record(1), Booked::Duplicate);
        b.announced = Some(2);
        assert!(b.consistent());
        assert_eq!((b.unique, b.lost_from_gaps()), (2, 0));

        let mut books = SourceBooks::default();
        books.record(1, b"", 0).unwrap();
        assert!(books.record(1, b"", u64::MAX).is_err());
        // A total past 2^53 never comes off the wire (the marker is corrupt); built by hand it
        // is inconsistent, not a huge loss in balanced books.
        books.finish(1, b"m", &[total(b"", u64::MAX, 0)], |_| true).unwrap();
        let t = books.totals();
        assert_eq!(t.inconsistent, 1, "{t:?}");
        // Sums saturate instead of wrapping, and say so.
        let mut many = SourceBooks::default();
        for sender in 0..3 {
            many.finish(sender, b"m", &[total(b"", u64::MAX / 2, 0)], |_| true)
                .unwrap();
        }
        let t = many.totals();
        assert_eq!(t.sent, u64::MAX);
        assert!(t.inconsistent >= 1);
    }

    /// One marker with an invented sender id must not stop a receiver mid-stream.
    #[test]
    fn a_marker_from_a_silent_sender_does_not_end_a_stream_in_progress() {
        let mut books = SourceBooks::default();
        for seq in 0..10 {
            books.record(1, b"", seq).unwrap();
        }
        assert_eq!(books.finish(666, b"forged", &[], |_| true), Ok(Marker::First));
        assert!(!books.complete(1), "sender 1 is still sending");
        assert_eq!((books.silent_senders(), books.senders_seen()), (1, 2));
        assert_eq!(
            books.finish(1, b"real", &[total(b"", 12, 0)], |_| true),
            Ok(Marker::First)
        );
        assert!(books.complete(1));
        let t = books.totals();
        assert_eq!((t.sent, t.received, t.lost, t.inconsistent), (12, 10, 2, 0));
    }

    #[test]
    fn a_sender_that_contradicts_itself_makes_its_books_inconsistent() {
        // A forged marker with the real id and a plausible total, then more real data.
        let mut books = SourceBooks::default();
        books.record(1, b"", 0).unwrap();
        books.finish(1, b"forged", &[total(b"", 5, 0)], |_| true).unwrap();
        books.record(1, b"", 1).unwrap();
        assert_eq!(books.totals().inconsistent, 1, "data after the marker");
        // Then the real marker, with other totals.
        assert_eq!(
            books.finish(1, b"real", &[total(b"", 2, 0)], |_| true),
            Ok(Marker::Conflicting)
        );
        assert_eq!(books.conflicting_senders(), 1);
        // Data under a topic that the sender's marker does not list.
        let mut books = SourceBooks::default();
        books.record(2, b"a", 0).unwrap();
        books.record(2, b"b", 0).unwrap();
        books.finish(2, b"m", &[total(b"a", 1, 0)], |_| true).unwrap();
        let t = books.totals();
        assert_eq!((t.inconsistent, t.unannounced), (1, 1));
        books.record(2, b"c", 0).unwrap();
        assert_eq!(books.totals().inconsistent, 2, "a new topic after the marker");
    }

    #[test]
    fn per_sender_state_is_capped() {
        let mut books = SourceBooks::default();
        let mut refused = 0;
        for sender in 0..(MAX_SENDERS as u32 + 100) {
            if books.record(sender, b"", 0).is_err() {
                refused += 1;
            }
        }
        assert_eq!((books.senders_seen(), refused), (MAX_SENDERS, 100));
        assert!(books.finish(u32::MAX, b"m", &[], |_| true).is_err());
        assert!(books.record(1, &[0; MAX_TOPIC_LEN + 1], 0).is_err());
        let mut streams = SourceBooks::default();
        let mut refused = 0;
        for i in 0..(MAX_STREAMS as u32 + 10) {
            if streams.record(i % 4, &i.to_le_bytes(), 0).is_err() {
                refused += 1;
            }
        }
        assert_eq!(refused, 10);
        // A marker that would need more streams is refused whole.
        let listed: Vec<TopicTotal> = (0..4u32).map(|i| total(&(1_000_000 + i).to_le_bytes(), 1, 0)).collect();
        assert!(streams.finish(0, b"m", &listed, |_| true).is_err());
        assert_eq!(streams.finished_senders(), 0);
    }

    #[test]
    fn open_gaps_are_capped_over_all_streams() {
        let mut books = SourceBooks::default();
        // Every other number: one gap per message, spread over a few streams.
        for seq in 0..(MAX_GAPS as u64 + 1000) {
            books.record((seq % 3) as u32, b"", seq * 2).unwrap();
        }
        assert!(books.gap_entries <= MAX_GAPS);
        let kept: usize = books.streams.iter().map(|s| s.gaps.len()).sum();
        assert_eq!(kept, books.gap_entries);
        // Forgotten gaps still count as lost.
        for sender in 0..3u32 {
            let next = books.streams[sender as usize].next;
            books.finish(sender, b"m", &[total(b"", next, 0)], |_| true).unwrap();
        }
        let t = books.totals();
        assert_eq!(t.lost, t.sent - t.received);
        assert_eq!(t.inconsistent, 0);
    }

    proptest::proptest! {
        /// Data and markers in any order from a few senders, numbers anywhere (the bounded
        /// twin of the `zmq_wire` fuzz target): nothing panics, every booked message counts
        /// once, and books that call themselves consistent balance.
        #[test]
        fn any_frames_keep_the_books_honest(
            frames in proptest::collection::vec(
                (0u32..4, proptest::bool::weighted(0.1), proptest::prop_oneof![0u64..40, (MAX_SEQ - 4)..MAX_SEQ + 4, proptest::num::u64::ANY]),
                0..200,
            ),
        ) {
            let mut books = SourceBooks::default();
            let mut booked = 0u64;
            for (sender, is_marker, n) in frames {
                if is_marker {
                    let _ = books.finish(sender, &n.to_le_bytes(), &[total(b"", n, 0)], |_| true);
                } else if books.record(sender, b"", n).is_ok() {
                    booked += 1;
                }
            }
            let t = books.totals();
            proptest::prop_assert_eq!(t.received, booked);
            if t.inconsistent == 0 {
                proptest::prop_assert_eq!(t.sent, t.received - t.duplicates + t.lost);
                proptest::prop_assert_eq!(t.lost, t.sender_dropped + t.lost_before_first + t.lost_in_transit);
            }
        }

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
