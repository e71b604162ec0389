//! Behaviour of the executor on hand-built nets: termination, counts, routing, faults,
//! stop, rejection, pinning. No test asserts timing.

mod common;
use common::nets::src_snk;
use common::settings::with_count as settings_with_count;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, ConfigValue, Flow, PortSpec};
use smx_box::{InitCtx, Io};
use smx_graph::NetGraph;
use smx_runtime::report::{Report, Status};
use smx_runtime::{Link, NetBuilder};
use smx_runtime::{PinMode, Registry, RunError, RunOptions, run};

fn run_with_count(graph: &NetGraph, count: u64) -> Report {
    let registry = smxrun::builtin_registry();
    let opts = RunOptions {
        settings: settings_with_count(graph, &registry, count),
        ..RunOptions::default()
    };
    run(graph, &registry, &opts).expect("net runs")
}

fn assert_balanced(report: &Report) {
    for c in &report.channels {
        assert_eq!(
            c.written,
            c.read + c.overwritten + c.dropped + c.left,
            "channel {} ({} -> {}) does not balance: {c:?}",
            c.id,
            c.from,
            c.to
        );
    }
}

#[test]
fn src_snk_delivers_everything_in_order_and_counts_n_loops() {
    let report = run_with_count(&src_snk(Link::default()), 1000);
    assert_eq!(report.status, Status::Ok);
    let src = report.net("Src").unwrap();
    let snk = report.net("Snk").unwrap();
    assert_eq!(src.loop_count, 1000);
    assert_eq!(snk.loop_count, 1000, "the end-discovering iteration is not counted");
    assert_eq!(snk.stats.u64("received"), Some(1000));
    assert_eq!(snk.stats.u64("gaps"), Some(0));
    assert_eq!(snk.stats.u64("out_of_order"), Some(0));
    let c = &report.channels[0];
    assert_eq!(
        (c.written, c.read, c.dropped, c.left, c.overwritten),
        (1000, 1000, 0, 0, 0)
    );
    assert_eq!(report.messages, 1000);
    assert_balanced(&report);
}

#[test]
fn longer_channels_and_default_len_option() {
    let graph = src_snk(Link::default());
    let registry = smxrun::builtin_registry();
    let opts = RunOptions {
        settings: settings_with_count(&graph, &registry, 500),
        default_channel_len: Some(64),
        ..RunOptions::default()
    };
    let report = run(&graph, &registry, &opts).unwrap();
    assert_eq!(report.channels[0].len, 64);
    assert_eq!(report.channels[0].read, 500);
    let declared = src_snk(Link {
        len: Some(3),
        ..Link::default()
    });
    let opts = RunOptions {
        settings: settings_with_count(&declared, &registry, 10),
        default_channel_len: Some(64),
        ..RunOptions::default()
    };
    let report = run(&declared, &registry, &opts).unwrap();
    assert_eq!(report.channels[0].len, 3, "a declared length is kept");
}

#[test]
fn chain_forwards_everything() {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let f1 = net.add_box("Fwd", "smx_fwd", &[("data", true), ("data", false)]);
    let f2 = net.add_box("Fwd", "smx_fwd", &[("data", true), ("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    net.connect(src, "data", f1, "data");
    net.connect(f1, "data", f2, "data");
    net.connect(f2, "data", snk, "data");
    let report = run_with_count(&net.build(), 300);
    assert_eq!(report.status, Status::Ok);
    for c in &report.channels {
        assert_eq!((c.written, c.read, c.left), (300, 300, 0));
    }
    assert_eq!(report.messages, 300, "only deliveries into sinks count");
    assert_eq!(report.nets[3].stats.u64("gaps"), Some(0));
}

#[test]
fn fan_out_copies_every_message_to_every_consumer() {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let rn = net.add_routing_node();
    let a = net.add_box("SnkA", "smx_snk_null", &[("data", true)]);
    let b = net.add_box("SnkB", "smx_snk_null", &[("data", true)]);
    net.connect(src, "data", rn, "data");
    net.connect(rn, "data", a, "data");
    net.connect(rn, "data", b, "data");
    let report = run_with_count(&net.build(), 400);
    assert_eq!(report.status, Status::Ok);
    for name in ["SnkA", "SnkB"] {
        let snk = report.net(name).unwrap();
        assert_eq!(snk.stats.u64("received"), Some(400), "{name}");
        assert_eq!(snk.stats.u64("gaps"), Some(0), "{name}");
    }
    assert_eq!(report.net("smx_rn").unwrap().loop_count, 400);
    assert_eq!(report.messages, 800);
    assert_balanced(&report);
}

/// The one port of the test boxes below.
const IN_DATA: &[PortSpec] = &[PortSpec::new("data")];
const OUT_DATA: &[PortSpec] = &[PortSpec::new("data")];

/// A sink that records, per producer (told apart by payload size), the order of arrival.
struct Recorder {
    log: Arc<parking_lot::Mutex<Vec<usize>>>,
}

impl BoxImpl for Recorder {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if let Some(msg) = io.read(smx_box::InPort(0)) {
            self.log.lock().push(msg.len());
        }
        Ok(Flow::Return)
    }
}

#[test]
fn fan_in_loses_nothing() {
    static LOG: std::sync::OnceLock<Arc<parking_lot::Mutex<Vec<usize>>>> = std::sync::OnceLock::new();
    let log = LOG.get_or_init(Default::default).clone();
    fn create(_: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(Recorder {
            log: LOG.get().unwrap().clone(),
        }))
    }
    let mut registry = smxrun::builtin_registry();
    registry.register(
        BoxSpec::named("recorder")
            .summary("records payload sizes")
            .inputs(IN_DATA)
            .create(create),
    );
    let mut net = NetBuilder::new();
    let a = net.add_box("SrcA", "smx_src_rand", &[("data", false)]);
    let b = net.add_box("SrcB", "smx_src_rand", &[("data", false)]);
    let rn = net.add_routing_node();
    let rec = net.add_box("Rec", "recorder", &[("data", true)]);
    let len = Link {
        len: Some(8),
        ..Link::default()
    };
    net.connect_with(a, "data", rn, "data", len);
    net.connect_with(b, "data", rn, "data", len);
    net.connect(rn, "data", rec, "data");
    let graph = net.build();
    let mut settings = settings_with_count(&graph, &registry, 2000);
    settings[b].box_config.values.insert("size".into(), ConfigValue::Int(4));
    let opts = RunOptions {
        settings,
        ..RunOptions::default()
    };
    let report = run(&graph, &registry, &opts).unwrap();
    assert_eq!(report.status, Status::Ok);
    let log = log.lock();
    assert_eq!(log.len(), 4000);
    assert_eq!(log.iter().filter(|&&l| l == 8).count(), 2000);
    // The order is fair by construction (see the routing unit tests); here: nothing lost.
    assert_balanced(&report);
}

#[test]
fn decoupled_producer_side_overwrites_and_balances() {
    // A sink that is slow on purpose is timing; instead the producer runs alone for a while:
    // with count much larger than the buffer, some messages may be overwritten, and every
    // message is accounted for either way.
    let report = run_with_count(
        &src_snk(Link {
            decoupled_producer: true,
            len: Some(2),
            ..Link::default()
        }),
        5000,
    );
    assert_eq!(report.status, Status::Ok);
    let c = &report.channels[0];
    assert_eq!(c.kind, "decoupled_producer");
    assert_eq!(c.written, 5000);
    assert_eq!(c.read + c.overwritten, 5000);
    assert_eq!(c.left, 0);
    let snk = report.net("Snk").unwrap();
    assert_eq!(snk.stats.u64("out_of_order"), Some(0), "drop-oldest keeps the order");
    assert_eq!(snk.stats.u64("gaps").unwrap(), c.overwritten);
    assert_balanced(&report);
}

#[test]
fn open_port_writes_are_counted_not_lost_silently() {
    let mut net = NetBuilder::new();
    let _src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let report = run_with_count(&net.build(), 50);
    let src = report.net("Src").unwrap();
    assert_eq!(src.loop_count, 50);
    assert_eq!(src.unconnected_writes, 50);
}

// ---- faults ------------------------------------------------------------------------------

#[derive(Clone, Copy)]
enum Fault {
    InitErr,
    InitPanic,
    StepErr,
    StepPanic,
}

struct Faulty {
    fault: Fault,
    at: u64,
}

impl BoxImpl for Faulty {
    fn init(&mut self, _ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        match self.fault {
            Fault::InitErr => Err("cannot open device".into()),
            Fault::InitPanic => panic!("init exploded"),
            _ => Ok(()),
        }
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let msg = io.read(smx_box::InPort(0));
        if io.iteration() == self.at {
            match self.fault {
                Fault::StepErr => return Err("bad message".into()),
                Fault::StepPanic => panic!("step exploded"),
                _ => {}
            }
        }
        if let Some(msg) = msg {
            let _ = io.write(smx_box::OutPort(0), msg);
        }
        Ok(Flow::Return)
    }
}

fn faulty_registry() -> Registry {
    fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        let fault = match config.str("fault")? {
            "init_err" => Fault::InitErr,
            "init_panic" => Fault::InitPanic,
            "step_err" => Fault::StepErr,
            _ => Fault::StepPanic,
        };
        Ok(Box::new(Faulty { fault, at: 10 }))
    }
    let mut registry = smxrun::builtin_registry();
    const FAULTY: BoxSpec = BoxSpec::named("faulty")
        .summary("fails on purpose")
        .inputs(IN_DATA)
        .outputs(OUT_DATA)
        .config(&[
            ConfigKey::choice("fault", &["init_err", "init_panic", "step_err", "step_panic"])
                .default_value("step_panic"),
        ])
        .create(create);
    registry.register(FAULTY);
    registry
}

/// Src -> Faulty -> Snk, plus an independent Src2 -> Snk2 pair that must finish normally.
fn run_faulty(fault: &str) -> Result<Report, RunError> {
    let registry = faulty_registry();
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let mid = net.add_box("Mid", "faulty", &[("data", true), ("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    let src2 = net.add_box("Src2", "smx_src_rand", &[("data", false)]);
    let snk2 = net.add_box("Snk2", "smx_snk_null", &[("data", true)]);
    net.connect(src, "data", mid, "data");
    net.connect(mid, "data", snk, "data");
    net.connect(src2, "data", snk2, "data");
    let graph = net.build();
    let mut settings = settings_with_count(&graph, &registry, 1_000_000_000);
    settings[src2]
        .box_config
        .values
        .insert("count".into(), ConfigValue::Int(100));
    settings[mid]
        .box_config
        .values
        .insert("fault".into(), ConfigValue::Str(fault.into()));
    let opts = RunOptions {
        settings,
        ..RunOptions::default()
    };
    run(&graph, &registry, &opts)
}

#[test]
fn failures_are_contained_and_neighbours_terminate() {
    for (fault, expect) in [("step_err", "bad message"), ("step_panic", "step exploded")] {
        let report = run_faulty(fault).expect("a failing box is reported, not an error");
        assert_eq!(report.status, Status::Failed, "{fault}");
        let mid = report.net("Mid").unwrap();
        assert_eq!(mid.status, Status::Failed, "{fault}");
        assert!(
            mid.error.as_deref().unwrap().contains(expect),
            "{fault}: {:?}",
            mid.error
        );
        // The source upstream would send a billion messages; it ended because its consumer did.
        let src = report.net("Src").unwrap();
        assert_eq!(src.status, Status::Ok, "{fault}");
        assert!(src.loop_count < 1_000_000_000, "{fault}");
        assert_eq!(report.net("Snk").unwrap().status, Status::Ok, "{fault}");
        // The unrelated pair finished its work.
        assert_eq!(report.net("Snk2").unwrap().stats.u64("received"), Some(100), "{fault}");
        assert_balanced(&report);
        assert_eq!(mid.loop_count, 10);
    }
}

/// A box that fails to start (init error or panic) stops the whole run before any step: the
/// run is refused with the box named and the cause, and no thread is left behind.
#[test]
fn init_failures_stop_the_run_before_any_step() {
    for (fault, expect) in [("init_err", "cannot open device"), ("init_panic", "init exploded")] {
        let err = run_faulty(fault).expect_err(fault);
        let text = err.to_string();
        assert!(matches!(err, RunError::NotStarted(_)), "{fault}: {text}");
        assert!(text.contains("Mid#") && text.contains(expect), "{fault}: {text}");
    }
}

#[test]
fn stop_flag_ends_sources_and_everything_drains() {
    let graph = src_snk(Link {
        len: Some(16),
        ..Link::default()
    });
    let registry = smxrun::builtin_registry();
    let stop = Arc::new(AtomicBool::new(false));
    let opts = RunOptions {
        settings: settings_with_count(&graph, &registry, 0),
        stop: stop.clone(),
        ..RunOptions::default()
    };
    let progress = opts.progress.clone();
    let stopper = std::thread::spawn(move || {
        while progress.messages() < 1000 {
            std::thread::yield_now();
        }
        stop.store(true, Ordering::SeqCst);
    });
    let report = run(&graph, &registry, &opts).unwrap();
    stopper.join().unwrap();
    assert_eq!(report.status, Status::Stopped);
    assert_eq!(report.net("Src").unwrap().status, Status::Stopped);
    assert_eq!(report.net("Snk").unwrap().status, Status::Ok);
    let c = &report.channels[0];
    assert!(c.read >= 1000);
    assert_eq!((c.written, c.left), (c.read, 0), "everything written was drained");
}

/// A source whose stop arrives while its step runs: the runtime looked before the step and saw
/// none, so only the box's own look (and the `End` it returns) says the net was stopped.
struct StopsMidStep {
    stop: Arc<AtomicBool>,
}

impl BoxImpl for StopsMidStep {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let _ = io.write(smx_box::OutPort(0), smx_box::Message::new(io.iteration(), 0, b"x"));
        if io.iteration() == 50 {
            self.stop.store(true, Ordering::SeqCst);
        }
        Ok(if io.stop_requested() { Flow::End } else { Flow::Return })
    }
}

#[test]
fn a_stop_seen_inside_a_step_is_reported_as_stopped() {
    static STOP: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    let stop = STOP.get_or_init(Default::default).clone();
    fn create(_: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(StopsMidStep {
            stop: STOP.get().unwrap().clone(),
        }))
    }
    let mut registry = smxrun::builtin_registry();
    registry.register(
        BoxSpec::named("stops_mid_step")
            .summary("sets the stop flag during its 50th step")
            .outputs(OUT_DATA)
            .create(create),
    );
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "stops_mid_step", &[("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    net.connect(src, "data", snk, "data");
    let graph = net.build();
    let opts = RunOptions {
        settings: settings_with_count(&graph, &registry, 0),
        stop,
        ..RunOptions::default()
    };
    let report = run(&graph, &registry, &opts).unwrap();
    assert_eq!(report.net("Src").unwrap().status, Status::Stopped);
    assert_eq!(report.net("Src").unwrap().loop_count, 50);
    assert_eq!(report.net("Snk").unwrap().status, Status::Ok);
    assert_eq!(report.status, Status::Stopped);
    assert_eq!(
        report.channels[0].read, 50,
        "what was written before the stop is drained"
    );
}

#[test]
fn unknown_implementation_is_rejected_with_the_known_list() {
    let mut net = NetBuilder::new();
    let a = net.add_box("A", "no_such_box", &[("data", false)]);
    let b = net.add_box("B", "smx_snk_null", &[("data", true)]);
    net.connect(a, "data", b, "data");
    let err = run(&net.build(), &smxrun::builtin_registry(), &RunOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, RunError::UnknownImpl { .. }));
    assert!(
        text.contains("no_such_box") && text.contains("smx_src_rand") && text.contains("smx_snk_null"),
        "{text}"
    );
}

#[test]
fn missing_and_foreign_ports_are_rejected() {
    let mut net = NetBuilder::new();
    net.add_box("Snk", "smx_snk_null", &[("other", true)]);
    let err = run(&net.build(), &smxrun::builtin_registry(), &RunOptions::default()).unwrap_err();
    assert!(matches!(err, RunError::MissingPort { .. }), "{err}");

    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true), ("extra", true)]);
    net.connect(src, "data", snk, "extra");
    let err = run(&net.build(), &smxrun::builtin_registry(), &RunOptions::default()).unwrap_err();
    assert!(
        matches!(err, RunError::BadPort { .. }) && err.to_string().contains("extra"),
        "{err}"
    );
}

#[test]
fn too_many_threads_fail_up_front() {
    let mut net = NetBuilder::new();
    for _ in 0..10 {
        let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
        let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
        net.connect(src, "data", snk, "data");
    }
    let opts = RunOptions {
        max_threads: 8,
        ..RunOptions::default()
    };
    let err = run(&net.build(), &smxrun::builtin_registry(), &opts).unwrap_err();
    assert!(matches!(err, RunError::ThreadLimit { wanted: 20, .. }), "{err}");
}

#[test]
fn a_thousand_threads_run() {
    let mut net = NetBuilder::new();
    for _ in 0..500 {
        let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
        let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
        net.connect(src, "data", snk, "data");
    }
    let graph = net.build();
    let registry = smxrun::builtin_registry();
    let opts = RunOptions {
        settings: settings_with_count(&graph, &registry, 2),
        pin: PinMode::Off,
        ..RunOptions::default()
    };
    match run(&graph, &registry, &opts) {
        Ok(report) => {
            assert_eq!(report.nets.len(), 1000);
            assert_eq!(report.messages, 1000);
        }
        Err(e) => assert!(matches!(e, RunError::ThreadLimit { .. }), "{e}"),
    }
}

#[test]
fn pinning_modes() {
    let graph = src_snk(Link::default());
    let registry = smxrun::builtin_registry();
    let cores = smx_timing::sched::allowed_cores();
    let with = |pin: PinMode| {
        let opts = RunOptions {
            settings: settings_with_count(&graph, &registry, 10),
            pin,
            ..RunOptions::default()
        };
        run(&graph, &registry, &opts).unwrap()
    };
    let off = with(PinMode::Off);
    assert!(off.nets.iter().all(|n| n.core.is_none()));
    let auto = with(PinMode::Auto);
    if cores.len() >= 2 {
        assert!(
            auto.nets[0].core.is_some() && auto.nets[0].core != auto.nets[1].core,
            "{:?}",
            auto.nets
        );
    }
    if let Some(&first) = cores.first() {
        let list = with(PinMode::List(vec![first]));
        assert!(list.nets.iter().all(|n| n.core == Some(first)));
    }
    let bad = with(PinMode::List(vec![100_000]));
    assert!(bad.nets.iter().all(|n| n.core.is_none()));
    assert!(!bad.warnings.is_empty(), "a refused pin is a warning");
}

/// Producer and consumer pinned to one core wait by parking instead of spinning (a spinning
/// wait there keeps the other side from running); every message still arrives, in order.
#[test]
fn both_ends_on_one_core_deliver_everything() {
    let Some(&first) = smx_timing::sched::allowed_cores().first() else {
        eprintln!("no allowed core to pin to: skipped");
        return;
    };
    let registry = smxrun::builtin_registry();
    for len in [1, 8] {
        let graph = src_snk(Link {
            len: Some(len),
            ..Link::default()
        });
        let opts = RunOptions {
            settings: settings_with_count(&graph, &registry, 20_000),
            pin: PinMode::List(vec![first]),
            ..RunOptions::default()
        };
        let report = run(&graph, &registry, &opts).unwrap();
        assert_eq!(report.status, Status::Ok, "len {len}");
        assert!(report.nets.iter().all(|n| n.core == Some(first)), "len {len}");
        let snk = report.net("Snk").unwrap();
        assert_eq!(
            (snk.stats.u64("received"), snk.stats.u64("gaps")),
            (Some(20_000), Some(0))
        );
        let c = &report.channels[0];
        assert_eq!((c.written, c.read, c.left), (20_000, 20_000, 0), "len {len}");
    }
}

#[test]
fn a_net_far_from_its_expected_rate_is_flagged() {
    let graph = src_snk(Link::default());
    let registry = smxrun::builtin_registry();
    let mut settings = settings_with_count(&graph, &registry, 10);
    // Ten messages cannot take long enough to be near one iteration per hour.
    settings[0].expected_rate = Some(1);
    let opts = RunOptions {
        settings,
        ..RunOptions::default()
    };
    let report = run(&graph, &registry, &opts).unwrap();
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("Src#0") && w.contains("expected rate (1)")),
        "{:?}",
        report.warnings
    );
}

/// A held start asks its gate once every box has initialised: answered yes, the net runs as
/// without it; answered no, every net ends `stopped` without a step and nothing is written,
/// which is no error (the caller called the run off).
#[test]
fn a_held_start_runs_when_let_go_and_ends_stopped_when_called_off() {
    let graph = src_snk(Link::default());
    let registry = smxrun::builtin_registry();
    for go in [true, false] {
        let progress = smx_runtime::Progress::new();
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&asked);
        progress.hold_start(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            go
        });
        let opts = RunOptions {
            settings: settings_with_count(&graph, &registry, 1000),
            progress,
            ..RunOptions::default()
        };
        let report = run(&graph, &registry, &opts).expect("a called-off start is no error");
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        let (src, snk) = (report.net("Src").unwrap(), report.net("Snk").unwrap());
        if go {
            assert_eq!((src.loop_count, snk.loop_count), (1000, 1000));
            assert_eq!(report.status, Status::Ok);
        } else {
            assert_eq!((src.loop_count, snk.loop_count), (0, 0));
            assert_eq!((src.status, snk.status), (Status::Stopped, Status::Stopped));
            assert_eq!(report.channels[0].written, 0);
        }
        assert_balanced(&report);
    }
}
