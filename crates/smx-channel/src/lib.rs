//! Channels between nets: one bounded FIFO per graph edge, in one of four kinds.
//!
//! The kind comes from the two decoupling bits of an edge (spec runtime.md §2.1):
//!
//! | kind | written as | write when full | read when empty | triggering |
//! |---|---|---|---|---|
//! | [`ChannelKind::Coupled`] (`FIFO`) | `out x` → `in x` | blocks | the firing rule waits | yes |
//! | [`ChannelKind::DecoupledProducer`] (`D_FIFO`) | `decoupled out x` | drops the oldest, counted `overwritten` | the firing rule waits | yes |
//! | [`ChannelKind::DecoupledConsumer`] (`FIFO_D`) | `decoupled in x` | blocks | latest value again, counted `duplicated` | no |
//! | [`ChannelKind::Decoupled`] (`D_FIFO_D`) | both | drops the oldest | latest value again | no |
//!
//! Every channel of a flattened net has one producer and one consumer (routing nodes do the
//! fan-in and fan-out), so all four are an [`smx_spsc`] queue: [`smx_spsc::Kind::Blocking`]
//! for a coupled producer side, [`smx_spsc::Kind::DropOldest`] for a decoupled one (which
//! keeps the order; the original replaced the oldest slot and delivered the newest first). The consumer side's latest value
//! ([`latest`]) lives in the [`Reader`]. Nothing is allocated per message.
//!
//! Termination travels through the ends in both directions (spec §1.7): when the producer
//! ends ([`Writer::close`], also on drop) the consumer drains what is buffered and then sees
//! the end; when the consumer ends ([`Reader::close`]) the rest of the buffer is counted as
//! `left` and every later write fails and is counted as `dropped`. The books come from the
//! queue: every write it accepted is read, evicted (`overwritten`), or counted `left` by the
//! close of one of the two ends ([`smx_spsc::Consumer::close`]).

pub mod counters;
pub mod latest;
mod nap;
mod reader;
mod writer;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_utils::CachePadded;

pub use counters::{CountSnapshot, Counters};
pub use reader::{Poll, Reader};
pub use smx_spsc::{DEFAULT_SPIN, Halt, slot_bytes};
pub use writer::{Refused, Writer};

/// A write found the consumer gone; the item was dropped and counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// The four channel kinds, from the decoupling bits of the producer and consumer port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelKind {
    Coupled,
    DecoupledProducer,
    DecoupledConsumer,
    Decoupled,
}

impl ChannelKind {
    /// The kind of an edge with the given decoupling bits (`dsrc`, `ddst`).
    pub fn from_bits(producer_decoupled: bool, consumer_decoupled: bool) -> Self {
        match (producer_decoupled, consumer_decoupled) {
            (false, false) => ChannelKind::Coupled,
            (true, false) => ChannelKind::DecoupledProducer,
            (false, true) => ChannelKind::DecoupledConsumer,
            (true, true) => ChannelKind::Decoupled,
        }
    }

    /// Writes never block; a full channel drops its oldest message.
    pub fn producer_decoupled(self) -> bool {
        matches!(self, ChannelKind::DecoupledProducer | ChannelKind::Decoupled)
    }

    /// Reads never block; an empty channel returns the latest value again.
    pub fn consumer_decoupled(self) -> bool {
        matches!(self, ChannelKind::DecoupledConsumer | ChannelKind::Decoupled)
    }

    /// The original runtime's type name (`FIFO`, `D_FIFO`, `FIFO_D`, `D_FIFO_D`).
    pub fn smx_name(self) -> &'static str {
        match self {
            ChannelKind::Coupled => "FIFO",
            ChannelKind::DecoupledProducer => "D_FIFO",
            ChannelKind::DecoupledConsumer => "FIFO_D",
            ChannelKind::Decoupled => "D_FIFO_D",
        }
    }

    /// The name used in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ChannelKind::Coupled => "coupled",
            ChannelKind::DecoupledProducer => "decoupled_producer",
            ChannelKind::DecoupledConsumer => "decoupled_consumer",
            ChannelKind::Decoupled => "decoupled",
        }
    }

    fn queue_kind(self) -> smx_spsc::Kind {
        if self.producer_decoupled() {
            smx_spsc::Kind::DropOldest
        } else {
            smx_spsc::Kind::Blocking
        }
    }
}

/// State both ends and the onlookers (progress line, report) see: the counters and who has
/// ended. The queue itself is in the ends.
#[derive(Debug, Default)]
pub struct ChannelState {
    pub counters: Counters,
    producer_done: CachePadded<AtomicBool>,
    consumer_done: CachePadded<AtomicBool>,
}

impl ChannelState {
    pub fn producer_ended(&self) -> bool {
        self.producer_done.load(Ordering::Acquire)
    }

    pub fn consumer_ended(&self) -> bool {
        self.consumer_done.load(Ordering::Acquire)
    }
}

/// Creates a channel of `kind` holding up to `len` messages (at least 1).
pub fn channel<T: Clone>(kind: ChannelKind, len: usize) -> (Writer<T>, Reader<T>) {
    let (tx, rx) = smx_spsc::channel(len.max(1), kind.queue_kind());
    let shared = Arc::new(ChannelState::default());
    (Writer::new(tx, shared.clone()), Reader::new(rx, kind, shared))
}

/// Marks a channel whose two ends are pinned to the same core. Spinning there only keeps the
/// other end from running, so a waiting end yields the core after every look that found
/// nothing, for up to its spin budget, and then parks ([`smx_spsc::share_core`]).
pub fn share_core<T: Clone>(writer: &mut Writer<T>, reader: &mut Reader<T>) {
    debug_assert!(Arc::ptr_eq(writer.shared(), reader.shared()), "two ends of one channel");
    if let (Some(tx), Some(rx)) = (writer.queue(), reader.queue()) {
        smx_spsc::share_core(tx, rx);
    }
}

/// Blocks until one of `readers` has a message or its producer has ended, parking once for
/// all of them (a fan-in routing node's wait); returns at once if one is ready. `readers` is
/// called several times and must yield the same ends each time; nothing is allocated.
pub fn wait_any<'a, T: Clone + 'a, I>(readers: impl Fn() -> I)
where
    I: Iterator<Item = &'a Reader<T>>,
{
    // A closed end has ended: nothing to wait for.
    if readers().any(|r| r.queue_ref().is_none()) {
        return;
    }
    if readers().next().is_none() {
        return;
    }
    smx_spsc::wait_any_of(|| readers().filter_map(|r| r.queue_ref()));
}

#[cfg(test)]
mod tests;
