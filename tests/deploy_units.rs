//! What `smxrun split` writes for an orchestrator: a systemd unit per process that starts it at
//! normal scheduling, and lets the runtime raise the nets with a priority itself.

use std::path::Path;
use std::process::Command;

const NET: &str = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nconnect Src.Snk\n";

/// `smxrun split` of the two-process net with `options`; the directory written.
fn split(dir: &Path, options: &[&str]) -> std::path::PathBuf {
    split_net(dir, NET, "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n", options)
}

/// `smxrun split` of `net` placed by `config` with `options`; the directory written.
fn split_net(dir: &Path, net: &str, config: &str, options: &[&str]) -> std::path::PathBuf {
    std::fs::write(dir.join("net.smx"), net).unwrap();
    std::fs::write(dir.join("deploy.toml"), config).unwrap();
    let out_dir = dir.join("out");
    let mut command = Command::new(env!("CARGO_BIN_EXE_smxrun"));
    command
        .arg("split")
        .arg(dir.join("net.smx"))
        .arg("--config")
        .arg(dir.join("deploy.toml"));
    let out = command.args(options).arg("-o").arg(&out_dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out_dir
}

#[test]
fn a_process_with_a_prioritised_net_may_raise_it_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let out = split(dir.path(), &["--set", "Snk.priority=10"]);
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
    let default = std::fs::read_to_string(split(dir.path(), &[]).join("main.job")).unwrap();
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    let out = split(dir.path(), &["--channel-len", "64"]);
    // The ring holds three quarters of the channel's length, and each slice runs with the
    // length.
    let long = std::fs::read_to_string(out.join("main.job")).unwrap();
    assert!(long.contains("len=48") && !default.contains("len=48"), "{long}");
    let sinks = std::fs::read_to_string(out.join("sinks.job")).unwrap();
    assert!(sinks.contains("\"--channel-len\",\"64\""), "{sinks}");
}

/// The options of how threads run reach every slice, so a split net runs as `smxrun NET
/// --config` with the same options would: here with a latency figure of every message.
#[test]
fn a_split_takes_the_runtime_options_a_run_would_take() {
    let dir = tempfile::tempdir().unwrap();
    let options = [
        "--pin",
        "off",
        "--rt",
        "on",
        "--chain",
        "off",
        "--wait-spin",
        "0",
        "--latency",
        "full",
        "-n",
        "500",
    ];
    let out = split(dir.path(), &options);
    for name in ["main", "sinks"] {
        let job = std::fs::read_to_string(out.join(format!("{name}.job"))).unwrap();
        for pair in [
            "\"--pin\",\"off\"",
            "\"--rt\",\"on\"",
            "\"--chain\",\"off\"",
            "\"--wait-spin\",\"0ns\"",
            "\"--latency\",\"full\"",
        ] {
            assert!(job.contains(pair), "{name}: {pair} in {job}");
        }
        // Real-time scheduling asked for: the unit lets the runtime raise its threads.
        let unit = std::fs::read_to_string(out.join(format!("smx-{name}.service"))).unwrap();
        assert!(unit.contains("LimitRTPRIO=99\n"), "{unit}");
    }
    // Run as an orchestrator would: the consumer's process first, then the producer's.
    let sinks = Command::new(out.join("sinks.sh")).spawn().unwrap();
    let main = Command::new(out.join("main.sh")).output().unwrap();
    let sinks = sinks.wait_with_output().unwrap();
    assert!(main.status.success() && sinks.status.success(), "{main:?} {sinks:?}");
    let merged = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args(["report", "merge"])
        .arg(out.join("main.report.json"))
        .arg(out.join("sinks.report.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&merged.stdout);
    assert!(merged.status.success(), "{text}");
    assert!(text.contains("every message)"), "{text}");
    assert!(
        text.contains("(500)"),
        "a latency sample of each of the 500 messages: {text}"
    );
}

/// A slice with a temporal firewall places its own threads, beside a process with cores of its
/// own on the rest: its job keeps it to them (and its unit says so); a job whose cores this
/// machine lacks is refused, naming them, before anything runs.
#[test]
fn a_timed_slice_keeps_to_the_cores_no_other_process_names() {
    if std::thread::available_parallelism().map_or(true, |n| n.get() < 2) {
        eprintln!("skipped: one core, none to leave to a process of its own");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let net = "Src = extern box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n\
               connect tt[100us](Src.Snk) | (Src.Snk)\n";
    let config = "[process.b]\ncores = [1]\n\n[net.\"Snk#3\"]\nprocess = \"b\"\n";
    let out = split_net(dir.path(), net, config, &[]);
    let job = std::fs::read_to_string(out.join("main.job")).unwrap();
    assert!(job.contains("\"cores_allowed\":[0]"), "{job}");
    let unit = std::fs::read_to_string(out.join("smx-main.service")).unwrap();
    assert!(unit.contains("CPUAffinity=0\n"), "{unit}");
    let b = std::fs::read_to_string(out.join("smx-b.service")).unwrap();
    assert!(b.contains("CPUAffinity=1\n"), "{b}");

    let elsewhere = job.replace("\"cores_allowed\":[0]", "\"cores_allowed\":[1000]");
    std::fs::write(out.join("main.job"), elsewhere).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args(["__slice", "--job"])
        .arg(out.join("main.job"))
        .arg("--report")
        .arg(dir.path().join("main.report.json"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("process 'main': its job's cores_allowed: none of the cores [1000] is allowed here"),
        "{stderr}"
    );
}

/// Paths with a space, quotes, `%` and `$` reach the slices whole: the scripts run, the printed
/// merge command merges, and the unit quotes each word as systemd reads it.
#[test]
fn a_split_into_a_directory_with_a_space_and_quotes_writes_commands_that_keep_its_paths_whole() {
    let top = tempfile::tempdir().unwrap();
    let dir = top.path().join("with space 'quoted' 50% $HOME");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("net.smx"), NET).unwrap();
    std::fs::write(
        dir.join("deploy.toml"),
        "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let smxrun = env!("CARGO_BIN_EXE_smxrun");
    let out = Command::new(smxrun)
        .arg("split")
        .arg(dir.join("net.smx"))
        .arg("--config")
        .arg(dir.join("deploy.toml"))
        .args(["-n", "100", "-o"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    run_scripts(&out_dir, &["sinks", "main"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let merge = stdout
        .lines()
        .find_map(|l| l.strip_prefix("when all have ended: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let bin = Path::new(smxrun).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let merged = Command::new("sh")
        .args(["-c", merge])
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        merged.status.success(),
        "{merge}: {}",
        String::from_utf8_lossy(&merged.stderr)
    );
    assert!(String::from_utf8_lossy(&merged.stdout).contains("Total:"), "{merge}");
    // systemd: a word with a space in double quotes, `%` and `$` doubled.
    let unit = std::fs::read_to_string(out_dir.join("smx-sinks.service")).unwrap();
    let job = out_dir.join("sinks.job").display().to_string();
    let job = job.replace('%', "%%").replace('$', "$$");
    assert!(unit.contains(&format!(" --job \"{job}\" ")), "{unit}");
    let net = dir.join("net.smx").display().to_string().replace('%', "%%");
    assert!(
        unit.contains(&format!("Description=smx: process 'sinks' of {net}\n")),
        "{unit}"
    );
}

/// `smxrun split NET --config CONFIG -o OUT` in `dir`, with the two-process net.
/// Starts the start scripts of `processes` that a split wrote into `out_dir`, all at once, and
/// waits until each ended well.
fn run_scripts(out_dir: &Path, processes: &[&str]) {
    let children: Vec<_> = processes
        .iter()
        .map(|p| {
            Command::new("sh")
                .arg(out_dir.join(format!("{p}.sh")))
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (name, c) in processes.iter().zip(children) {
        let c = c.wait_with_output().unwrap();
        assert!(c.status.success(), "{name}: {}", String::from_utf8_lossy(&c.stderr));
    }
}

fn split_into(dir: &Path, out: &Path) -> std::process::Output {
    std::fs::write(dir.join("net.smx"), NET).unwrap();
    std::fs::write(
        dir.join("deploy.toml"),
        "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n",
    )
    .unwrap();
    Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .arg("split")
        .arg(dir.join("net.smx"))
        .arg("--config")
        .arg(dir.join("deploy.toml"))
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A directory that holds a file split did not write is refused, naming the directory and the
/// file, which stays as it was; a directory that is there keeps its mode.
#[test]
fn a_split_never_overwrites_a_file_it_did_not_write() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("ne");
    std::fs::create_dir(&out_dir).unwrap();
    std::fs::set_permissions(&out_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(out_dir.join("main.sh"), "mine\n").unwrap();
    let out = split_into(dir.path(), &out_dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&out_dir.display().to_string()) && err.contains("'main.sh'"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(out_dir.join("main.sh")).unwrap(), "mine\n");
    assert_eq!(
        std::fs::read_dir(&out_dir).unwrap().count(),
        1,
        "nothing written beside it"
    );
    assert_eq!(mode(&out_dir), 0o755);

    // Empty, it is filled and keeps its mode.
    std::fs::remove_file(out_dir.join("main.sh")).unwrap();
    let out = split_into(dir.path(), &out_dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(mode(&out_dir), 0o755);
    assert_eq!(mode(&out_dir.join("main.job")), 0o600);

    // A report of the first split's slices is a run's result: a second split leaves it, and
    // everything else, as it was, and says what to do with it.
    std::fs::write(out_dir.join("main.report.json"), "{}").unwrap();
    let job = std::fs::read_to_string(out_dir.join("main.job")).unwrap();
    let out = split_into(dir.path(), &out_dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("holds 'main.report.json', the report of a run") && err.contains("move the reports away"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(out_dir.join("main.report.json")).unwrap(), "{}");
    assert_eq!(std::fs::read_to_string(out_dir.join("main.job")).unwrap(), job);
    // Without it, a second split replaces the first's files, and only those.
    std::fs::remove_file(out_dir.join("main.report.json")).unwrap();
    let out = split_into(dir.path(), &out_dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_ne!(std::fs::read_to_string(out_dir.join("main.job")).unwrap(), job);
    std::fs::write(out_dir.join("notes.txt"), "mine\n").unwrap();
    let out = split_into(dir.path(), &out_dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("'notes.txt'"), "{err}");
    assert!(out_dir.join("main.job").exists() && out_dir.join("notes.txt").exists());

    // A directory split makes is private.
    let made = dir.path().join("parent").join("made");
    let out = split_into(dir.path(), &made);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(mode(&made), 0o700);
}

#[test]
fn a_split_into_a_file_says_it_takes_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("afile");
    std::fs::write(&file, "mine\n").unwrap();
    let out = split_into(dir.path(), &file);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("afile: not a directory"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine\n");
    // A directory that cannot be made says so, and names the file in its way.
    let out = split_into(dir.path(), &file.join("sub/out"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("sub/out: cannot create the directory split writes into: ")
            && err.contains(&format!(
                "'{}' on the way to it is a file, not a directory",
                file.display()
            )),
        "{err}"
    );
}

/// The configuration's relative paths are relative to the directory split ran in, as a run's
/// are to where it runs: the scripts start their processes there, from wherever they are
/// started, and the units name it as their working directory.
#[test]
fn a_split_runs_its_slices_where_split_ran() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path().canonicalize().unwrap();
    std::fs::create_dir(here.join("sub")).unwrap();
    std::fs::write(
        here.join("net.smx"),
        "Src = box smx_src_rand( out data )\nDmp = box smx_snk_dump( in data )\nconnect Src.Dmp\n",
    )
    .unwrap();
    std::fs::write(
        here.join("deploy.toml"),
        "[process.b]\n\n[net.Dmp]\nprocess = \"b\"\npath = \"sub/dump.txt\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .current_dir(&here)
        .args(["split", "net.smx", "--config", "deploy.toml", "-n", "3", "-o", "out"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out_dir = here.join("out");
    let children: Vec<_> = ["b", "main"]
        .iter()
        .map(|p| {
            Command::new("sh")
                .arg(out_dir.join(format!("{p}.sh")))
                .current_dir("/")
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let c = c.wait_with_output().unwrap();
        assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    }
    assert!(here.join("sub").join("dump.txt").exists());
    let unit = std::fs::read_to_string(out_dir.join("smx-b.service")).unwrap();
    assert!(
        unit.contains(&format!("\nWorkingDirectory={}\n", here.display())),
        "{unit}"
    );
}

/// A link timeout of nothing would make slices that can never connect, one of more than a day
/// slices that wait past any use: refused, and nothing written.
#[test]
fn a_split_refuses_a_link_timeout_of_nothing_or_of_more_than_a_day() {
    let dir = tempfile::tempdir().unwrap();
    // Past a day, the slices could not even read their timeout back (its milliseconds
    // overflowed) and failed once started, naming an option the user never wrote.
    for (timeout, why) in [
        ("0", "at least 1ms"),
        ("500us", "at least 1ms"),
        ("86401s", "at most 86400s"),
        ("18446744073709552s", "at most 86400s"),
    ] {
        let out_dir = dir.path().join("out");
        std::fs::write(dir.path().join("net.smx"), NET).unwrap();
        std::fs::write(
            dir.path().join("deploy.toml"),
            "[process.sinks]\n\n[net.Snk]\nprocess = \"sinks\"\n",
        )
        .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_smxrun"))
            .arg("split")
            .arg(dir.path().join("net.smx"))
            .arg("--config")
            .arg(dir.path().join("deploy.toml"))
            .args(["--link-timeout", timeout, "-o"])
            .arg(&out_dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{timeout}: {err}");
        assert!(err.contains("error: --link-timeout ") && err.contains(why), "{err}");
        assert!(!out_dir.exists(), "{timeout}");
    }
}

/// A slice started apart from its peer, which gives up on it after the link's timeout, says
/// how to make the links wait longer, on either end of the link.
#[test]
fn a_slice_whose_peer_never_came_names_the_link_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = split(dir.path(), &["-n", "10", "--link-timeout", "200ms"]);
    for (process, code) in [("main", 3), ("sinks", 1)] {
        let out = Command::new(out_dir.join(format!("{process}.sh"))).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{process}: {err}");
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("{process}: note: ")) && l.contains("--link-timeout")),
            "{process}: {err}"
        );
    }
}

/// A slice started by hand whose `--report` cannot be written refuses before it runs, naming
/// the option and the cause: run first, it would wait on its links, disturb its peers and then
/// lose its books.
#[test]
fn a_slice_whose_report_cannot_be_written_refuses_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = split(dir.path(), &["-n", "10", "--link-timeout", "200ms"]);
    let out = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args(["__slice", "--process", "main", "--job"])
        .arg(out_dir.join("main.job"))
        .arg("--report")
        .arg(dir.path().join("missing").join("main.report.json"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--report: cannot write") && err.contains("does not exist"),
        "{err}"
    );
    assert!(!err.contains("link0_out"), "its link never opened: {err}");
}

/// The merge of a producer's slice whose consumer's process never came: its source was cut
/// short (`stopped`, not `ok`), and what it sent is lost exactly (nothing was taken), not "up
/// to" as at a process that died with messages in hand.
#[test]
fn a_merge_counts_what_a_consumer_that_never_came_lost_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = split(dir.path(), &["-n", "50000", "--link-timeout", "200ms"]);
    let out = Command::new(out_dir.join("main.sh")).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let merge = |format: &str| {
        Command::new(env!("CARGO_BIN_EXE_smxrun"))
            .args(["report", "merge", "--format", format])
            .arg(out_dir.join("main.report.json"))
            .arg(out_dir.join("sinks.report.json"))
            .output()
            .unwrap()
    };
    let json = merge("json");
    let report: serde_json::Value = serde_json::from_slice(&json.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&json.stderr)));
    assert_eq!(report["nets"][0]["status"], "stopped", "{report}");
    let lost = report["channels"][0]["link"]["lost"].as_u64().unwrap();
    assert!(lost > 0, "{report}");
    let text = String::from_utf8_lossy(&merge("text").stdout).into_owned();
    assert!(!text.contains('≤'), "{text}");
    let attention = text.lines().find(|l| l.starts_with("Attention:")).unwrap_or_default();
    assert!(
        attention.contains(&format!("{lost} message"))
            && attention.contains("lost: their consumer's process never attached"),
        "{text}"
    );
    assert!(!attention.contains("up to"), "{text}");
}

/// A stand-in for `ssh` named as it is: it drops the destination and hands the words after it,
/// joined by spaces, to a shell, as `ssh` hands them to the remote login shell.
fn fake_ssh(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let ssh = bin.join("ssh");
    std::fs::write(&ssh, "#!/bin/sh\nshift\nexec sh -c \"$*\"\n").unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    ssh
}

/// The script of a process that `launch = "ssh host"` starts keeps the paths of a split
/// directory with a space, quotes, `%` and `$` whole through the remote shell: each word after
/// the prefix is quoted for that shell too, and both slices run and report.
#[test]
fn a_split_script_through_ssh_keeps_paths_with_spaces_whole() {
    let top = tempfile::tempdir().unwrap();
    let ssh = fake_ssh(top.path());
    let dir = top.path().join("with space 'quoted' 50% $HOME");
    std::fs::create_dir(&dir).unwrap();
    let config = format!(
        "[process.sinks]\nhost = \"127.0.0.1\"\nport = 27390\nlaunch = \"{} 127.0.0.1\"\n\n[net.Snk]\nprocess = \"sinks\"\n",
        ssh.display()
    );
    let out_dir = split_net(&dir, NET, &config, &["-n", "100"]);
    run_scripts(&out_dir, &["sinks", "main"]);
    for name in ["sinks", "main"] {
        assert!(out_dir.join(format!("{name}.report.json")).exists(), "{name}");
    }
    let script = std::fs::read_to_string(out_dir.join("sinks.sh")).unwrap();
    assert!(
        script.contains(&format!("exec {} 127.0.0.1 ", ssh.display())),
        "{script}"
    );
}

/// The placement's warnings that `split` said before any slice started come first among the
/// warnings of the merged report, as in the report of a run that smxrun supervised.
#[test]
fn the_merge_of_a_split_repeats_the_placement_warnings_of_the_split() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[process.sinks]\n[process.spare]\n\n[net.Snk]\nprocess = \"sinks\"\n";
    let out = split_net(dir.path(), NET, config, &["-n", "200"]);
    run_scripts(&out, &["sinks", "main"]);
    let merged = Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args(["report", "merge", "--format", "json"])
        .arg(out.join("main.report.json"))
        .arg(out.join("sinks.report.json"))
        .output()
        .unwrap();
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    let report: serde_json::Value = serde_json::from_slice(&merged.stdout).unwrap();
    let first = report["warnings"][0].as_str().unwrap_or_default();
    assert!(
        first.contains("deploy.toml:2: process 'spare' holds no net"),
        "{}",
        report["warnings"]
    );
}
