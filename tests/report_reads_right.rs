//! The report read by a newcomer: a time-triggered channel's overwrites
//! are explained on the spot, the run ends with a verdict on the period, a correct fan-in does
//! not read as a fault, and every node has one spelling, `Name#id`, with each warning printed
//! once. Nets are written in the language and run through the library or the binary; every
//! assertion is about behaviour, none about timing.

use std::process::Command;

use smx_lang::compose::{CompileOptions, compile};
use smx_lang::diag::SourceFile;
use smx_runtime::config::ConfigLayers;
use smx_runtime::report::{FirewallReport, PairReport};
use smx_runtime::report::{Report, probe_periods, text};
use smx_runtime::{RunOptions, run};
use smx_timing::{LatenessSummary, ProbeResult};

fn run_net(net: &str, sets: &[&str]) -> Report {
    let compiled = compile(&SourceFile::new("t.smx", net), &CompileOptions::default());
    assert!(compiled.accepted(), "{:?}", compiled.diagnostics);
    let registry = smxrun::builtin_registry();
    let mut layers = ConfigLayers::new();
    for set in sets {
        layers.add_set(set).unwrap();
    }
    let opts = RunOptions {
        settings: layers.resolve(&compiled.graph, &registry).unwrap(),
        ..RunOptions::default()
    };
    run(&compiled.graph, &registry, &opts).expect("the net runs")
}

const PAIR: &str = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n";

/// A 10 us firewall serving `Src -> Snk` with these figures.
fn firewall(ticks: u64, missed_ticks: u64, consume_misses: u64) -> FirewallReport {
    FirewallReport {
        name: "tf_10.0us_0".into(),
        clock_source: "tsc".into(),
        period_ns: 10_000,
        ticks,
        missed_ticks,
        overruns: 0,
        lateness_ns: LatenessSummary::default(),
        priority: None,
        core: None,
        spin_ns: 0,
        pairs: vec![PairReport {
            producer: "Src".into(),
            consumer: "Snk".into(),
            ticks: ticks - missed_ticks,
            forwarded: ticks - missed_ticks - consume_misses,
            produce_misses: 0,
            produce_misses_before_first: 0,
            consume_misses,
            missed_ticks,
            firewall_ns: Default::default(),
            consume_misses_by_shape: false,
            produce_misses_by_shape: false,
        }],
    }
}

fn probe(ticks: u64, misses: u64) -> ProbeResult {
    ProbeResult {
        period_ns: 10_000,
        ticks,
        misses,
        miss_rate: misses as f64 / ticks as f64,
        lateness_ns: LatenessSummary::default(),
        clock_source: "tsc".into(),
        rt_priority_granted: false,
        spun_through: false,
        fifo_priority: None,
        memory_locked: false,
        spin_ns: 0,
        wall: Default::default(),
        warnings: Vec::new(),
    }
}

fn last_line(text: &str) -> &str {
    text.lines().last().unwrap()
}

// ---- the report explains itself where the surprise is ----

#[test]
fn a_time_triggered_channel_says_its_overwrites_are_consume_misses() {
    let mut report = run_net(PAIR, &["Src.count=5"]);
    let c = &mut report.channels[0];
    // What a 10 us `tt[10us](Src.Snk)` run shows: a coupled kind with overwrites.
    c.timing = "time_triggered";
    c.read = 2;
    c.overwritten = 3;
    report.firewalls.push(firewall(10, 0, 3));
    let out = text::render(&report);
    let at = out
        .find("channel 0 is time-triggered")
        .unwrap_or_else(|| panic!("no note on the tt channel:\n{out}"));
    // The note, its wrapped lines joined; it sits with the channels, before the firewalls.
    let end = out[at..].find("\n\n").map_or(out.len(), |n| at + n);
    let note = out[at..end].split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(note.contains("3 overwritten are consume misses"), "{note}");
    assert!(
        note.contains("latest-value buffer to Snk#1 replaced before Snk#1 read them"),
        "{note}"
    );
    assert!(at < out.find("\nTemporal firewalls").unwrap(), "{out}");
    assert!(out[at..].lines().next().unwrap().len() <= 100, "wrapped:\n{out}");
    // A channel without a firewall has no note, whatever it shows.
    report.channels[0].timing = "none";
    assert!(!text::render(&report).contains("is time-triggered"));
}

#[test]
fn a_timed_run_ends_with_a_verdict_on_its_period_against_the_probe() {
    let mut report = run_net(PAIR, &["Src.count=5"]);
    // No firewall: no verdict.
    assert!(last_line(&text::render(&report)).starts_with("Total:"));
    report.firewalls.push(firewall(1000, 250, 700));

    // Without a probe the figures are given and the probe named: the command line's command in
    // its report, the library's function by default. The run's own misses ask for attention.
    let out = text::render_with(&report, smx_runtime::LeverWords(smxrun::cli::words::flag_words));
    let line = last_line(&out);
    assert!(
        line.starts_with("Attention: period 10.0us not held by this run:"),
        "{out}"
    );
    assert!(
        line.contains("lost 25.00 % of its ticks") && line.contains("up to 95.00 %"),
        "{line}"
    );
    assert!(line.contains("`smxrun probe --period 10us`"), "{line}");
    let library = text::render(&report);
    assert!(
        last_line(&library).contains("`smx_timing::probe at period 10us`") && !library.contains("smxrun probe"),
        "{library}"
    );

    // The empty loop misses too: the platform cannot hold the period.
    report.probes = vec![probe(20_000, 9_000)];
    let line = last_line(&text::render(&report)).to_string();
    assert!(line.contains("NOT held by this platform"), "{line}");
    assert!(line.contains("lost 45.00 % of 20000 ticks"), "{line}");

    // The empty loop holds it: the misses are the run's.
    report.probes = vec![probe(20_000, 0)];
    let line = last_line(&text::render(&report)).to_string();
    assert!(line.contains("held by the platform but not by this run"), "{line}");

    // Both hold it.
    report.firewalls = vec![firewall(1000, 0, 0)];
    let line = last_line(&text::render(&report)).to_string();
    assert!(line.starts_with("Period 10.0us: held:"), "{line}");

    let json: serde_json::Value = serde_json::from_str(&smx_runtime::report::json::render(&report)).unwrap();
    assert_eq!(json["probes"][0]["period_ns"], 10_000);
}

#[test]
fn the_after_run_probe_measures_each_firewall_period_once() {
    let mut report = run_net(PAIR, &["Src.count=5"]);
    probe_periods(&mut report);
    assert!(report.probes.is_empty(), "no firewall, nothing to probe");
    let mut fw = firewall(200, 0, 0);
    fw.period_ns = 1_000_000;
    report.firewalls = vec![fw.clone(), fw];
    probe_periods(&mut report);
    assert_eq!(report.probes.len(), 1, "{:?}", report.probes);
    let p = &report.probes[0];
    assert_eq!(p.period_ns, 1_000_000);
    assert!(p.ticks >= smx_runtime::report::MIN_PROBE_TICKS, "{p:?}");
    assert!(p.misses <= p.ticks);
    // A period too long for a short probe is not probed; the line then names the command.
    let mut slow = firewall(3, 0, 0);
    slow.period_ns = 1_000_000_000;
    report.firewalls = vec![slow];
    report.probes.clear();
    probe_periods(&mut report);
    assert!(report.probes.is_empty());
    let words = smx_runtime::LeverWords(smxrun::cli::words::flag_words);
    assert!(last_line(&text::render_with(&report, words)).contains("smxrun probe --period 1s"));
}

// ---- order is per source ----

#[test]
fn a_correct_fan_in_is_in_order_per_source() {
    let net = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect (Src!Src!Src).Snk\n";
    let report = run_net(net, &["Src.count=2000"]);
    let snk = report.net("Snk").unwrap();
    assert_eq!(snk.stats.u64("received"), Some(6000));
    assert_eq!(snk.stats.u64("out_of_order"), Some(0), "{:?}", snk.stats);
    assert_eq!(snk.stats.u64("gaps"), Some(0));
    assert_eq!(snk.stats.u64("streams"), Some(3));
}

#[test]
fn a_loss_in_one_stream_is_still_a_gap() {
    // A decoupled producer side of length 1 in front of a slow consumer drops messages; the
    // sink books them as gaps of the one stream, and its order stays intact.
    let net = "Src = box smx_src_rand( decoupled out data )\nFwd = box smx_fwd( up in data, down out data )\n\
               Snk = box smx_snk_null( in data )\nconnect Src.Fwd.Snk\n";
    let report = run_net(net, &["Src.count=20000"]);
    let snk = report.net("Snk").unwrap();
    let lost = report.channels.iter().map(|c| c.overwritten).sum::<u64>();
    assert_eq!(snk.stats.u64("gaps"), Some(lost), "{:?}", report.channels);
    assert_eq!(snk.stats.u64("out_of_order"), Some(0));
    assert_eq!(snk.stats.u64("streams"), Some(1));
}

// ---- one spelling, each warning once ----

#[test]
fn the_text_report_spells_every_node_name_hash_id() {
    let report = run_net(PAIR, &["Src.count=5", "Snk.expected_rate=1000000000000"]);
    let out = text::render(&report);
    assert!(out.contains("Src#0") && out.contains("Snk#1"), "{out}");
    // The other spellings of Snk's id: in parentheses, bare in parentheses, with an underscore.
    let id_in_parentheses = format!("(#{})", 1);
    assert!(
        !out.contains("Snk(1)") && !out.contains(&id_in_parentheses) && !out.contains("Snk_1"),
        "{out}"
    );
    let warning = report
        .warnings
        .iter()
        .find(|w| w.contains("expected rate"))
        .unwrap_or_else(|| panic!("{:?}", report.warnings));
    assert!(warning.starts_with("Snk#1: "), "{warning}");
}

fn smxrun(args: &[&str]) -> (String, String) {
    smxrun_logging(args, "warn")
}

/// [`smxrun`] with its log at `level` on stderr.
fn smxrun_logging(args: &[&str], level: &str) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args(args)
        .env("RUST_LOG", level)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_runtime_warning_is_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("pair.smx");
    std::fs::write(&net, PAIR).unwrap();
    let (stdout, stderr) = smxrun(&[
        net.to_str().unwrap(),
        "-n",
        "5",
        "--quiet",
        "--set",
        "Snk.expected_rate=1000000000000",
    ]);
    let all = format!("{stdout}{stderr}");
    assert_eq!(all.matches("of the expected rate").count(), 1, "{all}");
    assert!(stdout.contains("Warnings\n  Snk#1: net rate at"), "{stdout}");
}

#[test]
fn the_dot_graph_shows_the_ids_the_configuration_takes() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("fan_in.smx");
    std::fs::write(
        &net,
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect (Src!Src).Snk\n",
    )
    .unwrap();
    let (dot, _) = smxrun(&["graph", net.to_str().unwrap(), "--format", "dot"]);
    for label in [
        "Src#0 : smx_src_rand",
        "Src#1 : smx_src_rand",
        "Snk#3 : smx_snk_null",
        "smx_rn#2",
    ] {
        assert!(dot.contains(label), "{label} missing from\n{dot}");
    }
    // The id shown is the one `--set NAME#ID.KEY=VALUE` accepts.
    let (stdout, stderr) = smxrun(&[net.to_str().unwrap(), "--quiet", "-n", "3", "--set", "Src#1.count=7"]);
    assert!(stdout.contains("Src#1: sent=7"), "{stdout}{stderr}");
}

// ---- the first report: what was asked, what happened, what needs attention ----

#[test]
fn the_first_report_tells_choices_from_problems_and_does_not_add_a_timed_rate_to_a_free_one() {
    // The README's first net: one time-triggered pair and one free-running pair.
    let net = "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n\
               connect tt[1ms](Src.Snk) | (Src.Snk)\n";
    let mut report = run_net(net, &["Src.count=5"]);
    report.notes.clear();
    report.warnings.clear();
    for line in [
        "chaining: 2 box threads would share 1 core, so 1 chain runs on one thread",
        "Snk#1: could not pin to core 7",
        "tf_1.0ms_0: spins through each 1.0ms period at normal priority",
    ] {
        report.tell(line.into());
    }
    let json: serde_json::Value = serde_json::from_str(&smx_runtime::report::json::render(&report)).unwrap();
    assert_eq!(json["warnings"], serde_json::json!(["Snk#1: could not pin to core 7"]));
    assert_eq!(json["notes"].as_array().map(Vec::len), Some(2), "{json:#}");
    let out = text::render(&report);
    let how = out
        .find("\nHow it ran")
        .expect("the runtime's choices have a section of their own");
    let warnings = out.find("\nWarnings\n").unwrap();
    assert!(out[how..warnings].contains("chaining: 2 box threads"), "{out}");
    assert!(out[how..warnings].contains("spins through each"), "{out}");
    assert!(out[warnings..].contains("Snk#1: could not pin to core 7"), "{out}");
    assert!(
        !out[warnings..].contains("chaining:"),
        "a choice is not a warning:\n{out}"
    );
    assert!(out.contains("\nAttention: 1 warning under Warnings above"), "{out}");
    // A time-triggered pair runs at its period: its messages/s is not summed with a free one's.
    let total = out.lines().find(|l| l.starts_with("Total:")).unwrap();
    assert!(!total.contains("messages/s"), "{total}");
    assert!(total.contains("no total rate"), "{total}");

    // Free-running pairs alone keep their total rate, and no attention line without a problem.
    let report = run_net(PAIR, &["Src.count=5"]);
    let out = text::render(&report);
    assert!(
        out.lines().any(|l| l.starts_with("Total:") && l.contains("messages/s")),
        "{out}"
    );
    assert!(!out.contains("Attention"), "{out}");
}

#[test]
fn the_firewall_lines_say_what_their_figures_are() {
    let mut report = run_net(PAIR, &["Src.count=5"]);
    let mut fw = firewall(1000, 250, 0);
    fw.pairs[0].firewall_ns = smx_runtime::latency::LatencySummary {
        p50: Some(10_000),
        p99: Some(36_600),
        p999: Some(93_000),
        max: Some(93_000),
        count: 313,
    };
    report.firewalls.push(fw);
    let out = text::render(&report);
    assert!(
        out.contains("250 missed (25.0000 %: periods without a release)"),
        "{out}"
    );
    assert!(out.contains("lateness of the releases"), "{out}");
    assert!(out.contains("a release k periods late misses k ticks"), "{out}");
    assert!(
        out.contains("time in the firewall p50 10.0us p99 36.6us max 93.0us (313 sampled messages)"),
        "{out}"
    );
    assert!(!out.contains("held 10.0us/"), "{out}");
}

// ---- choices apart from problems, in JSON as in text ----

/// A run that went as asked has no warnings in its JSON report, as its text report has none:
/// the runtime's choices for this machine are its `notes`, the text's "How it ran", in the
/// same order.
#[test]
fn a_clean_run_tells_its_choices_as_notes_and_has_no_warnings() {
    // Both threads on one core: the runtime chains them, a choice it always explains.
    let Some(core) = smx_timing::sched::allowed_cores().first().map(usize::to_string) else {
        eprintln!("no allowed core to pin to: skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("pair.smx");
    std::fs::write(&net, PAIR).unwrap();
    let args = [net.to_str().unwrap(), "-n", "2000", "--quiet", "--pin", &core];
    let (json, stderr) = smxrun(&[&args[..], &["--report", "json"]].concat());
    let report: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(report["status"], "ok", "{report:#}");
    assert_eq!(report["warnings"], serde_json::json!([]), "{report:#}");
    let notes = strings(&report["notes"]);
    assert!(notes.iter().any(|n| n.starts_with("chaining:")), "{notes:?}");

    let (text, _) = smxrun(&args);
    assert!(!text.contains("\nWarnings\n") && !text.contains("Attention"), "{text}");
    let how = text.find("\nHow it ran").expect("the choices have their section");
    let section = text[how + 1..].split("\n\n").next().unwrap();
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let listed: Vec<&str> = section.lines().skip(1).collect();
    assert_eq!(words(&listed.join(" ")), words(&notes.join(" ")), "{text}");
}

// ---- losses a net's shape makes are the shape's, not the machine's ----

/// The fan-in of a time-triggered pair of sources into a pair of sinks: its routing node
/// forwards one message per period into its time-triggered outputs while its two inputs
/// deliver two, so half of them are consume misses on any machine.
const TT_FAN_IN: &str = "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n\
                         connect tt[1ms]((Src!Src).(Snk|Snk))\n";

/// The text report's "Warnings", up to the blank line after them.
fn warnings_section(text: &str) -> &str {
    let at = text
        .find("\nWarnings\n")
        .unwrap_or_else(|| panic!("no warnings: {text}"));
    let end = text[at + 1..].find("\n\n").map_or(text.len(), |n| at + 1 + n + 1);
    &text[at..end]
}

/// The report's warning on the losses of `smx_rn#2` by the net's shape.
fn shape_warning(report: &Report) -> Option<&String> {
    report
        .warnings
        .iter()
        .find(|w| w.starts_with("smx_rn#2:") && w.contains("net's shape"))
}

#[test]
fn a_fan_in_that_loses_by_its_shape_says_so_and_does_not_blame_the_machine() {
    let report = run_net(TT_FAN_IN, &["Src.count=200"]);
    let warning = shape_warning(&report).unwrap_or_else(|| panic!("{:?}", report.warnings));
    // Where: the node and its channels; why: the rule; and what to change in the net.
    for part in [
        "Src#0 -> smx_rn#2",
        "Src#1 -> smx_rn#2",
        "smx_rn#2 -> Snk#3",
        "smx_rn#2 -> Snk#4",
        "a routing node passes one message at a time to all its outputs",
        "at most one message per 1.00ms",
        "deliver 2 per 1.00ms",
        "about 50 %",
        "a period of 500.0us or shorter (its consumers in a `tt[500us]` of their own)",
        "a `tt` branch of its own",
    ] {
        assert!(warning.contains(part), "{part}: {warning}");
    }
    assert!(
        !warning.contains("scheduling") && !warning.contains("threads"),
        "{warning}"
    );
    assert!(!report.notes.iter().any(|n| n.contains("shape")), "{:?}", report.notes);

    let json: serde_json::Value = serde_json::from_str(&smx_runtime::report::json::render(&report)).unwrap();
    assert!(
        json["warnings"].as_array().unwrap().contains(&warning.as_str().into()),
        "{json:#}"
    );
    for pair in json["firewalls"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["pairs"].as_array().unwrap())
    {
        let into_node = pair["consumer"] == "smx_rn#2";
        assert_eq!(pair["consume_misses_by_shape"], into_node, "{pair}");
    }

    let text = text::render(&report);
    assert!(warnings_section(&text).contains(&format!("\n  {warning}\n")), "{text}");
    assert!(
        last_line(&text).contains("not counting the consume misses into smx_rn#2, which the net's shape explains"),
        "{text}"
    );
}

/// What the verdict on the period makes of the fan-in's figures once the machine's share is
/// set: none, then a tenth of the ticks lost.
#[test]
fn the_verdict_on_a_fan_ins_period_blames_the_machine_only_for_the_machines_misses() {
    let mut report = run_net(TT_FAN_IN, &["Src.count=200"]);
    assert!(shape_warning(&report).is_some(), "{:?}", report.warnings);
    let mut floor = probe(250, 0);
    floor.period_ns = 1_000_000;
    report.probes = vec![floor];
    for f in &mut report.firewalls {
        f.missed_ticks = 0;
        for p in &mut f.pairs {
            (p.produce_misses, p.missed_ticks) = (0, 0);
        }
    }
    let line = last_line(&text::render(&report)).to_string();
    assert!(line.starts_with("Period 1.00ms: held:"), "{line}");
    assert!(line.contains("up to 0.00 % of their deadlines (not counting"), "{line}");
    assert!(!line.contains("run's own"), "{line}");

    // Ticks the firewall lost are the run's own, beside the shape's misses.
    for f in &mut report.firewalls {
        f.missed_ticks = f.ticks / 10;
        for p in &mut f.pairs {
            p.missed_ticks = f.missed_ticks;
        }
    }
    let line = last_line(&text::render(&report)).to_string();
    assert!(
        line.starts_with("Attention: period 1.00ms held by the platform but not by this run"),
        "{line}"
    );
    assert!(line.contains("of their deadlines (not counting"), "{line}");
    assert!(line.contains("which the net's shape explains"), "{line}");
}

#[test]
fn a_fan_in_whose_outputs_keep_up_and_a_fan_out_lose_nothing_by_their_shape() {
    let heads = "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n";
    for connect in [
        "connect tt[1ms](Src!Src).tt[500us](Snk|Snk)\n",
        "connect tt[1ms](Src!Src).(Snk|Snk)\n",
        "connect tt[1ms](Src.(Snk|Snk))\n",
    ] {
        let report = run_net(&format!("{heads}{connect}"), &["Src.count=200"]);
        assert!(
            !report.warnings.iter().any(|w| w.contains("net's shape")),
            "{connect}: {:?}",
            report.warnings
        );
        let pairs = report.firewalls.iter().flat_map(|f| &f.pairs);
        assert!(!pairs.clone().any(|p| p.consume_misses_by_shape), "{connect}");
        assert!(!last_line(&text::render(&report)).contains("shape"), "{connect}");
    }
}

/// The command line's run of the fan-in says it in its JSON and ends its text with the verdict
/// measured against the platform, leaving the shape's misses out.
#[test]
fn smxrun_reports_a_fan_ins_losses_as_its_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("fan_in.smx");
    std::fs::write(&net, TT_FAN_IN).unwrap();
    let args = [net.to_str().unwrap(), "-n", "200", "--quiet"];
    let (json, stderr) = smxrun(&[&args[..], &["--report", "json"]].concat());
    let report: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let warnings = report["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("smx_rn#2: the ")),
        "{warnings:#?}"
    );
    let (text, _) = smxrun(&args);
    assert!(warnings_section(&text).contains("\n  smx_rn#2: the "), "{text}");
    let verdict = last_line(&text);
    assert!(
        verdict.contains("period 1.00ms") || verdict.contains("Period 1.00ms"),
        "{text}"
    );
    assert!(verdict.contains("which the net's shape explains"), "{text}");
}

/// The executive alone on its core is offered real-time scheduling before it runs, but with a
/// period too short to sleep in it spins at normal priority instead and says so: the report
/// then tells that, not also the offer it did not take.
#[test]
fn the_executive_that_spins_through_is_not_also_said_to_run_in_real_time() {
    if smx_timing::sched::allowed_cores().len() < 2 {
        eprintln!("fewer than two cores: no core for the executive alone; skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("tt.smx");
    std::fs::write(
        &net,
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n\
         connect tt[10us](Src.Snk) | (Src.Snk)\n",
    )
    .unwrap();
    let (json, stderr) = smxrun_logging(
        &[net.to_str().unwrap(), "-n", "20000", "--quiet", "--report", "json"],
        "info",
    );
    let report: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let notes = strings(&report["notes"]);
    let offered = notes
        .iter()
        .any(|n| n.starts_with("real-time scheduling for the executive only"));
    let spun = notes
        .iter()
        .any(|n| n.contains("spins through each") && n.contains("instead of real-time scheduling"));
    let real_time = report["firewalls"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| !f["priority"].is_null());
    assert!(!(offered && spun), "{notes:#?}");
    assert_eq!(offered, real_time, "{notes:#?}\n{:#}", report["firewalls"]);
    // The log says the decision before the executive runs: where it then spun through, the
    // decision's line had said it might.
    let decided = stderr
        .lines()
        .find(|l| l.contains("decided: real-time scheduling for the executive only"));
    if let (true, Some(line)) = (spun, decided) {
        assert!(
            line.contains("unless the executive finds its period too short"),
            "{line}"
        );
    }
}

/// The strings of a JSON array.
fn strings(list: &serde_json::Value) -> Vec<&str> {
    list.as_array().unwrap().iter().filter_map(|n| n.as_str()).collect()
}

/// The JSON report says what the text report ends with: the verdict on each firewall period,
/// in `periods`, so that a script finds a period the run did not hold without the text.
#[test]
fn the_json_report_gives_the_verdict_on_each_period() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("tt.smx");
    std::fs::write(
        &net,
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect tt[1ms](Src.Snk)\n",
    )
    .unwrap();
    let (out, err) = smxrun(&[net.to_str().unwrap(), "-n", "50", "-q", "--report", "json"]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let periods: Vec<&str> = json["periods"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.as_str())
        .collect();
    assert_eq!(periods.len(), 1, "{json}");
    assert!(
        periods[0].starts_with("Period 1.00ms: ") || periods[0].starts_with("Attention: period 1.00ms "),
        "{json}"
    );
    // Over processes too: the merged report judges the firewalls of every process.
    std::fs::write(
        &net,
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n\
         connect tt[1ms](Src.Snk) | (Src.Snk)\n",
    )
    .unwrap();
    let config = dir.path().join("deploy.toml");
    std::fs::write(&config, "[process.b]\n[net.\"Snk#3\"]\nprocess = \"b\"\n").unwrap();
    let (out, err) = smxrun(&[
        net.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "-n",
        "50",
        "-q",
        "--report",
        "json",
    ]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(json["format_version"], 4, "{json}");
    let periods = json["periods"].as_array().unwrap();
    assert_eq!(periods.len(), 1, "{json}");
    assert!(
        periods[0].as_str().unwrap().to_lowercase().contains("period 1.00ms"),
        "{json}"
    );
    // A net without a firewall has no period to judge.
    std::fs::write(&net, PAIR).unwrap();
    let (out, _) = smxrun(&[net.to_str().unwrap(), "-n", "50", "-q", "--report", "json"]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["periods"], serde_json::json!([]), "{json}");
}

/// A channel from a 1 ms firewall into a 2 ms one loses half its messages by its periods, on
/// any machine: a warning at the channel says why and what to change, and the verdict on the
/// period leaves those misses out. The other way round, half the consumer's ticks find no
/// message, which loses none: the verdict leaves those misses out too, with no warning.
#[test]
fn a_channel_between_firewalls_of_different_periods_is_judged_by_its_shape() {
    const DOWN: &str = "Src = box smx_src_rand( out data )\nF = box smx_fwd( up in data, down out data )\n\
                        Snk = box smx_snk_null( in data )\nconnect tt[1ms](Src.F).tt[2ms](Snk)\n";
    let report = run_net(DOWN, &["Src.count=200"]);
    let warning = report
        .warnings
        .iter()
        .find(|w| w.starts_with("F#1 -> Snk#2: "))
        .unwrap_or_else(|| panic!("{:?}", report.warnings));
    for part in [
        "consume misses where its channel crosses from the 1.00ms firewall into the 2.00ms one",
        "net's shape, not from timing",
        "about 50 %",
        "`tt[1ms]` around both",
    ] {
        assert!(warning.contains(part), "{part}: {warning}");
    }
    let pairs: Vec<_> = report.firewalls.iter().flat_map(|f| &f.pairs).collect();
    let crossing = pairs.iter().find(|p| p.producer == "F#1").unwrap();
    assert!(
        crossing.consume_misses_by_shape && crossing.consume_misses > 0,
        "{crossing:?}"
    );
    assert!(crossing.timing_miss_rate() < crossing.miss_rate(), "{crossing:?}");
    assert!(
        text::render(&report)
            .contains("(not counting the consume misses into tf_2.00ms, which the net's shape explains"),
        "{}",
        text::render(&report)
    );

    const UP: &str =
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect tt[2ms](Src).tt[1ms](Snk)\n";
    let report = run_net(UP, &["Src.count=100"]);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let pairs: Vec<_> = report.firewalls.iter().flat_map(|f| &f.pairs).collect();
    let crossing = pairs.iter().find(|p| p.consumer == "Snk#1").unwrap();
    assert!(
        crossing.produce_misses_by_shape && crossing.produce_misses > 0,
        "{crossing:?}"
    );
    assert!(
        text::render(&report)
            .contains("(not counting the produce misses into Snk#1, fed by a firewall of a longer period"),
        "{}",
        text::render(&report)
    );
}
