//! One run from graph to report: decide (`decide.rs`), prepare, start, halt, assemble the
//! report (`assemble.rs`).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};

use crate::error::RunError;
use crate::options::RunOptions;
use crate::registry::Registry;
use crate::report::{Report, Status};
use crate::run_state::{Gate, Outcome, RunState};
use crate::{chain, channel, firewall, halt, io, latency, net, plan, progress, resources, routing, trace};
use channel::{ChannelState, Reader, Writer};
use io::{InputSlot, OutputSlot, PortSet};
use plan::{Plan, Role};
use smx_graph::NetGraph;

mod assemble;
mod crossing;
mod decide;
mod shape;

use assemble::{assemble, counted_channels, fold_producer_segments, sinks};
pub use decide::executive_cores;
use decide::{Decided, decide};

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
    // A held start counts from its go: the wait for the other processes of a deployment (as
    // long as a link's timeout, for one that never came) is no time the nets ran, and a start
    // that was never let go ran them for no time at all.
    let progress = &decided.opts.progress;
    let wall = match progress.start_held() {
        true => progress.elapsed().unwrap_or_default(),
        false => t0.elapsed(),
    }
    .as_secs_f64();
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
    // A run asked to stop is stopped, also where each net found an end of its own before the
    // stop reached it (a sink that gave up its blocked send at the stop, its producer then
    // ending on the closed channel): its nets did not run as far as they were asked to.
    if decided.opts.stop.load(std::sync::atomic::Ordering::SeqCst) && report.status == crate::report::Status::Ok {
        report.status = crate::report::Status::Stopped;
    }
    halt::mark_stuck(&mut report, &ended.stuck);
    fold_producer_segments(&mut report, &decided.plan, &wired);
    let words = decided.opts.lever_words;
    let trace_note = decided.opts.trace.as_ref().and_then(|t| t.dropped_warning(words));
    let untaken = decided
        .executive_only
        .filter(|_| report.firewalls.iter().all(|f| f.priority.is_none()));
    let notes = decided.notes.into_iter().filter(|n| Some(n) != untaken.as_ref());
    for line in notes.chain(ended.warnings).chain(trace_note) {
        // Printed once, in the report's "How it ran" or Warnings (not also as a log line).
        report.tell(line);
    }
    shape::explain(&mut report, &decided.plan);
    crossing::explain(&mut report, &decided.plan);
    Ok(report)
}

/// What a time-triggered net will lose by its shape, whatever the machine (the warnings a run
/// gives once it lost some): for `check`, before any run. Empty where the net cannot be laid
/// out (the run's own errors say why).
pub fn losses_by_shape(graph: &smx_graph::NetGraph, registry: &Registry) -> Vec<String> {
    match plan::build(graph, registry, &RunOptions::default()) {
        Ok(plan) => shape::foreseen(&plan)
            .into_iter()
            .chain(crossing::foreseen(&plan))
            .collect(),
        Err(_) => Vec::new(),
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
    // A held start has the run's own thread ask the gate once every thread has initialised,
    // and let them run after.
    let thread_count = jobs.len() + chain_jobs.len() + shards.len();
    let held = opts.progress.start_held();
    let state = Arc::new(RunState {
        gate: Gate::new(),
        hold: held.then(crate::run_state::StartHold::default),
        barrier: Barrier::new(thread_count),
        stop: opts.stop.clone(),
        start_failed: AtomicBool::new(false),
        called_off: AtomicBool::new(false),
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
    if held {
        pass_start_gate(&state, &opts.progress, thread_count);
    }
    // A start called off released no net: the run's figures stay those of a run not started.
    if !state.called_off.load(std::sync::atomic::Ordering::SeqCst) {
        opts.progress.mark_started();
    }
    Ok(Started {
        state,
        handles,
        firewalls,
    })
}

/// The run's own part of a held start: once every one of the `threads` has initialised its
/// boxes, the start gate decides whether the nets run (not asked when a box failed to start:
/// the run is refused anyway), and the threads go on. A stop while it waits calls the start
/// off; threads still in their init then go straight to their end, and the halt reports any
/// that stays there.
fn pass_start_gate(state: &RunState, progress: &crate::Progress, threads: usize) {
    use std::sync::atomic::Ordering::SeqCst;
    let Some(hold) = &state.hold else { return };
    let all_ready = hold.wait_for(threads, &state.stop);
    let refused = state.start_failed.load(SeqCst);
    if !all_ready || (!refused && !progress.pass_start_gate(&state.stop)) {
        state.called_off.store(true, SeqCst);
        log::info!("the start was called off: every net ends stopped without a step");
    }
    hold.release();
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
                &plan.nets[c.from].thread_name(),
                &plan.nets[c.to].thread_name(),
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
    let brings_in: Vec<bool> = plan
        .nets
        .iter()
        .map(|n| matches!(&n.role, plan::Role::Box(spec) if spec.brings_in))
        .collect();
    let jobs = plan
        .nets
        .iter()
        .map(|net| {
            let sink = sink[net.id];
            let inputs = net
                .inputs
                .iter()
                .map(|p| {
                    let arrival = p.channel.is_some_and(|id| brings_in[plan.channels[id].from]);
                    InputSlot::new(&p.name, p.channel.and_then(|id| readers[id].take()), p.channel, sink)
                        .with_arrival(arrival)
                })
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
