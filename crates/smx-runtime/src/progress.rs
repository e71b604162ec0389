//! A live view of a running net for a progress line: messages so far and time since start.
//!
//! The CLI creates a [`Progress`], hands a clone to [`crate::run`] in its
//! [`crate::RunOptions`], and samples it from another thread. Sampling only reads
//! the channels' relaxed counters; it never slows the nets down. One handle serves one run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::channel::Shared;

#[derive(Debug, Default)]
struct Inner {
    counted: OnceLock<Vec<Arc<Shared>>>,
    started: OnceLock<Instant>,
    finished: AtomicBool,
}

/// A handle on a run's progress, cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Progress(Arc<Inner>);

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

    pub(crate) fn attach(&self, counted: Vec<Arc<Shared>>) {
        let _ = self.0.counted.set(counted);
    }

    pub(crate) fn mark_started(&self) {
        let _ = self.0.started.set(Instant::now());
    }

    pub(crate) fn mark_finished(&self) {
        self.0.finished.store(true, Ordering::Release);
    }
}
