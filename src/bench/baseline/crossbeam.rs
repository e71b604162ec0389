//! A plain two-threads-per-pair crossbeam-channel program, the shape of the scaling nets.
//!
//! Each pair is a producer thread sending `count` messages of `size` bytes into
//! `crossbeam_channel::bounded(len)` and a consumer thread receiving, reading and checking them.
//! Threads are pinned round-robin over the allowed cores the way `--pin auto` places a net
//! (producer and consumer of a pair on different cores when there are two), and start together
//! behind a barrier; the wall time runs from the barrier to the last join.

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

/// Runs the baseline once. Metrics: `wall_s`, `messages`, `msg_rate_hz`; invalid when a
/// consumer missed a message or saw one out of order.
pub fn run(shape: PairShape) -> Run {
    let cores = if shape.pin {
        smx_timing::sched::allowed_cores()
    } else {
        Vec::new()
    };
    let barrier = Arc::new(Barrier::new(shape.pairs * 2 + 1));
    let mut producers = Vec::new();
    let mut consumers = Vec::new();
    for pair in 0..shape.pairs {
        let (tx, rx) = crossbeam_channel::bounded::<Message>(shape.len.max(1));
        let core_p = cores.get((2 * pair) % cores.len().max(1)).copied();
        let core_c = cores.get((2 * pair + 1) % cores.len().max(1)).copied();
        let b = barrier.clone();
        let size = shape.size;
        let count = shape.count;
        producers.push(std::thread::spawn(move || {
            if let Some(core) = core_p {
                let _ = smx_timing::sched::pin_current_thread(core);
            }
            let mut rng = PayloadRng::new(pair as u64 + 1);
            let mut buf = vec![0u8; size];
            b.wait();
            for seq in 0..count {
                rng.fill(&mut buf);
                if tx.send(Message::new(seq, now_ns(), &buf)).is_err() {
                    return;
                }
            }
        }));
        let b = barrier.clone();
        consumers.push(std::thread::spawn(move || {
            if let Some(core) = core_c {
                let _ = smx_timing::sched::pin_current_thread(core);
            }
            b.wait();
            let mut received = 0u64;
            let mut in_order = true;
            let mut checksum = 0u64;
            for msg in rx.iter() {
                in_order &= msg.seq == received;
                checksum ^= touch(msg.payload());
                received += 1;
            }
            std::hint::black_box(checksum);
            (received, in_order)
        }));
    }
    barrier.wait();
    let start = Instant::now();
    let mut run = Run::new();
    for p in producers {
        if p.join().is_err() {
            run.invalidate("a producer thread panicked");
        }
    }
    let mut received = 0u64;
    for c in consumers {
        match c.join() {
            Ok((n, in_order)) => {
                received += n;
                if !in_order {
                    run.invalidate("a consumer saw messages out of order");
                }
            }
            Err(_) => run.invalidate("a consumer thread panicked"),
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let expected = shape.count * shape.pairs as u64;
    if received != expected {
        run.invalidate(format!("received {received} of {expected} messages"));
    }
    run.set("wall_s", wall)
        .set("messages", received as f64)
        .set("msg_rate_hz", received as f64 / wall);
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_of_every_pair_arrives() {
        let run = run(PairShape {
            pairs: 3,
            count: 500,
            len: 1,
            size: 20,
            pin: false,
        });
        assert!(run.valid, "{:?}", run.problems);
        assert_eq!(run.metrics["messages"], 1500.0);
        assert!(run.metrics["msg_rate_hz"] > 0.0);
    }
}
