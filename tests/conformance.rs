//! The original compiler's test suite (`../shared/conformance/cases`): every program must be
//! accepted or rejected as smxc does, report each expected error on the same line, and produce
//! a graph isomorphic to the recorded GML with all attributes equal. Also counts how many
//! message texts and GML files are byte-identical to smxc's.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use smx_graph::gml::to_gml;
use smx_lang::compose::{CompileOptions, compile};
use smx_lang::diag::SourceFile;

fn cases_dir() -> Option<PathBuf> {
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/cases");
    if local.is_dir() {
        return Some(local);
    }
    let env = PathBuf::from(std::env::var_os("SMX_SHARED")?).join("conformance/cases");
    env.is_dir().then_some(env)
}

/// smxc's harness masks every integer directly before `)` as `*)`.
fn mask(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let mut j = i;
        if b[j] == b'-' {
            j += 1;
        }
        let digits = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > digits && j < b.len() && b[j] == b')' {
            out.push_str("*)");
            i = j + 1;
        } else {
            out.push(b[start] as char);
            i = start + 1;
        }
    }
    out
}

#[derive(Debug, Default, Clone)]
struct Gml {
    nodes: Vec<BTreeMap<String, String>>,
    edges: Vec<BTreeMap<String, String>>,
}

fn parse_gml(text: &str) -> Result<Gml, String> {
    let mut toks = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut s = String::from("\"");
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                s.push(c);
            }
            toks.push(s);
        } else if c == '[' || c == ']' {
            toks.push(c.to_string());
            chars.next();
        } else {
            let mut s = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || c == '[' || c == ']' {
                    break;
                }
                s.push(c);
                chars.next();
            }
            toks.push(s);
        }
    }
    let mut g = Gml::default();
    let mut i = 0;
    while i < toks.len() {
        if (toks[i] == "node" || toks[i] == "edge") && toks.get(i + 1).map(String::as_str) == Some("[") {
            let is_node = toks[i] == "node";
            i += 2;
            let mut attrs = BTreeMap::new();
            while i < toks.len() && toks[i] != "]" {
                let v = toks.get(i + 1).ok_or("truncated GML")?;
                attrs.insert(toks[i].clone(), v.clone());
                i += 2;
            }
            if is_node {
                g.nodes.push(attrs);
            } else {
                g.edges.push(attrs);
            }
        }
        i += 1;
    }
    Ok(g)
}

/// Isomorphism test by colour refinement (Weisfeiler-Leman) over all attributes: node colours
/// start from the node attributes and are refined by the multisets of (edge attributes,
/// neighbour colour) in both directions; the graphs must agree on the multiset of node colours
/// and of (source colour, edge attributes, target colour).
fn isomorphic(a: &Gml, b: &Gml) -> Result<(), String> {
    if a.nodes.len() != b.nodes.len() || a.edges.len() != b.edges.len() {
        return Err(format!(
            "{}/{} nodes/edges, expected {}/{}",
            a.nodes.len(),
            a.edges.len(),
            b.nodes.len(),
            b.edges.len()
        ));
    }
    let (ca, ea) = colours(a);
    let (cb, eb) = colours(b);
    let mut na: Vec<_> = ca.clone();
    let mut nb: Vec<_> = cb.clone();
    na.sort();
    nb.sort();
    if na != nb {
        return Err("node attributes or neighbourhoods differ".into());
    }
    if ea != eb {
        return Err("edges differ".into());
    }
    Ok(())
}

fn colours(g: &Gml) -> (Vec<String>, Vec<String>) {
    let id_of: HashMap<&str, usize> = g
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.get("id").map_or("", String::as_str), i))
        .collect();
    let node_attrs = |n: &BTreeMap<String, String>| {
        n.iter()
            .filter(|(k, _)| k.as_str() != "id")
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let edge_attrs = |e: &BTreeMap<String, String>| {
        e.iter()
            .filter(|(k, _)| !matches!(k.as_str(), "source" | "target"))
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let ends: Vec<(usize, usize, String)> = g
        .edges
        .iter()
        .map(|e| {
            let s = id_of
                .get(e.get("source").map_or("", String::as_str))
                .copied()
                .unwrap_or(usize::MAX);
            let t = id_of
                .get(e.get("target").map_or("", String::as_str))
                .copied()
                .unwrap_or(usize::MAX);
            (s, t, edge_attrs(e))
        })
        .collect();
    let mut col: Vec<String> = g.nodes.iter().map(node_attrs).collect();
    for _ in 0..4 {
        let mut sig: Vec<(Vec<String>, Vec<String>)> = vec![(Vec::new(), Vec::new()); col.len()];
        for (s, t, a) in &ends {
            if *s < col.len() && *t < col.len() {
                sig[*s].0.push(format!("{a}>{}", col[*t]));
                sig[*t].1.push(format!("{a}<{}", col[*s]));
            }
        }
        col = col
            .iter()
            .zip(sig)
            .map(|(c, (mut o, mut i))| {
                o.sort();
                i.sort();
                let h = format!("{c}|{}|{}", o.join(";"), i.join(";"));
                format!("{:016x}", fnv(&h))
            })
            .collect();
    }
    let mut edges: Vec<String> = ends
        .iter()
        .map(|(s, t, a)| {
            format!(
                "{}-{a}-{}",
                col.get(*s).map_or("?", String::as_str),
                col.get(*t).map_or("?", String::as_str)
            )
        })
        .collect();
    edges.sort();
    (col, edges)
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[test]
fn original_test_suite() {
    let Some(dir) = cases_dir() else {
        // CI always has ../shared: there a missing suite is a failure, not a silent pass.
        assert!(
            std::env::var_os("CI").is_none(),
            "conformance cases not found (../shared or SMX_SHARED)"
        );
        println!("conformance cases not found (../shared or SMX_SHARED): skipped");
        return;
    };
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("cases dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".smx").map(str::to_owned))
        .collect();
    names.sort();
    let only = std::env::var("SMX_CASE").ok();
    let (mut passed, mut text_exact, mut gml_exact) = (0, 0, 0);
    let mut failures = Vec::new();
    for name in &names {
        if only.as_ref().is_some_and(|o| o != name) {
            continue;
        }
        let text = std::fs::read_to_string(dir.join(format!("{name}.smx"))).expect("read smx");
        let sol = std::fs::read_to_string(dir.join(format!("{name}.sol"))).unwrap_or_default();
        let gml_sol = std::fs::read_to_string(dir.join(format!("{name}_gml.sol"))).unwrap_or_default();
        let src = SourceFile::new(format!("test/{name}.smx"), text);
        let out = compile(&src, &CompileOptions::default());
        let mut rendered: String = out.diagnostics.iter().map(|d| src.render_smxc(d)).collect();
        if !out.diagnostics.is_empty() {
            rendered.push_str(&format!(" Error count: {}\n", out.diagnostics.len()));
        }
        let rendered = mask(&rendered);
        let mut problems = Vec::new();
        let expect_reject = sol.lines().any(|l| l.contains(": error:"));
        if expect_reject == out.accepted() {
            problems.push(format!("accepted={} but expected the opposite", out.accepted()));
        }
        for l in sol.lines().filter(|l| l.contains(": error:")) {
            let line: usize = l
                .split(": ")
                .nth(1)
                .and_then(|x| x.trim().parse().ok())
                .unwrap_or(usize::MAX);
            if !out.diagnostics.iter().any(|d| d.is_error() && src.line_of(d) == line) {
                problems.push(format!("missing error on line {line}: {l}"));
            }
        }
        if rendered == sol {
            text_exact += 1;
        }
        let gml = to_gml(&out.graph);
        if gml == gml_sol {
            gml_exact += 1;
        } else {
            if std::env::var_os("SMX_SHOW_GML_DIFF").is_some() {
                println!("GML order differs: {name}");
                let _ = std::fs::write(std::env::temp_dir().join(format!("{name}_ours.gml")), &gml);
            }
            match (parse_gml(&gml), parse_gml(&gml_sol)) {
                (Ok(a), Ok(b)) => {
                    if let Err(e) = isomorphic(&a, &b) {
                        problems.push(format!("graph: {e}"));
                    }
                }
                (Err(e), _) | (_, Err(e)) => problems.push(format!("gml: {e}")),
            }
        }
        if problems.is_empty() {
            passed += 1;
        } else {
            if only.is_some() {
                println!("--- ours:\n{rendered}--- expected:\n{sol}--- gml:\n{gml}");
            }
            failures.push(format!("{name}: {}", problems.join("; ")));
        }
    }
    let total = if only.is_some() { 1 } else { names.len() };
    println!(
        "conformance: {passed}/{total} cases pass; {text_exact} message outputs and {gml_exact} GML files byte-identical"
    );
    for f in &failures {
        println!("FAIL {f}");
    }
    assert!(failures.is_empty(), "{} conformance cases fail", failures.len());
}
