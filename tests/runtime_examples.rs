//! Runs `examples/user_box.rs` (included as a module, so CI runs the very code users read).

#[path = "../examples/user_box.rs"]
mod user_box;

use smx_runtime::report::Status;

fn checksum(report: &smx_runtime::report::Report) -> String {
    report.net("Sum").unwrap().stats["checksum"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn the_user_box_example_runs_and_its_box_reports() {
    let report = user_box::run_example(2_000, 7).unwrap();
    assert_eq!(report.status, Status::Ok);
    let sum = report.net("Sum").unwrap();
    assert_eq!(sum.implementation, "checksum");
    assert_eq!(sum.stats["messages"], 2_000);
    assert_eq!(report.net("Snk").unwrap().stats["received"], 2_000);
    // Same seed, same bytes, same checksum; another seed, another checksum.
    assert_eq!(checksum(&report), checksum(&user_box::run_example(2_000, 7).unwrap()));
    assert_ne!(checksum(&report), checksum(&user_box::run_example(2_000, 8).unwrap()));
}
