//! The ZeroMQ boxes inside running nets: the report's net over pipeline and pubsub, tcp and
//! ipc, and a source whose sender never comes. Behaviour only, no timing.

use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, ConfigValue, Flow, OutPort, PortSpec};
use smx_box::{InitCtx, Io};
use smx_runtime::config::{ConfigLayers, NetSettings};

use smx_box::Message;
use smx_box::parse_value;
use smx_graph::NetGraph;
use smx_runtime::NetBuilder;
use smx_runtime::report::{Report, Status};
use smx_runtime::{Registry, RunError, RunOptions, run};

mod common;
use common::zmq::{free_tcp_endpoint, report_net, row};

/// Settings of every node: defaults, then `sets` as `(instance, key, value)`, applied the way
/// `--set INSTANCE.key=value` is.
fn settings(graph: &NetGraph, registry: &Registry, sets: &[(&str, &str, &str)]) -> Vec<NetSettings> {
    let mut layers = ConfigLayers::new();
    for (instance, key, value) in sets {
        layers.add_set(&format!("{instance}.{key}={value}")).unwrap();
    }
    layers.resolve(graph, registry).unwrap()
}

fn run_net(graph: &NetGraph, sets: &[(&str, &str, &str)]) -> Report {
    run_net_with(graph, &smxrun::builtin_registry(), sets, None)
}

/// Like [`run_net`], with a registry of its own and `--channel-len`.
fn run_net_with(
    graph: &NetGraph,
    registry: &Registry,
    sets: &[(&str, &str, &str)],
    channel_len: Option<u32>,
) -> Report {
    let opts = RunOptions {
        settings: settings(graph, registry, sets),
        default_channel_len: channel_len,
        ..RunOptions::default()
    };
    run(graph, registry, &opts).expect("net runs")
}

/// Runs the report's net with channels of 64 (as `--channel-len 64`), so that messages wait at
/// the sink and `batch` coalesces them.
fn report_net_delivers_everything(pattern: &str, endpoint: &str, batch: u64) {
    const N: u64 = 3000;
    let count = N.to_string();
    let batch_text = batch.to_string();
    let mut sets = vec![
        ("Src1", "count", count.as_str()),
        ("Snk1", "batch", batch_text.as_str()),
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
    let report = run_net_with(&report_net(), &smxrun::builtin_registry(), &sets, Some(64));
    assert_eq!(report.status, Status::Ok, "{report:?}");
    let sink = row(&report, "Snk1");
    let source = row(&report, "Src2");
    let frames = sink["frames"].as_u64().expect("the sink counts its frames");
    if batch == 1 {
        assert_eq!(frames, N, "one frame per message");
    } else {
        // The source outpaces the sink, so messages wait in the channel of 64 and are
        // coalesced; a frame never holds more than `batch`.
        assert!(frames < N, "{frames} frames for {N} messages: no batching");
        assert!(frames >= N.div_ceil(batch), "{frames} frames for {N} messages");
    }
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

/// `--report json` has the documented `zmq` rows (in `sections`); the text report a line per box with the
/// loss percentage.
fn report_shows_the_books(report: &Report) {
    let json: serde_json::Value = serde_json::from_str(&smx_runtime::report::json::render(report)).unwrap();
    let rows = json["sections"]["zmq"].as_array().expect("a zmq array");
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
    let text = smx_runtime::report::text::render(report);
    assert!(text.contains("\nzmq\n"), "{text}");
    assert!(
        text.contains("Src2 source") && text.contains("lost 0 (0.000 %"),
        "{text}"
    );
}

#[test]
fn pipeline_over_tcp_loses_nothing() {
    report_net_delivers_everything("pipeline", &free_tcp_endpoint(), 64);
}

#[test]
fn pipeline_over_tcp_with_batch_1_sends_a_frame_per_message() {
    report_net_delivers_everything("pipeline", &free_tcp_endpoint(), 1);
}

#[test]
fn pipeline_over_ipc_loses_nothing_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("feeds").join("0");
    report_net_delivers_everything("pipeline", &format!("ipc://{}", path.display()), 64);
    assert!(!path.exists());
}

#[test]
fn pipeline_over_ipc_with_batch_1_sends_a_frame_per_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("feeds").join("1");
    report_net_delivers_everything("pipeline", &format!("ipc://{}", path.display()), 1);
}

#[test]
fn pubsub_with_sync_and_room_loses_nothing() {
    report_net_delivers_everything("pubsub", &free_tcp_endpoint(), 64);
}

/// With batching (the default) and channels of 64, the HWM counts frames of up to 64
/// messages: drops come in whole frames, and the books still balance.
#[test]
fn pubsub_with_a_small_hwm_balances_the_books() {
    let endpoint = free_tcp_endpoint();
    let report = run_net_with(
        &report_net(),
        &smxrun::builtin_registry(),
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
        Some(64),
    );
    assert_eq!(report.status, Status::Ok, "{report:?}");
    let (sink, source) = (&row(&report, "Snk1"), &row(&report, "Src2"));
    let n = |row: &serde_json::Value, key: &str| row[key].as_u64().unwrap();
    assert_eq!(n(sink, "sent"), 3000);
    assert!(n(sink, "frames") <= n(sink, "accepted"));
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
    let graph = report_net();
    let registry = smxrun::builtin_registry();
    let sets = [
        ("Src1", "count", "10"),
        ("Snk1", "endpoint", endpoint.as_str()),
        ("Src2", "endpoint", endpoint.as_str()),
        ("Src2", "timeout", "300ms"),
        ("Snk2", "path", "/dev/null"),
    ];
    let opts = RunOptions {
        settings: settings(&graph, &registry, &sets),
        ..RunOptions::default()
    };
    // The sink's validator finds the port taken before any thread starts: the run is refused
    // (not a report).
    let err = run(&graph, &registry, &opts).expect_err("a port in use refuses the run");
    let error = err.to_string();
    assert!(matches!(err, RunError::BadValues(_)), "{error}");
    assert!(error.contains("Snk1") && error.contains("address in use"), "{error}");
}

#[test]
fn unknown_settings_are_rejected_with_the_choices() {
    let registry = smxrun::builtin_registry();
    let spec = registry.get("smx_snk_zmq").unwrap();
    let pattern = spec.config.iter().find(|k| k.name == "pattern").unwrap();
    let err = parse_value(pattern, "reqrep").unwrap_err();
    assert!(err.contains("pubsub, pipeline"), "{err}");
    let mut config = BoxConfig::with_defaults("Snk1", spec).unwrap();
    config
        .values
        .insert("endpoint".into(), ConfigValue::Str("tcp//nowhere".into()));
    let err = spec.create(&config).err().unwrap();
    assert!(err.0.contains("Snk1") && err.0.contains("endpoint"), "{err}");
}

/// Compiles a shipped net and resolves its shipped config plus `sets`, like `smxrun` does.
fn shipped(net: &str, config: &str, sets: &[String]) -> (NetGraph, Vec<NetSettings>) {
    let nets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("nets");
    let src = smx_lang::diag::SourceFile::read(&nets.join(net)).unwrap();
    let compiled = smx_lang::compose::compile(&src, &smx_lang::compose::CompileOptions::default());
    assert!(compiled.accepted(), "{net}: {:?}", compiled.diagnostics);
    let mut layers = smx_runtime::config::ConfigLayers::from_file(&nets.join(config)).unwrap();
    for set in sets {
        layers.add_set(set).unwrap();
    }
    let settings = layers.resolve(&compiled.graph, &smxrun::builtin_registry()).unwrap();
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
        let report = run(&graph, &smxrun::builtin_registry(), &opts).expect("net runs");
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

/// `test_topics(out topic)`: `count` topics in runs, `a` for message `i` when `i % 7 < 4`, else
/// `b`: a topic that changes inside what a sink finds waiting.
struct Topics {
    out: OutPort,
    count: u64,
    sent: u64,
}

fn topic_of(i: u64) -> &'static [u8] {
    if i % 7 < 4 { b"a" } else { b"b" }
}

impl BoxImpl for Topics {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.out = ctx.output("topic")?;
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if io
            .write(self.out, Message::now(self.sent, topic_of(self.sent)))
            .is_err()
        {
            return Ok(Flow::End);
        }
        self.sent += 1;
        Ok(if self.sent >= self.count {
            Flow::End
        } else {
            Flow::Return
        })
    }
}

fn topics_spec() -> BoxSpec {
    fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(Topics {
            out: OutPort(0),
            count: config.int("count")?,
            sent: 0,
        }))
    }
    const SPEC: BoxSpec = BoxSpec::named("test_topics")
        .summary("topics in runs of a and b")
        .outputs(&[PortSpec::new("topic")])
        .config(&[ConfigKey::int("count").default_value("10")])
        .create(create);
    SPEC
}

/// Topics set per message through the sink's `topic` port arrive with their messages, and the
/// books, counted per topic, balance.
#[test]
fn topics_from_the_topic_port_arrive_with_their_messages() {
    const N: u64 = 2000;
    let mut net = NetBuilder::new();
    let src1 = net.add_box("Src1", "smx_src_rand", &[("data", false)]);
    let topics = net.add_box("Topics", "test_topics", &[("topic", false)]);
    let snk1 = net.add_box("Snk1", "smx_snk_zmq", &[("data", true), ("topic", true)]);
    let src2 = net.add_box("Src2", "smx_src_zmq", &[("data", false), ("topic", false)]);
    let snk2 = net.add_box("Snk2", "smx_snk_dump", &[("data", true), ("topic", true)]);
    net.connect(src1, "data", snk1, "data");
    net.connect(topics, "topic", snk1, "topic");
    net.connect(src2, "data", snk2, "data");
    net.connect(src2, "topic", snk2, "topic");
    let mut registry = smxrun::builtin_registry();
    registry.register(topics_spec());
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump.txt");
    let (endpoint, count, path) = (free_tcp_endpoint(), N.to_string(), dump.display().to_string());
    let report = run_net_with(
        &net.build(),
        &registry,
        &[
            ("Src1", "count", &count),
            ("Topics", "count", &count),
            ("Snk1", "endpoint", &endpoint),
            ("Src2", "endpoint", &endpoint),
            ("Snk2", "path", &path),
            ("Snk2", "format", "hex"),
        ],
        Some(64),
    );
    assert_eq!(report.status, Status::Ok, "{report:?}");
    let (sink, source) = (row(&report, "Snk1"), row(&report, "Src2"));
    assert_eq!((&sink["sent"], &sink["dropped"]), (&N.into(), &0.into()));
    // Runs of one topic that the sink found waiting went out as one frame each.
    let frames = sink["frames"].as_u64().unwrap();
    assert!(frames < N, "{frames} frames for {N} messages: no batching");
    assert_eq!((&source["sent"], &source["received"]), (&N.into(), &N.into()));
    assert_eq!((&source["lost"], &source["reordered"]), (&0.into(), &0.into()));
    assert_eq!(source["end"], "marker");
    let text = std::fs::read_to_string(&dump).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len() as u64, N);
    // Messages of one topic keep their order; across topics the order is the sender's.
    for (i, line) in lines.iter().enumerate() {
        let topic = std::str::from_utf8(topic_of(i as u64)).unwrap();
        assert!(line.starts_with(&format!("{topic}: ")), "line {i}: {line}");
        assert_eq!(line.len(), "a: ".len() + 2 * 8, "line {i}: eight bytes in hex");
    }
}
