//! C boxes against the same Rust boxes, side by side in one run.
//!
//! `cargo bench --bench c_boxes` compiles `examples/c-boxes/bench/` (`c_src_rand`, `c_snk_null`:
//! the C twins of the built-in `smx_src_rand` and `smx_snk_null`, one malloc'd payload in an
//! `smx_msg_t` per message, as a box of the original style makes it) with the system C compiler
//! and runs four `Src.Snk` pairs through the `smxrun` binary, interleaved round by round:
//!
//! * `rust`: `smx_src_rand -> smx_snk_null`
//! * `c`: `c_src_rand -> c_snk_null` (the C message travels as it is)
//! * `c->rust`: `c_src_rand -> smx_snk_null` (a Rust box reads a C message without a copy)
//! * `rust->c`: `smx_src_rand -> c_snk_null` (the C box gets a copy of the bytes in a new message)
//!
//! It prints the median rate of each and the median over rounds of `rust rate / pair rate`: what
//! a message through that pair costs compared with the Rust pair (the goal for `c` is at most
//! 1.3: a box ported from the original runtime should not cost much more than the same box in
//! Rust; docs/performance.md has the current figures). `SMX_BENCH_ROUNDS` (default 7) sets the rounds, `SMX_BENCH_MESSAGES` (default 1,000,000)
//! the messages per run; `SMX_BENCH_PIN` (default auto) is passed as `--pin`.
//!
//! `SMX_BENCH=rss cargo bench --bench c_boxes` instead runs the `c` pair over
//! `SMX_BENCH_MESSAGES` (default there 10,000,000) messages and prints the resident memory every
//! 500 ms: flat when nothing leaks per message.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SMXRUN: &str = env!("CARGO_BIN_EXE_smxrun");

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// Compiles the bench boxes into `dir/libbench.so`.
fn build_library(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = dir.join("libbench.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&cc)
        .args(["-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("include"))
        .arg(root.join("examples/c-boxes/bench/c_src_rand.c"))
        .arg(root.join("examples/c-boxes/bench/c_snk_null.c"))
        .arg("-o")
        .arg(&lib)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler '{cc}': {e}"));
    assert!(status.success(), "{cc} failed");
    lib
}

fn net(dir: &Path, name: &str, src: &str, snk: &str) -> PathBuf {
    let path = dir.join(format!("{name}.smx"));
    let text = format!("Src = box {src}( out data )\nSnk = box {snk}( in data )\nconnect Src.Snk\n");
    std::fs::write(&path, text).unwrap();
    path
}

/// One run: messages per second from the report (the runtime's own wall time).
fn run(net: &Path, lib: &Path, messages: u64, pin: &str) -> f64 {
    let out = Command::new(SMXRUN)
        .arg("run")
        .arg(net)
        .arg("--boxes")
        .arg(lib)
        .args(["--pin", pin, "-q", "--report", "json", "--set"])
        .arg(format!("Src.count={messages}"))
        .output()
        .expect("run smxrun");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(report["messages"].as_u64(), Some(messages), "every message arrived");
    report["messages_per_s"].as_f64().expect("a rate")
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn rss(dir: &Path, lib: &Path) {
    let messages = env_u64("SMX_BENCH_MESSAGES", 10_000_000);
    let net = net(dir, "c", "c_src_rand", "c_snk_null");
    let started = Instant::now();
    let mut child = Command::new(SMXRUN)
        .arg("run")
        .arg(&net)
        .arg("--boxes")
        .arg(lib)
        .args(["-q", "--report", "json", "--set"])
        .arg(format!("Src.count={messages}"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("run smxrun");
    let pid = child.id();
    let mut samples = Vec::new();
    while child.try_wait().expect("wait").is_none() {
        if let Some(kib) = rss_kib(pid) {
            samples.push(kib);
            println!("{:6.1} s  RSS {kib} KiB", started.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let out = child.wait_with_output().expect("report");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    println!(
        "{} messages at {:.0} messages/s; RSS first {} KiB, last {} KiB, max {} KiB",
        report["messages"],
        report["messages_per_s"].as_f64().unwrap_or(0.0),
        samples.first().copied().unwrap_or(0),
        samples.last().copied().unwrap_or(0),
        samples.iter().max().copied().unwrap_or(0)
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run a smoke round.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let dir = tempfile::tempdir().unwrap();
    let lib = build_library(dir.path());
    if std::env::var("SMX_BENCH").as_deref() == Ok("rss") {
        return rss(dir.path(), &lib);
    }
    let rounds = if smoke {
        1
    } else {
        env_u64("SMX_BENCH_ROUNDS", 7) as usize
    };
    let messages = if smoke {
        10_000
    } else {
        env_u64("SMX_BENCH_MESSAGES", 1_000_000)
    };
    let pin = std::env::var("SMX_BENCH_PIN").unwrap_or_else(|_| "auto".to_string());
    let pairs = [
        ("rust", net(dir.path(), "rust", "smx_src_rand", "smx_snk_null")),
        ("c", net(dir.path(), "c", "c_src_rand", "c_snk_null")),
        ("c->rust", net(dir.path(), "c_rust", "c_src_rand", "smx_snk_null")),
        ("rust->c", net(dir.path(), "rust_c", "smx_src_rand", "c_snk_null")),
    ];
    println!("c_boxes: {rounds} rounds of {messages} messages per pair, --pin {pin}, pairs interleaved");
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); pairs.len()];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); pairs.len()];
    for round in 0..rounds {
        let mut this = vec![0.0; pairs.len()];
        for k in 0..pairs.len() {
            // Rotate the order so that no pair always runs first (or right after another).
            let p = (round + k) % pairs.len();
            this[p] = run(&pairs[p].1, &lib, messages, &pin);
        }
        for p in 0..pairs.len() {
            rates[p].push(this[p]);
            ratios[p].push(this[0] / this[p]);
        }
        let line: Vec<String> = pairs
            .iter()
            .zip(&this)
            .map(|((name, _), r)| format!("{name} {:.0}", r))
            .collect();
        println!("  round {}: {}", round + 1, line.join(", "));
    }
    println!("\npair      median rate [msg/s]   cost per message vs rust (median of per-round ratios)");
    for (p, (name, _)) in pairs.iter().enumerate() {
        let rate = median(&mut rates[p]);
        let ratio = median(&mut ratios[p]);
        println!("{name:8}  {rate:>19.0}   {ratio:.3}x");
    }
}
