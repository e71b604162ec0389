//! Heavy stress: millions of messages through every kind, capacity and spin setting, with
//! random pauses at both ends (so that both the spinning and the parking paths run, and both
//! "queue full" and "queue empty" happen often) and both closing orders. Asserts behaviour
//! only: order, integrity of every message, and that every message is accounted for.
//!
//! `SMX_SPSC_STRESS_MESSAGES` (default 10,000,000) sets the count of the main case; the
//! other cases run a tenth of it each.
#![cfg(not(loom))]

use std::thread;
use std::time::Duration;

use smx_spsc::{Closed, Handshake, Kind, channel_with};

/// 72 bytes, a message larger than one slot line; the payload is derived from the sequence number so that a
/// torn or stale slot is caught.
#[derive(Clone, Debug)]
struct Msg {
    seq: u64,
    check: u64,
    payload: [u64; 7],
}

impl Msg {
    fn new(seq: u64) -> Self {
        let x = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Msg {
            seq,
            check: !x,
            payload: [x, x ^ 1, x ^ 2, x ^ 3, x ^ 4, x ^ 5, x ^ 6],
        }
    }

    fn verify(&self) {
        assert_eq!(self.check, !self.payload[0], "torn message {}", self.seq);
        let want = Msg::new(self.seq);
        assert_eq!(self.payload, want.payload, "torn message {}", self.seq);
    }
}

/// xorshift: reproducible pauses without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Now and then (about every 2,000 calls) a pause of one of three sorts: a short spin
    /// (the other end fills or drains a little), a yield, or a sleep long enough for the
    /// other end's spin budget to run out so that it parks.
    fn maybe_pause(&mut self) {
        let r = self.next();
        if !r.is_multiple_of(2048) {
            return;
        }
        match (r >> 12) % 8 {
            0..=4 => (0..(r >> 20) % 2000).for_each(|_| std::hint::spin_loop()),
            5 | 6 => thread::yield_now(),
            _ => thread::sleep(Duration::from_micros(60 + (r >> 24) % 200)),
        }
    }
}

/// How the ends wait: park at once, spin then park (the default), yield then park (ends on one
/// core).
#[derive(Clone, Copy, Debug)]
enum Wait {
    Park,
    Spin,
    Yield,
}

fn set_wait<T>(wait: Wait, tx: &mut smx_spsc::Producer<T>, rx: &mut smx_spsc::Consumer<T>) {
    match wait {
        Wait::Park => {
            tx.set_spin(Duration::ZERO);
            rx.set_spin(Duration::ZERO);
        }
        Wait::Spin => {}
        Wait::Yield => smx_spsc::share_core(tx, rx),
    }
}

fn messages() -> u64 {
    std::env::var("SMX_SPSC_STRESS_MESSAGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000)
}

/// The producer writes `n` and closes; the consumer reads all of them in order, then the end.
fn producer_closes(kind: Kind, cap: usize, wait: Wait, hs: Handshake, n: u64, seed: u64) {
    let (mut tx, mut rx) = channel_with::<Msg>(cap, kind, hs);
    set_wait(wait, &mut tx, &mut rx);
    let producer = thread::spawn(move || {
        let mut rng = Rng(seed);
        let mut evicted = 0u64;
        for seq in 0..n {
            rng.maybe_pause();
            if let Some(old) = tx.push(Msg::new(seq)).unwrap() {
                old.verify();
                evicted += 1;
            }
        }
        evicted // the producer's end is dropped here: close
    });
    let mut rng = Rng(seed ^ 0xABCD);
    let mut read = 0u64;
    let mut last = None;
    loop {
        rng.maybe_pause();
        // Alternate the firing rule (wait, look, then take) with the blocking pop.
        let msg = if read.is_multiple_of(2) {
            if !rx.wait_ready() {
                break;
            }
            assert!(rx.has_message());
            rx.try_pop().expect("a message the firing rule saw is there")
        } else {
            match rx.pop() {
                Some(m) => m,
                None => break,
            }
        };
        msg.verify();
        match kind {
            Kind::Blocking => assert_eq!(msg.seq, read, "order"),
            Kind::DropOldest => assert!(last < Some(msg.seq), "order"),
        }
        last = Some(msg.seq);
        read += 1;
    }
    let evicted = producer.join().unwrap();
    assert_eq!(read + evicted, n, "every message read or evicted");
    if kind == Kind::Blocking {
        assert_eq!(evicted, 0);
    }
    assert_eq!(last, Some(n - 1), "the newest message is never evicted");
    assert!(rx.ended());
}

/// The consumer reads `stop_after` messages and closes while the producer keeps writing; the
/// producer's next writes fail.
fn consumer_closes(kind: Kind, cap: usize, wait: Wait, hs: Handshake, stop_after: u64, seed: u64) {
    let (mut tx, mut rx) = channel_with::<Msg>(cap, kind, hs);
    set_wait(wait, &mut tx, &mut rx);
    let producer = thread::spawn(move || {
        let mut rng = Rng(seed);
        let (mut accepted, mut evicted) = (0u64, 0u64);
        for seq in 0.. {
            rng.maybe_pause();
            match tx.push(Msg::new(seq)) {
                Ok(old) => {
                    accepted += 1;
                    evicted += old.is_some() as u64;
                }
                Err(Closed(refused)) => {
                    assert_eq!(refused.seq, seq);
                    assert!(tx.consumer_closed());
                    break;
                }
            }
        }
        (accepted, evicted)
    });
    let mut rng = Rng(seed ^ 0x1234);
    let mut last = None;
    for i in 0..stop_after {
        rng.maybe_pause();
        let msg = rx.pop().expect("the producer never ends first here");
        msg.verify();
        match kind {
            Kind::Blocking => assert_eq!(msg.seq, i),
            Kind::DropOldest => assert!(last < Some(msg.seq)),
        }
        last = Some(msg.seq);
    }
    let left = rx.close() as u64;
    let (accepted, evicted) = producer.join().unwrap();
    // A push that passed its check just before the close can land after the close's count:
    // at most one, as there is one producer.
    let counted = stop_after + left + evicted;
    assert!(
        counted <= accepted && accepted <= counted + 1,
        "{accepted} accepted, {counted} counted"
    );
    // What was inside at the close, plus at most the one racing write.
    assert!(left <= cap as u64 + 1, "left {left}, capacity {cap}, {kind:?}");
}

const WAITS: [Wait; 3] = [Wait::Park, Wait::Spin, Wait::Yield];
/// Both handshakes, alternating.
const HANDSHAKES: [Handshake; 2] = [Handshake::Membarrier, Handshake::Fences];

#[test]
fn ten_million_blocking_capacity_64_with_pauses() {
    producer_closes(Kind::Blocking, 64, Wait::Spin, Handshake::default(), messages(), 1);
}

#[test]
fn blocking_every_capacity_and_wait() {
    let n = messages() / 10;
    for (i, cap) in [1, 2, 3, 1024].into_iter().enumerate() {
        for (j, wait) in WAITS.into_iter().enumerate() {
            producer_closes(Kind::Blocking, cap, wait, HANDSHAKES[(i + j) % 2], n / 4, 10 + i as u64);
        }
    }
}

#[test]
fn drop_oldest_every_capacity_and_wait() {
    let n = messages() / 10;
    for (i, cap) in [1, 2, 64].into_iter().enumerate() {
        for (j, wait) in WAITS.into_iter().enumerate() {
            producer_closes(
                Kind::DropOldest,
                cap,
                wait,
                HANDSHAKES[(i + j) % 2],
                n / 3,
                20 + i as u64,
            );
        }
    }
}

#[test]
fn consumer_closes_first_many_times() {
    let mut rng = Rng(77);
    for round in 0..300 {
        let kind = if round % 2 == 0 {
            Kind::Blocking
        } else {
            Kind::DropOldest
        };
        let cap = [1, 2, 8, 64][round % 4];
        let hs = HANDSHAKES[round / 2 % 2];
        consumer_closes(kind, cap, WAITS[round % 3], hs, rng.next() % 5000, round as u64 + 100);
    }
}
