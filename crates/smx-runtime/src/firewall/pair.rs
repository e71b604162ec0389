//! One producer→consumer pair served by a firewall, and what happens to it at each tick.
//!
//! At tick `k` the pair moves at most one message: the one its producer delivered during
//! period `k-1`. Both buffers are the runtime's channels, used only through their
//! non-blocking ends: the firewall's read of the producer side never waits
//! ([`Reader::take`]), its write to the consumer side overwrites instead of waiting, so a slow
//! box can never hold up the firewall or the other pairs. Messages are moved, not copied.
//!
//! A message stamped at or after tick `k`'s scheduled instant belongs to period `k` even if
//! the firewall's pass for tick `k` comes late and finds it already there: it is held back
//! for tick `k+1`, so data never becomes visible earlier than one period after it was made.
//! A producer run by the same cyclic executive is the exception: the executive fires its
//! boxes after the pass, so whatever the pass finds was made in an earlier pass, whatever its
//! stamp says. A late pass must not hold such a message back: the producer fires again in
//! the same pass and would overwrite the message behind it.

use std::sync::Arc;

use crate::channel::{ChannelState, Poll, Reader, Writer};
use crate::latency::Samples;
use smx_box::Message;

/// A pair and its counters (written only by the firewall thread serving it).
#[derive(Debug)]
pub struct Pair {
    pub producer: String,
    pub consumer: String,
    input: Reader,
    output: Writer,
    /// The output's counters, kept apart so that reading them does not borrow `output`.
    output_shared: Arc<ChannelState>,
    held: Option<Message>,
    /// The producer runs in the pass of the executive that serves this pair.
    producer_in_pass: bool,
    done: bool,
    pub ticks: u64,
    pub forwarded: u64,
    pub produce_misses: u64,
    /// The produce misses before the pair's first hand-over: the pipeline filling, as under
    /// logical execution time a pair `k` firewalls from the source gets its first message
    /// `k - 1` periods after the first pair does (or a producer that started late).
    pub produce_misses_before_first: u64,
    pub consume_misses: u64,
    /// Ticks lost by the firewall while this pair was served.
    pub missed_ticks: u64,
    /// The firewall's share of sampled messages' latency (producer's write → hand-over).
    pub firewall_ns: Samples,
}

impl Pair {
    /// `input` is the producer→firewall channel's reader, `output` the firewall→consumer
    /// channel's writer (a decoupled-producer kind, so that writing overwrites).
    pub fn new(producer: &str, consumer: &str, input: Reader, output: Writer) -> Self {
        Pair {
            producer: producer.to_string(),
            consumer: consumer.to_string(),
            input,
            output_shared: output.shared().clone(),
            output,
            held: None,
            producer_in_pass: false,
            done: false,
            ticks: 0,
            forwarded: 0,
            produce_misses: 0,
            produce_misses_before_first: 0,
            consume_misses: 0,
            missed_ticks: 0,
            firewall_ns: Samples::new(),
        }
    }

    /// The producer is run by the cyclic executive that serves this pair: what the pass finds
    /// was made in an earlier pass and is forwarded whatever its stamp.
    pub fn set_producer_in_pass(&mut self) {
        self.producer_in_pass = true;
    }

    /// True once either end has finished and the end was passed on.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Serves one tick. `cutoff_ns` is the tick's scheduled instant on the message clock
    /// ([`smx_box::now_ns`]).
    #[inline]
    pub fn on_tick(&mut self, cutoff_ns: u64) {
        if self.done {
            return;
        }
        if self.output.consumer_ended() {
            // The consumer is gone: tell the producer (its writes now fail) and stop.
            self.finish();
            return;
        }
        let msg = match self.held.take() {
            Some(msg) => Some(msg),
            None => match self.input.take() {
                Poll::Message(msg) => Some(msg),
                Poll::Empty => None,
                Poll::Ended => {
                    // The producer ended and everything it wrote has been forwarded.
                    self.finish();
                    return;
                }
            },
        };
        self.ticks += 1;
        match msg {
            Some(msg) if self.producer_in_pass || msg.sent_ns < cutoff_ns => {
                if msg.written_ns() != 0 {
                    // The stamp stays on the message: the consumer's read measures the whole way.
                    self.firewall_ns.record(msg.written_ns(), smx_box::now_ns());
                }
                let overwritten = &self.output_shared.counters.producer.overwritten;
                let before = overwritten.get();
                if self.output.write(msg).is_err() {
                    self.ticks -= 1;
                    self.finish();
                    return;
                }
                self.forwarded += 1;
                self.consume_misses += overwritten.get() - before;
            }
            Some(early) => {
                self.held = Some(early);
                self.produce_miss();
            }
            None => self.produce_miss(),
        }
    }

    fn produce_miss(&mut self) {
        self.produce_misses += 1;
        if self.forwarded == 0 {
            self.produce_misses_before_first += 1;
        }
    }

    /// A pass after a stop, outside the schedule: forwards what the producer delivered,
    /// whenever it was made, and passes an end on; counts no tick and no produce miss (the
    /// books of the schedule end at the stop), but a message overwritten unread is still a
    /// consume miss.
    pub fn drain_pass(&mut self) {
        let (ticks, produce_misses, before_first) = (self.ticks, self.produce_misses, self.produce_misses_before_first);
        self.on_tick(u64::MAX);
        self.ticks = ticks;
        self.produce_misses = produce_misses;
        self.produce_misses_before_first = before_first;
    }

    /// Passes the end on in both directions.
    pub fn finish(&mut self) {
        if !self.done {
            self.done = true;
            self.held = None;
            self.input.close();
            self.output.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel;
    use crate::firewall::{input_kind, output_kind};

    /// A pair whose producer has written one message stamped at `stamp_ns`.
    fn pair_with_message(stamp_ns: u64) -> (Pair, Writer, Reader) {
        let (mut producer, input) = channel::channel(input_kind(true), 1);
        let (output, consumer) = channel::channel(output_kind(false), 1);
        producer.write(Message::new(1, stamp_ns, b"m")).unwrap();
        (Pair::new("P", "C", input, output), producer, consumer)
    }

    #[test]
    fn a_message_stamped_after_the_tick_waits_for_the_next_one() {
        let (mut pair, _producer, mut consumer) = pair_with_message(200);
        pair.on_tick(100);
        assert_eq!((pair.forwarded, pair.produce_misses), (0, 1));
        assert!(matches!(consumer.take(), Poll::Empty));
        pair.on_tick(300);
        assert_eq!((pair.forwarded, pair.produce_misses), (1, 1));
        assert!(matches!(consumer.take(), Poll::Message(m) if m.seq == 1));
    }

    #[test]
    fn the_misses_before_the_first_hand_over_are_told_apart() {
        let (mut producer, input) = channel::channel(input_kind(true), 1);
        let (output, _consumer) = channel::channel(output_kind(false), 1);
        let mut pair = Pair::new("P", "C", input, output);
        pair.on_tick(100);
        producer.write(Message::new(1, 150, b"m")).unwrap();
        pair.on_tick(120);
        pair.on_tick(200);
        pair.on_tick(300);
        assert_eq!(
            (pair.forwarded, pair.produce_misses, pair.produce_misses_before_first),
            (1, 3, 2),
            "two ticks before the first message went, one after"
        );
    }

    #[test]
    fn a_late_pass_forwards_what_its_own_executive_produced() {
        // The executive's pass for the tick at 100 ran late, after its producer had already
        // fired at 200 for the previous period: the message is that period's and goes now.
        let (mut pair, mut producer, mut consumer) = pair_with_message(200);
        pair.set_producer_in_pass();
        pair.on_tick(100);
        assert_eq!((pair.forwarded, pair.produce_misses), (1, 0));
        assert!(matches!(consumer.take(), Poll::Message(m) if m.seq == 1));
        // The producer fires again in the same pass; nothing is held back to be overwritten.
        producer.write(Message::new(2, 250, b"m")).unwrap();
        pair.on_tick(120);
        assert!(matches!(consumer.take(), Poll::Message(m) if m.seq == 2));
        assert_eq!(producer.shared().counters.producer.overwritten.get(), 0);
    }
}
