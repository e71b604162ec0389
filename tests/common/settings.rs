//! The settings of a hand-built net as the command line would give them: each box's defaults,
//! with `count` set for every box that has one.
#![allow(dead_code)] // each test file uses its own part of it

use smx_box::{BoxConfig, ConfigValue};
use smx_graph::NetGraph;
use smx_runtime::Registry;
use smx_runtime::config::NetSettings;

/// One `NetSettings` per node of `graph`: its spec's defaults, and `count` where it has one.
pub fn with_count(graph: &NetGraph, registry: &Registry, count: u64) -> Vec<NetSettings> {
    graph
        .nodes
        .iter()
        .map(|n| {
            let mut s = NetSettings::default();
            if let Some(spec) = registry.get(&n.func) {
                s.box_config = BoxConfig::with_defaults(&n.label, spec).unwrap();
                if spec.config.iter().any(|k| k.name == "count") {
                    s.box_config.values.insert("count".into(), ConfigValue::Int(count));
                }
            }
            s
        })
        .collect()
}
