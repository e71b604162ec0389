//! Running a generated net through the library, the same path `smxrun net.smx` takes.
//!
//! The experiments write the report's nets as `.smx` text, so what is measured is exactly what
//! a user gets: [`smx_lang::compose::compile`] checks and flattens the text, the configuration is
//! the boxes' defaults with the experiment's overrides, and [`smx_runtime::run`] executes it
//! and returns the [`Report`] whose counts validate the run.

use smx_graph::NetGraph;
use smx_lang::compose::{CompileOptions, compile};
use smx_lang::diag::SourceFile;
use smx_runtime::Registry;
use smx_runtime::config::{ConfigLayers, NetSettings};
use smx_runtime::report::{Report, Status};
use smx_runtime::{RunOptions, run};

use super::result::Run;

/// Compiles `text`; an error lists the diagnostics.
pub fn compile_net(name: &str, text: &str) -> Result<NetGraph, String> {
    let src = SourceFile::new(name, text);
    let compiled = compile(&src, &CompileOptions::default());
    if !compiled.accepted() {
        let messages: Vec<String> = compiled.diagnostics.iter().map(|d| src.render(d)).collect();
        return Err(format!("generated net {name} was rejected:\n{}", messages.join("\n")));
    }
    Ok(compiled.graph)
}

/// A configuration value for every box of one implementation (`smx_src_rand`, `count`, `1000`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    pub implementation: String,
    pub key: String,
    pub value: String,
}

impl Override {
    pub fn new(implementation: &str, key: &str, value: impl ToString) -> Override {
        Override {
            implementation: implementation.to_string(),
            key: key.to_string(),
            value: value.to_string(),
        }
    }
}

/// Per-node settings: each box's spec defaults, then the overrides for its implementation,
/// through the same configuration layers as `smxrun --set`.
pub fn settings(graph: &NetGraph, registry: &Registry, overrides: &[Override]) -> Result<Vec<NetSettings>, String> {
    let mut layers = ConfigLayers::new();
    for o in overrides {
        layers
            .add_set(&format!("{}.{}={}", o.implementation, o.key, o.value))
            .map_err(|e| e.to_string())?;
    }
    layers.resolve(graph, registry).map_err(|e| e.to_string())
}

/// Runs a compiled net to its end.
pub fn run_graph(
    graph: &NetGraph,
    registry: &Registry,
    overrides: &[Override],
    channel_len: Option<u32>,
) -> Result<Report, String> {
    let opts = RunOptions {
        default_channel_len: channel_len,
        settings: settings(graph, registry, overrides)?,
        stop: crate::interrupt::stop_flag(),
        ..RunOptions::default()
    };
    run(graph, registry, &opts).map_err(|e| format!("the net did not start: {e}"))
}

/// Runs a compiled net to its end with `base` options (its settings replaced).
pub fn run_graph_with(
    graph: &NetGraph,
    registry: &Registry,
    overrides: &[Override],
    base: RunOptions,
) -> Result<Report, String> {
    let opts = RunOptions {
        settings: settings(graph, registry, overrides)?,
        stop: crate::interrupt::stop_flag(),
        ..base
    };
    run(graph, registry, &opts).map_err(|e| format!("the net did not start: {e}"))
}

/// The longest wall time of any net: from the common start barrier to the last loop's end,
/// the report's (and the original's) per-net definition, without planning and thread setup.
pub fn nets_wall_s(report: &Report) -> f64 {
    report.nets.iter().map(|n| n.wall_time_s).fold(0.0, f64::max)
}

/// Marks `run` invalid for every sign in `report` that the run did not go as planned: a failed
/// or stopped net, messages left in or dropped from coupled channels, fewer messages than
/// `expected` reaching the sinks.
pub fn validate(report: &Report, expected_messages: u64, run: &mut Run) {
    if report.status != Status::Ok {
        run.invalidate(format!("run status {}", report.status.as_str()));
    }
    for net in report.nets.iter().filter(|n| n.status != Status::Ok) {
        run.invalidate(format!(
            "net {} {}{}",
            net.name,
            net.status.as_str(),
            net.error.as_ref().map(|e| format!(": {e}")).unwrap_or_default()
        ));
    }
    for c in report.channels.iter().filter(|c| c.timing == "none") {
        if c.dropped > 0 || c.overwritten > 0 || c.left > 0 {
            run.invalidate(format!(
                "channel {} ({} -> {}): {} dropped, {} overwritten, {} left",
                c.name, c.from, c.to, c.dropped, c.overwritten, c.left
            ));
        }
    }
    if report.messages != expected_messages {
        run.invalidate(format!(
            "{} of {expected_messages} messages reached the sinks",
            report.messages
        ));
    }
}
