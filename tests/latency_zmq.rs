//! End-to-end latency across a ZeroMQ link counts from the message's creation in the sending
//! net, not from its hand-over to ZeroMQ: the creation time travels on the wire.

#![cfg(feature = "zmq")]

use std::time::Duration;

use smx_box::prelude::*;
use smx_runtime::NetBuilder;
use smx_runtime::config::ConfigLayers;
use smx_runtime::latency::LatencyMode;
use smx_runtime::report::Status;
use smx_runtime::{RunOptions, run};

mod common;
use common::zmq::free_tcp_endpoint;

const DELAY: Duration = Duration::from_millis(2);
const COUNT: u64 = 20;

/// Forwards every message after sleeping [`DELAY`], keeping its creation time.
const SLEEP: BoxSpec = BoxSpec::named("test_sleep_fwd")
    .inputs(&[PortSpec::new("data")])
    .outputs(&[PortSpec::new("data")])
    .create(|_| Ok(Box::new(SleepFwd)));

struct SleepFwd;

impl BoxImpl for SleepFwd {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if let Some(msg) = io.read(InPort(0)) {
            std::thread::sleep(DELAY);
            let _ = io.write(OutPort(0), msg);
        }
        Ok(Flow::Return)
    }
}

fn run_over_zmq(batch: u64, extra: &[&str]) -> smx_runtime::report::Report {
    let mut registry = smxrun::builtin_registry();
    registry.register(SLEEP);
    let mut net = NetBuilder::new();
    let src1 = net.add_box("Src1", "smx_src_rand", &[("data", false)]);
    let hop = net.add_box("Sleep", "test_sleep_fwd", &[("data", true), ("data", false)]);
    let snk1 = net.add_box("Snk1", "smx_snk_zmq", &[("data", true)]);
    let src2 = net.add_box("Src2", "smx_src_zmq", &[("data", false)]);
    let snk2 = net.add_box("Snk2", "smx_snk_null", &[("data", true)]);
    net.connect(src1, "data", hop, "data");
    net.connect(hop, "data", snk1, "data");
    net.connect(src2, "data", snk2, "data");
    let graph = net.build();
    let endpoint = free_tcp_endpoint();
    let mut layers = ConfigLayers::new();
    let sets = [
        format!("Src1.count={COUNT}"),
        format!("Snk1.endpoint={endpoint}"),
        format!("Src2.endpoint={endpoint}"),
        format!("Snk1.batch={batch}"),
    ];
    for set in sets.iter().map(String::as_str).chain(extra.iter().copied()) {
        layers.add_set(set).unwrap();
    }
    let opts = RunOptions {
        settings: layers.resolve(&graph, &registry).unwrap(),
        latency: LatencyMode::Full,
        ..RunOptions::default()
    };
    let report = run(&graph, &registry, &opts).expect("net runs");
    assert_eq!(
        report.status,
        Status::Ok,
        "{}",
        smx_runtime::report::text::render(&report)
    );
    report
}

fn over_zmq(batch: u64) {
    let report = run_over_zmq(batch, &[]);
    let floor = DELAY.as_nanos() as u64 * 99 / 100;
    let far = report
        .latency
        .sinks
        .iter()
        .find(|s| s.name == "Snk2")
        .expect("Snk2 sampled");
    assert_eq!(far.latency_ns.count, COUNT);
    assert!(
        far.latency_ns.p50.unwrap() >= floor,
        "the receiving net counts from the creation before the sleep: {far:?}"
    );
    // The hop from the ZeroMQ source to its sink is short; the age is not its own.
    let last = report.channels.iter().find(|c| c.to == "Snk2").unwrap().latency_ns;
    assert!(
        far.latency_ns.p50.unwrap() >= last.p50.unwrap() + floor * 98 / 100,
        "{far:?} vs {last:?}"
    );
    assert_eq!(report.latency.clock_anomalies, 0);
    assert_eq!(common::zmq::row(&report, "Src2")["latency_from"], "creation");
}

#[test]
fn the_creation_time_crosses_a_zeromq_link() {
    over_zmq(1);
}

#[test]
fn the_creation_time_crosses_a_zeromq_link_in_batches() {
    over_zmq(64);
}

/// A sender whose clock is not known to agree: the report says the age starts at arrival.
#[test]
fn a_clock_not_known_to_agree_is_said_and_not_used() {
    let report = run_over_zmq(1, &["Src2.clock=not_comparable"]);
    assert_eq!(common::zmq::row(&report, "Src2")["latency_from"], "arrival");
    let text = smx_runtime::report::text::render(&report);
    assert!(text.contains("counts from arrival here"), "{text}");
    assert_eq!(report.latency.clock_anomalies, 0);
}
