//! The box contract as a box author meets it: ports declared once in the spec, handles that are
//! positions, factories that capture host state, the end of a box whose inputs ended, and a
//! cleanup that fails. Nets are written in the language and run through the library, as
//! `smxrun` runs them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use smx_box::SpecBuilder;
use smx_box::prelude::*;
use smx_lang::compose::{CompileOptions, compile};
use smx_lang::diag::SourceFile;
use smx_runtime::config::ConfigLayers;
use smx_runtime::report::{Report, Status};
use smx_runtime::{Registry, RunError, RunOptions, run};

fn registry(extra: impl IntoIterator<Item = BoxSpec>) -> Registry {
    let mut registry = smxrun::builtin_registry();
    for spec in extra {
        registry.register(spec);
    }
    registry
}

fn try_run(text: &str, registry: &Registry, sets: &[&str]) -> Result<Report, RunError> {
    let compiled = compile(&SourceFile::new("t.smx", text), &CompileOptions::default());
    assert!(compiled.accepted(), "{:?}", compiled.diagnostics);
    let mut layers = ConfigLayers::new();
    for set in sets {
        layers.add_set(set).unwrap();
    }
    let opts = RunOptions {
        settings: layers.resolve(&compiled.graph, registry).unwrap(),
        ..RunOptions::default()
    };
    run(&compiled.graph, registry, &opts)
}

fn run_net(text: &str, registry: &Registry, sets: &[&str]) -> Report {
    try_run(text, registry, sets).expect("the net starts")
}

/// `pair(in a, in b, out sum)`: the spec's first input is `a`, the second `b`.
const PAIR: BoxSpec = BoxSpec::named("t_pair")
    .inputs(&[PortSpec::new("a"), PortSpec::new("b")])
    .outputs(&[PortSpec::new("diff")])
    .create(|_| Ok(Box::new(Diff)));

struct Diff;

impl BoxImpl for Diff {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let (Some(a), Some(b)) = (io.read(InPort(0)), io.read(InPort(1))) else {
            return Ok(Flow::Return);
        };
        // a's sequence number minus b's: 0 for every message when the ports are matched right.
        let diff = a.payload()[0].wrapping_sub(b.payload()[0]);
        let _ = io.write(OutPort(0), a.with_payload(&[diff]));
        Ok(Flow::Return)
    }
}

/// `t_const(out data)`: sends `count` one-byte messages holding `byte`.
const CONST: BoxSpec = BoxSpec::named("t_const")
    .outputs(&[PortSpec::new("data")])
    .config(&[
        ConfigKey::int("count").default_value("5"),
        ConfigKey::int("byte").default_value("0"),
    ])
    .create(|config| {
        Ok(Box::new(Const {
            left: config.int("count")?,
            byte: config.int("byte")? as u8,
        }))
    });

struct Const {
    left: u64,
    byte: u8,
}

impl BoxImpl for Const {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        self.left -= 1;
        let _ = io.write(OutPort(0), Message::now(self.left, &[self.byte]));
        Ok(if self.left == 0 { Flow::End } else { Flow::Return })
    }
}

/// `t_collect(in data)`: adds every byte into a counter the host program holds.
fn collect_spec(total: Arc<AtomicU64>) -> BoxSpec {
    const DECLARED: SpecBuilder = BoxSpec::named("t_collect").inputs(&[PortSpec::new("data")]);
    DECLARED.factory(move |_| Ok(Box::new(Collect(total.clone()))))
}

struct Collect(Arc<AtomicU64>);

impl BoxImpl for Collect {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if let Some(msg) = io.read(InPort(0)) {
            self.0.fetch_add(u64::from(msg.payload()[0]), Ordering::Relaxed);
        }
        Ok(Flow::Return)
    }
}

#[test]
fn handles_follow_the_spec_whatever_order_the_net_declares_ports_in() {
    let total = Arc::new(AtomicU64::new(0));
    let reg = registry([PAIR, CONST, collect_spec(total.clone())]);
    // The net declares b before a; A sends 7s into a, B sends 3s into b: 7 - 3 = 4 each time.
    let text = "A = box t_const( out a(data) )
B = box t_const( out b(data) )
P = box t_pair( in b, in a, out diff )
C = box t_collect( in diff(data) )
connect (A | B) . P . C
";
    let report = run_net(text, &reg, &["A.byte=7", "B.byte=3"]);
    assert_eq!(report.status, Status::Ok, "{report:?}");
    assert_eq!(total.load(Ordering::Relaxed), 5 * 4);
}

#[test]
fn a_factory_closure_shares_state_with_the_host_program() {
    let total = Arc::new(AtomicU64::new(0));
    let reg = registry([CONST, collect_spec(total.clone())]);
    let report = run_net(
        "A = box t_const( out data )\nC = box t_collect( in data )\nconnect A.C\n",
        &reg,
        &["A.byte=2", "A.count=10"],
    );
    assert_eq!(report.status, Status::Ok);
    assert_eq!(total.load(Ordering::Relaxed), 20);
}

/// `t_spin(in data)`: takes what comes and always asks to go on.
const SPIN: BoxSpec = BoxSpec::named("t_spin")
    .inputs(&[PortSpec::new("data")])
    .create(|_| Ok(Box::new(Spin)));

struct Spin;

impl BoxImpl for Spin {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let _ = io.read(InPort(0));
        Ok(Flow::Continue)
    }
}

#[test]
fn a_box_that_always_continues_ends_once_its_inputs_have_ended() {
    let reg = registry([CONST, SPIN]);
    let report = run_net(
        "A = box t_const( out data )\nS = box t_spin( in data )\nconnect A.S\n",
        &reg,
        &[],
    );
    assert_eq!(report.status, Status::Ok);
    let spin = report.net("S").unwrap();
    assert_eq!(spin.status, Status::Ok);
    // Five messages and at most one step that found the end.
    assert!((5..=6).contains(&spin.loop_count), "{}", spin.loop_count);
}

/// `t_flush(in data)`: its cleanup fails, as a flush onto a full disk does.
const FLUSH: BoxSpec = BoxSpec::named("t_flush")
    .inputs(&[PortSpec::new("data")])
    .create(|_| Ok(Box::new(Flush)));

struct Flush;

impl BoxImpl for Flush {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let _ = io.read(InPort(0));
        Ok(Flow::Return)
    }

    fn cleanup(&mut self) -> Result<(), BoxError> {
        Err(BoxError::new("cannot write: No space left on device"))
    }
}

#[test]
fn a_cleanup_that_fails_fails_the_box_and_the_run() {
    let reg = registry([CONST, FLUSH]);
    let report = run_net(
        "A = box t_const( out data )\nF = box t_flush( in data )\nconnect A.F\n",
        &reg,
        &[],
    );
    let f = report.net("F").unwrap();
    assert_eq!(f.status, Status::Failed);
    assert!(f.error.as_deref().unwrap().contains("No space left"), "{:?}", f.error);
    assert_eq!(report.status, Status::Failed);
}

#[test]
fn a_box_that_cannot_be_created_stops_the_run_before_any_step() {
    let reg = registry([CONST]);
    // size over the maximum: smx_src_rand's check refuses it before any thread starts.
    let err = try_run(
        "A = box t_const( out data )\nB = box smx_src_rand( out data )\nS = box smx_snk_null( in data )\nN = box smx_snk_null( in data )\nconnect A.S | B.N\n",
        &reg,
        &["B.size=999999999999"],
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, RunError::BadValues(_)), "{text}");
    assert!(text.contains("B#") && text.contains("size"), "{text}");
}

#[test]
fn every_bad_value_is_named_not_the_first_alone() {
    let reg = smxrun::builtin_registry();
    let err = try_run(
        "A = box smx_src_rand( out data )\nB = box smx_src_rand( out data )\nS = box smx_snk_null( in data )\nN = box smx_snk_null( in data )\nconnect A.S | B.N\n",
        &reg,
        &["A.size=999999999999", "B.size=888888888888"],
    )
    .unwrap_err();
    let text = err.to_string();
    let RunError::BadValues(values) = &err else {
        panic!("{text}")
    };
    let instances: Vec<_> = values.iter().map(|v| v.instance.as_str()).collect();
    assert_eq!(instances, ["A#0", "B#2"], "{text}");
    assert!(
        text.starts_with("2 boxes have bad values:") && text.contains("size"),
        "{text}"
    );
}

#[test]
fn stats_reach_the_report_typed_and_in_order() {
    let reg = registry([]);
    let report = run_net(
        "S = box smx_src_rand( out data )\nN = box smx_snk_null( in data )\nconnect S.N\n",
        &reg,
        &["S.count=3"],
    );
    let n = report.net("N").unwrap();
    let names: Vec<&str> = n.stats.entries.iter().map(|(k, _)| *k).collect();
    assert_eq!(&names[..3], ["received", "gaps", "out_of_order"]);
    assert_eq!(n.stats.u64("received"), Some(3));
    let json = smx_runtime::report::json::render(&report);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let node = value["nets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "N")
        .unwrap();
    assert_eq!(node["stats"]["received"], 3);
}

/// `t_slow(out data)`: two messages with a pause between them that is long against the
/// sink's read timeout, then the end.
const SLOW: BoxSpec = BoxSpec::named("t_slow")
    .outputs(&[PortSpec::new("data")])
    .create(|_| Ok(Box::new(Slow(0))));

struct Slow(u64);

impl BoxImpl for Slow {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        self.0 += 1;
        if self.0 == 2 {
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        let _ = io.write(OutPort(0), Message::now(self.0, &[1]));
        Ok(if self.0 == 2 { Flow::End } else { Flow::Return })
    }
}

/// `t_watchdog(in data)`: waits at most 20 ms for each message and counts the silences, one
/// per step that found nothing although its input had not ended.
fn watchdog_spec(silences: Arc<AtomicU64>, received: Arc<AtomicU64>) -> BoxSpec {
    const DECLARED: SpecBuilder = BoxSpec::named("t_watchdog").inputs(&[PortSpec::new("data")]);
    DECLARED.factory(move |_| Ok(Box::new(Watchdog(silences.clone(), received.clone()))))
}

struct Watchdog(Arc<AtomicU64>, Arc<AtomicU64>);

impl BoxImpl for Watchdog {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        ctx.set_read_timeout(InPort(0), Some(std::time::Duration::from_millis(20)));
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        match io.read(InPort(0)) {
            Some(_) => self.1.fetch_add(1, Ordering::Relaxed),
            None if !io.input_ended(InPort(0)) => self.0.fetch_add(1, Ordering::Relaxed),
            None => 0,
        };
        Ok(Flow::Return)
    }
}

#[test]
fn a_read_timeout_lets_the_box_step_on_silence_and_loses_nothing() {
    let (silences, received) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let reg = registry([SLOW, watchdog_spec(silences.clone(), received.clone())]);
    let report = run_net(
        "S = box t_slow( out data )\nW = box t_watchdog( in data )\nconnect S.W\n",
        &reg,
        &[],
    );
    assert_eq!(report.status, Status::Ok, "{report:?}");
    assert_eq!(received.load(Ordering::Relaxed), 2);
    // The source is silent for 300 ms: the 20 ms timeout must have fired in that gap.
    assert!(
        silences.load(Ordering::Relaxed) >= 1,
        "the watchdog never stepped on silence"
    );
}

/// `t_impatient(out data)`: sends `count` messages, each waiting at most 1 ms for room, and
/// counts the writes that timed out.
fn impatient_spec(timeouts: Arc<AtomicU64>) -> BoxSpec {
    const DECLARED: SpecBuilder = BoxSpec::named("t_impatient")
        .outputs(&[PortSpec::new("data")])
        .config(&[ConfigKey::int("count").default_value("20")]);
    DECLARED.factory(move |config| {
        Ok(Box::new(Impatient {
            left: config.int("count")?,
            timeouts: timeouts.clone(),
        }))
    })
}

struct Impatient {
    left: u64,
    timeouts: Arc<AtomicU64>,
}

impl BoxImpl for Impatient {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        self.left -= 1;
        let msg = Message::now(self.left, &[1]);
        match io.write_within(OutPort(0), msg, std::time::Duration::from_millis(1)) {
            Ok(()) => {}
            Err(WriteError::TimedOut) => {
                self.timeouts.fetch_add(1, Ordering::Relaxed);
            }
            Err(WriteError::Disconnected) => return Ok(Flow::End),
        }
        Ok(if self.left == 0 { Flow::End } else { Flow::Return })
    }
}

/// `t_sluggish(in data)`: takes one message per 30 ms.
const SLUGGISH: BoxSpec = BoxSpec::named("t_sluggish")
    .inputs(&[PortSpec::new("data")])
    .create(|_| Ok(Box::new(Sluggish)));

struct Sluggish;

impl BoxImpl for Sluggish {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let _ = io.read(InPort(0));
        std::thread::sleep(std::time::Duration::from_millis(30));
        Ok(Flow::Return)
    }
}

#[test]
fn a_write_timeout_drops_the_message_and_books_it() {
    let timeouts = Arc::new(AtomicU64::new(0));
    let reg = registry([impatient_spec(timeouts.clone()), SLUGGISH]);
    let report = run_net(
        "S = box t_impatient( out data )\nK = box t_sluggish( in data )\nconnect S.K\n",
        &reg,
        &["S.count=10"],
    );
    assert_eq!(report.status, Status::Ok, "{report:?}");
    let c = &report.channels[0];
    // The consumer takes one message per 30 ms and the producer waits 1 ms: most writes give up.
    let timed_out = timeouts.load(Ordering::Relaxed);
    assert!(timed_out >= 1, "no write timed out");
    assert_eq!(c.written, 10);
    assert_eq!(c.dropped, timed_out, "{c:?}");
    assert_eq!(c.read + c.dropped + c.left + c.overwritten, 10, "{c:?}");
}

/// `t_listener(in data)`: after each message, waits at most 20 ms for the next one inside its
/// step and counts the waits that ran out.
fn listener_spec(silences: Arc<AtomicU64>) -> BoxSpec {
    const DECLARED: SpecBuilder = BoxSpec::named("t_listener").inputs(&[PortSpec::new("data")]);
    DECLARED.factory(move |_| Ok(Box::new(Listener(silences.clone()))))
}

struct Listener(Arc<AtomicU64>);

impl BoxImpl for Listener {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let _ = io.read(InPort(0));
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(20);
        if !io.wait_until(InPort(0), deadline) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Flow::Return)
    }
}

#[test]
fn a_wait_with_a_deadline_inside_a_step_runs_out_on_silence() {
    let silences = Arc::new(AtomicU64::new(0));
    let reg = registry([SLOW, listener_spec(silences.clone())]);
    let report = run_net(
        "S = box t_slow( out data )\nL = box t_listener( in data )\nconnect S.L\n",
        &reg,
        &[],
    );
    assert_eq!(report.status, Status::Ok, "{report:?}");
    assert_eq!(report.channels[0].read, 2);
    // The source is silent for 300 ms after its first message.
    assert!(silences.load(Ordering::Relaxed) >= 1, "the wait never ran out");
}
