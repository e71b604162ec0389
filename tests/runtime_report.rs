//! The three report renderers on a real run: JSON keys and values, text table, original log
//! lines.

use smx_box::{BoxConfig, ConfigValue};
use smx_runtime::NetBuilder;
use smx_runtime::config::NetSettings;
use smx_runtime::report::{json, smxlog, text};
use smx_runtime::{RunOptions, run};

fn report() -> smx_runtime::report::Report {
    let registry = smxrun::builtin_registry();
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let snk = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    net.connect(src, "data", snk, "data");
    let graph = net.build();
    let settings = graph
        .nodes
        .iter()
        .map(|n| {
            let mut config = BoxConfig::with_defaults(&n.label, registry.get(&n.func).unwrap()).unwrap();
            if n.label == "Src" {
                config.values.insert("count".into(), ConfigValue::Int(250));
            }
            NetSettings {
                box_config: config,
                ..NetSettings::default()
            }
        })
        .collect();
    let opts = RunOptions {
        settings,
        ..RunOptions::default()
    };
    run(&graph, &registry, &opts).unwrap()
}

#[test]
fn json_has_the_documented_keys() {
    let report = report();
    let value: serde_json::Value = serde_json::from_str(&json::render(&report)).unwrap();
    assert_eq!(value["format_version"], 3);
    assert!(value["wall_time_s"].as_f64().unwrap() > 0.0);
    assert_eq!(value["status"], "ok");
    assert_eq!(value["messages"], 250);
    let nets = value["nets"].as_array().unwrap();
    assert_eq!(nets.len(), 2);
    for key in [
        "id",
        "name",
        "impl",
        "core",
        "loop_count",
        "loop_rate",
        "wall_time_s",
        "status",
    ] {
        assert!(nets[0].get(key).is_some(), "net key {key}");
    }
    assert_eq!(nets[0]["name"], "Src");
    assert_eq!(nets[0]["impl"], "smx_src_rand");
    assert_eq!(nets[0]["loop_count"], 250);
    assert_eq!(nets[1]["stats"]["received"], 250);
    let channels = value["channels"].as_array().unwrap();
    for key in [
        "id",
        "name",
        "from",
        "to",
        "kind",
        "len",
        "written",
        "read",
        "overwritten",
        "duplicated",
        "dropped",
        "left",
    ] {
        assert!(channels[0].get(key).is_some(), "channel key {key}");
    }
    assert_eq!(channels[0]["from"], "Src");
    assert_eq!(channels[0]["to"], "Snk");
    assert_eq!(channels[0]["kind"], "coupled");
    assert_eq!(channels[0]["written"], 250);
    assert!(value["firewalls"].is_array() && value["sections"].is_object());
}

#[test]
fn text_lists_nets_channels_and_totals() {
    let out = text::render(&report());
    assert!(
        out.contains("loop count") && out.contains("written") && out.contains("Total:"),
        "{out}"
    );
    assert!(out.contains("smx_src_rand") && out.contains("Snk#1"), "{out}");
    assert!(out.contains("250 messages"), "{out}");
    // Columns are aligned: every row of the nets table has the status column at one offset.
    let rows: Vec<&str> = out.lines().skip(1).take(4).collect();
    let at: Vec<Option<usize>> = rows[2..].iter().map(|r| r.find("ok")).collect();
    assert_eq!(at[0], at[1], "{out}");
}

#[test]
fn smx_lines_are_the_originals() {
    let out = smxlog::render(&report());
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("[NOTICE] [net_Src_0] terminate net (loop count: 250, loop rate: "))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("[NOTICE] [net_Snk_1] terminate net (loop count: 250, loop rate: "))
    );
    assert!(
        lines[2].contains("[NOTICE] [main] end main thread (wall time: "),
        "{out}"
    );
    for line in lines {
        assert!(
            line.starts_with('[') && line.as_bytes()[27] == b']',
            "timestamp shape: {line}"
        );
    }
}
