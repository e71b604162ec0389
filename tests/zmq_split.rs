//! The report's net split over two `smxrun` processes (nets/zmq_sender.smx and
//! nets/zmq_receiver.smx), started in either order, joined by tcp or ipc.

use std::path::Path;
use std::process::Child;
use std::thread;
use std::time::Duration;

mod common;
use common::zmq::free_tcp_endpoint;

const N: u64 = 2000;

/// Starts `smxrun` on one half of the split, writing its JSON report to `report`.
fn start(half: &str, config: &str, sets: &[String], report: &Path) -> Child {
    common::zmq::start_half(half, config, sets, report)
}

fn finish(child: Child, what: &str) {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn split_run(config: &str, endpoint: &str, receiver_first: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (send_json, recv_json) = (dir.path().join("send.json"), dir.path().join("recv.json"));
    let receiver_sets = vec![
        format!("Src2.endpoint={endpoint}"),
        "Src2.timeout=30s".to_string(),
        "Snk2.path=/dev/null".to_string(),
    ];
    let sender_sets = vec![
        format!("Snk1.endpoint={endpoint}"),
        "Snk1.timeout=30s".to_string(),
        format!("Src1.count={N}"),
    ];
    let start_receiver = || start("zmq_receiver.smx", config, &receiver_sets, &recv_json);
    let start_sender = || start("zmq_sender.smx", config, &sender_sets, &send_json);
    // The pause only makes the chosen order likely; the result must not depend on it.
    let (receiver, sender) = if receiver_first {
        let r = start_receiver();
        thread::sleep(Duration::from_millis(300));
        (r, start_sender())
    } else {
        let s = start_sender();
        thread::sleep(Duration::from_millis(300));
        (start_receiver(), s)
    };
    finish(sender, "sender");
    finish(receiver, "receiver");
    let read = |p: &Path| -> serde_json::Value { serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
    let (send, recv) = (read(&send_json), read(&recv_json));
    let sink = &send["sections"]["zmq"][0];
    let source = &recv["sections"]["zmq"][0];
    assert_eq!((&sink["name"], &source["name"]), (&"Snk1".into(), &"Src2".into()));
    let n = |row: &serde_json::Value, key: &str| row[key].as_u64().unwrap();
    assert_eq!(n(sink, "sent"), N);
    let (accepted, dropped) = (n(sink, "accepted"), n(sink, "dropped"));
    assert_eq!(accepted + dropped, N, "pubsub may drop at the HWM, counted");
    if sink["pattern"] == "pipeline" {
        assert_eq!(dropped, 0);
    }
    assert_eq!(n(source, "sent"), N, "the sender's total crossed the process boundary");
    assert_eq!(n(source, "received"), accepted);
    assert_eq!(n(source, "lost"), dropped);
    assert_eq!(n(source, "lost_in_transit"), 0);
    assert_eq!(source["end"], "marker");
}

#[test]
fn pipeline_over_tcp_receiver_first() {
    split_run("zmq_pipeline_tcp.toml", &free_tcp_endpoint(), true);
}

#[test]
fn pipeline_over_tcp_sender_first() {
    split_run("zmq_pipeline_tcp.toml", &free_tcp_endpoint(), false);
}

#[test]
fn pipeline_over_ipc_sender_first() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("ipc://{}/feed", dir.path().display());
    split_run("zmq_pipeline_ipc.toml", &endpoint, false);
}

#[test]
fn pubsub_with_sync_over_tcp_receiver_first() {
    split_run("zmq_pubsub_tcp.toml", &free_tcp_endpoint(), true);
}

#[test]
fn pubsub_with_sync_over_tcp_sender_first() {
    split_run("zmq_pubsub_tcp.toml", &free_tcp_endpoint(), false);
}
