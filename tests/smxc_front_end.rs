//! Two front-end behaviours where we follow smxc v0.6.1, because its behaviour there is
//! deliberate: the alternative port names on a routing node's channel ends, and no evaluation
//! of the right operand once the left one failed.

use smx_graph::NetGraph;
use smx_lang::compose::{CompileOptions, Compiled, compile};
use smx_lang::diag::SourceFile;

fn run(text: &str) -> Compiled {
    compile(&SourceFile::new("t.smx", text), &CompileOptions::default())
}

fn messages(c: &Compiled) -> Vec<String> {
    c.diagnostics.iter().map(|d| d.message.clone()).collect()
}

/// `(from, to, nsrc, ndst)` of every edge, by node label.
fn ends(g: &NetGraph) -> Vec<(String, String, String, String)> {
    let null = || "smx_null".to_string();
    let mut v: Vec<_> = g
        .edges
        .iter()
        .map(|e| {
            (
                g.nodes[e.source].label.clone(),
                g.nodes[e.target].label.clone(),
                e.nsrc.clone().unwrap_or_else(null),
                e.ndst.clone().unwrap_or_else(null),
            )
        })
        .collect();
    v.sort();
    v
}

fn row(from: &str, to: &str, nsrc: &str, ndst: &str) -> (String, String, String, String) {
    (from.into(), to.into(), nsrc.into(), ndst.into())
}

const BOXES: &str = "A = box fa( out x )\nB = box fb( in x )\nC = box fc( in x(xi) )\n";

#[test]
fn routing_node_ends_carry_the_alternative_name_of_the_first_port_of_the_pair() {
    // In `B!C` the pair is visited with C's port first (the right operand's ports lead the
    // interface list), so the routing node's port is made from `x(xi)`.
    let c = run(&format!("{BOXES}connect A.(B!C)\n"));
    assert!(c.accepted(), "{:?}", messages(&c));
    assert_eq!(
        ends(&c.graph),
        [
            row("A", "smx_rn", "smx_null", "xi"),
            row("smx_rn", "B", "xi", "smx_null"),
            row("smx_rn", "C", "xi", "xi"),
        ]
    );
    let gml = smx_graph::gml::to_gml(&c.graph);
    assert!(gml.contains("nsrc \"xi\""), "{gml}");
}

#[test]
fn with_the_operands_swapped_the_routing_node_ends_have_no_alternative_name() {
    let c = run(&format!("{BOXES}connect A.(C!B)\n"));
    assert!(c.accepted(), "{:?}", messages(&c));
    assert_eq!(
        ends(&c.graph),
        [
            row("A", "smx_rn", "smx_null", "smx_null"),
            row("smx_rn", "B", "smx_null", "smx_null"),
            row("smx_rn", "C", "smx_null", "xi"),
        ]
    );
}

#[test]
fn a_failed_left_operand_stops_the_evaluation_of_the_right_one() {
    for op in [".", ":", "|", "!"] {
        let c = run(&format!("net N( up in x )\nconnect N {op} Q\n"));
        assert_eq!(
            messages(&c),
            ["undefined reference to net 'N'"],
            "operator {op}: only the cause is reported"
        );
    }
    let c = run("A = box fa( out x )\nconnect Missing . (A | Other)\n");
    assert_eq!(messages(&c), ["use of undeclared identifier 'Missing'"]);
}

#[test]
fn a_failed_right_operand_is_still_reported_after_a_good_left_one() {
    let c = run("A = box fa( out x )\nconnect A . Q\n");
    assert_eq!(messages(&c), ["use of undeclared identifier 'Q'"]);
    let c = run("connect P . Q\n");
    assert_eq!(messages(&c), ["use of undeclared identifier 'P'"]);
}
