//! `smx_link_shm_src(out data)`: the consumer's end of a link, emitting each message the
//! producer's end published, with its sequence number and creation time.
//!
//! Init waits (at most `timeout`) for the producer to create the file. A step waits for the
//! first message, in slices that notice the producer's end or death and the run's stop, then
//! emits what is already published (up to [`BATCH`]) without waiting for more. A payload the
//! consumer copies is copied straight into the message built in the channel's slot. Writes
//! block on a full channel as any box's do, so the ring holds back the producer in turn.

use smx_box::prelude::*;

use crate::consumer::{Consumer, ConsumerBooks, Next};
use crate::settings::Settings;

pub const OUTPUTS: &[PortSpec] =
    &[PortSpec::new("data").help("the messages of the other process, sequence number and creation time as sent")];

/// Most messages emitted in one step.
pub const BATCH: usize = 1024;

pub struct ShmSource {
    settings: Settings,
    consumer: Option<Consumer>,
    port: Option<OutPort>,
    books: ConsumerBooks,
    stopped: bool,
}

pub fn validate(config: &BoxConfig) -> Result<(), BoxError> {
    Settings::from_config(config).map(|_| ())
}

pub fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(ShmSource {
        settings: Settings::from_config(config)?,
        consumer: None,
        port: None,
        books: ConsumerBooks::default(),
        stopped: false,
    }))
}

impl BoxImpl for ShmSource {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.port = Some(ctx.output("data")?);
        let stop = ctx.stop_flag();
        let s = &self.settings;
        let stopped = || stop.load(std::sync::atomic::Ordering::Relaxed);
        let mut consumer = Consumer::open(&s.path, s.timeout, &stopped).map_err(|e| s.error(e))?;
        consumer.set_copy_limit(s.copy_limit);
        self.consumer = Some(consumer);
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let (Some(consumer), Some(data)) = (self.consumer.as_mut(), self.port) else {
            return Err(BoxError::new("smx_link_shm_src: step before init"));
        };
        for i in 0..BATCH {
            // A small message already published is built straight in the channel's slot.
            let small = consumer.take_small(|seq, sent_ns, bytes| {
                io.write_filled(data, seq, sent_ns, bytes.len(), |slot| slot.copy_from_slice(bytes))
            });
            match small {
                Some(Ok(())) => continue,
                Some(Err(Disconnected)) => {
                    consumer.close();
                    return Ok(Flow::End);
                }
                None => {}
            }
            let wait = if i == 0 { None } else { Some(std::time::Duration::ZERO) };
            let msg = match consumer.next(wait, &|| io.stop_requested()) {
                Next::Message(msg) => msg,
                Next::Idle => break,
                Next::Ended(_) => {
                    self.books = consumer.books();
                    return Ok(Flow::End);
                }
                Next::Stopped => {
                    self.stopped = true;
                    consumer.close();
                    return Ok(Flow::End);
                }
            };
            if io.write(data, msg).is_err() {
                consumer.close();
                return Ok(Flow::End);
            }
        }
        Ok(Flow::Return)
    }

    fn cleanup(&mut self) -> Result<(), BoxError> {
        if let Some(consumer) = self.consumer.as_mut() {
            consumer.close();
            self.books = consumer.books();
        }
        Ok(())
    }

    fn stats(&self) -> Stats {
        crate::books::source_row(&self.settings, &self.books, self.stopped)
    }
}
