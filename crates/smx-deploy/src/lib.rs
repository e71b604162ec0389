//! One Streamix net over several processes and hosts.
//!
//! Placement is configuration: the per-net key `process = "NAME"` (layered like `core`) and
//! the `[process.NAME]` tables ([`processes`]) say where each net runs. From a net, its
//! resolved settings and those tables this crate
//!
//! * places every node ([`placement::place`]) and names the channels a cut cannot carry
//!   ([`placement::cut_problems`]);
//! * cuts the net into one graph per process with a link at every cut channel
//!   ([`slice::split`]);
//! * starts, watches and stops the slices' processes ([`supervise::supervise`]), talking to
//!   each over its stdin and stdout ([`protocol`]);
//! * merges the slices' reports into one for the whole net ([`merge::merge`], [`text::render`]).
//!
//! [`Deployment`] strings these together for the command line (`smxrun`'s `cli/deploy/`).

mod cores;
pub mod live;
pub mod merge;
pub mod names;
pub mod placement;
pub mod processes;
pub mod protocol;
pub mod slice;
pub mod supervise;
pub mod text;

use smx_graph::NetGraph;
use smx_runtime::config::NetSettings;
use std::collections::BTreeMap;

pub use placement::Placement;
pub use processes::{Process, Processes};
pub use slice::Split;

/// A net placed and cut into slices, ready to start.
#[derive(Debug, Clone)]
pub struct Deployment {
    pub graph: NetGraph,
    pub processes: Processes,
    pub placement: Placement,
    pub split: Split,
    /// The implementations of the registry that pass what they read on out of the net, for
    /// the merged report's count of messages ([`merge::Parts::bridges`]).
    pub bridges: Vec<String>,
    /// What was asked for, as the report's `Asked:` line says it (the net, `-n`, `--set`,
    /// `--config`): carried in the plan, so that the merge of slices started by hand can say
    /// what run they were.
    pub asked: String,
    /// The warnings the placement gave before the start (a process that holds no net, cores
    /// named twice): carried in the plan, so that the merge of slices started by hand says them
    /// first, as the report of a run that `smxrun` supervised does.
    pub said: Vec<String>,
}

impl Deployment {
    /// Places and cuts `graph`. `run` makes local endpoints unique to this run; `registry`
    /// decides the transport between processes of one machine: shared memory when it has the
    /// shared-memory link boxes, else ZeroMQ over ipc.
    pub fn new(
        graph: &NetGraph,
        settings: &[NetSettings],
        processes: &Processes,
        run: &str,
        registry: &smx_runtime::Registry,
    ) -> Result<Deployment, String> {
        let placement = placement::place(graph, settings, processes).map_err(|e| e.to_string())?;
        let local = if registry.get(slice::SHM_SINK).is_some() && registry.get(slice::SHM_SOURCE).is_some() {
            slice::Transport::Shm
        } else {
            slice::Transport::Zmq
        };
        let split = slice::split(
            graph,
            settings,
            &placement,
            processes,
            run,
            local,
            &mut slice::CurveKeys,
        )?;
        Ok(Deployment {
            graph: graph.clone(),
            processes: processes.clone(),
            placement,
            split,
            bridges: bridges(registry),
            asked: String::new(),
            said: Vec::new(),
        })
    }

    /// Per slice, in the order of [`Deployment::jobs`], whether it holds a sink of the whole
    /// net (a node without outgoing channels): the slices whose progress counts the run's
    /// messages. A slice whose only sinks are links would count what its links carry, which
    /// the consumers' slices count again.
    pub fn counted_slices(&self) -> Vec<bool> {
        counted_slices(&self.graph, &self.split)
    }

    /// One job per slice: its graph and the arguments its process runs it with (`common`:
    /// the run's own options; a process's `cores` become its `--pin`). Under `--pin auto`, the
    /// processes on this machine that name no cores share the allowed cores out among them
    /// (see `cores`), so that they do not each place their threads on the same ones. A slice
    /// with a temporal firewall keeps its own placement instead, over the cores no other
    /// process names (its job's `cores_allowed`), and the others keep off the cores its cyclic
    /// executives have to themselves ([`Deployment::core_notes`] says which).
    pub fn jobs(&self, common: &[String]) -> Vec<(Process, protocol::Job)> {
        let local = self.local_cores(common);
        let shared = self.shared_cores(common, &local);
        let LocalCores { shares, kept_to, notes } = local;
        // What the placement of the cores decided, for a merge of the slices' reports to say
        // as a supervised run's report does.
        let mut plan = self.plan();
        if let Some(said) = plan["said"].as_array_mut() {
            said.extend(notes.into_iter().map(serde_json::Value::from));
        }
        self.split
            .slices
            .iter()
            .map(|slice| {
                let process = self
                    .processes
                    .get(&slice.process)
                    .expect("placed on a declared process")
                    .clone();
                let mut args: Vec<String> = common.to_vec();
                if let Some(cores) = process.cores.as_ref().or(shares.get(&process.name)) {
                    // The process's own cores replace the run's `--pin` (an option given twice
                    // is refused, not overridden).
                    if let Some(at) = args.iter().position(|a| a == "--pin") {
                        args.drain(at..(at + 2).min(args.len()));
                    }
                    let list: Vec<String> = cores.iter().map(usize::to_string).collect();
                    args.push("--pin".to_string());
                    args.push(list.join(","));
                }
                for set in &slice.sets {
                    args.push("--set".to_string());
                    args.push(set.clone());
                }
                let job = protocol::Job {
                    process: slice.process.clone(),
                    host: process.host.clone(),
                    graph: slice.graph.clone(),
                    args,
                    plan: plan.clone(),
                    stats_every: None,
                    cores_allowed: kept_to.get(&process.name).cloned(),
                    start_together: false,
                    protocol: Some(protocol::PROTOCOL),
                    shared_cores: shared.get(&process.name).cloned(),
                };
                (process, job)
            })
            .collect()
    }
}

/// Per process on this machine that holds a net of `placement` and whose `cores` name a core
/// that a process declared before it in the file names too: where its table is, and what it
/// shares with which of those (`process 'p1' names core 0 as process 'main' does`). Their
/// threads take turns there, and `--rt auto` takes no real-time scheduling there. None for
/// processes read as planned: which of them run on this machine is the starting machine's.
pub fn cores_named_twice(processes: &Processes, placement: &Placement) -> Vec<(smx_runtime::config::Origin, String)> {
    if processes.as_planned() {
        return Vec::new();
    }
    let used = placement.used();
    let mut named: Vec<&Process> = processes
        .iter()
        .filter(|p| used.contains(&p.name) && p.on_this_machine() && p.cores.is_some())
        .collect();
    named.sort_by_key(|p| match &p.origin {
        smx_runtime::config::Origin::File { line, .. } => *line,
        _ => usize::MAX,
    });
    let listed: Vec<(String, Vec<usize>)> = named
        .iter()
        .map(|p| (p.name.clone(), p.cores.clone().unwrap_or_default()))
        .collect();
    let mut said = Vec::new();
    for (k, process) in named.iter().enumerate() {
        let Some((shared, with)) = cores::overlaps(&listed[..=k]).remove(&process.name) else {
            continue;
        };
        let cores: Vec<String> = shared.iter().map(usize::to_string).collect();
        let others: Vec<String> = with.iter().map(|name| format!("'{name}'")).collect();
        said.push((
            process.origin.clone(),
            format!(
                "process '{}' names {} {} as {} {} {}",
                process.name,
                if cores.len() == 1 { "core" } else { "cores" },
                cores.join(", "),
                if others.len() == 1 { "process" } else { "processes" },
                others.join(", "),
                if others.len() == 1 { "does" } else { "do" },
            ),
        ));
    }
    said
}

/// The implementations of `registry` that pass what they read on out of the net (a ZeroMQ
/// sink), for the merged report's count of messages ([`merge::Parts::bridges`]).
pub fn bridges(registry: &smx_runtime::Registry) -> Vec<String> {
    registry
        .specs()
        .into_iter()
        .filter(|spec| spec.bridge)
        .map(|spec| spec.name.to_string())
        .collect()
}

/// Per node of `graph`, whether a channel leaves it: one that feeds none is a sink of the whole
/// net.
pub(crate) fn feeds(graph: &NetGraph) -> Vec<bool> {
    let mut feeds = vec![false; graph.nodes.len()];
    for edge in &graph.edges {
        feeds[edge.source] = true;
    }
    feeds
}

/// The value after `name` in the run's options.
fn option<'a>(common: &'a [String], name: &str) -> Option<&'a String> {
    common.iter().position(|a| a == name).and_then(|at| common.get(at + 1))
}

/// The cores of the run's `--pin` list; `None` for `auto` (the default) and `off`.
fn pin_list(common: &[String]) -> Option<Vec<usize>> {
    let pin = option(common, "--pin").filter(|p| !matches!(p.as_str(), "auto" | "off"))?;
    pin.split(',').map(|core| core.trim().parse().ok()).collect()
}

/// Whether the run places its threads itself (`--pin auto`, the default).
fn pin_auto(common: &[String]) -> bool {
    option(common, "--pin").is_none_or(|p| p == "auto")
}

/// The cores of the processes on this machine that name none, and why, for the report.
#[derive(Debug, Default)]
struct LocalCores {
    /// Per process, the cores that replace its `--pin`.
    shares: std::collections::BTreeMap<String, Vec<usize>>,
    /// Per process that keeps its own placement (`--pin auto`, for its cyclic executives), the
    /// cores it keeps to: those that no other process names.
    kept_to: std::collections::BTreeMap<String, Vec<usize>>,
    notes: Vec<String>,
}

impl Deployment {
    /// What the placement decided about the processes' cores, as lines for the report's
    /// warnings (as each process's runtime says what it decided about its threads).
    pub fn core_notes(&self, common: &[String]) -> Vec<String> {
        self.local_cores(common).notes
    }

    /// Per process on this machine, the cores that other processes on it may run on as well,
    /// and whose they are. A process's cores are its `cores`, else its share, else those it
    /// keeps to, else the run's `--pin` list or every core this process may use.
    fn shared_cores(&self, common: &[String], local: &LocalCores) -> BTreeMap<String, smx_runtime::SharedCores> {
        let every = pin_list(common).unwrap_or_else(cores::allowed);
        let placed: Vec<(String, Vec<usize>)> = self
            .split
            .slices
            .iter()
            .filter_map(|slice| self.processes.get(&slice.process))
            .filter(|p| p.on_this_machine())
            .map(|p| {
                let own = p
                    .cores
                    .as_ref()
                    .or(local.shares.get(&p.name))
                    .or(local.kept_to.get(&p.name));
                (p.name.clone(), own.unwrap_or(&every).clone())
            })
            .collect();
        cores::overlaps(&placed)
            .into_iter()
            .map(|(name, (cores, with))| {
                let with = format!("process{} {}", if with.len() == 1 { "" } else { "es" }, with.join(", "));
                (name, smx_runtime::SharedCores { cores, with })
            })
            .collect()
    }

    /// `allowed` without the cores that processes on this machine name as their own, so that
    /// the others keep off them; all of `allowed` when they name every one.
    fn unclaimed_cores(&self, allowed: Vec<usize>) -> Vec<usize> {
        let claimed = self.claimed_cores();
        let free: Vec<usize> = allowed.iter().copied().filter(|c| !claimed.contains(c)).collect();
        if free.is_empty() { allowed } else { free }
    }

    /// The slices of processes on this machine that name no cores of their own.
    fn slices_without_cores_here(&self) -> impl Iterator<Item = &slice::Slice> {
        self.split.slices.iter().filter(|slice| {
            self.processes
                .get(&slice.process)
                .is_some_and(|p| p.on_this_machine() && p.cores.is_none())
        })
    }

    /// The cores that processes on this machine name as their own.
    fn claimed_cores(&self) -> Vec<usize> {
        self.split
            .slices
            .iter()
            .filter_map(|s| self.processes.get(&s.process))
            .filter(|p| p.on_this_machine())
            .filter_map(|p| p.cores.clone())
            .flatten()
            .collect()
    }

    /// [`Deployment::placed_cores`], and a line for the report when the processes without
    /// `cores` have none left to keep to: those that name cores name every one, so the others
    /// run on all of them, beside those processes, whose threads (a cyclic executive that
    /// counts its core as its own) then share their cores.
    fn local_cores(&self, common: &[String]) -> LocalCores {
        let mut placed = self.placed_cores(common);
        let claimed = self.claimed_cores();
        let without: Vec<&str> = self.slices_without_cores_here().map(|s| s.process.as_str()).collect();
        let allowed = cores::allowed();
        if pin_auto(common) && !without.is_empty() && !allowed.is_empty() && allowed.iter().all(|c| claimed.contains(c))
        {
            let (names, one) = (without.join(", "), without.len() == 1);
            placed.notes.push(format!(
                "placement: the `cores` of the processes on this machine name every core it has, so {names} \
                 {} on all of them, beside those processes (`cores` of its own for each decide instead)",
                if one { "runs" } else { "run" },
            ));
        }
        placed
    }

    /// The cores of the run's `--pin` list for the processes on this machine without `cores`:
    /// shared out among them as the machine's cores are under `auto` (given whole to each,
    /// every process would begin its threads on the list's first core, where they would all
    /// meet while the others idled), keeping off the cores other processes name.
    fn shared_pin_list(&self, list: Vec<usize>) -> LocalCores {
        let local: Vec<(String, usize)> = self
            .slices_without_cores_here()
            .map(|slice| (slice.process.clone(), slice.graph.nodes.len()))
            .collect();
        let claimed = self.claimed_cores();
        let free: Vec<usize> = list.iter().copied().filter(|c| !claimed.contains(c)).collect();
        let shares = cores::share(&local, if free.is_empty() { &list } else { &free });
        LocalCores {
            notes: cores::crowded_note(&shares).into_iter().collect(),
            shares,
            ..LocalCores::default()
        }
    }

    /// The cores for the processes on this machine without `cores`, when the run's placement
    /// is `auto`: shared out among them, or, beside a temporal firewall, all but its
    /// executives' own.
    fn placed_cores(&self, common: &[String]) -> LocalCores {
        if let Some(list) = pin_list(common) {
            return self.shared_pin_list(list);
        }
        if !pin_auto(common) {
            return LocalCores::default();
        }
        let local: Vec<(&slice::Slice, usize)> = self
            .slices_without_cores_here()
            .map(|slice| (slice, slice.graph.nodes.len()))
            .collect();
        let timed = |slice: &slice::Slice| slice.graph.edges.iter().any(|e| e.timing != smx_graph::Timing::None);
        let allowed = self.unclaimed_cores(cores::allowed());
        let plain_shares = || {
            let local: Vec<(String, usize)> = local.iter().map(|(s, boxes)| (s.process.clone(), *boxes)).collect();
            let mut shares = cores::share(&local, &allowed);
            // One process beside others with cores of their own keeps off theirs.
            if let ([(name, _)], true) = (&local[..], allowed.len() < cores::allowed().len()) {
                shares.insert(name.clone(), allowed.clone());
            }
            LocalCores {
                notes: cores::crowded_note(&shares).into_iter().collect(),
                shares,
                ..LocalCores::default()
            }
        };
        if !self.split.slices.iter().any(timed) {
            return plain_shares();
        }
        // A temporal firewall's executive needs a core of its own to hold its period: a slice
        // with one keeps its own placement over the cores no other process names (its
        // executives take the last of them), and the others keep off its executives' cores,
        // where a spinning executive would hold them back.
        let tt_mode = match option(common, "--tt-mode").map(String::as_str) {
            Some("threads") => smx_runtime::TtMode::Threads,
            Some("cyclic") => smx_runtime::TtMode::Cyclic,
            _ => smx_runtime::TtMode::Auto,
        };
        let reserved: Vec<(String, Vec<usize>)> = local
            .iter()
            .filter(|(s, _)| timed(s))
            .map(|(s, _)| {
                (
                    s.process.clone(),
                    smx_runtime::executive_cores(&s.graph, tt_mode, &allowed),
                )
            })
            .collect();
        // No slice keeps a core for an executive (a slice whose every box its executive runs
        // places the executive on its first core, whatever other process is there): the
        // processes share the cores out as untimed ones do, and such an executive gets its
        // share to itself instead of meeting another process's busiest thread.
        if local.len() > 1 && reserved.iter().all(|(_, cores)| cores.is_empty()) {
            return plain_shares();
        }
        let kept_to: std::collections::BTreeMap<String, Vec<usize>> = match allowed.len() < cores::allowed().len() {
            true => reserved
                .iter()
                .map(|(name, _)| (name.clone(), allowed.clone()))
                .collect(),
            false => Default::default(),
        };
        let kept_note = cores::kept_to_note(&kept_to.keys().cloned().collect::<Vec<_>>(), &allowed);
        let others: Vec<(String, usize)> = local
            .iter()
            .filter(|(s, _)| !timed(s))
            .map(|(s, boxes)| (s.process.clone(), *boxes))
            .collect();
        let (shares, note) = cores::beside_executives(&reserved, &others, &allowed);
        LocalCores {
            shares,
            kept_to,
            notes: kept_note.into_iter().chain(note).collect(),
        }
    }

    /// The whole net, its links and what each slice's nodes and channels stand for: what a
    /// merge needs, without the settings (they hold the links' secret keys).
    pub fn plan(&self) -> serde_json::Value {
        let slices: Vec<serde_json::Value> = self
            .split
            .slices
            .iter()
            .map(|s| {
                let host = self.processes.get(&s.process).and_then(|p| p.host.clone());
                serde_json::json!({"process": s.process, "host": host, "origins": s.origins, "edges": s.edges})
            })
            .collect();
        serde_json::json!({
            "graph": self.graph,
            "links": self.split.links,
            "slices": slices,
            "asked": self.asked,
            "said": self.said,
        })
    }
}

impl Deployment {
    /// Removes what slices of this machine that did not end by themselves (killed, crashed)
    /// left behind: their private directories (`smx-slice-PID-*` in the temporary directory)
    /// and the ipc files of the links they served. A slice that ended cleans up itself.
    pub fn clean_up(&self, outcomes: &[supervise::Outcome]) {
        let here = |name: &str| self.processes.get(name).is_some_and(|p| p.launch.is_none());
        let gone: Vec<&supervise::Outcome> = outcomes
            .iter()
            .filter(|o| o.report.is_none() && here(&o.process))
            .collect();
        for o in &gone {
            let Some(pid) = o.pid else { continue };
            let prefix = format!("{}{pid}-", protocol::DIR_PREFIX);
            for entry in std::fs::read_dir(std::env::temp_dir()).into_iter().flatten().flatten() {
                if entry.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let ipc_dir = smx_zmq::endpoint::private_dir().ok();
        for link in &self.split.links {
            let served_by_gone = gone
                .iter()
                .any(|o| o.process == link.to_process || o.process == link.from_process);
            if !served_by_gone {
                continue;
            }
            // A shared-memory link's file has this run's name: it was made by this run.
            if link.transport == slice::Transport::Shm {
                let _ = std::fs::remove_file(&link.endpoint);
                continue;
            }
            if let Some((name, dir)) = link.endpoint.strip_prefix("ipc://").zip(ipc_dir.as_ref()) {
                let path = dir.join(name);
                let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir_all(&path));
            }
        }
    }
}

/// Per slice of `split`, whether it holds a sink of the whole net (`graph`): the slices whose
/// counts make the whole net's `messages`.
pub(crate) fn counted_slices(graph: &NetGraph, split: &Split) -> Vec<bool> {
    let feeds = feeds(graph);
    split
        .slices
        .iter()
        .map(|slice| {
            slice
                .origins
                .iter()
                .any(|origin| matches!(origin, slice::Origin::Node(id) if !feeds[*id]))
        })
        .collect()
}

/// A name for this run that no other run on this machine has at the same time.
pub fn run_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}-{nanos:x}", std::process::id())
}
