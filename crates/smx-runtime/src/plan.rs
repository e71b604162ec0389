//! From a [`NetGraph`] to what will run: one [`NetPlan`] per thread and one [`ChannelPlan`]
//! per channel, checked against the registry before any thread exists.
//!
//! Everything that can reject a net happens here, so a rejected net never starts a thread.
//! Time-triggered edges are planned as ordinary channels of their declared kinds for now;
//! the temporal-firewall work hooks in here (`ChannelPlan::timing`) without touching the
//! executor.

use smx_box::{BoxConfig, BoxSpec, Ports};

use crate::Registry;
use crate::channel::ChannelKind;
use crate::config::NetSettings;
use crate::error::{BadValue, RunError};
use smx_graph::{NetGraph, NodeKind, PortMode, Timing};

use crate::RunOptions;

/// What a net's thread runs.
#[derive(Debug, Clone)]
pub enum Role {
    Box(BoxSpec),
    Routing,
}

/// One port of a net and the channel joined to it, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortPlan {
    pub name: String,
    pub channel: Option<usize>,
}

/// One net (thread).
#[derive(Debug, Clone)]
pub struct NetPlan {
    pub id: usize,
    pub name: String,
    pub implementation: String,
    pub role: Role,
    pub inputs: Vec<PortPlan>,
    pub outputs: Vec<PortPlan>,
    pub settings: NetSettings,
    /// Core to pin to (`None`: not pinned).
    pub core: Option<usize>,
    /// SCHED_FIFO level to ask for (`None`: normal scheduling).
    pub priority: Option<u8>,
    /// Its thread never waits and shares its core: it offers the core after each step
    /// ([`crate::chain::never_waiting`]).
    pub offers_core: bool,
}

impl NetPlan {
    /// The node as the report, the configuration (`[net."Snk#3"]`, `--set Snk#3.KEY=V`) and
    /// every warning spell it: instance and id, `Snk#3`. Also the thread's name.
    pub fn thread_name(&self) -> String {
        format!("{}#{}", self.name, self.id)
    }

    /// It runs at real-time priority for the language's sake (an `rt` or `tt` net under `--rt`
    /// on), not by a `priority` key, the user's own word, which `--rt auto` never takes back.
    pub fn real_time_by_language(&self) -> bool {
        self.settings.priority.is_none() && self.priority.is_some()
    }
}

/// One channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelPlan {
    pub id: usize,
    pub label: String,
    pub from: usize,
    pub to: usize,
    pub from_port: String,
    pub to_port: String,
    pub kind: ChannelKind,
    pub len: usize,
    /// The net declares its length (`in data[64]`): a default length (`--channel-len`) leaves
    /// it alone.
    pub len_declared: bool,
    pub timing: Timing,
    /// Period on the producer side of a time-triggered edge (zero: none).
    pub src_period: std::time::Duration,
    /// Period on the consumer side of a time-triggered edge (zero: none).
    pub dst_period: std::time::Duration,
}

/// The whole run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub nets: Vec<NetPlan>,
    pub channels: Vec<ChannelPlan>,
}

impl Plan {
    /// Per net, the index of the chain of `chains` (net ids each) it belongs to, if any.
    pub fn chain_of(&self, chains: &[Vec<usize>]) -> Vec<Option<usize>> {
        let mut chain_of = vec![None; self.nets.len()];
        for (k, chain) in chains.iter().enumerate() {
            for &net in chain {
                chain_of[net] = Some(k);
            }
        }
        chain_of
    }
}

/// Checks `graph` against `registry` and `opts` and lays out threads and channels.
pub fn build(graph: &NetGraph, registry: &Registry, opts: &RunOptions) -> Result<Plan, RunError> {
    check_limits(graph, opts)?;
    let channels = plan_channels(graph, opts)?;
    let ends = channel_ends(graph, &channels);
    let mut nets = Vec::with_capacity(graph.nodes.len());
    let mut bad_values = Vec::new();
    for (index, node) in graph.nodes.iter().enumerate() {
        if node.id != index {
            return Err(RunError::BadGraph(format!(
                "node '{}' has id {} at index {index}",
                node.label, node.id
            )));
        }
        let mut settings = opts.settings.get(index).cloned().unwrap_or_default();
        let (role, inputs, outputs) = plan_node(
            graph,
            registry,
            index,
            &mut settings,
            &channels,
            &ends[index],
            &mut bad_values,
        )?;
        let graph_priority = (opts.realtime == super::Realtime::On && node.priority > 0).then(|| node.priority + 1);
        let priority = settings.priority.or(graph_priority);
        nets.push(NetPlan {
            id: index,
            name: node.label.clone(),
            implementation: node.func.clone(),
            role,
            inputs,
            outputs,
            settings,
            core: None,
            priority,
            offers_core: false,
        });
    }
    if !bad_values.is_empty() {
        return Err(RunError::BadValues(bad_values));
    }
    // Cores are decided later, by `crate::placement`, once the executives are known.
    Ok(Plan { nets, channels })
}

/// What refuses a graph before any net is planned: settings that do not match its nodes, more
/// threads than allowed or than the address space holds, and a graph that does not hold
/// together.
fn check_limits(graph: &NetGraph, opts: &RunOptions) -> Result<(), RunError> {
    if !opts.settings.is_empty() && opts.settings.len() != graph.nodes.len() {
        return Err(RunError::BadGraph(format!(
            "{} net settings given for {} nodes",
            opts.settings.len(),
            graph.nodes.len()
        )));
    }
    if graph.nodes.len() > opts.max_threads {
        return Err(RunError::ThreadLimit {
            wanted: graph.nodes.len(),
            message: format!(
                "the limit is {} (RunOptions::max_threads); split the net or raise the limit",
                opts.max_threads
            ),
        });
    }
    if let Some(message) = address_space_shortfall(graph.nodes.len(), opts.stack_size) {
        return Err(RunError::ThreadLimit {
            wanted: graph.nodes.len(),
            message,
        });
    }
    let problems = smx_graph::check::problems(graph);
    if !problems.is_empty() {
        return Err(RunError::BadGraph(problems.join("; ")));
    }
    Ok(())
}

/// A node's role and ports: a routing node's from its channel ends, a box's checked against
/// its implementation (with its configuration completed from the spec's defaults; a value the
/// spec refuses goes to `bad_values`).
fn plan_node(
    graph: &NetGraph,
    registry: &Registry,
    index: usize,
    settings: &mut NetSettings,
    channels: &[ChannelPlan],
    ends: &[(usize, PortMode)],
    bad_values: &mut Vec<BadValue>,
) -> Result<(Role, Vec<PortPlan>, Vec<PortPlan>), RunError> {
    let node = &graph.nodes[index];
    Ok(match node.kind {
        NodeKind::Unexpanded => {
            return Err(RunError::BadGraph(format!(
                "'{}' (line {}) is an unexpanded net, not a box",
                node.label, node.line
            )));
        }
        NodeKind::RoutingNode => {
            let port = |&(c, _): &(usize, PortMode)| PortPlan {
                name: channels[c].label.clone(),
                channel: Some(channels[c].id),
            };
            let (inputs, outputs): (Vec<_>, Vec<_>) = ends.iter().partition(|(_, end)| *end == PortMode::In);
            (
                Role::Routing,
                inputs.iter().map(port).collect(),
                outputs.iter().map(port).collect(),
            )
        }
        NodeKind::Box => {
            let spec = registry.get(&node.func).cloned().ok_or_else(|| RunError::UnknownImpl {
                instance: node.label.clone(),
                implementation: node.func.clone(),
                known: registry.names().iter().map(|s| s.to_string()).collect(),
            })?;
            if settings.box_config.implementation.is_empty() {
                settings.box_config = BoxConfig::with_defaults(&node.label, &spec).map_err(RunError::BadGraph)?;
            }
            settings.box_config.id = node.id;
            if let Err(e) = spec.check(&settings.box_config) {
                bad_values.push(BadValue {
                    instance: format!("{}#{}", node.label, node.id),
                    message: e.to_string(),
                });
            }
            let (inputs, outputs) = box_ports(graph, index, &spec, channels, ends)?;
            (Role::Box(spec), inputs, outputs)
        }
    })
}

/// The part of [`build`] that depends on the net alone: every box's ports against its
/// implementation (a port the implementation requires, a channel at a port that is not
/// declared or not implemented). `smxrun check` calls it so that it rejects what a run would.
/// Boxes whose implementation the registry does not know are left to the caller.
pub fn check_ports(graph: &NetGraph, registry: &Registry) -> Result<(), RunError> {
    port_problems(graph, registry).into_iter().next().map_or(Ok(()), Err)
}

/// Every box's port problem of [`check_ports`], the first of each box, in node order: a net
/// with a wrong port name on both ends of a channel hears of both at once.
pub fn port_problems(graph: &NetGraph, registry: &Registry) -> Vec<RunError> {
    let channels = match plan_channels(graph, &RunOptions::default()) {
        Ok(channels) => channels,
        Err(e) => return vec![e],
    };
    let ends = channel_ends(graph, &channels);
    graph
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, node)| node.kind == NodeKind::Box)
        .filter_map(|(index, node)| {
            let spec = registry.get(&node.func)?;
            box_ports(graph, index, spec, &channels, &ends[index]).err()
        })
        .collect()
}

/// A port the net declares that a box's implementation does not have, joined by no channel
/// (an `open` one: a joined one is refused by [`check_ports`]): harmless to a run, whose box
/// never sees it, but most likely a misspelt name of a port the implementation reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnimplementedPort {
    pub instance: String,
    /// The port's name to the implementation.
    pub port: String,
    /// The implementation's ports of the same direction.
    pub implemented: Vec<&'static str>,
    pub message: String,
}

/// Every [`UnimplementedPort`] of the net's boxes whose implementation declares its ports.
pub fn unimplemented_ports(graph: &NetGraph, registry: &Registry) -> Vec<UnimplementedPort> {
    let mut found = Vec::new();
    for (index, node) in graph.nodes.iter().enumerate().filter(|(_, n)| n.kind == NodeKind::Box) {
        let Some(spec) = registry.get(&node.func) else {
            continue;
        };
        let Ports::Declared { inputs, outputs } = spec.ports else {
            continue;
        };
        let joined = |decl: &smx_graph::PortDecl| {
            graph.edges.iter().any(|e| match decl.mode {
                PortMode::In => e.target == index && e.target_port == decl.name,
                PortMode::Out => e.source == index && e.source_port == decl.name,
            })
        };
        for decl in node.ports.iter().filter(|decl| !joined(decl)) {
            let (list, direction) = match decl.mode {
                PortMode::In => (inputs, "input"),
                PortMode::Out => (outputs, "output"),
            };
            let name = implementation_name(decl);
            if list.iter().any(|p| p.name == name) {
                continue;
            }
            let theirs: Vec<&str> = list.iter().map(|p| p.name).collect();
            found.push(UnimplementedPort {
                instance: node.label.clone(),
                port: name.clone(),
                implemented: theirs.clone(),
                message: format!(
                    "box instance '{}' declares {direction} port '{name}', which implementation '{}' does not have \
                     (its {direction}s: {}): the box never sees it",
                    node.label,
                    spec.name,
                    if theirs.is_empty() {
                        "none".to_string()
                    } else {
                        theirs.join(", ")
                    }
                ),
            });
        }
    }
    found
}

/// Per node, the channels that end at it, each with the end (`In`: the channel arrives,
/// `Out`: it leaves), in channel order; a channel from a node to itself gives both ends. Made
/// once, so that joining every node's ports costs the channels once, not once per node.
fn channel_ends(graph: &NetGraph, channels: &[ChannelPlan]) -> Vec<Vec<(usize, PortMode)>> {
    let mut ends = vec![Vec::new(); graph.nodes.len()];
    for (i, c) in channels.iter().enumerate() {
        ends[c.to].push((i, PortMode::In));
        ends[c.from].push((i, PortMode::Out));
    }
    ends
}

fn plan_channels(graph: &NetGraph, opts: &RunOptions) -> Result<Vec<ChannelPlan>, RunError> {
    let mut channels = Vec::with_capacity(graph.edges.len());
    for (index, edge) in graph.edges.iter().enumerate() {
        if edge.id != index || edge.source >= graph.nodes.len() || edge.target >= graph.nodes.len() {
            return Err(RunError::BadGraph(format!(
                "edge '{}' (id {}, index {index}) joins nodes {} -> {}, but there are {} nodes",
                edge.label,
                edge.id,
                edge.source,
                edge.target,
                graph.nodes.len()
            )));
        }
        let len = match opts.default_channel_len {
            Some(default) if !edge.len_declared => default,
            _ => edge.len,
        };
        channels.push(ChannelPlan {
            id: index,
            label: edge.label.clone(),
            from: edge.source,
            to: edge.target,
            from_port: edge.source_port.clone(),
            to_port: edge.target_port.clone(),
            kind: ChannelKind::from_bits(edge.dsrc, edge.ddst),
            len: len.max(1) as usize,
            len_declared: edge.len_declared,
            timing: edge.timing,
            src_period: edge.src_time.as_duration(),
            dst_period: edge.dst_time.as_duration(),
        });
    }
    Ok(channels)
}

/// The ports of a box instance, each joined to its channel. With ports declared by the spec
/// they stand in the spec's order, so that `InPort(i)` is the spec's `i`-th input whatever
/// order the net declares them in; with ports from the net, in declaration order.
fn box_ports(
    graph: &NetGraph,
    index: usize,
    spec: &BoxSpec,
    channels: &[ChannelPlan],
    ends: &[(usize, PortMode)],
) -> Result<(Vec<PortPlan>, Vec<PortPlan>), RunError> {
    let node = &graph.nodes[index];
    let (mut inputs, mut outputs) = port_slots(node, spec)?;
    let bad = |message: String| RunError::BadPort {
        instance: node.label.clone(),
        message,
        line: node.line,
    };
    // A feedback loop (an edge from a box to itself) joins one input and one output.
    for &(c, end) in ends {
        let channel = &channels[c];
        let (list, port, direction, mode) = match end {
            PortMode::In => (&mut inputs, &channel.to_port, "input", PortMode::In),
            PortMode::Out => (&mut outputs, &channel.from_port, "output", PortMode::Out),
        };
        let Some(decl) = node.ports.iter().find(|p| p.mode == mode && &p.name == port) else {
            let known: Vec<&str> = node
                .ports
                .iter()
                .filter(|p| p.mode == mode)
                .map(|p| p.name.as_str())
                .collect();
            return Err(bad(format!(
                "channel '{}' (id {}) arrives at {direction} port '{port}', which is not declared (declared: {})",
                channel.label,
                channel.id,
                known.join(", ")
            )));
        };
        let implemented = implementation_name(decl);
        let Some(slot) = list.iter_mut().find(|p| p.name == implemented) else {
            return Err(bad(format!(
                "channel '{}' joins {direction} port '{implemented}', which implementation '{}' does not have",
                channel.label, spec.name
            )));
        };
        if let Some(other) = slot.channel {
            return Err(bad(format!(
                "{direction} port '{port}' has two channels ({other} and {}); fan-in and fan-out need a routing node",
                channel.id
            )));
        }
        slot.channel = Some(channel.id);
    }
    Ok((inputs, outputs))
}

/// A port declared `x(impl)` is `x` in the net and `impl` to the box implementation.
fn implementation_name(port: &smx_graph::PortDecl) -> String {
    port.alt_name.clone().unwrap_or_else(|| port.name.clone())
}

/// A box's input and output ports, not joined yet: the implementation's own (each one it
/// requires declared in the net), or the net's for an implementation that takes them from it.
fn port_slots(node: &smx_graph::Node, spec: &BoxSpec) -> Result<(Vec<PortPlan>, Vec<PortPlan>), RunError> {
    let declares = |name: &str, mode: PortMode| {
        node.ports
            .iter()
            .any(|p| p.mode == mode && implementation_name(p) == name)
    };
    let slot = |name: &str| PortPlan {
        name: name.to_string(),
        channel: None,
    };
    Ok(match spec.ports {
        Ports::FromNet => (
            node.ports
                .iter()
                .filter(|p| p.mode == PortMode::In)
                .map(|p| slot(&implementation_name(p)))
                .collect(),
            node.ports
                .iter()
                .filter(|p| p.mode == PortMode::Out)
                .map(|p| slot(&implementation_name(p)))
                .collect(),
        ),
        Ports::Declared { inputs, outputs } => {
            for (list, mode, direction) in [(inputs, PortMode::In, "input"), (outputs, PortMode::Out, "output")] {
                if let Some(want) = list.iter().find(|p| !p.optional && !declares(p.name, mode)) {
                    return Err(RunError::MissingPort {
                        instance: node.label.clone(),
                        implementation: spec.name.to_string(),
                        port: want.name.to_string(),
                        direction,
                        line: node.line,
                    });
                }
            }
            (
                inputs.iter().map(|p| slot(p.name)).collect(),
                outputs.iter().map(|p| slot(p.name)).collect(),
            )
        }
    })
}

/// Why `threads` stacks of `stack_size` bytes cannot fit into what is left of the process's
/// address-space limit (`ulimit -v`), if they cannot. Checked up front because near that limit
/// a thread can be created and then fail inside the standard library (its signal stack), which
/// aborts the process instead of returning an error.
fn address_space_shortfall(threads: usize, stack_size: usize) -> Option<String> {
    // SAFETY: getrlimit fills the struct we own.
    let limit = unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_AS, &mut rl) != 0 || rl.rlim_cur == libc::RLIM_INFINITY {
            return None;
        }
        rl.rlim_cur as u64
    };
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: plain FFI call without arguments.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let used = pages * page;
    // Each thread also maps a guard page and a signal stack.
    let per_thread = stack_size as u64 + 64 * 1024;
    let needed = threads as u64 * per_thread;
    let free = limit.saturating_sub(used);
    (needed > free).then(|| {
        format!(
            "{threads} stacks of {} KiB need {} MiB of address space, but only {} MiB of the {} MiB limit \
             (ulimit -v) are free; raise the limit or run fewer nets",
            stack_size / 1024,
            needed >> 20,
            free >> 20,
            limit >> 20
        )
    })
}
