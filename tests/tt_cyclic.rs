//! The cyclic executive (`--tt-mode cyclic`): boxes whose channels are all time-triggered at
//! one period run inside that period's firewall thread, once per tick. Periods are
//! milliseconds and every assertion is logical: in this mode the consumer reads in the same
//! pass that forwarded its message and the producer writes right after it, so the books are
//! exact whatever the machine's timing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use smx_lang::compose::{CompileOptions, compile};
use smx_lang::diag::SourceFile;
use smx_runtime::config::ConfigLayers;
use smx_runtime::report::{Report, Status};
use smx_runtime::{FirewallOptions, TtMode};
use smx_runtime::{RunOptions, run};

const DECLS: &str = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n";

fn run_cyclic(connect: &str, count: u64, stop: Option<Arc<AtomicBool>>) -> Report {
    let text = format!("{DECLS}connect {connect}\n");
    let compiled = compile(
        &SourceFile::new("cyclic.smx", text.as_str()),
        &CompileOptions::default(),
    );
    assert!(compiled.accepted(), "{:?}", compiled.diagnostics);
    let registry = smxrun::builtin_registry();
    let mut layers = ConfigLayers::new();
    layers.set_iterations(count);
    let mut opts = RunOptions {
        settings: layers.resolve(&compiled.graph, &registry).unwrap(),
        firewall: FirewallOptions {
            mode: TtMode::Cyclic,
            ..FirewallOptions::best_effort()
        },
        ..RunOptions::default()
    };
    if let Some(stop) = stop {
        opts.stop = stop;
    }
    run(&compiled.graph, &registry, &opts).expect("net runs")
}

fn received(report: &Report, net: &str) -> u64 {
    report.net(net).unwrap().stats.u64("received").unwrap()
}

#[test]
fn a_pair_runs_inside_its_firewall_thread_without_a_miss() {
    let report = run_cyclic("tt[3ms](Src.Snk)", 8, None);
    assert_eq!(report.status, Status::Ok, "{report:?}");
    let fws = &report.firewalls;
    assert_eq!(fws.len(), 1);
    let pair = &fws[0].pairs[0];
    // One message per tick, read in the pass that forwarded it: nothing to miss.
    assert_eq!(
        (pair.forwarded, pair.produce_misses, pair.consume_misses),
        (8, 0, 0),
        "{pair:?}"
    );
    let (src, snk) = (report.net("Src").unwrap(), report.net("Snk").unwrap());
    assert_eq!((src.loop_count, snk.loop_count), (8, 8));
    assert_eq!(received(&report, "Snk"), 8);
    assert_eq!(snk.stats.u64("gaps"), Some(0));
    // Both ran on the firewall's thread, so they report its placement.
    assert_eq!(src.core, fws[0].core);
    assert_eq!(snk.core, fws[0].core);
    let row = &report.channels[0];
    assert_eq!(
        (row.written, row.read, row.overwritten, row.left),
        (8, 8, 0, 0),
        "{row:?}"
    );
}

#[test]
fn three_pairs_share_one_executive() {
    let report = run_cyclic("tt[2ms](Src.Snk) | tt[2ms](Src.Snk) | tt[2ms](Src.Snk)", 5, None);
    assert_eq!(report.status, Status::Ok);
    let fws = &report.firewalls;
    assert_eq!(fws.len(), 1, "one thread per period in this mode");
    assert_eq!(fws[0].pairs.len(), 3);
    for p in &fws[0].pairs {
        assert_eq!((p.forwarded, p.produce_misses, p.consume_misses), (5, 0, 0), "{p:?}");
    }
}

#[test]
fn boxes_with_other_channels_keep_their_threads() {
    // The second pair is not time-triggered: it runs on threads next to the executive.
    let report = run_cyclic("tt[2ms](Src.Snk) | (Src.Snk)", 6, None);
    assert_eq!(report.status, Status::Ok);
    for snk in report.nets.iter().filter(|n| n.name == "Snk") {
        assert_eq!(snk.stats.u64("received"), Some(6), "{snk:?}");
    }
    let fws = &report.firewalls;
    assert_eq!(fws[0].pairs.len(), 1);
    assert_eq!(fws[0].pairs[0].forwarded, 6);
}

#[test]
fn half_time_triggered_edges_mix_an_executive_producer_with_a_threaded_consumer() {
    // Src is time-triggered on its side only: Src runs in the executive, Snk on a thread.
    // Snk's thread is scheduled by the machine, so on a loaded one it can miss a tick (the
    // firewall then overwrites); what is asserted is that every message is booked.
    let report = run_cyclic("tt[2ms](Src).Snk", 7, None);
    assert_eq!(report.status, Status::Ok);
    let row = &report.channels[0];
    assert_eq!(
        (row.written, row.written),
        (7, row.read + row.overwritten + row.dropped + row.left),
        "{row:?}"
    );
    assert_eq!(received(&report, "Snk"), row.read);
    let fws = &report.firewalls;
    let pair = &fws[0].pairs[0];
    assert_eq!(pair.forwarded, 7, "{pair:?}");
    assert_eq!(
        pair.produce_misses, 0,
        "the producer runs in the executive's pass, so even a late pass forwards its message"
    );
    assert_eq!(
        received(&report, "Snk") + pair.consume_misses,
        7,
        "a message Snk did not get is a consume miss: {pair:?}"
    );
}

#[test]
fn a_stop_ends_an_endless_source_and_everything_it_sent_arrives() {
    let stop = Arc::new(AtomicBool::new(false));
    let trigger = stop.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(40));
        trigger.store(true, Ordering::Relaxed);
    });
    // count 0: the source runs until it is stopped.
    let report = run_cyclic("tt[2ms](Src.Snk)", 0, Some(stop));
    stopper.join().unwrap();
    assert_eq!(report.status, Status::Stopped, "{report:?}");
    let sent = report.net("Src").unwrap().stats.u64("sent").unwrap();
    assert!(sent > 0);
    assert_eq!(received(&report, "Snk"), sent);
}
