//! `smxrun headers NET.smx -o DIR`: the port headers of a net's C box implementations.
//!
//! For every implementation NAME the net declares (and that is not built in), two files in the
//! original generator's spellings (docs/c-abi.md §8):
//!
//! * `NAME_sig.h`: `SMX_INDEGREE_NAME` / `SMX_OUTDEGREE_NAME` and the port index enums
//!   `SMX_PORT_IDX_NAME_in_PORT` / `SMX_PORT_IDX_NAME_out_PORT`, one entry per declared port in
//!   declaration order, named by the implementation's port name (`x` for `y(x)`): the indices
//!   the runtime uses for `smx_read(h, i)` / `smx_write(h, o, m)`;
//! * `NAME.h`: includes `smxrts.h` and `NAME_sig.h`, declares `NAME`, `NAME_init`,
//!   `NAME_cleanup` and `start_routine_NAME` with C linkage.
//!
//! Two declarations of one implementation with different port lists, and names that cannot be
//! C identifiers or would clash as global symbols, are errors.

use std::collections::BTreeMap;

use smx_graph::{NetGraph, Node, NodeKind, PortMode};

/// One file to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub file_name: String,
    pub text: String,
}

/// The ports of one implementation: `(direction, implementation port name)` in order.
type Signature = Vec<(PortMode, String)>;

fn signature(node: &Node) -> Signature {
    node.ports
        .iter()
        .map(|p| (p.mode, p.alt_name.clone().unwrap_or_else(|| p.name.clone())))
        .collect()
}

/// The headers of every implementation of `graph` that `is_builtin` does not know, in the
/// order the net first uses them; `net_name` names the net in the files' comments. With
/// `sig_only` only the `NAME_sig.h` files (for box sources that bring their own `NAME.h`).
/// The error lists every problem, one per line.
pub fn generate(
    graph: &NetGraph,
    net_name: &str,
    is_builtin: impl Fn(&str) -> bool,
    sig_only: bool,
) -> Result<Vec<Header>, String> {
    let (order, first, mut errors) = first_declarations(graph, net_name, is_builtin);
    for &name in &order {
        errors.extend(name_problems(name, first[name], &order, net_name));
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    let mut headers = Vec::new();
    for name in order {
        let sig = signature(first[name]);
        headers.push(Header {
            file_name: format!("{name}_sig.h"),
            text: sig_header(name, &sig, net_name),
        });
        if !sig_only {
            headers.push(Header {
                file_name: format!("{name}.h"),
                text: box_header(name, net_name),
            });
        }
    }
    Ok(headers)
}

/// The implementations of the net's own boxes in order of first use, the box that first
/// declares each, and an error for every later box that declares one with other ports.
fn first_declarations<'g>(
    graph: &'g NetGraph,
    net_name: &str,
    is_builtin: impl Fn(&str) -> bool,
) -> (Vec<&'g str>, BTreeMap<&'g str, &'g Node>, Vec<String>) {
    let mut order: Vec<&str> = Vec::new();
    let mut first: BTreeMap<&str, &Node> = BTreeMap::new();
    let mut errors: Vec<String> = Vec::new();
    for node in graph
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Box && !is_builtin(&n.func))
    {
        match first.get(node.func.as_str()) {
            None => {
                order.push(&node.func);
                first.insert(&node.func, node);
            }
            Some(earlier) if signature(earlier) != signature(node) => errors.push(format!(
                "{net_name}:{}: box '{}' declares implementation '{}' with ports ({}), but box '{}' (line {}) with \
                 ({}): one generated header cannot fit both",
                node.line,
                node.label,
                node.func,
                describe(&signature(node)),
                earlier.label,
                earlier.line,
                describe(&signature(earlier))
            )),
            Some(_) => {}
        }
    }
    (order, first, errors)
}

/// Why the C names made from implementation `name` (declared by `node`) cannot be used: not
/// an identifier, a clash with C or the runtime, a clash with another implementation's
/// functions, or a port name that is no identifier.
fn name_problems(name: &str, node: &Node, names: &[&str], net_name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if let Some(why) = bad_identifier(name).or_else(|| clashing(name)) {
        errors.push(format!(
            "{net_name}:{}: implementation name '{name}' (box '{}') {why}",
            node.line, node.label
        ));
    }
    for other in names {
        if *other != name && (*other == format!("{name}_init") || *other == format!("{name}_cleanup")) {
            errors.push(format!(
                "{net_name}:{}: implementations '{name}' and '{other}' clash: '{other}' is also the name of a \
                 function of '{name}'",
                node.line
            ));
        }
    }
    for (mode, port) in signature(node) {
        if let Some(why) = bad_identifier(&port) {
            let dir = if mode == PortMode::In { "input" } else { "output" };
            errors.push(format!(
                "{net_name}:{}: {dir} port '{port}' of implementation '{name}' {why}",
                node.line
            ));
        }
    }
    errors
}

fn describe(sig: &Signature) -> String {
    sig.iter()
        .map(|(m, p)| format!("{} {p}", if *m == PortMode::In { "in" } else { "out" }))
        .collect::<Vec<_>>()
        .join(", ")
}

const KEYWORDS: &[&str] = &[
    // C (C23 included)
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "bool",
    "true",
    "false",
    "nullptr",
    "alignas",
    "alignof",
    "static_assert",
    "thread_local",
    "typeof",
    "constexpr",
    // C++
    "and",
    "and_eq",
    "asm",
    "bitand",
    "bitor",
    "catch",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "consteval",
    "constinit",
    "const_cast",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "delete",
    "dynamic_cast",
    "explicit",
    "export",
    "friend",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "reinterpret_cast",
    "requires",
    "static_cast",
    "template",
    "this",
    "throw",
    "try",
    "typeid",
    "typename",
    "using",
    "virtual",
    "wchar_t",
    "xor",
    "xor_eq",
];

/// Functions of the C library and the process that a box symbol must not replace.
const TAKEN: &[&str] = &[
    "main", "read", "write", "open", "close", "free", "malloc", "calloc", "realloc", "exit", "abort", "printf", "puts",
    "sleep", "time", "signal", "kill", "wait", "select", "poll", "send", "recv", "socket", "connect", "bind", "listen",
    "accept", "memcpy", "memset", "strlen", "strcmp", "fopen", "fclose", "fread", "fwrite", "getenv", "system", "fork",
    "pipe", "dup", "stat", "remove", "rename", "link", "unlink", "access", "sync",
];

fn bad_identifier(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let ok_start = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !ok_start || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Some("is not a C identifier (letters, digits and '_', not starting with a digit)".to_string());
    }
    KEYWORDS.contains(&name).then(|| "is a C or C++ keyword".to_string())
}

fn clashing(name: &str) -> Option<String> {
    if name.starts_with("smx_") {
        return Some("starts with 'smx_', which is reserved for the runtime's C functions".to_string());
    }
    TAKEN
        .contains(&name)
        .then(|| format!("would become the global symbol '{name}', which is a C library function: choose another name"))
}

fn sig_header(name: &str, sig: &Signature, net_name: &str) -> String {
    let mut out = String::new();
    let listed: Vec<String> = sig
        .iter()
        .map(|(mode, port)| match mode {
            PortMode::In => format!(" *   - in {port}: SMX_CHANNEL_READ( h, {name}, {port} )\n"),
            PortMode::Out => format!(" *   - out {port}: SMX_CHANNEL_WRITE( h, {name}, {port}, msg )\n"),
        })
        .collect();
    out.push_str(&format!(
        "/*\n * {name}_sig.h - port signature of the box implementation `{name}`.\n *\n * Generated by `smxrun \
         headers` from {net_name}. Do not edit: change the net and\n * generate it again.\n *\n * The box has the \
         following signature (ports in declaration order):\n *\n"
    ));
    if listed.is_empty() {
        out.push_str(" *   (no ports)\n");
    }
    for line in listed {
        out.push_str(&line);
    }
    let ins: Vec<&str> = sig
        .iter()
        .filter(|(m, _)| *m == PortMode::In)
        .map(|(_, p)| p.as_str())
        .collect();
    let outs: Vec<&str> = sig
        .iter()
        .filter(|(m, _)| *m == PortMode::Out)
        .map(|(_, p)| p.as_str())
        .collect();
    out.push_str(&format!(
        " */\n\n#ifndef BOX_{name}_SIG_H\n#define BOX_{name}_SIG_H\n\n/** The static indegree of the box */\n#define \
         SMX_INDEGREE_{name} {}\n/** The static outdegree of the box */\n#define SMX_OUTDEGREE_{name} {}\n\n",
        ins.len(),
        outs.len()
    ));
    for (dir, ports, what) in [("in", &ins, "input"), ("out", &outs, "output")] {
        out.push_str(&format!(
            "/** The {what} signature of {name} */\nenum ports_{name}_{dir}_e\n{{\n"
        ));
        if ports.is_empty() {
            out.push_str(&format!("    SMX_PORT_IDX_{name}_{dir}_NO_PORTS_DEFINED,\n"));
        }
        for port in ports.iter() {
            out.push_str(&format!("    SMX_PORT_IDX_{name}_{dir}_{port},\n"));
        }
        out.push_str("};\n\n");
    }
    out.push_str(&format!(
        "/* (the typedefs follow the enums so that the header is also valid C++) */\ntypedef enum ports_{name}_in_e \
         ports_{name}_in_t;\ntypedef enum ports_{name}_out_e ports_{name}_out_t;\n\n#endif /* BOX_{name}_SIG_H */\n"
    ));
    out
}

fn box_header(name: &str, net_name: &str) -> String {
    format!(
        "/*\n * {name}.h - declarations of the box implementation `{name}`.\n *\n * Generated by `smxrun headers` \
         from {net_name}.\n */\n\n#ifndef SMX_GEN_{name}_H\n#define SMX_GEN_{name}_H\n\n#include \
         \"smxrts.h\"\n#include \"{name}_sig.h\"\n\n#ifdef __cplusplus\nextern \"C\" {{\n#endif\n\n/** One \
         iteration; returns SMX_NET_RETURN, SMX_NET_CONTINUE or SMX_NET_END. */\nint {name}( void* h, void* state \
         );\n\n/** Allocates *state and reads the configuration; returns 0 on success. */\nint {name}_init( void* \
         h, void** state );\n\n/** Frees the state (state may be NULL). */\nvoid {name}_cleanup( void* h, void* \
         state );\n\n/** The original runtime's thread entry; not used by smx. */\nvoid* start_routine_{name}( \
         void* h );\n\n#ifdef __cplusplus\n}}\n#endif\n\n#endif /* SMX_GEN_{name}_H */\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_and_clashes() {
        assert!(bad_identifier("c_add").is_none());
        assert!(bad_identifier("9lives").is_some());
        assert!(bad_identifier("a-b").is_some());
        assert!(bad_identifier("class").is_some());
        assert!(clashing("read").is_some());
        assert!(clashing("smx_box").is_some());
        assert!(clashing("reader").is_none());
    }
}
