//! The latency of a link between processes: from a message's creation in the producer's
//! process to its first read behind the link, whatever stands behind it (more boxes on the
//! way to the sink, a fan-in that mixes in another source's messages).

mod common;
use common::deploy::{run_json, smxrun, text, write};

use std::path::Path;
use std::process::Output;

use serde_json::Value;

/// `run_json` with every message a sample (`--latency full`), so that each figure below
/// covers the same messages.
fn run_full_latency(dir: &Path, net: &str, config: &str, messages: &str) -> (Output, Value) {
    run_json(dir, net, config, &["--latency", "full", "-n", messages])
}

fn channel<'r>(report: &'r Value, from: &str, to: &str) -> &'r Value {
    report["channels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["from"].as_str().unwrap().starts_with(from) && c["to"].as_str().unwrap().starts_with(to))
        .unwrap_or_else(|| panic!("no channel {from} -> {to} in {}", report["channels"]))
}

fn max(latency: &Value) -> u64 {
    latency["max"].as_u64().unwrap_or_else(|| panic!("no max in {latency}"))
}

/// Behind the link a forwarder stands before the sink: the link's latency ends at the
/// forwarder's read, so for each message it is shorter than the sink's end-to-end figure,
/// which also holds the forwarder's hop.
#[test]
fn a_links_latency_ends_at_the_first_read_behind_it() {
    let dir = tempfile::tempdir().unwrap();
    let net = "Src = box smx_src_rand( out data )\nFwd = box smx_fwd( up in data, down out data )\n\
               Snk = box smx_snk_null( in data )\nconnect Src.Fwd.Snk\n";
    let config = "[process.sinks]\n\n[net.Fwd]\nprocess = \"sinks\"\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let (out, report) = run_full_latency(dir.path(), net, config, "3000");
    assert!(out.status.success(), "{}", text(&out));
    let link = &channel(&report, "Src", "Fwd")["link"];
    assert_eq!(link["clocks_comparable"], true, "{link}");
    assert_eq!(link["latency_ns"]["count"], 3000, "every message is a sample: {link}");
    let sink = &report["latency"]["sinks"][0]["latency_ns"];
    assert_eq!(sink["count"], 3000, "{sink}");
    assert!(
        max(&link["latency_ns"]) < max(sink),
        "the link's slowest message reached the forwarder before the sink: link {link}, sink {sink}"
    );
    let row = channel(&report, "Src", "Fwd");
    assert!(
        row.get("arrival_ns").is_none(),
        "the link's latency is on its link only: {row}"
    );
}

/// At a fan-in behind the link no sink sees the link's messages alone: the link's latency is
/// still its own, from creation, and so longer for each message than the consumer's half of
/// the channel (from the link's source writing it).
#[test]
fn a_link_into_a_fan_in_has_a_latency_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let net = "A = box smx_src_rand( out data )\nB = box smx_src_rand( out data )\n\
               Snk = box smx_snk_null( in data )\nconnect (A!B).Snk\n";
    let config = "[process.sinks]\n\n[net.B]\nprocess = \"sinks\"\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let (out, report) = run_full_latency(dir.path(), net, config, "4000");
    assert!(out.status.success(), "{}", text(&out));
    let row = channel(&report, "A", "smx_rn");
    let link = &row["link"];
    assert_eq!(
        link["latency_ns"]["count"], row["read"],
        "every message is a sample: {row}"
    );
    assert!(
        max(&link["latency_ns"]) > max(&row["latency_ns"]),
        "creation comes before the link's source writes a message: {row}"
    );
}

/// One process with a ZeroMQ pair: the channel behind the receiving box says how long its
/// messages took from their creation, as a link's latency does.
#[cfg(feature = "zmq")]
#[test]
fn the_channel_behind_a_zmq_source_has_an_arrival_latency() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("ipc://{}", dir.path().join("arrival.ipc").display());
    let net = "Src = box smx_src_rand( out data )\nTx = box smx_snk_zmq( in data )\n\
               Rx = box smx_src_zmq( out data )\nSnk = box smx_snk_null( in data )\n\
               connect Src.Tx | Rx.Snk\n";
    let net = write(dir.path(), "zmq.smx", net);
    let config = write(
        dir.path(),
        "zmq.toml",
        &format!(
            "[net.Tx]\nendpoint = \"{endpoint}\"\npattern = \"pipeline\"\n\n\
             [net.Rx]\nendpoint = \"{endpoint}\"\npattern = \"pipeline\"\n"
        ),
    );
    let report = dir.path().join("report.json");
    let out = smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["--report", "json", "-q", "--latency", "full", "-n", "2000", "-o"])
        .arg(&report)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let behind = channel(&report, "Rx", "Snk");
    assert_eq!(behind["arrival_ns"]["count"], behind["read"], "{behind}");
    let before = channel(&report, "Src", "Tx");
    assert!(before.get("arrival_ns").is_none(), "{before}");
}
