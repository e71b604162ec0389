//! The workspace's layering, checked from the manifests: the rules ARCHITECTURE.md states
//! about which crate may use which hold because these dependencies do not exist.

use std::collections::BTreeSet;
use std::path::Path;

/// The names under `[dependencies]` of a crate (normal dependencies only).
fn dependencies(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let doc: toml::Table = text.parse().unwrap();
    doc.get("dependencies")
        .and_then(|d| d.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

fn crate_deps(name: &str) -> BTreeSet<String> {
    dependencies(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("crates")
            .join(name)
            .join("Cargo.toml"),
    )
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
fn the_command_line_is_only_in_the_root_package() {
    for name in [
        "smx-box",
        "smx-channel",
        "smx-timing",
        "smx-graph",
        "smx-lang",
        "smx-runtime",
        "smx-boxes",
        "smx-zmq",
    ] {
        assert_none_of(name, &["clap", "plotters", "signal-hook", "env_logger", "smxrun"]);
    }
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
