//! One net over several processes: placement checks, links at the cuts, supervision (a killed
//! slice, a killed parent), split and merge, CURVE, large payloads, and several hosts simulated
//! by network namespaces the tests make themselves (skipped when not root).

mod common;
use common::deploy::{
    alive, by_process, children_of, process, run_json, smxrun, split, text, wait_for, wait_for_messages, write,
};

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

const NET: &str = "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n";

/// A time-triggered pair beside a plain one: `Snk#3` is the plain pair's sink.
const TT_NET: &str = "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n\
                      connect tt[100us](Src.Snk) | (Src.Snk)\n";

/// Every channel's books balance across its processes.
fn assert_books_balance(report: &Value) {
    for c in report["channels"].as_array().unwrap() {
        let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k} of {c}"));
        let lost = c["link"]["lost"].as_u64().unwrap_or(0);
        assert_eq!(
            n("written"),
            n("read") + n("overwritten") + n("dropped") + n("left") + lost,
            "books of {c}"
        );
    }
}

/// Whether this machine lets the tests use a single core; then says the test is skipped and
/// `why` (what a second core would have shown).
fn one_core(why: &str) -> bool {
    let one = std::thread::available_parallelism().map_or(1, |n| n.get()) < 2;
    if one {
        println!("skipped: one core, {why}");
    }
    one
}

/// The report has a warning that begins with `start`.
fn assert_warns(report: &Value, start: &str) {
    let warnings = report["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w.as_str().unwrap().starts_with(start)),
        "no warning '{start}...': {warnings:#?}"
    );
}

/// The report has a note (a choice made for this machine) that begins with `start`, and no
/// warning says it.
fn assert_notes(report: &Value, start: &str) {
    let notes = report["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|w| w.as_str().unwrap().starts_with(start)),
        "no note '{start}...': {notes:#?}"
    );
    let warnings = report["warnings"].as_array().unwrap();
    assert!(
        !warnings.iter().any(|w| w.as_str().unwrap().starts_with(start)),
        "a choice among the warnings: {warnings:#?}"
    );
}

/// The report's row of the net whose `key` is `value` (its `name`, its `process`).
fn net_row<'r>(report: &'r Value, key: &str, value: &str) -> &'r Value {
    report["nets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n[key] == value)
        .unwrap_or_else(|| panic!("no net with {key} {value} in {}", report["nets"]))
}

#[test]
fn two_processes_on_this_machine_make_one_report() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let (out, report) = run_json(dir.path(), NET, config, &["-n", "20000"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(report["format_version"], 4);
    assert_eq!(process(&report, "main")["status"], "ok");
    assert_eq!(process(&report, "sinks")["status"], "ok");
    assert!(process(&report, "sinks")["pid"].as_u64().is_some());
    let nets = report["nets"].as_array().unwrap();
    assert_eq!(nets.len(), 2, "link boxes are not nets of the report: {nets:?}");
    assert_eq!(
        (nets[0]["name"].as_str(), nets[0]["process"].as_str()),
        (Some("Src"), Some("main"))
    );
    assert_eq!(
        (nets[1]["name"].as_str(), nets[1]["process"].as_str()),
        (Some("Snk"), Some("sinks"))
    );
    assert_eq!(nets[1]["loop_count"], 20000);
    assert_eq!(
        report["messages"], 20000,
        "counted once, at the sink, as one process counts them: the link's half is no sink"
    );
    let channel = &report["channels"][0];
    assert_eq!(channel["written"], 20000);
    assert_eq!(channel["read"], 20000);
    assert_eq!(channel["link"]["lost"], 0);
    assert_eq!(
        channel["link"]["transport"], "shm",
        "processes of one machine are joined by shared memory: {channel}"
    );
    assert_eq!(channel["link"]["curve"], false);
    assert_eq!(channel["link"]["clocks_comparable"], true);
    assert!(
        channel["link"]["latency_ns"]["count"].as_u64().unwrap() > 0,
        "{channel}"
    );
    assert_books_balance(&report);
}

/// A link has its channel's length, also one that `--channel-len` gives: the ring holds three
/// quarters of it and the consumer's half a quarter (the producer's half one more), so the
/// producer is held back after about the channel's length across the cut, as in one process.
#[test]
fn a_link_holds_its_channels_length() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let (out, report) = run_json(dir.path(), NET, config, &["-n", "2000", "--channel-len", "64"]);
    assert!(out.status.success(), "{}", text(&out));
    let channel = &report["channels"][0];
    assert_eq!(channel["len"], 64, "{channel}");
    assert_eq!(channel["link"]["sender"]["len"], 48, "the ring: {channel}");
    assert_eq!(channel["read"], 2000);
    assert_books_balance(&report);
}

/// A channel longer than a link's ring takes (2^16 slots) crosses too: the ring holds that, the
/// consumer's side the rest (it was refused only once the processes ran, naming a link box).
#[test]
fn a_channel_longer_than_a_ring_crosses_processes() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let (out, report) = run_json(dir.path(), NET, config, &["-n", "2000", "--channel-len", "1500000"]);
    assert!(out.status.success(), "{}", text(&out));
    let channel = &report["channels"][0];
    assert_eq!(channel["len"], 1_500_000, "{channel}");
    assert_eq!(channel["link"]["sender"]["len"], 1 << 16, "the ring: {channel}");
    assert_eq!(channel["read"], 2000);
    assert_books_balance(&report);
}

/// A channel too long for a ring of slots of the largest message in the room of /dev/shm still
/// crosses: its ring takes smaller slots, and the sink says so.
#[test]
fn a_channel_too_long_for_the_room_of_dev_shm_crosses_with_smaller_slots() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    // A ring of 3072 slots of 64 MiB, 192 GiB: more than half of any /dev/shm this runs on.
    let (out, report) = run_json(dir.path(), NET, config, &["-n", "2000", "--channel-len", "4096"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("link ring: link0_out's 3072 slots hold messages of up to")
            && text(&out).contains("not 64.0 MiB (`max_payload`)"),
        "{}",
        text(&out)
    );
    assert_eq!(report["channels"][0]["read"], 2000);
    assert_books_balance(&report);
    // In the report too, as a message larger than the slots would fail the link later: among
    // how it ran, not among the warnings of a run whose messages all fit.
    let said = |key: &str| {
        report[key].as_array().unwrap().iter().any(|l| {
            l.as_str()
                .is_some_and(|l| l.contains("link ring: link0_out's 3072 slots"))
        })
    };
    assert!(said("notes") && !said("warnings"), "{report}");
}

/// A process's `cores` replace the run's `--pin` in its slice, also when the run gives one.
#[test]
fn a_process_with_cores_of_its_own_runs_on_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.sinks]\ncores = [0]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    for pin in [&[][..], &["--pin", "auto"]] {
        let mut args = vec!["-n", "2000"];
        args.extend_from_slice(pin);
        let (out, report) = run_json(dir.path(), NET, config, &args);
        assert!(out.status.success(), "{pin:?}: {}", text(&out));
        assert_eq!(process(&report, "sinks")["status"], "ok");
        let snk = net_row(&report, "name", "Snk");
        assert_eq!(snk["core"], 0, "{snk}");
    }
}

/// A process with cores of its own keeps them: the processes without cores on this machine
/// keep off them.
#[test]
fn the_others_keep_off_the_cores_a_process_names() {
    if one_core("a core named by one process and another left to the rest") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let net = "Src = box smx_src_rand( out data )\nFwd = box smx_fwd( up in data, down out data )\n\
               Snk = box smx_snk_null( in data )\nconnect Src.Fwd.Snk\n";
    let config = "[process.b]\ncores = [1]\n\n[net.Snk]\nprocess = \"b\"\n";
    let (out, report) = run_json(dir.path(), net, config, &["-n", "2000", "--chain", "off"]);
    assert!(out.status.success(), "{}", text(&out));
    for name in ["Src", "Fwd"] {
        assert_eq!(net_row(&report, "name", name)["core"], 0, "{name}: {}", report["nets"]);
    }
    assert_eq!(net_row(&report, "name", "Snk")["core"], 1, "{}", report["nets"]);
}

/// Where the processes that name cores name every core of the machine, the others have none to
/// keep to: they run on all of them, and the report says so.
#[test]
fn processes_that_name_every_core_leave_the_others_to_share_them_and_the_report_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let every: Vec<String> = smx_timing::sched::allowed_cores()
        .iter()
        .map(usize::to_string)
        .collect();
    let config = format!(
        "[process.b]\ncores = [{}]\n\n[net.Snk]\nprocess = \"b\"\n",
        every.join(", ")
    );
    let (out, report) = run_json(dir.path(), NET, &config, &["-n", "2000"]);
    assert!(out.status.success(), "{}", text(&out));
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("name every core it has, so main runs on all of them"),
        "{notes}"
    );
    // One core left free: nothing to say.
    if every.len() > 1 {
        let config = format!("[process.b]\ncores = [{}]\n\n[net.Snk]\nprocess = \"b\"\n", every[0]);
        let (out, report) = run_json(dir.path(), NET, &config, &["-n", "2000"]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            !report["notes"].to_string().contains("name every core"),
            "{}",
            report["notes"]
        );
    }
}

/// The cores of `[process.main]` hold also when every net runs in `main`, as one process.
#[test]
fn the_cores_of_main_hold_when_it_runs_every_net() {
    if one_core("the cores of main keeping its nets off core 0") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (out, report) = run_json(dir.path(), NET, "[process.main]\ncores = [1]\n", &["-n", "2000"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(report.get("processes").is_none(), "one process: {report}");
    for net in report["nets"].as_array().unwrap() {
        assert_eq!(net["core"], 1, "{net}");
    }
}

/// A `launch` through `ssh` runs `smxrun` at its path on the other host, quoted for the remote
/// shell that `ssh` hands the words to: a path with a space stays one word. Here `smxrun`
/// runs from a directory with a space in its name, and a stand-in named `ssh` in that
/// directory, quoted in `launch` as in a shell, hands the words after its destination, joined
/// by spaces, to a shell, as `ssh` does.
#[test]
fn a_launch_through_ssh_starts_an_smxrun_whose_path_has_a_space() {
    use std::os::unix::fs::PermissionsExt;
    // Beside the binary, on its file system, so that a hard link can stand for it there.
    let with_space = tempfile::Builder::new()
        .prefix("smx run ")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let exe = with_space.path().join("smxrun");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_smxrun"), &exe).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_smxrun"), &exe).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let ssh = with_space.path().join("ssh");
    std::fs::write(&ssh, "#!/bin/sh\nshift\nexec sh -c \"$*\"\n").unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let net = write(dir.path(), "net.smx", NET);
    let config = write(
        dir.path(),
        "deploy.toml",
        &format!(
            "[process.sinks]\nhost = \"127.0.0.1\"\nport = 27392\nlaunch = \"'{}' 127.0.0.1\"\n\n[net.Snk]\nprocess = \"sinks\"\n",
            ssh.display()
        ),
    );
    let report = dir.path().join("report.json");
    let out = Command::new(&exe)
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["-n", "1000", "-q", "--report", "json", "-o"])
        .arg(&report)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(process(&report, "sinks")["status"], "ok", "{report}");
    assert_eq!(net_row(&report, "name", "Snk")["loop_count"], 1000, "{report}");
}

/// Two processes on this machine without cores of their own do not both place their threads on
/// the same cores: the allowed cores are shared out between them.
#[test]
fn processes_on_this_machine_share_its_cores_out() {
    if one_core("nothing to share") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A child, and one that a `launch` starts on this machine (its host is this machine's).
    // Ports of its own: the tests of this file run at once, and a link listens from `port` on.
    for sinks in ["", "host = \"127.0.0.1\"\nport = 27420\nlaunch = \"/usr/bin/env\"\n"] {
        let config = format!("[process.sinks]\n{sinks}\n[net.Snk]\nprocess = \"sinks\"\n");
        let (out, report) = run_json(dir.path(), NET, &config, &["-n", "2000"]);
        assert!(out.status.success(), "{}", text(&out));
        let core = |name: &str| {
            let net = net_row(&report, "name", name);
            net["core"].as_u64().unwrap_or_else(|| panic!("{net}"))
        };
        assert_ne!(core("Src"), core("Snk"), "{config}: {}", report["nets"]);
    }
}

/// Processes put on one core are named in the report, and in the merge of a split's reports
/// as in a supervised run's: a message between them waits for the scheduler to switch.
#[test]
fn processes_put_on_one_core_are_named_in_a_run_and_in_a_merge() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let crowded = "placement: 2 processes on 1 core, so main and sinks on core 0 run together";
    let (out, report) = run_json(dir.path(), NET, config, &["-n", "2000", "--pin", "0"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_notes(&report, crowded);
    let out_dir = split(dir.path(), NET, config, &["-n", "2000", "--pin", "0"]);
    common::deploy::run_slices(&out_dir, &["main", "sinks"]);
    let merged = common::deploy::merge_json(&out_dir, &["main", "sinks"]);
    assert!(merged.status.success(), "{}", text(&merged));
    let merged: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_notes(&merged, crowded);
}

/// A slice's report written before `notes` had a key of its own held its choices among its
/// warnings: a merge still tells them apart, so the merged report's warnings hold no choice.
#[test]
fn a_merge_sorts_the_choices_out_of_an_older_slices_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    // One core for both: each process chains its two threads, a choice it always explains.
    let out_dir = split(dir.path(), NET, config, &["-n", "2000", "--pin", "0"]);
    common::deploy::run_slices(&out_dir, &["main", "sinks"]);
    for process in ["main", "sinks"] {
        let path = out_dir.join(format!("{process}.report.json"));
        let mut report: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut lines = report["notes"].as_array().cloned().unwrap_or_default();
        assert!(!lines.is_empty(), "{process}: {report:#}");
        lines.extend(report["warnings"].as_array().cloned().unwrap_or_default());
        report["warnings"] = Value::Array(lines);
        report.as_object_mut().unwrap().remove("notes");
        std::fs::write(&path, report.to_string()).unwrap();
    }
    let merged = common::deploy::merge_json(&out_dir, &["main", "sinks"]);
    assert!(merged.status.success(), "{}", text(&merged));
    let merged: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_notes(&merged, "main: chaining:");
    assert_notes(&merged, "sinks: chaining:");
    assert_eq!(merged["warnings"], json!([]), "{merged:#}");
}

/// A slice started again after its run leaves the report of that run as it was: it refuses to
/// start instead of replacing a good report with that of a run that found no peer.
#[test]
fn a_slice_started_again_keeps_the_report_of_its_earlier_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let out_dir = split(dir.path(), NET, config, &["-n", "2000", "--link-timeout", "1s"]);
    common::deploy::run_slices(&out_dir, &["main", "sinks"]);
    let report = out_dir.join("sinks.report.json");
    let before = std::fs::read(&report).unwrap();
    let again = Command::new(out_dir.join("sinks.sh")).output().unwrap();
    assert_eq!(again.status.code(), Some(1), "nothing ran: {}", text(&again));
    assert!(
        text(&again).contains("sinks.report.json: the file exists"),
        "{}",
        text(&again)
    );
    assert_eq!(
        std::fs::read(&report).unwrap(),
        before,
        "the earlier run's report is untouched"
    );
    let merged = common::deploy::merge_json(&out_dir, &["main", "sinks"]);
    assert!(merged.status.success(), "{}", text(&merged));
}

/// A merge of the reports that exist names every channel as the net does, also a link between
/// two processes that left none.
#[test]
fn a_merge_names_a_link_whose_processes_left_no_report() {
    let dir = tempfile::tempdir().unwrap();
    let net = "Src = box smx_src_rand( out data )\nFwd = box smx_fwd( up in data, down out data )\n\
               Snk = box smx_snk_null( in data )\nconnect Src.Fwd.Snk\n";
    let config = "[process.b]\n[process.c]\n\n[net.Fwd]\nprocess = \"b\"\n\n[net.Snk]\nprocess = \"c\"\n";
    let out_dir = split(dir.path(), net, config, &["-n", "100", "--link-timeout", "1s"]);
    let main = Command::new(out_dir.join("main.sh")).output().unwrap();
    assert_eq!(main.status.code(), Some(3), "{}", text(&main));
    let merged = common::deploy::merge_json(&out_dir, &["main"]);
    let merged: Value = serde_json::from_slice(&merged.stdout).unwrap_or_else(|_| panic!("{}", text(&merged)));
    let channels = merged["channels"].as_array().unwrap();
    assert_eq!(channels.len(), 2, "{merged}");
    for c in channels {
        assert_eq!(c["name"], "data", "{c}");
    }
}

/// A firewall's pairs in a process's slice are named by their nodes' ids in the whole net, as
/// every other line of the report names them.
#[test]
fn a_firewalls_pairs_in_a_slice_are_named_as_in_the_whole_net() {
    let dir = tempfile::tempdir().unwrap();
    let net = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n\
               connect (Src.Snk) | tt[1ms](Src.Snk)\n";
    let config = "[process.timed]\n\n[net.\"Src#2\"]\nprocess = \"timed\"\n\n[net.\"Snk#3\"]\nprocess = \"timed\"\n";
    let (out, report) = run_json(dir.path(), net, config, &["-n", "20"]);
    assert!(out.status.success(), "{}", text(&out));
    let pair = &report["firewalls"][0]["pairs"][0];
    assert_eq!(
        (&pair["producer"], &pair["consumer"]),
        (&json!("Src#2"), &json!("Snk#3")),
        "{pair}"
    );
}

/// Beside a temporal firewall in `main`, whose cyclic executive has the last core to itself,
/// a process without cores of its own keeps off that core (where the executive's spin would
/// hold back its threads), and the report says so; without an executive nothing is kept.
#[test]
fn beside_a_temporal_firewall_the_other_processes_keep_off_its_executives_core() {
    if one_core("none to keep for an executive") {
        return;
    }
    let config = "[process.sinks]\n\n[net.\"Snk#3\"]\nprocess = \"sinks\"\n";
    let dir = tempfile::tempdir().unwrap();
    let (out, report) = run_json(dir.path(), TT_NET, config, &["-n", "2000", "--tt-mode", "cyclic"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_books_balance(&report);
    let executive = report["firewalls"][0]["core"].as_u64().expect("the executive's core");
    let notes = report["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "placement: the cyclic executive of main has core {executive} to itself, so sinks runs on core"
        )),
        "{notes}"
    );
    let sinks = net_row(&report, "process", "sinks");
    assert_ne!(sinks["core"].as_u64(), Some(executive), "{sinks}");
    let (out, report) = run_json(dir.path(), TT_NET, config, &["-n", "2000", "--tt-mode", "threads"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !report["notes"].to_string().contains("cyclic executive of main"),
        "{}",
        report["notes"]
    );
}

/// A process with cores of its own keeps them also beside a temporal firewall: the slice with
/// the firewall places its threads, its cyclic executive too, on the cores no other process
/// names, in both time-triggered modes, and the report says so.
#[test]
fn beside_a_process_with_cores_a_temporal_firewall_keeps_off_them() {
    if one_core("a core named by one process and another left to a firewall") {
        return;
    }
    let config = "[process.b]\ncores = [1]\n\n[net.\"Snk#3\"]\nprocess = \"b\"\n";
    let dir = tempfile::tempdir().unwrap();
    for mode in ["cyclic", "threads"] {
        let (out, report) = run_json(dir.path(), TT_NET, config, &["-n", "500", "--tt-mode", mode]);
        assert!(out.status.success(), "{mode}: {}", text(&out));
        assert_books_balance(&report);
        for firewall in report["firewalls"].as_array().unwrap() {
            assert_eq!(firewall["core"], 0, "{mode}: {firewall}");
        }
        for net in report["nets"].as_array().unwrap() {
            let expected = if net["process"] == "b" { 1 } else { 0 };
            // A net not pinned (a chain that talks to no other thread) has no core, and stays
            // within its process's cores all the same.
            if !net["core"].is_null() {
                assert_eq!(net["core"], expected, "{mode}: {net}");
            }
        }
        let notes = report["notes"].to_string();
        assert!(
            notes.contains("placement: main places its threads on core 0, which no other process names"),
            "{mode}: {notes}"
        );
    }
}

/// A process whose every box its cyclic executive runs keeps no core for it by the count of
/// its threads: the processes share the cores out instead, and the executive's core is not
/// one the other process's threads run on.
#[test]
fn a_process_of_an_executive_alone_shares_no_core_with_the_others() {
    if one_core("an executive's process and another one on cores apart") {
        return;
    }
    let config = "[process.t]\n[net.\"Src#0\"]\nprocess = \"t\"\n[net.\"Snk#1\"]\nprocess = \"t\"\n";
    let dir = tempfile::tempdir().unwrap();
    let (out, report) = run_json(dir.path(), TT_NET, config, &["-n", "500", "--tt-mode", "cyclic"]);
    assert!(out.status.success(), "{}", text(&out));
    let cores_of = |process: &str| -> Vec<u64> {
        report["nets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["process"] == process)
            .filter_map(|n| n["core"].as_u64())
            .collect()
    };
    let (t, main) = (cores_of("t"), cores_of("main"));
    assert!(!t.is_empty(), "{}", report["nets"]);
    assert!(
        t.iter().all(|c| !main.contains(c)),
        "the executive's process on {t:?}, the other on {main:?}"
    );
}

#[test]
fn check_names_placement_errors_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let check = |config: &str| {
        let out = check_config(dir.path(), config);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = check("[net.Snk]\n\nprocess = \"nowhere\"\n");
    assert!(
        err.contains("c.toml:3: key 'process' of net 'Snk': unknown process 'nowhere'"),
        "{err}"
    );
    // A line that places every net names them all, not the first it applied to.
    let err = check("[default]\nprocess = \"zz\"\n");
    assert!(
        err.contains("c.toml:2: key 'process': unknown process 'zz'")
            && err.contains("(this line sets it for 2 nets: Src, Snk)"),
        "{err}"
    );
    let err = check("[process.x]\nhost = \"192.0.2.9\"\nlaunch = \"/no/such/runner\"\n");
    assert!(
        err.contains("c.toml:3: key 'launch': process 'x': launch command '/no/such/runner' is not a program"),
        "{err}"
    );
    // A net's own core must be one its process may use; the error points at that `core`.
    let err = check("[process.b]\ncores = [0]\n[net.Snk]\nprocess = \"b\"\ncore = 1\n");
    assert!(
        err.contains("c.toml:5: key 'core' of net 'Snk': core 1 is not one of the cores of process 'b' (0)"),
        "{err}"
    );
    let err = check("[process.main]\ncores = [0]\n[net.Snk]\ncore = 1\n");
    assert!(
        err.contains("c.toml:4: key 'core' of net 'Snk': core 1 is not one of the cores of process 'main' (0)"),
        "{err}"
    );
    let err = check("[process.b]\ncores = [100000]\n[net.Snk]\nprocess = \"b\"\n");
    assert!(
        err.contains("c.toml:2: key 'cores': process 'b': core 100000 is not one smxrun may run on here"),
        "{err}"
    );
    let err = check("[process.far]\nhost = \"192.0.2.9\"\n");
    assert!(
        err.contains("c.toml:2: process 'far': host '192.0.2.9' is not an address of this machine"),
        "{err}"
    );
    // A host name the machine that dials it cannot resolve (a typo, most often): before the
    // start, at the `host` key, rather than a process that refuses its run after it.
    let err =
        check("[process.sinks]\nlaunch = \"env\"\nhost = \"no-such-host.invalid\"\n[net.Snk]\nprocess = \"sinks\"\n");
    assert!(
        err.contains(
            "c.toml:3: key 'host': process 'sinks' has host = \"no-such-host.invalid\", a name this machine cannot \
             resolve, where process 'main' dials it for channel Src#0.data -> Snk#1.data"
        ),
        "{err}"
    );
    let err = check("[process.x]\nhost = \"127.0.0.1\"\nlaunch = \"env #A=b\"\n");
    assert!(
        err.contains("c.toml:3: key 'launch': process 'x': a word begins with '#'"),
        "{err}"
    );
    let err = check("[process.x]\nhost = \"127.0.0.1\"\nlaunch = \"env 'A=b c\"\n");
    assert!(
        err.contains("c.toml:3: key 'launch': process 'x': a quote is not closed"),
        "{err}"
    );
    let err = check("[process.x]\nlaunch = \"env h\"\n");
    assert!(
        err.contains("c.toml:2: process 'x': `launch` starts it elsewhere"),
        "{err}"
    );
    // Following the hint for this machine changes the transport: the error says so.
    assert!(
        err.contains("whose links then run over tcp; without `launch` a process here is a child of smxrun"),
        "{err}"
    );
    let tt = write(
        dir.path(),
        "tt.smx",
        "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect tt[1ms](Src.Snk)\n",
    );
    let config = write(dir.path(), "tt.toml", "[process.b]\n[net.Snk]\nprocess = \"b\"\n");
    let out = smxrun()
        .arg("check")
        .arg(&tt)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "tt.smx:3: channel Src#0.data -> Snk#1.data between processes 'main' and 'b' crosses a temporal firewall"
        ),
        "{err}"
    );
    // The other half of the mistake: where the configuration put the consumer.
    assert!(err.contains("(Snk#1 has process = \"b\" at "), "{err}");
    assert!(err.contains("tt.toml:3)"), "{err}");
    // The run refuses what check refuses, before anything starts.
    let out = smxrun().arg(&tt).arg("--config").arg(&config).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // A time-bounded channel is a mark, which a link keeps: it is cut, and the report says tb.
    let (out, report) = run_json(
        dir.path(),
        "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect tb[1ms](Src.Snk)\n",
        "[process.b]\n[net.Snk]\nprocess = \"b\"\n",
        &["-n", "100"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let channel = &report["channels"][0];
    assert_eq!(
        (&channel["timing"], &channel["read"], &channel["link"]["transport"]),
        (&json!("time_bounded"), &json!(100), &json!("shm")),
        "{channel}"
    );
    // A network namespace this machine does not have (where `ip` is there to enter one).
    if Command::new("ip").arg("-V").output().is_ok() {
        let err = check("[process.b]\nhost = \"10.9.0.2\"\nlaunch = \"ip netns exec smx-no-such-namespace\"\n");
        assert!(
            err.contains("c.toml:3: process 'b': network namespace 'smx-no-such-namespace' does not exist here"),
            "{err}"
        );
    }
}

const ENDLESS: &str = "[process.sinks]\n\n[net.Src]\ncount = 0\n\n[net.Snk]\nprocess = \"sinks\"\n";

fn start_endless(dir: &Path) -> std::process::Child {
    let net = write(dir, "net.smx", NET);
    let config = write(dir, "deploy.toml", ENDLESS);
    smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["--report", "json", "-q", "-o"])
        .arg(dir.join("report.json"))
        .args(["--stats-every", "20ms", "--stats-file"])
        .arg(dir.join("stats.jsonl"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The two slices of [`start_endless`] in `dir`, once messages cross the link between them.
fn endless_slices(parent: &std::process::Child, dir: &Path) -> Vec<u32> {
    let mut slices = Vec::new();
    wait_for("two slices", || {
        slices = children_of(parent.id());
        slices.len() == 2
    });
    wait_for_messages(&dir.join("stats.jsonl"));
    slices
}

#[test]
fn a_killed_slice_ends_the_run_with_a_report_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let parent = start_endless(dir.path());
    let slices = endless_slices(&parent, dir.path());
    let sinks = by_process(slices.clone())[1];
    unsafe { libc::kill(sinks as i32, libc::SIGKILL) };
    let out = parent.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("process 'sinks'") && stderr.contains("died") && stderr.contains("signal 9"),
        "{stderr}"
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "failed");
    let sinks_row = process(&report, "sinks");
    assert_eq!(
        (sinks_row["status"].as_str(), sinks_row["signal"].as_i64()),
        (Some("died"), Some(9))
    );
    assert_eq!(report["nets"][1]["status"], "lost");
    // Its endless source's stream was cut short by the death: stopped, not ended as planned.
    assert_eq!(report["nets"][0]["status"], "stopped", "{}", report["nets"][0]);
    let link = &report["channels"][0]["link"];
    assert_eq!(link["lost_side"], "sinks");
    assert!(link["lost"].as_u64().unwrap() > 0, "{link}");
    assert_eq!(
        link["lost_exact"], false,
        "what the dead process took, it may have passed on: an upper bound, {link}"
    );
    for pid in slices {
        assert!(!alive(pid), "slice {pid} outlived the run");
    }
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("smx-slice-{sinks}-"))
        })
        .collect();
    assert!(
        leftovers.is_empty(),
        "the killed slice's directory is removed: {leftovers:?}"
    );
}

/// A process that holds the whole net's sink and dies before its report still counts in the
/// total: what it last told its supervisor it had counted there, which the report says is all
/// that is known of it.
#[test]
fn a_dead_sinks_process_counts_what_it_last_told() {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.jsonl");
    let net = write(dir.path(), "net.smx", NET);
    let config = write(dir.path(), "deploy.toml", ENDLESS);
    let parent = smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["--report", "json", "-q", "-o"])
        .arg(dir.path().join("report.json"))
        .args(["--stats-every", "20ms", "--stats-file"])
        .arg(&stats)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The live figures count at the whole net's sink, in `sinks`: once they are above 0, the
    // supervisor has heard that count from it.
    let mut told = 0;
    wait_for("the sink's count in the live figures", || {
        let text = std::fs::read_to_string(&stats).unwrap_or_default();
        told = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|l| l["messages"].as_u64())
            .max()
            .unwrap_or(0);
        told > 0
    });
    let sinks = by_process(children_of(parent.id()))[1];
    unsafe { libc::kill(sinks as i32, libc::SIGKILL) };
    let out = parent.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
    assert!(
        report["messages"].as_u64().unwrap() >= told,
        "{} < {told}",
        report["messages"]
    );
    assert_warns(
        &report,
        &format!(
            "messages: {} of them as process 'sinks' last told them",
            report["messages"]
        ),
    );
    // What it told it had taken is not among what may be lost at it: the bound is what was
    // sent its way less that.
    let channel = &report["channels"][0];
    let (written, lost) = (
        channel["written"].as_u64().unwrap(),
        channel["link"]["lost"].as_u64().unwrap(),
    );
    assert!(
        lost + report["messages"].as_u64().unwrap() <= written,
        "lost ≤{lost} beside {} counted of {written}: {channel}",
        report["messages"]
    );
    assert_eq!(channel["link"]["lost_exact"], false, "{channel}");
}

#[test]
fn a_parent_killed_with_sigkill_leaves_no_slice_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut parent = start_endless(dir.path());
    let mut slices = Vec::new();
    wait_for("two slices", || {
        slices = children_of(parent.id());
        slices.len() == 2
    });
    parent.kill().unwrap();
    parent.wait().unwrap();
    for &pid in &slices {
        wait_for("the slice to end with its parent", || !alive(pid));
    }
    // They stopped rather than died: nothing of theirs is left in the temporary directory.
    for pid in slices {
        let prefix = format!("smx-slice-{pid}-");
        let left = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(&prefix));
        assert!(!left, "slice {pid} left its directory behind");
    }
}

#[test]
fn sigterm_stops_every_process_and_the_report_covers_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let parent = start_endless(dir.path());
    let slices = endless_slices(&parent, dir.path());
    unsafe { libc::kill(parent.id() as i32, libc::SIGTERM) };
    let out = parent.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "stopped", "a stop asked for is no failure: {report}");
    assert_eq!(process(&report, "main")["status"].as_str(), Some("stopped"));
    assert!(report["channels"][0]["read"].as_u64().unwrap() > 0);
    assert_books_balance(&report);
    for pid in slices {
        assert!(!alive(pid));
    }
}

/// A slice started by hand whose job it cannot take (cores this machine does not have, another
/// process's job, no directory of its own) writes a stand-in report that says why, and the merge counts the process as
/// `refused`, not as one that died.
#[test]
fn a_slice_started_by_hand_that_cannot_take_its_job_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = split(
        dir.path(),
        NET,
        "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n",
        &[],
    );
    let job_path = out_dir.join("sinks.job");
    let mut job: Value = serde_json::from_str(&std::fs::read_to_string(&job_path).unwrap()).unwrap();
    job["cores_allowed"] = serde_json::json!([1_000_000]);
    let far_cores = write(dir.path(), "far_cores.job", &job.to_string());
    let report_path = out_dir.join("sinks.report.json");
    // A temporary directory that is not there: the slice cannot make its own in it.
    let no_tmp = dir.path().join("no-such-dir");
    for (why, job, started_as, tmp) in [
        ("cores_allowed", &far_cores, "sinks", std::env::temp_dir()),
        ("--process", &job_path, "main", std::env::temp_dir()),
        ("cannot make the slice's directory", &job_path, "sinks", no_tmp),
    ] {
        let _ = std::fs::remove_file(&report_path);
        let out = smxrun()
            .args(["__slice", "--process", started_as, "--job"])
            .arg(job)
            .arg("--report")
            .arg(&report_path)
            .env("TMPDIR", tmp)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{why}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("sinks: error: ") && stderr.contains(why),
            "{why}: {stderr}"
        );
        let stand_in: Value = serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
        assert!(
            stand_in["refused"].as_str().is_some_and(|r| r.contains(why)),
            "{why}: {stand_in}"
        );
        let merged = common::deploy::merge_json(&out_dir, &["main", "sinks"]);
        let report: Value = serde_json::from_slice(&merged.stdout).unwrap_or_else(|_| panic!("{}", text(&merged)));
        assert_eq!(process(&report, "sinks")["status"], "refused", "{why}: {report}");
    }
}

/// A link passes on the number each message's producer gave it, over shared memory and over
/// tcp alike, so a sink behind it sees what it would see in one process: the two streams of a
/// fan-in told apart, and a gap for each message overwritten before the link.
#[test]
fn a_link_keeps_each_messages_own_number() {
    let over_tcp = "[process.sinks]\nhost = \"127.0.0.1\"\nport = 27422\nlaunch = \"env\"\n";
    for (transport, process) in [("shm", "[process.sinks]\n"), ("zmq", over_tcp)] {
        let dir = tempfile::tempdir().unwrap();
        let config = format!("{process}\n[net.Snk]\nprocess = \"sinks\"\n");
        let fan_in = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect (Src!Src).Snk\n";
        let (out, report) = run_json(dir.path(), fan_in, &config, &["-n", "20000"]);
        assert!(out.status.success(), "{transport}: {}", text(&out));
        let link = report["channels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["link"].is_object());
        assert_eq!(link.unwrap()["link"]["transport"], transport, "{report}");
        let sink = &net_row(&report, "name", "Snk")["stats"];
        assert_eq!(sink["received"], 40000, "{transport}: {sink}");
        assert_eq!(sink["streams"], 2, "{transport}: {sink}");
        assert_eq!(sink["gaps"], 0, "{transport}: {sink}");

        let decoupled =
            "Src = box smx_src_rand( decoupled out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n";
        let (out, report) = run_json(dir.path(), decoupled, &config, &["-n", "200000", "--channel-len", "1"]);
        assert!(out.status.success(), "{transport}: {}", text(&out));
        let channels = report["channels"].as_array().unwrap();
        let overwritten: u64 = channels.iter().map(|c| c["overwritten"].as_u64().unwrap()).sum();
        let lost: u64 = channels.iter().map(|c| c["link"]["lost"].as_u64().unwrap_or(0)).sum();
        let sink = &net_row(&report, "name", "Snk")["stats"];
        assert_eq!(sink["streams"], 1, "{transport}: {sink}");
        assert_eq!(
            sink["gaps"].as_u64().unwrap(),
            overwritten + lost,
            "{transport}: {sink} {report}"
        );
        assert_eq!(
            sink["received"].as_u64().unwrap() + overwritten + lost,
            200000,
            "{transport}: {sink}"
        );

        // Behind the link a decoupled input reads its latest value again while nothing new
        // came (its producer's process starting, or slower): each such read is a repeat, as the
        // channel's duplicated counts it, and no new stream or gap, also when it is message 0.
        let reread =
            "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( decoupled in data )\nconnect Src.Snk\n";
        let (out, report) = run_json(dir.path(), reread, &config, &["-n", "20000"]);
        assert!(out.status.success(), "{transport}: {}", text(&out));
        let sink = &net_row(&report, "name", "Snk")["stats"];
        let duplicated = report["channels"][0]["duplicated"].as_u64().unwrap();
        assert_eq!(
            (&sink["streams"], &sink["gaps"], &sink["out_of_order"]),
            (&json!(1), &json!(0), &json!(0)),
            "{transport}: {sink}"
        );
        assert_eq!(sink["repeats"], duplicated, "{transport}: {sink}");
        assert_eq!(sink["received"], 20000 + duplicated, "{transport}: {sink}");
    }
}

/// The largest payload a box makes crosses shared memory, and a tcp link with CURVE on, whose
/// encrypted frames are longer than the message (the receiver once cut them as too large and
/// lost every message).
#[test]
fn a_64_mib_payload_crosses_processes() {
    let over_tcp = "[process.sinks]\nhost = \"127.0.0.1\"\nport = 27424\nlaunch = \"env\"\n";
    for (transport, process) in [("shm", "[process.sinks]\n"), ("zmq", over_tcp)] {
        let dir = tempfile::tempdir().unwrap();
        let config = format!("{process}\n[net.Src]\ncount = 3\nsize = 67108864\n\n[net.Snk]\nprocess = \"sinks\"\n");
        let (out, report) = run_json(dir.path(), NET, &config, &[]);
        assert!(out.status.success(), "{transport}: {}", text(&out));
        let channel = &report["channels"][0];
        assert_eq!(channel["link"]["transport"], transport, "{channel}");
        assert_eq!(channel["link"]["curve"], transport == "zmq", "{channel}");
        assert_eq!(channel["read"], 3, "{transport}: {channel}");
        assert_eq!(channel["link"]["lost"], 0, "{transport}: {channel}");
        assert_books_balance(&report);
    }
}

#[test]
fn split_writes_private_slices_whose_reports_merge_into_one() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out_dir = split(
        dir.path(),
        NET,
        "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n",
        &["-n", "5000", "--link-timeout", "60s"],
    );
    // Each link box waits as long as asked for its peer, which an orchestrator starts apart.
    for name in ["main.job", "sinks.job"] {
        let job: Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join(name)).unwrap()).unwrap();
        let timeouts: Vec<&str> = job["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a.as_str())
            .filter(|a| a.starts_with("link") && a.ends_with(".timeout=60000ms"))
            .collect();
        assert_eq!(timeouts.len(), 1, "{name}: {job}");
    }
    for name in ["main.job", "sinks.job", "main.sh", "sinks.sh", "smx-sinks.service"] {
        let mode = std::fs::metadata(out_dir.join(name)).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{name} is readable by others: {mode:o}");
    }
    let unit = std::fs::read_to_string(out_dir.join("smx-sinks.service")).unwrap();
    assert!(
        unit.contains("ExecStart=") && unit.contains("CPUSchedulingPolicy="),
        "{unit}"
    );
    // A link file of a run whose processes were killed, with no supervisor to remove it: the
    // slices sweep it (and only such files) before they start.
    let stale = format!("/dev/shm/smx-test-stale-{}", std::process::id());
    let mut header = b"smxshm\x00\x01".to_vec();
    header.extend(7u64.to_ne_bytes()); // the layout version, smx_shm's `VERSION`
    header.resize(32, 0);
    let mut gone = Command::new("true").spawn().unwrap();
    header.extend(gone.id().to_ne_bytes());
    gone.wait().unwrap();
    header.resize(64, 0);
    std::fs::write(&stale, &header).unwrap();
    let children: Vec<_> = ["sinks", "main"]
        .iter()
        .map(|p| Command::new("sh").arg(out_dir.join(format!("{p}.sh"))).spawn().unwrap())
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    assert!(!Path::new(&stale).exists(), "{stale} was left");
    let out = smxrun()
        .args(["report", "merge", "--format", "json"])
        .arg(out_dir.join("main.report.json"))
        .arg(out_dir.join("sinks.report.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["channels"][0]["read"], 5000);
    assert_eq!(report["channels"][0]["link"]["lost"], 0);
    assert_eq!(report["nets"][1]["process"], "sinks");
    assert_books_balance(&report);
    // The text says what run the slices were, as a run's own report does.
    let out = smxrun()
        .args(["report", "merge"])
        .arg(out_dir.join("main.report.json"))
        .arg(out_dir.join("sinks.report.json"))
        .output()
        .unwrap();
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    assert!(
        first.starts_with("Asked: report merge ")
            && first.contains(&format!(
                "(a split of {}, -n 5000, --config ",
                dir.path().join("net.smx").display()
            )),
        "{first}"
    );
    // A report left out of the merge: its process counts as one that died, and the merge says
    // which, naming the report beside the others.
    let out = smxrun()
        .args(["report", "merge", "--format", "json"])
        .arg(out_dir.join("main.report.json"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "warning: process 'sinks': its report {} was not given: it counts as one that died",
            out_dir.join("sinks.report.json").display()
        )),
        "{stderr}"
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(process(&report, "sinks")["status"], "died", "{report}");
}

/// `smxrun check` of [`NET`], written into `dir`, with `config` as its `c.toml`.
fn check_config(dir: &Path, config: &str) -> std::process::Output {
    let net = write(dir, "net.smx", NET);
    let path = write(dir, "c.toml", config);
    smxrun()
        .arg("check")
        .arg(&net)
        .arg("--config")
        .arg(&path)
        .output()
        .unwrap()
}

/// Two network namespaces joined by a veth pair, each standing for a host; deleted on drop.
struct Hosts {
    names: [String; 2],
    addresses: [String; 2],
    veth: String,
}

impl Hosts {
    /// `None` (after saying why) where namespaces cannot be made: not root, or no `ip`.
    fn new(test: &str) -> Option<Hosts> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        if unsafe { libc::geteuid() } != 0 {
            println!("skipped {test}: simulating hosts with network namespaces needs root");
            return None;
        }
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let tag = format!("{}{k}", std::process::id() % 100_000);
        let subnet = format!("10.213.{}", (std::process::id() % 50) * 5 + k % 5);
        let hosts = Hosts {
            names: [format!("smxa{tag}"), format!("smxb{tag}")],
            addresses: [format!("{subnet}.1"), format!("{subnet}.2")],
            veth: format!("smxv{tag}"),
        };
        let peer = format!("{}p", hosts.veth);
        let steps: Vec<Vec<String>> = vec![
            vec!["netns".into(), "add".into(), hosts.names[0].clone()],
            vec!["netns".into(), "add".into(), hosts.names[1].clone()],
            vec![
                "link".into(),
                "add".into(),
                hosts.veth.clone(),
                "type".into(),
                "veth".into(),
                "peer".into(),
                "name".into(),
                peer.clone(),
            ],
            vec![
                "link".into(),
                "set".into(),
                hosts.veth.clone(),
                "netns".into(),
                hosts.names[0].clone(),
            ],
            vec![
                "link".into(),
                "set".into(),
                peer.clone(),
                "netns".into(),
                hosts.names[1].clone(),
            ],
        ];
        for step in steps {
            if !Command::new("ip").args(&step).status().is_ok_and(|s| s.success()) {
                println!("skipped {test}: `ip {}` failed", step.join(" "));
                return None;
            }
        }
        for (i, dev) in [hosts.veth.clone(), peer].iter().enumerate() {
            hosts.ip(i, &["addr", "add", &format!("{}/24", hosts.addresses[i]), "dev", dev]);
            hosts.ip(i, &["link", "set", dev, "up"]);
            hosts.ip(i, &["link", "set", "lo", "up"]);
        }
        Some(hosts)
    }

    fn ip(&self, i: usize, args: &[&str]) {
        let status = Command::new("ip")
            .arg("-n")
            .arg(&self.names[i])
            .args(args)
            .status()
            .unwrap();
        assert!(status.success(), "ip -n {} {args:?}", self.names[i]);
    }

    /// Processes `a` and `b` on the two hosts; the source in `a`, the sink in `b`.
    fn config(&self, extra: &str) -> String {
        format!(
            "[process.a]\nhost = \"{}\"\nlaunch = \"ip netns exec {}\"\n\n[process.b]\nhost = \"{}\"\nlaunch = \"ip netns exec {}\"\n\n\
             [net.Src]\nprocess = \"a\"\n{extra}\n[net.Snk]\nprocess = \"b\"\n",
            self.addresses[0], self.names[0], self.addresses[1], self.names[1]
        )
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
}

/// A process started in a network namespace must be reached at an address that namespace
/// has: another one is an error of `check` at the `host` key, not a process that refuses its
/// run once started.
#[test]
fn check_refuses_a_host_address_the_namespace_lacks() {
    let Some(hosts) = Hosts::new("check_refuses_a_host_address_the_namespace_lacks") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let subnet = hosts.addresses[1].rsplit_once('.').unwrap().0;
    let absent = format!("{subnet}.9");
    let check = |config: &str| check_config(dir.path(), config);
    let out = check(&hosts.config(""));
    assert!(out.status.success(), "{}", text(&out));
    let out = check(
        &hosts
            .config("")
            .replace(&format!("\"{}\"", hosts.addresses[1]), &format!("\"{absent}\"")),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "c.toml:6: process 'b': host '{absent}' is not an address of network namespace '{}'",
            hosts.names[1]
        )),
        "{stderr}"
    );
}

/// A producer in a network namespace dials its consumer's host from there: a host that
/// namespace has no route to is an error of `check`, not a link silent until its timeout.
#[test]
fn check_refuses_a_host_the_producers_namespace_has_no_route_to() {
    let test = "check_refuses_a_host_the_producers_namespace_has_no_route_to";
    let Some(hosts) = Hosts::new(test) else {
        return;
    };
    // An address of the consumer's namespace on no network the producer's namespace knows.
    let subnet = hosts.addresses[1]
        .rsplit_once('.')
        .unwrap()
        .0
        .replacen("10.213.", "10.214.", 1);
    let unrouted = format!("{subnet}.2");
    hosts.ip(1, &["addr", "add", &format!("{unrouted}/32"), "dev", "lo"]);
    let dir = tempfile::tempdir().unwrap();
    let config = hosts
        .config("")
        .replace(&format!("\"{}\"", hosts.addresses[1]), &format!("\"{unrouted}\""));
    let out = check_config(dir.path(), &config);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "c.toml:6: key 'host': process 'b' has host = \"{unrouted}\", but process 'a' runs in network namespace \
             '{}', which has no route to it",
            hosts.names[0]
        )),
        "{stderr}"
    );
}

#[test]
fn two_hosts_are_joined_over_tcp_with_curve() {
    let Some(hosts) = Hosts::new("two_hosts_are_joined_over_tcp_with_curve") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (out, report) = run_json(dir.path(), NET, &hosts.config(""), &["-n", "5000"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(process(&report, "a")["host"], hosts.addresses[0].as_str());
    let channel = &report["channels"][0];
    assert_eq!(channel["read"], 5000);
    let link = &channel["link"];
    assert_eq!(
        (link["transport"].as_str(), link["curve"].as_bool()),
        (Some("zmq"), Some(true))
    );
    assert!(
        link["endpoint"]
            .as_str()
            .unwrap()
            .starts_with(&format!("tcp://{}:", hosts.addresses[1])),
        "{link}"
    );
    assert_eq!(link["lost"], 0);
    // Two network namespaces of one machine read its one monotonic clock: a message's latency
    // counts from its creation.
    assert_eq!(link["clocks_comparable"], true, "{link}");
    assert_books_balance(&report);
}

#[test]
fn a_link_whose_host_goes_down_ends_the_run_with_the_loss_in_the_books() {
    let Some(hosts) = Hosts::new("a_link_whose_host_goes_down_ends_the_run_with_the_loss_in_the_books") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "net.smx", NET);
    let config = write(dir.path(), "deploy.toml", &hosts.config("count = 0\n"));
    let report = dir.path().join("report.json");
    let stats = dir.path().join("stats.jsonl");
    let parent = smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["--report", "json", "-q", "-o"])
        .arg(&report)
        .args(["--stats-every", "20ms", "--stats-file"])
        .arg(&stats)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut slices = Vec::new();
    wait_for("two slices", || {
        slices = children_of(parent.id());
        slices.len() == 2
    });
    // The consumer's host drops off the network once the link carries messages, not before.
    wait_for_messages(&stats);
    hosts.ip(1, &["link", "set", &format!("{}p", hosts.veth), "down"]);
    let out = parent.wait_with_output().unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let channel = &report["channels"][0];
    assert!(channel["read"].as_u64().unwrap() > 0, "{channel}");
    assert_books_balance(&report);
    for pid in slices {
        assert!(!alive(pid));
    }
    // No box failed and no process died: the run is not `failed` (its exit, 3, says the books
    // are not clean).
    let ended_by_themselves = report["processes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| matches!(p["status"].as_str(), Some("ok" | "ended" | "stopped")));
    if ended_by_themselves {
        assert_ne!(report["status"], "failed", "{report}");
        // Nets cut short by the lost link make it stopped, as a stop would.
        if report["nets"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["status"] == "stopped")
        {
            assert_eq!(report["status"], "stopped", "{report}");
        }
    }
    // What the link's sender held when it gave up is in the row's lost (or left), not in its
    // dropped: no line calls it dropped.
    assert!(
        !report["warnings"].to_string().contains("message(s) dropped"),
        "{}",
        report["warnings"]
    );
    // Both processes left books: the loss is known, and no line says it is not.
    if channel["link"]["lost_exact"] == true {
        let warnings = report["warnings"].to_string();
        assert!(
            !warnings.contains("the loss after the last message received is unknown"),
            "{warnings}"
        );
    }
    // The producer's process lived on: the consumer's row blames the link, not a death.
    let snk = net_row(&report, "name", "Snk");
    if snk["status"] == "stopped" && process(&report, "a")["status"] != "died" {
        assert_eq!(
            snk["error"],
            "its input was cut: the link from process 'a' was lost (no heartbeat came over it: the network between the two, or that process)",
            "{snk}"
        );
    }
}

/// A line over three processes whose middle one's host drops off the network: each link's
/// ends find the other gone by its heartbeats and end by themselves (none waits out a linger
/// for a confirmation that cannot come, none is left stuck for a stop), and what was on its
/// way over a link is lost there.
#[test]
fn a_lost_host_in_the_middle_of_a_line_ends_every_process_by_itself() {
    let Some(hosts) = Hosts::new("a_lost_host_in_the_middle_of_a_line_ends_every_process_by_itself") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let net = write(
        dir.path(),
        "net.smx",
        "Src = box smx_src_rand( out data )\nFwd = box smx_fwd( up in data, down out data )\n\
         Snk = box smx_snk_null( in data )\nconnect Src.Fwd.Snk\n",
    );
    // `a` and `c` on the first host, `b` between them on the second.
    let config = format!(
        "{}\n[process.c]\nhost = \"{}\"\nlaunch = \"ip netns exec {}\"\n\n[net.Fwd]\nprocess = \"b\"\n",
        hosts
            .config("count = 0\n")
            .replace("[net.Snk]\nprocess = \"b\"", "[net.Snk]\nprocess = \"c\""),
        hosts.addresses[0],
        hosts.names[0]
    );
    let config = write(dir.path(), "deploy.toml", &config);
    let report = dir.path().join("report.json");
    let stats = dir.path().join("stats.jsonl");
    let parent = smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["--report", "json", "-q", "-o"])
        .arg(&report)
        .args(["--stats-every", "20ms", "--stats-file"])
        .arg(&stats)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The host goes down in the middle of the line, not before it: once the whole net's sink
    // has counted messages, both links carry them.
    wait_for_messages(&stats);
    hosts.ip(1, &["link", "set", &format!("{}p", hosts.veth), "down"]);
    let out = parent.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("stuck"), "{stderr}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    for name in ["a", "b", "c"] {
        assert_eq!(
            process(&report, name)["status"],
            "ended",
            "{name}: {stderr}\nprocesses: {}\nchannels: {}",
            report["processes"],
            report["channels"]
        );
    }
    let into_b = &report["channels"][0]["link"];
    assert_eq!(into_b["lost_side"], "transit", "{into_b}");
    assert_eq!(into_b["lost_exact"], true, "{into_b}");
    assert_books_balance(&report);
}

#[test]
fn curve_keys_that_do_not_match_carry_nothing() {
    let Some(hosts) = Hosts::new("curve_keys_that_do_not_match_carry_nothing") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out_dir = split(dir.path(), NET, &hosts.config("count = 100\n"), &[]);
    // The receiving side accepts another client than the one the sender's key makes it.
    let keygen = smxrun().arg("keygen").output().unwrap();
    let keys = String::from_utf8_lossy(&keygen.stdout);
    let stranger = keys
        .lines()
        .find_map(|l| l.strip_prefix("curve_public = \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap();
    let job_path = out_dir.join("b.job");
    let job: Value = serde_json::from_str(&std::fs::read_to_string(&job_path).unwrap()).unwrap();
    let args: Vec<String> = job["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let a = a.as_str().unwrap();
            match a.split_once(".curve_clients=") {
                Some((target, _)) => format!("{target}.curve_clients={stranger}"),
                None => a.to_string(),
            }
        })
        .chain(["--set".to_string(), "link0_in.timeout=2s".to_string()])
        .collect();
    let mut job = job;
    job["args"] = serde_json::json!(args);
    std::fs::write(&job_path, format!("{job}\n")).unwrap();
    let children: Vec<_> = ["b", "a"]
        .iter()
        .map(|p| {
            Command::new("sh")
                .arg(out_dir.join(format!("{p}.sh")))
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<Option<i32>> = children.into_iter().map(|mut c| c.wait().unwrap().code()).collect();
    let out = smxrun()
        .args(["report", "merge", "--format", "json"])
        .arg(out_dir.join("a.report.json"))
        .arg(out_dir.join("b.report.json"))
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
    let channel = &report["channels"][0];
    assert_eq!(
        channel["read"], 0,
        "nothing crosses a link whose keys do not match: {channel}"
    );
    assert!(
        channel["link"]["receiver"]["refused_handshakes"].as_u64().unwrap() > 0,
        "{channel}"
    );
    assert!(
        codes.iter().any(|c| *c != Some(0)),
        "a side says its books are not clean: {codes:?}"
    );
}

/// A C sink that dereferences a null pointer at its 100th message.
const SEGFAULTING_SINK: &str = r#"
#include "smx.h"
SMX_BOX(t_crash);
int t_crash_init(void *h, void **state) { (void)h; *state = NULL; return 0; }
int t_crash(void *h, void *state)
{
    smx_msg_t *m = smx_read(h, 0);
    (void)state;
    if (m == NULL)
        return SMX_NET_RETURN;
    smx_msg_destroy(h, m, 1);
    if (smx_net_count(h) == 100)
        *(volatile int *)0 = 1;
    return SMX_NET_RETURN;
}
void t_crash_cleanup(void *h, void *state) { (void)h; (void)state; }
"#;

/// A C box that segfaults in its own process ends the run: the report names the process and
/// its signal, the link's books still balance, and the other process does not outlive it.
#[test]
fn a_c_box_that_segfaults_ends_the_run_naming_its_process() {
    let dir = tempfile::tempdir().unwrap();
    let src = write(dir.path(), "crash.c", SEGFAULTING_SINK);
    let lib = dir.path().join("libcrash.so");
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let cc = Command::new("cc")
        .args(["-shared", "-fPIC", "-Wall", "-Werror", "-I"])
        .arg(&include)
        .arg(&src)
        .arg("-o")
        .arg(&lib)
        .output()
        .unwrap();
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    let net = "Src = box smx_src_rand( out data )\nSnk = box t_crash( in data )\nconnect Src.Snk\n";
    let config = "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n\n[net.Src]\ncount = 0\n";
    let (out, report) = run_json(dir.path(), net, config, &["--boxes", lib.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let sinks = process(&report, "sinks");
    assert_eq!(sinks["status"], "died", "{sinks}");
    assert_eq!(sinks["signal"], 11, "SIGSEGV: {sinks}");
    assert!(text(&out).contains("process 'sinks'"), "{}", text(&out));
    // The consumer's process left no report, so what it read is unknown, and everything the
    // link took is lost at its side: the producer's books still balance.
    let channel = &report["channels"][0];
    assert!(channel["read"].is_null(), "{channel}");
    assert_eq!(channel["link"]["lost_side"], "sinks");
    let n = |k: &str| channel[k].as_u64().unwrap_or_else(|| panic!("{k} of {channel}"));
    assert_eq!(
        n("written"),
        n("overwritten") + n("dropped") + n("left") + channel["link"]["lost"].as_u64().unwrap(),
        "{channel}"
    );
    let main = process(&report, "main")["pid"].as_u64().unwrap() as u32;
    assert!(!alive(main), "the other process ended with the run");
}

#[test]
fn a_bad_value_is_refused_before_any_process_starts() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "net.smx", NET);
    let config = write(dir.path(), "deploy.toml", "[process.b]\n\n[net.Snk]\nprocess = \"b\"\n");
    let out = smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["-n", "3", "--set", "Src.size=70000000", "--report", "json"])
        .output()
        .unwrap();
    // As one process refuses it: one line naming the box, exit 1, no report of a run.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "error: --set 'Src.size=70000000': key 'size' of net 'Src': Src: size 70000000 is larger than the maximum"
        ),
        "{stderr}"
    );
    assert!(
        !stderr.contains("process 'b'"),
        "no process started to be blamed: {stderr}"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out));
}

/// A net without nodes (a graph file can hold one) under `--config` runs as it runs without
/// one, as one process with nothing in it; `check` accepts it, `split` says there is nothing to
/// split.
#[test]
fn a_net_without_nodes_runs_as_one_process_under_a_placement_too() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "empty.json", r#"{"nodes":[],"edges":[]}"#);
    let config = write(dir.path(), "deploy.toml", "[process.b]\n\n[default]\nprocess = \"b\"\n");
    let total = |out: &Output| {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().find(|l| l.starts_with("Total:")).map(str::to_string);
        line.unwrap_or_else(|| panic!("no Total line: {}", text(out)))
    };
    let alone = smxrun().arg(&net).args(["-q", "-n", "10"]).output().unwrap();
    assert_eq!(alone.status.code(), Some(0), "{}", text(&alone));
    assert!(total(&alone).ends_with("status ok"), "{}", text(&alone));
    let placed = smxrun()
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .args(["-q", "-n", "10"])
        .output()
        .unwrap();
    assert_eq!(placed.status.code(), Some(0), "{}", text(&placed));
    assert!(total(&placed).ends_with("status ok"), "{}", text(&placed));
    let check = smxrun()
        .arg("check")
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("accepted: 0 boxes"),
        "{}",
        text(&check)
    );
    let split = smxrun()
        .arg("split")
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .arg("-o")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(split.status.code(), Some(1), "{}", text(&split));
    assert!(
        String::from_utf8_lossy(&split.stderr).contains("there is nothing to split"),
        "{}",
        text(&split)
    );
}

#[test]
fn check_of_a_net_over_processes_says_where_each_net_runs_and_what_links_them() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "net.smx", NET);
    let config = write(dir.path(), "deploy.toml", "[process.b]\n\n[net.Snk]\nprocess = \"b\"\n");
    let out = smxrun()
        .arg("check")
        .arg(&net)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("  process main (this machine): Src#0\n"), "{stdout}");
    assert!(stdout.contains("  process b (this machine): Snk#1\n"), "{stdout}");
    assert!(
        stdout.contains("  link Src#0.data -> Snk#1.data: shm main -> b\n"),
        "{stdout}"
    );
    // A declared process that holds no net is a warning, counted as one.
    let idle = write(
        dir.path(),
        "idle.toml",
        "[process.b]\n\n[process.c]\n\n[net.Snk]\nprocess = \"b\"\n",
    );
    let out = smxrun()
        .arg("check")
        .arg(&net)
        .arg("--config")
        .arg(&idle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("idle.toml:3: process 'c' holds no net"),
        "{}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("(0 errors, 1 warning)"),
        "{}",
        text(&out)
    );
}

/// The drawing of a placed net frames each process around its nets and names each link; a
/// net placed in one process is drawn as without a placement; a format that cannot draw
/// processes, a placement error, and an output over the configuration are refused; a box not
/// written yet is placed and drawn too.
#[test]
fn graph_draws_each_process_as_a_frame_and_each_link_by_its_transport() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "net.smx", NET);
    let config = write(dir.path(), "deploy.toml", "[process.b]\n\n[net.Snk]\nprocess = \"b\"\n");
    let graph = |net: &Path, args: &[&str]| smxrun().arg("graph").arg(net).args(args).output().unwrap();
    let config_arg = config.to_str().unwrap();
    let frames = |dot: &str| -> Vec<(String, Vec<String>)> {
        dot.split("  subgraph cluster_p")
            .skip(1)
            .map(|frame| {
                let frame = &frame[..frame.find("\n  }").unwrap()];
                let title = frame.split("label=\"").nth(1).unwrap().split('"').next().unwrap();
                let nodes = frame
                    .lines()
                    .filter_map(|l| l.strip_prefix("    n")?.split(' ').next().map(str::to_string))
                    .collect();
                (title.to_string(), nodes)
            })
            .collect()
    };
    let out = graph(&net, &["--format", "dot", "--config", config_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // A placement is drawn as dot without being asked for the format.
    assert_eq!(graph(&net, &["--config", config_arg]).stdout, out.stdout);
    let dot = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        frames(&dot),
        [
            ("process main (this machine)".to_string(), vec!["0".to_string()]),
            ("process b (this machine)".to_string(), vec!["1".to_string()])
        ],
        "{dot}"
    );
    assert!(
        dot.lines()
            .any(|l| l.starts_with("  n0 -> n1 [") && l.contains("link: shm")),
        "{dot}"
    );
    // --set places as a run does, beating the file: all in one process draws as no placement.
    let plain = graph(&net, &["--format", "dot"]);
    let out = graph(
        &net,
        &["--format", "dot", "--config", config_arg, "--set", "Snk.process=main"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(out.stdout, plain.stdout);

    for format in ["gml", "graphml", "json"] {
        let out = graph(&net, &["--format", format, "--set", "Snk.process=main"]);
        assert_eq!(out.status.code(), Some(1), "{format}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!(
                "--format {format}: writes the net as its file gives it, without settings or processes"
            )),
            "{}",
            text(&out)
        );
    }
    let out = graph(&net, &["--format", "dot", "--set", "Snk.process=nowhere"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown process 'nowhere'"),
        "{}",
        text(&out)
    );
    let out = graph(&net, &["--format", "dot", "--config", config_arg, "-o", config_arg]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "[process.b]\n\n[net.Snk]\nprocess = \"b\"\n"
    );

    let future = write(
        dir.path(),
        "future.smx",
        "Src = box my_future_src( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n",
    );
    let out = graph(&future, &["--format", "dot", "--config", config_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dot = String::from_utf8_lossy(&out.stdout);
    assert_eq!(frames(&dot).len(), 2, "{dot}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("'my_future_src' is not known"),
        "{}",
        text(&out)
    );

    // A deployment is drawn as planned from any machine: a host that is not an address of this
    // one, cores and a `launch` program it lacks are for `check` and the run to refuse.
    let planned = write(
        dir.path(),
        "planned.toml",
        "[process.far]\nhost = \"192.0.2.7\"\nlaunch = \"smx-no-such-ssh user@192.0.2.7\"\ncores = [100000]\n\n\
         [process.here]\nhost = \"192.0.2.1\"\n\n[net.Src]\nprocess = \"far\"\n\n[net.Snk]\nprocess = \"here\"\n",
    );
    let planned = planned.to_str().unwrap();
    let out = graph(&net, &["--format", "dot", "--config", planned]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dot = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        frames(&dot),
        [
            ("process far (192.0.2.7)".to_string(), vec!["0".to_string()]),
            ("process here (192.0.2.1)".to_string(), vec!["1".to_string()])
        ],
        "{dot}"
    );
    assert!(dot.contains("link: zmq, curve"), "{dot}");
    let out = smxrun()
        .arg("check")
        .arg(&net)
        .args(["--config", planned])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // Whether `main` needs a `host` for a producer elsewhere depends on which addresses are
    // this machine's: asked by `check`, not by a drawing.
    let to_main = write(
        dir.path(),
        "to_main.toml",
        "[process.far]\nhost = \"192.0.2.7\"\nlaunch = \"ssh user@192.0.2.7\"\n\n[net.Src]\nprocess = \"far\"\n",
    );
    let to_main = to_main.to_str().unwrap();
    let out = graph(&net, &["--format", "dot", "--config", to_main]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = common::deploy::check(&net, Path::new(to_main));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no `host`"),
        "{}",
        text(&out)
    );
}

/// A loopback `host` given for a process here is no more reachable from another machine than
/// none: a producer there would dial its own loopback.
#[test]
fn a_loopback_host_is_refused_for_a_process_fed_from_another_machine() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "net.smx", NET);
    // A name this machine resolves to loopback addresses alone is no better (a hosts file may
    // give the machine's own name 127.0.0.1 or 127.0.1.1): its own name, where it does.
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let name = name.trim();
    let resolved: Vec<std::net::IpAddr> = std::net::ToSocketAddrs::to_socket_addrs(&(name, 0))
        .map(|a| a.map(|a| a.ip()).collect())
        .unwrap_or_default();
    if !name.is_empty() && !resolved.is_empty() && resolved.iter().all(std::net::IpAddr::is_loopback) {
        let config = write(
            dir.path(),
            "named.toml",
            &format!(
                "[process.far]\nhost = \"192.0.2.7\"\nlaunch = \"ssh user@192.0.2.7\"\n\n[process.here]\n\
                 host = \"{name}\"\n\n[net.Src]\nprocess = \"far\"\n\n[net.Snk]\nprocess = \"here\"\n"
            ),
        );
        let out = common::deploy::check(&net, &config);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
        let said = format!("process 'here' has host = \"{name}\", which resolves here to loopback addresses alone");
        assert!(String::from_utf8_lossy(&out.stderr).contains(&said), "{}", text(&out));
    } else {
        eprintln!("skipped the host name: '{name}' resolves to {resolved:?} here, not to loopback alone");
    }
    // Also for a process started here through a `launch`.
    for (host, launch) in [("127.0.0.1", ""), ("LocalHost", ""), ("127.0.0.1", "launch = \"env\"")] {
        let config = write(
            dir.path(),
            "loopback.toml",
            &format!(
                "[process.far]\nhost = \"192.0.2.7\"\nlaunch = \"ssh user@192.0.2.7\"\n\n[process.here]\n\
                 host = \"{host}\"\n{launch}\n[net.Src]\nprocess = \"far\"\n\n[net.Snk]\nprocess = \"here\"\n"
            ),
        );
        let out = common::deploy::check(&net, &config);
        assert_eq!(out.status.code(), Some(1), "{host}: {}", text(&out));
        let said = format!(
            "loopback.toml:5: key 'host': process 'here' has host = \"{host}\", a loopback address, but channel"
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&said),
            "{host}: {}",
            text(&out)
        );
    }
}

#[test]
fn check_takes_the_settings_a_run_takes() {
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "net.smx", NET);
    let check = |args: &[&str]| smxrun().arg("check").arg(&net).args(args).output().unwrap();
    let out = check(&["--set", "Snk.process=b"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--set 'Snk.process=b': key 'process' of net 'Snk': unknown process 'b'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("declare it with a [process.b] table in the --config file"),
        "{stderr}"
    );
    let config = write(dir.path(), "deploy.toml", "[process.b]\n");
    let out = check(&["--config", config.to_str().unwrap(), "--set", "Snk.process=b"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("  link Src#0.data -> Snk#1.data: shm main -> b\n"));
}

/// `--pin` names this machine's cores, where the processes without `launch` run: a core it
/// lacks is refused before anything starts, by a run and by `split`, as in one process.
#[test]
fn a_pin_this_machine_lacks_is_refused_before_any_process_starts() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let (out, _) = run_json(dir.path(), NET, config, &["-n", "10", "--pin", "4095"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--pin: core 4095 is not available"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line, nothing started: {stderr}");
    let out = smxrun()
        .arg("split")
        .arg(dir.path().join("net.smx"))
        .arg("--config")
        .arg(dir.path().join("deploy.toml"))
        .args(["--pin", "4095", "-o"])
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(!dir.path().join("out").exists());
}

/// A real-time net alone in a process of one core shares it with the link's source that feeds
/// it: it runs there at normal priority, chained behind the link, and its process says why,
/// as one process does when `--pin` gives it one core. At SCHED_FIFO, waiting for its input,
/// it kept the core from the link's source, and each message waited for the kernel.
#[test]
fn a_real_time_net_sharing_its_processs_core_with_a_link_runs_at_normal_priority() {
    if one_core("the process of the sink would not be given a core of its own") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let net = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.rt(Snk)\n";
    let config = "[process.sinks]\ncores = [1]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let (out, report) = run_json(dir.path(), net, config, &["-n", "20000"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        net_row(&report, "name", "Snk")["priority"],
        Value::Null,
        "{:#}",
        report["nets"]
    );
    assert_notes(&report, "sinks: real-time scheduling not used: 2 threads share 1 core");
    assert_eq!(report["messages"], 20000);
    assert_books_balance(&report);
}

/// A process with a core of its own beside one it shares with another process runs its
/// real-time net on its own core, at real-time priority, under `--rt auto`; its other thread
/// takes the shared core, and the net there would have run at normal priority.
#[test]
fn a_real_time_net_takes_the_core_its_process_does_not_share() {
    if one_core("the process of the sink would not have a core of its own") {
        return;
    }
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: SCHED_FIFO needs root (or CAP_SYS_NICE) here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let net = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.rt(Snk)\n";
    let config = "[process.main]\ncores = [0]\n\n[process.sinks]\ncores = [0, 1]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let (out, report) = run_json(dir.path(), net, config, &["-n", "20000"]);
    assert!(out.status.success(), "{}", text(&out));
    let snk = net_row(&report, "name", "Snk");
    assert_eq!(snk["core"], 1, "{:#}", report["nets"]);
    assert!(snk["priority"].as_u64().is_some_and(|p| p > 0), "{:#}", report["nets"]);
    assert_eq!(report["messages"], 20000);
    assert_books_balance(&report);
}

/// Two processes given the same core each count it as their own no more: under `--rt auto`
/// neither cyclic executive takes SCHED_FIFO there (where a busy one would starve the other
/// process's threads), and each process says which core it shares and with whom.
#[test]
fn processes_given_the_same_core_take_no_real_time_scheduling_there() {
    let dir = tempfile::tempdir().unwrap();
    let net = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n\
               connect tt[1ms](Src.Snk) | tt[1ms](Src.Snk)\n";
    let config = "[process.main]\ncores = [0]\n\n[process.p1]\ncores = [0]\n\n\
                  [net.\"Src#2\"]\nprocess = \"p1\"\n\n[net.\"Snk#3\"]\nprocess = \"p1\"\n";
    let (out, report) = run_json(dir.path(), net, config, &["-n", "50"]);
    assert!(out.status.success(), "{}", text(&out));
    for firewall in report["firewalls"].as_array().unwrap() {
        assert_eq!(firewall["priority"], Value::Null, "{firewall}");
    }
    assert_notes(
        &report,
        "main: real-time scheduling not used: core 0 is shared with process p1",
    );
    assert_notes(
        &report,
        "p1: real-time scheduling not used: core 0 is shared with process main",
    );
    assert_books_balance(&report);
    // `check` says so before any run, at the second process's table.
    let out = smxrun()
        .arg("check")
        .arg(dir.path().join("net.smx"))
        .arg("--config")
        .arg(dir.path().join("deploy.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("deploy.toml:4: process 'p1' names core 0 as process 'main' does"),
        "{}",
        text(&out)
    );
    // The second table in the file, whatever the names.
    let reversed = "[process.p1]\ncores = [0]\n\n[process.main]\ncores = [0]\n\n\
                    [net.\"Src#2\"]\nprocess = \"p1\"\n\n[net.\"Snk#3\"]\nprocess = \"p1\"\n";
    let out = smxrun()
        .arg("check")
        .arg(dir.path().join("net.smx"))
        .arg("--config")
        .arg(write(dir.path(), "reversed.toml", reversed))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("reversed.toml:4: process 'main' names core 0 as process 'p1' does"),
        "{}",
        text(&out)
    );
}

/// A decoupled source in a process of one core shares it with the link's sink, which it never
/// waits for: it offers the core after each step, so the link carries the messages across
/// instead of the few the scheduler let the sink see while the source ran through the run.
#[test]
fn a_decoupled_source_beside_its_link_on_one_core_lets_the_link_carry_its_messages() {
    if one_core("both processes would share it, which is another case") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let net = "Src = box smx_src_rand( decoupled out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n";
    let config = "[process.main]\ncores = [0]\n\n[process.sinks]\ncores = [1]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    // Long enough for the sink's turns to add up beside other busy programs: those take the
    // core at many of the source's offers, and 20,000 steps left the sink a few dozen turns.
    let (out, report) = run_json(dir.path(), net, config, &["-n", "200000"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_warns(
        &report,
        "main: busy threads: Src#0 reads nothing and writes only decoupled outputs",
    );
    // Most on an idle machine, a few hundred at least beside other busy programs; when the
    // source kept the core, the link carried a few.
    let channel = &report["channels"][0];
    assert!(
        channel["read"].as_u64().unwrap() > 100,
        "few messages crossed beside a source that keeps the core: {channel:#}"
    );
    assert_books_balance(&report);
}

/// A configuration read from a pipe (`--config /dev/stdin`, `--config <(...)`) places its nets
/// as a file does: the file is read once, its processes taken from the text its settings came
/// from (read a second time, the pipe said nothing, and the process seemed undeclared).
#[test]
fn a_configuration_from_a_pipe_places_its_nets() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let net = write(dir.path(), "net.smx", NET);
    let config = "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    for command in [&["check"][..], &["-n", "1000", "--report", "json", "-q"][..]] {
        let mut child = smxrun()
            .args(command)
            .arg(&net)
            .args(["--config", "/dev/stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(config.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{command:?}: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        if command[0] == "check" {
            assert!(stdout.contains("process sinks (this machine): Snk#1"), "{stdout}");
        } else {
            let report: Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(net_row(&report, "name", "Snk")["process"], "sinks", "{report}");
            assert_eq!(report["messages"], 1000);
        }
    }
}

/// A `--channel-len` worth a word is said once, by the supervisor, for the whole net: not again
/// by each process for the halves it holds. What was said before the start is in the report's
/// warnings too, with the placement's.
#[test]
fn a_long_channel_is_said_once_for_the_whole_net() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.sinks]\n\n[process.spare]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let (out, report) = run_json(dir.path(), NET, config, &["-n", "100", "--channel-len", "5000000"]);
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("--channel-len 5000000 reserves"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].starts_with("warning: --channel-len 5000000 reserves 0.3 GiB for 1 channel "),
        "{stderr}"
    );
    assert_eq!(report["messages"], 100);
    let warnings = report["warnings"].as_array().unwrap();
    let reserved = warnings
        .iter()
        .filter(|w| {
            w.as_str()
                .unwrap()
                .starts_with("--channel-len 5000000 reserves 0.3 GiB")
        })
        .count();
    assert_eq!(reserved, 1, "{warnings:#?}");
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().ends_with(
                "process 'spare' holds no net, so nothing runs there (place one with `process = \"spare\"`)"
            )),
        "{warnings:#?}"
    );
}

/// A producer that a `launch` starts at a local address, outside a network namespace, shares
/// this machine's loopback: a consumer's process without a `host` binds where it dials, so the
/// configuration is accepted and the run carries the messages.
#[test]
fn a_producer_at_a_local_address_reaches_a_consumer_without_host() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.main]\nlaunch = \"/usr/bin/env\"\nhost = \"127.0.0.1\"\nport = 27410\n\n[process.sinks]\nport = 27426\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let (out, report) = run_json(dir.path(), NET, config, &["-n", "1000"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        report["channels"][0]["link"]["transport"], "zmq",
        "{}",
        report["channels"][0]
    );
    assert_eq!(report["channels"][0]["read"], 1000);
    assert_books_balance(&report);
}

/// Two processes of this machine joined over tcp both ways take ports from one port space,
/// however their tables name this machine: `localhost` for one, nothing (127.0.0.1) for the
/// other, both from the same first `port`, would otherwise bind the same port twice.
#[test]
fn processes_that_name_this_machine_differently_take_different_ports() {
    let dir = tempfile::tempdir().unwrap();
    let net = "Src = box smx_src_rand( out data )\nFwd = box smx_fwd( up in data, down out data )\n\
               Snk = box smx_snk_null( in data )\nconnect Src.Fwd.Snk\n";
    let config = "[process.main]\nport = 27520\n\n[process.b]\nhost = \"localhost\"\nlaunch = \"/usr/bin/env\"\n\
                  port = 27520\n\n[net.Fwd]\nprocess = \"b\"\n";
    let (out, report) = run_json(dir.path(), net, config, &["-n", "1000"]);
    assert!(out.status.success(), "{}", text(&out));
    let endpoints: Vec<&str> = report["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["link"]["endpoint"].as_str().unwrap())
        .collect();
    assert_eq!(
        endpoints,
        ["tcp://localhost:27520", "tcp://127.0.0.1:27522"],
        "{report}"
    );
    assert_eq!(report["channels"][1]["read"], 1000, "{report}");
    assert_books_balance(&report);
}
