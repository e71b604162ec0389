//! Throughput of smx-spsc against the strongest peers, in one run, interleaved.
//!
//! `cargo run --release --example bench [-- ROUNDS]` (default 9 rounds)
//!
//! Two threads move 56-byte messages ( sequence number, timestamp and an inline
//! payload, with a reference-counted variant so that dropping one is not free) through a queue
//! of length 1, 64 and 1024; the consumer checks the order of every message. Each cell (length
//! x placement) runs every contender once per round for the same time (0.25 s: the producer
//! writes until then, then an end marker), the order rotating from round to round so that a
//! busy moment of this shared machine does not always hit the same one; the table shows
//! medians over the rounds.
//!
//! Contenders:
//! * `smx-spsc`: this crate as a dataflow channel uses it: the blocking `push` and a
//!   consumer's `wait_ready` + `try_pop`, spinning `DEFAULT_SPIN` before parking; when both ends share a
//!   core, set up by `smx_spsc::share_core` (yield after each look, then park).
//!   The queue uses the default handshake (membarrier).
//! * `smx-spsc fences`: the same with `Handshake::Fences` (a fence per push and pop).
//! * `smx-spsc park`: the same with spin 0 (park at once).
//! * `smx-spsc batch`: the same waits, moving 32 messages per call (`push_from` / `pop_into`):
//!   one index publication and one fence per batch instead of per message (reference).
//! * `smx-spsc busy`: this crate's `try_push` / `try_pop` in the busy loop below (reference).
//! * peers: `rtrb busy` (the lock-free SPSC ring), `crossbeam busy` (`bounded`, `try_send` /
//!   `try_recv`), `crossbeam blocking` (`send` / `recv`).
//!
//! A busy loop retries at once with a spin-loop hint and yields the core after 64 failed tries
//! in a row (without the yield, two spinning threads on one core take turns only at the end
//! of a time slice).
//!
//! `ratio` = smx-spsc / best peer (the other smx-spsc rows are not peers). CPU = CPU seconds of the whole
//! process per million messages.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use core_affinity::CoreId;

/// A message of 56 bytes: one cache line with the slot's 8-byte stamp.
#[allow(dead_code)]
#[derive(Clone)]
enum Payload {
    Inline { len: u8, bytes: [u8; 32] },
    Shared(Arc<[u8]>),
}

#[derive(Clone)]
struct Message {
    seq: u64,
    sent_ns: u64,
    payload: Payload,
}
const _: () = assert!(std::mem::size_of::<Message>() == 56);

impl Message {
    #[inline]
    fn new(seq: u64) -> Self {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seq.to_le_bytes());
        // The timestamp is the sequence number: a clock read per message would cost more than
        // the hand-over being measured.
        Message {
            seq,
            sent_ns: seq,
            payload: Payload::Inline { len: 8, bytes },
        }
    }

    /// Written after the last message of a run.
    const END: u64 = u64::MAX;

    #[inline]
    fn check(&self, expected: u64) {
        assert_eq!(self.seq, expected, "order");
        if let Payload::Inline { bytes, .. } = &self.payload {
            black_box(bytes[0]);
        }
        black_box(self.sent_ns);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Contender {
    Smx,
    SmxFences,
    SmxPark,
    SmxBatch,
    SmxBusy,
    RtrbBusy,
    CrossbeamBusy,
    CrossbeamBlocking,
}
const CONTENDERS: [Contender; 8] = [
    Contender::Smx,
    Contender::SmxFences,
    Contender::SmxPark,
    Contender::SmxBatch,
    Contender::SmxBusy,
    Contender::RtrbBusy,
    Contender::CrossbeamBusy,
    Contender::CrossbeamBlocking,
];

impl Contender {
    fn name(self) -> &'static str {
        match self {
            Contender::Smx => "smx-spsc",
            Contender::SmxFences => "smx-spsc fences",
            Contender::SmxPark => "smx-spsc park",
            Contender::SmxBatch => "smx-spsc batch",
            Contender::SmxBusy => "smx-spsc busy",
            Contender::RtrbBusy => "rtrb busy",
            Contender::CrossbeamBusy => "crossbeam busy",
            Contender::CrossbeamBlocking => "crossbeam blocking",
        }
    }
    fn is_peer(self) -> bool {
        !matches!(
            self,
            Contender::Smx | Contender::SmxFences | Contender::SmxPark | Contender::SmxBatch | Contender::SmxBusy
        )
    }
}

/// Retries `f` until it succeeds: spin-loop hint, and a yield after 64 failures in a row.
#[inline]
fn busy<R>(mut f: impl FnMut() -> Option<R>) -> R {
    let mut fails = 0u32;
    loop {
        if let Some(r) = f() {
            return r;
        }
        fails += 1;
        if fails.is_multiple_of(64) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

fn cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Writes messages with `send` until `deadline`, then the end marker.
fn produce(deadline: Instant, mut send: impl FnMut(Message)) {
    let mut seq = 0;
    loop {
        if seq % 256 == 0 && Instant::now() >= deadline {
            break;
        }
        send(Message::new(seq));
        seq += 1;
    }
    send(Message {
        seq: Message::END,
        ..Message::new(0)
    });
}

/// Reads with `recv` up to the end marker, checking the order; returns the count.
fn consume(mut recv: impl FnMut() -> Message) -> u64 {
    let mut seq = 0;
    loop {
        let m = recv();
        if m.seq == Message::END {
            return seq;
        }
        m.check(seq);
        seq += 1;
    }
}

/// Runs producer and consumer on `cores` (producer, consumer) for `time`; returns (messages,
/// wall, cpu).
fn run(who: Contender, len: usize, time: Duration, cores: (CoreId, CoreId)) -> (u64, Duration, Duration) {
    let same_core = cores.0.id == cores.1.id;
    let pin = move |core: CoreId| assert!(core_affinity::set_for_current(core), "pinning");
    // Each arm gives the producer's and the consumer's loop, boxed.
    type P = Box<dyn FnOnce(Instant) + Send>;
    type C = Box<dyn FnOnce() -> u64 + Send>;
    let (producer, consumer): (P, C) = match who {
        Contender::SmxBatch => {
            let (mut tx, mut rx) = smx_spsc::channel::<Message>(len, smx_spsc::Kind::Blocking);
            if same_core {
                smx_spsc::share_core(&mut tx, &mut rx);
            }
            (
                Box::new(move |d| {
                    let mut batch = std::collections::VecDeque::with_capacity(32);
                    produce(d, |m| {
                        let end = m.seq == Message::END;
                        batch.push_back(m);
                        if batch.len() == 32 || end {
                            tx.push_from(&mut batch).unwrap();
                        }
                    })
                }),
                Box::new(move || {
                    let mut out = std::collections::VecDeque::with_capacity(32);
                    consume(|| {
                        loop {
                            if let Some(m) = out.pop_front() {
                                return m;
                            }
                            assert!(rx.wait_ready());
                            rx.pop_into(&mut out, 32);
                        }
                    })
                }),
            )
        }
        Contender::Smx | Contender::SmxFences | Contender::SmxPark | Contender::SmxBusy => {
            let handshake = if who == Contender::SmxFences {
                smx_spsc::Handshake::Fences
            } else {
                smx_spsc::Handshake::default()
            };
            let (mut tx, mut rx) = smx_spsc::channel_with::<Message>(len, smx_spsc::Kind::Blocking, handshake);
            if who == Contender::SmxPark {
                tx.set_spin(Duration::ZERO);
                rx.set_spin(Duration::ZERO);
            } else if same_core {
                smx_spsc::share_core(&mut tx, &mut rx);
            }
            if who != Contender::SmxBusy {
                (
                    Box::new(move |d| produce(d, |m| drop(tx.push(m).ok().unwrap()))),
                    Box::new(move || {
                        consume(|| {
                            assert!(rx.wait_ready());
                            rx.try_pop().ok().unwrap()
                        })
                    }),
                )
            } else {
                (
                    Box::new(move |d| {
                        produce(d, |m| {
                            let mut m = Some(m);
                            busy(|| match tx.try_push(m.take().unwrap()) {
                                Ok(_) => Some(()),
                                Err(smx_spsc::TryPushError::Full(back)) => {
                                    m = Some(back);
                                    None
                                }
                                Err(_) => panic!("closed"),
                            })
                        })
                    }),
                    Box::new(move || consume(|| busy(|| rx.try_pop().ok()))),
                )
            }
        }
        Contender::RtrbBusy => {
            let (mut tx, mut rx) = rtrb::RingBuffer::<Message>::new(len);
            (
                Box::new(move |d| {
                    produce(d, |m| {
                        let mut m = Some(m);
                        busy(|| match tx.push(m.take().unwrap()) {
                            Ok(()) => Some(()),
                            Err(rtrb::PushError::Full(back)) => {
                                m = Some(back);
                                None
                            }
                        })
                    })
                }),
                Box::new(move || consume(|| busy(|| rx.pop().ok()))),
            )
        }
        Contender::CrossbeamBusy => {
            let (tx, rx) = crossbeam_channel::bounded::<Message>(len);
            (
                Box::new(move |d| {
                    produce(d, |m| {
                        let mut m = Some(m);
                        busy(|| match tx.try_send(m.take().unwrap()) {
                            Ok(()) => Some(()),
                            Err(crossbeam_channel::TrySendError::Full(back)) => {
                                m = Some(back);
                                None
                            }
                            Err(_) => panic!("disconnected"),
                        })
                    })
                }),
                Box::new(move || consume(|| busy(|| rx.try_recv().ok()))),
            )
        }
        Contender::CrossbeamBlocking => {
            let (tx, rx) = crossbeam_channel::bounded::<Message>(len);
            (
                Box::new(move |d| produce(d, |m| tx.send(m).unwrap())),
                Box::new(move || consume(|| rx.recv().unwrap())),
            )
        }
    };
    let barrier = Arc::new(std::sync::Barrier::new(3));
    let (b1, b2) = (barrier.clone(), barrier.clone());
    let p = std::thread::spawn(move || {
        pin(cores.0);
        b1.wait();
        producer(Instant::now() + time);
    });
    let c = std::thread::spawn(move || {
        pin(cores.1);
        b2.wait();
        consumer()
    });
    barrier.wait();
    let (t0, c0) = (Instant::now(), cpu_time());
    p.join().unwrap();
    let n = c.join().unwrap();
    (n, t0.elapsed(), cpu_time() - c0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

const RUN_TIME: Duration = Duration::from_millis(250);

/// Threads of other processes running with a real-time policy (SCHED_FIFO or SCHED_RR): such a
/// thread takes a core away from everything else whenever it runs, so the benchmark waits
/// them out rather than measure beside them.
fn foreign_rt_threads() -> usize {
    let me = std::process::id().to_string();
    let mut n = 0;
    for proc in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = proc.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == me {
            continue;
        }
        // Kernel threads (empty command line) are not competitors.
        if std::fs::read(proc.path().join("cmdline")).map_or(true, |c| c.is_empty()) {
            continue;
        }
        for task in std::fs::read_dir(proc.path().join("task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            // Fields after the command name (in parentheses); `policy` is field 41.
            let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
            let policy = rest.split_whitespace().nth(41 - 3).and_then(|p| p.parse::<u32>().ok());
            n += matches!(policy, Some(1 | 2)) as usize;
        }
    }
    n
}

/// Waits (up to 10 minutes) until no other process runs real-time threads; returns the wait.
fn wait_for_quiet() -> Duration {
    let start = Instant::now();
    while foreign_rt_threads() > 0 && start.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(500));
    }
    start.elapsed()
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(9);
    let load_before = loadavg();
    let cores = core_affinity::get_core_ids().expect("core ids");
    assert!(cores.len() >= 2, "needs two cores");
    let placements = [
        ("different cores", (cores[0], cores[1])),
        ("same core", (cores[0], cores[0])),
    ];
    let lens = [1usize, 64, 1024];
    let cells: Vec<(usize, usize)> = (0..placements.len())
        .flat_map(|p| lens.iter().map(move |&l| (p, l)))
        .collect();

    // rates[cell][contender] = per-round messages per second; cpu likewise (s per M msgs).
    let mut rates = vec![vec![Vec::new(); CONTENDERS.len()]; cells.len()];
    let mut cpus = rates.clone();
    let mut waited = Duration::ZERO;
    for round in 0..rounds {
        for (ci, &(p, len)) in cells.iter().enumerate() {
            waited += wait_for_quiet();
            for k in 0..CONTENDERS.len() {
                let w = (k + round + ci) % CONTENDERS.len();
                let (n, wall, cpu) = run(CONTENDERS[w], len, RUN_TIME, placements[p].1);
                rates[ci][w].push(n as f64 / wall.as_secs_f64());
                cpus[ci][w].push(cpu.as_secs_f64() / (n.max(1) as f64 / 1e6));
            }
        }
        eprintln!("round {}/{rounds} done", round + 1);
    }

    println!("{rounds} rounds of {RUN_TIME:?} per contender and cell; ratio = smx-spsc / best peer");
    println!(
        "load average before: {load_before}, after: {}; waited {:.0?} for other processes' real-time threads to end\n",
        loadavg(),
        waited
    );
    let header = |title: &str| {
        println!("{title}");
        print!("{:<16} {:>5}", "placement", "len");
        for who in CONTENDERS {
            print!(" | {:>18}", who.name());
        }
    };
    header("messages per second (millions), median over the rounds");
    println!(" | {:>5}  best peer", "ratio");
    for (ci, &(p, len)) in cells.iter().enumerate() {
        let med: Vec<f64> = rates[ci].iter().map(|r| median(r.clone())).collect();
        let (best, best_rate) = CONTENDERS
            .iter()
            .zip(&med)
            .filter(|(w, _)| w.is_peer())
            .max_by(|a, b| a.1.total_cmp(b.1))
            .unwrap();
        print!("{:<16} {:>5}", placements[p].0, len);
        for m in &med {
            print!(" | {:>18.2}", m / 1e6);
        }
        println!(" | {:>5.2}  {}", med[0] / best_rate, best.name());
    }
    println!();
    header("CPU seconds (whole process) per million messages, median over the rounds");
    println!();
    for (ci, &(p, len)) in cells.iter().enumerate() {
        print!("{:<16} {:>5}", placements[p].0, len);
        for c in &cpus[ci] {
            print!(" | {:>18.3}", median(c.clone()));
        }
        println!();
    }
    println!("\nper-round rates (M/s), in the order of the columns above:");
    for (ci, &(p, len)) in cells.iter().enumerate() {
        for (w, who) in CONTENDERS.iter().enumerate() {
            let r: Vec<String> = rates[ci][w].iter().map(|x| format!("{:.2}", x / 1e6)).collect();
            println!(
                "  {:<16} {:>5} {:<18} {}",
                placements[p].0,
                len,
                who.name(),
                r.join(" ")
            );
        }
    }
}
