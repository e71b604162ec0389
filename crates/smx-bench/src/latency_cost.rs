//! The cost of the report's latency figures: `Src.Snk` at channel lengths 1 and 64 with
//! `--latency off`, sampled (every Nth write) and full, side by side in one run.
//!
//! Rounds interleave the settings (in an order that rotates from round to round, so that no
//! setting always runs first after a pause) because this kind of machine drifts between
//! minutes; the cost is the ratio of the median rates, each against `off` of the same length.
//! Beside it, the same work on one thread without a channel (a write's stamp and a read's
//! sample, [`per_message_ns`]): the cost per message that the rates' noise can hide, as a share
//! of `Src.Snk`'s time per message with latency off, measured in the same run.

use std::time::Instant;

use smx_box::Message;
use smx_runtime::RunOptions;
use smx_runtime::latency::{DEFAULT_EVERY, InputLatency, LatencyMode, Stamper};

use super::Session;
use super::net::{self, Override};
use super::result::{BenchResult, Case, Run, Table};

pub const NET: &str = "Src = box smx_src_rand(out data)\nSnk = box smx_snk_null(in data)\nconnect Src.Snk\n";

/// The settings compared, in their table order.
pub fn modes() -> [LatencyMode; 3] {
    [LatencyMode::Off, LatencyMode::Sampled(DEFAULT_EVERY), LatencyMode::Full]
}

fn label(mode: LatencyMode) -> String {
    match mode {
        LatencyMode::Sampled(n) => format!("sampled/{n}"),
        other => other.name().to_string(),
    }
}

/// Adds the cost cases and their table to `result`.
pub fn run(count: u64, rounds: usize, session: &Session, result: &mut BenchResult) {
    let registry = crate::builtin_registry();
    let graph = match net::compile_net("latency-cost.smx", NET) {
        Ok(g) => g,
        Err(e) => {
            result.notes.push(e);
            return;
        }
    };
    let lens = [1u32, 64];
    let mut cases: Vec<Case> = lens
        .iter()
        .flat_map(|len| {
            modes().map(|m| {
                Case::new(
                    "latency-cost",
                    &[("channel_len", len.to_string()), ("latency", label(m))],
                )
            })
        })
        .collect();
    let per_len = modes().len();
    for round in 0..=rounds {
        for (li, &len) in lens.iter().enumerate() {
            for k in 0..per_len {
                let mi = (k + round) % per_len;
                let mode = modes()[mi];
                let n = if round == 0 { (count / 10).max(1) } else { count };
                let run = Run::unless_interrupted(|| one_run(&graph, &registry, len, mode, n));
                let case = &mut cases[li * per_len + mi];
                session.progress("latency-cost", case, round, rounds, &run, "rate");
                if round > 0 {
                    case.push(run);
                }
            }
        }
    }
    for (case, mode) in cases.iter_mut().zip(modes().into_iter().cycle()) {
        for _ in 0..rounds.max(1) {
            let mut run = Run::new();
            run.set(
                "added_ns_per_message",
                per_message_ns(mode, 1_000_000) - per_message_ns(LatencyMode::Off, 1_000_000),
            );
            case.push(run);
        }
    }
    result.settings.insert("cost_count".into(), count.to_string());
    result.settings.insert("cost_rounds".into(), rounds.to_string());
    result.tables.push(table(&cases, &lens));
    result.cases.extend(cases);
}

/// Nanoseconds per message of a sink's write stamp and read sample in `mode`, on this thread
/// alone (the fastest of a few passes of `n`).
pub fn per_message_ns(mode: LatencyMode, n: u64) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let mut stamper = Stamper::new(mode);
        let mut input = InputLatency::new(true);
        let mut msg = Message::now(0, b"12345678");
        let start = Instant::now();
        for _ in 0..n {
            stamper.stamp(&mut msg);
            input.note(std::hint::black_box(&msg));
        }
        best = best.min(start.elapsed().as_nanos() as f64 / n as f64);
        std::hint::black_box(input.channel.count());
    }
    best
}

fn one_run(graph: &smx_graph::NetGraph, registry: &smx_runtime::Registry, len: u32, mode: LatencyMode, n: u64) -> Run {
    let base = RunOptions {
        default_channel_len: Some(len),
        latency: mode,
        ..RunOptions::default()
    };
    let overrides = [Override::new("smx_src_rand", "count", n)];
    match net::run_graph_with(graph, registry, &overrides, base) {
        Err(e) => Run::failed(e),
        Ok(report) => {
            let mut run = Run::new();
            net::validate(&report, n, &mut run);
            let wall = net::nets_wall_s(&report);
            run.set("rate", if wall > 0.0 { n as f64 / wall } else { 0.0 });
            run.set("samples", report.channels[0].latency_ns.count as f64);
            run
        }
    }
}

/// How far apart a case's rates lie over its rounds, as a share of their median, in percent.
fn spread_pct(case: &Case) -> Option<f64> {
    let rate = case.summary.get("rate")?;
    (rate.median > 0.0).then(|| 100.0 * (rate.max - rate.min) / rate.median)
}

fn table(cases: &[Case], lens: &[u32]) -> Table {
    let mut t = Table::new(
        "latency cost: Src.Snk rate with the report's latency off, sampled and full (median over rounds; cost = 1 - \
         rate / rate with latency off; (noise): the cost lies within the spread of either mode's rates over the \
         rounds, so this machine did not measure it)",
        &[
            "channel len",
            "latency",
            "rate [M msg/s]",
            "samples",
            "cost (rates)",
            "added [ns/msg] (one thread)",
            "share of Src.Snk's ns/msg",
        ],
    );
    for len in lens {
        let lk = len.to_string();
        let find = |m: LatencyMode| {
            cases
                .iter()
                .find(|c| c.param("channel_len") == Some(lk.as_str()) && c.param("latency") == Some(label(m).as_str()))
        };
        let off_case = find(LatencyMode::Off);
        let off = off_case.and_then(|c| c.median("rate"));
        for m in modes() {
            let Some(case) = find(m) else { continue };
            let rate = case.median("rate");
            let cost = match (rate, off) {
                (Some(r), Some(o)) if o > 0.0 => {
                    let cost = 100.0 * (1.0 - r / o);
                    let spread = [Some(case), off_case]
                        .into_iter()
                        .flatten()
                        .filter_map(spread_pct)
                        .fold(0.0, f64::max);
                    match cost.abs() <= spread {
                        true => format!("{cost:+.1} % (noise)"),
                        false => format!("{cost:+.1} %"),
                    }
                }
                _ => "-".into(),
            };
            let added = case.median("added_ns_per_message");
            let share = match (added, off) {
                (Some(a), Some(o)) if o > 0.0 => format!("{:.1} %", 100.0 * a.max(0.0) * o / 1e9),
                _ => "-".into(),
            };
            t.row(vec![
                lk.clone(),
                label(m),
                rate.map(|r| format!("{:.2}", r / 1e6)).unwrap_or("-".into()),
                case.median("samples").map(|s| format!("{s:.0}")).unwrap_or("-".into()),
                cost,
                added.map(|a| format!("{:.1}", a.max(0.0))).unwrap_or("-".into()),
                share,
            ]);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(mode: LatencyMode, rates: &[f64]) -> Case {
        let mut case = Case::new(
            "latency-cost",
            &[("channel_len", "64".to_string()), ("latency", label(mode))],
        );
        for rate in rates {
            let mut run = Run::new();
            run.set("rate", *rate);
            case.push(run);
        }
        case
    }

    fn costs(cases: &[Case]) -> Vec<String> {
        table(cases, &[64]).rows.iter().map(|row| row[4].clone()).collect()
    }

    /// A cost smaller than the rounds' own spread (a negative one, above all) is marked as
    /// noise, not printed as a figure of the latency's price.
    #[test]
    fn a_cost_within_the_rounds_spread_is_marked_noise() {
        let cases = [
            case(LatencyMode::Off, &[10e6, 12e6, 14e6]),
            case(LatencyMode::Sampled(DEFAULT_EVERY), &[14.5e6, 15e6, 15.5e6]),
            case(LatencyMode::Full, &[6e6, 6e6, 6e6]),
        ];
        let costs = costs(&cases);
        assert_eq!(costs[1], "-25.0 % (noise)", "{costs:?}");
        assert_eq!(costs[2], "+50.0 %", "{costs:?}");
    }
}
