//! `smx_link_shm_snk(in data)`: the producer's end of a link, publishing each message it reads
//! into the ring.
//!
//! A step publishes every message already waiting on `data` (up to [`BATCH`]), without waiting
//! for more. On a chain's thread the box also takes each message its feeder writes while `data`
//! is empty ([`BoxImpl::pass_on`]): it is published from the write, and a payload the feeder
//! builds in place is built in its slot. It waits only for room in the ring, in slices that
//! notice the consumer's close or death and the run's stop. When the consumer will take nothing
//! more, the box ends (its feeders then see the disconnect); at its end it waits until the
//! consumer took everything (or closed, died, or never came) so that its books are final.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use smx_box::prelude::*;

use crate::producer::{ConsumerEnd, Producer, ProducerBooks, Sent};
use crate::settings::Settings;

pub const INPUTS: &[PortSpec] = &[PortSpec::new("data").help("messages to hand to the other process")];

/// Most messages published in one step.
pub const BATCH: usize = 1024;

pub struct ShmSink {
    settings: Settings,
    producer: Option<Producer>,
    port: Option<InPort>,
    stop: Arc<AtomicBool>,
    aborting: bool,
    /// Read from `data` but not published: the consumer's side had ended.
    dropped: u64,
    books: ProducerBooks,
    /// Why the ring's slots are smaller than `max_payload`, when they are: said when the ring
    /// is made and again in the report's warnings, as a message larger than them fails the link.
    smaller_slots: Option<String>,
}

/// Checks the keys, and that the file can be created now (nothing but a stale link file of a
/// dead process at `path`). A runtime calls it before any thread starts.
pub fn validate(config: &BoxConfig) -> Result<(), BoxError> {
    let settings = Settings::from_config(config)?;
    crate::segment::check_free(&settings.path).map_err(|e| settings.error(e))
}

pub fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(ShmSink {
        settings: Settings::from_config(config)?,
        producer: None,
        port: None,
        stop: Default::default(),
        aborting: false,
        dropped: 0,
        books: ProducerBooks::default(),
        smaller_slots: None,
    }))
}

impl BoxImpl for ShmSink {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.port = Some(ctx.input("data")?);
        self.stop = ctx.stop_flag();
        let s = &self.settings;
        let producer = if s.shrink_to_fit {
            Producer::create_to_fit(&s.path, s.len, s.max_payload, s.timeout)
        } else {
            Producer::create(&s.path, s.len, s.max_payload, s.timeout)
        }
        .map_err(|e| s.error(e))?;
        if producer.shrunk() {
            let mib = |bytes: u64| bytes as f64 / f64::from(1u32 << 20);
            // A choice made for this machine, as the runtime's placement notes are: a run whose
            // messages fit went as asked, and the line belongs with how it ran, not among what
            // went wrong; a larger message fails the link with its own error.
            let why = format!(
                "link ring: {}'s {} slots hold messages of up to {:.1} MiB, not {:.1} MiB (`max_payload`): \
                 the file system of {} has too little free room for more (a ring takes at most half of \
                 it); a larger message fails the link",
                s.instance,
                s.len,
                mib(producer.max_payload()),
                mib(s.max_payload),
                s.path.parent().map_or(s.path.as_path(), |dir| dir).display(),
            );
            log::warn!("{why}");
            self.smaller_slots = Some(why);
        }
        // Before the run's barrier: this process's nets start once the consumer's has
        // attached (or `timeout` passed: the books then say it never came).
        producer.wait_for_consumer(&|| self.stop.load(std::sync::atomic::Ordering::Relaxed));
        self.producer = Some(producer);
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let (Some(producer), Some(data)) = (self.producer.as_mut(), self.port) else {
            return Err(BoxError::new("smx_link_shm_snk: step before init"));
        };
        let stop = &self.stop;
        let stopped = || stop.load(Ordering::Relaxed);
        for _ in 0..BATCH {
            let Some(msg) = io.read(data) else { break };
            match producer.send(msg.seq, msg.sent_ns, msg.payload(), &stopped) {
                Ok(Sent::Published) => {}
                Ok(Sent::Over(end)) => {
                    self.dropped += 1;
                    // A consumer that closed (its boxes ended, or its run was stopped) ended
                    // the link as a consumer in one process ends a channel: the report's row
                    // says what was left. A death or an absence is worth a word at once.
                    let level = match end {
                        ConsumerEnd::Stopped | ConsumerEnd::Closed | ConsumerEnd::Drained => log::Level::Info,
                        ConsumerEnd::Died | ConsumerEnd::Absent => log::Level::Warn,
                    };
                    log::log!(
                        level,
                        "{}: the consumer of {} {}: ending the link",
                        self.settings.instance,
                        self.settings.path.display(),
                        end.as_str()
                    );
                    return Ok(Flow::End);
                }
                Err(e) => {
                    self.dropped += 1;
                    return Err(self.settings.error(e));
                }
            }
        }
        Ok(Flow::Return)
    }

    // A message offered by the feeder's write is published from it. Anything but a
    // publication (a payload too large, a consumer that will take nothing more, the run's
    // stop) returns before the payload is written, and the message goes on through the
    // channel to `step`, which books it and ends or fails the box as for any message it reads.
    fn pass_on(&mut self, msg: &Message) -> bool {
        // The copy of a step's send: a large payload with the stores that suit it.
        let payload = msg.payload();
        self.pass_on_filled(msg.seq, msg.sent_ns, payload.len(), &mut |slot| {
            crate::producer::copy_into_slot(slot, payload)
        })
    }

    fn pass_on_filled(&mut self, seq: u64, sent_ns: u64, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        let Some(producer) = self.producer.as_mut() else {
            return false;
        };
        let stop = &self.stop;
        producer.pass_in_place(seq, sent_ns, len, fill, || stop.load(Ordering::Relaxed))
    }

    fn abort(&mut self, _why: &str) {
        self.aborting = true;
    }

    fn cleanup(&mut self) -> Result<(), BoxError> {
        if let Some(producer) = self.producer.as_mut() {
            let stop = &self.stop;
            self.books = producer.finish(self.aborting, &|| stop.load(Ordering::Relaxed));
        }
        Ok(())
    }

    fn stats(&self) -> Stats {
        let row = crate::books::sink_row(&self.settings, &self.books, self.dropped, self.aborting);
        match &self.smaller_slots {
            Some(why) => row.warn(why.as_str()),
            None => row,
        }
    }
}
