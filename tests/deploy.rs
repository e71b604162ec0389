//! One net over several processes: placement checks, links at the cuts, supervision (a killed
//! slice, a killed parent), split and merge, CURVE, large payloads, and several hosts simulated
//! by network namespaces the tests make themselves (skipped when not root).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const NET: &str = "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n";

fn smxrun() -> Command {
    Command::new(env!("CARGO_BIN_EXE_smxrun"))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `smxrun NET --config CONFIG --report json ARGS` and returns the exit and the report.
fn run_json(dir: &Path, net: &str, config: &str, args: &[&str]) -> (Output, Value) {
    let net = write(dir, "net.smx", net);
    let config = write(dir, "deploy.toml", config);
    let report = dir.join("report.json");
    let out = smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["--report", "json", "-q", "-o"])
        .arg(&report)
        .args(args)
        .output()
        .unwrap();
    let value = std::fs::read_to_string(&report)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (out, value)
}

/// Every channel's books balance across its processes.
fn assert_books_balance(report: &Value) {
    for c in report["channels"].as_array().unwrap() {
        let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k} of {c}"));
        let lost = c["link"]["lost"].as_u64().unwrap_or(0);
        assert_eq!(
            n("written"),
            n("read") + n("overwritten") + n("dropped") + n("left") + lost,
            "books of {c}"
        );
    }
}

fn process<'r>(report: &'r Value, name: &str) -> &'r Value {
    report["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no process {name} in {report}"))
}

#[test]
fn two_processes_on_this_machine_make_one_report() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let (out, report) = run_json(dir.path(), NET, config, &["-n", "20000"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(report["format_version"], 4);
    assert_eq!(process(&report, "main")["status"], "ok");
    assert_eq!(process(&report, "sinks")["status"], "ok");
    assert!(process(&report, "sinks")["pid"].as_u64().is_some());
    let nets = report["nets"].as_array().unwrap();
    assert_eq!(nets.len(), 2, "link boxes are not nets of the report: {nets:?}");
    assert_eq!(
        (nets[0]["name"].as_str(), nets[0]["process"].as_str()),
        (Some("Src"), Some("main"))
    );
    assert_eq!(
        (nets[1]["name"].as_str(), nets[1]["process"].as_str()),
        (Some("Snk"), Some("sinks"))
    );
    assert_eq!(nets[1]["loop_count"], 20000);
    let channel = &report["channels"][0];
    assert_eq!(channel["written"], 20000);
    assert_eq!(channel["read"], 20000);
    assert_eq!(channel["link"]["lost"], 0);
    assert_eq!(channel["link"]["curve"], false);
    assert_eq!(channel["link"]["clocks_comparable"], true);
    assert_books_balance(&report);
}

#[test]
fn check_names_placement_errors_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "net.smx", NET);
    let check = |config: &str| {
        let path = write(dir.path(), "c.toml", config);
        let out = smxrun()
            .arg("check")
            .arg(&net)
            .arg("--config")
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = check("[net.Snk]\n\nprocess = \"nowhere\"\n");
    assert!(
        err.contains("c.toml:3: key 'process' of net 'Snk': unknown process 'nowhere'"),
        "{err}"
    );
    let err = check("[process.far]\nhost = \"192.0.2.9\"\n");
    assert!(
        err.contains("c.toml:1: process 'far': host '192.0.2.9' is not an address of this machine"),
        "{err}"
    );
    let err = check("[process.x]\nlaunch = \"ssh h\"\n");
    assert!(
        err.contains("c.toml:1: process 'x': `launch` starts it elsewhere"),
        "{err}"
    );
    let tt = write(
        dir.path(),
        "tt.smx",
        "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect tt[1ms](Src.Snk)\n",
    );
    let config = write(dir.path(), "tt.toml", "[process.b]\n[net.Snk]\nprocess = \"b\"\n");
    let out = smxrun()
        .arg("check")
        .arg(&tt)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "tt.smx:3: channel Src.data -> Snk.data between processes 'main' and 'b' crosses a temporal firewall"
        ),
        "{err}"
    );
    // The run refuses what check refuses, before anything starts.
    let out = smxrun().arg(&tt).arg("--config").arg(&config).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}

/// The pids whose parent is `parent`.
fn children_of(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let after = &stat[stat.rfind(')').unwrap_or(0) + 1..];
        let ppid = after.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s[s.rfind(')').unwrap_or(0) + 1..].trim_start().starts_with('Z'))
        .unwrap_or(false)
}

/// Waits (without a deadline that decides the test: a hang shows as the guard's failure) for
/// `what` to become true.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let guard = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < guard, "still waiting for {what} after a minute");
        std::thread::sleep(Duration::from_millis(20));
    }
}

const ENDLESS: &str = "[process.sinks]\n\n[net.Src]\ncount = 0\n\n[net.Snk]\nprocess = \"sinks\"\n";

fn start_endless(dir: &Path) -> std::process::Child {
    let net = write(dir, "net.smx", NET);
    let config = write(dir, "deploy.toml", ENDLESS);
    smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["--report", "json", "-q", "-o"])
        .arg(dir.join("report.json"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_slice_ends_the_run_with_a_report_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let parent = start_endless(dir.path());
    let mut slices = Vec::new();
    wait_for("two slices", || {
        slices = children_of(parent.id());
        slices.len() == 2
    });
    // The slices start in placement order: main, then sinks.
    slices.sort();
    let sinks = slices[1];
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(sinks as i32, libc::SIGKILL) };
    let out = parent.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("process 'sinks'") && stderr.contains("died") && stderr.contains("signal 9"),
        "{stderr}"
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "failed");
    let sinks_row = process(&report, "sinks");
    assert_eq!(
        (sinks_row["status"].as_str(), sinks_row["signal"].as_i64()),
        (Some("died"), Some(9))
    );
    assert_eq!(report["nets"][1]["status"], "lost");
    let link = &report["channels"][0]["link"];
    assert_eq!(link["lost_side"], "sinks");
    assert!(link["lost"].as_u64().unwrap() > 0, "{link}");
    for pid in slices {
        assert!(!alive(pid), "slice {pid} outlived the run");
    }
}

#[test]
fn a_parent_killed_with_sigkill_leaves_no_slice_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut parent = start_endless(dir.path());
    let mut slices = Vec::new();
    wait_for("two slices", || {
        slices = children_of(parent.id());
        slices.len() == 2
    });
    parent.kill().unwrap();
    parent.wait().unwrap();
    for pid in slices {
        wait_for("the slice to end with its parent", || !alive(pid));
    }
}

#[test]
fn sigterm_stops_every_process_and_the_report_covers_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let parent = start_endless(dir.path());
    let mut slices = Vec::new();
    wait_for("two slices", || {
        slices = children_of(parent.id());
        slices.len() == 2
    });
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(parent.id() as i32, libc::SIGTERM) };
    let out = parent.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(process(&report, "main")["status"].as_str(), Some("ended"));
    assert!(report["channels"][0]["read"].as_u64().unwrap() > 0);
    assert_books_balance(&report);
    for pid in slices {
        assert!(!alive(pid));
    }
}

#[test]
fn a_64_mib_payload_crosses_processes() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.sinks]\n\n[net.Src]\ncount = 3\nsize = 67108864\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let (out, report) = run_json(dir.path(), NET, config, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(report["channels"][0]["read"], 3);
    assert_eq!(report["channels"][0]["link"]["lost"], 0);
    assert_books_balance(&report);
}

#[test]
fn split_writes_private_slices_whose_reports_merge_into_one() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "net.smx", NET);
    let config = write(
        dir.path(),
        "deploy.toml",
        "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n",
    );
    let out_dir = dir.path().join("out");
    let out = smxrun()
        .arg("split")
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .arg("-o")
        .arg(&out_dir)
        .args(["-n", "5000"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    for name in ["main.job", "sinks.job", "main.sh", "sinks.sh", "smx-sinks.service"] {
        let mode = std::fs::metadata(out_dir.join(name)).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{name} is readable by others: {mode:o}");
    }
    let unit = std::fs::read_to_string(out_dir.join("smx-sinks.service")).unwrap();
    assert!(
        unit.contains("ExecStart=") && unit.contains("CPUSchedulingPolicy="),
        "{unit}"
    );
    let children: Vec<_> = ["sinks", "main"]
        .iter()
        .map(|p| Command::new("sh").arg(out_dir.join(format!("{p}.sh"))).spawn().unwrap())
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let out = smxrun()
        .args(["report", "merge", "--format", "json"])
        .arg(out_dir.join("main.report.json"))
        .arg(out_dir.join("sinks.report.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["channels"][0]["read"], 5000);
    assert_eq!(report["channels"][0]["link"]["lost"], 0);
    assert_eq!(report["nets"][1]["process"], "sinks");
    assert_books_balance(&report);
}
