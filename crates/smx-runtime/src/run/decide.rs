//! What a run decides before any thread starts, and why: the time-triggered mode, real-time
//! scheduling, the plan, chains, placement and the firewalls' settings.

use std::time::Duration;

use crate::error::RunError;
use crate::lever::{Lever, LeverWords};
use crate::options::{PinMode, Realtime, RunOptions};
use crate::registry::Registry;
use crate::{chain, firewall, placement, plan};
use plan::Plan;
use smx_graph::NetGraph;
use smx_timing::sched;

/// Threads a run of `graph` needs (nets not run by an executive and the firewalls) and the
/// cores it may use.
/// The run's threads and the cores they may use: those of `--pin LIST` (the share of the
/// cores a process of a deployment gets is such a list), else every allowed one.
fn threads_and_cores(graph: &NetGraph, executive: &[Option<Duration>], pin: &PinMode) -> (usize, usize) {
    (threads(graph, executive), usable_cores(pin))
}

fn usable_cores(pin: &PinMode) -> usize {
    match pin {
        PinMode::List(list) => placement::distinct_cores(list),
        PinMode::Auto | PinMode::Off => sched::allowed_cores().len(),
    }
}

fn threads(graph: &NetGraph, executive: &[Option<Duration>]) -> usize {
    executive.iter().filter(|p| p.is_none()).count() + firewall_threads(graph, executive)
}

/// Firewall threads of a run: one executive per period when executives run boxes, else
/// counted as one when there is any time-triggered edge.
fn firewall_threads(graph: &NetGraph, executive: &[Option<Duration>]) -> usize {
    let tt_edges = || {
        graph
            .edges
            .iter()
            .filter(|e| e.timing == smx_graph::Timing::TimeTriggered)
    };
    if executive.iter().any(Option::is_some) {
        let mut periods: Vec<Duration> = tt_edges()
            .flat_map(|e| [e.src_time.as_duration(), e.dst_time.as_duration()])
            .filter(|p| !p.is_zero())
            .collect();
        periods.sort_unstable();
        periods.dedup();
        periods.len()
    } else {
        usize::from(tt_edges().next().is_some())
    }
}

fn every_thread_has_a_core(graph: &NetGraph, executive: &[Option<Duration>], pin: &PinMode) -> bool {
    let (threads, cores) = threads_and_cores(graph, executive, pin);
    cores >= threads
}

/// The firewall threads' cores and scheduling, once the placement is known. A firewall that
/// shares its core with threads of the run neither spins (a box woken on that core would wait
/// for the scheduler's next tick: the pair would run at the kernel's tick rate, `CONFIG_HZ`,
/// instead of the period) nor, under `--rt auto`, takes real-time priority; an executive alone
/// on its core (`own_core`: no other thread of the run there, nor of another process) may do
/// both.
fn decide_firewall(
    fw: &mut firewall::FirewallOptions,
    realtime: Realtime,
    asked: Realtime,
    (placed, own_core): (&placement::Placement, bool),
    every_thread_fits: bool,
) {
    if fw.cores.is_empty() {
        fw.cores = placed.firewall_cores.clone();
    }
    let fifo = realtime == Realtime::On || (asked == Realtime::Auto && own_core);
    if !fifo {
        fw.priority = None;
        fw.lock_memory = false;
    }
    if fw.spin == smx_timing::Spin::Auto && !every_thread_fits && !own_core {
        fw.spin = smx_timing::Spin::Off;
    }
    fw.exclusive_cores = own_core;
    fw.may_spin_through = own_core && asked == Realtime::Auto;
}

/// Per node, the period of the cyclic executive that runs it (all `None` in the threads mode).
fn executive_periods(graph: &NetGraph, mode: firewall::TtMode) -> Vec<Option<Duration>> {
    match mode {
        firewall::TtMode::Cyclic => firewall::executive::periods(graph),
        firewall::TtMode::Threads | firewall::TtMode::Auto => vec![None; graph.nodes.len()],
    }
}

/// The cores that a run of `graph` under `--pin auto` keeps for its cyclic executives alone,
/// with `mode` its `--tt-mode` and `allowed` the cores its process may use: the last allowed
/// ones, one per executive, as the placement reserves them when there are more cores than
/// executives and boxes beside them. Other processes of the machine leave them free, as the
/// run's own box threads do. Empty when the run keeps none.
pub fn executive_cores(graph: &NetGraph, mode: firewall::TtMode, allowed: &[usize]) -> Vec<usize> {
    let (tt_mode, _) = decide_tt_mode_on(graph, mode, LeverWords::default(), allowed.len());
    let executive = executive_periods(graph, tt_mode);
    if executive.iter().all(Option::is_none) {
        return Vec::new();
    }
    let executives = firewall_threads(graph, &executive);
    let own_thread: Vec<bool> = executive.iter().map(Option::is_none).collect();
    let box_cores = placement::box_cores(&PinMode::Auto, allowed, executives, &own_thread);
    allowed[box_cores..].to_vec()
}

/// `TtMode::Auto` decided for `graph`, with the decision as a line for the report when it
/// mattered (the net has time-triggered boxes an executive can run).
fn decide_tt_mode(
    graph: &NetGraph,
    mode: firewall::TtMode,
    words: LeverWords,
    pin: &PinMode,
) -> (firewall::TtMode, Option<String>) {
    decide_tt_mode_on(graph, mode, words, usable_cores(pin))
}

/// [`decide_tt_mode`] for a process that may use `cores` cores.
fn decide_tt_mode_on(
    graph: &NetGraph,
    mode: firewall::TtMode,
    words: LeverWords,
    cores: usize,
) -> (firewall::TtMode, Option<String>) {
    use firewall::TtMode;
    if mode != TtMode::Auto {
        return (mode, None);
    }
    let cyclic = firewall::executive::periods(graph);
    if cyclic.iter().all(Option::is_none) {
        return (TtMode::Threads, None);
    }
    let threads = threads(graph, &vec![None; graph.nodes.len()]);
    if threads > cores {
        let note = format!(
            "tt-mode auto: cyclic executive, since {threads} threads would share {} \
             ({} keeps a thread per box)",
            placement::cores_phrase(cores),
            words.name(Lever::TtThreads)
        );
        (TtMode::Cyclic, Some(note))
    } else {
        (TtMode::Threads, None)
    }
}

/// `opts.realtime` decided for this graph (`On` or `Off`), with the reason when `Auto` turned
/// it off for a net that asked for it.
fn decide_realtime(graph: &NetGraph, opts: &RunOptions, executive: &[Option<Duration>]) -> (Realtime, Option<String>) {
    match opts.realtime {
        Realtime::On => (Realtime::On, None),
        Realtime::Off => (Realtime::Off, None),
        Realtime::Auto => {
            let wants = graph.nodes.iter().any(|n| n.priority > 0);
            let (threads, cores) = threads_and_cores(graph, executive, &opts.pin);
            if let Some(shared) = &opts.shared_cores {
                return (Realtime::Off, wants.then(|| shared_note(shared, opts.lever_words)));
            }
            if cores >= threads {
                (Realtime::On, None)
            } else {
                let why = wants.then(|| {
                    format!(
                        "real-time scheduling not used: {threads} threads share {}, where a SCHED_FIFO \
                         thread could starve the others on its core ({} forces it)",
                        placement::cores_phrase(cores),
                        opts.lever_words.name(Lever::RealtimeOn)
                    )
                });
                (Realtime::Off, why)
            }
        }
    }
}

/// Whether a cyclic executive may run on a core that another process uses as well: its
/// firewall's cores (those asked for, else those placed; none: anywhere) meet the shared ones.
fn executives_on_shared_cores(
    fw: &firewall::FirewallOptions,
    placed: &placement::Placement,
    opts: &RunOptions,
) -> bool {
    let Some(shared) = &opts.shared_cores else {
        return false;
    };
    let cores = if fw.cores.is_empty() {
        &placed.firewall_cores
    } else {
        &fw.cores
    };
    cores.is_empty() || cores.iter().any(|c| shared.cores.contains(c))
}

/// Why `--rt auto` took no real-time scheduling on cores other processes use as well.
fn shared_note(shared: &crate::options::SharedCores, words: LeverWords) -> String {
    let cores: Vec<String> = shared.cores.iter().map(usize::to_string).collect();
    format!(
        "real-time scheduling not used: {} {} {} shared with {}, where a SCHED_FIFO thread of \
         either could starve the other's threads ({} forces it)",
        if cores.len() == 1 { "core" } else { "cores" },
        cores.join(", "),
        if cores.len() == 1 { "is" } else { "are" },
        shared.with,
        words.name(Lever::RealtimeOn)
    )
}

/// What the runtime decided for this net on this machine before any thread starts: the plan
/// with its cores, the options with the time-triggered mode, real-time scheduling and the
/// firewalls' settings filled in, the executives and chains, and why (`notes`, in the order
/// the report lists them).
pub(super) struct Decided {
    pub(super) plan: Plan,
    pub(super) opts: RunOptions,
    /// Per net, the period of the cyclic executive that runs it, if one does.
    pub(super) executive: Vec<Option<Duration>>,
    /// Threads of cyclic executives.
    pub(super) executives: usize,
    pub(super) chains: Vec<Vec<usize>>,
    pub(super) notes: Vec<String>,
}

pub(super) fn decide(graph: &NetGraph, registry: &Registry, opts: &RunOptions) -> Result<Decided, RunError> {
    let (tt_mode, tt_note) = decide_tt_mode(graph, opts.firewall.mode, opts.lever_words, &opts.pin);
    let executive = executive_periods(graph, tt_mode);
    let (realtime, realtime_note) = decide_realtime(graph, opts, &executive);
    let mut decided = opts.clone();
    decided.firewall.mode = tt_mode;
    decided.firewall.lever_words = opts.lever_words;
    decided.realtime = realtime;
    let mut plan = plan::build(graph, registry, &decided)?;
    let executives = if executive.iter().any(Option::is_some) {
        firewall_threads(graph, &executive)
    } else {
        0
    };
    let allowed = sched::allowed_cores();
    let (chains, chain_note) = decide_chains(&plan, &executive, executives, opts, &allowed);
    let own_thread: Vec<bool> = executive.iter().map(Option::is_none).collect();
    let cores = placement::box_cores(&opts.pin, &allowed, executives, &own_thread);
    for net in chain::never_waiting(&plan, &own_thread, cores, &chains) {
        plan.nets[net].offers_core = true;
    }
    let mut followers = vec![false; plan.nets.len()];
    for follower in chains.iter().flat_map(|c| &c[1..]) {
        followers[*follower] = true;
    }
    let placed = placement::place(
        &mut plan,
        &executive,
        &followers,
        executives,
        &opts.pin,
        &allowed,
        opts.lever_words,
    );
    for chain in &chains {
        for &follower in &chain[1..] {
            plan.nets[follower].core = plan.nets[chain[0]].core;
        }
    }
    let unpinned_note = placement::unpin_lone_chains(&mut plan, &chains, &opts.pin, executives);
    // Another process's threads on an executive's core count as the run's own would there.
    let executives_share = executives > 0 && executives_on_shared_cores(&decided.firewall, &placed, opts);
    let own_core = placed.exclusive_executives && !executives_share;
    decide_firewall(
        &mut decided.firewall,
        realtime,
        opts.realtime,
        (&placed, own_core),
        every_thread_has_a_core(graph, &executive, &opts.pin) && !executives_share,
    );
    let realtime_note = match (realtime_note, &opts.shared_cores) {
        (None, Some(shared)) if executives_share && placed.exclusive_executives && opts.realtime == Realtime::Auto => {
            Some(shared_note(shared, opts.lever_words))
        }
        (Some(_), _) if own_core && opts.realtime == Realtime::Auto => Some(format!(
            "real-time scheduling for the executive only, alone on its core: the box threads share cores \
             ({} forces it)",
            opts.lever_words.name(Lever::RealtimeOn)
        )),
        (note, _) => note,
    };
    let notes = tt_note
        .into_iter()
        .chain(placed.notes)
        .chain(chain_note)
        .chain(unpinned_note)
        .chain(realtime_note)
        .collect();
    Ok(Decided {
        plan,
        opts: decided,
        executive,
        executives,
        chains,
        notes,
    })
}

impl Decided {
    /// At `RUST_LOG=info` the decisions appear as they are taken, before the threads start
    /// (the report lists them again under its warnings); `debug` adds where each net runs.
    pub(super) fn log(&self) {
        for note in &self.notes {
            log::info!("decided: {note}");
        }
        for net in &self.plan.nets {
            match self.executive[net.id] {
                Some(period) => log::debug!(
                    "net {}: in the cyclic executive of period {period:?}",
                    net.thread_name()
                ),
                None => log::debug!(
                    "net {}: core {:?}, real-time priority {:?}",
                    net.thread_name(),
                    net.core,
                    net.priority
                ),
            }
        }
    }
}

/// The chains of this run ([`chain::decide`]): none under `--trace`, whose timeline has a row
/// per box thread; and the report's lines on them and on the threads that never wait.
fn decide_chains(
    plan: &Plan,
    executive: &[Option<Duration>],
    executives: usize,
    opts: &RunOptions,
    allowed: &[usize],
) -> (Vec<Vec<usize>>, Vec<String>) {
    let own_thread: Vec<bool> = executive.iter().map(Option::is_none).collect();
    let cores = placement::box_cores(&opts.pin, allowed, executives, &own_thread);
    let mode = if opts.trace.is_some() {
        crate::options::ChainMode::Off
    } else {
        opts.chain
    };
    let (chains, chain_note) = chain::decide(plan, &own_thread, cores, mode, opts.lever_words);
    let busy_note = chain::never_waiting_note(plan, &own_thread, cores, &chains, opts.lever_words);
    (chains, chain_note.into_iter().chain(busy_note).collect())
}
