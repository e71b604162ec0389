//! Writing your own box in Rust and running a net that uses it.
//!
//! A box is a type implementing [`BoxImpl`] plus a [`BoxSpec`] that names it, lists its ports
//! and configuration keys and says how to construct it. Add the spec to a [`Registry`] next to
//! the built-in boxes and run a graph that uses the name, exactly as the built-in
//! `smx_src_rand` and `smx_snk_null` are used.
//!
//! This example defines `checksum(in data, out data)`: it forwards every message unchanged and
//! folds the payload bytes into a checksum, reported in the run's report. The net is
//!
//! ```text
//! Src = extern box smx_src_rand( out data )
//! Sum = box checksum( in data, out data )
//! Snk = box smx_snk_null( in data )
//! connect Src.Sum.Snk
//! ```
//!
//! built here with [`NetBuilder`] (the language front end produces the same graph from that
//! text). Run it with `cargo run --example user_box`.

use smx::boxes::api::{InitCtx, Io};
use smx::boxes::{
    BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, ConfigValue, Direction, Flow, InPort, OutPort, PortSpec,
    Registry, ValueKind,
};
use smx::config::NetSettings;
use smx::report::{Report, text};
use smx::runtime::builder::NetBuilder;
use smx::runtime::{RunOptions, run};

/// The description `smxrun boxes` would list, and the constructor the runtime calls in the
/// instance's own thread.
pub const CHECKSUM: BoxSpec = BoxSpec {
    name: "checksum",
    summary: "forwards messages and reports a checksum of their payloads",
    ports: &[
        PortSpec {
            name: "data",
            direction: Direction::In,
            optional: false,
            help: "messages in",
        },
        PortSpec {
            name: "data",
            direction: Direction::Out,
            optional: false,
            help: "the same messages out",
        },
    ],
    config: &[ConfigKey {
        name: "algorithm",
        kind: ValueKind::Choice,
        default: Some("fnv1a"),
        choices: &["fnv1a", "sum"],
        help: "how bytes are folded",
    }],
    create: create_checksum,
};

/// Reads the validated configuration (defaults already filled in) and builds the state.
fn create_checksum(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(Checksum {
        input: InPort(0),
        output: OutPort(0),
        fnv: config.str("algorithm")? == "fnv1a",
        value: 0xcbf2_9ce4_8422_2325,
        messages: 0,
    }))
}

struct Checksum {
    input: InPort,
    output: OutPort,
    fnv: bool,
    value: u64,
    messages: u64,
}

impl BoxImpl for Checksum {
    /// Resolve port names once; `step` then uses the handles (no string lookups per message).
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.input = ctx.input("data")?;
        self.output = ctx.output("data")?;
        Ok(())
    }

    /// Called once the input holds a message or has ended. Returning `Flow::Return` lets the
    /// runtime end this net when its producer has ended and the input is drained, or when its
    /// consumer has ended.
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if let Some(msg) = io.read(self.input) {
            for &b in msg.payload() {
                self.value = if self.fnv {
                    (self.value ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                } else {
                    self.value.wrapping_add(u64::from(b))
                };
            }
            self.messages += 1;
            // A refused write means the consumer ended; the runtime then ends this net too.
            let _ = io.write(self.output, msg);
        }
        Ok(Flow::Return)
    }

    /// Figures for the report (read after the last step).
    fn stats(&self) -> Vec<(String, serde_json::Value)> {
        vec![
            ("messages".into(), self.messages.into()),
            ("checksum".into(), format!("{:016x}", self.value).into()),
        ]
    }
}

/// Runs `Src.Sum.Snk` with `count` messages from a source seeded with `seed`.
pub fn run_example(count: u64, seed: u64) -> Result<Report, String> {
    let mut registry = Registry::builtin();
    registry.register(CHECKSUM);

    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let sum = net.add_box("Sum", "checksum", &[("data", true), ("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    net.connect(src, "data", sum, "data");
    net.connect(sum, "data", snk, "data");
    let graph = net.build();

    // Per-instance settings: every box starts from its spec's defaults; the source gets a
    // count and a seed (what `--set Src.count=...` does on the command line).
    let mut settings = Vec::new();
    for node in &graph.nodes {
        let spec = registry.get(&node.func).ok_or("unknown box")?;
        let mut box_config = BoxConfig::with_defaults(&node.label, spec)?;
        if node.label == "Src" {
            box_config.values.insert("count".into(), ConfigValue::Int(count));
            box_config.values.insert("seed".into(), ConfigValue::Int(seed));
        }
        settings.push(NetSettings {
            box_config,
            ..NetSettings::default()
        });
    }
    let opts = RunOptions {
        settings,
        ..RunOptions::default()
    };
    run(&graph, &registry, &opts).map_err(|e| e.to_string())
}

#[allow(dead_code)] // the example's tests include this file as a module and call run_example
fn main() {
    match run_example(100_000, 42) {
        Ok(report) => {
            print!("{}", text::render(&report));
            let exit = if report.failed() { 2 } else { 0 };
            std::process::exit(exit);
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
