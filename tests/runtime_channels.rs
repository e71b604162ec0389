//! Semantics of each channel kind, driven from one thread (no timing involved) or with a
//! blocked peer that must be woken by the other side's end.

use smx_box::Message;
use smx_runtime::channel::{ChannelKind, Poll, channel};

fn msg(seq: u64) -> Message {
    Message::new(seq, 0, &seq.to_le_bytes())
}

fn seqs(reader: &mut smx_runtime::channel::Reader) -> Vec<u64> {
    let mut out = Vec::new();
    while let Poll::Message(m) = reader.take() {
        out.push(m.seq);
    }
    out
}

#[test]
fn kinds_follow_the_decoupling_bits() {
    assert_eq!(ChannelKind::from_bits(false, false), ChannelKind::Coupled);
    assert_eq!(ChannelKind::from_bits(true, false), ChannelKind::DecoupledProducer);
    assert_eq!(ChannelKind::from_bits(false, true), ChannelKind::DecoupledConsumer);
    assert_eq!(ChannelKind::from_bits(true, true), ChannelKind::Decoupled);
    assert_eq!(ChannelKind::Decoupled.smx_name(), "D_FIFO_D");
}

#[test]
fn coupled_is_fifo_and_drains_after_the_producer_ended() {
    let (mut w, mut r) = channel(ChannelKind::Coupled, 4);
    for s in 0..4 {
        w.write(msg(s)).unwrap();
    }
    w.close();
    assert!(!r.ended(), "buffered messages first");
    r.wait_ready();
    assert_eq!(seqs(&mut r), vec![0, 1, 2, 3]);
    assert!(r.ended());
    assert!(matches!(r.take(), Poll::Ended));
    r.wait_ready(); // returns at once after the end
    let c = r.shared().counters.final_snapshot();
    assert_eq!((c.written, c.read, c.left, c.dropped), (4, 4, 0, 0));
}

#[test]
fn coupled_write_blocks_when_full_until_the_consumer_reads() {
    let (mut w, mut r) = channel(ChannelKind::Coupled, 1);
    w.write(msg(0)).unwrap();
    let producer = std::thread::spawn(move || {
        w.write(msg(1)).unwrap(); // blocks until the read below
        w
    });
    r.wait_ready();
    assert_eq!(r.read().unwrap().seq, 0);
    let w = producer.join().unwrap();
    assert_eq!(r.read().unwrap().seq, 1);
    drop(w);
    assert!(r.ended());
}

#[test]
fn a_consumer_end_wakes_a_blocked_producer_and_later_writes_are_dropped() {
    let (mut w, mut r) = channel(ChannelKind::Coupled, 1);
    w.write(msg(0)).unwrap();
    let producer = std::thread::spawn(move || {
        let mut refused = 0;
        for s in 1..=3 {
            if w.write(msg(s)).is_err() {
                refused += 1;
            }
        }
        assert!(w.consumer_ended());
        (w, refused)
    });
    r.close();
    let (w, refused) = producer.join().unwrap();
    // The write blocked on the full channel is refused too: the room the consumer's end made
    // by draining is not for a message nobody will read.
    assert_eq!(refused, 3);
    let c = w.shared().counters.final_snapshot();
    drop(w);
    assert_eq!(c.written, 4);
    assert_eq!(c.read, 0);
    assert_eq!(c.dropped, refused);
    assert_eq!(c.written, c.read + c.overwritten + c.dropped + c.left);
}

#[test]
fn a_producer_end_wakes_a_waiting_consumer() {
    let (w, mut r) = channel(ChannelKind::Coupled, 2);
    let consumer = std::thread::spawn(move || {
        r.wait_ready(); // blocks until the producer ends
        r.ended()
    });
    drop(w);
    assert!(consumer.join().unwrap());
}

#[test]
fn decoupled_producer_side_drops_the_oldest_and_keeps_order() {
    let (mut w, mut r) = channel(ChannelKind::DecoupledProducer, 3);
    for s in 0..5 {
        w.write(msg(s)).unwrap(); // never blocks
    }
    assert_eq!(seqs(&mut r), vec![2, 3, 4], "the original would give 4, 2, 3");
    let c = r.shared().counters.snapshot();
    assert_eq!((c.written, c.overwritten, c.read), (5, 2, 3));
    assert!(
        r.triggering(),
        "the consumer side is coupled: the firing rule waits on it"
    );
}

#[test]
fn decoupled_producer_side_sees_the_consumer_end() {
    let (mut w, r) = channel(ChannelKind::DecoupledProducer, 2);
    w.write(msg(0)).unwrap();
    drop(r);
    assert!(w.consumer_ended());
    assert!(w.write(msg(1)).is_err());
    let c = w.shared().counters.final_snapshot();
    assert_eq!((c.written, c.left, c.dropped), (2, 1, 1));
}

#[test]
fn decoupled_consumer_side_returns_the_latest_value_again() {
    let (mut w, mut r) = channel(ChannelKind::DecoupledConsumer, 2);
    assert!(!r.triggering());
    r.wait_ready(); // never blocks
    assert!(r.read().is_none(), "nothing written yet, nothing to repeat");
    w.write(msg(7)).unwrap();
    w.write(msg(8)).unwrap();
    assert_eq!(r.read().unwrap().seq, 7);
    assert_eq!(r.read().unwrap().seq, 8);
    assert_eq!(r.read().unwrap().seq, 8, "duplicate");
    assert_eq!(r.read().unwrap().seq, 8, "duplicate");
    assert!(matches!(r.take(), Poll::Empty), "take never duplicates");
    let c = r.shared().counters.snapshot();
    assert_eq!((c.read, c.duplicated), (2, 2));
    drop(w);
    assert!(r.ended());
    assert_eq!(r.read().unwrap().seq, 8, "still the latest value after the end");
    assert!(r.read_blocking().is_none(), "a blocking read wants a new message");
}

#[test]
fn fully_decoupled_channel_never_blocks_either_side() {
    let (mut w, mut r) = channel(ChannelKind::Decoupled, 1);
    for s in 0..10 {
        w.write(msg(s)).unwrap();
    }
    assert_eq!(r.read().unwrap().seq, 9);
    assert_eq!(r.read().unwrap().seq, 9);
    let c = r.shared().counters.snapshot();
    assert_eq!((c.written, c.overwritten, c.read, c.duplicated), (10, 9, 1, 1));
}

#[test]
fn messages_left_at_shutdown_are_counted() {
    let (mut w, mut r) = channel(ChannelKind::Coupled, 8);
    for s in 0..5 {
        w.write(msg(s)).unwrap();
    }
    r.wait_ready();
    assert_eq!(r.read().unwrap().seq, 0);
    r.close();
    drop(w);
    let c = r.shared().counters.final_snapshot();
    assert_eq!((c.written, c.read, c.left), (5, 1, 4));
}

#[test]
fn large_payloads_are_shared_not_copied_on_duplicate() {
    let (mut w, mut r) = channel(ChannelKind::DecoupledConsumer, 1);
    w.write(Message::new(1, 0, &[9u8; 1000])).unwrap();
    let a = r.read().unwrap();
    let b = r.read().unwrap();
    assert_eq!(a.payload(), b.payload());
    assert!(std::ptr::eq(a.payload().as_ptr(), b.payload().as_ptr()));
}

/// The firing rule only looks: a message it waited for keeps its slot until the box reads it,
/// so a channel of length 1 never holds two (the original's `await` is the same).
#[test]
fn the_firing_rule_leaves_the_message_in_its_slot() {
    let (mut w, mut r) = channel(ChannelKind::DecoupledProducer, 1);
    w.write(msg(0)).unwrap();
    r.wait_ready();
    // The slot is still taken, so this write overwrites message 0 instead of queueing behind it.
    w.write(msg(1)).unwrap();
    assert_eq!(r.read().unwrap().seq, 1);
    let c = r.shared().counters.snapshot();
    assert_eq!((c.written, c.read, c.overwritten), (2, 1, 1));
}

#[test]
fn a_parked_consumer_is_woken_by_each_write_and_by_the_end() {
    let (mut w, mut r) = channel(ChannelKind::Coupled, 1);
    let consumer = std::thread::spawn(move || {
        let mut got = Vec::new();
        loop {
            r.wait_ready(); // parks: the producer below writes only after a pause
            match r.take() {
                Poll::Message(m) => got.push(m.seq),
                Poll::Ended => return got,
                // The producer is ending: its end flag is up, its queue not yet closed.
                Poll::Empty if r.ended() => return got,
                Poll::Empty => panic!("the firing rule returned with nothing there"),
            }
        }
    });
    for s in 0..50 {
        if s % 10 == 0 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        w.write(msg(s)).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(5));
    drop(w);
    assert_eq!(consumer.join().unwrap(), (0..50).collect::<Vec<_>>());
}

/// `has_message` looks without taking and without waiting: a decoupled consumer's latest value
/// does not count, and neither does an ended producer.
#[test]
fn has_message_sees_only_new_messages() {
    for kind in [ChannelKind::Coupled, ChannelKind::DecoupledConsumer] {
        let (mut w, mut r) = channel(kind, 2);
        assert!(!r.has_message(), "{kind:?}: empty");
        w.write(msg(0)).unwrap();
        w.write(msg(1)).unwrap();
        assert!(r.has_message(), "{kind:?}: two waiting");
        assert_eq!(r.read().map(|m| m.seq), Some(0));
        assert!(r.has_message(), "{kind:?}: one still waiting");
        assert_eq!(r.read().map(|m| m.seq), Some(1));
        assert!(!r.has_message(), "{kind:?}: drained");
        w.close();
        assert!(!r.has_message(), "{kind:?}: ended");
    }
}

/// A producer that parks when the channel is full (its consumer shares its core) gets every
/// message through, and a consumer that ends releases it: its next write fails, it never hangs.
#[test]
fn a_parking_producer_delivers_and_sees_the_consumer_end() {
    let (mut w, mut r) = channel(ChannelKind::Coupled, 1);
    smx_runtime::channel::share_core(&mut w, &mut r);
    let producer = std::thread::spawn(move || {
        let mut accepted = 0u64;
        for s in 0..1_000_000 {
            if w.write(msg(s)).is_err() {
                break;
            }
            accepted += 1;
        }
        accepted
    });
    let mut got = Vec::new();
    while got.len() < 5000 {
        r.wait_ready();
        if let Some(m) = r.read() {
            got.push(m.seq);
        }
    }
    r.close();
    let accepted = producer.join().unwrap();
    assert_eq!(got, (0..5000).collect::<Vec<_>>());
    assert!(
        (5000..=5001).contains(&accepted),
        "{accepted} accepted: at most one left behind"
    );
}

/// Both ends wait with every spin budget (zero parks at once, a short one parks after a
/// spin, the default rarely parks), while the other end pauses now and then for longer than
/// the budget: each parked end must be woken, so every message arrives in order and neither
/// end hangs. A lost wake-up shows as a timeout here, not as a hung test run.
#[test]
fn ends_that_park_after_their_spin_are_always_woken() {
    use std::time::Duration;
    for spin in [
        Duration::ZERO,
        Duration::from_micros(2),
        smx_runtime::channel::DEFAULT_SPIN,
    ] {
        let (mut w, mut r) = channel(ChannelKind::Coupled, 1);
        w.set_spin(spin);
        r.set_spin(spin);
        const N: u64 = 20_000;
        let producer = std::thread::spawn(move || {
            for s in 0..N {
                if s % 1000 == 0 {
                    std::thread::sleep(Duration::from_micros(200)); // the consumer parks
                }
                w.write(msg(s)).unwrap();
            }
        });
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut next = 0;
            loop {
                if next % 1000 == 500 {
                    std::thread::sleep(Duration::from_micros(200)); // the producer parks
                }
                r.wait_ready();
                match r.take() {
                    Poll::Message(m) => {
                        assert_eq!(m.seq, next);
                        next += 1;
                    }
                    Poll::Ended => break,
                    // The producer is ending: its end flag is up, its queue not yet closed.
                    Poll::Empty if r.ended() => break,
                    Poll::Empty => panic!("the firing rule returned with nothing there"),
                }
            }
            let _ = done_tx.send(next);
        });
        let got = done_rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("spin {spin:?}: the consumer failed or was never woken ({e})"));
        producer.join().unwrap();
        assert_eq!(got, N, "spin {spin:?}");
    }
}
