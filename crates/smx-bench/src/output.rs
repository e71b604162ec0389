//! Writing a result as JSON, CSV or Markdown, and comparing it with an earlier one.
//!
//! JSON is the complete record (machine header, settings, every raw run) and the input of
//! `--compare`. CSV is "long" (one row per case, run and metric) so a spreadsheet or a script
//! can pivot it any way without knowing the experiment. Markdown is the printed tables with the
//! machine header, ready for a README or an issue.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use super::result::{BenchResult, FORMAT_VERSION, Table};

/// Failure to read or write a result file, naming the file.
#[derive(Debug)]
pub struct OutputError(pub String);

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OutputError {}

fn write_file(path: &Path, text: &str, what: &str) -> Result<(), OutputError> {
    std::fs::write(path, text).map_err(|e| OutputError(format!("cannot write {what} to {}: {e}", path.display())))
}

pub fn to_json(results: &[BenchResult]) -> Result<String, OutputError> {
    serde_json::to_string_pretty(results).map_err(|e| OutputError(format!("cannot encode the result as JSON: {e}")))
}

pub fn write_json(path: &Path, results: &[BenchResult]) -> Result<(), OutputError> {
    write_file(path, &(to_json(results)? + "\n"), "the JSON result")
}

/// Reads a file written by `--json` (a list of results; a single result object is accepted too).
pub fn read_json(path: &Path) -> Result<Vec<BenchResult>, OutputError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| OutputError(format!("cannot read {}: {e}", path.display())))?;
    parse_json(&text).map_err(|e| OutputError(format!("{}: {e}", path.display())))
}

pub fn parse_json(text: &str) -> Result<Vec<BenchResult>, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not a JSON benchmark result: {e}"))?;
    let results: Vec<BenchResult> = if value.is_array() {
        serde_json::from_value(value)
    } else {
        serde_json::from_value(value).map(|r| vec![r])
    }
    .map_err(|e| format!("not a benchmark result of format {FORMAT_VERSION}: {e}"))?;
    if let Some(r) = results.iter().find(|r| r.format != FORMAT_VERSION) {
        return Err(format!(
            "result format {} is not the supported format {FORMAT_VERSION}",
            r.format
        ));
    }
    Ok(results)
}

/// Long CSV: `experiment,series,<every parameter>,run,valid,metric,value`.
pub fn to_csv(results: &[BenchResult]) -> String {
    let params: BTreeSet<&str> = results
        .iter()
        .flat_map(|r| r.cases.iter())
        .flat_map(|c| c.params.keys().map(String::as_str))
        .collect();
    let mut out = String::from("experiment,series");
    for p in &params {
        let _ = write!(out, ",{}", csv_field(p));
    }
    out.push_str(",run,valid,metric,value\n");
    for result in results {
        for case in &result.cases {
            for (i, run) in case.runs.iter().enumerate() {
                for (metric, value) in &run.metrics {
                    let _ = write!(out, "{},{}", csv_field(&result.experiment), csv_field(&case.series));
                    for p in &params {
                        let _ = write!(out, ",{}", csv_field(case.param(p).unwrap_or("")));
                    }
                    let _ = writeln!(out, ",{},{},{},{}", i + 1, run.valid, csv_field(metric), value);
                }
            }
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn write_csv(path: &Path, results: &[BenchResult]) -> Result<(), OutputError> {
    write_file(path, &to_csv(results), "the CSV table")
}

/// Markdown: per result, the command, the machine header, the tables and the notes.
pub fn to_markdown(results: &[BenchResult]) -> String {
    let mut out = String::new();
    for r in results {
        let _ = writeln!(out, "## smxrun bench {}\n", r.experiment);
        let _ = writeln!(out, "`{}`\n", r.command);
        for line in r.machine.describe() {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
        for table in &r.tables {
            out.push_str(&table.to_markdown());
            out.push('\n');
        }
        for note in &r.notes {
            let _ = writeln!(out, "> {note}");
        }
        if !r.notes.is_empty() {
            out.push('\n');
        }
    }
    out
}

pub fn write_markdown(path: &Path, results: &[BenchResult]) -> Result<(), OutputError> {
    write_file(path, &to_markdown(results), "the Markdown tables")
}

/// Median of every metric of every case found in both results, with the ratio new / old.
pub fn compare(new: &[BenchResult], old: &[BenchResult]) -> Table {
    let mut table = Table::new(
        "comparison with the earlier result (medians of valid runs; ratio = new / old)",
        &["case", "metric", "old", "new", "ratio"],
    );
    for result in new {
        let Some(earlier) = old.iter().find(|o| o.experiment == result.experiment) else {
            continue;
        };
        for case in &result.cases {
            let Some(old_case) = earlier.cases.iter().find(|c| c.key() == case.key()) else {
                continue;
            };
            for (metric, s) in &case.summary {
                let Some(o) = old_case.summary.get(metric) else {
                    continue;
                };
                let ratio = if o.median == 0.0 {
                    if s.median == 0.0 {
                        "=".to_string()
                    } else {
                        "new".to_string()
                    }
                } else {
                    format!("{:.3}", s.median / o.median)
                };
                table.row(vec![
                    format!("{} {}", result.experiment, case.key()),
                    metric.clone(),
                    format_number(o.median),
                    format_number(s.median),
                    ratio,
                ]);
            }
        }
    }
    table
}

/// Compact display of a metric value of any magnitude.
pub fn format_number(v: f64) -> String {
    let a = v.abs();
    if v == v.trunc() && a < 1e12 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.6}")
    }
}

/// What differs between the machines of two results that a ratio of their figures would
/// carry: another CPU, other CPUs to run on, another kernel or build, a busy machine.
fn machine_changes(
    experiment: &str,
    old: &crate::machine::MachineHeader,
    new: &crate::machine::MachineHeader,
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut differ = |what: &str, a: String, b: String| {
        if a != b {
            lines.push(format!("{experiment}: {what} {a} -> {b}"));
        }
    };
    differ("cpu", old.cpu_model.clone(), new.cpu_model.clone());
    differ(
        "cpus allowed",
        old.cores_allowed.to_string(),
        new.cores_allowed.to_string(),
    );
    differ("kernel", old.kernel.clone(), new.kernel.clone());
    differ("build", old.build.clone(), new.build.clone());
    differ("smx", old.smx_version.clone(), new.smx_version.clone());
    // A load average above the CPUs on either side: other work shared them.
    let busy = |m: &crate::machine::MachineHeader| m.load_before.filter(|l| *l > m.cores_allowed.max(1) as f64);
    if busy(old).is_some() || busy(new).is_some() {
        let load = |m: &crate::machine::MachineHeader| m.load_before.map_or("?".to_string(), |l| format!("{l:.2}"));
        lines.push(format!(
            "{experiment}: load average as it began {} -> {} (more than the CPUs: other work shared them)",
            load(old),
            load(new)
        ));
    }
    lines
}

/// Settings that differ between a result and the earlier one of the same experiment, as
/// `experiment: key old -> new` lines (a ratio across different settings means little).
pub fn settings_changes(new: &[BenchResult], old: &[BenchResult]) -> Vec<String> {
    let mut lines = Vec::new();
    for r in new {
        let Some(o) = old.iter().find(|o| o.experiment == r.experiment) else {
            lines.push(format!("{}: no earlier result to compare with", r.experiment));
            continue;
        };
        lines.extend(machine_changes(&r.experiment, &o.machine, &r.machine));
        let keys: BTreeSet<&String> = r.settings.keys().chain(o.settings.keys()).collect();
        for k in keys {
            let (a, b) = (o.settings.get(k), r.settings.get(k));
            if a != b {
                let show = |v: Option<&String>| v.cloned().unwrap_or_else(|| "(unset)".into());
                lines.push(format!("{}: {k} {} -> {}", r.experiment, show(a), show(b)));
            }
        }
        lines.extend(thread_changes(r, o));
    }
    lines
}

/// The cases that ran on another number of box threads than before (chaining on or off, or
/// another machine's cores): their ratios compare two layouts of the net, not one net twice.
fn thread_changes(new: &BenchResult, old: &BenchResult) -> Vec<String> {
    const THREADS: &str = "box_threads";
    new.cases
        .iter()
        .filter_map(|case| {
            let earlier = old.cases.iter().find(|c| c.key() == case.key())?;
            let (now, then) = (case.median(THREADS)?, earlier.median(THREADS)?);
            (now != then).then(|| {
                format!(
                    "{} {}: ran on {} box threads, earlier on {}: its ratios compare two layouts of the net",
                    new.experiment,
                    case.key(),
                    format_number(now),
                    format_number(then)
                )
            })
        })
        .collect()
}
