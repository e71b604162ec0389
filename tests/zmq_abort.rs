//! A ZeroMQ sink that fails tells its receivers at once: the source ends by the sender's abort
//! marker (not by its idle timeout, set long here) with books that balance. Behaviour only, no
//! timing.

use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, Flow, StatValue, Stats};
use smx_box::{InitCtx, Io};
use smx_runtime::config::ConfigLayers;
use smx_zmq::{settings, sink};

use smx_graph::NetGraph;
use smx_runtime::NetBuilder;
use smx_runtime::report::{Report, Status};
use smx_runtime::{Registry, RunError, RunOptions, run};

mod common;
use common::zmq::row;

/// Steps after which the failing sink's step returns an error.
const FAIL_AFTER_STEPS: u64 = 200;

/// `smx_snk_zmq` whose step fails after [`FAIL_AFTER_STEPS`] steps, or whose init fails after
/// the real init opened the socket.
struct Failing {
    inner: Box<dyn BoxImpl>,
    in_init: bool,
    steps: u64,
}

impl BoxImpl for Failing {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.inner.init(ctx)?;
        if self.in_init {
            return Err(BoxError::new("injected init failure"));
        }
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if self.steps == FAIL_AFTER_STEPS {
            return Err(BoxError::new("injected step failure"));
        }
        self.steps += 1;
        self.inner.step(io)
    }

    fn abort(&mut self, why: &str) {
        self.inner.abort(why);
    }

    fn cleanup(&mut self) -> Result<(), BoxError> {
        self.inner.cleanup()
    }

    fn stats(&self) -> Stats {
        self.inner.stats()
    }
}

fn failing_in_step(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(Failing {
        inner: sink::create(config)?,
        in_init: false,
        steps: 0,
    }))
}

fn failing_in_init(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(Failing {
        inner: sink::create(config)?,
        in_init: true,
        steps: 0,
    }))
}

fn registry() -> Registry {
    let mut registry = smxrun::builtin_registry();
    for (name, create) in [
        ("test_snk_zmq_step_fails", failing_in_step as smx_box::Constructor),
        ("test_snk_zmq_init_fails", failing_in_init),
    ] {
        registry.register(
            BoxSpec::named(name)
                .summary("smx_snk_zmq with an injected failure")
                .inputs(sink::INPUTS)
                .config(settings::SINK_KEYS)
                .create(create),
        );
    }
    registry
}

/// The sending half of [`net`] on its own: `Src1.Snk1` with `sink` as Snk1.
fn sender_net(sink: &str) -> NetGraph {
    let mut net = NetBuilder::new();
    let src1 = net.add_box("Src1", "smx_src_rand", &[("data", false)]);
    let snk1 = net.add_box("Snk1", sink, &[("data", true)]);
    net.connect(src1, "data", snk1, "data");
    net.build()
}

/// The receiving half of [`net`] on its own: `Src2.Snk2`.
fn receiver_net() -> NetGraph {
    let mut net = NetBuilder::new();
    let src2 = net.add_box("Src2", "smx_src_zmq", &[("data", false)]);
    let snk2 = net.add_box("Snk2", "smx_snk_null", &[("data", true)]);
    net.connect(src2, "data", snk2, "data");
    net.build()
}

/// `Src1.Snk1 | Src2.Snk2` with `sink` as Snk1.
fn net(sink: &str) -> NetGraph {
    let mut net = NetBuilder::new();
    let src1 = net.add_box("Src1", "smx_src_rand", &[("data", false)]);
    let snk1 = net.add_box("Snk1", sink, &[("data", true)]);
    let src2 = net.add_box("Src2", "smx_src_zmq", &[("data", false)]);
    let snk2 = net.add_box("Snk2", "smx_snk_null", &[("data", true)]);
    net.connect(src1, "data", snk1, "data");
    net.connect(src2, "data", snk2, "data");
    net.build()
}

fn run_net(graph: &NetGraph, sets: &[(&str, &str, &str)]) -> Report {
    try_run_net(graph, sets).expect("net runs")
}

fn try_run_net(graph: &NetGraph, sets: &[(&str, &str, &str)]) -> Result<Report, RunError> {
    let registry = registry();
    let mut layers = ConfigLayers::new();
    for (instance, key, value) in sets {
        layers.add_set(&format!("{instance}.{key}={value}")).unwrap();
    }
    let settings = layers.resolve(graph, &registry).unwrap();
    let opts = RunOptions {
        settings,
        ..RunOptions::default()
    };
    run(graph, &registry, &opts)
}

/// The line of the text report for the `zmq` row of `name` (the row's summary).
fn text_line(report: &Report, name: &str) -> Option<String> {
    let name = StatValue::Text(name.to_string());
    report
        .sections
        .get("zmq")?
        .iter()
        .find(|r| r.get("name") == Some(&name))?
        .summary
        .clone()
}

fn endpoint(transport: &str) -> String {
    match transport {
        "ipc" => format!("ipc://smx-abort-test-{}", std::process::id()),
        _ => smx_zmq::loopback::free_loopback_endpoint().unwrap(),
    }
}

fn run_failing(sink: &str, endpoint: &str) -> Report {
    run_net(
        &net(sink),
        &[
            ("Src1", "count", "100000"),
            ("Snk1", "endpoint", endpoint),
            ("Src2", "endpoint", endpoint),
            // Long enough that ending by timeout would show as `timeout`, not `aborted`.
            ("Src2", "timeout", "60s"),
        ],
    )
}

#[test]
fn a_sink_failing_in_a_step_ends_the_source_by_its_abort_marker() {
    for transport in ["tcp", "ipc"] {
        let report = run_failing("test_snk_zmq_step_fails", &endpoint(transport));
        let snk1 = report.net("Snk1").unwrap();
        assert_eq!(snk1.status, Status::Failed, "{transport}");
        assert!(
            snk1.error
                .as_deref()
                .unwrap_or_default()
                .contains("injected step failure")
        );
        let (sink, source) = (row(&report, "Snk1"), row(&report, "Src2"));
        assert_eq!(sink["aborted"], true, "{transport}");
        let sent = sink["sent"].as_u64().unwrap();
        assert!(
            sent >= FAIL_AFTER_STEPS,
            "{transport}: one step sends at least one message"
        );
        assert!(sent < 100_000, "{transport}: the sink stopped early");
        assert_eq!(source["end"], "aborted", "{transport}: {source}");
        assert_eq!(source["sent"], sent, "{transport}: the abort marker carried the total");
        assert_eq!(
            source["received"], sent,
            "{transport}: pipeline loses nothing before the abort"
        );
        assert_eq!((&source["lost"], &source["tail_unknown"]), (&0.into(), &false.into()));
        let delivered = report.channels.iter().find(|c| c.to == "Snk2").unwrap().read;
        assert_eq!(
            delivered, sent,
            "{transport}: every message sent reached the second chain"
        );
        let text = text_line(&report, "Src2").unwrap();
        assert!(text.contains("ended by sender aborted"), "{text}");
        assert!(text_line(&report, "Snk1").unwrap().contains("ABORTED"));
    }
}

/// A sink failing in init stops its own run before any step (the run is refused), and still
/// tells the receivers: a source in another run ends by the abort marker, with nothing sent.
#[test]
fn a_sink_failing_in_init_ends_the_source_by_its_abort_marker() {
    let endpoint = endpoint("tcp");
    let (sender, receiver) = (sender_net("test_snk_zmq_init_fails"), receiver_net());
    let receiving = {
        let endpoint = endpoint.clone();
        std::thread::spawn(move || {
            let sets = [
                ("Src2", "endpoint", endpoint.as_str()),
                // Long enough that ending by timeout would show as `timeout`, not `aborted`.
                ("Src2", "timeout", "60s"),
            ];
            try_run_net(&receiver, &sets).expect("the receiver runs")
        })
    };
    let err = try_run_net(&sender, &[("Src1", "count", "100000"), ("Snk1", "endpoint", &endpoint)])
        .expect_err("a sink failing in init refuses its run");
    let text = err.to_string();
    assert!(matches!(err, RunError::NotStarted(_)), "{text}");
    assert!(
        text.contains("Snk1") && text.contains("injected init failure"),
        "{text}"
    );
    let report = receiving.join().unwrap();
    let source = row(&report, "Src2");
    assert_eq!(source["end"], "aborted", "{source}");
    assert_eq!(
        (&source["sent"], &source["received"], &source["lost"]),
        (&0.into(), &0.into(), &0.into())
    );
}
