//! Load: a net of 500 `Src.Snk` pairs (1,000 threads) run by `smxrun` either runs
//! to its end or fails up front with a clear message about the thread limit; with the
//! process's address space capped so that the threads cannot all exist, it must be the clear
//! message (exit 1), never a crash, a hang or a partial start.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const LIVENESS: Duration = Duration::from_secs(120);

fn pairs_net(dir: &Path, pairs: usize) -> std::path::PathBuf {
    let mut text =
        String::from("Src = box smx_src_rand(out data)\nSnk = box smx_snk_null(in data)\nA = Src.Snk\nconnect A");
    for _ in 1..pairs {
        text.push_str("|A");
    }
    text.push('\n');
    let path = dir.join(format!("pairs_{pairs}.smx"));
    std::fs::write(&path, text).unwrap();
    path
}

fn wait_with_deadline(child: Child) -> Output {
    wait_within(child, LIVENESS)
}

/// Waits for `child` while reading its output (a big report must not fill the pipe and block
/// it), killing it if it outlives `limit`, so that a hang fails instead of blocking CI.
fn wait_within(child: Child, limit: Duration) -> Output {
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

fn smxrun(net: &Path, address_space: Option<u64>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smxrun"));
    cmd.args([
        net.to_str().unwrap(),
        "-n",
        "2",
        "--report",
        "json",
        "-q",
        "--pin",
        "off",
    ])
    .env_remove("RUST_LOG")
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if let Some(limit) = address_space {
        // SAFETY: the closure runs in the child between fork and exec and only calls
        // setrlimit, which is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                let rl = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &rl) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
    wait_with_deadline(cmd.spawn().expect("smxrun starts"))
}

#[test]
fn five_hundred_pairs_run_or_fail_up_front_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let net = pairs_net(dir.path(), 500);
    let out = smxrun(&net, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(report["nets"].as_array().unwrap().len(), 1000);
            assert_eq!(report["messages"], 1000);
        }
        Some(1) => assert!(stderr.contains("cannot start 1000 threads"), "{stderr}"),
        other => panic!("exit {other:?}: {stderr}"),
    }
}

#[test]
fn a_thread_limit_hit_while_starting_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let net = pairs_net(dir.path(), 500);
    // 1,000 stacks of 512 KiB do not fit into 256 MiB of address space.
    let out = smxrun(&net, Some(256 << 20));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot start 1000 threads"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty(), "no report for a run that never started");
}
