//! Which process each node of a net runs in, and which channels cannot cross a cut.

use smx_graph::{Edge, NetGraph, NodeKind, Timing};
use smx_runtime::config::{ConfigError, NetSettings, Origin};

use crate::processes::{MAIN, Process, Processes};

/// The process of every node, by node id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub process_of: Vec<String>,
}

impl Placement {
    /// The processes the net actually uses, in the order of their first node.
    pub fn used(&self) -> Vec<String> {
        let mut used: Vec<String> = Vec::new();
        for p in &self.process_of {
            if !used.contains(p) {
                used.push(p.clone());
            }
        }
        used
    }

    /// The channels whose two ends are in different processes.
    pub fn cuts<'g>(&self, graph: &'g NetGraph) -> Vec<&'g Edge> {
        graph
            .edges
            .iter()
            .filter(|e| self.process_of[e.source] != self.process_of[e.target])
            .collect()
    }

    pub fn is_split(&self) -> bool {
        self.used().len() > 1
    }
}

/// Places every node: its `process` setting, else `main`. A routing node that names no process
/// goes where its feeders are; a fan-in whose feeders are in different processes goes where its
/// one consumer is. Either way a message between two boxes crosses at most one cut, where a
/// fan-in placed with one of its feeders would carry the others' messages over two. A process
/// that the configuration does not declare is an error at the place the `process` key was
/// written.
pub fn place(graph: &NetGraph, settings: &[NetSettings], processes: &Processes) -> Result<Placement, ConfigError> {
    let mut process_of: Vec<Option<String>> = vec![None; graph.nodes.len()];
    for (node, s) in graph.nodes.iter().zip(settings) {
        if let Some((name, origin)) = &s.process {
            if processes.get(name).is_none() {
                let names = processes.names();
                let unknown = match (names.len(), smx_runtime::config::nearest(name, &names)) {
                    (_, Some(known)) => format!("unknown process '{name}'; did you mean '{known}'?"),
                    // Only `main`: perhaps no --config, or one that declares no process.
                    (1, None) => format!(
                        "unknown process '{name}': declare it with a [process.{name}] table in the --config file"
                    ),
                    _ => format!("unknown process '{name}'"),
                };
                // By its name, as the other errors of a `[net.NAME]` table name it, and with its
                // id where the name stands for several nodes, as `--set` and the report name them.
                // A line that set it for several nets (`[default]`, `[impl.NAME]`) names them all.
                let shared = |label: &str| graph.nodes.iter().filter(|n| n.label == label).count() > 1;
                let named = |n: &smx_graph::Node| match shared(&n.label) {
                    true => format!("{}#{}", n.label, n.id),
                    false => n.label.clone(),
                };
                let set_there: Vec<String> = graph
                    .nodes
                    .iter()
                    .zip(settings)
                    .filter(|(_, s)| s.process.as_ref().is_some_and(|(_, at)| at == origin))
                    .map(|(n, _)| named(n))
                    .collect();
                let err = match set_there.as_slice() {
                    [_] | [] => ConfigError::new(origin.clone(), unknown).net(named(node)),
                    many => ConfigError::new(
                        origin.clone(),
                        format!(
                            "{unknown} (this line sets it for {} nets: {})",
                            many.len(),
                            listed(many)
                        ),
                    ),
                };
                return Err(err.key("process").choices(processes.names()));
            }
            process_of[node.id] = Some(name.clone());
        }
    }
    for node in graph.nodes.iter().filter(|n| n.kind != NodeKind::RoutingNode) {
        process_of[node.id].get_or_insert_with(|| MAIN.to_string());
    }
    let routing: Vec<usize> = graph
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::RoutingNode)
        .map(|n| n.id)
        .collect();
    // As far as chains of routing nodes reach; one whose neighbours never settle (routing
    // nodes feeding each other) follows its first feeder, or runs in `main`.
    for _ in 0..graph.nodes.len() {
        let mut changed = false;
        for &node in &routing {
            if process_of[node].is_none()
                && let Some(found) = routing_place(graph, &process_of, node)
            {
                process_of[node] = Some(found);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for &node in &routing {
        if process_of[node].is_none() {
            let feeder = graph.edges.iter().find(|e| e.target == node).map(|e| e.source);
            process_of[node] = feeder.and_then(|f| process_of[f].clone());
        }
    }
    let placement = Placement {
        process_of: process_of
            .into_iter()
            .map(|p| p.unwrap_or_else(|| MAIN.to_string()))
            .collect(),
    };
    // Which addresses are this machine's is asked of the machine that starts the processes.
    if !processes.as_planned() {
        check_resolvable(graph, &placement, processes)?;
        check_reachable(graph, &placement, processes)?;
        check_routes(graph, &placement, processes)?;
    }
    check_cores(graph, settings, &placement, processes)?;
    Ok(placement)
}

/// Each cut channel with the processes of its producer and its consumer.
fn cut_processes<'a>(
    graph: &'a NetGraph,
    placement: &'a Placement,
    processes: &'a Processes,
) -> impl Iterator<Item = (&'a Edge, &'a Process, &'a Process)> {
    placement.cuts(graph).into_iter().filter_map(|e| {
        let from = processes.get(&placement.process_of[e.source])?;
        let to = processes.get(&placement.process_of[e.target])?;
        Some((e, from, to))
    })
}

/// Where an error about the consumer's `host` points: its `host` key, else its table, else
/// (an undeclared `main`) the producer's table.
fn host_line(from: &Process, to: &Process) -> Origin {
    match (&to.host_origin, &to.origin) {
        (Some(at), _) => at.clone(),
        (None, Origin::BuiltIn) => from.origin.clone(),
        (None, table) => table.clone(),
    }
}

/// The first few of `names`, and how many more.
fn listed(names: &[String]) -> String {
    const SHOWN: usize = 4;
    let mut text = names.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// A net's own `core` must be one of its process's `cores`, which are all the cores that
/// process's threads may use: the net would otherwise run where its process said it may not
/// (and another process's threads may be placed there).
fn check_cores(
    graph: &NetGraph,
    settings: &[NetSettings],
    placement: &Placement,
    processes: &Processes,
) -> Result<(), ConfigError> {
    for (node, s) in graph.nodes.iter().zip(settings) {
        let Some(core) = s.core else { continue };
        let Some(process) = processes.get(&placement.process_of[node.id]) else {
            continue;
        };
        let Some(cores) = process.cores.as_ref().filter(|cores| !cores.contains(&core)) else {
            continue;
        };
        let listed: Vec<String> = cores.iter().map(usize::to_string).collect();
        // At the `core` that names a core the process lacks, where the fix goes most often.
        let origin = s
            .core_origin
            .clone()
            .unwrap_or_else(|| s.process.as_ref().map_or(process.origin.clone(), |(_, at)| at.clone()));
        return Err(ConfigError::new(
            origin,
            format!(
                "core {core} is not one of the cores of process '{}' ({}), where this net runs: give it one of \
                 those, or add {core} to them",
                process.name,
                listed.join(", ")
            ),
        )
        .net(&node.label)
        .key("core"));
    }
    Ok(())
}

/// A consumer's `host` that is a name must resolve where it is used: its own process binds
/// it and its producer's process dials it. A process without `launch` resolves names here, so
/// a name this machine cannot resolve (a typo, most often) is an error before the start rather
/// than a refused process after it. Where both ends are started elsewhere, only their machines
/// can tell.
fn check_resolvable(graph: &NetGraph, placement: &Placement, processes: &Processes) -> Result<(), ConfigError> {
    let mut asked: Vec<&str> = Vec::new();
    for (e, from, to) in cut_processes(graph, placement, processes) {
        let (a, b) = (&from.name, &to.name);
        let Some(host) = to.host.as_deref().filter(|h| h.parse::<std::net::IpAddr>().is_err()) else {
            continue;
        };
        let user = match (to.launch.is_none(), from.launch.is_none()) {
            (true, _) => format!("where process '{b}' binds it"),
            (false, true) => format!("where process '{a}' dials it"),
            (false, false) => continue,
        };
        if asked.contains(&host) || resolves(host) {
            asked.push(host);
            continue;
        }
        return Err(ConfigError::new(
            host_line(from, to),
            format!(
                "process '{b}' has host = \"{host}\", a name this machine cannot resolve, {user} for channel {}: \
                 give [process.{b}] an address (host = \"192.0.2.7\") or a name this machine resolves",
                channel_name(graph, e)
            ),
        )
        .key("host"));
    }
    Ok(())
}

/// Whether `host` resolves to at least one address here.
fn resolves(host: &str) -> bool {
    use std::net::ToSocketAddrs;
    (host, 0)
        .to_socket_addrs()
        .is_ok_and(|mut addresses| addresses.next().is_some())
}

/// A producer in a network namespace dials its consumer's `host` from there: an address the
/// namespace has no route to (this machine's address on another network, most often) would
/// leave the link silent until its timeout. Asked of the namespace itself, by a route lookup
/// from a thread that enters it; where it cannot be entered nothing is said.
fn check_routes(graph: &NetGraph, placement: &Placement, processes: &Processes) -> Result<(), ConfigError> {
    for (e, from, to) in cut_processes(graph, placement, processes) {
        let (a, b) = (&from.name, &to.name);
        let (Some(launch), Some(host)) = (from.launch.as_deref(), to.host.as_deref()) else {
            continue;
        };
        let Some((namespace, false)) = crate::processes::in_its_namespace(launch, || routed(host)) else {
            continue;
        };
        return Err(ConfigError::new(
            host_line(from, to),
            format!(
                "process '{b}' has host = \"{host}\", but process '{a}' runs in network namespace '{namespace}', \
                 which has no route to it, and channel {} comes from there: give [process.{b}] an address that \
                 '{namespace}' reaches (`ip netns exec {namespace} ip route` shows where it can go)",
                channel_name(graph, e)
            ),
        )
        .key("host"));
    }
    Ok(())
}

/// Whether this thread's network has a route to `host` (a route lookup: connecting a UDP
/// socket sends nothing). A name that does not resolve counts as routed: another check says
/// what is wrong with it.
fn routed(host: &str) -> bool {
    !resolves(host) || route_address(host).is_some()
}

/// A link is bound by its consumer's process and dialled by its producer's at the consumer's
/// `host`. A process here without a `host` has only the loopback address to offer, which a
/// producer on another machine (or in a network namespace) would dial at home: its messages
/// would never arrive. So such a consumer must say the address the producer reaches it at.
fn check_reachable(graph: &NetGraph, placement: &Placement, processes: &Processes) -> Result<(), ConfigError> {
    for (e, from, to) in cut_processes(graph, placement, processes) {
        let (a, b) = (&from.name, &to.name);
        // A producer that does not share this machine's loopback dials its own there.
        let Some(far) = from.machine().filter(|_| !from.shares_this_loopback()) else {
            continue;
        };
        // A consumer here binds this machine's loopback without a host, with a loopback one
        // (also one started through a `launch`), or with a name this machine resolves to
        // loopback addresses alone (a hosts file may give the machine's own name 127.0.1.1).
        let named_loopback = to
            .host
            .as_deref()
            .filter(|host| to.launch.is_none() && !crate::processes::is_loopback(host))
            .and_then(loopback_alone);
        let loopback_here = match &to.host {
            None => to.launch.is_none(),
            Some(host) => crate::processes::is_loopback(host) || named_loopback.is_some(),
        };
        if !loopback_here {
            continue;
        }
        // An address the producer can dial: from a namespace, one it has a route to.
        let reached_from = |here: &std::net::IpAddr| {
            from.launch.as_deref().is_none_or(|launch| {
                crate::processes::in_its_namespace(launch, || routed(&here.to_string())).is_none_or(|(_, ok)| ok)
            })
        };
        let example = match route_address(far).filter(reached_from) {
            Some(here) => format!("host = \"{here}\" (this machine's address on its route to {far})"),
            None => "host = \"ADDRESS\" (an address of this machine that it reaches)".to_string(),
        };
        let origin = if to.origin == Origin::BuiltIn {
            from.origin.clone()
        } else {
            to.origin.clone()
        };
        let has = match (&to.host, &named_loopback) {
            (Some(host), Some(addresses)) => {
                format!("has host = \"{host}\", which resolves here to loopback addresses alone ({addresses})")
            }
            (Some(host), None) => format!("has host = \"{host}\", a loopback address"),
            (None, _) => "has no `host`".to_string(),
        };
        return Err(ConfigError::new(
            origin,
            format!(
                "process '{b}' {has}, but channel {} comes to it from process '{a}' on {far}, \
                 which would dial its own loopback address: give [process.{b}] the address {far} reaches this \
                 machine at, e.g. {example}",
                channel_name(graph, e)
            ),
        )
        .key("host"));
    }
    Ok(())
}

/// The addresses a host name resolves to here, when they are all loopback ones; `None` for an
/// address, a name with another address, or one that does not resolve.
fn loopback_alone(host: &str) -> Option<String> {
    use std::net::ToSocketAddrs;
    if host.parse::<std::net::IpAddr>().is_ok() {
        return None;
    }
    let addresses: Vec<std::net::IpAddr> = (host, 0).to_socket_addrs().ok()?.map(|a| a.ip()).collect();
    let mut listed: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    listed.dedup();
    (!addresses.is_empty() && addresses.iter().all(std::net::IpAddr::is_loopback)).then(|| listed.join(", "))
}

/// The address this machine sends from towards `host` (a route lookup: connecting a UDP
/// socket sends nothing); `None` without a route, or for a host name that does not resolve.
fn route_address(host: &str) -> Option<std::net::IpAddr> {
    use std::net::{ToSocketAddrs, UdpSocket};
    let peer = (host, 9).to_socket_addrs().ok()?.next()?;
    let any: std::net::IpAddr = if peer.is_ipv4() {
        std::net::Ipv4Addr::UNSPECIFIED.into()
    } else {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    };
    let socket = UdpSocket::bind((any, 0)).ok()?;
    socket.connect(peer).ok()?;
    Some(socket.local_addr().ok()?.ip()).filter(|ip| !ip.is_unspecified())
}

/// Where routing node `node` goes, once its neighbours are placed: with its feeders when they
/// are all in one process, else with its one consumer; `None` while that is not known yet.
fn routing_place(graph: &NetGraph, process_of: &[Option<String>], node: usize) -> Option<String> {
    let mut feeders = graph
        .edges
        .iter()
        .filter(|e| e.target == node)
        .map(|e| &process_of[e.source]);
    let Some(first) = feeders.next() else {
        return Some(MAIN.to_string());
    };
    let first = first.clone()?;
    let mut one_process = true;
    for other in feeders {
        match other {
            Some(p) if *p == first => {}
            Some(_) => one_process = false,
            None => return None,
        }
    }
    if one_process {
        return Some(first);
    }
    let mut consumers = graph.edges.iter().filter(|e| e.source == node).map(|e| e.target);
    match (consumers.next(), consumers.all(|_| false)) {
        (Some(consumer), true) => process_of[consumer].clone(),
        // Several consumers as well: some message crosses twice wherever it goes.
        _ => Some(first),
    }
}

/// A channel that cannot keep its meaning across a cut: the source line of its consumer and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutProblem {
    pub line: usize,
    pub message: String,
}

/// What a cut would change about a channel: a temporal firewall is kept by one runtime's clock
/// and schedule, and a dynamic port is wired at run time inside one process, so these are
/// refused before the start. A time-bounded channel is only marked, and keeps its mark. Each problem names the channel and its two processes,
/// and where the configuration placed its ends (`settings`: the nets' settings, by node id),
/// the other half of the mistake.
pub fn cut_problems(graph: &NetGraph, settings: &[NetSettings], placement: &Placement) -> Vec<CutProblem> {
    placement
        .cuts(graph)
        .into_iter()
        .filter_map(|e| {
            let why = match e.timing {
                Timing::TimeTriggered => {
                    "crosses a temporal firewall (tt): its logical execution time is kept by one process's \
                     executive and cannot span two processes; place both ends in one process"
                }
                Timing::None | Timing::TimeBounded if e.dynsrc || e.dyndst => {
                    "ends at a dynamic port, which is wired inside one process; place both ends in one process"
                }
                Timing::None | Timing::TimeBounded => return None,
            };
            let (from, to) = (&graph.nodes[e.source], &graph.nodes[e.target]);
            let placed: Vec<String> = [from, to]
                .into_iter()
                .filter_map(|node| {
                    let (name, at) = settings.get(node.id)?.process.as_ref()?;
                    Some(format!("{}#{} has process = \"{name}\" at {at}", node.label, node.id))
                })
                .collect();
            let placed = if placed.is_empty() {
                String::new()
            } else {
                format!(" ({})", placed.join(", "))
            };
            Some(CutProblem {
                line: to.line.max(from.line),
                message: format!(
                    "channel {} between processes '{}' and '{}' {why}{placed}",
                    channel_name(graph, e),
                    placement.process_of[e.source],
                    placement.process_of[e.target]
                ),
            })
        })
        .collect()
}

/// A channel as the report names its ends, `Src#0.data -> Snk#1.data`: a net's name alone may
/// stand for several of its instances.
fn channel_name(graph: &NetGraph, e: &Edge) -> String {
    let (from, to) = (&graph.nodes[e.source], &graph.nodes[e.target]);
    format!(
        "{}#{}.{} -> {}#{}.{}",
        from.label, from.id, e.source_port, to.label, to.id, e.target_port
    )
}
