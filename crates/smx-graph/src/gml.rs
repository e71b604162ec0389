//! GML export, byte-compatible with the original compiler (igraph 0.7.1's writer with the
//! attribute set of smxc, spec §5.3), so that existing tools keep working.

use std::fmt::Write as _;

use super::NetGraph;

/// The whole GML text of `g`, ending with a newline.
pub fn to_gml(g: &NetGraph) -> String {
    let mut s = String::with_capacity(64 + 160 * g.nodes.len() + 300 * g.edges.len());
    s.push_str("Creator \"igraph version 0.7.1 StreamixC\"\nVersion 1\ngraph\n[\n  directed 1\n");
    for n in &g.nodes {
        let _ = write!(
            s,
            "  node\n  [\n    id {}\n    label {}\n    func {}\n    static {}\n    pure {}\n    location {}\n    tt {}\n  ]\n",
            n.id,
            quote(&n.label),
            quote(&n.func),
            u8::from(n.is_static),
            u8::from(n.pure),
            n.location.code(),
            n.priority
        );
    }
    for e in &g.edges {
        let _ = write!(
            s,
            "  edge\n  [\n    source {}\n    target {}\n    label {}\n    nsrc {}\n    ndst {}\n    dsrc {}\n    ddst {}\n    len {}\n    dts {}\n    dtns {}\n    sts {}\n    stns {}\n    type {}\n    dynsrc {}\n    dyndst {}\n  ]\n",
            e.source,
            e.target,
            quote(&e.label),
            quote(e.nsrc.as_deref().unwrap_or("smx_null")),
            quote(e.ndst.as_deref().unwrap_or("smx_null")),
            u8::from(e.dsrc),
            u8::from(e.ddst),
            e.len,
            e.dst_time.secs,
            e.dst_time.nanos,
            e.src_time.secs,
            e.src_time.nanos,
            e.timing.code(),
            u8::from(e.dynsrc),
            u8::from(e.dyndst)
        );
    }
    s.push_str("]\n");
    s
}

/// Identifiers cannot hold quotes or backslashes, but labels may come from other tools via
/// JSON; igraph escapes `"` as `&quot;`, which we follow.
fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "&quot;"))
}
