//! Measures time-triggered nets against the platform floor, in the same run:
//! for each period, `probe` with and without spin, then `tt[T](Src.Snk)` with 1 and 3 pairs.
//!
//! `cargo run --release --example tt_measure -- TICKS PERIOD_US...`
//! (defaults: 100000 ticks at 10, 20, 40 and 100 us). Environment: `SPIN=off|auto|<dur>` for
//! the firewalls (default auto), `SHARDS=n` firewall threads per period (default: per core).

use std::time::Duration;

use smx_box::{BoxConfig, ConfigValue};
use smx_graph::{NetGraph, TimeSpec, Timing};
use smx_runtime::NetBuilder;
use smx_runtime::config::NetSettings;
use smx_runtime::{RunOptions, run};
use smx_timing::{LatenessSummary, ProbeOptions, Spin, probe};

fn tt_pairs(pairs: usize, period: Duration) -> NetGraph {
    let mut net = NetBuilder::new();
    for _ in 0..pairs {
        let s = net.add_box("Src", "smx_src_rand", &[("data", false)]);
        let k = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
        net.set_priority(s, 3);
        net.set_priority(k, 3);
        net.connect(s, "data", k, "data");
    }
    let mut graph = net.build();
    for e in &mut graph.edges {
        e.timing = Timing::TimeTriggered;
        let t = TimeSpec {
            secs: 0,
            nanos: period.as_nanos() as u64,
        };
        e.src_time = t;
        e.dst_time = t;
    }
    graph
}

fn row(us: u64, name: &str, misses: u64, rate: f64, l: LatenessSummary, extra: String) {
    println!(
        "{us:>5}us {name:>16} {misses:>8} {:>9.4} {:>8.1} {:>8.1} {:>8.1} {:>9.1}  {extra}",
        rate * 100.0,
        l.p50 as f64 / 1e3,
        l.p99 as f64 / 1e3,
        l.p999 as f64 / 1e3,
        l.max as f64 / 1e3,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ticks: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let mut periods: Vec<u64> = args.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    if periods.is_empty() {
        periods = vec![10, 20, 40, 100];
    }
    let spin = std::env::var("SPIN")
        .ok()
        .map(|s| Spin::parse(&s).expect("SPIN"))
        .unwrap_or(Spin::Auto);
    let shards: Option<usize> = std::env::var("SHARDS").ok().and_then(|s| s.parse().ok());
    println!(
        "clock source {}, {ticks} ticks per case, firewall spin {spin:?}",
        smx_timing::clock_source()
    );
    println!(
        "{:>7} {:>16} {:>8} {:>9} {:>8} {:>8} {:>8} {:>9}",
        "period", "case", "misses", "rate %", "p50 us", "p99 us", "p999 us", "max us"
    );
    let registry = smxrun::builtin_registry();
    for us in periods {
        let period = Duration::from_micros(us);
        for (name, s) in [("probe spin off", Spin::Off), ("probe spin auto", Spin::Auto)] {
            let r = probe(&ProbeOptions {
                period,
                ticks,
                spin: s,
                ..ProbeOptions::default()
            })
            .expect("probe");
            let extra = format!("rt={} spin={}ns", r.rt_priority_granted, r.spin_ns);
            row(us, name, r.misses, r.miss_rate, r.lateness_ns, extra);
        }
        for pairs in [1usize, 3] {
            let graph = tt_pairs(pairs, period);
            let settings: Vec<NetSettings> = graph
                .nodes
                .iter()
                .map(|n| {
                    let spec = registry.get(&n.func).expect("built-in box");
                    let mut c = BoxConfig::with_defaults(&n.label, spec).expect("defaults");
                    if n.func == "smx_src_rand" {
                        c.values.insert("count".into(), ConfigValue::Int(ticks));
                    }
                    NetSettings {
                        box_config: c,
                        ..NetSettings::default()
                    }
                })
                .collect();
            let mut opts = RunOptions {
                settings,
                ..RunOptions::default()
            };
            opts.firewall.spin = spin;
            opts.firewall.shards = shards;
            let report = run(&graph, &registry, &opts).expect("run");
            let fws = &report.firewalls;
            let (mut pm, mut cm, mut missed, mut overruns) = (0, 0, 0, 0);
            let mut worst = LatenessSummary::default();
            for f in fws {
                missed += f.missed_ticks * f.pairs.len() as u64;
                overruns += f.overruns;
                worst.p50 = worst.p50.max(f.lateness_ns.p50);
                worst.p99 = worst.p99.max(f.lateness_ns.p99);
                worst.p999 = worst.p999.max(f.lateness_ns.p999);
                worst.max = worst.max.max(f.lateness_ns.max);
                for p in &f.pairs {
                    pm += p.produce_misses;
                    cm += p.consume_misses;
                }
            }
            let misses = pm + cm + missed;
            let extra = format!(
                "produce={pm} consume={cm} fw_missed={missed} overruns={overruns} threads={} prio={:?} spin={}ns {}",
                fws.len(),
                fws.first().and_then(|f| f.priority),
                fws.first().map_or(0, |f| f.spin_ns),
                report.status.as_str()
            );
            let rate = misses as f64 / (pairs as u64 * ticks) as f64;
            row(us, &format!("smx {pairs} pair(s)"), misses, rate, worst, extra);
        }
    }
}
