//! The data model of a benchmark result: cases, their raw runs, and the tables printed from them.
//!
//! One shape for every experiment, so saving, comparing and plotting need no per-experiment
//! code: a [`Case`] is one configuration of one series (`smx` at 4 pairs, the `crossbeam`
//! baseline at 4 pairs, the `probe` at 20 us), it keeps every [`Run`] with all its metrics, and
//! its summaries are taken over the valid runs only. Metric names carry their unit as a suffix
//! (`wall_s`, `msg_rate_hz`, `latency_p99_ns`), so a saved result explains itself.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::cpu::{self, STEAL_MS};
use super::machine::MachineHeader;
use super::stats::Summary;

/// Everything one `smxrun bench` invocation measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// Format version of this JSON document.
    pub format: u32,
    pub experiment: String,
    /// The command line that produced it.
    pub command: String,
    pub machine: MachineHeader,
    /// The experiment's settings after defaults and `--quick` (`count`, `runs`, ...).
    pub settings: BTreeMap<String, String>,
    pub cases: Vec<Case>,
    /// The printed tables, also written as Markdown.
    pub tables: Vec<Table>,
    /// Invalid runs, missing peers and other things a reader must know.
    pub notes: Vec<String>,
}

pub const FORMAT_VERSION: u32 = 1;

/// One configuration of one series, with every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Case {
    /// What was run: `smx`, `crossbeam`, `gstreamer`, `zmq-raw`, `probe`, ...
    pub series: String,
    /// The configuration (`pairs=4`, `period_us=20`, ...), as text so any value fits.
    pub params: BTreeMap<String, String>,
    pub runs: Vec<Run>,
    /// Per metric, over the valid runs (absent when no run was valid).
    pub summary: BTreeMap<String, Summary>,
}

/// One measured run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub metrics: BTreeMap<String, f64>,
    /// False when validation failed (messages missing, a box failed, ...).
    pub valid: bool,
    pub problems: Vec<String>,
    /// The bench was asked to finish ([`crate::interrupt`]) before or while this run ran: it
    /// measured nothing, or a run cut short, and no case keeps it.
    #[serde(skip)]
    pub interrupted: bool,
}

impl Run {
    pub fn new() -> Run {
        Run {
            metrics: BTreeMap::new(),
            valid: true,
            problems: Vec::new(),
            interrupted: false,
        }
    }

    /// A run that could not be measured at all.
    pub fn failed(problem: impl Into<String>) -> Run {
        Run {
            metrics: BTreeMap::new(),
            valid: false,
            problems: vec![problem.into()],
            interrupted: false,
        }
    }

    pub fn set(&mut self, metric: &str, value: f64) -> &mut Run {
        self.metrics.insert(metric.to_string(), value);
        self
    }

    /// Marks the run invalid with the reason.
    pub fn invalidate(&mut self, problem: impl Into<String>) {
        self.valid = false;
        self.problems.push(problem.into());
    }

    /// Records `cpu_s` and `cpu_s_per_m` (CPU seconds per million messages).
    pub fn set_cpu(&mut self, cpu_s: f64, messages: u64) {
        self.set("cpu_s", cpu_s);
        if messages > 0 {
            self.set("cpu_s_per_m", cpu_s * 1e6 / messages as f64);
        }
    }

    /// Runs `f` and records on its run `steal_ms`: what the hypervisor took from the machine's
    /// CPUs meanwhile (not set where the kernel does not count it), and `wall_s` where the run
    /// set none.
    pub fn with_steal(f: impl FnOnce() -> Run) -> Run {
        Run::unless_interrupted(|| Run::stealing(f))
    }

    /// Runs `f` unless the bench was asked to finish ([`crate::interrupt`]); a run asked to
    /// finish before it started, or while it ran, comes back `interrupted`, which
    /// [`Case::push`] leaves out: a run cut short is no measurement of the case.
    pub fn unless_interrupted(f: impl FnOnce() -> Run) -> Run {
        if crate::interrupt::requested().is_some() {
            return Run::cut_short();
        }
        let run = f();
        match crate::interrupt::requested() {
            Some(_) => Run::cut_short(),
            None => run,
        }
    }

    fn cut_short() -> Run {
        Run {
            interrupted: true,
            ..Run::failed("interrupted")
        }
    }

    fn stealing(f: impl FnOnce() -> Run) -> Run {
        let before = cpu::steal_s();
        let started = std::time::Instant::now();
        let mut run = f();
        if let (Some(before), Some(after)) = (before, cpu::steal_s()) {
            run.set(STEAL_MS, (after - before).max(0.0) * 1e3);
            // A run that gives no wall time of its own (a latency run) is judged by this one:
            // the steal note weighs the steal against it.
            if !run.metrics.contains_key("wall_s") {
                run.set("wall_s", started.elapsed().as_secs_f64());
            }
        }
        run
    }
}

impl Default for Run {
    fn default() -> Self {
        Run::new()
    }
}

impl Case {
    pub fn new(series: &str, params: &[(&str, String)]) -> Case {
        Case {
            series: series.to_string(),
            params: params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            runs: Vec::new(),
            summary: BTreeMap::new(),
        }
    }

    /// Adds a run and recomputes the summaries.
    /// Adds a measured run; one [`Run::interrupted`] is left out.
    pub fn push(&mut self, run: Run) {
        if run.interrupted {
            return;
        }
        self.runs.push(run);
        self.summarise();
    }

    /// Recomputes every metric's summary over the valid runs.
    pub fn summarise(&mut self) {
        let mut by_metric: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for run in self.runs.iter().filter(|r| r.valid) {
            for (name, value) in &run.metrics {
                by_metric.entry(name).or_default().push(*value);
            }
        }
        self.summary = by_metric
            .into_iter()
            .filter_map(|(name, values)| Summary::of(&values).map(|s| (name.to_string(), s)))
            .collect();
    }

    pub fn median(&self, metric: &str) -> Option<f64> {
        self.summary.get(metric).map(|s| s.median)
    }

    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    /// A numeric parameter (for plot axes and fits).
    pub fn param_f64(&self, name: &str) -> Option<f64> {
        self.param(name)?.parse().ok()
    }

    pub fn invalid_runs(&self) -> usize {
        self.runs.iter().filter(|r| !r.valid).count()
    }

    /// A table's label for this case: `label`, followed by ` (N invalid)` when some runs were.
    pub fn label(&self, label: impl std::fmt::Display) -> String {
        match self.invalid_runs() {
            0 => label.to_string(),
            invalid => format!("{label} ({invalid} invalid)"),
        }
    }

    /// Like [`Case::cell`] with at least three significant digits, for values of any magnitude.
    pub fn cell_auto(&self, metric: &str, scale: f64) -> String {
        let decimals = self.summary.get(metric).map_or(0, |s| decimals_for(s.median * scale));
        self.cell(metric, scale, decimals)
    }

    /// `series{k=v,...}`: identifies the case across results (for `--compare`).
    pub fn key(&self) -> String {
        let params: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}{{{}}}", self.series, params.join(","))
    }

    /// "median (min-max)" of a metric scaled by `scale`, or "-" when nothing valid.
    pub fn cell(&self, metric: &str, scale: f64, decimals: usize) -> String {
        match self.summary.get(metric) {
            None => "-".into(),
            Some(s) if s.n == 1 || s.min == s.max => format!("{:.*}", decimals, s.median * scale),
            Some(s) => format!(
                "{:.*} ({:.*}-{:.*})",
                decimals,
                s.median * scale,
                decimals,
                s.min * scale,
                decimals,
                s.max * scale
            ),
        }
    }
}

impl BenchResult {
    pub fn find(&self, series: &str, params: &[(&str, &str)]) -> Option<&Case> {
        self.cases
            .iter()
            .find(|c| c.series == series && params.iter().all(|(k, v)| c.param(k) == Some(*v)))
    }

    /// One note when runs lost at least [`STOLEN_SHARE`] of their wall time, and at least
    /// [`STOLEN_MIN_MS`], to the hypervisor (their `steal_ms` against their `wall_s`): how many,
    /// and the worst.
    pub fn note_stolen_runs(&mut self) {
        let mut total = 0;
        let mut stolen: Vec<(f64, String)> = Vec::new();
        for case in &self.cases {
            for (i, run) in case.runs.iter().enumerate() {
                let (Some(steal_ms), Some(wall_s)) = (run.metrics.get(STEAL_MS), run.metrics.get("wall_s")) else {
                    continue;
                };
                total += 1;
                let share = steal_ms / 1e3 / wall_s;
                if *wall_s > 0.0 && share >= STOLEN_SHARE && *steal_ms >= STOLEN_MIN_MS {
                    stolen.push((share, format!("{} run {}", case.key(), i + 1)));
                }
            }
        }
        let Some((worst, which)) = stolen.iter().max_by(|a, b| a.0.total_cmp(&b.0)) else {
            return;
        };
        self.notes.push(format!(
            "hypervisor steal: {} of {total} runs lost at least {:.0} % of their wall time to the hypervisor, up \
             to {:.0} % ({which}); such a run is slow for the host's reasons, not its own (steal_ms in --json/--csv)",
            stolen.len(),
            STOLEN_SHARE * 100.0,
            worst * 100.0,
        ));
    }

    /// One note when the machine was busy as the experiment began: a 1-minute load average
    /// above the CPUs it may use says other work shared them, and its figures with it.
    pub fn note_busy_machine(&mut self) {
        let (Some(load), cpus) = (self.machine.load_before, self.machine.cores_allowed) else {
            return;
        };
        if cpus > 0 && load > cpus as f64 {
            self.notes.push(format!(
                "busy machine: the load average was {load:.2} on {cpus} CPU{} as the experiment began: other work \
                 shared the CPUs with these runs, so their figures are not this machine's alone (run again when it \
                 is idle)",
                if cpus == 1 { "" } else { "s" }
            ));
        }
    }

    /// One note per case with invalid runs: which runs, and each distinct problem once (long
    /// problems such as compiler diagnostics cut to their first lines).
    pub fn note_invalid_runs(&mut self) {
        let mut notes = Vec::new();
        for case in &self.cases {
            let bad: Vec<usize> = (0..case.runs.len()).filter(|i| !case.runs[*i].valid).collect();
            if bad.is_empty() {
                continue;
            }
            let mut problems: Vec<String> = Vec::new();
            for run in bad.iter().map(|i| &case.runs[*i]) {
                for p in &run.problems {
                    let short: Vec<&str> = p.lines().take(4).collect();
                    let short = short.join("\n");
                    if !problems.contains(&short) {
                        problems.push(short);
                    }
                }
            }
            let runs: Vec<String> = bad.iter().map(|i| (i + 1).to_string()).collect();
            // "run 2 (of 2 runs)": "runs 2 of 2" read as both of them.
            notes.push(format!(
                "INVALID {} {} (of {} runs) of {}: {}",
                if runs.len() == 1 { "run" } else { "runs" },
                runs.join(", "),
                case.runs.len(),
                case.key(),
                problems.join("; ")
            ));
        }
        self.notes.extend(notes);
    }
}

/// The share of a run's wall time taken by the hypervisor from which the run is noted.
pub const STOLEN_SHARE: f64 = 0.01;
/// And the least steal noted: /proc/stat counts in steps of 10 ms (USER_HZ 100), so one step
/// seen in a short run may be a few microseconds that crossed a step.
pub const STOLEN_MIN_MS: f64 = 20.0;

/// A printed table: a title, column headers and rows of cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(title: &str, columns: &[&str]) -> Table {
        Table {
            title: title.to_string(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; short rows are padded with empty cells and long ones cut to the columns.
    pub fn row(&mut self, cells: Vec<String>) {
        let mut cells = cells;
        cells.resize(self.columns.len(), String::new());
        self.rows.push(cells);
    }

    /// Aligned plain text: numbers right-aligned, the first column left-aligned.
    pub fn to_text(&self) -> String {
        let widths = self.widths();
        let mut out = format!("{}\n", self.title);
        let line = |cells: &[String]| -> String {
            let parts: Vec<String> = cells
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (c, w))| if i == 0 { format!("{c:<w$}") } else { format!("{c:>w$}") })
                .collect();
            parts.join("  ").trim_end().to_string()
        };
        out.push_str(&line(&self.columns));
        out.push('\n');
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        out.push_str(&rule.join("  "));
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }

    /// A GitHub-flavoured Markdown table under a `###` heading.
    pub fn to_markdown(&self) -> String {
        let esc = |s: &String| s.replace('|', "\\|");
        let mut out = format!("### {}\n\n", self.title);
        out.push_str(&format!(
            "| {} |\n",
            self.columns.iter().map(esc).collect::<Vec<_>>().join(" | ")
        ));
        let align: Vec<&str> = (0..self.columns.len())
            .map(|i| if i == 0 { "---" } else { "---:" })
            .collect();
        out.push_str(&format!("| {} |\n", align.join(" | ")));
        for row in &self.rows {
            out.push_str(&format!(
                "| {} |\n",
                row.iter().map(esc).collect::<Vec<_>>().join(" | ")
            ));
        }
        out
    }

    fn widths(&self) -> Vec<usize> {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        widths
    }
}

/// Decimals that show `v` with at least three significant digits (one for values >= 100).
pub fn decimals_for(v: f64) -> usize {
    let a = v.abs();
    if a == 0.0 || !a.is_finite() || a >= 100.0 {
        1
    } else {
        (2 - a.log10().floor() as i64).clamp(1, 9) as usize
    }
}
