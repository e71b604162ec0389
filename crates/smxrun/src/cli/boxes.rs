//! `smxrun boxes [NAME]`: what implementations a net can use, like `gst-inspect`.
//!
//! Without a name: one line per implementation. With a name: its ports and its configuration
//! keys (type, default, choices), then the runtime keys every net accepts, with the ways to
//! set them.

use std::fmt::Write;

use super::exit::CliError;
use smx_box::{BoxSpec, ConfigKey, ValueKind};
use smx_cbox::{BoxLibraries, Provided};
use smx_runtime::Registry;
use smx_runtime::config::NET_KEYS;

/// Like [`describe`], with the C box implementations `libraries` provide (read from their
/// dynamic symbol tables: a box is a function `NAME` beside `NAME_init` and `NAME_cleanup`).
pub fn describe_with(registry: &Registry, libraries: &BoxLibraries, name: Option<&str>) -> Result<String, CliError> {
    if libraries.is_empty() {
        return describe(registry, name);
    }
    let provided = libraries.provided().map_err(|e| CliError::rejected(e.0))?;
    match name {
        Some(name) if registry.get(name).is_none() => {
            let found: Vec<&Provided> = provided.iter().filter(|p| p.name == name).collect();
            if found.is_empty() {
                return Err(CliError::rejected(format!(
                    "unknown box implementation '{name}' (known boxes: {}; none in {}){}",
                    registry.names().join(", "),
                    libraries.names(),
                    misspelt(registry, name)
                )));
            }
            Ok(c_details(name, &found))
        }
        Some(name) => describe(registry, Some(name)),
        None => {
            let mut out = list(registry);
            out.push_str(&c_list(libraries, &provided));
            Ok(out)
        }
    }
}

fn c_list(libraries: &BoxLibraries, provided: &[Provided]) -> String {
    let mut out = String::new();
    for lib in libraries.libraries() {
        let mine: Vec<&Provided> = provided.iter().filter(|p| p.library == lib.path).collect();
        let _ = writeln!(
            out,
            "
C boxes in {} ({}):",
            lib.path.display(),
            mine.len()
        );
        let width = mine.iter().map(|p| p.name.len()).max().unwrap_or(0);
        for p in &mine {
            let note = if p.missing.is_empty() {
                format!("{0}, {0}_init, {0}_cleanup", p.name)
            } else {
                format!("incomplete: no {} (cannot be used)", p.missing.join(", "))
            };
            let _ = writeln!(out, "  {:width$}  {note}", p.name);
        }
        if mine.is_empty() {
            out.push_str("  (none: no function NAME with NAME_init and NAME_cleanup beside it)\n");
        }
    }
    out.push_str(
        "\nA C box's ports are whatever the net declares (in declaration order), and it takes every configuration \
         key; `smxrun headers NET.smx -o DIR` writes its port header.\n",
    );
    out
}

fn c_details(name: &str, found: &[&Provided]) -> String {
    let mut out = format!("{name}\n  C box implementation\n\n");
    for p in found {
        if p.missing.is_empty() {
            let _ = writeln!(out, "In {}: {name}, {name}_init, {name}_cleanup", p.library.display());
        } else {
            let _ = writeln!(
                out,
                "In {}: incomplete, no {} (a run that uses it fails to start)",
                p.library.display(),
                p.missing.join(", ")
            );
        }
    }
    if found.len() > 1 {
        out.push_str("Provided by more than one library: a run given both fails to start.\n");
    }
    out.push_str(
        "\nPorts:\n  whatever the net declares, in declaration order (`smxrun headers NET.smx -o DIR` writes \
         the index enums)\n\nConfiguration keys:\n  every key of [default], [impl.NAME], [net.INSTANCE] and --set \
         reaches smx_config_get_*\n\nRuntime keys (every net):\n",
    );
    runtime_keys(&mut out);
    out
}

/// The keys every net takes (`core`, `priority`, ...), as a table.
fn runtime_keys(out: &mut String) {
    let rows: Vec<[String; 3]> = NET_KEYS
        .iter()
        .map(|k| {
            [
                k.name.to_string(),
                if k.name == "process" { "string" } else { "integer" }.to_string(),
                k.help.to_string(),
            ]
        })
        .collect();
    table(out, &rows);
}

/// What `[impl.smx_rn]` configures: the routing nodes, which are not boxes but take the
/// runtime keys, so the name is valid in a configuration and described here too.
fn routing_node() -> String {
    let mut out = String::from(
        "smx_rn: the routing node, not a box: the compiler puts one where a channel fans out or in \
         (`A.(B|C)`, `(A|B).C`); each runs on a thread of its own. \
         [impl.smx_rn] sets the runtime keys of all of them, [net.\"smx_rn#ID\"] one.\n\nRuntime keys:\n",
    );
    runtime_keys(&mut out);
    out
}

/// The listing of all of `registry`, or the details of one implementation.
pub fn describe(registry: &Registry, name: Option<&str>) -> Result<String, CliError> {
    match name {
        None => Ok(list(registry)),
        Some("smx_rn") => Ok(routing_node()),
        Some(name) => registry.get(name).map(details).ok_or_else(|| {
            CliError::rejected(format!(
                "unknown box implementation '{name}' (known boxes: {}){}",
                registry.names().join(", "),
                misspelt(registry, name)
            ))
        }),
    }
}

/// "; did you mean 'X'?" where `name` is close to a known implementation, as a net's unknown
/// implementation is told.
fn misspelt(registry: &Registry, name: &str) -> String {
    super::load::closest_implementation(registry, name)
        .map(|known| format!("; did you mean '{known}'?"))
        .unwrap_or_default()
}

fn list(registry: &Registry) -> String {
    let specs = registry.specs();
    let width = specs.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for spec in &specs {
        let _ = writeln!(out, "{:width$}  {}", spec.name, spec.summary);
    }
    let _ = writeln!(
        out,
        "\n{} boxes; `smxrun boxes NAME` shows a box's ports and configuration keys.",
        specs.len()
    );
    out
}

fn details(spec: &BoxSpec) -> String {
    let mut out = format!("{}\n  {}\n\nPorts:\n", spec.name, spec.summary);
    let inputs = spec.inputs().iter().map(|p| ("in", p));
    let outputs = spec.outputs().iter().map(|p| ("out", p));
    let mut rows: Vec<[String; 3]> = inputs
        .chain(outputs)
        .map(|(dir, p)| {
            let optional = if p.optional { " (optional)" } else { "" };
            [
                format!("{dir} {}", p.name),
                String::new(),
                format!("{}{optional}", p.help),
            ]
        })
        .collect();
    if spec.ports == smx_box::Ports::FromNet {
        out.push_str("  whatever the net declares, in declaration order\n");
    } else if rows.is_empty() {
        out.push_str("  (none)\n");
    }
    table(&mut out, &rows);
    out.push_str(&threading(spec));

    let _ = writeln!(
        out,
        "\nConfiguration keys (--set INSTANCE.KEY=VALUE, --set {0}.KEY=VALUE, or [net.INSTANCE] / [impl.{0}] \
         in a --config file):",
        spec.name
    );
    rows = spec.config.iter().map(key_row).collect();
    if rows.is_empty() {
        out.push_str("  (none)\n");
    }
    table(&mut out, &rows);

    out.push_str("\nRuntime keys (every net):\n");
    rows = NET_KEYS
        .iter()
        .map(|k| {
            [
                k.name.to_string(),
                if k.name == "process" { "string" } else { "integer" }.to_string(),
                k.help.to_string(),
            ]
        })
        .collect();
    table(&mut out, &rows);
    out
}

/// What the spec lets the runtime do with the box's thread (nothing to say when neither).
fn threading(spec: &BoxSpec) -> String {
    let mut lines = String::new();
    if spec.chainable {
        lines.push_str(
            "  chainable    may run on the thread of the box that feeds it (its step never waits on an input)\n",
        );
    }
    if spec.never_waits {
        lines.push_str(
            "  never waits  its step waits on nothing outside the net: boxes chained behind it keep collecting\n",
        );
    }
    if spec.writes_in_batches {
        lines.push_str(
            "  batches      once its step waited, it writes all it has at hand: boxes chained behind it take a channelful at a time\n",
        );
    }
    if spec.passes_on {
        lines.push_str(
            "  passes on    chained, it takes each message from its feeder's write, which needs no step of its own\n",
        );
    }
    if lines.is_empty() {
        return lines;
    }
    format!("\nThreading:\n{lines}")
}

fn key_row(key: &ConfigKey) -> [String; 3] {
    let kind = match key.kind {
        ValueKind::Int => "integer".to_string(),
        ValueKind::Bool => "boolean".to_string(),
        ValueKind::Str => "string".to_string(),
        ValueKind::Duration => "duration".to_string(),
        ValueKind::Float => "number".to_string(),
        ValueKind::Choice => key.choices.join("|"),
    };
    let default = key
        .default
        .map_or_else(|| "no default".to_string(), |d| format!("default {d}"));
    [key.name.to_string(), kind, format!("{} ({default})", key.help)]
}

/// Rows of three columns, the first two padded to their widest cell.
fn table(out: &mut String, rows: &[[String; 3]]) {
    let w0 = rows.iter().map(|r| r[0].len()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r[1].len()).max().unwrap_or(0);
    for [a, b, c] in rows {
        let line = if w1 == 0 {
            format!("  {a:w0$}  {c}")
        } else {
            format!("  {a:w0$}  {b:w1$}  {c}")
        };
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smx_box::{BoxConfig, BoxError, BoxImpl, PortSpec};

    fn never_built(_: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Err(BoxError::new("listing only"))
    }

    const T_SRC: BoxSpec = BoxSpec::named("t_src")
        .summary("emits numbered messages")
        .outputs(&[PortSpec::new("data").help("the messages")])
        .config(&[
            ConfigKey::int("count").default_value("1000").help("messages to send"),
            ConfigKey::choice("format", &["text", "hex"]).help("how to print"),
        ])
        .create(never_built);

    fn registry() -> Registry {
        Registry::of([
            T_SRC,
            BoxSpec::named("t_longer_name").summary("nothing").create(never_built),
        ])
    }

    #[test]
    fn the_list_has_one_aligned_line_per_box() {
        let text = describe(&registry(), None).unwrap();
        assert!(
            text.starts_with("t_longer_name  nothing\nt_src          emits numbered messages\n"),
            "{text}"
        );
        assert!(text.contains("2 boxes"), "{text}");
    }

    #[test]
    fn details_show_ports_keys_and_runtime_keys() {
        let text = describe(&registry(), Some("t_src")).unwrap();
        assert!(text.contains("  out data  the messages\n"), "{text}");
        assert!(
            text.contains("  count   integer   messages to send (default 1000)\n"),
            "{text}"
        );
        assert!(
            text.contains("  format  text|hex  how to print (no default)\n"),
            "{text}"
        );
        assert!(text.contains("Runtime keys (every net):\n  core "), "{text}");
        let empty = describe(&registry(), Some("t_longer_name")).unwrap();
        assert!(empty.contains("Ports:\n  (none)\n"), "{empty}");
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        let err = describe(&registry(), Some("t_nope")).unwrap_err();
        assert_eq!(
            err.message,
            "unknown box implementation 't_nope' (known boxes: t_longer_name, t_src)"
        );
        let err = describe(&registry(), Some("t_sr")).unwrap_err();
        assert_eq!(
            err.message,
            "unknown box implementation 't_sr' (known boxes: t_longer_name, t_src); did you mean 't_src'?"
        );
    }
}
