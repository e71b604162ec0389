//! Temporal firewalls: how data crosses a time-triggered edge (spec runtime.md §3).
//!
//! A firewall releases ticks on the absolute schedule `t0 + k·T` shared by every firewall of
//! the run, and at each tick moves one message per pair from its producer to its consumer,
//! with logical-execution-time semantics: what a producer delivers during period `k` becomes
//! visible to the consumer at the tick that starts period `k+1`, never earlier ([`pair`]).
//! The producer side is the box's ordinary channel (a coupled writer blocks until the
//! firewall took the previous message, which is what releases a time-triggered producer once
//! per period); the consumer side overwrites an unread message (a consume miss) instead of
//! blocking, so the firewall never waits for a box.
//!
//! Unlike the original's single thread per period, the pairs of one period are spread over
//! several threads ([`shard`]), by default one per allowed core, each pinned and running at a
//! SCHED_FIFO level above the boxes it serves. [`plan`] turns the time-triggered edges of a
//! run into pairs following the spec's §3.1 table.

pub mod executive;
pub mod pair;
pub mod plan;
pub mod shard;

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::channel::{self, ChannelKind, Reader, Writer};
pub use crate::options::{FirewallOptions, TtMode};
use crate::report::FirewallReport;
use crate::run_state::ShardLive;
pub use pair::Pair;
pub use shard::{Shard, ShardConfig, ShardResult};
use smx_timing::lateness::human_ns;

/// The pairs of one period before the threads start.
pub struct Firewall {
    pub period: Duration,
    pairs: Vec<Pair>,
}

impl Firewall {
    pub fn new(period: Duration) -> Self {
        Firewall {
            period,
            pairs: Vec::new(),
        }
    }

    /// Adds a pair and returns the box-side ends: the producer's writer (blocking when
    /// `producer_decoupled` is false) and the consumer's reader (waited on by the firing rule
    /// unless `consumer_decoupled`). Lengths follow spec §3.1 (1, or the user's on a
    /// non-time-triggered side).
    pub fn connect(
        &mut self,
        producer: &str,
        consumer: &str,
        producer_decoupled: bool,
        in_len: usize,
        consumer_decoupled: bool,
        out_len: usize,
    ) -> (Writer, Reader) {
        let (box_writer, fw_reader) = channel::channel(input_kind(producer_decoupled), in_len);
        let (fw_writer, mut box_reader) = channel::channel(output_kind(consumer_decoupled), out_len);
        box_reader.look_at_once();
        self.add_pair(producer, consumer, fw_reader, fw_writer);
        (box_writer, box_reader)
    }

    /// Adds a pair from existing channel ends (`output` must overwrite when full).
    pub fn add_pair(&mut self, producer: &str, consumer: &str, mut input: Reader, output: Writer) {
        // The firewall may run at a real-time priority on its producer's core.
        input.take_published_only();
        self.pairs.push(Pair::new(producer, consumer, input, output));
    }

    /// The pair added last has its producer in this period's cyclic executive.
    pub fn last_producer_in_pass(&mut self) {
        if let Some(pair) = self.pairs.last_mut() {
            pair.set_producer_in_pass();
        }
    }

    /// Splits the pairs over threads (round-robin, so that each thread gets a fair share).
    pub fn into_shards(self, opts: &FirewallOptions) -> Vec<Shard> {
        let wanted = opts.shards.unwrap_or(opts.cores.len()).max(1);
        let count = wanted.min(self.pairs.len()).max(1);
        let mut groups: Vec<Vec<Pair>> = (0..count).map(|_| Vec::new()).collect();
        for (i, pair) in self.pairs.into_iter().enumerate() {
            groups[i % count].push(pair);
        }
        groups
            .into_iter()
            .enumerate()
            .filter(|(_, pairs)| !pairs.is_empty())
            .map(|(i, pairs)| Shard {
                config: ShardConfig {
                    name: format!("tf_{}_{i}", human_ns(self.period.as_nanos() as u64)),
                    period: self.period,
                    priority: opts.priority,
                    core: (!opts.cores.is_empty()).then(|| opts.cores[i % opts.cores.len()]),
                    spin: opts.spin,
                    lock_memory: opts.lock_memory,
                    exclusive_core: opts.exclusive_cores,
                    may_spin_through: opts.may_spin_through,
                    lever_words: opts.lever_words,
                },
                pairs,
                boxes: Vec::new(),
                stop: Arc::new(std::sync::atomic::AtomicBool::new(false)),
                halt: Default::default(),
                live: Arc::new(ShardLive::default()),
                trace: None,
            })
            .collect()
    }

    /// Starts the firewall now, on its own (outside a [`crate::run`]), e.g. for tests
    /// and benchmarks that drive the box ends themselves.
    pub fn start(self, opts: &FirewallOptions) -> Result<RunningFirewall, String> {
        let origin = Arc::new(OnceLock::new());
        let shards = self.into_shards(opts);
        let mut running = RunningFirewall { shards: Vec::new() };
        for shard in shards {
            running.shards.push(spawn(
                shard,
                |init: &mut dyn FnMut() -> bool| Some(!init()),
                origin.clone(),
                None,
            )?);
        }
        Ok(running)
    }
}

/// Kind of the producer→firewall channel: the firewall only takes from it without blocking,
/// so its consumer side needs no "latest value" copy.
pub fn input_kind(producer_decoupled: bool) -> ChannelKind {
    ChannelKind::from_bits(producer_decoupled, false)
}

/// Kind of the firewall→consumer channel: the firewall's writes overwrite.
pub fn output_kind(consumer_decoupled: bool) -> ChannelKind {
    ChannelKind::from_bits(true, consumer_decoupled)
}

/// A started firewall thread.
pub struct RunningShard {
    pub live: Arc<ShardLive>,
    handle: JoinHandle<ShardResult>,
    name: String,
    period: Duration,
    /// The nets its cyclic executive runs.
    nets: Vec<usize>,
}

impl RunningShard {
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    pub fn thread(&self) -> &std::thread::Thread {
        self.handle.thread()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The nets this thread runs (cyclic executive), by id.
    pub fn nets(&self) -> &[usize] {
        &self.nets
    }

    /// Its report from the figures it publishes after every tick, for a thread that did not
    /// end ([`crate::halt`]): no pairs, no lateness.
    pub fn live_report(&self) -> FirewallReport {
        let live = &self.live;
        FirewallReport {
            name: self.name.clone(),
            clock_source: smx_timing::clock_source(),
            period_ns: self.period.as_nanos() as u64,
            ticks: live.tick.load(Ordering::Acquire),
            missed_ticks: live.missed_ticks.load(Ordering::Relaxed),
            overruns: live.overruns.load(Ordering::Relaxed),
            lateness_ns: Default::default(),
            priority: None,
            core: None,
            spin_ns: 0,
            pairs: Vec::new(),
        }
    }

    pub fn join(self) -> ShardResult {
        let name = format!("firewall thread ({:?})", self.handle.thread().name());
        self.handle.join().unwrap_or_else(|_| {
            let report = FirewallReport {
                name: name.clone(),
                clock_source: String::new(),
                period_ns: 0,
                ticks: 0,
                missed_ticks: 0,
                overruns: 0,
                lateness_ns: Default::default(),
                priority: None,
                core: None,
                spin_ns: 0,
                pairs: Vec::new(),
            };
            ShardResult {
                report,
                warnings: vec![format!("{name} panicked")],
                outcomes: Vec::new(),
            }
        })
    }
}

/// Spawns one firewall thread; `start` runs on it and blocks until the run starts. In a run
/// (`state`), the thread counts itself ended there ([`crate::run_state::ThreadEnds::guard`]).
pub fn spawn(
    shard: Shard,
    start: impl FnOnce(&mut dyn FnMut() -> bool) -> Option<bool> + Send + 'static,
    origin: Arc<OnceLock<u64>>,
    state: Option<Arc<crate::run_state::RunState>>,
) -> Result<RunningShard, String> {
    let live = shard.live.clone();
    let name = shard.config.name.clone();
    let period = shard.config.period;
    let nets = shard.boxes.iter().map(|b| b.plan.id).collect();
    let handle = std::thread::Builder::new()
        .name(name.clone())
        .stack_size(256 * 1024)
        .spawn(move || {
            let _ended = state.as_deref().map(|c| c.ends.guard());
            shard::run(shard, start, &origin)
        })
        .map_err(|e| format!("could not start firewall thread '{name}': {e}"))?;
    Ok(RunningShard {
        live,
        handle,
        name,
        period,
        nets,
    })
}

/// A firewall started with [`Firewall::start`].
pub struct RunningFirewall {
    pub shards: Vec<RunningShard>,
}

impl RunningFirewall {
    /// The tick released last by the first thread (0 before the first).
    pub fn tick(&self) -> u64 {
        self.shards.first().map_or(0, |s| s.live.tick.load(Ordering::Acquire))
    }

    /// The schedule origin on the message clock (0 until the threads started).
    pub fn t0_message_ns(&self) -> u64 {
        self.shards
            .first()
            .map_or(0, |s| s.live.t0_message_ns.load(Ordering::Acquire))
    }

    /// Test hook: every thread stalls this long before its next wait.
    pub fn stall_once(&self, d: Duration) {
        for s in &self.shards {
            s.live.stall_ns.store(d.as_nanos() as u64, Ordering::Release);
        }
    }

    /// Waits until every pair has ended; one report per thread, plus warnings.
    pub fn join(self) -> (Vec<FirewallReport>, Vec<String>) {
        let (reports, warnings, _) = self.join_all();
        (reports, warnings)
    }

    /// [`RunningFirewall::join`], plus the outcomes of the boxes the threads ran (by net id).
    pub fn join_all(
        self,
    ) -> (
        Vec<FirewallReport>,
        Vec<String>,
        Vec<(usize, crate::run_state::Outcome)>,
    ) {
        let mut reports = Vec::new();
        let mut warnings = Vec::new();
        let mut outcomes = Vec::new();
        for s in self.shards {
            let r = s.join();
            reports.push(r.report);
            warnings.extend(r.warnings);
            outcomes.extend(r.outcomes);
        }
        (reports, warnings, outcomes)
    }
}

/// Spawns the firewall threads of a run; each waits at the run's gate and start barrier, and
/// all share one schedule origin. On failure the threads already started are released (the
/// caller aborts the gate) and joined.
pub fn spawn_all(shards: Vec<Shard>, state: &Arc<crate::run_state::RunState>) -> Result<RunningFirewall, String> {
    let origin = Arc::new(OnceLock::new());
    let mut running = RunningFirewall { shards: Vec::new() };
    for mut shard in shards {
        shard.halt = state.ends.halt.clone();
        let mine = state.clone();
        let ids: Vec<usize> = shard.boxes.iter().map(|b| b.plan.id).collect();
        let start = move |init: &mut dyn FnMut() -> bool| {
            if !mine.gate.wait() {
                return None;
            }
            let set = |to| ids.iter().for_each(|&id| mine.loops[id].set_starting(to));
            set(crate::run_state::Starting::InInit);
            if !init() {
                mine.start_failed.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            set(crate::run_state::Starting::Ready);
            // As for a box's thread (`net::run_box`): cancelled, nothing waits for peers.
            Some(mine.meet_at_start())
        };
        match spawn(shard, start, origin.clone(), Some(state.clone())) {
            Ok(s) => running.shards.push(s),
            Err(e) => {
                state.gate.abort();
                let _ = running.join();
                return Err(e);
            }
        }
    }
    Ok(running)
}
