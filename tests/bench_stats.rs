//! The statistics and result plumbing of `smxrun bench`, on synthetic data with exact answers.

use smx_bench::output::{compare, parse_json, to_csv, to_json, to_markdown};
use smx_bench::result::{BenchResult, Case, FORMAT_VERSION, Run, Table};
use smx_bench::stats::{
    LinearFit, Percentiles, Summary, max, mean, median, min, percentile, percentile_interpolated, sorted,
};
use smx_runtime::TtMode;

/// The machine header takes a timer calibration; one per test binary is enough.
/// This machine's header, as an idle machine's: a comparison notes a busy one.
fn header() -> smx_bench::machine::MachineHeader {
    static HEADER: std::sync::OnceLock<smx_bench::machine::MachineHeader> = std::sync::OnceLock::new();
    let mut header = HEADER.get_or_init(smx_bench::machine::MachineHeader::collect).clone();
    header.load_before = Some(0.0);
    header
}

fn approx(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn median_of_odd_and_even_counts() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    assert_eq!(median(&[7.0]), Some(7.0));
    assert_eq!(median(&[]), None);
    assert_eq!(median(&[1.0, f64::NAN]), None);
}

#[test]
fn min_max_mean() {
    let v = [5.0, -1.0, 3.5, 10.0];
    assert_eq!(min(&v), Some(-1.0));
    assert_eq!(max(&v), Some(10.0));
    assert_eq!(mean(&v), Some(4.375));
    assert_eq!(sorted(&v), Some(vec![-1.0, 3.5, 5.0, 10.0]));
    assert_eq!(min(&[]), None);
}

#[test]
fn nearest_rank_percentiles_are_observed_values() {
    // 1..=100: the p-th percentile by nearest rank is exactly p (rank ceil(p/100*100)).
    let v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
    assert_eq!(percentile(&v, 50.0), Some(50.0));
    assert_eq!(percentile(&v, 90.0), Some(90.0));
    assert_eq!(percentile(&v, 99.0), Some(99.0));
    assert_eq!(percentile(&v, 99.9), Some(100.0));
    assert_eq!(percentile(&v, 100.0), Some(100.0));
    assert_eq!(percentile(&v, 0.0), Some(1.0));
    // Five values: p40 -> rank 2, p41 -> rank 3.
    let w = [10.0, 20.0, 30.0, 40.0, 50.0];
    assert_eq!(percentile(&w, 40.0), Some(20.0));
    assert_eq!(percentile(&w, 41.0), Some(30.0));
    assert_eq!(percentile(&w, 101.0), None);
    assert_eq!(percentile(&w, -1.0), None);
    assert_eq!(percentile(&[], 50.0), None);
}

#[test]
fn interpolated_percentiles_follow_the_r7_rule() {
    let w = [10.0, 20.0, 30.0, 40.0];
    // h = 3 * p / 100.
    assert_eq!(percentile_interpolated(&w, 0.0), Some(10.0));
    assert_eq!(percentile_interpolated(&w, 50.0), Some(25.0));
    assert_eq!(percentile_interpolated(&w, 100.0), Some(40.0));
    assert!(approx(percentile_interpolated(&w, 90.0).unwrap(), 37.0));
    assert_eq!(percentile_interpolated(&[5.0], 73.0), Some(5.0));
    assert_eq!(percentile_interpolated(&w, 100.5), None);
}

#[test]
fn latency_percentiles_of_integer_samples() {
    let mut samples: Vec<u64> = (1..=1000).rev().collect();
    let p = Percentiles::of(&mut samples).unwrap();
    assert_eq!(
        (p.count, p.min, p.p50, p.p90, p.p99, p.p999, p.max),
        (1000, 1, 500, 900, 990, 999, 1000)
    );
    assert_eq!(p.labelled()[3], ("p99.9", 999));
    assert_eq!(Percentiles::of(&mut []), None);
}

#[test]
fn summary_of_runs() {
    let s = Summary::of(&[300.0, 100.0, 200.0, 400.0]).unwrap();
    assert_eq!((s.n, s.median, s.min, s.max, s.mean), (4, 250.0, 100.0, 400.0, 250.0));
    assert!(approx(s.spread(), 1.2));
    assert_eq!(Summary::of(&[]), None);
}

#[test]
fn least_squares_line_exact_and_noisy() {
    // y = 3x + 2 exactly.
    let xs = [0.0, 1.0, 2.0, 4.0, 8.0];
    let ys: Vec<f64> = xs.iter().map(|x| 3.0 * x + 2.0).collect();
    let f = LinearFit::fit(&xs, &ys).unwrap();
    assert!(approx(f.slope, 3.0) && approx(f.intercept, 2.0) && approx(f.r_squared, 1.0));
    assert_eq!(f.n, 5);
    assert!(approx(f.at(10.0), 32.0));
    // Points (0,1) (1,3) (2,2): slope 0.5, intercept 1.5, r^2 = 0.25.
    let g = LinearFit::fit(&[0.0, 1.0, 2.0], &[1.0, 3.0, 2.0]).unwrap();
    assert!(approx(g.slope, 0.5) && approx(g.intercept, 1.5) && approx(g.r_squared, 0.25));
    // A flat line is a perfect fit with slope 0.
    let h = LinearFit::fit(&[1.0, 2.0], &[5.0, 5.0]).unwrap();
    assert!(approx(h.slope, 0.0) && approx(h.r_squared, 1.0));
}

#[test]
fn degenerate_fits_are_refused() {
    assert_eq!(LinearFit::fit(&[1.0], &[1.0]), None);
    assert_eq!(LinearFit::fit(&[1.0, 1.0], &[1.0, 2.0]), None);
    assert_eq!(LinearFit::fit(&[1.0, 2.0], &[1.0]), None);
    assert_eq!(LinearFit::fit(&[1.0, f64::INFINITY], &[1.0, 2.0]), None);
}

fn run(rate: f64, valid: bool) -> Run {
    let mut r = Run::new();
    r.set("msg_rate_hz", rate).set("wall_s", 1e6 / rate);
    if !valid {
        r.invalidate("received 9 of 10 messages");
    }
    r
}

fn sample_result(rates: &[f64]) -> BenchResult {
    let mut case = Case::new("smx", &[("pairs", "2".to_string()), ("threads", "4".to_string())]);
    for (i, r) in rates.iter().enumerate() {
        case.push(run(*r, i != 1));
    }
    let mut table = Table::new("scaling", &["threads", "rate"]);
    table.row(vec!["4".into(), case.cell("msg_rate_hz", 1e-3, 1)]);
    let mut result = BenchResult {
        format: FORMAT_VERSION,
        experiment: "scaling".into(),
        command: "smxrun bench scaling".into(),
        machine: header(),
        settings: Default::default(),
        cases: vec![case],
        tables: vec![table],
        notes: Vec::new(),
    };
    result.note_invalid_runs();
    result
}

#[test]
fn invalid_runs_are_kept_but_left_out_of_summaries() {
    let r = sample_result(&[1000.0, 5.0, 3000.0]);
    let case = &r.cases[0];
    assert_eq!(case.runs.len(), 3);
    assert_eq!(case.invalid_runs(), 1);
    let s = case.summary["msg_rate_hz"];
    assert_eq!((s.n, s.median, s.min, s.max), (2, 2000.0, 1000.0, 3000.0));
    assert_eq!(case.cell("msg_rate_hz", 1e-3, 1), "2.0 (1.0-3.0)");
    assert_eq!(case.key(), "smx{pairs=2,threads=4}");
    assert_eq!(r.notes.len(), 1);
    assert!(
        r.notes[0].starts_with("INVALID run 2 (of 3 runs) of smx{pairs=2,threads=4}") && r.notes[0].contains("9 of 10"),
        "{}",
        r.notes[0]
    );
}

#[test]
fn json_round_trip_and_compare_ratios() {
    let old = sample_result(&[1000.0, 5.0, 3000.0]);
    let new = sample_result(&[3000.0, 5.0, 5000.0]);
    let text = to_json(std::slice::from_ref(&old)).unwrap();
    let back = parse_json(&text).unwrap();
    assert_eq!(back, vec![old.clone()]);
    let table = compare(&[new], &back);
    let rate = table.rows.iter().find(|r| r[1] == "msg_rate_hz").unwrap();
    assert_eq!(rate[2], "2000");
    assert_eq!(rate[3], "4000");
    assert_eq!(rate[4], "2.000");
    assert!(parse_json("{\"not\": \"a result\"}").is_err());
    let mut changed = old.clone();
    changed.settings.insert("count".into(), "10".into());
    assert_eq!(
        smx_bench::output::settings_changes(std::slice::from_ref(&changed), &back),
        vec!["scaling: count (unset) -> 10".to_string()]
    );
    // Another machine, build or a busy one is said too: a ratio across them carries it.
    changed.machine.cpu_model = "Another CPU".into();
    changed.machine.build = "debug".into();
    changed.machine.load_before = Some(changed.machine.cores_allowed as f64 + 3.0);
    let lines = smx_bench::output::settings_changes(&[changed], &back);
    assert!(lines.iter().any(|l| l.ends_with("-> Another CPU")), "{lines:?}");
    assert!(
        lines.contains(&"scaling: build release -> debug".to_string()),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("load average as it began 0.00 ->")),
        "{lines:?}"
    );
}

/// A case that ran on fewer threads than before (chained now, say) is named beside the
/// ratios, which then compare two layouts of the net.
#[test]
fn compare_names_cases_that_ran_on_other_threads() {
    let with_threads = |threads: f64| {
        let mut r = sample_result(&[1000.0, 3000.0]);
        for run in &mut r.cases[0].runs {
            run.set("box_threads", threads);
        }
        r.cases[0].summarise();
        r
    };
    let (before, after) = (with_threads(4.0), with_threads(2.0));
    let lines = smx_bench::output::settings_changes(std::slice::from_ref(&after), std::slice::from_ref(&before));
    assert_eq!(
        lines,
        vec![
            "scaling smx{pairs=2,threads=4}: ran on 2 box threads, earlier on 4: its ratios compare two layouts of the net"
        ]
    );
    assert!(
        smx_bench::output::settings_changes(std::slice::from_ref(&before), std::slice::from_ref(&before)).is_empty()
    );
}

#[test]
fn csv_has_one_row_per_case_run_and_metric() {
    let r = sample_result(&[1000.0, 5.0, 3000.0]);
    let csv = to_csv(std::slice::from_ref(&r));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "experiment,series,pairs,threads,run,valid,metric,value");
    assert_eq!(lines.len(), 1 + 3 * 2);
    assert!(lines.contains(&"scaling,smx,2,4,2,false,msg_rate_hz,5"));
}

#[test]
fn tables_render_with_every_row_the_width_of_the_header() {
    let mut t = Table::new("t", &["a", "bb", "c"]);
    t.row(vec!["1".into()]);
    t.row(vec!["x|y".into(), "22".into(), "333".into(), "extra".into()]);
    assert!(t.rows.iter().all(|r| r.len() == 3));
    let md = t.to_markdown();
    assert!(md.contains("| a | bb | c |"));
    assert!(md.contains("| --- | ---: | ---: |"));
    assert!(md.contains("| x\\|y | 22 | 333 |"));
    let text = t.to_text();
    assert_eq!(text.lines().count(), 5);
    let r = sample_result(&[1.0, 2.0, 3.0]);
    let doc = to_markdown(&[r]);
    assert!(doc.contains("## smxrun bench scaling") && doc.contains("### scaling") && doc.contains("> INVALID"));
}

#[test]
fn auto_decimals_keep_three_significant_digits() {
    use smx_bench::result::decimals_for;
    assert_eq!(decimals_for(1234.5), 1);
    assert_eq!(decimals_for(12.3), 1);
    assert_eq!(decimals_for(1.23), 2);
    assert_eq!(decimals_for(0.0123), 4);
    assert_eq!(decimals_for(0.0), 1);
}

fn result_with(experiment: &str, cases: Vec<Case>) -> BenchResult {
    BenchResult {
        format: FORMAT_VERSION,
        experiment: experiment.into(),
        command: String::new(),
        machine: header(),
        settings: Default::default(),
        cases,
        tables: Vec::new(),
        notes: Vec::new(),
    }
}

fn case_with(series: &str, params: &[(&str, &str)], runs: &[&[(&str, f64)]]) -> Case {
    let params: Vec<(&str, String)> = params.iter().map(|(k, v)| (*k, v.to_string())).collect();
    let mut case = Case::new(series, &params);
    for metrics in runs {
        let mut run = Run::new();
        for (m, v) in *metrics {
            run.set(m, *v);
        }
        case.push(run);
    }
    case
}

#[test]
fn scaling_table_has_one_row_per_cell_and_the_ratio_to_the_best_peer() {
    let case = |series: &str, p: &str, rate: f64| {
        case_with(
            series,
            &[("pairs", p), ("len", "1"), ("threads", "x")],
            &[&[("msg_rate_hz", rate), ("wall_s", 1.0), ("cpu_s_per_m", 0.5)]],
        )
    };
    let r = result_with(
        "scaling",
        vec![
            case("smx", "1", 900.0),
            case("crossbeam", "1", 1000.0),
            case("crossbeam-spin", "1", 500.0),
            case("smx", "2", 3000.0),
            case("crossbeam", "2", 1000.0),
            case("rtrb", "2", 2000.0),
        ],
    );
    let t = smx_bench::scaling::table(&r, &[1, 2, 4], &[1], false);
    let col = |name: &str| t.columns.iter().position(|c| c == name).unwrap();
    assert_eq!(t.rows.len(), 2, "pair count 4 has no cases and no row");
    assert_eq!(t.rows[0][0], "1", "the first column counts pairs");
    assert_eq!(t.rows[0][col("smx threads")], "-", "no threads recorded in these cases");
    assert_eq!(t.rows[0][col("smx/best peer")], "0.90");
    assert_eq!(
        t.rows[1][col("smx/best peer")],
        "1.50",
        "the best peer of 2 pairs is rtrb"
    );
    assert_eq!(t.rows[0][col("rtrb [k/s]")], "-");
    let with_peer = smx_bench::scaling::table(&r, &[1], &[1], true);
    assert_eq!(with_peer.columns.len(), t.columns.len() + 2);
    assert_eq!(with_peer.rows[0].last().unwrap(), "-");
    let ratios = smx_bench::scaling::ratio_table(&r, &[1, 2], &[1, 64]);
    assert_eq!(ratios.rows[1], ["2", "1.50 (rtrb)", "-"]);
    let charts = smx_bench::scaling::charts(&r);
    assert_eq!(charts.len(), 1);
}

#[test]
fn scaling_ratios_pair_each_round_of_smx_with_the_same_round_of_the_best_peer() {
    let rates = |series: &str, rates: &[f64]| {
        let runs: Vec<Vec<(&str, f64)>> = rates.iter().map(|r| vec![("msg_rate_hz", *r)]).collect();
        let runs: Vec<&[(&str, f64)]> = runs.iter().map(Vec::as_slice).collect();
        case_with(series, &[("pairs", "1"), ("len", "1"), ("threads", "2")], &runs)
    };
    // The machine slows down in round 2: paired, smx is 0.5x to 0.8x of rtrb, although its
    // fast round beats rtrb's slow one.
    let mut smx = rates("smx", &[400.0, 100.0, 300.0]);
    let rtrb = rates("rtrb", &[800.0, 200.0, 375.0]);
    let crossbeam = rates("crossbeam", &[300.0, 150.0, 250.0]);
    let r = result_with("scaling", vec![smx.clone(), rtrb.clone(), crossbeam]);
    let t = smx_bench::scaling::ratio_table(&r, &[1], &[1]);
    assert_eq!(t.rows[0], ["1", "0.80 (rtrb; rounds 0.50-0.80)"]);

    // An invalid round is left out of the pairs, and one pair is no range.
    smx.runs[0].invalidate("a message was lost");
    smx.runs[2].invalidate("a message was lost");
    assert_eq!(smx_bench::scaling::round_ratio_range(&smx, &rtrb, "msg_rate_hz"), None);
    smx.runs[2].valid = true;
    assert_eq!(
        smx_bench::scaling::round_ratio_range(&smx, &rtrb, "msg_rate_hz"),
        Some((0.5, 0.8))
    );
}

#[test]
fn latency_per_hop_is_the_slope_over_hop_counts() {
    // p50 = 2000 ns + 1500 ns per hop, medians of two runs each.
    let cases = [0.0, 1.0, 2.0, 4.0, 8.0]
        .iter()
        .map(|h: &f64| {
            let y = 2000.0 + 1500.0 * h;
            case_with(
                "smx",
                &[("hops", &h.to_string()), ("size", "8")],
                &[
                    &[("latency_p50_ns", y - 100.0), ("latency_p99_ns", 3.0 * y)],
                    &[("latency_p50_ns", y + 100.0), ("latency_p99_ns", 3.0 * y)],
                ],
            )
        })
        .collect();
    let r = result_with("latency", cases);
    let f = smx_bench::latency::fit(&r, "smx", 8, "latency_p50_ns").unwrap();
    assert!(approx(f.slope, 1500.0) && approx(f.intercept, 2000.0) && approx(f.r_squared, 1.0));
    assert!(smx_bench::latency::fit(&r, "raw", 8, "latency_p50_ns").is_none());
    // One row per size and chain: smx, then its raw peer.
    let t = smx_bench::latency::fit_table(&r, &[8, 1024]);
    assert_eq!(t.rows.len(), 4);
    assert_eq!(t.rows[0][1], "smx");
    assert_eq!(t.rows[0][2], "1.50");
    assert_eq!(t.rows[0][3], "2.00");
    assert_eq!(t.rows[0][5], "4.50");
    assert_eq!(t.rows[1][2], "-", "no raw cases: no fit");
    assert_eq!(t.rows[2][2], "-", "no cases of 1024 bytes: no fit");
    let p = smx_bench::latency::percentile_table(&r, &[8], &[0, 1, 2, 4, 8]);
    assert_eq!(p.rows.len(), 5);
    assert_eq!(p.rows[1][3], "3.5");
    assert_eq!(
        smx_bench::latency::poor_fits(&r, &[8]),
        None,
        "a straight line describes the chain"
    );
    // Latency that fell as hops were added (noise) gives a slope that describes nothing: said.
    let falling = [0.0, 1.0, 2.0]
        .iter()
        .map(|h: &f64| {
            let y = 9000.0 - 1000.0 * h;
            case_with(
                "smx",
                &[("hops", &h.to_string()), ("size", "8")],
                &[&[("latency_p50_ns", y), ("latency_p99_ns", 3.0 * y)]],
            )
        })
        .collect();
    let note = smx_bench::latency::poor_fits(&result_with("latency", falling), &[8]).unwrap();
    assert!(
        note.starts_with("per-hop figures that describe nothing: smx p50 at 8 B (r² 1.00), smx p99 at 8 B"),
        "{note}"
    );
}

#[test]
fn tt_table_puts_the_floor_beside_each_pair_count_and_mode() {
    let r = result_with(
        "tt",
        vec![
            case_with(
                "probe",
                &[("period_us", "10")],
                &[&[("misses", 4.0), ("miss_rate_pct", 0.004)]],
            ),
            case_with(
                "smx",
                &[("period_us", "10"), ("pairs", "1"), ("mode", "threads")],
                &[&[("misses", 8.0), ("miss_rate_pct", 0.008)]],
            ),
            case_with(
                "smx",
                &[("period_us", "10"), ("pairs", "1"), ("mode", "cyclic")],
                &[&[("misses", 4.0), ("miss_rate_pct", 0.004)]],
            ),
            case_with(
                "smx",
                &[("period_us", "10"), ("pairs", "3"), ("mode", "threads")],
                &[&[("misses", 30.0), ("miss_rate_pct", 0.01)]],
            ),
        ],
    );
    let modes = [TtMode::Threads, TtMode::Cyclic];
    let t = smx_bench::tt::table(&r, &[std::time::Duration::from_micros(10)], &[1, 3], &modes);
    // 3 pairs ran in one mode only: three rows.
    assert_eq!(t.rows.len(), 3);
    assert_eq!(t.rows[0][0], "10us");
    // period, pairs, mode, misses, vs floor, rate, floor misses
    assert_eq!((t.rows[0][2].as_str(), t.rows[0][3].as_str()), ("threads", "8"));
    assert_eq!((t.rows[0][4].as_str(), t.rows[0][6].as_str()), ("2.00x", "4"));
    assert_eq!((t.rows[1][2].as_str(), t.rows[1][4].as_str()), ("cyclic", "1.00x"));
    assert_eq!(t.rows[2][5], "0.0100");
    let chart = &smx_bench::tt::charts(&r)[0].1;
    assert_eq!(chart.series.len(), 4, "three smx lines and the floor");
}

/// A load average above the CPUs as the experiment began is said: other work shared them.
#[test]
fn a_busy_machine_is_noted() {
    let calm: &[&[(&str, f64)]] = &[&[("wall_s", 1.0)]];
    let mut result = result_with("scaling", vec![case_with("smx", &[("pairs", "1")], calm)]);
    result.machine.cores_allowed = 2;
    result.machine.load_before = Some(1.5);
    result.note_busy_machine();
    assert!(result.notes.is_empty(), "{:?}", result.notes);
    result.machine.load_before = Some(4.56);
    result.note_busy_machine();
    assert_eq!(result.notes.len(), 1, "{:?}", result.notes);
    assert!(
        result.notes[0].starts_with("busy machine: the load average was 4.56 on 2 CPUs"),
        "{}",
        result.notes[0]
    );
}

#[test]
fn runs_that_lost_time_to_the_hypervisor_are_noted_with_the_worst() {
    let runs: &[&[(&str, f64)]] = &[
        &[("wall_s", 1.0), ("steal_ms", 5.0)],
        &[("wall_s", 0.01), ("steal_ms", 10.0)],
        &[("wall_s", 0.5), ("steal_ms", 60.0)],
        &[("wall_s", 2.0), ("steal_ms", 40.0)],
        &[("wall_s", 2.0)],
    ];
    let mut result = result_with("scaling", vec![case_with("smx", &[("pairs", "1")], runs)]);
    result.note_stolen_runs();
    assert_eq!(result.notes.len(), 1, "{:?}", result.notes);
    let note = &result.notes[0];
    assert!(
        note.starts_with("hypervisor steal: 2 of 4 runs lost at least 1 %"),
        "{note}"
    );
    assert!(note.contains("up to 12 % (smx{pairs=1} run 3)"), "{note}");
    // Nothing stolen, or not counted: no note.
    let calm: &[&[(&str, f64)]] = &[&[("wall_s", 1.0), ("steal_ms", 0.0)], &[("wall_s", 1.0)]];
    let mut result = result_with("scaling", vec![case_with("smx", &[("pairs", "1")], calm)]);
    result.note_stolen_runs();
    assert!(result.notes.is_empty(), "{:?}", result.notes);
}
