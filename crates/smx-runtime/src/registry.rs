//! The box implementations a run knows, found by the name a net writes after `box`.

use smx_box::BoxSpec;

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

    /// A registry of `specs` (a later spec of the same name replaces an earlier one).
    pub fn of(specs: impl IntoIterator<Item = BoxSpec>) -> Self {
        let mut registry = Registry::empty();
        for spec in specs {
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
