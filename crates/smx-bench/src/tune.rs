//! `smxrun bench tune`: are the defaults as fast as the best setting a user could pick by hand?
//!
//! For each row ([`tune_rows`]: `bench scaling` cells, the `bench zmq` net, the
//! `nets/src_snk.smx` pair) the defaults run beside every setting of a `--pin` x `--wait-spin`
//! (x `--tt-mode` for the time-triggered row) sweep ([`tune_sweep`]). After one discarded
//! warm-up of each row's default, the rounds are interleaved: each round runs every setting of
//! every row once, in an order rotated by a share of the order from round to round, so that a
//! drift of the machine (another process building) hits every setting alike and no setting
//! always runs first or last (rotated by one per round, five rounds of 25 settings left the
//! default among the last five every time).
//! [`tune_verdict`] compares medians.
//!
//! The best of some twenty noisy settings is biased upwards: it is the one whose rounds the
//! noise favoured most, so a default can look slower than a setting that is no faster. A row
//! whose default misses the goal is therefore measured again: the default and the sweep's best,
//! alternating, as many rounds as the sweep had, and the verdict is the confirmation's.
//!
//! [`tune_rows`]: super::tune_rows
//! [`tune_sweep`]: super::tune_sweep
//! [`tune_verdict`]: super::tune_verdict

use std::time::Duration;

use super::Session;
use super::args::{TuneArgs, or_default, pick};
use super::result::{BenchResult, Case, Run};
use super::tune_rows::{Row, RowKind};
use super::tune_sweep::{Setting, Sweep, spin_literal};
use super::tune_verdict::{self, RowView};

/// The rows the command line asks for, or why not.
pub fn check(args: &TuneArgs) -> Result<(), String> {
    if args.rows.iter().any(|r| r == "zmq") && !cfg!(feature = "zmq") {
        return Err("bench tune --rows zmq: this smxrun was built without the zmq feature".into());
    }
    Ok(())
}

/// The warm-up's share of a row's count: enough to fault in code and stacks.
const WARMUP_DIVISOR: u64 = 5;

/// A re-measurement (and the tt row's floor) takes this many times the sweep's rounds: it runs
/// two settings, not some twenty, so it can afford the rounds that put a median of noisy runs
/// within the verdict's 10 %.
const AGAIN_FACTOR: usize = 3;

/// What one `bench tune` measures, resolved from the command line and `--quick`.
struct Plan {
    wanted: Vec<String>,
    pairs: Vec<usize>,
    lens: Vec<u32>,
    count: u64,
    ticks: u64,
    period: Duration,
    runs: usize,
    sweep: Sweep,
}

pub fn run(args: &TuneArgs, session: &mut Session) -> BenchResult {
    let plan = plan(args, session);
    let rows = rows(&plan);
    let mut result = session.start("tune");
    record_settings(&mut result, &plan);
    let runs = plan.runs;
    let registry = crate::builtin_registry();
    let mut sweeps: Vec<(Vec<Setting>, Vec<Case>)> = rows.iter().map(|row| sweep_cases(row, &plan.sweep)).collect();
    measure_rounds(&rows, &mut sweeps, runs, &registry, session);
    let confirmations: Vec<Vec<Case>> = rows
        .iter()
        .zip(&sweeps)
        .map(|(row, (settings, cases))| confirm(row, settings, cases, runs * AGAIN_FACTOR, &registry, session))
        .collect();
    let floors: Vec<Case> = rows
        .iter()
        .filter_map(|row| floor(row, runs * AGAIN_FACTOR, &registry, session))
        .flatten()
        .collect();
    let table_rows = row_views(&rows, &sweeps);
    for (_, cases) in sweeps {
        result.cases.extend(cases);
    }
    result.cases.extend(confirmations.into_iter().flatten());
    let has_floor = !floors.is_empty();
    result.cases.extend(floors);
    result.tables.push(tune_verdict::table(&result, &table_rows));
    if has_floor {
        result
            .tables
            .push(tune_verdict::floor_table(&result.cases, &table_rows));
    }
    result.tables.push(tune_verdict::sweep_table(&result, &table_rows));
    result.notes.push(reading_note(runs));
    result
}

fn plan(args: &TuneArgs, session: &Session) -> Plan {
    let quick = session.quick;
    let all_rows: Vec<String> = ["scaling", "zmq", "tt"]
        .iter()
        .filter(|r| **r != "zmq" || cfg!(feature = "zmq"))
        .map(|r| r.to_string())
        .collect();
    Plan {
        wanted: or_default(&args.rows, quick, &all_rows, &all_rows),
        pairs: or_default(&args.pairs, quick, &[1, 4], &[1, 4, 16]),
        lens: or_default(&args.channel_len, quick, &[1, 64], &[1, 64]),
        count: pick(args.count, quick, 5_000, 200_000),
        ticks: pick(args.ticks, quick, 1_000, 20_000),
        period: args.period.unwrap_or(Duration::from_micros(10)),
        runs: session.runs(3, 3),
        sweep: Sweep::new(&args.pins, &args.spins, &args.modes),
    }
}

/// The rows asked for, in the order scaling cells, zmq, tt.
fn rows(plan: &Plan) -> Vec<Row> {
    let wants = |name: &str| plan.wanted.iter().any(|r| r == name);
    let mut rows = Vec::new();
    if wants("scaling") {
        for &p in &plan.pairs {
            for &len in &plan.lens {
                rows.push(Row::new(RowKind::Scaling { pairs: p, len }, plan.count));
            }
        }
    }
    if wants("zmq") {
        rows.push(Row::new(RowKind::Zmq, plan.count));
    }
    if wants("tt") {
        rows.push(Row::new(RowKind::Tt { period: plan.period }, plan.ticks));
    }
    rows
}

fn record_settings(result: &mut BenchResult, plan: &Plan) {
    let sweep = &plan.sweep;
    let spins: Vec<String> = sweep.spins.iter().map(|s| spin_literal(*s)).collect();
    for (k, v) in [
        ("rows", plan.wanted.join(",")),
        ("pairs", format!("{:?}", plan.pairs)),
        ("channel_len", format!("{:?}", plan.lens)),
        ("count", plan.count.to_string()),
        ("ticks", plan.ticks.to_string()),
        ("period", super::tt::literal(plan.period)),
        (
            "pins",
            sweep
                .pins
                .iter()
                .map(super::tune_sweep::pin_literal)
                .collect::<Vec<_>>()
                .join(" | "),
        ),
        ("spins", spins.join(",")),
        (
            "modes",
            sweep
                .modes
                .iter()
                .map(|m| super::tt::mode_name(*m))
                .collect::<Vec<_>>()
                .join(","),
        ),
        ("runs", plan.runs.to_string()),
        ("warmup_runs", "1 (the default, a fifth of the count)".to_string()),
    ] {
        result.settings.insert(k.into(), v);
    }
}

/// A row's settings, the default first and then the sweep, each with its (empty) case.
fn sweep_cases(row: &Row, sweep: &Sweep) -> (Vec<Setting>, Vec<Case>) {
    let mut settings = vec![Setting::DEFAULT];
    settings.extend(sweep.settings(row.time_triggered()));
    let cases = settings
        .iter()
        .map(|s| {
            let mut params = vec![("row", row.key())];
            params.extend(s.params());
            Case::new("smx", &params)
        })
        .collect();
    (settings, cases)
}

/// A warm-up round of each row's default, then `runs` rounds of every setting of every row.
fn measure_rounds(
    rows: &[Row],
    sweeps: &mut [(Vec<Setting>, Vec<Case>)],
    runs: usize,
    registry: &smx_runtime::Registry,
    session: &mut Session,
) {
    for round in 0..=runs {
        for (row, (settings, cases)) in rows.iter().zip(sweeps.iter_mut()) {
            if round == 0 {
                let run = Run::with_steal(|| row.run(registry, &settings[0], (row.count / WARMUP_DIVISOR).max(1)));
                session.progress("tune", &cases[0], 0, runs, &run, row.metric());
                continue;
            }
            // Rotated by a share of the order per round, so that over the rounds each setting
            // (the default too) runs early and late in its row.
            let n = settings.len();
            let offset = (round - 1) * n / runs + 1;
            for k in 0..n {
                let i = (k + offset) % n;
                let run = Run::with_steal(|| row.run(registry, &settings[i], row.count));
                session.progress("tune", &cases[i], round, runs, &run, row.metric());
                cases[i].push(run);
            }
        }
    }
}

/// How the verdict tables read each row.
fn row_views(rows: &[Row], sweeps: &[(Vec<Setting>, Vec<Case>)]) -> Vec<RowView> {
    rows.iter()
        .zip(sweeps)
        .map(|(r, (_, cases))| {
            // `--tt-mode auto` decides per run; the runs of one machine decide alike.
            let cyclic = cases[0].median("auto_chose_cyclic").is_some_and(|v| v >= 0.5);
            RowView {
                key: r.key(),
                metric: r.metric(),
                higher_is_better: r.higher_is_better(),
                twin: Setting::twin_of_default(r.time_triggered(), cyclic).label(),
            }
        })
        .collect()
}

fn reading_note(runs: usize) -> String {
    format!(
        "default = no option; each other setting is the options shown. A row's figure is the median of {runs} \
         interleaved rounds; the verdict asks for the default within {:.0} % of the best rate, or at most \
         {:.1}x the best miss rate (the tt row). A row whose default misses that is measured again, the default \
         and the best alternating for {} more rounds, and the verdict is the re-measurement's: the best of \
         many noisy settings is the one the noise favoured most. The last column divides the default by the \
         sweep's run of the very setting the default resolves to: its distance from 1.00 is this machine's \
         noise, unless it says NOT noise (the runs of the two lie apart).",
        tune_verdict::TOLERANCE * 100.0,
        1.0 + tune_verdict::TOLERANCE,
        runs * AGAIN_FACTOR,
    )
}

/// For a time-triggered row, its default and `smxrun probe` at the row's period and tick count,
/// alternating for `rounds` rounds: two cases marked with the row ([`tune_verdict::FLOOR_OF`]).
/// Apart from the sweep, so that the probe and the default meet the machine in the same state
/// as often as the confirmation's two settings do.
fn floor(row: &Row, rounds: usize, registry: &smx_runtime::Registry, session: &mut Session) -> Option<[Case; 2]> {
    let period = row.period()?;
    let mark = [(tune_verdict::FLOOR_OF, row.key())];
    let mut cases = [
        Case::new("smx", &[mark[0].clone(), ("setting", "default".into())]),
        Case::new("probe", &mark),
    ];
    alternate(&mut cases, rounds, "tune (floor)", session, |i| match i {
        0 => (row.run(registry, &Setting::DEFAULT, row.count), row.metric()),
        _ => (super::tt::probe_run(period, row.count), "miss_rate_pct"),
    });
    Some(cases)
}

/// Runs two cases alternating for `rounds` rounds, each round started by the other one, so that
/// neither always runs first: `run(i)` is one run of case `i` and the metric its progress line
/// shows.
fn alternate(
    cases: &mut [Case; 2],
    rounds: usize,
    what: &str,
    session: &mut Session,
    mut run: impl FnMut(usize) -> (Run, &'static str),
) {
    for round in 1..=rounds {
        for k in 0..2 {
            let i = (k + round) % 2;
            let mut metric = "";
            let measured = Run::with_steal(|| {
                let (measured, shown) = run(i);
                metric = shown;
                measured
            });
            session.progress(what, &cases[i], round, rounds, &measured, metric);
            cases[i].push(measured);
        }
    }
}

/// When `cases` (the row's default first, then its sweep) put the default outside the goal, the
/// default and the sweep's best measured again, alternating for `runs` rounds: two cases marked
/// `confirm`. None otherwise.
fn confirm(
    row: &Row,
    settings: &[Setting],
    cases: &[Case],
    runs: usize,
    registry: &smx_runtime::Registry,
    session: &mut Session,
) -> Vec<Case> {
    let refs: Vec<&Case> = cases.iter().collect();
    let verdict = tune_verdict::Verdict::of(&row.key(), &refs, row.metric(), row.higher_is_better());
    let Some((best_label, _)) = verdict.best.as_ref().filter(|_| verdict.within() == Some(false)) else {
        return Vec::new();
    };
    let Some(best) = settings.iter().find(|s| &s.label() == best_label) else {
        return Vec::new();
    };
    let pair = [&settings[0], best];
    let confirmed: Vec<Case> = cases
        .iter()
        .filter(|c| c.param("setting") == Some("default") || c.param("setting") == Some(best_label.as_str()))
        .map(|c| {
            let mut params: Vec<(&str, String)> = c.params.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            params.push((tune_verdict::CONFIRM, "yes".into()));
            Case::new("smx", &params)
        })
        .collect();
    let Ok(mut confirmed) = <[Case; 2]>::try_from(confirmed) else {
        return Vec::new();
    };
    alternate(&mut confirmed, runs, "tune (again)", session, |i| {
        (row.run(registry, pair[i], row.count), row.metric())
    });
    confirmed.into()
}
