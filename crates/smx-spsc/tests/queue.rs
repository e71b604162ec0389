//! Behaviour of one queue: bound, order, the two kinds, both closes, looking without taking,
//! and that every message is dropped exactly once.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use smx_spsc::{Closed, Handshake, Kind, TryPopError, TryPushError, channel};

#[test]
fn a_blocking_queue_holds_exactly_its_capacity() {
    for cap in [1, 2, 3, 64, 100] {
        let (mut tx, mut rx) = channel::<usize>(cap, Kind::Blocking);
        for i in 0..cap {
            assert_eq!(tx.try_push(i), Ok(None));
        }
        assert_eq!(tx.try_push(cap), Err(TryPushError::Full(cap)), "capacity {cap}");
        assert_eq!(rx.len(), cap);
        assert_eq!(rx.try_pop(), Ok(0));
        assert_eq!(tx.try_push(cap), Ok(None), "one slot free again");
        assert_eq!(tx.try_push(cap + 1), Err(TryPushError::Full(cap + 1)));
    }
}

#[test]
fn messages_come_out_in_order_across_many_wraps() {
    for cap in [1, 2, 7, 64] {
        let (mut tx, mut rx) = channel::<u64>(cap, Kind::Blocking);
        let mut next = 0;
        for i in 0..1000u64 {
            tx.push(i).unwrap();
            if i % 3 == 0 || rx.len() == cap {
                while let Ok(v) = rx.try_pop() {
                    assert_eq!(v, next);
                    next += 1;
                }
            }
        }
        drop(tx);
        while let Some(v) = rx.pop() {
            assert_eq!(v, next);
            next += 1;
        }
        assert_eq!(next, 1000);
    }
}

#[test]
fn drop_oldest_evicts_in_order_and_never_holds_more_than_capacity() {
    for cap in [1, 2, 5] {
        let (mut tx, mut rx) = channel::<u64>(cap, Kind::DropOldest);
        let mut evicted = vec![];
        for i in 0..20u64 {
            if let Some(old) = tx.push(i).unwrap() {
                evicted.push(old);
            }
            assert!(rx.len() <= cap);
        }
        assert_eq!(evicted, (0..20 - cap as u64).collect::<Vec<_>>());
        assert_eq!(rx.len(), cap);
        drop(tx);
        let rest: Vec<u64> = std::iter::from_fn(|| rx.pop()).collect();
        assert_eq!(rest, (20 - cap as u64..20).collect::<Vec<_>>());
    }
}

#[test]
fn drop_oldest_never_reports_full() {
    let (mut tx, _rx) = channel::<u8>(1, Kind::DropOldest);
    assert_eq!(tx.try_push(1), Ok(None));
    assert_eq!(tx.try_push(2), Ok(Some(1)));
}

#[test]
fn looking_does_not_take() {
    let (mut tx, mut rx) = channel::<String>(2, Kind::Blocking);
    assert!(!rx.has_message());
    assert_eq!(rx.peek(), None);
    tx.push("a".into()).unwrap();
    assert!(rx.has_message());
    assert!(rx.wait_ready());
    assert_eq!(rx.peek().map(String::as_str), Some("a"));
    assert_eq!(rx.peek().map(String::as_str), Some("a"));
    assert_eq!(rx.len(), 1);
    assert_eq!(rx.try_pop().as_deref(), Ok("a"));
    assert!(!rx.has_message());
}

#[test]
#[should_panic(expected = "peek on a drop-oldest queue")]
fn peek_is_refused_on_drop_oldest() {
    let (_tx, mut rx) = channel::<u8>(1, Kind::DropOldest);
    rx.peek();
}

#[test]
fn producer_close_lets_the_consumer_drain_then_see_the_end() {
    for kind in [Kind::Blocking, Kind::DropOldest] {
        let (mut tx, mut rx) = channel::<u32>(4, kind);
        tx.push(1).unwrap();
        tx.push(2).unwrap();
        tx.close();
        assert_eq!(tx.push(3), Err(Closed(3)), "a closed producer refuses");
        assert!(!rx.ended());
        assert!(rx.wait_ready());
        assert_eq!(rx.try_pop(), Ok(1));
        assert_eq!(rx.pop(), Some(2));
        assert!(!rx.wait_ready());
        assert!(rx.ended());
        assert_eq!(rx.try_pop(), Err(TryPopError::Ended));
        assert_eq!(rx.pop(), None);
    }
}

#[test]
fn consumer_close_reports_what_was_left_and_refuses_later_pushes() {
    for kind in [Kind::Blocking, Kind::DropOldest] {
        let (mut tx, mut rx) = channel::<u32>(4, kind);
        for i in 0..3 {
            tx.push(i).unwrap();
        }
        assert_eq!(rx.pop(), Some(0));
        assert_eq!(rx.close(), 2);
        assert_eq!(rx.close(), 0, "closing twice counts nothing more");
        assert!(tx.consumer_closed());
        assert_eq!(tx.push(9), Err(Closed(9)));
        assert_eq!(tx.try_push(9), Err(TryPushError::Closed(9)));
        assert_eq!(rx.try_pop(), Err(TryPopError::Ended));
    }
}

/// The three ways to wait: park at once (spin zero), spin then park (default), yield then
/// park (`share_core`).
const SPINS: [Duration; 3] = [Duration::ZERO, smx_spsc::DEFAULT_SPIN, Duration::MAX];

/// Sets one end's waiting; `Duration::MAX` stands for `share_core`'s yielding.
fn wait_p<T>(tx: &mut smx_spsc::Producer<T>, spin: Duration) {
    if spin == Duration::MAX {
        tx.set_yield_each_look(true);
    } else {
        tx.set_spin(spin);
    }
}
fn wait_c<T>(rx: &mut smx_spsc::Consumer<T>, spin: Duration) {
    if spin == Duration::MAX {
        rx.set_yield_each_look(true);
    } else {
        rx.set_spin(spin);
    }
}

#[test]
fn a_producer_waiting_for_room_wakes_when_the_consumer_closes() {
    for spin in SPINS {
        let (mut tx, mut rx) = channel::<u32>(1, Kind::Blocking);
        wait_p(&mut tx, spin);
        tx.push(0).unwrap();
        let waiting = thread::spawn(move || tx.push(1));
        thread::sleep(Duration::from_millis(20)); // let it park (not needed for correctness)
        assert_eq!(rx.close(), 1);
        assert_eq!(waiting.join().unwrap(), Err(Closed(1)));
    }
}

#[test]
fn a_producer_waiting_for_room_wakes_when_the_consumer_takes() {
    for (spin, hs) in SPINS
        .into_iter()
        .flat_map(|s| [(s, Handshake::Membarrier), (s, Handshake::Fences)])
    {
        let (mut tx, mut rx) = smx_spsc::channel_with::<u32>(1, Kind::Blocking, hs);
        wait_p(&mut tx, spin);
        tx.push(0).unwrap();
        let waiting = thread::spawn(move || tx.push(1).map(|_| tx));
        thread::sleep(Duration::from_millis(20));
        assert_eq!(rx.try_pop(), Ok(0));
        let tx = waiting.join().unwrap().unwrap();
        assert_eq!(rx.pop(), Some(1));
        drop(tx);
        assert_eq!(rx.pop(), None);
    }
}

#[test]
fn a_waiting_consumer_wakes_on_a_message_and_on_the_close() {
    for (spin, hs) in SPINS
        .into_iter()
        .flat_map(|s| [(s, Handshake::Membarrier), (s, Handshake::Fences)])
    {
        let (mut tx, mut rx) = smx_spsc::channel_with::<u32>(8, Kind::Blocking, hs);
        wait_c(&mut rx, spin);
        let reader = thread::spawn(move || {
            let first = rx.wait_ready();
            let got = rx.pop();
            let second = rx.wait_ready();
            (first, got, second, rx.pop())
        });
        thread::sleep(Duration::from_millis(20));
        tx.push(7).unwrap();
        thread::sleep(Duration::from_millis(20));
        drop(tx);
        assert_eq!(reader.join().unwrap(), (true, Some(7), false, None));
    }
}

/// Sets `halt` and unparks `waiter` (the halt's contract), until `done` says the wait ended or
/// a minute passed (a wait that ignores the halt then fails the test instead of hanging).
fn halt_until(halt: &smx_spsc::Halt, waiter: &thread::JoinHandle<impl Sized>) -> bool {
    halt.store(true, Ordering::Release);
    for _ in 0..6_000 {
        waiter.thread().unpark();
        if waiter.is_finished() {
            return true;
        }
        thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn a_halt_ends_every_wait_and_only_the_waits() {
    for spin in SPINS {
        // A producer waiting for room: the write is refused and handed back.
        let (mut tx, rx) = channel::<u32>(1, Kind::Blocking);
        let halt = smx_spsc::Halt::default();
        wait_p(&mut tx, spin);
        tx.set_halt(halt.clone());
        tx.push(0).unwrap();
        let waiting = thread::spawn(move || (tx.push(1), tx));
        thread::sleep(Duration::from_millis(20));
        assert!(halt_until(&halt, &waiting), "spin {spin:?}: the write still waits");
        let (refused, mut tx) = waiting.join().unwrap();
        assert_eq!(refused, Err(Closed(1)));
        drop(rx);
        assert_eq!(tx.close(), 0);

        // A consumer waiting for a message, alone and among several: nothing to read, no end.
        let (tx_a, mut rx_a) = channel::<u32>(1, Kind::Blocking);
        let (mut tx_b, mut rx_b) = channel::<u32>(1, Kind::Blocking);
        let halt = smx_spsc::Halt::default();
        for rx in [&mut rx_a, &mut rx_b] {
            wait_c(rx, spin);
            rx.set_halt(halt.clone());
        }
        let waiting = thread::spawn(move || {
            let alone = (rx_a.wait_ready(), rx_a.pop());
            smx_spsc::wait_any(&[&rx_a, &rx_b]);
            (alone, rx_a.ended(), rx_b)
        });
        thread::sleep(Duration::from_millis(20));
        assert!(halt_until(&halt, &waiting), "spin {spin:?}: the read still waits");
        let (alone, ended, mut rx_b) = waiting.join().unwrap();
        assert_eq!((alone, ended), ((false, None), false), "halted, not ended");
        // The halt ends waits, not the queue: what is there is still taken.
        tx_b.push(3).unwrap();
        assert_eq!(rx_b.pop(), Some(3));
        drop(tx_a);
    }
}

#[test]
fn wait_any_returns_when_one_of_several_is_ready() {
    for spin in SPINS {
        let (mut tx_a, mut rx_a) = channel::<u32>(1, Kind::Blocking);
        let (tx_b, mut rx_b) = channel::<u32>(1, Kind::Blocking);
        wait_c(&mut rx_a, spin);
        wait_c(&mut rx_b, spin);
        let waiter = thread::spawn(move || {
            smx_spsc::wait_any(&[&rx_a, &rx_b]);
            let got = rx_a.try_pop();
            smx_spsc::wait_any(&[&rx_b]);
            (got, rx_b.ended())
        });
        thread::sleep(Duration::from_millis(20));
        tx_a.push(5).unwrap();
        thread::sleep(Duration::from_millis(20));
        drop(tx_b);
        assert_eq!(waiter.join().unwrap(), (Ok(5), true));
    }
}

#[test]
#[should_panic(expected = "at least one")]
fn capacity_zero_is_refused() {
    let _ = channel::<u8>(0, Kind::Blocking);
}

/// A message that counts its drops.
struct Counted(&'static AtomicUsize);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn every_message_is_dropped_exactly_once() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let mut made = 0;
    for kind in [Kind::Blocking, Kind::DropOldest] {
        // Left inside when both ends go.
        let (mut tx, mut rx) = channel(3, kind);
        for _ in 0..3 {
            tx.push(Counted(&DROPS)).ok().unwrap();
        }
        made += 3;
        drop(rx.pop());
        drop((tx, rx));
        // Evicted, refused, left at the consumer's close.
        let (mut tx, mut rx) = channel(2, kind);
        for _ in 0..5 {
            made += 1;
            match tx.try_push(Counted(&DROPS)) {
                Ok(evicted) => drop(evicted),
                Err(refused) => drop(refused),
            }
        }
        rx.close();
        made += 1;
        drop(tx.push(Counted(&DROPS)));
    }
    assert_eq!(DROPS.load(Ordering::Relaxed), made);
}

#[test]
fn batches_keep_order_and_bound() {
    use std::collections::VecDeque;
    for cap in [1, 3, 64] {
        let (mut tx, mut rx) = channel::<u64>(cap, Kind::Blocking);
        let producer = thread::spawn(move || {
            let mut batch = VecDeque::with_capacity(100);
            let mut next = 0;
            for size in (1..=100).cycle().take(200) {
                batch.extend(next..next + size);
                next += size;
                assert_eq!(tx.push_from(&mut batch), Ok(0)); // waits for room as needed
                assert!(batch.is_empty());
            }
            next
        });
        let mut out = VecDeque::with_capacity(64);
        let mut expected = 0;
        while rx.wait_ready() {
            let n = rx.pop_into(&mut out, 1 + expected as usize % 7);
            assert!(n >= 1 && n <= cap);
            for v in out.drain(..) {
                assert_eq!(v, expected);
                expected += 1;
            }
        }
        assert_eq!(producer.join().unwrap(), expected);
    }
}

#[test]
fn a_batch_stops_at_the_consumers_close_and_keeps_the_rest() {
    use std::collections::VecDeque;
    let (mut tx, mut rx) = channel::<u32>(2, Kind::Blocking);
    let mut batch: VecDeque<u32> = (0..5).collect();
    let writer = thread::spawn(move || {
        let r = tx.push_from(&mut batch);
        (r, batch)
    });
    thread::sleep(Duration::from_millis(20));
    assert_eq!(rx.close(), 2);
    let (r, rest) = writer.join().unwrap();
    assert_eq!(r, Err(Closed(())));
    assert_eq!(rest, [2, 3, 4]);
    // Drop-oldest batches evict and count.
    let (mut tx, mut rx) = channel::<u32>(2, Kind::DropOldest);
    let mut batch: VecDeque<u32> = (0..5).collect();
    assert_eq!(tx.push_from(&mut batch), Ok(3));
    let mut out = VecDeque::new();
    assert_eq!(rx.pop_into(&mut out, 10), 2);
    assert_eq!(out, [3, 4]);
}

#[test]
fn a_write_after_the_consumers_close_is_counted_by_the_producers_close() {
    let (mut tx, mut rx) = channel::<u32>(2, Kind::DropOldest);
    tx.push(0).unwrap();
    assert_eq!(rx.close(), 1);
    // A push that checked the flag before the close and landed after its count, as a racing
    // one can: here a push is refused, so only the ends' own accounting can be shown.
    assert_eq!(tx.push(1), Err(Closed(1)));
    assert_eq!(tx.close(), 0, "nothing landed after the consumer's count");
    let (mut tx, mut rx) = channel::<u32>(2, Kind::Blocking);
    tx.push(0).unwrap();
    assert_eq!(tx.close(), 0, "the consumer is open: it will count what is inside");
    assert_eq!(rx.close(), 1);
}

#[test]
fn a_value_built_in_its_slot_arrives_like_a_pushed_one_and_is_not_built_when_refused() {
    for kind in [Kind::Blocking, Kind::DropOldest] {
        let (mut tx, mut rx) = channel::<Vec<u64>>(2, kind);
        for i in 0..5u64 {
            assert!(tx.push_with(|slot| slot.write(vec![i, i * 10])).is_ok(), "{kind:?}");
            if kind == Kind::Blocking {
                assert_eq!(rx.try_pop(), Ok(vec![i, i * 10]));
            }
        }
        if kind == Kind::DropOldest {
            // The newest two, as with `push`.
            assert_eq!(rx.try_pop(), Ok(vec![3, 30]));
            assert_eq!(rx.try_pop(), Ok(vec![4, 40]));
        }
        drop(rx);
        let mut built = false;
        let refused = tx.push_with(|slot| {
            built = true;
            slot.write(Vec::new())
        });
        assert_eq!(refused, Err(Closed(())), "{kind:?}");
        assert!(!built, "{kind:?}: nothing is built for a closed consumer");
    }
}

#[test]
fn a_blocking_push_with_waits_for_room_before_it_builds() {
    let (mut tx, mut rx) = channel::<u64>(1, Kind::Blocking);
    tx.push(1).unwrap();
    let consumer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        let room_made = std::time::Instant::now();
        let first = rx.pop();
        (room_made, first, rx.pop())
    });
    let built_at = std::cell::Cell::new(None);
    tx.push_with(|slot| {
        built_at.set(Some(std::time::Instant::now()));
        slot.write(2)
    })
    .unwrap();
    drop(tx);
    let (room_made, first, second) = consumer.join().unwrap();
    assert_eq!((first, second), (Some(1), Some(2)));
    assert!(
        built_at.get().unwrap() >= room_made,
        "built only once the full queue had room"
    );
}

#[test]
#[should_panic(expected = "init must return the slot")]
fn push_with_refuses_an_init_that_returns_another_value() {
    let (mut tx, _rx) = channel::<u64>(2, Kind::Blocking);
    let elsewhere: &'static mut u64 = Box::leak(Box::new(7));
    let _ = tx.push_with(move |_| elsewhere);
}

#[test]
fn a_message_lent_to_see_is_taken_once_in_order_and_see_runs_only_for_one() {
    let drops = std::sync::Arc::new(AtomicUsize::new(0));
    for kind in [Kind::Blocking, Kind::DropOldest] {
        drops.store(0, Ordering::SeqCst);
        let (mut tx, mut rx) = channel::<Numbered>(2, kind);
        let mut called = false;
        assert_eq!(rx.try_pop_with(|_| called = true), Err(TryPopError::Empty), "{kind:?}");
        assert!(!called, "{kind:?}: see runs only for a message");
        for i in 0..3 {
            let _ = tx.try_push(Numbered(i, drops.clone()));
        }
        // Blocking: the queue took 0 and 1 and refused 2; drop-oldest: it evicted 0 for 2.
        let first = if kind == Kind::Blocking { 0 } else { 1 };
        assert_eq!(rx.try_pop_with(|m| m.0), Ok(first), "{kind:?}");
        assert_eq!(rx.try_pop_with(|m| m.0), Ok(first + 1), "{kind:?}");
        drop(tx);
        assert_eq!(rx.try_pop_with(|m| m.0), Err(TryPopError::Ended), "{kind:?}");
        assert_eq!(drops.load(Ordering::SeqCst), 3, "{kind:?}: each message dropped once");
    }
}

/// A message that counts its drops.
#[derive(Debug)]
struct Numbered(u64, std::sync::Arc<AtomicUsize>);

impl Drop for Numbered {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}
