//! `smxrun bench load` measures every workload alone and beside busy loops, validly, and
//! leaves no busy loop behind. No figure is judged.

mod common;

/// Processes whose command line is smxrun's busy loop.
fn busy_loops() -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|cmdline| {
            cmdline
                .split(|b| *b == 0)
                .any(|arg| arg == smx_bench::load::BUSY_ARG.as_bytes())
        })
        .count()
}

#[test]
fn bench_load_measures_every_workload_and_stops_its_busy_loops() {
    let (out, result) = common::bench::run(&["load", "--count", "500", "--busy", "0,1", "--runs", "1"], &[]);
    let keys: Vec<String> = result.cases.iter().map(|c| c.key()).collect();
    // Three nets and three peers, alone and beside one loop.
    assert_eq!(result.cases.len(), 6 * 2, "{keys:?}");
    for case in &result.cases {
        assert_eq!(case.invalid_runs(), 0, "{}: {:?}", case.key(), case.runs);
        assert!(case.median("wall_s").is_some_and(|w| w > 0.0), "{}", case.key());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("slowdown (1)") && text.contains("fan_out"), "{text}");
    assert_eq!(busy_loops(), 0, "a busy loop outlived the experiment");
}
