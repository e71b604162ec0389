//! `bench processes`: a net over two processes of one machine against the same net in one
//! process, and the one-way latency of the link between them against a Unix pipe and iceoryx2.
//!
//! **Rate.** `Src.Snk` (1,000,000 messages of 8 B by default) runs through `smxrun` itself,
//! in one process and with `Snk` placed in a second process (the channel becomes a
//! shared-memory link), per channel length, the cases interleaved round by round. A rate is the
//! count over the slower of the two nets' wall times; a run is valid when every message arrived
//! and the link lost none.
//!
//! **Latency** (see `latency`): one message in flight between two threads on two cores, per
//! payload size, through the link's rings (a forwarder echoing what it read, each side
//! copying a payload of its own in, or the payload left in place as a loaned sample), through
//! two pipes, and through iceoryx2's own benchmark when it is given (`--iceoryx2 PATH` or
//! `SMX_ICEORYX2_BENCH`; it reports a mean, the others a p50 and p99), zero-copy and with
//! `--send-copy`. Each way of the link is set against the iceoryx2 way that does the same
//! work: a copy in against `--send-copy`, in place against zero-copy. The echo that reads
//! what it got has no iceoryx2 counterpart (its benchmark never reads a payload).

mod latency;

use std::path::Path;
use std::process::Command;

use super::Session;
use super::args::{ProcessesArgs, or_default, pick};
use super::baseline::iceoryx2;
use super::result::{BenchResult, Case, Run, Table};
use latency::Way;

pub fn run(args: &ProcessesArgs, session: &mut Session) -> BenchResult {
    let mut result = session.start("processes");
    let quick = session.quick;
    let count = pick(args.count, quick, 100_000, 1_000_000).max(1);
    let lens = or_default(&args.channel_len, quick, &[1, 64], &[1, 64]);
    let sizes = or_default(&args.size, quick, &[8, 8192, 1 << 20], &[8, 8192, 1 << 20, 64 << 20]);
    let runs = session.runs(1, 3);
    let peer = iceoryx2::find(args.iceoryx2.as_deref());
    for (k, v) in [
        ("count", count.to_string()),
        ("channel_len", join(&lens)),
        ("size", join(&sizes)),
        ("runs", runs.to_string()),
        (
            "iceoryx2",
            peer.as_ref().map_or("not given".into(), |p| p.display().to_string()),
        ),
    ] {
        result.settings.insert(k.into(), v);
    }
    if peer.is_none() {
        result.notes.push(format!(
            "iceoryx2 not measured: give its benchmark-publish-subscribe with --iceoryx2 PATH or {}",
            iceoryx2::ENV
        ));
    }
    let Some(dir) = super::scratch_dir(
        &mut result,
        tempfile::Builder::new().prefix("smx-bench-").tempdir_in(shm_dir()),
    ) else {
        return result;
    };
    let mut rates = rate_cases(&lens);
    let mut latencies = latency_cases(&sizes, peer.is_some());
    for i in 0..=runs {
        for case in rates.iter_mut() {
            let r = Run::with_steal(|| rate_run(case, dir.path(), count));
            session.progress("processes", case, i, runs, &r, "msg_rate_hz");
            if i > 0 {
                case.push(r);
            }
        }
        for case in latencies.iter_mut() {
            let r = Run::with_steal(|| latency_run(case, dir.path(), peer.as_deref()));
            let metric = if case.param("way").is_some_and(|w| w.starts_with("iceoryx2")) {
                "latency_ns"
            } else {
                "latency_p50_ns"
            };
            session.progress("processes", case, i, runs, &r, metric);
            if i > 0 {
                case.push(r);
            }
        }
    }
    result.cases.extend(rates);
    result.cases.extend(latencies);
    result.tables.push(rate_table(&result, &lens, count));
    result.tables.push(latency_table(&result, &sizes));
    result
}

fn join<T: ToString>(list: &[T]) -> String {
    list.iter().map(T::to_string).collect::<Vec<_>>().join(",")
}

/// Where the rings are made: tmpfs, as the link's own files.
fn shm_dir() -> &'static Path {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() { shm } else { Path::new("/tmp") }
}

fn rate_cases(lens: &[u32]) -> Vec<Case> {
    lens.iter()
        .flat_map(|len| {
            ["one", "two"].map(|p| {
                Case::new(
                    "rate",
                    &[("processes", p.to_string()), ("channel_len", len.to_string())],
                )
            })
        })
        .collect()
}

/// Messages per iteration of a latency case: enough for stable percentiles at small sizes,
/// few at 64 MiB (each round trip moves 128 MiB).
fn round_trips(size: usize) -> u64 {
    match size {
        0..=65_536 => 20_000,
        65_537..=4_194_304 => 2_000,
        _ => 20,
    }
}

fn latency_cases(sizes: &[usize], iceoryx2: bool) -> Vec<Case> {
    let mut ways: Vec<&str> = [Way::Link, Way::LinkCopy, Way::LinkInPlace, Way::Pipe]
        .map(Way::name)
        .to_vec();
    if iceoryx2 {
        ways.extend(["iceoryx2", "iceoryx2-copy"]);
    }
    sizes
        .iter()
        .flat_map(|size| {
            ways.iter()
                .map(move |way| Case::new("latency", &[("way", way.to_string()), ("size", size.to_string())]))
        })
        .collect()
}

/// One run of `Src.Snk` in one or two processes, read from its JSON report.
fn rate_run(case: &Case, dir: &Path, count: u64) -> Run {
    let two = case.param("processes") == Some("two");
    let len = case.param("channel_len").unwrap_or("1");
    let net = dir.join("rate.smx");
    let config = dir.join("rate.toml");
    let text = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n";
    let placement = "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    if let Err(e) = std::fs::write(&net, text).and_then(|()| std::fs::write(&config, placement)) {
        return Run::failed(format!("cannot write the net: {e}"));
    }
    let Ok(exe) = std::env::current_exe() else {
        return Run::failed("cannot find smxrun itself");
    };
    let mut command = Command::new(exe);
    command
        .arg(&net)
        .args(["-n", &count.to_string(), "--channel-len", len, "-q", "--report", "json"]);
    if two {
        command.arg("--config").arg(&config);
    }
    let out = match command.output() {
        Ok(out) => out,
        Err(e) => return Run::failed(format!("cannot start smxrun: {e}")),
    };
    match serde_json::from_slice::<serde_json::Value>(&out.stdout) {
        Ok(report) => rate_of(&report, count),
        Err(_) => Run::failed(format!(
            "no report ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// The rate of a `Src.Snk` report: the count over the slower net's wall time.
fn rate_of(report: &serde_json::Value, count: u64) -> Run {
    let mut run = Run::new();
    let nets = report["nets"].as_array().cloned().unwrap_or_default();
    let wall = nets
        .iter()
        .filter_map(|n| n["wall_time_s"].as_f64())
        .fold(0.0, f64::max);
    let read = report["channels"][0]["read"].as_u64().unwrap_or(0);
    let lost = report["channels"][0]["link"]["lost"].as_u64().unwrap_or(0);
    if report["status"] != "ok" || read != count || lost != 0 {
        run.invalidate(format!(
            "status {}, read {read} of {count}, lost {lost}",
            report["status"]
        ));
    }
    run.set("received", read as f64)
        .set("lost", lost as f64)
        .set("wall_s", wall);
    if wall > 0.0 {
        run.set("msg_rate_hz", read as f64 / wall);
    }
    run
}

fn latency_run(case: &Case, dir: &Path, peer: Option<&Path>) -> Run {
    let size: usize = case.param("size").and_then(|s| s.parse().ok()).unwrap_or(8);
    let cores = two_cores();
    let count = round_trips(size);
    let way = match case.param("way") {
        Some("link") => Way::Link,
        Some("link-copy") => Way::LinkCopy,
        Some("link-in-place") => Way::LinkInPlace,
        Some("pipe") => Way::Pipe,
        way => {
            let copy = way == Some("iceoryx2-copy");
            return match peer {
                Some(program) => iceoryx2::run(program, count, size, cores, copy),
                None => Run::failed("iceoryx2 not given"),
            };
        }
    };
    let sub = match tempfile::tempdir_in(dir) {
        Ok(sub) => sub,
        Err(e) => return Run::failed(format!("no directory for the rings: {e}")),
    };
    match latency::measure(way, size, count, sub.path(), cores) {
        Ok(mut samples) => {
            samples.sort_unstable();
            let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize] as f64;
            let mut run = Run::new();
            run.set("latency_p50_ns", at(0.5))
                .set("latency_p99_ns", at(0.99))
                .set("latency_ns", samples.iter().sum::<u64>() as f64 / samples.len() as f64);
            run
        }
        Err(e) => Run::failed(format!("{}: {e}", way.name())),
    }
}

/// The first two cores this process may use (the same one twice on a single core).
fn two_cores() -> (usize, usize) {
    let ids: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    match ids[..] {
        [a, b, ..] => (a, b),
        [a] => (a, a),
        [] => (0, 0),
    }
}

fn rate_table(result: &BenchResult, lens: &[u32], count: u64) -> Table {
    let mut t = Table::new(
        &format!(
            "processes: Src.Snk, {count} messages of 8 B, in one process and with Snk in a second one (a \
             shared-memory link); median (min-max) of the valid runs, million messages/s"
        ),
        &["len", "one process", "two processes", "two/one"],
    );
    for len in lens.iter().map(u32::to_string) {
        let find = |p: &str| result.find("rate", &[("processes", p), ("channel_len", len.as_str())]);
        let (Some(one), Some(two)) = (find("one"), find("two")) else {
            continue;
        };
        let ratio = match (one.median("msg_rate_hz"), two.median("msg_rate_hz")) {
            (Some(a), Some(b)) if a > 0.0 => format!("{:.2}", b / a),
            _ => "-".into(),
        };
        t.row(vec![
            len.clone(),
            one.cell("msg_rate_hz", 1e-6, 2),
            two.cell("msg_rate_hz", 1e-6, 2),
            ratio,
        ]);
    }
    t
}

fn latency_table(result: &BenchResult, sizes: &[usize]) -> Table {
    let mut t = Table::new(
        "processes: one-way latency, one message in flight between two cores (half a round trip; median over \
         runs of each run's p50 and p99, microseconds; iceoryx2: its own mean). echo: a forwarder sends back \
         what it read; copy: each side copies a payload of its own in (iceoryx2 --send-copy); in place: the \
         payload is neither written nor read (iceoryx2's zero-copy)",
        &[
            "size [B]",
            "echo p50",
            "echo p99",
            "copy p50",
            "iceoryx2 copy",
            "copy/iceoryx2",
            "in place p50",
            "iceoryx2",
            "in place/iceoryx2",
            "pipe p50",
        ],
    );
    for size in sizes.iter().map(usize::to_string) {
        let find = |way: &str| result.find("latency", &[("way", way), ("size", size.as_str())]);
        let cell = |way: &str, metric: &str| find(way).map_or("-".into(), |c| c.cell(metric, 1e-3, 2));
        let ratio = |way: &str, peer: &str| match (
            find(way).and_then(|c| c.median("latency_p50_ns")),
            find(peer).and_then(|c| c.median("latency_ns")),
        ) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "-".into(),
        };
        t.row(vec![
            size.clone(),
            cell("link", "latency_p50_ns"),
            cell("link", "latency_p99_ns"),
            cell("link-copy", "latency_p50_ns"),
            cell("iceoryx2-copy", "latency_ns"),
            ratio("link-copy", "iceoryx2-copy"),
            cell("link-in-place", "latency_p50_ns"),
            cell("iceoryx2", "latency_ns"),
            ratio("link-in-place", "iceoryx2"),
            cell("pipe", "latency_p50_ns"),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_rate_run_is_valid_only_with_every_message_read_and_none_lost() {
        let report = |read: u64, lost: u64| {
            json!({
                "status": "ok",
                "nets": [{"wall_time_s": 0.5}, {"wall_time_s": 1.0}],
                "channels": [{"read": read, "link": {"lost": lost}}],
            })
        };
        let run = rate_of(&report(1000, 0), 1000);
        assert!(run.valid, "{:?}", run.problems);
        assert_eq!(run.metrics["msg_rate_hz"], 1000.0, "the count over the slower net");
        assert!(!rate_of(&report(999, 1), 1000).valid);
    }
}
