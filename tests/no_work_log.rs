//! The repository speaks of itself alone: no tracked file cites a work log that a reader of the
//! repository cannot see (one of its sessions, issues or items by number). Such a reference
//! stands for a reason; the reason itself belongs in its place.
//!
//! The match is tight on purpose: one of the words `session`, `issue` or `item` (also plural,
//! in any case), as a whole word, then a space, a hyphen or `#`, then a digit. A number after
//! such a word is found, while `zeromq/libzmq#4660`, an issues URL (`/issues/123`), "an issue
//! with the clock" or `Snk#3` are not. The samples below are put together at run time, so that
//! this file cites nothing either.

use std::path::{Path, PathBuf};

const WORDS: [&str; 3] = ["session", "issue", "item"];

/// The first work-log reference in `line`, if any.
fn work_log_reference(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    for word in WORDS {
        for (start, _) in lower.match_indices(word) {
            let before_ok = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
            let mut i = start + word.len();
            if bytes.get(i) == Some(&b's') {
                i += 1;
            }
            let separated = matches!(bytes.get(i), Some(b' ' | b'-' | b'#'));
            if !before_ok || !separated {
                continue;
            }
            i += 1;
            if bytes.get(i) == Some(&b'#') {
                i += 1;
            }
            let digits = bytes[i.min(bytes.len())..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits > 0 {
                // Lowercasing ASCII keeps every byte offset, so this slices the line as written.
                return Some(line[start..i + digits].to_string());
            }
        }
    }
    None
}

/// Every file git tracks, relative to the repository root.
fn tracked_files(root: &Path) -> Vec<PathBuf> {
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .expect("git runs (the test reads the tracked files through `git ls-files`)");
    assert!(
        out.status.success(),
        "git ls-files: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
        .collect()
}

#[test]
fn the_matcher_finds_work_log_references_and_nothing_else() {
    // The word and what follows it, apart: put together here, not written out in the file.
    let cite = |before: &str, word: &str, after: &str| format!("{before}{word}{after}");
    for hit in [
        cite("see ", "session", " 21"),
        cite("(", "issue", " 15)"),
        cite("", "Issue", " 17.3: a number"),
        cite("", "issue", " #37"),
        cite("after the ", "session", "-6 merges"),
        cite("", "items", " 8, 9"),
        cite("", "Sessions", " 3 and 4"),
    ] {
        assert!(work_log_reference(&hit).is_some(), "not found in {hit:?}");
    }
    for miss in [
        "zeromq/libzmq#4660",
        "https://github.com/rust-fuzz/cargo-fuzz/issues/123",
        "an issue with the clock",
        "the Snk#3 row",
        &cite("re", "issue", " 3 frames"),
        "itemise 4 things",
        "a bench Session struct",
        // A node id in parentheses, the way a report must not spell it.
        &format!("(#{})", 1),
    ] {
        assert_eq!(work_log_reference(miss), None, "false hit in {miss:?}");
    }
}

#[test]
fn no_tracked_file_cites_a_work_log() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let this_file = Path::new("tests/no_work_log.rs");
    let files = tracked_files(root);
    assert!(
        files.iter().any(|f| f == Path::new("README.md")),
        "git ls-files lists the repository"
    );
    let mut found = Vec::new();
    for file in files.iter().filter(|f| f.as_path() != this_file) {
        // Binary files (pictures) and files git lists but that are gone from the work tree hold
        // no text to read.
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if let Some(hit) = work_log_reference(line) {
                found.push(format!("{}:{}: {hit:?}", file.display(), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "work-log references (write the reason they stand for instead):\n{}",
        found.join("\n")
    );
}
