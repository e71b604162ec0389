//! `bench load`: nets beside busy programs. Each workload runs with no busy loop and beside
//! N loops that never sleep (threads of a separate process, unpinned, at the default
//! priority, as `yes > /dev/null` would be), the cases interleaved round by round. A net runs
//! through `smxrun` itself; the peers are the pair harness's queues (blocking and
//! busy-polling crossbeam, an rtrb ring) with two pairs, the shape of two `Src.Snk`.
//!
//! A workload's slowdown is its median wall time beside N loops over its median alone. A
//! runtime that keeps its fair share of the machine slows down about as much as the peer that
//! slows down least, so each workload's slowdown is also given as a ratio to that peer's.

use std::process::{Child, Command, Stdio};

use super::Session;
use super::args::{LoadArgs, or_default, pick};
use super::baseline::pairs::{self, PairShape};
use super::baseline::{crossbeam, crossbeam_spin, ring};
use super::result::{BenchResult, Case, Run, Table};

/// The nets, by name: one producer into two consumers, two into one, and two pairs.
const NETS: &[(&str, &str)] = &[
    (
        "fan_out",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.(Snk|Snk)\n",
    ),
    (
        "fan_in",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect (Src!Src).Snk\n",
    ),
    (
        "two_pairs",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk | Src.Snk\n",
    ),
];

const PEERS: &[&str] = &["crossbeam", "crossbeam-spin", "rtrb"];

/// The hidden argument that makes `smxrun` a busy loop (see [`busy_loop`]).
pub const BUSY_ARG: &str = "__busy";

pub fn run(args: &LoadArgs, session: &mut Session) -> BenchResult {
    let mut result = session.start("load");
    let count = pick(args.count, session.quick, 5_000, 20_000).max(1);
    let busy = or_default(&args.busy, session.quick, &[0, 2], &[0, 2]);
    let runs = session.runs(1, 3);
    for (k, v) in [
        ("count", count.to_string()),
        ("busy", busy.iter().map(u32::to_string).collect::<Vec<_>>().join(",")),
        ("runs", runs.to_string()),
    ] {
        result.settings.insert(k.into(), v);
    }
    let Ok(exe) = std::env::current_exe() else {
        result.notes.push("nothing measured: cannot find smxrun itself".into());
        return result;
    };
    let Some(dir) = super::scratch_dir(&mut result, tempfile::tempdir()) else {
        return result;
    };
    for (name, text) in NETS {
        if let Err(e) = std::fs::write(dir.path().join(format!("{name}.smx")), text) {
            result
                .notes
                .push(format!("nothing measured: cannot write the nets: {e}"));
            return result;
        }
    }
    let workloads: Vec<&str> = NETS.iter().map(|(n, _)| *n).chain(PEERS.iter().copied()).collect();
    let mut cases: Vec<Case> = busy
        .iter()
        .flat_map(|n| {
            workloads
                .iter()
                .map(move |w| Case::new("load", &[("workload", w.to_string()), ("busy", n.to_string())]))
        })
        .collect();
    for i in 0..=runs {
        for case in cases.iter_mut() {
            let loops: u32 = case.param("busy").and_then(|b| b.parse().ok()).unwrap_or(0);
            let workload = case.param("workload").unwrap_or("").to_string();
            let r = match BusyLoops::start(&exe, loops) {
                Ok(busy) => {
                    let r = Run::with_steal(|| run_workload(&workload, &exe, dir.path(), count));
                    drop(busy);
                    r
                }
                Err(e) => Run::failed(e),
            };
            session.progress("load", case, i, runs, &r, "wall_s");
            if i > 0 {
                case.push(r);
            }
        }
    }
    result.cases.extend(cases);
    result.tables.push(table(&result, &workloads, &busy, count));
    result
}

/// `loops` busy processes, stopped and reaped when dropped.
struct BusyLoops(Vec<Child>);

impl BusyLoops {
    fn start(exe: &std::path::Path, loops: u32) -> Result<BusyLoops, String> {
        let mut children = BusyLoops(Vec::new());
        for _ in 0..loops {
            let child = Command::new(exe)
                .arg(BUSY_ARG)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start a busy loop: {e}"))?;
            children.0.push(child);
        }
        Ok(children)
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A process that only computes, until it is killed or its parent dies.
pub fn busy_loop() -> ! {
    // SAFETY: prctl with PR_SET_PDEATHSIG and a signal number only sets a flag of this process.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let mut x = 0u64;
    loop {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

fn run_workload(workload: &str, exe: &std::path::Path, dir: &std::path::Path, count: u64) -> Run {
    let shape = PairShape {
        pairs: 2,
        count,
        len: 1,
        size: 8,
        pin: true,
    };
    match workload {
        "crossbeam" => pairs::run::<crossbeam::Blocking>(shape),
        "crossbeam-spin" => pairs::run::<crossbeam_spin::Spin>(shape),
        "rtrb" => pairs::run::<ring::Rtrb>(shape),
        net => net_run(exe, &dir.join(format!("{net}.smx")), count),
    }
}

/// One run of a net through `smxrun`, its wall time read from the JSON report.
fn net_run(exe: &std::path::Path, net: &std::path::Path, count: u64) -> Run {
    let out = match Command::new(exe)
        .arg(net)
        .args(["-n", &count.to_string(), "-q", "--report", "json"])
        .output()
    {
        Ok(out) => out,
        Err(e) => return Run::failed(format!("cannot start smxrun: {e}")),
    };
    let report: serde_json::Value = match serde_json::from_slice(&out.stdout) {
        Ok(report) => report,
        Err(_) => {
            return Run::failed(format!(
                "no report ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    };
    let mut run = Run::new();
    if report["status"] != "ok" {
        run.invalidate(format!("status {}", report["status"]));
    }
    if let Some(wall) = report["wall_time_s"].as_f64() {
        run.set("wall_s", wall);
    }
    run
}

fn table(result: &BenchResult, workloads: &[&str], busy: &[u32], count: u64) -> Table {
    let mut header = vec!["workload".to_string(), "alone [s]".to_string()];
    for n in busy.iter().filter(|n| **n > 0) {
        header.push(format!("{n} loops [s]"));
        header.push(format!("slowdown ({n})"));
        header.push(format!("/ best peer ({n})"));
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(
        &format!(
            "load: {count} messages per net or pair beside N busy loops; median (min-max) wall time of the valid \
             runs; slowdown = beside N loops / alone; / best peer = that slowdown over the smallest slowdown of \
             the peers (1 = as fair a share as the best peer kept)"
        ),
        &header,
    );
    let median = |w: &str, n: u32| {
        result
            .find("load", &[("workload", w), ("busy", &n.to_string())])
            .and_then(|c| c.median("wall_s"))
    };
    let slowdown = |w: &str, n: u32| match (median(w, 0), median(w, n)) {
        (Some(alone), Some(loaded)) if alone > 0.0 => Some(loaded / alone),
        _ => None,
    };
    for w in workloads {
        let cell = |n: u32| {
            result
                .find("load", &[("workload", w), ("busy", &n.to_string())])
                .map_or("-".into(), |c| c.cell("wall_s", 1.0, 3))
        };
        let mut row = vec![w.to_string(), cell(0)];
        for &n in busy.iter().filter(|n| **n > 0) {
            let best = PEERS
                .iter()
                .filter_map(|p| slowdown(p, n))
                .fold(None, |best: Option<f64>, s| Some(best.map_or(s, |b| b.min(s))));
            let own = slowdown(w, n);
            row.push(cell(n));
            row.push(own.map_or("-".into(), |s| format!("{s:.1}")));
            row.push(match (own, best) {
                (Some(s), Some(b)) if b > 0.0 => format!("{:.1}", s / b),
                _ => "-".into(),
            });
        }
        t.row(row);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_net_of_the_experiment_is_one_the_language_accepts() {
        for (name, text) in NETS {
            if let Err(e) = crate::net::compile_net(name, text) {
                panic!("{e}");
            }
        }
    }
}
