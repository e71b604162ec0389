//! Placement and slicing of a graph, without running anything.

use std::path::Path;

use smx_box::{BoxConfig, ConfigValue};
use smx_deploy::placement::{cut_problems, place};
use smx_deploy::slice::{Keys, Origin, Transport, split};
use smx_deploy::{Deployment, Processes};
use smx_graph::{Edge, Location, NetGraph, Node, NodeKind, TimeSpec, Timing};
use smx_runtime::config::{NetSettings, Origin as Place};

fn node(id: usize, label: &str, kind: NodeKind) -> Node {
    Node {
        id,
        label: label.into(),
        func: if kind == NodeKind::Box { "smx_fwd" } else { "smx_rn" }.into(),
        kind,
        is_static: false,
        pure: false,
        location: Location::Local,
        priority: 0,
        line: id + 1,
        ports: Vec::new(),
    }
}

fn edge(id: usize, source: usize, target: usize) -> Edge {
    Edge {
        id,
        source,
        target,
        label: "data".into(),
        source_port: "data".into(),
        target_port: "data".into(),
        nsrc: None,
        ndst: None,
        dsrc: false,
        ddst: false,
        len: 4,
        len_declared: true,
        timing: Timing::None,
        src_time: TimeSpec::default(),
        dst_time: TimeSpec::default(),
        dynsrc: false,
        dyndst: false,
    }
}

/// A -> rn -> B, A in `main`, B in `p`.
fn net() -> (NetGraph, Vec<NetSettings>) {
    let graph = NetGraph {
        nodes: vec![
            node(0, "A", NodeKind::Box),
            node(1, "smx_rn", NodeKind::RoutingNode),
            node(2, "B", NodeKind::Box),
        ],
        edges: vec![edge(0, 0, 1), edge(1, 1, 2)],
    };
    let mut settings = vec![NetSettings::default(); 3];
    settings[0].box_config = BoxConfig {
        values: [("count".to_string(), ConfigValue::Int(7))].into(),
        ..BoxConfig::default()
    };
    settings[2].process = Some(("p".into(), Place::BuiltIn));
    (graph, settings)
}

/// `net()` with a second consumer: A -> rn -> B and rn -> C, B in process `b`, C in `c`.
fn fan_out(b: &str, c: &str) -> (NetGraph, Vec<NetSettings>) {
    let (mut graph, mut settings) = net();
    graph.nodes.push(node(3, "C", NodeKind::Box));
    graph.edges.push(edge(2, 1, 3));
    settings.push(NetSettings::default());
    settings[2].process = Some((b.into(), Place::BuiltIn));
    settings[3].process = Some((c.into(), Place::BuiltIn));
    (graph, settings)
}

struct CountingKeys(u32);

impl Keys for CountingKeys {
    fn pair(&mut self) -> Result<(String, String), String> {
        self.0 += 1;
        Ok((format!("public{}", self.0), format!("secret{}", self.0)))
    }
}

fn processes(text: &str) -> Processes {
    Processes::from_toml(Path::new("d.toml"), text).unwrap()
}

#[test]
fn a_routing_node_follows_its_feeder_and_the_cut_becomes_one_link() {
    let (graph, settings) = net();
    let procs = processes("[process.p]\n");
    let placement = place(&graph, &settings, &procs).unwrap();
    assert_eq!(placement.process_of, vec!["main", "main", "p"]);
    let s = split(
        &graph,
        &settings,
        &placement,
        &procs,
        "t",
        Transport::Zmq,
        &mut CountingKeys(0),
    )
    .unwrap();
    assert_eq!(s.links.len(), 1);
    let link = &s.links[0];
    assert_eq!((link.edge, link.transport, link.curve), (1, Transport::Zmq, false));
    assert!(link.endpoint.starts_with("ipc://"), "{link:?}");
    let main = &s.slices[0];
    assert_eq!(
        main.origins,
        vec![Origin::Node(0), Origin::Node(1), Origin::LinkSink(1)]
    );
    assert_eq!(main.edges, vec![0, 1]);
    // The producer's half keeps the channel's length.
    assert_eq!(main.graph.edges[1].len, 4);
    assert!(main.sets.contains(&"A#0.count=7".to_string()), "{:?}", main.sets);
    let p = &s.slices[1];
    assert_eq!(p.origins, vec![Origin::Node(2), Origin::LinkSource(1)]);
    assert_eq!((p.graph.edges[0].source, p.graph.edges[0].target), (1, 0));
}

#[test]
fn a_fan_in_from_two_processes_runs_with_its_consumer_so_no_message_crosses_twice() {
    // A (in a) and B (in b) -> rn -> C (in main).
    let graph = NetGraph {
        nodes: vec![
            node(0, "A", NodeKind::Box),
            node(1, "B", NodeKind::Box),
            node(2, "smx_rn", NodeKind::RoutingNode),
            node(3, "C", NodeKind::Box),
        ],
        edges: vec![edge(0, 0, 2), edge(1, 1, 2), edge(2, 2, 3)],
    };
    let mut settings = vec![NetSettings::default(); 4];
    settings[0].process = Some(("a".into(), Place::BuiltIn));
    settings[1].process = Some(("b".into(), Place::BuiltIn));
    let procs = processes("[process.a]\n[process.b]\n");
    let placement = place(&graph, &settings, &procs).unwrap();
    assert_eq!(placement.process_of, vec!["a", "b", "main", "main"]);
    let cut: Vec<usize> = placement.cuts(&graph).iter().map(|e| e.id).collect();
    assert_eq!(
        cut,
        vec![0, 1],
        "each feeder's channel is the one cut its messages cross"
    );
    // Feeders in one process keep the routing node there: one link instead of two.
    settings[1].process = Some(("a".into(), Place::BuiltIn));
    let placement = place(&graph, &settings, &procs).unwrap();
    assert_eq!(placement.process_of, vec!["a", "a", "a", "main"]);
}

#[test]
fn a_link_between_hosts_is_tcp_to_the_consumer_with_fresh_curve_keys() {
    let (graph, settings) = net();
    let procs = processes("[process.p]\nhost = \"192.0.2.1\"\nlaunch = \"env x\"\nport = 50000\n");
    let placement = place(&graph, &settings, &procs).unwrap();
    let s = split(
        &graph,
        &settings,
        &placement,
        &procs,
        "t",
        Transport::Zmq,
        &mut CountingKeys(0),
    )
    .unwrap();
    let link = &s.links[0];
    assert_eq!((link.endpoint.as_str(), link.curve), ("tcp://192.0.2.1:50000", true));
    let sink_sets = &s.slices[0].sets;
    let source_sets = &s.slices[1].sets;
    // The receiving side is the server: it knows its secret and accepts the sender's key only.
    assert!(
        source_sets.iter().any(|x| x.ends_with(".curve_secret=secret1")),
        "{source_sets:?}"
    );
    assert!(
        source_sets.iter().any(|x| x.ends_with(".curve_clients=public2")),
        "{source_sets:?}"
    );
    assert!(
        sink_sets.iter().any(|x| x.ends_with(".curve_server=public1")),
        "{sink_sets:?}"
    );
    assert!(
        sink_sets.iter().any(|x| x.ends_with(".curve_secret=secret2")),
        "{sink_sets:?}"
    );
    // The sink's end waits for a live receiver, not a fixed linger.
    assert!(sink_sets.iter().any(|x| x.ends_with(".linger=86400s")), "{sink_sets:?}");
    // The plan that goes into reports holds no key.
    let d = Deployment::new(&graph, &settings, &procs, "t", &smx_runtime::Registry::default()).unwrap();
    assert!(!d.plan().to_string().contains("curve_secret"));
}

#[test]
fn processes_on_one_host_bind_ports_of_their_own() {
    // B and C on one other host, both at the default port.
    let (graph, settings) = fan_out("b", "c");
    let procs = processes(
        "[process.b]\nhost = \"192.0.2.1\"\nlaunch = \"env x\"\n[process.c]\nhost = \"192.0.2.1\"\nlaunch = \"env x\"\n",
    );
    let placement = place(&graph, &settings, &procs).unwrap();
    let s = split(
        &graph,
        &settings,
        &placement,
        &procs,
        "t",
        Transport::Zmq,
        &mut CountingKeys(0),
    )
    .unwrap();
    let mut endpoints: Vec<&str> = s.links.iter().map(|l| l.endpoint.as_str()).collect();
    endpoints.sort();
    // Each link binds its port and the next one (its watch connection): no two share either.
    assert_eq!(endpoints, ["tcp://192.0.2.1:28600", "tcp://192.0.2.1:28602"]);
}

#[test]
fn links_that_need_ports_past_65535_are_refused_at_the_port_key() {
    // B and C on one host from port 65533: the second pair of ports is missing.
    let (graph, settings) = fan_out("b", "b");
    let procs = processes("[process.b]\nhost = \"192.0.2.1\"\nlaunch = \"env x\"\nport = 65533\n");
    let placement = place(&graph, &settings, &procs).unwrap();
    let err = split(
        &graph,
        &settings,
        &placement,
        &procs,
        "t",
        Transport::Zmq,
        &mut CountingKeys(0),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "d.toml:1: key 'port': process 'b': its links take two tcp ports each from port 65533 up, and the ports \
         below 65536 are too few for them all: give it a lower `port`"
    );
}

#[test]
fn a_temporal_firewall_cannot_be_cut() {
    let (mut graph, settings) = net();
    graph.edges[1].timing = Timing::TimeTriggered;
    let procs = processes("[process.p]\n");
    let placement = place(&graph, &settings, &procs).unwrap();
    let problems = cut_problems(&graph, &settings, &placement);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].line, 3);
    assert!(problems[0].message.contains("temporal firewall"), "{problems:?}");
    assert!(
        problems[0]
            .message
            .ends_with("(B#2 has process = \"p\" at built-in default)"),
        "{problems:?}"
    );
}

#[test]
fn a_consumer_here_without_a_host_is_refused_when_its_producer_is_on_another_machine() {
    // A on host p feeds B in main: main's links would be dialled at p's own loopback.
    let (graph, mut settings) = net();
    settings[0].process = Some(("p".into(), Place::BuiltIn));
    settings[2].process = None;
    let far = "[process.p]\nhost = \"192.0.2.1\"\nlaunch = \"env x\"\n";
    let err = place(&graph, &settings, &processes(far)).unwrap_err().to_string();
    assert!(
        err.starts_with("d.toml:1: key 'host': process 'main' has no `host`"),
        "{err}"
    );
    assert!(
        err.contains("channel smx_rn#1.data -> B#2.data comes to it from process 'p' on 192.0.2.1"),
        "{err}"
    );
    // Declared without a host, the consumer's own table is the place to fix.
    let err = place(&graph, &settings, &processes(&format!("{far}[process.main]\n"))).unwrap_err();
    assert!(
        err.to_string().starts_with("d.toml:4: key 'host': process 'main'"),
        "{err}"
    );
    // A loopback address is no better: the producer there would dial its own.
    let loopback = place(
        &graph,
        &settings,
        &processes(&format!("{far}[process.main]\nhost = \"127.0.0.1\"\n")),
    );
    let err = loopback.unwrap_err().to_string();
    assert!(err.contains("has host = \"127.0.0.1\", a loopback address"), "{err}");
    // With the address the producer reaches this machine at, the link can be made (where this
    // machine has a route there: a route lookup sends nothing).
    let here = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("192.0.2.1:9").and_then(|()| s.local_addr()))
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_unspecified() && !ip.is_loopback());
    if let Some(here) = here {
        let placement = place(
            &graph,
            &settings,
            &processes(&format!("{far}[process.main]\nhost = \"{here}\"\n")),
        );
        assert_eq!(placement.unwrap().process_of, vec!["p", "p", "main"]);
    }
    // The other way round the producer here dials the far host: nothing to say.
    settings[0].process = None;
    settings[2].process = Some(("p".into(), Place::BuiltIn));
    assert!(place(&graph, &settings, &processes(far)).is_ok());
}

#[test]
fn an_undeclared_process_is_refused_where_it_was_named() {
    let (graph, mut settings) = net();
    settings[2].process = Some((
        "q".into(),
        Place::File {
            path: "d.toml".into(),
            line: 9,
        },
    ));
    let err = place(&graph, &settings, &processes("[process.p]\n")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "d.toml:9: key 'process' of net 'B': unknown process 'q' (valid: main, p)"
    );
    // A name a letter or two from a declared one says which.
    settings[2].process = Some(("mian".into(), Place::BuiltIn));
    let err = place(&graph, &settings, &processes("[process.p]\n")).unwrap_err();
    assert!(
        err.to_string().contains("unknown process 'mian'; did you mean 'main'?"),
        "{err}"
    );
}

#[test]
fn processes_of_one_machine_share_memory_when_the_link_boxes_are_there() {
    let (graph, settings) = net();
    let procs = processes("[process.p]\n");
    let placement = place(&graph, &settings, &procs).unwrap();
    let s = split(
        &graph,
        &settings,
        &placement,
        &procs,
        "t",
        Transport::Shm,
        &mut CountingKeys(0),
    )
    .unwrap();
    let link = &s.links[0];
    assert_eq!((link.transport, link.curve), (Transport::Shm, false));
    assert_eq!(s.slices[0].graph.nodes[2].func, smx_deploy::slice::SHM_SINK);
    assert_eq!(s.slices[1].graph.nodes[1].func, smx_deploy::slice::SHM_SOURCE);
    assert!(link.endpoint.starts_with("/dev/shm/smx-t-"), "{}", link.endpoint);
    // Both ends name the one file; the producer's end makes the ring of three quarters of the
    // channel's length, and the consumer's half of the channel holds a quarter.
    let path = format!("link1_in#1.path={}", link.endpoint);
    assert!(s.slices[1].sets.contains(&path), "{:?}", s.slices[1].sets);
    let path = format!("link1_out#2.path={}", link.endpoint);
    assert!(s.slices[0].sets.contains(&path), "{:?}", s.slices[0].sets);
    assert!(
        s.slices[0].sets.contains(&"link1_out#2.len=3".to_string()),
        "{:?}",
        s.slices[0].sets
    );
    let half = |slice: usize, link_box: usize| {
        let edges = &s.slices[slice].graph.edges;
        let half = edges.iter().find(|e| e.source == link_box || e.target == link_box);
        half.expect("the link box's half of the channel").len
    };
    assert_eq!(half(0, 2), 1, "the producer's half");
    assert_eq!(half(1, 1), 1, "the consumer's half");
    // Between hosts it is still ZeroMQ.
    let procs = processes("[process.p]\nhost = \"192.0.2.1\"\nlaunch = \"env x\"\n");
    let placement = place(&graph, &settings, &procs).unwrap();
    let s = split(
        &graph,
        &settings,
        &placement,
        &procs,
        "t",
        Transport::Shm,
        &mut CountingKeys(0),
    )
    .unwrap();
    assert_eq!(s.links[0].transport, Transport::Zmq);
}

#[test]
fn a_pin_list_is_shared_out_among_the_processes_here_as_the_machines_cores_are() {
    let (graph, settings) = net();
    let procs = processes("[process.p]\n");
    let d = Deployment::new(&graph, &settings, &procs, "t", &smx_runtime::Registry::default()).unwrap();
    let common = ["--pin".to_string(), "0,1".to_string()];
    let pins: Vec<String> = d
        .jobs(&common)
        .iter()
        .map(|(_, job)| {
            let at = job.args.iter().position(|a| a == "--pin").expect("a --pin");
            assert_eq!(job.args.iter().filter(|a| *a == "--pin").count(), 1, "{:?}", job.args);
            job.args[at + 1].clone()
        })
        .collect();
    // Each process its own core of the list, not the whole list each, where every process
    // would begin on core 0.
    assert_eq!(pins, ["0", "1"]);
    // `off` and `auto` are not lists: nothing to share.
    let off = ["--pin".to_string(), "off".to_string()];
    assert!(
        d.jobs(&off)
            .iter()
            .all(|(_, job)| job.args.windows(2).any(|w| w == ["--pin", "off"]))
    );
}
