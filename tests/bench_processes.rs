//! `smxrun bench processes` measures every case validly: the net in one process and over two
//! (a shared-memory link, nothing lost), and the link's latency beside a pipe; iceoryx2, when
//! not given, is named as not measured. No figure is judged.

use std::process::Command;

use smx_bench::result::BenchResult;

#[test]
fn bench_processes_measures_every_case_and_names_a_missing_peer() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("processes.json");
    let out = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args([
            "bench",
            "processes",
            "--quick",
            "--count",
            "3000",
            "--size",
            "8,8192",
            "--runs",
            "1",
        ])
        .arg("--json")
        .arg(&json)
        .env_remove("SMX_ICEORYX2_BENCH")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results: Vec<BenchResult> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let result = &results[0];
    let keys: Vec<String> = result.cases.iter().map(|c| c.key()).collect();
    assert_eq!(result.cases.len(), 4 + 2 * 3, "{keys:?}");
    for case in &result.cases {
        assert_eq!(case.invalid_runs(), 0, "{}: {:?}", case.key(), case.runs);
        if case.series == "rate" {
            assert_eq!(case.median("lost"), Some(0.0), "{}", case.key());
            assert!(case.median("msg_rate_hz").is_some_and(|r| r > 0.0), "{}", case.key());
        } else {
            assert!(case.median("latency_p50_ns").is_some(), "{}", case.key());
        }
    }
    assert!(
        result.notes.iter().any(|n| n.contains("iceoryx2 not measured")),
        "{:?}",
        result.notes
    );
}
