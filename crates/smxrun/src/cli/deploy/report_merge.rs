//! `smxrun report merge`: the reports of a split net's slices as one report of the whole net.

use std::path::Path;

use smx_deploy::merge;
use smx_runtime::Registry;

use crate::cli::args::{MergeArgs, MergeFormat, ReportArgs, ReportCommand};
use crate::cli::exit::{self, CliError};
use crate::cli::output::Output;
use crate::cli::words;

pub fn report(args: &ReportArgs, registry: &Registry) -> Result<i32, CliError> {
    let ReportCommand::Merge(args) = &args.command;
    if let Some(output) = &args.output {
        check_output(output)?;
    }
    let given = read_reports(&args.reports)?;
    for path in &given.missing {
        let process = unwritten_report_of(path, given.reports.first(), &given.processes).ok_or_else(|| {
            CliError::rejected(format!(
                "{}: no such file, and not the report of a process of this split that left none \
                 (`smxrun split` names them NAME.report.json)",
                path.display()
            ))
        })?;
        crate::cli::say(&format!(
            "warning: {}: no such report: process '{process}' counts as one that died",
            path.display()
        ));
    }
    let merged = merge::from_reports(&given.reports, &smx_deploy::bridges(registry)).map_err(CliError::rejected)?;
    Output::open(args.output.as_deref())?.write(&rendered(args, &given.reports, &merged))?;
    Ok(exit_code(&merged))
}

/// Whether `-o FILE` can be written: its directory is there (a file is written beside it
/// first and then renamed, whose name an error would otherwise show).
fn check_output(output: &Path) -> Result<(), CliError> {
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(CliError::rejected(format!(
            "cannot write '{}': '{}' is not a directory",
            output.display(),
            dir.display()
        ))),
        Err(e) => Err(CliError::rejected(format!(
            "cannot write '{}': its directory '{}': {}",
            output.display(),
            dir.display(),
            plain_error(&e)
        ))),
    }
}

/// An error as the system words it, without Rust's `(os error N)`.
fn plain_error(e: &std::io::Error) -> String {
    let text = e.to_string();
    match e.raw_os_error() {
        Some(code) => text.replace(&format!(" (os error {code})"), ""),
        None => text,
    }
}

/// The reports given, read: those there, in the order given, and the paths of those missing.
struct Given<'a> {
    reports: Vec<serde_json::Value>,
    /// Per report read, its process and its path.
    processes: Vec<(String, &'a Path)>,
    /// The paths of reports that are not there: a process that died writes none.
    missing: Vec<&'a Path>,
}

/// Reads each report; refuses, naming the file, one that is no slice's report, one of another
/// split than the first, and a second report of one process.
fn read_reports(paths: &[std::path::PathBuf]) -> Result<Given<'_>, CliError> {
    let mut given = Given {
        reports: Vec::new(),
        processes: Vec::new(),
        missing: Vec::new(),
    };
    for path in paths {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            // The report a process that died never wrote, once the others say it was theirs.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                given.missing.push(path);
                continue;
            }
            Err(e) => return Err(CliError::rejected(format!("{}: {e}", path.display()))),
        };
        let value = slice_report(path, &text)?;
        let process = value["process"].as_str().unwrap_or_default().to_string();
        if let (Some(first), Some((_, first_path))) = (given.reports.first(), given.processes.first())
            && first["plan"] != value["plan"]
        {
            return Err(CliError::rejected(format!(
                "{}: the report of another split than {}'s: merge the reports of one split",
                path.display(),
                first_path.display()
            )));
        }
        // A second report of one process would leave another without one, as if it had died.
        if let Some((_, first)) = given.processes.iter().find(|(p, _)| *p == process) {
            return Err(CliError::rejected(format!(
                "{}: a second report of process '{process}' ({} is its report already): give each process's report once",
                path.display(),
                first.display()
            )));
        }
        given.processes.push((process, path));
        given.reports.push(value);
    }
    Ok(given)
}

/// `text` read from `path` as a slice's report (or the stand-in of a slice whose run was
/// refused): JSON that names its process.
fn slice_report(path: &Path, text: &str) -> Result<serde_json::Value, CliError> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| CliError::rejected(format!("{}: not a JSON report: {e}", path.display())))?;
    let is_slice_report = value["process"].is_string()
        && (value["refused"].is_string() || (value.get("format_version").is_some() && value.get("nets").is_some()));
    if !is_slice_report {
        return Err(CliError::rejected(format!(
            "{}: not the report of a slice that `smxrun split` wrote (those are NAME.report.json)",
            path.display()
        )));
    }
    Ok(value)
}

/// The merged report as `--format` asks for it: JSON, or the text with its `Asked:` line.
fn rendered(args: &MergeArgs, reports: &[serde_json::Value], merged: &serde_json::Value) -> String {
    match args.format {
        MergeFormat::Json => serde_json::to_string_pretty(merged).unwrap_or_default(),
        MergeFormat::Text => {
            let files: Vec<String> = args.reports.iter().map(|p| p.display().to_string()).collect();
            // What the split was asked for, when its slices carry it.
            let split_of = reports[0]["plan"]["asked"]
                .as_str()
                .filter(|a| !a.is_empty())
                .map(|a| format!(" (a split of {a})"))
                .unwrap_or_default();
            let asked = smx_deploy::text::asked(&format!("report merge {}{split_of}", files.join(" ")), merged);
            asked + &smx_deploy::text::render_with(merged, smx_runtime::LeverWords(words::flag_words))
        }
    }
}

/// As a supervised run's: 2 for a process that left no report, else the first non-zero exit
/// code a process ended with (3: books not clean).
fn exit_code(merged: &serde_json::Value) -> i32 {
    let processes = merged["processes"].as_array().cloned().unwrap_or_default();
    let died = processes.iter().any(|p| p["status"] == "died");
    let ended = processes
        .iter()
        .filter_map(|p| p["exit_code"].as_i64())
        .find(|c| *c != 0)
        .and_then(|c| i32::try_from(c).ok());
    match (died, ended) {
        (true, _) => exit::BOX_FAILED,
        (false, Some(code)) => code,
        (false, None) if merged["status"] == "ok" => exit::OK,
        (false, None) => exit::BOX_FAILED,
    }
}

/// The process whose report `path` would be (`NAME.report.json`, as `smxrun split` names
/// them) when that process belongs to the split of `first` and no report of it was given: one
/// that died writes none. `None` for any other missing file.
fn unwritten_report_of(path: &Path, first: Option<&serde_json::Value>, given: &[(String, &Path)]) -> Option<String> {
    let name = path.file_name()?.to_str()?.strip_suffix(".report.json")?;
    let in_split = first?["plan"]["slices"]
        .as_array()?
        .iter()
        .any(|s| s["process"].as_str() == Some(name));
    (in_split && !given.iter().any(|(p, _)| p == name)).then(|| name.to_string())
}
