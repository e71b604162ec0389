//! Output that is neither lost nor amplified: `-o` is atomic and
//! works onto special files, a closed pipe is never a panic, diagnostics of a huge bad file
//! stay small, and bad box values stop the run before it starts.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

fn smxrun() -> Command {
    Command::new(env!("CARGO_BIN_EXE_smxrun"))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const PAIR: &str = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n";

/// Runs `smxrun ARGS -o FILE`: first onto `foreign`, a file the command did not write, which
/// it must refuse with `refusal` and keep as it was; then, once per format, `--report`-like
/// `format_option FORMAT` onto one path, each run replacing what the one before wrote.
fn replaces_its_own_and_nothing_else(
    args: &[&str],
    foreign: &Path,
    refusal: &str,
    format_option: &str,
    formats: &[&str],
) {
    let before = std::fs::read_to_string(foreign).unwrap();
    let out = smxrun().args(args).arg("-o").arg(foreign).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(refusal), "{stderr}");
    assert_eq!(std::fs::read_to_string(foreign).unwrap(), before);
    let own = foreign.with_file_name("own.out");
    for format in formats {
        let out = smxrun()
            .args(args)
            .args([format_option, format, "-o"])
            .arg(&own)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `-o` replaces a report (of any format) but no other file: a split's job beside the reports
/// holds the links' keys, and a slip of `-o` onto it would lose it.
#[test]
fn a_runs_report_replaces_a_report_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "pair.smx", PAIR);
    let job = write(dir.path(), "main.job", "{\"process\": \"main\"}\n");
    replaces_its_own_and_nothing_else(
        &[net.to_str().unwrap(), "-q", "-n", "10"],
        &job,
        "holds something other than a report",
        "--report",
        &["text", "json", "smx", "text"],
    );
}

/// `graph -o` replaces a graph of any format but no other file: the graph is written again from
/// the net in a moment, a second net or a box's source beside it perhaps never.
#[test]
fn a_graph_replaces_a_graph_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "pair.smx", PAIR);
    let other_net = write(dir.path(), "other.smx", PAIR);
    replaces_its_own_and_nothing_else(
        &["graph", net.to_str().unwrap()],
        &other_net,
        "holds something other than a graph",
        "--format",
        &["gml", "graphml", "dot", "json", "gml"],
    );
}

/// `--trace` and `--stats-file` replace what a run wrote there before and nothing else: a slip
/// of either onto a source file or a saved report would lose it, as one of `-o` would. A saved
/// report with the user's notes added is theirs, and `-o` keeps it too.
#[test]
fn a_trace_live_figures_or_a_report_replace_only_their_own_kind() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "pair.smx", PAIR);
    let run = |args: &[&str]| smxrun().arg(&net).args(["-q", "-n", "10"]).args(args).output().unwrap();
    let source = write(dir.path(), "prog.c", "int main(void) { return 0; }\n");
    for (option, kind) in [("--trace", "a trace"), ("--stats-file", "live figures")] {
        let out = run(&[option, source.to_str().unwrap(), "--stats-every", "1ms"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{option}: {err}");
        assert!(
            err.contains(&format!(
                "{option} '{}' holds something other than {kind}",
                source.display()
            )),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(&source).unwrap(),
            "int main(void) { return 0; }\n"
        );
        let own = dir.path().join(format!("own{option}"));
        for _ in 0..2 {
            let out = run(&[option, own.to_str().unwrap(), "--stats-every", "1ms"]);
            assert!(
                out.status.success(),
                "{option}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let report = dir.path().join("report.txt");
    assert!(run(&["-o", report.to_str().unwrap()]).status.success());
    let mut noted = std::fs::read_to_string(&report).unwrap();
    noted.push_str("\nMy notes: the rate looks low.\n");
    std::fs::write(&report, &noted).unwrap();
    let out = run(&["-o", report.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&report).unwrap(), noted);
}

/// An output into a directory that does not exist names the directory, whichever option
/// asked for it, before anything runs.
#[test]
fn every_output_into_a_missing_directory_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "pair.smx", PAIR);
    let missing = dir.path().join("nodir");
    let file = |name: &str| missing.join(name).display().to_string();
    for args in [
        vec!["-o".to_string(), file("r.txt")],
        vec!["--trace".to_string(), file("t.json")],
        vec![
            "--stats-every".to_string(),
            "100ms".to_string(),
            "--stats-file".to_string(),
            file("s.jsonl"),
        ],
    ] {
        let out = smxrun()
            .arg(&net)
            .args(["-q", "-n", "10"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("its directory '{}' does not exist", missing.display())),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn concurrent_runs_onto_one_file_leave_one_whole_report() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "pair.smx", PAIR);
    let report = dir.path().join("report.json");
    for _ in 0..3 {
        let children: Vec<_> = (0..4)
            .map(|i| {
                smxrun()
                    .arg(&net)
                    .args(["-q", "--report", "json", "-n"])
                    .arg((20_000 * (i + 1)).to_string())
                    .arg("-o")
                    .arg(&report)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        let text = std::fs::read_to_string(&report).unwrap();
        let parsed: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("a broken report: {e}: {text}"));
        assert_eq!(parsed["status"], "ok");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "no temporary files left behind: {left:?}");
}

#[test]
fn dash_dev_stdout_on_a_pipe_and_a_fifo_work() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "pair.smx", PAIR);
    for target in ["-", "/dev/stdout"] {
        let out = smxrun()
            .arg(&net)
            .args(["-q", "-n", "100", "-o", target])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{target}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("Total:"), "{target}");
    }
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: plain FFI call on a NUL-terminated path this test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            std::fs::File::open(fifo).unwrap().read_to_string(&mut text).unwrap();
            text
        })
    };
    let out = smxrun()
        .arg(&net)
        .args(["-q", "-n", "100", "-o"])
        .arg(&fifo)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(reader.join().unwrap().contains("Total:"));
}

#[test]
fn a_report_onto_a_full_disk_fails_with_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "pair.smx", PAIR);
    let out = smxrun()
        .arg(&net)
        .args(["-q", "-n", "100", "-o", "/dev/full"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot write '/dev/full'") && err.contains("No space left"),
        "{err}"
    );
}

#[test]
fn no_command_panics_on_a_closed_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "pair.smx", PAIR);
    let bad = write(dir.path(), "bad.smx", "A = box smx_src_rand( out data )\nconnect A.B\n");
    let (good, bad) = (good.to_str().unwrap(), bad.to_str().unwrap());
    let cases: [(&[&str], i32); 6] = [
        (&["check", bad], 1),
        (&["check", good], 0),
        (&["graph", good], 0),
        (&["boxes"], 0),
        (&["run", good, "-n", "1000", "-q"], 0),
        (&["run", bad], 1),
    ];
    for (args, code) in cases {
        // Both streams are pipes whose reader is gone before smxrun writes.
        let mut child = smxrun()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        drop(child.stderr.take());
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "{args:?}");
    }
}

#[test]
fn bench_refuses_more_pairs_than_a_run_has_threads() {
    let out = smxrun()
        .args(["bench", "scaling", "--pairs", "100000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at most 2048 pairs") && !err.contains("panicked"), "{err}");
}

#[test]
fn thousands_of_errors_on_one_long_line_print_a_bounded_text() {
    let dir = tempfile::tempdir().unwrap();
    // 3000 redefinitions on one 93 KB line: each diagnostic used to repeat the whole line.
    let line = vec!["A = box smx_src_rand(out data)"; 3_000].join(" ") + " connect A\n";
    let net = write(dir.path(), "many.smx", &line);
    let out = smxrun().arg("check").arg(&net).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.len() < 100_000, "{} bytes of diagnostics", err.len());
    assert!(
        err.contains("and 2900 more (2900 errors, 0 warnings) not shown"),
        "{err}"
    );
    assert!(
        err.contains("rejected (3000 errors, 0 warnings)"),
        "the summary counts all"
    );

    let huge = dir.path().join("huge.smx");
    std::fs::write(&huge, vec![b' '; 17 << 20]).unwrap();
    let out = smxrun().arg("check").arg(&huge).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("larger than the limit of 16777216 bytes"), "{err}");
}

#[test]
fn a_bad_zmq_value_stops_the_run_before_it_starts() {
    // The sink would otherwise open its socket and wait out its 10 s timeout for a receiver
    // after the source's bad value failed the start.
    let dir = tempfile::tempdir().unwrap();
    let net = write(
        dir.path(),
        "zmq.smx",
        "Src1 = box smx_src_rand( out data )\nSnk1 = box smx_snk_zmq( in data, in topic open )\n\
         Src2 = box smx_src_zmq( out data, out topic )\nSnk2 = box smx_snk_dump( in data, in topic )\n\
         connect (Src1.Snk1) | (Src2.Snk2)\n",
    );
    // A free port, not the default one: the default lies in the kernel's ephemeral range,
    // where another test's connection may hold it for the moment.
    let endpoint = common::zmq::free_tcp_endpoint();
    // `check --config` gives the run's verdict, and names every bad value, not the first.
    let config = write(
        dir.path(),
        "bad.toml",
        &format!(
            "[net.Src2]\ntimeout = \"0s\"\nendpoint = \"{endpoint}\"\n\
             [net.Snk1]\nbatch = 0\nendpoint = \"{endpoint}\"\n"
        ),
    );
    let out = smxrun()
        .arg("check")
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml:2: key 'timeout' of net 'Src2': ") && err.contains("timeout: must be longer than 0"),
        "{err}"
    );
    assert!(
        err.contains("bad.toml:5: key 'batch' of net 'Snk1': ") && err.contains("batch: must be at least 1"),
        "{err}"
    );
    assert!(
        err.contains("rejected (2 errors, 0 warnings: 2 boxes with bad values)"),
        "{err}"
    );
    let bad_values = [
        "Src2.timeout=0s",
        "Src2.senders=0",
        "Src2.hwm=3000000000",
        "Src2.endpoint=foo://x",
        "Src2.endpoint=tcp://127.0.0.1:0",
        "Snk1.batch=0",
        "Snk1.max_message=10",
        "Src1.size=999999999999",
        // Found only in init (the file cannot be opened): the run is refused and the sink,
        // whose socket is open by then, does not wait for a receiver.
        "Snk2.path=/nonexistent/dir/path",
    ];
    for bad in bad_values {
        let start = Instant::now();
        let out = smxrun()
            .arg(&net)
            .args(["-q", "-n", "10", "--set", "Snk2.path=/dev/null"])
            .args(["--set", &format!("Snk1.endpoint={endpoint}")])
            .args(["--set", &format!("Src2.endpoint={endpoint}"), "--set", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        let (instance, key) = bad.split_once('=').unwrap().0.split_once('.').unwrap();
        assert!(err.contains(instance) && err.contains(key), "{bad}: {err}");
        assert!(
            start.elapsed() < Duration::from_secs(8),
            "{bad}: took {:?} (nothing may wait for a peer)",
            start.elapsed()
        );
    }
}

#[test]
fn a_zmq_net_in_one_process_totals_the_messages_its_final_sinks_got() {
    // Src1 -> Snk1 ~zmq~> Src2 -> Snk2 (data and topic): before, the total counted Snk1's
    // input, Snk2's data and Snk2's topics: three times the count.
    let endpoint = common::zmq::free_tcp_endpoint();
    let out = smxrun()
        .args([
            "nets/zmq_pipeline_tcp.smx",
            "--config",
            "nets/zmq_pipeline_tcp.toml",
            "-q",
            "-n",
            "1000",
        ])
        .args(["--report", "json", "--set", "Snk2.path=/dev/null"])
        .args([
            "--set",
            &format!("Snk1.endpoint={endpoint}"),
            "--set",
            &format!("Src2.endpoint={endpoint}"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["messages"], 1000, "{}", report["messages"]);
}

#[test]
fn a_run_the_process_limits_cannot_hold_is_refused_before_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "pair.smx", PAIR);
    // 4294967295 slots per channel: before, every slot was allocated and the process aborted.
    let out = smxrun()
        .arg(&net)
        .args(["-q", "--channel-len", "4294967295"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the channels need") && err.contains("--channel-len"),
        "{err}"
    );
    // A length the net declares is one `--channel-len` leaves alone: the run says where it is
    // set, and `check` warns of it before any run.
    let declared = write(
        dir.path(),
        "declared.smx",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data[4294967295] )\nconnect Src.Snk\n",
    );
    let out = smxrun()
        .arg(&declared)
        .args(["-q", "--channel-len", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the longest, channel 'data' (Src#0 -> Snk#1), has its length declared in the net: declare a shorter one there")
            && !err.contains("use a shorter --channel-len"),
        "{err}"
    );
    let out = smxrun().arg("check").arg(&declared).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let (err, verdict) = (
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout),
    );
    assert!(
        err.contains("warning: channel 'data' (Src#0 -> Snk#1) declares a length of 4294967295 in the net")
            && format!("{err}{verdict}").contains("(0 errors, 1 warning)"),
        "{err}{verdict}"
    );
    // One that fits is reserved and written before the start, which takes seconds: the run
    // says why, as it says it of a long --channel-len, and not only `check`.
    let large = write(
        dir.path(),
        "large.smx",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data[5000000] )\nconnect Src.Snk\n",
    );
    let out = smxrun().arg(&large).args(["-q", "-n", "10"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("channel 'data' (Src#0 -> Snk#1) declares a length of 5000000 in the net"),
        "{err}"
    );
    // Channels none of which is large alone are added up, as --channel-len's are.
    let many = write(
        dir.path(),
        "many.smx",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data[2000000] )\n\
         connect (Src.Snk) | (Src.Snk) | (Src.Snk)\n",
    );
    let out = smxrun().arg("check").arg(&many).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: 3 channels declare lengths in the net that together reserve 0.4 GiB"),
        "{err}"
    );

    // Two ZeroMQ boxes under `ulimit -n 30`: before, libzmq aborted (exit 134).
    let endpoint = common::zmq::free_tcp_endpoint();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 30 && exec {} nets/zmq_pipeline_tcp.smx --config nets/zmq_pipeline_tcp.toml -q -n 10 \
             --set Snk2.path=/dev/null --set Snk1.endpoint={endpoint} --set Src2.endpoint={endpoint}",
            env!("CARGO_BIN_EXE_smxrun")
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("file descriptors") && err.contains("ulimit -n"), "{err}");
}

#[test]
fn a_small_address_space_limit_ends_in_a_message_naming_it_not_an_abort() {
    // 2,000 boxes: before, glibc's per-thread arenas (64 MiB of address space each) took what
    // a limit of 146 MiB left after the composition thread's stack, and the front end aborted
    // (exit 134, "memory allocation of 48 bytes failed").
    let dir = tempfile::tempdir().unwrap();
    let pairs = vec!["Src.Snk"; 1000].join(" | ");
    let net = write(
        dir.path(),
        "big.smx",
        &format!("Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect {pairs}\n"),
    );
    for kib in [80_000, 100_000, 146_000, 300_000] {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v {kib} && exec {} run {} -q -n 10",
                env!("CARGO_BIN_EXE_smxrun"),
                net.display()
            ))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "ulimit -v {kib}: {err}");
        assert!(!err.contains("memory allocation of"), "ulimit -v {kib}: {err}");
        // Lower than that, whether the composition thread's stack or an allocation is refused
        // first depends on the machine: both end with exit 1 and a message.
        if kib >= 100_000 {
            assert!(err.contains("ulimit -v"), "ulimit -v {kib}: {err}");
        }
    }
}

#[test]
fn a_result_onto_the_net_or_onto_another_result_is_refused_and_the_net_stays() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "n.smx", PAIR);
    let config = write(dir.path(), "c.toml", "[net.Src]\ncount = 10\n");
    let report = dir.path().join("r.json");
    let runs: [(&[&str], &str); 5] = [
        (&["-o", "n.smx"], "-o 'n.smx' is the net"),
        (&["--trace", "./n.smx"], "--trace './n.smx' is the net"),
        (
            &["--stats-every", "1s", "--stats-file", "c.toml"],
            "is the --config file",
        ),
        (&["-o", "r.json", "--trace", "./r.json"], "is also the -o"),
        (&["graph-o"], "-o 'n.smx' is the net"),
    ];
    for (args, expected) in runs {
        let mut cmd = smxrun();
        cmd.current_dir(dir.path());
        if args == ["graph-o"] {
            cmd.args(["graph", "n.smx", "-o", "n.smx"]);
        } else {
            cmd.args(["n.smx", "--config", "c.toml", "-q"]).args(args);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert_eq!(std::fs::read_to_string(&net).unwrap(), PAIR, "{args:?}");
        assert!(
            std::fs::read_to_string(&config).unwrap().contains("count = 10"),
            "{args:?}"
        );
        assert!(!report.exists(), "{args:?}: nothing ran");
    }
    let out = smxrun()
        .current_dir(dir.path())
        .args([
            "n.smx",
            "--config",
            "c.toml",
            "-q",
            "-o",
            "/dev/null",
            "--trace",
            "/dev/null",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// With standard output closed (`smxrun NET >&-`) the report has nowhere to go: refused before
/// the start with exit 1, not a run whose report is silently lost with exit 0.
#[test]
fn a_closed_stdout_is_refused_before_the_start() {
    use std::os::unix::process::CommandExt;
    let net = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("nets/src_snk.smx");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_smxrun"));
    cmd.arg(&net).args(["-n", "10", "-q"]);
    // SAFETY: close is async-signal-safe, as pre_exec requires.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(1);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("standard output is closed"), "{stderr}");
}

/// A value smxrun echoes in an error line (here a file name) is shown escaped: control
/// characters from it never reach the terminal, where they could rewrite what it shows.
#[test]
fn control_characters_in_an_echoed_value_are_escaped() {
    let out = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .arg("/nonexistent/\u{1b}[2J\u{1b}]0;owned\u{7}.smx")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("nonexistent"), "{stderr}");
    assert!(!stderr.contains('\u{1b}') && !stderr.contains('\u{7}'), "{stderr:?}");
    assert!(stderr.contains("\\u{1b}[2J"), "{stderr:?}");
}

/// A picture's path that is a directory, or a directory's path that is a file, is named with
/// what stands there, before anything is drawn or written.
#[test]
fn an_output_path_of_the_wrong_kind_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(
        dir.path(),
        "t.json",
        r#"{"traceEvents": [{"ph": "X", "tid": 1, "ts": 0, "dur": 5, "name": "step", "cat": "step"}]}"#,
    );
    let adir = dir.path().join("adir");
    std::fs::create_dir(&adir).unwrap();
    let out = smxrun()
        .arg("trace-view")
        .arg(&trace)
        .arg("-o")
        .arg(&adir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!("error: cannot write '{}': it is a directory", adir.display())
    );

    let net = write(
        dir.path(),
        "c.smx",
        "Src = box my_src( out data )\nSnk = box my_snk( in data )\nconnect Src.Snk\n",
    );
    let afile = write(dir.path(), "afile", "kept");
    let out = smxrun()
        .arg("headers")
        .arg(&net)
        .arg("-o")
        .arg(&afile)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "error: -o '{0}': cannot make the directory for the headers: '{0}' is a file, not a directory",
            afile.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&afile).unwrap(), "kept");
}

/// A file that a built-in box writes (`smx_snk_dump`'s `path`) is a result of the run as `-o`
/// is: onto the net, its configuration, another result or another box's file it is refused
/// before any box starts, naming the box and the key, and `check` gives the same verdict.
#[test]
fn a_box_s_output_file_onto_an_input_or_another_result_is_refused_before_the_start() {
    const DUMP: &str = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_dump( in data )\nconnect Src.Snk\n";
    const TWO: &str = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_dump( in data )\nconnect Src.(Snk|Snk)\n";
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "dump.smx", DUMP);
    let two = write(dir.path(), "two.smx", TWO);
    let config = write(dir.path(), "c.toml", "[net.Src]\ncount = 3\n");
    let shared = write(dir.path(), "shared.toml", "[impl.smx_snk_dump]\npath = \"both.txt\"\n");
    let runs: [(&[&str], &str); 5] = [
        (
            &["dump.smx", "--set", "Snk.path=dump.smx"],
            "error: Snk.path 'dump.smx' is the net 'dump.smx': writing there would replace it",
        ),
        (
            &["dump.smx", "--config", "c.toml", "--set", "Snk.path=./c.toml"],
            "error: Snk.path './c.toml' is the --config file 'c.toml': writing there would replace it",
        ),
        (
            &["dump.smx", "--set", "Snk.path=r.txt", "-o", "r.txt"],
            "error: Snk.path 'r.txt' is also the -o: one result would replace the other",
        ),
        (
            &["two.smx", "--config", "shared.toml"],
            "error: Snk#2.path 'both.txt' is also the Snk#1.path: one result would replace the other",
        ),
        (
            &["check", "dump.smx", "--set", "Snk.path=dump.smx"],
            "error: Snk.path 'dump.smx' is the net 'dump.smx'",
        ),
    ];
    for (args, expected) in runs {
        let out = smxrun()
            .current_dir(dir.path())
            .args(args)
            .args(["-n", "3"].iter().filter(|_| args[0] != "check"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert_eq!(std::fs::read_to_string(&net).unwrap(), DUMP, "{args:?}");
        assert_eq!(std::fs::read_to_string(&two).unwrap(), TWO, "{args:?}");
        assert_eq!(
            std::fs::read_to_string(&config).unwrap(),
            "[net.Src]\ncount = 3\n",
            "{args:?}"
        );
        assert!(
            std::fs::read_to_string(&shared).unwrap().contains("both.txt"),
            "{args:?}"
        );
        for result in ["r.txt", "both.txt"] {
            assert!(!dir.path().join(result).exists(), "{args:?}: no box ran");
        }
    }
    let out = smxrun()
        .current_dir(dir.path())
        .args([
            "dump.smx",
            "-q",
            "-n",
            "3",
            "--set",
            "Snk.path=dumped.txt",
            "-o",
            "/dev/null",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let dumped = std::fs::read_to_string(dir.path().join("dumped.txt")).unwrap();
    assert_eq!(dumped.lines().count(), 3, "{dumped}");
}
