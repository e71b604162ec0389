//! The report's latency figures on real runs: they bracket a known delay, they are per hop,
//! they survive a routing node, a clock that disagrees is said, and the JSON layout is the one
//! docs/guide/json-report.md documents.

use std::time::Duration;

use smx_box::prelude::*;
use smx_box::{BoxConfig, ConfigValue};
use smx_runtime::NetBuilder;
use smx_runtime::config::NetSettings;
use smx_runtime::latency::LatencyMode;
use smx_runtime::report::{Report, json};
use smx_runtime::{Registry, RunOptions, run};

const DELAY: Duration = Duration::from_millis(2);
const COUNT: u64 = 20;

/// Forwards every message after sleeping [`DELAY`]: a hop whose cost is known from below.
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

/// A source whose creation stamps lie an hour ahead of the run's clock.
const AHEAD: BoxSpec = BoxSpec::named("test_src_ahead")
    .outputs(&[PortSpec::new("data")])
    .create(|_| Ok(Box::new(Ahead(0))));

struct Ahead(u64);

impl BoxImpl for Ahead {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let _ = io.write(OutPort(0), Message::new(self.0, now_ns() + 3_600_000_000_000, b"x"));
        self.0 += 1;
        Ok(if self.0 >= COUNT { Flow::End } else { Flow::Return })
    }
}

fn registry() -> Registry {
    let mut registry = smxrun::builtin_registry();
    registry.register(SLEEP);
    registry.register(AHEAD);
    registry
}

fn run_net(net: NetBuilder, mode: LatencyMode) -> Report {
    let registry = registry();
    let graph = net.build();
    let settings = graph
        .nodes
        .iter()
        .map(|n| {
            let Some(spec) = registry.get(&n.func) else {
                return NetSettings::default();
            };
            let mut config = BoxConfig::with_defaults(&n.label, spec).unwrap();
            if n.func == "smx_src_rand" {
                config.values.insert("count".into(), ConfigValue::Int(COUNT));
            }
            NetSettings {
                box_config: config,
                ..NetSettings::default()
            }
        })
        .collect();
    let opts = RunOptions {
        settings,
        latency: mode,
        ..RunOptions::default()
    };
    let report = run(&graph, &registry, &opts).unwrap();
    assert!(!report.failed(), "{}", smx_runtime::report::text::render(&report));
    report
}

/// `Src -> Sleep -> Snk`, every message sampled.
fn sleep_chain() -> Report {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let hop = net.add_box("Sleep", "test_sleep_fwd", &[("data", true), ("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    net.connect(src, "data", hop, "data");
    net.connect(hop, "data", snk, "data");
    run_net(net, LatencyMode::Full)
}

#[test]
fn end_to_end_percentiles_bracket_a_known_delay_and_hops_are_measured_apart() {
    let report = sleep_chain();
    let sink = &report.latency.sinks[0];
    assert_eq!((sink.name.as_str(), sink.latency_ns.count), ("Snk", COUNT));
    let e2e = sink.latency_ns;
    let floor = DELAY.as_nanos() as u64;
    // Percentiles are the histogram's bucket values, within 1 % of the samples.
    assert!(e2e.p50.unwrap() >= floor * 99 / 100, "{e2e:?}");
    assert!(e2e.max.unwrap() >= e2e.p999.unwrap() && e2e.p999 >= e2e.p99 && e2e.p99 >= e2e.p50);
    // Every message's end-to-end time is its last hop's time plus at least the sleep (both are
    // read at the same instant), so each percentile is too; a stamp that was not renewed at
    // the forwarding write would make the last hop as long as the whole way.
    let last = report.channels.iter().find(|c| c.to == "Snk").unwrap().latency_ns;
    assert_eq!(last.count, COUNT);
    assert!(
        e2e.p50.unwrap() >= last.p50.unwrap() + floor * 98 / 100,
        "{e2e:?} vs {last:?}"
    );
    assert_eq!(report.latency.paths.len(), 1);
    assert_eq!(
        (
            report.latency.paths[0].from.as_str(),
            report.latency.paths[0].to.as_str()
        ),
        ("Src", "Snk")
    );
    assert_eq!(report.latency.clock_anomalies, 0);
}

#[test]
fn the_creation_time_survives_a_routing_node_to_every_sink() {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let hop = net.add_box("Sleep", "test_sleep_fwd", &[("data", true), ("data", false)]);
    let rn = net.add_routing_node();
    let a = net.add_box("A", "smx_snk_null", &[("data", true)]);
    let b = net.add_box("B", "smx_snk_null", &[("data", true)]);
    net.connect(src, "data", hop, "data");
    net.connect(hop, "data", rn, "data");
    net.connect(rn, "data", a, "data");
    net.connect(rn, "data", b, "data");
    let report = run_net(net, LatencyMode::Full);
    let floor = DELAY.as_nanos() as u64 * 99 / 100;
    assert_eq!(report.latency.sinks.len(), 2);
    for s in &report.latency.sinks {
        assert_eq!(s.latency_ns.count, COUNT, "{s:?}");
        assert!(s.latency_ns.p50.unwrap() >= floor, "{s:?}");
    }
    let paths: Vec<(&str, &str)> = report
        .latency
        .paths
        .iter()
        .map(|p| (p.from.as_str(), p.to.as_str()))
        .collect();
    assert_eq!(paths, [("Src", "A"), ("Src", "B")]);
    for c in &report.channels {
        assert_eq!(c.latency_ns.count, COUNT, "channel {} ({} -> {})", c.id, c.from, c.to);
    }
}

#[test]
fn stamps_from_a_clock_ahead_of_ours_are_clock_anomalies_and_said() {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "test_src_ahead", &[("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    net.connect(src, "data", snk, "data");
    let report = run_net(net, LatencyMode::Full);
    assert_eq!(report.latency.clock_anomalies, COUNT);
    assert_eq!(report.latency.sinks[0].latency_ns.count, 0, "no anomaly is a latency");
    assert_eq!(
        report.channels[0].latency_ns.count, COUNT,
        "the channel's own stamps agree"
    );
    assert!(
        report.warnings.iter().any(|w| w.contains("clock anomalies")),
        "{:?}",
        report.warnings
    );
    let text = smx_runtime::report::text::render(&report);
    assert!(text.contains("clock anomalies"), "{text}");
}

#[test]
fn sampling_takes_every_nth_write_and_off_takes_none() {
    let sampled = sleep_chain_with(LatencyMode::Sampled(4));
    for c in &sampled.channels {
        assert_eq!(c.latency_ns.count, (COUNT).div_ceil(4), "channel {}", c.id);
    }
    assert_eq!((sampled.latency.mode, sampled.latency.every), ("sampled", 4));
    let off = sleep_chain_with(LatencyMode::Off);
    assert!(
        off.channels
            .iter()
            .all(|c| c.latency_ns.count == 0 && c.latency_ns.p50.is_none())
    );
    assert!(off.latency.sinks.is_empty());
    assert_eq!((off.latency.mode, off.latency.every), ("off", 0));
}

fn sleep_chain_with(mode: LatencyMode) -> Report {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    net.connect(src, "data", snk, "data");
    run_net(net, mode)
}

/// The layout docs/guide/json-report.md documents.
#[test]
fn json_latency_fields_have_the_documented_layout() {
    let report = sleep_chain();
    let value: serde_json::Value = serde_json::from_str(&json::render(&report)).unwrap();
    assert_eq!(value["format_version"], 3);
    let summary_keys = ["p50", "p99", "p999", "max", "count"];
    let is_summary = |v: &serde_json::Value| {
        let obj = v.as_object().expect("latency_ns is an object");
        let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut want = summary_keys.to_vec();
        want.sort_unstable();
        keys == want && obj["count"].is_u64() && summary_keys[..4].iter().all(|k| obj[*k].is_u64())
    };
    for c in value["channels"].as_array().unwrap() {
        assert!(is_summary(&c["latency_ns"]), "{c}");
    }
    let latency = &value["latency"];
    assert_eq!(latency["mode"], "full");
    assert_eq!(latency["every"], 1);
    assert_eq!(latency["clock"], "monotonic");
    assert_eq!(latency["clock_anomalies"], 0);
    let sink = &latency["sinks"][0];
    assert_eq!((sink["id"].as_u64(), sink["name"].as_str()), (Some(2), Some("Snk")));
    assert!(is_summary(&sink["latency_ns"]));
    let path = &latency["paths"][0];
    for key in ["from", "from_id", "to", "to_id"] {
        assert!(path.get(key).is_some(), "path key {key}");
    }
    assert!(is_summary(&path["latency_ns"]));
    // Without samples the percentiles are null and the count 0.
    let off = sleep_chain_with(LatencyMode::Off);
    let value: serde_json::Value = serde_json::from_str(&json::render(&off)).unwrap();
    let row = &value["channels"][0]["latency_ns"];
    assert_eq!(row["count"], 0);
    assert!(row["p50"].is_null() && row["max"].is_null());
}

/// A time-triggered channel: the firewall's pair row has the firewall's share (producer's
/// write → hand-over at a tick), the channel row the whole way to the consumer's read, which
/// is never shorter for any message.
#[test]
fn a_firewall_reports_its_share_apart_from_the_whole_way() {
    use smx_lang::compose::{CompileOptions, compile};
    use smx_lang::diag::SourceFile;
    let text = "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n\
                connect tt[1ms](Src.Snk)\n";
    let file = SourceFile::new("tt.smx", text);
    let compiled = compile(&file, &CompileOptions::default());
    assert!(compiled.accepted(), "{:?}", compiled.diagnostics);
    let registry = registry();
    let mut layers = smx_runtime::config::ConfigLayers::new();
    layers.set_iterations(COUNT);
    let opts = RunOptions {
        settings: layers.resolve(&compiled.graph, &registry).unwrap(),
        latency: LatencyMode::Full,
        ..RunOptions::default()
    };
    let report = run(&compiled.graph, &registry, &opts).unwrap();
    let pair = &report.firewalls[0].pairs[0];
    let row = report.channels.iter().find(|c| c.timing == "time_triggered").unwrap();
    assert_eq!(pair.firewall_ns.count, pair.forwarded);
    assert_eq!(row.latency_ns.count, row.read);
    assert!(pair.firewall_ns.count > 0);
    assert!(
        row.latency_ns.p50.unwrap() >= pair.firewall_ns.p50.unwrap() * 99 / 100,
        "{:?} vs {:?}",
        row.latency_ns,
        pair.firewall_ns
    );
    let json: serde_json::Value = serde_json::from_str(&json::render(&report)).unwrap();
    assert!(json["firewalls"][0]["pairs"][0]["firewall_ns"]["count"].is_u64());
}
