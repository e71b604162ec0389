//! `smx_snk_zmq(in data, in topic open)`: sends every message it reads over ZeroMQ.
//!
//! One step sends every message already waiting on `data` (up to [`BATCH`]), not just the one
//! the firing rule saw: reads are non-blocking, so this never waits for more, and a longer
//! channel then costs one runtime iteration per burst instead of per message. The messages of
//! a step go out in frames of up to `batch` messages (see [`super::batch`]).
//!
//! The last, partial frame of a step may wait for the next steps, because a frame costs
//! libzmq about as much as a message: on a channel of length 1, or chained behind its feeder,
//! the sink sees one message per step and would send a frame for each. It waits only while
//! messages come in quick succession: the steps follow each other within `hold`, the frame's
//! first message was read less than `hold` ago, and the runtime has not said that the sink's
//! thread may wait ([`BoxImpl::idle`], called before the firing rule waits, before a box ahead
//! of it on a chain's thread that may wait steps, after a chain's pass that brought it nothing,
//! and after every time-triggered step). So a message waits at most
//! about `hold` beyond its next neighbour's arrival, never while nothing else happens, and
//! `hold = 0` sends every step's messages before the step returns. With `topic` connected,
//! `data` and `topic` are read in pairs: after the pair the firing rule vouched for, only while
//! both inputs have a message waiting ([`Io::has_message`]); consecutive messages with the same
//! topic share a frame.
//!
//! The stream ends with an end-of-stream marker when the input ends, or with an abort marker
//! when the sink fails (a step error, or init failing after the socket opened) or gives up
//! (no receiver for `timeout`, `sync` without all its subscribers within `timeout`, or a stop
//! while blocked): its receivers then end at once. A sink waits for a peer for one `timeout`
//! in all: after giving up, its marker gets one try (see [`Sender::gave_up`]), so a run without
//! a peer ends about one `timeout` after its first send, with exit 3 (books not clean), not 2.

use smx_box::prelude::*;

use super::sender::{Sender, Sent, SinkStats};
use super::settings::SinkSettings;
use super::verdict::{Findings, Verdict};
use super::wire;

pub const INPUTS: &[PortSpec] = &[
    PortSpec::new("data").help("payloads to send"),
    PortSpec::new("topic")
        .optional()
        .help("topic of each message (read alongside data); unconnected: the `topic` key"),
];

/// Most messages sent in one step.
pub const BATCH: usize = 1024;

pub struct ZmqSink {
    settings: SinkSettings,
    sender: Option<Sender>,
    ports: Option<(InPort, Option<InPort>)>,
    /// The wait for subscribers (`sync`) is over, whatever its outcome: it happens once.
    synced: bool,
    /// `sync` ended without all subscribers: the sink gave up before sending anything.
    sync_short: bool,
    /// The stream must end with an abort marker.
    aborting: bool,
    /// Kept after cleanup for [`BoxImpl::stats`].
    endpoint: String,
    /// The exposure warning of the bound socket, for the report.
    exposed: Option<String>,
    final_stats: SinkStats,
    /// The run's stop request: a stop also ends the waits of `cleanup`.
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// When the last step began, and when the first message of the frame held back was read
    /// (message clock, ns).
    last_step_ns: u64,
    held_since_ns: u64,
    /// Wall clock minus the message clock, and when it was taken.
    clock_offset: (u64, u64),
}

/// How often the wall clock's offset from the message clock is taken again (it moves only
/// when the wall clock is adjusted).
const OFFSET_REFRESH_NS: u64 = 10_000_000;

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
        sync_short: false,
        aborting: false,
        endpoint: String::new(),
        exposed: None,
        final_stats: SinkStats::default(),
        stop: Default::default(),
        last_step_ns: 0,
        held_since_ns: 0,
        clock_offset: (0, 0),
    }))
}

impl BoxImpl for ZmqSink {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        let data = ctx.input("data")?;
        // `topic` is open: a net may leave it unconnected or not declare it at all.
        let topic = ctx.input("topic").ok().filter(|&t| ctx.input_connected(t));
        self.ports = Some((data, topic));
        let mut sender = Sender::open(self.settings.clone())?;
        self.stop = ctx.stop_flag();
        sender.watch_stop(self.stop.clone());
        self.endpoint = sender.endpoint().to_string();
        self.exposed = sender.exposed();
        self.sender = Some(sender);
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let (Some(sender), Some((data, topic))) = (self.sender.as_mut(), self.ports) else {
            return Err(BoxError::new("smx_snk_zmq: step before init"));
        };
        if !self.synced {
            self.synced = true;
            if let Err(why) = sender.wait_for_subscribers(&|| io.stop_requested()) {
                // Like a pipeline sink without a receiver: the books say so (exit 3), and the
                // subscribers that did join end at once by the abort marker.
                log::warn!("{why}: ending the sink with an abort marker, nothing sent");
                self.sync_short = true;
                self.aborting = true;
                return Ok(Flow::End);
            }
        }
        let now = now_ns();
        let gap = now.saturating_sub(std::mem::replace(&mut self.last_step_ns, now));
        let (held_before, frames_before) = (sender.holds(), sender.stats.frames);
        let mut outcome = Sent::Accepted;
        // Wall clock minus the message clock: the frame carries each message's creation time
        // as wall-clock time, which the receiving process places on its own message clock.
        if self.clock_offset.1 == 0 || now.saturating_sub(self.clock_offset.1) >= OFFSET_REFRESH_NS {
            self.clock_offset = (wire::unix_now_ns().wrapping_sub(now_ns()), now.max(1));
        }
        let offset = self.clock_offset.0;
        for i in 0..BATCH {
            // The firing rule saw a message on every coupled input before the first read; a
            // data message read after that needs its topic, so only while both are waiting.
            if i > 0 && topic.is_some_and(|t| !(io.has_message(data) && io.has_message(t))) {
                break;
            }
            let Some(msg) = io.read(data) else { break };
            let topic_msg = topic.and_then(|t| io.read(t));
            let topic_bytes = topic_msg.as_ref().map(|t| t.payload());
            let created = if msg.sent_ns == 0 {
                0
            } else {
                msg.sent_ns.wrapping_add(offset)
            };
            let origin = Some((msg.seq, created));
            outcome = sender.send_message(topic_bytes, msg.payload(), origin, &|| io.stop_requested())?;
            if outcome == Sent::GaveUp {
                break;
            }
        }
        if outcome != Sent::GaveUp && sender.holds() {
            if !held_before || sender.stats.frames != frames_before {
                self.held_since_ns = now;
            }
            let hold = self.settings.hold.as_nanos() as u64;
            let quick = gap < hold && now.saturating_sub(self.held_since_ns) < hold;
            if !quick {
                outcome = sender.flush(&|| io.stop_requested())?;
            }
        }
        if outcome == Sent::GaveUp {
            self.give_up(io.stop_requested());
            return Ok(Flow::End);
        }
        Ok(Flow::Return)
    }

    fn idle(&mut self) -> Result<Flow, BoxError> {
        let Some(sender) = self.sender.as_mut() else {
            return Ok(Flow::Return);
        };
        sender.poll_subscriptions();
        let stop = &self.stop;
        let stopped = || stop.load(std::sync::atomic::Ordering::Relaxed);
        if sender.flush(&stopped)? == Sent::GaveUp {
            self.give_up(stopped());
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

    fn cleanup(&mut self) -> Result<(), BoxError> {
        if let Some(mut sender) = self.sender.take() {
            if !self.synced {
                // No step ran: still let subscribers join, so the marker reaches them.
                self.synced = true;
                let stop = &self.stop;
                if let Err(why) = sender.wait_for_subscribers(&|| stop.load(std::sync::atomic::Ordering::Relaxed)) {
                    log::warn!("{why}");
                    self.sync_short = true;
                }
            }
            if self.aborting {
                sender.abort();
            } else {
                sender.finish();
            }
            self.final_stats = sender.stats.clone();
        }
        Ok(())
    }

    fn stats(&self) -> Stats {
        self.row()
    }
}

impl ZmqSink {
    /// A send could not go on: the sink ends with an abort marker.
    fn give_up(&mut self, stopped: bool) {
        let why = if stopped {
            "stopped while blocked".to_string()
        } else if self.sender.as_ref().is_some_and(|s| s.stats.peers_lost) {
            format!(
                "every receiver's connection was cut (no answer to heartbeats every {:?})",
                self.settings.common.heartbeat
            )
        } else {
            format!("no receiver took a message for {:?}", self.settings.common.timeout)
        };
        let counted = if self.settings.receiver_books {
            "the link's row counts the messages not taken as lost, or as left after a stop"
        } else {
            "the messages not taken are counted as dropped"
        };
        log::warn!(
            "{}: {why} on {}: ending the sink with an abort marker ({counted})",
            self.settings.common.instance,
            self.settings.common.endpoint.written,
        );
        self.aborting = true;
    }

    fn row(&self) -> Stats {
        let s = &self.final_stats;
        let common = &self.settings.common;
        let endpoint = if self.endpoint.is_empty() {
            &common.endpoint.written
        } else {
            &self.endpoint
        };
        let dropped = s.dropped_hwm + s.dropped_timeout;
        let head = format!("{} sink {} {endpoint}", common.instance, common.pattern.as_str());
        let subscribers = if common.pattern.as_str() == "pubsub" {
            format!(", {} subscriber(s)", s.subscribers)
        } else if s.receivers > 1 {
            // Not a loss: a pipeline shares its messages among its receivers.
            format!(
                ", shared among {} receivers (a pipeline gives each message to one of them, so \
                 each receiver counts the messages the others took as lost in transit)",
                s.receivers
            )
        } else {
            String::new()
        };
        let summary = format!(
            "{head}: sent {} in {} frame(s), dropped at the sender {dropped} ({:.3} %: {} at the HWM, {} {}){subscribers}{}{}",
            s.sent,
            s.frames,
            crate::percent(dropped, s.sent),
            s.dropped_hwm,
            s.dropped_timeout,
            if s.stopped {
                "timed out or given up at the stop"
            } else {
                "timed out"
            },
            match (s.linger_expired, s.stopped) {
                (true, true) => ", NOT CONFIRMED: receivers still connected when the stop's grace ran out",
                (true, false) => ", NOT CONFIRMED: receivers still connected when linger expired",
                _ => "",
            },
            if s.aborted { ", ABORTED: ended early" } else { "" },
        );
        let summary = if s.undelivered > 0 {
            format!("{summary}, DELIVERED TO NO RECEIVER: {}", s.undelivered)
        } else {
            summary
        };
        let findings = self.findings();
        let summary = summary + &findings.note();
        let row = Stats::new()
            .in_section("zmq")
            .with("name", common.instance.as_str())
            .with("role", "sink")
            .with("pattern", common.pattern.as_str())
            .with("endpoint", endpoint.as_str())
            .with("sent", s.sent)
            .with("frames", s.frames)
            .with("received", StatValue::None)
            .with("lost", StatValue::None)
            .with("duplicates", StatValue::None)
            .with("reordered", StatValue::None)
            .with("corrupt", StatValue::None)
            .with("accepted", s.sent - dropped)
            .with("dropped", dropped)
            .with("dropped_hwm", s.dropped_hwm)
            .with("dropped_timeout", s.dropped_timeout)
            .with("subscribers", s.subscribers)
            .with("subscriptions", s.subscriptions)
            .with("refused_subscriptions", s.refused_subscriptions)
            .with("cut_peers", s.cut_peers)
            .with("receivers", s.receivers)
            .with("sender_id", crate::books::sender_id_text(s.sender_id))
            .with("markers", s.markers)
            .with("timeouts", s.timeouts)
            .with("peers_lost", s.peers_lost)
            .with("linger_expired", s.linger_expired)
            .with("aborted", s.aborted)
            .with("stopped", s.stopped)
            .with("undelivered", s.undelivered)
            .with("curve", common.curve.is_some())
            .with("refused_handshakes", s.refused);
        let row = self.exposed.iter().fold(row, |row, w| row.warn(w));
        findings.write_to(row).summary(summary)
    }

    fn findings(&self) -> Findings {
        let mut f = Findings::default();
        self.subscriber_findings(&mut f);
        self.delivery_findings(&mut f);
        self.peer_findings(&mut f);
        f
    }

    /// Who listened: subscribers that `sync` waited for, messages that went to no
    /// subscriber, and subscriptions refused.
    fn subscriber_findings(&self, f: &mut Findings) {
        let s = &self.final_stats;
        let common = &self.settings.common;
        let dropped = s.dropped_hwm + s.dropped_timeout;
        if self.sync_short {
            f.add(
                Verdict::Incomplete,
                if s.subscribers == 0 {
                    format!("no subscriber joined within timeout {:?} (sync)", common.timeout)
                } else {
                    format!(
                        "only {} of {} subscriber(s) joined within timeout {:?} (sync)",
                        s.subscribers, self.settings.subscribers, common.timeout
                    )
                },
            );
        }
        if common.pattern.as_str() == "pubsub" && !self.sync_short && s.sent > dropped && !s.subscribed {
            // XPUB takes what nobody subscribed to and drops it without a count.
            f.add(
                Verdict::Incomplete,
                format!(
                    "no subscriber: the {} message(s) sent went to nobody (sync = true waits for subscribers)",
                    s.sent - dropped
                ),
            );
        }
        if s.refused_subscriptions > 0 {
            f.add(
                Verdict::Suspect,
                format!(
                    "{} subscription(s) refused: more than {} in force, or a topic over {} bytes; an smx \
                     source makes a few, so a peer that is not one sent them",
                    s.refused_subscriptions,
                    crate::sender::MAX_SUBSCRIPTIONS,
                    crate::sender::MAX_TOPIC
                ),
            );
        }
        if s.cut_peers > 0 {
            let more = s.cut_peers - s.cut_peer_names.len() as u64;
            f.add(
                Verdict::Suspect,
                format!(
                    "{} peer(s) cut off for flooding the sink with subscriptions: {}{}",
                    s.cut_peers,
                    s.cut_peer_names.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                ),
            );
        }
    }

    /// What became of the messages: dropped, undelivered, cut short by an abort or a stop.
    fn delivery_findings(&self, f: &mut Findings) {
        let s = &self.final_stats;
        let common = &self.settings.common;
        let dropped = s.dropped_hwm + s.dropped_timeout;
        let gave_up_why = if s.peers_lost {
            format!(
                "every receiver's connection was cut (no answer to heartbeats every {:?}, or its process died)",
                common.heartbeat
            )
        } else if s.stopped {
            "no receiver took them before the timeout or the run's stop".to_string()
        } else {
            format!("no receiver took a message within timeout {:?}", common.timeout)
        };
        // A link's row (`receiver_books`) books what its sender held as lost, or as left after
        // a stop, and its `dropped` column counts something else: the word here follows it.
        let gone = if self.settings.receiver_books {
            "not sent (the link's row counts them as lost, or as left after a stop)"
        } else {
            "dropped"
        };
        if s.sent > 0 && dropped == s.sent {
            f.add(
                Verdict::Incomplete,
                format!(
                    "delivered nothing: all {} message(s) {gone} ({})",
                    s.sent,
                    if s.dropped_timeout > 0 {
                        gave_up_why
                    } else {
                        "refused at the high-water mark".to_string()
                    }
                ),
            );
        } else if s.dropped_timeout > 0 {
            f.add(
                Verdict::Incomplete,
                format!("gave up: {gave_up_why}: {} message(s) {gone}", s.dropped_timeout),
            );
        }
        if s.aborted && s.markers > 0 {
            f.add(Verdict::Incomplete, "ended early with an abort marker");
        } else if s.aborted {
            // The marker's own finding below says it was not delivered.
            f.add(Verdict::Incomplete, "ended early");
        }
        if s.undelivered > 0 {
            f.add(
                Verdict::Incomplete,
                format!(
                    "{} message(s) that ZeroMQ accepted were delivered to no receiver: none completed a handshake{}",
                    s.undelivered,
                    if s.refused > 0 {
                        " (see the failed handshakes)"
                    } else {
                        ""
                    }
                ),
            );
        }
        // A link's receiver counts what arrived before the stop, and the merged row books
        // the rest as left, as a channel of one process does.
        if s.stopped && !s.nobody_to_tell && !self.settings.receiver_books {
            f.add(
                Verdict::Incomplete,
                "stopped: the stream ended before its input did, and what ZeroMQ had accepted but no receiver had taken at the stop is delivered nowhere (the receivers' rows count what arrived)",
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
    }

    /// How the peers took part: failed handshakes, the marker, the receivers' confirmation.
    fn peer_findings(&self, f: &mut Findings) {
        let s = &self.final_stats;
        let common = &self.settings.common;
        if s.refused > 0 {
            let failed = |why: &str| format!("{} handshake(s) failed: {why}", s.refused);
            match &common.curve {
                // A bound sink's refusal is a stranger's knock: nothing of it reached the books
                // of the peers that passed.
                _ if common.bind => f.notice(failed(if common.curve.is_some() {
                    "a peer without the right CURVE keys tried to connect"
                } else {
                    "a peer speaking CURVE or another security mechanism tried to connect"
                })),
                // This sender could not reach a receiver it was meant to reach.
                Some(crate::curve::Curve::Client { .. }) => f.add(
                    Verdict::Incomplete,
                    failed("the peer is not the CURVE server of curve_server, or does not accept this client's key"),
                ),
                Some(crate::curve::Curve::Server { .. }) => f.add(
                    Verdict::Incomplete,
                    failed("the peer it connects to does not accept this server's key"),
                ),
                None => f.add(
                    Verdict::Incomplete,
                    failed("the peer expects CURVE keys (set curve_server to its public key)"),
                ),
            }
        }
        // Stopped before anything was sent or any receiver came: nothing to tell, nothing lost.
        let nothing_lost = s.stopped && s.nobody_to_tell;
        if self.sender.is_none() && s.markers == 0 && self.endpoint_opened() && !nothing_lost {
            f.add(
                Verdict::Incomplete,
                if s.marker_unwaited && s.peers_lost {
                    format!(
                        "the {} marker was not delivered: tried once, as every receiver's connection was cut",
                        if s.aborted { "abort" } else { "end-of-stream" },
                    )
                } else if s.peers_lost {
                    format!(
                        "the {} marker was not delivered: every receiver's connection was cut while it waited for room",
                        if s.aborted { "abort" } else { "end-of-stream" },
                    )
                } else if s.marker_unwaited {
                    format!(
                        "the {} marker was not delivered: tried once, not waited for, as no receiver had come within timeout {:?}",
                        if s.aborted { "abort" } else { "end-of-stream" },
                        common.timeout
                    )
                } else if s.stopped {
                    "no end-of-stream marker was queued before the stop's grace ran out".to_string()
                } else {
                    format!("no end-of-stream marker was queued within timeout {:?}", common.timeout)
                },
            );
        }
        if s.linger_expired && !nothing_lost {
            f.add(
                Verdict::Incomplete,
                if s.stopped {
                    "receivers had not confirmed the end when the stop's grace ran out: messages still queued may be lost"
                        .to_string()
                } else {
                    format!(
                        "receivers had not confirmed the end when linger ({:?}) expired: messages still queued may be lost",
                        common.linger
                    )
                },
            );
        }
    }

    /// The socket was opened (init ran): only then is a missing marker a finding.
    fn endpoint_opened(&self) -> bool {
        !self.endpoint.is_empty()
    }
}
