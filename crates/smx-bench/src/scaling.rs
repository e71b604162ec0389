//! Experiment 1, the report's thread scaling: 1, 2, 4, 8, 16 `Src.Snk` pairs at channel
//! lengths 1, 64 and 1024.
//!
//! For each cell (pair count, length) the report's net is generated (`A = Src.Snk`,
//! `B = A|A|A|A`, `connect B|B`, ...), compiled and run; beside it, in the same loop, the three
//! pair peers of [`baseline::PAIR_PEERS`] (crossbeam blocking, crossbeam busy-polling, an rtrb
//! ring) with the same pairs, length, message (sequence number, timestamp, payload) and
//! pinning, and GStreamer with `--peer gstreamer`. Runs are interleaved (smx, peers, smx, ...)
//! so a slow drift of the machine affects all of them alike. The tables give per cell the
//! median rates, smx over the best peer, and the CPU seconds per million messages.

use smx_runtime::{Registry, RunOptions};

use super::Session;
use super::args::{ScalingArgs, or_default, pick};
use super::baseline::{self, gstreamer};
use super::cpu;
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

/// Messages per pair when `--count` is not given.
const DEFAULT_COUNT: u64 = 1_000_000;
/// The least a run moves by default, whatever its pair count: a million messages through one
/// pair are over in well under a second, so short that one hiccup of a shared host decides the
/// round (docs/performance.md, "Thread scaling", compares the two).
const DEFAULT_MIN_PER_RUN: u64 = 4_000_000;

struct Settings {
    pairs: Vec<usize>,
    lens: Vec<u32>,
    /// `--count`, or the quick default; `None`: [`DEFAULT_COUNT`] with [`DEFAULT_MIN_PER_RUN`].
    count: Option<u64>,
    size: usize,
    runs: usize,
    chain: smx_runtime::ChainMode,
}

pub fn run(args: &ScalingArgs, session: &mut Session) -> BenchResult {
    let quick = session.quick;
    let s = Settings {
        pairs: or_default(&args.pairs, quick, &[1, 2, 4], &[1, 2, 4, 8, 16]),
        lens: or_default(&args.channel_len, quick, &[1, 64], &[1, 64, 1024]),
        count: args.count.or(quick.then_some(100_000)),
        size: pick(args.size, quick, 8, 8),
        runs: session.runs(2, 5),
        chain: args.chain,
    };
    let mut result = session.start("scaling");
    for (k, v) in [
        ("pairs", format!("{:?}", s.pairs)),
        (
            "count",
            match s.count {
                Some(n) => n.to_string(),
                None => format!("{DEFAULT_COUNT} per pair, at least {DEFAULT_MIN_PER_RUN} per run"),
            },
        ),
        ("channel_len", format!("{:?}", s.lens)),
        ("size", s.size.to_string()),
        ("runs", s.runs.to_string()),
        ("warmup_runs", "1".to_string()),
        ("chain", format!("{:?}", s.chain).to_lowercase()),
    ] {
        result.settings.insert(k.into(), v);
    }
    if s.chain == smx_runtime::ChainMode::Auto {
        result.notes.push(
            "smx runs with its defaults, chaining included: where a cell's 2 x pairs threads outnumber the cores \
             on channels shorter than 256, each pair runs on one thread (the report's warnings say so), so a \
             message is handed over by a call, while each peer hands it between two threads; --chain off \
             compares the channels alone"
                .to_string(),
        );
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
        let graph = net::compile_net(&format!("scaling-{pairs}.smx"), &net_text(pairs));
        for &len in &s.lens {
            let cell = Cell { pairs, len };
            run_cell(&s, cell, &graph, &registry, gst.as_ref(), session, &mut result);
        }
    }
    result.tables.push(table(&result, &s.pairs, &s.lens, gst.is_some()));
    result.tables.push(ratio_table(&result, &s.pairs, &s.lens));
    result
}

impl Settings {
    /// Messages per pair in a cell of `pairs` pairs.
    fn count_for(&self, pairs: usize) -> u64 {
        self.count
            .unwrap_or_else(|| DEFAULT_COUNT.max(DEFAULT_MIN_PER_RUN.div_ceil(pairs as u64)))
    }
}

#[derive(Clone, Copy)]
struct Cell {
    pairs: usize,
    len: u32,
}

/// One cell: smx, the pair peers (and GStreamer), interleaved over a warm-up and `runs` rounds.
fn run_cell(
    s: &Settings,
    cell: Cell,
    graph: &Result<smx_graph::NetGraph, String>,
    registry: &Registry,
    gst: Option<&std::path::PathBuf>,
    session: &mut Session,
    result: &mut BenchResult,
) {
    let Cell { pairs, len } = cell;
    let params = [
        ("pairs", pairs.to_string()),
        ("len", len.to_string()),
        ("threads", (2 * pairs).to_string()),
    ];
    let mut smx = Case::new("smx", &params);
    let mut peers: Vec<Case> = baseline::PAIR_PEERS
        .iter()
        .map(|(name, _)| Case::new(name, &params))
        .collect();
    let mut peer = Case::new("gstreamer", &params);
    if let Err(e) = graph {
        smx.push(Run::failed(e.clone()));
    }
    let setup_s = gst.map(|p| gst_setup(p, s.size, len as usize, pairs));
    let shape = baseline::PairShape {
        pairs,
        count: s.count_for(pairs),
        len: len as usize,
        size: s.size,
        pin: true,
    };
    for i in 0..=s.runs {
        let warmup = i == 0;
        if let Ok(g) = graph {
            let run = Run::with_steal(|| smx_run(g, registry, s, cell));
            session.progress("scaling", &smx, i, s.runs, &run, "msg_rate_hz");
            if !warmup {
                smx.push(run);
            }
        }
        for (case, (_, peer_run)) in peers.iter_mut().zip(baseline::PAIR_PEERS) {
            let run = Run::with_steal(|| peer_run(shape));
            session.progress("scaling", case, i, s.runs, &run, "msg_rate_hz");
            if !warmup {
                case.push(add_scaling_metrics(run, pairs));
            }
        }
        if let (Some(path), Some(setup)) = (gst, &setup_s) {
            let run = Run::with_steal(|| match setup {
                Ok(setup) => gstreamer::run(path, s.count_for(pairs), s.size, len as usize, pairs, *setup),
                Err(e) => Run::failed(e.clone()),
            });
            session.progress("scaling", &peer, i, s.runs, &run, "msg_rate_hz");
            if !warmup {
                peer.push(add_scaling_metrics(run, pairs));
            }
        }
    }
    result.cases.push(smx);
    result.cases.extend(peers);
    if gst.is_some() {
        result.cases.push(peer);
    }
}

fn smx_run(graph: &smx_graph::NetGraph, registry: &Registry, s: &Settings, cell: Cell) -> Run {
    let base = RunOptions {
        default_channel_len: Some(cell.len),
        chain: s.chain,
        ..RunOptions::default()
    };
    pairs_run(graph, registry, cell.pairs, s.count_for(cell.pairs), s.size, base)
}

/// One run of the pairs net with `base` options (pinning, waiting, channel length): rate, CPU
/// and the validation of [`net::validate`] (`bench tune` runs it under every setting).
pub fn pairs_run(
    graph: &smx_graph::NetGraph,
    registry: &Registry,
    pairs: usize,
    count: u64,
    size: usize,
    base: RunOptions,
) -> Run {
    let overrides = [
        Override::new("smx_src_rand", "count", count),
        Override::new("smx_src_rand", "size", size),
    ];
    let cpu = cpu::process_cpu_s();
    let outcome = net::run_graph_with(graph, registry, &overrides, base);
    let cpu = cpu::process_cpu_s() - cpu;
    match outcome {
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
            // What ran: chained pairs run on one thread, which the picture must say.
            run.set("box_threads", (2 * pairs).saturating_sub(threads_saved(&report)) as f64);
            run.set_cpu(cpu, report.messages);
            net::validate(&report, count * pairs as u64, &mut run);
            add_scaling_metrics(run, pairs)
        }
    }
}

/// Threads that chaining saved, from the report's `chaining: ..., N threads fewer: ...` line.
fn threads_saved(report: &smx_runtime::report::Report) -> usize {
    report
        .notes
        .iter()
        .filter(|w| w.starts_with("chaining:"))
        .filter_map(|w| {
            let count = w.split(" fewer").next()?.rsplit(", ").next()?;
            count.split(' ').next()?.parse::<usize>().ok()
        })
        .sum()
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

/// The pair peer with the highest median rate in a cell, with that rate.
pub fn best_peer<'a>(result: &'a BenchResult, pairs: &str, len: &str) -> Option<(&'a str, f64)> {
    baseline::PAIR_PEERS
        .iter()
        .filter_map(|(name, _)| {
            let case = result.find(name, &[("pairs", pairs), ("len", len)])?;
            Some((*name, case.median("msg_rate_hz")?))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// One row per cell: rates of smx and every peer, smx over the best peer, CPU per message.
pub fn table(result: &BenchResult, pairs: &[usize], lens: &[u32], with_peer: bool) -> Table {
    let names: Vec<&str> = baseline::PAIR_PEERS.iter().map(|(n, _)| *n).collect();
    let mut columns: Vec<String> = ["pairs", "smx threads", "len", "wall [s]", "smx [k/s]"]
        .map(String::from)
        .to_vec();
    columns.extend(names.iter().map(|n| format!("{n} [k/s]")));
    columns.extend(["smx/best peer".to_string(), "CPU s/M msg: smx".to_string()]);
    columns.extend(names.iter().map(|n| n.to_string()));
    if with_peer {
        columns.extend(["gstreamer [k/s]".to_string(), "smx/gstreamer".to_string()]);
    }
    let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut t = Table::new(
        "scaling: Src.Snk pairs (median (min-max) of the valid runs; rates in thousand messages/s; \
         CPU seconds per million messages)",
        &columns,
    );
    for &p in pairs {
        for &len in lens {
            let (key, len_key) = (p.to_string(), len.to_string());
            let find = |series: &str| result.find(series, &[("pairs", key.as_str()), ("len", len_key.as_str())]);
            let Some(smx) = find("smx") else {
                continue;
            };
            let peers: Vec<Option<&Case>> = names.iter().map(|n| find(n)).collect();
            let dash = || "-".to_string();
            let mut row = vec![
                smx.label(p),
                smx.cell("box_threads", 1.0, 0),
                len_key.clone(),
                smx.cell_auto("wall_s", 1.0),
                smx.cell("msg_rate_hz", 1e-3, 1),
            ];
            row.extend(
                peers
                    .iter()
                    .map(|c| c.map_or_else(dash, |c| c.cell("msg_rate_hz", 1e-3, 1))),
            );
            row.push(ratio(
                smx.median("msg_rate_hz"),
                best_peer(result, &key, &len_key).map(|b| b.1),
            ));
            row.push(smx.cell_auto("cpu_s_per_m", 1.0));
            row.extend(
                peers
                    .iter()
                    .map(|c| c.map_or_else(dash, |c| c.cell_auto("cpu_s_per_m", 1.0))),
            );
            if with_peer {
                let peer = find("gstreamer");
                row.push(peer.map_or_else(dash, |c| c.cell("msg_rate_hz", 1e-3, 1)));
                row.push(ratio(
                    smx.median("msg_rate_hz"),
                    peer.and_then(|c| c.median("msg_rate_hz")),
                ));
            }
            t.row(row);
        }
    }
    t
}

/// smx over the best peer, pairs down and lengths across, with the best peer's name.
pub fn ratio_table(result: &BenchResult, pairs: &[usize], lens: &[u32]) -> Table {
    let mut columns = vec!["pairs".to_string()];
    columns.extend(lens.iter().map(|l| format!("len {l}")));
    let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut t = Table::new(
        "scaling: smx / best peer (ratio of median rates; best peer, and the lowest and highest ratio of one \
         round's smx run to that peer's run of the same round: a range that holds 1.00 means the rounds disagree)",
        &columns,
    );
    for &p in pairs {
        let key = p.to_string();
        let mut row = vec![key.clone()];
        for &len in lens {
            let len_key = len.to_string();
            let find = |series: &str| result.find(series, &[("pairs", key.as_str()), ("len", len_key.as_str())]);
            let smx = find("smx");
            row.push(
                match (
                    smx.and_then(|c| c.median("msg_rate_hz")),
                    best_peer(result, &key, &len_key),
                ) {
                    (Some(median), Some((name, best))) if best > 0.0 => {
                        let rounds = match (smx, find(name)) {
                            (Some(smx), Some(peer)) => round_ratio_range(smx, peer, "msg_rate_hz"),
                            _ => None,
                        };
                        match rounds {
                            Some((low, high)) => format!("{:.2} ({name}; rounds {low:.2}-{high:.2})", median / best),
                            None => format!("{:.2} ({name})", median / best),
                        }
                    }
                    _ => "-".into(),
                },
            );
        }
        t.row(row);
    }
    t
}

/// The lowest and highest ratio of `a`'s run to `b`'s run of the same round, over the rounds
/// where both runs are valid; `None` below two such rounds. The cases run interleaved, so a
/// round's two runs met the machine in about the same state: on a machine whose speed drifts,
/// these ratios spread less than the runs themselves.
pub fn round_ratio_range(a: &Case, b: &Case, metric: &str) -> Option<(f64, f64)> {
    let ratios: Vec<f64> = a
        .runs
        .iter()
        .zip(&b.runs)
        .filter(|(x, y)| x.valid && y.valid)
        .filter_map(|(x, y)| Some((*x.metrics.get(metric)?, *y.metrics.get(metric)?)))
        .filter(|(_, y)| *y > 0.0)
        .map(|(x, y)| x / y)
        .collect();
    if ratios.len() < 2 {
        return None;
    }
    Some((super::stats::min(&ratios)?, super::stats::max(&ratios)?))
}

/// Message rate vs threads, one chart per channel length: smx with its run range, the peers
/// as reference lines.
pub fn charts(result: &BenchResult) -> Vec<(String, Chart)> {
    let mut lens: Vec<Option<&str>> = result.cases.iter().map(|c| c.param("len")).collect();
    lens.sort();
    lens.dedup();
    lens.into_iter().map(|len| chart(result, len)).collect()
}

fn chart(result: &BenchResult, len: Option<&str>) -> (String, Chart) {
    let series = |name: &str, label: &str, reference: bool| Series {
        name: label.to_string(),
        points: result
            .cases
            .iter()
            .filter(|c| c.series == name && c.param("len") == len)
            .filter_map(|c| {
                let s = c.summary.get("msg_rate_hz")?;
                Some(Point {
                    x: c.param_f64("pairs")?,
                    y: s.median,
                    y_min: s.min,
                    y_max: s.max,
                })
            })
            .collect(),
        reference,
    };
    let smx_label = format!("smx ({}; median, min-max)", smx_threads(result, len));
    let mut all = vec![
        series("smx", &smx_label, false),
        series("crossbeam", "crossbeam, blocking (2 threads/pair)", true),
        series("crossbeam-spin", "crossbeam, busy-polling (2 threads/pair)", true),
        series("rtrb", "rtrb ring, busy-polling (2 threads/pair)", true),
        series(
            "gstreamer",
            "gstreamer fakesrc ! queue ! fakesink (2 threads/pair)",
            true,
        ),
    ];
    all.retain(|s| !s.points.is_empty());
    let (file, shown) = match len {
        Some(len) => (format!("scaling_rate_vs_pairs_len{len}.svg"), len),
        None => ("scaling_rate_vs_pairs.svg".to_string(), "?"),
    };
    (
        file,
        Chart {
            title: format!("Total message rate vs pairs (channel length {shown})"),
            x_label: "pairs of a source and a sink (log)".into(),
            y_label: "messages per second".into(),
            series: all,
            log_y: false,
            log_x: true,
        },
    )
}

/// How many threads smx ran per pair in the chart's cells: chaining runs a pair on one thread.
fn smx_threads(result: &BenchResult, len: Option<&str>) -> &'static str {
    let per_pair: Vec<f64> = result
        .cases
        .iter()
        .filter(|c| c.series == "smx" && c.param("len") == len)
        .filter_map(|c| Some(c.summary.get("box_threads")?.median / c.param_f64("pairs")?))
        .collect();
    if per_pair.is_empty() {
        "threads not recorded"
    } else if per_pair.iter().all(|t| *t <= 1.0) {
        "chained: 1 thread/pair"
    } else if per_pair.iter().all(|t| *t >= 2.0) {
        "2 threads/pair"
    } else {
        "1 thread/pair where chained, else 2"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_moves_at_least_the_minimum_unless_told_a_count() {
        let settings = |count| Settings {
            pairs: vec![1],
            lens: vec![1],
            count,
            size: 8,
            runs: 1,
            chain: smx_runtime::ChainMode::Auto,
        };
        let default = settings(None);
        assert_eq!(default.count_for(1), DEFAULT_MIN_PER_RUN);
        assert_eq!(default.count_for(3), DEFAULT_MIN_PER_RUN.div_ceil(3));
        assert_eq!(default.count_for(16), DEFAULT_COUNT);
        assert!((1..=16).all(|p| default.count_for(p) * p as u64 >= DEFAULT_MIN_PER_RUN));
        assert_eq!(settings(Some(10)).count_for(1), 10);
    }

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
