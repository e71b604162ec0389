//! Where a message's time goes on a shared-memory link between two processes, in parts that
//! one process can run (the performance page, "A net over two processes").
//!
//! `cargo bench --bench links` (`SMX_BENCH_ROUNDS`, default 5, sets the rounds; the cases run
//! in turns, round by round, and the table shows medians with their ranges; `cargo test`
//! runs one short round):
//! * `src chained, passing on`: `Src` with a box chained behind it on one core that takes each
//!   message from `Src`'s write and drops it (`SpecBuilder::passes_on`, as the link's sink
//!   takes them): the producer's chain without the ring;
//! * `src.snk on two cores`: `Src` on a thread of its own and `Snk` on the other core, the
//!   producer's side of the net in one process;
//! * `ring, length L`: the link's ring alone, `Producer::send` of 8 bytes into
//!   `Consumer::next` on two threads pinned to two cores;
//! * `ring with src's work, length 32`: a loop that does what `Src` does for each message (a
//!   clock read, 8 random bytes built in the slot: `Producer::send_in_place`) against a
//!   consumer that looks at each message where it lies (`Consumer::take_small`), as the
//!   link's source does: the ring between the two processes of the split `Src.Snk` at length
//!   64, without the runtime around it.

mod common;

use std::time::{Duration, Instant};

use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, Flow, InPort, Io, Message, PortSpec};
use smx_graph::NetGraph;
use smx_runtime::{Link, NetBuilder, PinMode, Registry, run};
use smx_shm::{Consumer, Next, Producer, Sent};

/// Messages per run; `cargo test --benches` (no `--bench` argument) runs one round of a
/// smoke count instead, so that the test suite only checks that each part runs.
fn messages() -> u64 {
    if full_run() { 5_000_000 } else { 10_000 }
}

/// `cargo bench` passes `--bench`; `cargo test --benches` passes nothing.
fn full_run() -> bool {
    static FULL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FULL.get_or_init(|| std::env::args().any(|a| a == "--bench"))
}

/// Takes every message its feeder writes and drops it.
struct Discard;

impl BoxImpl for Discard {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let _ = io.read(InPort(0));
        Ok(Flow::Return)
    }

    fn pass_on(&mut self, _msg: &Message) -> bool {
        true
    }

    fn pass_on_filled(&mut self, _seq: u64, _sent_ns: u64, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        let mut room = [0u8; 64];
        fill(&mut room[..len.min(64)]);
        true
    }
}

fn registry() -> Registry {
    fn create(_: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(Discard))
    }
    const DISCARD: BoxSpec = BoxSpec::named("discard")
        .inputs(&[PortSpec::new("data")])
        .chainable()
        .passes_on()
        .create(create);
    let mut registry = smxrun::builtin_registry();
    registry.register(DISCARD);
    registry
}

fn src_into(sink: &str) -> NetGraph {
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let snk = net.add_box("Snk", sink, &[("data", true)]);
    let link = Link {
        len: Some(64),
        ..Link::default()
    };
    net.connect_with(src, "data", snk, "data", link);
    net.build()
}

/// ns per message of `Src` into `sink` on `cores`, from the slower net's wall time.
fn net_ns(registry: &Registry, sink: &str, cores: Vec<usize>) -> f64 {
    let graph = src_into(sink);
    let opts = common::options(&graph, registry, messages(), PinMode::List(cores));
    let report = run(&graph, registry, &opts).expect("the net runs");
    let wall = report.nets.iter().map(|n| n.wall_time_s).fold(0.0, f64::max);
    wall * 1e9 / messages() as f64
}

fn pin(core: usize) {
    let _ = core_affinity::set_for_current(core_affinity::CoreId { id: core });
}

/// ns per message of `send` (the producer's loop, given each sequence number) into the ring of
/// `len` slots, on core 0, against `take` (the consumer's loop, returning what it took) on
/// core 1.
fn ring_run(len: u64, take: fn(&mut Consumer) -> u64, mut send: impl FnMut(&mut Producer, u64) -> Sent) -> f64 {
    let dir = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    let path = dir.path().join("ring");
    let never = || false;
    let mut producer = Producer::create(&path, len, 64, Duration::from_secs(5)).unwrap();
    let reader = {
        let path = path.clone();
        std::thread::spawn(move || {
            pin(1);
            let never = || false;
            take(&mut Consumer::open(&path, Duration::from_secs(5), &never).unwrap())
        })
    };
    pin(0);
    producer.wait_for_consumer(&never);
    let start = Instant::now();
    for seq in 0..messages() {
        assert_eq!(send(&mut producer, seq), Sent::Published);
    }
    producer.finish(false, &never);
    assert_eq!(reader.join().unwrap(), messages());
    start.elapsed().as_nanos() as f64 / messages() as f64
}

/// ns per message through the ring of `len` slots between two threads on cores 0 and 1.
fn ring_ns(len: u64) -> f64 {
    fn take(consumer: &mut Consumer) -> u64 {
        let mut got = 0u64;
        while let Next::Message(_) = consumer.next(None, &|| false) {
            got += 1;
        }
        got
    }
    ring_run(len, take, |producer, seq| {
        producer.send(seq, 1, &[7u8; 8], &|| false).unwrap()
    })
}

/// ns per message of `Src`'s work into the ring of `len` slots, each taken where it lies by a
/// consumer on the other core.
fn ring_with_work_ns(len: u64) -> f64 {
    fn take(consumer: &mut Consumer) -> u64 {
        let mut got = 0u64;
        loop {
            if consumer
                .take_small(|_, _, bytes| std::hint::black_box(bytes.len()))
                .is_some()
            {
                got += 1;
                continue;
            }
            match consumer.next(None, &|| false) {
                Next::Message(_) => got += 1,
                _ => return got,
            }
        }
    }
    let mut state = 1u64;
    ring_run(len, take, |producer, seq| {
        let sent = smx_box::now_ns();
        let fill = |slot: &mut [u8]| {
            // SplitMix64, as `smx_src_rand` makes its bytes.
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            slot.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
        };
        producer.send_in_place(seq, sent, 8, fill, &|| false).unwrap()
    })
}

fn main() {
    let rounds: usize = match full_run() {
        true => std::env::var("SMX_BENCH_ROUNDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(5),
        false => 1,
    };
    if core_affinity::get_core_ids().is_none_or(|ids| ids.len() < 2) {
        println!("links: needs two cores");
        return;
    }
    let registry = registry();
    type Case<'a> = (&'a str, Box<dyn Fn() -> f64 + 'a>);
    let cases: Vec<Case> = vec![
        (
            "src chained, passing on",
            Box::new(|| net_ns(&registry, "discard", vec![0])),
        ),
        (
            "src.snk on two cores",
            Box::new(|| net_ns(&registry, "smx_snk_null", vec![0, 1])),
        ),
        ("ring, length 1", Box::new(|| ring_ns(1))),
        ("ring, length 64", Box::new(|| ring_ns(64))),
        ("ring with src's work, length 32", Box::new(|| ring_with_work_ns(32))),
    ];
    let mut samples = vec![Vec::new(); cases.len()];
    for _ in 0..rounds {
        for (k, (_, measure)) in cases.iter().enumerate() {
            samples[k].push(measure());
        }
    }
    println!(
        "links: {} messages of 8 B per run, {rounds} rounds in turns; ns per message, median (min-max)",
        messages()
    );
    for ((name, _), mut ns) in cases.iter().zip(samples) {
        ns.sort_by(f64::total_cmp);
        println!(
            "{name:<32} {:>7.1} ({:.1}-{:.1})",
            ns[ns.len() / 2],
            ns[0],
            ns[ns.len() - 1]
        );
    }
}
