//! The contract between the runtime and a box implementation.
//!
//! A box is written once as a type implementing [`BoxImpl`] and described by a [`BoxSpec`]
//! (its ports, its configuration keys and a constructor). Specs are collected in a
//! [`Registry`](super::Registry); the runtime looks up every box instance of a net by its
//! implementation name, validates the instance's configuration against the spec, and then,
//! in the instance's own thread: calls [`BoxSpec::create`], [`BoxImpl::init`], waits at the
//! start barrier, calls [`BoxImpl::step`] until the net ends, and finally
//! [`BoxImpl::cleanup`].
//!
//! Port access is typed: `init` resolves port names to [`InPort`]/[`OutPort`] handles once,
//! so `step` does no string lookups on the hot path.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

pub use crate::runtime::io::{InitCtx, Io};
pub use crate::runtime::message::Message;

/// What a box's step asks the runtime to do next (the spec's `SMX_NET_RETURN`,
/// `SMX_NET_CONTINUE`, `SMX_NET_END`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Let the runtime decide: end when every triggering input has ended and is drained, or
    /// when every consumer has ended; otherwise go on.
    Return,
    /// Go on unconditionally.
    Continue,
    /// Stop after this iteration.
    End,
}

/// Handle of an input port, resolved once in [`BoxImpl::init`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InPort(pub usize);

/// Handle of an output port, resolved once in [`BoxImpl::init`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OutPort(pub usize);

/// A write found its consumer gone; the message was dropped and counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disconnected;

/// A failure of a box, reported with the instance name and ending the net as failed.
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

/// One box instance's behaviour. Runs entirely in the instance's own thread.
pub trait BoxImpl: Send {
    /// Prepare: resolve ports, open resources. Runs before the start barrier; an error here
    /// ends this net as failed and lets its neighbours terminate.
    fn init(&mut self, _ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        Ok(())
    }

    /// One iteration. The runtime calls it once each coupled input holds a message or has
    /// ended (the firing rule), so reads of those inputs do not block.
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError>;

    /// The net is ending abnormally: `init` or a step failed (an error or a panic). Called once,
    /// just before [`BoxImpl::cleanup`], so that a box talking to peers outside the net (a
    /// ZeroMQ sink) can tell them at once instead of leaving them to wait for a timeout.
    fn abort(&mut self, _why: &str) {}

    /// Release resources. Called once after the last step, also after a failed init.
    fn cleanup(&mut self) {}

    /// Extra figures this box wants in the report (e.g. a ZMQ source's loss counts), read
    /// after `cleanup`.
    fn stats(&self) -> Vec<(String, serde_json::Value)> {
        Vec::new()
    }
}

/// Direction of a declared port of a built-in or user box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    In,
    Out,
}

/// A port a box implementation expects (listed by `smxrun boxes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortSpec {
    pub name: &'static str,
    pub direction: Direction,
    /// The port may stay unconnected.
    pub optional: bool,
    pub help: &'static str,
}

/// The type of a configuration value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A non-negative integer (`count = 1000`, `size = 8`).
    Int,
    Bool,
    Str,
    /// A time literal like the language's: `500ms`, `2s`, `10us`.
    Duration,
    /// One of [`ConfigKey::choices`].
    Choice,
}

/// A configuration key a box accepts, with its default (`None`: no default, optional).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigKey {
    pub name: &'static str,
    pub kind: ValueKind,
    /// Default, written as it would be in a config file (`"8"`, `"pubsub"`, `"2s"`).
    pub default: Option<&'static str>,
    pub choices: &'static [&'static str],
    pub help: &'static str,
}

/// A parsed, validated configuration value.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigValue {
    Int(u64),
    Bool(bool),
    Str(String),
    Duration(Duration),
}

/// The resolved configuration of one box instance: every key of its spec that has a value
/// (from the defaults, a config file or the command line), already type-checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BoxConfig {
    pub instance: String,
    pub implementation: String,
    pub values: BTreeMap<String, ConfigValue>,
}

impl BoxConfig {
    fn missing(&self, key: &str, want: &str) -> BoxError {
        BoxError(format!(
            "{} ({}): config key '{key}' has no {want} value",
            self.instance, self.implementation
        ))
    }

    pub fn get(&self, key: &str) -> Option<&ConfigValue> {
        self.values.get(key)
    }

    pub fn int(&self, key: &str) -> Result<u64, BoxError> {
        match self.values.get(key) {
            Some(ConfigValue::Int(v)) => Ok(*v),
            _ => Err(self.missing(key, "integer")),
        }
    }

    pub fn bool(&self, key: &str) -> Result<bool, BoxError> {
        match self.values.get(key) {
            Some(ConfigValue::Bool(v)) => Ok(*v),
            _ => Err(self.missing(key, "boolean")),
        }
    }

    pub fn str(&self, key: &str) -> Result<&str, BoxError> {
        match self.values.get(key) {
            Some(ConfigValue::Str(v)) => Ok(v),
            _ => Err(self.missing(key, "string")),
        }
    }

    pub fn duration(&self, key: &str) -> Result<Duration, BoxError> {
        match self.values.get(key) {
            Some(ConfigValue::Duration(v)) => Ok(*v),
            _ => Err(self.missing(key, "duration")),
        }
    }

    /// An optional value: `Ok(None)` when unset.
    pub fn opt_str(&self, key: &str) -> Option<&str> {
        match self.values.get(key) {
            Some(ConfigValue::Str(v)) => Some(v),
            _ => None,
        }
    }
}

/// Constructor of a box instance from its configuration.
pub type Constructor = fn(&BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError>;

/// Everything the runtime and `smxrun boxes` need to know about one implementation.
#[derive(Debug, Clone, Copy)]
pub struct BoxSpec {
    /// Implementation name as written after `box` in a net (`smx_src_rand`).
    pub name: &'static str,
    pub summary: &'static str,
    pub ports: &'static [PortSpec],
    pub config: &'static [ConfigKey],
    pub create: Constructor,
}
