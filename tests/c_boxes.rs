//! C boxes through the `smxrun` binary: the example boxes of `examples/c-boxes` (C and C++)
//! compiled with the system compilers against headers `smxrun headers` generates, the example
//! net `nets/c_boxes.smx` with its books and output, and what must fail cleanly: an init
//! failure, a returned error, a missing symbol, two libraries providing one name, a missing
//! library.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::OnceLock;

const SMXRUN: &str = env!("CARGO_BIN_EXE_smxrun");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A temporary directory that lives as long as the test process (the example library is built
/// once and shared by the tests).
fn scratch() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

fn smxrun(args: &[&str]) -> Output {
    Command::new(SMXRUN)
        .args(args)
        .current_dir(root())
        .env("RUST_LOG", "warn")
        .output()
        .expect("run smxrun")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn compile(compiler: &str, args: &[&str]) {
    let out = Command::new(compiler)
        .args(args)
        .current_dir(root())
        .output()
        .unwrap_or_else(|e| panic!("cannot run '{compiler}': {e}"));
    assert!(
        out.status.success(),
        "{compiler} {}: {}",
        args.join(" "),
        text(&out.stderr)
    );
}

/// The three commands of the C boxes guide (docs/guide/c-boxes.md): headers, compile, (run in the tests).
fn example_library() -> &'static str {
    static LIB: OnceLock<String> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = scratch().join("example");
        let headers = dir.join("gen");
        let out = smxrun(&["headers", "nets/c_boxes.smx", "-o", headers.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let headers = headers.to_str().unwrap();
        let flags = [
            "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-fPIC", "-I", "include", "-I", headers,
        ];
        let mut objects = Vec::new();
        for src in [
            "c_lines.c",
            "c_gate.c",
            "c_add.c",
            "n_scale.c",
            "c_sink.c",
            "cxx_avg.cpp",
        ] {
            let obj = dir.join(format!("{src}.o")).to_str().unwrap().to_string();
            let path = format!("examples/c-boxes/src/{src}");
            let compiler = if src.ends_with(".cpp") { "c++" } else { "cc" };
            let mut args: Vec<&str> = flags.to_vec();
            args.extend(["-c", &path, "-o", &obj]);
            compile(compiler, &args);
            objects.push(obj);
        }
        let lib = dir.join("libcboxes.so").to_str().unwrap().to_string();
        let mut args: Vec<&str> = vec!["-shared"];
        args.extend(objects.iter().map(String::as_str));
        args.extend(["-o", &lib]);
        compile("c++", &args);
        lib
    })
}

/// A library made of one C source given as text.
fn c_library(name: &str, source: &str) -> String {
    let dir = scratch().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let lib = dir.join(format!("lib{name}.so")).to_str().unwrap().to_string();
    compile(
        "cc",
        &[
            "-shared",
            "-fPIC",
            "-Wall",
            "-Werror",
            "-I",
            "include",
            src.to_str().unwrap(),
            "-o",
            &lib,
        ],
    );
    lib
}

/// A fresh path for a report nobody reads.
fn report_file() -> String {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    scratch().join(format!("report_{n}.txt")).to_str().unwrap().to_string()
}

fn net_file(name: &str, text: &str) -> String {
    let path = scratch().join(format!("{name}.smx"));
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)))
}

fn net<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["nets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("no net {name}"))
}

fn channel<'a>(report: &'a serde_json::Value, from: &str, to: &str) -> &'a serde_json::Value {
    report["channels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["from"] == from && c["to"] == to)
        .unwrap_or_else(|| panic!("no channel {from} -> {to}"))
}

const EXPECTED: &str = "c_sink Sink: count=7 sum=1599 min=206 max=255\n";

#[test]
fn the_example_net_runs_with_its_books_and_output() {
    let lib = example_library();
    let report_path = scratch().join("example.json");
    let out = smxrun(&[
        "run",
        "nets/c_boxes.smx",
        "--config",
        "nets/c_boxes.toml",
        "--boxes",
        lib,
        "-q",
        "--report",
        "json",
        "-o",
        report_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), EXPECTED);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("[WARN  net_Lines_0] line 11 is not a number, skipped"),
        "{stderr}"
    );
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report_path).unwrap()).unwrap();
    assert_eq!(report["status"], "ok");
    // written / read per channel: Lines sends the 10 numbers of the file (one line is no
    // number), Gate passes 7 (drops -5, 5000 and a repeated 7), Offs sends one offset that Add
    // reads once and then 6 times again as its latest value.
    for (from, to, written, read) in [
        ("Lines", "Gate", 10, 10),
        ("Gate", "Add", 7, 7),
        ("Offs", "Add", 1, 1),
        ("Add", "Scale", 7, 7),
        ("Scale", "Avg", 7, 7),
        ("Avg", "Sink", 7, 7),
    ] {
        let c = channel(&report, from, to);
        assert_eq!(
            (c["written"].as_u64(), c["read"].as_u64()),
            (Some(written), Some(read)),
            "{from}->{to}: {c}"
        );
        assert_eq!(c["dropped"], 0, "{c}");
        assert_eq!(c["left"], 0, "{c}");
    }
    assert_eq!(channel(&report, "Offs", "Add")["duplicated"], 6);
    for (name, loops) in [("Lines", 11), ("Offs", 2), ("Gate", 10), ("Add", 7), ("Sink", 7)] {
        let n = net(&report, name);
        assert_eq!(n["status"], "ok", "{n}");
        assert_eq!(n["loop_count"], loops, "{n}");
    }
    // The boxes' own message books: what Gate dropped it destroyed; Avg (C++) destroys what it
    // reads and creates what it writes; Sink destroys everything.
    assert_eq!(net(&report, "Gate")["stats"]["destroyed"], 3);
    assert_eq!(net(&report, "Avg")["stats"]["created"], 7);
    assert_eq!(net(&report, "Sink")["stats"]["destroyed"], 7);
}

#[test]
fn the_generated_headers_are_the_examples() {
    let dir = scratch().join("gen_check");
    let out = smxrun(&["headers", "nets/c_boxes.smx", "-o", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let reference = root().join("examples/c-boxes/gen");
    let mut names: Vec<String> = std::fs::read_dir(&reference)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut written: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(written, names);
    for name in names {
        let want = std::fs::read_to_string(reference.join(&name)).unwrap();
        let got = std::fs::read_to_string(dir.join(&name)).unwrap();
        assert_eq!(got, want, "{name}");
    }
    // Only the port header for sources that bring their own NAME.h.
    let sig = scratch().join("gen_sig");
    let out = smxrun(&["headers", "nets/c_boxes.smx", "-o", sig.to_str().unwrap(), "--sig-only"]);
    assert!(out.status.success());
    assert!(sig.join("c_add_sig.h").exists() && !sig.join("c_add.h").exists());
}

/// A header of the user's own where a header would go is never replaced; one an earlier
/// `smxrun headers` wrote is made again from the net.
#[test]
fn headers_keep_a_file_of_the_users_own() {
    let file = net_file(
        "own_header",
        "Src = box smx_src_rand( out data )\nP = box c_own( in data, out x(data) )\n\
         Snk = box smx_snk_null( in x(data) )\nconnect Src.P.Snk\n",
    );
    let dir = scratch().join("own_header_gen");
    std::fs::create_dir_all(&dir).unwrap();
    let own = dir.join("c_own.h");
    std::fs::write(&own, "/* my own declarations */\n").unwrap();
    let out = smxrun(&["headers", &file, "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("exists and was not written by `smxrun headers`: it is not replaced"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&own).unwrap(), "/* my own declarations */\n");
    assert!(!dir.join("c_own_sig.h").exists(), "nothing is written");
    std::fs::remove_file(&own).unwrap();
    for _ in 0..2 {
        let out = smxrun(&["headers", &file, "-o", dir.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    assert!(
        std::fs::read_to_string(&own)
            .unwrap()
            .contains("Generated by `smxrun headers`")
    );
}

#[test]
fn headers_refuse_names_that_cannot_be_c_and_two_port_lists() {
    let file = net_file(
        "bad_headers",
        "A = box read( out x )\nB = box two( in x, out y )\nC = box two( in y )\nconnect A.B.C\n",
    );
    let out = smxrun(&["headers", &file, "-o", scratch().join("bad_gen").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("'read'") && stderr.contains("C library function"),
        "{stderr}"
    );
    assert!(stderr.contains("one generated header cannot fit both"), "{stderr}");
    assert!(!scratch().join("bad_gen").exists(), "nothing is written");
}

#[test]
fn settings_reach_the_c_boxes_from_the_command_line() {
    let lib = example_library();
    // factor 3 instead of 2: the averages grow by half; --set beats the file.
    let out = smxrun(&[
        "nets/c_boxes.smx",
        "--config",
        "nets/c_boxes.toml",
        "--boxes",
        lib,
        "--set",
        "Scale.factor=3",
        "--set",
        "c_gate.max=20",
        "-q",
        "-o",
        &report_file(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Gate passes 3 7 12 18 1 (max 20 from the implementation target, the file's [net.Gate]
    // min and dedup still apply); +100, x3: 309 321 336 354 303; averages over 3.
    let avgs = [
        309,
        (309 + 321) / 2,
        (309 + 321 + 336) / 3,
        (321 + 336 + 354) / 3,
        (336 + 354 + 303) / 3,
    ];
    let sum: i64 = avgs.iter().sum();
    let want = format!(
        "c_sink Sink: count=5 sum={sum} min={} max={}\n",
        avgs.iter().min().unwrap(),
        avgs.iter().max().unwrap()
    );
    assert_eq!(text(&out.stdout), want);
    // A value of the wrong type is the box's own business: c_gate refuses it in init.
    let out = smxrun(&[
        "nets/c_boxes.smx",
        "--config",
        "nets/c_boxes.toml",
        "--boxes",
        lib,
        "--set",
        "Gate.min=low",
        "-q",
        "-o",
        &report_file(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("property 'min' must be an integer"));
}

#[test]
fn an_init_failure_stops_the_run_before_any_box_runs_and_every_box_cleans_up() {
    let lib = example_library();
    let out = smxrun(&[
        "nets/c_boxes.smx",
        "--config",
        "nets/c_boxes.toml",
        "--boxes",
        lib,
        "--set",
        "Lines.file=/nonexistent/numbers.txt",
        "-q",
        "--report",
        "json",
    ]);
    // The runtime's rule for a failed init: no box runs, the run is refused (exit 1), and
    // every box that was initialised is cleaned up (the sink reports its empty books).
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "c_sink Sink: count=0 sum=0 min=0 max=0\n");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cannot open file '/nonexistent/numbers.txt'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Lines#0: init failed: c_lines_init returned -1"),
        "{stderr}"
    );
}

const FAILING: &str = r#"
#include "smx.h"
SMX_BOX(t_fail);
int t_fail_init(void *h, void **state) { (void)h; *state = NULL; return 0; }
int t_fail(void *h, void *state)
{
    smx_msg_t *m = smx_read(h, 0);
    (void)state;
    if (m == NULL)
        return SMX_NET_RETURN;
    if (smx_net_count(h) == 3)
    {
        smx_msg_destroy(h, m, 1);
        return -7;
    }
    return smx_write(h, 0, m) == 0 ? SMX_NET_RETURN : SMX_NET_END;
}
void t_fail_cleanup(void *h, void *state) { (void)h; (void)state; }
"#;

#[test]
fn an_error_a_box_returns_is_contained() {
    let lib = c_library("fail", FAILING);
    let file = net_file(
        "fail",
        "Src = box smx_src_rand( out data )\nF = box t_fail( up in data, down out data )\nSnk = box smx_snk_null( in data )\nconnect Src.F.Snk\n",
    );
    let out = smxrun(&[
        &file,
        "--boxes",
        &lib,
        "-q",
        "--report",
        "json",
        "--set",
        "Src.count=1000",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let report = json(&out);
    let f = net(&report, "F");
    assert_eq!(f["status"], "failed");
    assert_eq!(
        f["error"],
        "step 3 failed: t_fail returned -7 (a negative value marks a failure)"
    );
    assert_eq!(f["loop_count"], 3);
    assert_eq!(net(&report, "Src")["status"], "ok");
    assert_eq!(net(&report, "Snk")["status"], "ok");
    // Two messages went through; the source's later writes were refused and counted.
    assert_eq!(channel(&report, "F", "Snk")["written"], 2);
    assert_eq!(channel(&report, "F", "Snk")["read"], 2);
    let c = channel(&report, "Src", "F");
    assert_eq!(c["read"], 3);
    let written = c["written"].as_u64().unwrap();
    let booked = 3 + c["dropped"].as_u64().unwrap() + c["left"].as_u64().unwrap();
    assert_eq!(written, booked, "every message is booked: {c}");
}

const HALF: &str = r#"
#include "smx.h"
int t_half(void *h, void *state) { (void)h; (void)state; return SMX_NET_END; }
int t_half_init(void *h, void **state) { (void)h; (void)state; return 0; }
"#;

#[test]
fn a_missing_symbol_is_an_error_naming_library_symbol_and_box() {
    let lib = c_library("half", HALF);
    let file = net_file(
        "half",
        "Half = box t_half( out data )\nSnk = box smx_snk_null( in data )\nconnect Half.Snk\n",
    );
    let out = smxrun(&[&file, "--boxes", &lib, "-q"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "nothing ran: {}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("box 'Half'"), "{stderr}");
    assert!(
        stderr.contains(&format!("box library '{lib}' has no symbol 't_half_cleanup'")),
        "{stderr}"
    );
    // `check` finds it too.
    let out = smxrun(&["check", &file, "--boxes", &lib]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("t_half_cleanup"));
}

const DUP: &str = r#"
#include "smx.h"
int t_dup(void *h, void *state) { (void)h; (void)state; return SMX_NET_END; }
int t_dup_init(void *h, void **state) { (void)h; (void)state; return 0; }
void t_dup_cleanup(void *h, void *state) { (void)h; (void)state; }
"#;

#[test]
fn two_libraries_providing_one_name_is_an_error() {
    let a = c_library("dup_a", DUP);
    let b = c_library("dup_b", DUP);
    let file = net_file(
        "dup",
        "D = box t_dup( out data )\nSnk = box smx_snk_null( in data )\nconnect D.Snk\n",
    );
    let out = smxrun(&[&file, "--boxes", &a, "--boxes", &b, "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "box 'D' (implementation 't_dup'): symbol 't_dup' is provided by '{a}' and '{b}'"
        )),
        "{stderr}"
    );
    // One of them is fine, and a library given twice is opened once.
    let out = smxrun(&[&file, "--boxes", &a, "--boxes", &a, "-q", "-o", &report_file()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn a_missing_library_or_implementation_is_named() {
    let out = smxrun(&["nets/c_boxes.smx", "--boxes", "/nonexistent/libnothing.so", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cannot load box library '/nonexistent/libnothing.so'"),
        "{}",
        text(&out.stderr)
    );
    let lib = c_library("dup_only", DUP);
    let out = smxrun(&["nets/c_boxes.smx", "--boxes", &lib, "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("box 'Lines' uses unknown implementation 'c_lines'")
            && stderr.contains(&format!("no symbol 'c_lines' in '{lib}'")),
        "{stderr}"
    );
    // The way to bring a box of one's own is not told to one who gave a library.
    assert!(!stderr.contains("hint:"), "{stderr}");
}

#[test]
fn the_config_file_names_libraries_relative_to_itself() {
    let lib = example_library();
    let dir = scratch().join("config_boxes");
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::fs::copy(lib, dir.join("lib/libmine.so")).unwrap();
    let base = std::fs::read_to_string(root().join("nets/c_boxes.toml")).unwrap();
    let config = dir.join("run.toml");
    std::fs::write(&config, format!("boxes = [\"lib/libmine.so\"]\n\n{base}")).unwrap();
    let out = smxrun(&[
        "nets/c_boxes.smx",
        "--config",
        config.to_str().unwrap(),
        "-q",
        "-o",
        &report_file(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), EXPECTED);
    let out = smxrun(&["check", "nets/c_boxes.smx", "--config", config.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("warning"), "{}", text(&out.stderr));
    std::fs::write(&config, format!("boxes = \"lib/libmine.so\"\n\n{base}")).unwrap();
    let out = smxrun(&["nets/c_boxes.smx", "--config", config.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("run.toml:1: key 'boxes'"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn boxes_lists_what_a_library_provides() {
    let lib = example_library();
    let out = smxrun(&["boxes", "--boxes", lib]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&format!("C boxes in {lib} (6):")), "{stdout}");
    for name in ["c_add", "c_gate", "c_lines", "c_sink", "cxx_avg", "n_scale"] {
        assert!(
            stdout.contains(&format!("  {name:7}  {name}, {name}_init, {name}_cleanup")),
            "{stdout}"
        );
    }
    assert!(stdout.contains("smx_src_rand"), "the built-in boxes are listed too");
    let out = smxrun(&["boxes", "c_gate", "--boxes", lib]);
    assert!(out.status.success());
    assert!(
        text(&out.stdout).contains("whatever the net declares"),
        "{}",
        text(&out.stdout)
    );
    let half = c_library("half_list", HALF);
    let out = smxrun(&["boxes", "--boxes", &half]);
    assert!(
        text(&out.stdout).contains("t_half  incomplete: no t_half_cleanup"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn fan_out_copies_cxx_messages_with_their_copy_function() {
    // Avg's C++ messages (new/delete) go to two sinks through a routing node, which copies them
    // with the message's own copy function; both sinks see every value.
    let lib = example_library();
    let file = net_file(
        "fan_out",
        "Lines = box c_lines( out value )\nAvg = box cxx_avg( up in value, down out value )\n\
         S1 = box c_sink( in value )\nS2 = box c_sink( in value )\nconnect Lines.Avg.(S1 | S2)\n",
    );
    let data = root().join("examples/c-boxes/data/numbers.txt");
    let out = smxrun(&[
        &file,
        "--boxes",
        lib,
        "--set",
        &format!("Lines.file={}", data.display()),
        "--set",
        "Avg.window=1",
        "-q",
        "--report",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let (sums, report) = stdout.split_at(stdout.find('{').unwrap());
    // window 1: the values as they are, 3 7 7 -5 12 40 5000 18 25 1.
    let mut lines: Vec<&str> = sums.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "c_sink S1: count=10 sum=5108 min=-5 max=5000",
            "c_sink S2: count=10 sum=5108 min=-5 max=5000"
        ]
    );
    let report: serde_json::Value = serde_json::from_str(report).unwrap();
    assert_eq!(report["status"], "ok");
}

#[test]
fn check_resolves_the_c_boxes() {
    let lib = example_library();
    let out = smxrun(&["check", "nets/c_boxes.smx", "--boxes", lib]);
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    // Without the library the net cannot run, so check rejects it as run does.
    let out = smxrun(&["check", "nets/c_boxes.smx"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("error: box 'Lines' uses unknown implementation 'c_lines'"));
}

#[test]
fn smxrun_exports_the_c_abi() {
    let Ok(out) = Command::new("nm").args(["-D", "--defined-only", SMXRUN]).output() else {
        eprintln!("no nm: skipped (the other tests load libraries, which needs the same)");
        return;
    };
    let symbols = text(&out.stdout);
    let exported: Vec<&str> = symbols
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| s.starts_with("smx_"))
        .collect();
    for name in [
        "smx_read",
        "smx_write",
        "smx_msg_create",
        "smx_config_get_string_err",
        "smx_log_text",
        "smx_net_start_routine",
    ] {
        assert!(exported.contains(&name), "{name} not exported: {exported:?}");
    }
    assert_eq!(exported.len(), 31, "{exported:?}");
}

#[test]
fn a_read_timeout_bounds_the_firing_rule_of_a_c_box() {
    // Lines pauses 150 ms after each value; Sink waits at most 20 ms (SMX_SET_READ_TIMEOUT in
    // its init), so it must run on silence between values, see SMX_HAS_READ_TIMEOUT, and still
    // get every value.
    let lib = example_library();
    let file = net_file(
        "read_timeout",
        "Lines = box c_lines( out value )\nSink = box c_sink( in value )\nconnect Lines.Sink\n",
    );
    let data = root().join("examples/c-boxes/data/numbers.txt");
    let out = smxrun(&[
        &file,
        "--boxes",
        lib,
        "--set",
        &format!("Lines.file={}", data.display()),
        "--set",
        "Lines.limit=3",
        "--set",
        "Lines.sleep_us=150000",
        "--set",
        "Sink.timeout_ms=20",
        "-q",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.lines().next(),
        Some("c_sink Sink: count=3 sum=17 min=3 max=7"),
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no value within the timeout"), "{stderr}");
}

/// `examples/c-boxes/timeout/c_burst.c` and the example sink, against the headers of
/// `nets/c_write_timeout.smx`.
fn write_timeout_library() -> String {
    let dir = scratch().join("write_timeout");
    let headers = dir.join("gen");
    let out = smxrun(&["headers", "nets/c_write_timeout.smx", "-o", headers.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lib = dir.join("libtimeout.so").to_str().unwrap().to_string();
    compile(
        "cc",
        &[
            "-O1",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-shared",
            "-fPIC",
            "-I",
            "include",
            "-I",
            headers.to_str().unwrap(),
            "examples/c-boxes/timeout/c_burst.c",
            "examples/c-boxes/src/c_sink.c",
            "-o",
            &lib,
        ],
    );
    lib
}

/// `key=N` out of a box's summary line.
fn field(line: &str, key: &str) -> u64 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key}= in '{line}'"))
}

#[test]
fn a_write_timeout_drops_what_a_slow_consumer_has_no_room_for_and_books_it() {
    // Burst writes 50 values as fast as it can, each write waiting at most 1 ms
    // (SMX_SET_WRITE_TIMEOUT in its init) for room in a channel of length 1; Sink takes 20 ms a
    // value. Most writes must time out: each says so (SMX_GET_WRITE_ERROR is TIMEOUT, the write
    // returns non-zero), its message is dropped and counted, and the source goes on.
    let lib = write_timeout_library();
    let out = smxrun(&[
        "nets/c_write_timeout.smx",
        "--boxes",
        &lib,
        "--channel-len",
        "1",
        "--set",
        "Burst.count=50",
        "--set",
        "Burst.timeout_ms=1",
        "--set",
        "Sink.sleep_us=20000",
        "-q",
        "--report",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let (lines, report) = stdout.split_at(stdout.find('{').unwrap());
    let burst = lines.lines().find(|l| l.starts_with("c_burst Burst:")).expect(lines);
    let sink = lines.lines().find(|l| l.starts_with("c_sink Sink:")).expect(lines);
    let (sent, timed_out) = (field(burst, "sent"), field(burst, "timed_out"));
    assert_eq!(field(burst, "failed"), 0, "{burst}");
    assert_eq!(sent + timed_out, 50, "{burst}");
    assert!(
        timed_out > 0,
        "a consumer 20 ms a value keeps up with 1 ms writes: {burst}"
    );
    assert_eq!(field(sink, "count"), sent, "{sink}");
    let report: serde_json::Value = serde_json::from_str(report).unwrap();
    assert_eq!(report["status"], "ok");
    let c = channel(&report, "Burst", "Sink");
    assert_eq!(c["written"], 50, "{c}");
    assert_eq!(c["dropped"], timed_out, "{c}");
    assert_eq!(c["read"], sent, "{c}");
    assert_eq!(c["left"], 0, "{c}");
}

#[test]
fn minus_n_says_it_does_not_reach_c_boxes() {
    let lib = example_library();
    let report = scratch().join("minus_n.txt");
    let out = smxrun(&[
        "nets/c_boxes.smx",
        "--config",
        "nets/c_boxes.toml",
        "--boxes",
        lib,
        "-n",
        "5",
        "-q",
        "-o",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("warning: -n 5 does not reach the C sources Lines, Offs, which no channel feeds"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("Gate"),
        "a box fed by a channel ends with its feeders: {stderr}"
    );
}

/// The README's C box: a pass-through between a built-in source that -n reaches and a sink.
/// Its end comes from its feeder, so -n reaches it too and the run has nothing to warn of.
#[test]
fn minus_n_reaches_a_c_box_that_a_channel_feeds() {
    let lib = c_library(
        "readme_pass",
        r#"#include "smx.h"

SMX_BOX(c_pass);

int c_pass_init(void *h, void **state) { (void)h; *state = NULL; return 0; }

int c_pass(void *h, void *state)
{
    smx_msg_t *m = smx_read(h, 0);
    (void)state;
    if (m == NULL)
        return SMX_NET_RETURN;
    return smx_write(h, 0, m) == 0 ? SMX_NET_RETURN : SMX_NET_END;
}

void c_pass_cleanup(void *h, void *state) { (void)h; (void)state; }
"#,
    );
    let net = net_file(
        "readme_pass",
        "Src  = box smx_src_rand( out data )\n\
         Pass = box c_pass( up in data, down out data )\n\
         Snk  = box smx_snk_null( in data )\n\
         connect Src.Pass.Snk\n",
    );
    let out = smxrun(&[&net, "--boxes", &lib, "-n", "1000"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("does not reach"), "{stderr}");
    assert!(!stdout.contains("Attention"), "{stdout}");
    assert!(stdout.contains("1000 messages"), "{stdout}");
}

/// Files that are not a loadable library for this machine are refused before the loader maps
/// them, naming the file and the cause, with exit 1: a truncated copy (the loader would map
/// pages past its end and die of SIGBUS), one whose header names another architecture (the
/// loader said "No such file or directory"), one that is not ELF at all, and a FIFO (the loader
/// would wait for a writer forever).
#[test]
fn a_library_that_cannot_be_loaded_here_is_refused_before_loading() {
    let good = std::fs::read(example_library()).unwrap();
    let dir = scratch().join("bad-libraries");
    std::fs::create_dir_all(&dir).unwrap();
    let truncated = dir.join("libtruncated.so");
    std::fs::write(&truncated, &good[..3000]).unwrap();
    let foreign = dir.join("libforeign.so");
    let mut bytes = good.clone();
    // e_machine: 0x28, 32-bit ARM.
    bytes[18..20].copy_from_slice(&40u16.to_le_bytes());
    std::fs::write(&foreign, &bytes).unwrap();
    let text_file = dir.join("libtext.so");
    std::fs::write(&text_file, "not a library\n").unwrap();
    let fifo = dir.join("libfifo.so");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: c_path is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    for (lib, cause) in [
        (&truncated, "truncated"),
        (&foreign, "another architecture"),
        (&text_file, "not an ELF"),
        (&fifo, "not a regular file"),
    ] {
        let lib = lib.to_str().unwrap();
        let out = smxrun_within(
            &["nets/c_boxes.smx", "--boxes", lib, "-q"],
            std::time::Duration::from_secs(30),
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{lib}: {stderr}");
        assert!(stderr.contains(lib) && stderr.contains(cause), "{lib}: {stderr}");
    }
}

/// `smxrun` with `args`, killed after `limit` (so a hang fails the test instead of blocking it).
fn smxrun_within(args: &[&str], limit: std::time::Duration) -> Output {
    let mut child = Command::new(SMXRUN)
        .args(args)
        .current_dir(root())
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run smxrun");
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && started.elapsed() < limit {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}

/// A box whose init, or a library whose constructor, calls the C library's `exit` ends the
/// run; smxrun must not report that as its own exit code (0: success, 3: books not clean).
const EXITS: &str = r#"
#include <stdlib.h>
#include "smx.h"
#ifdef AT_LOAD
__attribute__((constructor)) static void leave_at_load(void) { exit(CODE); }
#endif
int t_exit(void *h, void *state) { (void)h; (void)state; return SMX_NET_END; }
int t_exit_init(void *h, void **state) { (void)h; (void)state; exit(CODE); return 0; }
void t_exit_cleanup(void *h, void *state) { (void)h; (void)state; }
"#;

#[test]
fn a_box_or_library_that_calls_exit_does_not_decide_the_exit_code() {
    let file = net_file(
        "exits",
        "E = box t_exit( out data )\nSnk = box smx_snk_null( in data )\nconnect E.Snk\n",
    );
    for (name, defines) in [
        ("exit0_init", "#define CODE 0\n"),
        ("exit3_init", "#define CODE 3\n"),
        ("exit0_load", "#define CODE 0\n#define AT_LOAD\n"),
    ] {
        let lib = c_library(name, &format!("{defines}{EXITS}"));
        let out = smxrun(&[&file, "--boxes", &lib, "-q"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains("called exit"), "{name}: {stderr}");
    }
}

/// A box whose init never returns holds up the start of every box. After a stop the report
/// names that box as stuck in its init, and calls no other box stuck or gives it a wall time:
/// none of them ever started.
const BLOCKS: &str = r#"
#include <unistd.h>
#include "smx.h"
int t_block(void *h, void *state) { (void)h; (void)state; return SMX_NET_END; }
int t_block_init(void *h, void **state) { (void)h; (void)state; for (;;) sleep(1); return 0; }
void t_block_cleanup(void *h, void *state) { (void)h; (void)state; }
"#;

#[test]
fn a_box_blocked_in_its_init_is_named_after_a_stop() {
    let lib = c_library("blocks", BLOCKS);
    let file = net_file(
        "blocks",
        "Src = box smx_src_rand( out data )\nB = box t_block( out data )\n\
         Snk = box smx_snk_null( in data )\nOther = box smx_snk_null( in data )\nconnect Src.Snk | B.Other\n",
    );
    let child = Command::new(SMXRUN)
        .args([&file, "--boxes", &lib, "-q", "--report", "json"])
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1_000));
    // SAFETY: signals the child this test spawned.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    let out = wait_within(child, std::time::Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let report = json(&out);
    let blocked = net(&report, "B");
    assert_eq!(blocked["status"], "stuck", "{blocked}");
    assert!(blocked["error"].as_str().unwrap().contains("init"), "{blocked}");
    for name in ["Src", "Snk", "Other"] {
        let other = net(&report, name);
        assert_ne!(other["status"], "stuck", "{name}: {other}");
        assert_eq!(other["wall_time_s"], 0.0, "{name}: {other}");
    }
}

/// Waits for `child`, killed after `limit` (a hang fails the test instead of blocking it).
fn wait_within(mut child: std::process::Child, limit: std::time::Duration) -> Output {
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && started.elapsed() < limit {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}

/// A library whose constructor never returns holds the dynamic loader's lock. A stop must
/// still end smxrun (5 s after the signal, without a report), not deadlock in exit().
const HANGS_AT_LOAD: &str = r#"
#include <unistd.h>
#include "smx.h"
__attribute__((constructor)) static void never_returns(void) { for (;;) sleep(1); }
int t_hang(void *h, void *state) { (void)h; (void)state; return SMX_NET_END; }
int t_hang_init(void *h, void **state) { (void)h; (void)state; return 0; }
void t_hang_cleanup(void *h, void *state) { (void)h; (void)state; }
"#;

#[test]
fn a_stop_while_a_library_loads_ends_smxrun() {
    let lib = c_library("hangs_at_load", HANGS_AT_LOAD);
    let file = net_file(
        "hangs",
        "H = box t_hang( out data )\nSnk = box smx_snk_null( in data )\nconnect H.Snk\n",
    );
    let child = Command::new(SMXRUN)
        .args([&file, "--boxes", &lib, "-q"])
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1_000));
    // SAFETY: signals the child this test spawned.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    let out = wait_within(child, std::time::Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("without a report"), "{}", text(&out.stderr));
}
