//! GraphML export (the original compiler's default format), with the GML attribute set.

use std::fmt::Write as _;

use super::NetGraph;

const NODE_KEYS: [(&str, &str); 6] = [
    ("label", "string"),
    ("func", "string"),
    ("static", "double"),
    ("pure", "double"),
    ("location", "double"),
    ("tt", "double"),
];

const EDGE_KEYS: [(&str, &str); 14] = [
    ("label", "string"),
    ("nsrc", "string"),
    ("ndst", "string"),
    ("dsrc", "double"),
    ("ddst", "double"),
    ("len", "double"),
    ("dts", "double"),
    ("dtns", "double"),
    ("sts", "double"),
    ("stns", "double"),
    ("type", "double"),
    ("dynsrc", "double"),
    ("dyndst", "double"),
    ("target_port", "string"),
];

/// The GraphML document for `g`.
pub fn to_graphml(g: &NetGraph) -> String {
    let mut s = String::new();
    s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    s.push_str("<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\"\n");
    s.push_str("         xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"\n");
    s.push_str("         xsi:schemaLocation=\"http://graphml.graphdrawing.org/xmlns\n");
    s.push_str("         http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd\">\n");
    s.push_str("<!-- Created by smx (StreamixC-compatible attributes) -->\n");
    for (k, t) in NODE_KEYS {
        let _ = writeln!(
            s,
            "  <key id=\"v_{k}\" for=\"node\" attr.name=\"{k}\" attr.type=\"{t}\"/>"
        );
    }
    for (k, t) in EDGE_KEYS.iter().copied().chain([("source_port", "string")]) {
        let _ = writeln!(
            s,
            "  <key id=\"e_{k}\" for=\"edge\" attr.name=\"{k}\" attr.type=\"{t}\"/>"
        );
    }
    s.push_str("  <graph id=\"G\" edgedefault=\"directed\">\n");
    for n in &g.nodes {
        let _ = writeln!(s, "    <node id=\"n{}\">", n.id);
        let values = [
            n.label.clone(),
            n.func.clone(),
            u8::from(n.is_static).to_string(),
            u8::from(n.pure).to_string(),
            n.location.code().to_string(),
            n.priority.to_string(),
        ];
        for ((k, _), v) in NODE_KEYS.iter().zip(values) {
            let _ = writeln!(s, "      <data key=\"v_{k}\">{}</data>", escape(&v));
        }
        s.push_str("    </node>\n");
    }
    for e in &g.edges {
        let _ = writeln!(s, "    <edge source=\"n{}\" target=\"n{}\">", e.source, e.target);
        let values = [
            e.label.clone(),
            e.nsrc.clone().unwrap_or_else(|| "smx_null".into()),
            e.ndst.clone().unwrap_or_else(|| "smx_null".into()),
            u8::from(e.dsrc).to_string(),
            u8::from(e.ddst).to_string(),
            e.len.to_string(),
            e.dst_time.secs.to_string(),
            e.dst_time.nanos.to_string(),
            e.src_time.secs.to_string(),
            e.src_time.nanos.to_string(),
            e.timing.code().to_string(),
            u8::from(e.dynsrc).to_string(),
            u8::from(e.dyndst).to_string(),
            e.target_port.clone(),
        ];
        for ((k, _), v) in EDGE_KEYS.iter().zip(values) {
            let _ = writeln!(s, "      <data key=\"e_{k}\">{}</data>", escape(&v));
        }
        let _ = writeln!(s, "      <data key=\"e_source_port\">{}</data>", escape(&e.source_port));
        s.push_str("    </edge>\n");
    }
    s.push_str("  </graph>\n</graphml>\n");
    s
}

pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}
