//! `smx_src_zmq(out data, out topic)`: emits every message it receives over ZeroMQ.
//!
//! One step waits (in slices, so a stop is noticed) for the first message, then also emits
//! what is already queued in the socket, up to [`BATCH`] messages, without waiting for more.
//! Writes block on a full channel as any box's do, so a step never takes more from ZeroMQ
//! than its consumers accept; messages left in the socket wait there (bounded by `hwm`).
//! Send times are converted from the sender's wall clock to this process's monotonic clock
//! with one offset per step, not two clock reads per message.

use std::time::Duration;

/// What a source that lost its senders before their end markers cannot know: a report that
/// also holds the sender's books (a link of a deployment) settles it, and says so instead.
pub const TAIL_UNKNOWN: &str = "the loss after the last message received is unknown";

use smx_box::prelude::*;

use super::eos::EndReason;
use super::receiver::{Event, Receiver};
use super::settings::SourceSettings;
use super::verdict::{Findings, Verdict};
use super::wire::unix_now_ns;

pub const OUTPUTS: &[PortSpec] = &[
    PortSpec::new("data")
        .help("received payloads, each with the sequence number and creation time its producer gave it"),
    PortSpec::new("topic")
        .optional()
        .help("the topic of each received message"),
];

/// Most messages emitted in one step.
pub const BATCH: usize = 1024;

/// Longest wait inside one step, so a stop request is noticed promptly.
const WAIT_SLICE: Duration = Duration::from_millis(100);

pub struct ZmqSource {
    settings: SourceSettings,
    receiver: Option<Receiver>,
    ports: Option<(OutPort, Option<OutPort>)>,
    endpoint: String,
    /// The exposure warning of the bound socket, for the report.
    exposed: Option<String>,
}

/// Checks everything about `config` that can be checked without a peer and without keeping
/// anything: every key's value, and for a binding source whether its endpoint is free now. A
/// runtime calls it before any thread starts.
pub fn validate(config: &BoxConfig) -> Result<(), BoxError> {
    let settings = SourceSettings::from_config(config)?;
    settings.common.check_bind()
}

pub fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(ZmqSource {
        settings: SourceSettings::from_config(config)?,
        receiver: None,
        ports: None,
        endpoint: String::new(),
        exposed: None,
    }))
}

impl BoxImpl for ZmqSource {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        let data = ctx.output("data")?;
        // A net that does not want topics may leave `topic` unconnected or undeclared.
        let topic = ctx.output("topic").ok().filter(|&t| ctx.output_connected(t));
        self.ports = Some((data, topic));
        let receiver = Receiver::open(self.settings.clone())?;
        self.endpoint = receiver.endpoint().to_string();
        self.exposed = receiver.exposed();
        self.receiver = Some(receiver);
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let (Some(receiver), Some((data, topic))) = (self.receiver.as_mut(), self.ports) else {
            return Err(BoxError::new("smx_src_zmq: step before init"));
        };
        // Wall clock minus monotonic clock, to place the senders' wall-clock send times on
        // this process's message clock.
        let offset = unix_now_ns() as i128 - now_ns() as i128;
        let comparable = self.settings.comparable_clock;
        let mut emitted = 0usize;
        while emitted < BATCH {
            if io.stop_requested() {
                receiver.stop();
                return Ok(Flow::End);
            }
            // Wait for the first message only; then take what is already queued.
            let wait = if emitted == 0 { WAIT_SLICE } else { Duration::ZERO };
            let (seq, sent_ns, payload, topic_bytes) = match receiver.next(wait)? {
                Event::Data {
                    topic: t,
                    seq,
                    sent_unix_ns,
                    payload,
                } => {
                    // Another host's creation time says nothing on this clock: the message's
                    // age then starts at its arrival here.
                    let sent_ns = if comparable {
                        (sent_unix_ns as i128 - offset).clamp(1, u64::MAX as i128) as u64
                    } else {
                        now_ns().max(1)
                    };
                    (seq, sent_ns, payload, t)
                }
                Event::Idle if emitted == 0 => continue,
                Event::Idle => break,
                Event::Ended(_) => return Ok(Flow::End),
            };
            emitted += 1;
            // Copied from the frame straight into the channels' slots.
            let data_gone = io
                .write_filled(data, seq, sent_ns, payload.len(), |to| to.copy_from_slice(payload))
                .is_err();
            let topic_gone = match topic {
                Some(port) => io
                    .write_filled(port, seq, sent_ns, topic_bytes.len(), |to| {
                        to.copy_from_slice(topic_bytes)
                    })
                    .is_err(),
                None => true,
            };
            if data_gone && topic_gone {
                receiver.stop();
                return Ok(Flow::End);
            }
        }
        Ok(Flow::Return)
    }

    fn cleanup(&mut self) -> Result<(), BoxError> {
        if let Some(receiver) = self.receiver.as_mut() {
            receiver.stop();
        }
        Ok(())
    }

    fn stats(&self) -> Stats {
        self.row()
    }
}

/// What the receiver counted, or nothing when it never opened.
#[derive(Default)]
struct Counted {
    totals: super::books::Totals,
    corrupt: u64,
    markers: u64,
    end: Option<EndReason>,
    conflicting: u64,
    disconnects: u64,
    refused: u64,
    seen: usize,
    silent: usize,
    /// The senders heard from, as [`crate::books::SourceBooks::sender_ids`] lists them.
    sender_ids: String,
}

impl ZmqSource {
    fn counted(&self) -> Counted {
        let Some(r) = &self.receiver else {
            return Counted::default();
        };
        Counted {
            totals: r.totals(),
            corrupt: r.corrupt,
            markers: r.markers,
            end: r.ended(),
            conflicting: r.conflicting_markers,
            disconnects: r.disconnects,
            refused: r.refused,
            seen: r.books().senders_seen(),
            sender_ids: r.books().sender_ids(),
            silent: r.books().silent_senders(),
        }
    }

    fn endpoint(&self) -> &str {
        if self.endpoint.is_empty() {
            &self.settings.common.endpoint.written
        } else {
            &self.endpoint
        }
    }

    /// The row's one-line account of the stream.
    fn summary(&self, c: &Counted) -> String {
        let common = &self.settings.common;
        let t = &c.totals;
        let tail = if t.unannounced > 0 {
            " at least: no end marker, messages after the last one received are unknown"
        } else {
            ""
        };
        format!(
            "{} source {} {}: sender sent {}, received {}, lost {} ({:.3} %{tail}; {} dropped at the sender's HWM, \
             {} before the first received, {} in transit), duplicates {} (not passed on), reordered {}, corrupt {}, ended by {}{}",
            common.instance,
            common.pattern.as_str(),
            self.endpoint(),
            t.sent,
            t.received,
            t.lost,
            crate::percent(t.lost, t.sent),
            t.sender_dropped,
            t.lost_before_first,
            t.lost_in_transit,
            t.duplicates,
            t.reordered,
            c.corrupt,
            match c.end {
                Some(EndReason::Aborted) => "sender aborted",
                Some(other) => other.as_str(),
                None => "?",
            },
            if t.inconsistent > 0 {
                ", BOOKS INCONSISTENT (a sender restarted or reused its id?)"
            } else {
                ""
            },
        )
    }

    fn row(&self) -> Stats {
        let common = &self.settings.common;
        let c = self.counted();
        let t = c.totals;
        let facts = SourceFacts {
            totals: t,
            corrupt: c.corrupt,
            end: c.end,
            conflicting: c.conflicting,
            disconnects: c.disconnects,
            refused: c.refused,
            curve: common.curve.is_some(),
            binds: common.bind,
            senders_seen: c.seen as u64,
            silent_senders: c.silent as u64,
            senders: self.settings.senders,
            timeout: common.timeout,
            heartbeat: common.heartbeat,
            max_message: common.max_message,
            pipeline: common.pattern == crate::settings::Pattern::Pipeline,
        };
        let findings = facts.findings();
        let mut summary = self.summary(&c) + &findings.note();
        if !self.settings.comparable_clock {
            summary.push_str(
                "; end-to-end latency behind it counts from arrival here (the senders' clocks are not known to agree \
                 with this host's: clock = comparable if they do)",
            );
        }
        let row = Stats::new()
            .in_section("zmq")
            .with("name", common.instance.as_str())
            .with("role", "source")
            .with("pattern", common.pattern.as_str())
            .with("endpoint", self.endpoint())
            .with("sent", t.sent)
            .with("received", t.received)
            .with("lost", t.lost)
            .with("duplicates", t.duplicates)
            .with("reordered", t.reordered)
            .with("corrupt", c.corrupt)
            .with("sender_dropped", t.sender_dropped)
            .with("lost_before_first", t.lost_before_first)
            .with("lost_in_transit", t.lost_in_transit)
            .with("markers", c.markers)
            .with("end", c.end.map(EndReason::as_str))
            .with("tail_unknown", t.unannounced > 0)
            .with("inconsistent_streams", t.inconsistent)
            .with("conflicting_markers", c.conflicting)
            .with("senders_seen", c.seen)
            .with("sender_ids", c.sender_ids.as_str())
            .with("silent_senders", c.silent)
            .with("disconnects", c.disconnects)
            .with("curve", common.curve.is_some())
            .with("refused_handshakes", c.refused)
            .with(
                "latency_from",
                if self.settings.comparable_clock {
                    "creation"
                } else {
                    "arrival"
                },
            );
        let row = self.exposed.iter().fold(row, |row, w| row.warn(w));
        findings.write_to(row).summary(summary)
    }
}

/// What a source's verdict is made of.
struct SourceFacts {
    totals: super::books::Totals,
    corrupt: u64,
    end: Option<EndReason>,
    conflicting: u64,
    disconnects: u64,
    refused: u64,
    curve: bool,
    /// It binds: a refused handshake is a peer's knock, not its own failed connection.
    binds: bool,
    senders_seen: u64,
    silent_senders: u64,
    senders: u64,
    timeout: Duration,
    heartbeat: Duration,
    max_message: u64,
    /// A pipeline shares a sender's messages among its receivers.
    pipeline: bool,
}

impl SourceFacts {
    fn findings(&self) -> Findings {
        let mut f = Findings::default();
        self.content_findings(&mut f);
        self.ending_findings(&mut f);
        f
    }

    /// What arrived that no honest sender sends: corrupt frames, books that disagree,
    /// duplicates, conflicting markers, more senders than expected.
    fn content_findings(&self, f: &mut Findings) {
        let t = &self.totals;
        if self.corrupt > 0 {
            f.add(
                Verdict::Suspect,
                format!(
                    "{} frame(s) could not be read or could not come from an honest sender (corrupt)",
                    self.corrupt
                ),
            );
        }
        if t.inconsistent > 0 {
            f.add(
                Verdict::Suspect,
                format!(
                    "the books of {} stream(s) are inconsistent: a sender contradicted its own numbers or end marker (a forged marker, or a restarted sender reusing its id)",
                    t.inconsistent
                ),
            );
        }
        if t.duplicates > 0 {
            f.add(
                Verdict::Suspect,
                format!(
                    "{} duplicate message(s) arrived, booked and not passed on: frames replayed, a second sender using the same id, or overlapping batches",
                    t.duplicates
                ),
            );
        }
        if self.conflicting > 0 {
            f.add(
                Verdict::Suspect,
                format!(
                    "{} end marker(s) differ from their sender's first one",
                    self.conflicting
                ),
            );
        }
        if self.senders_seen > self.senders {
            f.add(
                Verdict::Suspect,
                format!(
                    "{} senders heard from, {} expected (senders = {}){}",
                    self.senders_seen,
                    self.senders,
                    self.senders,
                    if self.silent_senders > 0 {
                        format!(", {} of them sent an end marker but no message", self.silent_senders)
                    } else {
                        String::new()
                    }
                ),
            );
        }
    }

    /// How the stream ended, and what it lost on the way: the end's reason, connections cut
    /// or refused, messages lost.
    fn ending_findings(&self, f: &mut Findings) {
        let t = &self.totals;
        match self.end {
            Some(EndReason::Aborted) => f.add(Verdict::Incomplete, "a sender aborted: its stream ended before its input did"),
            Some(EndReason::Stopped) => f.add(
                Verdict::Incomplete,
                "stopped before every sender's end marker: what was sent after the last message received is counted on no row here (the sink's row counts what it sent)",
            ),
            Some(EndReason::PeerLost) => f.add(
                Verdict::Incomplete,
                format!(
                    "every sender's connection was cut before its end marker (no answer to heartbeats every {:?}, or its process died): {TAIL_UNKNOWN}",
                    self.heartbeat
                ),
            ),
            Some(EndReason::Timeout) if t.received == 0 && t.sent == 0 => f.add(
                Verdict::Incomplete,
                format!("received nothing: no sender was heard from within timeout {:?}", self.timeout),
            ),
            Some(EndReason::Timeout) => f.add(
                Verdict::Incomplete,
                format!(
                    "ended by timeout ({:?} without traffic) before every sender's end marker: {TAIL_UNKNOWN}",
                    self.timeout
                ),
            ),
            _ => {}
        }
        if t.received == 0 && t.sent > 0 {
            f.add(
                Verdict::Incomplete,
                format!("received nothing of the {} message(s) announced", t.sent),
            );
        }
        if self.disconnects > 0 {
            f.add(
                Verdict::Incomplete,
                format!(
                    "{} connection(s) ended while receiving: a sender stopped or was killed, or libzmq cut a peer that sent a frame over max_message ({} bytes) or bytes that are not ZeroMQ",
                    self.disconnects, self.max_message
                ),
            );
        }
        if self.refused > 0 && self.binds {
            f.notice(format!(
                "{} handshake(s) refused: {} (their frames never reached the books)",
                self.refused,
                if self.curve {
                    "a peer without the right CURVE keys tried to connect"
                } else {
                    "a peer speaking CURVE or another security mechanism tried to connect"
                }
            ));
        } else if self.refused > 0 {
            // It connects: the handshake that failed was its own, with the sender it was
            // meant to receive from.
            f.add(
                Verdict::Incomplete,
                format!(
                    "{} handshake(s) with the sender failed: {}",
                    self.refused,
                    if self.curve {
                        "the sender is not the CURVE server of curve_server, or does not accept this source's key"
                    } else {
                        "the sender expects CURVE keys (set curve_server to its public key)"
                    }
                ),
            );
        }
        if t.lost > 0 {
            // A pipeline sender shares its messages among all its receivers: what another
            // receiver took is missing here as if lost on the way, and only the sender's row
            // (its receivers) can tell.
            let shared = if self.pipeline && t.lost_in_transit > 0 {
                "; in a pipeline with several receivers, the messages the others took count as in transit here \
                 (the sink's row says how many receivers shared the stream)"
            } else {
                ""
            };
            f.add(
                Verdict::Lossy,
                format!(
                    "lost {} of {} message(s) ({} dropped at the sender's HWM, {} before the first received, {} in transit){shared}",
                    t.lost, t.sent, t.sender_dropped, t.lost_before_first, t.lost_in_transit
                ),
            );
        }
    }
}
