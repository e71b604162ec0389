//! Every Rust example of the user documentation is compiled as a doc test: a Markdown file
//! with a Rust code block (or a block without a language, which rustdoc takes for Rust) must be
//! one that `crates/smxrun/src/lib.rs` includes under `cfg(doctest)`.

use std::path::{Path, PathBuf};

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// Whether `text` has a fenced block that rustdoc would compile.
fn has_rust_block(text: &str) -> bool {
    let mut inside = false;
    for line in text.lines() {
        if let Some(info) = line.strip_prefix("```") {
            if !inside && (info.trim().is_empty() || info.trim().starts_with("rust")) {
                return true;
            }
            inside = !inside;
        }
    }
    false
}

#[test]
fn every_rust_example_in_the_docs_is_a_doc_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("crates/smxrun/src/lib.rs")).unwrap();
    let mut files = vec![root.join("README.md")];
    markdown_files(&root.join("docs"), &mut files);
    let with_rust: Vec<String> = files
        .iter()
        .filter(|f| has_rust_block(&std::fs::read_to_string(f).unwrap()))
        .map(|f| f.strip_prefix(root).unwrap().display().to_string())
        .collect();
    assert!(with_rust.iter().any(|f| f == "README.md"), "{with_rust:?}");
    for file in &with_rust {
        let included = format!("include_str!(\"../../../{file}\")");
        assert!(
            lib.contains(&included),
            "{file} has a Rust (or unlabelled) code block but is not compiled as a doc test: add \
             `#[cfg(doctest)] #[doc = {included}] mod ...;` to crates/smxrun/src/lib.rs, or label \
             a block that is not Rust (```text, ```sh)"
        );
    }
}
