use super::*;

#[test]
fn a_guarded_reader_takes_every_completed_write_then_sees_the_end() {
    let (mut w, mut r) = channel::<u32>(ChannelKind::Coupled, 4);
    r.take_published_only();
    assert!(matches!(r.take(), Poll::Empty));
    for i in 0..3 {
        w.write(i).unwrap();
    }
    let got: Vec<u32> = (0..3)
        .map(|_| match r.take() {
            Poll::Message(m) => m,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(got, [0, 1, 2]);
    assert!(matches!(r.take(), Poll::Empty));
    w.close();
    assert!(matches!(r.take(), Poll::Ended));
}

#[test]
fn a_decoupled_producer_drops_the_oldest_and_keeps_the_order() {
    let (mut w, mut r) = channel::<u32>(ChannelKind::DecoupledProducer, 2);
    r.take_published_only();
    for i in 0..5 {
        w.write(i).unwrap();
    }
    assert!(matches!(r.take(), Poll::Message(3)));
    assert!(matches!(r.take(), Poll::Message(4)));
    let s = w.shared().counters.snapshot();
    assert_eq!((s.written, s.overwritten, s.read), (5, 3, 2));
}

#[test]
fn a_decoupled_consumer_reads_the_latest_value_again() {
    let (mut w, mut r) = channel::<u32>(ChannelKind::DecoupledConsumer, 1);
    assert_eq!(r.read(), None, "nothing ever arrived");
    r.wait_ready(); // never waits on a decoupled consumer side
    w.write(7).unwrap();
    assert_eq!(r.read(), Some(7));
    assert_eq!(r.read(), Some(7));
    let s = r.shared().counters.snapshot();
    assert_eq!((s.read, s.duplicated), (1, 1));
}

/// A reader says whether its last read was the latest value again: the same value that came
/// twice is two messages, the value read again is one.
#[test]
fn a_reader_says_when_it_read_the_latest_value_again() {
    let (mut w, mut r) = channel::<u32>(ChannelKind::DecoupledConsumer, 4);
    w.write(7).unwrap();
    w.write(7).unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let value = r.read_with(|v| *v).unwrap();
        seen.push((value, r.read_again()));
    }
    assert_eq!(seen, [(7, false), (7, false), (7, true)]);
    w.write(8).unwrap();
    assert_eq!((r.read(), r.read_again()), (Some(8), false));
    assert_eq!((r.read(), r.read_again()), (Some(8), true));
    let (mut w, mut r) = channel::<u32>(ChannelKind::Coupled, 2);
    w.write(1).unwrap();
    assert_eq!((r.read(), r.read_again()), (Some(1), false));
    assert_eq!(
        (r.read(), r.read_again()),
        (None, false),
        "a coupled side reads nothing again"
    );
}

#[test]
fn a_reader_close_fails_later_writes_and_the_books_balance_in_every_kind() {
    for kind in [
        ChannelKind::Coupled,
        ChannelKind::DecoupledProducer,
        ChannelKind::DecoupledConsumer,
        ChannelKind::Decoupled,
    ] {
        let (mut w, mut r) = channel::<u32>(kind, 2);
        w.write(0).unwrap();
        w.write(1).unwrap();
        assert!(matches!(r.take(), Poll::Message(0)));
        r.close();
        assert!(w.consumer_ended());
        assert_eq!(w.write(2), Err(Closed), "{kind:?}");
        w.close();
        let s = w.shared().counters.final_snapshot();
        assert_eq!((s.written, s.read, s.left, s.dropped), (3, 1, 1, 1), "{kind:?}");
        assert_eq!(s.written, s.read + s.overwritten + s.dropped + s.left, "{kind:?}");
    }
}

#[test]
fn a_waiting_reader_sees_the_end_after_draining() {
    let (mut w, mut r) = channel::<u32>(ChannelKind::Coupled, 4);
    let consumer = std::thread::spawn(move || {
        let mut got = Vec::new();
        while let Some(m) = r.read_blocking() {
            got.push(m);
        }
        assert!(r.ended());
        got
    });
    for i in 0..100 {
        w.write(i).unwrap();
    }
    w.close();
    assert_eq!(consumer.join().unwrap(), (0..100).collect::<Vec<_>>());
}

#[test]
fn wait_any_returns_when_one_input_has_a_message_or_ended() {
    let (mut w1, r1) = channel::<u32>(ChannelKind::Coupled, 1);
    let (mut w2, r2) = channel::<u32>(ChannelKind::Coupled, 1);
    let readers = [r1, r2];
    let writer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(5));
        w2.write(9).unwrap();
        w1.close();
        w2
    });
    wait_any(|| readers.iter());
    let _w2 = writer.join().unwrap();
    let [r1, mut r2] = readers;
    assert!(r2.has_message() || r1.ended());
}

#[test]
fn a_write_refused_by_the_halt_is_dropped_and_the_books_balance() {
    let (mut w, mut r) = channel::<u32>(ChannelKind::Coupled, 1);
    let halt = smx_spsc::Halt::default();
    w.set_halt(halt.clone());
    r.set_halt(halt.clone());
    w.write(0).unwrap();
    halt.store(true, Ordering::Release);
    // Full and halted: neither wait waits; a read that finds a message still takes it.
    assert_eq!(w.write(1), Err(Closed));
    let far = std::time::Instant::now() + std::time::Duration::from_secs(3600);
    assert_eq!(w.write_by(2, far), Err(Refused::Closed));
    assert!(matches!(r.take(), Poll::Message(0)));
    assert!(!r.wait_ready_until(far, || false), "halted, nothing to read");
    r.close();
    let s = w.shared().counters.snapshot();
    assert_eq!((s.written, s.read, s.dropped, s.left), (3, 1, 2, 0));
}

#[test]
fn a_write_making_room_calls_for_room_until_there_is_some_and_refuses_once_nobody_can_make_it() {
    let (mut w, mut r) = channel::<u32>(ChannelKind::Coupled, 2);
    r.take_published_only();
    let mut taken = Vec::new();
    for i in 0..5 {
        w.write_making_room(i, || match r.take() {
            Poll::Message(m) => taken.push(m),
            other => panic!("a full channel has a message: {other:?}"),
        })
        .unwrap();
    }
    // Room was made only when the channel was full: once for each write after the second.
    assert_eq!(taken, [0, 1, 2]);
    // A halt while full refuses the write, as does a consumer's end; both count it dropped.
    let halt = smx_spsc::Halt::default();
    w.set_halt(halt.clone());
    halt.store(true, Ordering::Release);
    assert!(w.write_making_room(5, || {}).is_err());
    halt.store(false, Ordering::Release);
    r.close();
    assert!(w.write_making_room(6, || panic!("nobody reads any more")).is_err());
    let s = w.shared().counters.snapshot();
    assert_eq!((s.written, s.read, s.dropped), (7, 3, 2));
}

#[test]
fn a_message_lent_to_the_reader_is_read_and_counted_as_a_read_one_in_every_kind() {
    for kind in [
        ChannelKind::Coupled,
        ChannelKind::DecoupledProducer,
        ChannelKind::DecoupledConsumer,
        ChannelKind::Decoupled,
    ] {
        let (mut w, mut r) = channel::<u32>(kind, 4);
        assert_eq!(r.read_with(|m| *m), None, "{kind:?}: nothing arrived yet");
        w.write(7).unwrap();
        w.write(8).unwrap();
        let got: Vec<Option<u32>> = (0..3).map(|_| r.read_with(|m| *m * 10)).collect();
        let s = r.shared().counters.snapshot();
        if kind.consumer_decoupled() {
            // The newest value, then the same again (a duplicate), as `read` gives them.
            assert_eq!(got[2], got[1], "{kind:?}");
            assert_eq!(s.duplicated, 1 + u64::from(got[0] == got[1]), "{kind:?}: {got:?}");
        } else {
            assert_eq!(got, [Some(70), Some(80), None], "{kind:?}");
            assert_eq!((s.read, s.duplicated), (2, 0), "{kind:?}");
        }
    }
}
