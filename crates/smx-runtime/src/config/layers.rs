//! The configuration layers of one run and their resolution into [`NetSettings`].
//!
//! From lowest to highest precedence (a later layer overrides an earlier one, key by key):
//!
//! 1. the built-in defaults of each box implementation ([`ConfigKey::default`]);
//! 2. the `--config` file: `[default]`, then `[impl.NAME]`, then `[net.INSTANCE]`, then
//!    `[net."INSTANCE#ID"]` (one node, by the id `smxrun graph` and the report show);
//! 3. `-n/--iterations N`: `count` of every box whose implementation has a `count` key;
//! 4. `--set TARGET.key=value`, in the order given: implementation targets, then instance
//!    targets, then `INSTANCE#ID` targets (an instance is more specific than its implementation).
//!
//! A key in `[default]` applies to the nets that know it and is skipped by the others (it is
//! an error only when no implementation knows it at all). An implementation whose spec has an
//! open configuration (`BoxSpec::open_config`, the C boxes) knows every key: keys it does not
//! declare reach it as text, from `[default]` too. Everywhere else an unknown key, an
//! unknown target or a bad value is an error, because a setting that silently does nothing
//! would make a run's figures mean something else than the user thinks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::NetSettings;
use super::error::{ConfigError, Origin};
use super::file::{self, Entry, Scope};
use super::net_keys::{self, NET_KEYS};
use smx_box::parse_value;
use smx_box::{BoxConfig, BoxSpec};

use crate::Registry;
use smx_graph::{NetGraph, Node, NodeKind};

/// The implementation name of routing nodes, usable as `[impl.smx_rn]` for runtime keys.
const ROUTING_IMPL: &str = "smx_rn";

/// At most this many choices are listed in an error (a 50,000-box net has many instances).
const MAX_CHOICES: usize = 40;

/// Everything the user configured for a run, not yet applied to a graph.
#[derive(Debug, Clone, Default)]
pub struct ConfigLayers {
    file: Vec<Entry>,
    /// The file's `[impl.NAME]` and `[net.NAME]` tables, checked even when they set nothing.
    tables: Vec<file::TableName>,
    sets: Vec<Entry>,
    iterations: Option<u64>,
    /// Cores this process may use; queried from the OS at resolution unless set.
    cores: Option<Vec<usize>>,
    /// `boxes = [...]` of the file: C box libraries, relative to the file's directory.
    boxes: Vec<PathBuf>,
    /// The file and its text, read once: a pipe (`--config <(...)`) cannot be read again
    /// for the other tables a caller takes from it (a deployment's processes).
    source: Option<(PathBuf, String)>,
}

impl ConfigLayers {
    /// No file, no `--set`: every net gets its implementation's defaults.
    pub fn new() -> Self {
        ConfigLayers::default()
    }

    /// Layers with the settings of a `--config` TOML file. A missing or malformed file is an
    /// error naming it (and the line, for malformed TOML).
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = file::read_text(path)?;
        Self::from_toml(path, &text)
    }

    /// Like [`ConfigLayers::from_file`] for text already in memory; `name` names it in errors.
    pub fn from_toml(name: &Path, text: &str) -> Result<Self, ConfigError> {
        let parsed = file::parse(name, text)?;
        Ok(ConfigLayers {
            file: parsed.entries,
            tables: parsed.tables,
            boxes: box_libraries(name, text)?,
            source: Some((name.to_path_buf(), text.to_string())),
            ..ConfigLayers::default()
        })
    }

    /// The configuration file and its text as read, if the layers have one.
    pub fn file_text(&self) -> Option<(&Path, &str)> {
        self.source.as_ref().map(|(path, text)| (path.as_path(), text.as_str()))
    }

    /// The box libraries the file names (`boxes = ["lib/libmine.so"]` at its top, before any
    /// table), relative paths taken from the file's directory: what `--boxes` adds to.
    pub fn boxes(&self) -> &[PathBuf] {
        &self.boxes
    }

    /// Adds one override `TARGET.key=value` (smxrun's `--set`). Only the syntax is checked here; target, key and
    /// value are checked against the graph by [`ConfigLayers::resolve`].
    pub fn add_set(&mut self, arg: &str) -> Result<(), ConfigError> {
        let origin = Origin::Override(arg.to_string());
        let usage = "expected TARGET.key=value, where TARGET is an instance or implementation name";
        let (lhs, value) = arg
            .split_once('=')
            .ok_or_else(|| ConfigError::new(origin.clone(), usage))?;
        let (target, key) = lhs
            .trim()
            .rsplit_once('.')
            .ok_or_else(|| ConfigError::new(origin.clone(), usage))?;
        if target.is_empty() || key.is_empty() {
            return Err(ConfigError::new(origin, usage));
        }
        self.sets.push(Entry {
            // Whether the target is an instance or an implementation is decided against the
            // graph; `Net` here only records the name.
            scope: Scope::Net(target.to_string()),
            key: key.to_string(),
            value: value.trim().to_string(),
            origin,
        });
        Ok(())
    }

    /// The iteration count (smxrun's `-n`): sets `count` of every box that has a `count` key.
    pub fn set_iterations(&mut self, n: u64) {
        self.iterations = Some(n);
    }

    /// Overrides the cores that `core` values are checked against (normally the cores this
    /// process may run on, as the OS reports them).
    pub fn set_available_cores(&mut self, cores: Vec<usize>) {
        self.cores = Some(cores);
    }

    /// One [`NetSettings`] per node of `graph`, in node order. Routing nodes get the runtime
    /// keys only. Fails on the first setting that cannot be applied, or on a box whose
    /// implementation `registry` does not know.
    pub fn resolve(&self, graph: &NetGraph, registry: &Registry) -> Result<Vec<NetSettings>, ConfigError> {
        let cores = self
            .cores
            .clone()
            .or_else(|| core_affinity::get_core_ids().map(|ids| ids.into_iter().map(|c| c.id).collect::<Vec<_>>()));
        let ctx = Context {
            graph,
            registry,
            cores: cores.as_deref(),
        };
        let file = self.classify_file(&ctx)?;
        let sets = self.classify_sets(&ctx)?;
        graph
            .nodes
            .iter()
            .map(|node| self.resolve_node(&ctx, node, &file, &sets))
            .collect()
    }

    /// Checks the targets of the file's tables and the values of `[impl.NAME]` tables (so a
    /// bad value there is found even when this graph does not use the implementation).
    fn classify_file<'a>(&'a self, ctx: &Context<'_>) -> Result<Vec<Applied<'a>>, ConfigError> {
        // The tables' names first, at the line that names them.
        for table in &self.tables {
            match &table.scope {
                Scope::Impl(name) if name != ROUTING_IMPL && ctx.registry.get(name).is_none() => {
                    return Err(unknown_implementation(&table.origin, name, ctx.registry));
                }
                Scope::Net(name) if ctx.instance_target(&table.origin, name)?.is_none() => {
                    return Err(unknown_instance(&table.origin, name, ctx));
                }
                _ => {}
            }
        }
        let mut applied = Vec::new();
        for entry in &self.file {
            let target = match &entry.scope {
                Scope::Default => {
                    let known = all_keys(ctx.registry);
                    let open = ctx.registry.specs().iter().any(|s| s.open_config);
                    if !open && !known.contains(entry.key.as_str()) {
                        return Err(unknown_key(entry, None, known.into_iter()));
                    }
                    Target::All
                }
                Scope::Impl(name) => {
                    let spec = if name == ROUTING_IMPL {
                        None
                    } else {
                        Some(
                            ctx.registry
                                .get(name)
                                .ok_or_else(|| unknown_implementation(&entry.origin, name, ctx.registry))?,
                        )
                    };
                    check_value(ctx, entry, spec, name)?;
                    Target::Impl(name.clone())
                }
                Scope::Net(name) => ctx
                    .instance_target(&entry.origin, name)?
                    .ok_or_else(|| unknown_instance(&entry.origin, name, ctx))?,
            };
            applied.push(Applied { entry, target });
        }
        Ok(applied)
    }

    /// Decides for each `--set` whether its target is an instance or an implementation.
    fn classify_sets<'a>(&'a self, ctx: &Context<'_>) -> Result<Vec<Applied<'a>>, ConfigError> {
        let mut applied = Vec::new();
        for entry in &self.sets {
            let Scope::Net(name) = &entry.scope else {
                continue;
            };
            let target = match ctx.instance_target(&entry.origin, name)? {
                Some(instance) => instance,
                None if ctx.graph.nodes.iter().any(|n| &node_impl(n) == name) => Target::Impl(name.clone()),
                None => {
                    let choices: BTreeSet<String> = ctx.instance_names().into_iter().chain(ctx.impl_names()).collect();
                    return Err(ConfigError::new(
                        entry.origin.clone(),
                        format!("'{name}' is neither an instance nor an implementation in this net"),
                    )
                    .choices(choices)
                    .unknown(name));
                }
            };
            applied.push(Applied { entry, target });
        }
        Ok(applied)
    }

    fn resolve_node(
        &self,
        ctx: &Context<'_>,
        node: &Node,
        file: &[Applied<'_>],
        sets: &[Applied<'_>],
    ) -> Result<NetSettings, ConfigError> {
        let spec = match node.kind {
            NodeKind::Box => Some(ctx.registry.get(&node.func).ok_or_else(|| {
                ConfigError::new(
                    Origin::BuiltIn,
                    format!("unknown implementation '{}' (instance '{}')", node.func, node.label),
                )
                .net(&node.label)
                .choices(ctx.registry.names())
            })?),
            NodeKind::RoutingNode => None,
            NodeKind::Unexpanded => return Ok(NetSettings::default()),
        };
        let mut settings = NetSettings::default();
        if let Some(spec) = spec {
            settings.box_config = BoxConfig::with_defaults(&node.label, spec)
                .map_err(|m| ConfigError::new(Origin::BuiltIn, m).net(&node.label))?;
        }
        let mut apply = |entry: &Entry, target: &Target| {
            // Named as the entry named it: `Snk#3` for `[net."Snk#3"]`, where `Snk` may stand
            // for several nodes.
            let net = match target {
                Target::Node(_) => format!("{}#{}", node.label, node.id),
                _ => node.label.clone(),
            };
            apply_entry(ctx, spec, &mut settings, entry, &net)
        };

        for rank in [Rank::All, Rank::Impl, Rank::Instance, Rank::Node] {
            for a in file
                .iter()
                .filter(|a| a.target.rank() == rank && a.target.matches(node))
            {
                apply(a.entry, &a.target)?;
            }
        }
        if let (Some(n), Some(spec)) = (self.iterations, spec)
            && spec.config.iter().any(|k| k.name == "count")
        {
            apply(
                &Entry {
                    scope: Scope::Default,
                    key: "count".to_string(),
                    value: n.to_string(),
                    origin: Origin::IterationCount,
                },
                &Target::All,
            )?;
        }
        for rank in [Rank::Impl, Rank::Instance, Rank::Node] {
            for a in sets
                .iter()
                .filter(|a| a.target.rank() == rank && a.target.matches(node))
            {
                apply(a.entry, &a.target)?;
            }
        }
        Ok(settings)
    }
}

/// The graph and registry a configuration is resolved against.
struct Context<'g> {
    graph: &'g NetGraph,
    registry: &'g Registry,
    cores: Option<&'g [usize]>,
}

impl Context<'_> {
    /// `NAME` or `NAME#ID` as an instance target, `None` when no node is named `NAME`.
    fn instance_target(&self, origin: &Origin, name: &str) -> Result<Option<Target>, ConfigError> {
        if let Some((label, id)) = name.split_once('#') {
            let node = id.parse::<usize>().ok().and_then(|id| self.graph.nodes.get(id));
            return match node {
                Some(node) if node.label == label => Ok(Some(Target::Node(node.id))),
                _ => {
                    let ids = self
                        .graph
                        .nodes
                        .iter()
                        .filter(|n| n.label == label)
                        .map(|n| format!("{label}#{}", n.id));
                    Err(ConfigError::new(origin.clone(), format!("no node '{name}' in this net")).choices(capped(ids)))
                }
            };
        }
        Ok(self
            .graph
            .nodes
            .iter()
            .any(|n| n.label == name)
            .then(|| Target::Instance(name.to_string())))
    }

    fn instance_names(&self) -> Vec<String> {
        let names: BTreeSet<&str> = self.graph.nodes.iter().map(|n| n.label.as_str()).collect();
        capped(names.into_iter().map(str::to_string))
    }

    fn impl_names(&self) -> Vec<String> {
        let names: BTreeSet<String> = self.graph.nodes.iter().map(node_impl).collect();
        capped(names.into_iter())
    }
}

/// A file entry or `--set` with the nodes it is meant for.
struct Applied<'a> {
    entry: &'a Entry,
    target: Target,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    All,
    Impl(String),
    Instance(String),
    Node(usize),
}

/// Precedence of targets, least specific first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rank {
    All,
    Impl,
    Instance,
    Node,
}

impl Target {
    fn rank(&self) -> Rank {
        match self {
            Target::All => Rank::All,
            Target::Impl(_) => Rank::Impl,
            Target::Instance(_) => Rank::Instance,
            Target::Node(_) => Rank::Node,
        }
    }

    fn matches(&self, node: &Node) -> bool {
        match self {
            Target::All => true,
            Target::Impl(name) => &node_impl(node) == name,
            Target::Instance(name) => &node.label == name,
            Target::Node(id) => node.id == *id,
        }
    }
}

/// The implementation name a node is configured by (`smx_rn` for routing nodes).
fn node_impl(node: &Node) -> String {
    match node.kind {
        NodeKind::RoutingNode => ROUTING_IMPL.to_string(),
        _ => node.func.clone(),
    }
}

/// Applies one setting to one node, `net` as the entry named it. `[default]` keys the node
/// does not know are skipped.
fn apply_entry(
    ctx: &Context<'_>,
    spec: Option<&BoxSpec>,
    settings: &mut NetSettings,
    entry: &Entry,
    net: &str,
) -> Result<(), ConfigError> {
    let in_place = |m: String| ConfigError::new(entry.origin.clone(), m).net(net).key(&entry.key);
    if net_keys::is_net_key(&entry.key) {
        net_keys::apply(settings, &entry.key, &entry.value, ctx.cores).map_err(in_place)?;
        if let Some((_, origin)) = settings.process.as_mut().filter(|_| entry.key == "process") {
            *origin = entry.origin.clone();
        }
        if entry.key == "core" {
            settings.core_origin = Some(entry.origin.clone());
        }
        return Ok(());
    }
    let key = spec.and_then(|s| s.config.iter().find(|k| k.name == entry.key));
    match key {
        Some(key) => {
            let value = parse_value(key, &entry.value).map_err(in_place)?;
            settings.box_config.values.insert(key.name.to_string(), value);
            settings.box_origins.insert(key.name.to_string(), entry.origin.clone());
            Ok(())
        }
        // A spec with an open configuration (a C box) takes every key, as text.
        None if spec.is_some_and(|s| s.open_config) => {
            let value = smx_box::ConfigValue::Str(entry.value.clone());
            settings.box_config.values.insert(entry.key.clone(), value);
            Ok(())
        }
        None if entry.scope == Scope::Default => Ok(()),
        None => Err(unknown_key(entry, Some(net), keys_of(spec).into_iter())),
    }
}

/// Checks key and value of an `[impl.NAME]` entry against the implementation's spec.
fn check_value(ctx: &Context<'_>, entry: &Entry, spec: Option<&BoxSpec>, name: &str) -> Result<(), ConfigError> {
    let in_place = |m: String| {
        ConfigError::new(entry.origin.clone(), m)
            .implementation(name)
            .key(&entry.key)
    };
    if net_keys::is_net_key(&entry.key) {
        let mut scratch = NetSettings::default();
        return net_keys::apply(&mut scratch, &entry.key, &entry.value, ctx.cores).map_err(in_place);
    }
    match spec.and_then(|s| s.config.iter().find(|k| k.name == entry.key)) {
        Some(key) => parse_value(key, &entry.value).map(drop).map_err(in_place),
        None if spec.is_some_and(|s| s.open_config) => Ok(()),
        None => Err(unknown_key(entry, None, keys_of(spec).into_iter()).implementation(name)),
    }
}

fn unknown_implementation(origin: &Origin, name: &str, registry: &Registry) -> ConfigError {
    ConfigError::new(origin.clone(), format!("unknown implementation '{name}'"))
        .choices(registry.names().into_iter().chain([ROUTING_IMPL]))
        .unknown(name)
}

fn unknown_instance(origin: &Origin, name: &str, ctx: &Context<'_>) -> ConfigError {
    ConfigError::new(origin.clone(), format!("no instance named '{name}' in this net"))
        .choices(ctx.instance_names())
        .unknown(name)
}

fn unknown_key(entry: &Entry, net: Option<&str>, known: impl Iterator<Item = String>) -> ConfigError {
    let err = ConfigError::new(entry.origin.clone(), "unknown key")
        .key(&entry.key)
        .choices(known);
    match net {
        Some(net) => err.net(net),
        None => err,
    }
}

/// The keys a net of `spec` accepts: its own, then the runtime's.
fn keys_of(spec: Option<&BoxSpec>) -> Vec<String> {
    let own = spec.into_iter().flat_map(|s| s.config.iter().map(|k| k.name));
    own.chain(NET_KEYS.iter().map(|k| k.name)).map(str::to_string).collect()
}

/// Every key any registered implementation or the runtime knows (for `[default]`).
fn all_keys(registry: &Registry) -> BTreeSet<String> {
    let own = registry
        .specs()
        .into_iter()
        .flat_map(|s| s.config.iter().map(|k| k.name));
    own.chain(NET_KEYS.iter().map(|k| k.name)).map(str::to_string).collect()
}

/// `boxes = [...]` of a config file's text: an array of paths, relative to the file.
fn box_libraries(path: &Path, text: &str) -> Result<Vec<PathBuf>, ConfigError> {
    let Ok(document) = toml::de::DeTable::parse(text) else {
        return Ok(Vec::new());
    };
    let Some(value) = document.get_ref().get(file::BOXES_KEY) else {
        return Ok(Vec::new());
    };
    let line = text[..value.span().start.min(text.len())].matches('\n').count() + 1;
    let bad = || {
        ConfigError::new(
            Origin::File {
                path: path.to_path_buf(),
                line,
            },
            "must be an array of library paths, e.g. boxes = [\"build/libmine.so\"]",
        )
        .key(file::BOXES_KEY)
    };
    let array = value.get_ref().as_array().ok_or_else(bad)?;
    let dir = path.parent().unwrap_or(Path::new(""));
    array
        .iter()
        .map(|v| match v.get_ref().as_str() {
            Some(s) if !s.is_empty() => Ok(dir.join(s)),
            _ => Err(bad()),
        })
        .collect()
}

fn capped(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut list: Vec<String> = items.take(MAX_CHOICES + 1).collect();
    if list.len() > MAX_CHOICES {
        list.truncate(MAX_CHOICES);
        list.push("...".to_string());
    }
    list
}

#[cfg(test)]
#[path = "layers_tests.rs"]
mod tests;
