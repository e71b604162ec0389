//! One firewall thread: a group of pairs of the same period, served at every tick.
//!
//! The thread sets itself up (core, SCHED_FIFO above the boxes it serves, `mlockall`, spin
//! margin), waits for the run to start, takes the run's state schedule origin `t0`, and then
//! releases ticks `t0 + k·T` (`k ≥ 1`; tick 0 is the start itself) until every pair has
//! ended. Nothing on the periodic path logs, locks or allocates; the counters live in the
//! pairs and the ticker and become a [`FirewallReport`] at the end. In the cyclic mode the
//! thread also runs boxes ([`super::executive`]): it initialises them before the start
//! barrier and fires each once at the start and once after every tick's pass.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::firewall::executive::ExecBox;
use crate::firewall::pair::Pair;
use crate::lever::{Lever, LeverWords};
use crate::net::Driver;
use crate::report::{FirewallReport, PairReport};
use crate::run_state::{Outcome, ShardLive};
use crate::trace::{Labels, Recorder, What};
use smx_timing::clock::monotonic_ns;
use smx_timing::realtime::{self, RtRequest};
use smx_timing::{Spin, Ticker};

/// How one firewall thread runs.
#[derive(Debug, Clone)]
pub struct ShardConfig {
    pub name: String,
    pub period: Duration,
    pub priority: Option<u8>,
    pub core: Option<usize>,
    pub spin: Spin,
    pub lock_memory: bool,
    /// No other thread of the run shares this thread's core.
    pub exclusive_core: bool,
    /// Whether, alone on its core at a period too short to sleep in, the thread spins through
    /// the whole period at normal priority instead of taking `priority` ([`spins_through`]).
    pub may_spin_through: bool,
    /// How its notes name the settings that would change them.
    pub lever_words: LeverWords,
}

/// A firewall thread's work.
pub struct Shard {
    pub config: ShardConfig,
    pub pairs: Vec<Pair>,
    /// Boxes run by this thread (cyclic mode only).
    pub boxes: Vec<ExecBox>,
    /// The run's stop request, seen by the boxes.
    pub stop: Arc<AtomicBool>,
    /// The run's halt ([`crate::halt`]): the drain after a stop gives up.
    pub halt: crate::channel::Halt,
    pub live: Arc<ShardLive>,
    /// The run's trace and this thread's track, when traced.
    pub trace: Option<(crate::trace::Tracer, u32)>,
}

/// What a firewall thread hands back: its report, warnings, and the outcome of each box it
/// ran (by net id).
pub struct ShardResult {
    pub report: FirewallReport,
    pub warnings: Vec<String>,
    pub outcomes: Vec<(usize, Outcome)>,
}

/// Whether the thread spins through every period, never sleeping, at normal priority: only
/// when it may ([`ShardConfig::may_spin_through`]), is alone on its core, and its automatic
/// spin margin, measured here at normal priority, is at least half the period. A sleep that
/// short buys nothing (nothing else of the run wants the core) and costs a wake-up per tick,
/// whose latency is what the margin covers, so releases come late. Spinning through at
/// SCHED_FIFO is no better: the kernel throttles a real-time thread that never sleeps (the
/// share `sched_rt_runtime_us` or the fair server keeps for normal threads, taken in one
/// piece of tens of milliseconds), whereas a normal thread alone on its core yields to a
/// kernel thread for microseconds at a time.
fn spins_through(cfg: &ShardConfig) -> bool {
    cfg.may_spin_through && cfg.exclusive_core && cfg.spin.spins_through(cfg.period)
}

/// The thread body. `start` blocks until the run starts and returns false if it was aborted;
/// before it meets the other threads at the start barrier it calls the function it is given,
/// which initialises the boxes. `origin` is shared by every firewall of the run so that all
/// schedules are aligned.
pub fn run(
    mut shard: Shard,
    start: impl FnOnce(&mut dyn FnMut() -> bool) -> Option<bool>,
    origin: &OnceLock<u64>,
) -> ShardResult {
    let mut warnings = Vec::new();
    let cfg = shard.config.clone();
    let (core, grant, spin_ns) = place_and_schedule(&cfg, &mut warnings);
    let mut report = empty_report(&cfg, &grant, core, spin_ns);
    let boxes = std::mem::take(&mut shard.boxes);
    let ids: Vec<usize> = boxes.iter().map(|b| b.plan.id).collect();
    let mut drivers: Vec<(usize, Driver)> = Vec::with_capacity(boxes.len());
    let mut pending = Some(boxes);
    let trace = shard.trace.take();
    let mut rec = trace
        .as_ref()
        .map(|(t, tid)| shard_recorder(t, *tid, &cfg, &shard.pairs));
    let mut init = || {
        for b in pending.take().into_iter().flatten() {
            let mut outcome = Outcome::new();
            outcome.core = core;
            outcome.priority = grant.fifo_priority;
            let mut driver = Driver::new(&b.plan, &b.spec, b.ports, outcome, &shard.stop);
            let recorder = trace
                .as_ref()
                .map(|(t, tid)| t.recorder(Labels::for_net(&b.plan, *tid, cfg.name.clone())));
            driver.instrument(b.loops, recorder);
            driver.halt_on(&shard.halt);
            drivers.push((b.plan.id, driver));
        }
        drivers.iter().all(|(_, d)| !d.failed())
    };
    let Some(cancelled) = start(&mut init) else {
        return not_started(&mut shard.pairs, report, warnings, ids);
    };
    drop(pending);
    let t0 = *origin.get_or_init(monotonic_ns);
    // The message clock and CLOCK_MONOTONIC differ by a constant offset.
    let offset = monotonic_ns().saturating_sub(smx_box::now_ns());
    shard
        .live
        .t0_message_ns
        .store(t0.saturating_sub(offset).max(1), Ordering::Release);
    let mut ticker = Ticker::new(t0, cfg.period, spin_ns);
    ticker.skip_to(1);
    let stop = shard.stop.clone();
    for (_, d) in drivers.iter_mut() {
        d.start(cancelled);
        fire_once(d, &stop);
    }
    let guard = StarvationGuard::new(grant.fifo_priority.is_some() && !cfg.exclusive_core, cfg.lever_words);
    let clock = TickClock { offset, guard };
    let (last_index, overruns) = tick_until_done(
        &mut shard,
        &mut drivers,
        &mut ticker,
        clock,
        rec.as_mut(),
        &mut warnings,
    );
    // A start called off ran no tick of the schedule: the drain's ticks are no figure of it.
    if !cancelled {
        report.ticks = last_index;
        report.missed_ticks = ticker.missed();
        report.overruns = overruns;
        report.lateness_ns = ticker.lateness().summary();
    }
    report.pairs = shard.pairs.iter().map(pair_report).collect();
    if cancelled {
        for pair in &mut report.pairs {
            (pair.ticks, pair.missed_ticks, pair.produce_misses, pair.consume_misses) = (0, 0, 0, 0);
            pair.produce_misses_before_first = 0;
        }
    }
    let outcomes = drivers.into_iter().map(|(id, d)| (id, d.finish())).collect();
    ShardResult {
        report,
        warnings,
        outcomes,
    }
}

/// The shard's clock beyond its ticker: the message clock's offset from CLOCK_MONOTONIC and
/// the guard that notices a firewall starving the boxes of its core.
struct TickClock {
    offset: u64,
    guard: StarvationGuard,
}

/// Serves every tick until each pair and box has ended, or drains them after a stop; the
/// last tick's index and the ticks that overran the next one.
fn tick_until_done(
    shard: &mut Shard,
    drivers: &mut [(usize, Driver)],
    ticker: &mut Ticker,
    clock: TickClock,
    mut rec: Option<&mut Recorder>,
    warnings: &mut Vec<String>,
) -> (u64, u64) {
    let TickClock { offset, mut guard } = clock;
    let cfg = &shard.config;
    let stop = shard.stop.clone();
    let mut overruns = 0u64;
    let mut last_index = 0u64;
    while shard.pairs.iter().any(|p| !p.done()) || drivers.iter().any(|(_, d)| d.running()) {
        let stall = shard.live.stall_ns.swap(0, Ordering::AcqRel);
        if stall > 0 {
            std::thread::sleep(Duration::from_nanos(stall));
        }
        let Some(tick) = ticker.wait_or_stop(&stop) else {
            // After a stop the schedule no longer matters, only that every pair ends soon:
            // the ticks already released stay the books, the rest is drained.
            drain(
                &mut shard.pairs,
                drivers,
                (&*stop, &*shard.halt),
                cfg.period,
                &mut guard,
                warnings,
                &cfg.name,
            );
            break;
        };
        shard.live.tick.store(tick.index, Ordering::Release);
        let before: u64 = shard.pairs.iter().map(|p| p.forwarded).sum();
        serve_pairs(&mut shard.pairs, &tick, last_index, offset, rec.as_deref_mut());
        let moved = shard.pairs.iter().map(|p| p.forwarded).sum::<u64>() > before;
        if let Some(why) = guard.after_tick(moved, stop.load(Ordering::Relaxed)) {
            warnings.push(format!("{}: {why}", cfg.name));
        }
        for (_, d) in drivers.iter_mut() {
            fire_once(d, &stop);
        }
        let ended = monotonic_ns();
        if ended > ticker.due(tick.index + 1) {
            overruns += 1;
            if let Some(rec) = rec.as_deref_mut() {
                rec.instant(What::Overrun, ended, tick.index);
            }
        }
        if let Some(rec) = rec.as_deref_mut() {
            trace_tick(rec, &tick, ended);
        }
        last_index = tick.index;
        publish(&shard.live, &shard.pairs, ticker.missed(), overruns);
    }
    (last_index, overruns)
}

/// The shard's report before its first tick.
fn empty_report(cfg: &ShardConfig, grant: &realtime::RtGrant, core: Option<usize>, spin_ns: u64) -> FirewallReport {
    FirewallReport {
        name: cfg.name.clone(),
        clock_source: smx_timing::clock_source(),
        period_ns: cfg.period.as_nanos() as u64,
        ticks: 0,
        missed_ticks: 0,
        overruns: 0,
        lateness_ns: Default::default(),
        priority: grant.fifo_priority,
        core,
        spin_ns,
        pairs: Vec::new(),
    }
}

/// The result of a shard whose run never started: its pairs ended, its boxes without steps.
fn not_started(pairs: &mut [Pair], mut report: FirewallReport, warnings: Vec<String>, ids: Vec<usize>) -> ShardResult {
    pairs.iter_mut().for_each(Pair::finish);
    report.pairs = pairs.iter().map(pair_report).collect();
    let outcomes = ids.into_iter().map(|id| (id, Outcome::new())).collect();
    ShardResult {
        report,
        warnings,
        outcomes,
    }
}

/// The trace's recorder of the shard's own thread, naming its pairs.
fn shard_recorder(trace: &crate::trace::Tracer, tid: u32, cfg: &ShardConfig, pairs: &[Pair]) -> Recorder {
    trace.recorder(Labels {
        tid,
        thread: cfg.name.clone(),
        owner: cfg.name.clone(),
        pairs: pairs
            .iter()
            .map(|p| format!("{} -> {}", p.producer, p.consumer))
            .collect(),
        ..Labels::default()
    })
}

/// Pins the calling thread to the shard's core and asks for its real-time priority (each
/// refusal a warning); the core it got, the grant, and how long it spins before each tick.
fn place_and_schedule(cfg: &ShardConfig, warnings: &mut Vec<String>) -> (Option<usize>, realtime::RtGrant, u64) {
    let mut core = None;
    if let Some(c) = cfg.core {
        if smx_timing::sched::pin_current_thread(c).is_ok() {
            core = Some(c);
        } else {
            warnings.push(format!("{}: could not pin to core {c}", cfg.name));
        }
    }
    let spin_through = spins_through(cfg);
    let grant = realtime::apply(RtRequest {
        fifo_priority: cfg.priority.filter(|_| !spin_through),
        lock_memory: cfg.lock_memory,
    });
    warnings.extend(grant.warnings.iter().map(|w| format!("{}: {w}", cfg.name)));
    // A firewall that shares its core with boxes spins at most half a period: more would
    // starve them (a producer that never runs misses every tick). One alone on its core may
    // spin longer, but not through the whole period: the kernel answers a SCHED_FIFO thread
    // that never sleeps by throttling it (sched_rt_runtime_us, or since Linux 6.12 the fair
    // server: 50 ms of every second go to waiting normal threads), which loses thousands of
    // ticks at once. Sleeping a quarter of each period leaves them that time in small pieces.
    let period_ns = cfg.period.as_nanos() as u64;
    let longest = if cfg.exclusive_core {
        period_ns / 4 * 3
    } else {
        period_ns / 2
    };
    let spin_ns = if spin_through {
        warnings.push(format!(
            "{}: spins through each {} period at normal priority instead of real-time scheduling, a period too short to sleep in \
             ({} keeps SCHED_FIFO and sleeps part of each period)",
            cfg.name,
            super::human_ns(period_ns),
            cfg.lever_words.name(Lever::RealtimeOn)
        ));
        period_ns
    } else {
        cfg.spin.resolve(cfg.period).min(longest)
    };
    (core, grant, spin_ns)
}

/// One tick's work on the pairs: books the ticks lost since `last_index` (the thread woke
/// late), then lets each pair release what was produced before the tick's time.
fn serve_pairs(
    pairs: &mut [Pair],
    tick: &smx_timing::Tick,
    last_index: u64,
    offset: u64,
    mut rec: Option<&mut Recorder>,
) {
    let lost = tick.index.saturating_sub(last_index + 1);
    if lost > 0 {
        for pair in pairs.iter_mut().filter(|p| !p.done()) {
            pair.missed_ticks += lost;
        }
        if let Some(rec) = rec.as_deref_mut() {
            rec.instant(What::MissedTicks, tick.woke_ns, lost);
        }
    }
    let cutoff = tick.scheduled_ns.saturating_sub(offset);
    for (k, pair) in pairs.iter_mut().enumerate() {
        let misses = (pair.produce_misses, pair.consume_misses);
        pair.on_tick(cutoff);
        if let Some(rec) = rec.as_deref_mut() {
            trace_misses(rec, k, misses, pair, tick.index);
        }
    }
}

/// The trace's slice of one tick: from waking to `ended`, with how late it woke.
fn trace_tick(rec: &mut Recorder, tick: &smx_timing::Tick, ended: u64) {
    let late = tick.woke_ns.saturating_sub(tick.scheduled_ns);
    rec.slice(
        What::Tick,
        tick.woke_ns,
        ended.saturating_sub(tick.woke_ns),
        tick.index,
        late,
    );
}

/// The figures the report will show, so far, for live figures.
fn publish(live: &ShardLive, pairs: &[Pair], missed: u64, overruns: u64) {
    live.missed_ticks.store(missed, Ordering::Relaxed);
    live.overruns.store(overruns, Ordering::Relaxed);
    let produce = pairs.iter().map(|p| p.produce_misses).sum();
    let consume = pairs.iter().map(|p| p.consume_misses).sum();
    live.produce_misses.store(produce, Ordering::Relaxed);
    live.consume_misses.store(consume, Ordering::Relaxed);
}

/// Instants for the misses pair `k` just counted at tick `tick` (`before`: its counts before).
fn trace_misses(rec: &mut Recorder, k: usize, before: (u64, u64), pair: &Pair, tick: u64) {
    let at = rec.now();
    if pair.produce_misses > before.0 {
        rec.instant(What::ProduceMiss(k as u32), at, tick);
    }
    if pair.consume_misses > before.1 {
        rec.instant(What::ConsumeMiss(k as u32), at, tick);
    }
}

/// After a stop: passes without a schedule, at most [`DRAIN_PASS`] apart (or the period, if
/// shorter), each forwarding whatever its pairs hold and firing the boxes of the executive,
/// until every pair and box has ended. The sources end at the stop, so this takes a few
/// passes; they are not counted as ticks, so a stop adds no produce misses to the books. A
/// net that can never drain (a cycle) is ended by the run's halt ([`crate::halt`]): the pairs
/// close, and so do the boxes of the executive.
fn drain(
    pairs: &mut [Pair],
    drivers: &mut [(usize, Driver)],
    (stop, halt): (&AtomicBool, &AtomicBool),
    period: Duration,
    guard: &mut StarvationGuard,
    warnings: &mut Vec<String>,
    name: &str,
) {
    let pause = period.min(DRAIN_PASS);
    while pairs.iter().any(|p| !p.done()) || drivers.iter().any(|(_, d)| d.running()) {
        if halt.load(Ordering::Acquire) {
            pairs.iter_mut().for_each(Pair::finish);
            drivers.iter_mut().for_each(|(_, d)| d.halt_now());
            break;
        }
        pairs.iter_mut().for_each(Pair::drain_pass);
        if let Some(why) = guard.after_tick(false, true) {
            warnings.push(format!("{name}: {why}"));
        }
        for (_, d) in drivers.iter_mut() {
            fire_once(d, stop);
        }
        std::thread::sleep(pause);
    }
}

/// One firing of an executive's box without waiting; the box then releases what it holds
/// across steps ([`smx_box::BoxImpl::idle`]), since the executive sleeps until the next tick,
/// however long the period.
fn fire_once(d: &mut Driver, stop: &AtomicBool) {
    if d.fire(stop, false) {
        d.release_held();
    }
}

/// The longest pause between two passes after a stop.
const DRAIN_PASS: Duration = Duration::from_millis(1);

fn pair_report(p: &Pair) -> PairReport {
    PairReport {
        producer: p.producer.clone(),
        consumer: p.consumer.clone(),
        ticks: p.ticks,
        forwarded: p.forwarded,
        produce_misses: p.produce_misses,
        produce_misses_before_first: p.produce_misses_before_first,
        consume_misses: p.consume_misses,
        missed_ticks: p.missed_ticks,
        firewall_ns: p.firewall_ns.summary(),
        // Known only from the whole net's shape, when the run is reported.
        consume_misses_by_shape: false,
        produce_misses_by_shape: false,
    }
}

/// Keeps a real-time firewall from starving the threads it waits for.
///
/// A SCHED_FIFO firewall that shares its core with its boxes runs whenever it is due; at a
/// period close to the platform's wake-up latency it is due nearly all the time, and a producer
/// of lower priority on its core never runs: nothing moves, the run never ends, and a stop
/// request cannot reach the starved boxes. So the firewall gives up real-time priority when it
/// has moved nothing for [`StarvationGuard::PATIENCE`] ticks in a row, and at once when a stop
/// was requested (after a stop only draining matters, not deadlines).
struct StarvationGuard {
    armed: bool,
    idle_ticks: u64,
    words: LeverWords,
}

impl StarvationGuard {
    const PATIENCE: u64 = 2_000;

    fn new(armed: bool, words: LeverWords) -> Self {
        StarvationGuard {
            armed,
            idle_ticks: 0,
            words,
        }
    }

    /// After a tick that `moved` messages or not: `Some(reason)` when priority was given up.
    fn after_tick(&mut self, moved: bool, stopping: bool) -> Option<String> {
        if !self.armed {
            return None;
        }
        self.idle_ticks = if moved { 0 } else { self.idle_ticks + 1 };
        let why = if stopping {
            "normal scheduling from the stop on, so that the boxes sharing its core can drain".to_string()
        } else if self.idle_ticks >= Self::PATIENCE {
            format!(
                "gave up SCHED_FIFO after {} ticks without a message: it shares a core with the boxes it \
                 serves and kept them from running (use {}, a longer period, or cores of their own)",
                self.idle_ticks,
                self.words.name(Lever::TtCyclic)
            )
        } else {
            return None;
        };
        self.armed = false;
        Some(match smx_timing::sched::set_normal_scheduling() {
            Ok(()) => why,
            Err(e) => format!("{why}; but {e}"),
        })
    }
}

#[cfg(test)]
mod guard_tests {
    use super::StarvationGuard;

    #[test]
    fn an_idle_real_time_firewall_gives_up_priority_once() {
        let mut g = StarvationGuard::new(true, Default::default());
        for _ in 0..StarvationGuard::PATIENCE - 1 {
            assert!(g.after_tick(false, false).is_none());
        }
        assert!(
            g.after_tick(false, false)
                .is_some_and(|w| w.contains("gave up SCHED_FIFO"))
        );
        assert!(g.after_tick(false, false).is_none(), "once");
    }

    #[test]
    fn progress_resets_the_count_and_a_stop_gives_up_at_once() {
        let mut g = StarvationGuard::new(true, Default::default());
        for i in 0..3 * StarvationGuard::PATIENCE {
            assert!(g.after_tick(i % 100 == 0, false).is_none());
        }
        assert!(g.after_tick(true, true).is_some_and(|w| w.contains("stop")));
        let mut off = StarvationGuard::new(false, Default::default());
        assert!(off.after_tick(false, true).is_none());
    }
}

#[cfg(test)]
mod spin_through_tests {
    use super::{ShardConfig, Spin, spins_through};
    use std::time::Duration;

    fn config(period: Duration) -> ShardConfig {
        ShardConfig {
            name: "tf".into(),
            period,
            priority: Some(5),
            core: None,
            spin: Spin::Auto,
            lock_memory: false,
            exclusive_core: true,
            may_spin_through: true,
            lever_words: Default::default(),
        }
    }

    #[test]
    fn only_a_lone_automatic_firewall_at_a_period_shorter_than_its_wake_up_spins_through() {
        // No wake-up is as short as a nanosecond, and every one is shorter than an hour.
        let short = config(Duration::from_nanos(1));
        assert!(spins_through(&short));
        assert!(!spins_through(&config(Duration::from_secs(3600))));
        let shared = ShardConfig {
            exclusive_core: false,
            ..short.clone()
        };
        let not_allowed = ShardConfig {
            may_spin_through: false,
            ..short.clone()
        };
        let fixed = ShardConfig {
            spin: Spin::Fixed(Duration::from_micros(5)),
            ..short
        };
        assert!(!spins_through(&shared) && !spins_through(&not_allowed) && !spins_through(&fixed));
    }
}
