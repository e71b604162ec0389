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
            // With a core of its own for each thread, the cores shared with another process
            // are taken out net by net once the nets are placed ([`off_shared_cores`]).
            if cores >= threads {
                (Realtime::On, None)
            } else if let Some(shared) = &opts.shared_cores {
                (
                    Realtime::Off,
                    wants.then(|| shared_note(shared, opts.lever_words, None)),
                )
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

/// Under `--rt auto`, the nets on threads of their own that would run at real-time priority
/// for the language's sake (an `rt` or `tt` net; a `priority` key is the user's own word) on a
/// core that another process uses as well, or on no core of their own (a chain left
/// unpinned), run at normal priority instead: a busy SCHED_FIFO thread there could starve the
/// other process's threads, which this process cannot see. Their nets on cores of their own
/// keep it. The names of the nets that lost it.
fn off_shared_cores(plan: &mut Plan, shared: &crate::options::SharedCores, own_thread: &[bool]) -> Vec<String> {
    let mut moved: Vec<String> = Vec::new();
    for net in plan.nets.iter_mut() {
        let on_shared = net.core.is_none_or(|core| shared.cores.contains(&core));
        if net.real_time_by_language() && on_shared && own_thread.get(net.id).copied().unwrap_or(false) {
            net.priority = None;
            moved.push(net.thread_name());
        }
    }
    moved
}

/// A net that would run at real-time priority for the language's sake on a core that another
/// process uses as well takes the core of a net at normal priority on a core of this process
/// alone, where the placement put one: there it may keep its priority ([`off_shared_cores`]).
/// Only nets on threads of their own (`own_thread`, not a chain's `followers`) whose cores no
/// setting fixed trade; a chain's followers follow their head afterwards.
fn real_time_nets_first(plan: &mut Plan, shared: &[usize], own_thread: &[bool], followers: &[bool]) {
    let on_own =
        |id: usize| own_thread.get(id).copied().unwrap_or(false) && !followers.get(id).copied().unwrap_or(false);
    let free = |net: &crate::plan::NetPlan| net.settings.core.is_none() && on_own(net.id);
    let on_shared = |net: &crate::plan::NetPlan| net.core.is_some_and(|c| shared.contains(&c));
    let wanting: Vec<usize> = plan
        .nets
        .iter()
        .filter(|n| free(n) && n.real_time_by_language() && on_shared(n))
        .map(|n| n.id)
        .collect();
    let mut giving = plan
        .nets
        .iter()
        .filter(|n| free(n) && n.priority.is_none() && n.core.is_some() && !on_shared(n))
        .map(|n| n.id)
        .collect::<Vec<_>>()
        .into_iter();
    for (want, give) in wanting.into_iter().zip(&mut giving) {
        let (a, b) = (plan.nets[want].core, plan.nets[give].core);
        plan.nets[want].core = b;
        plan.nets[give].core = a;
    }
}

/// Whether a firewall thread may run on a core that another process uses as well: its
/// firewall's cores (those asked for, else those placed; none: anywhere) meet the shared ones.
fn firewall_on_shared_cores(fw: &firewall::FirewallOptions, placed: &placement::Placement, opts: &RunOptions) -> bool {
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

/// Why `--rt auto` took no real-time scheduling on cores other processes use as well, for
/// the threads `of` names (`None`: the run's).
fn shared_note(shared: &crate::options::SharedCores, words: LeverWords, of: Option<&str>) -> String {
    let cores: Vec<String> = shared.cores.iter().map(usize::to_string).collect();
    format!(
        "real-time scheduling not used{}: {} {} {} shared with {}, where a SCHED_FIFO thread of \
         either could starve the other's threads ({} forces it)",
        of.map(|of| format!(" for {of}")).unwrap_or_default(),
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
    /// The note among `notes` that gives real-time scheduling to the executive alone on its
    /// core. Whether it takes it is the executive's own decision once it runs: with a period
    /// too short to sleep in it spins at normal priority instead and says so, and the report
    /// then leaves this note out rather than say both.
    pub(super) executive_only: Option<String>,
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
    let shared = opts
        .shared_cores
        .as_ref()
        .filter(|_| opts.realtime == Realtime::Auto && realtime == Realtime::On);
    if let Some(shared) = shared {
        real_time_nets_first(&mut plan, &shared.cores, &own_thread, &followers);
    }
    for chain in &chains {
        for &follower in &chain[1..] {
            plan.nets[follower].core = plan.nets[chain[0]].core;
        }
    }
    let unpinned_note = placement::unpin_lone_chains(&mut plan, &chains, &opts.pin, executives);
    let mut lost_real_time = shared.map_or_else(Vec::new, |shared| off_shared_cores(&mut plan, shared, &own_thread));
    // Another process's threads on a firewall's core count as the run's own would there.
    let has_firewall = graph.edges.iter().any(|e| e.timing == smx_graph::Timing::TimeTriggered);
    let firewall_shares = has_firewall && firewall_on_shared_cores(&decided.firewall, &placed, opts);
    let executives_share = executives > 0 && firewall_shares;
    let own_core = placed.exclusive_executives && !executives_share;
    let auto = opts.realtime == Realtime::Auto;
    decide_firewall(
        &mut decided.firewall,
        if auto && firewall_shares {
            Realtime::Off
        } else {
            realtime
        },
        opts.realtime,
        (&placed, own_core),
        every_thread_has_a_core(graph, &executive, &opts.pin) && !executives_share,
    );
    if shared.is_some() && firewall_shares {
        lost_real_time.push("the firewall".to_string());
    }
    // Named when some thread keeps real-time scheduling; else the run as a whole has none.
    let kept_real_time = plan.nets.iter().any(|n| own_thread[n.id] && n.real_time_by_language())
        || (has_firewall && decided.firewall.priority.is_some());
    let shared_cores_note = shared.filter(|_| !lost_real_time.is_empty()).map(|shared| {
        let of = kept_real_time.then(|| lost_real_time.join(", "));
        shared_note(shared, opts.lever_words, of.as_deref())
    });
    let mut executive_only = None;
    let realtime_note = match (realtime_note, &opts.shared_cores) {
        (None, Some(shared))
            if auto && realtime == Realtime::Off && executives_share && placed.exclusive_executives =>
        {
            Some(shared_note(shared, opts.lever_words, None))
        }
        (Some(_), _) if own_core && opts.realtime == Realtime::Auto => {
            let note = format!(
                "real-time scheduling for the executive only, alone on its core: the box threads share cores \
                 ({} forces it)",
                opts.lever_words.name(Lever::RealtimeOn)
            );
            executive_only = Some(note.clone());
            Some(note)
        }
        (note, _) => note,
    };
    let notes = tt_note
        .into_iter()
        .chain(placed.notes)
        .chain(chain_note)
        .chain(unpinned_note)
        .chain(realtime_note)
        .chain(shared_cores_note)
        .collect();
    Ok(Decided {
        plan,
        opts: decided,
        executive,
        executives,
        chains,
        notes,
        executive_only,
    })
}

impl Decided {
    /// At `RUST_LOG=info` the decisions appear as they are taken, before the threads start
    /// (the report lists them again among its notes); `debug` adds where each net runs.
    pub(super) fn log(&self) {
        for note in &self.notes {
            // The executive learns only once it runs whether its period is too short to sleep
            // in; then it spins through at normal priority, and the report leaves this out.
            let unless = if Some(note) == self.executive_only.as_ref() {
                " (unless the executive finds its period too short to sleep in: it then spins through it at normal priority)"
            } else {
                ""
            };
            log::info!("decided: {note}{unless}");
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
    // What the trace changed is said: a traced run's rates are not those of the same run
    // without it, which would chain.
    let traced_note = (mode != opts.chain)
        .then(|| chain::decide(plan, &own_thread, cores, opts.chain, opts.lever_words).0)
        .filter(|untraced| !untraced.is_empty())
        .map(|untraced| {
            let followers: usize = untraced.iter().map(|c| c.len() - 1).sum();
            format!(
                "chaining: off under {}, whose timeline has a row per box thread: without it, {} chain{} would \
                 run {followers} box thread{} fewer on these cores, so this run's rates are not those of the \
                 same run untraced",
                opts.lever_words.name(crate::lever::Lever::Trace),
                untraced.len(),
                if untraced.len() == 1 { "" } else { "s" },
                if followers == 1 { "" } else { "s" },
            )
        });
    let busy_note = chain::never_waiting_note(plan, &own_thread, cores, &chains, opts.lever_words);
    (
        chains,
        chain_note.into_iter().chain(traced_note).chain(busy_note).collect(),
    )
}
