//! What the tests of a net over several processes share: running `smxrun`, reading its
//! output and report, and watching the processes it starts.
#![allow(dead_code)] // each test file uses its own part of it

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Runs `smxrun NET --config CONFIG --report json ARGS` and returns the exit and the report.
pub fn run_json(dir: &Path, net: &str, config: &str, args: &[&str]) -> (Output, Value) {
    let net = write(dir, "net.smx", net);
    let config = write(dir, "deploy.toml", config);
    let report = dir.join("report.json");
    let out = smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["--report", "json", "-q", "-o"])
        .arg(&report)
        .args(args)
        .output()
        .unwrap();
    let value = std::fs::read_to_string(&report)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (out, value)
}

pub fn smxrun() -> Command {
    Command::new(env!("CARGO_BIN_EXE_smxrun"))
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `smxrun split NET --config CONFIG -o DIR/out ARGS`, which must succeed; the directory
/// written.
pub fn split(dir: &Path, net: &str, config: &str, args: &[&str]) -> PathBuf {
    let net = write(dir, "net.smx", net);
    let config = write(dir, "deploy.toml", config);
    let out_dir = dir.join("out");
    let out = smxrun()
        .arg("split")
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .arg("-o")
        .arg(&out_dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    out_dir
}

/// `smxrun check NET --config CONFIG`.
pub fn check(net: &Path, config: &Path) -> Output {
    smxrun()
        .arg("check")
        .arg(net)
        .arg("--config")
        .arg(config)
        .output()
        .unwrap()
}

/// Runs the scripts that `smxrun split` wrote into `out_dir` for `processes`, all at once, as
/// an orchestrator would, and waits until each has ended well.
pub fn run_slices(out_dir: &Path, processes: &[&str]) {
    let children: Vec<_> = processes
        .iter()
        .map(|p| Command::new(out_dir.join(format!("{p}.sh"))).spawn().unwrap())
        .collect();
    for (name, mut child) in processes.iter().zip(children) {
        assert!(child.wait().unwrap().success(), "process {name}");
    }
}

/// `smxrun report merge --format json` of the reports of `processes` in `dir` (`NAME.report.json`).
pub fn merge_json(dir: &Path, processes: &[&str]) -> Output {
    let mut command = smxrun();
    command.args(["report", "merge", "--format", "json"]);
    for name in processes {
        command.arg(dir.join(format!("{name}.report.json")));
    }
    command.output().unwrap()
}

pub fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn process<'r>(report: &'r Value, name: &str) -> &'r Value {
    report["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no process {name} in {report}"))
}

/// The pids whose parent is `parent`.
pub fn children_of(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let after = &stat[stat.rfind(')').unwrap_or(0) + 1..];
        let ppid = after.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

/// The process a slice runs (its `__slice --process NAME`), if `pid` is one.
pub fn slice_process(pid: u32) -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let words: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    let at = words.iter().position(|w| w == "--process")?;
    words.get(at + 1).cloned()
}

/// Slices' pids in the order of their processes' names, `main` first (pids alone give no
/// order: they wrap around).
pub fn by_process(mut slices: Vec<u32>) -> Vec<u32> {
    slices.sort_by_key(|&pid| {
        let name = slice_process(pid).unwrap_or_default();
        (name != "main", name)
    });
    slices
}

pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s[s.rfind(')').unwrap_or(0) + 1..].trim_start().starts_with('Z'))
        .unwrap_or(false)
}

/// Waits (without a deadline that decides the test: a hang shows as the guard's failure) for
/// `what` to become true.
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let guard = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < guard, "still waiting for {what} after a minute");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether the supervised slice `pid` has said it started: it told its supervisor so before it
/// started the thread that tells its progress (the slice's first words; a slice killed before
/// them is one that "never said it started").
pub fn said_it_started(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks
        .flatten()
        .any(|task| std::fs::read_to_string(task.path().join("comm")).is_ok_and(|name| name.trim() == "smx-progress"))
}

/// Waits until the live figures of a run that writes them to `stats` (`--stats-every`,
/// `--stats-file`) count messages at the whole net's sinks: every link on their way carries.
pub fn wait_for_messages(stats: &Path) {
    wait_for("messages at the whole net's sinks", || {
        let text = std::fs::read_to_string(stats).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|l| l["messages"].as_u64().is_some_and(|m| m > 0))
    });
}
