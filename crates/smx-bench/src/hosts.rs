//! `bench hosts`: one net over two hosts, its link against raw ZeroMQ PUSH/PULL on the same
//! network, in the same rounds.
//!
//! Two network namespaces joined by a veth pair stand for two hosts, as the multi-host tests
//! make them (root only: elsewhere the experiment measures nothing and says why). The smx case
//! runs `Src.Snk` with `Src` on host a and `Snk` on host b, each process started with
//! `ip netns exec`: the channel becomes one link over tcp with CURVE, as every link between
//! hosts is. Its rate is the messages the sink read over the sink's net wall time, taken from
//! the merged report, whose books must balance with nothing lost.
//!
//! The peers are one PUSH thread in namespace a connected to one PULL thread bound in b, each
//! with a ZeroMQ context made after the thread entered its namespace (a context's I/O threads
//! inherit the namespace of the thread that starts them), with CURVE off and on. Their rate is
//! the messages received over the time from both sides being ready to the end marker.
//!
//! Two hosts have a CPU each: where this machine has two cores, host a runs on one and host b
//! on the other, the link's processes through their `cores` and the peers' threads (and the
//! I/O threads they start) by their affinity.

mod namespaces;
mod raw;

use std::path::Path;
use std::process::Command;

use super::Session;
use super::args::{HostsArgs, pick};
use super::result::{BenchResult, Case, Run, Table};
use namespaces::Hosts;

pub fn run(args: &HostsArgs, session: &mut Session) -> BenchResult {
    let mut result = session.start("hosts");
    let count = pick(args.count, session.quick, 50_000, 1_000_000).max(1);
    let size = args.size.unwrap_or(8);
    let len = args.channel_len.unwrap_or(64);
    let runs = session.runs(1, 3);
    for (k, v) in [
        ("count", count.to_string()),
        ("size", size.to_string()),
        ("channel_len", len.to_string()),
        ("runs", runs.to_string()),
        ("warmup_runs", "1".to_string()),
    ] {
        result.settings.insert(k.into(), v);
    }
    let hosts = match Hosts::new() {
        Ok(hosts) => hosts,
        Err(why) => {
            result.notes.push(format!("nothing measured: {why}"));
            return result;
        }
    };
    let mut cases = vec![
        Case::new("smx-link", &[("curve", "on".into())]),
        Case::new("zmq-raw", &[("curve", "off".into())]),
        Case::new("zmq-raw", &[("curve", "on".into())]),
    ];
    let Some(dir) = super::scratch_dir(&mut result, tempfile::tempdir()) else {
        return result;
    };
    for i in 0..=runs {
        for case in cases.iter_mut() {
            let r = Run::with_steal(|| match (case.series.as_str(), case.param("curve")) {
                ("smx-link", _) => smx_link(&hosts, dir.path(), count, size, len),
                (_, curve) => raw::run(&hosts, count, size, curve == Some("on")),
            });
            session.progress("hosts", case, i, runs, &r, "msg_rate_hz");
            if i > 0 {
                case.push(r);
            }
        }
    }
    result.cases = cases;
    result.tables.push(table(&result, count, size, len));
    result
}

/// One run of `Src.Snk` split over the two hosts, read from its merged JSON report.
fn smx_link(hosts: &Hosts, dir: &Path, count: u64, size: usize, len: u32) -> Run {
    let net = dir.join("hosts.smx");
    let config = dir.join("hosts.toml");
    let text = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n";
    let placement = format!(
        "{}\n[net.Src]\nprocess = \"a\"\nsize = {size}\n\n[net.Snk]\nprocess = \"b\"\n",
        hosts.config()
    );
    if let Err(e) = std::fs::write(&net, text).and_then(|()| std::fs::write(&config, placement)) {
        return Run::failed(format!("cannot write the net: {e}"));
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return Run::failed(format!("cannot find smxrun itself: {e}")),
    };
    let out = Command::new(exe)
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["-n", &count.to_string(), "--channel-len", &len.to_string()])
        .args(["--report", "json", "-q"])
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) => return Run::failed(format!("cannot start smxrun: {e}")),
    };
    let report: serde_json::Value = match serde_json::from_slice(&out.stdout) {
        Ok(report) => report,
        Err(_) => {
            let err = String::from_utf8_lossy(&out.stderr);
            return Run::failed(format!("no report ({}): {}", out.status, err.trim()));
        }
    };
    link_run(&report, count)
}

/// The rate and books of the link run's report.
fn link_run(report: &serde_json::Value, count: u64) -> Run {
    let mut run = Run::new();
    let channel = &report["channels"][0];
    let sink = report["nets"]
        .as_array()
        .and_then(|nets| nets.iter().find(|n| n["name"] == "Snk"));
    let read = channel["read"].as_u64().unwrap_or(0);
    let lost = channel["link"]["lost"].as_u64().unwrap_or(0);
    let wall = sink.and_then(|n| n["wall_time_s"].as_f64()).unwrap_or(0.0);
    if report["status"] != "ok" {
        run.invalidate(format!("status {}", report["status"]));
    }
    if read != count || lost != 0 {
        run.invalidate(format!("read {read} of {count}, {lost} lost"));
    }
    if channel["link"]["curve"] != true {
        run.invalidate("the link ran without CURVE");
    }
    run.set("received", read as f64)
        .set("lost", lost as f64)
        .set("wall_s", wall);
    if wall > 0.0 {
        run.set("msg_rate_hz", read as f64 / wall);
    }
    run
}

fn table(result: &BenchResult, count: u64, size: usize, len: u32) -> Table {
    let mut t = Table::new(
        &format!(
            "hosts: Src on host a, Snk on host b (two network namespaces and a veth pair), {count} messages of \
             {size} B, channel length {len}; median (min-max) of the valid runs, thousand messages/s"
        ),
        &[
            "series",
            "CURVE",
            "rate",
            "lost",
            "link/raw (CURVE on)",
            "link/raw (CURVE off)",
        ],
    );
    let rate = |series: &str, curve: &str| result.find(series, &[("curve", curve)]);
    let ratio = |a: Option<&Case>, b: Option<&Case>| match (
        a.and_then(|c| c.median("msg_rate_hz")),
        b.and_then(|c| c.median("msg_rate_hz")),
    ) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "-".into(),
    };
    for case in &result.cases {
        let curve = case.param("curve").unwrap_or("-").to_string();
        let (on, off) = if case.series == "smx-link" {
            (
                ratio(Some(case), rate("zmq-raw", "on")),
                ratio(Some(case), rate("zmq-raw", "off")),
            )
        } else {
            ("-".into(), "-".into())
        };
        t.row(vec![
            case.label(&case.series),
            curve,
            case.cell("msg_rate_hz", 1e-3, 1),
            case.cell("lost", 1.0, 0),
            on,
            off,
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_link_run_is_valid_only_with_every_message_read_and_curve_on() {
        let report = |read: u64, lost: u64, curve: bool| {
            json!({
                "status": "ok",
                "nets": [{"name": "Src", "wall_time_s": 1.0}, {"name": "Snk", "wall_time_s": 0.5}],
                "channels": [{"read": read, "link": {"lost": lost, "curve": curve}}],
            })
        };
        let run = link_run(&report(1000, 0, true), 1000);
        assert!(run.valid, "{:?}", run.problems);
        assert_eq!(
            run.metrics["msg_rate_hz"], 2000.0,
            "the sink's read over the sink's time"
        );
        assert!(!link_run(&report(990, 10, true), 1000).valid);
        assert!(!link_run(&report(1000, 0, false), 1000).valid);
    }
}
