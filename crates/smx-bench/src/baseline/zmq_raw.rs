//! A plain zmq-crate PUSH/PULL program: the raw libzmq rate the ZMQ boxes are compared with.
//!
//! One sender thread binds a PUSH socket (as the report's sink did), one receiver thread
//! connects a PULL socket; frames are `[seq: u64 LE][send time: u64 LE][payload]`, and an empty
//! frame ends the stream. The receiver stops at that marker or after `timeout` without traffic
//! (then the run is invalid), so a broken transport never hangs the benchmark. Loss and order
//! are checked from the sequence numbers.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::super::result::Run;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Tcp,
    Ipc,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Ipc => "ipc",
        }
    }
}

use super::zmq_shaped::{Drain, Feed, HEADER};

/// Runs `count` messages of `size` bytes through PUSH/PULL once. Metrics: `wall_s`, `sent`,
/// `received`, `lost`, `loss_pct`, `msg_rate_hz` (received per second), `cpu_s`, `cpu_s_per_m`.
pub fn run(transport: Transport, count: u64, size: usize, timeout: Duration) -> Run {
    run_shaped(transport, count, size, timeout, None)
}

/// [`run`], or with `queues: Some(len)` the report net's shape: producer thread -> queue of
/// `len` -> PUSH ... PULL -> queue of `len` -> consumer thread (see [`super::zmq_shaped`]).
pub fn run_shaped(transport: Transport, count: u64, size: usize, timeout: Duration, queues: Option<usize>) -> Run {
    let cpu = super::super::cpu::process_cpu_s();
    let mut run = match try_run(transport, count, size, timeout, queues) {
        Ok(run) => run,
        Err(e) => Run::failed(format!("zmq PUSH/PULL over {}: {e}", transport.name())),
    };
    let cpu = super::super::cpu::process_cpu_s() - cpu;
    let received = run.metrics.get("received").copied().unwrap_or(0.0) as u64;
    run.set_cpu(cpu, received);
    run
}

fn try_run(
    transport: Transport,
    count: u64,
    size: usize,
    timeout: Duration,
    queues: Option<usize>,
) -> Result<Run, String> {
    let ctx = zmq::Context::new();
    let timeout_ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    let (push, endpoint, ipc_dir) = bind_push(&ctx, transport, timeout_ms)?;
    let barrier = Arc::new(Barrier::new(2));
    let b = barrier.clone();
    let pull_ctx = ctx.clone();
    let receiver = std::thread::spawn(move || receive(&pull_ctx, &endpoint, timeout_ms, queues, &b));
    barrier.wait();
    let start = Instant::now();
    let (sent, send_error) = send_all(&push, count, size, queues);
    let outcome = receiver.join().map_err(|_| "receiver thread panicked".to_string())?;
    let wall = start.elapsed().as_secs_f64();
    drop(push);
    if let Some(dir) = ipc_dir {
        let _ = std::fs::remove_dir_all(dir);
    }
    Ok(verdict(outcome, send_error, sent, count, wall))
}

/// The PUSH socket, bound (on a free port for tcp, in a private directory for ipc), with the
/// endpoint it got and the directory to remove afterwards.
fn bind_push(
    ctx: &zmq::Context,
    transport: Transport,
    timeout_ms: i32,
) -> Result<(zmq::Socket, String, Option<std::path::PathBuf>), String> {
    let push = ctx
        .socket(zmq::PUSH)
        .map_err(|e| format!("cannot create PUSH socket: {e}"))?;
    let ipc_dir = match transport {
        Transport::Tcp => None,
        Transport::Ipc => Some(private_dir()?),
    };
    let endpoint = match &ipc_dir {
        None => "tcp://127.0.0.1:*".to_string(),
        Some(dir) => format!("ipc://{}/raw", dir.display()),
    };
    push.bind(&endpoint)
        .map_err(|e| format!("cannot bind {endpoint}: {e}"))?;
    let endpoint = push
        .get_last_endpoint()
        .map_err(|e| e.to_string())?
        .map_err(|_| "bound endpoint is not UTF-8".to_string())?;
    push.set_sndtimeo(timeout_ms).map_err(|e| e.to_string())?;
    push.set_linger(timeout_ms).map_err(|e| e.to_string())?;
    Ok((push, endpoint, ipc_dir))
}

/// The receiver thread: connects a PULL socket, meets the sender at `barrier`, and takes
/// frames until the empty end marker. Returns the messages received and whether in order.
fn receive(
    ctx: &zmq::Context,
    endpoint: &str,
    timeout_ms: i32,
    queues: Option<usize>,
    barrier: &Barrier,
) -> Result<(u64, bool), String> {
    let setup = || -> Result<zmq::Socket, String> {
        let pull = ctx.socket(zmq::PULL).map_err(|e| e.to_string())?;
        pull.set_rcvtimeo(timeout_ms).map_err(|e| e.to_string())?;
        pull.connect(endpoint)
            .map_err(|e| format!("cannot connect {endpoint}: {e}"))?;
        Ok(pull)
    };
    let pull = setup();
    // Always meet the sender, also after a failed setup, so it never waits forever.
    barrier.wait();
    let pull = pull?;
    let mut drain = match queues {
        Some(len) => Drain::queued(len),
        None => Drain::direct(),
    };
    let mut frame = zmq::Message::new();
    loop {
        match pull.recv(&mut frame, 0) {
            Ok(()) if frame.is_empty() => return Ok(drain.finish()),
            Ok(()) if frame.len() < HEADER => return Err("short frame".into()),
            Ok(()) => drain.put(&frame),
            Err(zmq::Error::EAGAIN) => {
                let (received, _) = drain.finish();
                return Err(format!(
                    "no end marker: receiver idle for {timeout_ms} ms after {received} messages"
                ));
            }
            Err(e) => return Err(format!("receive failed: {e}")),
        }
    }
}

/// Sends `count` messages and the end marker; returns how many were sent and the first failure.
pub fn send_all(push: &zmq::Socket, count: u64, size: usize, queues: Option<usize>) -> (u64, Option<String>) {
    let mut feed = match queues {
        Some(len) => Feed::queued(count, size, len),
        None => Feed::direct(count),
    };
    let mut frame = vec![0u8; HEADER + size];
    let mut sent = 0u64;
    let mut send_error = None;
    while feed.next(&mut frame) {
        if let Err(e) = push.send(&frame[..], 0) {
            send_error = Some(format!("send of message {sent} failed: {e}"));
            break;
        }
        sent += 1;
    }
    feed.finish();
    if send_error.is_none()
        && let Err(e) = push.send(&[][..], 0)
    {
        send_error = Some(format!("send of the end marker failed: {e}"));
    }
    (sent, send_error)
}

/// The run's metrics, invalid when a message was lost, out of order or not sent.
pub fn verdict(
    outcome: Result<(u64, bool), String>,
    send_error: Option<String>,
    sent: u64,
    count: u64,
    wall: f64,
) -> Run {
    let mut run = Run::new();
    let received = match outcome {
        Ok((received, in_order)) => {
            if !in_order {
                run.invalidate("messages arrived out of order");
            }
            received
        }
        Err(e) => {
            run.invalidate(e);
            0
        }
    };
    if let Some(e) = send_error {
        run.invalidate(e);
    }
    let lost = sent.saturating_sub(received);
    if received != count {
        run.invalidate(format!("received {received} of {count} messages"));
    }
    run.set("wall_s", wall)
        .set("sent", sent as f64)
        .set("received", received as f64)
        .set("lost", lost as f64)
        .set(
            "loss_pct",
            if sent == 0 {
                0.0
            } else {
                100.0 * lost as f64 / sent as f64
            },
        )
        .set("msg_rate_hz", received as f64 / wall);
    run
}

/// A fresh directory only this user can enter, for the ipc socket file.
fn private_dir() -> Result<std::path::PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "smx-bench-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_pull_delivers_everything_over_tcp_and_ipc() {
        for transport in [Transport::Tcp, Transport::Ipc] {
            let run = run(transport, 300, 64, Duration::from_secs(10));
            assert!(run.valid, "{}: {:?}", transport.name(), run.problems);
            assert_eq!(run.metrics["received"], 300.0);
            assert_eq!(run.metrics["lost"], 0.0);
        }
    }

    #[test]
    fn the_net_shaped_peer_delivers_everything_in_order() {
        for len in [1, 64] {
            let run = run_shaped(Transport::Ipc, 300, 8, Duration::from_secs(10), Some(len));
            assert!(run.valid, "{len}: {:?}", run.problems);
            assert_eq!(run.metrics["received"], 300.0);
        }
    }
}
