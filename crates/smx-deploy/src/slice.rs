//! Cutting a placed net into one graph per process, with a link at every cut.
//!
//! A channel whose ends are in different processes becomes a link-sink box in the producer's
//! slice, fed by the channel's producer side (its kind and length kept there), and a
//! link-source box in the consumer's slice that feeds the consumer side. Nothing else of the
//! net changes: every other node keeps its label, implementation, ports and settings, which
//! reach the slice as `--set LABEL#ID.key=value` on its new ids.

use serde::{Deserialize, Serialize};
use smx_box::ConfigValue;
use smx_graph::{Edge, Location, NetGraph, Node, NodeKind, PortDecl, PortMode, TimeSpec, Timing};
use smx_runtime::config::NetSettings;

use crate::placement::Placement;
use crate::processes::{Process, Processes};

/// How a link carries messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// Shared memory between two processes of one machine.
    Shm,
    /// ZeroMQ: over tcp between hosts (CURVE on), over ipc on one host.
    Zmq,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Shm => "shm",
            Transport::Zmq => "zmq",
        }
    }
}

/// One cut channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// The channel's id in the whole net.
    pub edge: usize,
    pub from_process: String,
    pub to_process: String,
    pub transport: Transport,
    pub endpoint: String,
    pub curve: bool,
    /// Whether message creation times of both ends are read from one clock.
    pub same_clock: bool,
    /// Labels of the link boxes in the two slices.
    pub sink_label: String,
    pub source_label: String,
}

/// What a node of a slice stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The node with this id in the whole net.
    Node(usize),
    /// The sending end of the link of this channel.
    LinkSink(usize),
    /// The receiving end of the link of this channel.
    LinkSource(usize),
}

/// The part of a net that runs in one process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slice {
    pub process: String,
    pub graph: NetGraph,
    /// Per slice node, what it stands for.
    pub origins: Vec<Origin>,
    /// Per slice edge, the channel of the whole net it is (or carries, at a link box).
    pub edges: Vec<usize>,
    /// The settings of every node, as `LABEL#ID.key=value` on slice ids.
    pub sets: Vec<String>,
}

/// The slices of a net and its links.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Split {
    pub slices: Vec<Slice>,
    pub links: Vec<Link>,
}

/// Key material of one run's tcp links: made fresh per run, handed to the slices through
/// their control pipes (or written with mode 0600 by `smxrun split`).
pub trait Keys {
    /// A fresh key pair as Z85 (public, secret).
    fn pair(&mut self) -> Result<(String, String), String>;
}

/// CURVE key pairs from libsodium, as `smxrun keygen` makes them.
pub struct CurveKeys;

impl Keys for CurveKeys {
    fn pair(&mut self) -> Result<(String, String), String> {
        let (public, secret) = smx_zmq::curve::generate()?;
        Ok((smx_zmq::curve::encode(&public), smx_zmq::curve::encode(&secret)))
    }
}

/// The names of the shared-memory link boxes, used between processes of one machine when the
/// registry has them (else ZeroMQ over ipc).
pub const SHM_SINK: &str = "smx_link_shm_snk";
pub const SHM_SOURCE: &str = "smx_link_shm_src";

/// Where the shared-memory links' files are made (a tmpfs: memory, not disk).
pub const SHM_DIR: &str = "/dev/shm";
/// How the names of the links' files in [`SHM_DIR`] begin.
pub const SHM_PREFIX: &str = "smx-";

/// The largest message a shared-memory link carries: 64 MiB.
pub const SHM_MAX_PAYLOAD: u64 = 64 << 20;

/// Cuts `graph` into one slice per used process. `run` makes the run's local endpoints unique
/// (two runs on one machine never share one); `same_machine` is the transport between
/// processes of one machine.
pub fn split(
    graph: &NetGraph,
    settings: &[NetSettings],
    placement: &Placement,
    processes: &Processes,
    run: &str,
    same_machine: Transport,
    keys: &mut dyn Keys,
) -> Result<Split, String> {
    let mut slices: Vec<Slice> = placement
        .used()
        .into_iter()
        .map(|process| Slice {
            process,
            graph: NetGraph::default(),
            origins: Vec::new(),
            edges: Vec::new(),
            sets: Vec::new(),
        })
        .collect();
    let names: Vec<String> = slices.iter().map(|s| s.process.clone()).collect();
    let slot = |name: &str| names.iter().position(|s| s == name).expect("used process");
    let mut new_id = vec![0usize; graph.nodes.len()];
    let mut owner = vec![0usize; graph.nodes.len()];
    for node in &graph.nodes {
        let s = slot(&placement.process_of[node.id]);
        let slice = &mut slices[s];
        let id = slice.graph.nodes.len();
        slice.graph.nodes.push(Node { id, ..node.clone() });
        slice.origins.push(Origin::Node(node.id));
        slice.sets.extend(settings_sets(&node.label, id, &settings[node.id]));
        new_id[node.id] = id;
        owner[node.id] = s;
    }
    let mut links = Vec::new();
    let mut ports = TcpPorts::default();
    for edge in &graph.edges {
        let (a, b) = (owner[edge.source], owner[edge.target]);
        if a == b {
            let slice = &mut slices[a];
            let id = slice.graph.edges.len();
            slice.graph.edges.push(Edge {
                id,
                source: new_id[edge.source],
                target: new_id[edge.target],
                ..edge.clone()
            });
            slice.edges.push(edge.id);
            continue;
        }
        let from = processes.get(&slices[a].process).expect("placed on a declared process");
        let to = processes.get(&slices[b].process).expect("placed on a declared process");
        let link = plan_link(edge, from, to, run, same_machine, &mut ports)?;
        let (sink_sets, source_sets) = link_settings(&link, edge, keys)?;
        add_link_end(&mut slices[a], &link, edge, new_id[edge.source], &sink_sets, true);
        add_link_end(&mut slices[b], &link, edge, new_id[edge.target], &source_sets, false);
        links.push(link);
    }
    Ok(Split { slices, links })
}

/// Transport and endpoint of the link of `edge`. The consumer's side binds, so a producer that
/// starts first waits for it instead of losing what it sends.
fn plan_link(
    edge: &Edge,
    from: &Process,
    to: &Process,
    run: &str,
    local: Transport,
    ports: &mut TcpPorts,
) -> Result<Link, String> {
    let same_machine = from.machine() == to.machine();
    let transport = if same_machine { local } else { Transport::Zmq };
    let (endpoint, curve) = if same_machine && transport == Transport::Shm {
        (format!("{SHM_DIR}/{SHM_PREFIX}{run}-{}", edge.id), false)
    } else if same_machine {
        (format!("ipc://smx-{run}-{}", edge.id), false)
    } else {
        // A consumer here without a host is fed only from here (`placement` refuses the rest).
        let host = to.host.as_deref().unwrap_or("127.0.0.1");
        // Every process here outside a network namespace binds in this machine's one port
        // space, whatever its table calls this machine (`localhost`, nothing, an address).
        let space = if to.shares_this_loopback() {
            "this machine"
        } else {
            host
        };
        let port = ports.take_pair(space, to.port).ok_or_else(|| {
            let place = match &to.origin {
                smx_runtime::config::Origin::BuiltIn => String::new(),
                at => format!("{at}: "),
            };
            format!(
                "{place}key 'port': process '{}': its links take two tcp ports each from port {} up, and the \
                 ports below 65536 are too few for them all: give it a lower `port`",
                to.name, to.port
            )
        })?;
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        (format!("tcp://{host}:{port}"), true)
    };
    Ok(Link {
        edge: edge.id,
        from_process: from.name.clone(),
        to_process: to.name.clone(),
        transport,
        endpoint,
        curve,
        // Network namespaces of one machine share its kernel's monotonic clock.
        same_clock: same_machine || (from.on_this_machine() && to.on_this_machine()),
        sink_label: format!("link{}_out", edge.id),
        source_label: format!("link{}_in", edge.id),
    })
}

/// The tcp ports the links bind, per port space (a host, or this machine). Two processes on
/// one host whose tables give the same first `port` (both the default, say) would otherwise
/// bind the same ones.
#[derive(Debug, Default)]
struct TcpPorts(std::collections::HashSet<(String, u16)>);

impl TcpPorts {
    /// Takes the first port from `first` up on `host` that is free together with the next one
    /// (two per link: the messages', and the watch connection's beside it); `None` when the
    /// ports up to 65535 are all taken.
    fn take_pair(&mut self, host: &str, first: u16) -> Option<u16> {
        let free = |p: u16| !self.0.contains(&(host.to_string(), p));
        let port = (first..u16::MAX).find(|&p| free(p) && free(p + 1))?;
        self.0.insert((host.to_string(), port));
        self.0.insert((host.to_string(), port + 1));
        Some(port)
    }
}

/// The endpoint of the watch connection of a link at `endpoint`: over tcp the port after its
/// own, over ipc a path beside its own.
fn watch_endpoint(endpoint: &str) -> Result<String, String> {
    if endpoint.starts_with("ipc://") {
        return Ok(format!("{endpoint}-watch"));
    }
    let (host, port) = endpoint
        .rsplit_once(':')
        .and_then(|(host, port)| Some((host, port.parse::<u16>().ok()?)))
        .ok_or_else(|| format!("a link endpoint without a port: {endpoint}"))?;
    let next = port
        .checked_add(1)
        .ok_or_else(|| format!("{endpoint}: no port left after {port} for the link's watch connection"))?;
    Ok(format!("{host}:{next}"))
}

/// The ZeroMQ heartbeat of a link between hosts: a peer silent for three of them is cut, and
/// each end gives up one more later, so a lost host ends the run within two seconds.
pub const LINK_HEARTBEAT: std::time::Duration = std::time::Duration::from_millis(200);

/// How long a link's sink may wait at its end for its receiver to take what is in flight.
pub const LINK_LINGER: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The configuration of the two link boxes as `key=value`, CURVE keys made here.
fn link_settings(link: &Link, edge: &Edge, keys: &mut dyn Keys) -> Result<(Vec<String>, Vec<String>), String> {
    if link.transport == Transport::Shm {
        // One ring in a file of this run, of the channel's length less what the consumer's
        // half holds (`shm_lengths`); slots hold the largest message a link carries (the file
        // is sparse: a slot costs only what its messages fill), or less where that many slots
        // of it would not fit in the room of /dev/shm (a long channel, a container's small
        // /dev/shm), which the sink says when it starts.
        let path = format!("path={}", link.endpoint);
        let sink = vec![
            path.clone(),
            format!("len={}", shm_lengths(edge.len, edge.ddst).ring),
            format!("max_payload={SHM_MAX_PAYLOAD}"),
            "shrink_to_fit=true".to_string(),
        ];
        return Ok((sink, vec![path]));
    }
    let mut sink = vec![
        "pattern=pipeline".to_string(),
        format!("endpoint={}", link.endpoint),
        "bind=false".to_string(),
    ];
    let mut source = vec![
        "pattern=pipeline".to_string(),
        format!("endpoint={}", link.endpoint),
        "bind=true".to_string(),
        "senders=1".to_string(),
    ];
    // A host that drops off the network answers nothing, not even a close: heartbeats find it,
    // so that both ends of the link give up within about a second (see `LINK_HEARTBEAT`). They
    // run on a connection of their own beside the messages' (the next port), where a consumer
    // that holds back its producer for a while is never taken for a lost one.
    let watch = watch_endpoint(&link.endpoint)?;
    for side in [&mut sink, &mut source] {
        side.push(format!("heartbeat={}ms", LINK_HEARTBEAT.as_millis()));
        side.push(format!("watch={watch}"));
    }
    // So the sink's end waits for its receiver as long as the receiver lives, as a write into
    // a full channel waits in one process: a slow consumer still taking what the network
    // buffered would otherwise miss the end of a fixed linger and fail a run that lost nothing.
    // A lost receiver (the heartbeats) and the run's stop end the wait.
    sink.push(format!("linger={}s", LINK_LINGER.as_secs()));
    // The receiver is the link's other box, whose row the report merges with this one's.
    sink.push("receiver_books=true".to_string());
    // The source judges a tcp endpoint's clock by its address; the deployment knows better.
    if link.same_clock {
        source.push("clock=comparable".to_string());
    }
    // A coupled channel holds back its producer when full: the link's queues are kept to the
    // channel's length on both sides, so the producer is held back after a bounded number more.
    if !edge.dsrc {
        sink.push(format!("hwm={}", edge.len.max(1)));
        source.push(format!("hwm={}", edge.len.max(1)));
    }
    if link.curve {
        let (server_public, server_secret) = keys.pair()?;
        let (client_public, client_secret) = keys.pair()?;
        source.push(format!("curve_secret={server_secret}"));
        source.push(format!("curve_clients={client_public}"));
        sink.push(format!("curve_server={server_public}"));
        sink.push(format!("curve_secret={client_secret}"));
    }
    Ok((sink, source))
}

/// One end of a link in its slice: the box, its settings, and the half of the channel it ends
/// or starts (`node`: the producer or the consumer in this slice).
fn add_link_end(slice: &mut Slice, link: &Link, edge: &Edge, node: usize, sets: &[String], sink: bool) {
    let (label, origin) = if sink {
        (&link.sink_label, Origin::LinkSink(edge.id))
    } else {
        (&link.source_label, Origin::LinkSource(edge.id))
    };
    let id = add_link_box(slice, label, link.transport, origin, sink);
    slice.sets.extend(sets.iter().map(|kv| format!("{label}#{id}.{kv}")));
    if sink {
        push_edge(slice, edge, node, id, true);
    } else {
        push_edge(slice, edge, id, node, false);
    }
    let coupled = if sink { !edge.dsrc } else { !edge.ddst };
    if link.transport == Transport::Shm && coupled {
        let half = slice.graph.edges.last_mut().expect("just pushed");
        half.len = if sink {
            1
        } else {
            shm_lengths(edge.len, edge.ddst).consumer_half
        };
        half.len_declared = true;
    }
}

/// How a channel's length is shared out over a shared-memory link: the ring, and the coupled
/// channel from the link's source box to the consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ShmLengths {
    ring: u32,
    /// The consumer's half, when it is coupled (a decoupled one keeps the channel's length).
    consumer_half: u32,
}

/// Together the ring, the consumer's half and the producer's half (one message) hold the
/// channel's length and one more, so the producer is held back across the cut about where it
/// would be in one process. The consumer's half takes a quarter of the length: a chain there
/// (the link's source box and the consumer on one thread) then steps the consumer once per
/// batch of messages instead of once per message, which is what limited the link's rate, and
/// the ring keeps the rest, room for the producer while the consumer's chain works through a
/// batch (the performance page has the figures of a quarter against a half). The producer's
/// half keeps one message: its box's writes go into the ring from the write itself
/// (`SpecBuilder::passes_on`).
fn shm_lengths(len: u32, consumer_decoupled: bool) -> ShmLengths {
    let len = len.max(1);
    if consumer_decoupled {
        return ShmLengths {
            ring: len.min(SHM_RING_MAX_LEN),
            consumer_half: len,
        };
    }
    // The ring holds at most its most slots; a longer channel keeps the rest on the consumer's
    // side, in its own process, where a channel may be as long as in one process.
    let consumer_half = (len / 4).max(1).max(len.saturating_sub(SHM_RING_MAX_LEN));
    ShmLengths {
        ring: (len - consumer_half).max(1),
        consumer_half,
    }
}

/// The most slots a link's ring gets. A ring's slots shrink to the room of /dev/shm, down to
/// 64 KiB each (`smx-shm`), so a ring much longer than this would not fit beside the memory of
/// a machine; the rest of a longer channel waits on the consumer's side, in its own process,
/// as in one process. Channels up to 87,381 long keep three quarters in the ring as before,
/// and the ring's depth is long past what throughput needs (`tests/deploy.rs` runs one).
const SHM_RING_MAX_LEN: u32 = 1 << 16;

fn add_link_box(slice: &mut Slice, label: &str, transport: Transport, origin: Origin, sink: bool) -> usize {
    let id = slice.graph.nodes.len();
    let (func, mode) = match (transport, sink) {
        (Transport::Shm, true) => (SHM_SINK, PortMode::In),
        (Transport::Shm, false) => (SHM_SOURCE, PortMode::Out),
        (Transport::Zmq, true) => ("smx_snk_zmq", PortMode::In),
        (Transport::Zmq, false) => ("smx_src_zmq", PortMode::Out),
    };
    slice.graph.nodes.push(Node {
        id,
        label: label.to_string(),
        func: func.to_string(),
        kind: NodeKind::Box,
        is_static: false,
        pure: false,
        location: Location::Extern,
        priority: 0,
        line: 0,
        ports: vec![PortDecl {
            name: "data".to_string(),
            mode,
            class: None,
            decoupled: false,
            open: false,
            dynamic: false,
            alt_name: None,
        }],
    });
    slice.origins.push(origin);
    id
}

/// The producer's half of a cut channel (into the link sink) or the consumer's half (out of
/// the link source): each half keeps its own side's kind and the channel's length.
fn push_edge(slice: &mut Slice, edge: &Edge, source: usize, target: usize, producer_half: bool) {
    let id = slice.graph.edges.len();
    let half = if producer_half {
        Edge {
            target_port: "data".to_string(),
            ndst: None,
            ddst: false,
            dyndst: false,
            dst_time: TimeSpec::default(),
            ..edge.clone()
        }
    } else {
        Edge {
            source_port: "data".to_string(),
            nsrc: None,
            dsrc: false,
            dynsrc: false,
            src_time: TimeSpec::default(),
            ..edge.clone()
        }
    };
    slice.graph.edges.push(Edge {
        id,
        source,
        target,
        timing: Timing::None,
        ..half
    });
    slice.edges.push(edge.id);
}

/// A node's resolved settings as `LABEL#ID.key=value`, so that the slice's process applies
/// exactly what this one resolved (defaults included) without reading the file again.
pub fn settings_sets(label: &str, id: usize, settings: &NetSettings) -> Vec<String> {
    let target = format!("{label}#{id}");
    let mut sets: Vec<String> = settings
        .box_config
        .values
        .iter()
        .map(|(key, value)| format!("{target}.{key}={}", value_text(value)))
        .collect();
    let runtime = [
        ("core", settings.core.map(|c| c.to_string())),
        ("priority", settings.priority.map(|p| p.to_string())),
        ("nice", settings.nice.map(|n| n.to_string())),
        ("expected_rate", settings.expected_rate.map(|r| r.to_string())),
    ];
    sets.extend(
        runtime
            .into_iter()
            .filter_map(|(key, value)| Some(format!("{target}.{key}={}", value?))),
    );
    sets
}

fn value_text(value: &ConfigValue) -> String {
    match value {
        ConfigValue::Int(n) => n.to_string(),
        ConfigValue::Float(f) => format!("{f:?}"),
        ConfigValue::Bool(b) => b.to_string(),
        ConfigValue::Str(s) => s.clone(),
        ConfigValue::Duration(d) => format!("{}ns", d.as_nanos()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_memory_link_shares_its_channels_length_between_ring_and_consumer() {
        let split = |len| {
            let l = shm_lengths(len, false);
            (l.ring, l.consumer_half)
        };
        assert_eq!(split(64), (48, 16));
        assert_eq!(split(5), (4, 1));
        assert_eq!(split(3), (2, 1));
        assert_eq!(split(2), (1, 1));
        // Neither ever holds nothing; a length of 0 is taken as 1.
        assert_eq!(split(1), (1, 1));
        assert_eq!(split(0), (1, 1));
        // A decoupled consumer's half keeps the channel's meaning: the whole length, as the ring.
        let decoupled = shm_lengths(64, true);
        assert_eq!((decoupled.ring, decoupled.consumer_half), (64, 64));
        // Past the ring's most slots, the rest stays on the consumer's side.
        assert_eq!(split(1_500_000), (SHM_RING_MAX_LEN, 1_500_000 - SHM_RING_MAX_LEN));
        assert_eq!(split(4 * SHM_RING_MAX_LEN), (SHM_RING_MAX_LEN, 3 * SHM_RING_MAX_LEN));
        let decoupled = shm_lengths(1_500_000, true);
        assert_eq!((decoupled.ring, decoupled.consumer_half), (SHM_RING_MAX_LEN, 1_500_000));
    }
}
