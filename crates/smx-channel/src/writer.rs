//! The producer's end: counts every write and hands it to the queue.

use std::mem::MaybeUninit;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use smx_spsc::{Producer, TryPushError};

use super::{ChannelState, Closed};
use crate::counters::ProducerCounts;

/// Books a push's outcome: a message it pushed out of a full decoupled channel as overwritten,
/// a refused one as dropped. Inlined: it runs once per message.
#[inline(always)]
fn booked<T>(counts: &ProducerCounts, pushed: Result<Option<T>, ()>) -> Result<(), Closed> {
    match pushed {
        Ok(None) => Ok(()),
        Ok(Some(oldest)) => {
            drop(oldest);
            counts.overwritten.bump();
            Ok(())
        }
        Err(()) => {
            counts.dropped.bump();
            Err(Closed)
        }
    }
}

/// Why [`Writer::write_by`] did not write; the message was dropped and counted either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Closed,
    TimedOut,
}

/// The producer's end.
///
/// Aligned to its own cache lines, as is [`super::Reader`]: both ends are allocated side by
/// side by the thread that builds the net, and the reader's per-message bookkeeping would
/// otherwise keep evicting the line the writer reads on every send (false sharing).
#[derive(Debug)]
#[repr(align(128))]
pub struct Writer<T> {
    tx: Option<Producer<T>>,
    shared: Arc<ChannelState>,
}

impl<T> Writer<T> {
    pub(crate) fn new(tx: Producer<T>, shared: Arc<ChannelState>) -> Self {
        Writer { tx: Some(tx), shared }
    }

    /// Writes `msg`: blocks while a coupled channel is full, drops the oldest message of a full
    /// decoupled one. Fails (and counts the message as dropped) once the consumer has ended.
    #[inline]
    pub fn write(&mut self, msg: T) -> Result<(), Closed> {
        let counts = &self.shared.counters.producer;
        counts.written.bump();
        let pushed = match &mut self.tx {
            Some(tx) => tx.push(msg).map_err(drop),
            None => Err(()),
        };
        booked(counts, pushed)
    }

    /// [`Writer::write`] of a message that `init` builds in its slot
    /// ([`smx_spsc::Producer::push_with`]); `init` is not called when the write fails.
    #[inline]
    pub fn write_with(&mut self, init: impl FnOnce(&mut MaybeUninit<T>) -> &mut T) -> Result<(), Closed> {
        let counts = &self.shared.counters.producer;
        counts.written.bump();
        let pushed = match &mut self.tx {
            Some(tx) => tx.push_with(init).map_err(drop),
            None => Err(()),
        };
        booked(counts, pushed)
    }

    /// Writes `msg` like [`Writer::write`], but never waits: while a coupled channel is full it
    /// calls `make_room` (which runs the consumer on this thread, operator chaining), then
    /// writes. Fails, counting the message as dropped, once the consumer has ended or this end's
    /// halt is set.
    pub fn write_making_room(&mut self, msg: T, make_room: impl FnMut()) -> Result<(), Closed> {
        // Room first, then one move of the message into its slot: a loop that hands the message
        // back and tries again keeps it on the stack and copies it at every turn.
        self.write_with_making_room(|slot| slot.write(msg), make_room)
    }

    /// [`Writer::write_making_room`] of a message that `init` builds in its slot; `init` is
    /// not called when the write fails.
    pub fn write_with_making_room(
        &mut self,
        init: impl FnOnce(&mut MaybeUninit<T>) -> &mut T,
        mut make_room: impl FnMut(),
    ) -> Result<(), Closed> {
        let counts = &self.shared.counters.producer;
        counts.written.bump();
        let Some(tx) = &mut self.tx else {
            counts.dropped.bump();
            return Err(Closed);
        };
        while tx.is_full() {
            if tx.consumer_closed() || tx.halted() {
                counts.dropped.bump();
                return Err(Closed);
            }
            make_room();
        }
        booked(counts, tx.push_with(init).map_err(drop))
    }

    /// Writes `msg` like [`Writer::write`], but a coupled channel that is still full at
    /// `deadline` (or when this end's halt is set) refuses it: it is dropped and counted as
    /// `dropped`, as a write after the consumer's end is. The wait polls (see [`crate::nap`]).
    pub fn write_by(&mut self, msg: T, deadline: Instant) -> Result<(), Refused> {
        let counts = &self.shared.counters.producer;
        counts.written.bump();
        let mut pending = Some(msg);
        let mut outcome = Err(Refused::TimedOut);
        crate::nap::poll_until(deadline, || {
            let Some(tx) = &mut self.tx else {
                outcome = Err(Refused::Closed);
                return true;
            };
            let Some(msg) = pending.take() else {
                return true;
            };
            match tx.try_push(msg) {
                Ok(None) => outcome = Ok(()),
                Ok(Some(oldest)) => {
                    drop(oldest);
                    counts.overwritten.bump();
                    outcome = Ok(());
                }
                Err(TryPushError::Closed(_)) => outcome = Err(Refused::Closed),
                Err(TryPushError::Full(back)) => {
                    if tx.halted() {
                        drop(back);
                        outcome = Err(Refused::Closed);
                        return true;
                    }
                    pending = Some(back);
                    return false;
                }
            }
            true
        });
        if outcome.is_err() {
            counts.dropped.bump();
        }
        outcome
    }

    /// True once the consumer has ended.
    pub fn consumer_ended(&self) -> bool {
        match &self.tx {
            Some(tx) => tx.consumer_closed(),
            None => self.shared.consumer_ended(),
        }
    }

    /// How long a write into a full coupled channel spins before it parks (default
    /// [`super::DEFAULT_SPIN`]; zero parks at once).
    pub fn set_spin(&mut self, spin: Duration) {
        if let Some(tx) = &mut self.tx {
            tx.set_spin(spin);
        }
    }

    /// A write waiting for room in a full coupled channel gives up when `halt` is set: the
    /// message is dropped and counted, as a write after the consumer's end is (see
    /// [`smx_spsc::Halt`] for who must wake the waiting thread).
    pub fn set_halt(&mut self, halt: smx_spsc::Halt) {
        if let Some(tx) = &mut self.tx {
            tx.set_halt(halt);
        }
    }

    /// Ends the producer side: the consumer drains the buffer and then sees the end.
    pub fn close(&mut self) {
        if let Some(mut tx) = self.tx.take() {
            self.shared.producer_done.store(true, Ordering::Release);
            // Writes that landed after the consumer's close had counted the buffer: nobody
            // reads them, so they are left, counted here (the queue says how many).
            let late = tx.close();
            self.shared.counters.producer.left.add(late as u64);
        }
    }

    pub fn shared(&self) -> &Arc<ChannelState> {
        &self.shared
    }

    pub(crate) fn queue(&mut self) -> Option<&mut Producer<T>> {
        self.tx.as_mut()
    }
}

impl<T> Drop for Writer<T> {
    fn drop(&mut self) {
        self.close();
    }
}
