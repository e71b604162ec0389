//! What the ZeroMQ tests share: free loopback endpoints and the report's ZeroMQ rows.
#![allow(dead_code)] // each test file uses its own part of it

use smx_runtime::report::Report;

/// A free loopback tcp endpoint that no connection of a test running beside it can take.
pub fn free_tcp_endpoint() -> String {
    smx_zmq::loopback::free_loopback_endpoint().expect("a free loopback port")
}

/// `Src1.Snk1 | Src2.Snk2` of the ISPW60 report.
pub fn report_net() -> smx_graph::NetGraph {
    let mut net = smx_runtime::NetBuilder::new();
    let src1 = net.add_box("Src1", "smx_src_rand", &[("data", false)]);
    let snk1 = net.add_box("Snk1", "smx_snk_zmq", &[("data", true)]);
    let src2 = net.add_box("Src2", "smx_src_zmq", &[("data", false), ("topic", false)]);
    let snk2 = net.add_box("Snk2", "smx_snk_dump", &[("data", true), ("topic", true)]);
    net.connect(src1, "data", snk1, "data");
    net.connect(src2, "data", snk2, "data");
    net.connect(src2, "topic", snk2, "topic");
    net.build()
}

/// The `zmq` section row of `name`, as the JSON report has it (`"sections": {"zmq": [...]}`).
pub fn row(report: &Report, name: &str) -> serde_json::Value {
    let json = serde_json::to_value(report).unwrap();
    json["sections"]["zmq"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == name).cloned())
        .unwrap_or_else(|| panic!("no zmq row for {name}: {:?}", report.sections.get("zmq")))
}

/// A file of the project's `nets/` folder.
pub fn net(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("nets").join(name)
}

/// Starts `smxrun run` on one half of the split report net (`nets/zmq_sender.smx` or
/// `nets/zmq_receiver.smx`) with the configuration `config` of `nets/` and `--set`s, writing
/// its JSON report to `report`.
pub fn start_half(half: &str, config: &str, sets: &[String], report: &std::path::Path) -> std::process::Child {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_smxrun"));
    cmd.arg("run")
        .arg(net(half))
        .arg("--config")
        .arg(net(config))
        .args(["--report", "json", "--quiet", "--pin", "off", "-o"])
        .arg(report);
    for set in sets {
        cmd.arg("--set").arg(set);
    }
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("smxrun starts")
}
