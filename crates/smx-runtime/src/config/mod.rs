//! Run configuration: built-in defaults < `--config FILE` (TOML) < `--set TARGET.key=value`.
//!
//! The result of resolving the configuration against a net graph is one [`NetSettings`] per
//! graph node: the box's validated [`BoxConfig`] plus the runtime's own per-net keys.

mod error;
mod file;
mod layers;
mod net_keys;

pub use error::{ConfigError, ConfigErrorDetails, Origin, nearest};
pub use file::{MAX_CONFIG_BYTES, read_text};
pub use layers::ConfigLayers;
pub use net_keys::{NET_KEYS, check_process_name};

use smx_box::BoxConfig;

/// Everything configured for one net (graph node).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetSettings {
    /// The box's own validated configuration (empty for routing nodes).
    pub box_config: BoxConfig,
    /// `core`: pin this net's thread to this core (overrides `--pin`).
    pub core: Option<usize>,
    /// `priority`: SCHED_FIFO level (1..=99); a warning and fallback when not permitted.
    pub priority: Option<u8>,
    /// `nice`: niceness of the thread (-20..=19).
    pub nice: Option<i32>,
    /// `expected_rate`: iterations per second the net should reach; the report flags a net that
    /// stays outside 80..120 % of it.
    pub expected_rate: Option<u64>,
    /// `process`: the process this net runs in (`main` when unset), with where that was written
    /// so that a process the configuration does not declare is reported at its line.
    pub process: Option<(String, Origin)>,
    /// Where `core` was written, for an error about the core that points at it.
    pub core_origin: Option<Origin>,
    /// Where each of the box's keys that a layer set was written (a default has none), so
    /// that a value the box's own check refuses is reported at its line.
    pub box_origins: std::collections::BTreeMap<String, Origin>,
}
