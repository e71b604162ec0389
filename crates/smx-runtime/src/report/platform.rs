//! Could the platform hold the period? The answer to the first question a time-triggered run
//! raises, from the run's own firewalls and an empty loop at the same period.
//!
//! [`probe_periods`] runs, after the net has ended, a short [`smx_timing::probe`] at each
//! firewall period with the firewall's own scheduling (priority, core, spin): the same timer
//! and release method with nothing in the loop, the machine's floor. [`verdicts`] compares:
//!
//! * the **platform holds** a period when the empty loop lost less than [`HELD_BELOW`] of its
//!   ticks (a tick is lost when its whole period passed before the thread woke up);
//! * this **run held** it when, in addition, every pair through a firewall of that period
//!   missed less than [`HELD_BELOW`] of its deadlines
//!   ([`super::firewall::PairReport::timing_miss_rate`]).
//!
//! Misses of the run beyond the probe's are the run's own doing (threads competing for cores,
//! scheduling, boxes too slow for the period), not the timer's. Consume misses that the net's
//! shape explains (a routing node that forwards fewer messages per period than its inputs
//! deliver) are neither: no machine avoids them, so the verdict leaves them out and says so.
//! The probe is short (at most [`PROBE_BUDGET`]), so it is a floor, not a forecast; the
//! figures are printed with the verdict so that a reader can judge. Without a probe (a report of a library run, or a period
//! too long for a short probe) the line gives the run's figures and the `smxrun probe` command
//! that measures the floor.

use crate::lever::{Lever, LeverWords};
use std::collections::BTreeMap;
use std::time::Duration;

use smx_timing::lateness::human_ns;
use smx_timing::{ProbeOptions, ProbeResult, Spin};

use super::Report;

/// The longest an after-run probe of one period may take.
pub const PROBE_BUDGET: Duration = Duration::from_millis(250);

/// A probe shorter than this many ticks says too little; such a period is not probed.
pub const MIN_PROBE_TICKS: u64 = 100;

/// Below this share of lost ticks (platform) or missed deadlines (run), a period counts as held.
pub const HELD_BELOW: f64 = 0.01;

/// Runs an empty loop at each firewall period of `report` (with the scheduling its firewall
/// had) for at most [`PROBE_BUDGET`] and stores the results in [`Report::probes`]. Periods
/// too long for [`MIN_PROBE_TICKS`] ticks in the budget are skipped. Call it after the run:
/// the probe must not compete with the net for the cores.
pub fn probe_periods(report: &mut Report) {
    let mut seen = Vec::new();
    for f in &report.firewalls {
        if f.period_ns == 0 || seen.contains(&f.period_ns) {
            continue;
        }
        seen.push(f.period_ns);
        let fit = PROBE_BUDGET.as_nanos() as u64 / f.period_ns;
        let ticks = fit.min(f.ticks.max(MIN_PROBE_TICKS));
        if ticks < MIN_PROBE_TICKS {
            continue;
        }
        let opts = ProbeOptions {
            period: Duration::from_nanos(f.period_ns),
            ticks,
            spin: if f.spin_ns == 0 {
                Spin::Off
            } else {
                Spin::Fixed(Duration::from_nanos(f.spin_ns))
            },
            priority: f.priority,
            lock_memory: false,
            core: f.core,
            // The firewall's own scheduling and spin, as it ran.
            may_spin_through: false,
        };
        if let Ok(result) = smx_timing::probe(&opts) {
            report.probes.push(result);
        }
    }
}

/// One line per firewall period: whether the platform and this run held it, with the figures.
pub fn verdicts(report: &Report, words: LeverWords) -> Vec<String> {
    period_verdicts(&report.firewalls, &report.probes, words)
}

/// Fills the report's `periods` with its [`verdicts`], once the probes ran: the JSON report
/// then says what the text report ends with.
pub fn judge_periods(report: &mut Report, words: LeverWords) {
    report.periods = verdicts(report, words);
}

/// [`verdicts`] from the firewalls and probes alone, wherever they were gathered (the
/// processes of one net each bring their own).
pub fn period_verdicts(firewalls: &[super::FirewallReport], probes: &[ProbeResult], words: LeverWords) -> Vec<String> {
    let mut periods: BTreeMap<u64, PeriodFigures> = BTreeMap::new();
    for f in firewalls {
        let e = periods.entry(f.period_ns).or_default();
        e.ticks += f.ticks;
        e.lost += f.missed_ticks;
        for p in &f.pairs {
            e.worst = e.worst.max(p.timing_miss_rate());
            if p.consume_misses_by_shape && p.consume_misses > 0 && !e.shaped.contains(&p.consumer) {
                e.shaped.push(p.consumer.clone());
            }
            if p.produce_misses_by_shape && p.produce_misses > 0 && !e.starved.contains(&p.consumer) {
                e.starved.push(p.consumer.clone());
            }
        }
    }
    periods
        .into_iter()
        // A period none of whose firewalls ticked (the run's start was called off) has no
        // figures to judge.
        .filter(|(_, figures)| figures.ticks > 0)
        .map(|(period, figures)| {
            let probe = probes.iter().find(|p| p.period_ns == period);
            verdict(period, &figures, probe, words)
        })
        .collect()
}

/// What the firewalls of one period did in the run.
#[derive(Default)]
struct PeriodFigures {
    ticks: u64,
    lost: u64,
    /// The worst pair's miss rate that timing answers for ([`super::PairReport::timing_miss_rate`]).
    worst: f64,
    /// The consumers (routing nodes, firewalls of longer periods) whose consume misses the
    /// net's shape explains.
    shaped: Vec<String>,
    /// The consumers whose produce misses the net's shape explains (fed from a firewall of a
    /// longer period).
    starved: Vec<String>,
}

fn share(n: u64, of: u64) -> f64 {
    if of == 0 { 0.0 } else { n as f64 / of as f64 }
}

fn pct(x: f64) -> String {
    format!("{:.2} %", x * 100.0)
}

/// The run's figures as the verdict gives them; misses the net's shape explains are left out
/// and said to be, so that they are read as the shape's and not the machine's.
fn run_figures(lost: f64, figures: &PeriodFigures) -> String {
    let mut run = format!(
        "this run's firewall lost {} of its ticks and its pairs missed up to {} of their deadlines",
        pct(lost),
        pct(figures.worst)
    );
    if !figures.shaped.is_empty() {
        run.push_str(&format!(
            " (not counting the consume misses into {}, which the net's shape explains: see Warnings)",
            figures.shaped.join(" and ")
        ));
    }
    if !figures.starved.is_empty() {
        run.push_str(&format!(
            " (not counting the produce misses into {}, fed by a firewall of a longer period: its ticks look for \
             a message more often than one comes, which loses none)",
            figures.starved.join(" and ")
        ));
    }
    run
}

fn verdict(period_ns: u64, figures: &PeriodFigures, probe: Option<&ProbeResult>, words: LeverWords) -> String {
    let period = human_ns(period_ns);
    let (lost, worst) = (share(figures.lost, figures.ticks), figures.worst);
    let run = run_figures(lost, figures);
    let Some(p) = probe else {
        // Without the platform's figure (a stopped run probes nothing) the run's own misses
        // still ask for attention: whose they are is what the probe would have told.
        let attention = if worst >= HELD_BELOW || lost >= HELD_BELOW {
            format!("Attention: period {period} not held by this run: ")
        } else {
            format!("Period {period}: ")
        };
        return format!(
            "{attention}{run}; not compared with the platform (`{} {}` runs the same loop with \
             nothing in it)",
            words.name(Lever::ProbePeriod),
            exact(period_ns)
        );
    };
    let floor = share(p.misses, p.ticks);
    let sched = if p.rt_priority_granted {
        format!("SCHED_FIFO {}", p.fifo_priority.unwrap_or_default())
    } else {
        "normal scheduling".to_string()
    };
    let empty = format!(
        "an empty loop at this period, run after the net ({sched}), lost {} of {} ticks",
        pct(floor),
        p.ticks,
    );
    // The first words say whether anything needs the reader's attention; the figures follow.
    if floor >= HELD_BELOW {
        // Real-time priority is advice only where the loop ran without it.
        let helps = if p.rt_priority_granted {
            "A longer period or an idle machine helps".to_string()
        } else {
            format!(
                "A longer period, real-time priority ({}, as root) or an idle machine helps",
                words.name(Lever::RealtimeOn)
            )
        };
        format!(
            "Attention: period {period} NOT held by this platform, so not by this run either: {empty}; {run}. \
             {helps} (`{} {}` measures the platform alone)",
            words.name(Lever::ProbePeriod),
            exact(period_ns)
        )
    } else if worst >= HELD_BELOW || lost >= HELD_BELOW {
        format!(
            "Attention: period {period} held by the platform but not by this run: {empty}; {run}: misses of \
             the run's own (threads competing for cores, scheduling, boxes), not of the timer"
        )
    } else {
        format!("Period {period}: held: {run}; {empty}")
    }
}

/// A period as `smxrun probe --period` and the language's `tt[..]` accept it: the largest unit
/// that keeps it exact.
pub(crate) fn exact(ns: u64) -> String {
    for (unit, scale) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns.is_multiple_of(scale) {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real-time priority is advised only where the empty loop ran without it.
    #[test]
    fn a_period_lost_at_real_time_priority_does_not_advise_it() {
        let probe = |granted: bool| ProbeResult {
            period_ns: 10_000,
            ticks: 1000,
            misses: 500,
            miss_rate: 0.5,
            lateness_ns: Default::default(),
            clock_source: "tsc".into(),
            rt_priority_granted: granted,
            spun_through: false,
            fifo_priority: granted.then_some(5),
            memory_locked: false,
            spin_ns: 0,
            wall: Duration::from_millis(10),
            warnings: Vec::new(),
        };
        let figures = PeriodFigures {
            ticks: 1000,
            lost: 500,
            ..Default::default()
        };
        let said = |granted| verdict(10_000, &figures, Some(&probe(granted)), LeverWords::default());
        assert!(said(false).contains("real-time priority ("), "{}", said(false));
        let at_fifo = said(true);
        assert!(at_fifo.starts_with("Attention: period 10.0us NOT held"), "{at_fifo}");
        assert!(!at_fifo.contains("real-time priority"), "{at_fifo}");
    }

    /// A run that probed nothing (it was stopped) still asks for attention where its own
    /// firewall missed, and only there.
    #[test]
    fn a_run_not_compared_with_the_platform_asks_for_attention_by_its_own_misses() {
        let figures = |lost: u64| PeriodFigures {
            ticks: 1000,
            lost,
            ..Default::default()
        };
        let missed = verdict(10_000, &figures(33), None, LeverWords::default());
        assert!(
            missed.starts_with("Attention: period 10.0us not held by this run: "),
            "{missed}"
        );
        assert!(missed.contains("not compared with the platform"), "{missed}");
        let held = verdict(10_000, &figures(0), None, LeverWords::default());
        assert!(held.starts_with("Period 10.0us: this run's firewall lost 0"), "{held}");
    }

    #[test]
    fn periods_are_written_as_the_probe_command_reads_them() {
        assert_eq!(exact(10_000), "10us");
        assert_eq!(exact(1_500_000), "1500us");
        assert_eq!(exact(2_000_000_000), "2s");
        assert_eq!(exact(1_250), "1250ns");
    }
}
