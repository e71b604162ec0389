//! Experiment 4: one-way latency through a chain `Src.F.F...F.Snk`, per hop count and size.
//!
//! Hops are `smx_fwd` boxes between the bench's timed source and recording sink (see
//! [`super::latency_boxes`]: one message in flight, the payload written fresh by the source and
//! read completely by the sink, both ends stamped by the same monotonic clock). Each run
//! records every message's latency; a run's figures are its nearest-rank percentiles, and the
//! table shows the median over runs. The latency added per hop is the slope of a least-squares
//! line through the per-hop-count medians (of p50, and of p99), with its r²: a straight line
//! means each hop costs the same, a poor r² says the chain does something else.
//!
//! Every sample includes one clock read, whose cost is in the machine header.

use smx_runtime::Registry;

use super::Session;
use super::args::{LatencyArgs, or_default, pick};
use super::latency_boxes::{drop_probe, new_probe, registry};
use super::net::{self, Override};
use super::plot::{Chart, Point, Series};
use super::result::{BenchResult, Case, Run, Table};
use super::stats::{LinearFit, Percentiles};

const WARMUP_COUNT: u64 = 500;

/// The chain with `hops` forwarding boxes. The forwarder's ports carry explicit classes
/// (`up in`, `down out`): a box with an unclassed `in data` and `out data` is connected to
/// itself as a feedback loop by the language's self-loop rule.
pub fn net_text(hops: usize) -> String {
    let mut chain = vec!["Src"];
    chain.extend(std::iter::repeat_n("F", hops));
    chain.push("Snk");
    format!(
        "Src = extern box bench_src_timed( out data )\nF = box smx_fwd( up in data, down out data )\n\
         Snk = box bench_snk_latency( in data )\nconnect {}\n",
        chain.join(".")
    )
}

const PERCENTILE_METRICS: [(&str, &str); 5] = [
    ("p50", "latency_p50_ns"),
    ("p90", "latency_p90_ns"),
    ("p99", "latency_p99_ns"),
    ("p99.9", "latency_p999_ns"),
    ("max", "latency_max_ns"),
];

pub fn run(args: &LatencyArgs, session: &mut Session) -> BenchResult {
    let quick = session.quick;
    let hops = or_default(&args.hops, quick, &[0, 1, 2, 4], &[0, 1, 2, 4, 8]);
    let sizes = or_default(&args.size, quick, &[8, 1024, 8192], &[8, 1024, 8192]);
    let count = pick(args.count, quick, 1_000, 20_000).max(1);
    let runs = session.runs(1, 3);
    let mut result = session.start("latency");
    for (k, v) in [
        ("hops", format!("{hops:?}")),
        ("sizes", format!("{sizes:?}")),
        ("count", count.to_string()),
        ("runs", runs.to_string()),
        ("warmup_count", WARMUP_COUNT.min(count).to_string()),
        ("in_flight", "1".to_string()),
    ] {
        result.settings.insert(k.into(), v);
    }
    let cost_count = pick(args.cost_count, quick, 100_000, 2_000_000);
    if cost_count > 0 {
        let rounds = args.cost_rounds.unwrap_or(if quick { 1 } else { 5 });
        super::latency_cost::run(cost_count, rounds, session, &mut result);
    }
    if args.cost_only {
        return result;
    }
    let registry = registry();
    for &size in &sizes {
        for &h in &hops {
            let params = [("hops", h.to_string()), ("size", size.to_string())];
            let mut case = Case::new("smx", &params);
            let mut raw = Case::new("raw", &params);
            match net::compile_net(&format!("latency-{h}.smx"), &net_text(h)) {
                Err(e) => case.push(Run::failed(e)),
                Ok(graph) => {
                    // smx and its raw peer alternate, so that both see the same minutes.
                    for i in 0..=runs {
                        let n = if i == 0 { WARMUP_COUNT.min(count) } else { count };
                        let run = Run::unless_interrupted(|| one_run(&graph, &registry, n, size));
                        session.progress("latency", &case, i, runs, &run, "latency_p50_ns");
                        let peer = Run::unless_interrupted(|| raw_run(h, size, n));
                        session.progress("latency", &raw, i, runs, &peer, "latency_p50_ns");
                        if i > 0 {
                            case.push(run);
                            raw.push(peer);
                        }
                    }
                }
            }
            result.cases.push(case);
            result.cases.push(raw);
        }
    }
    result.tables.push(percentile_table(&result, &sizes, &hops));
    result.tables.push(fit_table(&result, &sizes));
    if let Some(note) = poor_fits(&result, &sizes) {
        result.notes.push(note);
    }
    result
}

fn one_run(graph: &smx_graph::NetGraph, registry: &Registry, count: u64, size: usize) -> Run {
    let (id, probe) = new_probe();
    let overrides = [
        Override::new("bench_src_timed", "count", count),
        Override::new("bench_src_timed", "size", size),
        Override::new("bench_src_timed", "run", id),
        Override::new("bench_snk_latency", "run", id),
    ];
    let outcome = net::run_graph(graph, registry, &overrides, None);
    drop_probe(id);
    let report = match outcome {
        Ok(r) => r,
        Err(e) => return Run::failed(e),
    };
    let (mut samples, out_of_order) = probe.take();
    let mut run = Run::new();
    net::validate(&report, count, &mut run);
    if samples.len() as u64 != count {
        run.invalidate(format!("{} of {count} latencies recorded", samples.len()));
    }
    if out_of_order > 0 {
        run.invalidate(format!("{out_of_order} messages arrived out of order"));
    }
    set_percentiles(&mut run, &mut samples);
    run
}

/// One run of the raw peer ([`super::latency_raw`]).
fn raw_run(hops: usize, size: usize, count: u64) -> Run {
    let mut samples = super::latency_raw::run(hops, size, count);
    let mut run = Run::new();
    if samples.len() as u64 != count {
        run.invalidate(format!("{} of {count} latencies recorded", samples.len()));
    }
    set_percentiles(&mut run, &mut samples);
    run
}

fn set_percentiles(run: &mut Run, samples: &mut [u64]) {
    match Percentiles::of(samples) {
        None => run.invalidate("no latency recorded"),
        Some(p) => {
            run.set("messages", p.count as f64).set("latency_min_ns", p.min as f64);
            for ((_, metric), (_, value)) in PERCENTILE_METRICS.iter().zip(p.labelled()) {
                run.set(metric, value as f64);
            }
            let mean = samples.iter().map(|&s| s as f64).sum::<f64>() / samples.len() as f64;
            run.set("latency_mean_ns", mean);
        }
    }
}

pub fn percentile_table(result: &BenchResult, sizes: &[usize], hops: &[usize]) -> Table {
    let mut t = Table::new(
        "latency: one-way, one message in flight (median over runs of each run's percentile; microseconds); raw = \
         plain threads joined by rtrb rings",
        &["size [B]", "hops", "chain", "p50", "p90", "p99", "p99.9", "max"],
    );
    for size in sizes {
        for h in hops {
            let (sk, hk) = (size.to_string(), h.to_string());
            for series in ["smx", "raw"] {
                let Some(case) = result.find(series, &[("size", sk.as_str()), ("hops", hk.as_str())]) else {
                    continue;
                };
                let mut row = vec![sk.clone(), case.label(h), series.to_string()];
                row.extend(PERCENTILE_METRICS.iter().map(|(_, m)| {
                    case.median(m)
                        .map(|v| format!("{:.1}", v / 1e3))
                        .unwrap_or_else(|| "-".into())
                }));
                t.row(row);
            }
        }
    }
    t
}

/// The line through (hops, median percentile) for one size.
pub fn fit(result: &BenchResult, series: &str, size: usize, metric: &str) -> Option<LinearFit> {
    let sk = size.to_string();
    let (xs, ys): (Vec<f64>, Vec<f64>) = result
        .cases
        .iter()
        .filter(|c| c.series == series && c.param("size") == Some(sk.as_str()))
        .filter_map(|c| Some((c.param_f64("hops")?, c.median(metric)?)))
        .unzip();
    LinearFit::fit(&xs, &ys)
}

pub fn fit_table(result: &BenchResult, sizes: &[usize]) -> Table {
    let mut t = Table::new(
        "latency added per hop (least-squares line through the medians over hop counts)",
        &[
            "size [B]",
            "chain",
            "p50 per hop [us]",
            "p50 at 0 hops, fitted [us]",
            "r² (p50)",
            "p99 per hop [us]",
            "r² (p99)",
        ],
    );
    for &size in sizes {
        for series in ["smx", "raw"] {
            let p50 = fit(result, series, size, "latency_p50_ns");
            let p99 = fit(result, series, size, "latency_p99_ns");
            let f =
                |v: Option<f64>, scale: f64, d: usize| v.map(|v| format!("{:.*}", d, v * scale)).unwrap_or("-".into());
            t.row(vec![
                size.to_string(),
                series.to_string(),
                f(p50.map(|x| x.slope), 1e-3, 2),
                f(p50.map(|x| x.intercept), 1e-3, 2),
                f(p50.map(|x| x.r_squared), 1.0, 3),
                f(p99.map(|x| x.slope), 1e-3, 2),
                f(p99.map(|x| x.r_squared), 1.0, 3),
            ]);
        }
    }
    t
}

/// Below this r² a line through the medians does not describe them.
const POOR_FIT: f64 = 0.5;

/// A note naming the per-hop figures that describe nothing: a slope below zero (latency that
/// fell as hops were added) or a line that explains less than [`POOR_FIT`] of the spread.
pub fn poor_fits(result: &BenchResult, sizes: &[usize]) -> Option<String> {
    let mut poor = Vec::new();
    for &size in sizes {
        for series in ["smx", "raw"] {
            for (metric, name) in [("latency_p50_ns", "p50"), ("latency_p99_ns", "p99")] {
                let Some(f) = fit(result, series, size, metric) else {
                    continue;
                };
                if f.slope < 0.0 || f.r_squared < POOR_FIT {
                    poor.push(format!("{series} {name} at {size} B (r² {:.2})", f.r_squared));
                }
            }
        }
    }
    (!poor.is_empty()).then(|| {
        format!(
            "per-hop figures that describe nothing: {}: their latency did not grow along a line as hops were \
             added (noise of this machine, or a chain that does something else); read the table of medians instead",
            poor.join(", ")
        )
    })
}

/// One chart per size: p50, p90, p99, p99.9 vs hops, on a log axis.
pub fn charts(result: &BenchResult) -> Vec<(String, Chart)> {
    let mut sizes: Vec<usize> = result
        .cases
        .iter()
        .filter_map(|c| c.param("size")?.parse().ok())
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
        .into_iter()
        .map(|size| {
            let sk = size.to_string();
            // p90 is left out so that two chains' lines stay readable; the table has it.
            let series = ["smx", "raw"]
                .iter()
                .flat_map(|chain| {
                    [PERCENTILE_METRICS[0], PERCENTILE_METRICS[2], PERCENTILE_METRICS[3]]
                        .into_iter()
                        .map(move |m| (*chain, m))
                })
                .map(|(chain, (label, metric))| Series {
                    name: if chain == "raw" {
                        format!("raw threads + rtrb, {label}")
                    } else {
                        format!("smx, {label}")
                    },
                    points: result
                        .cases
                        .iter()
                        .filter(|c| c.series == chain && c.param("size") == Some(sk.as_str()))
                        .filter_map(|c| {
                            let s = c.summary.get(metric)?;
                            Some(Point {
                                x: c.param_f64("hops")?,
                                y: s.median / 1e3,
                                y_min: s.min / 1e3,
                                y_max: s.max / 1e3,
                            })
                        })
                        .collect(),
                    reference: chain == "raw",
                })
                .filter(|s| !s.points.is_empty())
                .collect();
            (
                format!("latency_vs_hops_{size}B.svg"),
                Chart {
                    title: format!("One-way latency percentiles vs hops ({size}-byte payload)"),
                    x_label: "forwarding boxes between source and sink".into(),
                    y_label: "latency [us] (log)".into(),
                    series,
                    log_y: true,
                    log_x: false,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_have_the_requested_hops() {
        assert!(net_text(0).ends_with("connect Src.Snk\n"));
        assert!(net_text(3).ends_with("connect Src.F.F.F.Snk\n"));
    }
}
