//! Executes a [`smx_graph::NetGraph`]: one pinned thread per box instance and routing node,
//! joined by bounded channels, and collects the figures of a [`report::Report`].
//!
//! [`run`] goes through four stages: it checks the graph against the [`Registry`] and lays out
//! threads, channels and cores (a rejected net never starts a thread) and decides how to run
//! it (time-triggered boxes in threads or a cyclic executive, real-time scheduling, chains);
//! it creates the channels and one thread per net, held at a gate until all exist, then every
//! box initialises and all meet at one start barrier; it waits for the threads to end, halting
//! what a stop leaves running; after the last join the counters are final and become the
//! [`report::Report`]. What the run decided on the way comes back as [`Note`]s for the caller
//! to word.
//!
//! This file is the crate's front door: the modules behind it are private, and what callers
//! need is named here.

mod builder;
mod chain;
pub mod channel;
pub mod config;
mod error;
mod firewall;
mod halt;
mod io;
mod kernel;
pub mod latency;
mod lever;
mod net;
mod options;
mod placement;
mod plan;
mod progress;
mod registry;
pub mod report;
mod resources;
mod routing;
mod run;
mod run_state;
mod thread;
mod trace;

pub use builder::{Link, NetBuilder};
pub use error::{BadValue, RunError};
pub use firewall::{Firewall, RunningFirewall};
pub use lever::{Lever, LeverWords, option_words};
pub use options::{ChainMode, FirewallOptions, PinMode, Realtime, RunOptions, SharedCores, TtMode};
pub use plan::{UnimplementedPort, check_ports, port_problems, unimplemented_ports};
pub use progress::{ChannelSample, FirewallSample, NetSample, Progress, Snapshot, stats_line};
pub use registry::Registry;
/// Bytes a channel's queue reserves per message of its length, as a run counts its memory.
pub use resources::SLOT_BYTES as CHANNEL_SLOT_BYTES;
pub use run::{executive_cores, losses_by_shape, run};
pub use trace::{DEFAULT_LIMIT as DEFAULT_TRACE_LIMIT, Tracer};
