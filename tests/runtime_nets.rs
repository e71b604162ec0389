//! The shipped nets in `nets/`, compiled by the language front end and run with small counts.

use std::path::Path;

use smx_lang::compose::{CompileOptions, compile};
use smx_lang::diag::SourceFile;
use smx_runtime::FirewallOptions;
use smx_runtime::config::ConfigLayers;
use smx_runtime::report::{Report, Status};
use smx_runtime::{RunOptions, run};

const COUNT: u64 = 200;

fn run_net(file: &str) -> Report {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("nets").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut compiled = compile(&SourceFile::new(file, text), &CompileOptions::default());
    assert!(compiled.accepted(), "{file}: {:?}", compiled.diagnostics);
    // Behaviour only: no real-time scheduling on a shared test machine (a SCHED_FIFO thread
    // sharing a core with a spinning firewall could starve).
    for node in &mut compiled.graph.nodes {
        node.priority = 0;
    }
    let registry = smxrun::builtin_registry();
    let mut layers = ConfigLayers::new();
    layers.set_iterations(COUNT);
    let settings = layers.resolve(&compiled.graph, &registry).unwrap();
    let opts = RunOptions {
        settings,
        firewall: FirewallOptions {
            shards: Some(1),
            ..FirewallOptions::best_effort()
        },
        ..RunOptions::default()
    };
    let report = run(&compiled.graph, &registry, &opts).unwrap();
    assert_eq!(report.status, Status::Ok, "{file}");
    for c in &report.channels {
        assert_eq!(c.written, c.read + c.overwritten + c.dropped + c.left, "{file}: {c:?}");
    }
    report
}

fn received(report: &Report) -> Vec<u64> {
    report
        .nets
        .iter()
        .filter(|n| n.implementation == "smx_snk_null")
        .map(|n| n.stats.u64("received").unwrap())
        .collect()
}

#[test]
fn the_report_pair_nets_have_the_report_thread_counts() {
    for (file, threads) in [
        ("pairs_2.smx", 2),
        ("pairs_4.smx", 4),
        ("pairs_8.smx", 8),
        ("pairs_16.smx", 16),
        ("pairs_32.smx", 32),
    ] {
        let report = run_net(file);
        assert_eq!(report.nets.len(), threads, "{file}");
        assert_eq!(received(&report), vec![COUNT; threads / 2], "{file}");
        assert_eq!(report.messages, COUNT * threads as u64 / 2, "{file}");
    }
}

#[test]
fn chain_fan_out_and_fan_in() {
    let chain = run_net("chain.smx");
    assert_eq!(chain.nets.len(), 4);
    assert_eq!(received(&chain), vec![COUNT]);

    let fan_out = run_net("fan_out.smx");
    assert_eq!(fan_out.nets.iter().filter(|n| n.kind == "routing_node").count(), 1);
    assert_eq!(received(&fan_out), vec![COUNT, COUNT]);

    let fan_in = run_net("fan_in.smx");
    assert_eq!(fan_in.nets.iter().filter(|n| n.kind == "routing_node").count(), 1);
    assert_eq!(received(&fan_in), vec![2 * COUNT]);
}

#[test]
fn src_snk_runs_its_time_triggered_and_its_plain_pair() {
    let report = run_net("src_snk.smx");
    assert_eq!(
        report
            .nets
            .iter()
            .filter(|n| n.implementation == "smx_src_rand")
            .count(),
        2
    );
    let got = received(&report);
    assert_eq!(got.len(), 2);
    assert!(got.contains(&COUNT), "the plain pair delivers everything: {got:?}");
}
