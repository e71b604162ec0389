//! No crate of the workspace has an import circle between its modules.
//!
//! A circle (thread uses halt, halt uses net, net uses thread) means no module of it can be
//! read, changed or tested without the others: starting and ending a run had no single owner
//! while seven runtime modules knew each other. The check reads each crate's module files as
//! text: a module uses another when it names it through `crate::`, `super::` or `self::` (or, in
//! a module with children, a child by its bare name). A module using its own ancestors is the
//! normal shape of a module tree and not counted; test modules are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// Every module of the crate whose sources are in `src`, by module path, with its file.
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.insert(module_of(src, &path), path);
            }
        }
    }
    found
}

fn module_of(src: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts == ["lib"] || parts == ["main"] || parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The file's code without comments and without its inline test module.
fn code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = String::new();
    for (i, line) in lines.iter().enumerate() {
        let next = lines.get(i + 1).map(|l| l.trim_start()).unwrap_or("");
        if line.trim() == "#[cfg(test)]" && next.starts_with("mod ") && next.ends_with('{') {
            break;
        }
        kept.push_str(line.split("//").next().unwrap_or(""));
        kept.push('\n');
    }
    kept
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths a `use` tree or an expression names after `head::` at `at`: `a::b`, `a::{b, c::d}`.
fn paths_after(text: &str, at: usize) -> Vec<Vec<String>> {
    let rest = &text[at..];
    let name_len = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
    if name_len > 0 {
        let name = rest[..name_len].to_string();
        let after = &rest[name_len..];
        if after.starts_with("::") {
            let deeper = paths_after(text, at + name_len + 2);
            return deeper.into_iter().map(|p| [vec![name.clone()], p].concat()).collect();
        }
        return vec![vec![name]];
    }
    if !rest.starts_with('{') {
        return vec![vec![]];
    }
    let mut paths = Vec::new();
    let (mut depth, mut item_start) = (0, at + 1);
    for (offset, c) in rest.char_indices() {
        match c {
            '{' => depth += 1,
            '}' | ',' if depth == 1 => {
                let item = &text[item_start..at + offset];
                if !item.trim().is_empty() {
                    let blank = item.len() - item.trim_start().len();
                    paths.extend(paths_after(text, item_start + blank));
                }
                item_start = at + offset + 1;
                if c == '}' {
                    break;
                }
            }
            '}' => depth -= 1,
            _ => {}
        }
    }
    paths
}

/// Per module, the other modules of the crate it uses (ancestors left out).
fn uses(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let all = modules(src);
    let mut graph = BTreeMap::new();
    for (module, file) in &all {
        let text = code(&std::fs::read_to_string(file).unwrap());
        let children: BTreeSet<&str> = all
            .keys()
            .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
            .map(|m| m.last().unwrap().as_str())
            .collect();
        let mut used = BTreeSet::new();
        let mut add = |full: Module| {
            let target = (0..=full.len())
                .rev()
                .map(|k| full[..k].to_vec())
                .find(|m| all.contains_key(m));
            if let Some(target) = target
                && !module.starts_with(&target)
            {
                used.insert(target);
            }
        };
        for (at, _) in text.match_indices("::") {
            let before = &text[..at];
            let word_start = before.rfind(|c: char| !is_ident(c)).map_or(0, |i| i + 1);
            let word = &before[word_start..];
            let preceded_by_path = before[..word_start].ends_with("::") || before[..word_start].ends_with('.');
            let base: Option<Module> = match word {
                "crate" => Some(vec![]),
                "super" => Some(module[..module.len().saturating_sub(1)].to_vec()),
                "self" => Some(module.clone()),
                child if !preceded_by_path && children.contains(child) => {
                    add([module.clone(), vec![child.to_string()]].concat());
                    None
                }
                _ => None,
            };
            if let Some(base) = base.filter(|_| !preceded_by_path) {
                for path in paths_after(&text, at + 2) {
                    add([base.clone(), path].concat());
                }
            }
        }
        graph.insert(module.clone(), used);
    }
    graph
}

/// One circle of `graph`, if it has any.
fn a_circle(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        node: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        done: &mut BTreeSet<Module>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(start) = stack.iter().position(|m| m == node) {
            return Some(stack[start..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.clone());
        for next in &graph[node] {
            if let Some(circle) = visit(next, graph, done, stack) {
                return Some(circle);
            }
        }
        stack.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|m| visit(m, graph, &mut done, &mut Vec::new()))
}

fn names(circle: &[Module]) -> String {
    let name = |m: &Module| if m.is_empty() { "lib".to_string() } else { m.join("::") };
    circle.iter().map(name).collect::<Vec<_>>().join(" -> ")
}

/// Crates with a circle not broken yet: none. A crate listed here must have its circle; the
/// test fails once it is gone, so that the entry goes with it.
const KNOWN_CIRCLES: &[&str] = &[];

#[test]
fn no_crate_has_a_module_import_circle() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut checked = 0;
    for entry in std::fs::read_dir(&crates).unwrap().map(Result::unwrap) {
        let src = entry.path().join("src");
        if src.is_dir() {
            checked += 1;
            let circle = a_circle(&uses(&src));
            let name = entry.file_name().to_string_lossy().into_owned();
            if KNOWN_CIRCLES.contains(&name.as_str()) {
                assert!(
                    circle.is_some(),
                    "{name} has no module circle any more: remove it from KNOWN_CIRCLES"
                );
            } else if let Some(circle) = circle {
                panic!("{}: modules in a circle: {}", src.display(), names(&circle));
            }
        }
    }
    assert!(checked >= 10, "only {checked} crates found under {}", crates.display());
}

#[test]
fn the_check_finds_a_circle_and_allows_a_module_tree() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("run")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod halt;\nmod run;\npub use run::start;\n").unwrap();
    std::fs::write(
        src.join("run/mod.rs"),
        "mod state;\nuse crate::halt::join;\npub fn start() {}\n",
    )
    .unwrap();
    std::fs::write(
        src.join("run/state.rs"),
        "use super::start;\nuse crate::{halt, run::start as s};\n",
    )
    .unwrap();
    std::fs::write(
        src.join("halt.rs"),
        "// crate::run is named in a comment only\npub fn join() {}\n",
    )
    .unwrap();
    let graph = uses(src);
    assert_eq!(a_circle(&graph), None, "{graph:?}");
    assert!(graph[&vec!["run".to_string(), "state".to_string()]].contains(&vec!["halt".to_string()]));

    std::fs::write(
        src.join("halt.rs"),
        "use crate::{run::{self, state}};\npub fn join() {}\n",
    )
    .unwrap();
    let circle = a_circle(&uses(src)).expect("halt and run use each other");
    assert!(names(&circle).contains("halt"), "{}", names(&circle));
}
