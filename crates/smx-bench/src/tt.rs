//! Experiment 2, the report's time-triggered runs: deadline misses per period and pair count.
//!
//! For each period the platform floor is measured first ([`smx_timing::probe`]: an empty
//! loop released by the same timer method at the same period and tick count), then the report's
//! nets: `connect tt[T](Src.Snk)` for one pair and `A = tt[T](Src.Snk); B = A|A|A` for three.
//! Each source sends `ticks` messages. Misses come from the firewall accounting in the run's
//! report: produce misses plus consume misses over all pairs, plus, for each tick the firewall
//! itself missed (released so late that a whole period was lost), one miss per pair it serves,
//! the same way the probe counts its own missed ticks. The **miss rate** is misses over the
//! deadlines that came due (each pair's ticks served plus ticks lost while it was served; at
//! least `pairs * ticks`), in percent. Lateness is the firewall's release lateness.
//! What the runtime misses beyond the floor is the runtime's doing. Each configuration runs in
//! both time-triggered modes (`--tt-mode threads` and `cyclic`) unless `--modes` says otherwise.
//!
//! The warm-up is a short run (1,000 ticks) per configuration, not a full one: its purpose is
//! to fault in code and stacks, and a full warm-up would double an already long experiment.
//! The runs are interleaved round by round (probe, then each configuration), so that the floor
//! and the runtime see the same machine.

use std::time::Duration;

use smx_runtime::Registry;
use smx_runtime::RunOptions;
use smx_runtime::report::FirewallReport;
use smx_runtime::{FirewallOptions, TtMode};
use smx_timing::{ProbeOptions, probe};

use super::Session;
use super::args::{TtArgs, or_default, pick};
use super::net::{self, Override};
use super::plot::{Chart, Point, Series};
use super::result::{BenchResult, Case, Run, Table};

const WARMUP_TICKS: u64 = 1_000;

/// A time literal for a period (`10us`, `1ms`, `1500ns`).
pub fn literal(period: Duration) -> String {
    let ns = period.as_nanos();
    if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// The report's net for `pairs` time-triggered pairs at `period`.
pub fn net_text(period: Duration, pairs: usize) -> String {
    let head = "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n";
    let t = literal(period);
    if pairs <= 1 {
        format!("{head}connect tt[{t}](Src.Snk)\n")
    } else {
        format!(
            "{head}A = tt[{t}](Src.Snk)\nB = {}\nconnect B\n",
            vec!["A"; pairs].join("|")
        )
    }
}

pub fn run(args: &TtArgs, session: &mut Session) -> BenchResult {
    let quick = session.quick;
    let periods = or_default(
        &args.periods,
        quick,
        &[Duration::from_micros(100), Duration::from_millis(1)],
        &[10, 20, 40, 100].map(Duration::from_micros),
    );
    let pairs = or_default(&args.pairs, quick, &[1, 3], &[1, 3]);
    let ticks = pick(args.ticks, quick, 2_000, 100_000).max(1);
    let modes = if args.modes.is_empty() {
        vec![TtMode::Threads, TtMode::Cyclic]
    } else {
        args.modes.clone()
    };
    let runs = session.runs(1, 3);
    let mut result = session.start("tt");
    let literals: Vec<String> = periods.iter().map(|p| literal(*p)).collect();
    for (k, v) in [
        ("periods", literals.join(",")),
        ("pairs", format!("{pairs:?}")),
        ("ticks", ticks.to_string()),
        (
            "modes",
            modes.iter().map(|m| mode_name(*m)).collect::<Vec<_>>().join(","),
        ),
        ("runs", runs.to_string()),
        ("warmup_ticks", WARMUP_TICKS.min(ticks).to_string()),
    ] {
        result.settings.insert(k.into(), v);
    }
    let registry = crate::builtin_registry();
    for &period in &periods {
        let period_us = format!("{}", period.as_nanos() as f64 / 1e3);
        let mut floor = Case::new("probe", &[("period_us", period_us.clone())]);
        // (case, compiled net, pairs, mode) per configuration of this period.
        let mut configs = Vec::new();
        for &p in &pairs {
            for &mode in &modes {
                let mut case = Case::new(
                    "smx",
                    &[
                        ("period_us", period_us.clone()),
                        ("pairs", p.to_string()),
                        ("mode", mode_name(mode).to_string()),
                    ],
                );
                match net::compile_net(&format!("tt-{}-{p}.smx", literal(period)), &net_text(period, p)) {
                    Err(e) => {
                        case.push(Run::failed(e));
                        result.cases.push(case);
                    }
                    Ok(graph) => configs.push((case, graph, p, mode)),
                }
            }
        }
        // Round by round, the floor first and then every configuration, so that a change in
        // the machine's behaviour during the experiment hits the floor and the runtime alike.
        for i in 0..=runs {
            let n = if i == 0 { WARMUP_TICKS.min(ticks) } else { ticks };
            let run = Run::with_steal(|| probe_run(period, n));
            session.progress("tt", &floor, i, runs, &run, "miss_rate_pct");
            if i > 0 {
                floor.push(run);
            }
            for (case, graph, p, mode) in configs.iter_mut() {
                let run = Run::with_steal(|| smx_run(graph, &registry, n, *p, *mode));
                session.progress("tt", case, i, runs, &run, "miss_rate_pct");
                if i > 0 {
                    case.push(run);
                }
            }
        }
        result.cases.push(floor);
        result.cases.extend(configs.into_iter().map(|(case, ..)| case));
    }
    result.tables.push(table(&result, &periods, &pairs, &modes));
    result
}

/// One run of `smxrun probe` at `period` for `ticks`, scheduled as the probe schedules itself by
/// default (as a lone executive would be).
pub(super) fn probe_run(period: Duration, ticks: u64) -> Run {
    let opts = ProbeOptions {
        period,
        ticks,
        ..ProbeOptions::default()
    };
    match probe(&opts) {
        Err(e) => Run::failed(e),
        Ok(p) => {
            let mut run = Run::new();
            run.set("ticks", p.ticks as f64)
                .set("misses", p.misses as f64)
                .set("miss_rate_pct", 100.0 * p.miss_rate)
                .set("lateness_p50_ns", p.lateness_ns.p50 as f64)
                .set("lateness_p99_ns", p.lateness_ns.p99 as f64)
                .set("lateness_p999_ns", p.lateness_ns.p999 as f64)
                .set("lateness_max_ns", p.lateness_ns.max as f64)
                .set("wall_s", p.wall.as_secs_f64())
                .set("rt_granted", if p.rt_priority_granted { 1.0 } else { 0.0 })
                .set(SPUN_THROUGH, if p.spun_through { 1.0 } else { 0.0 })
                .set(SPIN_NS, p.spin_ns as f64);
            run
        }
    }
}

/// A probe run's metrics of how its loop waited for each tick: whether it spun through every
/// period, and the spin before each release after a sleep (0: it slept up to the release).
const SPUN_THROUGH: &str = "spun_through";
const SPIN_NS: &str = "spin_ns";

/// How the floor's loop waited for its ticks, which the probe picks by the period: a floor that
/// spins misses less than one that sleeps, and a reader comparing periods must know which.
fn floor_waits(floor: Option<&Case>) -> String {
    let Some(floor) = floor else {
        return "-".into();
    };
    match (floor.median(SPUN_THROUGH), floor.median(SPIN_NS)) {
        (Some(spun), _) if spun >= 0.5 => "spins".into(),
        (Some(_), Some(spin)) if spin > 0.0 => format!("sleeps, spins the last {:.0} us", spin / 1e3),
        (Some(_), _) => "sleeps".into(),
        _ => "-".into(),
    }
}

/// The name of a mode as `--tt-mode` spells it.
pub fn mode_name(mode: TtMode) -> &'static str {
    match mode {
        TtMode::Auto => "auto",
        TtMode::Threads => "threads",
        TtMode::Cyclic => "cyclic",
    }
}

fn smx_run(graph: &smx_graph::NetGraph, registry: &Registry, ticks: u64, pairs: usize, mode: TtMode) -> Run {
    let overrides = [Override::new("smx_src_rand", "count", ticks)];
    let base = RunOptions {
        firewall: FirewallOptions {
            mode,
            ..FirewallOptions::default()
        },
        ..RunOptions::default()
    };
    let report = match net::run_graph_with(graph, registry, &overrides, base) {
        Ok(r) => r,
        Err(e) => return Run::failed(e),
    };
    let mut run = Run::new();
    if report.status != smx_runtime::report::Status::Ok {
        run.invalidate(format!("run status {}", report.status.as_str()));
    }
    if report.firewalls.is_empty() {
        run.invalidate("the report has no temporal firewall: the net did not run time-triggered");
    }
    let totals = firewall_totals(&report.firewalls);
    if totals.pairs != pairs as u64 {
        run.invalidate(format!("the firewalls serve {} pairs, expected {pairs}", totals.pairs));
    }
    let misses = totals.produce_misses + totals.consume_misses + totals.missed_tick_misses;
    // Deadlines that came due: every tick a pair was served plus every tick lost while it was
    // (a run whose producers fall behind lasts longer than `ticks` periods).
    let opportunities = totals.due.max(pairs as u64 * ticks).max(1);
    run.set("ticks", totals.ticks as f64)
        .set("wall_s", net::nets_wall_s(&report))
        .set("forwarded", totals.forwarded as f64)
        .set("produce_misses", totals.produce_misses as f64)
        .set("consume_misses", totals.consume_misses as f64)
        .set("missed_tick_misses", totals.missed_tick_misses as f64)
        .set("overruns", totals.overruns as f64)
        .set("misses", misses as f64)
        .set("miss_rate_pct", 100.0 * misses as f64 / opportunities as f64)
        .set("messages", report.messages as f64)
        .set("lateness_p50_ns", totals.lateness[0])
        .set("lateness_p99_ns", totals.lateness[1])
        .set("lateness_p999_ns", totals.lateness[2])
        .set("lateness_max_ns", totals.lateness[3]);
    run
}

/// Sums of the firewall accounting over every firewall and pair of a report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FirewallTotals {
    pub ticks: u64,
    pub overruns: u64,
    pub pairs: u64,
    /// Deadlines that came due over all pairs: ticks served plus ticks lost while served.
    pub due: u64,
    pub forwarded: u64,
    pub produce_misses: u64,
    pub consume_misses: u64,
    /// Ticks the firewalls lost (released a whole period late or later), counted per pair
    /// served at the time.
    pub missed_tick_misses: u64,
    /// The worst firewall's p50, p99, p99.9 and max lateness in ns.
    pub lateness: [f64; 4],
}

/// Reads the report's `firewalls` objects (the documented JSON shape).
pub fn firewall_totals(firewalls: &[FirewallReport]) -> FirewallTotals {
    let mut t = FirewallTotals::default();
    for fw in firewalls {
        t.ticks = t.ticks.max(fw.ticks);
        t.overruns += fw.overruns;
        let l = &fw.lateness_ns;
        for (slot, v) in t.lateness.iter_mut().zip([l.p50, l.p99, l.p999, l.max]) {
            *slot = slot.max(v as f64);
        }
        for pair in &fw.pairs {
            t.pairs += 1;
            t.forwarded += pair.forwarded;
            t.produce_misses += pair.produce_misses;
            t.consume_misses += pair.consume_misses;
            t.missed_tick_misses += pair.missed_ticks;
            t.due += pair.ticks + pair.missed_ticks;
        }
    }
    t
}

/// The runtime's median miss rate as a multiple of the floor's (`-` without a floor, `inf`
/// when the floor missed nothing and the runtime did).
fn ratio_to_floor(case: &Case, floor: Option<&Case>) -> String {
    let median = |c: &Case| c.summary.get("miss_rate_pct").map(|s| s.median);
    match (median(case), floor.and_then(median)) {
        (Some(r), Some(f)) if f > 0.0 => format!("{:.2}x", r / f),
        (Some(r), Some(_)) if r > 0.0 => "inf".into(),
        (Some(_), Some(_)) => "1.00x".into(),
        _ => "-".into(),
    }
}

fn us(case: Option<&Case>, metric: &str) -> String {
    case.map(|c| c.cell(metric, 1e-3, 1)).unwrap_or_else(|| "-".into())
}

pub fn table(result: &BenchResult, periods: &[Duration], pairs: &[usize], modes: &[TtMode]) -> Table {
    let mut t = Table::new(
        "tt: deadline misses per period (median (min-max) of the valid runs; rate = misses per deadline due)",
        &[
            "period",
            "pairs",
            "mode",
            "misses",
            "vs floor",
            "miss rate [%]",
            "floor misses",
            "floor rate [%]",
            "floor waits",
            "lateness p50 [us]",
            "p99 [us]",
            "p99.9 [us]",
            "max [us]",
            "floor p99 [us]",
            "floor max [us]",
        ],
    );
    for period in periods {
        let key = format!("{}", period.as_nanos() as f64 / 1e3);
        let floor = result.find("probe", &[("period_us", key.as_str())]);
        for p in pairs {
            for mode in modes {
                let pk = p.to_string();
                let params = [
                    ("period_us", key.as_str()),
                    ("pairs", pk.as_str()),
                    ("mode", mode_name(*mode)),
                ];
                let Some(case) = result.find("smx", &params) else {
                    continue;
                };
                t.row(vec![
                    literal(*period),
                    case.label(p),
                    mode_name(*mode).to_string(),
                    case.cell("misses", 1.0, 0),
                    ratio_to_floor(case, floor),
                    case.cell("miss_rate_pct", 1.0, 4),
                    floor.map(|f| f.cell("misses", 1.0, 0)).unwrap_or_else(|| "-".into()),
                    floor
                        .map(|f| f.cell("miss_rate_pct", 1.0, 4))
                        .unwrap_or_else(|| "-".into()),
                    floor_waits(floor),
                    us(Some(case), "lateness_p50_ns"),
                    us(Some(case), "lateness_p99_ns"),
                    us(Some(case), "lateness_p999_ns"),
                    us(Some(case), "lateness_max_ns"),
                    us(floor, "lateness_p99_ns"),
                    us(floor, "lateness_max_ns"),
                ]);
            }
        }
    }
    t
}

/// Miss rate vs period: one line per pair count, the probe's floor as a reference line.
pub fn charts(result: &BenchResult) -> Vec<(String, Chart)> {
    let point = |c: &Case| {
        let s = c.summary.get("miss_rate_pct")?;
        Some(Point {
            x: c.param_f64("period_us")?,
            y: s.median,
            y_min: s.min,
            y_max: s.max,
        })
    };
    let mut lines: Vec<(String, String)> = result
        .cases
        .iter()
        .filter(|c| c.series == "smx")
        .filter_map(|c| {
            Some((
                c.param("pairs")?.to_string(),
                c.param("mode").unwrap_or("threads").to_string(),
            ))
        })
        .collect();
    lines.sort_by_key(|(p, m)| (p.parse::<usize>().unwrap_or(0), m.clone()));
    lines.dedup();
    let mut series: Vec<Series> = lines
        .iter()
        .map(|(p, m)| Series {
            name: format!("smx {m}, {p} pair(s)"),
            points: result
                .cases
                .iter()
                .filter(|c| {
                    c.series == "smx"
                        && c.param("pairs") == Some(p.as_str())
                        && c.param("mode").unwrap_or("threads") == m.as_str()
                })
                .filter_map(point)
                .collect(),
            reference: false,
        })
        .collect();
    series.push(Series {
        name: "platform floor (probe)".into(),
        points: result
            .cases
            .iter()
            .filter(|c| c.series == "probe")
            .filter_map(point)
            .collect(),
        reference: true,
    });
    series.retain(|s| !s.points.is_empty());
    vec![(
        "tt_miss_rate_vs_period.svg".into(),
        Chart {
            title: "Deadline-miss rate vs period".into(),
            x_label: "period [us] (log)".into(),
            y_label: "misses per deadline due [%] (log)".into(),
            series,
            log_y: true,
            log_x: true,
        },
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use smx_runtime::report::PairReport;
    use smx_timing::LatenessSummary;

    #[test]
    fn period_literals_and_nets() {
        assert_eq!(literal(Duration::from_micros(10)), "10us");
        assert_eq!(literal(Duration::from_millis(1)), "1ms");
        assert_eq!(literal(Duration::from_nanos(1500)), "1500ns");
        assert_eq!(literal(Duration::from_secs(2)), "2s");
        assert!(net_text(Duration::from_micros(20), 1).ends_with("connect tt[20us](Src.Snk)\n"));
        assert!(net_text(Duration::from_micros(20), 3).ends_with("A = tt[20us](Src.Snk)\nB = A|A|A\nconnect B\n"));
    }

    /// The table says how the floor waited at each period, as the probe chose.
    #[test]
    fn the_floor_says_how_it_waited() {
        let floor = |spun: f64, spin_ns: f64| {
            let mut case = Case::new("probe", &[("period_us", "10".to_string())]);
            let mut run = Run::new();
            run.set(SPUN_THROUGH, spun).set(SPIN_NS, spin_ns);
            case.push(run);
            case
        };
        assert_eq!(floor_waits(Some(&floor(1.0, 0.0))), "spins");
        assert_eq!(floor_waits(Some(&floor(0.0, 50_000.0))), "sleeps, spins the last 50 us");
        assert_eq!(floor_waits(Some(&floor(0.0, 0.0))), "sleeps");
        assert_eq!(floor_waits(None), "-");
    }

    #[test]
    fn firewall_totals_sum_pairs_and_keep_the_worst_lateness() {
        let pair = |forwarded, produce_misses, consume_misses, missed_ticks, ticks| PairReport {
            producer: "Src".into(),
            consumer: "Snk".into(),
            ticks,
            forwarded,
            produce_misses,
            produce_misses_before_first: 0,
            consume_misses,
            missed_ticks,
            firewall_ns: Default::default(),
            consume_misses_by_shape: false,
            produce_misses_by_shape: false,
        };
        let firewall = |missed_ticks, overruns, [p50, p99, p999, max]: [u64; 4], pairs| FirewallReport {
            name: "tf".into(),
            clock_source: "tsc".into(),
            period_ns: 10_000,
            ticks: 100,
            missed_ticks,
            overruns,
            lateness_ns: LatenessSummary { p50, p99, p999, max },
            priority: None,
            core: None,
            spin_ns: 0,
            pairs,
        };
        let fws = [
            firewall(3, 2, [5, 50, 70, 90], vec![pair(98, 1, 1, 3, 97), pair(97, 3, 0, 3, 0)]),
            firewall(0, 0, [9, 40, 80, 60], vec![pair(100, 0, 0, 0, 0)]),
        ];
        let t = firewall_totals(&fws);
        assert_eq!((t.ticks, t.overruns, t.pairs, t.forwarded), (100, 2, 3, 295));
        assert_eq!((t.produce_misses, t.consume_misses), (4, 1));
        // 3 ticks lost by the firewall while serving two pairs: 6 missed deadlines.
        assert_eq!(t.missed_tick_misses, 6);
        assert_eq!(t.due, 97 + 3 + 3);
        assert_eq!(t.lateness, [9.0, 50.0, 80.0, 90.0]);
        assert_eq!(firewall_totals(&[]), FirewallTotals::default());
    }
}
