//! A stop ends runs that cannot drain: a cycle fed by a source, whether its
//! messages keep going round or its ends block on each other's full channels, ends at the halt
//! with books that balance; a box that never returns from its step is left behind, and the
//! partial report says `stuck` and marks its channels as not settled. Each case ended, before,
//! only when smxrun gave up 5 s after the stop, with no report.
//!
//! Limits are liveness bounds (a run still there after a minute is killed and fails the
//! test), never timing thresholds.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, Flow, InPort, InitCtx, Io, PortSpec};
use smx_runtime::report::Status;
use smx_runtime::{RunOptions, run};

const LIVENESS: Duration = Duration::from_secs(60);

fn smxrun() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smxrun"));
    cmd.env("RUST_LOG", "warn").current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Starts `args` with a JSON report, stops it with SIGINT once `ready` holds (or after a
/// while, if `None`), and waits for it (a run still there after [`LIVENESS`] is killed:
/// `None`). Exit code, report, stderr.
fn stopped(args: &[&str], ready: Option<&Path>) -> (Option<i32>, Value, String) {
    let mut child: Child = smxrun()
        .args(args)
        .args(["--report", "json", "-q"])
        .envs(ready.map(|flag| ("T_STUCK_FLAG", flag)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    match ready {
        Some(flag) => {
            let start = std::time::Instant::now();
            while !flag.exists() {
                assert!(start.elapsed() < LIVENESS, "the box never got stuck");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        None => std::thread::sleep(Duration::from_millis(500)),
    }
    // SAFETY: plain FFI call signalling the child process this test spawned.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    let start = std::time::Instant::now();
    let mut killed = false;
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > LIVENESS {
            child.kill().unwrap();
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().unwrap();
    let (mut out, mut err) = (String::new(), String::new());
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let report = serde_json::from_str(&out).unwrap_or_else(|e| panic!("no report ({e}): {out}\n{err}"));
    (if killed { None } else { status.code() }, report, err)
}

/// The graph of `Src.A` as `smxrun graph --format json` writes it, for editing into shapes
/// the language does not make.
fn pair_graph(dir: &Path) -> Value {
    let pair = write(
        dir,
        "pair.smx",
        "Src = box smx_src_rand( out data )\nA = box smx_snk_null( in data )\nconnect Src.A\n",
    );
    let out = smxrun().args(["graph", "--format", "json"]).arg(pair).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn routing_node(id: usize) -> Value {
    serde_json::json!({"id": id, "label": "smx_rn", "func": "smx_rn", "kind": "routing_node",
        "is_static": false, "pure": false, "location": "local", "priority": 0, "line": 0, "ports": []})
}

/// `g` with its edges replaced by `(from, to)` (all as the first edge: coupled, length 1).
fn with_edges(mut g: Value, edges: &[(usize, usize)]) -> Value {
    let template = g["edges"][0].clone();
    let edges: Vec<Value> = edges
        .iter()
        .enumerate()
        .map(|(id, &(from, to))| {
            let mut e = template.clone();
            e["id"] = id.into();
            e["source"] = from.into();
            e["target"] = to.into();
            e
        })
        .collect();
    g["edges"] = edges.into();
    g
}

/// `Src -> rn -> A -> rn`: A (a forwarder) feeds itself back through a routing node that Src
/// also feeds.
fn ring(dir: &Path) -> PathBuf {
    let mut g = pair_graph(dir);
    g["nodes"][1]["func"] = "smx_fwd".into();
    let mut output = g["nodes"][1]["ports"][0].clone();
    output["mode"] = "out".into();
    g["nodes"][1]["ports"].as_array_mut().unwrap().push(output);
    g["nodes"].as_array_mut().unwrap().push(routing_node(2));
    let g = with_edges(g, &[(0, 2), (2, 1), (1, 2)]);
    write(dir, "ring.json", &g.to_string())
}

/// `Src -> rn1 -> rn2 -> rn1`, and `rn2 -> A`: a cycle of two routing nodes, one of which
/// also copies every message to a sink.
fn routing_cycle(dir: &Path) -> PathBuf {
    let mut g = pair_graph(dir);
    g["nodes"]
        .as_array_mut()
        .unwrap()
        .extend([routing_node(2), routing_node(3)]);
    let g = with_edges(g, &[(0, 2), (2, 3), (3, 2), (3, 1)]);
    write(dir, "rn_cycle.json", &g.to_string())
}

fn balances(c: &Value) -> bool {
    let n = |k: &str| c[k].as_u64().unwrap();
    n("written") == n("read") + n("overwritten") + n("dropped") + n("left")
}

fn net<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["nets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("no net {name}: {report}"))
}

#[test]
fn cycles_that_never_drain_end_at_the_halt_with_balanced_books() {
    let dir = tempfile::tempdir().unwrap();
    let ring = ring(dir.path());
    let cycle = routing_cycle(dir.path());
    // Three messages keep going round; a hundred fill every channel, and then the routing
    // node waits for room in A's input while A waits for room in the node's (and Src, blocked
    // in its own full channel, never sees the stop).
    for (file, count) in [(&ring, "3"), (&ring, "100"), (&cycle, "3"), (&cycle, "100")] {
        let what = format!("{} -n {count}", file.display());
        let (code, report, err) = stopped(&["run", file.to_str().unwrap(), "-n", count], None);
        assert_eq!(code, Some(130), "{what}: {err}");
        assert!(!err.contains("without a report"), "{what}: {err}");
        assert_eq!(report["status"], "stopped", "{what}: {report}");
        for n in report["nets"].as_array().unwrap() {
            assert!(n["status"] == "ok" || n["status"] == "stopped", "{what}: {n}");
        }
        for c in report["channels"].as_array().unwrap() {
            assert_eq!(c["settled"], true, "{what}: {c}");
            assert!(balances(c), "{what}: {c}");
        }
    }
}

/// `t_stuck(in data)`: reads, and at its third step never returns (sleeping, looking at
/// nothing), once it has created the file `$T_STUCK_FLAG` names.
const STUCK_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "smx.h"
SMX_BOX(t_stuck);
int t_stuck_init(void *h, void **state) { (void)h; *state = NULL; return 0; }
int t_stuck(void *h, void *state)
{
    smx_msg_t *m = smx_read(h, 0);
    (void)state;
    if (m == NULL)
        return SMX_NET_RETURN;
    smx_msg_destroy(h, m, 1);
    if (smx_net_count(h) == 3)
    {
        fclose(fopen(getenv("T_STUCK_FLAG"), "w"));
        for (;;)
            sleep(1);
    }
    return SMX_NET_RETURN;
}
void t_stuck_cleanup(void *h, void *state) { (void)h; (void)state; }
"#;

fn stuck_library(dir: &Path) -> PathBuf {
    let src = write(dir, "t_stuck.c", STUCK_C);
    let lib = dir.join("libt_stuck.so");
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-Wall", "-Werror", "-I", "include"])
        .arg(&src)
        .arg("-o")
        .arg(&lib)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cc");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    lib
}

#[test]
fn a_c_box_stuck_in_its_step_is_left_behind_and_reported_stuck() {
    let dir = tempfile::tempdir().unwrap();
    let lib = stuck_library(dir.path());
    let decls = "Src = box smx_src_rand( out data )\nS = box t_stuck( in data )\n";
    let plain = write(dir.path(), "stuck.smx", &format!("{decls}connect Src.S\n"));
    let tt = write(dir.path(), "stuck_tt.smx", &format!("{decls}connect tt[10ms](Src.S)\n"));
    // In the cyclic executive the stuck box holds the firewall thread, and with it Src.
    for (file, mode, src_status) in [
        (&plain, "threads", "stopped"),
        (&tt, "threads", "stopped"),
        (&tt, "cyclic", "stuck"),
    ] {
        let what = format!("{} --tt-mode {mode}", file.display());
        let flag = dir
            .path()
            .join(format!("stuck_{mode}_{}", file.file_name().unwrap().to_string_lossy()));
        let (code, report, err) = stopped(
            &[
                file.to_str().unwrap(),
                "--boxes",
                lib.to_str().unwrap(),
                "--tt-mode",
                mode,
            ],
            Some(&flag),
        );
        assert_eq!(code, Some(130), "{what}: {err}");
        assert_eq!(report["status"], "stuck", "{what}: {report}");
        let s = net(&report, "S");
        assert_eq!(s["status"], "stuck", "{what}: {s}");
        assert_eq!(s["loop_count"], 3, "{what}: {s}");
        assert!(s["error"].as_str().unwrap().contains("did not end"), "{what}: {s}");
        assert_eq!(net(&report, "Src")["status"], src_status, "{what}: {report}");
        assert_eq!(report["channels"][0]["settled"], false, "{what}: {report}");
        assert!(err.contains("error: net 'S' (id 1, t_stuck) stuck"), "{what}: {err}");
        assert!(!err.contains("without a report"), "{what}: {err}");
    }
}

/// Set when `rust_stuck` got stuck.
static STUCK: AtomicBool = AtomicBool::new(false);

/// `rust_stuck(in data)`: like `t_stuck`, in Rust.
struct Stuck(InPort);

impl BoxImpl for Stuck {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.0 = ctx.input("data")?;
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let _ = io.read(self.0);
        if io.iteration() == 3 {
            STUCK.store(true, Ordering::SeqCst);
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        Ok(Flow::Return)
    }
}

fn stuck_spec() -> BoxSpec {
    fn create(_: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(Stuck(InPort(0))))
    }
    const SPEC: BoxSpec = BoxSpec::named("rust_stuck")
        .inputs(&[PortSpec::new("data")])
        .create(create);
    SPEC
}

#[test]
fn a_library_run_with_a_stuck_box_returns_after_a_stop() {
    let text = "Src = box smx_src_rand( out data )\nS = box rust_stuck( in data )\nconnect Src.S\n";
    let file = smx_lang::diag::SourceFile::new("stuck.smx", text);
    let graph = smx_lang::compose::compile(&file, &Default::default()).graph;
    let mut registry = smxrun::builtin_registry();
    registry.register(stuck_spec());
    let opts = RunOptions::default();
    let stop = opts.stop.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(&graph, &registry, &opts));
    });
    let start = std::time::Instant::now();
    while !STUCK.load(Ordering::SeqCst) {
        assert!(start.elapsed() < LIVENESS, "the box never got stuck");
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    let report = rx.recv_timeout(LIVENESS).expect("run returns after the stop").unwrap();
    assert_eq!(report.status, Status::Stuck);
    let s = report.net("S").unwrap();
    assert_eq!((s.status, s.loop_count), (Status::Stuck, 3));
    // Src waited for room in the channel S no longer reads: the halt refused that write.
    assert_eq!(report.net("Src").unwrap().status, Status::Stopped);
    let c = &report.channels[0];
    assert!(!c.settled, "{c:?}");
    assert!(
        c.written > c.read + c.overwritten + c.dropped + c.left,
        "one is in S's channel: {c:?}"
    );
}

/// Set when `rust_stuck_in_init` began its init.
static IN_INIT: AtomicBool = AtomicBool::new(false);

/// `rust_stuck_in_init(in data)`: an init that never returns and heeds no stop.
struct StuckInInit;

impl BoxImpl for StuckInInit {
    fn init(&mut self, _ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        IN_INIT.store(true, Ordering::SeqCst);
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    fn step(&mut self, _io: &mut Io<'_>) -> Result<Flow, BoxError> {
        Ok(Flow::End)
    }
}

/// A run whose start is held (as a process of a deployment holds it until all are ready)
/// returns after a stop also when a box never finishes its init, and reports that box stuck:
/// the wait for every box to be ready gives way to the stop, as the start barrier of a run that
/// is not held does, and no net runs a step.
#[test]
fn a_held_run_with_a_box_stuck_in_its_init_returns_after_a_stop() {
    fn create(_: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(StuckInInit))
    }
    const SPEC: BoxSpec = BoxSpec::named("rust_stuck_in_init")
        .inputs(&[PortSpec::new("data")])
        .create(create);
    let text = "Src = box smx_src_rand( out data )\nS = box rust_stuck_in_init( in data )\nconnect Src.S\n";
    let file = smx_lang::diag::SourceFile::new("stuck.smx", text);
    let graph = smx_lang::compose::compile(&file, &Default::default()).graph;
    let mut registry = smxrun::builtin_registry();
    registry.register(SPEC);
    let opts = RunOptions::default();
    let asked = std::sync::Arc::new(AtomicBool::new(false));
    let gate_asked = asked.clone();
    opts.progress.hold_start(move |_| {
        gate_asked.store(true, Ordering::SeqCst);
        true
    });
    let stop = opts.stop.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(&graph, &registry, &opts));
    });
    let start = std::time::Instant::now();
    while !IN_INIT.load(Ordering::SeqCst) {
        assert!(start.elapsed() < LIVENESS, "the box never began its init");
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    let report = rx.recv_timeout(LIVENESS).expect("run returns after the stop").unwrap();
    assert!(
        !asked.load(Ordering::SeqCst),
        "the gate is asked only once all are ready"
    );
    assert_eq!(report.net("S").unwrap().status, Status::Stuck, "{:?}", report.nets);
    assert_eq!(report.net("Src").unwrap().loop_count, 0);
}
