//! Composition: from the typed syntax tree to the checked, flattened net graph.
//!
//! The stages follow `../shared/spec/language.md` §3–§4 and the original compiler (smxc):
//! [`declare`] installs declarations in scopes ([`symbols`]) and evaluates every net
//! expression bottom-up ([`eval`]) into its own working graph ([`model`]), composing with
//! [`serial`] and [`routing`] (parallel composition and routing nodes, merged by [`merge`]);
//! [`wrapper`] builds wrapper interfaces; [`flatten`] expands nets and wrappers per use;
//! [`post`] does the final checks and reductions; [`build`] produces the [`NetGraph`];
//! [`usage`] warns of declarations that no `connect` reaches.
//! All diagnostics that smxc also gives carry its exact texts, so that its test suite can be
//! compared; the warnings of [`usage`] are our own, and no program of that suite gets one.
//!
//! Differences from smxc, where smxc crashes or behaves accidentally, are documented at the
//! place they are implemented and summarised in [`DIFFERENCES`].

mod build;
mod context;
mod declare;
mod eval;
mod flatten;
mod merge;
mod model;
mod post;
mod routing;
mod serial;
mod symbols;
mod usage;

/// What the tests of composition share.
#[cfg(test)]
mod test_support {
    use super::{CompileOptions, compile};
    use crate::diag::SourceFile;

    /// Two boxes a test's net joins.
    pub const BOXES: &str = "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\n";

    /// `FILE:LINE:COL: warning: MESSAGE` of each diagnostic of an accepted `text`.
    pub fn warnings(text: &str) -> Vec<String> {
        let source = SourceFile::new("t.smx", text);
        let compiled = compile(&source, &CompileOptions::default());
        assert!(compiled.accepted(), "{:?}", compiled.diagnostics);
        compiled
            .diagnostics
            .iter()
            .map(|d| source.render(d).lines().next().unwrap_or_default().to_owned())
            .collect()
    }
}
mod wrapper;

use crate::diag::{Diagnostic, SourceFile, has_errors};
use crate::syntax::ast;
use smx_graph::NetGraph;

/// Knobs of the original compiler's command line (`-l`, `--tt-prio-*`, `--rt-prio-*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompileOptions {
    /// Channel length used when neither end declares one (`-l`).
    pub default_len: u32,
    /// Priority of a box instantiated directly under `tt` (`--tt-prio-single`).
    pub tt_prio_single: u8,
    /// Priority of routing nodes and nets/wrappers under `tt` (`--tt-prio-network`).
    pub tt_prio_network: u8,
    pub rt_prio_single: u8,
    pub rt_prio_network: u8,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            default_len: 1,
            tt_prio_single: 3,
            tt_prio_network: 2,
            rt_prio_single: 1,
            rt_prio_network: 1,
        }
    }
}

/// The outcome of compiling one program: the graph is produced even when errors were found
/// (like smxc), but only an accepted program should be run.
#[derive(Debug, Clone, Default)]
pub struct Compiled {
    pub graph: NetGraph,
    pub diagnostics: Vec<Diagnostic>,
}

impl Compiled {
    /// No error diagnostics (warnings allowed).
    pub fn accepted(&self) -> bool {
        !has_errors(&self.diagnostics)
    }
}

/// Stack for the composition thread: evaluation recurses over the expression, and nets with
/// tens of thousands of nested operators must not overflow. The memory is only reserved.
const STACK: usize = 1 << 30;

/// Parses and composes a source file.
pub fn compile(src: &SourceFile, opts: &CompileOptions) -> Compiled {
    on_big_stack(|| {
        let parsed = crate::syntax::parse(src);
        let mut diagnostics = parsed.diagnostics;
        let Some(program) = parsed.program else {
            return Compiled {
                graph: NetGraph::default(),
                diagnostics,
            };
        };
        let mut c = compose_inner(&program, Some(src), opts);
        diagnostics.append(&mut c.diagnostics);
        c.diagnostics = diagnostics;
        drop(program);
        c
    })
}

/// Composes an already parsed program. Without the source text, message texts that quote a
/// line number (`conflicting modes ... (line N)`) leave it out, and nodes have line 0.
pub fn compose(program: &ast::Program, opts: &CompileOptions) -> Compiled {
    on_big_stack(|| compose_inner(program, None, opts))
}

/// A smaller stack to fall back on where 1 GiB of address space cannot be reserved (e.g. under
/// `ulimit -v`): still deep enough for every net short of tens of thousands of nested operators.
const FALLBACK_STACK: usize = 64 << 20;

/// Address space a thread needs beyond its stack: its guard page and signal stack, and room
/// for what the composition allocates.
const STACK_HEADROOM: u64 = 16 << 20;

/// Bytes of address space left under the soft `RLIMIT_AS` (`ulimit -v`), from `/proc/self`;
/// `None` where there is no limit or it cannot be read.
fn address_space_left() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max address space"))?;
    let limit: u64 = line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let size = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kib: u64 = size["VmSize:".len()..].split_whitespace().next()?.parse().ok()?;
    Some(limit.saturating_sub(kib * 1024))
}

/// Runs `f` on a thread with a big stack; if the system refuses one, on a smaller one; if it
/// refuses that too, the outcome is an error diagnostic, never a panic.
fn on_big_stack(f: impl Fn() -> Compiled + Send + Sync) -> Compiled {
    let mut refused = None;
    for stack in [STACK, FALLBACK_STACK] {
        // Near an address-space limit a thread can be granted its stack and then fail inside the
        // standard library (its signal stack), which aborts the process: such a stack is not
        // asked for at all.
        if let Some(left) = address_space_left()
            && left < stack as u64 + STACK_HEADROOM
        {
            refused = Some(format!(
                "only {} MiB of address space are left under the limit (ulimit -v)",
                left >> 20
            ));
            continue;
        }
        let spawned = std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("smx-compose".into())
                .stack_size(stack)
                .spawn_scoped(s, &f)
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
        });
        match spawned {
            Ok(compiled) => return compiled,
            Err(e) => refused = Some(e.to_string()),
        }
    }
    let why = refused.unwrap_or_default();
    Compiled {
        graph: NetGraph::default(),
        diagnostics: vec![Diagnostic::error(
            format!(
                "cannot start the composition thread ({} MiB stack): {why}",
                FALLBACK_STACK >> 20
            ),
            None,
        )],
    }
}

fn compose_inner(program: &ast::Program, src: Option<&SourceFile>, opts: &CompileOptions) -> Compiled {
    let mut c = context::Composer::new(opts, src);
    let (top, iface) = c.program(program);
    let graph = match iface {
        None => NetGraph::default(),
        Some(_) => {
            if c.flat_size(&top) > context::FLAT_LIMIT {
                c.error(
                    format!(
                        "the flattened net would exceed {} instances (nets nested in nets multiply)",
                        context::FLAT_LIMIT
                    ),
                    None,
                );
                NetGraph::default()
            } else {
                let mut flat = c.flatten(&top);
                c.post_process(&mut flat);
                c.build(&flat)
            }
        }
    };
    c.warn_unused();
    Compiled {
        graph,
        diagnostics: c.diags,
    }
}

/// Where this implementation deliberately differs from smxc v0.6.1 (spec §9). None of these
/// cases occurs in smxc's own test suite, which we reproduce exactly.
pub const DIFFERENCES: &[&str] = &[
    "`A(out x) | B(in x)`: `conflicting modes` like `!` (smxc silently connects A -> B, spec §9.7).",
    "Routing after an operator pairs only ports of different operands (smxc pairs any two ports of the \
     composite, joining ports a serial operator refused and re-reporting refused pairs, spec §9.8).",
    "Two routing nodes merged after a serial connection stay connected (smxc re-exposes the bundle, \
     so a later `.C` attaches C to it, spec §9.9).",
    "Prototype port counting includes the live bundle port of merged routing nodes (spec §9.17).",
    "`N = ...` when N already names a box, net or wrapper of the same scope: `redefinition of 'N'` \
     (smxc crashes, spec §9.15); a name of an outer scope is shadowed.",
    "Using a net whose definition failed evaluates to nothing without a further message (smxc crashes).",
    "Wrapper null ports `(a, b)` switch the named body ports off (smxc reports `single mode` and crashes).",
    "`tf[...]` is an error (smxc silently produces an empty graph, spec §9.10).",
    "Symbol keys are (scope, name): no false `redefinition` from key concatenation (spec §9.14).",
    "The decoupling push over routing nodes stops on cycles (smxc loops forever, spec §9.20).",
    "`open` ports never self-connect through the box feedback rule.",
    "A net whose flattened form would exceed 20 million instances is refused before flattening.",
    "A box, net or wrapper that no `connect` uses is a warning at its name (smxc says nothing).",
];
