//! `smxrun bench` as a user meets it: every output path is checked before
//! the first run, counts of 0 are refused with a clear message, `bench zmq --plot` says that it
//! draws nothing, and the charts are drawn so that they do not mislead (log axis for miss
//! rates, short tick labels, the measured counts as x ticks, the legend beside the plot).
//! No test here measures anything: the refusals come before any run, and the charts are drawn
//! from synthetic results.

use std::path::Path;
use std::process::{Command, Output};

use smx_bench::machine::MachineHeader;
use smx_bench::result::{BenchResult, Case, FORMAT_VERSION, Run};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .arg("bench")
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The line every experiment prints when it starts measuring.
const STARTED: &str = "reading the machine";

/// A bench small enough to reach its runs quickly, for the checks made before them.
const SMALL: [&str; 5] = ["scaling", "--pairs", "1", "--count", "10"];

fn small_bench(more: &[&str]) -> Output {
    bench(&[&SMALL[..], more].concat())
}

#[test]
fn counts_of_zero_are_refused_before_anything_runs() {
    for args in [
        &["scaling", "--runs", "0"][..],
        &["scaling", "--pairs", "1,0"],
        &["scaling", "--count", "0"],
        &["scaling", "--channel-len", "0"],
        &["tt", "--pairs", "0"],
        &["tt", "--ticks", "0"],
        &["latency", "--count", "0"],
        &["zmq", "--count", "0"],
        &["hosts", "--count", "0"],
        &["processes", "--count", "0"],
        &["hosts", "--channel-len", "0"],
        &["--runs", "0", "all"],
    ] {
        let out = bench(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            !err.contains(STARTED) && !err.contains("syntax error"),
            "{args:?}: {err}"
        );
        let flag = args.iter().find(|a| a.starts_with("--")).unwrap();
        assert!(
            err.contains(flag) && err.contains("'0'"),
            "{args:?} names the value: {err}"
        );
    }
    let err = stderr(&bench(&["scaling", "--pairs", "0"]));
    assert!(err.contains("must be at least 1"), "{err}");
}

#[test]
fn output_paths_are_checked_before_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir").join("r");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "keep me").unwrap();
    for (flag, path) in [
        ("--json", missing.with_extension("json")),
        ("--csv", missing.with_extension("csv")),
        ("--markdown", missing.with_extension("md")),
        ("--json", dir.path().to_path_buf()),
        ("--plot", file.clone()),
        // A file that holds anything but what the flag writes (here a net's text) is kept.
        ("--json", file.clone()),
        ("--csv", file.clone()),
        ("--markdown", file.clone()),
    ] {
        let out = small_bench(&[flag, path.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{flag} {}: {err}", path.display());
        assert!(err.contains(flag) && !err.contains(STARTED), "{flag}: {err}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    let out = small_bench(&["--markdown", file.to_str().unwrap()]);
    assert!(
        stderr(&out).contains("holds something other than what --markdown writes"),
        "{}",
        stderr(&out)
    );
    // A writable path that does not exist yet is not left behind by the check.
    let fresh = dir.path().join("fresh.csv");
    let out = bench(&["scaling", "--count", "0", "--csv", fresh.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!fresh.exists());
}

/// What an earlier bench wrote to `--json`, `--csv` or `--markdown` is written over: the check
/// that keeps other files lets its own results through.
#[test]
fn a_bench_writes_over_its_own_earlier_results() {
    let dir = tempfile::tempdir().unwrap();
    let results = [result(
        "scaling",
        vec![case("smx", &[("pairs", "1")], "msg_rate", &[1.0])],
    )];
    let (json, csv, md) = (
        dir.path().join("r.json"),
        dir.path().join("r.csv"),
        dir.path().join("r.md"),
    );
    smx_bench::output::write_json(&json, &results).unwrap();
    smx_bench::output::write_csv(&csv, &results).unwrap();
    smx_bench::output::write_markdown(&md, &results).unwrap();
    let missing = dir.path().join("no-earlier.json");
    // The comparison's file is read after the outputs are checked, and ends the bench there.
    let out = small_bench(&[
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
        "--compare",
        missing.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert!(!err.contains("holds something other"), "{err}");
    assert!(err.contains("no-earlier.json"), "{err}");
}

/// `--compare` with results of another experiment is refused before the runs, which would
/// end in an empty comparison.
#[test]
fn a_comparison_with_another_experiments_results_is_refused_before_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let tt = dir.path().join("tt.json");
    smx_bench::output::write_json(
        &tt,
        &[result(
            "tt",
            vec![case("smx", &[("pairs", "1")], "miss_rate_pct", &[1.0])],
        )],
    )
    .unwrap();
    let out = small_bench(&["--compare", tt.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("it holds results of bench tt, none of bench scaling: nothing to compare")
            && !err.contains(STARTED),
        "{err}"
    );
}

#[test]
fn bench_zmq_plot_says_that_it_draws_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("missing").join("r.json");
    // The bad --json path stops the run at once; the note about --plot comes before it.
    let out = bench(&[
        "zmq",
        "--plot",
        dir.path().join("plots").to_str().unwrap(),
        "--json",
        bad.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("bench zmq, hosts, processes, load and tune draw no chart")
            && err.contains("--plot writes nothing"),
        "{err}"
    );
}

#[test]
fn plot_makes_no_directory_for_a_bench_that_draws_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let plots = dir.path().join("plots");
    let out = bench(&[
        "processes",
        "--count",
        "100",
        "--runs",
        "1",
        "--channel-len",
        "1",
        "--size",
        "8",
        "--plot",
        plots.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--plot writes nothing"), "{err}");
    assert!(!plots.exists(), "an empty {} was made", plots.display());
}

// ---- the charts ----

fn result(experiment: &str, cases: Vec<Case>) -> BenchResult {
    BenchResult {
        format: FORMAT_VERSION,
        experiment: experiment.into(),
        command: "test".into(),
        machine: MachineHeader::collect(),
        settings: [("channel_len".to_string(), "1".to_string())].into(),
        cases,
        tables: Vec::new(),
        notes: Vec::new(),
    }
}

fn case(series: &str, params: &[(&str, &str)], metric: &str, values: &[f64]) -> Case {
    let params: Vec<(&str, String)> = params.iter().map(|(k, v)| (*k, v.to_string())).collect();
    let mut c = Case::new(series, &params);
    for v in values {
        let mut run = Run::new();
        run.set(metric, *v);
        c.push(run);
    }
    c
}

/// The text of every `<text>` element of an SVG file.
fn svg_texts(path: &Path) -> Vec<String> {
    let svg = std::fs::read_to_string(path).unwrap();
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

fn numeric(texts: &[String]) -> Vec<String> {
    texts
        .iter()
        .filter(|t| t.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .cloned()
        .collect()
}

#[test]
fn the_tt_chart_has_a_log_axis_that_keeps_small_miss_rates() {
    let mut cases = Vec::new();
    for (period, rates) in [
        ("10", [60.0, 70.0]),
        ("20", [0.5, 0.7]),
        ("40", [0.002, 0.004]),
        ("100", [0.0, 0.0]),
    ] {
        cases.push(case(
            "smx",
            &[("period_us", period), ("pairs", "1"), ("mode", "threads")],
            "miss_rate_pct",
            &rates,
        ));
        cases.push(case("probe", &[("period_us", period)], "miss_rate_pct", &[0.001]));
    }
    let charts = smx_bench::tt::charts(&result("tt", cases));
    let (name, chart) = &charts[0];
    assert!(chart.log_y, "miss rates need a log axis");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    smx_bench::plot::write_svg(chart, &path).unwrap();
    let texts = svg_texts(&path);
    let labels = numeric(&texts);
    // Decades from the smallest rate to the largest: 0.002 % is as visible as 60 %.
    for tick in ["0.001", "0.01", "0.1", "1", "10", "100"] {
        assert!(labels.iter().any(|l| l == tick), "no tick {tick} in {labels:?}");
    }
    // The periods, and nothing between them.
    for x in ["20", "40"] {
        assert!(labels.iter().any(|l| l == x), "no x tick {x}: {labels:?}");
    }
    assert!(!labels.iter().any(|l| l == "30" || l.ends_with(".0")), "{labels:?}");
    // A 0 % rate cannot sit on a log axis; the legend says where it is drawn.
    assert!(texts.iter().any(|t| t.contains("bottom edge")), "{texts:?}");
}

#[test]
fn rate_and_latency_charts_label_counts_as_whole_numbers_with_short_labels() {
    let mut cases = Vec::new();
    for (threads, rate) in [
        (2, 2_500_000.0),
        (4, 4_800_000.0),
        (8, 9_000_000.0),
        (16, 9_500_000.0),
        (32, 9_700_000.0),
    ] {
        let t = threads.to_string();
        let p = (threads / 2).to_string();
        cases.push(case(
            "smx",
            &[("threads", &t), ("pairs", &p)],
            "msg_rate_hz",
            &[rate, rate * 1.1],
        ));
        cases.push(case(
            "crossbeam",
            &[("threads", &t), ("pairs", &p)],
            "msg_rate_hz",
            &[rate * 1.2],
        ));
    }
    let charts = smx_bench::scaling::charts(&result("scaling", cases));
    let dir = tempfile::tempdir().unwrap();
    let (name, chart) = &charts[0];
    // Named by its axis: pairs, whatever threads each ran.
    assert!(name.starts_with("scaling_rate_vs_pairs"), "{name}");
    let path = dir.path().join(name);
    smx_bench::plot::write_svg(chart, &path).unwrap();
    let labels = numeric(&svg_texts(&path));
    for x in ["1", "2", "4", "8", "16"] {
        assert!(labels.iter().any(|l| l == x), "no x tick {x} (pairs): {labels:?}");
    }
    assert!(labels.iter().any(|l| l.ends_with('M')), "{labels:?}");
    assert!(
        !labels.iter().any(|l| l.ends_with(".0") || l.len() > 6),
        "long or fractional labels: {labels:?}"
    );

    let mut cases = Vec::new();
    for hops in ["0", "1", "2", "4", "8"] {
        cases.push(case(
            "smx",
            &[("hops", hops), ("size", "8")],
            "latency_p50_ns",
            &[2_000.0, 3_000.0],
        ));
    }
    let charts = smx_bench::latency::charts(&result("latency", cases));
    let (name, chart) = &charts[0];
    let path = dir.path().join(name);
    smx_bench::plot::write_svg(chart, &path).unwrap();
    let labels = numeric(&svg_texts(&path));
    for x in ["0", "1", "2", "4", "8"] {
        assert!(labels.iter().any(|l| l == x), "no x tick {x}: {labels:?}");
    }
    assert!(!labels.iter().any(|l| l == "3" || l.contains('.')), "{labels:?}");
}

#[test]
fn the_scaling_chart_says_how_many_threads_each_ran() {
    let mut cases = Vec::new();
    for pairs in [1usize, 4] {
        let p = pairs.to_string();
        // One pair on two threads; four pairs chained, one thread each.
        let threads = if pairs == 1 { 2.0 } else { 4.0 };
        let mut smx = Case::new("smx", &[("pairs", p.clone()), ("threads", (2 * pairs).to_string())]);
        let mut run = Run::new();
        run.set("msg_rate_hz", 1e6).set("box_threads", threads);
        smx.push(run);
        cases.push(smx);
        cases.push(case("crossbeam", &[("pairs", &p)], "msg_rate_hz", &[1e6]));
    }
    let charts = smx_bench::scaling::charts(&result("scaling", cases));
    let dir = tempfile::tempdir().unwrap();
    let (name, chart) = &charts[0];
    // Named by its axis: pairs, whatever threads each ran.
    assert!(name.starts_with("scaling_rate_vs_pairs"), "{name}");
    let path = dir.path().join(name);
    smx_bench::plot::write_svg(chart, &path).unwrap();
    let texts = svg_texts(&path).join(" ");
    assert!(texts.contains("pairs of a source and a sink (log)"), "{texts}");
    assert!(!texts.contains("threads (2 per pair"), "{texts}");
    assert!(
        texts.contains("smx (1 thread/pair where chained, else 2; median, min-max)"),
        "{texts}"
    );
    assert!(texts.contains("crossbeam, blocking (2 threads/pair)"), "{texts}");
}

/// A Ctrl-C in the middle of a long bench keeps what was measured: the results of the runs
/// before it are printed and written, marked as cut short, and the status says a signal ended it.
#[test]
fn a_signal_during_a_bench_keeps_the_runs_measured_before_it() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cut.json");
    let asked_runs = 100_000;
    let mut child = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args(["bench", "scaling", "--pairs", "1", "--count", "2000", "--runs"])
        .arg(asked_runs.to_string())
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    // Two measured runs of smx, so that the result holds at least one whatever the signal cuts.
    for line in lines.by_ref() {
        let line = line.unwrap();
        let second = line.contains("smx{") && line.contains(&format!("run 2/{asked_runs}"));
        seen.push(line);
        if second {
            break;
        }
    }
    assert!(seen.last().is_some_and(|l| l.contains("run 2/")), "{seen:#?}");
    // SAFETY: kill with a pid of our own child and a signal number.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{rest:#?}");
    assert!(
        rest.iter().any(|l| l.contains("stopping the run in progress")),
        "{rest:#?}"
    );
    assert!(rest.iter().any(|l| l.contains("wrote")), "{rest:#?}");
    assert!(stdout.contains("INTERRUPTED by SIGINT"), "{stdout}");
    let results = smx_bench::output::read_json(&json).unwrap();
    let smx = results[0].cases.iter().find(|c| c.series == "smx").unwrap();
    assert!(
        !smx.runs.is_empty() && smx.runs.len() < asked_runs,
        "{} runs",
        smx.runs.len()
    );
    let all_runs = results[0].cases.iter().flat_map(|c| &c.runs);
    assert!(
        all_runs.clone().all(|r| r.valid),
        "a run the signal cut short is left out"
    );
    assert!(
        results[0].notes.iter().any(|n| n.contains("INTERRUPTED")),
        "{:?}",
        results[0].notes
    );
}
