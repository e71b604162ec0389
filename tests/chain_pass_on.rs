//! A chained box that takes its feeder's writes itself ([`smx_box::SpecBuilder::passes_on`],
//! as a link's sink does): it gets every message once and in order, whether it took it from
//! the write or its step read it from the channel, and the channel's books and latency are
//! those of a channel that carried every message. The runs are given one core, so that the
//! box is chained behind its feeder on any machine. No test asserts timing.

mod common;
use common::settings::with_count as settings;

use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, ConfigValue, Flow, InPort, Io, Message, PortSpec};
use smx_graph::NetGraph;
use smx_runtime::report::{Report, Status};
use smx_runtime::{ChainMode, Link, NetBuilder, PinMode, Registry, RunOptions, run};

/// A sink that takes what its feeder writes when offered: it refuses every `refuse`-th offer
/// (0: none), so that those messages wait in the channel for its step, and panics at offer
/// `panic_at` (0: never).
struct Taker {
    refuse: u64,
    panic_at: u64,
    offers: u64,
    passed: u64,
    stepped: u64,
    next_seq: Option<u64>,
    out_of_order: u64,
}

impl Taker {
    fn got(&mut self, seq: u64) {
        if self.next_seq.is_some_and(|want| want != seq) {
            self.out_of_order += 1;
        }
        self.next_seq = Some(seq + 1);
    }

    /// Whether to take the offer of message `seq`.
    fn offered(&mut self, seq: u64) -> bool {
        self.offers += 1;
        assert!(self.offers != self.panic_at, "the taker exploded");
        if self.refuse != 0 && self.offers.is_multiple_of(self.refuse) {
            return false;
        }
        self.passed += 1;
        self.got(seq);
        true
    }
}

impl BoxImpl for Taker {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if let Some(msg) = io.read(InPort(0)) {
            self.stepped += 1;
            self.got(msg.seq);
        }
        Ok(Flow::Return)
    }

    fn pass_on(&mut self, msg: &Message) -> bool {
        self.offered(msg.seq)
    }

    fn pass_on_filled(&mut self, seq: u64, _sent_ns: u64, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        if !self.offered(seq) {
            return false;
        }
        let mut room = vec![0u8; len];
        fill(&mut room);
        true
    }

    fn stats(&self) -> smx_box::Stats {
        smx_box::Stats::new()
            .with("passed", self.passed)
            .with("stepped", self.stepped)
            .with("out_of_order", self.out_of_order)
    }
}

fn registry() -> Registry {
    fn taker(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(Taker {
            refuse: config.int("refuse")?,
            panic_at: config.int("panic_at")?,
            offers: 0,
            passed: 0,
            stepped: 0,
            next_seq: None,
            out_of_order: 0,
        }))
    }
    const KEYS: &[ConfigKey] = &[
        ConfigKey::int("refuse").default_value("0"),
        ConfigKey::int("panic_at").default_value("0"),
    ];
    const TAKER: BoxSpec = BoxSpec::named("taker")
        .inputs(&[PortSpec::new("data")])
        .config(KEYS)
        .bridge()
        .chainable()
        .passes_on()
        .create(taker);
    let mut registry = smxrun::builtin_registry();
    registry.register(TAKER);
    registry
}

/// `Src -> Taker` on a channel of length `len` (Src's `size`, set by the caller, decides
/// whether it builds a payload in place with `write_filled` or writes it whole with `write`).
fn pair(len: u32) -> NetGraph {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let taker = net.add_box("Taker", "taker", &[("data", true)]);
    let link = Link {
        len: Some(len),
        ..Link::default()
    };
    net.connect_with(src, "data", taker, "data", link);
    net.build()
}

fn run_pair(len: u32, count: u64, keys: &[(&str, ConfigValue)], chain: ChainMode) -> Report {
    let registry = registry();
    let graph = pair(len);
    let mut settings = settings(&graph, &registry, count);
    for (node, s) in graph.nodes.iter().zip(&mut settings) {
        for (key, value) in keys {
            let (net, key) = key.split_once('.').unwrap();
            if node.label == net {
                s.box_config.values.insert(key.to_string(), value.clone());
            }
        }
    }
    let opts = RunOptions {
        settings,
        pin: PinMode::List(vec![0]),
        chain,
        ..RunOptions::default()
    };
    run(&graph, &registry, &opts).unwrap()
}

fn stat(report: &Report, net: &str, key: &str) -> u64 {
    report
        .net(net)
        .unwrap()
        .stats
        .u64(key)
        .unwrap_or_else(|| panic!("{net}.{key}"))
}

#[test]
fn every_message_comes_once_and_in_order_whether_taken_from_the_write_or_read_by_a_step() {
    let count = 20_000;
    for len in [1, 64] {
        for size in [8, 4096] {
            for refuse in [0, 3] {
                let case = format!("len {len}, size {size}, refusing every {refuse}th");
                let keys = [
                    ("Src.size", ConfigValue::Int(size)),
                    ("Taker.refuse", ConfigValue::Int(refuse)),
                ];
                let report = run_pair(len, count, &keys, ChainMode::Auto);
                assert!(
                    report.notes.iter().any(|w| w.contains("Src#0 -> Taker#1")),
                    "{case}: {:?}",
                    report.notes
                );
                assert_eq!(report.status, Status::Ok, "{case}");
                let (passed, stepped) = (stat(&report, "Taker", "passed"), stat(&report, "Taker", "stepped"));
                assert_eq!(passed + stepped, count, "{case}");
                assert_eq!(stat(&report, "Taker", "out_of_order"), 0, "{case}");
                match count.checked_div(refuse) {
                    None => assert_eq!((passed, stepped), (count, 0), "{case}"),
                    // A refused message waits in the channel, and so does every later one
                    // until the step took it: at least the refused ones are stepped.
                    Some(refused) => assert!(stepped >= refused && passed > 0, "{case}: {passed} {stepped}"),
                }
                let c = &report.channels[0];
                assert_eq!(
                    (c.written, c.read, c.dropped, c.left),
                    (count, count, 0, 0),
                    "{case}: {c:?}"
                );
                assert!(c.latency_ns.count > 0, "{case}: sampled as any channel is: {c:?}");
            }
        }
    }
}

#[test]
fn nothing_is_offered_to_a_box_on_a_thread_of_its_own() {
    let report = run_pair(64, 5_000, &[], ChainMode::Off);
    assert_eq!(report.status, Status::Ok);
    assert_eq!(stat(&report, "Taker", "passed"), 0);
    assert_eq!(stat(&report, "Taker", "stepped"), 5_000);
}

#[test]
fn a_box_that_panics_on_an_offer_fails_alone_and_its_feeder_ends() {
    let keys = [("Taker.panic_at", ConfigValue::Int(100))];
    let report = run_pair(64, 1_000_000_000, &keys, ChainMode::Auto);
    let taker = report.net("Taker").unwrap();
    assert_eq!(taker.status, Status::Failed);
    let error = taker.error.as_deref().unwrap_or("");
    assert!(
        error.contains("passed on") && error.contains("the taker exploded"),
        "{error}"
    );
    let src = report.net("Src").unwrap();
    assert_ne!(src.status, Status::Failed, "{src:?}");
    let c = &report.channels[0];
    assert_eq!(c.read, 99, "the offers taken before the panic: {c:?}");
    assert_eq!(c.written, c.read + c.overwritten + c.dropped + c.left, "{c:?}");
}
