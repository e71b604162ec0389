//! The latency experiment's raw peer: the same chain as plain threads joined by SPSC rings
//! (`rtrb`), with no runtime at all.
//!
//! `hops` forwarding threads sit between a source and a sink thread, each link a ring of one
//! slot. As in the smx chain, one message is in flight (the source sends message `k + 1` after
//! the sink counted message `k`), the source takes the time and then writes a fresh payload
//! into an smx [`Message`], and the sink reads every byte before it takes the time. Threads are
//! pinned round-robin over the allowed cores, as smx's `--pin auto` does. A waiting thread
//! spins for [`SPIN`] (smx's default `--wait-spin`) when every thread has a core of its own,
//! and otherwise yields the core after every few looks: rtrb has no blocking end, and a thread
//! spinning on a shared core only keeps the one it waits for from running.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rtrb::{Consumer, Producer, RingBuffer};
use smx_box::{Message, now_ns};

use smx_timing::sched;

use super::baseline::{PayloadRng, touch};

/// How long a waiting thread spins before it yields on every look.
const SPIN: Duration = Duration::from_micros(50);

thread_local! {
    /// This thread's spin budget (see the module docs).
    static SPIN_NOW: std::cell::Cell<Duration> = const { std::cell::Cell::new(SPIN) };
}

/// Pins the calling thread to the `i`-th allowed core (round-robin) and sets its spin budget.
fn place(i: usize, threads: usize) {
    let cores = sched::allowed_cores();
    if let Some(&core) = cores.get(i % cores.len().max(1)) {
        let _ = sched::pin_current_thread(core);
    }
    let spin = if threads <= cores.len() { SPIN } else { Duration::ZERO };
    SPIN_NOW.with(|s| s.set(spin));
}

/// What one look found.
enum Look {
    Ready,
    NotYet,
    Gone,
}

/// Looks until `look` finds something: spins for [`SPIN`], then yields between looks. False
/// when the other end went away first.
fn wait(mut look: impl FnMut() -> Look) -> bool {
    let spin = SPIN_NOW.with(|s| s.get());
    let start = Instant::now();
    loop {
        for _ in 0..64 {
            match look() {
                Look::Ready => return true,
                Look::Gone => return false,
                Look::NotYet => std::hint::spin_loop(),
            }
        }
        if start.elapsed() >= spin {
            std::thread::yield_now();
        }
    }
}

/// Takes the next message, waiting; `None` once the producer is gone and the ring is empty.
fn pop(input: &mut Consumer<Message>) -> Option<Message> {
    let mut msg = None;
    let got = wait(|| match input.pop() {
        Ok(m) => {
            msg = Some(m);
            Look::Ready
        }
        Err(_) if input.is_abandoned() => Look::Gone,
        Err(_) => Look::NotYet,
    });
    if got { msg } else { input.pop().ok() }
}

/// Writes `msg`, waiting for room; false once the consumer is gone.
fn push(output: &mut Producer<Message>, msg: Message) -> bool {
    let mut msg = Some(msg);
    wait(|| {
        if output.is_abandoned() {
            return Look::Gone;
        }
        match output.push(msg.take().expect("a message to push")) {
            Ok(()) => Look::Ready,
            Err(rtrb::PushError::Full(m)) => {
                msg = Some(m);
                Look::NotYet
            }
        }
    })
}

fn forward(mut input: Consumer<Message>, mut output: Producer<Message>) {
    while let Some(msg) = pop(&mut input) {
        if !push(&mut output, msg) {
            return;
        }
    }
}

/// One run: `count` messages of `size` bytes through `hops` forwarders; the latencies in ns.
pub fn run(hops: usize, size: usize, count: u64) -> Vec<u64> {
    let (first_tx, mut rx) = RingBuffer::<Message>::new(1);
    let mut threads = Vec::new();
    let all = hops + 2;
    for h in 0..hops {
        let (tx, next_rx) = RingBuffer::<Message>::new(1);
        let input = std::mem::replace(&mut rx, next_rx);
        threads.push(std::thread::spawn(move || {
            place(h + 1, all);
            forward(input, tx)
        }));
    }
    let delivered = Arc::new(AtomicU64::new(0));
    let counted = delivered.clone();
    let sink = std::thread::spawn(move || {
        place(hops + 1, all);
        let mut samples = Vec::with_capacity(count as usize);
        let mut checksum = 0u64;
        while (samples.len() as u64) < count {
            let Some(msg) = pop(&mut rx) else { break };
            checksum ^= touch(msg.payload());
            samples.push(now_ns().saturating_sub(msg.sent_ns));
            counted.store(samples.len() as u64, Ordering::Release);
        }
        std::hint::black_box(checksum);
        samples
    });
    // The source gets a thread of its own, so that pinning it leaves the caller as it was.
    let source = std::thread::spawn(move || {
        place(0, all);
        send(first_tx, size, count, &delivered, &sink);
        sink.join().unwrap_or_default()
    });
    let samples = source.join().unwrap_or_default();
    for t in threads {
        let _ = t.join();
    }
    samples
}

fn send(
    mut tx: Producer<Message>,
    size: usize,
    count: u64,
    delivered: &AtomicU64,
    sink: &std::thread::JoinHandle<Vec<u64>>,
) {
    let mut rng = PayloadRng::new(0x5eed);
    let mut buf = vec![0u8; size];
    for seq in 0..count {
        let confirmed = wait(|| {
            if delivered.load(Ordering::Acquire) >= seq {
                Look::Ready
            } else if sink.is_finished() {
                Look::Gone
            } else {
                Look::NotYet
            }
        });
        if !confirmed {
            break;
        }
        let sent_ns = now_ns();
        rng.fill(&mut buf);
        if !push(&mut tx, Message::new(seq, sent_ns, &buf)) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_message_reaches_the_end_of_the_chain() {
        for hops in [0, 2] {
            let samples = super::run(hops, 64, 200);
            assert_eq!(samples.len(), 200, "hops {hops}");
        }
    }
}
