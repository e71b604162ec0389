//! Raw-socket tests of the sender and receiver: delivery, loss accounting, end of stream.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use super::batch::BatchWriter;
use super::endpoint::Endpoint;
use super::eos::{CONTROL_TOPIC, EndOfStream, EndReason, TopicTotal};
use super::receiver::{Event, Receiver};
use super::sender::{Sender, Sent};
use super::settings::{Common, Pattern, SinkSettings, SourceSettings};
use super::wire::{self, Header, Kind};

fn common(pattern: Pattern, endpoint: &str, bind: bool, hwm: i32, timeout: Duration) -> Common {
    Common {
        instance: if bind { "Snk".into() } else { "Src".into() },
        pattern,
        endpoint: Endpoint::parse(endpoint, bind).unwrap(),
        bind,
        hwm,
        timeout,
        heartbeat: Duration::ZERO,
        watch: None,
        linger: Duration::from_secs(5),
        max_message: 1 << 20,
        curve: None,
    }
}

fn sink(pattern: Pattern, endpoint: &str, hwm: i32, sync: bool, batch: usize) -> Sender {
    Sender::open(sink_settings(
        common(pattern, endpoint, true, hwm, Duration::from_secs(20)),
        sync,
        batch,
    ))
    .unwrap()
}

fn sink_settings(common: Common, sync: bool, batch: usize) -> SinkSettings {
    SinkSettings {
        common,
        topic: Vec::new(),
        sync,
        subscribers: 1,
        batch,
        hold: Duration::ZERO,
        receiver_books: false,
    }
}

fn source(pattern: Pattern, endpoint: &str, hwm: i32, timeout: Duration) -> Receiver {
    Receiver::open(SourceSettings {
        common: common(pattern, endpoint, false, hwm, timeout),
        subscribe: Vec::new(),
        senders: 1,
        comparable_clock: true,
    })
    .unwrap()
}

/// Receives until the stream ends; returns the sequence numbers and the end reason.
fn drain(receiver: &mut Receiver) -> (Vec<u64>, EndReason) {
    drain_pausing(receiver, u64::MAX)
}

/// Like [`drain`], pausing 1 ms every `every` messages: a consumer slower than the sender, so
/// that messages are still queued when the sender closes.
fn drain_pausing(receiver: &mut Receiver, every: u64) -> (Vec<u64>, EndReason) {
    let mut seqs = Vec::new();
    loop {
        match receiver.next(Duration::from_millis(50)).unwrap() {
            Event::Data { seq, .. } => {
                seqs.push(seq);
                if (seqs.len() as u64).is_multiple_of(every) {
                    thread::sleep(Duration::from_millis(1));
                }
            }
            Event::Idle => {}
            Event::Ended(reason) => return (seqs, reason),
        }
    }
}

fn pipeline_delivers_everything(endpoint: &str, batch: usize) {
    const N: u64 = 5000;
    let mut tx = sink(Pattern::Pipeline, endpoint, 100, false, batch);
    let bound = tx.endpoint().to_string();
    let mut rx = source(Pattern::Pipeline, &bound, 100, Duration::from_secs(20));
    let sender = thread::spawn(move || {
        for i in 0..N {
            assert_eq!(tx.send(None, &i.to_le_bytes(), &|| false).unwrap(), Sent::Accepted);
        }
        tx.finish();
        tx.stats.clone()
    });
    let (seqs, end) = drain_pausing(&mut rx, 100);
    let stats = sender.join().unwrap();
    assert_eq!(end, EndReason::Marker);
    assert_eq!(seqs, (0..N).collect::<Vec<_>>(), "every message, in order, no gaps");
    assert!(!stats.linger_expired, "the receiver confirmed the end by disconnecting");
    assert_eq!((stats.sent, stats.dropped_hwm, stats.dropped_timeout), (N, 0, 0));
    // The sender is never flushed by the loop: every frame but the last is full.
    assert_eq!(
        stats.frames,
        N.div_ceil(batch as u64),
        "frames of up to {batch} messages"
    );
    let t = rx.totals();
    assert_eq!(
        (t.sent, t.received, t.lost, t.duplicates, t.inconsistent),
        (N, N, 0, 0, 0)
    );
}

#[test]
fn pipeline_over_tcp_delivers_every_message() {
    pipeline_delivers_everything("tcp://127.0.0.1:*", 1);
}

#[test]
fn pipeline_over_tcp_delivers_every_message_in_batches() {
    pipeline_delivers_everything("tcp://127.0.0.1:*", 64);
}

/// The sender closes while messages are still queued for a slow receiver; over ipc, libzmq
/// then discards them whatever the linger (zeromq/libzmq#4660) unless the sender waits for the
/// receiver's disconnect, as it does.
#[test]
fn pipeline_over_ipc_delivers_every_message_and_removes_the_socket_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("private").join("feed");
    pipeline_delivers_everything(&format!("ipc://{}", path.display()), 64);
    assert!(!path.exists(), "socket file removed");
    assert!(
        !path.parent().unwrap().exists(),
        "the directory the sink created is removed"
    );
}

#[test]
fn pipeline_over_inproc_delivers_every_message() {
    pipeline_delivers_everything("inproc://smx-test-pipeline", 1);
}

#[test]
fn pubsub_hwm_drops_are_counted_at_the_sender_and_the_books_balance() {
    pubsub_hwm_drops_balance(1);
}

/// A refused batch drops all its messages, and they are booked as such on both sides.
#[test]
fn pubsub_hwm_drops_of_batches_balance_the_books() {
    pubsub_hwm_drops_balance(16);
}

fn pubsub_hwm_drops_balance(batch: usize) {
    const N: u64 = 20_000;
    let mut tx = sink(Pattern::PubSub, "tcp://127.0.0.1:*", 10, true, batch);
    let bound = tx.endpoint().to_string();
    let mut rx = source(Pattern::PubSub, &bound, 10, Duration::from_secs(20));
    let (done_tx, done_rx) = mpsc::channel();
    let sender = thread::spawn(move || {
        tx.wait_for_subscribers(&|| false).unwrap();
        // 1 KiB payloads: far more than the queues and socket buffers hold while the
        // consumer does not read.
        let payload = vec![7u8; 1024];
        for _ in 0..N {
            tx.send(None, &payload, &|| false).unwrap();
        }
        done_tx.send(()).unwrap();
        tx.finish();
        tx.stats.clone()
    });
    done_rx.recv().unwrap(); // a consumer slower than the producer: it reads only now
    let (seqs, end) = drain(&mut rx);
    let stats = sender.join().unwrap();
    assert_eq!(end, EndReason::Marker);
    assert!(stats.dropped_hwm > 0, "a small hwm and a slow consumer lose messages");
    assert_eq!(stats.sent, N);
    // N is a multiple of `batch` and the loop never flushes: every frame holds `batch`.
    assert_eq!(
        stats.dropped_hwm % batch as u64,
        0,
        "a refused frame drops all its messages"
    );
    assert_eq!(stats.frames * batch as u64, N - stats.dropped_hwm);
    let t = rx.totals();
    assert_eq!(t.sent, stats.sent, "the marker carries the sender's total");
    assert_eq!(t.sent, t.received + t.lost, "books balance");
    assert_eq!(t.sender_dropped, stats.dropped_hwm);
    assert_eq!(
        (t.lost, t.lost_in_transit),
        (t.sender_dropped, 0),
        "every loss explained"
    );
    assert_eq!(t.lost_before_first, 0, "sync removed the slow-joiner loss");
    assert_eq!(seqs.len() as u64, t.received);
}

#[test]
fn slow_joiner_loss_is_reported_as_lost_before_the_first_message() {
    let mut tx = sink(Pattern::PubSub, "tcp://127.0.0.1:*", 1000, true, 1);
    let bound = tx.endpoint().to_string();
    for i in 0u64..100 {
        tx.send(None, &i.to_le_bytes(), &|| false).unwrap(); // nobody subscribed yet
    }
    let mut rx = source(Pattern::PubSub, &bound, 1000, Duration::from_secs(20));
    tx.wait_for_subscribers(&|| false).unwrap();
    for i in 100u64..150 {
        tx.send(None, &i.to_le_bytes(), &|| false).unwrap();
    }
    tx.finish();
    let (seqs, end) = drain(&mut rx);
    assert_eq!(end, EndReason::Marker);
    assert_eq!(seqs, (100..150).collect::<Vec<_>>());
    let t = rx.totals();
    assert_eq!((t.sent, t.received, t.lost, t.lost_before_first), (150, 50, 100, 100));
}

#[test]
fn topic_filters_do_not_look_like_loss() {
    let mut tx = sink(Pattern::PubSub, "tcp://127.0.0.1:*", 1000, true, 8);
    let bound = tx.endpoint().to_string();
    let mut rx = Receiver::open(SourceSettings {
        common: common(Pattern::PubSub, &bound, false, 1000, Duration::from_secs(20)),
        subscribe: b"a".to_vec(),
        senders: 1,
        comparable_clock: true,
    })
    .unwrap();
    tx.wait_for_subscribers(&|| false).unwrap();
    for i in 0u64..300 {
        let topic: &[u8] = if i % 3 == 0 { b"a/x" } else { b"b" };
        tx.send(Some(topic), &i.to_le_bytes(), &|| false).unwrap();
    }
    tx.finish();
    let (seqs, end) = drain(&mut rx);
    assert_eq!(end, EndReason::Marker);
    assert_eq!(seqs, (0..100).collect::<Vec<_>>(), "per-topic numbering");
    let t = rx.totals();
    assert_eq!((t.sent, t.received, t.lost), (100, 100, 0));
}

/// A raw PUSH socket speaking the wire format, standing in for a sender that dies.
fn raw_push(endpoint: &str) -> (zmq::Context, zmq::Socket, String) {
    let ctx = zmq::Context::new();
    let push = ctx.socket(zmq::PUSH).unwrap();
    push.set_linger(5000).unwrap();
    push.bind(endpoint).unwrap();
    let bound = push.get_last_endpoint().unwrap().unwrap();
    (ctx, push, bound)
}

fn raw_send(push: &zmq::Socket, kind: Kind, seq: u64, rest: &[u8]) {
    let mut body = Vec::new();
    let header = Header {
        kind,
        sender: 42,
        seq,
        sent_unix_ns: wire::unix_now_ns(),
        msg_seq: seq,
    };
    wire::encode_body(&header, rest, &mut body);
    let topic: &[u8] = if kind == Kind::Data { b"" } else { CONTROL_TOPIC };
    push.send_multipart([topic, &body[..]], 0).unwrap();
}

#[test]
fn a_killed_sender_ends_the_source_by_timeout_with_the_known_loss() {
    let (ctx, push, bound) = raw_push("tcp://127.0.0.1:*");
    let mut rx = source(Pattern::Pipeline, &bound, 1000, Duration::from_millis(300));
    for seq in (0..100).filter(|s| *s != 50) {
        raw_send(&push, Kind::Data, seq, b"x");
    }
    drop(push);
    drop(ctx); // the sender is gone without an end-of-stream marker
    let (seqs, end) = drain(&mut rx);
    assert_eq!(end, EndReason::Timeout);
    assert_eq!(seqs.len(), 99);
    let t = rx.totals();
    assert_eq!((t.received, t.lost, t.unannounced), (99, 1, 1));
}

/// With heartbeats on, a sender whose connection is cut ends the source at once as `peer
/// lost`, long before its idle timeout, with the loss it can know.
#[test]
fn with_heartbeats_a_killed_sender_ends_the_source_as_peer_lost() {
    let (ctx, push, bound) = raw_push("tcp://127.0.0.1:*");
    let mut settings = SourceSettings {
        common: common(Pattern::Pipeline, &bound, false, 1000, Duration::from_secs(20)),
        subscribe: Vec::new(),
        senders: 1,
        comparable_clock: true,
    };
    settings.common.heartbeat = Duration::from_millis(50);
    let mut rx = Receiver::open(settings).unwrap();
    for seq in (0..100).filter(|s| *s != 50) {
        raw_send(&push, Kind::Data, seq, b"x");
    }
    let mut seqs = Vec::new();
    while seqs.len() < 99 {
        match rx.next(Duration::from_secs(5)).unwrap() {
            Event::Data { seq, .. } => seqs.push(seq),
            other => panic!("{other:?} after {} messages", seqs.len()),
        }
    }
    push.set_linger(0).unwrap();
    drop(push);
    drop(ctx);
    let end = loop {
        match rx.next(Duration::from_secs(5)).unwrap() {
            Event::Ended(end) => break end,
            Event::Idle => continue,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(end, EndReason::PeerLost);
    let t = rx.totals();
    assert_eq!((t.received, t.lost, t.unannounced), (99, 1, 1));
}

/// A pipeline sink over tcp with heartbeats every 50 ms and the given `timeout`, a queue of one
/// message, and a raw receiver connected to it (one message of queue too) in its own context.
fn heartbeat_sink_and_receiver(timeout: Duration) -> (Sender, zmq::Context, zmq::Socket) {
    let mut common = common(Pattern::Pipeline, "tcp://127.0.0.1:*", true, 1, timeout);
    common.heartbeat = Duration::from_millis(50);
    let tx = Sender::open(sink_settings(common, false, 1)).unwrap();
    let ctx = zmq::Context::new();
    let pull = ctx.socket(zmq::PULL).unwrap();
    pull.set_rcvhwm(1).unwrap();
    pull.connect(tx.endpoint()).unwrap();
    (tx, ctx, pull)
}

/// With heartbeats on, a send blocked on a full queue gives up once its only receiver's
/// connection is cut, and books what it could not send.
#[test]
fn with_heartbeats_a_blocked_send_gives_up_when_the_receiver_is_gone() {
    let (mut tx, ctx, pull) = heartbeat_sink_and_receiver(Duration::from_secs(20));
    let stop = || false;
    let (done_tx, done_rx) = mpsc::channel();
    let closer = thread::spawn(move || {
        // Close the receiver once the sender is blocked: no message is ever taken.
        let _ = done_rx.recv_timeout(Duration::from_millis(500));
        pull.set_linger(0).unwrap();
        drop(pull);
        drop(ctx);
    });
    let payload = [7u8; 1024];
    let mut sent = 0;
    let outcome = loop {
        match tx.send(None, &payload, &stop).unwrap() {
            Sent::Accepted => sent += 1,
            other => break other,
        }
        assert!(sent < 1_000_000, "the queue never filled");
    };
    let _ = done_tx.send(());
    closer.join().unwrap();
    assert_eq!(outcome, Sent::GaveUp);
    assert!(tx.stats.peers_lost, "{:?}", tx.stats);
    assert_eq!(tx.stats.timeouts, 1);
    assert!(tx.stats.dropped_timeout >= 1);
}

/// With heartbeats on, the end-of-stream marker is not waited for once every receiver's
/// connection is cut: its host went away, the marker can never be taken, and the wait ends by
/// the heartbeats rather than after the whole `timeout` (a process in the middle of a line
/// whose host dropped off the network would otherwise wait until it is stopped).
#[test]
fn with_heartbeats_the_marker_is_not_waited_for_once_the_receiver_is_gone() {
    let (mut tx, ctx, pull) = heartbeat_sink_and_receiver(Duration::from_secs(30));
    // One message across, so the receiver's connection is known to the sender.
    assert_eq!(tx.send(None, b"x", &|| false).unwrap(), Sent::Accepted);
    pull.set_rcvtimeo(10_000).unwrap();
    pull.recv_multipart(0).unwrap();
    pull.set_linger(0).unwrap();
    drop(pull);
    drop(ctx);
    // The end comes once the sender knows the connection is gone: on a busy machine the
    // marker could otherwise be queued for it before the news arrived.
    let told = Instant::now() + Duration::from_secs(20);
    while tx.peers() > 0 {
        assert!(Instant::now() < told, "the sender never learned the receiver was gone");
        thread::sleep(Duration::from_millis(5));
    }
    tx.finish();
    let s = &tx.stats;
    assert!(s.peers_lost, "{s:?}");
    // libzmq reports the disconnect before it detaches the connection's pipe, so on a busy
    // machine one marker can still go into the pipe being torn down; the others must not be
    // waited for.
    assert!(s.markers < crate::eos::REPEATS, "every marker was queued: {s:?}");
    assert_eq!(s.timeouts, 0, "ended by the heartbeats, not the timeout: {s:?}");
}

#[test]
fn an_absent_sender_ends_the_source_by_timeout() {
    let port = crate::loopback::free_loopback_port().unwrap();
    let mut rx = source(
        Pattern::Pipeline,
        &format!("tcp://127.0.0.1:{port}"),
        1000,
        Duration::from_millis(200),
    );
    let (seqs, end) = drain(&mut rx);
    assert_eq!((seqs.len(), end), (0, EndReason::Timeout));
}

#[test]
fn corrupt_frames_are_counted_and_skipped() {
    let (_ctx, push, bound) = raw_push("tcp://127.0.0.1:*");
    let mut rx = source(Pattern::Pipeline, &bound, 1000, Duration::from_secs(20));
    raw_send(&push, Kind::Data, 0, b"ok");
    push.send(&b"one frame only"[..], 0).unwrap();
    push.send_multipart([&b""[..], b"short"], 0).unwrap();
    push.send_multipart([&b""[..], &[9u8; 30][..]], 0).unwrap(); // unknown version
    push.send_multipart([&b""[..], b"a", b"b"], 0).unwrap(); // three frames
    raw_send(&push, Kind::EndOfStream, 0, b"garbage marker");
    raw_send(&push, Kind::Data, 1, b"ok");
    let eos = EndOfStream {
        topics: vec![TopicTotal {
            topic: Vec::new(),
            sent: 2,
            dropped: 0,
        }],
    };
    raw_send(&push, Kind::EndOfStream, 0, &eos.encode());
    let (seqs, end) = drain(&mut rx);
    assert_eq!(end, EndReason::Marker);
    assert_eq!(seqs, vec![0, 1]);
    assert_eq!(rx.corrupt, 5);
    let t = rx.totals();
    assert_eq!((t.sent, t.received, t.lost), (2, 2, 0));
}

#[test]
fn a_port_in_use_is_a_clear_error() {
    let mut first = common(
        Pattern::Pipeline,
        "tcp://127.0.0.1:*",
        true,
        10,
        Duration::from_millis(100),
    );
    first.linger = Duration::ZERO;
    let tx = Sender::open(sink_settings(first, false, 64)).unwrap();
    let err = Sender::open(sink_settings(
        common(Pattern::Pipeline, tx.endpoint(), true, 10, Duration::from_secs(1)),
        false,
        64,
    ))
    .err()
    .unwrap();
    assert!(err.contains("address in use"), "{err}");
}

#[test]
fn a_pipeline_sink_without_receiver_gives_up_after_its_timeout() {
    let mut tx = unheard_sink(1);
    assert_eq!(tx.send(None, b"x", &|| false).unwrap(), Sent::GaveUp);
    assert_eq!((tx.stats.sent, tx.stats.dropped_timeout, tx.stats.frames), (1, 1, 0));
}

/// Giving up on a batch counts all its messages, and the message whose arrival flushed it.
#[test]
fn a_batch_nobody_takes_is_given_up_whole() {
    let mut tx = unheard_sink(4);
    for _ in 0..3 {
        assert_eq!(
            tx.send(None, b"x", &|| false).unwrap(),
            Sent::Accepted,
            "only collected"
        );
    }
    assert_eq!(tx.send(Some(b"other"), b"y", &|| false).unwrap(), Sent::GaveUp);
    assert_eq!((tx.stats.sent, tx.stats.dropped_timeout, tx.stats.frames), (4, 4, 0));
    assert_eq!(tx.flush(&|| false).unwrap(), Sent::Accepted, "nothing left pending");
}

/// Once a send gave up on a receiver, nothing waits for one again: a later send and the abort
/// marker get one try each, and the marker is booked as not delivered without a second wait.
#[test]
fn after_giving_up_on_a_receiver_the_marker_is_not_waited_for() {
    let mut tx = unheard_sink(1);
    assert!(!tx.gave_up());
    assert_eq!(tx.send(None, b"x", &|| false).unwrap(), Sent::GaveUp);
    assert!(tx.gave_up());
    assert_eq!(tx.send(None, b"y", &|| false).unwrap(), Sent::GaveUp);
    tx.abort();
    let s = &tx.stats;
    assert_eq!((s.sent, s.dropped_timeout, s.markers), (2, 2, 0), "{s:?}");
    assert_eq!((s.timeouts, s.marker_unwaited, s.aborted), (1, true, true), "{s:?}");
}

/// A stream that ends before any send waits its one `timeout` for the marker, and books it.
#[test]
fn a_marker_nobody_takes_is_waited_for_once() {
    let mut tx = unheard_sink(1);
    tx.finish();
    let s = &tx.stats;
    assert_eq!((s.markers, s.timeouts, s.marker_unwaited), (0, 1, false), "{s:?}");
}

/// A sink stopped before it sent anything, with no receiver ever come (its receivers' process
/// was refused before it started), has nothing to tell and nothing to lose: its missing marker
/// is no finding. One that sent a message before the stop does have something to lose.
#[test]
fn a_sink_stopped_before_it_sent_anything_to_anyone_has_nothing_to_tell() {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut tx = unheard_sink(1);
    tx.watch_stop(stop.clone());
    tx.finish();
    let s = &tx.stats;
    assert_eq!(
        (s.sent, s.markers, s.stopped, s.nobody_to_tell),
        (0, 0, true, true),
        "{s:?}"
    );

    let mut tx = unheard_sink(1);
    assert_eq!(tx.send(None, b"x", &|| false).unwrap(), Sent::GaveUp);
    tx.watch_stop(stop);
    tx.finish();
    let s = &tx.stats;
    assert_eq!((s.sent, s.stopped, s.nobody_to_tell), (1, true, false), "{s:?}");
}

/// `sync` without subscribers gives up after its `timeout`, once: asked again (as a sink's
/// cleanup would), it reports the same shortfall without a second wait.
#[test]
fn sync_without_subscribers_gives_up_once() {
    let port = crate::loopback::free_loopback_port().unwrap();
    let mut settings = sink_settings(
        common(
            Pattern::PubSub,
            &format!("tcp://127.0.0.1:{port}"),
            true,
            10,
            Duration::from_millis(200),
        ),
        true,
        1,
    );
    settings.common.linger = Duration::ZERO;
    let mut tx = Sender::open(settings).unwrap();
    let err = tx.wait_for_subscribers(&|| false).unwrap_err();
    assert!(err.contains("sync: 0 of 1 subscriber(s) joined"), "{err}");
    assert!(tx.gave_up());
    assert!(tx.wait_for_subscribers(&|| false).is_err());
    assert_eq!(tx.stats.timeouts, 1);
}

/// A pipeline sink on a free port that no receiver ever connects to.
fn unheard_sink(batch: usize) -> Sender {
    let port = crate::loopback::free_loopback_port().unwrap();
    let mut settings = sink_settings(
        common(
            Pattern::Pipeline,
            &format!("tcp://127.0.0.1:{port}"),
            true,
            10,
            Duration::from_millis(200),
        ),
        false,
        batch,
    );
    settings.common.linger = Duration::ZERO;
    Sender::open(settings).unwrap()
}

#[test]
fn a_source_ends_after_the_markers_of_all_its_senders() {
    let mut rx = Receiver::open(SourceSettings {
        common: common(
            Pattern::Pipeline,
            "tcp://127.0.0.1:*",
            true,
            1000,
            Duration::from_secs(20),
        ),
        subscribe: Vec::new(),
        senders: 2,
        comparable_clock: true,
    })
    .unwrap();
    let bound = rx.endpoint().to_string();
    let senders: Vec<_> = [300u64, 500]
        .into_iter()
        .map(|n| {
            let mut tx = Sender::open(sink_settings(
                common(Pattern::Pipeline, &bound, false, 1000, Duration::from_secs(20)),
                false,
                32,
            ))
            .unwrap();
            thread::spawn(move || {
                for i in 0..n {
                    tx.send(None, &i.to_le_bytes(), &|| false).unwrap();
                }
                tx.finish();
            })
        })
        .collect();
    let (seqs, end) = drain(&mut rx);
    for s in senders {
        s.join().unwrap();
    }
    assert_eq!(end, EndReason::Marker);
    assert_eq!(seqs.len(), 800);
    let t = rx.totals();
    assert_eq!((t.sent, t.received, t.lost, t.duplicates), (800, 800, 0, 0));
}

/// A batch frame followed by single frames, a corrupt batch and another single: every
/// message is booked with its own number, the corrupt batch as one corrupt message whose
/// numbers show as lost.
#[test]
fn a_batch_frame_is_handed_out_message_by_message_and_booked_exactly() {
    let (_ctx, push, bound) = raw_push("tcp://127.0.0.1:*");
    let mut rx = source(Pattern::Pipeline, &bound, 1000, Duration::from_secs(20));
    let mut batch = BatchWriter::new();
    for (seq, payload) in [&b"m0"[..], b"m1", b"", b"m3", b"m4"].into_iter().enumerate() {
        batch.push(seq as u64, wire::unix_now_ns(), payload);
    }
    push.send_multipart([&b""[..], batch.seal(42, 0)], 0).unwrap();
    raw_send(&push, Kind::Data, 5, b"m5");
    raw_send(&push, Kind::Data, 6, b"m6");
    batch.clear();
    for (seq, payload) in (7..).zip([&b"m7"[..], b"m8", b"m9"]) {
        batch.push(seq, wire::unix_now_ns(), payload);
    }
    let mut padded = batch.seal(42, 7).to_vec();
    padded.push(0); // one byte too many: the whole batch is corrupt
    push.send_multipart([&b""[..], &padded[..]], 0).unwrap();
    raw_send(&push, Kind::Data, 10, b"m10");
    let eos = EndOfStream {
        topics: vec![TopicTotal {
            topic: Vec::new(),
            sent: 11,
            dropped: 0,
        }],
    };
    raw_send(&push, Kind::EndOfStream, 0, &eos.encode());
    let mut got = Vec::new();
    let end = loop {
        match rx.next(Duration::from_millis(50)).unwrap() {
            Event::Data { seq, payload, .. } => got.push((seq, payload.to_vec())),
            Event::Idle => {}
            Event::Ended(reason) => break reason,
        }
    };
    assert_eq!(end, EndReason::Marker);
    let expected: Vec<(u64, Vec<u8>)> = [0u64, 1, 2, 3, 4, 5, 6, 10]
        .into_iter()
        .map(|seq| {
            (
                seq,
                if seq == 2 {
                    Vec::new()
                } else {
                    format!("m{seq}").into_bytes()
                },
            )
        })
        .collect();
    assert_eq!(got, expected);
    assert_eq!(rx.corrupt, 1, "a bad batch is one corrupt message");
    assert!(rx.corrupt_examples[0].contains("batch"), "{:?}", rx.corrupt_examples);
    let t = rx.totals();
    assert_eq!((t.sent, t.received, t.lost, t.lost_in_transit), (11, 8, 3, 3));
    assert_eq!((t.duplicates, t.reordered, t.inconsistent), (0, 0, 0));
}

/// Runs of topics: a topic change flushes the pending batch, numbering stays per topic.
#[test]
fn mixed_topics_are_batched_per_run_and_numbered_per_topic() {
    let mut tx = sink(Pattern::Pipeline, "tcp://127.0.0.1:*", 1000, false, 4);
    let bound = tx.endpoint().to_string();
    let mut rx = source(Pattern::Pipeline, &bound, 1000, Duration::from_secs(20));
    let topics = b"aaabbaaaaaab";
    for (i, t) in topics.iter().enumerate() {
        assert_eq!(tx.send(Some(&[*t]), &[i as u8], &|| false).unwrap(), Sent::Accepted);
    }
    tx.finish();
    // Frames: aaa | bb | aaaa | aa | b.
    assert_eq!((tx.stats.sent, tx.stats.frames), (12, 5));
    let mut got = Vec::new();
    loop {
        match rx.next(Duration::from_millis(50)).unwrap() {
            Event::Data {
                topic, seq, payload, ..
            } => got.push((topic[0], seq, payload[0])),
            Event::Idle => {}
            Event::Ended(reason) => {
                assert_eq!(reason, EndReason::Marker);
                break;
            }
        }
    }
    let (mut a, mut b) = (0u64, 0u64);
    let expected: Vec<(u8, u64, u8)> = topics
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let counter = if t == b'a' { &mut a } else { &mut b };
            *counter += 1;
            (t, *counter - 1, i as u8)
        })
        .collect();
    assert_eq!(got, expected);
    let t = rx.totals();
    assert_eq!((t.sent, t.received, t.lost), (12, 12, 0));
}

/// Two receivers on one pipeline share the stream: each misses what the other took, and the
/// sender counts both, so that its row can say the stream was shared rather than lost.
#[test]
fn a_pipeline_shared_by_two_receivers_is_counted_by_the_sender() {
    const N: u64 = 2000;
    let mut tx = sink(Pattern::Pipeline, "tcp://127.0.0.1:*", 100, false, 1);
    let bound = tx.endpoint().to_string();
    let receivers: Vec<_> = (0..2)
        .map(|_| {
            let mut rx = source(Pattern::Pipeline, &bound, 100, Duration::from_secs(20));
            thread::spawn(move || {
                let (seqs, _) = drain(&mut rx);
                seqs.len() as u64
            })
        })
        .collect();
    // Both are connected before the first message: the sender counts the receivers it had at
    // once, and on a busy machine one could connect only after the other had taken the whole
    // stream and left.
    let joined = Instant::now() + Duration::from_secs(20);
    while tx.peers() < 2 {
        assert!(Instant::now() < joined, "the two receivers never connected");
        thread::sleep(Duration::from_millis(5));
    }
    for i in 0..N {
        assert_eq!(tx.send(None, &i.to_le_bytes(), &|| false).unwrap(), Sent::Accepted);
    }
    tx.finish();
    let received: u64 = receivers.into_iter().map(|r| r.join().unwrap()).sum();
    assert_eq!(received, N, "between them the receivers took every message");
    assert_eq!(tx.stats.receivers, 2);
}

/// A pair over loopback tcp with heartbeats every 50 ms on a watch connection of its own; the
/// receiver binds, as a link's does.
fn watched_pair(hwm: i32) -> (Sender, Receiver) {
    let port = crate::loopback::free_loopback_port().unwrap();
    let watch_port = crate::loopback::free_loopback_port().unwrap();
    let endpoint = format!("tcp://127.0.0.1:{port}");
    let watch = format!("tcp://127.0.0.1:{watch_port}");
    let with_watch = |mut common: Common, bind: bool| {
        common.heartbeat = Duration::from_millis(50);
        common.watch = Some(Endpoint::parse(&watch, bind).unwrap());
        common
    };
    let rx = Receiver::open(SourceSettings {
        common: with_watch(
            common(Pattern::Pipeline, &endpoint, true, hwm, Duration::from_secs(20)),
            true,
        ),
        subscribe: Vec::new(),
        senders: 1,
        comparable_clock: true,
    })
    .unwrap();
    let tx_common = with_watch(
        common(Pattern::Pipeline, &endpoint, false, hwm, Duration::from_secs(20)),
        false,
    );
    let tx = Sender::open(sink_settings(tx_common, false, 1)).unwrap();
    (tx, rx)
}

/// A receiver that takes nothing for many heartbeats holds its sender back, and that is all:
/// with the heartbeats on a watch connection, neither side takes the other for lost, and every
/// message arrives.
#[test]
fn a_receiver_that_pauses_for_many_heartbeats_is_not_taken_for_lost() {
    let (mut tx, mut rx) = watched_pair(4);
    let count = 2_000u64;
    let sender = thread::spawn(move || {
        let payload = [3u8; 4096];
        for _ in 0..count {
            assert_eq!(
                tx.send(None, &payload, &|| false).unwrap(),
                Sent::Accepted,
                "{:?}",
                tx.stats
            );
        }
        tx.finish();
        tx.stats.clone()
    });
    // Long enough for the link to fill and for twenty heartbeats to pass unanswered on it.
    thread::sleep(Duration::from_secs(1));
    let (seqs, end) = drain(&mut rx);
    let stats = sender.join().unwrap();
    assert_eq!(end, EndReason::Marker);
    assert_eq!(seqs.len() as u64, count);
    assert!(!stats.peers_lost && stats.dropped_timeout == 0, "{stats:?}");
}

/// A sender that has queued everything and ended leaves a backlog in the kernel's buffers that
/// a slower receiver still takes, however long that takes: with the heartbeats on a watch
/// connection, the sender's end is not taken for its loss while its messages keep arriving.
#[test]
fn a_receiver_behind_an_ended_sender_takes_the_whole_backlog() {
    let (mut tx, mut rx) = watched_pair(4);
    let count = 200_000u64;
    let sender = thread::spawn(move || {
        for i in 0..count {
            assert_eq!(tx.send(None, &i.to_le_bytes(), &|| false).unwrap(), Sent::Accepted);
        }
        tx.finish();
        tx.stats.clone()
    });
    // 1 ms every 500 messages: slower than the sender, so that most of the stream is still on
    // its way for many heartbeats after the sender ended.
    let (seqs, end) = drain_pausing(&mut rx, 500);
    let stats = sender.join().unwrap();
    assert_eq!(end, EndReason::Marker, "{} of {count} arrived", seqs.len());
    assert_eq!(seqs.len() as u64, count);
    assert!(!stats.peers_lost, "{stats:?}");
}

/// The common settings of one side of a link with heartbeats every 50 ms on a watch
/// connection at `watch` (the receiver binds, as a link's does), its data at `endpoint`.
fn watched_common(endpoint: &str, watch: &str, bind: bool) -> Common {
    let mut c = common(Pattern::Pipeline, endpoint, bind, 1, Duration::from_secs(20));
    c.heartbeat = Duration::from_millis(50);
    c.watch = Some(Endpoint::parse(watch, bind).unwrap());
    c
}

/// Waits until `watch` has completed a handshake with its peer: before that it has no pipe
/// to send into, and a word said then goes nowhere (a receiver says its word at its end, long
/// after its watch connected; a test that ends at once must wait for it).
fn until_shaken_hands(watch: &mut super::socket::BoxSocket) {
    let shaken = Instant::now() + Duration::from_secs(20);
    while {
        watch.poll_peers();
        watch.handshakes == 0
    } {
        assert!(Instant::now() < shaken, "the watch never completed its handshake");
        thread::sleep(Duration::from_millis(5));
    }
}

/// A receiver whose stream ended by the markers says so on the watch connection as it
/// closes, and the sender hears it after the connection is gone, under CURVE as a link
/// between hosts has it: a receiver that left after the first of the repeated markers is then
/// told from a host that stopped answering, which cuts the watch the same way.
#[test]
fn a_receiver_that_ended_by_the_markers_says_so_on_the_watch() {
    use super::curve::{Curve, generate};
    let port = crate::loopback::free_loopback_port().unwrap();
    let watch = format!("tcp://127.0.0.1:{port}");
    let (server, server_secret) = generate().unwrap();
    let (public, secret) = generate().unwrap();
    let side = |bind: bool| {
        let mut c = watched_common("tcp://127.0.0.1:1", &watch, bind);
        c.curve = Some(if bind {
            Curve::Server {
                secret: server_secret,
                clients: Vec::new(),
            }
        } else {
            Curve::Client { server, public, secret }
        });
        super::socket::BoxSocket::open_watch(&c).unwrap().unwrap()
    };
    let mut receiver = side(true);
    let mut sender = side(false);
    let connected = Instant::now() + Duration::from_secs(20);
    while sender.poll_peers() < 1 {
        assert!(Instant::now() < connected, "the watch never connected");
        thread::sleep(Duration::from_millis(5));
    }
    until_shaken_hands(&mut receiver);
    assert!(!sender.peer_said_ended(), "nothing was said yet");
    receiver.close_saying_ended();
    let gone = Instant::now() + Duration::from_secs(20);
    while !sender.peers_gone() {
        assert!(Instant::now() < gone, "the receiver's close was never seen");
        thread::sleep(Duration::from_millis(5));
    }
    assert!(sender.peer_said_ended(), "the word was lost with the connection");
}

/// A receiver that took the marker and said so on the watch may close the watch before its
/// data connection: the sender waiting for that close takes it as the end confirmed, not as a
/// host lost, although the watch stays silent for many heartbeats.
#[test]
fn a_sender_told_of_the_end_is_not_taken_in_by_the_watch_closing_first() {
    let ctx = zmq::Context::new();
    let pull = ctx.socket(zmq::PULL).unwrap();
    pull.bind("tcp://127.0.0.1:*").unwrap();
    pull.set_rcvtimeo(10_000).unwrap();
    let endpoint = pull.get_last_endpoint().unwrap().unwrap();
    let watch = format!("tcp://127.0.0.1:{}", crate::loopback::free_loopback_port().unwrap());
    let mut receiver_watch = super::socket::BoxSocket::open_watch(&watched_common(&endpoint, &watch, true))
        .unwrap()
        .unwrap();
    let mut tx = Sender::open(sink_settings(watched_common(&endpoint, &watch, false), false, 1)).unwrap();
    let sender = thread::spawn(move || {
        assert_eq!(tx.send(None, b"x", &|| false).unwrap(), Sent::Accepted);
        tx.finish();
        tx.stats.clone()
    });
    // The message, then a marker: the receiver has the end.
    let mut topics = Vec::new();
    while topics.last().is_none_or(|t: &Vec<u8>| t != CONTROL_TOPIC) {
        topics.push(pull.recv_multipart(0).unwrap().remove(0));
    }
    until_shaken_hands(&mut receiver_watch);
    receiver_watch.close_saying_ended();
    // Six heartbeats with the watch gone and the data connection still up: without the word a
    // sender takes its receiver for lost after one.
    thread::sleep(Duration::from_millis(300));
    pull.set_linger(0).unwrap();
    drop(pull);
    drop(ctx);
    let stats = sender.join().unwrap();
    assert!(!stats.peers_lost, "{stats:?}");
    assert!(!stats.linger_expired, "{stats:?}");
    assert_eq!(stats.markers, crate::eos::REPEATS, "{stats:?}");
}
