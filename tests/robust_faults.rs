//! Faults are contained: a user box that fails in a step or cleanup, by error or
//! panic, at every place of a net (chain, fan-out branch, fan-in input, time-triggered frame)
//! ends as `failed` while its neighbours terminate and unrelated parts finish their work; one
//! that fails in create or init stops the run before any step, which is refused naming the box;
//! and `smxrun` turns failures, signals and bad surroundings (a box that cannot open its file, a
//! port in use, a report path or config that is not a file, a killed ZMQ peer) into clear
//! messages and the documented exit codes, never a panic or a hang.
//!
//! tests/runtime.rs covers the basic chain case and tests/cli.rs SIGINT, a missing config
//! file and an unwritable report directory; this file does not repeat them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, Flow, InPort, OutPort, PortSpec};
use smx_box::{InitCtx, Io};
use smx_lang::compose::{CompileOptions, compile};
use smx_lang::diag::SourceFile;
use smx_runtime::config::ConfigLayers;
use smx_runtime::report::{Report, Status};
use smx_runtime::{FirewallOptions, TtMode};
use smx_runtime::{RunError, RunOptions, run};

/// A run or a process not over after this long is a hang (liveness, not timing).
const LIVENESS: Duration = Duration::from_secs(60);

const FAULTS: &[&str] = &[
    "create_err",
    "create_panic",
    "init_err",
    "init_panic",
    "step_err",
    "step_panic",
    "cleanup_panic",
    "stats_panic",
];

/// `robust_faulty(up in data, down out data)`: forwards, and fails where `fault` says (steps
/// fail at the third iteration).
struct Faulty {
    fault: String,
    input: InPort,
    output: OutPort,
}

impl BoxImpl for Faulty {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.input = ctx.input("data")?;
        self.output = ctx.output("data")?;
        match self.fault.as_str() {
            "init_err" => Err(BoxError::new("robust: init refused")),
            "init_panic" => panic!("robust: init exploded"),
            _ => Ok(()),
        }
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if io.iteration() == 3 {
            match self.fault.as_str() {
                "step_err" => return Err(BoxError::new("robust: step refused")),
                "step_panic" => panic!("robust: step exploded"),
                // Ends normally, so that the run ends and the cleanup panic is reached.
                "cleanup_panic" | "stats_panic" => return Ok(Flow::End),
                _ => {}
            }
        }
        if let Some(msg) = io.read(self.input) {
            let _ = io.write(self.output, msg);
        }
        Ok(Flow::Return)
    }

    fn cleanup(&mut self) -> Result<(), BoxError> {
        if self.fault == "cleanup_panic" {
            panic!("robust: cleanup exploded");
        }
        Ok(())
    }

    fn stats(&self) -> smx_box::Stats {
        if self.fault == "stats_panic" {
            panic!("robust: figures exploded");
        }
        smx_box::Stats::new()
    }
}

fn faulty_spec() -> BoxSpec {
    fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        let fault = config.str("fault")?.to_string();
        match fault.as_str() {
            "create_err" => Err(BoxError::new("robust: create refused")),
            "create_panic" => panic!("robust: create exploded"),
            _ => Ok(Box::new(Faulty {
                fault,
                input: InPort(0),
                output: OutPort(0),
            })),
        }
    }
    const SPEC: BoxSpec = BoxSpec::named("robust_faulty")
        .summary("forwards, and fails on purpose")
        .inputs(&[PortSpec::new("data")])
        .outputs(&[PortSpec::new("data")])
        .config(&[ConfigKey::choice("fault", FAULTS).default_value("step_panic")])
        .create(create);
    SPEC
}

/// `Endless` sends until its consumer ends: only a fault downstream can end it.
const DECLS: &str = "\
Src = box smx_src_rand(out data)
Endless = box smx_src_rand(out data)
Bad = box robust_faulty(up in data, down out data)
Fwd = box smx_fwd(up in data, down out data)
Snk = box smx_snk_null(in data)
Other = box smx_snk_null(in data)
";

/// Where the faulty box sits; `Src.Other` is an unrelated pair that must finish.
const PLACES: &[&str] = &[
    "Endless.Bad.Snk | Src.Other",
    "Endless.Fwd.Bad.Fwd.Snk | Src.Other",
    "Src.(Bad.Snk | Other)",
    "(Endless.Bad ! Src).Other",
    "tt[2ms](Endless.Bad).Snk | Src.Other",
    "Endless.tt[3ms](Bad).Snk | Src.Other",
];

const COUNT: u64 = 40;

/// Drops the SCHED_FIFO levels `tt` gives its boxes: this test shares the machine with others
/// (one spinning real-time thread elsewhere can starve a pinned one here) and checks
/// behaviour only.
fn without_real_time(graph: &mut smx_graph::NetGraph) {
    for node in &mut graph.nodes {
        node.priority = 0;
    }
}

/// Runs the faulty box at `place`: the report, or the refusal of a run whose box failed to
/// start (create or init); a hang or a panic of the run itself fails the test.
fn run_place(place: &str, fault: &str, mode: TtMode) -> Result<Report, RunError> {
    let text = format!("{DECLS}connect {place}\n");
    let fault = fault.to_string();
    let what = format!("{place} / {fault} / {mode:?}");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let file = SourceFile::new("faulty.smx", text.as_str());
        let compiled = compile(&file, &CompileOptions::default());
        assert!(compiled.accepted(), "{text}: {:?}", compiled.diagnostics);
        let mut graph = compiled.graph;
        without_real_time(&mut graph);
        let mut registry = smxrun::builtin_registry();
        registry.register(faulty_spec());
        let mut layers = ConfigLayers::new();
        layers.set_iterations(COUNT);
        if text.contains("Endless.") {
            layers.add_set("Endless.count=0").unwrap();
        }
        layers.add_set(&format!("Bad.fault={fault}")).unwrap();
        let opts = RunOptions {
            settings: layers.resolve(&graph, &registry).unwrap(),
            firewall: FirewallOptions {
                shards: Some(1),
                mode,
                ..FirewallOptions::best_effort()
            },
            ..RunOptions::default()
        };
        let _ = tx.send(run(&graph, &registry, &opts));
    });
    match rx.recv_timeout(LIVENESS) {
        Ok(result) => result,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: no end within {LIVENESS:?} (deadlock?)"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: the run thread panicked"),
    }
}

#[test]
fn every_fault_at_every_place_is_contained() {
    let mut tried = 0;
    let mut wanted = 0;
    for place in PLACES {
        // Time-triggered places also run with their boxes inside the firewall thread.
        let modes: &[TtMode] = if place.contains("tt[") {
            &[TtMode::Threads, TtMode::Cyclic]
        } else {
            &[TtMode::Threads]
        };
        wanted += modes.len() * FAULTS.len();
        for (fault, &mode) in FAULTS.iter().flat_map(|f| modes.iter().map(move |m| (f, m))) {
            let what = format!("{place} / {fault} / {mode:?}");
            let result = run_place(place, fault, mode);
            tried += 1;
            let (stage, _) = fault.split_once('_').unwrap();
            if stage == "create" || stage == "init" {
                // A box that fails to start stops the whole run before any step: the run is
                // refused, naming the box and the cause.
                let err = result.expect_err(&what);
                let text = err.to_string();
                assert!(matches!(err, RunError::NotStarted(_)), "{what}: {text}");
                assert!(
                    text.contains("Bad#") && text.contains("robust: ") && text.contains(stage),
                    "{what}: {text}"
                );
                continue;
            }
            let report = result.unwrap_or_else(|e| panic!("{what}: refused: {e}"));
            assert_eq!(report.status, Status::Failed, "{what}");
            let bad = report.net("Bad").unwrap();
            assert_eq!(bad.status, Status::Failed, "{what}");
            let error = bad.error.as_deref().unwrap_or_default();
            assert!(error.contains("robust: ") && error.contains(stage), "{what}: {error}");
            // Each failure is named by the call that failed, not by another.
            for other in ["step", "cleanup", "stats"].iter().filter(|&&s| s != stage) {
                assert!(!error.contains(other), "{what}: {error}");
            }
            for net in report.nets.iter().filter(|n| n.name != "Bad") {
                assert_ne!(
                    net.status,
                    Status::Failed,
                    "{what}: {} failed too: {:?}",
                    net.name,
                    net.error
                );
            }
            // The unrelated consumer got everything its source sent.
            let other = report.net("Other").unwrap();
            assert!(
                other.stats.u64("received").unwrap() >= COUNT,
                "{what}: {:?}",
                other.stats
            );
            for c in &report.channels {
                assert_eq!(c.written, c.read + c.overwritten + c.dropped + c.left, "{what}: {c:?}");
            }
        }
    }
    assert_eq!(tried, wanted);
}

// ---- the command line ----

const SRC_SNK: &str = "\
Src = box smx_src_rand(out data)
Snk = box smx_snk_null(in data)
connect Src.Snk
";

fn smxrun(args: &[&str]) -> Output {
    let child = spawn(args);
    wait_with_deadline(child, LIVENESS)
}

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("smxrun starts")
}

/// Waits for `child` while reading its output (a big report must not fill the pipe and block
/// it), killing it if it outlives `limit`, so that a hang fails instead of blocking CI.
fn wait_with_deadline(child: Child, limit: Duration) -> Output {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("smxrun's output"),
        Err(_) => {
            // SAFETY: plain FFI call killing the child process this test spawned.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("smxrun did not end within {limit:?}");
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn file_in(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// No Rust panic message ever reaches the user.
fn assert_no_panic(out: &Output) {
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Waits until process `pid` has at least `n` threads (its nets are running).
fn wait_for_threads(pid: u32, n: usize) {
    let start = Instant::now();
    while start.elapsed() < LIVENESS {
        let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
        if threads >= n {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: plain FFI call sending a signal to a child process this test spawned.
    let sent = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(sent, 0);
}

/// A box that cannot open its file fails in init, which stops the whole run before any step:
/// exit 1 with the box and the cause named, no panic.
#[test]
fn a_builtin_box_that_cannot_open_its_file_stops_the_run_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let net = file_in(
        dir.path(),
        "dump.smx",
        "Src = box smx_src_rand(out data)\nDump = box smx_snk_dump(in data, in topic open)\n\
         Snk = box smx_snk_null(in data)\nconnect Src.Dump | Src.Snk\n",
    );
    let unwritable = dir.path().join("no/such/dir/out.txt");
    let set = format!("Dump.path={}", unwritable.display());
    let out = smxrun(&[arg(&net), "-n", "50", "--set", &set, "--report", "json", "-q"]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", text(&out.stderr));
    assert_no_panic(&out);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("Dump") && stderr.contains("cannot open"), "{stderr}");
}

#[test]
fn sigterm_stops_a_run_with_a_partial_report_and_exit_130() {
    let dir = tempfile::tempdir().unwrap();
    let net = file_in(dir.path(), "src_snk.smx", SRC_SNK);
    let child = spawn(&[
        arg(&net),
        "--set",
        "Src.count=0",
        "--report",
        "json",
        "-q",
        "--pin",
        "off",
    ]);
    wait_for_threads(child.id(), 3);
    std::thread::sleep(Duration::from_millis(100));
    signal(&child, libc::SIGTERM);
    let out = wait_with_deadline(child, LIVENESS);
    assert_eq!(out.status.code(), Some(130), "stderr: {}", text(&out.stderr));
    assert_no_panic(&out);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a partial report is printed");
    assert_eq!(report["status"], "stopped");
    let ch = &report["channels"][0];
    assert_eq!(ch["written"], ch["read"], "the sink drained what was sent: {ch}");
    assert_eq!(ch["left"], 0, "{ch}");
}

#[test]
fn a_zmq_port_in_use_is_a_clear_failure_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("tcp://{}", listener.local_addr().unwrap());
    let net = file_in(
        dir.path(),
        "sender.smx",
        "Src1 = box smx_src_rand(out data)\nSnk1 = box smx_snk_zmq(in data, in topic open)\nconnect Src1.Snk1\n",
    );
    let set = format!("Snk1.endpoint={endpoint}");
    let out = smxrun(&[
        arg(&net),
        "-n",
        "0",
        "--set",
        &set,
        "--set",
        "Snk1.pattern=pipeline",
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", text(&out.stderr));
    assert_no_panic(&out);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("Snk1") && stderr.contains("address in use"), "{stderr}");
}

#[test]
fn files_that_are_not_what_they_should_be_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let net = file_in(dir.path(), "src_snk.smx", SRC_SNK);
    let garbage = dir.path().join("garbage.smx");
    std::fs::write(&garbage, [0xff, 0xfe, 0x00, b'c', b'o', 0x80, b'\n', 0x07]).unwrap();
    let bad_toml = file_in(dir.path(), "bad.toml", "[net.Src\ncount = ");
    let d = arg(dir.path());
    let missing = dir.path().join("missing.smx");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![arg(&net), "-n", "5", "-o", d, "-q"], d),
        (vec![arg(&net), "-n", "5", "--config", d, "-q"], d),
        (vec![arg(&net), "-n", "5", "--config", arg(&bad_toml), "-q"], "bad.toml"),
        (vec![arg(&missing), "-q"], "missing.smx"),
        (vec![d, "-q"], d),
        (vec![arg(&garbage), "-q"], "garbage.smx"),
        (vec![arg(&net), "--set", "Src.count=-3", "-q"], "count"),
        (
            vec![arg(&net), "--set", "Src.count=99999999999999999999999", "-q"],
            "count",
        ),
        (vec![arg(&net), "--channel-len", "0", "-q"], "channel"),
    ];
    for (args, named) in &cases {
        let out = smxrun(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_no_panic(&out);
        assert!(stderr.contains(named), "{args:?} should name {named}: {stderr}");
    }
}

/// A sender process killed mid-stream: the receiving source ends by its timeout and its
/// report says the tail of the stream is unknown.
#[test]
fn a_zmq_peer_killed_mid_stream_ends_the_receiver_by_timeout_with_the_loss_reported() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = smx_zmq::loopback::free_loopback_endpoint().unwrap();
    let config = file_in(
        dir.path(),
        "zmq.toml",
        &format!(
            "[impl.smx_snk_zmq]\npattern = \"pipeline\"\nendpoint = \"{endpoint}\"\n\n\
             [impl.smx_src_zmq]\npattern = \"pipeline\"\nendpoint = \"{endpoint}\"\ntimeout = \"500ms\"\n"
        ),
    );
    let sender = file_in(
        dir.path(),
        "sender.smx",
        "Src1 = box smx_src_rand(out data)\nSnk1 = box smx_snk_zmq(in data, in topic open)\nconnect Src1.Snk1\n",
    );
    let receiver = file_in(
        dir.path(),
        "receiver.smx",
        "Src2 = box smx_src_zmq(out data, out topic open)\nSnk2 = box smx_snk_null(in data)\nconnect Src2.Snk2\n",
    );
    let mut send = spawn(&[arg(&sender), "--config", arg(&config), "-n", "0", "-q", "--pin", "off"]);
    let recv = spawn(&[
        arg(&receiver),
        "--config",
        arg(&config),
        "--report",
        "json",
        "-q",
        "--pin",
        "off",
    ]);
    wait_for_threads(send.id(), 3);
    wait_for_threads(recv.id(), 3);
    std::thread::sleep(Duration::from_millis(500));
    send.kill().unwrap();
    let _ = send.wait();
    let out = wait_with_deadline(recv, LIVENESS);
    // Every box ended, but the tail of the stream is unknown: exit 3, books not clean.
    assert_eq!(out.status.code(), Some(3), "stderr: {}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a report is printed");
    let source = report["sections"]["zmq"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "Src2")
        .unwrap()
        .clone();
    assert_eq!(source["end"], "timeout", "{source}");
    assert!(source["received"].as_u64().unwrap() > 0, "{source}");
    assert_eq!(
        source["tail_unknown"], true,
        "the loss after the kill is reported as unknown: {source}"
    );
}
