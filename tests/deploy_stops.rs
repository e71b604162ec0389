//! How a net over several processes ends when it does not end by itself: a process whose
//! `launch` never starts its slice, a stop asked for at `smxrun`, a slice killed from outside,
//! and a `launch` command that cannot be started. Each run ends, says which process was the
//! cause, and leaves no process behind.

mod common;
use common::deploy::{
    alive, by_process, children_of, process, slice_process, smxrun, text, wait_for, wait_for_messages, write,
};

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const NET: &str = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n";

/// `Snk` in a second process of this machine, joined by shared memory.
const TWO: &str = "[process.b]\n\n[net.Snk]\nprocess = \"b\"\n";

fn executable(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = write(dir, name, text);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A `launch` that never starts the slice, as `ssh` waiting at a password prompt: it waits for
/// a child of its own, and writes its pid and that child's, one a line, into the file it
/// returns beside itself once both run.
fn hanging_launch(dir: &Path) -> (PathBuf, PathBuf) {
    let pids = dir.join("pids");
    let launch = executable(
        dir,
        "hang.sh",
        &format!(
            "#!/bin/sh\necho $$ > {0}.tmp\nsleep 300 &\necho $! >> {0}.tmp\nmv {0}.tmp {0}\nwait\n",
            pids.display()
        ),
    );
    (launch, pids)
}

/// The pids a [`hanging_launch`] wrote (the script's and its child's), once it wrote them.
fn launched_pids(pids: &Path) -> Vec<u32> {
    wait_for("the launch command to start", || pids.exists());
    std::fs::read_to_string(pids)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// The slice of process `b`, started as a supervisor starts it, given `job` on its stdin,
/// which stays open (its control pipe) until the caller drops it.
fn slice_of_b_given(job: &str) -> (Child, std::process::ChildStdin) {
    use std::io::Write;
    let mut slice = smxrun()
        .args(["__slice", "--process", "b"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = slice.stdin.take().unwrap();
    stdin.write_all(format!("{job}\n").as_bytes()).unwrap();
    (slice, stdin)
}

/// The report's nets that stepped at least once.
fn nets_that_stepped(report: &Value) -> Vec<&Value> {
    report["nets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["loop_count"].as_u64().is_some_and(|count| count > 0))
        .collect()
}

/// The configuration that runs `Snk` in process `b` at 127.0.0.1 (links from `port` up), started
/// through `launch`.
fn sink_through(launch: impl std::fmt::Display, port: u16) -> String {
    format!("[process.b]\nhost = \"127.0.0.1\"\nport = {port}\nlaunch = \"{launch}\"\n\n[net.Snk]\nprocess = \"b\"\n")
}

/// [`start`] of `-n COUNT` with a JSON report into the directory; the run and the report's path.
fn start_reporting(dir: &Path, config: &str, count: &str) -> (Child, PathBuf) {
    start_net_reporting(dir, NET, config, count)
}

/// [`start_reporting`] of the net `net`.
fn start_net_reporting(dir: &Path, net: &str, config: &str, count: &str) -> (Child, PathBuf) {
    let report_path = dir.join("report.json");
    let args = [
        "-n",
        count,
        "-q",
        "--report",
        "json",
        "-o",
        report_path.to_str().unwrap(),
    ];
    (start_net(dir, net, config, &args), report_path)
}

/// [`start`] of an endless run (`-n 0`) with a JSON report and live figures every 20 ms into
/// the directory; the run, the report's path and the live figures' path.
fn start_watched(dir: &Path, config: &str) -> (Child, PathBuf, PathBuf) {
    let report_path = dir.join("report.json");
    let stats = dir.join("stats.jsonl");
    let args = [
        "-n",
        "0",
        "-q",
        "--report",
        "json",
        "-o",
        report_path.to_str().unwrap(),
        "--stats-every",
        "20ms",
        "--stats-file",
        stats.to_str().unwrap(),
    ];
    (start(dir, config, &args), report_path, stats)
}

/// `smxrun net.smx --config deploy.toml ARGS` of [`NET`], started in the background.
fn start(dir: &Path, config: &str, args: &[&str]) -> Child {
    start_net(dir, NET, config, args)
}

/// [`start`] of the net `net`.
fn start_net(dir: &Path, net: &str, config: &str, args: &[&str]) -> Child {
    let net = write(dir, "net.smx", net);
    let config = write(dir, "deploy.toml", config);
    smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The run's output once it ended; a run that has not ended after a minute hangs: it is
/// killed with its slices and the test fails.
fn finish(mut run: Child, leftovers: &[u32]) -> Output {
    let guard = Instant::now() + Duration::from_secs(60);
    while run.try_wait().unwrap().is_none() {
        if Instant::now() > guard {
            for pid in children_of(run.id()).into_iter().chain(leftovers.iter().copied()) {
                unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
            let _ = run.kill();
            panic!(
                "the run did not end within a minute: {}",
                text(&run.wait_with_output().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    run.wait_with_output().unwrap()
}

fn report(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Whether no net of `report` took a step.
fn no_net_stepped(report: &Value) -> bool {
    report["nets"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n["loop_count"].as_u64().unwrap_or(0) == 0)
}

/// The run's two slices, in the order they were started (placement order: main, then b).
fn two_slices(run: &Child) -> Vec<u32> {
    let mut slices = Vec::new();
    wait_for("two slices that said they started", || {
        slices = children_of(run.id());
        slices.len() == 2 && slices.iter().all(|pid| common::deploy::said_it_started(*pid))
    });
    // And, on a machine not too loaded, past the start of their nets.
    std::thread::sleep(Duration::from_millis(300));
    by_process(slices)
}

/// The exit code of a run in which a process refused its run: 1 when no net ran anywhere, 2
/// when the nets of another process had started before it learnt of the refusal.
fn refused_exit(report: &Value) -> i32 {
    let ran = report["nets"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["loop_count"].as_u64().is_some_and(|c| c > 0));
    if ran { 2 } else { 1 }
}

fn error_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("error:"))
        .map(str::to_string)
        .collect()
}

/// A `launch` that never starts the slice (as `ssh` waiting at a password prompt) does not
/// keep the run from ending once the other process, ready, has waited for it as long as a link
/// waits for its peer: the other is stopped before its nets ran, the launch's whole process
/// group is killed, and the report and the error line say it never started.
#[test]
fn a_launch_that_never_starts_its_slice_is_killed_once_the_run_has_failed() {
    let dir = tempfile::tempdir().unwrap();
    let (launch, pids) = hanging_launch(dir.path());
    let config = sink_through(launch.display(), 27310);
    let began = Instant::now();
    let (run, report_path) = start_reporting(dir.path(), &config, "1000");
    let launched = launched_pids(&pids);
    assert_eq!(launched.len(), 2, "the script and its own child");
    let out = finish(run, &launched);
    let waited = began.elapsed().as_secs_f64();
    // The cause is a process that never started, as for one that died.
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = report(&report_path);
    assert_eq!(report["status"], "failed", "{report}");
    // No net ran: the run's wall time is the time its nets ran, not the wait for the process
    // that never came (a link's timeout).
    assert!(no_net_stepped(&report), "{report}");
    let wall = report["wall_time_s"].as_f64().unwrap();
    assert!(
        wall < waited / 2.0,
        "wall time {wall} s of a run that waited {waited} s: {report}"
    );
    assert_eq!(process(&report, "main")["status"], "stopped", "{report}");
    let b = process(&report, "b");
    assert_eq!(b["status"], "killed", "{b}");
    assert!(b["pid"].is_null(), "it never said it runs: {b}");
    let errors = error_lines(&out);
    assert!(
        errors.iter().any(|l| l.starts_with("error: process 'b' killed")
            && l.contains("never said it started")
            && l.contains(&launch.display().to_string())),
        "{}",
        text(&out)
    );
    // `main` waited for a peer that never came: a consequence, not a cause.
    assert!(!errors.iter().any(|l| l.contains("process 'main'")), "{}", text(&out));
    for pid in launched {
        wait_for("the launch command's process group to be gone", || !alive(pid));
    }
}

/// A process that dies while another has not said it started yet ends the run, and the error
/// line names it: not the one that never started, which was only killed because of it.
#[test]
fn a_death_beside_a_launch_that_never_starts_is_named_as_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let (launch, pids) = hanging_launch(dir.path());
    let config = sink_through(launch.display(), 27312);
    let (run, report_path) = start_reporting(dir.path(), &config, "0");
    let launched = launched_pids(&pids);
    let mut main = Vec::new();
    wait_for("the slice of main", || {
        main = children_of(run.id())
            .into_iter()
            .filter(|pid| slice_process(*pid).as_deref() == Some("main"))
            .collect();
        !main.is_empty()
    });
    unsafe { libc::kill(main[0] as i32, libc::SIGKILL) };
    let out = finish(run, &[&launched[..], &main[..]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let errors = error_lines(&out);
    assert!(
        errors
            .iter()
            .any(|l| l.starts_with("error: process 'main'") && l.contains("died")),
        "{}",
        text(&out)
    );
    assert!(!errors.iter().any(|l| l.contains("process 'b'")), "{}", text(&out));
    let report = report(&report_path);
    assert_eq!(process(&report, "main")["status"], "died", "{report}");
}

/// A `launch` that never reads its slice's job, where the job is larger than a pipe holds,
/// holds up nothing: the supervisor writes the job as the pipe takes it, so the run still ends
/// once the other process has given up on it, or at a stop, with its report, and the `launch`
/// command's process group is killed.
#[test]
fn a_launch_that_never_reads_a_job_larger_than_a_pipe_holds_up_nothing() {
    // 200 pairs: process b's job holds its slice and the whole net's plan, far beyond the
    // 64 KiB of a pipe.
    let pairs = vec!["(Src.Snk)"; 200].join(" | ");
    let net = format!("Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect {pairs}\n");
    for stop in [false, true] {
        let what = if stop { "stopped" } else { "by itself" };
        let dir = tempfile::tempdir().unwrap();
        let (launch, pids) = hanging_launch(dir.path());
        // Every net in b but the first source, which feeds b over a link.
        let config = format!(
            "[process.b]\nhost = \"127.0.0.1\"\nport = 27340\nlaunch = \"{}\"\n\n[default]\nprocess = \"b\"\n\n[net.\"Src#0\"]\nprocess = \"main\"\n",
            launch.display()
        );
        let split_dir = dir.path().join("split");
        std::fs::create_dir(&split_dir).unwrap();
        let jobs = common::deploy::split(&split_dir, &net, &config, &[]);
        let job_len = std::fs::metadata(jobs.join("b.job")).unwrap().len();
        assert!(job_len > 4 * 65536, "{what}: the job of b is {job_len} bytes");
        let report_path = dir.path().join("report.json");
        let args = [
            "-n",
            "1000",
            "-q",
            "--report",
            "json",
            "-o",
            report_path.to_str().unwrap(),
        ];
        let run = start_net(dir.path(), &net, &config, &args);
        let launched = launched_pids(&pids);
        let mut main = Vec::new();
        wait_for("the slice of main", || {
            main = children_of(run.id())
                .into_iter()
                .filter(|pid| common::deploy::slice_process(*pid).as_deref() == Some("main"))
                .collect();
            !main.is_empty() && main.iter().all(|pid| common::deploy::said_it_started(*pid))
        });
        if stop {
            // Well after main's slice said it started.
            std::thread::sleep(Duration::from_millis(300));
            unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
        }
        let out = finish(run, &[&launched[..], &main[..]].concat());
        assert_eq!(
            out.status.code(),
            Some(if stop { 130 } else { 2 }),
            "{what}: {}",
            text(&out)
        );
        let report = report(&report_path);
        let b = process(&report, "b");
        assert!(b["pid"].is_null(), "{what}: it never said it runs: {b}");
        if stop {
            // Killed because the run was stopped: stopped before it started, no failure; a
            // note says it never started, and its nets are stopped, not lost.
            assert_eq!(b["status"], "stopped", "{what}: {b}");
            assert!(
                !error_lines(&out).iter().any(|l| l.contains("process 'b'")),
                "{what}: {}",
                text(&out)
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("note: process 'b' had not said it started when the run was stopped"),
                "{what}: {stderr}"
            );
            let nets = report["nets"].as_array().unwrap();
            assert!(
                nets.iter()
                    .filter(|n| n["process"] == "b")
                    .all(|n| n["status"] == "stopped"),
                "{what}: {report}"
            );
            assert_eq!(report["status"], "stopped", "{what}: {report}");
        } else {
            assert_eq!(b["status"], "killed", "{what}: {b}");
            assert!(
                error_lines(&out).iter().any(|l| {
                    l.starts_with("error: process 'b' killed by signal 9 (SIGKILL); it never said it started")
                }),
                "{what}: {}",
                text(&out)
            );
        }
        for pid in launched.into_iter().chain(main) {
            wait_for("the processes of the run to be gone", || !alive(pid));
        }
    }
}

/// One process stopped from outside (a SIGTERM to it alone, as an operator sends) stops the
/// run, as a stop asked of `smxrun` does: every process is `stopped`, none failed, exit 130,
/// and the endless source whose stream the stop cut short is `stopped`, not `ok`, over shared
/// memory and over tcp alike.
#[test]
fn a_process_stopped_from_outside_stops_the_run() {
    for config in [TWO, &sink_through("/usr/bin/env", 27380)] {
        stopped_from_outside(config);
    }
}

fn stopped_from_outside(config: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (run, report_path, stats) = start_watched(dir.path(), config);
    let slices = two_slices(&run);
    // Once messages cross: a source stopped before its first write has no stream to cut.
    wait_for_messages(&stats);
    unsafe { libc::kill(slices[1] as i32, libc::SIGTERM) };
    let out = finish(run, &slices);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let report = report(&report_path);
    assert_eq!(report["status"], "stopped", "{report}");
    for name in ["main", "b"] {
        assert_eq!(process(&report, name)["status"], "stopped", "{name}: {report}");
    }
    assert_eq!(report["nets"][0]["status"], "stopped", "{}", report["nets"][0]);
    assert_eq!(error_lines(&out), Vec::<String>::new(), "{}", text(&out));
    // Who stopped it: not the user of smxrun, and no link warns of an end the report books.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("smxrun: process 'b' was stopped from outside") && !stderr.contains("interrupted"),
        "{stderr}"
    );
    assert!(!stderr.contains("ending the link"), "{stderr}");
    for pid in slices {
        wait_for("the slice to be gone", || !alive(pid));
    }
}

/// A process stopped from outside while it waits for the others stops the run as well: one
/// that holds its nets for them (`main`) answers the stop at once, with its report, instead of
/// waiting for a go; one whose box waits in its init (`b`, whose link's source waits for a
/// producer that never comes) ends stopped by the stop, not as a process that refused its run.
#[test]
fn a_process_stopped_while_it_waits_for_the_others_stops_the_run() {
    for (victim, name) in [(0, "main"), (1, "b")] {
        let dir = tempfile::tempdir().unwrap();
        let nobody = format!("/dev/shm/smx-test-nobody-{}-{victim}", std::process::id());
        let net = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n\
                   Lnk = box smx_link_shm_src( out data )\nconnect (Src.Snk) | (Lnk.Snk)\n";
        let config = format!(
            "[process.b]\n\n[net.\"Snk#3\"]\nprocess = \"b\"\n\n[net.Lnk]\nprocess = \"b\"\npath = \"{nobody}\"\ntimeout = \"60s\"\n"
        );
        let (run, report_path) = start_net_reporting(dir.path(), net, &config, "0");
        let slices = two_slices(&run);
        unsafe { libc::kill(slices[victim] as i32, libc::SIGTERM) };
        let out = finish(run, &slices);
        let _ = std::fs::remove_file(&nobody);
        assert_eq!(out.status.code(), Some(130), "{name}: {}", text(&out));
        let report = report(&report_path);
        assert_eq!(report["status"], "stopped", "{name}: {report}");
        for process_name in ["main", "b"] {
            assert_eq!(process(&report, process_name)["status"], "stopped", "{name}: {report}");
        }
        let net = |wanted: &str| {
            report["nets"]
                .as_array()
                .unwrap()
                .iter()
                .find(|n| n["name"] == wanted)
                .unwrap()
                .clone()
        };
        if name == "main" {
            // Held until the stop: nothing of it ran.
            assert_eq!(net("Snk")["loop_count"], 0, "{name}: {report}");
        }
        let lnk = net("Lnk");
        assert_eq!(lnk["status"], "stopped", "{name}: {report}");
        assert!(
            lnk["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("stopped in its init")),
            "{name}: {report}"
        );
        assert!(!text(&out).contains("died"), "{name}: {}", text(&out));
        assert_eq!(error_lines(&out), Vec::<String>::new(), "{name}: {}", text(&out));
    }
}

/// A stop asked for at `smxrun` (SIGINT or SIGTERM) is a stopped run, as in one process: its
/// processes are stopped, not failed, no error blames them, and `smxrun` alone says the run was
/// interrupted.
#[test]
fn a_stop_asked_for_reports_the_run_and_its_processes_as_stopped() {
    // Over tcp too: the link's receiver counts what arrived, and the merged row books the rest
    // as left, so the sender does not call its books incomplete.
    let over_tcp = &sink_through("/usr/bin/env", 27370);
    for (signal, name, config) in [
        (libc::SIGINT, "SIGINT", TWO),
        (libc::SIGTERM, "SIGTERM", TWO),
        (libc::SIGINT, "SIGINT over tcp", over_tcp),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (json, report_path) = start_reporting(dir.path(), config, "0");
        let slices = two_slices(&json);
        unsafe { libc::kill(json.id() as i32, signal) };
        let out = finish(json, &slices);
        assert_eq!(out.status.code(), Some(130), "{name}: {}", text(&out));
        let report = report(&report_path);
        assert_eq!(report["status"], "stopped", "{name}: {report}");
        assert_eq!(process(&report, "main")["status"], "stopped", "{name}: {report}");
        let b = process(&report, "b")["status"].as_str().unwrap().to_string();
        assert!(b == "stopped" || b == "ok", "{name}: b {b}: {report}");
        assert_eq!(error_lines(&out), Vec::<String>::new(), "{name}: {}", text(&out));
        // What was on its way when the run stopped is left, as in a channel of one process.
        for c in report["channels"].as_array().unwrap() {
            assert_eq!(c["link"]["lost"], 0, "{name}: {c}");
            let n = |k: &str| c[k].as_u64().unwrap();
            assert_eq!(
                n("written"),
                n("read") + n("overwritten") + n("dropped") + n("left"),
                "{name}: {c}"
            );
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        // A link's books are exact at a stop: nothing says otherwise.
        assert!(!stderr.contains("books incomplete"), "{name}: {stderr}");
        assert_eq!(
            stderr.matches("interrupted").count(),
            1,
            "{name}: said once, by smxrun: {stderr}"
        );
        for pid in slices {
            wait_for("the slice to be gone", || !alive(pid));
        }

        // The text report says the same.
        let dir = tempfile::tempdir().unwrap();
        let run = start(dir.path(), TWO, &["-n", "0", "-q"]);
        let slices = two_slices(&run);
        unsafe { libc::kill(run.id() as i32, signal) };
        let out = finish(run, &slices);
        assert_eq!(out.status.code(), Some(130), "{name}: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let total = stdout
            .lines()
            .find(|l| l.starts_with("Total:"))
            .unwrap_or_else(|| panic!("{}", text(&out)));
        assert!(total.ends_with("status stopped"), "{name}: {total}");
        assert_eq!(error_lines(&out), Vec::<String>::new(), "{name}: {}", text(&out));
    }
}

/// A slice killed from outside ends the run: it alone is named as the cause, the survivor is
/// stopped (or ended by itself), not an error, and no slice says it was interrupted.
#[test]
fn a_killed_slice_is_the_only_process_blamed() {
    // Shared memory, either end killed; and ZeroMQ over tcp, where the survivor does not notice
    // the death by itself before the supervisor stops it.
    let zmq = &sink_through("/usr/bin/env", 27320);
    for (config, victim) in [(TWO, 0), (TWO, 1), (zmq, 0), (zmq, 1)] {
        let (dead, survivor) = if victim == 0 { ("main", "b") } else { ("b", "main") };
        let what = format!("{dead} killed, {}", if config == TWO { "shm" } else { "zmq" });
        let dir = tempfile::tempdir().unwrap();
        let (run, report_path, stats) = start_watched(dir.path(), config);
        let slices = two_slices(&run);
        // The link carries: the death cuts a stream that ran.
        common::deploy::wait_for_messages(&stats);
        let killed = slices[victim];
        // `ps` tells which child is which process.
        let cmdline = std::fs::read(format!("/proc/{killed}/cmdline")).unwrap_or_default();
        let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        assert!(
            words.windows(2).any(|w| w == [&b"--process"[..], dead.as_bytes()]),
            "{what}: {}",
            String::from_utf8_lossy(&cmdline)
        );
        unsafe { libc::kill(killed as i32, libc::SIGKILL) };
        let out = finish(run, &slices);
        assert_eq!(out.status.code(), Some(2), "{what}: {}", text(&out));
        assert_eq!(
            error_lines(&out),
            vec![format!(
                "error: process '{dead}' (pid {killed}) died: killed by signal 9 (SIGKILL)"
            )],
            "{what}: {}",
            text(&out)
        );
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("interrupted"),
            "{what}: {}",
            text(&out)
        );
        let report = report(&report_path);
        assert_eq!(report["status"], "failed", "{what}: {report}");
        assert_eq!(process(&report, dead)["status"], "died", "{what}: {report}");
        let status = process(&report, survivor)["status"].as_str().unwrap().to_string();
        // `ended`: it found its link cut and ended by itself, with books that say so.
        assert!(
            ["stopped", "ok", "ended"].contains(&status.as_str()),
            "{what}: {survivor} {status}: {report}"
        );
        // Neither net ran its stream to its end: the dead one's is `lost`, and the survivor's
        // was cut by the death, whether it found the link cut or was stopped.
        for net in report["nets"].as_array().unwrap() {
            assert_ne!(net["status"], "ok", "{what}: {report}");
        }
        if config == TWO && dead == "main" {
            // Shared memory tells the consumer of its producer's death at once; the row says whose.
            assert_eq!(
                report["nets"][1]["error"], "its input was cut: process 'main' died",
                "{what}: {report}"
            );
        }
        for pid in slices {
            wait_for("the slice to be gone", || !alive(pid));
        }
    }
}

/// A chain over four processes whose last is killed: the others were stopped because of it,
/// also those that ended before the stop reached them because their consumers closed, and
/// the source whose stream that cut short is `stopped`, not `ok`.
#[test]
fn the_processes_a_death_ends_are_stopped_not_ok() {
    let net = "Src = box smx_src_rand( out data )\nFwd = box smx_fwd( up in data, down out data )\n\
               Snk = box smx_snk_null( in data )\nconnect Src.Fwd.Fwd.Snk\n";
    let config = "[process.a]\n[process.b]\n[process.c]\n[net.\"Fwd#1\"]\nprocess = \"a\"\n\
                  [net.\"Fwd#2\"]\nprocess = \"b\"\n[net.Snk]\nprocess = \"c\"\n";
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("report.json");
    let run = start_net(
        dir.path(),
        net,
        config,
        &["-n", "0", "-q", "--report", "json", "-o", report_path.to_str().unwrap()],
    );
    let mut slices = Vec::new();
    wait_for("four slices", || {
        slices = children_of(run.id());
        slices.len() == 4
    });
    let mut victim = 0;
    wait_for("the slice of c", || {
        let c = slices
            .iter()
            .copied()
            .find(|pid| common::deploy::slice_process(*pid).as_deref() == Some("c"));
        victim = c.unwrap_or(0);
        c.is_some_and(common::deploy::said_it_started)
    });
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(victim as i32, libc::SIGKILL) };
    let out = finish(run, &slices);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = report(&report_path);
    assert_eq!(process(&report, "c")["status"], "died", "{report}");
    // A process that does not end in time after the death is killed, which a loaded machine
    // may see; none ends `ok`.
    for (name, may_be) in [
        ("main", &["stopped", "killed"][..]),
        ("a", &["stopped", "killed"]),
        ("b", &["stopped", "ended", "killed"]),
    ] {
        let status = process(&report, name)["status"].as_str().unwrap().to_string();
        assert!(may_be.contains(&status.as_str()), "{name} {status}: {report}");
    }
    // The source, whose stream the death cut short whichever way the end reached it (`lost`
    // where its process was killed before its report); what took the end of its stream before
    // the stop reached it may be `ok`, as in one process.
    let src = report["nets"][0]["status"].as_str().unwrap();
    assert!(src == "stopped" || src == "lost", "{report}");
    for pid in slices {
        wait_for("the slice to be gone", || !alive(pid));
    }
}

/// A split's slice stopped by its orchestrator (SIGTERM, as `systemctl stop` sends) merges as
/// `stopped`, as a supervised run stopped so says, not as a failure.
#[test]
fn a_split_slice_stopped_by_sigterm_merges_as_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = common::deploy::split(dir.path(), NET, TWO, &["-n", "0"]);
    let consumer = std::process::Command::new(out_dir.join("b.sh"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut producer = std::process::Command::new(out_dir.join("main.sh"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Both run once the producer's report would have something in it.
    std::thread::sleep(Duration::from_millis(800));
    unsafe { libc::kill(producer.id() as i32, libc::SIGTERM) };
    assert_eq!(producer.wait().unwrap().code(), Some(130));
    let consumer = consumer.wait_with_output().unwrap();
    assert!(consumer.status.success(), "{}", text(&consumer));
    let merged = common::deploy::merge_json(&out_dir, &["main", "b"]);
    let report: Value = serde_json::from_slice(&merged.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&merged)));
    assert_eq!(process(&report, "main")["status"], "stopped", "{report}");
    assert_eq!(process(&report, "b")["status"], "ok", "{report}");
    assert_eq!(report["status"], "stopped", "{report}");
}

/// A split's slice whose consumer's process was killed ends with books not clean (3), and its
/// own report says why in its warnings: with no supervisor, the orchestrator keeps the report.
#[test]
fn a_split_slice_whose_consumer_died_says_so_in_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = common::deploy::split(dir.path(), NET, TWO, &["-n", "0"]);
    let mut consumer = std::process::Command::new("sh")
        .arg(out_dir.join("b.sh"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let producer = std::process::Command::new("sh")
        .arg(out_dir.join("main.sh"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The consumer's slice (the `sh` execs it), once messages cross: its report counts them.
    let b_report = out_dir.join("b.report.json");
    wait_for("the consumer to take messages", || {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", consumer.id())).unwrap_or_default();
        // utime, in ticks: the consumer's slice has been busy reading.
        stat.rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().nth(11))
            .and_then(|t| t.parse::<u64>().ok())
            .is_some_and(|ticks| ticks > 10)
    });
    consumer.kill().unwrap();
    consumer.wait().unwrap();
    let producer = finish(producer, &[]);
    assert_eq!(producer.status.code(), Some(3), "{}", text(&producer));
    assert!(!b_report.exists());
    let report = report(&out_dir.join("main.report.json"));
    let warnings = report["warnings"].as_array().unwrap();
    let said = warnings
        .iter()
        .filter_map(Value::as_str)
        .filter(|w| w.starts_with("link0_out#1 (smx_link_shm_snk): books incomplete: the consumer's process died"))
        .count();
    assert_eq!(said, 1, "said once: {report}");
}

/// A slice that a `launch` starts on this machine keeps its files in a private directory, and
/// when it is killed the supervisor, which runs beside it, removes that directory as it does a
/// child's.
#[test]
fn a_slice_launched_here_and_killed_leaves_no_directory_behind() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let config = &sink_through("/usr/bin/env", 27360);
    let run = smxrun()
        .arg(write(dir.path(), "net.smx", NET))
        .arg("--config")
        .arg(write(dir.path(), "deploy.toml", config))
        .args(["-n", "0", "-q"])
        .env("TMPDIR", &tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut slices = Vec::new();
    wait_for("the slices of main and b", || {
        slices = by_process(children_of(run.id()));
        let names: Vec<Option<String>> = slices.iter().map(|p| common::deploy::slice_process(*p)).collect();
        names == [Some("main".to_string()), Some("b".to_string())]
    });
    let b = slices[1];
    let dirs_of = |pid: u32| -> Vec<PathBuf> {
        std::fs::read_dir(&tmp)
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("smx-slice-{pid}-"))
            })
            .map(|e| e.path())
            .collect()
    };
    let listing = || {
        std::fs::read_dir(&tmp)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
    };
    let guard = Instant::now() + Duration::from_secs(60);
    while dirs_of(b).len() != 1 {
        if Instant::now() > guard || !alive(b) {
            let listed = listing();
            unsafe { libc::kill(run.id() as i32, libc::SIGTERM) };
            let out = finish(run, &slices);
            panic!("no directory of b ({b}) in {listed:?}: {}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Judged once the run is over, so that a failure leaves no run behind.
    let modes: Vec<(PathBuf, u32)> = slices
        .iter()
        .flat_map(|pid| dirs_of(*pid))
        .filter_map(|d| Some((d.clone(), std::fs::metadata(&d).ok()?.permissions().mode() & 0o777)))
        .collect();
    unsafe { libc::kill(b as i32, libc::SIGKILL) };
    let out = finish(run, &slices);
    for (slice_dir, mode) in modes {
        assert_eq!(mode, 0o700, "{}", slice_dir.display());
    }
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(dirs_of(b), Vec::<PathBuf>::new(), "{}", text(&out));
    for pid in slices {
        wait_for("the slice to be gone", || !alive(pid));
    }
}

/// A run whose every process was killed still says how long its nets ran: as long as the
/// processes last told their supervisor, not the zero of reports nobody wrote.
#[test]
fn a_run_whose_every_process_died_keeps_its_wall_time() {
    let dir = tempfile::tempdir().unwrap();
    let (run, report_path) = start_reporting(dir.path(), TWO, "0");
    let slices = two_slices(&run);
    // Well past the first progress each slice tells (four times a second from its start).
    std::thread::sleep(Duration::from_millis(1500));
    for pid in &slices {
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    let out = finish(run, &slices);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = report(&report_path);
    for name in ["main", "b"] {
        assert_eq!(process(&report, name)["status"], "died", "{report}");
    }
    let wall = report["wall_time_s"].as_f64().unwrap();
    assert!(wall > 0.0, "the slices told their progress: {report}");
}

/// A `launch` command the system cannot start is named in the error, with the system's reason.
#[test]
fn a_launch_command_that_cannot_start_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // An executable file whose interpreter is missing: found, but it cannot be started.
    let runner = executable(dir.path(), "runner", "#!/nonexistent/interpreter\n");
    for launch in [runner.display().to_string(), "/nonexistent/runner".to_string()] {
        let config = sink_through(&launch, 27330);
        let run = start(dir.path(), &config, &["-n", "10", "-q"]);
        let out = finish(run, &[]);
        assert_eq!(out.status.code(), Some(1), "{launch}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("'{launch}'")), "{launch}: {stderr}");
        if launch == runner.display().to_string() {
            assert!(
                stderr.contains(&format!(
                    "error: cannot start process 'b' with launch command '{launch}': No such file or directory\n"
                )),
                "{stderr}"
            );
        }
    }
}

/// When one process cannot be started, those started before it are killed and leave nothing
/// behind: no ring in /dev/shm, no private directory.
#[test]
fn a_launch_command_that_cannot_start_leaves_no_file_of_the_others_behind() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // Found, but it cannot be started: its interpreter is missing.
    let runner = executable(dir.path(), "runner", "#!/nonexistent/interpreter\n");
    // Src#0 in main feeds Snk#1 in c over shared memory; the second pair runs in b, whose launch
    // command cannot start. main and c start before b.
    let net = write(
        dir.path(),
        "net.smx",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect (Src.Snk) | (Src.Snk)\n",
    );
    let config = write(
        dir.path(),
        "deploy.toml",
        &format!(
            "[process.c]\n\n[process.b]\nhost = \"127.0.0.1\"\nlaunch = \"{}\"\n\n[net.\"Snk#1\"]\nprocess = \"c\"\n\n\
             [net.\"Src#2\"]\nprocess = \"b\"\n\n[net.\"Snk#3\"]\nprocess = \"b\"\n",
            runner.display()
        ),
    );
    let run = smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["-n", "0", "-q"])
        .env("TMPDIR", &tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let supervisor = run.id();
    let out = finish(run, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("error: cannot start process 'b'"),
        "{}",
        text(&out)
    );
    let rings: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&format!("smx-{supervisor}-")))
        .collect();
    assert!(rings.is_empty(), "{rings:?}");
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A stop of a net over three processes in a line, with messages on their way over both links:
/// what was on its way is left, as a stop leaves messages in a channel of one process, and
/// nothing is booked as lost.
#[test]
fn a_stop_leaves_what_was_on_its_way_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(
        dir.path(),
        "line.smx",
        "Src = box smx_src_rand(out data)\nFwd = box smx_fwd(up in data, down out data)\n\
         Snk = box smx_snk_null(in data)\nconnect Src.Fwd.Snk\n",
    );
    let config = write(
        dir.path(),
        "line.toml",
        "[process.a]\n[process.b]\n[process.c]\n[net.Src]\nprocess = \"a\"\n\
         [net.Fwd]\nprocess = \"b\"\n[net.Snk]\nprocess = \"c\"\n",
    );
    let report_path = dir.path().join("report.json");
    let run = smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["-n", "0", "-q", "--report", "json", "-o"])
        .arg(&report_path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut slices = Vec::new();
    wait_for("three slices", || {
        slices = children_of(run.id());
        slices.len() == 3
    });
    std::thread::sleep(Duration::from_millis(500));
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    let out = finish(run, &slices);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let report = report(&report_path);
    assert_eq!(report["status"], "stopped", "{report}");
    for c in report["channels"].as_array().unwrap() {
        assert_eq!(c["link"]["lost"], 0, "{c}");
        let n = |k: &str| c[k].as_u64().unwrap();
        assert_eq!(
            n("written"),
            n("read") + n("overwritten") + n("dropped") + n("left"),
            "{c}"
        );
    }
}

/// Slices started by an orchestrator (the scripts of `smxrun split`): when the consumer's
/// process is killed, the producer's does not end as a clean end with its count cut short:
/// its books are not clean, so the orchestrator can tell.
#[test]
fn a_slice_whose_consumer_is_killed_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = common::deploy::split(dir.path(), NET, TWO, &["-n", "0"]);
    let mut consumer = std::process::Command::new(out_dir.join("b.sh")).spawn().unwrap();
    let producer = std::process::Command::new(out_dir.join("main.sh"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Both run once the producer's report would have something in it.
    std::thread::sleep(Duration::from_millis(800));
    consumer.kill().unwrap();
    consumer.wait().unwrap();
    let out = producer.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("books incomplete"), "{stderr}");
    // Merged, the producer's process ended with its books not clean, the consumer's died.
    let merged = common::deploy::merge_json(&out_dir, &["main", "b"]);
    assert_eq!(merged.status.code(), Some(2), "{}", text(&merged));
    let report: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(process(&report, "main")["status"], "ended", "{report}");
    assert_eq!(process(&report, "main")["exit_code"], 3, "{report}");
    assert_eq!(process(&report, "b")["status"], "died", "{report}");
}

/// A process whose run is refused on its host before it starts (here the port of its link is
/// taken there) is `refused`, not `died`: it says why, the others are stopped, and the run
/// exits 1 as a refused run of one process does when nothing ran, else 2.
#[test]
fn a_process_whose_port_is_taken_is_refused_not_dead() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let config = sink_through("/usr/bin/env", port);
    let dir = tempfile::tempdir().unwrap();
    let (run, report_path) = start_reporting(dir.path(), &config, "1000");
    let out = run.wait_with_output().unwrap();
    let report = report(&report_path);
    assert_eq!(out.status.code(), Some(refused_exit(&report)), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The process's own line says why, under its name: the processes share one terminal.
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("b: error: ") && l.contains("address in use")),
        "{stderr}"
    );
    // The link box's slice id names nothing in the whole net; its name is said once.
    assert!(stderr.contains("b: error: link0_in: endpoint: "), "{stderr}");
    // Where the port comes from, which the link's endpoint does not say.
    assert!(
        stderr.contains("b: note: the links into process 'b' listen on tcp ports from its `port` on"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: process 'b'") && stderr.contains("refused"),
        "{stderr}"
    );
    assert_eq!(process(&report, "b")["status"], "refused", "{report}");
    assert_ne!(process(&report, "main")["status"], "died", "{report}");
    drop(taken);
    // The next port is the link's heartbeat connection, which the user never named: the error
    // says what it is.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port() - 1;
    let config = sink_through("/usr/bin/env", port);
    let (run, report_path) = start_reporting(dir.path(), &config, "1000");
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("endpoint: ") {
        // The port below was taken by another program meanwhile: nothing to tell here.
        return;
    }
    assert!(
        stderr.contains("b: error: link0_in: watch (its heartbeat connection): "),
        "{stderr}"
    );
    let second: Value = serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    assert_eq!(process(&second, "b")["status"], "refused", "{second}");
    drop(taken);
}

/// A slice that cannot take its job (here its `launch` starts it as another process than the
/// job's) refuses it as it refuses a run: the process is `refused`, says why, and the run exits
/// as a refused run does, rather than as one with a process that died without saying it started.
#[test]
fn a_slice_started_as_another_process_refuses_its_job() {
    let dir = tempfile::tempdir().unwrap();
    let launch = executable(
        dir.path(),
        "other.sh",
        "#!/bin/sh\nexe=\"$1\"\nexec \"$exe\" __slice --process elsewhere\n",
    );
    let config = sink_through(launch.display(), 27350);
    let (run, report_path) = start_reporting(dir.path(), &config, "1000");
    let out = finish(run, &[]);
    assert_eq!(
        out.status.code(),
        Some(refused_exit(&report(&report_path))),
        "{}",
        text(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l == "b: error: --process elsewhere: the job is the slice of process 'b'"),
        "{stderr}"
    );
    let errors = error_lines(&out);
    assert!(
        errors
            .iter()
            .any(|l| l.starts_with("error: process 'b'") && l.contains(" refused")),
        "{stderr}"
    );
    assert!(!stderr.contains("never said it started"), "{stderr}");
    let report = report(&report_path);
    assert_eq!(process(&report, "b")["status"], "refused", "{report}");
}

/// A slice of an `smxrun` from before protocol versions on another host (here a `launch` that
/// answers as one: it reads its job, says it started without a version, and then never says it
/// is ready) ends the run at once, before any net ran, rather than holding the other
/// process's nets until a Ctrl-C: the error names the process, its host and both protocols,
/// and the run exits 1, as a refused run does.
#[test]
fn a_slice_of_an_older_smxrun_ends_the_run_naming_the_protocols() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let launch = executable(
        dir.path(),
        "older.sh",
        &format!(
            "#!/bin/sh\nread -r job\necho $$ > {0}.tmp\nmv {0}.tmp {0}\necho \"smx-slice started $$\"\nexec sleep 300\n",
            pid_file.display()
        ),
    );
    let config = sink_through(launch.display(), 27410);
    let (run, report_path) = start_reporting(dir.path(), &config, "0");
    wait_for("the older slice to start", || pid_file.exists());
    let older: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    // A hang would be the other process waiting for the go: the guard ends it as a failure.
    let out = finish(run, &[older]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let errors = error_lines(&out);
    assert!(
        errors.iter().any(|l| l.starts_with("error: process 'b'")
            && l.contains("host 127.0.0.1")
            && l.contains("no slice protocol version")
            && l.contains("this smxrun speaks slice protocol ")
            && l.contains("run the same smxrun version on 127.0.0.1")),
        "{}",
        text(&out)
    );
    assert!(!errors.iter().any(|l| l.contains("process 'main'")), "{}", text(&out));
    let report = report(&report_path);
    assert_eq!(process(&report, "b")["status"], "refused", "{report}");
    assert_eq!(process(&report, "main")["status"], "stopped", "{report}");
    let ran = nets_that_stepped(&report);
    assert!(ran.is_empty(), "nets ran beside a slice of another protocol: {ran:#?}");
    wait_for("the older slice to be gone", || !alive(older));
}

/// A slice refuses a job of another protocol version, or of none (one that an older or newer
/// `smxrun split` wrote, or an older supervisor sent), with a line saying so and exit 1;
/// under a supervisor it says the protocol it speaks first, so that a supervisor of another
/// version can tell.
#[test]
fn a_slice_refuses_a_job_of_another_protocol_version() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = common::deploy::split(dir.path(), NET, TWO, &["-n", "3", "--link-timeout", "1s"]);
    let mut job: Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("b.job")).unwrap()).unwrap();
    // Split writes its protocol into each job.
    let ours = job["protocol"]
        .as_u64()
        .unwrap_or_else(|| panic!("a job without its protocol: {job}"));
    job.as_object_mut().unwrap().remove("protocol");
    let none = job.to_string();
    job["protocol"] = Value::from(ours + 1);
    let other = job.to_string();
    for (text_of_job, theirs) in [
        (none, "no slice protocol version".to_string()),
        (other, format!("slice protocol {}", ours + 1)),
    ] {
        // From a file, as an orchestrator starts it.
        let file = write(dir.path(), "b.job", &text_of_job);
        let out = smxrun()
            .args(["__slice", "--process", "b", "--job"])
            .arg(&file)
            .arg("--report")
            .arg(dir.path().join("b.report.json"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{theirs}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("the job speaks {theirs}"))
                && stderr.contains(&format!(
                    "this smxrun speaks slice protocol {ours}: split again with this smxrun"
                )),
            "{stderr}"
        );
        assert!(!dir.path().join("b.report.json").exists(), "{theirs}: nothing ran");
        // On stdin, as a supervisor of another version sends it.
        let (slice, stdin) = slice_of_b_given(&text_of_job);
        drop(stdin);
        let out = finish(slice, &[]);
        assert_eq!(out.status.code(), Some(1), "{theirs}: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("smx-slice started ") && l.ends_with(&format!(" {ours}"))),
            "{theirs}: {stdout}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("process 'b': the supervisor's job speaks {theirs}"))
                && stderr.contains(&format!(
                    "this smxrun speaks slice protocol {ours}: run the same smxrun version on this host"
                )),
            "{stderr}"
        );
    }
}

/// A process's own lines name its boxes as the whole net does: its slice numbers its nodes
/// from 0, and `Snk#0` would name `Src` in the report and in `--set`.
#[test]
fn a_refused_process_names_its_box_as_the_whole_net_does() {
    let dir = tempfile::tempdir().unwrap();
    let unwritable = dir.path().join("no-such-dir").join("out.txt");
    let report_path = dir.path().join("report.json");
    let run = start_net(
        dir.path(),
        "Src = box smx_src_rand( out data )\nFwd = box smx_fwd( up in data, down out data )\n\
         Snk = box smx_snk_dump( in data )\nconnect Src.Fwd.Snk\n",
        &format!(
            "[process.b]\n\n[net.Snk]\nprocess = \"b\"\npath = \"{}\"\n",
            unwritable.display()
        ),
        &[
            "-n",
            "1000",
            "-q",
            "--report",
            "json",
            "-o",
            report_path.to_str().unwrap(),
        ],
    );
    let out = finish(run, &[]);
    assert_eq!(
        out.status.code(),
        Some(refused_exit(&report(&report_path))),
        "{}",
        text(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("b: error: ") && l.contains("cannot open"))
        .unwrap_or_else(|| panic!("no error line of process b: {stderr}"));
    // Snk#2 in the whole net; its slice holds it and a link box, numbered 0 and 1.
    assert!(line.contains("Snk#2: init failed"), "{line}");
    assert!(!line.contains("Snk#0") && !line.contains("Snk#1"), "{line}");
}

/// A process whose box cannot start (a dump into a missing directory) keeps the nets of every
/// other process from running: the processes hold their nets until all have initialised, so a
/// pair in `main` that needs nothing of `b` does not run either, and the run exits 1 as a
/// refused run of one process does.
#[test]
fn a_refused_process_keeps_every_other_processs_nets_from_running() {
    let net = "Src = box smx_src_rand( out data )\nDmp = box smx_snk_dump( in data )\n\
               Snk = box smx_snk_null( in data )\nconnect (Src.Dmp) | (Src.Snk)\n";
    for _ in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let config = format!(
            "[process.b]\n[net.Dmp]\nprocess = \"b\"\npath = \"{}\"\n",
            dir.path().join("missing").join("x").display()
        );
        let report_path = dir.path().join("report.json");
        let run = start_net(
            dir.path(),
            net,
            &config,
            &[
                "-n",
                "2000000",
                "-q",
                "--report",
                "json",
                "-o",
                report_path.to_str().unwrap(),
            ],
        );
        let out = finish(run, &[]);
        let report = report(&report_path);
        assert_eq!(process(&report, "b")["status"], "refused", "{report}");
        let ran = nets_that_stepped(&report);
        assert!(ran.is_empty(), "nets ran beside a refused process: {ran:#?}");
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    }
}

/// Slices started apart (a split's scripts): when one refuses its run, the other does not end
/// as a clean run that carried nothing: nothing crossed its link, and its exit says so.
#[test]
fn a_split_slice_whose_peer_refused_its_run_does_not_end_clean() {
    let dump = "Src = box smx_src_rand( out data )\nDmp = box smx_snk_dump( in data )\nconnect Src.Dmp\n";
    let config = |bad: &str| format!("[process.b]\n[net.Dmp]\nprocess = \"b\"\npath = \"{bad}\"\n");
    // The consumer's process refuses (its dump cannot open its file), or the producer's does.
    let other = "Src = box smx_src_rand( out data )\nDmp = box smx_snk_dump( in data )\n\
                 Snk = box smx_snk_null( in data )\nconnect Src.Snk | Src.Dmp\n";
    let other_config = |bad: &str| format!("[process.b]\n[net.Snk]\nprocess = \"b\"\n[net.Dmp]\npath = \"{bad}\"\n");
    for (net, refused, survivor) in [(dump, "b", "main"), (other, "main", "b")] {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("missing").join("x").display().to_string();
        let placed = if refused == "b" {
            config(&bad)
        } else {
            other_config(&bad)
        };
        let out_dir = common::deploy::split(dir.path(), net, &placed, &["-n", "3", "--link-timeout", "1s"]);
        let start = |name: &str| {
            std::process::Command::new(out_dir.join(format!("{name}.sh")))
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (first, second) = (start(refused), start(survivor));
        let first = first.wait_with_output().unwrap();
        let second = second.wait_with_output().unwrap();
        assert_eq!(first.status.code(), Some(1), "{refused}: {}", text(&first));
        assert_ne!(second.status.code(), Some(0), "{survivor}: {}", text(&second));
        let merged = common::deploy::merge_json(&out_dir, &["main", "b"]);
        let report: Value = serde_json::from_slice(&merged.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&merged)));
        assert_eq!(process(&report, refused)["status"], "refused", "{report}");
        assert_ne!(process(&report, survivor)["status"], "ok", "{report}");
        assert_ne!(merged.status.code(), Some(0), "{}", text(&merged));
    }
}

/// A channel wholly inside a process that died keeps what the net says of it (its name, kind
/// and length) in the report; only its counts are unknown.
#[test]
fn a_channel_inside_a_dead_process_keeps_what_the_net_says_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("report.json");
    let run = start_net(
        dir.path(),
        "Src = box smx_src_rand( out data )\nFwd = box smx_fwd( up in data, down out data )\n\
         Snk = box smx_snk_null( in data )\nconnect Src.Fwd.Snk\n",
        "[process.b]\n\n[net.Fwd]\nprocess = \"b\"\n\n[net.Snk]\nprocess = \"b\"\n",
        &["-n", "0", "-q", "--report", "json", "-o", report_path.to_str().unwrap()],
    );
    let slices = two_slices(&run);
    unsafe { libc::kill(slices[1] as i32, libc::SIGKILL) };
    let out = finish(run, &slices);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = report(&report_path);
    assert_eq!(process(&report, "b")["status"], "died", "{report}");
    let inside = &report["channels"][1];
    assert_eq!(
        (&inside["name"], &inside["smx_type"], &inside["len"], &inside["read"]),
        (
            &Value::from("data"),
            &Value::from("FIFO"),
            &Value::from(1),
            &Value::Null
        ),
        "{inside}"
    );
}

/// A slice whose lines stop reaching the supervisor (in the field its host, or the connection
/// its `launch` made, is gone while its process lives on; here its `launch` passes its lines
/// through a `cat` that is then frozen) is counted lost: the run ends, naming it, rather than
/// waiting on it for ever, and no process is left behind.
#[test]
fn a_slice_that_goes_silent_is_lost_and_ends_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let cat_pid = dir.path().join("cat.pid");
    let launch = executable(
        dir.path(),
        "through_cat.sh",
        &format!(
            "#!/bin/sh\n\"$@\" | sh -c 'echo $$ > {0}.tmp; mv {0}.tmp {0}; exec cat'\n",
            cat_pid.display()
        ),
    );
    let config = sink_through(launch.display(), 27400).replace("[net.Snk]", "[net.Src]\ncount = 0\n\n[net.Snk]");
    let (run, report_path, stats) = start_watched(dir.path(), &config);
    let mut b = None;
    wait_for("the slice of b", || {
        let launched: Vec<u32> = children_of(run.id()).into_iter().flat_map(children_of).collect();
        b = launched
            .into_iter()
            .find(|&pid| slice_process(pid).as_deref() == Some("b"));
        b.is_some() && cat_pid.exists()
    });
    let (b, cat): (u32, u32) = (
        b.unwrap(),
        std::fs::read_to_string(&cat_pid).unwrap().trim().parse().unwrap(),
    );
    // Frozen only once b's lines have come through it: b said it started, and its sink counts.
    wait_for_messages(&stats);
    unsafe { libc::kill(cat as i32, libc::SIGSTOP) };
    let out = finish(run, &[b, cat]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: process 'b'")
            && stderr.contains(
                "lost: it said nothing for 10 s (its host, or the connection its launch command made, is gone)"
            ),
        "{stderr}"
    );
    assert_eq!(process(&report(&report_path), "b")["status"], "lost");
    assert!(!alive(b) && !alive(cat), "what b's launch started outlived the run");
}

/// A slice on this machine that someone stopped (`SIGSTOP`, a debugger that attached) says
/// nothing either, for longer than a lost one may, but is left alone: it goes on when it is let
/// go, and the run with it.
#[test]
fn a_slice_stopped_on_this_machine_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.b]\n\n[net.Src]\ncount = 0\n\n[net.Snk]\nprocess = \"b\"\n";
    let (mut run, report_path) = start_reporting(dir.path(), config, "0");
    let mut slices = Vec::new();
    wait_for("two slices", || {
        slices = children_of(run.id());
        slices.len() == 2
    });
    let b = by_process(slices.clone())[1];
    unsafe { libc::kill(b as i32, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_secs(12));
    unsafe { libc::kill(b as i32, libc::SIGCONT) };
    std::thread::sleep(Duration::from_millis(500));
    if run.try_wait().unwrap().is_some() {
        panic!(
            "a stopped slice ended the run: {}",
            text(&run.wait_with_output().unwrap())
        );
    }
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    let out = finish(run, &slices);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    // Its stream ended by the stop, it ends `ok` or `stopped`, as any process on a stop.
    let status = process(&report(&report_path), "b")["status"].clone();
    assert!(status == "ok" || status == "stopped", "{status}");
}

/// A process whose `launch` ends before its slice starts fails the run before any net ran: the
/// others' held start is called off, so the report's wall time is that of nets that never ran,
/// 0, not the time the supervisor took to see the failure.
#[test]
fn a_run_whose_start_was_called_off_ran_its_nets_for_no_time() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.b]\nlaunch = \"false\"\nhost = \"127.0.0.1\"\n\n[net.Snk]\nprocess = \"b\"\n";
    let (run, report_path) = start_reporting(dir.path(), config, "100");
    let out = finish(run, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = report(&report_path);
    assert_eq!(process(&report, "b")["status"], "died", "{report}");
    assert_eq!(report["wall_time_s"], 0.0, "{report}");
    assert!(no_net_stepped(&report), "{report}");
}

/// A slice that does not end on a stop (here paused with `SIGSTOP`) is killed once its share
/// of the stop has run out, and its error line says that the kill was the supervisor's and why,
/// not only the signal, which would read as a crash.
#[test]
fn a_slice_killed_because_it_did_not_stop_is_told_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.b]\n\n[net.Src]\ncount = 0\n\n[net.Snk]\nprocess = \"b\"\n";
    let (run, report_path) = start_reporting(dir.path(), config, "0");
    let mut slices = Vec::new();
    wait_for("two slices that said they started", || {
        slices = children_of(run.id());
        slices.len() == 2 && slices.iter().all(|pid| common::deploy::said_it_started(*pid))
    });
    let b = by_process(slices.clone())[1];
    unsafe { libc::kill(b as i32, libc::SIGSTOP) };
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    let out = finish(run, &slices);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert_eq!(process(&report(&report_path), "b")["status"], "killed");
    assert!(
        error_lines(&out)
            .iter()
            .any(|l| l.starts_with(&format!("error: process 'b' (pid {b}) killed"))
                && l.contains("smxrun killed it: it had not ended when its share of the stop ran out")),
        "{}",
        text(&out)
    );
}

/// Until its nets run, a slice says it is there at every interval, also while it holds its
/// nets for the supervisor's go: a slice the supervisor hears nothing from is lost in every
/// phase of its run, not only once its nets run.
#[test]
fn a_slice_holding_its_nets_keeps_saying_it_is_there() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let net = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect (Src.Snk) | (Src.Snk)\n";
    let config = "[process.b]\n\n[net.\"Src#2\"]\nprocess = \"b\"\n\n[net.\"Snk#3\"]\nprocess = \"b\"\n";
    let out_dir = common::deploy::split(dir.path(), net, config, &["-n", "3"]);
    let mut job: Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("b.job")).unwrap()).unwrap();
    job["start_together"] = Value::Bool(true);
    let (mut slice, stdin) = slice_of_b_given(&job.to_string());
    let stdout = slice.stdout.take().unwrap();
    let (lines, said) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let next = || said.recv_timeout(Duration::from_secs(60)).ok();
    let mut heard = Vec::new();
    while !heard.iter().any(|l: &String| l == "smx-slice ready") {
        heard.push(next().unwrap_or_else(|| panic!("no ready from the slice: {heard:?}")));
    }
    for _ in 0..3 {
        let line = next().unwrap_or_else(|| panic!("silence while it holds its nets after {heard:?}"));
        assert_eq!(line, "smx-slice alive", "{heard:?}");
    }
    drop(stdin);
    let out = finish(slice, &[]);
    reader.join().unwrap();
    let rest: Vec<String> = said.try_iter().collect();
    assert!(
        !rest.iter().any(|l| l.starts_with("smx-slice progress")),
        "its nets never ran: {rest:?} {}",
        text(&out)
    );
}
