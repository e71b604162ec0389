//! `smx_snk_null(in data)`: consumes messages and checks their sequence numbers, the
//! report's `Snk`.
//!
//! Order is a property of one producer's stream, so the check is made per stream. Every
//! producer is taken to count 0, 1, 2, ... as `smx_src_rand` does; a fan-in delivers several
//! such streams interleaved, and the sink tells them apart by their numbers alone (a message
//! carries no producer id):
//!
//! * a message numbered 0 starts a new stream (so the first message of every source does);
//! * a message whose number is the next one of some stream continues that stream;
//! * otherwise it continues the stream whose next number is the largest one below it, and the
//!   numbers skipped in between are **gaps** (messages lost or overwritten on the way); the
//!   very first message of the run starts a stream this way too, from 0;
//! * a message whose number is below the next number of every stream (and not 0) is a
//!   **repeat** when it is the last number of a stream (a decoupled input reads the latest
//!   message again until a newer one comes), else **out of order**: some stream already went
//!   past it.
//!
//! A decoupled input's latest value read again ([`Io::read_again`]) is a **repeat**, whatever
//! its number, and does not take part in the check: a value read again is no message that
//! came. Told by its number alone, a 0 read again while its producer was slow to go on (a
//! producer in another process, starting) would start a new stream at each read, and the
//! later repeats of each number would continue those streams as gaps; told by its creation
//! time too, two sources' first messages stamped on arrival at one instant would be one.
//!
//! With one producer this is the plain check (gaps are skipped numbers, out of order is a
//! number lower than one already seen). For
//! a correct fan-in of N sources it reports `streams=N`, no gaps and nothing out of order,
//! whatever the interleaving. Because the streams are told apart by number only, a loss in
//! one stream can be booked on another whose next number is closer; the totals of gaps and
//! out-of-order messages do not depend on which stream they are booked on. `streams` counts
//! the streams seen: more than the number of producers means a stream restarted from 0.

use smx_box::prelude::*;

pub const SPEC: BoxSpec = BoxSpec::named("smx_snk_null")
    .summary(
        "consumes messages, checks the order of each producer's sequence numbers, reports gaps and \
         out-of-order arrivals",
    )
    .inputs(&[PortSpec::new("data").help("the messages to consume (one stream or several interleaved)")])
    .chainable()
    .create(create);

const DATA: InPort = InPort(0);

fn create(_config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(SnkNull::default()))
}

#[derive(Default)]
struct SnkNull {
    received: u64,
    order: Order,
}

/// The per-stream sequence check.
#[derive(Debug, Default)]
struct Order {
    /// The next number expected of each stream, ascending (a fan-in has few streams).
    next: Vec<u64>,
    /// Streams started (messages numbered 0, and the first message of the run).
    streams: u64,
    gaps: u64,
    out_of_order: u64,
    /// The last message of a stream read again.
    repeats: u64,
}

impl Order {
    fn see(&mut self, seq: u64) {
        // Gaps saturate: a number is whatever its producer (or a peer across a link) wrote, and
        // one far ahead must not wrap the count.
        if seq == 0 || self.next.is_empty() {
            self.gaps = self.gaps.saturating_add(seq);
            self.streams += 1;
            self.insert(seq.saturating_add(1));
            return;
        }
        // The stream whose next number is the largest one not above `seq`.
        let at = self.next.partition_point(|&n| n <= seq);
        if at == 0 {
            if self.next.binary_search(&seq.saturating_add(1)).is_ok() {
                self.repeats += 1;
            } else {
                self.out_of_order += 1;
            }
            return;
        }
        let i = at - 1;
        self.gaps = self.gaps.saturating_add(seq - self.next[i]);
        self.next[i] = seq.saturating_add(1);
        // Keep the list sorted: the raised entry moves past equal or lower neighbours.
        let mut j = i;
        while j + 1 < self.next.len() && self.next[j] > self.next[j + 1] {
            self.next.swap(j, j + 1);
            j += 1;
        }
    }

    fn insert(&mut self, next: u64) {
        let at = self.next.partition_point(|&n| n < next);
        self.next.insert(at, next);
    }
}

impl BoxImpl for SnkNull {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        // Looked at in the channel's slot: the sink needs only the number.
        if let Some(seq) = io.read_with(DATA, |msg| msg.seq) {
            self.received += 1;
            if io.read_again(DATA) {
                self.order.repeats += 1;
            } else {
                self.order.see(seq);
            }
        }
        Ok(Flow::Return)
    }

    fn stats(&self) -> Stats {
        let o = &self.order;
        Stats::new()
            .with("received", self.received)
            .with("gaps", o.gaps)
            .with("out_of_order", o.out_of_order)
            .with("repeats", o.repeats)
            .with("streams", o.streams)
    }
}

#[cfg(test)]
mod tests {
    use super::Order;

    fn check(seqs: impl IntoIterator<Item = u64>) -> (u64, u64, u64) {
        let mut o = Order::default();
        for s in seqs {
            o.see(s);
        }
        (o.streams, o.gaps, o.out_of_order)
    }

    /// Numbers are whatever a producer wrote: ones far apart saturate the count of gaps, never
    /// wrap it (or panic where overflow is checked).
    #[test]
    fn gaps_saturate() {
        assert_eq!(check([u64::MAX - 1, 0, 5]), (2, u64::MAX, 0));
    }

    /// A decoupled input reads its latest message again until a newer one comes: a repeat,
    /// neither out of order nor a gap.
    #[test]
    fn the_last_message_read_again_is_a_repeat() {
        let mut o = Order::default();
        for s in [0, 1, 1, 1, 2, 4, 4, 3] {
            o.see(s);
        }
        assert_eq!((o.streams, o.gaps, o.out_of_order, o.repeats), (1, 1, 1, 3));
    }

    #[test]
    fn one_stream_in_order() {
        assert_eq!(check(0..1000), (1, 0, 0));
    }

    #[test]
    fn one_stream_with_a_gap_and_a_reorder() {
        // 3 and 4 skipped, 6 arrives before 5.
        assert_eq!(check([0, 1, 2, 5, 7, 6, 8]), (1, 3, 1));
        // A stream that starts late (a receiver that joined after the first messages).
        assert_eq!(check([5, 6, 7]), (1, 5, 0));
    }

    #[test]
    fn interleaved_streams_are_in_order_whatever_the_interleaving() {
        let mut seqs = Vec::new();
        for i in 0..100 {
            seqs.extend([i, i, i]);
        }
        assert_eq!(check(seqs), (3, 0, 0));
        // One stream far ahead of the other.
        let seqs: Vec<u64> = (0..50).chain(0..10).chain(50..60).chain(10..60).collect();
        assert_eq!(check(seqs), (2, 0, 0));
    }

    #[test]
    fn a_loss_or_reorder_in_one_of_two_streams_is_still_seen() {
        // Stream b loses 3..5: a: 0..10, b: 0,1,2,6..10 interleaved.
        let mut seqs = Vec::new();
        for i in 0..10u64 {
            seqs.push(i);
            if !(3..6).contains(&i) {
                seqs.push(i);
            }
        }
        assert_eq!(check(seqs), (2, 3, 0));
        // Stream b delivers 4 before 3 while a is already past both.
        let seqs = [0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 4, 3, 5, 6];
        assert_eq!(check(seqs), (2, 1, 1));
    }
}
