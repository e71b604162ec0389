//! `--rt on` on a machine with fewer cores than threads: the time-triggered pair still moves,
//! the run ends by itself, and SIGTERM stops an endless run with the partial report. Each run
//! has a generous bound only so that a regression fails instead of hanging the suite.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BOUND: Duration = Duration::from_secs(60);

/// One `--rt on` run at a time: the tests of a file run in parallel, and one run's spinning
/// real-time threads can keep the other's off both cores of a 2-core machine for seconds (a
/// SIGTERM run once saw its every thread still at step 0 after 4.5 s).
static ONE_RUN_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn start(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child`; kills it and fails the test past [`BOUND`].
fn finish(mut child: Child, what: &str) -> std::process::Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > BOUND {
            let _ = child.kill();
            panic!("{what}: still running after {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_real_time_firewall_sharing_its_producers_core_lets_the_run_end() {
    let _alone = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let child = start(&[
        "nets/src_snk.smx",
        "--rt",
        "on",
        "--tt-mode",
        "threads",
        "-n",
        "20000",
        "-q",
    ]);
    let out = finish(child, "--rt on run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("20000 forwarded"), "{stdout}");
}

#[test]
fn sigterm_stops_an_endless_real_time_run_with_its_report() {
    let _alone = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let child = start(&[
        "nets/src_snk.smx",
        "--rt",
        "on",
        "--tt-mode",
        "threads",
        "-n",
        "0",
        "-q",
    ]);
    // Until the first messages moved the run may still be starting; a stop then is a stop too.
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: a plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = finish(child, "SIGTERM");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}");
    assert!(stdout.contains("status stopped"), "{stdout}");
}
