//! `smx_snk_zmq(in data, in topic open)`: sends every message it reads over ZeroMQ.
//!
//! One step sends every message already waiting on `data` (up to [`BATCH`]), not just the one
//! the firing rule saw: reads are non-blocking, so this never waits for more, and a longer
//! channel then costs one runtime iteration per burst instead of per message. The messages of
//! a step go out in frames of up to `batch` messages (see [`super::batch`]), the last one
//! flushed before the step returns, so coalescing holds nothing back. With `topic` connected,
//! `data` and `topic` are read in pairs: after the pair the firing rule vouched for, only while
//! both inputs have a message waiting ([`Io::has_message`]); consecutive messages with the same
//! topic share a frame.
//!
//! The stream ends with an end-of-stream marker when the input ends, or with an abort marker
//! when the sink fails (a step error, or init failing after the socket opened) or gives up
//! (no receiver for `timeout`, or a stop while blocked): its receivers then end at once.

use serde_json::{Value, json};

use crate::boxes::api::{InitCtx, Io};
use crate::boxes::{BoxConfig, BoxError, BoxImpl, Direction, Flow, InPort, PortSpec};

use super::sender::{Sender, Sent, SinkStats};
use super::settings::SinkSettings;
use super::verdict::{Findings, Verdict};

pub const PORTS: &[PortSpec] = &[
    PortSpec {
        name: "data",
        direction: Direction::In,
        optional: false,
        help: "payloads to send",
    },
    PortSpec {
        name: "topic",
        direction: Direction::In,
        optional: true,
        help: "topic of each message (read alongside data); unconnected: the `topic` key",
    },
];

/// Most messages sent in one step.
pub const BATCH: usize = 1024;

pub struct ZmqSink {
    settings: SinkSettings,
    sender: Option<Sender>,
    ports: Option<(InPort, Option<InPort>)>,
    synced: bool,
    /// The stream must end with an abort marker.
    aborting: bool,
    /// Kept after cleanup for [`BoxImpl::stats`].
    endpoint: String,
    final_stats: SinkStats,
}

/// Checks everything about `config` that can be checked without a peer and without keeping
/// anything: every key's value, and for a binding sink whether its endpoint is free now. A
/// runtime calls it before any thread starts.
pub fn validate(config: &BoxConfig) -> Result<(), BoxError> {
    let settings = SinkSettings::from_config(config)?;
    settings.common.check_bind()
}

pub fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(ZmqSink {
        settings: SinkSettings::from_config(config)?,
        sender: None,
        ports: None,
        synced: false,
        aborting: false,
        endpoint: String::new(),
        final_stats: SinkStats::default(),
    }))
}

impl BoxImpl for ZmqSink {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        let data = ctx.input("data")?;
        // `topic` is open: a net may leave it unconnected or not declare it at all.
        let topic = ctx.input("topic").ok().filter(|&t| ctx.input_connected(t));
        self.ports = Some((data, topic));
        let sender = Sender::open(self.settings.clone())?;
        self.endpoint = sender.endpoint().to_string();
        self.sender = Some(sender);
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let (Some(sender), Some((data, topic))) = (self.sender.as_mut(), self.ports) else {
            return Err(BoxError::new("smx_snk_zmq: step before init"));
        };
        if !self.synced {
            sender.wait_for_subscribers(&|| io.stop_requested())?;
            self.synced = true;
        }
        let mut outcome = Sent::Accepted;
        for i in 0..BATCH {
            // The firing rule saw a message on every coupled input before the first read; a
            // data message read after that needs its topic, so only while both are waiting.
            if i > 0 && topic.is_some_and(|t| !(io.has_message(data) && io.has_message(t))) {
                break;
            }
            let Some(msg) = io.read(data) else { break };
            let topic_msg = topic.and_then(|t| io.read(t));
            let topic_bytes = topic_msg.as_ref().map(|t| t.payload());
            outcome = sender.send(topic_bytes, msg.payload(), &|| io.stop_requested())?;
            if outcome == Sent::GaveUp {
                break;
            }
        }
        // Nothing more is waiting (or the step took its share): what was collected goes now.
        if outcome != Sent::GaveUp {
            outcome = sender.flush(&|| io.stop_requested())?;
        }
        if outcome == Sent::GaveUp {
            let why = if io.stop_requested() {
                "stopped while blocked".to_string()
            } else {
                format!("no receiver took a message for {:?}", self.settings.common.timeout)
            };
            log::warn!(
                "{}: {why} on {}: ending the sink with an abort marker (the messages not taken are counted as dropped)",
                self.settings.common.instance,
                self.settings.common.endpoint.written,
            );
            self.aborting = true;
            return Ok(Flow::End);
        }
        Ok(Flow::Return)
    }

    fn abort(&mut self, why: &str) {
        log::warn!(
            "{}: failed ({why}): ending the stream with an abort marker",
            self.settings.common.instance
        );
        self.aborting = true;
    }

    fn cleanup(&mut self) {
        if let Some(mut sender) = self.sender.take() {
            if !self.synced {
                // No step ran: still let subscribers join, so the marker reaches them.
                let _ = sender.wait_for_subscribers(&|| false);
            }
            if self.aborting {
                sender.abort();
            } else {
                sender.finish();
            }
            self.final_stats = sender.stats.clone();
        }
    }

    fn stats(&self) -> Vec<(String, Value)> {
        vec![("zmq".to_string(), self.row())]
    }
}

impl ZmqSink {
    fn row(&self) -> Value {
        let s = &self.final_stats;
        let common = &self.settings.common;
        let mut row = json!({
            "name": common.instance,
            "role": "sink",
            "pattern": common.pattern.as_str(),
            "endpoint": if self.endpoint.is_empty() { &common.endpoint.written } else { &self.endpoint },
            "sent": s.sent,
            "frames": s.frames,
            "received": Value::Null,
            "lost": Value::Null,
            "duplicates": Value::Null,
            "reordered": Value::Null,
            "corrupt": Value::Null,
            "accepted": s.sent - s.dropped_hwm - s.dropped_timeout,
            "dropped": s.dropped_hwm + s.dropped_timeout,
            "dropped_hwm": s.dropped_hwm,
            "dropped_timeout": s.dropped_timeout,
            "subscribers": s.subscribers,
            "markers": s.markers,
            "linger_expired": s.linger_expired,
            "aborted": s.aborted,
        });
        self.findings().write_to(&mut row);
        row
    }

    fn findings(&self) -> Findings {
        let s = &self.final_stats;
        let common = &self.settings.common;
        let dropped = s.dropped_hwm + s.dropped_timeout;
        let mut f = Findings::default();
        if s.sent > 0 && dropped == s.sent {
            f.add(
                Verdict::Incomplete,
                format!(
                    "delivered nothing: all {} message(s) dropped ({})",
                    s.sent,
                    if s.dropped_timeout > 0 {
                        format!("no receiver took a message within timeout {:?}", common.timeout)
                    } else {
                        "refused at the high-water mark".to_string()
                    }
                ),
            );
        } else if s.dropped_timeout > 0 {
            f.add(
                Verdict::Incomplete,
                format!(
                    "gave up after {:?} without a receiver taking a message: {} message(s) dropped",
                    common.timeout, s.dropped_timeout
                ),
            );
        }
        if s.aborted {
            f.add(Verdict::Incomplete, "ended early with an abort marker");
        }
        if self.sender.is_none() && s.markers == 0 && self.endpoint_opened() {
            f.add(
                Verdict::Incomplete,
                format!("no end-of-stream marker was queued within timeout {:?}", common.timeout),
            );
        }
        if s.linger_expired {
            f.add(
                Verdict::Incomplete,
                format!(
                    "receivers had not confirmed the end when linger ({:?}) expired: messages still queued may be lost",
                    common.linger
                ),
            );
        }
        if s.dropped_hwm > 0 && dropped < s.sent {
            f.add(
                Verdict::Lossy,
                format!(
                    "{} of {} message(s) refused at the high-water mark",
                    s.dropped_hwm, s.sent
                ),
            );
        }
        f
    }

    /// The socket was opened (init ran): only then is a missing marker a finding.
    fn endpoint_opened(&self) -> bool {
        !self.endpoint.is_empty()
    }
}
