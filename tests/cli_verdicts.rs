//! `check`, `graph` and `run` give one verdict on a net, and say where the problem is.

use std::process::Command;

fn smxrun(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_smxrun")).args(args).output().unwrap()
}

#[test]
fn a_misspelled_implementation_is_rejected_by_check_graph_and_run_at_its_declaration() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("typo.smx");
    std::fs::write(
        &net,
        "Src = extern box smx_src_rnd( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n",
    )
    .unwrap();
    let net = net.to_str().unwrap();
    for args in [vec!["check", net], vec!["graph", net], vec!["run", net, "-q"]] {
        let out = smxrun(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        let place = format!("{net}:1:18: error: box 'Src' uses unknown implementation 'smx_src_rnd'");
        assert_eq!(stderr.matches(&place).count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("                   ^^^^^^^^^^^"),
            "a caret under the name: {stderr}"
        );
        assert!(!String::from_utf8_lossy(&out.stdout).contains("accepted"), "{args:?}");
    }
    let check = smxrun(&["check", net]);
    assert!(String::from_utf8_lossy(&check.stderr).contains("rejected (1 error, 0 warnings)"));
}
