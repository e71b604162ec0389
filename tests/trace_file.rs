//! `smxrun run NET --trace FILE.json`: the file is a Chrome trace event file that Perfetto
//! and chrome://tracing can open, and its step slices account for every loop of the report.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn smxrun(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn net(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("nets")
        .join(name)
        .display()
        .to_string()
}

/// Runs `net` with a trace and a JSON report; both parsed.
fn traced(net: &str, extra: &[&str]) -> (Value, Value) {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.json");
    let mut args = vec![net, "-q", "--report", "json", "--trace", trace.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = smxrun(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = serde_json::from_slice(&out.stdout).expect("JSON report");
    let file = std::fs::read(&trace).unwrap();
    (report, serde_json::from_slice(&file).expect("the trace is JSON"))
}

fn events(trace: &Value) -> &Vec<Value> {
    trace["traceEvents"].as_array().expect("a traceEvents array")
}

/// The structure every trace must have; returns the thread names by tid.
fn check_structure(trace: &Value) -> BTreeMap<u64, String> {
    let events = events(trace);
    let names: BTreeMap<u64, String> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut last_ts: BTreeMap<u64, f64> = BTreeMap::new();
    for e in events {
        let ph = e["ph"].as_str().expect("every event has a phase");
        if ph == "M" {
            continue;
        }
        let tid = e["tid"].as_u64().expect("tid");
        assert!(e["pid"].is_u64(), "{e}");
        assert!(e["name"].is_string(), "{e}");
        assert!(names.contains_key(&tid), "tid {tid} has no thread_name: {e}");
        let ts = e["ts"].as_f64().expect("ts");
        assert!(ts >= 0.0, "{e}");
        match ph {
            "X" => {
                assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "{e}");
                let before = last_ts.insert(tid, ts).unwrap_or(0.0);
                assert!(ts >= before, "X events of tid {tid} out of order at {e}");
            }
            "i" => assert_eq!(e["s"], "t", "{e}"),
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    names
}

/// Steps per net (by the report's spelling), summed over the step slices' counts.
fn steps_by_net(trace: &Value) -> BTreeMap<String, u64> {
    let mut steps = BTreeMap::new();
    for e in events(trace).iter().filter(|e| e["cat"] == "step") {
        let net = e["args"]["net"].as_str().unwrap().to_string();
        *steps.entry(net).or_insert(0) += e["args"]["steps"].as_u64().unwrap();
    }
    steps
}

fn loops_by_net(report: &Value) -> BTreeMap<String, u64> {
    report["nets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                format!("{}#{}", n["name"].as_str().unwrap(), n["id"]),
                n["loop_count"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_trace_of_src_snk_has_a_track_per_thread_and_a_step_for_every_loop() {
    let (report, trace) = traced(&net("src_snk.smx"), &["-n", "3000", "--trace-limit", "1000000"]);
    let names = check_structure(&trace);
    assert_eq!(trace["otherData"]["dropped_events"], 0);
    assert_eq!(trace["otherData"]["partial"], false);
    // Two boxes on their own threads, and the cyclic executive running the other two.
    let tracks: BTreeSet<&str> = names.values().map(String::as_str).collect();
    let firewall = report["firewalls"][0]["name"].as_str().unwrap();
    for name in ["Src#2", "Snk#3", firewall] {
        assert!(tracks.contains(name), "no track {name}: {tracks:?}");
    }
    assert_eq!(steps_by_net(&trace), loops_by_net(&report));
    let ticks = events(&trace).iter().filter(|e| e["cat"] == "firewall").count() as u64;
    assert!(ticks > 0 && ticks <= report["firewalls"][0]["ticks"].as_u64().unwrap());
    let missed: u64 = events(&trace)
        .iter()
        .filter(|e| e["name"] == "missed ticks")
        .map(|e| e["args"]["ticks"].as_u64().unwrap())
        .sum();
    assert_eq!(missed, report["firewalls"][0]["missed_ticks"].as_u64().unwrap());
}

#[test]
fn routing_nodes_and_zeromq_boxes_have_tracks_with_their_steps() {
    let (report, trace) = traced(&net("fan_out.smx"), &["-n", "2000", "--trace-limit", "1000000"]);
    check_structure(&trace);
    let routing: Vec<&Value> = report["nets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "routing_node")
        .collect();
    assert!(!routing.is_empty());
    assert_eq!(steps_by_net(&trace), loops_by_net(&report));

    let config = net("zmq_pipeline_ipc.toml");
    let (report, trace) = traced(
        &net("zmq_pipeline_ipc.smx"),
        &[
            "--config",
            &config,
            "-n",
            "500",
            "--set",
            "Snk2.path=/dev/null",
            "--trace-limit",
            "1000000",
        ],
    );
    let names = check_structure(&trace);
    let steps = steps_by_net(&trace);
    for n in report["nets"].as_array().unwrap() {
        let spelled = format!("{}#{}", n["name"].as_str().unwrap(), n["id"]);
        assert!(names.values().any(|t| *t == spelled), "no track for {spelled}");
        assert_eq!(
            steps.get(&spelled).copied().unwrap_or(0),
            n["loop_count"].as_u64().unwrap(),
            "{spelled}"
        );
    }
}

#[test]
fn a_small_limit_keeps_the_latest_events_and_says_what_it_dropped() {
    let (report, trace) = traced(&net("src_snk.smx"), &["-n", "3000", "--trace-limit", "50"]);
    let names = check_structure(&trace);
    let dropped = trace["otherData"]["dropped_events"].as_u64().unwrap();
    assert!(dropped > 0);
    let by_thread = trace["otherData"]["dropped_by_thread"].as_object().unwrap();
    assert_eq!(by_thread.values().map(|v| v.as_u64().unwrap()).sum::<u64>(), dropped);
    for tid in names.keys() {
        let kept = events(&trace)
            .iter()
            .filter(|e| e["ph"] != "M" && e["tid"].as_u64() == Some(*tid))
            .count();
        assert!(kept <= 50, "{kept} events on tid {tid}");
    }
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("trace:") && w.contains("dropped")),
        "{warnings:?}"
    );
    // The latest events are kept: per net, its last kept step lies late in its running time,
    // not in the first fiftieth of it, where the last of 3000 steps kept would lie had the
    // rings kept the oldest events. Per net, because an executive's ring on a loaded machine
    // may end in ticks and misses alone, and a net's time may end well after its last step
    // (a sink parked when its producer ended is woken late): a tenth, five times that
    // fiftieth.
    let mut last_step_end: BTreeMap<String, f64> = BTreeMap::new();
    for e in events(&trace).iter().filter(|e| e["cat"] == "step") {
        let end = e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap();
        let net = e["args"]["net"].as_str().unwrap().to_string();
        let latest = last_step_end.entry(net).or_insert(0.0);
        *latest = latest.max(end);
    }
    assert!(!last_step_end.is_empty(), "no step kept at all");
    for n in report["nets"].as_array().unwrap() {
        let net = format!("{}#{}", n["name"].as_str().unwrap(), n["id"]);
        if let Some(end) = last_step_end.get(&net) {
            let wall_us = n["wall_time_s"].as_f64().unwrap() * 1e6;
            assert!(*end > wall_us / 10.0, "{net}: last kept step at {end} us of {wall_us}");
        }
    }
}

#[test]
fn a_run_stopped_by_a_signal_still_writes_its_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args([
            &net("src_snk.smx"),
            "--set",
            "Src.count=0",
            "-q",
            "--report",
            "json",
            "--trace",
        ])
        .arg(&trace)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the nets run (their threads exist), then stop them.
    let start = Instant::now();
    while std::fs::read_dir(format!("/proc/{}/task", child.id())).map_or(0, |d| d.count()) < 4
        && start.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: plain FFI call sending a signal to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("smxrun did not stop");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let trace: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    check_structure(&trace);
    assert_eq!(trace["otherData"]["partial"], true);
    assert!(events(&trace).iter().any(|e| e["cat"] == "step"));
}

#[test]
fn a_trace_path_that_cannot_be_written_is_an_error_before_the_run() {
    let out = smxrun(&[
        &net("src_snk.smx"),
        "-q",
        "-n",
        "10",
        "--trace",
        "/nonexistent/dir/t.json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--trace") && stderr.contains("/nonexistent/dir/t.json"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "no report: the run did not start");
}

#[test]
fn trace_view_draws_a_row_per_thread_and_rejects_what_is_not_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    let svg = dir.path().join("t.svg");
    let out = smxrun(&[
        &net("src_snk.smx"),
        "-q",
        "-n",
        "200",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let out = smxrun(&["trace-view", trace.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let picture = std::fs::read_to_string(&svg).unwrap();
    for track in ["Src#2", "Snk#3", "tf_10.0us_0"] {
        assert!(picture.contains(track), "no row {track}");
    }
    assert!(picture.contains("<rect"), "slices are drawn");
    // The picture is drawn again over itself, but over nothing else: a slip of `-o` onto the
    // net beside it would lose the net.
    let out = smxrun(&["trace-view", trace.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let own_net = dir.path().join("mine.svg");
    std::fs::write(&own_net, "A = box a( out x )\n").unwrap();
    let out = smxrun(&["trace-view", trace.to_str().unwrap(), "-o", own_net.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("holds something other than an SVG picture"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&own_net).unwrap(), "A = box a( out x )\n");

    std::fs::write(&trace, "{\"nothing\": 1}").unwrap();
    let out = smxrun(&["trace-view", trace.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no traceEvents array"));
    let out = smxrun(&["trace-view", "/nonexistent.json", "-o", svg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent.json"));
    // The picture is SVG: a name that says PNG is refused, and no file is made.
    let png = dir.path().join("t.png");
    let out = smxrun(&["trace-view", trace.to_str().unwrap(), "-o", png.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("trace-view draws SVG, not png"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!png.exists());
}

#[test]
fn a_run_that_cannot_start_leaves_no_trace_file() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    let out = smxrun(&[
        &net("src_snk.smx"),
        "-q",
        "-n",
        "10",
        "--set",
        "Src.size=999999999999",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!trace.exists(), "an empty file would pass for a trace");
    let out = smxrun(&[
        &net("src_snk.smx"),
        "-q",
        "--set",
        "Src.bogus=1",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!trace.exists(), "a rejected setting leaves no file");
}

/// A trace of `slices` steps of 1 ms every 2 ms on one thread, as `--trace` writes them.
fn long_trace(path: &std::path::Path, slices: u64) {
    let mut events =
        vec![serde_json::json!({"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "Src#0"}})];
    for i in 0..slices {
        events.push(
            serde_json::json!({"ph": "X", "name": "step", "cat": "step", "pid": 1, "tid": 1,
                                       "ts": 5000.0 + 2000.0 * i as f64, "dur": 1000.0}),
        );
    }
    let trace = serde_json::json!({"traceEvents": events, "otherData": {"net": "long.smx"}});
    std::fs::write(path, trace.to_string()).unwrap();
}

#[test]
fn trace_view_of_a_whole_run_reads_as_a_picture() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("long.json");
    let svg = dir.path().join("long.svg");
    long_trace(&trace, 9500);
    let out = smxrun(&["trace-view", trace.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let picture = std::fs::read_to_string(&svg).unwrap();
    // Reduced to columns: far fewer bars than slices, and a heading that says so.
    assert!(
        picture.matches("<rect").count() < 1000,
        "{} bars",
        picture.matches("<rect").count()
    );
    assert!(picture.contains("9500 slices: each bar is the share of"), "{picture}");
    // Axis labels in seconds, not `19005000 us`, and every one inside the picture.
    assert!(picture.contains("\n10 s\n"), "{picture}");
    assert!(!picture.contains("000 us"), "{picture}");
    let width: f64 = 1400.0;
    for label in picture.split("<text").skip(1) {
        let x: f64 = label
            .split("x=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let text = label.split('>').nth(1).unwrap().split('<').next().unwrap().trim();
        if text.ends_with(" s") {
            assert!(
                x + 6.0 * text.len() as f64 <= width,
                "label '{text}' at x={x} is cut off"
            );
        }
    }
    // A short window draws each slice.
    let out = smxrun(&[
        "trace-view",
        trace.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
        "--from",
        "5000",
        "--to",
        "20000",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(!picture.contains("each bar is the share"));
    assert!(picture.contains("\n10 ms\n"), "{picture}");
    // A window with nothing in it is said, and no picture is written.
    std::fs::remove_file(&svg).unwrap();
    let out = smxrun(&[
        "trace-view",
        trace.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
        "--from",
        "1",
        "--to",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no event in the window 1 us to 2 us (the trace's events span 5 ms to 19.004 s)"),
        "{stderr}"
    );
    assert!(!svg.exists());
}

/// A run that cannot start removes only a trace file it created itself: a file that was there
/// before (an earlier trace, or any file named by mistake) is neither emptied nor removed.
#[test]
fn a_run_that_cannot_start_keeps_an_existing_file_given_as_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("earlier.json");
    std::fs::write(&trace, b"an earlier trace").unwrap();
    let out = smxrun(&[
        &net("src_snk.smx"),
        "-q",
        "-n",
        "10",
        "--set",
        "Src.size=999999999999",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read(&trace).unwrap(), b"an earlier trace");
}

/// A trace that cannot be written at the end (a full disk: /dev/full) fails alone: the report
/// is printed all the same, a line names the trace, and the exit code says something failed.
#[test]
fn a_trace_that_cannot_be_written_does_not_take_the_report_with_it() {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    let out = smxrun(&[&net("src_snk.smx"), "-q", "-n", "100", "--trace", "/dev/full"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("Snk"), "the report is printed: {stdout} {stderr}");
    assert!(stderr.contains("--trace /dev/full"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
}

/// A trace cut by `--trace-limit` keeps each thread's latest events: the picture of the whole
/// run starts at the run's start and shades, per thread, the stretch it did not record, so a
/// blank is never taken for an idle thread; the misses of a row are counted beside its name.
#[test]
fn trace_view_shades_what_a_limited_trace_did_not_record() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    let svg = dir.path().join("t.svg");
    let out = smxrun(&[
        &net("src_snk.smx"),
        "-q",
        "-n",
        "3000",
        "--trace-limit",
        "50",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = smxrun(&["trace-view", trace.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.contains("events past --trace-limit"), "legend: {picture}");
    assert!(picture.contains("not recorded"), "shaded rows: {picture}");
    assert!(picture.contains(": 0 us to "), "drawn from the run's start: {picture}");

    // A trace that kept everything has no shade and no such legend.
    let out = smxrun(&[
        &net("src_snk.smx"),
        "-q",
        "-n",
        "200",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let out = smxrun(&["trace-view", trace.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(!picture.contains("not recorded"), "{picture}");
}

/// A trace of threads named `names`, each with `events` of its own (`ph`, `ts`, ... without
/// `pid` and `tid`), as `--trace` writes them.
fn trace_of(path: &Path, threads: &[(&str, Vec<Value>)]) {
    let mut events = Vec::new();
    for (tid, (name, own)) in threads.iter().enumerate() {
        events.push(
            serde_json::json!({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid,
                                       "args": {"name": name}}),
        );
        for e in own {
            let mut e = e.clone();
            e["pid"] = 1.into();
            e["tid"] = tid.into();
            events.push(e);
        }
    }
    let trace = serde_json::json!({"traceEvents": events, "otherData": {"net": "t.smx"}});
    std::fs::write(path, trace.to_string()).unwrap();
}

/// `count` slices of category `cat`, `dur` µs long, one every `every` µs from `start`.
fn slices(cat: &str, count: usize, start: f64, every: f64, dur: f64) -> Vec<Value> {
    (0..count)
        .map(|i| {
            serde_json::json!({"ph": "X", "name": cat, "cat": cat, "ts": start + every * i as f64,
                               "dur": dur})
        })
        .collect()
}

/// Draws `trace` whole (or the window `extra` names) and returns the picture.
fn view(trace: &Path, extra: &[&str]) -> String {
    let svg = trace.with_extension("svg");
    let mut args = vec!["trace-view", trace.to_str().unwrap(), "-o", svg.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = smxrun(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read_to_string(&svg).unwrap()
}

/// One `<text>` of a picture: where it starts, its font size in pixels, its colour and text.
struct Label {
    x: f64,
    y: f64,
    size: f64,
    fill: String,
    text: String,
}

fn attr<'a>(element: &'a str, name: &str) -> &'a str {
    element
        .split(&format!(" {name}=\""))
        .nth(1)
        .unwrap_or_else(|| panic!("no {name} in {element}"))
        .split('"')
        .next()
        .unwrap()
}

fn labels(svg: &str) -> Vec<Label> {
    svg.split("<text")
        .skip(1)
        .map(|t| {
            let (head, rest) = t.split_once('>').unwrap();
            Label {
                x: attr(head, "x").parse().unwrap(),
                y: attr(head, "y").parse().unwrap(),
                size: attr(head, "font-size").parse().unwrap(),
                fill: attr(head, "fill").to_string(),
                text: rest.split('<').next().unwrap().trim().to_string(),
            }
        })
        .collect()
}

/// The left edge of the plot: where the time axis starts.
fn plot_left(svg: &str) -> f64 {
    let axis = svg.split("<polyline").nth(1).unwrap();
    attr(axis, "points").split(',').next().unwrap().parse().unwrap()
}

/// Width of a text as DejaVu Sans sets it (the sans-serif of rsvg-convert and most Linux
/// viewers, and among the widest): its advances in 2048ths of an em; 1 em for any other
/// character.
fn width_of(label: &Label) -> f64 {
    let advance = |c: char| -> u32 {
        match c {
            'i' | 'j' | 'l' => 569,
            'I' | 'J' => 604,
            ' ' | '.' | ',' => 651,
            ':' | ';' => 690,
            'f' => 721,
            '-' => 739,
            '(' | ')' => 799,
            't' => 803,
            'r' => 842,
            '_' => 1024,
            's' => 1067,
            'z' => 1075,
            'c' => 1126,
            'L' => 1141,
            'F' => 1178,
            'k' => 1186,
            'v' | 'x' | 'y' => 1212,
            'T' | 'Y' => 1251,
            'o' => 1253,
            'a' => 1255,
            'P' => 1235,
            'e' => 1260,
            'E' => 1294,
            'h' | 'n' | 'u' => 1298,
            'b' | 'd' | 'g' | 'p' | 'q' | 'S' => 1300,
            '0'..='9' => 1303,
            'K' => 1343,
            'A' | 'V' => 1401,
            'X' | 'Z' => 1403,
            'B' => 1405,
            'R' => 1423,
            'C' => 1430,
            'U' => 1499,
            'N' => 1532,
            'H' => 1540,
            'D' => 1577,
            'G' => 1587,
            'O' | 'Q' => 1612,
            'w' => 1675,
            '#' => 1716,
            'M' => 1767,
            'm' => 1995,
            'W' => 2025,
            _ => 2048,
        }
    };
    label.text.chars().map(advance).sum::<u32>() as f64 / 2048.0 * label.size
}

#[test]
fn trace_view_sizes_the_label_column_to_the_longest_row_name() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("names.json");
    let long = "AnExtraordinarilyLongBoxNameThatNoLabelColumnCouldEverHold#12";
    trace_of(
        &trace,
        &[
            ("TemperatureSensorSource#0", slices("step", 20, 0.0, 100.0, 50.0)),
            ("Snk#1", slices("step", 20, 0.0, 100.0, 50.0)),
            (long, slices("step", 20, 0.0, 100.0, 50.0)),
        ],
    );
    let picture = view(&trace, &[]);
    let left = plot_left(&picture);
    let rows: Vec<Label> = labels(&picture).into_iter().filter(|l| l.x == 8.0).collect();
    assert_eq!(rows.len(), 3, "{picture}");
    // Every name ends before the plot starts, the longest one in full.
    for row in &rows {
        assert!(
            row.x + width_of(row) + 4.0 <= left,
            "'{}' runs into the plot at x={left}",
            row.text
        );
    }
    assert!(rows.iter().any(|r| r.text == "TemperatureSensorSource#0"), "{picture}");
    // A name too long for any column is shortened, keeping the box's #id, and the column
    // stops at its maximum.
    let short = &rows.iter().find(|r| r.text.starts_with("AnExtra")).unwrap().text;
    assert!(short.ends_with("\u{2026}#12") && short.len() < long.len(), "{short}");
    assert!(left <= 320.0, "label column {left} px wide");
}

/// A firewall thread of `ticks` ticks 10 µs apart, `dur` µs each, with the instants a
/// struggling firewall records: misses of several ticks at once, overruns, produce and consume
/// misses, spread over the run.
fn firewall(ticks: usize, dur: f64) -> Vec<Value> {
    let mut events = slices("firewall", ticks, 0.0, 10.0, dur);
    for i in 0..ticks / 100 {
        let ts = 1000.0 * i as f64 + 5.0;
        let pair = "TemperatureSensorSource#0 -> AggregatingConsumerSink#1";
        events.extend([
            serde_json::json!({"ph": "i", "name": "missed ticks", "cat": "miss", "s": "t",
                               "ts": ts, "args": {"ticks": 1 + i % 25}}),
            serde_json::json!({"ph": "i", "name": "produce miss", "cat": "miss", "s": "t",
                               "ts": ts, "args": {"pair": pair, "tick": i}}),
            serde_json::json!({"ph": "i", "name": "consume miss", "cat": "miss", "s": "t",
                               "ts": ts, "args": {"pair": pair, "tick": i}}),
        ]);
        if i % 3 == 0 {
            events.push(
                serde_json::json!({"ph": "i", "name": "overrun", "cat": "miss", "s": "t",
                                           "ts": ts + 1.0, "args": {"tick": i}}),
            );
        }
    }
    events
}

#[test]
fn trace_view_counts_misses_in_the_label_column_clear_of_the_marks() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("misses.json");
    trace_of(
        &trace,
        &[
            ("Src#2", slices("step", 50, 0.0, 200.0, 100.0)),
            ("tf_10.0us_0", firewall(1000, 2.0)),
        ],
    );
    for window in [&[][..], &["--from", "0", "--to", "5000"][..]] {
        let picture = view(&trace, window);
        let left = plot_left(&picture);
        let all = labels(&picture);
        let name = all.iter().find(|l| l.text == "tf_10.0us_0").unwrap();
        let red: Vec<&Label> = all.iter().filter(|l| l.fill == "#FF0000").collect();
        assert!(!red.is_empty(), "{picture}");
        let axis_y: f64 = attr(picture.split("<polyline").nth(1).unwrap(), "points")
            .split([',', ' '])
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let mut above = name.y + name.size;
        for line in red {
            // In the label column, where no mark of the plot is, one line under the other.
            assert!(
                line.x + width_of(line) + 4.0 <= left,
                "'{}' at x={} runs into the plot at x={left}",
                line.text,
                line.x
            );
            assert!(line.y >= above, "'{}' overlaps the line above it", line.text);
            above = line.y + line.size;
        }
        assert!(above <= axis_y, "the miss count runs out of its row: {picture}");
    }
}

#[test]
fn trace_view_counts_the_ticks_a_row_missed_not_its_miss_events() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("misses.json");
    trace_of(&trace, &[("tf_10.0us_0", firewall(1000, 2.0))]);
    let count = |window: &[&str]| {
        let picture = view(&trace, window);
        let red: Vec<String> = labels(&picture)
            .into_iter()
            .filter(|l| l.fill == "#FF0000")
            .map(|l| l.text)
            .collect();
        red.join(" ")
    };
    // Ten late wake-ups missed 1 + 2 + ... + 10 ticks: 55 ticks were missed, not 10.
    assert_eq!(
        count(&[]),
        "55 missed ticks (10 times), 4 overruns, 10 produce misses, 10 consume misses"
    );
    // A window counts what it shows.
    assert_eq!(
        count(&["--from", "0", "--to", "4500"]),
        "15 missed ticks (5 times), 2 overruns, 5 produce misses, 5 consume misses"
    );
}

/// A count of missed ticks is what the file says: counts past any real run saturate the sum
/// instead of wrapping it to a small number.
#[test]
fn trace_view_sums_absurd_miss_counts_without_wrapping() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("absurd.json");
    let mut events = slices("firewall", 10, 0.0, 10.0, 2.0);
    for (ts, ticks) in [(5.0, u64::MAX), (15.0, 2)] {
        events.push(
            serde_json::json!({"ph": "i", "name": "missed ticks", "cat": "miss", "s": "t",
                                        "ts": ts, "args": {"ticks": ticks}}),
        );
    }
    trace_of(&trace, &[("tf_10.0us_0", events)]);
    let red: Vec<String> = labels(&view(&trace, &[]))
        .into_iter()
        .filter(|l| l.fill == "#FF0000")
        .map(|l| l.text)
        .collect();
    assert_eq!(red.join(" "), format!("{} missed ticks (2 times)", u64::MAX));
}

/// The `<rect>`s of a picture filled with `fill`, below the legend: (x, y, width, height).
fn bars(svg: &str, fill: &str) -> Vec<(f64, f64, f64, f64)> {
    svg.split("<rect")
        .skip(1)
        .filter(|r| attr(r, "fill") == fill)
        .map(|r| {
            let n = |name| attr(r, name).parse::<f64>().unwrap();
            (n("x"), n("y"), n("width"), n("height"))
        })
        .filter(|b| b.1 > 50.0)
        .collect()
}

#[test]
fn trace_view_of_a_whole_run_shows_a_firewall_that_ticked_all_along() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("ticks.json");
    // 20,000 ticks of 0.1 us, one every 10 us: 1 % of each column's time, under a pixel.
    trace_of(&trace, &[("tf_10.0us_0", slices("firewall", 20_000, 0.0, 10.0, 0.1))]);
    let picture = view(&trace, &[]);
    assert!(picture.contains("each bar is the share of"), "{picture}");
    let ticks = bars(&picture, "#5AAF78");
    // A bar in every column of the 1250-pixel plot (4 pixels each), each one a pixel high: seen,
    // and no taller than the picture's resolution makes a share of a third of a pixel.
    assert!(ticks.len() >= 1250 / 4 - 1, "{} columns of ticks drawn", ticks.len());
    assert!(ticks.iter().all(|b| b.3 == 1.0), "{ticks:?}");
}

#[test]
fn trace_view_draws_each_share_of_a_column_as_tall_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("shares.json");
    // Steps of 9 us every 10 us beside a firewall that ticks 0.1 us in each 10 us: too many
    // slices for bars, so drawn as columns.
    trace_of(
        &trace,
        &[
            ("Src#0", slices("step", 20_000, 0.0, 10.0, 9.0)),
            ("tf_10.0us_0", slices("firewall", 20_000, 0.0, 10.0, 0.1)),
        ],
    );
    let picture = view(&trace, &[]);
    assert!(picture.contains("each bar is the share of"), "{picture}");
    // A row's full height is 36 pixels: the steps' 90 % is 32 of them, and the ticks' 1 %, a
    // third of a pixel, is drawn as one pixel, not as the 8 % of three.
    let heights = |fill: &str| -> Vec<f64> { bars(&picture, fill).iter().map(|b| b.3).collect() };
    let steps = heights("#4285C6");
    assert!(steps.len() >= 1250 / 4 - 1, "{steps:?}");
    assert!(steps.iter().all(|h| (32.0..=33.0).contains(h)), "{steps:?}");
    let ticks = heights("#5AAF78");
    assert!(ticks.len() >= 1250 / 4 - 1, "{ticks:?}");
    assert!(ticks.iter().all(|h| *h == 1.0), "{ticks:?}");
}

/// `count` steps of `dur` µs, one every `every` µs, each with a wait nested in its second half.
fn steps_that_wait(count: usize, every: f64, dur: f64) -> Vec<Value> {
    let mut events = slices("step", count, 0.0, every, dur);
    events.extend(slices("wait", count, dur / 2.0, every, dur / 2.0));
    events.sort_by(|a, b| a["ts"].as_f64().partial_cmp(&b["ts"].as_f64()).unwrap());
    events
}

#[test]
fn trace_view_draws_columns_when_a_line_has_more_slices_than_half_the_plot_pixels() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("busy.json");
    // 1,200 slices, but 400 on each line (a row, or its nested waits): 3 pixels a slice on a
    // 1250-pixel plot, room for each bar and the gap after it. Each is drawn.
    trace_of(
        &trace,
        &[
            ("Src#0", steps_that_wait(400, 100.0, 40.0)),
            ("Snk#1", slices("step", 400, 50.0, 100.0, 40.0)),
        ],
    );
    let picture = view(&trace, &[]);
    assert!(!picture.contains("each bar is the share"), "{picture}");
    assert!(bars(&picture, "#4285C6").len() >= 800, "each step is drawn");
    // 700 slices on one line leave less than 2 pixels a slice: the gaps would close, so the
    // window is drawn as columns, though the plot has more pixels than slices.
    trace_of(&trace, &[("Src#0", slices("step", 700, 0.0, 100.0, 40.0))]);
    let picture = view(&trace, &[]);
    assert!(picture.contains("700 slices: each bar is the share"), "{picture}");
}

/// A trace keeps a thread per box: the report says so where the run would otherwise chain, so
/// that its rates are not taken for the untraced run's.
#[test]
fn a_trace_says_that_it_turned_chaining_off() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    // Four box threads on one core chain without a trace.
    let args = |traced: bool| {
        let mut args = vec![net("chain.smx"), "-n".into(), "200".into(), "--pin".into(), "0".into()];
        if traced {
            args.extend(["--trace".into(), trace.to_str().unwrap().to_string()]);
        }
        args
    };
    let run = |traced: bool| {
        let args = args(traced);
        let out = smxrun(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let traced = run(true);
    assert!(traced.contains("chaining: off under --trace"), "{traced}");
    let untraced = run(false);
    assert!(!untraced.contains("chaining: off under"), "{untraced}");
    assert!(untraced.contains("chaining:"), "the untraced run chains: {untraced}");
}
