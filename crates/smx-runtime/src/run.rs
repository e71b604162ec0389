//! One run from graph to report: decide, prepare, start, halt, assemble the report.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};

use crate::error::RunError;
use crate::lever::{Lever, LeverWords};
use crate::options::{PinMode, Realtime, RunOptions};
use crate::registry::Registry;
use crate::report::{ChannelReport, NetReport, Report, Status, rate};
use crate::run_state::{Gate, Outcome, RunState};
use crate::{
    chain, channel, firewall, halt, io, latency, net, placement, plan, progress, report, resources, routing, trace,
};
use channel::{ChannelState, Reader, Writer};
use io::{InputSlot, OutputSlot, PortSet};
use plan::{Plan, Role};
use smx_graph::NetGraph;
use smx_timing::sched;

/// Threads a run of `graph` needs (nets not run by an executive and the firewalls) and the
/// cores it may use.
fn threads_and_cores(graph: &NetGraph, executive: &[Option<Duration>]) -> (usize, usize) {
    let box_threads = executive.iter().filter(|p| p.is_none()).count();
    (
        box_threads + firewall_threads(graph, executive),
        sched::allowed_cores().len(),
    )
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

fn every_thread_has_a_core(graph: &NetGraph, executive: &[Option<Duration>]) -> bool {
    let (threads, cores) = threads_and_cores(graph, executive);
    cores >= threads
}

/// The firewall threads' cores and scheduling, once the placement is known. A firewall that
/// shares its core with threads of the run neither spins (a box woken on that core would wait
/// for the scheduler's next tick: the pair would run at the kernel's tick rate, `CONFIG_HZ`,
/// instead of the period) nor, under `--rt auto`, takes real-time priority; an executive alone
/// on its core may do both.
fn decide_firewall(
    fw: &mut firewall::FirewallOptions,
    realtime: Realtime,
    asked: Realtime,
    placed: &placement::Placement,
    every_thread_fits: bool,
) {
    if fw.cores.is_empty() {
        fw.cores = placed.firewall_cores.clone();
    }
    let own_core = placed.exclusive_executives;
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
/// with `mode` its `--tt-mode`: the last allowed ones, one per executive, as the placement
/// reserves them when there are more cores than executives and boxes beside them. Other
/// processes of the machine leave them free, as the run's own box threads do. Empty when the
/// run keeps none.
pub fn executive_cores(graph: &NetGraph, mode: firewall::TtMode) -> Vec<usize> {
    let (tt_mode, _) = decide_tt_mode(graph, mode, LeverWords::default());
    let executive = executive_periods(graph, tt_mode);
    if executive.iter().all(Option::is_none) {
        return Vec::new();
    }
    let executives = firewall_threads(graph, &executive);
    let own_thread: Vec<bool> = executive.iter().map(Option::is_none).collect();
    let allowed = sched::allowed_cores();
    let box_cores = placement::box_cores(&PinMode::Auto, &allowed, executives, &own_thread);
    allowed[box_cores..].to_vec()
}

/// `TtMode::Auto` decided for `graph`, with the decision as a line for the report when it
/// mattered (the net has time-triggered boxes an executive can run).
fn decide_tt_mode(graph: &NetGraph, mode: firewall::TtMode, words: LeverWords) -> (firewall::TtMode, Option<String>) {
    use firewall::TtMode;
    if mode != TtMode::Auto {
        return (mode, None);
    }
    let cyclic = firewall::executive::periods(graph);
    if cyclic.iter().all(Option::is_none) {
        return (TtMode::Threads, None);
    }
    let (threads, cores) = threads_and_cores(graph, &vec![None; graph.nodes.len()]);
    if threads > cores {
        let note = format!(
            "tt-mode auto: cyclic executive, since {threads} threads would share {cores} cores \
             ({} keeps a thread per box)",
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
            let (threads, cores) = threads_and_cores(graph, executive);
            if cores >= threads {
                (Realtime::On, None)
            } else {
                let why = wants.then(|| {
                    format!(
                        "real-time scheduling not used: {threads} threads share {cores} cores, where a SCHED_FIFO \
                         thread could starve the others on its core ({} forces it)",
                        opts.lever_words.name(Lever::RealtimeOn)
                    )
                });
                (Realtime::Off, why)
            }
        }
    }
}

/// One thread's work before it starts.
struct Job {
    plan: plan::NetPlan,
    ports: PortSet,
}

/// Runs `graph` to the end and reports what happened. Errors only when the net is rejected
/// before any thread runs; a box failing while running is in the report (status `failed`).
pub fn run(graph: &NetGraph, registry: &Registry, opts: &RunOptions) -> Result<Report, RunError> {
    let started_at = SystemTime::now();
    let t0 = Instant::now();
    let decided = decide(graph, registry, opts)?;
    decided.log();
    if let Some(message) = resources::shortfall(&decided.plan, decided.opts.lever_words) {
        return Err(RunError::Resources(message));
    }
    let (ready, wired) = prepare(&decided);
    let started = start(&decided, ready)?;
    let ended = halt_all(&decided, started)?;
    let wall = t0.elapsed().as_secs_f64();
    log::info!("every thread has ended after {wall:.3} s");
    let mut report = assemble(
        &decided.plan,
        &wired.shared,
        ended.outcomes,
        started_at,
        wall,
        decided.opts.latency,
    );
    report.firewalls = ended.firewalls;
    halt::mark_stuck(&mut report, &ended.stuck);
    fold_producer_segments(&mut report, &decided.plan, &wired);
    let words = decided.opts.lever_words;
    let trace_note = decided.opts.trace.as_ref().and_then(|t| t.dropped_warning(words));
    for w in decided.notes.into_iter().chain(ended.warnings).chain(trace_note) {
        // Printed once, in the report's Warnings section (not also as a log line).
        if !report.warnings.contains(&w) {
            report.warnings.push(w);
        }
    }
    Ok(report)
}

/// What the runtime decided for this net on this machine before any thread starts: the plan
/// with its cores, the options with the time-triggered mode, real-time scheduling and the
/// firewalls' settings filled in, the executives and chains, and why (`notes`, in the order
/// the report lists them).
struct Decided {
    plan: Plan,
    opts: RunOptions,
    /// Per net, the period of the cyclic executive that runs it, if one does.
    executive: Vec<Option<Duration>>,
    /// Threads of cyclic executives.
    executives: usize,
    chains: Vec<Vec<usize>>,
    notes: Vec<String>,
}

fn decide(graph: &NetGraph, registry: &Registry, opts: &RunOptions) -> Result<Decided, RunError> {
    let (tt_mode, tt_note) = decide_tt_mode(graph, opts.firewall.mode, opts.lever_words);
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
    decide_firewall(
        &mut decided.firewall,
        realtime,
        opts.realtime,
        &placed,
        every_thread_has_a_core(graph, &executive),
    );
    let realtime_note = match realtime_note {
        Some(_) if placed.exclusive_executives && opts.realtime == Realtime::Auto => Some(format!(
            "real-time scheduling for the executive only, alone on its core: the box threads share cores \
             ({} forces it)",
            opts.lever_words.name(Lever::RealtimeOn)
        )),
        note => note,
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
    fn log(&self) {
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

/// The threads' work, wired and ready to start: single boxes, chains, and the firewall shards
/// holding the boxes their executives run.
struct Ready {
    jobs: Vec<Job>,
    chain_jobs: Vec<Vec<chain::Member>>,
    shards: Vec<firewall::Shard>,
    loops: Vec<Arc<crate::run_state::LoopCounter>>,
}

/// Wires every channel, hands the executives their boxes, and attaches the live figures.
fn prepare(decided: &Decided) -> (Ready, Wired) {
    let (plan, opts, executive) = (&decided.plan, &decided.opts, &decided.executive);
    let (jobs, wired, tt) = wire(plan, executive, opts.wait_spin, opts.latency);
    let loops: Vec<Arc<crate::run_state::LoopCounter>> = plan.nets.iter().map(|_| Arc::default()).collect();
    let mut shards = firewall::plan::shards(plan, tt, opts);
    opts.progress.attach(
        counted_channels(plan, &wired.shared),
        live_view(plan, &wired.shared, &wired.producer_side, &loops, &shards),
    );
    let (jobs, executive_jobs): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|j| executive[j.plan.id].is_none());
    for job in executive_jobs {
        let period = executive[job.plan.id];
        let Role::Box(spec) = job.plan.role.clone() else {
            continue;
        };
        if let Some(shard) = shards.iter_mut().find(|s| Some(s.config.period) == period) {
            shard.boxes.push(firewall::executive::ExecBox {
                loops: loops[job.plan.id].clone(),
                plan: job.plan,
                spec,
                ports: job.ports,
            });
        }
    }
    for (k, shard) in shards.iter_mut().enumerate() {
        shard.stop = opts.stop.clone();
        shard.trace = opts.trace.clone().map(|t| (t, trace::firewall_tid(plan.nets.len(), k)));
    }
    if let Some(t) = &opts.trace {
        t.mark_origin();
    }
    let (jobs, chain_jobs) = take_chains(jobs, &decided.chains);
    let ready = Ready {
        jobs,
        chain_jobs,
        shards,
        loops,
    };
    (ready, wired)
}

/// The running threads, released through the run state's gate.
struct Started {
    state: Arc<RunState>,
    handles: Vec<(Vec<usize>, halt::NetsHandle)>,
    firewalls: firewall::RunningFirewall,
}

/// Starts a thread per box or chain and the firewalls' threads, then opens the gate. A thread
/// the system refuses stops the start: the threads already made are released to end at once.
fn start(decided: &Decided, ready: Ready) -> Result<Started, RunError> {
    let opts = &decided.opts;
    let Ready {
        jobs,
        chain_jobs,
        shards,
        loops,
    } = ready;
    let state = Arc::new(RunState {
        gate: Gate::new(),
        barrier: Barrier::new(jobs.len() + chain_jobs.len() + shards.len()),
        stop: opts.stop.clone(),
        start_failed: AtomicBool::new(false),
        loops,
        trace: opts.trace.clone(),
        ends: Default::default(),
    });
    let wanted = jobs.len() + chain_jobs.len();
    let mut handles: Vec<(Vec<usize>, halt::NetsHandle)> = Vec::with_capacity(wanted);
    let threads = jobs
        .into_iter()
        .map(|job| BoxThread::One(Box::new(job)))
        .chain(chain_jobs.into_iter().map(BoxThread::Chain));
    let refused = |state: &RunState, handles: Vec<(Vec<usize>, halt::NetsHandle)>, message: String| {
        state.gate.abort();
        for (_, handle) in handles {
            let _ = handle.join();
        }
        RunError::ThreadLimit { wanted, message }
    };
    for work in threads {
        let (ids, name) = (work.ids(), work.name());
        let mine = state.clone();
        let spawned = std::thread::Builder::new()
            .name(name.clone())
            .stack_size(opts.stack_size)
            .spawn(move || work.run(&mine));
        match spawned {
            Ok(handle) => handles.push((ids, handle)),
            Err(e) => {
                let message = format!(
                    "the system refused thread {} of {wanted} ('{name}'): {e}; check `ulimit -u` and \
                     /proc/sys/kernel/threads-max, or run fewer nets",
                    handles_len_hint(&name, &decided.plan)
                );
                return Err(refused(&state, handles, message));
            }
        }
    }
    let firewalls = match firewall::spawn_all(shards, &state) {
        Ok(firewalls) => firewalls,
        Err(e) => return Err(refused(&state, handles, e)),
    };
    state.gate.open();
    log::info!(
        "started {} threads for {} nets: {} running a chain of boxes, {} a cyclic executive",
        wanted + decided.executives,
        decided.plan.nets.len(),
        decided.chains.len(),
        decided.executives
    );
    opts.progress.mark_started();
    Ok(Started {
        state,
        handles,
        firewalls,
    })
}

/// What the threads left when they ended.
struct Ended {
    outcomes: Vec<Outcome>,
    firewalls: Vec<crate::report::FirewallReport>,
    warnings: Vec<String>,
    stuck: Vec<usize>,
}

/// Waits for every thread (ending the run within the stop's bound), and turns a start that
/// failed in a box's create or init into the error it is.
fn halt_all(decided: &Decided, started: Started) -> Result<Ended, RunError> {
    let Started {
        state,
        handles,
        firewalls,
    } = started;
    let plan = &decided.plan;
    let joined = halt::join(handles, firewalls, &state, plan.nets.len(), Instant::now());
    let outcomes: Vec<Outcome> = joined
        .outcomes
        .into_iter()
        .map(|o| {
            o.unwrap_or_else(|| {
                let mut outcome = Outcome::new();
                outcome.fail("the net was not run (no firewall thread took it)".to_string());
                outcome
            })
        })
        .collect();
    decided.opts.progress.mark_finished();
    if state.start_failed.load(std::sync::atomic::Ordering::SeqCst) {
        let failures = plan
            .nets
            .iter()
            .zip(&outcomes)
            .filter(|(_, o)| o.status == Status::Failed)
            .map(|(n, o)| format!("{}#{}: {}", n.name, n.id, o.error.as_deref().unwrap_or("failed")))
            .collect();
        return Err(RunError::NotStarted(failures));
    }
    Ok(Ended {
        outcomes,
        firewalls: joined.firewalls,
        warnings: joined.warnings,
        stuck: joined.stuck,
    })
}

/// A time-triggered channel's row shows its consumer side's length and covers the way from
/// the producer (see [`merge_producer_segment`]).
fn fold_producer_segments(report: &mut Report, plan: &Plan, wired: &Wired) {
    for (row, c) in report.channels.iter_mut().zip(&plan.channels) {
        if firewall::plan::is_time_triggered(c) {
            row.len = firewall::plan::consumer_side_len(c);
        }
        if let Some(producer) = &wired.producer_side[c.id] {
            let in_series = !c.src_period.is_zero() && !c.dst_period.is_zero() && c.src_period != c.dst_period;
            merge_producer_segment(row, &producer.counters.final_snapshot(), in_series);
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

/// Takes the jobs of each chain out of `jobs`, in chain order: the single jobs left and the
/// chains' members.
fn take_chains(jobs: Vec<Job>, chains: &[Vec<usize>]) -> (Vec<Job>, Vec<Vec<chain::Member>>) {
    let mut by_id: Vec<Option<Job>> = Vec::new();
    for job in jobs {
        let id = job.plan.id;
        if by_id.len() <= id {
            by_id.resize_with(id + 1, || None);
        }
        by_id[id] = Some(job);
    }
    let members = chains
        .iter()
        .map(|chain| {
            let jobs = chain.iter().filter_map(|&id| by_id.get_mut(id)?.take());
            jobs.map(|job| {
                let spec = match job.plan.role.clone() {
                    Role::Box(spec) => spec,
                    Role::Routing => routing::CHAINED,
                };
                chain::Member {
                    plan: job.plan,
                    spec,
                    ports: job.ports,
                }
            })
            .collect()
        })
        .collect();
    (by_id.into_iter().flatten().collect(), members)
}

/// The work of one box thread: one net, or a chain of them.
enum BoxThread {
    One(Box<Job>),
    Chain(Vec<chain::Member>),
}

impl BoxThread {
    fn ids(&self) -> Vec<usize> {
        match self {
            BoxThread::One(job) => vec![job.plan.id],
            BoxThread::Chain(members) => members.iter().map(|m| m.plan.id).collect(),
        }
    }

    /// The thread's name: its net's, or its chain head's.
    fn name(&self) -> String {
        match self {
            BoxThread::One(job) => job.plan.thread_name(),
            BoxThread::Chain(members) => members.first().map(|m| m.plan.thread_name()).unwrap_or_default(),
        }
    }

    fn run(self, state: &RunState) -> Vec<(usize, Outcome)> {
        match self {
            BoxThread::One(job) => {
                let Job { plan, ports } = *job;
                let id = plan.id;
                let outcome = match plan.role.clone() {
                    Role::Box(spec) => net::run_box(plan, spec, ports, state),
                    Role::Routing => routing::run_routing(plan, ports, state),
                };
                vec![(id, outcome)]
            }
            BoxThread::Chain(members) => chain::run_chain(members, state),
        }
    }
}

/// The 1-based position of `name` in the plan, for the thread-limit message.
fn handles_len_hint(name: &str, plan: &Plan) -> usize {
    plan.nets
        .iter()
        .position(|n| n.thread_name() == name)
        .map_or(0, |p| p + 1)
}

/// Creates every channel and hands its ends to the nets' port sets; time-triggered edges go
/// through firewalls (their report row shows the firewall→consumer channel).
/// Channel counters for the report: the consumer end of every channel and, for a
/// time-triggered channel, also the producer end (the producer→firewall segment).
struct Wired {
    shared: Vec<Arc<ChannelState>>,
    producer_side: Vec<Option<Arc<ChannelState>>>,
}

fn wire(
    plan: &Plan,
    executive: &[Option<Duration>],
    spin: Duration,
    latency: latency::LatencyMode,
) -> (Vec<Job>, Wired, firewall::plan::TtWiring) {
    let mut tt = firewall::plan::TtWiring::new();
    let mut producer_side = Vec::with_capacity(plan.channels.len());
    let mut writers: Vec<Option<Writer>> = Vec::with_capacity(plan.channels.len());
    let mut readers: Vec<Option<Reader>> = Vec::with_capacity(plan.channels.len());
    let mut shared = Vec::with_capacity(plan.channels.len());
    for c in &plan.channels {
        let (mut w, mut r) = if firewall::plan::is_time_triggered(c) {
            tt.wire(
                c,
                &plan.nets[c.from].name,
                &plan.nets[c.to].name,
                executive[c.from].is_some(),
            )
        } else {
            channel::channel(c.kind, c.len)
        };
        // The box ends only: a firewall's own ends never wait.
        w.set_spin(spin);
        r.set_spin(spin);
        let core = plan.nets[c.from].core;
        if core.is_some() && core == plan.nets[c.to].core && !firewall::plan::is_time_triggered(c) {
            channel::share_core(&mut w, &mut r);
        }
        let split = !Arc::ptr_eq(w.shared(), r.shared());
        producer_side.push(split.then(|| w.shared().clone()));
        shared.push(r.shared().clone());
        writers.push(Some(w));
        readers.push(Some(r));
    }
    let sink = sinks(plan);
    let jobs = plan
        .nets
        .iter()
        .map(|net| {
            let sink = sink[net.id];
            let inputs = net
                .inputs
                .iter()
                .map(|p| InputSlot::new(&p.name, p.channel.and_then(|id| readers[id].take()), p.channel, sink))
                .collect();
            let outputs = net
                .outputs
                .iter()
                .map(|p| OutputSlot::new(&p.name, p.channel.and_then(|id| writers[id].take()), latency))
                .collect();
            Job {
                plan: net.clone(),
                ports: PortSet {
                    inputs,
                    outputs,
                    unconnected_writes: 0,
                },
            }
        })
        .collect();
    (jobs, Wired { shared, producer_side }, tt)
}

/// What the live figures read: every net's loop count, every channel's counters (both
/// segments of a time-triggered one), every firewall thread's tick and miss counts.
fn live_view(
    plan: &Plan,
    shared: &[Arc<ChannelState>],
    producer_side: &[Option<Arc<ChannelState>>],
    loops: &[Arc<crate::run_state::LoopCounter>],
    shards: &[firewall::Shard],
) -> progress::Live {
    progress::Live {
        nets: plan
            .nets
            .iter()
            .map(|n| progress::LiveNet {
                id: n.id,
                name: n.thread_name(),
                loops: loops[n.id].clone(),
            })
            .collect(),
        channels: plan
            .channels
            .iter()
            .map(|c| progress::LiveChannel {
                id: c.id,
                from: plan.nets[c.from].thread_name(),
                to: plan.nets[c.to].thread_name(),
                len: if firewall::plan::is_time_triggered(c) {
                    firewall::plan::consumer_side_len(c)
                } else {
                    c.len
                },
                // The producer segment's length as `firewall::plan::TtWiring::wire` makes it.
                producer: producer_side[c.id]
                    .clone()
                    .map(|p| (p, if c.src_period.is_zero() { c.len } else { 1 })),
                consumer: shared[c.id].clone(),
            })
            .collect(),
        firewalls: shards.iter().map(|s| (s.config.name.clone(), s.live.clone())).collect(),
    }
}

/// Per net, whether it is a sink: a net without a connected output.
fn sinks(plan: &Plan) -> Vec<bool> {
    let mut sink = vec![true; plan.nets.len()];
    for c in &plan.channels {
        sink[c.from] = false;
    }
    sink
}

/// The channels whose reads are the run's `messages`: into each final sink net (a net without
/// a connected output that is not a bridge out of the net, such as a ZeroMQ sink, unless every
/// sink is one) its first connected input in port order, so that a sink reading data and topic
/// in pairs counts each pair once; all channels when there is no sink.
fn counted_channels(plan: &Plan, shared: &[Arc<ChannelState>]) -> Vec<Arc<ChannelState>> {
    let sink = sinks(plan);
    let is_sink = |net: usize| sink[net];
    let bridge = |n: &plan::NetPlan| matches!(&n.role, Role::Box(spec) if spec.bridge);
    let sinks: Vec<&plan::NetPlan> = plan.nets.iter().filter(|n| is_sink(n.id)).collect();
    let only_bridges = sinks.iter().all(|n| bridge(n));
    let into_sinks: Vec<Arc<ChannelState>> = sinks
        .into_iter()
        .filter(|n| only_bridges || !bridge(n))
        .filter_map(|n| n.inputs.iter().find_map(|p| p.channel))
        .map(|id| shared[id].clone())
        .collect();
    if into_sinks.is_empty() {
        shared.to_vec()
    } else {
        into_sinks
    }
}

/// Folds the producer→firewall segment of a time-triggered channel into its report row, so
/// that the row's books cover the whole way from producer to consumer: `written` is what the
/// producer wrote and losses of both segments are added. Messages the firewalls took but did
/// not pass on were overwritten in the latest-value buffer between two firewalls of different
/// periods (`in_series`), or else held by the firewall when the run ended (`left`).
fn merge_producer_segment(row: &mut crate::report::ChannelReport, producer: &channel::CountSnapshot, in_series: bool) {
    let not_passed_on = producer.read.saturating_sub(row.written);
    row.written = producer.written;
    row.overwritten += producer.overwritten;
    row.dropped += producer.dropped;
    row.left += producer.left;
    if in_series {
        row.overwritten += not_passed_on;
    } else {
        row.left += not_passed_on;
    }
}

fn assemble(
    plan: &Plan,
    shared: &[Arc<ChannelState>],
    outcomes: Vec<Outcome>,
    started_at: SystemTime,
    wall: f64,
    latency_mode: latency::LatencyMode,
) -> Report {
    let mut warnings: Vec<String> = Vec::new();
    let mut samples = Vec::new();
    let nets = net_rows(plan, outcomes, &mut samples, &mut warnings);
    let mut channels = channel_rows(plan, shared);
    let latency = report::latency::assemble(plan, latency_mode, samples, &mut channels);
    if latency.clock_anomalies > 0 {
        warnings.push(format!(
            "{} latency samples read the clock before their stamp (the clock went backwards): counted as clock \
             anomalies, not as latency",
            latency.clock_anomalies
        ));
    }
    let messages = counted_channels(plan, shared)
        .iter()
        .map(|c| c.counters.final_snapshot().read)
        .sum();
    let status = if nets.iter().any(|n| n.status == Status::Failed) {
        Status::Failed
    } else if nets.iter().any(|n| n.status == Status::Stopped) {
        Status::Stopped
    } else {
        Status::Ok
    };
    for w in nets.iter().flat_map(|n| &n.stats.warnings) {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    let mut sections: std::collections::BTreeMap<String, Vec<smx_box::Stats>> = Default::default();
    for n in &nets {
        if let Some(section) = n.stats.section {
            sections.entry(section.to_string()).or_default().push(n.stats.clone());
        }
    }
    Report {
        format_version: 3,
        wall_time_s: wall,
        status,
        messages,
        messages_per_s: rate(messages, wall),
        nets,
        channels,
        firewalls: Vec::new(),
        latency,
        probes: Vec::new(),
        sections,
        warnings,
        started_at,
        ended_at: SystemTime::now(),
    }
}

/// A report row per net from its outcome; the outcomes' latency samples go to `samples`, their
/// warnings (and a rate outside the expected one) to `warnings`.
fn net_rows(
    plan: &Plan,
    outcomes: Vec<Outcome>,
    samples: &mut Vec<latency::ChannelSamples>,
    warnings: &mut Vec<String>,
) -> Vec<NetReport> {
    let mut nets = Vec::with_capacity(plan.nets.len());
    for (net, mut outcome) in plan.nets.iter().zip(outcomes) {
        samples.append(&mut outcome.latency);
        for w in outcome.warnings {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        let wall_time_s = outcome.wall.as_secs_f64();
        let loop_rate = rate(outcome.loop_count, wall_time_s);
        if let Some(expected) = net.settings.expected_rate.filter(|r| *r > 0)
            && outcome.status != Status::Failed
        {
            let share = 100.0 * loop_rate / expected as f64;
            if !(80.0..=120.0).contains(&share) {
                warnings.push(format!(
                    "{}: net rate at {share:.0}% of the expected rate ({expected})",
                    net.thread_name()
                ));
            }
        }
        nets.push(NetReport {
            id: net.id,
            name: net.name.clone(),
            implementation: net.implementation.clone(),
            kind: match net.role {
                Role::Box(_) => "box",
                Role::Routing => "routing_node",
            },
            core: outcome.core,
            priority: outcome.priority,
            loop_count: outcome.loop_count,
            loop_rate,
            wall_time_s,
            status: outcome.status,
            error: outcome.error,
            unconnected_writes: outcome.unconnected_writes,
            stats: outcome.stats,
            ended_at: outcome.ended_at,
        });
    }
    nets
}

/// A report row per channel from its final counts (latency is added by the latency report).
fn channel_rows(plan: &Plan, shared: &[Arc<ChannelState>]) -> Vec<ChannelReport> {
    plan.channels
        .iter()
        .map(|c| {
            let counts = shared[c.id].counters.final_snapshot();
            ChannelReport {
                id: c.id,
                name: c.label.clone(),
                from: plan.nets[c.from].name.clone(),
                from_id: c.from,
                from_port: c.from_port.clone(),
                to: plan.nets[c.to].name.clone(),
                to_id: c.to,
                port: c.to_port.clone(),
                kind: c.kind.name(),
                smx_type: c.kind.smx_name(),
                timing: match c.timing {
                    smx_graph::Timing::None => "none",
                    smx_graph::Timing::TimeTriggered => "time_triggered",
                    smx_graph::Timing::TimeBounded => "time_bounded",
                },
                len: c.len,
                written: counts.written,
                read: counts.read,
                overwritten: counts.overwritten,
                duplicated: counts.duplicated,
                dropped: counts.dropped,
                left: counts.left,
                settled: true,
                latency_ns: Default::default(),
            }
        })
        .collect()
}
