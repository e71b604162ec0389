//! `smxrun check --lang-only` judges the language alone, as the original compiler does: run
//! through the command line, every program of that compiler's own suite
//! (`../shared/conformance/cases`) gets the suite's verdict (exit 0 or 1) and an error on each
//! line the suite expects one, although none of their box implementations exists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn cases_dir() -> Option<PathBuf> {
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/cases");
    if local.is_dir() {
        return Some(local);
    }
    let env = PathBuf::from(std::env::var_os("SMX_SHARED")?).join("conformance/cases");
    env.is_dir().then_some(env)
}

/// The lines of `FILE: LINE: error: ...` in a `.sol` file (0: an error with no place).
fn expected_error_lines(sol: &str) -> BTreeSet<usize> {
    sol.lines()
        .filter(|l| l.contains(": error:"))
        .filter_map(|l| l.split(": ").nth(1)?.trim().parse().ok())
        .collect()
}

/// The lines of `FILE:LINE:COL: error: ...` on smxrun's stderr (0: `FILE: error: ...`).
fn error_lines(stderr: &str, file: &str) -> BTreeSet<usize> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(file))
        .filter_map(|rest| {
            if rest.starts_with(": error:") {
                return Some(0);
            }
            let (line, after) = rest.strip_prefix(':')?.split_once(':')?;
            let (_col, after) = after.split_once(':')?;
            after.starts_with(" error:").then(|| line.parse().ok())?
        })
        .collect()
}

#[test]
fn the_original_suite_through_the_command_line() {
    let Some(dir) = cases_dir() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "conformance cases not found (../shared or SMX_SHARED)"
        );
        println!("conformance cases not found (../shared or SMX_SHARED): skipped");
        return;
    };
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "smx"))
        .collect();
    cases.sort();
    assert!(cases.len() > 100, "{} cases", cases.len());
    let mut failures = Vec::new();
    let mut rejected = 0;
    for case in &cases {
        let sol = std::fs::read_to_string(case.with_extension("sol")).unwrap_or_default();
        let want = expected_error_lines(&sol);
        let file = case.to_str().unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_smxrun"))
            .args(["check", "--lang-only", file])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let got = error_lines(&stderr, file);
        let verdict = if want.is_empty() { Some(0) } else { Some(1) };
        rejected += usize::from(!want.is_empty());
        if out.status.code() != verdict {
            failures.push(format!(
                "{file}: exit {:?}, the suite says {verdict:?}\n{stderr}",
                out.status.code()
            ));
        } else if !want.is_subset(&got) {
            failures.push(format!(
                "{file}: errors on lines {got:?}, the suite expects {want:?}\n{stderr}"
            ));
        }
    }
    assert!(
        rejected >= 20,
        "the suite's rejected programs are checked too ({rejected})"
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn plain_check_still_wants_the_implementations_and_graph_draws_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("design.smx");
    std::fs::write(
        &net,
        "A = box my_source( out a )\nB = box my_sink( in a )\nconnect A.B\n",
    )
    .unwrap();
    let net = net.to_str().unwrap();
    let run = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_smxrun")).args(args).output().unwrap();

    let check = run(&["check", net]);
    assert_eq!(check.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(stderr.contains("unknown implementation 'my_source'"), "{stderr}");

    let lang = run(&["check", "--lang-only", net]);
    assert_eq!(lang.status.code(), Some(0), "{}", String::from_utf8_lossy(&lang.stderr));
    let verdict = String::from_utf8_lossy(&lang.stdout);
    assert!(
        verdict.contains("accepted (language only): 2 boxes, 0 routing nodes, 1 channel (0 errors, 1 warning)"),
        "counts in words that agree with them: {verdict}"
    );

    let graph = run(&["graph", "--format", "dot", net]);
    assert_eq!(graph.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&graph.stdout).contains("my_source"));
    let stderr = String::from_utf8_lossy(&graph.stderr);
    assert_eq!(stderr.lines().count(), 1, "one warning for both: {stderr}");
    assert!(stderr.contains("warning: box implementations 'my_source', 'my_sink' are not known"));

    // A misspelt built-in name stays an error for graph, with the closest name.
    std::fs::write(
        net,
        "A = box smx_src_rnd( out data )\nB = box smx_snk_null( in data )\nconnect A.B\n",
    )
    .unwrap();
    let graph = run(&["graph", net]);
    assert_eq!(graph.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&graph.stderr).contains("did you mean 'smx_src_rand'"));
}
