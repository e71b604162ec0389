//! The two sides of a link on two threads of one process.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{check, never, payload};
use smx_shm::{Consumer, ConsumerEnd, Next, Producer, ProducerEnd, Sent, ShmError};

const T: Duration = Duration::from_secs(5);

#[test]
fn order_sequence_time_and_payloads_from_0_bytes_to_1_mib() {
    let dir = common::dir();
    let path = common::link(&dir, "sizes");
    let sizes = [0usize, 1, 8, 24, 25, 4095, 4096, 4097, 8192, 65536, 1 << 20];
    let mut producer = Producer::create(&path, 4, 1 << 20, T).unwrap();
    let p = path.clone();
    let reader = std::thread::spawn(move || {
        let mut consumer = Consumer::open(&p, T, &never).unwrap();
        let mut got = Vec::new();
        loop {
            match consumer.next(None, &never) {
                // Checked and dropped at once: a payload read in place holds its slot until then.
                Next::Message(m) => {
                    let len = m.len();
                    check(m.seq, m.payload(), len);
                    got.push((m.seq, m.sent_ns, len));
                }
                Next::Ended(end) => return (got, end, consumer.books()),
                other => panic!("{other:?}"),
            }
        }
    });
    for round in 0..3u64 {
        for (i, &len) in sizes.iter().enumerate() {
            let seq = round * 100 + i as u64;
            let sent = producer.send(seq, 1_000 + seq, &payload(seq, len), &never).unwrap();
            assert_eq!(sent, Sent::Published);
        }
    }
    let books = producer.finish(false, &never);
    let (got, end, cbooks) = reader.join().unwrap();
    assert_eq!(end, ProducerEnd::Ended);
    assert_eq!(books.written, 3 * sizes.len() as u64);
    assert_eq!(
        (books.left, books.lost, books.consumer),
        (0, 0, Some(ConsumerEnd::Drained))
    );
    assert_eq!(cbooks.received, books.written);
    assert_eq!(cbooks.copied + cbooks.in_place, cbooks.received);
    assert!(cbooks.in_place > 0 && cbooks.copied > 0);
    let mut expect = Vec::new();
    for round in 0..3u64 {
        for (i, &len) in sizes.iter().enumerate() {
            expect.push((round * 100 + i as u64, len));
        }
    }
    for (&(seq, sent_ns, len), &(want, want_len)) in got.iter().zip(&expect) {
        assert_eq!(seq, want);
        assert_eq!(sent_ns, 1_000 + seq, "creation time of {seq}");
        assert_eq!(len, want_len, "length of {seq}");
    }
    assert_eq!(got.len(), expect.len());
    assert!(!path.exists(), "the creator removes the file at its end");
}

/// Payloads read in place keep their slot until dropped: with every slot held the producer
/// waits; dropping them in any order (here newest first, on another thread) frees them all.
#[test]
fn full_ring_holds_back_the_producer_until_slots_are_released() {
    let dir = common::dir();
    let path = common::link(&dir, "full");
    let producer = Producer::create(&path, 4, 8192, T).unwrap();
    let mut consumer = Consumer::open(&path, T, &never).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let writer = std::thread::spawn(move || {
        let mut producer = producer;
        for seq in 0..6 {
            assert_eq!(
                producer.send(seq, 0, &payload(seq, 8000), &never).unwrap(),
                Sent::Published
            );
        }
        d.store(true, Ordering::SeqCst);
        producer.finish(false, &never)
    });
    while consumer.published() < 4 {
        std::thread::yield_now();
    }
    // Nothing read: exactly the ring's length is published, and the producer waits.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(consumer.published(), 4);
    assert!(!done.load(Ordering::SeqCst));
    let held: Vec<_> = (0..4)
        .map(|_| match consumer.next(None, &never) {
            Next::Message(m) => m,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(consumer.books().in_place, 4);
    // Taken but still held in place: the slots are not free, the producer still waits.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(consumer.published(), 4);
    std::thread::spawn(move || {
        for m in held.into_iter().rev() {
            check(m.seq, m.payload(), 8000);
            drop(m);
        }
    })
    .join()
    .unwrap();
    for seq in 4..6 {
        match consumer.next(None, &never) {
            Next::Message(m) => check(seq, m.payload(), 8000),
            other => panic!("{other:?}"),
        }
    }
    assert!(matches!(consumer.next(None, &never), Next::Ended(ProducerEnd::Ended)));
    let books = writer.join().unwrap();
    assert_eq!((books.written, books.lost, books.left), (6, 0, 0));
    assert!(books.full_waits >= 1);
}

#[test]
fn a_consumer_that_closes_ends_the_producer_with_what_it_left() {
    let dir = common::dir();
    let path = common::link(&dir, "close");
    let mut producer = Producer::create(&path, 8, 64, T).unwrap();
    let mut consumer = Consumer::open(&path, T, &never).unwrap();
    for seq in 0..5 {
        producer.send(seq, 0, b"x", &never).unwrap();
    }
    for _ in 0..2 {
        assert!(matches!(consumer.next(None, &never), Next::Message(_)));
    }
    consumer.close();
    assert_eq!(
        producer.send(5, 0, b"x", &never).unwrap(),
        Sent::Over(ConsumerEnd::Closed)
    );
    let books = producer.finish(false, &never);
    assert_eq!((books.written, books.left, books.lost), (5, 3, 0));
    assert_eq!(consumer.books().received + books.left, books.written);
}

#[test]
fn a_message_larger_than_a_slot_is_an_error_naming_the_key() {
    let dir = common::dir();
    let path = common::link(&dir, "large");
    let mut producer = Producer::create(&path, 2, 100, T).unwrap();
    let err = producer.send(0, 0, &[0u8; 101], &never).unwrap_err();
    assert!(matches!(err, ShmError::TooLarge { len: 101, .. }));
    assert!(err.to_string().contains("max_payload"), "{err}");
    assert_eq!(producer.books().written, 0);
}

/// The free room of the file system that holds `dir`.
fn free_room(dir: &std::path::Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
    st.f_bavail as u64 * st.f_frsize as u64
}

/// A ring too large for the file system is made with smaller slots when asked to fit, and a
/// message larger than those fails naming the room, not a key; without being asked, the ring
/// is refused naming `max_payload`.
#[test]
fn a_ring_too_large_for_the_room_is_made_with_smaller_slots_when_asked() {
    let dir = common::dir();
    let path = common::link(&dir, "roomy");
    let capacity = 1024;
    let asked = (free_room(dir.path()) / capacity * 4).next_multiple_of(64);
    let err = Producer::create(&path, capacity, asked, T).err().expect("no room");
    assert!(err.to_string().contains("max_payload"), "{err}");
    let mut producer = match Producer::create_to_fit(&path, capacity, asked, Duration::from_millis(10)) {
        Ok(producer) => producer,
        Err(err) => {
            assert!(err.to_string().contains("too small for this channel's length"), "{err}");
            println!("the file system is too small for 1024 slots of 64 KiB: only the refusal is seen");
            return;
        }
    };
    let slot = producer.max_payload();
    assert!(
        producer.shrunk() && (64 * 1024..asked).contains(&slot) && slot.is_multiple_of(64),
        "{slot}"
    );
    let err = producer.send(0, 0, &vec![0u8; slot as usize + 1], &never).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, ShmError::TooLarge { shrunk: true, .. })
            && text.contains(&slot.to_string())
            && text.contains("room")
            && !text.contains("max_payload"),
        "{text}"
    );
    assert_eq!(producer.send(1, 0, b"small", &never).unwrap(), Sent::Published);
}

/// A message handed over on its feeder's write is published as a send would publish it; what
/// a send would refuse or end on (too large, a closed consumer, the run's stop) is declined
/// before the payload is written, and books nothing, so the box's own step can book it.
#[test]
fn a_pass_publishes_as_a_send_does_and_declines_what_a_send_would_not_publish() {
    let dir = common::dir();
    let path = common::link(&dir, "pass");
    let mut producer = Producer::create(&path, 4, 8, T).unwrap();
    let mut consumer = Consumer::open(&path, T, &never).unwrap();
    let fill = |slot: &mut [u8]| slot.copy_from_slice(b"abc");
    assert!(producer.pass_in_place(7, 0, 3, fill, never));
    let Next::Message(msg) = consumer.next(None, &never) else {
        panic!("the passed message arrives");
    };
    assert_eq!((msg.seq, msg.payload()), (7, &b"abc"[..]));
    let untouched = |_: &mut [u8]| panic!("a declined message is not written");
    assert!(!producer.pass_in_place(8, 0, 9, untouched, never), "larger than a slot");
    assert!(!producer.pass_in_place(8, 0, 3, untouched, || true), "the run stops");
    consumer.close();
    assert!(
        !producer.pass_in_place(8, 0, 3, untouched, never),
        "the consumer closed"
    );
    assert_eq!(producer.books().written, 1);
    assert_eq!((producer.books().left, producer.books().consumer), (0, None));
    assert_eq!(
        producer.send(8, 0, b"abc", &never).unwrap(),
        Sent::Over(ConsumerEnd::Closed),
        "the send then books the end"
    );
}

#[test]
fn a_stop_ends_the_wait_for_room() {
    let dir = common::dir();
    let path = common::link(&dir, "stop");
    let mut producer = Producer::create(&path, 1, 64, T).unwrap();
    let mut consumer = Consumer::open(&path, T, &never).unwrap();
    producer.send(0, 0, b"a", &never).unwrap();
    let stop = || true;
    assert_eq!(
        producer.send(1, 0, b"b", &stop).unwrap(),
        Sent::Over(ConsumerEnd::Stopped)
    );
    assert_eq!(producer.books().left, 1);
    // The message booked as left is not taken afterwards.
    assert!(matches!(consumer.next(None, &never), Next::Ended(ProducerEnd::Stopped)));
    assert_eq!(consumer.books().received, 0);
    assert!(
        !producer.pass_in_place(2, 0, 1, |_| panic!("not written"), never),
        "the link is over"
    );
    assert_eq!(producer.books().written, 1);
}

/// Four messages published, one taken, then the producer's run stops: its books and the
/// consumer, which has not looked since.
fn stopped_after_one_of_four_taken(dir: &tempfile::TempDir, name: &str) -> (smx_shm::ProducerBooks, Consumer) {
    let path = common::link(dir, name);
    let mut producer = Producer::create(&path, 8, 64, T).unwrap();
    let mut consumer = Consumer::open(&path, T, &never).unwrap();
    for seq in 0..4 {
        assert_eq!(producer.send(seq, 0, b"x", &never).unwrap(), Sent::Published);
    }
    assert!(matches!(consumer.next(None, &never), Next::Message(_)));
    (producer.finish(false, &|| true), consumer)
}

/// The consumer's process runs on after the producer's stopped (a supervisor stops the
/// processes upstream first): what the producer books as left is never taken afterwards, so
/// each message is either received or left.
#[test]
fn after_a_stop_each_message_is_either_received_or_left() {
    let dir = common::dir();
    let (books, mut consumer) = stopped_after_one_of_four_taken(&dir, "stopped");
    assert_eq!(books.consumer, Some(ConsumerEnd::Stopped));
    assert_eq!((books.written, books.left, books.lost), (4, 3, 0));
    assert!(matches!(consumer.next(None, &never), Next::Ended(ProducerEnd::Stopped)));
    assert_eq!(consumer.books().received, 1);
}

/// A consumer that goes on taking while its producer stops: wherever the cut falls among its
/// takes, the producer's books and the consumer's agree.
#[test]
fn a_stop_while_the_consumer_takes_keeps_exact_books() {
    let dir = common::dir();
    for (round, pause) in [Duration::ZERO, Duration::from_millis(3)].into_iter().enumerate() {
        let path = common::link(&dir, &format!("busy{round}"));
        let count = 256;
        let mut producer = Producer::create(&path, count, 64, T).unwrap();
        let p = path.clone();
        let opened = Arc::new(AtomicBool::new(false));
        let o = opened.clone();
        let reader = std::thread::spawn(move || {
            let mut consumer = Consumer::open(&p, T, &never).unwrap();
            o.store(true, Ordering::SeqCst);
            let mut seqs = Vec::new();
            loop {
                if let Some(seq) = consumer.take_small(|seq, _, _| seq) {
                    seqs.push(seq);
                } else {
                    match consumer.next(None, &never) {
                        Next::Message(m) => seqs.push(m.seq),
                        Next::Ended(end) => return (seqs, end, consumer.books()),
                        other => panic!("{other:?}"),
                    }
                }
                std::thread::sleep(pause);
            }
        });
        while !opened.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        for seq in 0..count {
            assert_eq!(producer.send(seq, 0, b"x", &never).unwrap(), Sent::Published);
        }
        let books = producer.finish(false, &|| true);
        let (seqs, end, taken) = reader.join().unwrap();
        assert_eq!(seqs, (0..taken.received).collect::<Vec<_>>());
        assert_eq!(
            taken.received + books.left + books.lost,
            books.written,
            "{books:?} {taken:?}"
        );
        let want = if books.left > 0 {
            ProducerEnd::Stopped
        } else {
            ProducerEnd::Ended
        };
        assert_eq!(end, want, "{books:?}");
    }
}

/// A consumer that took everything and waits for more when its producer stops: the producer's
/// books are exact and settled without waiting out any bound, and the consumer's stream ends.
#[test]
fn a_consumer_idle_in_its_wait_ends_with_exact_books_when_its_producer_stops() {
    let dir = common::dir();
    let path = common::link(&dir, "idle");
    let mut producer = Producer::create(&path, 8, 64, T).unwrap();
    let p = path.clone();
    let (took, waiting) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut consumer = Consumer::open(&p, T, &never).unwrap();
        let mut seqs = Vec::new();
        while seqs.len() < 3 {
            match consumer.next(None, &never) {
                Next::Message(m) => seqs.push(m.seq),
                other => panic!("{other:?}"),
            }
        }
        took.send(()).unwrap();
        // Nothing more is published: this waits until the producer's stop reaches it.
        let end = consumer.next(None, &never);
        (seqs, end, consumer.books())
    });
    assert!(producer.wait_for_consumer(&never));
    for seq in 0..3 {
        assert_eq!(producer.send(seq, 0, b"x", &never).unwrap(), Sent::Published);
    }
    waiting.recv().unwrap();
    let books = producer.finish(false, &|| true);
    let (seqs, end, taken) = reader.join().unwrap();
    assert_eq!(seqs, vec![0, 1, 2]);
    assert!(
        matches!(end, Next::Ended(ProducerEnd::Stopped | ProducerEnd::Ended)),
        "{end:?}"
    );
    assert!(
        matches!(books.consumer, Some(ConsumerEnd::Stopped | ConsumerEnd::Drained)),
        "{books:?}"
    );
    assert_eq!((books.written, books.left, books.lost), (3, 0, 0));
    assert_eq!(taken.received, 3);
    assert!(!books.cut_unanswered, "{books:?}");
}

/// A consumer cut off from a message it sits on: the producer's stop finds it in its wait,
/// not taking, with messages in the ring; it answers with what it took, and nothing after.
#[test]
fn a_consumer_waiting_while_messages_wait_answers_with_what_it_took() {
    let dir = common::dir();
    let path = common::link(&dir, "answer");
    let mut producer = Producer::create(&path, 8, 64, T).unwrap();
    let p = path.clone();
    let (took, go) = std::sync::mpsc::channel::<()>();
    let (ready, resume) = std::sync::mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        let mut consumer = Consumer::open(&p, T, &never).unwrap();
        let first = consumer.next(None, &never);
        assert!(matches!(first, Next::Message(_)), "{first:?}");
        took.send(()).unwrap();
        resume.recv().unwrap();
        let mut more = 0;
        let end = loop {
            match consumer.next(None, &never) {
                Next::Message(_) => more += 1,
                other => break other,
            }
        };
        (more, end, consumer.books())
    });
    assert!(producer.wait_for_consumer(&never));
    for seq in 0..5 {
        assert_eq!(producer.send(seq, 0, b"x", &never).unwrap(), Sent::Published);
    }
    go.recv().unwrap();
    // The consumer resumes during the stop: whether it takes more in the grace or meets the
    // cut first, it answers, and the books agree.
    let stopping = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        ready.send(()).unwrap();
    });
    let books = producer.finish(false, &|| true);
    stopping.join().unwrap();
    let (more, end, taken) = reader.join().unwrap();
    assert_eq!(taken.received, 1 + more);
    assert_eq!(
        taken.received + books.left + books.lost,
        books.written,
        "{books:?} {taken:?}"
    );
    assert!(matches!(end, Next::Ended(_)), "{end:?}");
}

/// A consumer that never looks again after the producer's stop (frozen) does not answer the
/// cut: the producer does not wait for it past a bound, books from its last count, and says
/// that the cut went unanswered.
#[test]
fn a_consumer_that_never_answers_the_cut_leaves_books_settled_without_it() {
    let dir = common::dir();
    let (books, mut consumer) = stopped_after_one_of_four_taken(&dir, "frozen");
    assert_eq!(books.consumer, Some(ConsumerEnd::Stopped));
    assert!(books.cut_unanswered, "{books:?}");
    assert_eq!((books.written, books.left, books.lost), (4, 3, 0));
    // When it looks again, it finds the cut and takes nothing more.
    assert!(matches!(consumer.next(None, &never), Next::Ended(ProducerEnd::Stopped)));
    assert_eq!(consumer.books().received, 1);
}

#[test]
fn an_existing_file_that_is_not_a_link_is_refused_and_left_intact() {
    let dir = common::dir();
    let path = common::link(&dir, "foreign");
    std::fs::write(&path, b"someone else's data").unwrap();
    let err = Producer::create(&path, 4, 64, T).err().expect("refused");
    let text = err.to_string();
    assert!(
        text.contains(&path.display().to_string()) && text.contains("not a link file"),
        "{text}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"someone else's data");
    assert!(smx_shm::check_free(&path).is_err());
}

#[test]
fn a_live_link_is_refused_and_a_stale_one_of_a_dead_process_replaced() {
    let dir = common::dir();
    let path = common::link(&dir, "stale");
    let live = Producer::create(&path, 2, 64, T).unwrap();
    let err = Producer::create(&path, 2, 64, T).err().expect("refused");
    assert!(err.to_string().contains("alive"), "{err}");
    // A link file whose creator died: a copy of a live one with a dead process's pid.
    let mut bytes = std::fs::read(&path).unwrap();
    drop(live);
    bytes[32..36].copy_from_slice(&common::dead_pid().to_ne_bytes());
    std::fs::write(&path, &bytes).unwrap();
    smx_shm::check_free(&path).unwrap();
    let again = Producer::create(&path, 2, 64, T).unwrap();
    drop(again);
    assert!(!path.exists());
}

/// A link file left by a producer that was killed (here: a copy of a live one's file with a
/// dead process's pid) is not attached to: the consumer waits on, and attaches to the file
/// of the next producer, which replaces it.
#[test]
fn a_consumer_waits_past_the_file_of_a_dead_producer_for_the_new_one() {
    let dir = common::dir();
    let path = common::link(&dir, "restart");
    let live = Producer::create(&path, 2, 64, T).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    drop(live);
    bytes[32..36].copy_from_slice(&common::dead_pid().to_ne_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let err = Consumer::open(&path, Duration::from_millis(50), &never)
        .err()
        .expect("a dead producer's file is not attached to");
    assert!(
        matches!(err, ShmError::NoPeer { .. }) && err.to_string().contains("dead"),
        "{err}"
    );
    let p = path.clone();
    let reader = std::thread::spawn(move || {
        let mut consumer = Consumer::open(&p, T, &never).unwrap();
        match consumer.next(None, &never) {
            Next::Message(m) => m.seq,
            other => panic!("{other:?}"),
        }
    });
    let mut producer = Producer::create(&path, 2, 64, T).unwrap();
    assert!(producer.wait_for_consumer(&never));
    assert_eq!(producer.send(7, 0, b"x", &never).unwrap(), Sent::Published);
    assert_eq!(reader.join().unwrap(), 7);
}

/// A stale link file that this process may not remove (another user's, in a sticky directory
/// such as /dev/shm) is refused with the reason, naming the path, and left as it is.
#[test]
fn a_stale_link_file_that_cannot_be_removed_is_refused_with_the_reason() {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::dir();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let path = shared.join("theirs");
    let live = Producer::create(&path, 2, 64, T).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    drop(live);
    bytes[32..36].copy_from_slice(&common::dead_pid().to_ne_bytes());
    std::fs::write(&path, &bytes).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let p = path.clone();
    let err = std::thread::spawn(move || {
        // Another user, on this thread alone: root's file-system rights go with its fs uid.
        // Any other user cannot remove files from a directory it may not write.
        if unsafe { libc::geteuid() } == 0 {
            unsafe { libc::setfsuid(65534) };
        } else {
            let dir = p.parent().unwrap();
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        Producer::create(&p, 2, 64, T).err().expect("refused")
    })
    .join()
    .unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let text = err.to_string();
    assert!(
        text.contains(&path.display().to_string()) && text.contains("cannot be removed") && text.contains("dead"),
        "{text}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_consumer_without_producer_gives_up_naming_the_path() {
    let dir = common::dir();
    let path = common::link(&dir, "nobody");
    let err = Consumer::open(&path, Duration::from_millis(50), &never)
        .err()
        .expect("no producer");
    assert!(
        err.to_string().contains("nobody") && err.to_string().contains("timeout"),
        "{err}"
    );
}

#[test]
fn one_consumer_per_link() {
    let dir = common::dir();
    let path = common::link(&dir, "two");
    let _producer = Producer::create(&path, 2, 64, T).unwrap();
    let _first = Consumer::open(&path, T, &never).unwrap();
    let err = Consumer::open(&path, T, &never).err().expect("second refused");
    assert!(matches!(err, ShmError::Taken { .. }), "{err}");
}

/// Copied and in-place messages interleaved, the in-place ones dropped late on another thread
/// while copies go on: no slot is written again while a message still reads it, whichever
/// thread frees it and in whichever order.
#[test]
fn slots_held_in_place_are_never_overwritten_while_copies_pass_them() {
    let dir = common::dir();
    let path = common::link(&dir, "mixed");
    let count = 4_000u64;
    let len_of = |seq: u64| if seq.is_multiple_of(3) { 5_000 } else { 8 };
    let producer = Producer::create(&path, 8, 8192, T).unwrap();
    let mut consumer = Consumer::open(&path, T, &never).unwrap();
    let writer = std::thread::spawn(move || {
        let mut producer = producer;
        for seq in 0..count {
            assert_eq!(
                producer.send(seq, 0, &payload(seq, len_of(seq)), &never).unwrap(),
                Sent::Published
            );
        }
        producer.finish(false, &never)
    });
    let (held_tx, held_rx) = std::sync::mpsc::sync_channel::<smx_box::Message>(4);
    let dropper = std::thread::spawn(move || {
        let mut checked = 0u64;
        for (k, msg) in held_rx.into_iter().enumerate() {
            if k.is_multiple_of(2) {
                std::thread::sleep(Duration::from_micros(200));
            }
            check(msg.seq, msg.payload(), len_of(msg.seq));
            checked += 1;
        }
        checked
    });
    let mut next_seq = 0;
    loop {
        match consumer.next(None, &never) {
            Next::Message(msg) => {
                assert_eq!(msg.seq, next_seq);
                next_seq += 1;
                if msg.payload().len() > 4096 {
                    held_tx.send(msg).unwrap();
                } else {
                    check(msg.seq, msg.payload(), len_of(msg.seq));
                }
            }
            Next::Ended(ProducerEnd::Ended) => break,
            other => panic!("{other:?}"),
        }
    }
    drop(held_tx);
    assert_eq!(next_seq, count);
    assert_eq!(dropper.join().unwrap(), count.div_ceil(3));
    let books = writer.join().unwrap();
    assert_eq!((books.written, books.lost, books.left), (count, 0, 0));
    let taken = consumer.books();
    assert_eq!(
        (taken.copied, taken.in_place),
        (count - count.div_ceil(3), count.div_ceil(3))
    );
}

/// `take_small` lends each copied payload where it lies, in order, with its sequence number
/// and creation time, and frees its slot; it leaves a payload read in place to `next`, and
/// copies passing a held slot never free it early.
#[test]
fn small_payloads_are_lent_in_their_slots_and_large_ones_left_to_next() {
    let dir = common::dir();
    let path = common::link(&dir, "lent");
    let count = 3_000u64;
    let len_of = |seq: u64| match seq % 4 {
        0 => 5_000,
        1 => 8,
        2 => 24,
        _ => 4_096,
    };
    let producer = Producer::create(&path, 8, 8192, T).unwrap();
    let mut consumer = Consumer::open(&path, T, &never).unwrap();
    let writer = std::thread::spawn(move || {
        let mut producer = producer;
        for seq in 0..count {
            let sent = producer.send(seq, 1_000 + seq, &payload(seq, len_of(seq)), &never);
            assert_eq!(sent.unwrap(), Sent::Published);
        }
        producer.finish(false, &never)
    });
    let (mut next_seq, mut lent, mut in_place, mut held) = (0, 0u64, 0u64, None);
    loop {
        let small = consumer.take_small(|seq, sent_ns, bytes| {
            check(seq, bytes, len_of(seq));
            (seq, sent_ns)
        });
        if let Some((seq, sent_ns)) = small {
            assert_eq!((seq, sent_ns), (next_seq, 1_000 + next_seq));
            next_seq += 1;
            lent += 1;
            continue;
        }
        match consumer.next(None, &never) {
            // A payload read in place, or a small one that was published only while `next`
            // waited.
            Next::Message(msg) => {
                assert_eq!(msg.seq, next_seq, "only what take_small left");
                check(msg.seq, msg.payload(), len_of(msg.seq));
                next_seq += 1;
                if msg.len() > 4096 {
                    in_place += 1;
                    // Held until the next one comes: the copies between pass its slot.
                    held = Some(msg);
                }
            }
            Next::Ended(ProducerEnd::Ended) => break,
            other => panic!("{other:?}"),
        }
    }
    drop(held);
    assert_eq!(next_seq, count);
    let books = writer.join().unwrap();
    assert_eq!((books.written, books.lost, books.left), (count, 0, 0));
    let taken = consumer.books();
    assert!(lent > 0 && lent <= taken.copied, "{lent} {taken:?}");
    // Every payload read in place went through `next`: none was lent.
    assert_eq!(
        (taken.received, taken.in_place, in_place),
        (count, count / 4, count / 4)
    );
    assert_eq!(taken.copied + taken.in_place, taken.received);
}

/// The producer's side can wait for its consumer before its nets start: it learns when one
/// attached, and gives up at its timeout or a stop.
#[test]
fn the_producer_waits_for_its_consumer_to_attach_until_timeout_or_stop() {
    let dir = common::dir();
    let path = common::link(&dir, "attach");
    let producer = Producer::create(&path, 4, 64, T).unwrap();
    assert!(!producer.wait_for_consumer(&|| true), "a stop ends the wait");
    let opener = {
        let path = path.clone();
        std::thread::spawn(move || Consumer::open(&path, T, &never).unwrap())
    };
    assert!(producer.wait_for_consumer(&never));
    drop(opener.join().unwrap());
    let alone = common::link(&dir, "alone");
    let producer = Producer::create(&alone, 4, 64, Duration::from_millis(30)).unwrap();
    assert!(!producer.wait_for_consumer(&never), "none came within the timeout");
}

/// Each slot's stamp tells its laps apart: rings of 1 to 5 slots (lengths that do not divide
/// the count, and one slot reused for every message) carry many laps in order, none twice.
#[test]
fn rings_of_every_small_length_carry_many_laps_in_order() {
    let dir = common::dir();
    for capacity in 1..=5u64 {
        let path = common::link(&dir, &format!("laps{capacity}"));
        let count = 3_001u64;
        let mut producer = Producer::create(&path, capacity, 64, T).unwrap();
        let p = path.clone();
        let reader = std::thread::spawn(move || {
            let mut consumer = Consumer::open(&p, T, &never).unwrap();
            let mut seqs = Vec::new();
            loop {
                // Both ways of taking: a payload lent where it lies, and a message made of it.
                if let Some(seq) = consumer.take_small(|seq, _, bytes| {
                    check(seq, bytes, 8);
                    seq
                }) {
                    seqs.push(seq);
                    continue;
                }
                match consumer.next(None, &never) {
                    Next::Message(m) => {
                        check(m.seq, m.payload(), 8);
                        seqs.push(m.seq);
                    }
                    Next::Ended(end) => return (seqs, end),
                    other => panic!("{other:?}"),
                }
            }
        });
        for seq in 0..count {
            assert_eq!(
                producer.send(seq, 0, &payload(seq, 8), &never).unwrap(),
                Sent::Published
            );
        }
        let books = producer.finish(false, &never);
        let (seqs, end) = reader.join().unwrap();
        assert_eq!(end, ProducerEnd::Ended, "{capacity} slots");
        assert_eq!(seqs, (0..count).collect::<Vec<_>>(), "{capacity} slots");
        assert_eq!(
            (books.written, books.lost, books.left),
            (count, 0, 0),
            "{capacity} slots"
        );
    }
}
