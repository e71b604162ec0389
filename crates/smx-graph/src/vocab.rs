//! The words the language and the graph share: where a box lives, port classes and modes,
//! time specifications. They are defined here, below the front end, so that the graph never
//! depends on the syntax tree.

use serde::{Deserialize, Serialize};

/// Where a box's implementation lives (GML attribute `location`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    #[default]
    Local,
    Extern,
    Intern,
}

impl Location {
    /// The number the original compiler writes to GML (`location 0|1|2`).
    pub fn code(self) -> u8 {
        match self {
            Location::Local => 0,
            Location::Extern => 1,
            Location::Intern => 2,
        }
    }
}

/// Port class; `left` is parsed as `Up` and `right` as `Down` (they are aliases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PortClass {
    Up,
    Down,
    Side,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PortMode {
    In,
    Out,
}

/// A time specification `[1s500ms]`: the component-wise sum of seconds and nanoseconds,
/// deliberately *not* normalised (`2s1500ms` is (3 s, 500 000 000 ns), `1999ms999999us` is
/// (1 s, 1 998 999 000 ns)), because the original compiler writes these two numbers to the
/// graph as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct TimeSpec {
    pub secs: u64,
    pub nanos: u64,
}

impl TimeSpec {
    pub fn is_zero(self) -> bool {
        self.secs == 0 && self.nanos == 0
    }

    /// The duration this specification stands for (saturating on absurd values).
    pub fn as_duration(self) -> std::time::Duration {
        std::time::Duration::from_secs(self.secs).saturating_add(std::time::Duration::from_nanos(self.nanos))
    }
}
