//! Time: periodic release on an absolute schedule, real-time thread setup, lateness
//! statistics, and the platform-floor probe.
//!
//! Everything time-triggered in smx is released by a [`Ticker`]: tick `k` is due at
//! `t0 + k·T` on `CLOCK_MONOTONIC`, waited for with an absolute `clock_nanosleep` (so errors
//! never accumulate, unlike a re-armed relative timer) and optionally a short spin just before
//! the instant. A wake-up that comes one or more whole periods late counts exactly that many
//! missed ticks; nothing is merged, so a report's miss count is the number of periods lost. The lateness of every release
//! goes into an in-memory histogram; nothing on the periodic path logs or allocates.
//!
//! [`probe`] runs the same ticker with an empty body, so a user can tell the platform's misses
//! (the floor) from the runtime's.

pub mod clock;
pub mod lateness;
pub mod probe;
pub mod realtime;
pub mod sched;
pub mod ticker;

pub use clock::{MonotonicClock, TimeSource, clock_source, coarse_ns};
pub use lateness::{Lateness, LatenessSummary};
pub use probe::{ProbeOptions, ProbeResult, probe};
pub use realtime::{RtGrant, RtRequest};
pub use ticker::{Spin, Tick, Ticker};
