//! `smxrun report merge`: the reports of a split net's slices as one report of the whole net.

use std::path::Path;

use smx_deploy::merge;
use smx_runtime::Registry;

use crate::cli::args::{MergeFormat, ReportArgs, ReportCommand};
use crate::cli::exit::{self, CliError};
use crate::cli::output::Output;
use crate::cli::words;

pub fn report(args: &ReportArgs, registry: &Registry) -> Result<i32, CliError> {
    let ReportCommand::Merge(args) = &args.command;
    let mut reports = Vec::new();
    let mut given: Vec<(String, &Path)> = Vec::new();
    for path in &args.reports {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            // The report a process that died never wrote: as if it were left off.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                crate::cli::say(&format!(
                    "warning: {}: no such report: its process counts as one that died",
                    path.display()
                ));
                continue;
            }
            Err(e) => return Err(CliError::rejected(format!("{}: {e}", path.display()))),
        };
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| CliError::rejected(format!("{}: not a JSON report: {e}", path.display())))?;
        let process = value["process"].as_str().ok_or_else(|| {
            CliError::rejected(format!(
                "{}: names no process: not the report of a slice that `smxrun split` wrote",
                path.display()
            ))
        })?;
        // A second report of one process would leave another without one, as if it had died.
        if let Some((_, first)) = given.iter().find(|(p, _)| p == process) {
            return Err(CliError::rejected(format!(
                "{}: a second report of process '{process}' ({} is its report already): give each process's report once",
                path.display(),
                first.display()
            )));
        }
        given.push((process.to_string(), path));
        reports.push(value);
    }
    let merged = merge::from_reports(&reports, &bridges(registry)).map_err(CliError::rejected)?;
    let text = match args.format {
        MergeFormat::Json => serde_json::to_string_pretty(&merged).unwrap_or_default(),
        MergeFormat::Text => {
            let files: Vec<String> = args.reports.iter().map(|p| p.display().to_string()).collect();
            // What the split was asked for, when its slices carry it.
            let split_of = reports[0]["plan"]["asked"]
                .as_str()
                .filter(|a| !a.is_empty())
                .map(|a| format!(" (a split of {a})"))
                .unwrap_or_default();
            let asked = smx_deploy::text::asked(&format!("report merge {}{split_of}", files.join(" ")), &merged);
            asked + &smx_deploy::text::render_with(&merged, smx_runtime::LeverWords(words::flag_words))
        }
    };
    Output::open(args.output.as_deref())?.write(&text)?;
    // As a supervised run's: 2 for a process that left no report, else the first non-zero
    // exit code a process ended with (3: books not clean).
    let processes = merged["processes"].as_array().cloned().unwrap_or_default();
    let died = processes.iter().any(|p| p["status"] == "died");
    let ended = processes
        .iter()
        .filter_map(|p| p["exit_code"].as_i64())
        .find(|c| *c != 0)
        .and_then(|c| i32::try_from(c).ok());
    Ok(match (died, ended) {
        (true, _) => exit::BOX_FAILED,
        (false, Some(code)) => code,
        (false, None) if merged["status"] == "ok" => exit::OK,
        (false, None) => exit::BOX_FAILED,
    })
}

/// The implementations that pass what they read on out of the net, for the merged report's
/// count of messages.
fn bridges(registry: &Registry) -> Vec<String> {
    registry
        .specs()
        .into_iter()
        .filter(|spec| spec.bridge)
        .map(|spec| spec.name.to_string())
        .collect()
}
