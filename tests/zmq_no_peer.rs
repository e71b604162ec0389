//! A ZeroMQ sink whose peer never comes, run as a user runs it (`smxrun` on
//! `nets/zmq_sender.smx` alone). Before: a pipeline sink waited its `timeout` for a receiver
//! and then a second `timeout` for the abort marker; a pubsub sink with `sync` failed its net
//! (exit 2) after waiting for subscribers twice, once in its step and once in its cleanup. Now
//! both wait once (the row's `timeouts` counts the waits that expired), end with exit 3 (books
//! not clean), and the row's problems say that no peer came.

mod common;

use std::process::Command;

use common::zmq::{free_tcp_endpoint, net};
use serde_json::Value;

/// Runs the sender half alone with `config` of `nets/`, `Snk1.timeout=1s` and `sets`; returns
/// the exit code, the `Snk1` row and stderr.
fn sender_alone(config: &str, sets: &[&str]) -> (Option<i32>, Value, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smxrun"));
    cmd.arg("run")
        .arg(net("zmq_sender.smx"))
        .arg("--config")
        .arg(net(config))
        .args(["--report", "json", "--quiet", "--pin", "off"])
        .args(["--set", &format!("Snk1.endpoint={}", free_tcp_endpoint())])
        .args(["--set", "Snk1.timeout=1s", "--set", "Snk1.linger=0"])
        .env("RUST_LOG", "error");
    for set in sets {
        cmd.args(["--set", set]);
    }
    let out = cmd.output().expect("smxrun runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let row = json["sections"]["zmq"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == "Snk1").cloned())
        .unwrap_or_else(|| panic!("no Snk1 row: {json}"));
    (out.status.code(), row, stderr)
}

fn problems(row: &Value) -> &str {
    row["problems"].as_str().unwrap_or_default()
}

#[test]
fn a_pipeline_sink_without_a_receiver_waits_once_and_reports_the_marker_undelivered() {
    let (code, row, stderr) = sender_alone("zmq_pipeline_tcp.toml", &["Src1.count=1000"]);
    assert_eq!(code, Some(3), "{row}\n{stderr}");
    assert_eq!(row["verdict"], "incomplete", "{row}");
    assert_eq!(
        row["timeouts"], 1,
        "one wait for the receiver, none for the marker: {row}"
    );
    assert_eq!((&row["markers"], &row["aborted"]), (&0.into(), &true.into()), "{row}");
    let text = problems(&row);
    assert!(text.contains("delivered nothing"), "{row}");
    assert!(
        text.contains("the abort marker was not delivered: tried once, not waited for"),
        "{row}"
    );
}

#[test]
fn a_pubsub_sink_whose_subscriber_never_joins_has_unclean_books_not_a_failure() {
    let (code, row, stderr) = sender_alone("zmq_pubsub_tcp.toml", &["Src1.count=1000"]);
    assert_eq!(code, Some(3), "{row}\n{stderr}");
    assert!(stderr.contains("no subscriber joined within timeout 1s"), "{stderr}");
    assert_eq!(row["verdict"], "incomplete", "{row}");
    assert!(
        problems(&row).contains("no subscriber joined within timeout 1s (sync)"),
        "{row}"
    );
    assert_eq!(
        row["timeouts"], 1,
        "the cleanup does not wait for subscribers again: {row}"
    );
    assert_eq!((&row["sent"], &row["aborted"]), (&0.into(), &true.into()), "{row}");
}

/// `sync` with one of its two subscribers: the sink gives up as without any, and the one that
/// joined ends at once by the abort marker, not by its own (long) timeout.
#[test]
fn a_pubsub_sink_missing_one_of_two_subscribers_aborts_the_one_that_joined() {
    let dir = tempfile::tempdir().unwrap();
    let (send_json, recv_json) = (dir.path().join("send.json"), dir.path().join("recv.json"));
    let endpoint = free_tcp_endpoint();
    let receiver = common::zmq::start_half(
        "zmq_receiver.smx",
        "zmq_pubsub_tcp.toml",
        &[
            format!("Src2.endpoint={endpoint}"),
            "Src2.timeout=60s".into(),
            "Snk2.path=/dev/null".into(),
        ],
        &recv_json,
    );
    let sender = common::zmq::start_half(
        "zmq_sender.smx",
        "zmq_pubsub_tcp.toml",
        &[
            format!("Snk1.endpoint={endpoint}"),
            // Long enough for the receiver, started first, to subscribe on a loaded machine.
            "Snk1.timeout=3s".into(),
            "Snk1.subscribers=2".into(),
            "Src1.count=1000".into(),
        ],
        &send_json,
    );
    let sent = sender.wait_with_output().unwrap();
    let received = receiver.wait_with_output().unwrap();
    let read = |p: &std::path::Path| -> Value { serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
    let (send, recv) = (read(&send_json), read(&recv_json));
    let (sink, source) = (&send["sections"]["zmq"][0], &recv["sections"]["zmq"][0]);
    assert_eq!(
        sent.status.code(),
        Some(3),
        "{sink}\n{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    assert!(
        problems(sink).contains("only 1 of 2 subscriber(s) joined within timeout 3s (sync)"),
        "{sink}"
    );
    assert_eq!((&sink["sent"], &sink["timeouts"]), (&0.into(), &1.into()), "{sink}");
    assert_eq!(
        source["end"],
        "aborted",
        "{source}\n{}",
        String::from_utf8_lossy(&received.stderr)
    );
    assert_eq!((&source["sent"], &source["lost"]), (&0.into(), &0.into()), "{source}");
}

#[test]
fn a_pubsub_sink_without_sync_and_without_a_subscriber_says_its_messages_went_to_nobody() {
    // XPUB takes them all without complaint: before, the row was `ok` and the run exited 0.
    let (code, row, stderr) = sender_alone("zmq_pubsub_tcp.toml", &["Src1.count=1000", "Snk1.sync=false"]);
    assert_eq!(code, Some(3), "{row}\n{stderr}");
    assert_eq!(row["verdict"], "incomplete", "{row}");
    assert!(problems(&row).contains("went to nobody"), "{row}");
}

/// The report itself says why the exit code is 3: the box's books that are not clean are one
/// of its warnings (text and JSON), not only a line on stderr after it.
#[test]
fn books_not_clean_are_a_warning_of_the_report() {
    let out = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .arg("run")
        .arg(net("zmq_sender.smx"))
        .arg("--config")
        .arg(net("zmq_pipeline_tcp.toml"))
        .args(["--report", "json", "--quiet", "--pin", "off"])
        .args(["--set", &format!("Snk1.endpoint={}", free_tcp_endpoint())])
        .args([
            "--set",
            "Snk1.timeout=1s",
            "--set",
            "Snk1.linger=0",
            "--set",
            "Src1.count=100",
        ])
        .env("RUST_LOG", "error")
        .output()
        .expect("smxrun runs");
    assert_eq!(out.status.code(), Some(3));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = json["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.starts_with("Snk1#1 (smx_snk_zmq): books incomplete: "))),
        "{warnings:?}"
    );
}
