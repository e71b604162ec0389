//! The ZeroMQ boxes inside running nets: the report's net over pipeline and pubsub, tcp and
//! ipc, and a source whose sender never comes. Behaviour only, no timing.

use smx::boxes::{BoxConfig, ConfigValue, Registry};
use smx::config::NetSettings;
use smx::config::value::parse_value;
use smx::graph::NetGraph;
use smx::report::{Report, Status};
use smx::runtime::builder::NetBuilder;
use smx::runtime::{RunOptions, run};

/// `Src1.Snk1 | Src2.Snk2` of the ISPW60 report.
fn report_net() -> NetGraph {
    let mut net = NetBuilder::new();
    let src1 = net.add_box("Src1", "smx_src_rand", &[("data", false)]);
    let snk1 = net.add_box("Snk1", "smx_snk_zmq", &[("data", true)]);
    let src2 = net.add_box("Src2", "smx_src_zmq", &[("data", false), ("topic", false)]);
    let snk2 = net.add_box("Snk2", "smx_snk_dump", &[("data", true), ("topic", true)]);
    net.connect(src1, "data", snk1, "data");
    net.connect(src2, "data", snk2, "data");
    net.connect(src2, "topic", snk2, "topic");
    net.build()
}

/// Settings of every node: defaults, then `sets` as `(instance, key, value)`.
fn settings(graph: &NetGraph, registry: &Registry, sets: &[(&str, &str, &str)]) -> Vec<NetSettings> {
    graph
        .nodes
        .iter()
        .map(|node| {
            let spec = registry.get(&node.func).expect("known box");
            let mut config = BoxConfig::with_defaults(&node.label, spec).unwrap();
            for (_, key, text) in sets.iter().filter(|(i, _, _)| *i == node.label) {
                let decl = spec.config.iter().find(|k| k.name == *key).expect("known key");
                config.values.insert(key.to_string(), parse_value(decl, text).unwrap());
            }
            NetSettings {
                box_config: config,
                ..NetSettings::default()
            }
        })
        .collect()
}

fn run_net(graph: &NetGraph, sets: &[(&str, &str, &str)]) -> Report {
    let registry = Registry::builtin();
    let opts = RunOptions {
        settings: settings(graph, &registry, sets),
        ..RunOptions::default()
    };
    run(graph, &registry, &opts).expect("net runs")
}

fn row<'a>(report: &'a Report, name: &str) -> &'a serde_json::Value {
    report
        .zmq
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no zmq row for {name}: {:?}", report.zmq))
}

fn free_tcp_endpoint() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("tcp://127.0.0.1:{port}")
}

fn report_net_delivers_everything(pattern: &str, endpoint: &str) {
    const N: u64 = 3000;
    let count = N.to_string();
    let mut sets = vec![
        ("Src1", "count", count.as_str()),
        ("Snk1", "pattern", pattern),
        ("Snk1", "endpoint", endpoint),
        ("Src2", "pattern", pattern),
        ("Src2", "endpoint", endpoint),
        ("Snk2", "path", "/dev/null"),
    ];
    if pattern == "pubsub" {
        sets.push(("Snk1", "sync", "true"));
        sets.push(("Snk1", "hwm", "0")); // unlimited: this test is about delivery, not drops
    }
    let report = run_net(&report_net(), &sets);
    assert_eq!(report.status, Status::Ok, "{report:?}");
    let sink = row(&report, "Snk1");
    let source = row(&report, "Src2");
    assert_eq!((&sink["role"], &source["role"]), (&"sink".into(), &"source".into()));
    assert_eq!(sink["sent"], N);
    assert_eq!(sink["dropped"], 0);
    assert_eq!(source["sent"], N, "the marker carried the sender's total");
    assert_eq!(source["received"], N);
    assert_eq!(source["lost"], 0);
    assert_eq!(
        (&source["duplicates"], &source["reordered"], &source["corrupt"]),
        (&0.into(), &0.into(), &0.into())
    );
    assert_eq!(source["end"], "marker");
    let dump = report
        .channels
        .iter()
        .find(|c| c.to == "Snk2" && c.port == "data")
        .unwrap();
    assert_eq!(dump.read, N, "every message reached the second chain");
    report_shows_the_books(&report);
}

/// `--report json` has the documented `zmq` rows; the text report a line per box with the
/// loss percentage.
fn report_shows_the_books(report: &Report) {
    let json: serde_json::Value = serde_json::from_str(&smx::report::json::render(report)).unwrap();
    let rows = json["zmq"].as_array().expect("a zmq array");
    assert_eq!(rows.len(), 2);
    for row in rows {
        for key in [
            "name",
            "role",
            "pattern",
            "endpoint",
            "sent",
            "received",
            "lost",
            "duplicates",
            "reordered",
            "corrupt",
        ] {
            assert!(row.get(key).is_some(), "zmq row without '{key}': {row}");
        }
    }
    let text = smx::report::text::render(report);
    assert!(text.contains("\nZeroMQ\n"), "{text}");
    assert!(
        text.contains("Src2 source") && text.contains("lost 0 (0.000 %"),
        "{text}"
    );
}

#[test]
fn pipeline_over_tcp_loses_nothing() {
    report_net_delivers_everything("pipeline", &free_tcp_endpoint());
}

#[test]
fn pipeline_over_ipc_loses_nothing_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("feeds").join("0");
    report_net_delivers_everything("pipeline", &format!("ipc://{}", path.display()));
    assert!(!path.exists());
}

#[test]
fn pubsub_with_sync_and_room_loses_nothing() {
    report_net_delivers_everything("pubsub", &free_tcp_endpoint());
}

#[test]
fn pubsub_with_a_small_hwm_balances_the_books() {
    let endpoint = free_tcp_endpoint();
    let report = run_net(
        &report_net(),
        &[
            ("Src1", "count", "3000"),
            ("Src1", "size", "64"),
            ("Snk1", "pattern", "pubsub"),
            ("Snk1", "endpoint", &endpoint),
            ("Snk1", "hwm", "10"),
            ("Snk1", "sync", "true"),
            ("Src2", "pattern", "pubsub"),
            ("Src2", "endpoint", &endpoint),
            ("Src2", "hwm", "10"),
            ("Snk2", "path", "/dev/null"),
        ],
    );
    assert_eq!(report.status, Status::Ok, "{report:?}");
    let (sink, source) = (row(&report, "Snk1"), row(&report, "Src2"));
    let n = |row: &serde_json::Value, key: &str| row[key].as_u64().unwrap();
    assert_eq!(n(sink, "sent"), 3000);
    assert_eq!(
        n(sink, "sent"),
        n(sink, "accepted") + n(sink, "dropped"),
        "sink books balance"
    );
    assert_eq!(n(source, "sent"), n(sink, "sent"));
    assert_eq!(
        n(source, "sent"),
        n(source, "received") + n(source, "lost"),
        "source books balance"
    );
    assert_eq!(n(source, "sender_dropped"), n(sink, "dropped"));
    assert_eq!(n(source, "lost_before_first"), 0, "sync: no slow-joiner loss");
    assert_eq!(n(source, "lost_in_transit"), 0);
    assert_eq!(
        n(source, "lost"),
        n(sink, "dropped"),
        "every loss explained by the sender's HWM"
    );
    assert_eq!(source["end"], "marker");
}

#[test]
fn a_source_without_sender_ends_by_timeout_and_says_so() {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src2", "smx_src_zmq", &[("data", false)]);
    let snk = net.add_box("Snk2", "smx_snk_null", &[("data", true)]);
    net.connect(src, "data", snk, "data");
    let endpoint = free_tcp_endpoint();
    let report = run_net(
        &net.build(),
        &[("Src2", "endpoint", endpoint.as_str()), ("Src2", "timeout", "300ms")],
    );
    assert_eq!(report.status, Status::Ok);
    let source = row(&report, "Src2");
    assert_eq!(source["end"], "timeout");
    assert_eq!(
        (&source["received"], &source["tail_unknown"]),
        (&0.into(), &false.into())
    );
}

#[test]
fn a_port_in_use_fails_the_run_before_it_starts() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("tcp://{}", listener.local_addr().unwrap());
    let report = run_net(
        &report_net(),
        &[
            ("Src1", "count", "10"),
            ("Snk1", "endpoint", &endpoint),
            ("Src2", "endpoint", &endpoint),
            ("Src2", "timeout", "300ms"),
            ("Snk2", "path", "/dev/null"),
        ],
    );
    assert_eq!(report.status, Status::Failed);
    let snk1 = report.net("Snk1").unwrap();
    let error = snk1.error.as_deref().unwrap_or_default();
    assert!(error.contains("address in use"), "{error}");
}

#[test]
fn unknown_settings_are_rejected_with_the_choices() {
    let registry = Registry::builtin();
    let spec = registry.get("smx_snk_zmq").unwrap();
    let pattern = spec.config.iter().find(|k| k.name == "pattern").unwrap();
    let err = parse_value(pattern, "reqrep").unwrap_err();
    assert!(err.contains("pubsub, pipeline"), "{err}");
    let mut config = BoxConfig::with_defaults("Snk1", spec).unwrap();
    config
        .values
        .insert("endpoint".into(), ConfigValue::Str("tcp//nowhere".into()));
    let err = (spec.create)(&config).err().unwrap();
    assert!(err.0.contains("Snk1") && err.0.contains("endpoint"), "{err}");
}

/// Compiles a shipped net and resolves its shipped config plus `sets`, like `smxrun` does.
fn shipped(net: &str, config: &str, sets: &[String]) -> (NetGraph, Vec<NetSettings>) {
    let nets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("nets");
    let src = smx::diag::SourceFile::read(&nets.join(net)).unwrap();
    let compiled = smx::compose::compile(&src, &smx::compose::CompileOptions::default());
    assert!(compiled.accepted(), "{net}: {:?}", compiled.diagnostics);
    let mut layers = smx::config::ConfigLayers::from_file(&nets.join(config)).unwrap();
    for set in sets {
        layers.add_set(set).unwrap();
    }
    let settings = layers.resolve(&compiled.graph, &Registry::builtin()).unwrap();
    (compiled.graph, settings)
}

#[test]
fn the_shipped_nets_run_with_their_configs() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "zmq_pipeline_tcp",
        "zmq_pipeline_ipc",
        "zmq_pubsub_tcp",
        "zmq_pubsub_ipc",
    ] {
        // Free endpoints instead of the shipped fixed ones, so tests may run in parallel.
        let endpoint = if name.ends_with("tcp") {
            free_tcp_endpoint()
        } else {
            format!("ipc://{}/{name}", dir.path().display())
        };
        let sets = [
            format!("Snk1.endpoint={endpoint}"),
            format!("Src2.endpoint={endpoint}"),
            "Src1.count=1000".to_string(),
            "Snk2.path=/dev/null".to_string(),
        ];
        let (graph, settings) = shipped(&format!("{name}.smx"), &format!("{name}.toml"), &sets);
        let opts = RunOptions {
            settings,
            ..RunOptions::default()
        };
        let report = run(&graph, &Registry::builtin(), &opts).expect("net runs");
        assert_eq!(report.status, Status::Ok, "{name}: {report:?}");
        let (sink, source) = (row(&report, "Snk1"), row(&report, "Src2"));
        let pattern = if name.contains("pubsub") { "pubsub" } else { "pipeline" };
        assert_eq!(
            (&sink["pattern"], &source["pattern"]),
            (&pattern.into(), &pattern.into())
        );
        assert_eq!(sink["sent"], 1000, "{name}");
        assert_eq!(source["sent"], sink["sent"], "{name}");
        assert_eq!(source["received"], sink["accepted"], "{name}");
        assert_eq!(source["lost"], sink["dropped"], "{name}");
        assert_eq!(source["end"], "marker", "{name}");
    }
}

#[test]
fn the_split_halves_compile() {
    for (net, sets) in [
        ("zmq_sender.smx", "Snk1.timeout=1s"),
        ("zmq_receiver.smx", "Src2.timeout=1s"),
    ] {
        let (graph, _) = shipped(net, "zmq_pipeline_tcp.toml", &[sets.to_string()]);
        assert_eq!(graph.nodes.len(), 2, "{net}");
    }
}
