//! A user box written in Rust against `smx-box` alone, registered next to the built-in boxes
//! and run in a net: what `examples/user_box.rs` showed before the workspace move.
//!
//! The example file went away with the move (a crate of boxes in `examples/` is to replace it);
//! until that crate exists, its box is kept here, ported to the declared-ports API, so that CI
//! still runs a box written the way a user writes one.

use smx_box::prelude::*;
use smx_runtime::NetBuilder;
use smx_runtime::config::NetSettings;
use smx_runtime::report::{Report, Status};
use smx_runtime::{RunOptions, run};

mod user_box {
    use super::*;

    /// `checksum(in data, out data)`: forwards every message unchanged and folds the payload
    /// bytes into a checksum, reported in the run's report.
    pub const CHECKSUM: BoxSpec = BoxSpec::named("checksum")
        .summary("forwards messages and reports a checksum of their payloads")
        .inputs(&[PortSpec::new("data").help("messages in")])
        .outputs(&[PortSpec::new("data").help("the same messages out")])
        .config(&[ConfigKey::choice("algorithm", &["fnv1a", "sum"])
            .default_value("fnv1a")
            .help("how bytes are folded")])
        .create(create_checksum);

    const INPUT: InPort = InPort(0);
    const OUTPUT: OutPort = OutPort(0);

    /// Reads the validated configuration (defaults already filled in) and builds the state.
    fn create_checksum(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(Checksum {
            fnv: config.str("algorithm")? == "fnv1a",
            value: 0xcbf2_9ce4_8422_2325,
            messages: 0,
        }))
    }

    struct Checksum {
        fnv: bool,
        value: u64,
        messages: u64,
    }

    impl BoxImpl for Checksum {
        /// Called once the input holds a message or has ended. Returning `Flow::Return` lets
        /// the runtime end this net when its producer has ended and the input is drained, or
        /// when its consumer has ended.
        fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
            if let Some(msg) = io.read(INPUT) {
                for &b in msg.payload() {
                    self.value = if self.fnv {
                        (self.value ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                    } else {
                        self.value.wrapping_add(u64::from(b))
                    };
                }
                self.messages += 1;
                // A refused write means the consumer ended; the runtime then ends this net too.
                let _ = io.write(OUTPUT, msg);
            }
            Ok(Flow::Return)
        }

        /// Figures for the report (read after the last step).
        fn stats(&self) -> Stats {
            Stats::new()
                .with("messages", self.messages)
                .with("checksum", format!("{:016x}", self.value))
        }
    }

    /// Runs `Src.Sum.Snk` with `count` messages from a source seeded with `seed`.
    pub fn run_example(count: u64, seed: u64) -> Result<Report, String> {
        let mut registry = smxrun::builtin_registry();
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
}

fn checksum(report: &Report) -> String {
    match report.net("Sum").unwrap().stats.get("checksum") {
        Some(StatValue::Text(text)) => text.clone(),
        other => panic!("no checksum text: {other:?}"),
    }
}

#[test]
fn the_user_box_example_runs_and_its_box_reports() {
    let report = user_box::run_example(2_000, 7).unwrap();
    assert_eq!(report.status, Status::Ok);
    let sum = report.net("Sum").unwrap();
    assert_eq!(sum.implementation, "checksum");
    assert_eq!(sum.stats.u64("messages"), Some(2_000));
    assert_eq!(report.net("Snk").unwrap().stats.u64("received"), Some(2_000));
    // Same seed, same bytes, same checksum; another seed, another checksum.
    assert_eq!(checksum(&report), checksum(&user_box::run_example(2_000, 7).unwrap()));
    assert_ne!(checksum(&report), checksum(&user_box::run_example(2_000, 8).unwrap()));
}
