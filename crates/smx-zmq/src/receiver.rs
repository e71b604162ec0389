//! The receiving side of a ZeroMQ source, independent of the runtime (tested with raw sockets).
//!
//! Receives two-frame messages, books every one in [`SourceBooks`], skips and counts what does
//! not parse, and decides when the stream has ended: after the markers of all expected
//! senders and draining what is already queued, or after `timeout` without any traffic.
//! A batch frame (see [`super::batch`]) is checked whole when it arrives, then handed out one
//! message per [`Receiver::next`], each booked with its own number, before anything more is
//! received.

use std::time::{Duration, Instant};

use super::batch::Records;
use super::books::{Booked, Marker, SourceBooks, StreamId, Totals};
use super::eos::{CONTROL_TOPIC, EndOfStream, EndReason};
use super::settings::{Pattern, SourceSettings};
use super::socket::{self, BoxSocket};
use super::wire::{Corrupt, HEADER_LEN, Header, Kind};

/// What [`Receiver::next`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    Data {
        topic: &'a [u8],
        /// The message's own sequence number, as its producer gave it (the link's frame
        /// numbers stay in the books).
        seq: u64,
        sent_unix_ns: u64,
        payload: &'a [u8],
    },
    /// Nothing arrived within the wait; the stream goes on.
    Idle,
    Ended(EndReason),
}

/// A received batch frame whose messages are handed out one by one.
#[derive(Debug)]
struct Batch {
    stream: StreamId,
    records: Records,
}

/// An open receiving socket with its books.
pub struct Receiver {
    settings: SourceSettings,
    socket: Option<BoxSocket>,
    /// The connection that carries only heartbeats (`watch`), if any.
    watch: Option<BoxSocket>,
    books: SourceBooks,
    topic: zmq::Message,
    body: zmq::Message,
    /// The batch in `body` still being handed out.
    batch: Option<Batch>,
    /// Messages that did not parse (a batch that does not parse counts once).
    pub corrupt: u64,
    /// The first few reasons, for the log.
    pub corrupt_examples: Vec<String>,
    /// End-of-stream markers received, repeats included.
    pub markers: u64,
    /// Markers whose body differed from the same sender's first (books flagged inconsistent).
    pub conflicting_markers: u64,
    /// Connections that ended while the stream was open (a sender stopped or was killed, or
    /// libzmq cut a peer for a frame over `max_message` or bytes that are not ZeroMQ).
    pub disconnects: u64,
    /// Handshakes refused: peers without the right CURVE keys (or without CURVE) that tried to
    /// connect; their connections are not in `disconnects`.
    pub refused: u64,
    /// When traffic was last noticed; refreshed lazily (see `traffic_since`), so that a busy
    /// stream reads the clock once per empty socket, not once per message.
    last_traffic: Instant,
    /// Something arrived since `last_traffic` was last refreshed.
    traffic_since: bool,
    /// Since when every sender's connection has been gone, with heartbeats on.
    alone_since: Option<Instant>,
    draining: bool,
    ended: Option<EndReason>,
}

impl Receiver {
    pub fn open(settings: SourceSettings) -> Result<Receiver, String> {
        let kind = match settings.common.pattern {
            Pattern::PubSub => zmq::SUB,
            Pattern::Pipeline => zmq::PULL,
        };
        let pattern = settings.common.pattern;
        let hwm = settings.common.hwm;
        let prefix = settings.subscribe.clone();
        let socket = BoxSocket::open(&settings.common, kind, true, |s| {
            s.set_rcvhwm(hwm)?;
            if pattern == Pattern::PubSub {
                s.set_subscribe(CONTROL_TOPIC)?;
                s.set_subscribe(&prefix)?;
            }
            Ok(())
        })
        .map_err(|e| format!("{}: {e}", settings.common.instance))?;
        let watch =
            BoxSocket::open_watch(&settings.common).map_err(|e| format!("{}: {e}", settings.common.instance))?;
        Ok(Receiver {
            settings,
            socket: Some(socket),
            watch,
            books: SourceBooks::default(),
            topic: zmq::Message::new(),
            body: zmq::Message::new(),
            batch: None,
            corrupt: 0,
            corrupt_examples: Vec::new(),
            markers: 0,
            conflicting_markers: 0,
            disconnects: 0,
            refused: 0,
            last_traffic: Instant::now(),
            traffic_since: false,
            alone_since: None,
            draining: false,
            ended: None,
        })
    }

    pub fn endpoint(&self) -> &str {
        self.socket.as_ref().map_or("", |s| s.endpoint.as_str())
    }

    /// The warning for the report when the socket is bound for other hosts without CURVE.
    pub fn exposed(&self) -> Option<String> {
        self.socket.as_ref().and_then(|s| s.exposed.clone())
    }

    pub fn settings(&self) -> &SourceSettings {
        &self.settings
    }

    pub fn totals(&self) -> Totals {
        self.books.totals()
    }

    /// The books, for what they say about senders.
    pub fn books(&self) -> &SourceBooks {
        &self.books
    }

    pub fn ended(&self) -> Option<EndReason> {
        self.ended
    }

    /// Ends the stream early (stop request, consumers gone) and closes the socket.
    pub fn stop(&mut self) {
        if self.ended.is_none() {
            self.ended = Some(EndReason::Stopped);
        }
        self.close();
    }

    fn close(&mut self) {
        self.batch = None;
        if let Some(watch) = self.watch.take() {
            if self.ended == Some(EndReason::Marker) {
                watch.close_saying_ended();
            } else {
                watch.close(Duration::ZERO);
            }
        }
        if let Some(mut sock) = self.socket.take() {
            sock.poll_peers();
            (self.disconnects, self.refused) = connections(&sock);
            let _ = sock.socket.set_linger(0);
            sock.close(Duration::ZERO);
        }
    }

    fn end(&mut self, reason: EndReason) -> Event<'static> {
        self.ended = Some(reason);
        self.close();
        Event::Ended(reason)
    }

    /// The next data message, waiting up to `wait` for one (`Duration::ZERO`: only what is
    /// already queued). Corrupt messages, duplicates and markers are booked and skipped.
    pub fn next(&mut self, wait: Duration) -> Result<Event<'_>, String> {
        if let Some(reason) = self.ended {
            return Ok(Event::Ended(reason));
        }
        // Read the clock only once the socket is empty: the busy path never does.
        let mut started = None;
        loop {
            if let Some(batch) = &mut self.batch {
                match batch.records.next(&self.body[HEADER_LEN..]) {
                    Some(record) => {
                        // Records::parse kept the numbers below MAX_SEQ: always booked.
                        let booked = self.books.record_in(batch.stream, record.seq);
                        debug_assert_ne!(booked, Booked::Impossible);
                        if booked != Booked::New {
                            continue;
                        }
                        let range = record.payload;
                        return Ok(Event::Data {
                            topic: &self.topic,
                            seq: record.msg_seq,
                            sent_unix_ns: record.created_unix_ns,
                            payload: &self.body[HEADER_LEN + range.start..HEADER_LEN + range.end],
                        });
                    }
                    None => self.batch = None,
                }
            }
            let Some(sock) = &mut self.socket else {
                return Ok(Event::Ended(EndReason::Stopped));
            };
            match sock.socket.recv(&mut self.topic, zmq::DONTWAIT) {
                Ok(()) => {}
                Err(zmq::Error::EAGAIN) => match self.nothing_queued(wait, &mut started)? {
                    Some(event) => return Ok(event),
                    None => continue,
                },
                Err(zmq::Error::EINTR) => continue,
                Err(e) => {
                    return Err(format!(
                        "{}: receive failed: {}",
                        self.settings.common.instance,
                        socket::explain(e)
                    ));
                }
            }
            self.traffic_since = true;
            match self.receive_body() {
                Err(why) => self.count_corrupt(why),
                Ok(Some(header)) => {
                    match self.books.record(header.sender, &self.topic, header.seq) {
                        Err(why) => {
                            self.count_corrupt(why);
                            continue;
                        }
                        // Booked as a duplicate, and not passed on.
                        Ok(false) => continue,
                        Ok(true) => {}
                    }
                    return Ok(Event::Data {
                        topic: &self.topic,
                        seq: header.msg_seq,
                        sent_unix_ns: header.sent_unix_ns,
                        payload: &self.body[HEADER_LEN..],
                    });
                }
                Ok(None) => {}
            }
        }
    }

    /// Reads the rest of a message whose topic frame is in `self.topic`. `Ok(None)`: a marker
    /// (booked), or a batch (now in `self.batch`, booked as it is handed out).
    fn receive_body(&mut self) -> Result<Option<Header>, Corrupt> {
        let Some(sock) = &self.socket else {
            return Err(Corrupt::Frames(1));
        };
        if !self.topic.get_more() {
            return Err(Corrupt::Frames(1));
        }
        if sock.socket.recv(&mut self.body, 0).is_err() {
            return Err(Corrupt::Frames(1));
        }
        if self.body.get_more() {
            let mut frames = 2;
            let mut rest = zmq::Message::new();
            while sock.socket.recv(&mut rest, 0).is_ok() {
                frames += 1;
                if !rest.get_more() {
                    break;
                }
            }
            return Err(Corrupt::Frames(frames));
        }
        let (header, rest) = Header::parse(&self.body)?;
        match header.kind {
            Kind::Data => Ok(Some(header)),
            Kind::Batch => {
                let records = Records::parse(rest, header.seq)?;
                self.batch = Some(Batch {
                    stream: self.books.stream_of(header.sender, &self.topic)?,
                    records,
                });
                Ok(None)
            }
            Kind::EndOfStream | Kind::Abort => {
                let eos = EndOfStream::decode(rest)?;
                self.markers += 1;
                let prefix = &self.settings.subscribe;
                let filtered = self.settings.common.pattern == Pattern::PubSub;
                let aborted = header.kind == Kind::Abort;
                let booked = self
                    .books
                    .finish(header.sender, rest, &eos.topics, |t| !filtered || t.starts_with(prefix))?;
                match booked {
                    Marker::First if aborted => {
                        self.books.mark_aborted(header.sender);
                        log::warn!(
                            "{}: the sender on {} aborted after sending {} message(s)",
                            self.settings.common.instance,
                            self.settings.common.endpoint.written,
                            eos.total()
                        );
                    }
                    Marker::First | Marker::Repeat => {}
                    Marker::Conflicting => {
                        self.conflicting_markers += 1;
                        if self.conflicting_markers == 1 {
                            log::warn!(
                                "{}: sender {:08x} on {} sent end markers with different totals: its books are \
                                 inconsistent (a forged marker, or a restarted sender reusing its id)",
                                self.settings.common.instance,
                                header.sender,
                                self.settings.common.endpoint.written,
                            );
                        }
                    }
                }
                if self.books.complete(self.settings.senders) {
                    self.draining = true;
                }
                Ok(None)
            }
        }
    }

    /// The socket had nothing: ends the stream when it is over (the markers are in and the
    /// socket drained, no traffic for `timeout`, every sender's connection lost), says `Idle`
    /// once `wait` has passed since `started`, or else waits a slice for traffic (`None`).
    fn nothing_queued(
        &mut self,
        wait: Duration,
        started: &mut Option<Instant>,
    ) -> Result<Option<Event<'static>>, String> {
        let Some(sock) = &mut self.socket else {
            return Ok(Some(Event::Ended(EndReason::Stopped)));
        };
        sock.poll_peers();
        (self.disconnects, self.refused) = connections(sock);
        // Data of a sender without a marker that arrived while draining keeps the stream open.
        self.draining = self.draining && self.books.complete(self.settings.senders);
        if self.draining {
            let reason = if self.books.aborted_senders() > 0 {
                EndReason::Aborted
            } else {
                EndReason::Marker
            };
            return Ok(Some(self.end(reason)));
        }
        let now = Instant::now();
        if std::mem::take(&mut self.traffic_since) {
            self.last_traffic = now;
        }
        let idle = now - self.last_traffic;
        if idle >= self.settings.common.timeout {
            return Ok(Some(self.end(EndReason::Timeout)));
        }
        let heartbeat = self.settings.common.heartbeat;
        let alone = !heartbeat.is_zero() && self.watch.as_mut().unwrap_or(sock).peers_gone();
        // Gone, and silent since: a sender that ended (or a host that dropped off) may still
        // have messages on their way in the kernel's buffers, which keep arriving after its
        // connections went; only when they stop is the rest lost.
        if alone {
            let silent_since = (*self.alone_since.get_or_insert(now)).max(self.last_traffic);
            if now - silent_since >= heartbeat {
                return Ok(Some(self.end(EndReason::PeerLost)));
            }
        }
        if !alone {
            self.alone_since = None;
        }
        let waited = now - *started.get_or_insert(now);
        if waited >= wait {
            return Ok(Some(Event::Idle));
        }
        let mut slice = (wait - waited).min(self.settings.common.timeout - idle);
        if !heartbeat.is_zero() {
            slice = slice.min(heartbeat);
        }
        let ms = slice.as_millis().clamp(1, i64::MAX as u128) as i64;
        let Some(sock) = &self.socket else {
            return Ok(Some(Event::Ended(EndReason::Stopped)));
        };
        sock.socket
            .poll(zmq::POLLIN, ms)
            .map_err(|e| format!("{}: poll failed: {}", self.settings.common.instance, socket::explain(e)))?;
        Ok(None)
    }

    fn count_corrupt(&mut self, why: Corrupt) {
        self.corrupt += 1;
        if self.corrupt_examples.len() < 3 {
            log::warn!("{}: skipped a corrupt message: {why}", self.settings.common.instance);
            self.corrupt_examples.push(why.to_string());
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.close();
    }
}

/// Connections that ended, and handshakes refused. libzmq ends each connection whose handshake
/// failed: that is a refused peer, not a sender that went away, so it is not a disconnect.
fn connections(sock: &BoxSocket) -> (u64, u64) {
    (sock.disconnects.saturating_sub(sock.refused), sock.refused)
}
