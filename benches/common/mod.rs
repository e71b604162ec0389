//! What the benches that run whole nets share.
#![allow(dead_code)] // each bench uses its own part of it

use smx_box::{BoxConfig, ConfigValue};
use smx_graph::NetGraph;
use smx_runtime::config::NetSettings;
use smx_runtime::{PinMode, Registry, RunOptions};

/// Options for a run of `graph`: every box with its defaults, each `smx_src_rand` sending
/// `count` messages, the threads placed by `pin`.
pub fn options(graph: &NetGraph, registry: &Registry, count: u64, pin: PinMode) -> RunOptions {
    let settings = graph
        .nodes
        .iter()
        .map(|n| {
            let mut box_config = BoxConfig::with_defaults(&n.label, registry.get(&n.func).unwrap()).unwrap();
            if n.func == "smx_src_rand" {
                box_config.values.insert("count".into(), ConfigValue::Int(count));
            }
            NetSettings {
                box_config,
                ..NetSettings::default()
            }
        })
        .collect();
    RunOptions {
        settings,
        pin,
        ..RunOptions::default()
    }
}
