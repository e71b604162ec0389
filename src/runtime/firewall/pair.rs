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

use std::sync::Arc;

use crate::runtime::channel::{Poll, Reader, Shared, Writer};
use crate::runtime::message::Message;

/// A pair and its counters (written only by the firewall thread serving it).
#[derive(Debug)]
pub struct Pair {
    pub producer: String,
    pub consumer: String,
    input: Reader,
    output: Writer,
    /// The output's counters, kept apart so that reading them does not borrow `output`.
    output_shared: Arc<Shared>,
    held: Option<Message>,
    done: bool,
    pub ticks: u64,
    pub forwarded: u64,
    pub produce_misses: u64,
    pub consume_misses: u64,
    /// Ticks lost by the firewall while this pair was served.
    pub missed_ticks: u64,
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
            done: false,
            ticks: 0,
            forwarded: 0,
            produce_misses: 0,
            consume_misses: 0,
            missed_ticks: 0,
        }
    }

    /// True once either end has finished and the end was passed on.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Serves one tick. `cutoff_ns` is the tick's scheduled instant on the message clock
    /// ([`crate::runtime::message::now_ns`]).
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
            Some(msg) if msg.sent_ns < cutoff_ns => {
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
                self.produce_misses += 1;
            }
            None => self.produce_misses += 1,
        }
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
