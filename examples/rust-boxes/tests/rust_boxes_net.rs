//! The example net through the example binary, that is through the whole `smxrun` command
//! line with this crate's boxes added: the books of every channel and box.

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The example net without its `tt[...]`: every row reaches the detector whatever the load.
const FREE_RUNNING: &str = "Read = box csv_source( out value )
Smooth = box moving_average( up in value, down out value )
Detect = box threshold( up in value, down out events )
Print = box smx_snk_dump( in events(data) )
connect Read.Smooth.Detect.Print
";

/// A directory of its own for one run's files, removed when dropped.
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("smx-example-boxes-").tempdir().unwrap()
}

fn run(args: &[&str]) -> (std::process::Output, serde_json::Value) {
    run_net("nets/rust_boxes.smx", args)
}

fn run_net(net: &str, args: &[&str]) -> (std::process::Output, serde_json::Value) {
    let dir = scratch();
    let report = dir.path().join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_smx-example-boxes"))
        .current_dir(repo())
        .arg(net)
        .args(["--report", "json", "-q", "-o"])
        .arg(&report)
        .args(args)
        .output()
        .unwrap();
    let json = std::fs::read_to_string(&report)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(serde_json::Value::Null);
    (out, json)
}

fn net_row<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["nets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .unwrap()
}

#[test]
fn every_row_reaches_the_detector_and_each_crossing_is_printed_once() {
    let dir = scratch();
    let net = dir.path().join("free_running.smx");
    std::fs::write(&net, FREE_RUNNING).unwrap();
    let (out, report) = run_net(net.to_str().unwrap(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(report["status"], "ok");
    let written: Vec<u64> = report["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["written"].as_u64().unwrap())
        .collect();
    let read: Vec<u64> = report["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["read"].as_u64().unwrap())
        .collect();
    assert_eq!(
        (written.as_slice(), read.as_slice()),
        (&[600, 600, 2][..], &[600, 600, 2][..])
    );
    assert_eq!(net_row(&report, "Read")["stats"]["rows"], 600);
    assert_eq!(net_row(&report, "Smooth")["stats"]["smoothed"], 600);
    assert_eq!(net_row(&report, "Detect")["stats"]["rises"], 1);
    assert_eq!(net_row(&report, "Detect")["stats"]["falls"], 1);
    let printed = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 2, "{printed}");
    assert!(lines[0].starts_with("rise seq=30"), "{printed}");
    assert!(lines[1].starts_with("fall seq="), "{printed}");
}

/// With `tt[1ms]` the firewall hands the smoother the latest row at each tick: a row the
/// smoother had not taken by the next tick is overwritten (a consume miss). Every row is still
/// booked exactly once.
#[test]
fn the_time_triggered_net_books_every_row() {
    let (out, report) = run(&[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(report["status"], "ok");
    for channel in report["channels"].as_array().unwrap() {
        let n = |k: &str| channel[k].as_u64().unwrap();
        assert_eq!(
            n("written"),
            n("read") + n("overwritten") + n("dropped") + n("left"),
            "{channel}"
        );
    }
    let c = &report["channels"][0];
    assert_eq!(c["written"], 600);
    let pair = &report["firewalls"][0]["pairs"][0];
    assert_eq!(pair["producer"], "Read#0");
    // What the firewall forwarded was read or overwritten at the smoother's side.
    assert_eq!(pair["consume_misses"], c["overwritten"], "{pair} {c}");
    let forwarded = pair["forwarded"].as_u64().unwrap();
    assert_eq!(
        forwarded,
        c["read"].as_u64().unwrap() + c["overwritten"].as_u64().unwrap(),
        "{pair} {c}"
    );
    assert_eq!(net_row(&report, "Smooth")["stats"]["smoothed"], c["read"]);
    let events = net_row(&report, "Detect")["stats"]["rises"].as_u64().unwrap()
        + net_row(&report, "Detect")["stats"]["falls"].as_u64().unwrap();
    assert_eq!(net_row(&report, "Print")["stats"]["printed"].as_u64().unwrap(), events);
}

#[test]
fn the_boxes_config_keys_reach_them_through_set() {
    let (out, report) = run(&[
        "--set",
        "Detect.above=21",
        "--set",
        "Smooth.mode=ewma",
        "--set",
        "Smooth.alpha=0.1",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rises = net_row(&report, "Detect")["stats"]["rises"].as_u64().unwrap();
    assert!(
        rises >= 2,
        "a threshold inside the sine's range crosses more than once: {rises}"
    );
}

#[test]
fn a_bad_value_and_a_missing_file_stop_the_run_with_the_cause() {
    let (out, _) = run(&["--set", "Smooth.window=0"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("window"));
    let (out, report) = run(&["--set", "Read.path=/nonexistent/sensor.csv"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    let failed = report["nets"]
        .as_array()
        .map_or(stderr.contains("/nonexistent/sensor.csv"), |_| {
            net_row(&report, "Read")["error"]
                .as_str()
                .unwrap_or("")
                .contains("/nonexistent/sensor.csv")
        });
    assert!(failed, "{stderr} {report}");
}

#[test]
fn check_and_boxes_know_the_crates_boxes() {
    let bin = env!("CARGO_BIN_EXE_smx-example-boxes");
    let check = Command::new(bin)
        .current_dir(repo())
        .args(["check", "nets/rust_boxes.smx"])
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    let boxes = Command::new(bin).args(["boxes", "moving_average"]).output().unwrap();
    let text = String::from_utf8(boxes.stdout).unwrap();
    assert!(text.contains("in value") && text.contains("window"), "{text}");
}
