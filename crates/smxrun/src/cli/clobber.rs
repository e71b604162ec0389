//! Refusing a destination that is also one of the command's inputs, or another of its results.
//!
//! `smxrun net.smx -o net.smx` would replace the user's net with the report, and
//! `-o r.json --trace r.json` would leave one of the two results; both are typing slips
//! whose cost (a lost file) is out of all proportion, so they are refused before anything runs.
//! Files are compared by device and inode, so another spelling of a path (`./net.smx`, a
//! symbolic link, a hard link) is caught as well. Only regular files count: two results may
//! both go to `/dev/null` or to standard output.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::exit::CliError;

/// What a file is, for comparing: an existing regular file by (device, inode), a path that
/// does not exist yet by its absolute form. Anything else (a device, a FIFO, `-`) is `None`.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    File(u64, u64),
    New(PathBuf),
}

fn identity(path: &Path) -> Option<Identity> {
    if path.as_os_str() == "-" {
        return None;
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Some(Identity::File(m.dev(), m.ino())),
        Ok(_) => None,
        Err(_) => std::path::absolute(path).ok().map(Identity::New),
    }
}

/// A command's inputs, as [`refuse_clobbering`] takes them: the net, the `--config` file, and
/// every library of boxes (`--boxes` and the configuration's `boxes`).
pub fn inputs<'a>(
    net: &'a Path,
    config: Option<&'a Path>,
    libraries: impl Iterator<Item = &'a PathBuf>,
) -> Vec<(&'static str, &'a Path)> {
    let mut inputs = vec![("net", net)];
    inputs.extend(config.map(|c| ("--config file", c)));
    inputs.extend(libraries.map(|b| ("library", b.as_path())));
    inputs
}

/// The files the boxes of a run write, by the keys whose spec marks them
/// ([`smx_box::ConfigKey::file_written`]), each named as `--set` names it: `Snk.path`, or
/// `Snk#3.path` where instances share a name. They are results of the run as `-o` is, so they
/// go through [`refuse_clobbering`] with the others.
pub fn written_by_boxes(
    graph: &smx_graph::NetGraph,
    registry: &smx_runtime::Registry,
    settings: &[smx_runtime::config::NetSettings],
) -> Vec<(String, PathBuf)> {
    let shared = |label: &str| graph.nodes.iter().filter(|n| n.label == label).count() > 1;
    // The settings are the graph's nodes', in its order.
    graph
        .nodes
        .iter()
        .zip(settings)
        .filter_map(|(node, s)| Some((node, &s.box_config, registry.get(&node.func)?)))
        .flat_map(|(node, config, spec)| {
            spec.config
                .iter()
                .filter(|key| key.file_written)
                .filter_map(move |key| match config.get(key.name) {
                    Some(smx_box::ConfigValue::Str(path)) if !path.is_empty() => {
                        let node = if shared(&node.label) {
                            format!("{}#{}", node.label, node.id)
                        } else {
                            node.label.clone()
                        };
                        Some((format!("{node}.{}", key.name), PathBuf::from(path)))
                    }
                    _ => None,
                })
        })
        .collect()
}

/// Fails, naming both places, when a destination in `outputs` is a file in `inputs` or the
/// same file as an earlier destination. Each entry is (what the user called it, the path).
pub fn refuse_clobbering(outputs: &[(&str, &Path)], inputs: &[(&str, &Path)]) -> Result<(), CliError> {
    for (i, (what, path)) in outputs.iter().enumerate() {
        let Some(id) = identity(path) else { continue };
        // An input that does not exist is the loader's error to report, not a clash.
        let input = inputs.iter().find(|(_, input)| match identity(input) {
            Some(file @ Identity::File(..)) => file == id,
            _ => false,
        });
        if let Some((source, input)) = input {
            return Err(CliError::rejected(format!(
                "{what} '{}' is the {source} '{}': writing there would replace it; choose another path",
                path.display(),
                input.display()
            )));
        }
        if let Some((other, _)) = outputs[..i].iter().find(|(_, p)| identity(p).as_ref() == Some(&id)) {
            return Err(CliError::rejected(format!(
                "{what} '{}' is also the {other}: one result would replace the other; choose two paths",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Refuses a report's destination (`-o` of a run or a merge) that is a regular file holding
/// anything but a report smxrun writes. Reports lie beside the net, its configuration, a
/// split's jobs (with the links' keys), start scripts and units: one slip of `-o` would replace
/// a file the user cannot make again from a report, while a report written over is what the
/// command writes again. An empty file (one `mktemp` made) is taken.
pub fn refuse_replacing_other_than_report(path: &Path) -> Result<(), CliError> {
    refuse_replacing_other_than(
        "-o",
        path,
        "a report",
        "a job, a start script, a net?",
        Look::Whole(is_report),
    )
}

/// Refuses `graph -o` onto a regular file holding anything but a graph smxrun writes, for the
/// reason a report's destination is guarded: the graph is made again from the net in a moment,
/// the file it would replace (a net, a configuration, a box's source) perhaps never.
pub fn refuse_replacing_other_than_graph(path: &Path) -> Result<(), CliError> {
    let examples = "a net, a configuration, a source file?";
    refuse_replacing_other_than("-o", path, "a graph", examples, Look::Whole(is_graph))
}

/// Refuses `--trace` onto a regular file that does not open as a trace a run writes.
pub fn refuse_replacing_other_than_trace(path: &Path) -> Result<(), CliError> {
    let examples = "a report, a source file, notes?";
    refuse_replacing_other_than("--trace", path, "a trace", examples, Look::Opening(is_trace_opening))
}

/// Refuses `--stats-file` onto a regular file holding anything but the live figures of a run.
pub fn refuse_replacing_other_than_stats(path: &Path) -> Result<(), CliError> {
    let examples = "a report, a source file, notes?";
    refuse_replacing_other_than(
        "--stats-file",
        path,
        "live figures",
        examples,
        Look::Whole(is_stats_lines),
    )
}

/// Refuses `trace-view -o` onto a regular file holding anything but an SVG picture.
pub fn refuse_replacing_other_than_picture(path: &Path) -> Result<(), CliError> {
    let examples = "a trace, a report, a net?";
    refuse_replacing_other_than("-o", path, "an SVG picture", examples, Look::Whole(is_svg))
}

/// How much of a file tells whether a command wrote it: the whole text (up to
/// [`REPORT_MAX_BYTES`]), or its opening alone, for a kind that may be larger than that.
enum Look {
    Whole(fn(&str) -> bool),
    Opening(fn(&str) -> bool),
}

/// Bytes of a file's opening that [`Look::Opening`] reads.
const OPENING_BYTES: u64 = 64;

/// Fails where `path`, given with `option`, is a non-empty regular file that `look` does not
/// recognise as one the command writes (`what`); `examples` names what it may hold instead.
fn refuse_replacing_other_than(
    option: &str,
    path: &Path,
    what: &str,
    examples: &str,
    look: Look,
) -> Result<(), CliError> {
    use std::io::Read;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if !meta.is_file() || meta.len() == 0 {
        return Ok(());
    }
    let (is_ours, limit) = match look {
        // Larger than anything the commands write: something else, not read to find out.
        Look::Whole(_) if meta.len() > REPORT_MAX_BYTES => return refused(option, path, what, examples),
        Look::Whole(is_ours) => (is_ours, REPORT_MAX_BYTES),
        Look::Opening(is_ours) => (is_ours, OPENING_BYTES),
    };
    let mut bytes = Vec::new();
    let text = std::fs::File::open(path)
        .and_then(|f| f.take(limit).read_to_end(&mut bytes))
        .map(|_| String::from_utf8_lossy(&bytes));
    match text {
        Ok(text) if text.trim().is_empty() || is_ours(&text) => Ok(()),
        _ => refused(option, path, what, examples),
    }
}

fn refused(option: &str, path: &Path, what: &str, examples: &str) -> Result<(), CliError> {
    Err(CliError::rejected(format!(
        "{option} '{}' holds something other than {what} ({examples}): writing there would replace it; \
         choose another path",
        path.display()
    )))
}

/// Larger than any report a run writes: a larger file is something else.
const REPORT_MAX_BYTES: u64 = 256 << 20;

/// Whether `text` is a report smxrun writes: a text report opens with its `Asked:` line, a JSON
/// report is an object with the layout's `format_version` and its `nets`, the original
/// runtime's log lines (`--report smx`) end with `end main thread`.
pub fn is_report(text: &str) -> bool {
    if text.starts_with("Asked: ") {
        return ends_as_a_text_report(text);
    }
    let last = text.trim_end().lines().last().unwrap_or("");
    if last.starts_with('[') && last.contains("] [NOTICE] [main] end main thread (wall time: ") {
        return true;
    }
    serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|report| report["format_version"].is_u64() && report["nets"].is_array())
}

/// Whether a text report ends as smxrun ends one: its `Total:` line, then only `Attention:`
/// lines. Notes a user appended to a saved report make it a file of theirs, which a run must
/// not replace.
fn ends_as_a_text_report(text: &str) -> bool {
    let mut tail = text.lines().rev().filter(|l| !l.trim().is_empty());
    tail.find(|l| !l.starts_with("Attention: "))
        .is_some_and(|l| l.starts_with("Total: wall time "))
}

/// Whether the first bytes of a file are those of a Chrome trace a run writes (`--trace`); a
/// trace may be larger than anything else a command reads, so only its opening is looked at.
pub fn is_trace_opening(opening: &str) -> bool {
    opening.starts_with("{\"traceEvents\":[")
}

/// Whether `text` holds the live figures a run writes (`--stats-file`): lines that are each
/// one JSON object with the run's `messages` and `nets`, the last perhaps cut short by a run
/// that was killed.
pub fn is_stats_lines(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let whole = &lines[..lines.len().saturating_sub(1)];
    let stats = |line: &&str| {
        serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v["messages"].is_u64() && v["nets"].is_array())
    };
    let last = lines.last().copied().unwrap_or_default();
    !lines.is_empty() && whole.iter().all(stats) && (stats(&last) || last.starts_with("{\"channels\":"))
}

/// Whether `text` is a graph `smxrun graph` writes: GML (its `Creator` line or a bare `graph [`),
/// GraphML, dot (`digraph`), or the JSON object of `nodes` and `edges`.
pub fn is_graph(text: &str) -> bool {
    let head = text.trim_start();
    let first_word = head.split(|c: char| c.is_whitespace() || c == '[' || c == '{').next();
    if head.starts_with("Creator \"") || matches!(first_word, Some("graph" | "digraph")) {
        return true;
    }
    if head.starts_with("<?xml") || head.starts_with("<graphml") {
        return head.contains("<graphml");
    }
    serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|graph| graph["nodes"].is_array() && graph["edges"].is_array())
}

/// Whether `text` is an SVG picture.
pub fn is_svg(text: &str) -> bool {
    let head = text.trim_start();
    (head.starts_with("<svg") || head.starts_with("<?xml")) && head.contains("<svg")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_report_smxrun_writes_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        for (name, text) in [
            (
                "r.txt",
                &b"Asked: net.smx, 2 boxes\n\nTotal: wall time 0.1 s, 1 messages, status ok\n"[..],
            ),
            ("r.json", br#"{"format_version": 3, "nets": []}"#),
            (
                "r.log",
                b"[2026-12-07 08:57:14.835231] [NOTICE] [main] end main thread (wall time: 0.016161)\n",
            ),
            ("empty", b""),
        ] {
            assert!(refuse_replacing_other_than_report(&file(name, text)).is_ok(), "{name}");
        }
        assert!(refuse_replacing_other_than_report(&dir.path().join("new")).is_ok());
        for (name, text) in [
            ("main.job", &br#"{"process": "main", "graph": {}}"#[..]),
            ("main.sh", b"#!/bin/sh\nexec smxrun\n"),
            ("bin", b"\xff\xfe\x00"),
        ] {
            let err = refuse_replacing_other_than_report(&file(name, text)).unwrap_err();
            assert!(err.message.contains("holds something other than a report"), "{name}");
        }
    }

    #[test]
    fn live_figures_and_a_traces_opening_are_told_from_other_files() {
        let line = r#"{"channels":[],"final":false,"messages":0,"nets":[{"id":0}]}"#;
        assert!(is_stats_lines(&format!("{line}\n{line}\n")));
        assert!(
            is_stats_lines(&format!("{line}\n{{\"channels\":[{{\"dro")),
            "a killed run's last line"
        );
        assert!(!is_stats_lines("{\"a\": 1}\n"));
        assert!(!is_stats_lines(&format!("{line}\nmy notes\n{line}\n")));
        assert!(!is_stats_lines(""));
        assert!(is_trace_opening("{\"traceEvents\":[\n{\"args\""));
        assert!(!is_trace_opening("int main(void)"));
    }

    #[test]
    fn a_text_report_with_notes_after_it_is_no_longer_a_report() {
        let report = "Asked: n.smx, 2 boxes\n\nTotal: wall time 0.1 s, 1 messages, status ok\n";
        assert!(is_report(report));
        assert!(is_report(&format!(
            "{report}Attention: 1 warning under Warnings above\n"
        )));
        assert!(!is_report(&format!("{report}\nmy notes\n")));
        assert!(!is_report("Asked: n.smx\nmy notes\n"));
    }

    #[test]
    fn a_graph_or_a_picture_is_told_from_other_files() {
        let source = smx_lang::diag::SourceFile::new(
            "n.smx",
            "A = box smx_src_rand( out data )\nB = box smx_snk_null( in data )\nconnect A.B\n",
        );
        let graph = smx_lang::compose::compile(&source, &Default::default()).graph;
        for format in [
            smx_graph::Format::Gml,
            smx_graph::Format::Graphml,
            smx_graph::Format::Dot,
            smx_graph::Format::Json,
        ] {
            assert!(is_graph(&format.export(&graph)), "{}", format.name());
        }
        for text in [
            "A = box a( out x )\n",
            "[net.Src]\ncore = 1\n",
            "fn main() {}\n",
            "{\"nodes\": []}",
            "graphs I drew by hand\n",
        ] {
            assert!(!is_graph(text), "{text}");
        }
        assert!(is_svg("<svg width=\"10\" height=\"10\"></svg>"));
        assert!(is_svg("<?xml version=\"1.0\"?>\n<svg></svg>"));
        assert!(!is_svg("<?xml version=\"1.0\"?>\n<graphml></graphml>"));
        assert!(!is_svg("{\"traceEvents\": []}"));
    }

    #[test]
    fn the_input_under_another_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let net = dir.path().join("n.smx");
        std::fs::write(&net, "x").unwrap();
        let link = dir.path().join("link.smx");
        std::os::unix::fs::symlink(&net, &link).unwrap();
        let err = refuse_clobbering(&[("-o", &link)], &[("net", &net)]).unwrap_err();
        assert!(err.message.contains("is the net"), "{}", err.message);
        assert_eq!(err.code, super::super::exit::REJECTED);
    }

    #[test]
    fn two_results_into_one_new_file_are_refused_but_dev_null_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("r.json");
        let again = dir.path().join(".").join("r.json");
        let err = refuse_clobbering(&[("-o", &new), ("--trace", &again)], &[]).unwrap_err();
        assert!(err.message.contains("is also the -o"), "{}", err.message);
        let null = Path::new("/dev/null");
        assert!(refuse_clobbering(&[("-o", null), ("--trace", null)], &[("net", &new)]).is_ok());
        assert!(refuse_clobbering(&[("-o", Path::new("-"))], &[]).is_ok());
    }

    #[test]
    fn distinct_files_pass() {
        let dir = tempfile::tempdir().unwrap();
        let net = dir.path().join("n.smx");
        std::fs::write(&net, "x").unwrap();
        let out = dir.path().join("r.txt");
        assert!(refuse_clobbering(&[("-o", &out)], &[("net", &net)]).is_ok());
    }
}
