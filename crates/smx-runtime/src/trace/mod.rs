//! A timeline of a run in the Chrome trace event format (`smxrun run NET --trace FILE.json`),
//! which Perfetto and `chrome://tracing` open.
//!
//! Each thread of the run records into its own preallocated ring ([`Recorder`]): box steps
//! (short consecutive ones as one batch slice with the count), waits on channels, firewall
//! ticks and misses. Rings keep the latest `limit` events and count what they overwrote. The
//! hot path never allocates, locks or writes a file: a thread hands its ring over when it
//! ends, and the file is written after the run ([`Tracer::write_chrome`]). When no trace is
//! asked for, the step loop pays one branch per step (`Driver::fire_unguarded`).
//!
//! Tracks: one per thread (`tid`), named as the report spells the thread (`Snk#3`,
//! `tf_10.0us_0`); boxes run by a cyclic executive record on their firewall thread's track.

mod chrome;
pub mod ports;
pub mod recorder;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::plan::NetPlan;
pub use recorder::{BATCH_BELOW_NS, Event, Recorder, Ring, What};

/// The default of `--trace-limit`: events kept per thread.
pub const DEFAULT_LIMIT: usize = 100_000;

/// What a ring's indexes and its track are called.
#[derive(Debug, Clone, Default)]
pub struct Labels {
    /// The track: the thread that recorded.
    pub tid: u32,
    pub thread: String,
    /// Who steps: the net (a box of a cyclic executive shares its firewall's track).
    pub owner: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    /// A firewall thread's pairs, `Src -> Snk`.
    pub pairs: Vec<String>,
}

impl Labels {
    /// A net's labels on the track `tid` named `thread`.
    pub fn for_net(plan: &NetPlan, tid: u32, thread: String) -> Labels {
        Labels {
            tid,
            thread,
            owner: plan.thread_name(),
            inputs: plan.inputs.iter().map(|p| p.name.clone()).collect(),
            outputs: plan.outputs.iter().map(|p| p.name.clone()).collect(),
            pairs: Vec::new(),
        }
    }
}

/// The track of net `id` when it has a thread of its own.
pub fn net_tid(id: usize) -> u32 {
    id as u32 + 1
}

/// The track of the `k`-th firewall thread of a run with `nets` nets.
pub fn firewall_tid(nets: usize, k: usize) -> u32 {
    (nets + 1 + k) as u32
}

#[derive(Debug)]
pub(crate) struct TracerInner {
    pub(crate) limit: usize,
    origin: OnceLock<u64>,
    pub(crate) rings: Mutex<Vec<(Labels, Ring)>>,
}

impl TracerInner {
    pub(crate) fn new(limit: usize) -> TracerInner {
        TracerInner {
            limit: limit.max(1),
            origin: OnceLock::new(),
            rings: Mutex::new(Vec::new()),
        }
    }
}

/// A run's trace: hand a clone to [`crate::run`] in [`crate::RunOptions::trace`], write it
/// after the run. One handle serves one run.
#[derive(Debug, Clone)]
pub struct Tracer(Arc<TracerInner>);

impl Tracer {
    /// Keeps the latest `limit` events of each thread (at least 1).
    pub fn new(limit: usize) -> Tracer {
        Tracer(Arc::new(TracerInner::new(limit)))
    }

    pub fn limit(&self) -> usize {
        self.0.limit
    }

    /// A recorder for one thread; its ring is allocated now, before the thread runs.
    pub fn recorder(&self, labels: Labels) -> Recorder {
        Recorder::new(self.0.clone(), labels)
    }

    /// The run starts now: timestamps count from here.
    pub(crate) fn mark_origin(&self) {
        let _ = self.0.origin.set(smx_timing::clock::monotonic_ns());
    }

    fn origin(&self) -> u64 {
        self.0.origin.get().copied().unwrap_or(0)
    }

    /// Per track, its name and its kept events in time order (at most `limit`), and what
    /// was dropped.
    pub fn tracks(&self) -> Vec<Track> {
        let rings = self.0.rings.lock();
        let mut by_tid: BTreeMap<u32, Track> = BTreeMap::new();
        for (labels, ring) in rings.iter() {
            let track = by_tid.entry(labels.tid).or_insert_with(|| Track {
                tid: labels.tid,
                name: labels.thread.clone(),
                labels: Vec::new(),
                events: Vec::new(),
                dropped: 0,
            });
            let which = track.labels.len();
            track.labels.push(labels.clone());
            track.dropped += ring.dropped();
            track.events.extend(ring.events().map(|e| (*e, which)));
        }
        let limit = self.0.limit;
        by_tid
            .into_values()
            .map(|mut t| {
                // Enclosing slices first where two start together (a step and its write).
                t.events.sort_by_key(|(e, _)| (e.ts, std::cmp::Reverse(e.dur)));
                let excess = t.events.len().saturating_sub(limit);
                t.events.drain(..excess);
                t.dropped += excess as u64;
                t
            })
            .collect()
    }

    /// The report's warning when some thread's ring overflowed.
    pub fn dropped_warning(&self, words: crate::lever::LeverWords) -> Option<String> {
        let tracks = self.tracks();
        let full: Vec<&Track> = tracks.iter().filter(|t| t.dropped > 0).collect();
        if full.is_empty() {
            return None;
        }
        let total: u64 = full.iter().map(|t| t.dropped).sum();
        let names: Vec<&str> = full.iter().map(|t| t.name.as_str()).collect();
        Some(format!(
            "trace: kept the latest {} events per thread; {total} older events dropped ({}); {} keeps more",
            self.0.limit,
            names.join(", "),
            words.name(crate::lever::Lever::TraceLimit)
        ))
    }

    /// Writes the trace as Chrome trace event JSON. `partial`: the run was stopped.
    pub fn write_chrome(&self, net: &str, partial: bool, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        chrome::write(self, net, partial, out)
    }
}

/// One thread's track, ready to write.
#[derive(Debug)]
pub struct Track {
    pub tid: u32,
    pub name: String,
    /// The labels of every ring recorded on this track.
    pub labels: Vec<Labels>,
    /// Each event with the index of its ring's labels.
    pub events: Vec<(Event, usize)>,
    pub dropped: u64,
}
