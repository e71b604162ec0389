//! How a sink's stream ends: its end-of-stream (or abort) markers, queued with retries within
//! the timeout or a stop's grace, then the wait for the receivers to confirm by disconnecting,
//! and the books of what that wait found.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{STOP_GRACE, Sender, Sent, receivers_lost, send_retrying};
use crate::endpoint::Transport;
use crate::eos::{self, CONTROL_TOPIC, EndOfStream};
use crate::socket::{self, BoxSocket};
use crate::wire::{self, Header, Kind};

impl Sender {
    /// Ends the stream: queues the end-of-stream marker [`eos::REPEATS`] times (retried up to
    /// `timeout`; tried once after the sender [gave up](Sender::gave_up) on a peer), closes the
    /// socket and waits for delivery (up to `linger`). Idempotent.
    pub fn finish(&mut self) {
        self.end_stream(Kind::EndOfStream);
    }

    /// Ends the stream early, the way [`Sender::finish`] does but with abort markers: the
    /// receivers learn at once (instead of after their `timeout`) that nothing more comes, and
    /// still get the exact totals of what was sent. Idempotent; a no-op after `finish`.
    pub fn abort(&mut self) {
        self.end_stream(Kind::Abort);
    }

    /// Books and says why the marker of `kind` could not be queued: `stopped` (within the
    /// stop's grace), not `waited` for (the sender had given up on a peer), or after `timeout`.
    fn marker_not_sent(&mut self, kind: Kind, e: zmq::Error, stopped: bool, waited: bool) {
        let timeout = self.settings.common.timeout;
        let no_room = matches!(e, zmq::Error::EAGAIN | zmq::Error::EINTR);
        let why = if stopped {
            format!("within {STOP_GRACE:?} of the stop: {}", socket::explain(e))
        } else if no_room && waited && self.stats.peers_lost {
            format!(
                "every receiver's connection was cut while it waited for room (no answer to heartbeats every {:?})",
                self.settings.common.heartbeat
            )
        } else if no_room && !waited {
            self.stats.marker_unwaited = self.stats.markers == 0;
            if self.stats.peers_lost {
                "tried once, as every receiver's connection was cut".to_string()
            } else {
                format!("tried once, not waited for, as no receiver came within timeout {timeout:?}")
            }
        } else if no_room {
            self.timed_out();
            format!("within timeout {timeout:?}: {}", socket::explain(e))
        } else {
            socket::explain(e)
        };
        let what = if kind == Kind::Abort {
            "abort marker"
        } else {
            "end-of-stream marker"
        };
        let level = if stopped && self.stats.nobody_to_tell {
            log::Level::Debug
        } else {
            log::Level::Warn
        };
        log::log!(
            level,
            "{}: {what} not sent to {}: {why}",
            self.settings.common.instance,
            self.settings.common.endpoint.written
        );
    }

    fn end_stream(&mut self, kind: Kind) {
        if self.socket.is_none() {
            return;
        }
        let kind = self.flush_before_marker(kind);
        let Some(mut sock) = self.socket.take() else { return };
        self.stats.aborted = kind == Kind::Abort;
        sock.poll_peers();
        self.stats.nobody_to_tell = self.stats.sent == 0 && sock.handshakes == 0;
        self.poll_subscriptions();
        let mut stop_seen = None;
        self.send_markers(&mut sock, kind, &mut stop_seen);
        // The watch connection stays up while the receivers take what is queued: its end
        // would tell them this sender is gone while its messages are still on their way.
        let mut watch = self.watch.take();
        self.close_after_markers(sock, stop_seen, watch.as_mut());
        if let Some(watch) = watch {
            watch.close(Duration::ZERO);
        }
    }

    /// Sends the messages still collected, which go before the marker that counts them (a
    /// give-up books them as dropped; after a stop it does not wait for room: the step that
    /// was blocked sending gave up for the same reason). The marker's kind: an abort once the
    /// last frame could not be sent.
    fn flush_before_marker(&mut self, kind: Kind) -> Kind {
        let stop = self.stop.clone();
        match self.flush(&|| stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed))) {
            Err(e) => log::warn!("{e}"),
            Ok(Sent::GaveUp) => {
                log::warn!(
                    "{}: the last frame could not be sent to {} (stopped while blocked, or no receiver for {:?}): its messages are counted as dropped and the stream ends with an abort marker",
                    self.settings.common.instance,
                    self.settings.common.endpoint.written,
                    self.settings.common.timeout
                );
                return Kind::Abort;
            }
            Ok(_) => {}
        }
        kind
    }

    /// Queues the marker [`eos::REPEATS`] times, each within the wait for a peer (one try once
    /// the sender gave up on a peer), cut short by a stop (noted in `stop_seen`) and, with
    /// heartbeats on, by every receiver's connection being cut: a host that went away takes
    /// nothing more, and its queue, full, would hold the marker back until `timeout`.
    fn send_markers(&mut self, sock: &mut BoxSocket, kind: Kind, stop_seen: &mut Option<Instant>) {
        let marker = EndOfStream {
            topics: self.topics.clone(),
        }
        .encode();
        // A sender that gave up on a peer does not wait for one again: the marker gets one try.
        let waited = !self.gave_up;
        let full = self.peer_deadline();
        let heartbeat = self.settings.common.heartbeat;
        let mut alone_since = None;
        let mut watch = self.watch.take();
        'repeat: for repeat in 0..eos::REPEATS {
            let header = Header {
                kind,
                sender: self.id,
                seq: repeat,
                sent_unix_ns: wire::unix_now_ns(),
                msg_seq: 0,
            };
            wire::encode_body(&header, &marker, &mut self.body);
            loop {
                let deadline = self.cut(full, stop_seen);
                match sock.socket.send(CONTROL_TOPIC, zmq::SNDMORE) {
                    Ok(()) => break,
                    Err(e @ (zmq::Error::EAGAIN | zmq::Error::EINTR)) if Instant::now() < deadline => {
                        // The receiver that took a marker and left can take no other: the end
                        // is confirmed, not a host lost.
                        self.receiver_said_ended |= watch.as_mut().is_some_and(|w| w.peer_said_ended());
                        if self.receiver_said_ended {
                            break 'repeat;
                        }
                        let watched = watch.as_mut().unwrap_or(&mut *sock);
                        if !heartbeat.is_zero() && receivers_lost(watched, &mut alone_since, heartbeat) {
                            self.stats.peers_lost = true;
                            self.gave_up = true;
                            self.marker_not_sent(kind, e, false, waited);
                            break 'repeat;
                        }
                    }
                    Err(e) => {
                        self.marker_not_sent(kind, e, stop_seen.is_some(), waited);
                        break 'repeat;
                    }
                }
            }
            let deadline = self.cut(full, stop_seen);
            if send_retrying(
                &sock.socket,
                &self.body,
                deadline.saturating_duration_since(Instant::now()),
            )
            .is_ok()
            {
                self.stats.markers += 1;
            }
        }
        self.watch = watch;
    }

    /// Waits (up to `linger`, or what is left of a stop's grace) for the receivers to confirm
    /// the end by disconnecting, closes the socket and books how the stream ended.
    /// A stop (within its grace) or receivers found lost on `watch` (no connection there for a
    /// heartbeat's time) end the wait early: a host that went away never confirms, and its
    /// messages are then lost, not waited for for a whole `linger`. Without a watch connection
    /// the heartbeats run on the data connection, and a receiver they cut looks the same as one
    /// that disconnected to confirm: only the watch tells a lost host from a confirmed end.
    fn close_after_markers(
        &mut self,
        mut sock: BoxSocket,
        mut stop_seen: Option<Instant>,
        mut watch: Option<&mut BoxSocket>,
    ) {
        // Receivers whose connections were cut confirm nothing and take nothing more.
        let mut linger = if self.stats.peers_lost {
            let _ = sock.socket.set_linger(0);
            Duration::ZERO
        } else {
            self.settings.common.linger
        };
        let until = Instant::now() + linger;
        let heartbeat = self.settings.common.heartbeat;
        let mut alone_since = None;
        let mut lost = false;
        // A receiver that said its stream ended leaves next: its watch going first is no loss.
        let mut said_ended = self.receiver_said_ended;
        let confirmed = sock.wait_peers_gone(|| {
            lost = !heartbeat.is_zero()
                && watch.as_deref_mut().is_some_and(|w| {
                    said_ended |= w.peer_said_ended();
                    !said_ended && receivers_lost(w, &mut alone_since, heartbeat)
                });
            lost || Instant::now() >= self.cut(until, &mut stop_seen)
        });
        self.receiver_said_ended = said_ended;
        if lost {
            self.stats.peers_lost = true;
            linger = Duration::ZERO;
            let _ = sock.socket.set_linger(0);
        }
        self.cut(Instant::now(), &mut stop_seen);
        if let Some(at) = stop_seen.filter(|_| !linger.is_zero()) {
            // Stopped: what receivers have not taken within the grace is not waited for (the
            // whole end of the stream fits in one grace, however it was spent), and the close
            // judges its wait by that shorter linger.
            linger = linger.min((at + STOP_GRACE).saturating_duration_since(Instant::now()));
            let _ = sock.socket.set_linger(linger.as_millis() as i32);
        }
        sock.poll_peers();
        let sock_handshakes = sock.handshakes;
        self.stats.refused = sock.refused;
        self.stats.receivers = sock.most_peers;
        if sock.handshakes == 0 && !matches!(self.settings.common.endpoint.transport, Transport::Inproc { .. }) {
            self.stats.undelivered = self.stats.sent - self.stats.dropped_hwm - self.stats.dropped_timeout;
        }
        // A receiver stopped by the same stop disconnects too, which is no confirmation.
        let stop = self.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed));
        self.stats.stopped = stop_seen.is_some() || stop;
        self.book_cuts();
        // The guard ends before the socket closes, so that it never looks at a descriptor
        // that libzmq closed.
        self.flood_guard = None;
        let closed = sock.close(linger);
        self.stats.nobody_to_tell &= sock_handshakes == 0;
        self.stats.linger_expired = !self.stats.peers_lost && (!confirmed || closed.linger_expired);
        if self.stats.linger_expired && !(self.stats.stopped && self.stats.nobody_to_tell) {
            let within = if self.stats.stopped {
                "within the stop's grace".to_string()
            } else {
                format!("within linger {:?}", self.settings.common.linger)
            };
            log::warn!(
                "{}: {within}, not every receiver on {} confirmed the end of stream by \
                 disconnecting: messages still queued may be discarded (the receiver's loss count \
                 includes them)",
                self.settings.common.instance,
                self.settings.common.endpoint.written
            );
        }
    }
}
