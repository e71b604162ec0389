//! The `smxrun` binary as a user runs it: exit codes, messages on stderr, output on stdout.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const SRC_SNK: &str = "\
Src = box smx_src_rand(out data)
Snk = box smx_snk_null(in data)
connect Src.Snk
";

const REJECTED: &str = "\
Src = box smx_src_rand(out data)
connect Src.Nope
";

fn smxrun(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("smxrun starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A temporary directory holding `name` with `content`.
fn net_file(name: &str, content: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, content).unwrap();
    (dir, path)
}

fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn help_documents_the_exit_codes_and_usage_errors_exit_1() {
    let out = smxrun(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    for line in [
        "0    ok",
        "1    the net was rejected",
        "2    a box failed",
        "130  interrupted",
    ] {
        assert!(help.contains(line), "{line:?} missing from --help: {help}");
    }
    let out = smxrun(&["net.smx", "--no-such-option"]);
    assert_eq!(out.status.code(), Some(1));
    let out = smxrun(&[]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn check_accepts_a_valid_net_with_exit_0() {
    let (_dir, net) = net_file("src_snk.smx", SRC_SNK);
    let out = smxrun(&["check", arg(&net)]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("error"), "{}", text(&out.stderr));
}

#[test]
fn check_rejects_with_exit_1_and_a_located_diagnostic() {
    let (_dir, net) = net_file("bad.smx", REJECTED);
    let out = smxrun(&["check", arg(&net)]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("{}:2:", net.display())) && first.contains(": error: "),
        "FILE:LINE:COL: error: ... expected, got {stderr}"
    );
    assert!(
        stderr.contains("connect Src.Nope"),
        "the offending line is shown: {stderr}"
    );
    assert!(stderr.contains('^'), "a caret points at the problem: {stderr}");
}

#[test]
fn a_box_no_connect_uses_is_a_warning_at_its_declaration_that_changes_no_verdict() {
    let (_dir, net) = net_file(
        "unused.smx",
        "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n\
         Dbg = box smx_snk_dump( in data )\nconnect Src.Snk\n",
    );
    let warning = format!(
        "{}:3:1: warning: box 'Dbg' is declared but not used by 'connect', directly or through a net or \
         wrapper, so it will not run\n  Dbg = box smx_snk_dump( in data )\n  ^^^\n",
        net.display()
    );
    for command in [
        &["check", arg(&net)][..],
        &["check", "--lang-only", arg(&net)][..],
        &["run", arg(&net), "-n", "3", "-q"][..],
    ] {
        let out = smxrun(command);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{command:?}: {stderr}");
        assert_eq!(stderr.matches(&warning).count(), 1, "{command:?}: {stderr}");
    }
    let out = smxrun(&["check", arg(&net)]);
    assert!(
        text(&out.stdout).contains("(0 errors, 1 warning)"),
        "{}",
        text(&out.stdout)
    );
}

/// Periods a run refuses, with what its error says of each.
const BAD_PERIODS: [(&str, &str); 2] = [
    ("", "without a period"),
    ("20000000000s", "longer than a timer can wait"),
];

/// `Src.Snk` with `Src` behind a firewall of `period`, at line 3, column 9.
fn tt_net(period: &str) -> (tempfile::TempDir, PathBuf) {
    net_file(
        "tt.smx",
        &format!(
            "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect tt[{period}](Src).Snk\n"
        ),
    )
}

#[test]
fn a_period_no_timer_can_wait_is_shown_at_its_tt_by_check_and_run() {
    for (period, problem) in BAD_PERIODS {
        let (_dir, net) = tt_net(period);
        for command in ["check", "run"] {
            let out = smxrun(&[command, arg(&net)]);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{command}: {stderr}");
            let first = stderr.lines().next().unwrap_or_default();
            assert!(
                first.starts_with(&format!("{}:3:9: error: ", net.display())) && first.contains(problem),
                "{command}: {stderr}"
            );
            assert!(
                stderr.contains(&format!("  connect tt[{period}](Src).Snk\n          ^^\n")),
                "{stderr}"
            );
        }
    }
}

#[test]
fn check_lang_only_warns_of_a_period_no_timer_can_wait_at_its_tt() {
    for (period, problem) in BAD_PERIODS {
        let (_dir, net) = tt_net(period);
        let out = smxrun(&["check", "--lang-only", arg(&net)]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let first = stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(&format!("{}:3:9: warning: ", net.display()))
                && first.contains(problem)
                && first.ends_with("(a run would refuse this net)"),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("  connect tt[{period}](Src).Snk\n          ^^\n")),
            "{stderr}"
        );
    }
}

#[test]
fn a_missing_period_is_shown_at_the_tt_that_times_its_channel() {
    const BOXES: &str = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n\
                         P = box smx_src_rand( out data )\nQ = box smx_snk_null( in data )\n";
    // stderr of `check` on BOXES and `content`, whose first error has a caret under the `tt`
    // at `line` (of the file) and `col`. The boxes a case leaves unused are warned of before it.
    let at = |content: &str, line: usize, col: usize| {
        let (_dir, net) = net_file("tt.smx", &format!("{BOXES}{content}"));
        let out = smxrun(&["check", arg(&net)]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        let shown = content.lines().nth(line - 5).unwrap();
        let carets = format!("  {shown}\n{}^^\n", " ".repeat(col + 1));
        let first_error = stderr.lines().find(|l| l.contains(": error: ")).unwrap_or_default();
        assert!(
            first_error.starts_with(&format!("{}:{line}:{col}: error: ", net.display())) && stderr.contains(&carets),
            "{stderr}"
        );
        stderr
    };
    // A net that the connected net does not use times nothing.
    at("U = tt[](Src)\nconnect Src.tt[](Snk)\n", 6, 13);
    // Channels are checked in graph order, operators found in source order.
    let stderr = at("N1 = P.tt[](Q)\nN2 = Src.tt[](Snk)\nconnect N2 | N1\n", 6, 10);
    assert!(stderr.contains(":5:8: error: "), "{stderr}");
    // A net used twice: both of its channels at its one operator.
    let stderr = at("N = tt[](Src).Snk\nconnect N | N\n", 5, 5);
    assert_eq!(stderr.matches(":5:5: error: ").count(), 2, "{stderr}");
    // Two operators time the channel's producer: which one gave it no period is not known,
    // so neither gets the caret.
    let (_dir, net) = net_file("tt.smx", &format!("{BOXES}connect tt[](tt[](Src)).Snk\n"));
    let out = smxrun(&["check", arg(&net)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let error = stderr.find("without a period").expect(&stderr);
    assert!(!stderr[error..].contains('^'), "{stderr}");
}

#[test]
fn check_rejects_ports_the_implementation_lacks_as_a_run_does() {
    // The net parses, but smx_src_rand writes `data` and smx_snk_null reads `data`.
    let (_dir, net) = net_file(
        "ports.smx",
        "Src = box smx_src_rand( out dat )\nSnk = box smx_snk_null( in dat )\nconnect Src.Snk\n",
    );
    // Each cites the declaration, where the fix goes, with its line and a caret.
    for command in [
        &["check", arg(&net)][..],
        &[arg(&net), "-n", "10"][..],
        &["graph", arg(&net)][..],
    ] {
        let out = smxrun(command);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{command:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{}:1:1: error: box instance 'Src' (smx_src_rand) does not declare the output port 'data'",
                net.display()
            )),
            "{command:?}: {stderr}"
        );
        assert!(
            stderr.contains("\n  Src = box smx_src_rand( out dat )\n  ^"),
            "{command:?}: {stderr}"
        );
        // Both ends of the channel are wrong, and both are named at once.
        assert!(
            stderr.contains(&format!(
                "{}:2:1: error: box instance 'Snk' (smx_snk_null) does not declare the input port 'data'",
                net.display()
            )),
            "{command:?}: {stderr}"
        );
    }
    let out = smxrun(&["check", arg(&net)]);
    assert!(
        text(&out.stderr).contains("rejected (2 errors"),
        "{}",
        text(&out.stderr)
    );
}

/// A port declared `open` that the implementation lacks changes nothing in a run, but is most
/// likely a misspelt name: check and run say so at the declaration, and accept the net.
#[test]
fn an_open_port_the_implementation_lacks_is_a_warning() {
    let (_dir, net) = net_file(
        "open.smx",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data, in extra open )\nconnect Src.Snk\n",
    );
    let warning = format!(
        "{}:2:1: warning: box instance 'Snk' declares input port 'extra', which implementation 'smx_snk_null' does not \
         have (its inputs: data)",
        net.display()
    );
    for command in [&["check", arg(&net)][..], &[arg(&net), "-n", "10", "-q"][..]] {
        let out = smxrun(command);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{command:?}: {stderr}");
        assert!(stderr.contains(&warning), "{command:?}: {stderr}");
    }
    let out = smxrun(&["check", arg(&net)]);
    assert!(
        text(&out.stdout).contains("(0 errors, 1 warning)"),
        "{}",
        text(&out.stdout)
    );
    // A name one or two letters from one the implementation has is most likely that one.
    let (_dir, net) = net_file(
        "topc.smx",
        "Src = box smx_src_rand( out data )\nD = box smx_snk_dump( in data, in topc open )\nconnect Src.D\n",
    );
    let out = smxrun(&["check", arg(&net)]);
    assert!(
        text(&out.stderr).contains("(did you mean 'topic'?)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn check_of_a_missing_file_names_it() {
    let out = smxrun(&["check", "/nonexistent/net.smx"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("/nonexistent/net.smx"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn graph_writes_every_format() {
    let (dir, net) = net_file("src_snk.smx", SRC_SNK);
    let expect = [
        ("gml", "graph\n["),
        ("graphml", "<graphml"),
        ("dot", "digraph"),
        ("json", "\"nodes\""),
    ];
    for (format, marker) in expect {
        let out = smxrun(&["graph", arg(&net), "--format", format]);
        assert_eq!(out.status.code(), Some(0), "{format}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(stdout.contains(marker), "{format} output lacks {marker}: {stdout}");
        assert!(
            stdout.contains("Src") && stdout.contains("smx_snk_null"),
            "{format}: {stdout}"
        );
    }
    let path = dir.path().join("g.json");
    let out = smxrun(&["graph", arg(&net), "--format", "json", "-o", arg(&path)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let graph: smx_graph::NetGraph = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(graph.nodes.len(), 2);
    assert_eq!(graph.edges.len(), 1);

    // The JSON graph runs like the source it came from.
    let out = smxrun(&[arg(&path), "-n", "5", "-q", "--report", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["nets"][1]["loop_count"], 5);
    std::fs::write(&path, "{\"nodes\": 3}").unwrap();
    let out = smxrun(&[arg(&path), "-q"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("invalid net graph JSON"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn graph_takes_the_format_from_the_output_file_s_name() {
    let (dir, net) = net_file("src_snk.smx", SRC_SNK);
    for (name, marker) in [
        ("g.dot", "digraph"),
        ("g.GV", "digraph"),
        ("g.gml", "graph\n["),
        ("g.graphml", "<graphml"),
        ("g.json", "\"nodes\""),
        ("g.txt", "graph\n["),
    ] {
        let path = dir.path().join(name);
        let out = smxrun(&["graph", arg(&net), "-o", arg(&path)]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        assert!(stderr.is_empty(), "{name}: {stderr}");
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(written.contains(marker), "{name}: {written}");
    }

    // An explicit --format is obeyed against the name, and the contradiction said.
    let path = dir.path().join("asked.dot");
    let out = smxrun(&["graph", arg(&net), "--format", "gml", "-o", arg(&path)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(std::fs::read_to_string(&path).unwrap().contains("graph\n["));
    assert!(
        stderr.contains(&format!(
            "warning: -o '{}': writing gml, as --format asks",
            path.display()
        )),
        "{stderr}"
    );

    // No graph format is a picture: nothing is written, and the way to one is said.
    let path = dir.path().join("g.svg");
    let out = smxrun(&["graph", arg(&net), "-o", arg(&path)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("not a picture") && stderr.contains("dot -Tsvg"),
        "{stderr}"
    );
    assert!(!path.exists());
}

#[test]
fn graph_of_a_rejected_net_prints_diagnostics_and_no_graph() {
    let (_dir, net) = net_file("bad.smx", REJECTED);
    let out = smxrun(&["graph", arg(&net), "--format", "dot"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("error:"));
}

#[test]
fn boxes_lists_the_builtins_and_details_one() {
    let out = smxrun(&["boxes"]);
    assert_eq!(out.status.code(), Some(0));
    let list = text(&out.stdout);
    for name in ["smx_src_rand", "smx_snk_null", "smx_snk_dump", "smx_fwd"] {
        assert!(list.contains(name), "{name} missing from {list}");
    }
    let out = smxrun(&["boxes", "smx_src_rand"]);
    assert_eq!(out.status.code(), Some(0));
    let details = text(&out.stdout);
    assert!(details.contains("out data"), "{details}");
    for key in ["count", "size", "seed", "core", "priority", "nice", "expected_rate"] {
        assert!(details.contains(&format!("  {key} ")), "{key} missing from {details}");
    }
    // What a spec lets the runtime do with the box's thread, only where it says something.
    assert!(
        details.contains("\nThreading:\n  never waits ") && !details.contains("chainable"),
        "{details}"
    );
    let fwd = text(&smxrun(&["boxes", "smx_fwd"]).stdout);
    assert!(fwd.contains("  chainable ") && fwd.contains("  never waits "), "{fwd}");
    let zmq_source = text(&smxrun(&["boxes", "smx_src_zmq"]).stdout);
    assert!(
        zmq_source.contains("\nThreading:\n  batches ")
            && !zmq_source.contains("chainable")
            && !zmq_source.contains("never waits"),
        "{zmq_source}"
    );
    let out = smxrun(&["boxes", "smx_nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("smx_src_rand"), "known boxes are listed");
}

#[test]
fn a_bad_set_key_names_key_net_and_choices() {
    let (_dir, net) = net_file("src_snk.smx", SRC_SNK);
    let out = smxrun(&[arg(&net), "--set", "Src.cnt=5", "--quiet"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("--set 'Src.cnt=5'"), "{stderr}");
    assert!(stderr.contains("key 'cnt'") && stderr.contains("net 'Src'"), "{stderr}");
    assert!(stderr.contains("count, size, seed"), "valid keys listed: {stderr}");
    assert!(out.stdout.is_empty(), "nothing ran");
}

#[test]
fn a_bad_value_in_a_config_file_names_file_and_line() {
    let (dir, net) = net_file("src_snk.smx", SRC_SNK);
    let config = dir.path().join("run.toml");
    std::fs::write(&config, "[net.Src]\ncount = 10\nsize = \"big\"\n").unwrap();
    let out = smxrun(&[arg(&net), "--config", arg(&config), "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:3: key 'size' of net 'Src'", config.display())),
        "{stderr}"
    );
}

#[test]
fn a_set_target_that_is_not_in_the_net_lists_what_is() {
    let (_dir, net) = net_file("src_snk.smx", SRC_SNK);
    let out = smxrun(&[arg(&net), "--set", "Source.count=5", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("'Source' is neither an instance nor an implementation"),
        "{stderr}"
    );
    assert!(stderr.contains("Snk, Src, smx_snk_null, smx_src_rand"), "{stderr}");
}

#[test]
fn pinning_to_a_core_that_does_not_exist_is_refused() {
    let (_dir, net) = net_file("src_snk.smx", SRC_SNK);
    let out = smxrun(&[arg(&net), "--pin", "0,100000", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--pin: core 100000 is not available"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn wait_spin_takes_a_duration_and_refuses_anything_else() {
    let (_dir, net) = net_file("src_snk.smx", SRC_SNK);
    let out = smxrun(&[arg(&net), "--wait-spin", "5 parsecs", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("--wait-spin") && stderr.contains("is not a duration"),
        "{stderr}"
    );
    for spin in ["0", "20us"] {
        let out = smxrun(&[arg(&net), "--wait-spin", spin, "-n", "1000", "-q", "--report", "json"]);
        assert_eq!(out.status.code(), Some(0), "{spin}: {}", text(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for c in report["channels"].as_array().unwrap() {
            assert_eq!(
                (c["written"].as_u64(), c["read"].as_u64()),
                (Some(1000), Some(1000)),
                "{spin}"
            );
        }
    }
}

#[test]
fn a_missing_config_file_is_a_clear_error() {
    let (_dir, net) = net_file("src_snk.smx", SRC_SNK);
    let out = smxrun(&[arg(&net), "--config", "/nonexistent/run.toml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("/nonexistent/run.toml: config file not found"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn an_unwritable_report_path_fails_before_running() {
    let (dir, net) = net_file("src_snk.smx", SRC_SNK);
    let report = dir.path().join("no/such/dir/report.txt");
    // count = 0 runs until stopped: only an early check lets this command end. A regression
    // must fail here, not hang the suite: the run is killed after a generous bound.
    let mut child = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args([arg(&net), "--set", "Src.count=0", "-o", arg(&report), "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the run started although its report path cannot be written");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot write '{}'", report.display())),
        "{stderr}"
    );
}

#[test]
fn an_unknown_implementation_is_rejected_with_the_known_boxes() {
    let (_dir, net) = net_file(
        "x.smx",
        "A = box smx_nope(out data)\nB = box smx_snk_null(in data)\nconnect A.B\n",
    );
    let out = smxrun(&[arg(&net), "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("smx_nope"), "{stderr}");
    assert!(
        stderr.contains("smx_src_rand") && stderr.contains("smx_snk_null"),
        "{stderr}"
    );
}

#[test]
fn a_small_run_reports_json_with_exact_counts() {
    let (dir, net) = net_file("src_snk.smx", SRC_SNK);
    let out = smxrun(&[arg(&net), "-n", "100", "--report", "json", "-q", "--pin", "off"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert!(report["wall_time_s"].as_f64().unwrap() > 0.0);
    let nets = report["nets"].as_array().unwrap();
    assert_eq!(nets.len(), 2);
    for net in nets {
        for field in [
            "id",
            "name",
            "impl",
            "core",
            "loop_count",
            "loop_rate",
            "wall_time_s",
            "status",
        ] {
            assert!(net.get(field).is_some(), "net lacks {field}: {net}");
        }
        assert_eq!(net["loop_count"], 100, "{net}");
        assert_eq!(net["status"], "ok");
    }
    let channels = report["channels"].as_array().unwrap();
    assert_eq!(channels.len(), 1);
    let ch = &channels[0];
    for field in [
        "id",
        "name",
        "from",
        "to",
        "kind",
        "len",
        "overwritten",
        "duplicated",
        "dropped",
    ] {
        assert!(ch.get(field).is_some(), "channel lacks {field}: {ch}");
    }
    assert_eq!((ch["written"].as_u64(), ch["read"].as_u64()), (Some(100), Some(100)));

    // The same run into a file, in the original's log format.
    let path = dir.path().join("run.log");
    let out = smxrun(&[arg(&net), "-n", "10", "--report", "smx", "-o", arg(&path), "-q"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let log = std::fs::read_to_string(&path).unwrap();
    assert!(log.contains("terminate net (loop count: 10,"), "{log}");
    assert!(log.contains("end main thread (wall time: "), "{log}");
}

/// A box that fails while running (here: the dump's final flush to a full device) gives exit 2,
/// the report is still printed and stderr names the net.
#[test]
fn a_failing_box_gives_exit_2_and_names_the_net() {
    let (_dir, net) = net_file(
        "src_dump.smx",
        "Src = box smx_src_rand(out data)\nDump = box smx_snk_dump(in data, in topic open)\nconnect Src.Dump\n",
    );
    let out = smxrun(&[
        arg(&net),
        "-n",
        "10",
        "--set",
        "Dump.path=/dev/full",
        "-q",
        "--report",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the report is still printed");
    assert_eq!(report["nets"][1]["status"], "failed");
    assert!(
        text(&out.stderr).contains("error: net 'Dump' (id 1, smx_snk_dump) failed"),
        "{}",
        text(&out.stderr)
    );
}

/// A box that cannot be created stops the run before any step: exit 1 (like any other bad
/// value), and stderr names the box and the cause.
#[test]
fn a_box_that_cannot_be_created_gives_exit_1_and_names_it() {
    let (_dir, net) = net_file("src_snk.smx", SRC_SNK);
    let out = smxrun(&[
        arg(&net),
        "-n",
        "10",
        "--set",
        "Src.size=999999999999",
        "-q",
        "--report",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("Src") && stderr.contains("size"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn sigint_stops_a_run_with_a_partial_report_and_exit_130() {
    stop_a_run_with(libc::SIGINT);
}

#[test]
fn sigterm_stops_a_run_like_sigint() {
    stop_a_run_with(libc::SIGTERM);
}

fn stop_a_run_with(signal: libc::c_int) {
    let (_dir, net) = net_file("src_snk.smx", SRC_SNK);
    let child = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args([
            arg(&net),
            "--set",
            "Src.count=0",
            "--report",
            "json",
            "-q",
            "--pin",
            "off",
        ])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_threads(child.id(), 3, Duration::from_secs(30));
    // SAFETY: plain FFI call sending a signal to the child we spawned.
    let sent = unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    assert_eq!(sent, 0);
    let out = wait_with_deadline(child, Duration::from_secs(60));
    assert_eq!(
        out.status.code(),
        Some(130),
        "signal {signal}; stderr: {}",
        text(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a report is printed");
    let nets = report["nets"].as_array().unwrap();
    assert_eq!(nets.len(), 2);
    let ch = &report["channels"][0];
    assert_eq!(ch["written"], ch["read"], "the sink drained what was sent: {ch}");
    assert!(text(&out.stderr).contains("interrupted"));
}

#[test]
fn probe_prints_the_documented_json() {
    let out = smxrun(&["probe", "--period", "1ms", "--ticks", "20", "--priority", "0", "--json"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let probe: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(probe["period_ns"], 1_000_000);
    assert_eq!(probe["ticks"], 20);
    assert!(probe["misses"].as_u64().unwrap() <= 20);
    for p in ["p50", "p99", "p999", "max"] {
        assert!(probe["lateness_ns"][p].is_u64(), "lateness_ns.{p} missing: {probe}");
    }
    let out = smxrun(&["probe", "--period", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("period"), "{}", text(&out.stderr));
}

/// Waits until process `pid` has `n` threads (main and two nets: the Ctrl-C handler is in
/// place and the run has started). Gives up quietly after `limit`; the signal then still
/// has to stop whatever state the process is in.
fn wait_for_threads(pid: u32, n: usize, limit: Duration) {
    let start = Instant::now();
    while start.elapsed() < limit {
        let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
        if threads >= n {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for `child`, killing it if it outlives `limit` (so a hang fails instead of blocking CI).
fn wait_with_deadline(mut child: std::process::Child, limit: Duration) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("smxrun did not stop within {limit:?} of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_negative_count_or_length_is_named_not_taken_for_an_option() {
    let (_dir, net) = net_file("src_snk.smx", SRC_SNK);
    for (args, expected) in [
        (["-n", "-1"], "'-1' is not a count"),
        (["--channel-len", "-1"], "'-1' is not a channel length"),
        (["--channel-len", "0"], "'0' is not a channel length"),
        (["--wait-spin", "-5us"], "'-5us' is not a duration"),
    ] {
        let out = smxrun(&[arg(&net), args[0], args[1]]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn a_mistyped_or_misplaced_command_is_named_as_such() {
    let (_dir, net) = net_file("src_snk.smx", SRC_SNK);
    for (args, expected) in [
        (
            vec!["chekc", arg(&net)],
            "error: 'chekc' is neither a net file nor a command; did you mean 'check'?".to_string(),
        ),
        (
            vec!["grahp", arg(&net), "--format", "dot"],
            "error: 'grahp' is neither a net file nor a command; did you mean 'graph'?".to_string(),
        ),
        (
            vec![arg(&net), "check"],
            format!(
                "error: 'check' is a command, and the command comes before the file: smxrun check {}",
                arg(&net)
            ),
        ),
    ] {
        let out = smxrun(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end(), expected, "{args:?}");
    }
}

#[test]
fn an_unknown_implementation_gets_the_closest_name_or_the_way_to_bring_a_box() {
    let (_dir, net) = net_file(
        "typo.smx",
        "Src = box smx_src_rnd( out data )\nSnk = box my_filter( in data )\nconnect Src.Snk\n",
    );
    let out = smxrun(&["check", arg(&net)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("'smx_src_rnd'") && stderr.contains("did you mean 'smx_src_rand'?"),
        "{stderr}"
    );
    assert!(
        stderr.contains("'my_filter'") && stderr.contains("--boxes PATH"),
        "{stderr}"
    );
}

#[test]
fn boxes_not_written_yet_are_told_once_of_check_lang_only() {
    let (_dir, net) = net_file(
        "mine.smx",
        "A = box my_src(out a)\nB = box my_filter(in a, out b)\nC = box my_snk(in b)\nconnect A.B.C\n",
    );
    for args in [vec!["check", arg(&net)], vec![arg(&net)]] {
        let out = smxrun(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(
            stderr.matches("unknown implementation").count(),
            3,
            "{args:?}: {stderr}"
        );
        let hint = format!(
            "`smxrun check --lang-only {}` checks the net's language alone",
            arg(&net)
        );
        assert_eq!(stderr.matches(&hint).count(), 1, "{args:?}: {stderr}");
        assert_eq!(stderr.matches("--boxes PATH").count(), 1, "{args:?}: {stderr}");
    }
    let out = smxrun(&["check", "--lang-only", arg(&net)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_misspelt_built_in_box_is_not_told_of_boxes_of_one_s_own() {
    let (_dir, net) = net_file(
        "typo.smx",
        "Src = box smx_src_rnd( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n",
    );
    let stderr = text(&smxrun(&["check", arg(&net)]).stderr);
    assert!(stderr.contains("did you mean 'smx_src_rand'?"), "{stderr}");
    assert!(!stderr.contains("--lang-only"), "{stderr}");
}

#[test]
fn rust_log_info_shows_the_start_and_end_of_the_threads_and_default_logs_nothing() {
    let (_dir, net) = net_file("src_snk.smx", SRC_SNK);
    let run = |log: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_smxrun"))
            .args([arg(&net), "-n", "100", "-q"])
            .env("RUST_LOG", log)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        text(&out.stderr)
    };
    let info = run("info");
    assert!(
        info.contains("] started ") && info.contains("] every thread has ended after "),
        "{info}"
    );
    assert!(run("debug").contains("] net Src#0: "), "debug says where each net runs");
    assert!(!run("warn").contains("started "), "nothing at the default level");
}

#[test]
fn check_takes_a_json_graph_as_a_run_does_and_names_lines_as_the_net_s() {
    let (dir, net) = net_file("src_snk.smx", SRC_SNK);
    let json = dir.path().join("g.json");
    let out = smxrun(&["graph", arg(&net), "--format", "json", "-o", arg(&json)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = smxrun(&["check", arg(&json)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("g.json: accepted: "),
        "{}",
        text(&out.stdout)
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&json)
            .unwrap()
            .replace("smx_snk_null", "smx_nope"),
    )
    .unwrap();
    let out = smxrun(&["check", arg(&bad)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("unknown implementation 'smx_nope'") && stderr.contains("of its net)"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("bad.json:3"),
        "no line of the JSON file is claimed: {stderr}"
    );
}

#[test]
fn headers_names_a_misspelt_built_in_box_at_its_declaration() {
    let (dir, net) = net_file(
        "typo.smx",
        "Src = box smx_src_rnd( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n",
    );
    let out_dir = dir.path().join("gen");
    let out = smxrun(&["headers", arg(&net), "-o", arg(&out_dir)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("typo.smx:1:11: error: ") && stderr.contains("did you mean 'smx_src_rand'?"),
        "{stderr}"
    );
    assert!(!out_dir.exists(), "nothing written");
}

#[test]
fn boxes_describes_the_routing_node_a_configuration_may_name() {
    let out = smxrun(&["boxes", "smx_rn"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let details = text(&out.stdout);
    assert!(
        details.starts_with("smx_rn: the routing node") && details.contains("  core "),
        "{details}"
    );
}

#[test]
fn a_channel_length_far_beyond_the_run_is_said_before_it_costs() {
    const PAIR: &str = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n";
    // --pin names a core that does not exist: the run stops after the warning, before any
    // channel is made. Its exit and stderr.
    let run = |net: &PathBuf, len: &str| {
        let out = smxrun(&[arg(net), "-n", "10", "--channel-len", len, "--pin", "99999", "-q"]);
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (_dir, net) = net_file("n.smx", &format!("{PAIR}connect Src.Snk\n"));
    let (code, stderr) = run(&net, "100000000");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("warning: --channel-len 100000000 reserves 6.0 GiB for 1 channel (64 bytes a message, more than the 10 messages of this run)"),
        "{stderr}"
    );
    let (_, stderr) = run(&net, "64");
    assert!(
        !stderr.contains("--channel-len"),
        "a usual length is not worth a word: {stderr}"
    );
    // What was said before the start is in the report's warnings too.
    let out = smxrun(&[
        arg(&net),
        "-n",
        "10",
        "--channel-len",
        "5000000",
        "--report",
        "json",
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["warnings"][0]
            .as_str()
            .is_some_and(|w| w.starts_with("--channel-len 5000000 reserves 0.3 GiB for 1 channel")),
        "{report}"
    );
    // A time-triggered channel's messages wait in its firewall, whatever the length.
    let (_tt_dir, tt) = net_file("tt.smx", &format!("{PAIR}connect tt[1ms](Src.Snk)\n"));
    let (_, stderr) = run(&tt, "100000000");
    assert!(!stderr.contains("--channel-len"), "{stderr}");
}

#[test]
fn the_text_report_starts_with_what_was_asked() {
    let (_dir, net) = net_file(
        "n.smx",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n",
    );
    let out = smxrun(&[arg(&net), "-n", "7", "--set", "Src.size=16", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = stdout.lines().next().unwrap();
    assert_eq!(
        first,
        format!("Asked: {}, 2 boxes, 1 channel, -n 7, --set Src.size=16", net.display())
    );
    // The JSON report stays the stable object it is.
    let out = smxrun(&[arg(&net), "-n", "7", "-q", "--report", "json"]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with('{'));
}

/// A net of tens of thousands of boxes is checked and drawn like a small one: each stage of
/// `check` and `graph` walks the boxes and channels a bounded number of times.
#[test]
fn a_chain_of_forty_thousand_boxes_is_checked_and_drawn() {
    let n = 40_000;
    let chain = vec!["F"; n].join(".");
    let source = format!(
        "Src = box smx_src_rand( out data )\nF = box smx_fwd( up in data, down out data )\n\
         Snk = box smx_snk_null( in data )\nconnect Src.{chain}.Snk\n"
    );
    let (dir, net) = net_file("chain.smx", &source);
    let out = smxrun(&["check", arg(&net)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!(
            "accepted: {} boxes, 0 routing nodes, {} channels",
            n + 2,
            n + 1
        )),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let json = dir.path().join("chain.json");
    let out = smxrun(&["graph", arg(&net), "--format", "json", "-o", arg(&json)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let graph: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(graph["edges"].as_array().map(Vec::len), Some(n + 1));
}
