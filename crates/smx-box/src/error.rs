//! The two ways a box's work can go wrong: its own failure, and a consumer that has gone.

use std::fmt;

/// A write found its consumer gone; the message was dropped and counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disconnected;

impl fmt::Display for Disconnected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the consumer of this output has ended")
    }
}

impl std::error::Error for Disconnected {}

/// Why [`Io::write_within`](crate::Io::write_within) did not write; either way the message was
/// dropped and counted in the channel's `dropped`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    /// The consumer has ended.
    Disconnected,
    /// The channel stayed full for the whole timeout.
    TimedOut,
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Disconnected => Disconnected.fmt(f),
            WriteError::TimedOut => f.write_str("the channel stayed full for the whole write timeout"),
        }
    }
}

impl std::error::Error for WriteError {}

/// A failure of a box. The runtime reports it with the instance name and ends the net as
/// failed; its neighbours then end cleanly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoxError(pub String);

impl BoxError {
    pub fn new(message: impl Into<String>) -> Self {
        BoxError(message.into())
    }
}

impl fmt::Display for BoxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BoxError {}

impl From<String> for BoxError {
    fn from(s: String) -> Self {
        BoxError(s)
    }
}

impl From<&str> for BoxError {
    fn from(s: &str) -> Self {
        BoxError(s.to_string())
    }
}

impl From<std::io::Error> for BoxError {
    fn from(e: std::io::Error) -> Self {
        BoxError(e.to_string())
    }
}
