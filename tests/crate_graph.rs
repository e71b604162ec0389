//! The workspace's layering, checked from the manifests: the rules ARCHITECTURE.md states
//! about which crate may use which hold because these dependencies do not exist.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The names under `[dependencies]` of a crate (normal dependencies only).
fn dependencies(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let doc: toml::Table = text.parse().unwrap();
    doc.get("dependencies")
        .and_then(|d| d.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

fn crate_manifest(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates")
        .join(name)
        .join("Cargo.toml")
}

fn crate_deps(name: &str) -> BTreeSet<String> {
    dependencies(&crate_manifest(name))
}

fn read_toml(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse().unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn strings(value: Option<&toml::Value>) -> Vec<String> {
    value
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// The normal dependencies a crate compiles with `features` asked of it (plus its defaults
/// unless `defaults` is false): every dependency that is not optional, and the optional ones
/// those features turn on. Each comes with the features it is asked for and whether its own
/// defaults are on (a `workspace = true` dependency takes the workspace's `default-features`).
fn compiled_dependencies(manifest: &Path, features: &[String], defaults: bool) -> Vec<(String, Vec<String>, bool)> {
    let doc = read_toml(manifest);
    let workspace = read_toml(&Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    let table = |t: &toml::Table, key: &str| t.get(key).and_then(|v| v.as_table()).cloned().unwrap_or_default();
    let declared = table(&doc, "features");
    let mut on: BTreeSet<String> = features.iter().cloned().collect();
    if defaults {
        on.insert("default".into());
    }
    let mut pending: Vec<String> = on.iter().cloned().collect();
    while let Some(feature) = pending.pop() {
        for implied in strings(declared.get(&feature)) {
            if on.insert(implied.clone()) {
                pending.push(implied);
            }
        }
    }
    let shared = table(&table(&workspace, "workspace"), "dependencies");
    let mut found = Vec::new();
    for (name, spec) in table(&doc, "dependencies") {
        let optional = spec.get("optional").and_then(|v| v.as_bool()).unwrap_or(false);
        if optional && !on.contains(&format!("dep:{name}")) && !on.contains(&name) {
            continue;
        }
        let inherited = spec.get("workspace").and_then(|v| v.as_bool()).unwrap_or(false);
        let origin = if inherited { shared.get(&name) } else { Some(&spec) };
        let own_defaults = origin
            .and_then(|o| o.get("default-features"))
            .and_then(|v| v.as_bool())
            .unwrap_or(true);
        let mut asked = strings(spec.get("features"));
        // A feature of this crate that names `dep/feature` asks the dependency for it.
        asked.extend(
            on.iter()
                .filter_map(|f| f.strip_prefix(&format!("{name}/")).map(String::from)),
        );
        found.push((name, asked, own_defaults));
    }
    found
}

/// Every crate a workspace crate compiles, through the workspace's own crates (those under
/// `crates/`), with its default features: the names a box author's build would download.
fn compiled_closure(manifest: &Path) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut pending = vec![(manifest.to_path_buf(), Vec::new(), true)];
    while let Some((manifest, features, defaults)) = pending.pop() {
        for (name, asked, own_defaults) in compiled_dependencies(&manifest, &features, defaults) {
            let inner = crate_manifest(&name);
            if inner.exists() {
                pending.push((inner, asked, own_defaults));
            }
            seen.insert(name);
        }
    }
    seen
}

/// What only measuring needs: the experiments, their charts, their queue peer, the harness.
const MEASUREMENT: [&str; 4] = ["smx-bench", "plotters", "rtrb", "criterion"];

fn assert_compiles_no_measurement(what: &str, manifest: &Path) {
    let closure = compiled_closure(manifest);
    let found: Vec<&&str> = MEASUREMENT.iter().filter(|m| closure.contains(**m)).collect();
    assert!(
        found.is_empty(),
        "{what} must compile none of {found:?} (it compiles {closure:?})"
    );
}

fn assert_none_of(name: &str, forbidden: &[&str]) {
    let deps = crate_deps(name);
    let found: Vec<&&str> = forbidden.iter().filter(|f| deps.contains(**f)).collect();
    assert!(
        found.is_empty(),
        "{name} must not depend on {found:?} (it has {deps:?})"
    );
}

#[test]
fn the_box_contract_depends_on_nothing() {
    assert_eq!(crate_deps("smx-box"), BTreeSet::new(), "smx-box is std only");
}

#[test]
fn the_channels_know_no_box_api_and_no_runtime() {
    assert_none_of("smx-channel", &["smx-box", "smx-runtime", "smx-graph", "smx-timing"]);
}

#[test]
fn the_channels_stand_on_the_spsc_queue_which_knows_nothing_of_smx() {
    assert!(crate_deps("smx-channel").contains("smx-spsc"));
    assert_none_of(
        "smx-spsc",
        &[
            "smx-box",
            "smx-channel",
            "smx-runtime",
            "smx-graph",
            "smx-timing",
            "crossbeam-channel",
        ],
    );
}

#[test]
fn timing_reaches_into_neither_runtime_nor_configuration() {
    assert_none_of(
        "smx-timing",
        &[
            "smx-runtime",
            "smx-graph",
            "smx-lang",
            "smx-channel",
            "toml",
            "serde_json",
        ],
    );
}

#[test]
fn the_graph_does_not_know_the_syntax_tree() {
    assert_none_of("smx-graph", &["smx-lang", "smx-runtime", "smx-box", "pest"]);
}

#[test]
fn the_front_end_knows_no_runtime() {
    assert_none_of(
        "smx-lang",
        &[
            "smx-runtime",
            "smx-box",
            "smx-channel",
            "smx-timing",
            "smx-boxes",
            "smx-zmq",
        ],
    );
}

#[test]
fn the_runtime_and_its_report_know_no_particular_box_and_no_command_line() {
    assert_none_of(
        "smx-runtime",
        &[
            "smx-boxes",
            "smx-zmq",
            "smx-libzmq",
            "smx-lang",
            "zmq",
            "clap",
            "plotters",
            "signal-hook",
        ],
    );
}

#[test]
fn boxes_are_written_against_the_contract_alone() {
    for name in ["smx-boxes", "smx-zmq"] {
        assert_none_of(
            name,
            &[
                "smx-runtime",
                "smx-lang",
                "smx-graph",
                "smx-channel",
                "smx-timing",
                "clap",
            ],
        );
    }
}

#[test]
fn c_boxes_know_the_contract_and_the_graph_only() {
    // The graph names the C boxes a net uses and their ports (for `smxrun headers`); nothing
    // else of the runtime, the front end or the channels may reach a C box.
    assert!(crate_deps("smx-cbox").contains("smx-box"));
    assert_none_of(
        "smx-cbox",
        &[
            "smx-runtime",
            "smx-lang",
            "smx-channel",
            "smx-timing",
            "smx-spsc",
            "clap",
        ],
    );
}

#[test]
fn the_command_line_is_only_in_its_crate() {
    for name in [
        "smx-box",
        "smx-channel",
        "smx-timing",
        "smx-graph",
        "smx-lang",
        "smx-runtime",
        "smx-boxes",
        "smx-zmq",
        "smx-spsc",
        "smx-cbox",
        "smx-deploy",
        "smx-shm",
    ] {
        assert_none_of(name, &["clap", "plotters", "signal-hook", "env_logger", "smxrun"]);
    }
}

#[test]
fn the_deployment_knows_no_front_end_and_no_particular_box_but_its_links() {
    assert_none_of(
        "smx-deploy",
        &["smx-lang", "smx-boxes", "smx-cbox", "smx-bench", "clap"],
    );
}

#[test]
fn the_shared_memory_link_knows_the_contract_alone() {
    // The link boxes are boxes like any user's: written against `smx-box`, usable by any
    // runtime that hosts the contract, and by the deployment only through their names.
    let deps = crate_deps("smx-shm");
    assert!(deps.contains("smx-box"), "{deps:?}");
    let others: Vec<&String> = deps
        .iter()
        .filter(|d| d.starts_with("smx") && *d != "smx-box")
        .collect();
    assert!(others.is_empty(), "smx-shm depends on {others:?}");
    assert_none_of("smx-deploy", &["smx-shm"]);
}

#[test]
fn the_libzmq_build_knows_nothing_of_smx() {
    let deps = crate_deps("smx-libzmq");
    assert!(
        deps.iter().all(|d| !d.starts_with("smx-")),
        "smx-libzmq only builds libzmq and libsodium (it has {deps:?})"
    );
    assert!(crate_deps("smx-zmq").contains("smx-libzmq"));
}

#[test]
fn the_c_box_loader_knows_no_runtime_no_front_end_and_no_command_line() {
    assert_none_of(
        "smx-cbox",
        &[
            "smx-runtime",
            "smx-lang",
            "smx-channel",
            "smxrun",
            "smx-bench",
            "clap",
            "plotters",
        ],
    );
}

#[test]
fn the_command_line_library_compiles_no_measurement() {
    assert_compiles_no_measurement("the smxrun library", &crate_manifest("smxrun"));
}

#[test]
fn a_box_crate_compiles_no_measurement() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rust-boxes/Cargo.toml");
    assert!(
        compiled_closure(&example).contains("smxrun"),
        "the example box crate runs through smxrun"
    );
    assert_compiles_no_measurement("a box crate (examples/rust-boxes)", &example);
}

#[test]
fn the_benchmarks_stand_on_the_libraries_not_on_the_command_line() {
    assert_none_of("smx-bench", &["smxrun", "signal-hook", "env_logger"]);
    for name in [
        "smx-box",
        "smx-spsc",
        "smx-channel",
        "smx-timing",
        "smx-graph",
        "smx-lang",
        "smx-runtime",
        "smx-boxes",
        "smx-zmq",
        "smx-cbox",
        "smx-shm",
    ] {
        assert_none_of(name, &MEASUREMENT);
    }
}

/// The closure above must see what the manifests ask for, or the tests built on it prove
/// nothing: the binary's package compiles the benchmarks and their charts.
#[test]
fn the_closure_sees_the_binarys_measurement() {
    let root = compiled_closure(&Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    for name in ["smxrun", "smx-bench", "plotters", "rtrb", "smx-zmq", "zmq"] {
        assert!(
            root.contains(name),
            "the smxrun binary compiles {name} (it compiles {root:?})"
        );
    }
}
