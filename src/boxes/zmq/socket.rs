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

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::endpoint::{Endpoint, IpcFiles, Transport};
use super::settings::Common;

/// The context of all inproc sockets of this process.
pub fn shared_context() -> zmq::Context {
    static CONTEXT: OnceLock<zmq::Context> = OnceLock::new();
    CONTEXT.get_or_init(zmq::Context::new).clone()
}

/// A socket with its context and the ipc files it must remove.
pub struct BoxSocket {
    // Field order is drop order: the socket closes before its context terminates.
    pub socket: zmq::Socket,
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
    pub fn open(
        common: &Common,
        kind: zmq::SocketType,
        configure: impl FnOnce(&mut zmq::Socket) -> Result<(), zmq::Error>,
    ) -> Result<BoxSocket, String> {
        let endpoint: &Endpoint = &common.endpoint;
        let context = match endpoint.transport {
            Transport::Inproc { .. } => shared_context(),
            _ => zmq::Context::new(),
        };
        let cause = |what: &str, e: zmq::Error| format!("{what} {}: {}", endpoint.written, e.message());
        let mut socket = context
            .socket(kind)
            .map_err(|e| cause("cannot create a socket for", e))?;
        socket
            .set_linger(common.linger.as_millis() as i32)
            .map_err(|e| cause("cannot set linger on", e))?;
        configure(&mut socket).map_err(|e| cause("cannot set options for", e))?;
        let mut files = IpcFiles::default();
        let bound = if common.bind {
            files = IpcFiles::prepare_bind(endpoint)?;
            socket.bind(&endpoint.resolved).map_err(|e| match e {
                zmq::Error::EADDRINUSE => format!(
                    "cannot bind {}: address in use (another program or net is bound to it)",
                    endpoint.written
                ),
                zmq::Error::ENODEV | zmq::Error::EADDRNOTAVAIL => {
                    format!("cannot bind {}: no such local address or interface", endpoint.written)
                }
                e => cause("cannot bind", e),
            })?;
            let actual = socket
                .get_last_endpoint()
                .ok()
                .and_then(Result::ok)
                .unwrap_or_else(|| endpoint.resolved.clone());
            let port = actual.rsplit_once(':').and_then(|(_, p)| p.parse().ok());
            if let Some(warning) = endpoint.wildcard_warning(port) {
                log::warn!("{}: {warning}", common.instance);
                eprintln!("warning: {}: {warning}", common.instance);
            }
            actual
        } else {
            socket
                .connect(&endpoint.resolved)
                .map_err(|e| cause("cannot connect to", e))?;
            endpoint.resolved.clone()
        };
        let own_context = !matches!(endpoint.transport, Transport::Inproc { .. });
        Ok(BoxSocket {
            socket,
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
            context,
            mut files,
            ..
        } = self;
        let started = Instant::now();
        drop(socket);
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

/// Sets `ZMQ_XPUB_NODROP`, which the `zmq` crate does not expose: a full subscriber queue then
/// makes a send fail with `EAGAIN` (which the sink counts) instead of dropping silently.
pub fn set_xpub_nodrop(socket: &mut zmq::Socket) -> Result<(), zmq::Error> {
    let on: libc::c_int = 1;
    // SAFETY: the socket pointer is valid for the lifetime of `socket`; the option value is a
    // c_int, as libzmq documents for ZMQ_XPUB_NODROP, passed with its exact size.
    let rc = unsafe {
        zmq_sys::zmq_setsockopt(
            socket.as_mut_ptr(),
            zmq_sys::ZMQ_XPUB_NODROP as libc::c_int,
            (&on as *const libc::c_int).cast(),
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
