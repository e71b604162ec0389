//! What `smxrun split` writes for an orchestrator: a systemd unit per process that starts it at
//! normal scheduling, and lets the runtime raise the nets with a priority itself.

use std::path::Path;
use std::process::Command;

const NET: &str = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n";

fn split(dir: &Path, sets: &[&str]) -> std::path::PathBuf {
    std::fs::write(dir.join("net.smx"), NET).unwrap();
    std::fs::write(
        dir.join("deploy.toml"),
        "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let mut command = Command::new(env!("CARGO_BIN_EXE_smxrun"));
    command
        .arg("split")
        .arg(dir.join("net.smx"))
        .arg("--config")
        .arg(dir.join("deploy.toml"));
    for set in sets {
        command.args(["--set", set]);
    }
    let out = command.arg("-o").arg(&out_dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out_dir
}

#[test]
fn a_process_with_a_prioritised_net_may_raise_it_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let out = split(dir.path(), &["Snk.priority=10"]);
    let sinks = std::fs::read_to_string(out.join("smx-sinks.service")).unwrap();
    let main = std::fs::read_to_string(out.join("smx-main.service")).unwrap();
    // A policy for the whole unit would put every thread at one level, whatever its net asks.
    for unit in [&sinks, &main] {
        assert!(unit.contains("CPUSchedulingPolicy=other\n"), "{unit}");
        assert!(
            !unit.contains("fifo") && !unit.contains("CPUSchedulingPriority"),
            "{unit}"
        );
    }
    assert!(sinks.contains("LimitRTPRIO=99\n"), "{sinks}");
    assert!(!main.contains("LimitRTPRIO"), "{main}");
    // The net's own level goes with the slice, for the runtime to apply.
    let job = std::fs::read_to_string(out.join("sinks.job")).unwrap();
    assert!(job.contains("priority=10"), "{job}");
}

#[test]
fn without_a_priority_no_unit_asks_for_real_time_limits() {
    let dir = tempfile::tempdir().unwrap();
    let out = split(dir.path(), &[]);
    for name in ["smx-main.service", "smx-sinks.service"] {
        let unit = std::fs::read_to_string(out.join(name)).unwrap();
        assert!(
            unit.contains("CPUSchedulingPolicy=other\n") && !unit.contains("LimitRTPRIO"),
            "{unit}"
        );
        // `systemctl enable` needs to know where the unit belongs.
        assert!(unit.ends_with("\n[Install]\nWantedBy=multi-user.target\n"), "{unit}");
    }
}

#[test]
fn a_split_takes_the_channel_length_a_run_would_take() {
    let dir = tempfile::tempdir().unwrap();
    let out = split(dir.path(), &[]);
    let default = std::fs::read_to_string(out.join("main.job")).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    std::fs::write(dir.path().join("net.smx"), NET).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .arg("split")
        .arg(dir.path().join("net.smx"))
        .arg("--config")
        .arg(dir.path().join("deploy.toml"))
        .args(["--channel-len", "64", "-o"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    // The ring holds half the channel's length, and each slice runs with the length.
    let long = std::fs::read_to_string(out.join("main.job")).unwrap();
    assert!(long.contains("len=32") && !default.contains("len=32"), "{long}");
    let sinks = std::fs::read_to_string(out.join("sinks.job")).unwrap();
    assert!(sinks.contains("\"--channel-len\",\"64\""), "{sinks}");
}
