//! Opening box libraries (`--boxes LIB.so`) and resolving a net's C implementations in them.
//!
//! Libraries are opened with `RTLD_NOW | RTLD_LOCAL`: `RTLD_NOW` makes a library that needs an
//! `smx_*` function this program does not have fail at once (with the symbol's name) instead of
//! in the middle of a run; `RTLD_LOCAL` keeps the symbols of two libraries apart, so both may
//! have a box `a`. A symbol counts as provided by a library only when it is defined in that
//! library itself (`dladdr`), not in one it depends on (libc's `free` is no box). Libraries
//! are never closed: C code may have registered `atexit` handlers, and message copy/destroy
//! functions must stay callable for as long as a message could exist.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString, c_void};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
use smx_box::BoxSpec;
use smx_graph::{NetGraph, Node, NodeKind, PortMode};

use crate::cbox::{CBox, Functions, Implementation, NodePorts, PortInfo};

/// A library could not be used, or a net's box could not be resolved in the libraries. The
/// message names the library, the symbol and the box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError(pub String);

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

/// One opened box library.
#[derive(Debug)]
pub struct BoxLibrary {
    /// The path as the user gave it (for messages).
    pub path: PathBuf,
    /// The path it was opened by (canonical).
    pub canonical: PathBuf,
    lib: &'static Library,
}

impl BoxLibrary {
    /// The address of `name` if this library itself defines it.
    fn own_symbol(&self, name: &str) -> Option<*mut c_void> {
        let cname = CString::new(name).ok()?;
        // SAFETY: looking a symbol up does not run code; the address is only compared and
        // later called with the box signature the ABI prescribes.
        let sym = unsafe { self.lib.get::<*mut c_void>(cname.as_bytes_with_nul()) }.ok()?;
        let addr = *sym;
        if addr.is_null() {
            return None;
        }
        // SAFETY: dladdr only reads the loader's tables.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
            return None;
        }
        // SAFETY: a C string of the loader's.
        let file = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
        let file = std::fs::canonicalize(&file).unwrap_or_else(|_| PathBuf::from(file));
        (file == self.canonical).then_some(addr)
    }
}

/// The libraries of one run, in the order given.
#[derive(Debug, Default)]
pub struct BoxLibraries {
    libs: Vec<BoxLibrary>,
}

/// What a library offers: a box implementation `name` (`name`, `name_init`, `name_cleanup`),
/// or an incomplete one (`missing` lists what is not there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provided {
    pub library: PathBuf,
    pub name: String,
    pub missing: Vec<String>,
}

impl BoxLibraries {
    /// No library.
    pub fn none() -> BoxLibraries {
        BoxLibraries::default()
    }

    /// Opens every library (a path given twice is opened once). Fails on the first one that
    /// cannot be opened, with the loader's reason (a missing file, an `smx_*` function this
    /// program does not provide, a library of the wrong architecture).
    pub fn open(paths: &[PathBuf]) -> Result<BoxLibraries, LoadError> {
        let mut libs: Vec<BoxLibrary> = Vec::new();
        if paths.is_empty() {
            return Ok(BoxLibraries { libs });
        }
        let mut canonical_paths = Vec::with_capacity(paths.len());
        for path in paths {
            let canonical = std::fs::canonicalize(path)
                .map_err(|e| LoadError(format!("cannot load box library '{}': {e}", path.display())))?;
            canonical_paths.push(canonical);
        }
        crate::export_table();
        if !crate::abi_is_exported() {
            return Err(LoadError(
                "this program does not export the smx_* C functions that box libraries call, so no C box can be \
                 loaded: link it with -Wl,--export-dynamic-symbol=smx_* (see the smx-cbox documentation)"
                    .to_string(),
            ));
        }
        for (path, canonical) in paths.iter().zip(canonical_paths) {
            if libs.iter().any(|l| l.canonical == canonical) {
                continue;
            }
            crate::elf::check_loadable(&canonical)
                .map_err(|why| LoadError(format!("cannot load box library '{}': {why}", path.display())))?;
            // SAFETY: opening a library runs its initialisers: that is what the user asked for
            // by naming it.
            let lib = unsafe { Library::open(Some(&canonical), RTLD_NOW | RTLD_LOCAL) }
                .map_err(|e| LoadError(open_error(path, &e.to_string())))?;
            libs.push(BoxLibrary {
                path: path.clone(),
                canonical,
                lib: keep(lib),
            });
        }
        Ok(BoxLibraries { libs })
    }

    pub fn is_empty(&self) -> bool {
        self.libs.is_empty()
    }

    pub fn libraries(&self) -> &[BoxLibrary] {
        &self.libs
    }

    /// The libraries' paths as given, for messages (`a.so, b.so`).
    pub fn names(&self) -> String {
        let names: Vec<String> = self.libs.iter().map(|l| format!("'{}'", l.path.display())).collect();
        names.join(", ")
    }

    /// A spec for every box implementation of `graph` that `is_known` does not know and a
    /// library provides. An implementation no library has is left out (the caller reports it
    /// as unknown); one that two libraries have, or whose library lacks `NAME`, `NAME_init` or
    /// `NAME_cleanup`, is an error naming the libraries, the symbol and the box.
    pub fn specs_for(&self, graph: &NetGraph, is_known: impl Fn(&str) -> bool) -> Result<Vec<BoxSpec>, LoadError> {
        let mut specs = Vec::new();
        if self.libs.is_empty() {
            return Ok(specs);
        }
        let mut by_impl: BTreeMap<&str, Vec<&Node>> = BTreeMap::new();
        let mut order: Vec<&str> = Vec::new();
        for node in graph
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Box && !is_known(&n.func))
        {
            let entry = by_impl.entry(node.func.as_str()).or_default();
            if entry.is_empty() {
                order.push(node.func.as_str());
            }
            entry.push(node);
        }
        let mut errors = Vec::new();
        for name in order {
            let nodes = &by_impl[name];
            match self.resolve(name, nodes) {
                Ok(Some(implementation)) => specs.push(spec(implementation)),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(specs)
        } else {
            Err(LoadError(errors.join("\n")))
        }
    }

    fn resolve(&self, name: &str, nodes: &[&Node]) -> Result<Option<Implementation>, String> {
        let symbols = [name.to_string(), format!("{name}_init"), format!("{name}_cleanup")];
        let found: Vec<(&BoxLibrary, [Option<*mut c_void>; 3])> = self
            .libs
            .iter()
            .map(|lib| (lib, [0, 1, 2].map(|k| lib.own_symbol(&symbols[k]))))
            .filter(|(_, syms)| syms[0].is_some() || syms[1].is_some())
            .collect();
        let first = nodes[0];
        let boxes = box_list(nodes);
        let (lib, syms) = match found.as_slice() {
            [] => return Ok(None),
            [one] => *one,
            several => {
                let libs: Vec<String> = several.iter().map(|(l, _)| format!("'{}'", l.path.display())).collect();
                return Err(format!(
                    "{boxes} (implementation '{name}'): symbol '{name}' is provided by {}; give only one of these \
                     libraries",
                    libs.join(" and ")
                ));
            }
        };
        let missing: Vec<&str> = (0..3)
            .filter(|&k| syms[k].is_none())
            .map(|k| symbols[k].as_str())
            .collect();
        if !missing.is_empty() {
            let plural = if missing.len() == 1 { "symbol" } else { "symbols" };
            return Err(format!(
                "{boxes} (implementation '{name}', line {}): box library '{}' has no {plural} {} (a C box is the \
                 three functions {name}, {name}_init and {name}_cleanup)",
                first.line,
                lib.path.display(),
                missing.iter().map(|m| format!("'{m}'")).collect::<Vec<_>>().join(", ")
            ));
        }
        let [Some(step), Some(init), Some(cleanup)] = syms else {
            unreachable!("checked above")
        };
        // SAFETY: the ABI prescribes these signatures for the three symbols of a box.
        let functions = unsafe {
            Functions {
                step: std::mem::transmute::<*mut c_void, crate::abi::StepFn>(step),
                init: std::mem::transmute::<*mut c_void, crate::abi::InitFn>(init),
                cleanup: std::mem::transmute::<*mut c_void, crate::abi::CleanupFn>(cleanup),
            }
        };
        Ok(Some(Implementation {
            name: name.to_string(),
            library: lib.path.display().to_string(),
            functions,
            nodes: nodes.iter().map(|n| node_ports(n)).collect(),
        }))
    }

    /// What the libraries offer, read from their dynamic symbol tables: every defined function
    /// `X` with `X_init` or `X_cleanup` beside it, or `X_init` beside `X_cleanup`.
    pub fn provided(&self) -> Result<Vec<Provided>, LoadError> {
        let mut all = Vec::new();
        for lib in &self.libs {
            let names = crate::elf::defined_functions(&lib.canonical)
                .map_err(|e| LoadError(format!("cannot list the symbols of '{}': {e}", lib.path.display())))?;
            all.extend(triples(&names).into_iter().map(|(name, missing)| Provided {
                library: lib.path.clone(),
                name,
                missing,
            }));
        }
        Ok(all)
    }
}

/// Box implementations among a library's defined function names: `(name, missing symbols)`.
pub fn triples(names: &[String]) -> Vec<(String, Vec<String>)> {
    let set: std::collections::BTreeSet<&str> = names.iter().map(String::as_str).collect();
    let mut candidates: std::collections::BTreeSet<String> = Default::default();
    for n in &set {
        if let Some(base) = n.strip_suffix("_init").or_else(|| n.strip_suffix("_cleanup"))
            && !base.is_empty()
        {
            candidates.insert(base.to_string());
        }
    }
    candidates
        .into_iter()
        .filter_map(|base| {
            let want = [base.clone(), format!("{base}_init"), format!("{base}_cleanup")];
            let missing: Vec<String> = want.iter().filter(|w| !set.contains(w.as_str())).cloned().collect();
            // `X_init` alone is no box (nor is `smx_*`, the ABI, if a library defines it).
            (missing.len() <= 1 && !base.starts_with("smx_")).then_some((base, missing))
        })
        .collect()
}

fn box_list(nodes: &[&Node]) -> String {
    let mut labels: Vec<String> = Vec::new();
    for n in nodes {
        let quoted = format!("'{}'", n.label);
        if !labels.contains(&quoted) {
            labels.push(quoted);
        }
    }
    let more = labels.len() > 3;
    labels.truncate(3);
    let list = labels.join(", ");
    if more {
        format!("boxes {list}, ...")
    } else if nodes.len() > 1 && labels.len() > 1 {
        format!("boxes {list}")
    } else {
        format!("box {list}")
    }
}

/// The declared ports of one node as the C box sees them.
pub fn node_ports(node: &Node) -> NodePorts {
    let ports = |mode: PortMode| {
        node.ports
            .iter()
            .filter(|p| p.mode == mode)
            .map(|p| PortInfo {
                name: p.alt_name.clone().unwrap_or_else(|| p.name.clone()),
                decoupled: p.decoupled,
                open: p.open,
            })
            .collect()
    };
    NodePorts {
        id: node.id,
        label: node.label.clone(),
        inputs: ports(PortMode::In),
        outputs: ports(PortMode::Out),
    }
}

/// What lives until the process exits (libraries, the names of specs), kept reachable from
/// here so that a leak checker does not count it as lost.
static KEPT: std::sync::Mutex<Vec<&'static (dyn std::any::Any + Sync)>> = std::sync::Mutex::new(Vec::new());

fn keep<T: std::any::Any + Sync>(value: T) -> &'static T {
    let kept: &'static T = Box::leak(Box::new(value));
    KEPT.lock().unwrap_or_else(|e| e.into_inner()).push(kept);
    kept
}

fn keep_str(text: String) -> &'static str {
    keep(text).as_str()
}

fn spec(implementation: Implementation) -> BoxSpec {
    let name = keep_str(implementation.name.clone());
    let summary = keep_str(format!("C box from {}", implementation.library));
    let implementation = Arc::new(implementation);
    BoxSpec::named(name)
        .summary(summary)
        .ports_from_net()
        .open_config()
        .factory(move |config| Ok(Box::new(CBox::new(implementation.clone(), config)?)))
}

/// The loader's reason, with a hint for the usual causes.
fn open_error(path: &Path, reason: &str) -> String {
    let mut message = format!("cannot load box library '{}': {reason}", path.display());
    if let Some(at) = reason.find("undefined symbol: ") {
        let symbol = reason[at + "undefined symbol: ".len()..]
            .split_whitespace()
            .next()
            .unwrap_or("");
        if symbol.starts_with("smx_") {
            message.push_str(&format!(
                " ('{symbol}' is not a function of this smxrun's C ABI: was the library built against another \
                 include/smx_abi.h?)"
            ));
        } else {
            message.push_str(&format!(
                " (the library needs '{symbol}' from another library: link it in, e.g. -lstdc++ for C++ boxes, -lm)"
            ));
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triples_are_found_and_incomplete_ones_named() {
        let names: Vec<String> = [
            "a",
            "a_init",
            "a_cleanup",
            "b",
            "b_init",
            "c_init",
            "start_routine_a",
            "free",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            triples(&names),
            vec![
                ("a".to_string(), vec![]),
                ("b".to_string(), vec!["b_cleanup".to_string()])
            ]
        );
    }

    #[test]
    fn a_missing_file_is_named() {
        let err = BoxLibraries::open(&[PathBuf::from("/nonexistent/libx.so")]).unwrap_err();
        assert!(err.0.contains("/nonexistent/libx.so"), "{err}");
    }
}
