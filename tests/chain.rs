//! Operator chaining (`--chain auto`): which boxes share a thread, and that a
//! chained net counts, fails, ends and stops exactly as one with a thread per box. The runs
//! are given one core (`PinMode::List([0])`) so that the threads outnumber the cores on any
//! machine. No test asserts timing.

mod common;
use common::settings::with_count as settings;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, ConfigValue, Flow, InPort, Io, OutPort, PortSpec};
use smx_graph::NetGraph;
use smx_runtime::ChainMode;
use smx_runtime::report::{Report, Status};
use smx_runtime::{Link, NetBuilder};
use smx_runtime::{PinMode, Registry, RunOptions, run};

/// Boxes of these tests beside the built-in ones: `faulty` (a chainable forwarder that fails
/// at its 10th step) and `greedy` (a chainable sink that reads with `read_blocking` until it
/// gets nothing, which its contract says it must not).
fn registry() -> Registry {
    fn faulty(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        let panics = config.str("fault")? == "panic";
        Ok(Box::new(Faulty { panics, steps: 0 }))
    }
    fn greedy(_: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(Greedy { received: 0 }))
    }
    fn split(_: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(Split))
    }
    const FAULTY: BoxSpec = BoxSpec::named("faulty")
        .inputs(&[PortSpec::new("data")])
        .outputs(&[PortSpec::new("data")])
        .config(&[ConfigKey::choice("fault", &["error", "panic"]).default_value("error")])
        .chainable()
        .create(faulty);
    const GREEDY: BoxSpec = BoxSpec::named("greedy")
        .inputs(&[PortSpec::new("data")])
        .chainable()
        .create(greedy);
    const SPLIT: BoxSpec = BoxSpec::named("split")
        .inputs(&[PortSpec::new("data")])
        .outputs(&[PortSpec::new("a"), PortSpec::new("b")])
        .chainable()
        .create(split);
    fn burst(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(Burst {
            left: config.int("count")?,
        }))
    }
    const BURST_KEYS: &[ConfigKey] = &[ConfigKey::int("count").default_value("1000")];
    const BURST: BoxSpec = BoxSpec::named("burst")
        .outputs(&[PortSpec::new("data")])
        .config(BURST_KEYS)
        .writes_in_batches()
        .create(burst);
    const TRICKLE: BoxSpec = BoxSpec::named("trickle")
        .outputs(&[PortSpec::new("data")])
        .config(BURST_KEYS)
        .create(burst);
    let mut registry = smxrun::builtin_registry();
    registry.register(BURST);
    registry.register(TRICKLE);
    registry.register(SPLIT);
    registry.register(FAULTY);
    registry.register(GREEDY);
    registry
}

struct Faulty {
    panics: bool,
    steps: u64,
}

impl BoxImpl for Faulty {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        self.steps += 1;
        if self.steps == 10 {
            if self.panics {
                panic!("follower exploded");
            }
            return Err(BoxError::new("follower refused"));
        }
        if let Some(msg) = io.read(InPort(0)) {
            let _ = io.write(OutPort(0), msg);
        }
        Ok(Flow::Return)
    }
}

/// A source that writes its messages 100 per step, as a link's source writes what arrived.
struct Burst {
    left: u64,
}

impl BoxImpl for Burst {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        for _ in 0..100 {
            if self.left == 0 {
                return Ok(Flow::End);
            }
            self.left -= 1;
            if io.write(OutPort(0), smx_box::Message::new(self.left, 1, &[])).is_err() {
                return Ok(Flow::End);
            }
        }
        Ok(Flow::Return)
    }
}

/// Writes each message to both its outputs.
struct Split;

impl BoxImpl for Split {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if let Some(msg) = io.read(InPort(0)) {
            let _ = io.write(OutPort(0), msg.clone());
            let _ = io.write(OutPort(1), msg);
        }
        Ok(Flow::Return)
    }
}

struct Greedy {
    received: u64,
}

impl BoxImpl for Greedy {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        while io.read_blocking(InPort(0)).is_some() {
            self.received += 1;
        }
        Ok(Flow::Return)
    }

    fn stats(&self) -> smx_box::Stats {
        smx_box::Stats::new().with("received", self.received)
    }
}

fn one_core(graph: &NetGraph, registry: &Registry, count: u64, chain: ChainMode) -> RunOptions {
    RunOptions {
        settings: settings(graph, registry, count),
        pin: PinMode::List(vec![0]),
        chain,
        ..RunOptions::default()
    }
}

fn chaining_note(report: &Report) -> Option<&String> {
    report.notes.iter().find(|w| w.starts_with("chaining:"))
}

fn assert_balanced(report: &Report) {
    for c in &report.channels {
        assert_eq!(c.written, c.read + c.overwritten + c.dropped + c.left, "{c:?}");
    }
}

/// `pairs` pairs `Src -> Snk` on channels of length `len`.
fn pairs(n: usize, len: u32) -> NetGraph {
    let mut net = NetBuilder::new();
    for _ in 0..n {
        let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
        let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
        let link = Link {
            len: Some(len),
            ..Link::default()
        };
        net.connect_with(src, "data", snk, "data", link);
    }
    net.build()
}

#[test]
fn pairs_sharing_a_core_run_chained_and_count_as_with_a_thread_per_box() {
    let registry = registry();
    let graph = pairs(3, 1);
    let chained = run(&graph, &registry, &one_core(&graph, &registry, 20_000, ChainMode::Auto)).unwrap();
    let threads = run(&graph, &registry, &one_core(&graph, &registry, 20_000, ChainMode::Off)).unwrap();
    let note = chaining_note(&chained).expect("the report says what was chained");
    assert!(note.contains("3 chains") && note.contains("Src#0 -> Snk#1"), "{note}");
    assert!(chaining_note(&threads).is_none(), "{:?}", threads.notes);
    for report in [&chained, &threads] {
        assert_eq!(report.status, Status::Ok);
        assert_balanced(report);
        for c in &report.channels {
            assert_eq!((c.written, c.read, c.dropped, c.left), (20_000, 20_000, 0, 0), "{c:?}");
        }
        for snk in report.nets.iter().filter(|n| n.name == "Snk") {
            assert_eq!(snk.stats.u64("received"), Some(20_000));
            assert_eq!(snk.stats.u64("gaps"), Some(0));
            assert_eq!(snk.stats.u64("out_of_order"), Some(0));
            assert_eq!(snk.loop_count, 20_000);
        }
    }
    // A follower runs where its head runs.
    for pair in chained.nets.chunks(2) {
        assert_eq!(pair[0].core, pair[1].core, "{pair:?}");
    }
}

#[test]
fn a_line_of_forwarders_is_one_chain_and_loses_nothing() {
    let registry = registry();
    // At 64 every link runs ahead of the next: a full channel steps the next link, whose own
    // writes step the one after it.
    for len in [1, 64] {
        let mut net = NetBuilder::new();
        let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
        let a = net.add_box("A", "smx_fwd", &[("data", true), ("data", false)]);
        let b = net.add_box("B", "smx_fwd", &[("data", true), ("data", false)]);
        let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
        let link = Link {
            len: Some(len),
            ..Link::default()
        };
        net.connect_with(src, "data", a, "data", link);
        net.connect_with(a, "data", b, "data", link);
        net.connect_with(b, "data", snk, "data", link);
        let graph = net.build();
        let report = run(&graph, &registry, &one_core(&graph, &registry, 50_000, ChainMode::Auto)).unwrap();
        let note = chaining_note(&report).expect("chained");
        assert!(note.contains("Src#0 -> A#1 -> B#2 -> Snk#3"), "{len}: {note}");
        assert_eq!(report.status, Status::Ok, "{len}");
        let snk = report.net("Snk").unwrap();
        assert_eq!(snk.stats.u64("received"), Some(50_000), "{len}");
        assert_eq!(snk.stats.u64("gaps"), Some(0), "{len}");
        assert_eq!(snk.stats.u64("out_of_order"), Some(0), "{len}");
        assert_balanced(&report);
    }
}

#[test]
fn long_fed_twice_or_pinned_links_keep_their_threads() {
    let registry = registry();
    // From a length of 256 on, threads of one core taking turns hand over enough per turn.
    let long = pairs(3, 256);
    let report = run(&long, &registry, &one_core(&long, &registry, 1_000, ChainMode::Auto)).unwrap();
    assert!(chaining_note(&report).is_none(), "{:?}", report.notes);
    // A channel of 64 chains only behind a box that never waits: behind one that may wait, the
    // follower would take its messages one at a time.
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let mid = net.add_box("Mid", "faulty", &[("data", true), ("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    let long = Link {
        len: Some(64),
        ..Link::default()
    };
    net.connect_with(src, "data", mid, "data", long);
    net.connect_with(mid, "data", snk, "data", long);
    let graph = net.build();
    let report = run(&graph, &registry, &one_core(&graph, &registry, 5, ChainMode::Auto)).unwrap();
    let note = chaining_note(&report).expect("Src and Mid chain");
    assert!(note.contains("(Src#0 -> Mid#1)"), "{note}");
    assert_eq!(report.net("Snk").unwrap().stats.u64("received"), Some(5));
    // A pair whose sink has a core of its own does not chain.
    let mut net = NetBuilder::new();
    let s3 = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let pinned = net.add_box("Pinned", "smx_snk_null", &[("data", true)]);
    let s4 = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let free = net.add_box("Free", "smx_snk_null", &[("data", true)]);
    net.connect(s3, "data", pinned, "data");
    net.connect(s4, "data", free, "data");
    let graph = net.build();
    let mut opts = one_core(&graph, &registry, 1_000, ChainMode::Auto);
    opts.settings[pinned].core = Some(0);
    let report = run(&graph, &registry, &opts).unwrap();
    let note = chaining_note(&report).expect("the free pair chains");
    assert!(note.contains("(Src#2 -> Free#3)") && !note.contains("Pinned"), "{note}");
    assert_eq!(report.net("Pinned").unwrap().stats.u64("received"), Some(1_000));
    assert_eq!(report.status, Status::Ok);
    // A box that feeds two boxes that write nowhere takes both as followers: its writes step
    // them in place, so neither can hold the other up. Behind two boxes that write on, it
    // stays the last of its chain (`a_split_into_forwarders_chains_no_further`).
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let split = net.add_box("Split", "split", &[("data", true), ("a", false), ("b", false)]);
    let left = net.add_box("Left", "smx_snk_null", &[("data", true)]);
    let right = net.add_box("Right", "smx_snk_null", &[("data", true)]);
    net.connect(src, "data", split, "data");
    net.connect(split, "a", left, "data");
    net.connect(split, "b", right, "data");
    let graph = net.build();
    let report = run(&graph, &registry, &one_core(&graph, &registry, 3_000, ChainMode::Auto)).unwrap();
    let note = chaining_note(&report).expect("all four chain");
    assert!(note.contains("(Src#0 -> Split#1 -> (Left#2 | Right#3))"), "{note}");
    for sink in ["Left", "Right"] {
        assert_eq!(report.net(sink).unwrap().stats.u64("received"), Some(3_000), "{sink}");
    }
    assert_balanced(&report);
}

#[test]
fn a_failing_follower_fails_alone_and_its_neighbours_end() {
    let registry = registry();
    for (fault, said) in [("error", "follower refused"), ("panic", "follower exploded")] {
        let mut net = NetBuilder::new();
        let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
        let mid = net.add_box("Mid", "faulty", &[("data", true), ("data", false)]);
        let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
        net.connect(src, "data", mid, "data");
        net.connect(mid, "data", snk, "data");
        let graph = net.build();
        let mut opts = one_core(&graph, &registry, 1_000_000_000, ChainMode::Auto);
        opts.settings[mid]
            .box_config
            .values
            .insert("fault".into(), ConfigValue::Str(fault.into()));
        let report = run(&graph, &registry, &opts).unwrap();
        assert!(chaining_note(&report).is_some(), "{:?}", report.notes);
        let mid = report.net("Mid").unwrap();
        assert_eq!(mid.status, Status::Failed, "{fault}");
        assert!(
            mid.error.as_deref().unwrap_or("").contains(said),
            "{fault}: {:?}",
            mid.error
        );
        assert_ne!(report.net("Src").unwrap().status, Status::Failed, "{fault}");
        assert_eq!(report.net("Snk").unwrap().status, Status::Ok, "{fault}");
        assert_eq!(report.net("Snk").unwrap().stats.u64("received"), Some(9), "{fault}");
        assert_balanced(&report);
    }
}

#[test]
fn a_chained_box_that_waits_on_its_input_anyway_gets_what_is_there_and_loses_nothing() {
    let registry = registry();
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let snk = net.add_box("Snk", "greedy", &[("data", true)]);
    net.connect(src, "data", snk, "data");
    let src2 = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let snk2 = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    net.connect(src2, "data", snk2, "data");
    let graph = net.build();
    let report = run(&graph, &registry, &one_core(&graph, &registry, 10_000, ChainMode::Auto)).unwrap();
    assert!(chaining_note(&report).unwrap().contains("Src#0 -> Snk#1"));
    assert_eq!(report.status, Status::Ok);
    assert_eq!(report.nets[1].stats.u64("received"), Some(10_000));
    assert_balanced(&report);
}

#[test]
fn a_stop_ends_a_chain_that_would_run_for_ever_and_its_books_balance() {
    let registry = registry();
    // At 64 the heads run ahead of their followers when the stop comes.
    for len in [1, 64] {
        let graph = pairs(3, len);
        let opts = one_core(&graph, &registry, u64::MAX, ChainMode::Auto);
        let stop: Arc<AtomicBool> = opts.stop.clone();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::SeqCst);
        });
        let report = run(&graph, &registry, &opts).unwrap();
        stopper.join().unwrap();
        assert!(chaining_note(&report).is_some(), "{len}");
        assert_eq!(report.status, Status::Stopped, "{len}: {:?}", report.nets);
        assert_balanced(&report);
        for c in &report.channels {
            assert!(c.read > 0 && c.settled, "{len}: {c:?}");
        }
    }
}

/// A chain headed by `lead` (never waits, `count` messages, each step computing for `busy`)
/// into `lag` on a channel of `len`; `lag` records, per message, how many messages the head
/// had written when it read that one.
fn run_ahead(len: u32, count: u64, busy: Duration) -> (Report, u64) {
    const PORT: &[PortSpec] = &[PortSpec::new("data")];
    const COUNT: &[ConfigKey] = &[ConfigKey::int("count")];
    let written = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let most_ahead = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut registry = registry();
    let w = written.clone();
    registry.register(
        BoxSpec::named("lead")
            .outputs(PORT)
            .config(COUNT)
            .never_waits()
            .factory(move |config| {
                Ok(Box::new(Lead {
                    count: config.int("count")?,
                    busy,
                    written: w.clone(),
                }))
            }),
    );
    let (w, m) = (written.clone(), most_ahead.clone());
    registry.register(BoxSpec::named("lag").inputs(PORT).chainable().factory(move |_| {
        Ok(Box::new(Lag {
            read: 0,
            written: w.clone(),
            most_ahead: m.clone(),
        }))
    }));
    let mut net = NetBuilder::new();
    let src = net.add_box("Lead", "lead", &[("data", false)]);
    let snk = net.add_box("Lag", "lag", &[("data", true)]);
    let link = Link {
        len: Some(len),
        ..Link::default()
    };
    net.connect_with(src, "data", snk, "data", link);
    let graph = net.build();
    let report = run(&graph, &registry, &one_core(&graph, &registry, count, ChainMode::Auto)).unwrap();
    (report, most_ahead.load(Ordering::SeqCst))
}

struct Lead {
    count: u64,
    busy: Duration,
    written: Arc<std::sync::atomic::AtomicU64>,
}

impl BoxImpl for Lead {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let start = std::time::Instant::now();
        while start.elapsed() < self.busy {
            std::hint::spin_loop();
        }
        let seq = self.written.fetch_add(1, Ordering::SeqCst);
        let _ = io.write(OutPort(0), smx_box::Message::now(seq, b"x"));
        Ok(if seq + 1 >= self.count { Flow::End } else { Flow::Return })
    }
}

struct Lag {
    read: u64,
    written: Arc<std::sync::atomic::AtomicU64>,
    most_ahead: Arc<std::sync::atomic::AtomicU64>,
}

impl BoxImpl for Lag {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if let Some(msg) = io.read(InPort(0)) {
            assert_eq!(msg.seq, self.read, "in order");
            self.read += 1;
            let ahead = self.written.load(Ordering::SeqCst) - self.read;
            self.most_ahead.fetch_max(ahead, Ordering::SeqCst);
        }
        Ok(Flow::Return)
    }

    fn stats(&self) -> smx_box::Stats {
        smx_box::Stats::new().with("received", self.read)
    }
}

#[test]
fn a_head_that_never_waits_runs_a_channelful_ahead_of_its_follower() {
    let (report, most_ahead) = run_ahead(64, 20_000, Duration::ZERO);
    assert!(chaining_note(&report).is_some(), "{:?}", report.notes);
    assert_eq!(report.status, Status::Ok);
    assert_eq!(report.net("Lag").unwrap().stats.u64("received"), Some(20_000));
    assert_balanced(&report);
    // The follower ran when the channel was full (64 waiting, and the write that found it
    // full), never later.
    assert_eq!(most_ahead, 64, "the most messages written and not yet read");
}

#[test]
fn a_head_that_computes_for_longer_than_a_clock_tick_has_its_follower_run_after_each_step() {
    // A tick of the coarse clock is at most 10 ms (HZ >= 100).
    let (report, most_ahead) = run_ahead(64, 8, Duration::from_millis(12));
    assert!(chaining_note(&report).is_some(), "{:?}", report.notes);
    assert_eq!(report.net("Lag").unwrap().stats.u64("received"), Some(8));
    assert_eq!(most_ahead, 0, "each message was read before the head's next step");
}

/// A follower that keeps what it took until its input is empty ([`BoxImpl::idle`]) gives it
/// back while the head runs on without writing: its drain came after a tick of the coarse
/// clock, and the next one finds its input empty.
#[test]
fn a_follower_releases_what_it_holds_while_its_head_runs_on_without_writing() {
    const PORT: &[PortSpec] = &[PortSpec::new("data")];
    let released = Arc::new(AtomicBool::new(false));
    let mut registry = registry();
    let r = released.clone();
    registry.register(BoxSpec::named("once").outputs(PORT).never_waits().factory(move |_| {
        Ok(Box::new(Once {
            wrote: false,
            saw_release: false,
            released: r.clone(),
            started: std::time::Instant::now(),
        }))
    }));
    let r = released.clone();
    registry.register(BoxSpec::named("keeper").inputs(PORT).chainable().factory(move |_| {
        Ok(Box::new(Keeper {
            held: None,
            released: r.clone(),
        }))
    }));
    let mut net = NetBuilder::new();
    let src = net.add_box("Once", "once", &[("data", false)]);
    let snk = net.add_box("Keeper", "keeper", &[("data", true)]);
    net.connect_with(src, "data", snk, "data", Link::default());
    let graph = net.build();
    let report = run(&graph, &registry, &one_core(&graph, &registry, 0, ChainMode::Auto)).unwrap();
    assert!(chaining_note(&report).is_some(), "{:?}", report.notes);
    assert_eq!(report.status, Status::Ok);
    assert_eq!(
        report.net("Once").unwrap().stats.u64("released_while_running"),
        Some(1),
        "the follower kept its message until the head had ended"
    );
}

/// Writes one message, then steps without writing until its follower released it (or
/// [`Once::PATIENCE`] passed), and ends.
struct Once {
    wrote: bool,
    /// The follower had released the message when this box decided to end.
    saw_release: bool,
    released: Arc<AtomicBool>,
    started: std::time::Instant,
}

impl Once {
    const PATIENCE: Duration = Duration::from_secs(20);
}

impl BoxImpl for Once {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if !self.wrote {
            self.wrote = true;
            let _ = io.write(OutPort(0), smx_box::Message::now(0, b"x"));
            return Ok(Flow::Return);
        }
        self.saw_release = self.released.load(Ordering::SeqCst);
        let done = self.saw_release || self.started.elapsed() > Self::PATIENCE;
        Ok(if done { Flow::End } else { Flow::Return })
    }

    fn stats(&self) -> smx_box::Stats {
        smx_box::Stats::new().with("released_while_running", u64::from(self.saw_release))
    }
}

/// Keeps the message it read until its idle, which says so.
struct Keeper {
    held: Option<smx_box::Message>,
    released: Arc<AtomicBool>,
}

impl BoxImpl for Keeper {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if let Some(msg) = io.read(InPort(0)) {
            self.held = Some(msg);
        }
        Ok(Flow::Return)
    }

    fn idle(&mut self) -> Result<Flow, BoxError> {
        if self.held.take().is_some() {
            self.released.store(true, Ordering::SeqCst);
        }
        Ok(Flow::Return)
    }
}

/// Over a channel long enough for threads of one core to take turns, a follower chains behind
/// a head whose step writes all it has at hand, and behind no other head that may wait.
#[test]
fn a_head_that_writes_in_batches_chains_over_a_long_channel() {
    let registry = registry();
    for (head, chained) in [("burst", true), ("trickle", false)] {
        let mut net = NetBuilder::new();
        let src = net.add_box("Head", head, &[("data", false)]);
        let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
        let link = Link {
            len: Some(64),
            ..Link::default()
        };
        net.connect_with(src, "data", snk, "data", link);
        let graph = net.build();
        let report = run(&graph, &registry, &one_core(&graph, &registry, 5_000, ChainMode::Auto)).unwrap();
        let note = chaining_note(&report);
        assert_eq!(note.is_some(), chained, "{head}: {:?}", report.notes);
        if chained {
            assert!(note.unwrap().contains("Head#0 -> Snk#1"), "{note:?}");
        }
        assert_eq!(report.status, Status::Ok, "{head}");
        assert_balanced(&report);
        assert_eq!(report.channels[0].read, 5_000, "{head}");
    }
}

/// The runtime names the setting that would undo a decision in its driver's words: a host
/// program's are the `RunOptions` fields, the command line's its flags.
#[test]
fn the_chaining_note_names_the_setting_in_the_drivers_words() {
    let registry = registry();
    let graph = pairs(3, 1);
    let library = run(&graph, &registry, &one_core(&graph, &registry, 1_000, ChainMode::Auto)).unwrap();
    let note = chaining_note(&library).expect("the report says what was chained");
    assert!(
        note.contains("(chain = ChainMode::Off keeps a thread per box)") && !note.contains("--"),
        "{note}"
    );
    let cli = RunOptions {
        lever_words: smx_runtime::LeverWords(smxrun::cli::words::flag_words),
        ..one_core(&graph, &registry, 1_000, ChainMode::Auto)
    };
    let report = run(&graph, &registry, &cli).unwrap();
    let note = chaining_note(&report).expect("the report says what was chained");
    assert!(note.contains("(--chain off keeps a thread per box)"), "{note}");
}

/// `Src -> smx_rn -> (Snk | Snk)` on channels of length `len`.
fn fan_out(len: u32) -> NetGraph {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let rn = net.add_routing_node();
    let link = Link {
        len: Some(len),
        ..Link::default()
    };
    net.connect_with(src, "data", rn, "data", link);
    for _ in 0..2 {
        let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
        net.connect_with(rn, "data", snk, "data", link);
    }
    net.build()
}

#[test]
fn a_fan_out_runs_on_its_producers_thread_together_with_its_consumers() {
    let registry = registry();
    for len in [1, 64] {
        let graph = fan_out(len);
        let chained = run(&graph, &registry, &one_core(&graph, &registry, 20_000, ChainMode::Auto)).unwrap();
        let threads = run(&graph, &registry, &one_core(&graph, &registry, 20_000, ChainMode::Off)).unwrap();
        let note = chaining_note(&chained).expect("chained");
        assert!(note.contains("(Src#0 -> smx_rn#1 -> (Snk#2 | Snk#3))"), "{len}: {note}");
        for report in [&chained, &threads] {
            assert_eq!(report.status, Status::Ok, "{len}");
            assert_balanced(report);
            assert_eq!(report.net("smx_rn").unwrap().loop_count, 20_000, "{len}");
            for snk in report.nets.iter().filter(|n| n.name == "Snk") {
                assert_eq!(snk.stats.u64("received"), Some(20_000), "{len}");
                assert_eq!(snk.stats.u64("gaps"), Some(0), "{len}");
                assert_eq!(snk.stats.u64("out_of_order"), Some(0), "{len}");
            }
        }
    }
}

#[test]
fn a_split_into_forwarders_chains_no_further() {
    // The forwarders write on: blocked on such a write, one would hold its sibling up.
    let registry = registry();
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let split = net.add_box("Split", "split", &[("data", true), ("a", false), ("b", false)]);
    net.connect(src, "data", split, "data");
    for port in ["a", "b"] {
        let fwd = net.add_box("Fwd", "smx_fwd", &[("data", true), ("data", false)]);
        let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
        net.connect(split, port, fwd, "data");
        net.connect(fwd, "data", snk, "data");
    }
    let graph = net.build();
    let report = run(&graph, &registry, &one_core(&graph, &registry, 3_000, ChainMode::Auto)).unwrap();
    let note = chaining_note(&report).expect("chained");
    assert!(
        note.contains("(Src#0 -> Split#1; Fwd#2 -> Snk#3; Fwd#4 -> Snk#5)"),
        "{note}"
    );
    for snk in report.nets.iter().filter(|n| n.name == "Snk") {
        assert_eq!(snk.stats.u64("received"), Some(3_000));
    }
    assert_balanced(&report);
}

#[test]
fn a_fan_in_leads_a_chain_with_its_consumer_and_ends_after_its_last_producer() {
    // Producers that end at very different times: the node must see each end, also one that
    // comes while it waits on the other input. Both one core and two run the threads.
    let registry = registry();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pins: Vec<PinMode> = if cores >= 2 {
        vec![PinMode::List(vec![0]), PinMode::List(vec![0, 1])]
    } else {
        vec![PinMode::List(vec![0])]
    };
    for pin in pins {
        // A count of 0 would be endless.
        for round in 1..=20 {
            let mut net = NetBuilder::new();
            let short = net.add_box("Src", "smx_src_rand", &[("data", false)]);
            let long = net.add_box("Src", "smx_src_rand", &[("data", false)]);
            let rn = net.add_routing_node();
            let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
            net.connect(short, "data", rn, "data");
            net.connect(long, "data", rn, "data");
            net.connect(rn, "data", snk, "data");
            let graph = net.build();
            let mut opts = one_core(&graph, &registry, 5_000, ChainMode::Auto);
            opts.pin = pin.clone();
            opts.settings[short]
                .box_config
                .values
                .insert("count".into(), ConfigValue::Int(round));
            let report = run(&graph, &registry, &opts).unwrap();
            let note = chaining_note(&report).expect("chained");
            assert!(note.contains("(smx_rn#2 -> Snk#3)"), "{note}");
            assert_eq!(report.status, Status::Ok, "{pin:?} {round}");
            let snk = report.net("Snk").unwrap();
            assert_eq!(snk.stats.u64("received"), Some(5_000 + round), "{pin:?} {round}");
            // A routing node's loop count is what it forwarded: an input's end is no step.
            let node = report.net("smx_rn").unwrap();
            assert_eq!(node.loop_count, 5_000 + round, "{pin:?} {round}");
            assert_eq!(snk.stats.u64("gaps"), Some(0), "{pin:?} {round}");
            assert_balanced(&report);
        }
    }
}

#[test]
fn a_failing_sink_of_a_chained_fan_out_fails_alone_and_its_sibling_gets_everything() {
    let registry = registry();
    for (fault, said) in [("error", "follower refused"), ("panic", "follower exploded")] {
        let mut net = NetBuilder::new();
        let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
        let rn = net.add_routing_node();
        // `faulty` with its output left open is a sink.
        let bad = net.add_box("Bad", "faulty", &[("data", true), ("data", false)]);
        let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
        net.connect(src, "data", rn, "data");
        net.connect(rn, "data", bad, "data");
        net.connect(rn, "data", snk, "data");
        let graph = net.build();
        let mut opts = one_core(&graph, &registry, 5_000, ChainMode::Auto);
        opts.settings[bad]
            .box_config
            .values
            .insert("fault".into(), ConfigValue::Str(fault.into()));
        let report = run(&graph, &registry, &opts).unwrap();
        let note = chaining_note(&report).expect("chained");
        assert!(
            note.contains("(Src#0 -> smx_rn#1 -> (Bad#2 | Snk#3))"),
            "{fault}: {note}"
        );
        let bad = report.net("Bad").unwrap();
        assert_eq!(bad.status, Status::Failed, "{fault}");
        assert!(
            bad.error.as_deref().unwrap_or("").contains(said),
            "{fault}: {:?}",
            bad.error
        );
        for ok in ["Src", "smx_rn", "Snk"] {
            assert_eq!(report.net(ok).unwrap().status, Status::Ok, "{fault}: {ok}");
        }
        assert_eq!(report.net("Snk").unwrap().stats.u64("received"), Some(5_000), "{fault}");
        assert_eq!(report.net("smx_rn").unwrap().loop_count, 5_000, "{fault}");
        assert_balanced(&report);
    }
}

#[test]
fn a_fan_in_fed_over_a_decoupled_channel_keeps_its_thread_and_forwards_no_duplicate() {
    let registry = registry();
    let mut net = NetBuilder::new();
    let coupled = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let latest = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let rn = net.add_routing_node();
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    net.connect(coupled, "data", rn, "data");
    let decoupled = Link {
        decoupled_consumer: true,
        ..Link::default()
    };
    net.connect_with(latest, "data", rn, "data", decoupled);
    net.connect(rn, "data", snk, "data");
    let graph = net.build();
    let report = run(&graph, &registry, &one_core(&graph, &registry, 2_000, ChainMode::Auto)).unwrap();
    if let Some(note) = chaining_note(&report) {
        assert!(!note.contains("smx_rn"), "{note}");
    }
    let c = report
        .channels
        .iter()
        .find(|c| c.kind == "decoupled_consumer")
        .expect("the decoupled channel");
    let snk = report.net("Snk").unwrap();
    assert_eq!(
        snk.stats.u64("received"),
        Some(2_000 + c.read),
        "every coupled message and each new one of the decoupled side, nothing twice"
    );
    assert_eq!(report.status, Status::Ok);
}

#[test]
fn a_fan_out_to_many_sinks_is_one_chain_whose_note_names_a_few() {
    let registry = registry();
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let rn = net.add_routing_node();
    net.connect(src, "data", rn, "data");
    for _ in 0..500 {
        let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
        net.connect(rn, "data", snk, "data");
    }
    let graph = net.build();
    let report = run(&graph, &registry, &one_core(&graph, &registry, 200, ChainMode::Auto)).unwrap();
    let note = chaining_note(&report).expect("chained");
    assert!(
        note.contains("(Src#0 -> smx_rn#1 -> (Snk#2 | Snk#3 | Snk#4 | and 497 more))")
            && note.contains("501 threads fewer"),
        "{note}"
    );
    assert_eq!(report.status, Status::Ok);
    for snk in report.nets.iter().filter(|n| n.name == "Snk") {
        assert_eq!(snk.stats.u64("received"), Some(200));
        assert_eq!(snk.stats.u64("gaps"), Some(0));
    }
    assert_balanced(&report);
}

#[test]
fn a_box_that_never_waits_beside_others_on_a_shared_core_is_named() {
    let registry = registry();
    let graph = common::nets::src_snk(Link {
        decoupled_consumer: true,
        ..Link::default()
    });
    let busy = |report: &Report| report.warnings.iter().find(|w| w.starts_with("busy threads:")).cloned();
    let report = run(&graph, &registry, &one_core(&graph, &registry, 2000, ChainMode::Auto)).unwrap();
    let note = busy(&report).expect("a note on the sink that never waits");
    assert!(note.contains("Snk#1 reads only decoupled inputs"), "{note}");
    assert!(!note.contains("Src"), "a source waits on its full channel: {note}");
    // It offers the core after each step, so its feeder gets a turn at every one: it reads
    // each message again a few times while the next is on its way, not millions of times
    // while its feeder waits for the scheduler to take the core from it.
    let channel = &report.channels[0];
    assert_eq!(channel.read, 2000);
    assert!(
        channel.duplicated < 1000 * channel.read,
        "{} duplicates of 2000 messages",
        channel.duplicated
    );
    // With a core for each thread nothing is held up.
    if core_affinity::get_core_ids().is_some_and(|ids| ids.len() >= 2) {
        let opts = RunOptions {
            pin: PinMode::List(vec![0, 1]),
            ..one_core(&graph, &registry, 100, ChainMode::Auto)
        };
        let report = run(&graph, &registry, &opts).unwrap();
        assert_eq!(busy(&report), None, "{:?}", report.warnings);
    }
}

/// A source whose only output is decoupled never waits either: beside its consumer on one
/// core it offers the core after each step, so the consumer reads the messages instead of the
/// one or two the scheduler let it see while the source ran through the whole run.
#[test]
fn a_decoupled_source_beside_its_consumer_on_a_shared_core_is_named_and_offers_the_core() {
    let registry = registry();
    let graph = common::nets::src_snk(Link {
        decoupled_producer: true,
        ..Link::default()
    });
    let report = run(&graph, &registry, &one_core(&graph, &registry, 20_000, ChainMode::Auto)).unwrap();
    let note = report
        .warnings
        .iter()
        .find(|w| w.starts_with("busy threads:"))
        .expect("a note on the source that never waits");
    assert!(
        note.contains("Src#0 reads nothing and writes only decoupled outputs"),
        "{note}"
    );
    let channel = &report.channels[0];
    assert_eq!(channel.written, 20_000);
    assert_eq!(channel.read + channel.overwritten, 20_000);
    // Each step offers the core, so the consumer gets turns (most messages on an idle machine,
    // a few hundred at least beside other busy programs); when the source kept the core it read
    // one or two.
    assert!(
        channel.read > 100,
        "{} of 20000 messages read beside a source that keeps the core",
        channel.read
    );
}

/// A decoupled source whose spec does not say its step waits on nothing (a ZeroMQ source, a C
/// source that sleeps) gives its core away by itself: it is not named a busy thread.
#[test]
fn a_decoupled_source_that_may_wait_in_its_step_is_not_named_busy() {
    let registry = registry();
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "trickle", &[("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    let decoupled = Link {
        decoupled_producer: true,
        ..Link::default()
    };
    net.connect_with(src, "data", snk, "data", decoupled);
    let graph = net.build();
    let report = run(&graph, &registry, &one_core(&graph, &registry, 200, ChainMode::Auto)).unwrap();
    assert!(
        !report.warnings.iter().any(|w| w.starts_with("busy threads:")),
        "{:?}",
        report.warnings
    );
    assert_eq!(report.channels[0].written, 200);
}
