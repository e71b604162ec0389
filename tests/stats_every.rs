//! `--stats-every DURATION`: one JSON line of live figures per interval, then a final line
//! whose counts are the report's.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn smxrun(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn src_snk() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("nets/src_snk.smx")
        .display()
        .to_string()
}

fn parse_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect()
}

/// `f(line)` never decreases from one line to the next.
fn nondecreasing(lines: &[Value], what: &str, f: impl Fn(&Value) -> Vec<u64>) {
    for pair in lines.windows(2) {
        let (a, b) = (f(&pair[0]), f(&pair[1]));
        assert_eq!(a.len(), b.len());
        assert!(
            a.iter().zip(&b).all(|(x, y)| x <= y),
            "{what} went down: {a:?} -> {b:?}"
        );
    }
}

fn column(rows: &Value, key: &str) -> Vec<u64> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r[key].as_u64().unwrap())
        .collect()
}

#[test]
fn lines_are_monotonic_and_the_last_one_is_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stats.jsonl");
    let out = smxrun(&[
        &src_snk(),
        "-q",
        "--report",
        "json",
        "--stats-every",
        "20ms",
        "--stats-file",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let lines = parse_lines(&std::fs::read_to_string(&file).unwrap());
    assert!(lines.len() >= 2, "{} lines", lines.len());

    for pair in lines.windows(2) {
        assert!(pair[0]["t_s"].as_f64() < pair[1]["t_s"].as_f64(), "timestamps rise");
    }
    for line in &lines {
        let (t, interval) = (line["t_s"].as_f64().unwrap(), line["interval_s"].as_f64().unwrap());
        assert!(interval > 0.0 && interval <= t, "{line}");
        for n in line["nets"].as_array().unwrap() {
            assert!(n["loop_rate"].as_f64().unwrap() >= 0.0);
        }
        for c in line["channels"].as_array().unwrap() {
            assert!(c["fill"].as_u64().unwrap() <= 2 * c["len"].as_u64().unwrap(), "{c}");
            assert!(c["rate"].as_f64().unwrap() >= 0.0);
        }
    }
    let finals: Vec<bool> = lines.iter().map(|l| l["final"].as_bool().unwrap()).collect();
    assert_eq!(finals.iter().filter(|f| **f).count(), 1);
    assert_eq!(finals.last(), Some(&true), "the final line comes last");
    nondecreasing(&lines, "messages", |l| vec![l["messages"].as_u64().unwrap()]);
    nondecreasing(&lines, "loop counts", |l| column(&l["nets"], "loop_count"));
    nondecreasing(&lines, "written", |l| column(&l["channels"], "written"));
    nondecreasing(&lines, "read", |l| column(&l["channels"], "read"));
    for key in ["ticks", "missed_ticks", "overruns", "produce_misses", "consume_misses"] {
        nondecreasing(&lines, key, |l| column(&l["firewalls"], key));
    }

    let last = lines.last().unwrap();
    assert_eq!(last["messages"], report["messages"]);
    assert_eq!(
        column(&last["nets"], "loop_count"),
        column(&report["nets"], "loop_count")
    );
    for key in ["written", "read", "dropped"] {
        assert_eq!(
            column(&last["channels"], key),
            column(&report["channels"], key),
            "{key}"
        );
    }
    for key in ["ticks", "missed_ticks", "overruns"] {
        assert_eq!(
            column(&last["firewalls"], key),
            column(&report["firewalls"], key),
            "{key}"
        );
    }
    let pairs_sum = |key: &str| -> Vec<u64> {
        report["firewalls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| column(&f["pairs"], key).iter().sum())
            .collect()
    };
    assert_eq!(
        column(&last["firewalls"], "produce_misses"),
        pairs_sum("produce_misses")
    );
    assert_eq!(
        column(&last["firewalls"], "consume_misses"),
        pairs_sum("consume_misses")
    );
    let names: Vec<&str> = last["nets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Src#0", "Snk#1", "Src#2", "Snk#3"]);
}

#[test]
fn without_a_file_the_lines_go_to_stderr_and_a_short_run_still_has_its_final_line() {
    let out = smxrun(&[&src_snk(), "-n", "10", "--report", "json", "--stats-every", "3600s"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = parse_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert_eq!(lines[0]["final"], true);
    assert_eq!(column(&lines[0]["nets"], "loop_count"), [10, 10, 10, 10]);
}

#[test]
fn a_bad_interval_is_an_error_naming_the_flag() {
    for bad in ["soon", "0", "10us", ""] {
        let out = smxrun(&[&src_snk(), "-n", "10", "--stats-every", bad]);
        assert_eq!(out.status.code(), Some(1), "{bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--stats-every"), "{bad}: {stderr}");
        // The examples it gives are intervals it takes.
        assert!(!stderr.contains("10us,"), "{bad}: {stderr}");
        assert!(out.stdout.is_empty());
    }
    let out = smxrun(&[&src_snk(), "-n", "10", "--stats-file", "/tmp/x.jsonl"]);
    assert_eq!(out.status.code(), Some(1), "--stats-file needs --stats-every");
    let out = smxrun(&[
        &src_snk(),
        "-n",
        "10",
        "--stats-every",
        "1s",
        "--stats-file",
        "/nonexistent/s.jsonl",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--stats-file /nonexistent/s.jsonl"));
}
