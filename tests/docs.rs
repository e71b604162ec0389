//! The documents a reader meets first stay usable: README.md fits a sitting and gives the two
//! commands a newcomer needs, exactly as CI runs them, and every relative link of the README,
//! the user guide, ARCHITECTURE.md and the other pages under docs/ leads to a file that exists
//! and, with a `#fragment`, to a heading in it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The most a README read in one sitting may weigh.
const README_MAX_BYTES: usize = 20 * 1024;

const RUN_COMMAND: &str = "cargo run --release -- nets/src_snk.smx";
const TEST_COMMANDS: [&str; 2] = [
    "cargo test --release --all-targets",
    "cargo test --release --doc --workspace",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_readme_fits_a_sitting_and_gives_the_two_commands() {
    let readme = read(&root().join("README.md"));
    assert!(
        readme.len() <= README_MAX_BYTES,
        "README.md is {} bytes, more than {README_MAX_BYTES}: move reference material to docs/guide/",
        readme.len()
    );
    for command in std::iter::once(RUN_COMMAND).chain(TEST_COMMANDS) {
        assert!(readme.contains(command), "README.md does not give `{command}`");
    }
    // The test commands the README gives are the ones CI runs.
    let ci: Vec<String> = read(&root().join(".ci/run"))
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("cargo "))
        .map(String::from)
        .collect();
    assert_eq!(ci, TEST_COMMANDS, ".ci/run and README.md disagree on the test commands");
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of a Markdown text outside fenced code blocks.
fn prose_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fenced = false;
    text.lines().enumerate().filter(move |(_, line)| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose_lines(text)
        .filter_map(|(_, line)| {
            let hashes = line.chars().take_while(|&c| c == '#').count();
            (1..=6)
                .contains(&hashes)
                .then(|| line[hashes..].strip_prefix(' '))
                .flatten()
                .map(anchor)
        })
        .collect()
}

/// The targets of inline links and images, `[text](target)`, outside code, with their lines.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    for (n, line) in prose_lines(text) {
        // Code spans may hold brackets that are no link.
        let without_code: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = without_code.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push((n + 1, after[..end].trim().to_string()));
            rest = &after[end..];
        }
    }
    targets
}

/// The Markdown files whose links are checked.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    for dir in ["docs", "docs/guide"] {
        let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        pages.sort();
        docs.extend(pages);
    }
    docs
}

/// What is wrong with one link target of `doc`, if anything.
fn broken(doc: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, fragment) = match target.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        doc.to_path_buf()
    } else {
        doc.parent().unwrap().join(path)
    };
    if !file.exists() {
        return Some(format!("{} does not exist", file.display()));
    }
    let fragment = fragment?;
    if file.extension().is_none_or(|x| x != "md") {
        return Some(format!(
            "a #fragment into {}, which is no Markdown page",
            file.display()
        ));
    }
    (!anchors(&read(&file)).contains(fragment)).then(|| format!("no heading #{fragment} in {}", file.display()))
}

#[test]
fn every_relative_link_of_the_documents_resolves() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        for (line, target) in link_targets(&read(&doc)) {
            checked += 1;
            if let Some(problem) = broken(&doc, &target) {
                problems.push(format!("{}:{line}: ({target}): {problem}", doc.display()));
            }
        }
    }
    assert!(checked > 50, "only {checked} links found: the link scanner is broken");
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

#[test]
fn the_link_checker_catches_a_broken_link() {
    let readme = root().join("README.md");
    assert!(broken(&readme, "docs/guide/README.md").is_none());
    assert!(broken(&readme, "docs/guide/no-such-page.md").is_some());
    assert!(broken(&readme, "#the-smallest-box-in-rust").is_none());
    assert!(broken(&readme, "#no-such-heading").is_some());
    assert!(broken(&readme, "https://example.org/missing").is_none());
    assert_eq!(
        anchor("Security: what a bound port exposes"),
        "security-what-a-bound-port-exposes"
    );
    assert_eq!(anchor("Live figures: `--stats-every`"), "live-figures---stats-every");
}
