//! `smxrun bench hosts` makes its two hosts and measures every case validly: the link between
//! the hosts with CURVE and nothing lost, and both raw peers. Root only (network namespaces);
//! elsewhere the experiment must say that it measured nothing, and why. No figure is judged.

use std::process::Command;

mod common;

#[test]
fn bench_hosts_measures_the_link_and_both_raw_peers_or_says_why_not() {
    let (_, result) = common::bench::run(&["hosts", "--quick", "--count", "3000", "--runs", "1"], &[]);
    if unsafe { libc::geteuid() } != 0 {
        assert!(
            result
                .notes
                .iter()
                .any(|n| n.contains("nothing measured") && n.contains("root")),
            "{:?}",
            result.notes
        );
        println!("skipped the measurement: network namespaces need root");
        return;
    }
    let series: Vec<(String, Option<&str>)> = result
        .cases
        .iter()
        .map(|c| (c.series.clone(), c.param("curve")))
        .collect();
    assert_eq!(
        series,
        [
            ("smx-link".to_string(), Some("on")),
            ("zmq-raw".to_string(), Some("off")),
            ("zmq-raw".to_string(), Some("on")),
        ]
    );
    for case in &result.cases {
        assert_eq!(case.invalid_runs(), 0, "{}: {:?}", case.key(), case.runs);
        assert_eq!(case.median("lost"), Some(0.0), "{}", case.key());
        assert!(case.median("msg_rate_hz").is_some_and(|r| r > 0.0), "{}", case.key());
    }
    // The namespaces are named after the experiment's process, which has ended: none is left.
    let namespaces = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&namespaces.stdout).contains("smxbench-"),
        "the namespaces are removed"
    );
}
