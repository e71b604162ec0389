//! CURVE-authenticated ZeroMQ links, end to end: `smxrun keygen`, the split net over two
//! `smxrun` processes with keys, peers without the right keys that deliver nothing, key
//! errors before the start, and the warning for an unauthenticated bind.

use std::path::Path;
use std::process::{Child, Command, Output};

mod common;
use common::zmq::{free_tcp_endpoint, net};

const N: u64 = 500;

fn smxrun() -> Command {
    Command::new(env!("CARGO_BIN_EXE_smxrun"))
}

/// `smxrun keygen -o DIR --name NAME`; returns (NAME.key, NAME.pub).
fn keygen(dir: &Path, name: &str) -> (String, String) {
    let out = smxrun()
        .args(["keygen", "-o"])
        .arg(dir)
        .args(["--name", name])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let path = |ext: &str| dir.join(format!("{name}.{ext}")).display().to_string();
    (path("key"), path("pub"))
}

/// One half of the split net with its JSON report in `report`.
fn start(half: &str, sets: &[String], report: &Path) -> Child {
    common::zmq::start_half(half, "zmq_pipeline_tcp.toml", sets, report)
}

struct Half {
    code: i32,
    stderr: String,
    row: serde_json::Value,
}

fn finish(child: Child, report: &Path, name: &str) -> Half {
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = std::fs::read_to_string(report).unwrap_or_else(|e| panic!("{name}: no report ({e}): {stderr}"));
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let row = report["sections"]["zmq"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == name).cloned())
        .unwrap_or_else(|| panic!("no zmq row for {name}: {text}"));
    Half {
        code: out.status.code().unwrap_or(-1),
        stderr,
        row,
    }
}

/// The receiver binds as the CURVE server (`receiver_keys`), the sender connects with
/// `sender_keys`; both give up after 2 s without a peer.
fn split(receiver_keys: &[String], sender_keys: &[String]) -> (Half, Half) {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = free_tcp_endpoint();
    let (send_json, recv_json) = (dir.path().join("send.json"), dir.path().join("recv.json"));
    let mut receiver_sets = vec![
        format!("Src2.endpoint={endpoint}"),
        "Src2.bind=true".to_string(),
        "Src2.timeout=2s".to_string(),
        "Snk2.path=/dev/null".to_string(),
    ];
    receiver_sets.extend(receiver_keys.iter().map(|k| format!("Src2.{k}")));
    let mut sender_sets = vec![
        format!("Snk1.endpoint={endpoint}"),
        "Snk1.bind=false".to_string(),
        "Snk1.timeout=2s".to_string(),
        format!("Src1.count={N}"),
    ];
    sender_sets.extend(sender_keys.iter().map(|k| format!("Snk1.{k}")));
    let receiver = start("zmq_receiver.smx", &receiver_sets, &recv_json);
    let sender = start("zmq_sender.smx", &sender_sets, &send_json);
    let sent = finish(sender, &send_json, "Snk1");
    let received = finish(receiver, &recv_json, "Src2");
    (sent, received)
}

struct Keys {
    _dir: tempfile::TempDir,
    server: (String, String),
    client: (String, String),
    stranger: (String, String),
}

fn keys() -> Keys {
    let dir = tempfile::tempdir().unwrap();
    let server = keygen(dir.path(), "server");
    let client = keygen(dir.path(), "client");
    let stranger = keygen(dir.path(), "stranger");
    Keys {
        _dir: dir,
        server,
        client,
        stranger,
    }
}

fn assert_delivered_nothing(sent: &Half, received: &Half) {
    assert_eq!(received.row["received"], 0, "{}", received.row);
    assert_eq!(received.row["curve"], true);
    assert!(
        received.row["refused_handshakes"].as_u64().unwrap() > 0,
        "the receiver's books show the refused peer: {}",
        received.row
    );
    // Nothing of the refused peer reached the books, so the refusal alone is no suspicion;
    // the stream that never came makes them incomplete.
    assert_eq!(received.row["verdict"], "incomplete", "{}", received.row);
    assert_eq!(received.code, 3, "books not clean: {}", received.stderr);
    if sent.row["curve"] == true {
        // A CURVE client queues nothing before the handshake succeeds: all it sent is dropped,
        // and its books say why.
        assert_eq!(sent.row["accepted"], 0, "{}", sent.row);
        assert!(sent.row["refused_handshakes"].as_u64().unwrap() > 0, "{}", sent.row);
        assert_ne!(sent.row["verdict"], "ok", "{}", sent.row);
        assert_eq!(sent.code, 3, "{}", sent.stderr);
    }
}

#[test]
fn libzmq_is_built_with_curve() {
    // The zmq crate of this test links the libzmq of smx-libzmq through smxrun.
    use smxrun as _;
    assert_eq!(zmq::has("curve"), Some(true));
}

#[test]
fn a_curve_link_between_two_processes_delivers_everything() {
    let k = keys();
    let (sent, received) = split(
        &[
            format!("curve_secret={}", k.server.0),
            format!("curve_clients={}", k.client.1),
        ],
        &[
            format!("curve_server={}", k.server.1),
            format!("curve_secret={}", k.client.0),
            format!("curve_public={}", k.client.1),
        ],
    );
    assert_eq!(received.code, 0, "{}", received.stderr);
    assert_eq!(sent.code, 0, "{}", sent.stderr);
    assert_eq!(received.row["received"], N, "{}", received.row);
    assert_eq!(received.row["lost"], 0);
    assert_eq!(received.row["refused_handshakes"], 0);
    assert_eq!(received.row["curve"], true);
    assert_eq!(sent.row["curve"], true);
}

#[test]
fn a_sender_without_keys_delivers_nothing_to_a_curve_receiver() {
    let k = keys();
    let (sent, received) = split(&[format!("curve_secret={}", k.server.0)], &[]);
    assert_delivered_nothing(&sent, &received);
    assert_eq!(sent.row["curve"], false);
    // A plain socket queues ahead of the connection, so ZeroMQ accepted what the receiver then
    // refused: the sink's books must not say that it was delivered. On a loaded machine the
    // refused handshake may also come before ZeroMQ took the message: then it is dropped at
    // the send's timeout, and the row says that nothing was delivered either way.
    assert_ne!(sent.row["verdict"], "ok", "{}", sent.row);
    assert_eq!(sent.row["undelivered"], sent.row["accepted"], "{}", sent.row);
    let problems = sent.row["problems"].as_str().unwrap();
    assert!(
        problems.contains("delivered to no receiver") || problems.contains("delivered nothing"),
        "{}",
        sent.row
    );
    assert_eq!(sent.code, 3, "{}", sent.stderr);
}

#[test]
fn a_sender_with_a_wrong_server_key_delivers_nothing() {
    let k = keys();
    let (sent, received) = split(
        &[format!("curve_secret={}", k.server.0)],
        &[format!("curve_server={}", k.stranger.1)],
    );
    assert_delivered_nothing(&sent, &received);
}

#[test]
fn a_client_not_in_curve_clients_delivers_nothing() {
    let k = keys();
    let (sent, received) = split(
        &[
            format!("curve_secret={}", k.server.0),
            format!("curve_clients={}", k.client.1),
        ],
        &[
            format!("curve_server={}", k.server.1),
            format!("curve_secret={}", k.stranger.0),
        ],
    );
    assert_delivered_nothing(&sent, &received);
}

/// The unsplit net in one process, 10 messages, with `sets` and then `extra` arguments.
fn run_with(sets: &[String], extra: &[&str]) -> Output {
    let mut cmd = smxrun();
    cmd.arg(net("zmq_pipeline_tcp.smx"))
        .arg("--config")
        .arg(net("zmq_pipeline_tcp.toml"))
        .args(["-q", "--pin", "off", "-n", "10", "--set", "Snk2.path=/dev/null"]);
    for set in sets {
        cmd.arg("--set").arg(set);
    }
    cmd.args(extra).output().unwrap()
}

/// Bad keys fail the run before any thread starts: exit 1 and no report.
fn assert_refused(sets: &[String], words: &[&str]) {
    let out = run_with(sets, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty(), "no report: nothing ran");
    for w in words {
        assert!(stderr.contains(w), "'{w}' missing from: {stderr}");
    }
}

#[test]
fn bad_keys_are_refused_before_the_start_naming_box_and_key() {
    use std::os::unix::fs::PermissionsExt;
    let k = keys();
    let endpoint = free_tcp_endpoint();
    let at = |s: &str| {
        vec![
            format!("Snk1.endpoint={endpoint}"),
            format!("Src2.endpoint={endpoint}"),
            s.to_string(),
        ]
    };
    assert_refused(
        &at("Snk1.curve_secret=not-a-key"),
        &["Snk1", "curve_secret", "neither a key"],
    );
    assert_refused(
        &at(&format!("Src2.curve_server={}", k.server.0.replace(".key", ".nope"))),
        &["Src2", "curve_server"],
    );
    let mixed = vec![
        format!("Snk1.endpoint={endpoint}"),
        format!("Snk1.curve_secret={}", k.server.0),
        format!("Snk1.curve_public={}", k.client.1),
    ];
    assert_refused(&mixed, &["Snk1", "curve_public", "different key pairs"]);
    std::fs::set_permissions(&k.client.0, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_refused(
        &at(&format!("Snk1.curve_secret={}", k.client.0)),
        &["Snk1", "curve_secret", "chmod 600"],
    );
    assert_refused(
        &at("Snk1.curve_clients=nonsense"),
        &["Snk1", "curve_clients", "without curve_secret"],
    );
    let inproc = vec![
        "Snk1.endpoint=inproc://curve".to_string(),
        "Src2.endpoint=inproc://curve".to_string(),
        format!("Snk1.curve_secret={}", k.server.0),
    ];
    assert_refused(&inproc, &["Snk1", "inproc"]);
}

#[test]
fn one_net_with_curve_runs_clean_and_a_wildcard_bind_warns_only_without_it() {
    let k = keys();
    let port = free_tcp_endpoint().rsplit_once(':').unwrap().1.to_string();
    let dir = tempfile::tempdir().unwrap();
    let report = |name: &str, keys: &[String]| {
        let path = dir.path().join(name);
        let mut sets = vec![
            format!("Snk1.endpoint=tcp://*:{port}"),
            format!("Src2.endpoint=tcp://127.0.0.1:{port}"),
        ];
        sets.extend_from_slice(keys);
        let out = run_with(&sets, &["--report", "json", "-o", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&path).unwrap()).unwrap()
    };
    let warned = |r: &serde_json::Value| {
        r["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("without authentication"))
    };
    let plain = report("plain.json", &[]);
    assert!(warned(&plain), "{}", plain["warnings"]);
    let curve = report(
        "curve.json",
        &[
            format!("Snk1.curve_secret={}", k.server.0),
            format!("Src2.curve_server={}", k.server.1),
        ],
    );
    assert!(!warned(&curve), "{}", curve["warnings"]);
    let rows = curve["sections"]["zmq"].as_array().unwrap();
    let src = rows.iter().find(|r| r["name"] == "Src2").unwrap();
    assert_eq!(src["received"], 10, "{src}");
    assert_eq!(src["curve"], true);
}

#[test]
fn keygen_prints_lines_a_box_takes_and_never_replaces_a_key_file() {
    use std::os::unix::fs::PermissionsExt;
    let out = smxrun().arg("keygen").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let table: toml::Table = text.parse().expect("keygen prints TOML");
    assert_eq!(table["curve_public"].as_str().unwrap().len(), 40);
    assert_eq!(table["curve_secret"].as_str().unwrap().len(), 40);

    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path(), "a");
    let mode = |p: &str| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&key), 0o600);
    assert_eq!(mode(&public), 0o644);
    let before = std::fs::read(&key).unwrap();
    let again = smxrun()
        .args(["keygen", "-o"])
        .arg(dir.path())
        .args(["--name", "a"])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("not replaced"));
    assert_eq!(std::fs::read(&key).unwrap(), before);
}

#[test]
fn keygen_refuses_a_name_without_a_directory_instead_of_ignoring_it() {
    let out = smxrun().args(["keygen", "--name", "foo"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--output <DIR>"));
    assert!(out.stdout.is_empty(), "no key was printed");
}

/// A peer with the wrong keys knocking on a receiver (a second run of the same deployment,
/// started by mistake, does so) sends nothing that reaches its books: the stream of the sender
/// with the right keys is whole, the row stays `ok` and the run exits 0, and the knock is listed
/// in the row's problems and said on stderr.
#[test]
fn a_refused_stranger_leaves_the_books_of_the_right_sender_ok() {
    let k = keys();
    let dir = tempfile::tempdir().unwrap();
    let endpoint = free_tcp_endpoint();
    let json = |name: &str| dir.path().join(format!("{name}.json"));
    let receiver = start(
        "zmq_receiver.smx",
        &[
            format!("Src2.endpoint={endpoint}"),
            "Src2.bind=true".to_string(),
            "Src2.timeout=20s".to_string(),
            "Snk2.path=/dev/null".to_string(),
            format!("Src2.curve_secret={}", k.server.0),
            format!("Src2.curve_clients={}", k.client.1),
        ],
        &json("received"),
    );
    let sender = |keys: &(String, String), name: &str| {
        start(
            "zmq_sender.smx",
            &[
                format!("Snk1.endpoint={endpoint}"),
                "Snk1.bind=false".to_string(),
                "Snk1.timeout=2s".to_string(),
                format!("Src1.count={N}"),
                format!("Snk1.curve_server={}", k.server.1),
                format!("Snk1.curve_secret={}", keys.0),
                format!("Snk1.curve_public={}", keys.1),
            ],
            &json(name),
        )
    };
    // The stranger knocks until it gives up, before the right sender starts.
    let stranger = finish(sender(&k.stranger, "stranger"), &json("stranger"), "Snk1");
    assert_eq!(stranger.row["accepted"], 0, "{}", stranger.row);
    let sent = finish(sender(&k.client, "sent"), &json("sent"), "Snk1");
    assert_eq!(sent.code, 0, "{}", sent.stderr);
    let received = finish(receiver, &json("received"), "Src2");
    assert_eq!(received.row["received"], N, "{}", received.row);
    assert!(
        received.row["refused_handshakes"].as_u64().unwrap() > 0,
        "{}",
        received.row
    );
    assert_eq!(received.row["verdict"], "ok", "{}", received.row);
    assert!(
        received.row["problems"]
            .as_str()
            .unwrap()
            .contains("handshake(s) refused"),
        "{}",
        received.row
    );
    assert_eq!(received.code, 0, "{}", received.stderr);
    assert!(
        received
            .stderr
            .contains("handshake(s) refused: a peer without the right CURVE keys"),
        "{}",
        received.stderr
    );
}

/// A source that connects, with a server key that is not its sender's, failed a handshake of
/// its own: its row says so (not that a peer knocked), and is `incomplete`.
#[test]
fn a_connecting_source_with_the_wrong_server_key_says_its_own_handshake_failed() {
    let k = keys();
    let dir = tempfile::tempdir().unwrap();
    let endpoint = free_tcp_endpoint();
    let json = |name: &str| dir.path().join(format!("{name}.json"));
    let sender = start(
        "zmq_sender.smx",
        &[
            format!("Snk1.endpoint={endpoint}"),
            "Snk1.bind=true".to_string(),
            "Snk1.timeout=2s".to_string(),
            format!("Src1.count={N}"),
            format!("Snk1.curve_secret={}", k.server.0),
        ],
        &json("sent"),
    );
    let receiver = start(
        "zmq_receiver.smx",
        &[
            format!("Src2.endpoint={endpoint}"),
            "Src2.bind=false".to_string(),
            "Src2.timeout=2s".to_string(),
            "Snk2.path=/dev/null".to_string(),
            format!("Src2.curve_server={}", k.stranger.1),
            format!("Src2.curve_secret={}", k.client.0),
        ],
        &json("received"),
    );
    let received = finish(receiver, &json("received"), "Src2");
    let _ = finish(sender, &json("sent"), "Snk1");
    assert_eq!(received.row["received"], 0, "{}", received.row);
    assert!(
        received.row["refused_handshakes"].as_u64().unwrap() > 0,
        "{}",
        received.row
    );
    assert_eq!(received.row["verdict"], "incomplete", "{}", received.row);
    let problems = received.row["problems"].as_str().unwrap();
    assert!(problems.contains("handshake(s) with the sender failed"), "{problems}");
    assert!(!problems.contains("tried to connect"), "{problems}");
}
