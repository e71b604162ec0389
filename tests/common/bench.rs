//! What the tests of `smxrun bench` share: a run with its result read back from `--json`.
#![allow(dead_code)] // each test file uses its own part of it

use std::process::{Command, Output};

use smx_bench::result::BenchResult;

/// Runs `smxrun bench ARGS --json FILE` without the variables `unset`; its output and its one
/// result. Fails the test when smxrun does not exit 0.
pub fn run(args: &[&str], unset: &[&str]) -> (Output, BenchResult) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let mut command = Command::new(env!("CARGO_BIN_EXE_smxrun"));
    command.arg("bench").args(args).arg("--json").arg(&json);
    for name in unset {
        command.env_remove(name);
    }
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let mut results: Vec<BenchResult> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (out, results.remove(0))
}
