//! The sending side of a ZeroMQ sink, independent of the runtime (tested with raw sockets).
//!
//! Numbers every message per topic, coalesces waiting messages of one topic into batch frames
//! (see [`super::batch`]), counts what ZeroMQ refuses (the refused keep their numbers, so the
//! receiver sees them as gaps), waits for subscribers when asked (`sync`), and ends the stream
//! with the marker described in [`super::eos`].

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::batch::BatchWriter;
use super::eos::{self, CONTROL_TOPIC, EndOfStream, TopicTotal};
use super::peers::FloodGuard;
use super::settings::{Pattern, SinkSettings};
use super::socket::{self, BoxSocket};
use super::wire::{self, HEADER_LEN, Header, Kind, MAX_TOPIC_LEN};

mod ending;

/// Longest single blocking wait, so a stop request is noticed promptly.
const SLICE_MS: i32 = 100;

/// After a stop, the longest the end of a stream may still wait (marker retries, receivers
/// confirming, linger): a stop must end the run soon, and a receiver of the same run stops too.
/// The runtime reports a net `stuck` that has not ended 850 ms after a stop (smx-runtime's
/// `halt::GIVE_UP`), so this grace, with the step's own wait slice before it, stays below that.
pub const STOP_GRACE: Duration = Duration::from_millis(300);

/// The most subscriptions a pubsub sink keeps in force at once: an smx source subscribes to
/// the control topic and its data topics, a few per receiver; this leaves room for thousands of
/// receivers and bounds what one peer can make the sink hold.
pub const MAX_SUBSCRIPTIONS: u64 = 65_536;

/// The longest topic a subscription may name, in bytes.
pub const MAX_TOPIC: usize = 1024;

/// What a peer may have sent before a refused subscription cuts it off (see
/// [`Sender::poll_subscriptions`]). An smx source sends a few short subscriptions and, with
/// heartbeats on, a few bytes a second; a peer that sent this much while the sink refuses
/// subscriptions is flooding it.
pub const FLOOD_BYTES: u64 = 64 * 1024;

/// Subscription messages read per poll: a few milliseconds' work at most.
const SUBSCRIPTIONS_PER_POLL: usize = 4096;

/// Figures of a sink.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SinkStats {
    /// Messages the sink sent (numbered, announced in the marker), dropped ones included.
    pub sent: u64,
    /// Data frames ZeroMQ accepted; a batch counts once, so `sent - dropped` over `frames` is
    /// the mean number of messages per frame.
    pub frames: u64,
    /// pubsub: refused at the high-water mark (`EAGAIN` under `ZMQ_XPUB_NODROP`).
    pub dropped_hwm: u64,
    /// pipeline: given up after blocking for `timeout` (no receiver taking messages).
    pub dropped_timeout: u64,
    /// Receivers that subscribed (pubsub).
    pub subscribers: u64,
    /// Subscriptions in force (pubsub): applied and not withdrawn.
    pub subscriptions: u64,
    /// Subscriptions not applied: beyond [`MAX_SUBSCRIPTIONS`], or a topic over [`MAX_TOPIC`]
    /// bytes (pubsub). An smx source makes a few; many more come from a peer that is not one.
    pub refused_subscriptions: u64,
    /// Peers cut off for flooding the sink with subscriptions, and the first few of them by
    /// address (tcp) or process (ipc).
    pub cut_peers: u64,
    pub cut_peer_names: Vec<String>,
    /// Most receivers connected at once (pipeline: ZeroMQ gives each message to one of them).
    pub receivers: u64,
    /// The id this sender puts in every frame's header, drawn at random when it opened: the
    /// receivers' books name the senders they heard by it, so two ends' reports tell whether
    /// they were of one run.
    pub sender_id: u32,
    /// Any subscription at all reached the socket (pubsub), a raw SUB's too: without one,
    /// everything sent went to nobody.
    pub subscribed: bool,
    /// End-of-stream markers queued.
    pub markers: u64,
    pub linger_expired: bool,
    /// The stream was ended with an abort marker (the sink failed or gave up before its input
    /// ended).
    pub aborted: bool,
    /// Handshakes that failed: a peer (or this sink) without the right CURVE keys.
    pub refused: u64,
    /// Waits of a whole `timeout` for a peer that ended without one (a blocked send, `sync`,
    /// the marker). After the first, the sender waits no more for a peer (see
    /// [`Sender::gave_up`]), so a run without a peer spends about one `timeout`, not one per
    /// wait.
    pub timeouts: u64,
    /// With heartbeats on: a send or the marker waited while every receiver's connection was
    /// cut (its process died, or its host stopped answering), and the sender gave up on them.
    pub peers_lost: bool,
    /// No marker was queued, and it was tried only briefly, not for `timeout`: the sender had
    /// given up on a peer already.
    pub marker_unwaited: bool,
    /// The run was asked to stop before the stream's end was confirmed: what ZeroMQ had
    /// accepted and the receivers had not taken by then is delivered nowhere.
    pub stopped: bool,
    /// Messages ZeroMQ accepted although no receiver ever completed a handshake (a plain
    /// sender to a CURVE receiver, a receiver that never came): they went to nobody. tcp and
    /// ipc only (inproc has no handshake).
    pub undelivered: u64,
    /// Nothing was sent and no receiver ever completed a handshake: a marker that could not be
    /// queued or an end that no receiver confirmed then loses nothing, and is not a finding
    /// (a sender whose receivers' process was refused before it started, stopped with it).
    pub nobody_to_tell: bool,
}

/// The result of one send, from best to worst (so `max` combines two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sent {
    Accepted,
    /// Refused at the HWM (pubsub); counted.
    DroppedHwm,
    /// Blocked longer than `timeout` or stopped (pipeline); counted. The sink should end.
    GaveUp,
}

/// An open sending socket with its books.
pub struct Sender {
    // First, so that it is dropped (and stops looking) before the socket closes.
    /// Cuts off a tcp peer that floods a pubsub sink (None on other sinks).
    flood_guard: Option<FloodGuard>,
    settings: SinkSettings,
    socket: Option<BoxSocket>,
    /// The connection that carries only heartbeats (`watch`), if any.
    watch: Option<BoxSocket>,
    id: u32,
    /// Per topic: messages numbered so far (the next sequence number) and dropped.
    topics: Vec<TopicTotal>,
    topic_index: HashMap<Vec<u8>, usize>,
    /// Bytes of all topics in `topics`, for the size of the marker that lists them.
    topic_bytes: usize,
    /// The body of a message sent alone.
    body: Vec<u8>,
    /// Messages collected for one batch frame, of topic `pending_slot`, the first numbered
    /// `pending_first`.
    pending: BatchWriter,
    pending_slot: usize,
    pending_first: u64,
    pub stats: SinkStats,
    sends_since_poll: u32,
    /// The slot of the configured topic, once used.
    default_slot: Option<usize>,
    /// The run's stop request ([`Sender::watch_stop`]).
    stop: Option<Arc<AtomicBool>>,
    /// A wait of a whole `timeout` for a peer ended without one.
    gave_up: bool,
    /// The receiver said on the watch connection that its stream ended by the markers.
    receiver_said_ended: bool,
}

impl Sender {
    /// Creates, configures and binds or connects the socket. Every error is worded for the
    /// user and names the instance.
    pub fn open(settings: SinkSettings) -> Result<Sender, String> {
        let kind = match settings.common.pattern {
            Pattern::PubSub => zmq::XPUB,
            Pattern::Pipeline => zmq::PUSH,
        };
        let pattern = settings.common.pattern;
        let hwm = settings.common.hwm;
        let socket = BoxSocket::open(&settings.common, kind, true, |s| {
            s.set_sndhwm(hwm)?;
            s.set_sndtimeo(SLICE_MS)?;
            if pattern == Pattern::PubSub {
                s.set_xpub_verbose(true)?;
                socket::set_xpub_manual(s)?;
                socket::set_xpub_nodrop(s)?;
                s.set_rcvtimeo(0)?;
            }
            Ok(())
        })
        .map_err(|e| format!("{}: {e}", settings.common.instance))?;
        let watch =
            BoxSocket::open_watch(&settings.common).map_err(|e| format!("{}: {e}", settings.common.instance))?;
        let limit = usize::try_from(settings.common.max_message).unwrap_or(usize::MAX);
        let flood_guard = (pattern == Pattern::PubSub)
            .then(|| FloodGuard::start(&socket.endpoint, settings.common.bind, &settings.common.instance))
            .flatten();
        let id = random_id();
        Ok(Sender {
            settings,
            socket: Some(socket),
            watch,
            receiver_said_ended: false,
            id,
            topics: Vec::new(),
            topic_index: HashMap::new(),
            topic_bytes: 0,
            body: Vec::with_capacity(256),
            pending: BatchWriter::with_limit(limit),
            pending_slot: 0,
            pending_first: 0,
            stats: SinkStats {
                sender_id: id,
                ..SinkStats::default()
            },
            sends_since_poll: 0,
            default_slot: None,
            stop: None,
            gave_up: false,
            flood_guard,
        })
    }

    /// Ends every wait of the stream's end (marker retries, receivers confirming, linger)
    /// within [`STOP_GRACE`] of `stop` being set, instead of after `timeout` and `linger`.
    pub fn watch_stop(&mut self, stop: Arc<AtomicBool>) {
        self.stop = Some(stop);
    }

    /// `deadline`, or earlier once a stop was requested: [`STOP_GRACE`] after it was first seen.
    fn cut(&self, deadline: Instant, seen: &mut Option<Instant>) -> Instant {
        if self.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
            let at = *seen.get_or_insert_with(Instant::now);
            return deadline.min(at + STOP_GRACE);
        }
        deadline
    }

    /// Whether a wait of a whole `timeout` for a peer has ended without one. From then on
    /// every wait for a peer (a send, the marker) is one try of a 100 ms slice: the peer that
    /// did not come within `timeout` is not waited for a second time.
    pub fn gave_up(&self) -> bool {
        self.gave_up
    }

    /// Books a wait of a whole `timeout` that ended without a peer.
    fn timed_out(&mut self) {
        self.stats.timeouts += 1;
        self.gave_up = true;
    }

    /// The deadline of a wait for a peer that begins now: `timeout` from now, or now once the
    /// sender has given up on a peer.
    fn peer_deadline(&self) -> Instant {
        if self.gave_up {
            Instant::now()
        } else {
            Instant::now() + self.settings.common.timeout
        }
    }

    /// The peers connected now, for tests that must not send before their receivers are there.
    #[cfg(test)]
    pub(crate) fn peers(&mut self) -> i64 {
        self.socket.as_mut().map_or(0, BoxSocket::poll_peers)
    }

    /// The endpoint bound or connected (an ephemeral port resolved).
    pub fn endpoint(&self) -> &str {
        self.socket.as_ref().map_or("", |s| s.endpoint.as_str())
    }

    /// The warning for the report when the socket is bound for other hosts without CURVE.
    pub fn exposed(&self) -> Option<String> {
        self.socket.as_ref().and_then(|s| s.exposed.clone())
    }

    pub fn settings(&self) -> &SinkSettings {
        &self.settings
    }

    /// Reads pending subscription messages of an XPUB socket (non-blocking) and applies the
    /// ones it accepts. libzmq keeps them in an unbounded queue until read, and (without
    /// `ZMQ_XPUB_MANUAL`) every one in its subscription tree: a peer sending millions of
    /// subscriptions would grow both without end. So they are read here (also while the sink
    /// is idle), and at most [`MAX_SUBSCRIPTIONS`] of at most [`MAX_TOPIC`] bytes are applied;
    /// the rest are counted as refused, which makes the row `suspect`.
    ///
    /// libzmq still holds every subscription a peer sent, refused or not, until that peer's
    /// connection ends. A tcp peer that sends far more than subscribers do is cut off by the
    /// sink's [`FloodGuard`]; one that keeps under its budget is cut here once subscriptions
    /// are refused, when it is the peer that sent the most (at least [`FLOOD_BYTES`]).
    pub fn poll_subscriptions(&mut self) {
        let refused_before = self.stats.refused_subscriptions;
        self.apply_subscriptions();
        if self.stats.refused_subscriptions > refused_before
            && let Some(guard) = &self.flood_guard
            && let Some(who) = guard.cut_busiest(FLOOD_BYTES)
        {
            log::warn!(
                "{}: cut off {who}, which sent the most while subscriptions were refused",
                self.settings.common.instance
            );
        }
    }

    /// Copies the flood guard's cuts into the figures (once, as the socket closes).
    fn book_cuts(&mut self) {
        if let Some(guard) = &self.flood_guard {
            let cuts = guard.cuts();
            self.stats.cut_peers = cuts.count;
            self.stats.cut_peer_names = cuts.names;
        }
    }

    /// One batch of [`Sender::poll_subscriptions`]: reads and applies or refuses.
    fn apply_subscriptions(&mut self) {
        let Some(sock) = &self.socket else { return };
        if self.settings.common.pattern != Pattern::PubSub {
            return;
        }
        // A batch at a time, so that a flood never keeps the sink from its loop (and its stop).
        for _ in 0..SUBSCRIPTIONS_PER_POLL {
            let Ok(bytes) = sock.socket.recv_bytes(zmq::DONTWAIT) else {
                break;
            };
            let (subscribe, topic) = match bytes.split_first() {
                Some((1, topic)) => (true, topic),
                Some((0, topic)) => (false, topic),
                _ => continue,
            };
            if !subscribe {
                // An unsubscription of a topic this sink never applied changes nothing.
                if sock.socket.set_unsubscribe(topic).is_ok() {
                    self.stats.subscriptions = self.stats.subscriptions.saturating_sub(1);
                }
                continue;
            }
            if topic.len() > MAX_TOPIC || self.stats.subscriptions >= MAX_SUBSCRIPTIONS {
                self.stats.refused_subscriptions += 1;
                continue;
            }
            if sock.socket.set_subscribe(topic).is_ok() {
                self.stats.subscriptions += 1;
                self.stats.subscribed = true;
                if topic == CONTROL_TOPIC {
                    self.stats.subscribers += 1;
                }
            }
        }
    }

    /// With `sync` on a pubsub sink: waits until `subscribers` receivers have subscribed, up to
    /// `timeout` (not at all once the sender has [given up](Sender::gave_up) on a peer). `stop`
    /// is polled between short waits. The error says how many joined; the sender has then given
    /// up.
    pub fn wait_for_subscribers(&mut self, stop: &dyn Fn() -> bool) -> Result<(), String> {
        if !self.settings.sync || self.settings.common.pattern != Pattern::PubSub {
            return Ok(());
        }
        let deadline = self.peer_deadline();
        loop {
            self.poll_subscriptions();
            if self.stats.subscribers >= self.settings.subscribers || stop() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                if !self.gave_up {
                    self.timed_out();
                }
                return Err(format!(
                    "{}: sync: {} of {} subscriber(s) joined {} within {:?}",
                    self.settings.common.instance,
                    self.stats.subscribers,
                    self.settings.subscribers,
                    self.settings.common.endpoint.written,
                    self.settings.common.timeout
                ));
            }
            if let Some(sock) = &self.socket {
                let _ = sock.socket.poll(zmq::POLLIN, SLICE_MS as i64);
            }
        }
    }

    fn topic_slot(&mut self, topic: &[u8]) -> Result<usize, String> {
        if let Some(t) = self.topics.last()
            && t.topic.as_slice() == topic
        {
            return Ok(self.topics.len() - 1);
        }
        if let Some(&i) = self.topic_index.get(topic) {
            return Ok(i);
        }
        if self.topics.len() >= eos::MAX_TOPICS {
            return Err(format!(
                "{}: more than {} distinct topics",
                self.settings.common.instance,
                eos::MAX_TOPICS
            ));
        }
        if topic.len() > MAX_TOPIC_LEN {
            return Err(format!(
                "{}: a topic of {} bytes is longer than the {MAX_TOPIC_LEN} bytes a receiver books",
                self.settings.common.instance,
                topic.len()
            ));
        }
        let marker = HEADER_LEN + EndOfStream::encoded_len(self.topics.len() + 1, self.topic_bytes + topic.len());
        if marker as u64 > self.settings.common.max_message {
            return Err(format!(
                "{}: the end-of-stream marker listing {} topics would be {marker} bytes, more than max_message ({})",
                self.settings.common.instance,
                self.topics.len() + 1,
                self.settings.common.max_message
            ));
        }
        self.topic_bytes += topic.len();
        self.topics.push(TopicTotal {
            topic: topic.to_vec(),
            sent: 0,
            dropped: 0,
        });
        self.topic_index.insert(topic.to_vec(), self.topics.len() - 1);
        Ok(self.topics.len() - 1)
    }

    /// Sends one message under `topic` (the configured topic when `None`), or, with `batch` >
    /// 1, adds it to the pending frame of its topic (see [`super::batch`]). The pending frame
    /// goes out when it is full, before a message of another topic or one too big to join, and
    /// at [`Sender::flush`]; the caller decides how long it may wait (the sink box: see
    /// [`super::sink`]).
    ///
    /// Every message is numbered here, whatever happens to it later. The result is the worst
    /// outcome of the frames this call sent ([`Sent::Accepted`] when it only collected the
    /// message). After [`Sent::GaveUp`] the message itself is counted as given up too.
    ///
    /// A message sent this way has no number of its own: it carries its link number as its
    /// own, and its send time as its creation time.
    pub fn send(&mut self, topic: Option<&[u8]>, payload: &[u8], stop: &dyn Fn() -> bool) -> Result<Sent, String> {
        self.send_message(topic, payload, None, stop)
    }

    /// [`Sender::send`] of a message with its own sequence number and creation time
    /// (`origin`: the number, and the wall clock's ns since the Unix epoch, 0 if unknown: the
    /// frame then carries the send time), which the frame carries so that the receiving side
    /// passes on the number its producer gave it and keeps the message's age (see
    /// [`super::wire`]).
    pub fn send_message(
        &mut self,
        topic: Option<&[u8]>,
        payload: &[u8],
        origin: Option<(u64, u64)>,
        stop: &dyn Fn() -> bool,
    ) -> Result<Sent, String> {
        let created = match origin {
            Some((_, created)) if created != 0 => created,
            _ => wire::unix_now_ns(),
        };
        if (HEADER_LEN + payload.len()) as u64 > self.settings.common.max_message {
            return Err(format!(
                "{}: a message of {} bytes does not fit max_message ({} bytes, {HEADER_LEN} of them the header); raise max_message on both ends",
                self.settings.common.instance,
                payload.len(),
                self.settings.common.max_message
            ));
        }
        self.sends_since_poll += 1;
        if self.sends_since_poll >= 4096 {
            self.sends_since_poll = 0;
            self.poll_subscriptions();
        }
        let slot = match topic {
            Some(t) => self.topic_slot(t)?,
            None => match self.default_slot {
                Some(slot) => slot,
                None => {
                    let configured = self.settings.topic.clone();
                    let slot = self.topic_slot(&configured)?;
                    self.default_slot = Some(slot);
                    slot
                }
            },
        };
        let joins = self.settings.batch > 1 && self.pending.fits_alone(payload.len());
        let mut outcome = Sent::Accepted;
        if !self.pending.is_empty() && (!joins || slot != self.pending_slot || !self.pending.fits(payload.len())) {
            outcome = self.flush(stop)?;
        }
        // Numbered whatever happens next: a refused message leaves a gap the receiver books.
        let seq = self.topics[slot].sent;
        let msg_seq = origin.map_or(seq, |(number, _)| number);
        self.topics[slot].sent += 1;
        self.stats.sent += 1;
        if outcome == Sent::GaveUp {
            self.topics[slot].dropped += 1;
            self.stats.dropped_timeout += 1;
            return Ok(outcome);
        }
        if joins {
            if self.pending.is_empty() {
                self.pending_slot = slot;
                self.pending_first = seq;
            }
            self.pending.push(msg_seq, created, payload);
            if self.pending.count() >= self.settings.batch {
                outcome = outcome.max(self.flush(stop)?);
            }
            return Ok(outcome);
        }
        let header = Header {
            kind: Kind::Data,
            sender: self.id,
            seq,
            sent_unix_ns: created,
            msg_seq,
        };
        let mut body = std::mem::take(&mut self.body);
        wire::encode_body(&header, payload, &mut body);
        let sent = self.transmit(slot, &body, 1, stop);
        self.body = body;
        Ok(outcome.max(sent?))
    }

    /// Whether messages are collected for a frame not yet sent.
    pub fn holds(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Sends the pending frame, if any (see [`Sender::send`]).
    pub fn flush(&mut self, stop: &dyn Fn() -> bool) -> Result<Sent, String> {
        if self.pending.is_empty() {
            return Ok(Sent::Accepted);
        }
        let n = self.pending.count() as u64;
        let mut pending = std::mem::take(&mut self.pending);
        let frame = pending.seal(self.id, self.pending_first);
        let sent = self.transmit(self.pending_slot, frame, n, stop);
        pending.clear();
        self.pending = pending;
        sent
    }

    /// Sends one data frame carrying `n` already numbered messages of topic `slot`. A refusal
    /// drops all `n` and books them.
    fn transmit(&mut self, slot: usize, frame: &[u8], n: u64, stop: &dyn Fn() -> bool) -> Result<Sent, String> {
        let pubsub = self.settings.common.pattern == Pattern::PubSub;
        let timeout = self.settings.common.timeout;
        // Read the clock only once a send had to wait: the common path never does.
        let mut deadline = None;
        let gave_up = self.gave_up;
        let heartbeat = self.settings.common.heartbeat;
        let mut alone_since = None;
        let Some(sock) = &mut self.socket else {
            return Err(format!("{}: socket already closed", self.settings.common.instance));
        };
        let flags = if pubsub { zmq::DONTWAIT } else { 0 };
        loop {
            match sock.socket.send(&self.topics[slot].topic[..], flags | zmq::SNDMORE) {
                Ok(()) => break,
                Err(zmq::Error::EAGAIN) if pubsub => {
                    self.topics[slot].dropped += n;
                    self.stats.dropped_hwm += n;
                    return Ok(Sent::DroppedHwm);
                }
                Err(zmq::Error::EAGAIN | zmq::Error::EINTR) => {
                    let wait = if gave_up { Duration::ZERO } else { timeout };
                    let deadline = *deadline.get_or_insert_with(|| Instant::now() + wait);
                    let stopped = stop();
                    let watched = self.watch.as_mut().unwrap_or(sock);
                    let lost = !heartbeat.is_zero() && receivers_lost(watched, &mut alone_since, heartbeat);
                    if stopped || lost || Instant::now() >= deadline {
                        self.topics[slot].dropped += n;
                        self.stats.dropped_timeout += n;
                        self.stats.peers_lost |= lost;
                        if !stopped && !gave_up {
                            self.timed_out();
                        }
                        return Ok(Sent::GaveUp);
                    }
                }
                Err(e) => return Err(self.failed(e)),
            }
        }
        // The topic frame is accepted: libzmq never refuses the rest of a multipart message.
        send_retrying(&sock.socket, frame, timeout).map_err(|e| self.failed(e))?;
        self.stats.frames += 1;
        Ok(Sent::Accepted)
    }

    fn failed(&self, e: zmq::Error) -> String {
        format!(
            "{}: send to {} failed: {}",
            self.settings.common.instance,
            self.settings.common.endpoint.written,
            socket::explain(e)
        )
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Sends a frame, retrying on `EAGAIN` (a send-timeout slice passed) and `EINTR` for up to
/// `timeout` from the first refusal.
fn send_retrying(socket: &zmq::Socket, frame: &[u8], timeout: Duration) -> Result<(), zmq::Error> {
    let mut deadline = None;
    loop {
        match socket.send(frame, 0) {
            Err(zmq::Error::EAGAIN | zmq::Error::EINTR)
                if Instant::now() < *deadline.get_or_insert_with(|| Instant::now() + timeout) =>
            {
                continue;
            }
            other => return other,
        }
    }
}

/// With heartbeats on, whether every receiver's connection has been gone for a heartbeat
/// (`alone_since`: since when none was connected, kept across the calls of one wait).
fn receivers_lost(sock: &mut BoxSocket, alone_since: &mut Option<Instant>, heartbeat: Duration) -> bool {
    if !sock.peers_gone() {
        *alone_since = None;
        return false;
    }
    alone_since.get_or_insert_with(Instant::now).elapsed() >= heartbeat
}

/// A random sender id, different for every sink instance and run.
fn random_id() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(wire::unix_now_ns() as u128 ^ ((std::process::id() as u128) << 64));
    h.finish() as u32
}
