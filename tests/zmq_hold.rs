//! The ZeroMQ sink's `hold`: on a channel of length 1 a sink sees one message per step, and
//! lets a frame wait for the next ones only while they come in quick succession. These tests
//! count frames and messages; none depends on timing.

use std::time::Duration;

use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, Flow, Io, Message, OutPort, PortSpec};
use smx_graph::NetGraph;
use smx_runtime::ChainMode;
use smx_runtime::NetBuilder;
use smx_runtime::config::ConfigLayers;
use smx_runtime::report::{Report, Status};
use smx_runtime::{PinMode, Registry, RunOptions, run};

mod common;
use common::zmq::{free_tcp_endpoint, report_net, row};

const N: u64 = 5000;

/// Runs `graph` with the ZeroMQ link on a fresh loopback port and `sets`; with `one_core`
/// every thread shares core 0, so that each box chains behind its feeder.
fn run_on(graph: &NetGraph, registry: &Registry, sets: &[(&str, &str)], one_core: bool) -> Report {
    let endpoint = free_tcp_endpoint();
    let mut layers = ConfigLayers::new();
    let all = [
        ("Snk1.endpoint", endpoint.as_str()),
        ("Src2.endpoint", endpoint.as_str()),
    ];
    for (key, value) in all.iter().chain(sets) {
        layers.add_set(&format!("{key}={value}")).unwrap();
    }
    let opts = RunOptions {
        settings: layers.resolve(graph, registry).unwrap(),
        pin: if one_core { PinMode::List(vec![0]) } else { PinMode::Off },
        chain: if one_core { ChainMode::Auto } else { ChainMode::Off },
        ..RunOptions::default()
    };
    let report = run(graph, registry, &opts).expect("net runs");
    assert_eq!(report.status, Status::Ok, "{report:?}");
    report
}

/// The sink's frames, after checking that every one of `n` messages arrived, in order.
fn frames_for_all(report: &Report, n: u64) -> u64 {
    let (sink, source) = (row(report, "Snk1"), row(report, "Src2"));
    assert_eq!((sink["sent"].as_u64(), sink["dropped"].as_u64()), (Some(n), Some(0)));
    assert_eq!(
        (source["received"].as_u64(), source["lost"].as_u64()),
        (Some(n), Some(0))
    );
    assert_eq!((&source["reordered"], &source["end"]), (&0.into(), &"marker".into()));
    sink["frames"].as_u64().unwrap()
}

#[test]
fn a_sink_chained_behind_a_source_that_never_waits_shares_frames() {
    let registry = smxrun::builtin_registry();
    let count = N.to_string();
    let sets = [("Src1.count", count.as_str()), ("Snk2.path", "/dev/null")];
    let report = run_on(&report_net(), &registry, &sets, true);
    assert!(
        report.notes.iter().any(|w| w.contains("Src1#0 -> Snk1#1")),
        "{:?}",
        report.notes
    );
    let frames = frames_for_all(&report, N);
    assert!(frames < N, "{frames} frames for {N} messages: nothing shared a frame");
    assert!(frames >= N.div_ceil(64), "a frame holds at most `batch` (64): {frames}");
}

#[test]
fn hold_0_sends_what_each_step_read() {
    // Chained at length 1, each step of the sink reads exactly one message.
    let registry = smxrun::builtin_registry();
    let count = N.to_string();
    let sets = [
        ("Src1.count", count.as_str()),
        ("Snk1.hold", "0"),
        ("Snk2.path", "/dev/null"),
    ];
    let report = run_on(&report_net(), &registry, &sets, true);
    assert_eq!(frames_for_all(&report, N), N);
}

/// `bursts`: `count` messages in pairs written back to back, then a pause of `pause` inside the
/// step.
fn burst_registry() -> Registry {
    struct Bursts {
        count: u64,
        pause: Duration,
        sent: u64,
    }
    impl BoxImpl for Bursts {
        fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
            for _ in 0..2 {
                if io
                    .write(OutPort(0), Message::new(self.sent, smx_box::now_ns(), &[7u8; 8]))
                    .is_err()
                {
                    return Ok(Flow::End);
                }
                self.sent += 1;
            }
            std::thread::sleep(self.pause);
            Ok(if self.sent >= self.count {
                Flow::End
            } else {
                Flow::Return
            })
        }
    }
    fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(Bursts {
            count: config.int("count")?,
            pause: config.duration("pause")?,
            sent: 0,
        }))
    }
    const BURSTS: BoxSpec = BoxSpec::named("bursts")
        .outputs(&[PortSpec::new("data")])
        .config(&[
            ConfigKey::int("count").default_value("40"),
            ConfigKey::duration("pause").default_value("20ms"),
        ])
        .create(create);
    let mut registry = smxrun::builtin_registry();
    registry.register(BURSTS);
    registry
}

#[test]
fn a_frame_goes_before_the_sink_waits_for_its_next_message() {
    let mut net = NetBuilder::new();
    let src1 = net.add_box("Src1", "bursts", &[("data", false)]);
    let snk1 = net.add_box("Snk1", "smx_snk_zmq", &[("data", true)]);
    let src2 = net.add_box("Src2", "smx_src_zmq", &[("data", false)]);
    let snk2 = net.add_box("Snk2", "smx_snk_null", &[("data", true)]);
    net.connect(src1, "data", snk1, "data");
    net.connect(src2, "data", snk2, "data");
    let graph = net.build();
    // The second message of a pair comes right after the first, so the sink may hold the
    // first; then it must go: chained, the feeder may wait (it sleeps in its step), so the
    // step that made room releases it, and the second message goes before the feeder's next
    // step, a frame each; with a thread per box the sink's input is empty for the pause, so
    // the frame goes before the sink waits. Had a frame waited for the next pair, two
    // messages of different pairs would share it.
    let report = run_on(&graph, &burst_registry(), &[("Snk1.hold", "100ms")], true);
    assert_eq!(frames_for_all(&report, 40), 40, "chained");
    let report = run_on(&graph, &burst_registry(), &[("Snk1.hold", "100ms")], false);
    let frames = frames_for_all(&report, 40);
    assert!(
        frames >= 20,
        "{frames} frames for 20 pairs: a frame waited across a pause"
    );
}
