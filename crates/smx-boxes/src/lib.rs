//! Box implementations and the registry that finds them by name.
//!
//! [`api`] is the contract every box implements; the other modules are the built-in boxes.
//! A user's own boxes are [`BoxSpec`]s added to a [`Registry`] before running a net.

pub mod api;
pub mod fwd;
pub mod snk_dump;
pub mod snk_null;
pub mod src_rand;
pub mod zmq;

pub use api::{
    BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, ConfigValue, Direction, Disconnected, Flow, InPort, OutPort,
    PortSpec, ValueKind,
};

/// Implementations known to a run, looked up by the name a net gives after `box`.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    specs: Vec<BoxSpec>,
}

impl Registry {
    /// An empty registry (add specs with [`Registry::register`]).
    pub fn empty() -> Self {
        Registry::default()
    }

    /// All built-in boxes.
    pub fn builtin() -> Self {
        let mut registry = Registry::empty();
        for spec in builtin_specs() {
            registry.register(spec);
        }
        registry
    }

    /// Adds or replaces an implementation.
    pub fn register(&mut self, spec: BoxSpec) {
        self.specs.retain(|s| s.name != spec.name);
        self.specs.push(spec);
    }

    pub fn get(&self, name: &str) -> Option<&BoxSpec> {
        self.specs.iter().find(|s| s.name == name)
    }

    /// Every known implementation, sorted by name.
    pub fn specs(&self) -> Vec<&BoxSpec> {
        let mut all: Vec<&BoxSpec> = self.specs.iter().collect();
        all.sort_by_key(|s| s.name);
        all
    }

    /// The names of all known implementations, sorted, for error messages.
    pub fn names(&self) -> Vec<&'static str> {
        self.specs().into_iter().map(|s| s.name).collect()
    }
}

/// The specs of every built-in box.
fn builtin_specs() -> Vec<BoxSpec> {
    let mut specs = vec![src_rand::SPEC, snk_null::SPEC, snk_dump::SPEC, fwd::SPEC];
    specs.extend(zmq::specs());
    specs
}
