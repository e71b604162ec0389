//! The harness every pair peer runs in: `pairs` producer threads, each sending `count` messages
//! of `size` bytes through its own queue of length `len` to its own consumer thread, which reads
//! every byte and checks the sequence. The peers differ only in the queue and in how an end
//! waits ([`Link`]), so their figures compare the hand-over alone.
//!
//! Threads are pinned round-robin over the allowed cores the way `--pin auto` places a net
//! (producer and consumer of a pair on different cores when there are two), and start together
//! behind a barrier. The wall time runs from the first producer's start to the last
//! consumer's end, each read by that thread: read by the thread that spawned them, it would
//! start whenever the scheduler lets that thread run again after the barrier, which with more
//! busy threads than cores can be most of a short run later (an rtrb cell of 32 threads once
//! read 57 M msg/s that way). The CPU time is the process's (`getrusage`) from the barrier to
//! the last join.

use std::sync::{Arc, Barrier};
use std::time::Instant;

use smx_box::{Message, now_ns};

use super::super::result::Run;
use super::{PayloadRng, touch};

/// What to run: the same knobs as the scaling experiment.
#[derive(Debug, Clone, Copy)]
pub struct PairShape {
    pub pairs: usize,
    pub count: u64,
    pub len: usize,
    pub size: usize,
    pub pin: bool,
}

/// One peer's queue: how it is made and how its two ends hand a message over.
pub trait Link {
    type Tx: Send + 'static;
    type Rx: Send + 'static;
    /// A queue holding up to `len` messages (at least 1).
    fn make(len: usize) -> (Self::Tx, Self::Rx);
    /// Hands `msg` over, waiting while the queue is full; false if the consumer is gone.
    fn send(tx: &mut Self::Tx, msg: Message) -> bool;
    /// The next message, waiting while the queue is empty; `None` once the producer has
    /// ended and everything it sent was taken.
    fn recv(rx: &mut Self::Rx) -> Option<Message>;
}

/// Runs the peer once. Metrics: `wall_s`, `messages`, `msg_rate_hz`, `cpu_s`, `cpu_s_per_m`;
/// invalid when a consumer missed a message or saw one out of order.
pub fn run<L: Link>(shape: PairShape) -> Run {
    let cores = if shape.pin {
        smx_timing::sched::allowed_cores()
    } else {
        Vec::new()
    };
    let core = |i: usize| cores.get(i % cores.len().max(1)).copied();
    let barrier = Arc::new(Barrier::new(shape.pairs * 2 + 1));
    let mut producers = Vec::new();
    let mut consumers = Vec::new();
    for pair in 0..shape.pairs {
        let (tx, rx) = L::make(shape.len.max(1));
        let (core_p, core_c) = (core(2 * pair), core(2 * pair + 1));
        let b = barrier.clone();
        producers.push(spawn_producer::<L>(tx, pair, shape, core_p, b));
        let b = barrier.clone();
        consumers.push(spawn_consumer::<L>(rx, core_c, b));
    }
    barrier.wait();
    let cpu = super::super::cpu::process_cpu_s();
    let mut run = Run::new();
    let mut start: Option<Instant> = None;
    for p in producers {
        match p.join() {
            Ok(at) => start = Some(start.map_or(at, |s| s.min(at))),
            Err(_) => run.invalidate("a producer thread panicked"),
        }
    }
    let (mut received, mut end) = (0u64, None::<Instant>);
    for c in consumers {
        match c.join() {
            Ok((n, in_order, at)) => {
                received += n;
                end = Some(end.map_or(at, |e| e.max(at)));
                if !in_order {
                    run.invalidate("a consumer saw messages out of order");
                }
            }
            Err(_) => run.invalidate("a consumer thread panicked"),
        }
    }
    let cpu = super::super::cpu::process_cpu_s() - cpu;
    let wall = match (start, end) {
        (Some(start), Some(end)) => end.saturating_duration_since(start).as_secs_f64(),
        _ => 0.0,
    };
    let expected = shape.count * shape.pairs as u64;
    if received != expected {
        run.invalidate(format!("received {received} of {expected} messages"));
    }
    run.set("wall_s", wall)
        .set("messages", received as f64)
        .set("msg_rate_hz", received as f64 / wall);
    run.set_cpu(cpu, received);
    run
}

/// A pair's producer thread: after the barrier, sends `count` messages of `size` random
/// bytes; returns when it started.
fn spawn_producer<L: Link>(
    mut tx: L::Tx,
    pair: usize,
    shape: PairShape,
    core: Option<usize>,
    barrier: Arc<Barrier>,
) -> std::thread::JoinHandle<Instant> {
    std::thread::spawn(move || {
        if let Some(core) = core {
            let _ = smx_timing::sched::pin_current_thread(core);
        }
        let mut rng = PayloadRng::new(pair as u64 + 1);
        let mut buf = vec![0u8; shape.size];
        barrier.wait();
        let start = Instant::now();
        for seq in 0..shape.count {
            rng.fill(&mut buf);
            if !L::send(&mut tx, Message::new(seq, now_ns(), &buf)) {
                break;
            }
        }
        start
    })
}

/// A pair's consumer thread: after the barrier, reads every byte of every message until the
/// producer ended; returns how many it read, whether in order, and when it ended.
fn spawn_consumer<L: Link>(
    mut rx: L::Rx,
    core: Option<usize>,
    barrier: Arc<Barrier>,
) -> std::thread::JoinHandle<(u64, bool, Instant)> {
    std::thread::spawn(move || {
        if let Some(core) = core {
            let _ = smx_timing::sched::pin_current_thread(core);
        }
        barrier.wait();
        let (mut received, mut in_order, mut checksum) = (0u64, true, 0u64);
        while let Some(msg) = L::recv(&mut rx) {
            in_order &= msg.seq == received;
            checksum ^= touch(msg.payload());
            received += 1;
        }
        std::hint::black_box(checksum);
        (received, in_order, Instant::now())
    })
}

/// Busy-polling: the peers that spin on a full or empty queue. A pure spin with more threads
/// than cores waits out whole time slices of the thread it waits for, so the spin offers the
/// core every [`POLLS_PER_YIELD`] failed polls: the strongest form of the peer on this machine.
pub const POLLS_PER_YIELD: u32 = 64;

/// One failed poll of a spinning end: a spin-loop hint, and a yield every [`POLLS_PER_YIELD`].
#[inline]
pub fn backoff(polls: &mut u32) {
    *polls += 1;
    if polls.is_multiple_of(POLLS_PER_YIELD) {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}
