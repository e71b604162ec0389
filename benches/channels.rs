//! Channel and runtime throughput.
//!
//! `cargo bench --bench channels` runs the criterion groups:
//! * `handoff/<kind>`: one message through each channel kind between two threads;
//! * `message`: creating a small (inline) and a large (shared) message;
//! * `src_snk/<len>`: the whole runtime running `Src.Snk` (smx_src_rand -> smx_snk_null) next
//!   to `baseline`, a plain two-thread crossbeam-channel program with the same channel length
//!   and the same message (8 random bytes, sequence number, timestamp), in the same process;
//! * `pairs/<n>`: n independent `Src.Snk` pairs, aggregate messages per second.
//!
//! Plain measurements instead of criterion (`SMX_BENCH_ROUNDS`, default 7, sets the rounds):
//! * `SMX_BENCH=compare cargo bench --bench channels`: `Src.Snk` vs the three pair peers of
//!   `smxrun bench scaling` at length 1, 64 and 1024, interleaved round by round, median rates,
//!   smx over the best peer, CPU per message;
//! * `SMX_BENCH=pairs ...`: 1, 2, 4, 8, 16 pairs, median aggregate rate and share of the best
//!   (`SMX_BENCH_PAIR_MESSAGES`, default 500,000, sets each source's count);
//! * `SMX_BENCH=rss ...`: `Src.Snk` over 10 million messages, resident memory every 100 ms.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::options;
use criterion::{BenchmarkId, Criterion, Throughput};
use smx_box::Message;
use smx_graph::NetGraph;
use smx_runtime::channel::{ChannelKind, channel};
use smx_runtime::{Link, NetBuilder};
use smx_runtime::{PinMode, Registry, RunOptions, run};

/// Messages per measured run of the whole-net benchmarks.
const NET_MESSAGES: u64 = 50_000;

fn pairs(n: usize, len: u32) -> NetGraph {
    let mut net = NetBuilder::new();
    for _ in 0..n {
        let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
        let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
        net.connect_with(
            src,
            "data",
            snk,
            "data",
            Link {
                len: Some(len),
                ..Link::default()
            },
        );
    }
    net.build()
}

/// Wall time of the slowest net of one smx run (what the report's loop rates are based on).
fn smx_run(graph: &NetGraph, registry: &Registry, opts: &RunOptions) -> Duration {
    let report = run(graph, registry, opts).unwrap();
    assert_eq!(report.status, smx_runtime::report::Status::Ok);
    let wall = report.nets.iter().map(|n| n.wall_time_s).fold(0.0, f64::max);
    Duration::from_secs_f64(wall)
}

/// The same generator as smx_src_rand.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The baseline: two plain threads and a crossbeam bounded channel; the producer makes the
/// same message as smx_src_rand, the consumer checks the order as smx_snk_null. Timed from
/// both threads being ready to the consumer having the last message.
fn baseline_run(len: usize, count: u64, pinned: bool) -> Duration {
    let (tx, rx) = crossbeam_channel::bounded::<Message>(len);
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let b2 = barrier.clone();
    let cores = smx_timing::sched::allowed_cores();
    let (producer_core, consumer_core) = (cores.first().copied(), cores.get(1).copied());
    if pinned && let Some(core) = consumer_core {
        let _ = smx_timing::sched::pin_current_thread(core);
    }
    let producer = std::thread::spawn(move || {
        if pinned && let Some(core) = producer_core {
            let _ = smx_timing::sched::pin_current_thread(core);
        }
        let mut state = 1u64;
        b2.wait();
        for seq in 0..count {
            let bytes = splitmix(&mut state).to_le_bytes();
            if tx.send(Message::now(seq, &bytes)).is_err() {
                break;
            }
        }
    });
    barrier.wait();
    let start = Instant::now();
    let mut expected = 0;
    let mut gaps = 0;
    while let Ok(msg) = rx.recv() {
        gaps += msg.seq - expected;
        expected = msg.seq + 1;
    }
    let took = start.elapsed();
    producer.join().unwrap();
    if pinned && !cores.is_empty() {
        let _ = unpin(&cores);
    }
    assert_eq!((expected, gaps), (count, 0));
    took
}

/// Lets the calling (bench main) thread run on every allowed core again.
fn unpin(cores: &[usize]) -> bool {
    // SAFETY: a zeroed cpu_set_t with the allowed cores set, applied to the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cores {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

fn bench_handoff(c: &mut Criterion) {
    let mut group = c.benchmark_group("handoff");
    const N: u64 = 100_000;
    group.throughput(Throughput::Elements(N));
    group.sample_size(10);
    for kind in [
        ChannelKind::Coupled,
        ChannelKind::DecoupledProducer,
        ChannelKind::DecoupledConsumer,
        ChannelKind::Decoupled,
    ] {
        group.bench_function(kind.name(), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (mut w, mut r) = channel(kind, 64);
                    let start = Instant::now();
                    let producer = std::thread::spawn(move || {
                        for seq in 0..N {
                            let _ = w.write(Message::new(seq, 0, &seq.to_le_bytes()));
                        }
                    });
                    // Read until the producer ended; decoupled readers never block, so poll (yielding, so a
                    // spinning reader does not starve the producer on a busy machine).
                    let mut got = 0u64;
                    loop {
                        r.wait_ready();
                        match r.take() {
                            smx_runtime::channel::Poll::Message(m) => {
                                black_box(m);
                                got += 1;
                            }
                            smx_runtime::channel::Poll::Ended => break,
                            smx_runtime::channel::Poll::Empty => std::thread::yield_now(),
                        }
                    }
                    producer.join().unwrap();
                    total += start.elapsed();
                    black_box(got);
                }
                total
            })
        });
    }
    group.finish();
}

fn bench_message(c: &mut Criterion) {
    let mut group = c.benchmark_group("message");
    let small = [7u8; 8];
    let large = vec![7u8; 1024];
    group.bench_function("inline_8B", |b| {
        b.iter(|| Message::now(black_box(1), black_box(&small)))
    });
    group.bench_function("shared_1KiB", |b| {
        b.iter(|| Message::now(black_box(1), black_box(&large)))
    });
    let shared = Message::new(1, 0, &large);
    group.bench_function("clone_shared_1KiB", |b| b.iter(|| black_box(&shared).clone()));
    group.finish();
}

fn bench_src_snk(c: &mut Criterion) {
    let registry = smxrun::builtin_registry();
    for len in [1u32, 64] {
        let mut group = c.benchmark_group(format!("src_snk/len{len}"));
        group.throughput(Throughput::Elements(NET_MESSAGES));
        group.sample_size(10);
        let graph = pairs(1, len);
        for (name, pin) in [("smx_pin_auto", PinMode::Auto), ("smx_pin_off", PinMode::Off)] {
            let opts = options(&graph, &registry, NET_MESSAGES, pin);
            group.bench_function(name, |b| {
                b.iter_custom(|iters| (0..iters).map(|_| smx_run(&graph, &registry, &opts)).sum())
            });
        }
        for (name, pinned) in [("baseline_pinned", true), ("baseline_unpinned", false)] {
            group.bench_function(name, |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| baseline_run(len as usize, NET_MESSAGES, pinned))
                        .sum()
                })
            });
        }
        group.finish();
    }
}

fn bench_pairs(c: &mut Criterion) {
    let registry = smxrun::builtin_registry();
    let mut group = c.benchmark_group("pairs");
    group.sample_size(10);
    let per_pair = NET_MESSAGES / 4;
    for n in [1usize, 2, 4, 8, 16] {
        let graph = pairs(n, 1);
        let opts = options(&graph, &registry, per_pair, PinMode::Auto);
        group.throughput(Throughput::Elements(per_pair * n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter_custom(|iters| (0..iters).map(|_| smx_run(&graph, &registry, &opts)).sum())
        });
    }
    group.finish();
}

/// Resident set size in KiB, from /proc/self/statm.
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4
}

fn rss_run() {
    let registry = smxrun::builtin_registry();
    let graph = pairs(1, 64);
    let opts = options(&graph, &registry, 10_000_000, PinMode::Auto);
    let progress = opts.progress.clone();
    let sampler = std::thread::spawn(move || {
        let mut samples = Vec::new();
        while !progress.finished() {
            samples.push((progress.messages(), rss_kib()));
            std::thread::sleep(Duration::from_millis(100));
        }
        samples
    });
    let report = run(&graph, &registry, &opts).unwrap();
    let samples = sampler.join().unwrap();
    for (messages, kib) in &samples {
        println!("messages {messages:>10}  rss {kib} KiB");
    }
    let rss: Vec<u64> = samples.iter().filter(|(m, _)| *m > 0).map(|s| s.1).collect();
    println!(
        "{} messages in {:.3} s; rss min {} KiB, max {} KiB over {} samples",
        report.messages,
        report.wall_time_s,
        rss.iter().min().unwrap_or(&0),
        rss.iter().max().unwrap_or(&0),
        rss.len()
    );
}

/// CPU time (user + system) of the whole process so far.
fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the zeroed struct we own.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Runs `f`, returning (messages per second of wall time, CPU nanoseconds per message).
fn measured(count: u64, f: impl FnOnce() -> Duration) -> (f64, f64) {
    let cpu = cpu_time();
    let wall = f();
    let cpu = cpu_time() - cpu;
    (count as f64 / wall.as_secs_f64(), cpu.as_nanos() as f64 / count as f64)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `Src.Snk` against the three pair peers of `smxrun bench` (crossbeam blocking, crossbeam
/// busy-polling, an rtrb ring: the same message, order check and pinning), interleaved round
/// by round so that load changes on a shared machine hit all alike; prints the median rates,
/// smx over the best peer, and the median CPU time per message.
fn compare_run(rounds: usize) {
    use smx_bench::baseline::{PAIR_PEERS, PairShape};
    let registry = smxrun::builtin_registry();
    let count = 1_000_000u64;
    for len in [1u32, 64, 1024] {
        let graph = pairs(1, len);
        let auto = options(&graph, &registry, count, PinMode::Auto);
        let shape = PairShape {
            pairs: 1,
            count,
            len: len as usize,
            size: 8,
            pin: true,
        };
        let names: Vec<&str> = std::iter::once("smx").chain(PAIR_PEERS.iter().map(|p| p.0)).collect();
        let mut rates = vec![Vec::new(); names.len()];
        let mut cpus = vec![Vec::new(); names.len()];
        for _ in 0..rounds {
            let mut runs = vec![measured(count, || smx_run(&graph, &registry, &auto))];
            for (_, peer) in PAIR_PEERS {
                runs.push(measured(count, || {
                    let run = peer(shape);
                    Duration::from_secs_f64(run.metrics.get("wall_s").copied().unwrap_or(f64::NAN))
                }));
            }
            for (i, (rate, cpu)) in runs.into_iter().enumerate() {
                rates[i].push(rate);
                cpus[i].push(cpu);
            }
        }
        let rates: Vec<f64> = rates.into_iter().map(median).collect();
        for ((n, r), c) in names.iter().zip(&rates).zip(cpus.into_iter().map(median)) {
            println!("len {len:>4}, {count} msgs, median of {rounds}: {n:<15} {r:>10.0} msg/s  {c:>6.0} ns CPU/msg");
        }
        let best = rates[1..].iter().copied().fold(0.0, f64::max);
        println!("len {len:>4}: smx / best peer {:.2}", rates[0] / best);
    }
}

/// Aggregate rate of 1..16 pairs, interleaved by round; prints medians and each as a share of
/// the best.
fn pairs_run(rounds: usize) {
    let registry = smxrun::builtin_registry();
    let counts = [1usize, 2, 4, 8, 16];
    // Long enough that the start and the end (threads released and finishing at slightly
    // different moments) weigh little even with 32 threads on 2 cores.
    let per_pair: u64 = std::env::var("SMX_BENCH_PAIR_MESSAGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(500_000);
    let mut rates = vec![Vec::new(); counts.len()];
    for _ in 0..rounds {
        for (i, &n) in counts.iter().enumerate() {
            let graph = pairs(n, 1);
            let opts = options(&graph, &registry, per_pair, PinMode::Auto);
            let report = run(&graph, &registry, &opts).unwrap();
            let wall = report.nets.iter().map(|n| n.wall_time_s).fold(0.0, f64::max);
            rates[i].push(report.messages as f64 / wall);
        }
    }
    // Within one round the runs are seconds apart; each count's share of that round's best
    // cancels the machine's drift between rounds, so its median is the steadier figure.
    let shares: Vec<Vec<f64>> = (0..counts.len())
        .map(|i| {
            (0..rounds)
                .map(|r| {
                    let best = rates.iter().map(|v| v[r]).fold(0.0, f64::max);
                    rates[i][r] / best
                })
                .collect()
        })
        .collect();
    let medians: Vec<f64> = rates.into_iter().map(median).collect();
    let best = medians.iter().copied().fold(0.0, f64::max);
    for ((n, rate), share) in counts.iter().zip(&medians).zip(shares) {
        println!(
            "{n:>2} pairs ({:>2} threads): {rate:>10.0} msg/s aggregate = {:5.1}% of best (median of {rounds}); \
             median share of its round's best {:5.1}%",
            2 * n,
            100.0 * rate / best,
            100.0 * median(share)
        );
    }
}

fn main() {
    let rounds = std::env::var("SMX_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    match std::env::var("SMX_BENCH").as_deref() {
        Ok("rss") => return rss_run(),
        Ok("compare") => return compare_run(rounds),
        Ok("pairs") => return pairs_run(rounds),
        _ => {}
    }
    let mut c = Criterion::default().configure_from_args();
    bench_handoff(&mut c);
    bench_message(&mut c);
    bench_src_snk(&mut c);
    bench_pairs(&mut c);
    c.final_summary();
}
