//! The report of a net over several processes reads as one process's report does: the same
//! channel kinds, sections, columns and JSON keys, with the processes and links on top; and
//! `smxrun report merge` refuses what it cannot merge.

mod common;
use common::deploy::{smxrun, split, text, write};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const PAIRS: &str = "Src = box smx_src_rand(out data)\nSnk = box smx_snk_null(in data)\nconnect Src.Snk\n";
const TWO: &str = "[process.b]\n[net.Snk]\nprocess = \"b\"\n";

/// `Src`, `Fwd` and `Snk` in a line, placed by [`LINE_PLACED`] over three processes.
const LINE: &str = "Src = box smx_src_rand(out data)\nFwd = box smx_fwd(up in data, down out data)\n\
                    Snk = box smx_snk_null(in data)\nconnect Src.Fwd.Snk\n";
const LINE_PLACED: &str =
    "[process.analysis]\n[process.store]\n[net.Fwd]\nprocess = \"analysis\"\n[net.Snk]\nprocess = \"store\"\n";

/// Starts the script of `process` in a split's `out_dir`, its output dropped.
fn start_slice(out_dir: &Path, process: &str) -> std::process::Child {
    Command::new("sh")
        .arg(out_dir.join(format!("{process}.sh")))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// `Snk` in process `b`, started through a `launch` on this machine as on another host, so
/// that its link is ZeroMQ over tcp from `port`.
fn over_tcp(port: u16) -> String {
    format!(
        "[process.b]\nhost = \"127.0.0.1\"\nlaunch = \"/usr/bin/env\"\nport = {port}\n\n[net.Snk]\nprocess = \"b\"\n"
    )
}

/// Runs `smxrun NET [--config CONFIG] --report FORMAT ARGS`; the exit and the report's text.
fn run(dir: &Path, net: &str, config: Option<&str>, format: &str, args: &[&str]) -> (Output, String) {
    let net = write(dir, "net.smx", net);
    let report = dir.join(format!("report.{format}"));
    let mut cmd = smxrun();
    cmd.arg(&net);
    if let Some(config) = config {
        cmd.arg("--config").arg(write(dir, "deploy.toml", config));
    }
    let out = cmd
        .args(["--report", format, "-q", "-o"])
        .arg(&report)
        .args(args)
        .output()
        .unwrap();
    (out, std::fs::read_to_string(&report).unwrap_or_default())
}

fn json(out: &Output, report: &str) -> Value {
    serde_json::from_str(report).unwrap_or_else(|e| panic!("{e}: {report}\n{}", text(out)))
}

/// The repository's nets/src_snk.smx over nets/src_snk_two_procs.toml.
fn repo(path: &str) -> String {
    format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))
}

/// The header line of the table titled `title` in a text report.
fn header<'t>(report: &'t str, title: &str) -> &'t str {
    let mut lines = report.lines().skip_while(|l| *l != title);
    lines.next().unwrap_or_else(|| panic!("no {title} table in:\n{report}"));
    lines.next().unwrap_or("")
}

fn columns(header: &str) -> Vec<&str> {
    header.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect()
}

#[test]
fn a_cut_channel_into_a_decoupled_input_keeps_its_kind() {
    let net = "Src = box smx_src_rand(out data)\nDmp = box smx_snk_null(decoupled in data)\nconnect Src.Dmp\n";
    let config = "[process.b]\n[net.Dmp]\nprocess = \"b\"\n";
    let one_dir = tempfile::tempdir().unwrap();
    let (out, one) = run(one_dir.path(), net, None, "json", &["-n", "200"]);
    assert!(out.status.success(), "{}", text(&out));
    let one = json(&out, &one);
    let dir = tempfile::tempdir().unwrap();
    let (out, merged) = run(dir.path(), net, Some(config), "json", &["-n", "200"]);
    assert!(out.status.success(), "{}", text(&out));
    let merged = json(&out, &merged);
    let (a, b) = (&one["channels"][0], &merged["channels"][0]);
    assert!(b["link"].is_object(), "the channel is cut: {b}");
    for key in ["kind", "smx_type", "timing"] {
        assert_eq!(a[key], b[key], "{key}: one process {a}, several {b}");
    }
    assert_eq!(b["kind"], "decoupled_consumer");
    assert_eq!(b["smx_type"], "FIFO_D");
}

#[test]
fn a_cut_channel_out_of_a_decoupled_output_stays_decoupled_on_the_producers_side() {
    let net = "Src = box smx_src_rand(decoupled out data)\nSnk = box smx_snk_null(in data)\nconnect Src.Snk\n";
    let dir = tempfile::tempdir().unwrap();
    let (out, merged) = run(dir.path(), net, Some(TWO), "json", &["-n", "200"]);
    assert!(out.status.success(), "{}", text(&out));
    let merged = json(&out, &merged);
    assert_eq!(merged["channels"][0]["smx_type"], "D_FIFO");
    assert_eq!(merged["channels"][0]["kind"], "decoupled_producer");
}

#[test]
fn the_merged_json_has_the_keys_of_one_process_and_no_empty_section() {
    let one_dir = tempfile::tempdir().unwrap();
    let (out, one) = run(one_dir.path(), PAIRS, None, "json", &["-n", "1000"]);
    assert!(out.status.success(), "{}", text(&out));
    let one = json(&out, &one);
    let dir = tempfile::tempdir().unwrap();
    let (out, merged) = run(dir.path(), PAIRS, Some(TWO), "json", &["-n", "1000"]);
    assert!(out.status.success(), "{}", text(&out));
    let merged = json(&out, &merged);
    for key in one.as_object().unwrap().keys() {
        assert!(merged.get(key).is_some(), "the merged report lacks `{key}`: {merged}");
    }
    for (name, rows) in merged["sections"].as_object().unwrap() {
        assert!(
            !rows.as_array().unwrap().is_empty(),
            "section {name} is empty: {merged}"
        );
    }
    let latency = &merged["latency"];
    assert_eq!(latency["mode"], one["latency"]["mode"]);
    assert_eq!(latency["every"], one["latency"]["every"]);
    let sinks = latency["sinks"].as_array().unwrap();
    assert_eq!(sinks.len(), 1, "the link's boxes are no sinks: {latency}");
    assert_eq!(
        (&sinks[0]["name"], &sinks[0]["id"]),
        (&Value::from("Snk"), &Value::from(1))
    );
    let paths = latency["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 1, "{latency}");
    assert_eq!(
        (&paths[0]["from"], &paths[0]["to"]),
        (&Value::from("Src"), &Value::from("Snk")),
        "a path across the link starts at the source of the whole net: {latency}"
    );
    assert!(merged["probes"].is_array());
}

#[test]
fn the_merged_text_has_the_sections_and_columns_of_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let out = smxrun()
        .arg(repo("nets/src_snk.smx"))
        .arg("--config")
        .arg(repo("nets/src_snk_two_procs.toml"))
        .args(["-n", "2000", "-q", "-o"])
        .arg(dir.path().join("report.txt"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report = std::fs::read_to_string(dir.path().join("report.txt")).unwrap();
    assert!(report.starts_with("Asked: "), "what was asked comes first:\n{report}");
    let nets = columns(header(&report, "Nets"));
    for c in [
        "id",
        "net",
        "impl",
        "process",
        "core",
        "loop count",
        "loop rate [1/s]",
        "wall time [s]",
        "status",
    ] {
        assert!(nets.contains(&c), "Nets lacks `{c}`: {nets:?}");
    }
    let channels = columns(header(&report, "Channels"));
    for c in [
        "port",
        "kind",
        "timing",
        "len",
        "written",
        "read",
        "overwritten",
        "duplicated",
        "dropped",
        "left",
        "lost",
        "latency p50/p99/p99.9/max (samples)",
    ] {
        assert!(channels.contains(&c), "Channels lacks `{c}`: {channels:?}");
    }
    assert!(report.contains("\nTemporal firewalls ("), "{report}");
    assert!(report.contains("\nEnd-to-end latency ("), "{report}");
    // The verdict on the firewall's period, held or not, whatever this machine managed.
    assert!(
        report.contains("\nPeriod 10.0us: held") || report.contains("\nAttention: period 10.0us"),
        "{report}"
    );
    assert!(
        !report.contains("\\'"),
        "nothing escaped that needs no escape:\n{report}"
    );
}

/// A split net's two slices, run to their end; the paths of their reports.
fn split_and_run(dir: &Path) -> [PathBuf; 2] {
    run_slices(&split(dir, PAIRS, TWO, &["-n", "1"]))
}

/// Runs the two slices' scripts in `out_dir` together to their end; the paths of their reports.
fn run_slices(out_dir: &Path) -> [PathBuf; 2] {
    let children: Vec<_> = ["b", "main"].iter().map(|p| start_slice(out_dir, p)).collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    [out_dir.join("main.report.json"), out_dir.join("b.report.json")]
}

#[test]
fn report_merge_shows_what_was_asked_and_counts_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let [main, b] = split_and_run(dir.path());
    let out = smxrun().args(["report", "merge"]).arg(&main).arg(&b).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.starts_with("Asked: report merge "), "{report}");
    assert!(report.contains(", 2 boxes, 1 channel\n"), "{report}");
    assert!(report.contains(", 1 message, "), "one message is a message:\n{report}");
    let processes = header(&report, "Processes");
    let row = report
        .lines()
        .find(|l| l.starts_with("b "))
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(
        row.find("(this machine)"),
        processes.find("host"),
        "the host column starts under its header:\n{report}"
    );
}

#[test]
fn report_merge_into_a_missing_directory_names_that_directory() {
    let dir = tempfile::tempdir().unwrap();
    let [main, b] = split_and_run(dir.path());
    let missing = dir.path().join("missing").join("merged.txt");
    let out = smxrun()
        .args(["report", "merge"])
        .arg(&main)
        .arg(&b)
        .arg("-o")
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("cannot write '{}'", missing.display())) && !err.contains(".smxrun-"),
        "{err}"
    );
}

#[test]
fn report_merge_refuses_the_smx_format() {
    let dir = tempfile::tempdir().unwrap();
    let [main, b] = split_and_run(dir.path());
    let out = smxrun()
        .args(["report", "merge", "--format", "smx"])
        .arg(&main)
        .arg(&b)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(out.stdout.is_empty(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("smx is one process's log"), "{err}");
    let help = smxrun().args(["report", "merge", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("text|json") && !help.contains("smx]"), "{help}");
}

#[test]
fn report_merge_refuses_a_process_given_twice_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let [main, _] = split_and_run(dir.path());
    let out = smxrun()
        .args(["report", "merge"])
        .arg(&main)
        .arg(&main)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        out.stdout.is_empty(),
        "no report of a process that did not die: {}",
        text(&out)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&main.display().to_string()) && err.contains("process 'main'"),
        "{err}"
    );
}

#[test]
fn report_merge_refuses_a_damaged_plan_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let [main, b] = split_and_run(dir.path());
    // Both reports carry the same damaged plan, as if the split had written it.
    let damage = |path: &Path, name: &str| {
        let mut report: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        report["plan"]["slices"][0]["origins"][0] = serde_json::json!({"node": 999});
        write(dir.path(), name, &report.to_string())
    };
    let out = smxrun()
        .args(["report", "merge"])
        .arg(damage(&main, "main.json"))
        .arg(damage(&b, "b.json"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("plan") && !err.contains("panicked"), "{err}");
    // One damaged beside one whole: two splits, each file named.
    let out = smxrun()
        .args(["report", "merge"])
        .arg(&b)
        .arg(damage(&main, "main.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "main.json: the report of another split than {}'s",
            b.display()
        )),
        "{err}"
    );
}

/// The scripts of a split written by [`split_and_run`] run once more; the reports' paths.
fn run_again(main: &Path) -> [PathBuf; 2] {
    // A slice never replaces a report: the earlier run's go first, as a user moves them away.
    let out_dir = main.parent().unwrap();
    for process in ["main", "b"] {
        std::fs::remove_file(out_dir.join(format!("{process}.report.json"))).unwrap();
    }
    run_slices(out_dir)
}

/// Runs the split in `out_dir` twice and merges the first run's report of `main` with the
/// second's of `b` (after checking that one run's reports merge); the merge's output and the
/// two files it was given.
fn merge_of_two_runs(dir: &Path, out_dir: &Path) -> (Output, PathBuf, PathBuf) {
    let [main, _] = run_slices(out_dir);
    let first_main = write(dir, "main.first.json", &std::fs::read_to_string(&main).unwrap());
    let [main, b] = run_again(&main);
    let out = smxrun().args(["report", "merge"]).arg(&main).arg(&b).output().unwrap();
    assert!(out.status.success(), "one run merges: {}", text(&out));
    let out = smxrun()
        .args(["report", "merge"])
        .arg(&first_main)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(out.stdout.is_empty(), "{}", text(&out));
    (out, first_main, b)
}

#[test]
fn report_merge_refuses_reports_of_different_runs_naming_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = split(dir.path(), PAIRS, TWO, &["-n", "1"]);
    let (out, first_main, b) = merge_of_two_runs(dir.path(), &out_dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&first_main.display().to_string())
            && err.contains(&b.display().to_string())
            && err.contains("different runs"),
        "{err}"
    );
}

/// Over tcp between two "hosts" (both here, `b` started through `launch`), the two ends' clocks
/// are not known to be one: the link's sender id, which the receiver books, tells the runs apart.
#[test]
fn report_merge_refuses_reports_of_different_runs_across_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let config = &over_tcp(27540);
    let out_dir = split(dir.path(), PAIRS, config, &["-n", "10"]);
    let (out, first_main, b) = merge_of_two_runs(dir.path(), &out_dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "error: {} and {}: reports of different runs of the split: link 0 (main -> b) was sent by sender ",
            first_main.display(),
            b.display()
        )),
        "{err}"
    );
}

/// A report edited by hand with a negative count, a count beyond 2^64 - 1 or a layout no slice
/// writes is refused, naming the file and the field; one whose books no longer balance is
/// merged with a warning naming the channel, and an exit code that says its books are not clean.
#[test]
fn report_merge_refuses_edited_numbers_and_flags_books_that_do_not_balance() {
    let dir = tempfile::tempdir().unwrap();
    let [main, b] = split_and_run(dir.path());
    let text_of = |path: &Path| std::fs::read_to_string(path).unwrap();
    let edited = |name: &str, edit: &dyn Fn(&mut Value)| {
        let mut report: Value = serde_json::from_str(&text_of(&b)).unwrap();
        edit(&mut report);
        write(dir.path(), name, &report.to_string())
    };
    let beyond = {
        let mut report: Value = serde_json::from_str(&text_of(&b)).unwrap();
        report["channels"][0]["written"] = serde_json::json!(424_242_424_242u64);
        let text = report.to_string().replace("424242424242", "18446744073709551616");
        write(dir.path(), "beyond.json", &text)
    };
    let cases = [
        (
            edited("negative.json", &|r| r["channels"][0]["read"] = serde_json::json!(-1)),
            "channels[0].read",
        ),
        (beyond, "channels[0].written"),
        (
            edited("version.json", &|r| r["format_version"] = serde_json::json!(99)),
            "format_version",
        ),
        (
            edited("loops.json", &|r| r["nets"][0]["loop_count"] = serde_json::json!(-3)),
            "nets[0].loop_count",
        ),
    ];
    for (path, field) in cases {
        let out = smxrun()
            .args(["report", "merge"])
            .arg(&main)
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{field}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{}: {field}: ", path.display())),
            "{field}: {err}"
        );
    }
    // The consumer's side says it read one more than the producer's wrote.
    let more = edited("more.json", &|r| {
        let read = r["channels"][0]["read"].as_u64().unwrap();
        r["channels"][0]["read"] = serde_json::json!(read + 1);
    });
    let out = smxrun()
        .args(["report", "merge"])
        .arg(&main)
        .arg(&more)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("warning: channel 0 (Src#0 -> Snk#1): its books do not balance")),
        "{err}"
    );
    // The report says so as well, in its warnings and its Attention line: a saved report is
    // read without the stderr of the merge that wrote it.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let attention = stdout.lines().find(|l| l.starts_with("Attention:"));
    assert!(attention.is_some_and(|l| l.contains("1 warning")), "{stdout}");
    let out = smxrun()
        .args(["report", "merge", "--json"])
        .arg(&main)
        .arg(&more)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let merged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = merged["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.starts_with("channel 0 (Src#0 -> Snk#1): its books do not balance"))),
        "{merged}"
    );
}

/// What `report merge` reads is capped, as a net file is: a device that never ends is refused
/// once past the limit.
#[test]
fn report_merge_reads_no_more_than_a_report_can_hold() {
    let mut merge = smxrun()
        .args(["report", "merge", "/dev/zero"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A hang guard: it reads a limited amount, then refuses.
    let guard = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while merge.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > guard {
            merge.kill().unwrap();
            panic!("report merge /dev/zero still reading after a minute");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = merge.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("/dev/zero: larger than the limit"),
        "{}",
        text(&out)
    );
}

/// `-o` onto one of the reports merged would replace it: refused, the report kept.
#[test]
fn report_merge_refuses_to_write_over_one_of_its_reports() {
    let dir = tempfile::tempdir().unwrap();
    let [main, b] = split_and_run(dir.path());
    let before = std::fs::read_to_string(&b).unwrap();
    let out = smxrun()
        .args(["report", "merge"])
        .arg(&main)
        .arg(&b)
        .arg("-o")
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("is the report '{}'", b.display())),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read_to_string(&b).unwrap(), before);
}

/// `-o` onto a file that holds no report (the split's job and start script beside the reports,
/// the net) would replace what the report cannot give back: refused, the file kept. A report
/// written there before is written over, as a merge writes it again.
#[test]
fn report_merge_refuses_to_write_over_a_file_that_is_no_report() {
    let dir = tempfile::tempdir().unwrap();
    let [main, b] = split_and_run(dir.path());
    let out_dir = main.parent().unwrap();
    let merge_into = |target: &Path, format: &str| {
        smxrun()
            .args(["report", "merge", "--format", format])
            .arg(&main)
            .arg(&b)
            .arg("-o")
            .arg(target)
            .output()
            .unwrap()
    };
    for kept in [
        out_dir.join("main.job"),
        out_dir.join("b.sh"),
        dir.path().join("net.smx"),
    ] {
        let before = std::fs::read(&kept).unwrap();
        let out = merge_into(&kept, "text");
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!(
                "error: -o '{}' holds something other than a report",
                kept.display()
            )),
            "{}",
            text(&out)
        );
        assert_eq!(std::fs::read(&kept).unwrap(), before, "{}", kept.display());
    }
    for format in ["text", "json"] {
        let merged = dir.path().join(format!("merged.{format}"));
        for _ in 0..2 {
            let out = merge_into(&merged, format);
            assert_eq!(out.status.code(), Some(0), "{format}: {}", text(&out));
        }
    }
}

/// A file that is no slice's report says what it is instead: the report of a run in one
/// process (even named as a slice's report is), a merged report, a job.
#[test]
fn report_merge_says_what_a_file_that_is_no_slices_report_is() {
    let dir = tempfile::tempdir().unwrap();
    let [main, b] = split_and_run(dir.path());
    let one = dir.path().join("main.report.json");
    let (out, _) = run(dir.path(), PAIRS, None, "json", &["-n", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::rename(dir.path().join("report.json"), &one).unwrap();
    let merged = dir.path().join("merged.json");
    let out = smxrun()
        .args(["report", "merge", "--format", "json", "-o"])
        .arg(&merged)
        .arg(&main)
        .arg(&b)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    for (file, what) in [
        (one, "the report of a run in one process, not of a slice"),
        (merged, "the merged report of a whole net"),
    ] {
        let out = smxrun().args(["report", "merge"]).arg(&file).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("{}: {what}", file.display())), "{err}");
        assert!(!err.contains("(those are NAME.report.json)"), "{err}");
    }
}

/// A `--job FILE` that holds no job is named as the file, not as stdin.
#[test]
fn a_bad_job_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let job = write(dir.path(), "bad.job", "{\"x\": 1}\n");
    let out = smxrun().args(["__slice", "--job"]).arg(&job).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}: not a slice's job", job.display())), "{err}");
    assert!(!err.contains("stdin"), "{err}");
}

/// Every `Name#id` in the merged report's lines names a node of the whole net by its id there,
/// as the tables show it, not by its id in its process's slice; a link box has no id of the
/// whole net and is named without one.
#[test]
fn the_lines_of_each_process_name_nodes_as_the_whole_net_does() {
    let dir = tempfile::tempdir().unwrap();
    // One core for every process: each chains its two threads and says so, naming both.
    let (out, report) = run(dir.path(), PAIRS, Some(TWO), "json", &["-n", "2000", "--pin", "0"]);
    let report = json(&out, &report);
    let nets: Vec<(u64, &str)> = report["nets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_u64().unwrap(), n["name"].as_str().unwrap()))
        .collect();
    let lines: Vec<&str> = ["notes", "warnings"]
        .iter()
        .flat_map(|key| report[key].as_array().unwrap())
        .filter_map(Value::as_str)
        .collect();
    assert!(
        report["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().starts_with("b: chaining:")),
        "{lines:?}"
    );
    for line in &lines {
        for (at, _) in line.match_indices('#') {
            let label: String = line[..at]
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let id: String = line[at + 1..].chars().take_while(char::is_ascii_digit).collect();
            let Ok(id) = id.parse::<u64>() else { continue };
            assert!(!label.starts_with("link"), "a link box with a slice's id: {line}");
            assert!(
                nets.contains(&(id, label.as_str())),
                "{label}#{id} is no node of the net: {line}"
            );
        }
    }
}

/// A path through two links, from a source in one process through a box in a second to a sink
/// in a third, has its end-to-end latency, as in one process.
#[test]
fn a_path_across_three_processes_has_its_end_to_end_latency() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.a]\n[process.b]\n[process.c]\n[net.Src]\nprocess = \"a\"\n\
                  [net.Fwd]\nprocess = \"b\"\n[net.Snk]\nprocess = \"c\"\n";
    let (out, report) = run(
        dir.path(),
        LINE,
        Some(config),
        "json",
        &["-n", "5000", "--latency", "full"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = json(&out, &report);
    let paths = report["latency"]["paths"].as_array().unwrap();
    assert!(
        paths
            .iter()
            .any(|p| p["from"] == "Src" && p["from_id"] == 0 && p["to"] == "Snk" && p["to_id"] == 2),
        "{paths:?}"
    );
}

/// A slice under a supervisor tells its progress on its answer channel while its nets run,
/// with counts that only grow, for the run's one progress line; its report follows at the end.
#[test]
fn a_supervised_slice_tells_its_progress_while_it_runs() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    // Sends until stopped.
    let out_dir = split(dir.path(), PAIRS, TWO, &["-n", "0"]);
    let mut consumer = Command::new("sh")
        .arg(out_dir.join("b.sh"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The producer's slice as the supervisor starts it: the job on stdin, answers on stdout.
    let mut producer = smxrun()
        .arg("__slice")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = producer.stdin.take().unwrap();
    stdin
        .write_all(&std::fs::read(out_dir.join("main.job")).unwrap())
        .unwrap();
    let mut answers = BufReader::new(producer.stdout.take().unwrap());
    // A slice that never tells fails the test instead of holding it up.
    let pid = producer.id().to_string();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(30));
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
    });
    let mut counts = Vec::new();
    let mut line = String::new();
    while counts.len() < 3 {
        line.clear();
        assert!(
            answers.read_line(&mut line).unwrap() > 0,
            "the slice ended early: {counts:?}"
        );
        if let Some(figures) = line.trim_end().strip_prefix("smx-slice progress ") {
            let words: Vec<u64> = figures.split(' ').map(|w| w.parse().unwrap()).collect();
            counts.push((words[0], words[1]));
        }
    }
    // The end of the control pipe stops the slice; its report comes after the progress.
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut answers, &mut rest).unwrap();
    assert!(rest.contains("smx-slice report "), "{rest}");
    assert!(producer.wait().unwrap().code().is_some(), "the slice ended by itself");
    consumer.wait().unwrap();
    assert!(
        counts.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1),
        "messages and time only grow: {counts:?}"
    );
    assert!(counts.last().unwrap().0 > 0, "messages went over the link: {counts:?}");
}

/// The names of the nets of a line of live figures.
fn net_names(line: &Value) -> Vec<&str> {
    line["nets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect()
}

/// `--stats-every` of a net over two processes gives the lines one process would: every net and
/// the channel under their ids in the whole net (no link boxes), a cut channel once, figures
/// that never read more than was written, and a last line with the report's final counts.
#[test]
fn live_figures_of_a_net_over_two_processes_read_as_one_processs() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("stats.jsonl");
    let (out, _) = run(
        dir.path(),
        PAIRS,
        Some(TWO),
        "json",
        &[
            "-n",
            "300000",
            "--stats-every",
            "10ms",
            "--stats-file",
            lines.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let lines: Vec<Value> = std::fs::read_to_string(&lines)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty());
    let mut t = 0.0;
    for line in &lines {
        // Every line holds every net: each is made of figures every slice told of one instant.
        assert_eq!(net_names(line), ["Src#0", "Snk#1"], "{line}");
        let channels = line["channels"].as_array().unwrap();
        assert_eq!(channels.len(), 1, "{line}");
        let channel = &channels[0];
        assert_eq!(
            (channel["from"].as_str(), channel["to"].as_str()),
            (Some("Src#0"), Some("Snk#1"))
        );
        assert!(channel["read"].as_u64() <= channel["written"].as_u64(), "{line}");
        let now = line["t_s"].as_f64().unwrap();
        assert!(now >= t, "{line}");
        t = now;
    }
    let last = lines.last().unwrap();
    assert_eq!(last["final"], true, "{last}");
    assert_eq!(last["messages"], 300000, "{last}");
    assert_eq!(last["channels"][0]["written"], 300000, "{last}");
    assert_eq!(last["channels"][0]["read"], 300000, "{last}");
}

/// `report merge` of slices an orchestrator ran: each process keeps its host, and a report
/// that was never written (its process died) counts as such, as if it were left off.
#[test]
fn report_merge_keeps_hosts_and_takes_a_missing_report_for_a_dead_process() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        "[process.b]\nhost = \"127.0.0.1\"\nport = 27330\nlaunch = \"/usr/bin/env\"\n\n[net.Snk]\nprocess = \"b\"\n";
    let out_dir = split(dir.path(), PAIRS, config, &["-n", "100"]);
    common::deploy::run_slices(&out_dir, &["b", "main"]);
    let merged = common::deploy::merge_json(&out_dir, &["main", "b"]);
    assert!(merged.status.success(), "{}", text(&merged));
    let report: Value = serde_json::from_slice(&merged.stdout).unwrap();
    let host = |r: &Value, name: &str| {
        r["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["host"]
            .clone()
    };
    assert_eq!(host(&report, "b"), "127.0.0.1", "{report}");
    assert_eq!(host(&report, "main"), Value::Null, "{report}");
    std::fs::remove_file(out_dir.join("b.report.json")).unwrap();
    let merged = common::deploy::merge_json(&out_dir, &["main", "b"]);
    assert_eq!(merged.status.code(), Some(2), "{}", text(&merged));
    assert!(text(&merged).contains("no such report"), "{}", text(&merged));
    let report: Value = serde_json::from_slice(&merged.stdout).unwrap();
    let b = common::deploy::process(&report, "b").clone();
    assert_eq!(b["status"], "died", "{report}");
    assert_eq!(
        b["host"], "127.0.0.1",
        "the host of a process without a report: {report}"
    );
    // A missing file that is no process's report of this split is a mistake, not a death;
    // a job is not a report.
    let merge = |files: &[&Path]| smxrun().args(["report", "merge"]).args(files).output().unwrap();
    let main = out_dir.join("main.report.json");
    let out = merge(&[&main, &out_dir.join("bb.report.json")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("bb.report.json: no such file"), "{}", text(&out));
    let out = merge(&[&main, &out_dir.join("b.job")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("b.job: a slice's job, not its report"),
        "{}",
        text(&out)
    );
}

/// The rows of a process that left no report have the keys of every row of the merged report,
/// `null` where the figure is unknown: a reader of the JSON finds the same keys in each row.
#[test]
fn report_merge_gives_the_rows_of_a_dead_process_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.b]\n[net.Fwd]\nprocess = \"b\"\n[net.Snk]\nprocess = \"b\"\n";
    let out_dir = split(dir.path(), LINE, config, &["-n", "100"]);
    common::deploy::run_slices(&out_dir, &["b", "main"]);
    let merged = |processes: &[&str]| -> Value {
        let out = common::deploy::merge_json(&out_dir, processes);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)))
    };
    let whole = merged(&["main", "b"]);
    std::fs::remove_file(out_dir.join("b.report.json")).unwrap();
    let died = merged(&["main", "b"]);
    let keys = |r: &Value, section: &str| -> Vec<Vec<String>> {
        r[section]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row.as_object().unwrap().keys().cloned().collect())
            .collect()
    };
    for section in ["nets", "channels"] {
        assert_eq!(keys(&died, section), keys(&whole, section), "{section}: {died}");
    }
    // The channel between `Fwd` and `Snk`, both in the dead process.
    let inside = &died["channels"][1];
    assert_eq!(
        (&inside["from"], &inside["to"]),
        (&Value::from("Fwd"), &Value::from("Snk"))
    );
    for key in ["written", "read", "overwritten", "left", "latency_ns"] {
        assert!(inside[key].is_null(), "{key}: {inside}");
    }
    assert!(died["nets"][2]["stats"].is_null(), "{died}");
}

/// `report merge` names each process's nodes in its lines by their ids in the whole net, as a
/// supervised run's report does: the consumer's slice's `Snk#0` is the whole net's `Snk#1`.
#[test]
fn report_merge_names_nodes_in_the_lines_as_the_whole_net_does() {
    let dir = tempfile::tempdir().unwrap();
    let [main, b] = split_and_run(dir.path());
    let merged = smxrun().args(["report", "merge"]).arg(&main).arg(&b).output().unwrap();
    let text = String::from_utf8_lossy(&merged.stdout);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("b: chaining"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("Snk#1") && !line.contains("Snk#0"), "{line}");
}

/// When a process dies, the live figures still end with a final line, and it holds the
/// report's counts: what the dead process took with it is left out, as the report leaves it.
#[test]
fn live_figures_end_with_the_reports_counts_when_a_process_dies() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("stats.jsonl");
    let net = write(dir.path(), "net.smx", PAIRS);
    let config = write(dir.path(), "deploy.toml", TWO);
    let run = smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args([
            "-n",
            "0",
            "-q",
            "--report",
            "json",
            "--stats-every",
            "20ms",
            "--stats-file",
        ])
        .arg(&lines)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut slices = Vec::new();
    common::deploy::wait_for("two slices", || {
        slices = common::deploy::children_of(run.id());
        slices.len() == 2
    });
    common::deploy::wait_for("a few lines", || {
        std::fs::read_to_string(&lines).is_ok_and(|t| t.lines().count() >= 3)
    });
    // The consumer's process: the second one started.
    let consumer = *slices.iter().max().unwrap();
    unsafe { libc::kill(consumer as i32, libc::SIGKILL) };
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let last: Value = serde_json::from_str(std::fs::read_to_string(&lines).unwrap().lines().last().unwrap()).unwrap();
    assert_eq!(last["final"], true, "{last}");
    let names = net_names(&last);
    assert_eq!(
        names,
        ["Src#0"],
        "the dead process's net is unknown, as in the report: {last}"
    );
    assert_eq!(last["nets"][0]["loop_count"], report["nets"][0]["loop_count"], "{last}");
}

/// A slice started by hand whose run is refused on its host (here its sink cannot open its
/// file) leaves a stand-in report saying so: the merge shows the process `refused` with its
/// exit code, not `died`, and ends with 1, as a supervised run that a refusal ends does,
/// though the other slice, whose link then found no peer, ended with 3 first in the split's
/// order.
#[test]
fn report_merge_shows_a_slice_refused_by_hand_as_refused() {
    let dir = tempfile::tempdir().unwrap();
    let unwritable = dir.path().join("no-such-dir").join("out.txt");
    let net = "Src = box smx_src_rand(out data)\nSnk = box smx_snk_dump(in data)\nconnect Src.Snk\n";
    let config = format!(
        "[process.b]\n[net.Snk]\nprocess = \"b\"\npath = \"{}\"\n",
        unwritable.display()
    );
    let out_dir = split(dir.path(), net, &config, &["-n", "10", "--link-timeout", "500ms"]);
    let b = Command::new(out_dir.join("b.sh")).output().unwrap();
    assert_eq!(b.status.code(), Some(1), "{}", text(&b));
    assert!(
        String::from_utf8_lossy(&b.stderr).contains("cannot open"),
        "{}",
        text(&b)
    );
    let main = Command::new(out_dir.join("main.sh")).output().unwrap();
    assert_eq!(main.status.code(), Some(3), "{}", text(&main));
    let merged = common::deploy::merge_json(&out_dir, &["main", "b"]);
    assert_eq!(merged.status.code(), Some(1), "{}", text(&merged));
    let report: Value = serde_json::from_slice(&merged.stdout).unwrap_or_else(|_| panic!("{}", text(&merged)));
    let b = common::deploy::process(&report, "b").clone();
    assert_eq!(
        (&b["status"], &b["exit_code"]),
        (&Value::from("refused"), &Value::from(1)),
        "{report}"
    );
}

/// Slices started apart stop one by one: a consumer's slice stopped by a signal cuts its
/// producer's endless stream short, and the merged report says so (`stopped`), as the run
/// supervised by one command says it, where the producer's own slice saw only the link close.
#[test]
fn report_merge_marks_a_producer_cut_short_by_its_consumers_stop_as_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = split(dir.path(), PAIRS, TWO, &["-n", "0"]);
    let start = |p: &str| start_slice(&out_dir, p);
    let mut main = start("main");
    let mut b = start("b");
    // The consumer is on the link once it maps the link's file.
    common::deploy::wait_for("the consumer's slice on the link", || {
        std::fs::read_to_string(format!("/proc/{}/maps", b.id())).is_ok_and(|maps| maps.contains("/dev/shm/smx-"))
    });
    // SAFETY: kill(2) on a child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(b.id() as i32, libc::SIGTERM) }, 0);
    assert_eq!(b.wait().unwrap().code(), Some(130));
    assert!(main.wait().unwrap().code().is_some());
    let merged = common::deploy::merge_json(&out_dir, &["main", "b"]);
    let report: Value = serde_json::from_slice(&merged.stdout).unwrap_or_else(|_| panic!("{}", text(&merged)));
    assert_eq!(common::deploy::process(&report, "b")["status"], "stopped", "{report}");
    let src = report["nets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "Src")
        .unwrap();
    assert_eq!(src["status"], "stopped", "{report}");
    assert_eq!(report["status"], "stopped", "{report}");
}

/// Shared memory loses nothing between two live processes: what a consumer's slice had not
/// taken when it ended by itself (its own output's peer never came) is left on its link, as in
/// a channel of one process whose consumer ended, not lost in transit.
#[test]
fn report_merge_books_what_a_live_consumer_left_on_a_shared_memory_link_as_left() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = split(dir.path(), LINE, LINE_PLACED, &["-n", "300000", "--link-timeout", "2s"]);
    // `store` never comes: `analysis` ends once its output's link gives up on it.
    let children: Vec<_> = ["main", "analysis"].iter().map(|p| start_slice(&out_dir, p)).collect();
    for mut child in children {
        child.wait().unwrap();
    }
    let merged = common::deploy::merge_json(&out_dir, &["main", "analysis"]);
    let report: Value = serde_json::from_slice(&merged.stdout).unwrap_or_else(|_| panic!("{}", text(&merged)));
    let into_analysis = &report["channels"][0];
    assert!(into_analysis["written"].as_u64().unwrap() > 0, "{into_analysis}");
    assert_eq!(into_analysis["link"]["lost"], 0, "{into_analysis}");
    assert_eq!(into_analysis["link"]["lost_side"], "none", "{into_analysis}");
    let n = |k: &str| {
        into_analysis[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k}: {into_analysis}"))
    };
    assert_eq!(
        n("written"),
        n("read") + n("overwritten") + n("dropped") + n("left"),
        "{into_analysis}"
    );
    assert!(n("left") > 0, "{into_analysis}");
}

/// An empty file (a wrong path such as /dev/null, or a slice's report never written) is named
/// as empty, not as a JSON parser's end of file; a directory is named as one.
#[test]
fn report_merge_names_an_empty_file_and_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("main.report.json");
    std::fs::write(&empty, "").unwrap();
    for (path, said) in [
        (Path::new("/dev/null"), "/dev/null: empty, not a JSON report"),
        (empty.as_path(), "main.report.json: empty, not a JSON report"),
        (dir.path(), "Is a directory"),
    ] {
        let out = smxrun().args(["report", "merge"]).arg(path).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(text(&out).contains(said), "{}", text(&out));
        assert!(
            !text(&out).contains("EOF") && !text(&out).contains("os error"),
            "{}",
            text(&out)
        );
    }
}

/// A refused slice's stand-in left from an earlier run is not merged with a later run's
/// reports in which its process took what its link carried: a process that refused its run
/// took nothing, so the merge would tell of a refusal and a loss that never happened.
#[test]
fn report_merge_refuses_a_stale_stand_in_beside_a_link_that_delivered_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let later = dir.path().join("later");
    let net = "Src = box smx_src_rand(out data)\nFwd = box smx_fwd(up in data, down out data)\n\
               Snk = box smx_snk_dump(in data)\nconnect Src.Fwd.Snk\n";
    let config = format!(
        "[process.analysis]\n[process.store]\n[net.Fwd]\nprocess = \"analysis\"\n[net.Snk]\nprocess = \"store\"\n\
         path = \"{}\"\n",
        later.join("out.txt").display()
    );
    let out_dir = split(dir.path(), net, &config, &["-n", "3000", "--link-timeout", "3s"]);
    let store = Command::new(out_dir.join("store.sh")).output().unwrap();
    assert_eq!(store.status.code(), Some(1), "{}", text(&store));
    let stale = dir.path().join("store.stale.json");
    std::fs::rename(out_dir.join("store.report.json"), &stale).unwrap();
    std::fs::create_dir(&later).unwrap();
    let slices: Vec<_> = ["store", "analysis", "main"]
        .iter()
        .map(|p| start_slice(&out_dir, p))
        .collect();
    for mut slice in slices {
        assert_eq!(slice.wait().unwrap().code(), Some(0));
    }
    let clean = common::deploy::merge_json(&out_dir, &["main", "analysis", "store"]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean));
    let analysis = out_dir.join("analysis.report.json");
    let out = smxrun()
        .args(["report", "merge"])
        .arg(&stale)
        .arg(out_dir.join("main.report.json"))
        .arg(&analysis)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(out.stdout.is_empty(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "error: {} and {}: reports of different runs of the split: the first is the stand-in of process 'store'",
            stale.display(),
            analysis.display()
        )) && err.contains("link 1 (analysis -> store) carried 3000 message(s), which process 'store' took"),
        "{err}"
    );
}

/// Merged books that do not balance (here a consumer's report edited to say it read 10 fewer
/// than it took) make the run's status `failed`, in the text's Total line as in the JSON: a
/// script that reads the status must not see success where messages vanished.
#[test]
fn report_merge_of_books_that_do_not_balance_says_the_run_failed() {
    let dir = tempfile::tempdir().unwrap();
    let [main, b] = run_slices(&split(dir.path(), PAIRS, TWO, &["-n", "100"]));
    let mut report: Value = serde_json::from_str(&std::fs::read_to_string(&b).unwrap()).unwrap();
    let read = report["channels"][0]["read"].as_u64().unwrap();
    report["channels"][0]["read"] = serde_json::json!(read - 10);
    let fewer = write(dir.path(), "fewer.json", &report.to_string());
    let merge = |format: &str| {
        smxrun()
            .args(["report", "merge", "--format", format])
            .arg(&main)
            .arg(&fewer)
            .output()
            .unwrap()
    };
    let out = merge("json");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
    assert_eq!(merged["status"], "failed", "{merged}");
    let out = merge("text");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let total = stdout.lines().find(|l| l.starts_with("Total:")).unwrap_or_default();
    assert!(total.contains("status failed"), "{stdout}");
}

/// Whether the process `pid` has a thread whose name begins with `name`: a slice names its
/// boxes' threads after them, so one that waits in a link box's start has that box's thread.
fn has_thread(pid: u32, name: &str) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|tasks| {
        tasks
            .flatten()
            .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(name)))
    })
}

/// A consumer's slice stopped from outside (a SIGTERM to it alone) before anything reached it:
/// the slice before it ends with books not clean (3), first in the split's order, but the
/// merge ends with 130, as a supervised run does when one of its processes is stopped from
/// outside.
#[test]
fn report_merge_of_a_slice_stopped_from_outside_exits_as_a_stop() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = split(dir.path(), LINE, LINE_PLACED, &["-n", "100", "--link-timeout", "2s"]);
    let start = |p: &str| start_slice(&out_dir, p);
    // Both wait in their links' starts: `analysis` for `main`'s file, `store` for the one
    // `analysis` makes once `main` is there.
    let mut analysis = start("analysis");
    let mut store = start("store");
    common::deploy::wait_for("analysis waiting for main", || has_thread(analysis.id(), "link0_in"));
    common::deploy::wait_for("store waiting for analysis", || has_thread(store.id(), "link1_in"));
    // SAFETY: kill(2) on a child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(store.id() as i32, libc::SIGTERM) }, 0);
    assert_eq!(store.wait().unwrap().code(), Some(130));
    let main = start("main").wait().unwrap();
    assert_eq!(main.code(), Some(0));
    assert_eq!(
        analysis.wait().unwrap().code(),
        Some(3),
        "nothing crossed its link to store"
    );
    let merged = common::deploy::merge_json(&out_dir, &["main", "analysis", "store"]);
    assert_eq!(merged.status.code(), Some(130), "{}", text(&merged));
    let report: Value = serde_json::from_slice(&merged.stdout).unwrap_or_else(|_| panic!("{}", text(&merged)));
    assert_eq!(
        common::deploy::process(&report, "store")["status"],
        "stopped",
        "{report}"
    );
}

/// Only the producer's slice started, over ZeroMQ: its link gave up on a receiver that never
/// came and sent nothing, so what the link took never left the producer's process. The merge
/// counts it lost there, exactly, not as an upper bound at the consumer that left no books.
#[test]
fn report_merge_counts_what_a_zmq_link_never_sent_as_lost_at_the_producer() {
    let dir = tempfile::tempdir().unwrap();
    let config = &over_tcp(27590);
    let out_dir = split(dir.path(), PAIRS, config, &["-n", "2", "--link-timeout", "500ms"]);
    let main = Command::new(out_dir.join("main.sh")).output().unwrap();
    assert_eq!(main.status.code(), Some(3), "{}", text(&main));
    let merged = common::deploy::merge_json(&out_dir, &["main", "b"]);
    let report: Value = serde_json::from_slice(&merged.stdout).unwrap_or_else(|_| panic!("{}", text(&merged)));
    let link = &report["channels"][0]["link"];
    assert_eq!(link["transport"], "zmq", "{report}");
    assert_eq!(
        (&link["lost"], &link["lost_side"], &link["lost_exact"]),
        (&Value::from(2), &Value::from("main"), &Value::from(true)),
        "{report}"
    );
    let out = smxrun()
        .args(["report", "merge"])
        .arg(out_dir.join("main.report.json"))
        .arg(out_dir.join("b.report.json"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = stdout.lines().find(|l| l.contains("zmq main -> b")).unwrap_or_default();
    assert!(row.contains("lost at main") && !row.contains('≤'), "{stdout}");
}
