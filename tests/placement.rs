//! `--pin auto` places threads from the net and the machine: a cyclic executive alone on a
//! core when one is spare, chains kept on one core when threads outnumber cores and channels
//! are long enough to take turns, spread otherwise; one warning line per decision. Each test
//! reads the decision back from the JSON report (cores of nets and firewalls) and needs at
//! least two allowed cores, as on CI; with fewer there is nothing to decide and it says so.

use std::process::Command;

use serde_json::Value;

fn smxrun(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .args(["--report", "json", "-q"])
        .output()
        .expect("smxrun runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// A net file of `text` in a directory of its own (kept while the directory lives).
fn net_file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("net.smx");
    std::fs::write(&net, text).unwrap();
    (dir, net)
}

fn allowed_cores() -> usize {
    smx_timing::sched::allowed_cores().len()
}

/// The report's notes: what the runtime chose for this machine, and why.
fn notes(report: &Value) -> Vec<String> {
    report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect()
}

fn net_core(report: &Value, id: u64) -> u64 {
    let net = report["nets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap();
    net["core"].as_u64().expect("pinned")
}

/// Per channel: the cores of its producer and consumer.
fn channel_ends(report: &Value) -> Vec<(u64, u64)> {
    report["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                net_core(report, c["from_id"].as_u64().unwrap()),
                net_core(report, c["to_id"].as_u64().unwrap()),
            )
        })
        .collect()
}

fn too_few_cores() -> bool {
    let few = allowed_cores() < 2;
    if few {
        eprintln!("skipped: fewer than two allowed cores, nothing to place");
    }
    few
}

#[test]
fn the_executive_of_the_first_net_gets_a_core_no_other_thread_uses() {
    if too_few_cores() {
        return;
    }
    let report = smxrun(&["nets/src_snk.smx", "-n", "3000"]);
    let executive_core = report["firewalls"][0]["core"]
        .as_u64()
        .expect("the executive is pinned");
    // Src#2 and Snk#3 are the free-running pair, on threads of their own.
    for id in [2, 3] {
        assert_ne!(net_core(&report, id), executive_core, "{:#}", report["nets"]);
    }
    let notes = notes(&report);
    assert!(
        notes
            .iter()
            .any(|w| w.contains(&format!("cyclic executive alone on core {executive_core}"))),
        "{notes:#?}"
    );
    assert_eq!(report["status"], "ok");
    assert_eq!(report["messages"], 6000, "both pairs moved every message");
}

#[test]
fn a_core_setting_onto_the_reserved_core_shares_it_and_says_so() {
    if too_few_cores() {
        return;
    }
    let probe = smxrun(&["nets/src_snk.smx", "-n", "100"]);
    let reserved = probe["firewalls"][0]["core"].as_u64().unwrap().to_string();
    let set = format!("Snk#3.core={reserved}");
    let report = smxrun(&["nets/src_snk.smx", "-n", "100", "--set", &set]);
    let notes = notes(&report);
    assert!(
        notes
            .iter()
            .any(|w| w.contains("shared with a net whose `core` setting")),
        "{notes:#?}"
    );
    assert!(!notes.iter().any(|w| w.contains("alone on core")), "{notes:#?}");
}

#[test]
fn an_explicit_core_list_spreads_and_reserves_nothing() {
    if too_few_cores() {
        return;
    }
    let report = smxrun(&["nets/src_snk.smx", "-n", "100", "--pin", "0,1"]);
    assert!(
        !notes(&report).iter().any(|w| w.starts_with("placement:")),
        "{:#?}",
        notes(&report)
    );
}

#[test]
fn pairs_that_outnumber_the_cores_share_a_core_when_their_channels_are_long() {
    if too_few_cores() {
        return;
    }
    // From 256 on nothing chains; on shorter channels `smx_src_rand`'s pairs would.
    let report = smxrun(&["nets/pairs_16.smx", "-n", "2000", "--channel-len", "256"]);
    assert!(!notes(&report).iter().any(|w| w.starts_with("chaining:")));
    for (producer, consumer) in channel_ends(&report) {
        assert_eq!(producer, consumer, "{:#}", report["nets"]);
    }
    let cores: std::collections::BTreeSet<u64> = channel_ends(&report).iter().map(|e| e.0).collect();
    assert!(cores.len() >= 2, "the chains are spread over the cores: {cores:?}");
    let notes = notes(&report);
    assert!(notes.iter().any(|w| w.contains("stay on one core")), "{notes:#?}");
}

#[test]
fn pairs_on_length_one_channels_spread_even_when_they_outnumber_the_cores() {
    if too_few_cores() {
        return;
    }
    // With a thread per box (chaining, the default, runs each pair on one thread: below).
    let report = smxrun(&["nets/pairs_16.smx", "-n", "2000", "--chain", "off"]);
    for (producer, consumer) in channel_ends(&report) {
        assert_ne!(producer, consumer, "{:#}", report["nets"]);
    }
    let notes = notes(&report);
    assert!(notes.iter().any(|w| w.contains("too short")), "{notes:#?}");
}

#[test]
fn pairs_on_channels_shorter_than_256_that_outnumber_the_cores_run_chained_and_unpinned() {
    // 16 box threads: on 16 cores or more they fit, and nothing chains.
    if too_few_cores() || allowed_cores() >= 16 {
        return;
    }
    for len in ["1", "64"] {
        let report = smxrun(&["nets/pairs_16.smx", "-n", "2000", "--channel-len", len]);
        // A pair on one thread hands nothing over between cores: it is left to the scheduler.
        let nets = report["nets"].as_array().unwrap();
        assert!(nets.iter().all(|n| n["core"].is_null()), "{len}: {:#}", report["nets"]);
        let notes = notes(&report);
        let chained = |w: &String| w.starts_with("chaining: 16 box threads") && w.contains("8 chains");
        assert!(notes.iter().any(chained), "{len}: {notes:#?}");
        assert!(
            notes.iter().any(|w| w.contains("no chain talks to another thread")),
            "{len}: {notes:#?}"
        );
        assert!(!notes.iter().any(|w| w.contains("too short")), "{len}: {notes:#?}");
    }
}

#[test]
fn threads_that_fit_spread_without_a_note() {
    if too_few_cores() {
        return;
    }
    let report = smxrun(&["nets/pairs_2.smx", "-n", "2000", "--channel-len", "64"]);
    for (producer, consumer) in channel_ends(&report) {
        assert_ne!(producer, consumer);
    }
    assert!(!notes(&report).iter().any(|w| w.starts_with("placement:")));
}

#[test]
fn an_executive_that_spins_through_its_period_says_so_and_never_sleeps() {
    if too_few_cores() {
        return;
    }
    let spins_through = |report: &serde_json::Value| notes(report).iter().any(|w| w.contains("spins through each"));
    // Whether 10 us is too short to sleep in depends on this machine's wake-up latency; what
    // the report says must match what the executive did either way.
    let report = smxrun(&["nets/src_snk.smx", "-n", "2000"]);
    let fw = &report["firewalls"][0];
    let through = spins_through(&report);
    assert_eq!(fw["spin_ns"] == fw["period_ns"], through, "{fw:#}");
    if through {
        assert!(fw["priority"].is_null(), "{fw:#}");
    }
    assert_eq!(report["messages"], 4000, "both pairs moved every message");
    // `--rt on` keeps real-time priority, so the executive sleeps part of each period.
    let forced = smxrun(&["nets/src_snk.smx", "-n", "2000", "--rt", "on"]);
    assert!(!spins_through(&forced), "{:#?}", notes(&forced));
    assert!(forced["firewalls"][0]["spin_ns"].as_u64() < forced["firewalls"][0]["period_ns"].as_u64());
}

/// A cyclic executive alone on the core `--pin` lists has it to itself, as on a core that
/// `--pin auto` reserves: it spins through a period too short to sleep in, rather than sleeping
/// part of each at real-time priority. Beside a box thread on that core it does neither.
#[test]
fn an_executive_alone_on_a_listed_core_has_it_to_itself() {
    let (_dir, net) = net_file(
        "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect tt[10us](Src.Snk)\n",
    );
    let alone = smxrun(&[net.to_str().unwrap(), "-n", "200", "--pin", "0"]);
    let firewall = &alone["firewalls"][0];
    assert_eq!(
        (&firewall["core"], &firewall["spin_ns"], &firewall["priority"]),
        (&0.into(), &10_000.into(), &Value::Null),
        "{firewall}"
    );
    assert!(
        notes(&alone)
            .iter()
            .any(|w| w.contains("spins through each 10.0us period")),
        "{:#?}",
        notes(&alone)
    );
    let beside = smxrun(&["nets/src_snk.smx", "-n", "200", "--pin", "0"]);
    let firewall = &beside["firewalls"][0];
    assert_eq!(firewall["spin_ns"], 0, "{firewall}");
}

/// A real-time net whose thread would share the one core `--pin` lists with its feeder runs
/// at normal priority, chained, and the report says why: at SCHED_FIFO a net waiting for its
/// input keeps that core from the thread that would write it.
#[test]
fn a_real_time_net_on_a_shared_listed_core_runs_at_normal_priority() {
    let (_dir, net) =
        net_file("Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.rt(Snk)\n");
    let report = smxrun(&[net.to_str().unwrap(), "-n", "20000", "--pin", "0"]);
    let priorities: Vec<&Value> = report["nets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["priority"])
        .collect();
    assert_eq!(priorities, [&Value::Null, &Value::Null], "{:#}", report["nets"]);
    assert!(
        notes(&report)
            .iter()
            .any(|w| w.starts_with("real-time scheduling not used: 2 threads share 1 core")),
        "{:#?}",
        notes(&report)
    );
    assert_eq!(report["messages"], 20000);
}
