//! `BoxImpl::idle`: a box that holds work across steps is asked to release it whenever its
//! thread may wait: before the firing rule waits, before a chain's head that may wait steps,
//! and after every step in a cyclic executive; only a chain head that never waits lets its
//! followers keep collecting. The boxes here keep books of what they hold; no assertion
//! depends on timing.

mod common;
use common::settings::with_count as settings;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, Flow, InPort, Io, Message, OutPort, PortSpec};
use smx_graph::NetGraph;
use smx_runtime::builder::NetBuilder;
use smx_runtime::chain::ChainMode;
use smx_runtime::report::{Report, Status};
use smx_runtime::{PinMode, Registry, RunOptions, run};

/// What the holder holds and released, shared with the feeder that checks it.
#[derive(Default)]
struct Books {
    held: AtomicU64,
    max_held: AtomicU64,
    released: AtomicU64,
    /// Feeder steps that found messages still held (`check = at_step`), or waited in vain
    /// for their release (`check = wait`).
    unreleased: AtomicU64,
}

/// `holder`: a sink that keeps every message it reads until `idle` (or `cleanup`) releases
/// them; with `fail_idle`, its first `idle` fails. `feed` / `feed_never_waits`: `count`
/// messages, checking the holder's books before each one as `check` says.
fn registry(books: &Arc<Books>) -> Registry {
    const IN: &[PortSpec] = &[PortSpec::new("data")];
    const OUT: &[PortSpec] = &[PortSpec::new("data")];
    const HOLDER_KEYS: &[ConfigKey] = &[ConfigKey::bool("fail_idle").default_value("false")];
    let mut registry = smxrun::builtin_registry();
    let b = books.clone();
    registry.register(
        BoxSpec::named("holder")
            .inputs(IN)
            .config(HOLDER_KEYS)
            .chainable()
            .factory(move |config: &BoxConfig| {
                Ok(Box::new(Holder {
                    books: b.clone(),
                    fail_idle: config.bool("fail_idle")?,
                }) as Box<dyn BoxImpl>)
            }),
    );
    const FEED_KEYS: &[ConfigKey] = &[
        ConfigKey::int("count").default_value("100"),
        ConfigKey::choice("check", &["none", "at_step", "wait"]).default_value("none"),
    ];
    for (name, never_waits) in [("feed", false), ("feed_never_waits", true)] {
        let b = books.clone();
        let spec = BoxSpec::named(name).outputs(OUT).config(FEED_KEYS);
        let spec = if never_waits { spec.never_waits() } else { spec };
        registry.register(spec.factory(move |config: &BoxConfig| {
            Ok(Box::new(Feed {
                books: b.clone(),
                count: config.int("count")?,
                check: config.str("check")?.to_string(),
                sent: 0,
            }) as Box<dyn BoxImpl>)
        }));
    }
    registry
}

struct Holder {
    books: Arc<Books>,
    fail_idle: bool,
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

    fn idle(&mut self) -> Result<(), BoxError> {
        if self.fail_idle {
            return Err(BoxError::new("the frame could not be sent"));
        }
        self.release();
        Ok(())
    }

    fn cleanup(&mut self) -> Result<(), BoxError> {
        self.release();
        Ok(())
    }
}

struct Feed {
    books: Arc<Books>,
    count: u64,
    check: String,
    sent: u64,
}

impl BoxImpl for Feed {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let held = || self.books.held.load(Ordering::SeqCst) > 0;
        match self.check.as_str() {
            "at_step" if held() => {
                self.books.unreleased.fetch_add(1, Ordering::SeqCst);
            }
            "wait" => {
                // Until the holder has released every message sent so far: once it has read the
                // last one it has nothing more, so its thread waits and must release first.
                // The bound only keeps a broken runtime from hanging the test.
                let deadline = Instant::now() + Duration::from_secs(5);
                let pending = || self.books.released.load(Ordering::SeqCst) < self.sent;
                while pending() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
                if pending() {
                    self.books.unreleased.fetch_add(1, Ordering::SeqCst);
                }
            }
            _ => {}
        }
        if io.write(OutPort(0), Message::new(self.sent, 1, &[0u8; 8])).is_err() {
            return Ok(Flow::End);
        }
        self.sent += 1;
        Ok(if self.sent == self.count {
            Flow::End
        } else {
            Flow::Return
        })
    }
}

fn feed_to_holder(feed: &str) -> NetGraph {
    let mut net = NetBuilder::new();
    let src = net.add_box("Feed", feed, &[("data", false)]);
    let snk = net.add_box("Holder", "holder", &[("data", true)]);
    net.connect(src, "data", snk, "data");
    net.build()
}

fn run_net(graph: &NetGraph, registry: &Registry, count: u64, check: &str, one_core: bool) -> Report {
    let mut opts = RunOptions {
        settings: settings(graph, registry, count),
        chain: if one_core { ChainMode::Auto } else { ChainMode::Off },
        pin: if one_core { PinMode::List(vec![0]) } else { PinMode::Off },
        ..RunOptions::default()
    };
    opts.settings[0]
        .box_config
        .values
        .insert("check".into(), smx_box::ConfigValue::Str(check.into()));
    run(graph, registry, &opts).unwrap()
}

fn chained(report: &Report) -> bool {
    report.warnings.iter().any(|w| w.starts_with("chaining:"))
}

fn load(n: &AtomicU64) -> u64 {
    n.load(Ordering::SeqCst)
}

#[test]
fn a_box_releases_what_it_holds_before_its_thread_waits_for_input() {
    let books = Arc::new(Books::default());
    let registry = registry(&books);
    let graph = feed_to_holder("feed");
    let report = run_net(&graph, &registry, 30, "wait", false);
    assert!(!chained(&report), "{:?}", report.warnings);
    assert_eq!(report.status, Status::Ok, "{report:?}");
    assert_eq!(
        load(&books.unreleased),
        0,
        "the feeder waited for a release that never came"
    );
    assert_eq!(load(&books.released), 30);
    assert_eq!(load(&books.max_held), 1);
}

#[test]
fn a_follower_releases_before_each_step_of_a_head_that_may_wait() {
    let books = Arc::new(Books::default());
    let registry = registry(&books);
    let graph = feed_to_holder("feed");
    let report = run_net(&graph, &registry, 500, "at_step", true);
    assert!(chained(&report), "{:?}", report.warnings);
    assert_eq!(report.status, Status::Ok, "{report:?}");
    assert_eq!(load(&books.unreleased), 0);
    assert_eq!((load(&books.released), load(&books.max_held)), (500, 1));
}

#[test]
fn a_follower_keeps_collecting_behind_a_head_that_never_waits() {
    let books = Arc::new(Books::default());
    let registry = registry(&books);
    let graph = feed_to_holder("feed_never_waits");
    let report = run_net(&graph, &registry, 500, "none", true);
    assert!(chained(&report), "{:?}", report.warnings);
    assert_eq!(report.status, Status::Ok, "{report:?}");
    assert!(load(&books.max_held) > 1, "held at most {}", load(&books.max_held));
    assert_eq!(load(&books.released), 500, "cleanup releases the rest");
}

#[test]
fn a_time_triggered_box_releases_after_every_step() {
    use smx_lang::compose::{CompileOptions, compile};
    use smx_lang::diag::SourceFile;
    use smx_runtime::config::ConfigLayers;
    use smx_runtime::firewall::{FirewallOptions, TtMode};
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
    assert_eq!(report.status, Status::Ok, "{report:?}");
    assert_eq!(report.net("Holder").unwrap().loop_count, 20);
    assert_eq!((load(&books.released), load(&books.max_held)), (20, 1));
}

#[test]
fn a_failing_idle_fails_the_box_with_its_reason_and_the_net_ends() {
    let books = Arc::new(Books::default());
    let registry = registry(&books);
    let graph = feed_to_holder("feed");
    let mut opts = RunOptions {
        settings: settings(&graph, &registry, 100_000),
        chain: ChainMode::Off,
        pin: PinMode::Off,
        ..RunOptions::default()
    };
    opts.settings[1]
        .box_config
        .values
        .insert("fail_idle".into(), smx_box::ConfigValue::Bool(true));
    let report = run(&graph, &registry, &opts).unwrap();
    let holder = report.net("Holder").unwrap();
    assert_eq!(holder.status, Status::Failed);
    let error = holder.error.as_deref().unwrap_or("");
    assert!(error.contains("idle failed: the frame could not be sent"), "{error}");
    assert_eq!(report.status, Status::Failed);
}
