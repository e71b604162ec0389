//! Opening a ZeroMQ socket for a box: context choice, options, bind or connect, and the
//! errors worded for a user.
//!
//! tcp and ipc sockets get a context of their own, so that closing the box terminates that
//! context, which waits (up to `linger`) until every queued message has been handed to the
//! operating system. With one process-wide context that wait would never happen and messages
//! still queued when the process exits would vanish, which is the likely cause of the
//! unexplained ipc losses of the original. inproc endpoints must share one context between the
//! boxes of a process, so they use [`shared_context`]; inproc queues are memory shared with the
//! peer and need no flushing.

use std::os::fd::AsRawFd;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::endpoint::{Endpoint, IpcFiles, Transport};
use super::settings::Common;

/// Milliseconds between connection attempts of a connecting socket (libzmq's default: 100).
const RECONNECT_MS: i32 = 10;
/// The longest interval between connection attempts, reached by doubling.
const RECONNECT_MAX_MS: i32 = 1000;

/// The context of all inproc sockets of this process.
pub fn shared_context() -> zmq::Context {
    static CONTEXT: OnceLock<zmq::Context> = OnceLock::new();
    CONTEXT.get_or_init(zmq::Context::new).clone()
}

/// A socket with its context and the ipc files it must remove.
pub struct BoxSocket {
    // Field order is drop order: the socket closes before its context terminates.
    pub socket: zmq::Socket,
    /// Receives the socket's connection events (see [`BoxSocket::watch_peers`]).
    monitor: Option<zmq::Socket>,
    /// Peers connected now, as counted from the monitor's events.
    peers: i64,
    /// Connections that ended (the peer closed, was killed, or libzmq cut it for a protocol
    /// error such as a frame over `max_message`), as counted from the monitor's events.
    pub disconnects: u64,
    /// Most peers connected at once, as counted from the monitor's events (a pipeline sink's
    /// receivers, among which ZeroMQ shares the messages).
    pub most_peers: u64,
    /// Handshakes that failed (a peer without the right CURVE keys, or one speaking another
    /// security mechanism); each one also ends its connection.
    pub refused: u64,
    /// Handshakes that succeeded: connections a message can be delivered over.
    pub handshakes: u64,
    /// The warning for the report when the socket is bound for other hosts without CURVE.
    pub exposed: Option<String>,
    context: Option<zmq::Context>,
    files: IpcFiles,
    /// The endpoint actually bound (an ephemeral tcp port resolved), or connected.
    pub endpoint: String,
}

/// What closing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed {
    pub waited: Duration,
    /// Terminating the context took the whole linger time: messages still queued then may
    /// have been discarded (the receiver's books show them).
    pub linger_expired: bool,
}

impl BoxSocket {
    /// Creates a socket of `kind`, lets `configure` set options, then binds or connects.
    /// `watch`: count connected peers (so that [`BoxSocket::wait_peers_gone`] can wait for them to leave).
    pub fn open(
        common: &Common,
        kind: zmq::SocketType,
        watch: bool,
        configure: impl FnOnce(&mut zmq::Socket) -> Result<(), zmq::Error>,
    ) -> Result<BoxSocket, String> {
        let endpoint: &Endpoint = &common.endpoint;
        let context = match endpoint.transport {
            Transport::Inproc { .. } => shared_context(),
            _ => zmq::Context::new(),
        };
        let cause = |what: &str, e: zmq::Error| format!("{what} {}: {}", endpoint.written, explain(e));
        let mut socket = context
            .socket(kind)
            .map_err(|e| cause("cannot create a socket for", e))?;
        set_options(&socket, common)?;
        configure(&mut socket).map_err(|e| cause("cannot set options for", e))?;
        if let Some(curve) = &common.curve {
            curve
                .apply(&socket)
                .map_err(|e| cause("cannot set the CURVE keys of", e))?;
            curve
                .start_zap(&context)
                .map_err(|e| cause("cannot start the CURVE client check (ZAP) of", e))?;
        }
        let monitor = if watch {
            Some(watch_peers(&context, &socket).map_err(|e| cause("cannot monitor the socket of", e))?)
        } else {
            None
        };
        let (bound, files, exposed) = if common.bind {
            bind(&mut socket, common)?
        } else {
            socket
                .connect(&endpoint.resolved)
                .map_err(|e| cause("cannot connect to", e))?;
            (endpoint.resolved.clone(), IpcFiles::default(), None)
        };
        let own_context = !matches!(endpoint.transport, Transport::Inproc { .. });
        Ok(BoxSocket {
            socket,
            monitor,
            peers: 0,
            disconnects: 0,
            most_peers: 0,
            refused: 0,
            handshakes: 0,
            exposed,
            context: own_context.then_some(context),
            files,
            endpoint: bound,
        })
    }

    /// Closes the socket, waits for its context to deliver what is queued (up to `linger`),
    /// and removes ipc files.
    pub fn close(self, linger: Duration) -> Closed {
        let BoxSocket {
            socket,
            monitor,
            context,
            mut files,
            ..
        } = self;
        let started = Instant::now();
        drop(socket);
        drop(monitor);
        let owned = context.is_some();
        drop(context);
        let waited = started.elapsed();
        files.remove();
        Closed {
            waited,
            linger_expired: owned && !linger.is_zero() && waited >= linger,
        }
    }
}

impl BoxSocket {
    /// Reads pending connection events; returns the number of peers connected now.
    pub fn poll_peers(&mut self) -> i64 {
        let Some(monitor) = &self.monitor else { return 0 };
        while let Ok(frames) = monitor.recv_multipart(zmq::DONTWAIT) {
            let Some(id) = frames.first().and_then(|f| f.get(..2)) else {
                continue;
            };
            match zmq::SocketEvent::from_raw(u16::from_le_bytes([id[0], id[1]])) {
                zmq::SocketEvent::ACCEPTED | zmq::SocketEvent::CONNECTED => {
                    self.peers += 1;
                    self.most_peers = self.most_peers.max(self.peers.max(0) as u64);
                }
                zmq::SocketEvent::DISCONNECTED => {
                    self.peers -= 1;
                    self.disconnects += 1;
                }
                zmq::SocketEvent::HANDSHAKE_FAILED_NO_DETAIL
                | zmq::SocketEvent::HANDSHAKE_FAILED_PROTOCOL
                | zmq::SocketEvent::HANDSHAKE_FAILED_AUTH => self.refused += 1,
                zmq::SocketEvent::HANDSHAKE_SUCCEEDED => self.handshakes += 1,
                _ => {}
            }
        }
        self.peers
    }

    /// Opens the connection of `common` that carries only heartbeats, if it has one.
    pub fn open_watch(common: &Common) -> Result<Option<BoxSocket>, String> {
        let Some(watch) = common.watch_settings() else {
            return Ok(None);
        };
        // Without ZMQ_IMMEDIATE (set on a connecting CURVE socket, see `set_options`): with
        // it libzmq drops what arrived but was not read yet when the connection ends, and a
        // receiver says its stream ended just before it closes (`close_saying_ended`).
        BoxSocket::open(&watch, zmq::PAIR, true, |s| s.set_immediate(false)).map(Some)
    }

    /// Whether the peer of a watch connection said its stream ended by the markers
    /// ([`crate::eos::WATCH_ENDED`]); reads what arrived, never waits.
    pub fn peer_said_ended(&mut self) -> bool {
        let mut said = false;
        while let Ok(frame) = self.socket.recv_bytes(zmq::DONTWAIT) {
            said |= frame == crate::eos::WATCH_ENDED;
        }
        said
    }

    /// Tells the peer of a watch connection that this side's stream ended by the markers, and
    /// closes the connection, letting the word leave for at most
    /// [`crate::eos::WATCH_ENDED_LINGER`] (nothing is waited for when no peer is connected).
    pub fn close_saying_ended(self) {
        let said = self.socket.send(crate::eos::WATCH_ENDED, zmq::DONTWAIT).is_ok();
        let linger = if said {
            crate::eos::WATCH_ENDED_LINGER
        } else {
            Duration::ZERO
        };
        let _ = self.socket.set_linger(linger.as_millis() as i32);
        self.close(linger);
    }

    /// Whether every peer that connected has gone again (none connected now, at least one did).
    pub fn peers_gone(&mut self) -> bool {
        self.poll_peers() <= 0 && self.most_peers > 0
    }

    /// Waits until every peer has disconnected, or until `give_up` (asked again every few
    /// milliseconds, so that a stop or a peer lost meanwhile ends the wait) says so. A receiver
    /// disconnects only after it has the end-of-stream marker (or gave up), so this is the
    /// sender's acknowledgement that everything was delivered: linger alone is not enough,
    /// because libzmq's ipc transport discards queued messages at close regardless of linger
    /// (zeromq/libzmq#4660). Returns true when no peer is left.
    pub fn wait_peers_gone(&mut self, mut give_up: impl FnMut() -> bool) -> bool {
        loop {
            if self.poll_peers() <= 0 {
                return true;
            }
            if give_up() {
                return false;
            }
            match &self.monitor {
                Some(monitor) => {
                    let _ = monitor.poll(zmq::POLLIN, PEER_LOOK_MS);
                }
                None => std::thread::sleep(Duration::from_millis(PEER_LOOK_MS as u64)),
            }
        }
    }
}

/// The longest pause between two looks of [`BoxSocket::wait_peers_gone`] at its peers and at
/// why it might give up: a small part of a stop's grace.
const PEER_LOOK_MS: i64 = 20;

/// What CURVE adds to a frame on the wire, which libzmq's `ZMQ_MAXMSGSIZE` counts: the
/// MESSAGE command's name (8 bytes with its length), its nonce (8), the box's MAC (16) and
/// flags (1); rounded up, so that a frame of `max_message` bytes always passes.
const CURVE_FRAME_OVERHEAD: u64 = 64;

/// The options every socket of a box has, before its role's own.
fn set_options(socket: &zmq::Socket, common: &Common) -> Result<(), String> {
    let cause = |what: &str, e: zmq::Error| format!("{what} {}: {}", common.endpoint.written, explain(e));
    socket
        .set_linger(common.linger.as_millis() as i32)
        .map_err(|e| cause("cannot set linger on", e))?;
    // libzmq reads a frame's length before it allocates the frame, so a peer that announces
    // more than this is cut off without costing memory. Under CURVE it reads the encrypted
    // frame, longer than the message by the box's own bytes.
    let wire_overhead = if common.curve.is_some() {
        CURVE_FRAME_OVERHEAD
    } else {
        0
    };
    socket
        .set_maxmsgsize(i64::try_from(common.max_message.saturating_add(wire_overhead)).unwrap_or(i64::MAX))
        .map_err(|e| cause("cannot set the largest message size on", e))?;
    // With a watch connection the heartbeats go there alone: on this one a receiver that takes
    // nothing for a while stops reading, and would be cut as if it were gone.
    if let Some(peer_timeout) = common.peer_timeout().filter(|_| common.watch.is_none()) {
        let ms = |d: Duration| d.as_millis().min(i32::MAX as u128) as i32;
        socket
            .set_heartbeat_ivl(ms(common.heartbeat))
            .and_then(|()| socket.set_heartbeat_timeout(ms(peer_timeout)))
            .and_then(|()| socket.set_heartbeat_ttl(ms(peer_timeout)))
            .map_err(|e| cause("cannot set heartbeats on", e))?;
    }
    // libzmq takes IPv4 only unless asked: an endpoint with an IPv6 address (`tcp://[::1]:N`)
    // would be refused as "no such local address". Asked, it takes both.
    if common.endpoint.written.starts_with("tcp://[") {
        socket.set_ipv6(true).map_err(|e| cause("cannot allow IPv6 on", e))?;
    }
    // A receiver that starts before its sender has bound retries the connection at this
    // interval. libzmq's 100 ms default delayed the first message of a net whose two halves
    // start together by up to 100 ms (a third of a million-message run's wall time).
    // Doubling up to a second keeps a long-dead peer from being asked 100 times a second.
    socket
        .set_reconnect_ivl(RECONNECT_MS)
        .and_then(|()| socket.set_reconnect_ivl_max(RECONNECT_MAX_MS))
        .map_err(|e| cause("cannot set the reconnect interval on", e))?;
    // A connecting CURVE socket queues nothing before the handshake has proved who the peer
    // is: a sink's messages then wait for the server (and time out, counted as dropped)
    // instead of being booked as accepted into a connection that is refused. (Plain links
    // keep libzmq's default, which queues ahead of the connection: senders and receivers
    // may start in either order without the sender blocking.)
    if common.curve.is_some() && !common.bind {
        socket
            .set_immediate(true)
            .map_err(|e| cause("cannot set ZMQ_IMMEDIATE on", e))?;
    }
    Ok(())
}

/// Binds `socket` to the endpoint of `common`: the endpoint actually bound (an ephemeral port
/// resolved), the ipc files to remove at the end, and the warning when the socket is open to
/// other hosts without CURVE.
fn bind(socket: &mut zmq::Socket, common: &Common) -> Result<(String, IpcFiles, Option<String>), String> {
    let endpoint = &common.endpoint;
    let cause = |what: &str, e: zmq::Error| format!("{what} {}: {}", endpoint.written, explain(e));
    let mut files = IpcFiles::prepare_bind(endpoint)?;
    let listener = files.take_listener();
    if let Some(listener) = &listener {
        set_use_fd(socket, listener.as_raw_fd()).map_err(|e| cause("cannot hand the ipc socket to", e))?;
    }
    let target = endpoint.bind_target()?;
    socket.bind(&target).map_err(|e| match e {
        zmq::Error::EADDRINUSE => endpoint.address_in_use(),
        zmq::Error::ENODEV | zmq::Error::EADDRNOTAVAIL => {
            format!("cannot bind {}: no such local address or interface", endpoint.written)
        }
        e => cause("cannot bind", e),
    })?;
    // The bound ZeroMQ socket owns the listening socket now and closes it.
    let _ = listener.map(std::os::fd::IntoRawFd::into_raw_fd);
    let actual = socket
        .get_last_endpoint()
        .ok()
        .and_then(Result::ok)
        .unwrap_or_else(|| endpoint.resolved.clone());
    let port = actual.rsplit_once(':').and_then(|(_, p)| p.parse().ok());
    let exposed = endpoint.exposure_warning(port, common.curve.is_some()).map(|warning| {
        let warning = format!("{}: {warning}", common.instance);
        log::warn!("{warning}");
        // Also on stderr at once whatever RUST_LOG says (the report's warnings come only
        // at the end); a closed stderr is not worth a panic.
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "warning: {warning}");
        warning
    });
    Ok((actual, files, exposed))
}

/// Starts a monitor of `socket`'s connection events on a private inproc endpoint and returns
/// the socket that receives them.
fn watch_peers(context: &zmq::Context, socket: &zmq::Socket) -> Result<zmq::Socket, zmq::Error> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let endpoint = format!(
        "inproc://smx-zmq-monitor-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let events = zmq::SocketEvent::ACCEPTED as i32
        | zmq::SocketEvent::CONNECTED as i32
        | zmq::SocketEvent::DISCONNECTED as i32
        | zmq::SocketEvent::HANDSHAKE_FAILED_NO_DETAIL as i32
        | zmq::SocketEvent::HANDSHAKE_FAILED_PROTOCOL as i32
        | zmq::SocketEvent::HANDSHAKE_FAILED_AUTH as i32
        | zmq::SocketEvent::HANDSHAKE_SUCCEEDED as i32;
    socket.monitor(&endpoint, events)?;
    let monitor = context.socket(zmq::PAIR)?;
    monitor.set_linger(0)?;
    monitor.connect(&endpoint)?;
    Ok(monitor)
}

/// A libzmq error in words a user understands: libzmq's own text for `EAGAIN` ("Resource
/// temporarily unavailable") says nothing about what happened to the message.
pub fn explain(e: zmq::Error) -> String {
    match e {
        zmq::Error::EAGAIN => "no peer took it in time (the receiver is absent, gone or not reading)".to_string(),
        zmq::Error::EINTR => "interrupted by a signal".to_string(),
        zmq::Error::ETERM => "the ZeroMQ context was shut down".to_string(),
        zmq::Error::EHOSTUNREACH => "no route to the peer".to_string(),
        zmq::Error::EMSGSIZE => "the message is larger than max_message".to_string(),
        zmq::Error::ENOTSOCK => "the socket is closed".to_string(),
        zmq::Error::EPROTONOSUPPORT => "the transport is not supported by this build of libzmq".to_string(),
        e => e.message().to_string(),
    }
}

/// Sets `ZMQ_USE_FD`, which the `zmq` crate does not expose: the next bind takes over `fd`, a
/// socket that already listens, instead of creating one (and unlinking an ipc path first).
fn set_use_fd(socket: &mut zmq::Socket, fd: std::os::fd::RawFd) -> Result<(), zmq::Error> {
    set_int_option(socket, zmq_sys::ZMQ_USE_FD, fd)
}

/// Sets an int-valued socket option by its libzmq number.
fn set_int_option(socket: &mut zmq::Socket, option: u32, value: libc::c_int) -> Result<(), zmq::Error> {
    // SAFETY: the socket pointer is valid for the lifetime of `socket`; the option value is a
    // c_int, as libzmq documents for the options passed here, passed with its exact size.
    let rc = unsafe {
        zmq_sys::zmq_setsockopt(
            socket.as_mut_ptr(),
            option as libc::c_int,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        // SAFETY: zmq_errno only reads the thread's errno.
        Err(zmq::Error::from_raw(unsafe { zmq_sys::zmq_errno() }))
    }
}

/// Sets `ZMQ_XPUB_MANUAL`, which the `zmq` crate does not expose: libzmq then keeps no
/// subscription by itself; the sink reads each one and applies, with `ZMQ_SUBSCRIBE`, only
/// those it accepts (see `Sender::poll_subscriptions`).
pub fn set_xpub_manual(socket: &mut zmq::Socket) -> Result<(), zmq::Error> {
    set_int_option(socket, zmq_sys::ZMQ_XPUB_MANUAL, 1)
}

/// Sets `ZMQ_XPUB_NODROP`, which the `zmq` crate does not expose: a full subscriber queue then
/// makes a send fail with `EAGAIN` (which the sink counts) instead of dropping silently.
pub fn set_xpub_nodrop(socket: &mut zmq::Socket) -> Result<(), zmq::Error> {
    set_int_option(socket, zmq_sys::ZMQ_XPUB_NODROP, 1)
}
