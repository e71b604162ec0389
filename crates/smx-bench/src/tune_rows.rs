//! The rows `bench tune` measures, each one run of an existing experiment's net under a given
//! setting: a `bench scaling` cell, the `bench zmq` net (PIPELINE over tcp at length 1, as the
//! net declares nothing), and `nets/src_snk.smx`'s time-triggered pair beside a free-running one.

use std::time::Duration;

use smx_graph::NetGraph;
use smx_runtime::Registry;

use super::net::{self, Override};
use super::result::Run;
use super::tune_sweep::Setting;
use super::{cpu, scaling, tt, zmq};

/// What a row runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RowKind {
    Scaling { pairs: usize, len: u32 },
    Zmq,
    Tt { period: Duration },
}

/// One row: its net, compiled once, and how much it runs.
pub struct Row {
    pub kind: RowKind,
    pub graph: Result<NetGraph, String>,
    /// Messages per pair (scaling), per run (zmq), or ticks (tt).
    pub count: u64,
}

/// The payload size of every row, the experiments' default.
const SIZE: usize = 8;

impl Row {
    pub fn new(kind: RowKind, count: u64) -> Row {
        let graph = match kind {
            RowKind::Scaling { pairs, .. } => net::compile_net(&format!("tune-{pairs}.smx"), &scaling::net_text(pairs)),
            RowKind::Zmq => net::compile_net("tune-zmq.smx", &zmq::net_text(false)),
            RowKind::Tt { period } => net::compile_net("tune-tt.smx", &tt_net_text(period)),
        };
        Row { kind, graph, count }
    }

    /// How the row is named in the tables and in its cases' `row` parameter.
    pub fn key(&self) -> String {
        match self.kind {
            RowKind::Scaling { pairs, len } => format!("scaling pairs={pairs} len={len}"),
            RowKind::Zmq => "zmq pipeline tcp len=1".into(),
            RowKind::Tt { period } => format!("tt[{}](Src.Snk)|(Src.Snk)", tt::literal(period)),
        }
    }

    /// The figure compared: the message rate, or the tt row's deadline-miss rate.
    pub fn metric(&self) -> &'static str {
        match self.kind {
            RowKind::Tt { .. } => "miss_rate_pct",
            _ => "msg_rate_hz",
        }
    }

    pub fn higher_is_better(&self) -> bool {
        !matches!(self.kind, RowKind::Tt { .. })
    }

    pub fn time_triggered(&self) -> bool {
        matches!(self.kind, RowKind::Tt { .. })
    }

    /// The period of a time-triggered row.
    pub fn period(&self) -> Option<Duration> {
        match self.kind {
            RowKind::Tt { period } => Some(period),
            _ => None,
        }
    }

    /// One run of the row under `setting` (`count` overrides the row's own, for the warm-up).
    pub fn run(&self, registry: &Registry, setting: &Setting, count: u64) -> Run {
        let graph = match &self.graph {
            Ok(g) => g,
            Err(e) => return Run::failed(e.clone()),
        };
        let base = setting.options();
        match self.kind {
            RowKind::Scaling { pairs, len } => {
                let base = smx_runtime::RunOptions {
                    default_channel_len: Some(len),
                    ..base
                };
                scaling::pairs_run(graph, registry, pairs, count, SIZE, base)
            }
            RowKind::Zmq => {
                let shape = zmq::Shape {
                    pattern: "pipeline",
                    transport: zmq::transport("tcp"),
                    count,
                    size: SIZE,
                    channel_len: 1,
                    chains: false,
                };
                let cpu = cpu::process_cpu_s();
                let mut run = zmq::smx_run_with(graph, registry, &shape, base);
                let received = run.metrics.get("received").copied().unwrap_or(0.0) as u64;
                run.set_cpu(cpu::process_cpu_s() - cpu, received);
                run
            }
            RowKind::Tt { .. } => tt_run(graph, registry, count, base),
        }
    }
}

/// `nets/src_snk.smx` at `period`: a time-triggered pair and a free-running one.
pub fn tt_net_text(period: Duration) -> String {
    format!(
        "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n\
         connect tt[{}](Src.Snk) | (Src.Snk)\n",
        tt::literal(period)
    )
}

/// Misses counted as `bench tt` counts them; the run is invalid unless the free-running pair
/// moved every message (a setting that starves it must not win on misses).
fn tt_run(graph: &NetGraph, registry: &Registry, ticks: u64, base: smx_runtime::RunOptions) -> Run {
    let overrides = [Override::new("smx_src_rand", "count", ticks)];
    let report = match net::run_graph_with(graph, registry, &overrides, base) {
        Ok(r) => r,
        Err(e) => return Run::failed(e),
    };
    let mut run = Run::new();
    if report.status != smx_runtime::report::Status::Ok {
        run.invalidate(format!("run status {}", report.status.as_str()));
    }
    let totals = tt::firewall_totals(&report.firewalls);
    if totals.pairs != 1 {
        run.invalidate(format!("the firewalls serve {} pairs, expected 1", totals.pairs));
    }
    for c in report.channels.iter().filter(|c| c.timing == "none") {
        if c.read != ticks || c.dropped + c.overwritten + c.left > 0 {
            run.invalidate(format!(
                "free-running channel {} ({} -> {}): {} of {ticks} read",
                c.name, c.from, c.to, c.read
            ));
        }
    }
    // The runtime's report line for `--tt-mode auto` choosing the executive: which mode the
    // default ran in, so the verdict can find the sweep's run of the same setting.
    let cyclic = report.notes.iter().any(|w| w.starts_with("tt-mode auto: cyclic"));
    run.set("auto_chose_cyclic", if cyclic { 1.0 } else { 0.0 });
    let misses = totals.produce_misses + totals.consume_misses + totals.missed_tick_misses;
    let due = totals.due.max(ticks).max(1);
    run.set("misses", misses as f64)
        .set("miss_rate_pct", 100.0 * misses as f64 / due as f64)
        .set("ticks", totals.ticks as f64)
        .set("wall_s", report.wall_time_s)
        .set("lateness_p99_ns", totals.lateness[1]);
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tt_row_is_the_readmes_first_net() {
        let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../nets/src_snk.smx")).unwrap();
        assert_eq!(tt_net_text(Duration::from_micros(10)), shipped);
    }

    #[test]
    fn the_tt_row_counts_misses_and_checks_the_free_pair() {
        let row = Row::new(
            RowKind::Tt {
                period: Duration::from_millis(1),
            },
            20,
        );
        let registry = crate::builtin_registry();
        let run = row.run(&registry, &Setting::DEFAULT, 20);
        assert!(run.valid, "{:?}", run.problems);
        assert!(run.metrics.contains_key("miss_rate_pct") && run.metrics["ticks"] >= 20.0);
        // Four box threads and a firewall: auto picks the executive on fewer than five cores.
        let cores = smx_timing::sched::allowed_cores().len();
        assert_eq!(run.metrics["auto_chose_cyclic"] == 1.0, cores < 5, "{cores} cores");
        let forced = Setting {
            mode: Some(smx_runtime::TtMode::Threads),
            ..Setting::DEFAULT
        };
        assert_eq!(row.run(&registry, &forced, 20).metrics["auto_chose_cyclic"], 0.0);
    }
}
