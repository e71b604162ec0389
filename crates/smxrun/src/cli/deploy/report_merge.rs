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
        let inputs: Vec<(&str, &Path)> = args.reports.iter().map(|p| ("report", p.as_path())).collect();
        crate::cli::clobber::refuse_clobbering(&[("-o", output)], &inputs)?;
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
    for line in untold_processes(&given) {
        crate::cli::say(&format!("warning: {line}"));
    }
    check_one_run(&given)?;
    let mut merged = merge::from_reports(&given.reports, &smx_deploy::bridges(registry)).map_err(CliError::rejected)?;
    // Reports of one run balance: one that does not was edited, or is of another run. The
    // report says so too, as a saved report is read long after stderr is gone.
    let unbalanced: Vec<String> = merge::unbalanced(&merged)
        .into_iter()
        .map(|line| format!("{line}: the reports may have been edited, or come from different runs"))
        .collect();
    if let Some(warnings) = merged["warnings"].as_array_mut() {
        warnings.extend(unbalanced.iter().map(|line| serde_json::json!(line)));
    }
    let code = match exit_code(&merged) {
        exit::OK if !unbalanced.is_empty() => exit::BOOKS_NOT_CLEAN,
        code => code,
    };
    // Messages that vanished between the reports are no success, nor a stop: a script that
    // reads the status alone must not take the run for a good one.
    if !unbalanced.is_empty() {
        merged["status"] = serde_json::json!("failed");
    }
    Output::open(args.output.as_deref())?.write(&rendered(args, &given.reports, &merged))?;
    for line in &unbalanced {
        crate::cli::say(&format!("warning: {line}"));
    }
    Ok(code)
}

/// Refuses the reports of different runs of one split: the slices at the two ends of a link
/// ran at one time in one run (each waits for the other), which their reports' times say
/// where both are read from one clock (the link's two ends on one host). Of two ends that did
/// not meet in one run, the consumer's refused its run when the producer's file did not come
/// in time: a refused slice's stand-in, which holds no books, may be of any run in which
/// nothing crossed its links.
fn check_one_run(given: &Given<'_>) -> Result<(), CliError> {
    let Some(first) = given.reports.first() else {
        return Ok(());
    };
    let ran = |process: &str| {
        let at = given.processes.iter().position(|(p, _)| p == process)?;
        let report = &given.reports[at];
        if report["refused"].is_string() {
            return None;
        }
        let ran = &report[smx_deploy::protocol::RAN];
        Some((
            given.processes[at].1,
            ran["from_unix_s"].as_f64()?,
            ran["to_unix_s"].as_f64()?,
        ))
    };
    for link in first["plan"]["links"].as_array().into_iter().flatten() {
        check_one_sender(given, link)?;
        check_refused_peer(given, link)?;
        if link["same_clock"] != true {
            continue;
        }
        let (Some(from), Some(to)) = (
            link["from_process"].as_str().and_then(ran),
            link["to_process"].as_str().and_then(ran),
        ) else {
            continue;
        };
        if from.1 > to.2 || to.1 > from.2 {
            let (earlier, later) = if from.1 <= to.1 { (from, to) } else { (to, from) };
            return Err(CliError::rejected(format!(
                "{} and {}: reports of different runs of the split: the first's slice ran from {} to {}, the \
                 second's from {} to {}, but the two ends of a link run at one time: merge the reports of one run",
                earlier.0.display(),
                later.0.display(),
                utc(earlier.1),
                utc(earlier.2),
                utc(later.1),
                utc(later.2),
            )));
        }
    }
    Ok(())
}

/// Refuses a refused slice's stand-in beside a report whose link to or from that slice carried
/// messages: a process that refused its run ran none of its nets, so it neither took nor sent
/// any, and the stand-in is of another run (a stale file left beside a later run's reports).
/// Its own times cannot tell, as the slice at the link's other end may start long after the
/// refusal and wait for its peer.
fn check_refused_peer(given: &Given<'_>, link: &serde_json::Value) -> Result<(), CliError> {
    let report_of = |process: &serde_json::Value| {
        let at = given
            .processes
            .iter()
            .position(|(p, _)| Some(p.as_str()) == process.as_str())?;
        Some((given.processes[at].1, &given.reports[at]))
    };
    let ends = [
        (&link["to_process"], &link["from_process"], &link["sink_label"], "took"),
        (
            &link["from_process"],
            &link["to_process"],
            &link["source_label"],
            "sent",
        ),
    ];
    for (refused, peer, label, verb) in ends {
        let (Some((stand_in, refusal)), Some((peer_report, report))) = (report_of(refused), report_of(peer)) else {
            continue;
        };
        if !refusal["refused"].is_string() || report["refused"].is_string() {
            continue;
        }
        let crossed = report["nets"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|n| n["name"] == *label)
            .map_or(0, |n| smx_deploy::protocol::crossed(&n["stats"]));
        if crossed > 0 {
            return Err(CliError::rejected(format!(
                "{} and {}: reports of different runs of the split: the first is the stand-in of process '{}', which \
                 refused its run before any of its nets ran, but by the second, link {} ({} -> {}) carried {crossed} \
                 message(s), which process '{}' {verb}: merge the reports of one run",
                stand_in.display(),
                peer_report.display(),
                refused.as_str().unwrap_or("?"),
                link["edge"],
                link["from_process"].as_str().unwrap_or("?"),
                link["to_process"].as_str().unwrap_or("?"),
                refused.as_str().unwrap_or("?"),
            )));
        }
    }
    Ok(())
}

/// Refuses the two ends of a ZeroMQ link from different runs: its sender draws an id at random
/// when it opens and puts it in every frame, and the receiver lists the ids it heard from, so
/// a receiver that heard from others only took the stream of another run (where the two ends'
/// clocks cannot be compared, as across hosts, this is what tells).
fn check_one_sender(given: &Given<'_>, link: &serde_json::Value) -> Result<(), CliError> {
    let net_of = |process: &serde_json::Value, label: &serde_json::Value| {
        let at = given
            .processes
            .iter()
            .position(|(p, _)| Some(p.as_str()) == process.as_str())?;
        let net = given.reports[at]["nets"]
            .as_array()?
            .iter()
            .find(|n| n["name"] == *label)?
            .clone();
        Some((given.processes[at].1, net))
    };
    let (Some((producer_report, sink)), Some((consumer_report, source))) = (
        net_of(&link["from_process"], &link["sink_label"]),
        net_of(&link["to_process"], &link["source_label"]),
    ) else {
        return Ok(());
    };
    let (Some(sender), Some(heard)) = (
        sink["stats"]["sender_id"].as_str(),
        source["stats"]["sender_ids"].as_str(),
    ) else {
        return Ok(());
    };
    if heard.is_empty() || heard.split(' ').any(|id| id == sender) {
        return Ok(());
    }
    Err(CliError::rejected(format!(
        "{} and {}: reports of different runs of the split: link {} ({} -> {}) was sent by sender {sender}, but its \
         receiver heard from sender {heard}: merge the reports of one run",
        producer_report.display(),
        consumer_report.display(),
        link["edge"],
        link["from_process"].as_str().unwrap_or("?"),
        link["to_process"].as_str().unwrap_or("?"),
    )))
}

/// Seconds since the Unix epoch as a UTC date and time to the millisecond.
fn utc(unix_s: f64) -> String {
    let ms = (unix_s.max(0.0) * 1000.0) as u64;
    let (days, ms_of_day) = (ms / 86_400_000, ms % 86_400_000);
    // Days since 1970-01-01 as a civil date (the proleptic Gregorian calendar).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:03} UTC",
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1000 % 60,
        ms_of_day % 1000
    )
}

/// Whether `-o FILE` can be written: its directory is there (a file is written beside it
/// first and then renamed, whose name an error would otherwise show).
fn check_output(output: &Path) -> Result<(), CliError> {
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => crate::cli::clobber::refuse_replacing_other_than_report(output),
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
        let text = match smx_deploy::protocol::read_capped(path) {
            Ok(text) => text,
            // The report a process that died never wrote, once the others say it was theirs.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                given.missing.push(path);
                continue;
            }
            Err(e) => return Err(CliError::rejected(format!("{}: {}", path.display(), plain_error(&e)))),
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
    // An empty file is what a slice that died before writing leaves, or a wrong path such as
    // /dev/null: said as such, not as a JSON parser's "EOF".
    if text.trim().is_empty() {
        return Err(CliError::rejected(format!(
            "{}: empty, not a JSON report (a slice writes its report when its run ends)",
            path.display()
        )));
    }
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| CliError::rejected(format!("{}: not a JSON report: {e}", path.display())))?;
    let is_report = value.get("format_version").is_some() && value.get("nets").is_some();
    let is_slice_report = value["process"].is_string() && (value["refused"].is_string() || is_report);
    if !is_slice_report {
        let what = if value.get("processes").is_some() {
            "the merged report of a whole net, not the report of one of its slices"
        } else if is_report {
            "the report of a run in one process, not of a slice of a split net (a slice's report names its \
             process and carries its split's plan)"
        } else if value.get("graph").is_some() && value.get("args").is_some() {
            "a slice's job, not its report"
        } else {
            "not the report of a slice of a split net"
        };
        return Err(CliError::rejected(format!(
            "{}: {what}: merge the reports that the slices of one split wrote (each `smxrun split` script \
             writes its process's)",
            path.display()
        )));
    }
    merge::check_slice_report(&value).map_err(|e| CliError::rejected(format!("{}: {e}", path.display())))?;
    Ok(value)
}

/// The merged report as `--format` asks for it: JSON, or the text with its `Asked:` line.
fn rendered(args: &MergeArgs, reports: &[serde_json::Value], merged: &serde_json::Value) -> String {
    match args.format() {
        MergeFormat::Json => {
            let mut merged = merged.clone();
            smx_deploy::text::judge_periods(&mut merged, smx_runtime::LeverWords(words::flag_words));
            serde_json::to_string_pretty(&merged).unwrap_or_default()
        }
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

/// As a supervised run's: there a death, a refusal or a stop from outside ends the run and
/// gives its code (2, 1, 130), and a process that ended with a non-zero code by itself (3:
/// books not clean) only lets the others end, so its code counts only where none of those
/// came. Slices started apart do not tell which came first; a death is the worst, and a
/// refusal comes before the nets run, so before any stop: 2 for a process that left no report,
/// else 1 for one that refused its run, else 130 for one that was stopped, else the first
/// non-zero exit code of a process in the split's order.
fn exit_code(merged: &serde_json::Value) -> i32 {
    let processes = merged["processes"].as_array().cloned().unwrap_or_default();
    let any = |status: &str| processes.iter().any(|p| p["status"] == status);
    let ended = processes
        .iter()
        .filter_map(|p| p["exit_code"].as_i64())
        .find(|c| *c != 0)
        .and_then(|c| i32::try_from(c).ok());
    if any("died") {
        exit::BOX_FAILED
    } else if any("refused") {
        exit::REJECTED
    } else if any("stopped") {
        exit::INTERRUPTED
    } else if let Some(code) = ended {
        code
    } else if merged["status"] == "ok" {
        exit::OK
    } else {
        exit::BOX_FAILED
    }
}

/// A line per process of the split whose report was not given, neither read nor named as a
/// missing file: it counts as one that died, which the merged report says, but not why. A
/// report of it beside the first one given (as `split` writes them) is named: most likely it
/// was left out by mistake.
fn untold_processes(given: &Given<'_>) -> Vec<String> {
    let (Some(first), Some((_, first_path))) = (given.reports.first(), given.processes.first()) else {
        return Vec::new();
    };
    let named_missing = |name: &str| {
        given
            .missing
            .iter()
            .any(|m| m.file_name().and_then(|f| f.to_str()) == Some(&format!("{name}.report.json")))
    };
    first["plan"]["slices"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["process"].as_str())
        .filter(|name| !given.processes.iter().any(|(p, _)| p == name) && !named_missing(name))
        .map(|name| {
            let beside = first_path.with_file_name(format!("{name}.report.json"));
            if beside.is_file() {
                format!(
                    "process '{name}': its report {} was not given: it counts as one that died; give it to \
                     count its books",
                    beside.display()
                )
            } else {
                format!("process '{name}': no report given: it counts as one that died")
            }
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_reads_as_its_utc_date() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00.000 UTC");
        assert_eq!(utc(951_782_400.5), "2000-02-29 00:00:00.500 UTC");
        assert_eq!(utc(1_796_558_763.25), "2026-12-06 12:06:03.250 UTC");
    }
}
