//! Every stop stops: a signal ends a run with a long period, a
//! ZeroMQ sink without a receiver; a graph that could only hang is refused before it starts;
//! repeated and other stop signals. Cycles that never drain and boxes stuck in a step:
//! `tests/robust_stuck.rs`.
//!
//! Bounds are generous (seconds where the run would otherwise take 20 s, 30 s or forever): they
//! tell a stop from no stop, never a fast machine from a slow one.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

fn smxrun() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smxrun"));
    cmd.env("RUST_LOG", "warn");
    cmd
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: plain FFI call signalling the child process this test spawned.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

/// Waits for `child` to exit, killing it after `limit` (so a hang fails instead of blocking);
/// its exit code (None when it had to be killed), stdout, stderr and how long it took.
fn finish(mut child: Child, limit: Duration) -> (Option<i32>, String, String, Duration) {
    let start = Instant::now();
    let mut killed = false;
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            killed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().unwrap();
    let took = start.elapsed();
    let (mut out, mut err) = (String::new(), String::new());
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut out).unwrap();
    }
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).unwrap();
    }
    (if killed { None } else { status.code() }, out, err, took)
}

fn spawn(args: &[&str]) -> Child {
    smxrun()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

const TT_10S: &str =
    "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect tt[10s](Src.Snk)\n";

#[test]
fn a_stop_ends_a_ten_second_period_at_once_in_both_tt_modes() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "tt10.smx", TT_10S);
    for mode in ["cyclic", "threads"] {
        let child = spawn(&[net.to_str().unwrap(), "--tt-mode", mode, "--report", "json", "-q"]);
        std::thread::sleep(Duration::from_millis(1_500));
        signal(&child, libc::SIGINT);
        // Without a stop-aware firewall this run takes 20 s after the signal's 1.5 s.
        let (code, out, err, took) = finish(child, Duration::from_secs(60));
        assert_eq!(code, Some(130), "{mode}: {err}");
        assert!(took < Duration::from_secs(8), "{mode}: the stop took {took:?}");
        let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{mode}: {e}: {out}"));
        assert_eq!(report["status"], "stopped", "{mode}");
        let channel = &report["channels"][0];
        let n = |k: &str| channel[k].as_u64().unwrap();
        assert_eq!(
            n("written"),
            n("read") + n("overwritten") + n("dropped") + n("left"),
            "{mode}: {channel}"
        );
    }
}

#[test]
fn graphs_that_could_only_hang_or_overflow_are_refused_before_the_start() {
    let dir = tempfile::tempdir().unwrap();
    // A box fed back to itself (the language's self-loop rule): no message can ever enter.
    let selfloop = write(
        dir.path(),
        "self.smx",
        "A = box smx_fwd( in data, out data )\nconnect A\n",
    );
    let huge = write(
        dir.path(),
        "huge.smx",
        &TT_10S.replace("tt[10s]", "tt[18446744073709551615s]"),
    );
    for (net, cause) in [(&selfloop, "can never run"), (&huge, "longer than a timer can wait")] {
        for command in ["check", "run"] {
            let (code, _, err, _) = finish(spawn(&[command, net.to_str().unwrap()]), Duration::from_secs(30));
            assert_eq!(code, Some(1), "{command} {}: {err}", net.display());
            assert!(err.contains(cause) && !err.contains("panicked"), "{command}: {err}");
        }
    }
    // Two boxes feeding each other and nothing else: said at the first where the net connects
    // it, with the caret and how to let a message in.
    let ring = write(
        dir.path(),
        "ring.smx",
        "A = box smx_fwd( in x(data), out y(data) )\nB = box smx_fwd( in y(data), out x(data) )\nconnect A.B\n",
    );
    for command in ["check", "run"] {
        let (code, _, err, _) = finish(spawn(&[command, ring.to_str().unwrap()]), Duration::from_secs(30));
        assert_eq!(code, Some(1), "{command}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with(&format!("{}:3:9: error: A#0, B#1 can never run", ring.display())))
            .unwrap_or_else(|| panic!("{command}: {err}"));
        assert_eq!(lines.get(at + 1).copied(), Some("  connect A.B"), "{command}: {err}");
        assert_eq!(
            lines.get(at + 2).map(|l| l.trim_end()),
            Some("          ^"),
            "{command}: {err}"
        );
        assert!(
            err.contains("-> a message must enter the loop: feed one of its boxes from outside it"),
            "{command}: {err}"
        );
        assert!(
            err.contains("helps only a box that makes messages of its own"),
            "a forwarder's decoupled input would spin with nothing to pass: {command}: {err}"
        );
    }
    // A loop fed from outside that its join still holds: the join's loop input, made
    // `decoupled in`, lets it fire on its outside input.
    let fed = write(
        dir.path(),
        "fed.smx",
        "Src = box smx_src_rand( out data )\nJ = box my_join( in data, in fb, out x )\n\
         B = box smx_fwd( in x(data), out fb(data) )\nconnect Src.J.B\n",
    );
    let (_, _, err, _) = finish(
        spawn(&["check", "--lang-only", fed.to_str().unwrap()]),
        Duration::from_secs(30),
    );
    assert!(
        err.contains("J#1, B#2 can never run")
            && err.contains(
                "declare the input that closes the loop `decoupled in`, so that the box fires on its input from outside"
            ),
        "{err}"
    );
    // JSON graphs from other tools: a cycle of two forwarders, of two routing nodes, a NUL in a
    // label, a time-triggered edge without a period.
    let graph = |nodes: &str, edges: &str| format!("{{\"nodes\": [{nodes}], \"edges\": [{edges}]}}");
    let node = |id: usize, label: &str, func: &str, kind: &str, ports: &str| {
        format!(
            "{{\"id\": {id}, \"label\": \"{label}\", \"func\": \"{func}\", \"kind\": \"{kind}\", \"is_static\": false, \
             \"pure\": false, \"location\": \"local\", \"priority\": 0, \"line\": 1, \"ports\": [{ports}]}}"
        )
    };
    let port = |mode: &str| {
        format!(
            "{{\"name\": \"data\", \"mode\": \"{mode}\", \"class\": null, \"decoupled\": false, \"open\": false, \
             \"dynamic\": false, \"alt_name\": null}}"
        )
    };
    let fwd_ports = format!("{}, {}", port("in"), port("out"));
    let edge = |id: usize, from: usize, to: usize, timing: &str| {
        format!(
            "{{\"id\": {id}, \"source\": {from}, \"target\": {to}, \"label\": \"data\", \"source_port\": \"data\", \
             \"target_port\": \"data\", \"nsrc\": null, \"ndst\": null, \"dsrc\": false, \"ddst\": false, \"len\": 1, \
             \"len_declared\": false, \"timing\": \"{timing}\", \"src_time\": {{\"secs\": 0, \"nanos\": 0}}, \
             \"dst_time\": {{\"secs\": 0, \"nanos\": 0}}, \"dynsrc\": false, \"dyndst\": false}}"
        )
    };
    let two_edges = format!("{}, {}", edge(0, 0, 1, "none"), edge(1, 1, 0, "none"));
    let cases = [
        (
            "fwd_cycle.json",
            graph(
                &format!(
                    "{}, {}",
                    node(0, "A", "smx_fwd", "box", &fwd_ports),
                    node(1, "B", "smx_fwd", "box", &fwd_ports)
                ),
                &two_edges,
            ),
            "A#0, B#1 can never run",
        ),
        (
            "rn_cycle.json",
            graph(
                &format!(
                    "{}, {}",
                    node(0, "smx_rn", "smx_rn", "routing_node", ""),
                    node(1, "smx_rn", "smx_rn", "routing_node", "")
                ),
                &two_edges,
            ),
            "can never run",
        ),
        (
            "nul.json",
            graph(
                &format!(
                    "{}, {}",
                    node(0, "Src\\u0000", "smx_src_rand", "box", &port("out")),
                    node(1, "Snk", "smx_snk_null", "box", &port("in"))
                ),
                &edge(0, 0, 1, "none"),
            ),
            "cannot name a thread",
        ),
        (
            "tt0.json",
            graph(
                &format!(
                    "{}, {}",
                    node(0, "Src", "smx_src_rand", "box", &port("out")),
                    node(1, "Snk", "smx_snk_null", "box", &port("in"))
                ),
                &edge(0, 0, 1, "time_triggered"),
            ),
            "without a period",
        ),
        (
            // A sink with a second input that nothing feeds: the front end refuses the same
            // net ("port 'extra' in 'Snk' is not connected").
            "unconnected.json",
            graph(
                &format!(
                    "{}, {}",
                    node(0, "Src", "smx_src_rand", "box", &port("out")),
                    node(
                        1,
                        "Snk",
                        "smx_snk_null",
                        "box",
                        &format!("{}, {}", port("in"), port("in").replace("\"data\"", "\"extra\""))
                    )
                ),
                &edge(0, 0, 1, "none"),
            ),
            "port 'extra' of Snk#1 is not connected",
        ),
    ];
    for (name, text, cause) in cases {
        let path = write(dir.path(), name, &text);
        let (code, _, err, _) = finish(spawn(&["run", path.to_str().unwrap()]), Duration::from_secs(30));
        assert_eq!(code, Some(1), "{name}: {err}");
        assert!(err.contains(cause) && !err.contains("panicked"), "{name}: {err}");
    }
}

#[test]
fn a_zmq_sink_without_a_receiver_ends_soon_after_a_stop() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(
        dir.path(),
        "sender.smx",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_zmq( in data, in topic open )\nconnect Src.Snk\n",
    );
    let endpoint = format!("Snk.endpoint={}", common::zmq::free_tcp_endpoint());
    // A timeout of 30 s: before, the sink retried its abort marker for all of it after a stop.
    let (code, out, err, took) = stopped_after_a_second(&[
        net.to_str().unwrap(),
        "--set",
        &endpoint,
        "--set",
        "Snk.timeout=30s",
        "-n",
        "1000",
        "-q",
    ]);
    assert_eq!(code, Some(130), "{err}");
    assert!(took < Duration::from_secs(8), "the stop took {took:?}: {err}");
    assert!(out.contains("ABORTED"), "{out}");
}

/// `smxrun ARGS` stopped with SIGINT a second after its start: its exit code (None when it had
/// to be killed after 90 s), stdout, stderr and how long it took.
fn stopped_after_a_second(args: &[&str]) -> (Option<i32>, String, String, Duration) {
    let child = spawn(args);
    std::thread::sleep(Duration::from_millis(1_000));
    signal(&child, libc::SIGINT);
    finish(child, Duration::from_secs(90))
}

/// Runs a long net, sends `first`, then `then` (if any) after `gap`; returns exit code,
/// stdout and stderr.
fn stopped_with(first: i32, then: Option<(Duration, i32)>) -> (Option<i32>, String, String) {
    let child = spawn(&["nets/src_snk.smx", "-n", "4000000000", "-q"]);
    std::thread::sleep(Duration::from_millis(700));
    signal(&child, first);
    if let Some((gap, sig)) = then {
        std::thread::sleep(gap);
        // The process may have ended already: that is fine, its output says what happened.
        // SAFETY: plain FFI call signalling the child process this test spawned.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    }
    let (code, out, err, _) = finish(child, Duration::from_secs(60));
    (code, out, err)
}

#[test]
fn sighup_and_sigquit_stop_in_order_like_sigterm() {
    for sig in [libc::SIGHUP, libc::SIGQUIT, libc::SIGTERM] {
        let (code, out, err) = stopped_with(sig, None);
        assert_eq!(code, Some(130), "signal {sig}: {err}");
        assert!(out.contains("status stopped"), "signal {sig}: {out}");
    }
}

#[test]
fn a_signal_repeated_at_once_is_one_stop() {
    // GNU timeout signals the process and then its process group: two signals microseconds
    // apart. Before, the second one exited without a report.
    let (code, out, err) = stopped_with(libc::SIGTERM, Some((Duration::from_millis(1), libc::SIGTERM)));
    assert_eq!(code, Some(130), "{err}");
    assert!(out.contains("status stopped"), "the report is printed: {out} {err}");
    assert!(!err.contains("without a report"), "{err}");
}

#[test]
fn a_stop_with_stderr_closed_still_ends_with_its_code() {
    let child = smxrun()
        .args(["nets/src_snk.smx", "-n", "4000000000", "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    drop(child.stderr.take());
    std::thread::sleep(Duration::from_millis(700));
    signal(&child, libc::SIGINT);
    let (code, out, _, _) = finish(child, Duration::from_secs(60));
    assert_eq!(code, Some(130), "no panic on the closed stderr: {out}");
    assert!(out.contains("status stopped"), "{out}");
}

/// A stop cuts a ZeroMQ link in the middle: what the sink had handed to ZeroMQ and the source
/// had not yet taken is counted on no row, so neither row may say `ok`; each says it was stopped.
#[test]
fn a_stopped_zmq_link_is_never_booked_ok() {
    for net in ["zmq_pipeline_tcp", "zmq_pubsub_tcp"] {
        let path = common::zmq::net(&format!("{net}.smx"));
        let config = common::zmq::net(&format!("{net}.toml"));
        let endpoint = common::zmq::free_tcp_endpoint();
        let child = spawn(&[
            path.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "--set",
            &format!("Snk1.endpoint={endpoint}"),
            "--set",
            &format!("Src2.endpoint={endpoint}"),
            "--set",
            "Snk2.path=/dev/null",
            "--pin",
            "off",
            "-n",
            "1000000000",
            "--report",
            "json",
            "-q",
        ]);
        std::thread::sleep(Duration::from_millis(1_000));
        signal(&child, libc::SIGINT);
        let (code, out, err, _) = finish(child, Duration::from_secs(90));
        assert_eq!(code, Some(130), "{net}: {err}");
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        for row in report["sections"]["zmq"].as_array().unwrap() {
            assert_eq!(row["verdict"], "incomplete", "{net}: {row}");
            assert!(row["problems"].as_str().unwrap().contains("stopped"), "{net}: {row}");
        }
    }
}

/// A report whose write blocks (a reader that never reads the pipe) still ends after a stop:
/// smxrun exits without the report 5 s after the signal, as it does when the run itself hangs.
#[test]
fn a_stop_ends_a_run_whose_report_write_blocks() {
    let dir = tempfile::tempdir().unwrap();
    // Enough boxes that the JSON report is larger than a pipe holds (64 KiB).
    let mut text = String::from("Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n");
    let mut chain = String::from("Src");
    for i in 0..400 {
        text += &format!("F{i} = box smx_fwd( up in data, down out data )\n");
        chain += &format!(".F{i}");
    }
    text += &format!("connect {chain}.Snk\n");
    let net = write(dir.path(), "long.smx", &text);
    let mut child = smxrun()
        .args([
            net.to_str().unwrap(),
            "-n",
            "10",
            "-q",
            "--pin",
            "off",
            "--report",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The pipe is never read: once the run is over, its report write blocks.
    let _unread = child.stdout.take();
    std::thread::sleep(Duration::from_millis(3_000));
    signal(&child, libc::SIGTERM);
    let (code, _, err, _) = finish(child, Duration::from_secs(60));
    assert_eq!(code, Some(130), "smxrun did not end after the stop: {err}");
    assert!(err.contains("without a report"), "{err}");
}

/// A box whose only inputs are decoupled is never waiting for a message, so no firing rule
/// ends it: once every producer has ended and the last value was read, it ends by itself.
#[test]
fn a_sink_whose_only_input_is_decoupled_ends_after_its_producer() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(
        dir.path(),
        "decoupled.smx",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( decoupled in data )\nconnect Src.Snk\n",
    );
    let child = spawn(&[net.to_str().unwrap(), "-n", "100", "-q", "--report", "json"]);
    let (code, out, err, _) = finish(child, Duration::from_secs(60));
    assert_eq!(code, Some(0), "the run did not end by itself: {err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["status"], "ok", "{out}");
}

/// A stop while a box waits in its init (a link's source for a producer that never comes) stops
/// the run: it is not a start the box refused, so the run ends stopped (130) with its report,
/// not with "the net did not start" (1).
#[test]
fn a_stop_while_a_box_waits_in_its_init_is_a_stop_not_a_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(
        dir.path(),
        "waits.smx",
        "Lnk = box smx_link_shm_src( out data )\nSnk = box smx_snk_null( in data )\nconnect Lnk.Snk\n",
    );
    let path = format!("Lnk.path=/dev/shm/smx-test-nobody-{}", std::process::id());
    let child = spawn(&[
        net.to_str().unwrap(),
        "--set",
        &path,
        "--set",
        "Lnk.timeout=60s",
        "--report",
        "json",
    ]);
    std::thread::sleep(Duration::from_millis(1_000));
    signal(&child, libc::SIGINT);
    let (code, out, err, _) = finish(child, Duration::from_secs(60));
    assert_eq!(code, Some(130), "{err}");
    assert!(!err.contains("did not start"), "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(report["status"], "stopped", "{report}");
    let lnk = &report["nets"][0];
    assert_eq!(lnk["status"], "stopped", "{report}");
    assert!(
        lnk["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("stopped in its init")),
        "{report}"
    );
}

/// A ZeroMQ sender with no receiver, stopped: the sink gives up its blocked send at the stop
/// and its producer then ends on the closed channel, so every net ends by itself. The run was
/// still stopped, and its report says so (never `ok`); the sink's row blames no timeout that
/// never passed.
#[test]
fn a_stopped_sender_whose_nets_all_ended_by_themselves_is_a_stopped_run() {
    let path = common::zmq::net("zmq_sender.smx");
    let config = common::zmq::net("zmq_pipeline_tcp.toml");
    let endpoint = common::zmq::free_tcp_endpoint();
    for _ in 0..3 {
        let (code, out, err, _) = stopped_after_a_second(&[
            path.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "--set",
            &format!("Snk1.endpoint={endpoint}"),
            "-n",
            "0",
            "--report",
            "json",
            "-q",
        ]);
        assert_eq!(code, Some(130), "{err}");
        let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(report["status"], "stopped", "{report}");
        let row = &report["sections"]["zmq"][0];
        let problems = row["problems"].as_str().unwrap_or_default();
        assert!(!problems.contains("within timeout"), "{row}");
    }
}
