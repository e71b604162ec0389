//! A box instance's configuration: every key of its spec that has a value, already checked.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::BoxError;

/// A parsed, validated configuration value.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigValue {
    Int(u64),
    Float(f64),
    Bool(bool),
    Str(String),
    Duration(Duration),
}

/// The resolved configuration of one box instance: every key of its spec that has a value
/// (from the defaults, a config file or the command line), type-checked against the spec.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BoxConfig {
    /// Instance name (`Snk`).
    pub instance: String,
    /// The node's id in the flattened graph, unique where instance names repeat (`Snk#3`).
    pub id: usize,
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

    /// A number; an integer value is accepted too.
    pub fn float(&self, key: &str) -> Result<f64, BoxError> {
        match self.values.get(key) {
            Some(ConfigValue::Float(v)) => Ok(*v),
            Some(ConfigValue::Int(v)) => Ok(*v as f64),
            _ => Err(self.missing(key, "number")),
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

    /// An optional string: `None` when unset.
    pub fn opt_str(&self, key: &str) -> Option<&str> {
        match self.values.get(key) {
            Some(ConfigValue::Str(v)) => Some(v),
            _ => None,
        }
    }

    /// An error about this instance's key `key`, in the form every configuration error has.
    pub fn error(&self, key: &str, message: impl std::fmt::Display) -> BoxError {
        BoxError(format!("{} ({}): {key}: {message}", self.instance, self.implementation))
    }
}
