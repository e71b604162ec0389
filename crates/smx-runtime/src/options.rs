//! What a caller decides about a run beyond its graph: placement, scheduling, time-triggered
//! execution, chaining, tracing and latency sampling.
//!
//! A leaf of the crate's module graph: every stage of a run reads these options, and none of
//! them is needed to say what the options are.

use crate::lever::LeverWords;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use smx_timing::Spin;
use smx_timing::probe::DEFAULT_FIREWALL_PRIORITY;

use crate::config::NetSettings;
use crate::latency::LatencyMode;
use crate::progress::Progress;
use crate::trace::Tracer;

/// How threads are placed on cores.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PinMode {
    /// Round-robin over the allowed cores, a channel's producer and consumer on different
    /// cores where possible.
    #[default]
    Auto,
    /// No pinning (the per-net `core` setting still applies).
    Off,
    /// Round-robin over these cores.
    List(Vec<usize>),
}

/// Everything about a run that is not in the graph.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub pin: PinMode,
    /// Length of every channel whose length was not declared in the source (`--channel-len`).
    pub default_channel_len: Option<u32>,
    /// One entry per graph node (by id); empty: every box with its spec's defaults.
    pub settings: Vec<NetSettings>,
    /// Set it (e.g. from a Ctrl-C handler) to end the sources; everything then drains. The run
    /// sets it itself when a box fails to start (nothing runs, and nothing may wait for peers).
    pub stop: Arc<AtomicBool>,
    /// Sampled by the caller for a progress line.
    pub progress: Progress,
    /// Stack size of each net thread; small so that a thousand threads fit.
    pub stack_size: usize,
    /// Nets beyond this many are rejected before any thread starts.
    pub max_threads: usize,
    /// How temporal firewalls run (spin, real-time priority, memory locking, threads).
    pub firewall: FirewallOptions,
    /// Whether the priorities of `rt`/`tt` nets and firewalls become SCHED_FIFO (`--rt`).
    pub realtime: Realtime,
    /// How long a box or routing node waiting on a channel (for a message, or for room in a
    /// full coupled channel) spins before it parks (`--wait-spin`); zero parks at once. Ends
    /// pinned to one core always park at once. See [`crate::channel::DEFAULT_SPIN`] for why.
    pub wait_spin: Duration,
    /// Record a timeline of the run (`--trace`); write it with [`Tracer::write_chrome`]
    /// after the run.
    pub trace: Option<Tracer>,
    /// Which channel writes are stamped for the report's latency figures (`--latency`).
    pub latency: LatencyMode,
    /// Whether boxes of a chain may share a thread (`--chain`).
    pub chain: ChainMode,
    /// How the report's notes name the settings that would change a decision of the run: the
    /// driver's own words ([`crate::option_words`] unless it gives its own).
    pub lever_words: LeverWords,
    /// Cores of this run that busy threads of other processes use as well (two processes of a
    /// deployment given the same cores): `--rt auto` takes no real-time scheduling, and a
    /// cyclic executive neither spins nor counts its core as its own, as beside the run's own
    /// box threads. `None`: the run's cores are its own as far as it knows.
    pub shared_cores: Option<SharedCores>,
}

/// Cores a run shares with other processes, and whose they are, for the report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SharedCores {
    pub cores: Vec<usize>,
    /// Who else runs on them, as the report names them (`process p1`).
    pub with: String,
}

/// When `rt`/`tt` priorities and firewalls run at real-time priority.
///
/// A SCHED_FIFO thread that is busy (a firewall spinning towards a 10 us release, a box that
/// never blocks) starves every lower-priority thread pinned to its core for as long as it runs:
/// on a machine with fewer cores than threads that turns a deadline problem into a hang. So by
/// default real-time scheduling is used only when every thread of the run can have a core of
/// its own; `On` forces it (for machines set up for it), `Off` never uses it. An explicit
/// per-net `priority` setting is always honoured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Realtime {
    #[default]
    Auto,
    On,
    Off,
}

impl std::str::FromStr for Realtime {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Realtime::Auto),
            "on" => Ok(Realtime::On),
            "off" => Ok(Realtime::Off),
            _ => Err(format!("'{s}' is not one of: auto, on, off")),
        }
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            pin: PinMode::Auto,
            default_channel_len: None,
            settings: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            progress: Progress::new(),
            stack_size: 512 * 1024,
            max_threads: 4096,
            firewall: FirewallOptions::default(),
            realtime: Realtime::Auto,
            wait_spin: crate::channel::DEFAULT_SPIN,
            trace: None,
            latency: LatencyMode::default(),
            chain: ChainMode::default(),
            lever_words: LeverWords::default(),
            shared_cores: None,
        }
    }
}

/// Where the boxes of a time-triggered net run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TtMode {
    /// [`TtMode::Cyclic`] when the threads of [`TtMode::Threads`] would outnumber the cores
    /// (each tick then needs wake-ups that compete for a core), else threads.
    #[default]
    Auto,
    /// Every box on its own thread, woken by the firewall through its channels.
    Threads,
    /// Boxes whose channels are all time-triggered at one period run inside that period's
    /// firewall thread, once per tick (the cyclic executive).
    Cyclic,
}

impl std::str::FromStr for TtMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(TtMode::Auto),
            "threads" => Ok(TtMode::Threads),
            "cyclic" => Ok(TtMode::Cyclic),
            _ => Err(format!("'{s}' is not one of: auto, threads, cyclic")),
        }
    }
}

/// How firewalls run, beyond their period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirewallOptions {
    pub spin: Spin,
    pub lock_memory: bool,
    /// SCHED_FIFO level; `None`: normal scheduling.
    pub priority: Option<u8>,
    /// Threads per period: `None` = one per core in `cores` (at least one), never more than
    /// there are pairs.
    pub shards: Option<usize>,
    /// Cores to pin the threads to, round-robin (empty: not pinned).
    pub cores: Vec<usize>,
    /// Where time-triggered boxes run.
    pub mode: TtMode,
    /// No other thread of the run shares a firewall's core (decided by the placement): it may
    /// spin for up to three quarters of a period instead of half, and a real-time firewall
    /// there cannot starve one of the run, so it keeps its priority when it moves nothing.
    pub exclusive_cores: bool,
    /// A firewall alone on its core at a period too short to sleep in spins through the
    /// period at normal priority instead of at `priority` (`--rt auto` decides it; see
    /// the firewall thread's configuration).
    pub may_spin_through: bool,
    /// How the firewalls' own notes name the settings that would change them.
    pub lever_words: LeverWords,
}

impl Default for FirewallOptions {
    fn default() -> Self {
        FirewallOptions {
            spin: Spin::Auto,
            lock_memory: true,
            priority: Some(DEFAULT_FIREWALL_PRIORITY),
            shards: None,
            cores: Vec::new(),
            mode: TtMode::Auto,
            exclusive_cores: false,
            may_spin_through: false,
            lever_words: LeverWords::default(),
        }
    }
}

impl FirewallOptions {
    /// Normal scheduling, no memory locking, no spinning: firewalls that behave on a machine
    /// shared with other work (tests, CI), where a real-time or spinning thread could starve
    /// others. Deadlines are then only as good as the machine's scheduling.
    pub fn best_effort() -> Self {
        FirewallOptions {
            spin: Spin::Off,
            lock_memory: false,
            priority: None,
            ..FirewallOptions::default()
        }
    }
}

/// Whether the runtime may chain (`--chain`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChainMode {
    /// Chain when the box threads outnumber their cores.
    #[default]
    Auto,
    /// A thread per box.
    Off,
}

impl std::str::FromStr for ChainMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(ChainMode::Auto),
            "off" => Ok(ChainMode::Off),
            _ => Err(format!("'{s}' is not one of: auto, off")),
        }
    }
}
