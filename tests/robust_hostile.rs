//! A ZeroMQ peer that lies: oversized frames, forged end markers, numbers that would
//! wrap the books, random bytes. Each test plays the peer with a raw socket over loopback or ipc
//! against a real `smx_src_zmq` (a net run by the library, the `Receiver` engine stepped by hand,
//! or `smxrun` itself) and checks the books, the row's verdict and the exit code. Behaviour only:
//! every wait is bounded by a `timeout` key, no assertion is about time.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use smx_box::{BoxConfig, ConfigValue};
use smx_runtime::NetBuilder;
use smx_runtime::config::ConfigLayers;
use smx_runtime::report::{Report, Status};
use smx_runtime::{RunOptions, run};
use smx_zmq::endpoint::Endpoint;
use smx_zmq::eos::{CONTROL_TOPIC, EndOfStream, TopicTotal};
use smx_zmq::receiver::{Event, Receiver};
use smx_zmq::settings::{Common, Pattern, SourceSettings};
use smx_zmq::wire::{self, Header, Kind, MAX_SEQ};

mod common;
use common::zmq::free_tcp_endpoint;

/// The exit code of a run whose ZeroMQ books are not clean (docs/guide/exit-codes.md).
const EXIT_BOOKS_NOT_CLEAN: i32 = 3;

/// The sender id the honest peer uses.
const HONEST: u32 = 1;

/// A raw PUSH socket connected to `endpoint`: what it sends waits in its queue until the source
/// has bound, so a whole scenario can be queued before the net starts.
fn peer(endpoint: &str) -> (zmq::Context, zmq::Socket) {
    let ctx = zmq::Context::new();
    let push = ctx.socket(zmq::PUSH).unwrap();
    push.set_linger(2000).unwrap();
    push.set_sndhwm(0).unwrap();
    // The source binds after this connect: retry soon, not after libzmq's 100 ms.
    push.set_reconnect_ivl(10).unwrap();
    push.connect(endpoint).unwrap();
    (ctx, push)
}

fn body(kind: Kind, sender: u32, seq: u64, rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let header = Header {
        kind,
        sender,
        seq,
        sent_unix_ns: wire::unix_now_ns(),
        msg_seq: seq,
    };
    wire::encode_body(&header, rest, &mut out);
    out
}

/// A data frame with any sequence number, even one `Header` would never write.
fn data(push: &zmq::Socket, sender: u32, seq: u64, payload: &[u8]) {
    let mut frame = body(Kind::Data, sender, 0, payload);
    frame[6..14].copy_from_slice(&seq.to_le_bytes());
    frame[22..30].copy_from_slice(&seq.to_le_bytes());
    push.send_multipart([&b""[..], &frame[..]], 0).unwrap();
}

/// An end marker announcing `sent` messages under the empty topic.
fn marker(push: &zmq::Socket, sender: u32, sent: u64) {
    let eos = EndOfStream {
        topics: vec![TopicTotal {
            topic: Vec::new(),
            sent,
            dropped: 0,
        }],
    };
    marker_body(push, sender, &eos.encode());
}

fn marker_body(push: &zmq::Socket, sender: u32, rest: &[u8]) {
    let frame = body(Kind::EndOfStream, sender, 0, rest);
    push.send_multipart([CONTROL_TOPIC, &frame[..]], 0).unwrap();
}

/// `Src(smx_src_zmq, bound to endpoint) . Snk(smx_snk_null)`, run to its end with `sets`.
fn run_source(endpoint: &str, sets: &[(&str, &str)]) -> Report {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_zmq", &[("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    net.connect(src, "data", snk, "data");
    let graph = net.build();
    let registry = smxrun::builtin_registry();
    let mut layers = ConfigLayers::new();
    // The idle timeout also bounds how late the peer may connect on a loaded machine.
    for (key, value) in [("endpoint", endpoint), ("bind", "true"), ("timeout", "3s")]
        .into_iter()
        .chain(sets.iter().copied())
    {
        layers.add_set(&format!("Src.{key}={value}")).unwrap();
    }
    let opts = RunOptions {
        settings: layers.resolve(&graph, &registry).unwrap(),
        ..RunOptions::default()
    };
    run(&graph, &registry, &opts).expect("net runs")
}

/// The `zmq` section row of `name`, as the JSON report has it (`"sections": {"zmq": [...]}`).
fn row(report: &Report, name: &str) -> Value {
    let json = serde_json::to_value(report).unwrap();
    json["sections"]["zmq"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == name).cloned())
        .expect("a zmq row")
}

fn n(row: &Value, key: &str) -> u64 {
    row[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no number '{key}' in {row}"))
}

/// The books balance whatever the peer sent.
fn assert_balanced(row: &Value) {
    assert_eq!(
        n(row, "sent"),
        n(row, "received") - n(row, "duplicates") + n(row, "lost"),
        "{row}"
    );
    assert_eq!(
        n(row, "lost"),
        n(row, "sender_dropped") + n(row, "lost_before_first") + n(row, "lost_in_transit"),
        "{row}"
    );
}

fn problems(row: &Value) -> String {
    row["problems"].as_str().unwrap_or_default().to_string()
}

/// A receiver bound to a fresh endpoint, expecting `senders` markers, stepped by hand.
fn receiver(timeout: Duration, senders: u64) -> Receiver {
    Receiver::open(SourceSettings {
        common: Common {
            instance: "Src".into(),
            pattern: Pattern::Pipeline,
            endpoint: Endpoint::parse("tcp://127.0.0.1:*", true).unwrap(),
            bind: true,
            hwm: 1000,
            timeout,
            heartbeat: Duration::ZERO,
            watch: None,
            linger: Duration::ZERO,
            max_message: 1 << 20,
            curve: None,
        },
        subscribe: Vec::new(),
        senders,
        comparable_clock: true,
    })
    .unwrap()
}

/// Receives until nothing more arrives within `wait` (or the stream ends); the sequence numbers.
fn receive_all(rx: &mut Receiver, wait: Duration) -> (Vec<u64>, Option<String>) {
    let mut seqs = Vec::new();
    loop {
        match rx.next(wait).unwrap() {
            Event::Data { seq, .. } => seqs.push(seq),
            Event::Idle => return (seqs, None),
            Event::Ended(reason) => return (seqs, Some(reason.as_str().to_string())),
        }
    }
}

/// Receives until `count` messages arrived or the stream ended (bounded by the timeout).
fn receive_count(rx: &mut Receiver, count: usize) -> Vec<u64> {
    let mut seqs = Vec::new();
    while seqs.len() < count {
        match rx.next(Duration::from_millis(100)).unwrap() {
            Event::Data { seq, .. } => seqs.push(seq),
            Event::Idle => {}
            Event::Ended(reason) => panic!("ended ({reason:?}) after {} of {count}", seqs.len()),
        }
    }
    seqs
}

/// One marker with an invented sender id must not stop a receiver mid-stream "by marker" with
/// `lost 0`, leaving what the real sender sends next booked nowhere.
#[test]
fn a_forged_marker_from_an_invented_sender_does_not_end_the_stream() {
    let mut rx = receiver(Duration::from_secs(20), 1);
    let (_ctx, push) = peer(rx.endpoint());
    for seq in 0..100 {
        data(&push, HONEST, seq, b"x");
    }
    marker_body(&push, 0x0bad_cafe, &EndOfStream::default().encode());
    assert_eq!(receive_count(&mut rx, 100), (0..100).collect::<Vec<_>>());
    // The forged marker arrives; nothing else is queued.
    let (more, ended) = receive_all(&mut rx, Duration::from_millis(300));
    assert_eq!((more.len(), ended), (0, None), "the forged marker ended the stream");
    for seq in 100..200 {
        data(&push, HONEST, seq, b"x");
    }
    marker(&push, HONEST, 200);
    let mut seqs = receive_count(&mut rx, 100);
    let (rest, ended) = receive_all(&mut rx, Duration::from_secs(5));
    seqs.extend(rest);
    assert_eq!(seqs, (100..200).collect::<Vec<_>>());
    assert_eq!(ended.as_deref(), Some("marker"));
    let t = rx.totals();
    assert_eq!((t.sent, t.received, t.lost, t.inconsistent), (200, 200, 0, 0));
    assert_eq!((rx.books().silent_senders(), rx.books().senders_seen()), (1, 2));
}

/// The same forgery in a running net: the source does not end by the forged marker; it ends by
/// its timeout, and its row says why the books are not clean.
#[test]
fn a_forged_marker_in_a_net_leaves_the_books_saying_what_is_unaccounted() {
    let endpoint = free_tcp_endpoint();
    let (_ctx, push) = peer(&endpoint);
    for seq in 0..100 {
        data(&push, HONEST, seq, b"x");
    }
    marker_body(&push, 0x0bad_cafe, &EndOfStream::default().encode());
    let report = run_source(&endpoint, &[]);
    let src = &row(&report, "Src");
    assert_eq!(src["end"], "timeout", "{src}");
    assert_eq!(src["tail_unknown"], true, "the honest sender's tail is unknown: {src}");
    assert_eq!((n(src, "received"), n(src, "silent_senders")), (100, 1), "{src}");
    assert_eq!(src["verdict"], "suspect", "{src}");
    assert!(problems(src).contains("2 senders heard from, 1 expected"), "{src}");
    assert_balanced(src);
}

/// A forged marker with the honest sender's id and a plausible total, then more of its data
/// and its real marker: the books are flagged inconsistent, not closed with a made-up tail
/// loss as if nothing had happened. (A second sender, whose marker comes last, keeps the stream
/// open until everything was read.)
#[test]
fn a_marker_contradicted_by_later_data_flags_the_books() {
    let mut rx = receiver(Duration::from_secs(20), 2);
    let (_ctx, push) = peer(rx.endpoint());
    for seq in 0..50 {
        data(&push, HONEST, seq, b"x");
    }
    marker(&push, HONEST, 70); // forged, with the honest id and more than was sent
    for seq in 50..60 {
        data(&push, HONEST, seq, b"x");
    }
    marker(&push, HONEST, 60); // the honest marker
    data(&push, 2, 0, b"y");
    marker(&push, 2, 1);
    let (seqs, ended) = receive_all(&mut rx, Duration::from_secs(5));
    assert_eq!(seqs.len(), 61);
    assert_eq!(ended.as_deref(), Some("marker"));
    let t = rx.totals();
    assert!(t.inconsistent >= 1, "{t:?}");
    assert_eq!(rx.conflicting_markers, 1);
}

/// A sequence number of 2^64-1 must not wrap the books (into `lost 18446744073709551613` with
/// consistent books). Impossible numbers are corrupt frames; the honest stream's books stay exact.
#[test]
fn wrapped_sequence_numbers_are_corrupt_and_the_books_stay_exact() {
    let endpoint = free_tcp_endpoint();
    let (_ctx, push) = peer(&endpoint);
    for seq in 0..10 {
        data(&push, HONEST, seq, b"x");
    }
    for seq in [u64::MAX, u64::MAX - 1, MAX_SEQ] {
        data(&push, HONEST, seq, b"x");
    }
    for seq in 10..20 {
        data(&push, HONEST, seq, b"x");
    }
    marker(&push, HONEST, 20);
    let report = run_source(&endpoint, &[]);
    let src = &row(&report, "Src");
    assert_eq!(src["end"], "marker", "{src}");
    assert_eq!(
        (n(src, "sent"), n(src, "received"), n(src, "lost"), n(src, "corrupt")),
        (20, 20, 0, 3),
        "{src}"
    );
    assert_eq!(n(src, "inconsistent_streams"), 0, "{src}");
    assert_eq!(src["verdict"], "suspect", "{src}");
    assert_balanced(src);
}

/// A marker claiming 2^64-1 sent is impossible: counted corrupt, never booked as a loss of
/// eighteen quintillion messages.
#[test]
fn a_marker_claiming_2_pow_64_sent_is_corrupt() {
    let endpoint = free_tcp_endpoint();
    let (_ctx, push) = peer(&endpoint);
    data(&push, HONEST, 0, b"x");
    data(&push, HONEST, 1, b"x");
    marker(&push, HONEST, u64::MAX);
    let report = run_source(&endpoint, &[]);
    let src = &row(&report, "Src");
    assert_eq!(
        (n(src, "received"), n(src, "lost"), n(src, "corrupt")),
        (2, 0, 1),
        "{src}"
    );
    assert_eq!(
        src["end"], "timeout",
        "the impossible marker did not end the stream: {src}"
    );
    assert_eq!(src["verdict"], "suspect", "{src}");
    assert_balanced(src);
}

/// One 1 GiB frame must not raise the receiver's memory by gigabytes while the run ends `ok`. A
/// frame over `max_message` (default: 64 MiB + the header) is refused by libzmq before it is
/// allocated, the peer's connection is cut, and the row says so.
#[test]
fn a_frame_over_max_message_is_refused_and_the_row_says_so() {
    let endpoint = free_tcp_endpoint();
    let (_ctx, push) = peer(&endpoint);
    for seq in 0..5 {
        data(&push, HONEST, seq, b"x");
    }
    let oversized = vec![7u8; 64 * 1024 * 1024 + 1];
    data(&push, HONEST, 5, &oversized);
    drop(oversized);
    for seq in 6..10 {
        data(&push, HONEST, seq, b"x");
    }
    marker(&push, HONEST, 10);
    let report = run_source(&endpoint, &[]);
    let src = &row(&report, "Src");
    // Whatever reached the source after the cut (the peer reconnects and sends what was still
    // queued), the oversized message is never among what it received.
    assert!(n(src, "received") <= 9, "{src}");
    assert!(n(src, "disconnects") >= 1, "{src}");
    assert_ne!(src["verdict"], "ok", "{src}");
    assert!(problems(src).contains("max_message"), "{src}");
    assert_balanced(src);
    let snk = report.channels.iter().find(|c| c.to == "Snk").unwrap();
    assert_eq!(snk.read, n(src, "received"));
}

/// A smaller `max_message` cuts smaller frames the same way.
#[test]
fn max_message_is_a_key_of_both_boxes() {
    let registry = smxrun::builtin_registry();
    for name in ["smx_src_zmq", "smx_snk_zmq"] {
        let spec = registry.get(name).unwrap();
        let key = spec.config.iter().find(|k| k.name == "max_message").expect(name);
        assert_eq!(key.default, Some("67108894"), "64 MiB of payload + the 30-byte header");
    }
    let endpoint = free_tcp_endpoint();
    let (_ctx, push) = peer(&endpoint);
    data(&push, HONEST, 0, b"x");
    data(&push, HONEST, 1, &[0u8; 2000]);
    let report = run_source(&endpoint, &[("max_message", "1024")]);
    let src = &row(&report, "Src");
    assert_eq!(n(src, "received"), 1, "{src}");
    assert!(n(src, "disconnects") >= 1, "{src}");
}

/// Random bytes in every frame, between the frames of an honest stream: never a crash, every
/// random message counted corrupt, the honest stream booked exactly.
#[test]
fn random_bytes_are_counted_corrupt_and_never_reach_the_books() {
    let endpoint = free_tcp_endpoint();
    let (_ctx, push) = peer(&endpoint);
    let mut rng = 0x5eed_u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut junk = 0;
    for seq in 0..200 {
        data(&push, HONEST, seq, &seq.to_le_bytes());
        if seq % 2 == 0 {
            let frames = 1 + next() as usize % 3;
            let mut message: Vec<Vec<u8>> = (0..frames)
                .map(|_| (0..next() % 80).map(|_| next() as u8).collect())
                .collect();
            // Half of them look like the format's version, so the kinds and bodies get read.
            if frames == 2 && message[1].len() > 1 && seq % 4 == 0 {
                message[1][0] = wire::VERSION;
            }
            // Keep only messages that cannot parse as a valid frame of some other sender.
            let valid = frames == 2
                && Header::parse(&message[1]).is_ok_and(|(h, rest)| match h.kind {
                    Kind::Data => true,
                    Kind::Batch => smx_zmq::batch::Records::parse(rest, h.seq).is_ok(),
                    Kind::EndOfStream | Kind::Abort => EndOfStream::decode(rest).is_ok(),
                });
            if valid {
                continue;
            }
            push.send_multipart(message, 0).unwrap();
            junk += 1;
        }
    }
    marker(&push, HONEST, 200);
    let report = run_source(&endpoint, &[]);
    let src = &row(&report, "Src");
    assert_eq!(src["end"], "marker", "{src}");
    assert_eq!((n(src, "received"), n(src, "lost")), (200, 0), "{src}");
    assert_eq!(n(src, "corrupt"), junk, "{src}");
    assert_eq!(src["verdict"], "suspect", "{src}");
    assert_balanced(src);
}

/// Invented sender ids must not grow the books without bound: they keep at most 1024 senders;
/// the rest are refused as corrupt, and the honest stream still ends by its marker.
#[test]
fn invented_sender_ids_are_capped() {
    let endpoint = free_tcp_endpoint();
    let (_ctx, push) = peer(&endpoint);
    data(&push, HONEST, 0, b"x");
    for id in 1_000..3_000u32 {
        data(&push, id, 0, b"x");
        marker_body(&push, id, &EndOfStream::default().encode());
    }
    data(&push, HONEST, 1, b"x");
    marker(&push, HONEST, 2);
    let report = run_source(&endpoint, &[]);
    let src = &row(&report, "Src");
    assert_eq!(n(src, "senders_seen"), 1024, "{src}");
    assert!(n(src, "corrupt") >= 2 * (2000 - 1023), "{src}");
    assert_eq!(src["verdict"], "suspect", "{src}");
    assert_balanced(src);
}

/// A source that received nothing must not pass as clean: its row says so.
#[test]
fn a_source_that_received_nothing_says_so() {
    let report = run_source(&free_tcp_endpoint(), &[("timeout", "300ms")]);
    let src = &row(&report, "Src");
    assert_eq!(src["verdict"], "incomplete", "{src}");
    assert!(problems(src).contains("received nothing"), "{src}");
    let text = smx_runtime::report::text::render(&report);
    assert!(text.contains("INCOMPLETE: received nothing"), "{text}");
}

/// A sink that delivered nothing (no receiver, all dropped, ABORTED) must not pass as clean:
/// its row's verdict says it delivered nothing, in words.
#[test]
fn a_sink_that_delivered_nothing_says_so() {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_zmq", &[("data", true)]);
    net.connect(src, "data", snk, "data");
    let graph = net.build();
    let registry = smxrun::builtin_registry();
    let mut layers = ConfigLayers::new();
    for set in [
        format!("Snk.endpoint={}", free_tcp_endpoint()),
        "Snk.timeout=300ms".into(),
        "Snk.linger=0".into(),
        "Src.count=10".into(),
    ] {
        layers.add_set(&set).unwrap();
    }
    let opts = RunOptions {
        settings: layers.resolve(&graph, &registry).unwrap(),
        ..RunOptions::default()
    };
    let report = run(&graph, &registry, &opts).unwrap();
    assert_eq!(report.status, Status::Ok);
    let row = &row(&report, "Snk");
    assert_eq!(row["aborted"], true, "{row}");
    assert_eq!(row["verdict"], "incomplete", "{row}");
    let text = problems(row);
    assert!(text.contains("delivered nothing"), "{row}");
    assert!(!text.contains("temporarily unavailable"), "{row}");
}

fn smxrun(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smxrun"));
    cmd.args(args).env("RUST_LOG", "error");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("smxrun runs")
}

fn write_net(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("net.smx");
    std::fs::write(&path, text).unwrap();
    path
}

/// The forged-marker run through `smxrun`: the JSON row's verdict and the exit code.
#[test]
fn smxrun_reports_a_forged_marker_in_its_json_and_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let net = write_net(
        dir.path(),
        "Src = extern box smx_src_zmq( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n",
    );
    let endpoint = free_tcp_endpoint();
    let (_ctx, push) = peer(&endpoint);
    for seq in 0..10 {
        data(&push, HONEST, seq, b"x");
    }
    marker_body(&push, 0x0bad_cafe, &EndOfStream::default().encode());
    let out = smxrun(
        &[
            net.to_str().unwrap(),
            "--report",
            "json",
            "-q",
            "--set",
            &format!("Src.endpoint={endpoint}"),
            "--set",
            "Src.bind=true",
            "--set",
            "Src.timeout=1s",
        ],
        &[],
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let src = &json["sections"]["zmq"][0];
    assert_eq!(src["verdict"], "suspect", "{src}");
    assert_eq!(src["end"], "timeout", "{src}");
    assert_eq!(out.status.code(), Some(EXIT_BOOKS_NOT_CLEAN));
}

/// A binder removes what it created: `smx-ipc/` for `ipc://NAME`, and for `ipc:///a/b/c/sock`
/// every one of `a/b/c` it created, not only `c`.
#[test]
fn ipc_endpoints_remove_every_directory_they_created() {
    let dir = tempfile::tempdir().unwrap();
    let net = write_net(
        dir.path(),
        "Src1 = extern box smx_src_rand( out data )\nSnk1 = extern box smx_snk_zmq( in data )\n\
         Src2 = extern box smx_src_zmq( out data )\nSnk2 = box smx_snk_null( in data )\n\
         connect (Src1.Snk1) | (Src2.Snk2)\n",
    );
    let runtime = dir.path().join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    let deep = dir.path().join("a");
    for endpoint in [
        "ipc://smx-hostile-test".to_string(),
        format!("ipc://{}/b/c/sock", deep.display()),
    ] {
        let out = smxrun(
            &[
                net.to_str().unwrap(),
                "-q",
                "-n",
                "100",
                "--set",
                &format!("Snk1.endpoint={endpoint}"),
                "--set",
                &format!("Src2.endpoint={endpoint}"),
                "--set",
                "Src2.timeout=5s",
            ],
            &[("XDG_RUNTIME_DIR", &runtime)],
        );
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("received 100, lost 0"), "{text}");
    }
    assert!(!runtime.join("smx-ipc").exists(), "smx-ipc/ left behind");
    assert!(!deep.exists(), "a/ and a/b/ left behind");
}

/// Every bad value of a ZeroMQ key is found by the box's `validate`, with a message
/// naming the instance and the key, without opening a socket.
#[test]
fn bad_zmq_values_are_found_by_validate() {
    let registry = smxrun::builtin_registry();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = format!("tcp://{}", listener.local_addr().unwrap());
    let int = |v: u64| ConfigValue::Int(v);
    let text = |v: &str| ConfigValue::Str(v.to_string());
    let cases: Vec<(&str, &str, ConfigValue, &str)> = vec![
        (
            "smx_src_zmq",
            "timeout",
            ConfigValue::Duration(Duration::ZERO),
            "timeout: must be longer than 0",
        ),
        ("smx_src_zmq", "senders", int(0), "senders: must be at least 1"),
        ("smx_snk_zmq", "batch", int(0), "batch: must be at least 1"),
        (
            "smx_snk_zmq",
            "hwm",
            int(1 << 31),
            "hwm: 2147483648 is larger than 2147483647",
        ),
        (
            "smx_snk_zmq",
            "linger",
            ConfigValue::Duration(Duration::from_secs(25 * 24 * 3600)),
            "linger:",
        ),
        (
            "smx_snk_zmq",
            "endpoint",
            text("tcp//x"),
            "endpoint: 'tcp//x' has no transport",
        ),
        (
            "smx_src_zmq",
            "endpoint",
            text("tcp://127.0.0.1:0"),
            "concrete port, not '0'",
        ),
        ("smx_snk_zmq", "endpoint", text(&busy), "address in use"),
        (
            "smx_snk_zmq",
            "max_message",
            int(10),
            "max_message: 10 is not a frame size",
        ),
    ];
    for (implementation, key, value, needle) in cases {
        let spec = registry.get(implementation).unwrap();
        let mut config = BoxConfig::with_defaults("Z", spec).unwrap();
        config.values.insert(key.into(), value);
        let validate = match implementation {
            "smx_src_zmq" => smx_zmq::source::validate,
            _ => smx_zmq::sink::validate,
        };
        let err = validate(&config).expect_err(key).0;
        assert!(err.starts_with("Z"), "{err}");
        assert!(err.contains(needle), "{key}: {err}");
        assert!(!err.contains("endpoint: endpoint"), "{err}");
    }
}

/// A bad ZeroMQ value stops `smxrun` before the start with exit 1, instead of exit 2 after the
/// rest of the net ran: the runtime calls the boxes' `validate` before any thread starts.
#[test]
fn bad_zmq_values_exit_1_before_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let net = write_net(
        dir.path(),
        "Src = extern box smx_src_rand( out data )\nSnk = extern box smx_snk_zmq( in data )\nconnect Src.Snk\n",
    );
    for set in [
        "Snk.batch=0",
        "Snk.timeout=0",
        "Snk.endpoint=tcp//x",
        "Snk.hwm=2147483648",
    ] {
        let out = smxrun(&[net.to_str().unwrap(), "-q", "--set", set], &[]);
        assert_eq!(out.status.code(), Some(1), "{set}");
        assert!(out.stdout.is_empty(), "{set}: nothing ran");
    }
}

/// A batch frame of `count` messages numbered from `first`.
fn batch(push: &zmq::Socket, sender: u32, first: u64, count: usize) {
    let mut writer = smx_zmq::batch::BatchWriter::new();
    for seq in first..first + count as u64 {
        writer.push(seq, wire::unix_now_ns(), b"x");
    }
    let frame = writer.seal(sender, first);
    push.send_multipart([&b""[..], frame], 0).unwrap();
}

/// A replayed stream (or a second sender using the same id) and batches that overlap: a number
/// seen again is booked as a duplicate and not passed on, and a row with duplicates is not ok.
#[test]
fn duplicates_are_booked_not_passed_on_and_never_ok() {
    let endpoint = free_tcp_endpoint();
    let (_ctx, push) = peer(&endpoint);
    for _ in 0..2 {
        for seq in 0..500 {
            data(&push, HONEST, seq, b"x");
        }
    }
    batch(&push, HONEST, 500, 100);
    batch(&push, HONEST, 550, 100);
    marker(&push, HONEST, 650);
    let report = run_source(&endpoint, &[]);
    let src = &row(&report, "Src");
    let snk = report.channels.iter().find(|c| c.to == "Snk").unwrap();
    assert_eq!(snk.read, 650, "only the first of each number is passed on: {src}");
    assert_eq!(
        (n(src, "received"), n(src, "duplicates"), n(src, "lost")),
        (1200, 550, 0),
        "{src}"
    );
    assert_eq!(src["verdict"], "suspect", "{src}");
    assert!(problems(src).contains("duplicate"), "{src}");
    assert_balanced(src);
}

/// A peer that floods a PUB/SUB sink with subscriptions cannot make it hold them all: at most
/// `MAX_SUBSCRIPTIONS` are applied, the peer is cut off long before it has sent two million
/// (libzmq would otherwise keep every one until the connection ends, gigabytes of them, and
/// spend seconds of the stop freeing them), the row is `suspect`, and a stop afterwards still
/// ends the run with the sink's row in the report. (How many the sink read before the cut
/// depends on when its thread ran: the refusal itself is the next test's.)
#[test]
fn a_flood_of_subscriptions_is_bounded_and_its_peer_cut_off() {
    let flood = 2_000_000u64;
    let (report, sent) = subscribe_to_a_pubsub_sink(flood, Duration::from_millis(500));
    let row = &row(&report, "Snk");
    assert!(
        sent < flood,
        "the flooding peer was never cut off: it sent all {sent}: {row}"
    );
    assert!(n(row, "subscriptions") <= smx_zmq::sender::MAX_SUBSCRIPTIONS, "{row}");
    if n(row, "refused_subscriptions") > 0 {
        assert!(problems(row).contains("subscription(s) refused"), "{row}");
    }
    assert!(n(row, "cut_peers") >= 1, "{row}");
    assert_eq!(row["verdict"], "suspect", "{row}");
    assert!(problems(row).contains("cut off for flooding"), "{row}");
    assert!(
        problems(row).contains("127.0.0.1:"),
        "the peer is named by its address: {row}"
    );
}

/// Subscriptions beyond `MAX_SUBSCRIPTIONS` from a peer that stays within the flood guard's
/// budget (70,000 of 11 bytes each, under its 1 MiB) reach the sink and are refused: counted,
/// and the row `suspect`.
#[test]
fn subscriptions_beyond_the_limit_are_refused_and_counted() {
    let subscriptions = smx_zmq::sender::MAX_SUBSCRIPTIONS + 4_464;
    // The flood guard lets any peer send 1 MiB.
    assert!(subscriptions * 11 < 1 << 20, "within the guard's budget");
    // Time for the sink to read what the peer sent: its loop reads them in batches.
    let (report, _) = subscribe_to_a_pubsub_sink(subscriptions, Duration::from_secs(3));
    let row = &row(&report, "Snk");
    // Those beyond the limit, once the sink read them (the peer's own end, when it closes,
    // takes back those in force).
    let refused = n(row, "refused_subscriptions");
    assert!(refused > 0 && refused <= 4_464, "{row}");
    assert_eq!(row["verdict"], "suspect", "{row}");
    assert!(problems(row).contains("subscription(s) refused"), "{row}");
}

/// Runs `Src` into a PUB/SUB `Snk` on a free tcp port while a peer sends it `subscriptions`
/// distinct subscriptions ([`flood_subscriptions`]); the run stops `settle` after the peer
/// ends (also when it fails, so that a failure ends the test). The report and how many the
/// peer sent before the sink cut it off.
fn subscribe_to_a_pubsub_sink(subscriptions: u64, settle: Duration) -> (Report, u64) {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_zmq", &[("data", true)]);
    net.connect(src, "data", snk, "data");
    let graph = net.build();
    let registry = smxrun::builtin_registry();
    let endpoint = free_tcp_endpoint();
    let mut layers = ConfigLayers::new();
    for set in [
        format!("Snk.endpoint={endpoint}"),
        "Snk.pattern=pubsub".into(),
        "Snk.linger=0".into(),
        "Src.count=0".into(),
    ] {
        layers.add_set(&set).unwrap();
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let opts = RunOptions {
        settings: layers.resolve(&graph, &registry).unwrap(),
        stop: stop.clone(),
        ..RunOptions::default()
    };
    let address = endpoint.trim_start_matches("tcp://").to_string();
    let peer = std::thread::spawn(move || {
        struct StopOnDrop(std::sync::Arc<std::sync::atomic::AtomicBool>, Duration);
        impl Drop for StopOnDrop {
            fn drop(&mut self) {
                std::thread::sleep(self.1);
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let _stop = StopOnDrop(stop, settle);
        flood_subscriptions(&address, subscriptions)
    });
    let report = run(&graph, &registry, &opts).unwrap();
    (report, peer.join().unwrap())
}

/// Speaks ZeroMQ's wire protocol (ZMTP 3.0, no security) as a SUB socket to the tcp `address`
/// and sends up to `count` distinct subscriptions, as fast as the sink takes them. Returns how
/// many went out before the sink cut the connection. (A libzmq socket would hold every
/// subscription it sent itself, and reconnect after a cut.)
fn flood_subscriptions(address: &str, count: u64) -> u64 {
    use std::io::Write;
    let started = std::time::Instant::now();
    let mut stream = loop {
        match std::net::TcpStream::connect(address) {
            Ok(stream) => break stream,
            Err(e) if started.elapsed() > Duration::from_secs(10) => panic!("the sink never listened: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    stream.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut greeting = vec![0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 3, 0];
    greeting.extend_from_slice(b"NULL");
    greeting.resize(64, 0);
    let mut ready = vec![0x04, 0];
    ready.extend_from_slice(b"\x05READY\x0bSocket-Type\x00\x00\x00\x03SUB");
    ready[1] = (ready.len() - 2) as u8;
    greeting.extend_from_slice(&ready);
    if stream.write_all(&greeting).is_err() {
        return 0;
    }
    // The sink takes messages only once its own greeting and READY have gone out.
    use std::io::Read;
    let mut theirs = [0u8; 66];
    stream.read_exact(&mut theirs).expect("the sink's greeting");
    let mut ready = vec![0u8; usize::from(theirs[65])];
    stream.read_exact(&mut ready).expect("the sink's READY");
    let per_write = 4096u64;
    let mut sent = 0;
    while sent < count {
        let mut frames = Vec::with_capacity(per_write as usize * 11);
        for i in sent..(sent + per_write).min(count) {
            frames.extend_from_slice(&[0, 9, 1]);
            frames.extend_from_slice(&i.to_le_bytes());
        }
        match stream.write_all(&frames) {
            Ok(()) => sent += per_write.min(count - sent),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
                panic!("the sink neither read the subscriptions nor cut the peer within 60 s")
            }
            Err(_) => return sent,
        }
    }
    sent
}
