//! Model checks: every interleaving (and every reordering the memory model allows) of small
//! scenarios; loom reports a data race on a slot, a failed assertion, or a lost wake-up (as a
//! deadlock: every thread parked).
//!
//! `RUSTFLAGS="--cfg loom" cargo test --release --test loom`
//!
//! Each model is explored with up to 3 preemptions (`model` below), loom's usual bound; the
//! three small ones also pass unbounded. The checks are known to bite: without the fence after
//! publishing the tail (or the head), `blocking_hand_over...` deadlocks (a lost wake-up); with
//! the drop-oldest producer ignoring `reading`, `drop_oldest_reuses...` reports a concurrent
//! read and write of a slot.
//!
//! Both ends run on spawned threads and the main thread only joins them: a wake-up may reach
//! a thread after it stopped waiting (std allows that, `park` may return early), and loom
//! cannot model such a stray unpark reaching a thread that is blocked in `join`.
#![cfg(loom)]

use loom::thread;
use std::time::Duration;

use smx_spsc::{Closed, Consumer, Kind, Producer, channel};

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// Spin zero: waits park at once, so the park hand-shake is what gets checked.
fn ends<T>(cap: usize, kind: Kind) -> (Producer<T>, Consumer<T>) {
    let (mut tx, mut rx) = channel(cap, kind);
    tx.set_spin(Duration::ZERO);
    rx.set_spin(Duration::ZERO);
    (tx, rx)
}

fn both<A: 'static, B: 'static>(p: impl FnOnce() -> A + 'static, c: impl FnOnce() -> B + 'static) -> (A, B) {
    let p = thread::spawn(p);
    let c = thread::spawn(c);
    (p.join().unwrap(), c.join().unwrap())
}

#[test]
fn blocking_hand_over_both_directions_then_producer_end() {
    model(|| {
        let (mut tx, mut rx) = ends::<u32>(1, Kind::Blocking);
        both(
            move || {
                for i in 0..3 {
                    tx.push(i).unwrap(); // waits for room twice
                }
            },
            move || {
                for i in 0..3 {
                    assert_eq!(rx.pop(), Some(i)); // waits for data
                }
                assert_eq!(rx.pop(), None); // sees the producer's end (drop)
            },
        );
    });
}

#[test]
fn consumer_close_wakes_a_producer_waiting_for_room() {
    model(|| {
        let (mut tx, mut rx) = ends::<u32>(1, Kind::Blocking);
        let (second, left) = both(
            move || {
                tx.push(0).unwrap();
                tx.push(1) // waits (full) until the close
            },
            move || {
                assert!(rx.wait_ready());
                rx.close()
            },
        );
        // The first message was inside at the close; the second was refused, or it got in
        // before the close and was left too.
        match second {
            Err(Closed(1)) => assert_eq!(left, 1),
            Ok(None) => assert_eq!(left, 2),
            other => panic!("{other:?}"),
        }
    });
}

#[test]
fn producer_close_wakes_a_waiting_consumer() {
    model(|| {
        let (mut tx, mut rx) = ends::<u32>(2, Kind::Blocking);
        both(
            move || {
                tx.push(5).unwrap();
                tx.close();
            },
            move || {
                assert_eq!(rx.pop(), Some(5));
                assert!(!rx.wait_ready());
                assert!(rx.ended());
            },
        );
    });
}

#[test]
fn drop_oldest_races_between_eviction_and_read() {
    model(|| {
        let (mut tx, mut rx) = ends::<u32>(1, Kind::DropOldest);
        let (evicted, read) = both(
            move || {
                let mut evicted = vec![];
                for i in 0..3 {
                    if let Some(old) = tx.push(i).unwrap() {
                        evicted.push(old);
                    }
                }
                evicted
            },
            move || std::iter::from_fn(|| rx.pop()).collect::<Vec<_>>(),
        );
        // Every message read or evicted exactly once, each side in order, the newest read.
        let mut all: Vec<u32> = read.iter().chain(&evicted).copied().collect();
        all.sort();
        assert_eq!(all, [0, 1, 2]);
        assert!(read.windows(2).all(|w| w[0] < w[1]));
        assert!(evicted.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(read.last(), Some(&2));
    });
}

#[test]
fn drop_oldest_reuses_slots_while_the_consumer_copies() {
    // Capacity 1 has 3 slots: five writes reuse slots while the consumer may be mid-copy.
    model(|| {
        let (mut tx, mut rx) = ends::<u32>(1, Kind::DropOldest);
        let (evicted, (read, left)) = both(
            move || (0..5).filter(|&i| matches!(tx.push(i), Ok(Some(_)))).count(),
            move || {
                let mut read = 0;
                let mut last = None;
                for _ in 0..2 {
                    if let Ok(v) = rx.try_pop() {
                        assert!(last < Some(v));
                        last = Some(v);
                        read += 1;
                    }
                }
                (read, rx.close())
            },
        );
        // What the consumer's close did not count was pushed after it and dropped with the
        // queue, or refused: at most what was not read or evicted.
        assert!(read + evicted + left <= 5);
    });
}

#[test]
fn wait_any_sees_either_queue() {
    model(|| {
        let (mut tx_a, mut rx_a) = ends::<u32>(1, Kind::Blocking);
        let (tx_b, mut rx_b) = ends::<u32>(1, Kind::Blocking);
        both(
            move || {
                tx_a.push(1).unwrap();
                drop(tx_b);
            },
            move || {
                smx_spsc::wait_any(&[&rx_a, &rx_b]);
                assert!(rx_a.has_message() || rx_b.ended());
            },
        );
    });
}

#[test]
fn every_accepted_push_is_read_evicted_or_counted_by_one_close() {
    for kind in [Kind::Blocking, Kind::DropOldest] {
        model(move || {
            let (mut tx, mut rx) = ends::<u32>(1, kind);
            let ((accepted, evicted, late), (read, left)) = both(
                move || {
                    let (mut accepted, mut evicted) = (0, 0);
                    for i in 0..3 {
                        // A blocking push into a full queue would wait for the close; try.
                        match tx.try_push(i) {
                            Ok(old) => {
                                accepted += 1;
                                evicted += old.is_some() as usize;
                            }
                            Err(_) => {}
                        }
                    }
                    (accepted, evicted, tx.close())
                },
                move || {
                    let read = rx.try_pop().is_ok() as usize;
                    (read, rx.close())
                },
            );
            assert_eq!(read + evicted + left + late, accepted, "{kind:?}");
        });
    }
}
