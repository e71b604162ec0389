//! A live view of a running net: loop counts, channel counts and firewall misses so far.
//!
//! The CLI creates a [`Progress`], hands a clone to [`crate::run`] in its
//! [`crate::RunOptions`], and takes [`Snapshot`]s from another thread: the progress line on a
//! terminal and the `--stats-every` lines ([`stats_line`]) read the same snapshots. Sampling
//! only reads counters that each thread already keeps as single-writer relaxed atomics (a
//! net's loop count is one more relaxed store per step), so it never slows the nets down.
//! One handle serves one run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::channel::ChannelState;
use crate::run_state::{LoopCounter, ShardLive};

/// One net as the sampler sees it.
#[derive(Debug)]
pub(crate) struct LiveNet {
    pub id: usize,
    pub name: String,
    pub loops: Arc<LoopCounter>,
}

/// One channel as the sampler sees it: for a time-triggered channel the producer's segment
/// (producer→firewall) apart from the consumer's (firewall→consumer).
#[derive(Debug)]
pub(crate) struct LiveChannel {
    pub id: usize,
    pub from: String,
    pub to: String,
    pub len: usize,
    /// The producer segment and its length (time-triggered channels only).
    pub producer: Option<(Arc<ChannelState>, usize)>,
    pub consumer: Arc<ChannelState>,
}

#[derive(Debug, Default)]
pub(crate) struct Live {
    pub nets: Vec<LiveNet>,
    pub channels: Vec<LiveChannel>,
    pub firewalls: Vec<(String, Arc<ShardLive>)>,
}

#[derive(Debug, Default)]
struct Inner {
    counted: OnceLock<Vec<Arc<ChannelState>>>,
    live: OnceLock<Live>,
    started: OnceLock<Instant>,
    finished: AtomicBool,
    start_gate: OnceLock<StartGate>,
}

/// What the run asks, once every box has initialised, whether its nets may run
/// ([`Progress::hold_start`]).
struct StartGate(Box<dyn Fn(&AtomicBool) -> bool + Send + Sync>);

impl std::fmt::Debug for StartGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StartGate")
    }
}

/// A handle on a run's progress, cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Progress(Arc<Inner>);

/// A net's figures at a snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetSample {
    pub id: usize,
    /// As the report spells it, `Snk#3`.
    pub name: String,
    pub loop_count: u64,
}

/// A channel's figures at a snapshot (counted as in the report's channel rows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelSample {
    pub id: usize,
    pub from: String,
    pub to: String,
    pub len: usize,
    pub written: u64,
    pub read: u64,
    pub overwritten: u64,
    pub dropped: u64,
    /// Messages inside the channel now (both segments of a time-triggered one).
    pub fill: u64,
}

/// A firewall thread's figures at a snapshot (as in the report's firewall section).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirewallSample {
    pub name: String,
    pub ticks: u64,
    pub missed_ticks: u64,
    pub overruns: u64,
    pub produce_misses: u64,
    pub consume_misses: u64,
}

/// Everything sampled at one instant. A slice of a net over several processes sends it to its
/// supervisor, which makes one of the whole net from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Since the nets were released.
    pub elapsed: Duration,
    /// Messages delivered so far (the report's `messages`).
    pub messages: u64,
    pub nets: Vec<NetSample>,
    pub channels: Vec<ChannelSample>,
    pub firewalls: Vec<FirewallSample>,
    /// Every thread of the run had ended: the counts are the report's.
    pub finished: bool,
}

/// Messages in a channel of length `len` now. A producer counts a write before it waits for
/// room, and the counters are read one after the other while both ends run, so the raw
/// difference can be one over the length or below zero: it is clamped.
fn fill(shared: &ChannelState, len: usize) -> u64 {
    let c = shared.counters.snapshot();
    c.written
        .saturating_sub(c.read + c.overwritten + c.dropped + c.left)
        .min(len as u64)
}

impl Progress {
    pub fn new() -> Self {
        Progress::default()
    }

    /// Messages delivered so far (counted as in the report's `messages`).
    pub fn messages(&self) -> u64 {
        self.0
            .counted
            .get()
            .map(|all| all.iter().map(|c| c.counters.consumer.read.get()).sum())
            .unwrap_or(0)
    }

    /// Time since the nets were released (`None` before that).
    pub fn elapsed(&self) -> Option<Duration> {
        self.0.started.get().map(Instant::elapsed)
    }

    /// True once every thread of the run has ended.
    pub fn finished(&self) -> bool {
        self.0.finished.load(Ordering::Acquire)
    }

    /// The run's figures now (`None` before the nets were released).
    pub fn snapshot(&self) -> Option<Snapshot> {
        // Read first: a snapshot that says finished has the final counts.
        let finished = self.finished();
        let elapsed = self.elapsed()?;
        let live = self.0.live.get();
        let nets = live
            .map(|l| {
                l.nets
                    .iter()
                    .map(|n| NetSample {
                        id: n.id,
                        name: n.name.clone(),
                        loop_count: n.loops.get(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let channels = live
            .map(|l| l.channels.iter().map(channel_sample).collect())
            .unwrap_or_default();
        let firewalls = live
            .map(|l| {
                l.firewalls
                    .iter()
                    .map(|(name, fw)| FirewallSample {
                        name: name.clone(),
                        ticks: fw.tick.load(Ordering::Relaxed),
                        missed_ticks: fw.missed_ticks.load(Ordering::Relaxed),
                        overruns: fw.overruns.load(Ordering::Relaxed),
                        produce_misses: fw.produce_misses.load(Ordering::Relaxed),
                        consume_misses: fw.consume_misses.load(Ordering::Relaxed),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(Snapshot {
            elapsed,
            messages: self.messages(),
            nets,
            channels,
            firewalls,
            finished,
        })
    }

    pub(crate) fn attach(&self, counted: Vec<Arc<ChannelState>>, live: Live) {
        let _ = self.0.counted.set(counted);
        let _ = self.0.live.set(live);
    }

    /// Holds the run, once every box has initialised (its links attached) and before any box
    /// steps, until `gate` answers: `true` lets the nets run, `false` ends each of them
    /// `stopped` without a step. `gate` is given the run's stop, which it must answer `false`
    /// to soon after it is set. A process of a deployment waits so for all the others to be
    /// ready, so that no net runs while another process may still refuse its run. Set before
    /// the run; a second gate is ignored.
    pub fn hold_start(&self, gate: impl Fn(&AtomicBool) -> bool + Send + Sync + 'static) {
        let _ = self.0.start_gate.set(StartGate(Box::new(gate)));
    }

    /// Whether the run's start is held ([`Progress::hold_start`]).
    pub(crate) fn start_held(&self) -> bool {
        self.0.start_gate.get().is_some()
    }

    /// The start gate's answer (`true` without a gate), asked with the run's `stop`.
    pub(crate) fn pass_start_gate(&self, stop: &AtomicBool) -> bool {
        self.0.start_gate.get().is_none_or(|gate| (gate.0)(stop))
    }

    pub(crate) fn mark_started(&self) {
        let _ = self.0.started.set(Instant::now());
    }

    pub(crate) fn mark_finished(&self) {
        self.0.finished.store(true, Ordering::Release);
    }
}

fn channel_sample(c: &LiveChannel) -> ChannelSample {
    let consumer = c.consumer.counters.snapshot();
    let producer = c.producer.as_ref().map(|(p, _)| p.counters.snapshot());
    let (written, overwritten, dropped) = match producer {
        Some(p) => (
            p.written,
            p.overwritten + consumer.overwritten,
            p.dropped + consumer.dropped,
        ),
        None => (consumer.written, consumer.overwritten, consumer.dropped),
    };
    ChannelSample {
        id: c.id,
        from: c.from.clone(),
        to: c.to.clone(),
        len: c.len,
        written,
        read: consumer.read,
        overwritten,
        dropped,
        fill: fill(&c.consumer, c.len) + c.producer.as_ref().map_or(0, |(p, len)| fill(p, *len)),
    }
}

/// The `--stats-every` line for `now`, rates over the interval since `before` (since the
/// start for the first line): one JSON object, no newline.
pub fn stats_line(before: Option<&Snapshot>, now: &Snapshot) -> String {
    let since = before.map_or(Duration::ZERO, |b| b.elapsed);
    let interval = now.elapsed.saturating_sub(since).as_secs_f64();
    let per_s = |delta: u64| if interval > 0.0 { delta as f64 / interval } else { 0.0 };
    let nets: Vec<serde_json::Value> = now
        .nets
        .iter()
        .map(|n| {
            let was = before
                .and_then(|b| b.nets.iter().find(|m| m.id == n.id))
                .map_or(0, |m| m.loop_count);
            serde_json::json!({
                "id": n.id, "name": n.name, "loop_count": n.loop_count,
                "loop_rate": per_s(n.loop_count.saturating_sub(was)),
            })
        })
        .collect();
    let channels: Vec<serde_json::Value> = now
        .channels
        .iter()
        .map(|c| {
            let was = before
                .and_then(|b| b.channels.iter().find(|d| d.id == c.id))
                .map_or(0, |d| d.read);
            serde_json::json!({
                "id": c.id, "from": c.from, "to": c.to, "len": c.len,
                "written": c.written, "read": c.read, "overwritten": c.overwritten, "dropped": c.dropped,
                "rate": per_s(c.read.saturating_sub(was)), "fill": c.fill,
            })
        })
        .collect();
    serde_json::json!({
        "t_s": now.elapsed.as_secs_f64(),
        "interval_s": interval,
        "final": now.finished,
        "messages": now.messages,
        "messages_per_s": per_s(now.messages.saturating_sub(before.map_or(0, |b| b.messages))),
        "nets": nets,
        "channels": channels,
        "firewalls": now.firewalls,
    })
    .to_string()
}
