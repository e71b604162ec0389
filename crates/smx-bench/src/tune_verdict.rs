//! Reading a `bench tune` result: per row, the default's median against the best setting's, and
//! whether the default is within the goal (no more than 10 % slower, no more than 1.1x the
//! misses).

use super::result::{BenchResult, Case, Table};

/// How far the default may be from the best setting and still be "within".
pub const TOLERANCE: f64 = 0.10;

/// The parameter that marks the cases of a row's re-measurement (the default and the sweep's
/// best, alternating, after the sweep; see [`super::tune`]).
pub const CONFIRM: &str = "confirm";

/// The parameter that names the row a `probe` case is the platform floor of.
pub const FLOOR_OF: &str = "floor_of";

/// How many times the platform floor's miss rate a time-triggered row's default may miss (issue
/// 15's goal for `nets/src_snk.smx`: the runtime's own misses at most half the timer's).
pub const FLOOR_BOUND: f64 = 1.5;

/// One row's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub row: String,
    pub default: Option<f64>,
    /// The best sweep setting's label and median.
    pub best: Option<(String, f64)>,
    pub higher_is_better: bool,
}

impl Verdict {
    /// From the cases of one row (the default's and the sweep's), by the row's metric.
    pub fn of(row: &str, cases: &[&Case], metric: &str, higher_is_better: bool) -> Verdict {
        let default = cases
            .iter()
            .find(|c| c.param("setting") == Some("default"))
            .and_then(|c| c.median(metric));
        let best = cases
            .iter()
            .filter(|c| c.param("setting") != Some("default"))
            .filter_map(|c| Some((c.param("setting")?.to_string(), c.median(metric)?)))
            .reduce(|a, b| {
                let b_wins = if higher_is_better { b.1 > a.1 } else { b.1 < a.1 };
                if b_wins { b } else { a }
            });
        Verdict {
            row: row.to_string(),
            default,
            best,
            higher_is_better,
        }
    }

    /// Default over best (below 1 is worse for a rate, above 1 is worse for misses); `None`
    /// without both figures, infinite when the best missed nothing and the default did.
    pub fn ratio(&self) -> Option<f64> {
        let (d, (_, b)) = (self.default?, self.best.as_ref()?);
        if *b == 0.0 {
            Some(if d == 0.0 { 1.0 } else { f64::INFINITY })
        } else {
            Some(d / b)
        }
    }

    /// Whether the default meets the goal; `None` when a figure is missing.
    pub fn within(&self) -> Option<bool> {
        let r = self.ratio()?;
        Some(if self.higher_is_better {
            r >= 1.0 - TOLERANCE
        } else {
            r <= 1.0 + TOLERANCE
        })
    }

    /// The verdict, and when the default misses the goal while the sweep's run of its very
    /// setting (`twin`, the same options by hand) meets it, that the miss is the machine's noise.
    pub fn verdict_with_twin(&self, twin: Option<f64>) -> String {
        let twin_within = Verdict {
            default: twin,
            ..self.clone()
        }
        .within();
        match (self.within(), twin_within) {
            (Some(false), Some(true)) => {
                format!("{}, but the same setting by hand is within: noise", self.verdict_text())
            }
            _ => self.verdict_text(),
        }
    }

    pub fn verdict_text(&self) -> String {
        let bound = self.bound();
        match (self.within(), self.higher_is_better) {
            (None, _) => "- (no valid run)".into(),
            (Some(true), _) => format!("ok: within {bound}"),
            (Some(false), true) => format!("SLOWER than the best by more than {bound}"),
            (Some(false), false) => format!("MISSES more than {bound} the best"),
        }
    }

    /// The goal's bound as the verdicts say it: `10 %` of a rate, `1.1x` of a miss rate.
    fn bound(&self) -> String {
        if self.higher_is_better {
            format!("{} %", (TOLERANCE * 100.0).round())
        } else {
            format!("{:.1}x", 1.0 + TOLERANCE)
        }
    }
}

/// The sweep's cases of a result's `cases` that belong to `row`.
pub fn row_cases<'a>(cases: &'a [Case], row: &str) -> Vec<&'a Case> {
    cases
        .iter()
        .filter(|c| c.param("row") == Some(row) && c.param(CONFIRM).is_none())
        .collect()
}

/// The re-measurement of `row` as a verdict of its own (the default against the one setting
/// measured beside it), when there was one.
pub fn confirmed(cases: &[Case], row: &str, metric: &str, higher_is_better: bool) -> Option<Verdict> {
    let cases: Vec<&Case> = cases
        .iter()
        .filter(|c| c.param("row") == Some(row) && c.param(CONFIRM).is_some())
        .collect();
    let v = Verdict::of(row, &cases, metric, higher_is_better);
    v.within().map(|_| v)
}

/// The verdict of a row: the sweep's, or where the default missed the goal in the sweep and was
/// measured again beside the sweep's best, the re-measurement's.
///
/// When the sweep's best is `twin_label`, the very options the default resolves to, a gap
/// cannot be the default's: the same configuration was measured twice, and the gap is noise.
pub fn verdict_of_row(sweep: &Verdict, again: Option<&Verdict>, twin_label: &str, twin: Option<f64>) -> String {
    let best_is_twin = sweep.best.as_ref().is_some_and(|(label, _)| label == twin_label);
    match (sweep.within(), again) {
        (Some(false), _) if best_is_twin => {
            "ok: the best is the default's own setting given by hand, so the gap is this machine's noise".into()
        }
        (Some(false), Some(again)) => match again.within() {
            Some(true) => format!(
                "ok: within {} when measured again beside the best (the sweep's gap was noise)",
                sweep.bound()
            ),
            _ => format!("{}, also when measured again beside it", sweep.verdict_text()),
        },
        _ => sweep.verdict_with_twin(twin),
    }
}

/// How a metric is shown: scale and unit.
fn unit(metric: &str) -> (f64, &'static str) {
    match metric {
        "msg_rate_hz" => (1e-3, "k msg/s"),
        "miss_rate_pct" => (1.0, "% missed"),
        _ => (1.0, ""),
    }
}

fn shown(v: f64, metric: &str) -> String {
    let v = v * unit(metric).0;
    format!("{v:.*}", super::result::decimals_for(v))
}

/// What the tables need to know of a row.
#[derive(Debug, Clone, PartialEq)]
pub struct RowView {
    pub key: String,
    pub metric: &'static str,
    pub higher_is_better: bool,
    /// The label of the sweep setting that runs as the default does.
    pub twin: String,
}

/// The verdict table: one line per row, in order.
pub fn table(result: &BenchResult, rows: &[RowView]) -> Table {
    let mut t = Table::new(
        "tune: defaults against the best setting of the sweep (median (min-max) of the valid runs)",
        &[
            "row",
            "figure",
            "default",
            "best setting",
            "best",
            "default/best",
            "measured again",
            "verdict",
            "default/same setting by hand (noise)",
        ],
    );
    for RowView {
        key: row,
        metric,
        higher_is_better: higher,
        twin,
    } in rows
    {
        let cases = row_cases(&result.cases, row);
        let v = Verdict::of(row, &cases, metric, *higher);
        let again = confirmed(&result.cases, row, metric, *higher);
        let twin_case = cases.iter().find(|c| c.param("setting") == Some(twin.as_str()));
        let twin_median = twin_case.and_then(|c| c.median(metric));
        let default_case = cases.iter().find(|c| c.param("setting") == Some("default"));
        let (scale, unit) = unit(metric);
        let default_cell = cases
            .iter()
            .find(|c| c.param("setting") == Some("default"))
            .map_or_else(|| "-".into(), |c| c.label(c.cell_auto(metric, scale)));
        let (best_label, best_cell) = match &v.best {
            Some((label, _)) => {
                let case = cases.iter().find(|c| c.param("setting") == Some(label.as_str()));
                (
                    label.clone(),
                    case.map_or_else(|| "-".into(), |c| c.cell_auto(metric, scale)),
                )
            }
            None => ("-".into(), "-".into()),
        };
        t.row(vec![
            row.clone(),
            unit.to_string(),
            default_cell,
            best_label,
            best_cell,
            v.ratio().map_or_else(|| "-".into(), |r| format!("{r:.2}")),
            again
                .as_ref()
                .and_then(Verdict::ratio)
                .map_or_else(|| "-".into(), |r| format!("{r:.2}")),
            verdict_of_row(&v, again.as_ref(), twin, twin_median),
            noise_cell(default_case.copied(), twin_case.copied(), metric, twin),
        ]);
    }
    t
}

/// The last column of the verdict table: the default over the sweep's run of its very setting,
/// whose distance from 1.00 is this machine's noise; unless the two cases' runs do not overlap
/// at all, which no noise explains, and the cell says so instead of calling it noise.
fn noise_cell(default: Option<&Case>, twin: Option<&Case>, metric: &str, twin_label: &str) -> String {
    let (Some(default), Some(twin)) = (default, twin) else {
        return "-".into();
    };
    let (Some(d), Some(t)) = (default.summary.get(metric), twin.summary.get(metric)) else {
        return "-".into();
    };
    if t.median <= 0.0 {
        return "-".into();
    }
    let ratio = d.median / t.median;
    if d.max < t.min || t.max < d.min {
        format!("{ratio:.2} ({twin_label}): NOT noise, the runs of the two do not overlap")
    } else {
        format!("{ratio:.2} ({twin_label})")
    }
}

/// The time-triggered rows' defaults against the platform floor measured beside them, round by
/// round (the cases marked [`FLOOR_OF`]): `smxrun probe` at the row's period, an empty loop
/// that misses only what the machine takes.
pub fn floor_table(cases: &[Case], rows: &[RowView]) -> Table {
    let mut t = Table::new(
        "tune: time-triggered defaults against the platform floor (smxrun probe at the same period and ticks, alternating with the default)",
        &[
            "row",
            "default [% missed]",
            "probe [% missed]",
            "default/probe",
            "verdict",
        ],
    );
    for view in rows {
        let of_row = |series: &str| {
            cases
                .iter()
                .find(|c| c.series == series && c.param(FLOOR_OF) == Some(view.key.as_str()))
        };
        let Some(floor) = of_row("probe") else {
            continue;
        };
        let default = of_row("smx");
        let metric = view.metric;
        let against = Verdict {
            row: view.key.clone(),
            default: default.and_then(|c| c.median(metric)),
            best: floor.median(metric).map(|f| ("probe".to_string(), f)),
            higher_is_better: false,
        };
        let ratio = against.ratio();
        t.row(vec![
            view.key.clone(),
            default.map_or_else(|| "-".into(), |c| c.label(c.cell_auto(metric, 1.0))),
            floor.label(floor.cell_auto(metric, 1.0)),
            ratio.map_or_else(|| "-".into(), |r| format!("{r:.2}")),
            floor_verdict(ratio),
        ]);
    }
    t
}

fn floor_verdict(ratio: Option<f64>) -> String {
    match ratio {
        None => "- (no valid run)".into(),
        // An empty loop cannot miss more than a net's loop at the same period but by noise.
        Some(r) if r < 1.0 => format!(
            "ok: at most {FLOOR_BOUND:.1}x the floor (the probe missed more than the default: this machine's noise)"
        ),
        Some(r) if r <= FLOOR_BOUND => format!("ok: at most {FLOOR_BOUND:.1}x the floor"),
        Some(_) => format!("MISSES more than {FLOOR_BOUND:.1}x the floor"),
    }
}

/// Every setting's median, settings down and rows across (the detail behind the verdicts).
pub fn sweep_table(result: &BenchResult, rows: &[RowView]) -> Table {
    let mut columns = vec!["setting".to_string()];
    columns.extend(rows.iter().map(|r| format!("{} [{}]", r.key, unit(r.metric).1)));
    let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut t = Table::new("tune: every setting (medians of the valid runs)", &columns);
    let mut settings: Vec<&str> = Vec::new();
    for c in result.cases.iter().filter(|c| c.param(CONFIRM).is_none()) {
        if let Some(s) = c.param("setting").filter(|s| !settings.contains(s)) {
            settings.push(s);
        }
    }
    for setting in settings {
        let mut line = vec![setting.to_string()];
        for RowView { key: row, metric, .. } in rows {
            let case = row_cases(&result.cases, row)
                .into_iter()
                .find(|c| c.param("setting") == Some(setting));
            line.push(
                case.and_then(|c| c.median(metric))
                    .map_or_else(|| "-".into(), |v| shown(v, metric)),
            );
        }
        t.row(line);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Run;

    fn case(setting: &str, metric: &str, values: &[f64]) -> Case {
        let mut c = Case::new("smx", &[("row", "r".into()), ("setting", setting.into())]);
        for v in values {
            let mut run = Run::new();
            run.set(metric, *v);
            c.push(run);
        }
        c
    }

    #[test]
    fn a_rate_within_ten_percent_of_the_best_is_ok() {
        let cases = [
            case("default", "rate", &[90.0, 95.0, 91.0]),
            case("a", "rate", &[100.0, 101.0, 99.0]),
            case("b", "rate", &[50.0, 60.0, 55.0]),
        ];
        let refs: Vec<&Case> = cases.iter().collect();
        let v = Verdict::of("r", &refs, "rate", true);
        assert_eq!(v.best, Some(("a".into(), 100.0)));
        assert_eq!(v.ratio(), Some(0.91));
        assert_eq!(v.within(), Some(true));
        let slow = [case("default", "rate", &[80.0]), case("a", "rate", &[100.0])];
        let refs: Vec<&Case> = slow.iter().collect();
        let v = Verdict::of("r", &refs, "rate", true);
        assert_eq!(v.within(), Some(false));
        assert!(!v.verdict_with_twin(Some(85.0)).contains("noise"));
        assert!(v.verdict_with_twin(Some(95.0)).ends_with("noise"));
        assert!(!v.verdict_with_twin(None).contains("noise"));
    }

    #[test]
    fn a_row_measured_again_is_judged_by_the_second_measurement() {
        let mut cases = vec![case("default", "rate", &[80.0]), case("a", "rate", &[100.0])];
        let refs = row_cases(&cases, "r");
        let sweep = Verdict::of("r", &refs, "rate", true);
        assert_eq!(sweep.within(), Some(false));
        assert!(confirmed(&cases, "r", "rate", true).is_none(), "not measured again yet");
        let again = |setting: &str, v: f64| {
            let mut c = case(setting, "rate", &[v]);
            c.params.insert(CONFIRM.into(), "yes".into());
            c
        };
        cases.extend([again("default", 97.0), again("a", 100.0)]);
        // The re-measurement does not count as the sweep's.
        assert_eq!(Verdict::of("r", &row_cases(&cases, "r"), "rate", true), sweep);
        let confirmation = confirmed(&cases, "r", "rate", true).unwrap();
        assert_eq!(confirmation.ratio(), Some(0.97));
        let text = verdict_of_row(&sweep, Some(&confirmation), "b", None);
        assert!(text.starts_with("ok: within 10 % when measured again"), "{text}");
        cases.truncate(2);
        cases.extend([again("default", 70.0), again("a", 100.0)]);
        let confirmation = confirmed(&cases, "r", "rate", true).unwrap();
        let text = verdict_of_row(&sweep, Some(&confirmation), "b", None);
        assert!(
            text.starts_with("SLOWER") && text.ends_with("also when measured again beside it"),
            "{text}"
        );
        // A row within the goal in the sweep keeps the sweep's verdict.
        let fine = Verdict::of(
            "r",
            &[&case("default", "rate", &[99.0]), &case("a", "rate", &[100.0])],
            "rate",
            true,
        );
        assert_eq!(verdict_of_row(&fine, None, "b", None), "ok: within 10 %");
        // The best is the default's own options by hand: the gap is noise, whatever the
        // re-measurement said.
        let text = verdict_of_row(&sweep, Some(&confirmation), "a", None);
        assert!(text.starts_with("ok: the best is the default's own setting"), "{text}");
    }

    #[test]
    fn a_time_triggered_default_is_judged_against_its_floor() {
        let view = RowView {
            key: "r".into(),
            metric: "m",
            higher_is_better: false,
            twin: "a".into(),
        };
        let floor = |values: &[f64]| {
            let mut c = Case::new("probe", &[(FLOOR_OF, "r".into())]);
            for v in values {
                let mut run = Run::new();
                run.set("m", *v);
                c.push(run);
            }
            c
        };
        let verdict_of = |default: &[f64], probe: &[f64]| {
            let mut beside = case("default", "m", default);
            beside.params.remove("row");
            beside.params.insert(FLOOR_OF.into(), "r".into());
            // The sweep's default is not the one measured beside the floor.
            let cases = [
                case("default", "m", &[99.0]),
                case("a", "m", &[0.1]),
                beside,
                floor(probe),
            ];
            let t = floor_table(&cases, std::slice::from_ref(&view));
            assert_eq!(t.rows.len(), 1);
            (t.rows[0][3].clone(), t.rows[0][4].clone())
        };
        assert_eq!(verdict_of(&[1.4, 1.5, 9.0], &[1.0, 1.0, 0.2]).0, "1.50");
        assert!(verdict_of(&[1.4, 1.5, 9.0], &[1.0]).1.starts_with("ok"));
        assert!(verdict_of(&[1.6], &[1.0]).1.starts_with("MISSES"));
        assert!(verdict_of(&[0.0], &[0.0]).1.starts_with("ok"));
        let noisy_floor = verdict_of(&[1.0], &[4.0]).1;
        assert!(
            noisy_floor.starts_with("ok") && noisy_floor.contains("noise"),
            "{noisy_floor}"
        );
        assert!(!verdict_of(&[1.2], &[1.0]).1.contains("noise"));
        assert!(verdict_of(&[0.1], &[0.0]).1.starts_with("MISSES"));
        // A row without a floor (a rate row) gets no line.
        let cases = [case("default", "m", &[1.0])];
        assert!(floor_table(&cases, std::slice::from_ref(&view)).rows.is_empty());
    }

    /// The default and its own setting by hand whose runs lie apart are not called noise.
    #[test]
    fn the_noise_column_names_runs_that_lie_apart() {
        let default = case("default", "m", &[1.4, 1.5, 1.6]);
        let near = case("a", "m", &[1.3, 1.7, 1.9]);
        let apart = case("a", "m", &[48.0, 50.7, 55.0]);
        assert_eq!(noise_cell(Some(&default), Some(&near), "m", "a"), "0.88 (a)");
        let cell = noise_cell(Some(&default), Some(&apart), "m", "a");
        assert!(cell.starts_with("0.03 (a): NOT noise"), "{cell}");
        assert_eq!(noise_cell(Some(&default), None, "m", "a"), "-");
    }

    #[test]
    fn misses_are_better_when_fewer_and_zero_is_handled() {
        let cases = [
            case("default", "m", &[12.0]),
            case("a", "m", &[10.0]),
            case("b", "m", &[30.0]),
        ];
        let refs: Vec<&Case> = cases.iter().collect();
        let v = Verdict::of("r", &refs, "m", false);
        assert_eq!(v.best, Some(("a".into(), 10.0)));
        assert_eq!(v.within(), Some(false));
        let zero = [case("default", "m", &[0.0]), case("a", "m", &[0.0])];
        let refs: Vec<&Case> = zero.iter().collect();
        assert_eq!(Verdict::of("r", &refs, "m", false).within(), Some(true));
        let inf = [case("default", "m", &[1.0]), case("a", "m", &[0.0])];
        let refs: Vec<&Case> = inf.iter().collect();
        assert_eq!(Verdict::of("r", &refs, "m", false).ratio(), Some(f64::INFINITY));
        let none = [case("a", "m", &[1.0])];
        let refs: Vec<&Case> = none.iter().collect();
        assert_eq!(Verdict::of("r", &refs, "m", false).within(), None);
    }
}
