//! What the ZeroMQ tests share: free loopback endpoints and the report's ZeroMQ rows.
#![allow(dead_code)] // each test file uses its own part of it

use smx_runtime::report::Report;

/// A loopback tcp endpoint whose port was free a moment ago.
pub fn free_tcp_endpoint() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("tcp://127.0.0.1:{port}")
}

/// The `zmq` section row of `name`, as the JSON report has it (`"sections": {"zmq": [...]}`).
pub fn row(report: &Report, name: &str) -> serde_json::Value {
    let json = serde_json::to_value(report).unwrap();
    json["sections"]["zmq"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == name).cloned())
        .unwrap_or_else(|| panic!("no zmq row for {name}: {:?}", report.sections.get("zmq")))
}
