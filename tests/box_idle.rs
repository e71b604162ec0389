//! `BoxImpl::idle`: a box that holds work across steps is asked to release it whenever its
//! thread may wait or nothing new came: before the firing rule waits; on a chain's thread,
//! before any box ahead of it steps that may wait, after a write that stepped it in place
//! when the writer may still wait, and after a pass that brought it nothing; after every
//! step in a cyclic executive. Only boxes ahead that never wait let it keep collecting. The
//! boxes here keep books of what they hold; no assertion depends on timing.

mod common;
use common::settings::with_count as settings;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use smx_box::PortSpec;
use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, ConfigValue, Flow, InPort, Io, Message, OutPort};
use smx_graph::NetGraph;
use smx_runtime::ChainMode;
use smx_runtime::NetBuilder;
use smx_runtime::report::{Report, Status};
use smx_runtime::{PinMode, Registry, RunOptions, run};

/// What the holder holds and released, shared with the boxes that check it.
#[derive(Default)]
struct Books {
    held: AtomicU64,
    max_held: AtomicU64,
    released: AtomicU64,
    /// Checks that found messages still held (`check = at_step`, `after_write`), or waited in
    /// vain for their release (`check = wait`).
    unreleased: AtomicU64,
}

const IN: &[PortSpec] = &[PortSpec::new("data")];
const OUT: &[PortSpec] = &[PortSpec::new("data")];
const HOLDER_KEYS: &[ConfigKey] =
    &[ConfigKey::choice("at_idle", &["release", "fail", "panic", "end"]).default_value("release")];
const FEED_KEYS: &[ConfigKey] = &[
    ConfigKey::int("count").default_value("100"),
    ConfigKey::int("per_step").default_value("1"),
    ConfigKey::choice("check", &["none", "at_step", "after_write", "wait"]).default_value("none"),
];
const MID_KEYS: &[ConfigKey] = &[
    ConfigKey::int("every").default_value("1"),
    ConfigKey::choice("check", &["none", "at_step"]).default_value("none"),
];

/// `holder`: a chainable sink that keeps every message it reads until `idle` (or `cleanup`)
/// releases them; `at_idle` makes `idle` fail, panic or end the box instead. `feed`: `count`
/// messages, `per_step` per step, checking the holder's books as `check` says. `mid`: a
/// chainable forwarder of every `every`-th message that may check the books at each step.
/// `feed_never_waits` and `mid_never_waits` are the same boxes saying they never wait.
fn registry(books: &Arc<Books>) -> Registry {
    let mut registry = smxrun::builtin_registry();
    let b = books.clone();
    let holder = BoxSpec::named("holder").inputs(IN).config(HOLDER_KEYS).chainable();
    registry.register(holder.factory(move |config: &BoxConfig| {
        let at_idle = config.str("at_idle")?.to_string();
        Ok(Box::new(Holder {
            books: b.clone(),
            at_idle,
        }) as Box<dyn BoxImpl>)
    }));
    for (name, never_waits) in [("feed", false), ("feed_never_waits", true)] {
        let b = books.clone();
        let spec = BoxSpec::named(name).outputs(OUT).config(FEED_KEYS);
        let spec = if never_waits { spec.never_waits() } else { spec };
        registry.register(spec.factory(move |config: &BoxConfig| {
            Ok(Box::new(Feed {
                books: b.clone(),
                count: config.int("count")?,
                per_step: config.int("per_step")?,
                check: config.str("check")?.to_string(),
                sent: 0,
            }) as Box<dyn BoxImpl>)
        }));
    }
    for (name, never_waits) in [("mid", false), ("mid_never_waits", true)] {
        let b = books.clone();
        let spec = BoxSpec::named(name)
            .inputs(IN)
            .outputs(OUT)
            .config(MID_KEYS)
            .chainable();
        let spec = if never_waits { spec.never_waits() } else { spec };
        registry.register(spec.factory(move |config: &BoxConfig| {
            Ok(Box::new(Mid {
                books: b.clone(),
                every: config.int("every")?.max(1),
                check: config.str("check")? == "at_step",
                seen: 0,
            }) as Box<dyn BoxImpl>)
        }));
    }
    registry
}

struct Holder {
    books: Arc<Books>,
    at_idle: String,
}

impl Holder {
    fn release(&self) {
        let held = self.books.held.swap(0, Ordering::SeqCst);
        self.books.released.fetch_add(held, Ordering::SeqCst);
    }
}

impl BoxImpl for Holder {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if io.read(InPort(0)).is_some() {
            let held = self.books.held.fetch_add(1, Ordering::SeqCst) + 1;
            self.books.max_held.fetch_max(held, Ordering::SeqCst);
        }
        Ok(Flow::Return)
    }

    fn idle(&mut self) -> Result<Flow, BoxError> {
        match self.at_idle.as_str() {
            "fail" => Err(BoxError::new("the frame could not be sent")),
            "panic" => panic!("idle exploded"),
            "end" => {
                self.release();
                Ok(Flow::End)
            }
            _ => {
                self.release();
                Ok(Flow::Return)
            }
        }
    }

    fn cleanup(&mut self) -> Result<(), BoxError> {
        self.release();
        Ok(())
    }
}

struct Feed {
    books: Arc<Books>,
    count: u64,
    per_step: u64,
    check: String,
    sent: u64,
}

impl Feed {
    fn unreleased(&self) {
        self.books.unreleased.fetch_add(1, Ordering::SeqCst);
    }

    fn held(&self) -> bool {
        self.books.held.load(Ordering::SeqCst) > 0
    }

    /// Until the holder has released every message sent so far: once it has read the last
    /// one it has nothing more, so its thread waits and must release first. The bound only
    /// keeps a broken runtime from hanging the test.
    fn wait_for_release(&self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        let pending = || self.books.released.load(Ordering::SeqCst) < self.sent;
        while pending() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        if pending() {
            self.unreleased();
        }
    }
}

impl BoxImpl for Feed {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        match self.check.as_str() {
            "at_step" if self.held() => self.unreleased(),
            "wait" => self.wait_for_release(),
            _ => {}
        }
        for _ in 0..self.per_step {
            if io.write(OutPort(0), Message::new(self.sent, 1, &[0u8; 8])).is_err() {
                return Ok(Flow::End);
            }
            self.sent += 1;
            if self.check == "after_write" && self.held() {
                self.unreleased();
            }
            if self.sent == self.count {
                return Ok(Flow::End);
            }
        }
        Ok(Flow::Return)
    }
}

struct Mid {
    books: Arc<Books>,
    every: u64,
    check: bool,
    seen: u64,
}

impl BoxImpl for Mid {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if self.check && self.books.held.load(Ordering::SeqCst) > 0 {
            self.books.unreleased.fetch_add(1, Ordering::SeqCst);
        }
        if let Some(msg) = io.read(InPort(0)) {
            self.seen += 1;
            if self.seen.is_multiple_of(self.every) {
                let _ = io.write(OutPort(0), msg);
            }
        }
        Ok(Flow::Return)
    }
}

/// `Feed -> [Mid ->] Holder`, the boxes' implementations as given.
fn line(feed: &str, mid: Option<&str>) -> NetGraph {
    let mut net = NetBuilder::new();
    let mut from = net.add_box("Feed", feed, &[("data", false)]);
    if let Some(mid) = mid {
        let m = net.add_box("Mid", mid, &[("data", true), ("data", false)]);
        net.connect(from, "data", m, "data");
        from = m;
    }
    let holder = net.add_box("Holder", "holder", &[("data", true)]);
    net.connect(from, "data", holder, "data");
    net.build()
}

/// Runs `line(feed, mid)` with fresh books and `sets` as `(node, key, value)`; with
/// `one_core` on core 0 alone, so that the line is one chain, else with a thread per box.
fn run_line(
    feed: &str,
    mid: Option<&str>,
    count: u64,
    sets: &[(usize, &str, &str)],
    one_core: bool,
) -> (Report, Arc<Books>) {
    let books = Arc::new(Books::default());
    let registry = &registry(&books);
    let graph = &line(feed, mid);
    let mut opts = RunOptions {
        settings: settings(graph, registry, count),
        chain: if one_core { ChainMode::Auto } else { ChainMode::Off },
        pin: if one_core { PinMode::List(vec![0]) } else { PinMode::Off },
        ..RunOptions::default()
    };
    for &(node, key, value) in sets {
        let spec = registry.get(&graph.nodes[node].func).unwrap();
        let key = spec.config.iter().find(|k| k.name == key).unwrap();
        let value: ConfigValue = smx_box::parse_value(key, value).unwrap();
        opts.settings[node].box_config.values.insert(key.name.into(), value);
    }
    let report = run(graph, registry, &opts).unwrap();
    let chained = report.notes.iter().any(|w| w.starts_with("chaining:"));
    assert_eq!(chained, one_core, "{:?}", report.notes);
    (report, books)
}

fn load(n: &AtomicU64) -> u64 {
    n.load(Ordering::SeqCst)
}

/// The run ended normally, every message reached the holder, and it was released.
fn all_released(report: &Report, books: &Books, n: u64) {
    assert_eq!(report.status, Status::Ok, "{report:?}");
    assert_eq!(load(&books.released), n);
}

#[test]
fn a_box_releases_what_it_holds_before_its_thread_waits_for_input() {
    let (report, books) = run_line("feed", None, 30, &[(0, "check", "wait")], false);
    all_released(&report, &books, 30);
    assert_eq!(
        load(&books.unreleased),
        0,
        "the feeder waited for a release that never came"
    );
    assert_eq!(load(&books.max_held), 1);
}

#[test]
fn a_follower_releases_before_each_step_of_a_head_that_may_wait() {
    let (report, books) = run_line("feed", None, 500, &[(0, "check", "at_step")], true);
    all_released(&report, &books, 500);
    assert_eq!((load(&books.unreleased), load(&books.max_held)), (0, 1));
}

#[test]
fn what_a_write_stepped_in_place_is_released_before_the_writer_goes_on() {
    // Two writes per step into a channel of length 1: the second steps the holder in place,
    // and the feeder, which may wait, then continues its step.
    let sets = [(0, "check", "after_write"), (0, "per_step", "2")];
    let (report, books) = run_line("feed", None, 500, &sets, true);
    all_released(&report, &books, 500);
    assert_eq!(load(&books.unreleased), 0);
}

#[test]
fn a_follower_keeps_collecting_behind_boxes_that_never_wait() {
    for mid in [None, Some("mid_never_waits")] {
        let (report, books) = run_line("feed_never_waits", mid, 500, &[], true);
        all_released(&report, &books, 500);
        assert!(
            load(&books.max_held) > 1,
            "{mid:?}: held at most {}",
            load(&books.max_held)
        );
    }
}

#[test]
fn a_box_ahead_that_may_wait_has_the_follower_release_first() {
    let (report, books) = run_line("feed_never_waits", Some("mid"), 500, &[(1, "check", "at_step")], true);
    all_released(&report, &books, 500);
    assert_eq!((load(&books.unreleased), load(&books.max_held)), (0, 1));
}

#[test]
fn a_pass_that_brings_a_follower_nothing_releases_it() {
    // The middle box never waits but forwards one message in ten: the passes in between bring
    // the holder nothing, and on a thread of its own it would wait then.
    let (report, books) = run_line(
        "feed_never_waits",
        Some("mid_never_waits"),
        1000,
        &[(1, "every", "10")],
        true,
    );
    all_released(&report, &books, 100);
    assert_eq!(load(&books.max_held), 1);
}

#[test]
fn a_time_triggered_box_releases_after_every_step() {
    use smx_lang::compose::{CompileOptions, compile};
    use smx_lang::diag::SourceFile;
    use smx_runtime::config::ConfigLayers;
    use smx_runtime::{FirewallOptions, TtMode};
    let books = Arc::new(Books::default());
    let registry = registry(&books);
    let text =
        "Feed = box feed_never_waits( out data )\nHolder = box holder( in data )\nconnect tt[1ms](Feed.Holder)\n";
    let compiled = compile(&SourceFile::new("idle.smx", text), &CompileOptions::default());
    assert!(compiled.accepted(), "{:?}", compiled.diagnostics);
    let mut layers = ConfigLayers::new();
    layers.set_iterations(20);
    let opts = RunOptions {
        settings: layers.resolve(&compiled.graph, &registry).unwrap(),
        firewall: FirewallOptions {
            mode: TtMode::Cyclic,
            ..FirewallOptions::best_effort()
        },
        ..RunOptions::default()
    };
    let report = run(&compiled.graph, &registry, &opts).unwrap();
    all_released(&report, &books, 20);
    assert_eq!(report.net("Holder").unwrap().loop_count, 20);
    assert_eq!(load(&books.max_held), 1);
}

#[test]
fn a_failing_or_panicking_idle_fails_the_box_with_its_reason() {
    for (at_idle, said) in [
        ("fail", "idle failed: the frame could not be sent"),
        ("panic", "idle panicked: idle exploded"),
    ] {
        for one_core in [false, true] {
            let (report, _) = run_line("feed", None, 100_000, &[(1, "at_idle", at_idle)], one_core);
            let holder = report.net("Holder").unwrap();
            assert_eq!(holder.status, Status::Failed, "{at_idle} {one_core}");
            let error = holder.error.as_deref().unwrap_or("");
            assert!(error.contains(said), "{at_idle} {one_core}: {error}");
            assert_eq!(report.status, Status::Failed);
        }
    }
}

#[test]
fn an_idle_that_says_end_ends_the_box_and_its_feeder() {
    for one_core in [false, true] {
        let (report, _) = run_line("feed", None, 10_000_000, &[(1, "at_idle", "end")], one_core);
        assert_eq!(report.status, Status::Ok, "{report:?}");
        let holder = report.net("Holder").unwrap();
        assert_eq!(holder.status, Status::Ok);
        assert!(
            report.net("Feed").unwrap().loop_count < 10_000_000,
            "the feeder ended with its consumer"
        );
    }
}
