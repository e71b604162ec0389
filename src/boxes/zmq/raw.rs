//! A plain ZeroMQ PUSH/PULL transfer with no smx in the path: the yardstick the ZeroMQ boxes
//! are measured against (`smxrun bench zmq`, the figures in the README).
//!
//! Two threads, one context, single-frame messages of `size` bytes whose first 8 bytes carry a
//! counter the receiver checks, so both ends really touch the data. The clock starts when both
//! sockets are connected and the first message has arrived, and stops at the last one.

use std::thread;
use std::time::{Duration, Instant};

/// The result of one raw transfer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawRun {
    pub messages: u64,
    pub received: u64,
    /// Messages out of order or missing, as seen by the receiver's counter check.
    pub out_of_order: u64,
    pub elapsed: Duration,
}

impl RawRun {
    pub fn rate(&self) -> f64 {
        self.received as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Sends `messages` messages of `size` bytes (at least 8) from a PUSH to a PULL socket over
/// `endpoint` (the PULL binds; a tcp port of `*` is resolved) with high-water mark `hwm`.
pub fn push_pull(endpoint: &str, messages: u64, size: usize, hwm: i32) -> Result<RawRun, String> {
    let size = size.max(8);
    let ctx = zmq::Context::new();
    let pull = ctx.socket(zmq::PULL).map_err(|e| e.to_string())?;
    pull.set_rcvhwm(hwm).map_err(|e| e.to_string())?;
    pull.bind(endpoint)
        .map_err(|e| format!("cannot bind {endpoint}: {e}"))?;
    let bound = pull
        .get_last_endpoint()
        .map_err(|e| e.to_string())?
        .map_err(|_| "endpoint is not UTF-8".to_string())?;
    let push = ctx.socket(zmq::PUSH).map_err(|e| e.to_string())?;
    push.set_sndhwm(hwm).map_err(|e| e.to_string())?;
    push.set_linger(-1).map_err(|e| e.to_string())?;
    push.connect(&bound)
        .map_err(|e| format!("cannot connect {bound}: {e}"))?;
    let sender = thread::spawn(move || -> Result<(), String> {
        let mut buf = vec![0u8; size];
        for i in 0..=messages {
            buf[..8].copy_from_slice(&i.to_le_bytes());
            push.send(&buf[..], 0).map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    let mut msg = zmq::Message::new();
    // Message 0 is the warm-up that proves the connection is up; the clock starts after it.
    pull.recv(&mut msg, 0).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut out_of_order = 0;
    for expected in 1..=messages {
        pull.recv(&mut msg, 0).map_err(|e| e.to_string())?;
        let got = msg.get(..8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
        out_of_order += u64::from(got != Some(expected));
    }
    let elapsed = started.elapsed();
    sender.join().map_err(|_| "sender thread panicked".to_string())??;
    Ok(RawRun {
        messages,
        received: messages,
        out_of_order,
        elapsed,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn raw_transfer_checks_every_message() {
        let run = super::push_pull("tcp://127.0.0.1:*", 1000, 8, 1000).unwrap();
        assert_eq!((run.received, run.out_of_order), (1000, 0));
    }
}
