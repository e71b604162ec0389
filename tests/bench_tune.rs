//! `smxrun bench tune` as a user meets it: one verdict line per row with the default, the best
//! setting and their ratio, every setting of the sweep measured and saved, and bad arguments
//! refused before anything runs. Nothing here asserts a figure: the counts are tiny, and which
//! setting wins on a shared machine is the measurement, not the behaviour under test.

use std::process::{Command, Output};

use smx_bench::output::read_json;

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .arg("bench")
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const ROWS: [&str; 3] = [
    "scaling pairs=1 len=1",
    "zmq pipeline tcp len=1",
    "tt[1ms](Src.Snk)|(Src.Snk)",
];

#[test]
fn every_row_gets_a_verdict_and_every_setting_is_saved() {
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("t.json"), dir.path().join("t.csv"));
    let out = bench(&[
        "tune",
        "--pairs",
        "1",
        "--channel-len",
        "1",
        "--count",
        "300",
        "--ticks",
        "30",
        "--period",
        "1ms",
        "--runs",
        "1",
        "--pins",
        "auto",
        "--spins",
        "0",
        "--modes",
        "threads,cyclic",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("tune: defaults against the best setting"), "{stdout}");
    for row in ROWS {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no verdict line for {row}:\n{stdout}"));
        assert!(line.contains("--pin auto --wait-spin"), "best setting named: {line}");
        assert!(
            [
                "ok: within",
                "ok: the best is the default's own setting",
                "SLOWER than the best",
                "MISSES more than"
            ]
            .iter()
            .any(|v| line.contains(v)),
            "{line}"
        );
    }

    let results = read_json(&json).unwrap();
    assert_eq!(results.len(), 1);
    let r = &results[0];
    assert_eq!(r.experiment, "tune");
    let settings = |row: &str| -> Vec<&str> {
        r.cases
            .iter()
            .filter(|c| c.param("row") == Some(row) && c.param("confirm").is_none())
            .filter_map(|c| c.param("setting"))
            .collect()
    };
    // A row whose default missed the goal in the sweep was measured again: the default and
    // one other setting, and its verdict line says so.
    for row in ROWS {
        let again: Vec<&str> = r
            .cases
            .iter()
            .filter(|c| c.param("row") == Some(row) && c.param("confirm") == Some("yes"))
            .filter_map(|c| c.param("setting"))
            .collect();
        let line = stdout.lines().find(|l| l.starts_with(row)).unwrap();
        if again.is_empty() {
            assert!(!line.contains("measured again"), "{line}");
        } else {
            assert_eq!(again.len(), 2, "{row}: {again:?}");
            assert_eq!(again[0], "default", "{row}: {again:?}");
            // The verdict is the re-measurement's, unless the best was the default's own setting.
            let own = line.contains("the best is the default's own setting");
            assert!(
                line.contains(again[1]) && (own || line.contains("measured again")),
                "{line}"
            );
        }
    }
    // The default, then --pin auto with the two spins (0 and the runtime's default, always
    // added); the tt row once per mode.
    let plain = ["default", "--pin auto --wait-spin 0", "--pin auto --wait-spin 50us"];
    assert_eq!(settings(ROWS[0]), plain);
    assert_eq!(settings(ROWS[1]), plain);
    let tt = settings(ROWS[2]);
    assert_eq!(tt.len(), 5, "{tt:?}");
    assert!(tt.contains(&"--pin auto --wait-spin 0 --tt-mode cyclic"), "{tt:?}");
    // One measured run each in the sweep (the warm-up is not kept); three times the sweep's
    // rounds when measured again and beside the floor; all valid.
    for c in &r.cases {
        let again = c.param("confirm").is_some() || c.param("floor_of").is_some();
        assert_eq!(c.runs.len(), if again { 3 } else { 1 }, "{}", c.key());
        assert!(
            c.runs.iter().all(|run| run.valid),
            "{}: {:?}",
            c.key(),
            c.runs[0].problems
        );
    }
    // The tt row's default beside the platform floor: both cases, and a line with its verdict.
    let beside: Vec<&str> = r
        .cases
        .iter()
        .filter(|c| c.param("floor_of") == Some(ROWS[2]))
        .map(|c| c.series.as_str())
        .collect();
    assert_eq!(beside, ["smx", "probe"]);
    assert!(
        stdout.contains("tune: time-triggered defaults against the platform floor"),
        "{stdout}"
    );
    let floor_line = stdout
        .lines()
        .filter(|l| l.starts_with(ROWS[2]))
        .nth(1)
        .unwrap_or_else(|| panic!("no floor line:\n{stdout}"));
    assert!(floor_line.contains("x the floor"), "{floor_line}");
    let csv = std::fs::read_to_string(&csv).unwrap();
    let header = csv.lines().next().unwrap();
    for column in ["row", "setting", "pin", "wait_spin", "tt_mode"] {
        assert!(header.split(',').any(|h| h == column), "{header}");
    }
}

#[test]
fn bad_arguments_are_refused_before_anything_runs() {
    for (args, says) in [
        (&["tune", "--spins", "fast"][..], "--spins"),
        (&["tune", "--modes", "auto"], "the sweep sets threads or cyclic"),
        (&["tune", "--modes", "sometimes"], "--modes"),
        (&["tune", "--pins", "sometimes"], "--pins"),
        (&["tune", "--rows", "gstreamer"], "--rows"),
        (&["tune", "--count", "0"], "must be at least 1"),
        (&["tune", "--ticks", "0"], "must be at least 1"),
        (&["tune", "--pairs", "0"], "must be at least 1"),
        (&["tune", "--period", "0"], "longer than zero"),
        (&["tune", "--runs", "0"], "must be at least 1"),
    ] {
        let out = bench(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("reading the machine"), "{args:?} started: {err}");
    }
}
