//! Experiment 1, the report's thread scaling: 1, 2, 4, 8, 16 `Src.Snk` pairs.
//!
//! For each pair count the report's net is generated (`A = Src.Snk`, `B = A|A|A|A`,
//! `connect B|B`, ...), compiled and run; beside it, in the same loop, the plain crossbeam
//! program with the same pairs, channel length, message size and count (and GStreamer with
//! `--peer gstreamer`). Runs of the three are interleaved (smx, baseline, peer, smx, ...) so a
//! slow drift of the machine affects all of them alike. The table is the report's (threads,
//! wall time, wall time per thread, total message rate, rate per pair) with median and
//! min-max, the baseline's rate and the ratio of the medians.

use smx_runtime::Registry;

use super::Session;
use super::args::{ScalingArgs, or_default, pick};
use super::baseline::{crossbeam, gstreamer};
use super::net::{self, Override};
use super::plot::{Chart, Point, Series};
use super::result::{BenchResult, Case, Run, Table};

/// The report's net for `pairs` pairs, written the report's way where it can be.
pub fn net_text(pairs: usize) -> String {
    let mut text =
        String::from("Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nA = Src.Snk\n");
    let alts = |name: &str, n: usize| vec![name; n].join("|");
    match pairs {
        1 => text.push_str("connect A\n"),
        2 => text.push_str("B = A|A\nconnect B\n"),
        p if p.is_multiple_of(4) => {
            text.push_str("B = A|A|A|A\n");
            text.push_str(&format!("connect {}\n", alts("B", p / 4)));
        }
        p => text.push_str(&format!("connect {}\n", alts("A", p))),
    }
    text
}

struct Settings {
    pairs: Vec<usize>,
    count: u64,
    len: u32,
    size: usize,
    runs: usize,
}

pub fn run(args: &ScalingArgs, session: &mut Session) -> BenchResult {
    let quick = session.quick;
    let s = Settings {
        pairs: or_default(&args.pairs, quick, &[1, 2, 4], &[1, 2, 4, 8, 16]),
        count: pick(args.count, quick, 100_000, 1_000_000),
        len: pick(args.channel_len, quick, 1, 1).max(1),
        size: pick(args.size, quick, 8, 8),
        runs: session.runs(2, 3),
    };
    let mut result = session.start("scaling");
    for (k, v) in [
        ("pairs", format!("{:?}", s.pairs)),
        ("count", s.count.to_string()),
        ("channel_len", s.len.to_string()),
        ("size", s.size.to_string()),
        ("runs", s.runs.to_string()),
        ("warmup_runs", "1".to_string()),
    ] {
        result.settings.insert(k.into(), v);
    }
    let gst = match args.peer.as_deref() {
        Some("gstreamer") => match gstreamer::find() {
            Some(path) => Some(path),
            None => {
                let msg = gstreamer::missing_message();
                eprintln!("{msg}");
                result.notes.push(msg);
                None
            }
        },
        _ => None,
    };
    let registry = crate::builtin_registry();
    for &pairs in &s.pairs {
        let params = [("pairs", pairs.to_string()), ("threads", (2 * pairs).to_string())];
        let mut smx = Case::new("smx", &params);
        let mut plain = Case::new("crossbeam", &params);
        let mut peer = Case::new("gstreamer", &params);
        let graph = match net::compile_net(&format!("scaling-{pairs}.smx"), &net_text(pairs)) {
            Ok(g) => Some(g),
            Err(e) => {
                smx.push(Run::failed(e));
                None
            }
        };
        let setup_s = gst.as_ref().map(|p| gst_setup(p, s.size, s.len as usize, pairs));
        for i in 0..=s.runs {
            let warmup = i == 0;
            if let Some(g) = &graph {
                let run = smx_run(g, &registry, &s, pairs);
                session.progress("scaling", &smx, i, s.runs, &run, "msg_rate_hz");
                if !warmup {
                    smx.push(run);
                }
            }
            let run = crossbeam::run(crossbeam::PairShape {
                pairs,
                count: s.count,
                len: s.len as usize,
                size: s.size,
                pin: true,
            });
            session.progress("scaling", &plain, i, s.runs, &run, "msg_rate_hz");
            if !warmup {
                plain.push(add_scaling_metrics(run, pairs));
            }
            if let (Some(path), Some(setup)) = (&gst, &setup_s) {
                let run = match setup {
                    Ok(setup) => gstreamer::run(path, s.count, s.size, s.len as usize, pairs, *setup),
                    Err(e) => Run::failed(e.clone()),
                };
                session.progress("scaling", &peer, i, s.runs, &run, "msg_rate_hz");
                if !warmup {
                    peer.push(add_scaling_metrics(run, pairs));
                }
            }
        }
        result.cases.push(smx);
        result.cases.push(plain);
        if gst.is_some() {
            result.cases.push(peer);
        }
    }
    result.tables.push(table(&result, &s.pairs, gst.is_some()));
    result
}

fn smx_run(graph: &smx_graph::NetGraph, registry: &Registry, s: &Settings, pairs: usize) -> Run {
    let overrides = [
        Override::new("smx_src_rand", "count", s.count),
        Override::new("smx_src_rand", "size", s.size),
    ];
    match net::run_graph(graph, registry, &overrides, Some(s.len)) {
        Err(e) => Run::failed(e),
        Ok(report) => {
            let mut run = Run::new();
            let wall = net::nets_wall_s(&report);
            run.set("wall_s", wall)
                .set("app_wall_s", report.wall_time_s)
                .set("messages", report.messages as f64)
                .set(
                    "msg_rate_hz",
                    if wall > 0.0 { report.messages as f64 / wall } else { 0.0 },
                );
            net::validate(&report, s.count * pairs as u64, &mut run);
            add_scaling_metrics(run, pairs)
        }
    }
}

/// The report's derived columns: wall time per thread and rate per pair.
fn add_scaling_metrics(mut run: Run, pairs: usize) -> Run {
    if let (Some(wall), Some(rate)) = (
        run.metrics.get("wall_s").copied(),
        run.metrics.get("msg_rate_hz").copied(),
    ) {
        run.set("wall_per_thread_s", wall / (2 * pairs) as f64)
            .set("rate_per_pair_hz", rate / pairs as f64);
    }
    run
}

/// Median of three one-buffer pipelines: GStreamer's start-up and pipeline setup time.
fn gst_setup(path: &std::path::PathBuf, size: usize, len: usize, chains: usize) -> Result<f64, String> {
    let mut times = Vec::new();
    for _ in 0..3 {
        times.push(gstreamer::time_once(path, 1, size, len, chains)?);
    }
    super::stats::median(&times).ok_or_else(|| "no setup time measured".to_string())
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "-".into(),
    }
}

pub fn table(result: &BenchResult, pairs: &[usize], with_peer: bool) -> Table {
    let mut columns = vec![
        "threads",
        "wall [s]",
        "wall/thread [s]",
        "msg rate [k/s]",
        "rate/pair [k/s]",
        "crossbeam [k/s]",
        "smx/crossbeam",
    ];
    if with_peer {
        columns.extend(["gstreamer [k/s]", "smx/gstreamer"]);
    }
    let mut t = Table::new(
        "scaling: Src.Snk pairs (median (min-max) of the valid runs; rates in thousand messages/s)",
        &columns,
    );
    for &p in pairs {
        let key = p.to_string();
        let find = |series: &str| result.find(series, &[("pairs", key.as_str())]);
        let (Some(smx), Some(plain)) = (find("smx"), find("crossbeam")) else {
            continue;
        };
        let mut row = vec![
            smx.label(2 * p),
            smx.cell_auto("wall_s", 1.0),
            smx.cell_auto("wall_per_thread_s", 1.0),
            smx.cell("msg_rate_hz", 1e-3, 1),
            smx.cell("rate_per_pair_hz", 1e-3, 1),
            plain.cell("msg_rate_hz", 1e-3, 1),
            ratio(smx.median("msg_rate_hz"), plain.median("msg_rate_hz")),
        ];
        if with_peer {
            let peer = find("gstreamer");
            row.push(
                peer.map(|c| c.cell("msg_rate_hz", 1e-3, 1))
                    .unwrap_or_else(|| "-".into()),
            );
            row.push(ratio(
                smx.median("msg_rate_hz"),
                peer.and_then(|c| c.median("msg_rate_hz")),
            ));
        }
        t.row(row);
    }
    t
}

/// Message rate vs threads, smx with its run range, the baselines as reference lines.
pub fn charts(result: &BenchResult) -> Vec<(String, Chart)> {
    let series = |name: &str, label: &str, reference: bool| Series {
        name: label.to_string(),
        points: result
            .cases
            .iter()
            .filter(|c| c.series == name)
            .filter_map(|c| {
                let s = c.summary.get("msg_rate_hz")?;
                Some(Point {
                    x: c.param_f64("threads")?,
                    y: s.median,
                    y_min: s.min,
                    y_max: s.max,
                })
            })
            .collect(),
        reference,
    };
    let mut all = vec![
        series("smx", "smx (median, min-max)", false),
        series("crossbeam", "plain crossbeam program", true),
        series("gstreamer", "gstreamer fakesrc ! queue ! fakesink", true),
    ];
    all.retain(|s| !s.points.is_empty());
    vec![(
        "scaling_rate_vs_threads.svg".into(),
        Chart {
            title: format!(
                "Total message rate vs threads (channel length {})",
                result.settings.get("channel_len").map(String::as_str).unwrap_or("?")
            ),
            x_label: "threads (2 per pair; log)".into(),
            y_label: "messages per second".into(),
            series: all,
            log_y: false,
            log_x: true,
        },
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nets_are_written_the_reports_way() {
        assert!(net_text(1).ends_with("A = Src.Snk\nconnect A\n"));
        assert!(net_text(2).ends_with("B = A|A\nconnect B\n"));
        assert!(net_text(4).ends_with("B = A|A|A|A\nconnect B\n"));
        assert!(net_text(8).ends_with("B = A|A|A|A\nconnect B|B\n"));
        assert!(net_text(16).ends_with("connect B|B|B|B\n"));
        assert!(net_text(3).ends_with("connect A|A|A\n"));
    }

    #[test]
    fn derived_columns_follow_the_report() {
        let mut run = Run::new();
        run.set("wall_s", 8.0).set("msg_rate_hz", 1000.0);
        let run = add_scaling_metrics(run, 4);
        assert_eq!(run.metrics["wall_per_thread_s"], 1.0);
        assert_eq!(run.metrics["rate_per_pair_hz"], 250.0);
    }
}
