//! The peer of a link between hosts: one PUSH thread in namespace a, one PULL thread bound in
//! namespace b, frames and books as the other raw ZeroMQ baselines have them.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use super::Hosts;
use crate::baseline::zmq_raw::{send_all, verdict};
use crate::baseline::zmq_shaped::{Drain, HEADER};
use crate::result::Run;

/// How long either side waits for the other before the run is called invalid.
const TIMEOUT_MS: i32 = 10_000;

/// A new port per run, so that a run never meets the closing connections of the one before.
static NEXT_PORT: AtomicU16 = AtomicU16::new(47_100);

pub fn run(hosts: &Hosts, count: u64, size: usize, curve: bool) -> Run {
    let cpu = crate::cpu::process_cpu_s();
    let mut run = try_run(hosts, count, size, curve)
        .unwrap_or_else(|e| Run::failed(format!("raw PUSH/PULL between the hosts: {e}")));
    let received = run.metrics.get("received").copied().unwrap_or(0.0) as u64;
    run.set_cpu(crate::cpu::process_cpu_s() - cpu, received);
    run
}

fn try_run(hosts: &Hosts, count: u64, size: usize, curve: bool) -> Result<Run, String> {
    let server = zmq::CurveKeyPair::new().map_err(|e| format!("no CURVE keys: {e}"))?;
    let client = zmq::CurveKeyPair::new().map_err(|e| format!("no CURVE keys: {e}"))?;
    let port = NEXT_PORT.fetch_add(1, Ordering::Relaxed);
    let endpoint = format!("tcp://{}:{port}", hosts.addresses[1]);
    let ready = Arc::new(Barrier::new(2));
    let receiver = {
        let (ready, endpoint, namespace) = (ready.clone(), endpoint.clone(), hosts.namespace_file(1));
        let (secret, core) = (server.secret_key, hosts.cores[1]);
        std::thread::spawn(move || {
            let pull = enter(&namespace, core).and_then(|ctx| bind_pull(&ctx, &endpoint, curve.then_some(&secret)));
            // Meet the sender also after a failure, so that it never waits forever.
            ready.wait();
            receive(&pull?.1)
        })
    };
    let (namespace, core) = (hosts.namespace_file(0), hosts.cores[0]);
    let sender = std::thread::spawn(move || -> Result<(u64, Option<String>, f64), String> {
        let push = enter(&namespace, core).and_then(|ctx| {
            let keys = curve.then_some((&server.public_key, &client));
            connect_push(&ctx, &endpoint, keys).map(|push| (ctx, push))
        });
        ready.wait();
        let (_ctx, push) = push?;
        let start = Instant::now();
        let (sent, error) = send_all(&push, count, size, None);
        Ok((sent, error, start.elapsed().as_secs_f64()))
    });
    let sent = sender.join().map_err(|_| "the sender thread panicked".to_string())?;
    let outcome = receiver
        .join()
        .map_err(|_| "the receiver thread panicked".to_string())?;
    let (sent, send_error, _) = sent?;
    let wall = match &outcome {
        Ok((_, _, wall)) => *wall,
        Err(_) => 0.0,
    };
    Ok(verdict(
        outcome.map(|(n, ordered, _)| (n, ordered)),
        send_error,
        sent,
        count,
        wall,
    ))
}

/// Moves this thread into the network namespace in `file` and onto its host's `core`, then
/// makes the context whose I/O threads (started by this thread) inherit both, as the link's
/// processes and their threads do.
fn enter(file: &str, core: Option<usize>) -> Result<zmq::Context, String> {
    let ns = std::fs::File::open(file).map_err(|e| format!("{file}: {e}"))?;
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(format!("setns {file}: {}", std::io::Error::last_os_error()));
    }
    if let Some(id) = core
        && !core_affinity::set_for_current(core_affinity::CoreId { id })
    {
        return Err(format!("cannot run on core {id}"));
    }
    Ok(zmq::Context::new())
}

fn bind_pull(
    ctx: &zmq::Context,
    endpoint: &str,
    secret: Option<&[u8; 32]>,
) -> Result<(zmq::Context, zmq::Socket), String> {
    let pull = ctx.socket(zmq::PULL).map_err(|e| e.to_string())?;
    if let Some(secret) = secret {
        pull.set_curve_server(true).map_err(|e| e.to_string())?;
        pull.set_curve_secretkey(secret).map_err(|e| e.to_string())?;
    }
    pull.set_rcvtimeo(TIMEOUT_MS).map_err(|e| e.to_string())?;
    pull.bind(endpoint)
        .map_err(|e| format!("cannot bind {endpoint}: {e}"))?;
    Ok((ctx.clone(), pull))
}

fn connect_push(
    ctx: &zmq::Context,
    endpoint: &str,
    keys: Option<(&[u8; 32], &zmq::CurveKeyPair)>,
) -> Result<zmq::Socket, String> {
    let push = ctx.socket(zmq::PUSH).map_err(|e| e.to_string())?;
    if let Some((server_public, client)) = keys {
        push.set_curve_serverkey(server_public).map_err(|e| e.to_string())?;
        push.set_curve_publickey(&client.public_key)
            .map_err(|e| e.to_string())?;
        push.set_curve_secretkey(&client.secret_key)
            .map_err(|e| e.to_string())?;
    }
    push.set_sndtimeo(TIMEOUT_MS).map_err(|e| e.to_string())?;
    push.set_linger(TIMEOUT_MS).map_err(|e| e.to_string())?;
    push.connect(endpoint)
        .map_err(|e| format!("cannot connect {endpoint}: {e}"))?;
    Ok(push)
}

/// Frames until the empty end marker: how many, whether in order, and the time since the
/// receiver was ready (so the connection's set-up counts, as it does in the link's net time).
fn receive(pull: &zmq::Socket) -> Result<(u64, bool, f64), String> {
    let start = Instant::now();
    let mut drain = Drain::direct();
    let mut frame = zmq::Message::new();
    loop {
        match pull.recv(&mut frame, 0) {
            Ok(()) if frame.is_empty() => {
                let (received, ordered) = drain.finish();
                return Ok((received, ordered, start.elapsed().as_secs_f64()));
            }
            Ok(()) if frame.len() < HEADER => return Err("short frame".into()),
            Ok(()) => drain.put(&frame),
            Err(zmq::Error::EAGAIN) => return Err(format!("nothing for {TIMEOUT_MS} ms")),
            Err(e) => return Err(format!("receive failed: {e}")),
        }
    }
}
