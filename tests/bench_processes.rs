//! `smxrun bench processes` measures every case validly: the net in one process and over two
//! (a shared-memory link, nothing lost), and the link's latency beside a pipe; iceoryx2, when
//! not given, is named as not measured. No figure is judged.

mod common;

#[test]
fn bench_processes_measures_every_case_and_names_a_missing_peer() {
    let (_, result) = common::bench::run(
        &[
            "processes",
            "--quick",
            "--count",
            "3000",
            "--size",
            "8,8192",
            "--runs",
            "1",
        ],
        &["SMX_ICEORYX2_BENCH"],
    );
    let keys: Vec<String> = result.cases.iter().map(|c| c.key()).collect();
    assert_eq!(result.cases.len(), 4 + 2 * 4, "{keys:?}");
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
