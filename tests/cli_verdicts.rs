//! `check`, `graph` and `run` give one verdict on a net, and say where the problem is.

use std::process::Command;

fn smxrun(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_smxrun")).args(args).output().unwrap()
}

#[test]
fn a_misspelled_implementation_is_rejected_by_check_graph_and_run_at_its_declaration() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("typo.smx");
    std::fs::write(
        &net,
        "Src = extern box smx_src_rnd( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n",
    )
    .unwrap();
    let net = net.to_str().unwrap();
    for args in [vec!["check", net], vec!["graph", net], vec!["run", net, "-q"]] {
        let out = smxrun(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        let place = format!("{net}:1:18: error: box 'Src' uses unknown implementation 'smx_src_rnd'");
        assert_eq!(stderr.matches(&place).count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("                   ^^^^^^^^^^^"),
            "a caret under the name: {stderr}"
        );
        assert!(!String::from_utf8_lossy(&out.stdout).contains("accepted"), "{args:?}");
    }
    let check = smxrun(&["check", net]);
    assert!(String::from_utf8_lossy(&check.stderr).contains("rejected (1 error, 0 warnings)"));
}

fn net_file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_box_joined_to_itself_is_explained_by_its_rule_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let net = net_file(
        &dir,
        "self.smx",
        "Src = box smx_src_rand( out data )\nF = box smx_fwd( in data, out data )\n\
         Snk = box smx_snk_null( in data )\nconnect Src.F.Snk\n",
    );
    for args in [
        vec!["check", &net],
        vec!["check", "--lang-only", &net],
        vec!["graph", &net],
    ] {
        let out = smxrun(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.matches(": error:").count(), 1, "one error, not four: {stderr}");
        assert!(stderr.contains("box 'F' is connected to itself"), "{stderr}");
        assert!(
            stderr.contains("F = box smx_fwd( up in data, down out data )"),
            "{stderr}"
        );
    }
}

#[test]
fn a_port_name_that_matches_none_gets_did_you_mean() {
    let dir = tempfile::tempdir().unwrap();
    let net = net_file(
        &dir,
        "typo.smx",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in dat )\nconnect Src.Snk\n",
    );
    let out = smxrun(&["check", &net]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("did you mean 'data'?"), "{stderr}");
}

#[test]
fn a_port_the_implementation_needs_is_cited_at_the_declaration_by_check_graph_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let net = net_file(
        &dir,
        "miss.smx",
        "Src = box smx_src_rand( out data )\nF = box smx_fwd( in data )\n\nconnect Src.F\n",
    );
    for args in [vec!["check", &net], vec!["graph", &net], vec!["run", &net, "-q"]] {
        let out = smxrun(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{net}:2:1: error: box instance 'F' (smx_fwd) does not declare the output port 'data'"
            )),
            "{args:?}: {stderr}"
        );
        assert!(
            stderr.contains("\n  F = box smx_fwd( in data )\n  ^^^"),
            "{args:?}: {stderr}"
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).is_empty(),
            "{args:?}: nothing drawn or run"
        );
    }
}

/// A time-triggered net that loses messages by its shape (a fan-in whose outputs take fewer
/// per period than its inputs deliver; a channel into a firewall of a longer period) is warned
/// of by `check`, before any run, with the rule and the remedy.
#[test]
fn check_warns_of_what_a_time_triggered_net_loses_by_its_shape() {
    let dir = tempfile::tempdir().unwrap();
    let fan_in = net_file(
        &dir,
        "fan.smx",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect tt[1ms]((Src!Src).(Snk|Snk))\n",
    );
    let crossing = net_file(
        &dir,
        "cross.smx",
        "Src = box smx_src_rand( out data )\nF = box smx_fwd( up in data, down out data )\n\
         Snk = box smx_snk_null( in data )\nconnect tt[1ms](Src.F).tt[2ms](Snk)\n",
    );
    let even = net_file(
        &dir,
        "even.smx",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect tt[1ms](Src.Snk)\n",
    );
    for (net, warning) in [
        (
            &fan_in,
            "warning: smx_rn#2: its time-triggered inputs will lose messages by the net's shape",
        ),
        (
            &crossing,
            "warning: F#1 -> Snk#2: where its channel crosses from the 1.00ms firewall into the 2.00ms one it will \
             lose messages by the net's shape",
        ),
    ] {
        let out = smxrun(&["check", net]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains(warning), "{stderr}");
        let verdict = format!("{stderr}{}", String::from_utf8_lossy(&out.stdout));
        assert!(verdict.contains("(0 errors, 1 warning)"), "{verdict}");
    }
    let out = smxrun(&["check", &even]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("by the net's shape"));
}

/// Errors that follow from one and are not shown are still counted in the verdict, as the
/// note beside the one shown says there are more.
#[test]
fn check_counts_the_errors_it_does_not_show() {
    let dir = tempfile::tempdir().unwrap();
    let net = net_file(
        &dir,
        "self.smx",
        "Src = box smx_src_rand( out data )\nFwd = box smx_fwd( in data, out data )\n\
         Snk = box smx_snk_null( in data )\nconnect Src.Fwd.Snk\n",
    );
    let out = smxrun(&["check", &net]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("3 more errors about missing connections on this line follow from it (not shown)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{net}: rejected (4 errors, 0 warnings)")),
        "{stderr}"
    );
}

#[test]
fn check_ends_a_configuration_mistake_with_its_verdict_as_any_other() {
    let dir = tempfile::tempdir().unwrap();
    let net = net_file(
        &dir,
        "net.smx",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n",
    );
    let unknown_key = net_file(&dir, "key.toml", "[net.Snk]\nbogus = 1\n");
    let malformed = net_file(&dir, "bad.toml", "[net.Snk\n");
    for (args, error) in [
        (
            vec!["--config", &unknown_key],
            "key.toml:2: key 'bogus' of net 'Snk': unknown key",
        ),
        (vec!["--config", &malformed], "bad.toml:1: malformed TOML"),
        (
            vec!["--set", "Snk.bogus=1"],
            "--set 'Snk.bogus=1': key 'bogus' of net 'Snk': unknown key",
        ),
    ] {
        let out = smxrun(&[&["check", &net][..], &args].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(error), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("{net}: rejected (1 error, 0 warnings)")),
            "{args:?}: {stderr}"
        );
    }
}

/// `check --channel-len N` says what a run with it would say before its start: the memory the
/// channels reserve, counted among the verdict's warnings; a length that reserves little is
/// worth no word.
#[test]
fn check_says_what_a_channel_length_would_reserve() {
    let dir = tempfile::tempdir().unwrap();
    let net = net_file(
        &dir,
        "net.smx",
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n",
    );
    let out = smxrun(&["check", &net, "--channel-len", "10000000"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("warning: --channel-len 10000000 reserves 0.6 GiB for 1 channel"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("(0 errors, 1 warning)"));
    let out = smxrun(&["check", &net, "--channel-len", "64"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("(0 errors, 0 warnings)"));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    // The net file's own check takes no run's options.
    assert_eq!(
        smxrun(&["check", &net, "--lang-only", "--channel-len", "64"])
            .status
            .code(),
        Some(1)
    );
}
