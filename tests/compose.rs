//! Composition behaviour beyond the original test suite: the spec's *(checked)* notes, our
//! deliberate differences from smxc (spec §9), options, exporters, and robustness.

use smx_graph::{NetGraph, NodeKind, TimeSpec, Timing};
use smx_lang::compose::{CompileOptions, Compiled, compile, compose};
use smx_lang::diag::{SourceFile, Span};
use smx_lang::syntax::ast::{self, BinOp, NetExpr};

fn run(text: &str) -> Compiled {
    compile(&SourceFile::new("t.smx", text), &CompileOptions::default())
}

fn messages(c: &Compiled) -> Vec<String> {
    c.diagnostics.iter().map(|d| d.message.clone()).collect()
}

/// The edge from the node labelled `from` to the node labelled `to`.
fn edge<'g>(g: &'g NetGraph, from: &str, to: &str) -> &'g smx_graph::Edge {
    g.edges
        .iter()
        .find(|e| g.nodes[e.source].label == from && g.nodes[e.target].label == to)
        .unwrap_or_else(|| panic!("no edge {from} -> {to} in {g:#?}"))
}

fn secs(s: u64) -> TimeSpec {
    TimeSpec { secs: s, nanos: 0 }
}

#[test]
fn nested_tt_outermost_period_wins() {
    let c = run("A = box a(out x)\nB = box b(in x, out y)\nC = box c(in y)\nconnect tt[1s](A.tt[2s](B)).C");
    assert!(c.accepted(), "{:?}", messages(&c));
    let ab = edge(&c.graph, "A", "B");
    assert_eq!(
        (ab.timing, ab.src_time, ab.dst_time),
        (Timing::TimeTriggered, secs(1), secs(1))
    );
    let bc = edge(&c.graph, "B", "C");
    assert_eq!(
        (bc.timing, bc.src_time, bc.dst_time),
        (Timing::TimeTriggered, secs(1), secs(0))
    );
}

#[test]
fn tb_around_tt_keeps_both_periods() {
    let c = run("A = box a(out x)\nB = box b(in x)\nconnect tb[5s](tt[1s](A).B)");
    let ab = edge(&c.graph, "A", "B");
    assert_eq!(
        (ab.timing, ab.src_time, ab.dst_time),
        (Timing::TimeTriggered, secs(1), secs(5))
    );
}

#[test]
fn empty_period_and_unnormalised_times_are_kept() {
    let c = run("A = box a(out x)\nB = box b(in x)\nconnect tt[](A).tt[2s1500ms](B)");
    assert!(c.accepted());
    let ab = edge(&c.graph, "A", "B");
    assert_eq!(ab.src_time, TimeSpec { secs: 0, nanos: 0 });
    assert_eq!(
        ab.dst_time,
        TimeSpec {
            secs: 3,
            nanos: 500_000_000
        }
    );
}

#[test]
fn tt_and_rt_set_priorities_and_nets_inherit_them() {
    let c = run("A = box a(out x)\nB = box b(in x)\nN = A.B\nconnect tt[1s](N)");
    assert!(c.accepted());
    assert!(c.graph.nodes.iter().all(|n| n.priority == 2));
    let c = run("A = box a(out x)\nB = box b(in x)\nconnect rt(A).B");
    assert_eq!(c.graph.nodes.iter().map(|n| n.priority).collect::<Vec<_>>(), [1, 0]);
}

#[test]
fn tf_is_rejected_with_an_empty_graph() {
    let c = run("A = box a(out x)\nB = box b(in x)\nconnect tf[1s](A.B)");
    assert!(!c.accepted());
    assert!(messages(&c)[0].contains("'tf'"));
    assert_eq!(c.graph, NetGraph::default());
}

#[test]
fn names_declared_inside_a_wrapper_are_invisible_outside() {
    let c =
        run("wrapper W(in x) {\n A = box a(in x)\n N = A\n connect N\n} net(up in x)\nS = box s(out x)\nconnect S.N");
    assert_eq!(messages(&c), ["use of undeclared identifier 'N'"]);
    assert_eq!(c.graph, NetGraph::default());
}

#[test]
fn inner_declarations_shadow_outer_ones() {
    let c =
        run("A = box outer(out x)\nwrapper W(in x) {\n A = box inner(in x)\n connect A\n} net(up in x)\nconnect A.W");
    assert!(c.accepted(), "{:?}", messages(&c));
    let funcs: Vec<_> = c.graph.nodes.iter().map(|n| n.func.as_str()).collect();
    assert_eq!(funcs, ["outer", "inner"]);
}

#[test]
fn undeclared_identifier_is_reported_at_its_line() {
    let src = SourceFile::new("t.smx", "A = box a(out x)\n\nconnect A.\n  B");
    let c = compile(&src, &CompileOptions::default());
    assert_eq!(messages(&c), ["use of undeclared identifier 'B'"]);
    assert_eq!(src.line_of(&c.diagnostics[0]), 4);
}

#[test]
fn renamed_wrapper_ports_keep_the_real_port_names() {
    let c = run("L = box L(out p1)\nwrapper W(in p1(a)) {\n A = box A(in a)\n connect A\n} net(up in a)\nconnect L.W");
    assert!(c.accepted(), "{:?}", messages(&c));
    let e = edge(&c.graph, "L", "A");
    assert_eq!(
        (e.label.as_str(), e.source_port.as_str(), e.target_port.as_str()),
        ("p1", "p1", "a")
    );
}

#[test]
fn channel_lengths_and_the_default_length_option() {
    let text = "A = box a(out x, out y[3])\nB = box b(in x, in y[2])\nconnect A.B";
    let opts = CompileOptions {
        default_len: 4,
        ..CompileOptions::default()
    };
    let c = compile(&SourceFile::new("t.smx", text), &opts);
    let (x, y) = (&c.graph.edges[0], &c.graph.edges[1]);
    let by_label = |l: &str| if x.label == l { x } else { y };
    assert_eq!((by_label("x").len, by_label("x").len_declared), (4, false));
    assert_eq!((by_label("y").len, by_label("y").len_declared), (5, true));
}

// ---- deliberate differences from smxc (spec §9) ----

#[test]
fn deterministic_parallel_does_not_join_an_output_to_an_input() {
    // smxc silently builds A -> B here (spec §9.7).
    let c = run("A = box a(out x)\nB = box b(in x)\nconnect A|B");
    assert!(!c.accepted());
    assert_eq!(
        messages(&c)[0],
        "conflicting modes of ports 'x' in 'B'(1) and 'A'(0) (line 1)"
    );
    assert!(c.graph.edges.is_empty());
}

#[test]
fn parallel_does_not_join_ports_a_serial_operator_kept_apart() {
    // smxc connects A -> B through the later `|` although `:` refused it (spec §9.8).
    let c = run("A = box a(up out x)\nB = box b(in x)\nC = box c(in y, out y)\nconnect (A:B)|C");
    assert!(!c.accepted());
    assert!(c.graph.edges.iter().all(|e| e.label != "x"));
}

#[test]
fn merged_routing_nodes_do_not_re_expose_their_bundle() {
    // smxc attaches C to the already joined bundle (spec §9.9).
    let c = run("A = box a(out x)\nB = box b(in x)\nC = box c(in x)\nconnect (A!A).(B|B).C");
    assert!(!c.accepted());
    assert!(
        messages(&c)
            .iter()
            .any(|m| m.starts_with("port 'x' in 'C'(") && m.ends_with("is not connected"))
    );
    assert!(c.graph.edges.iter().all(|e| c.graph.nodes[e.target].label != "C"));
}

#[test]
fn reassigning_a_net_is_a_redefinition() {
    // smxc crashes (spec §9.15).
    let c = run("A = box a(out x)\nB = box b(in x)\nN = A\nN = B\nconnect N.B");
    assert_eq!(messages(&c), ["redefinition of 'N'"]);
}

#[test]
fn using_a_failed_net_reports_only_the_cause() {
    // smxc crashes (spec §9.15).
    let c = run("A = box a(out x)\nN = A.X\nconnect N");
    assert_eq!(messages(&c), ["use of undeclared identifier 'X'"]);
    assert_eq!(c.graph, NetGraph::default());
}

#[test]
fn wrapper_null_ports_switch_inner_ports_off() {
    // smxc reports `single mode` and crashes (spec §9.15).
    let c = run(
        "S = box s(out a)\nwrapper W(in a, (dbg)) {\n A = box a(in a, out dbg)\n connect A\n} net(up in a, down out dbg)\nconnect S.W",
    );
    assert!(c.accepted(), "{:?}", messages(&c));
    assert_eq!(c.graph.edges.len(), 1);
}

#[test]
fn symbol_keys_do_not_collide() {
    // smxc keys symbols by name+scope concatenated: `a1` in scope 2 vs `a` in scope 12.
    let mut text = String::from("x = box x(out p)\n");
    let mut close = String::new();
    for i in 0..12 {
        text.push_str(&format!("wrapper W{i}(in p) {{\n"));
        if i == 1 {
            text.push_str("a1 = box f(in p)\n");
        }
        close = format!(
            "connect {}\n}} net(up in p)\n",
            if i == 11 { "a".to_owned() } else { format!("W{}", i + 1) }
        ) + &close;
    }
    text.push_str("a = box g(in p)\n");
    text.push_str(&close);
    text.push_str("connect x.W0\n");
    let c = run(&text);
    assert!(c.accepted(), "{:?}", messages(&c));
    assert_eq!(c.graph.nodes[1].func, "g");
}

// ---- exporters ----

#[test]
fn exporters_write_every_format() {
    let c = run("A = box a(decoupled out x)\nB = box b(in x)\nconnect A.tt[100ms](B)");
    let gml = smx_graph::gml::to_gml(&c.graph);
    assert!(gml.starts_with("Creator \"igraph version 0.7.1 StreamixC\"\nVersion 1\ngraph\n[\n  directed 1\n"));
    assert!(gml.contains("    dtns 100000000\n"));
    let dot = smx_graph::dot::to_dot(&c.graph);
    assert!(dot.contains("label=\"A#0 : a\""), "{dot}");
    assert!(dot.contains("tt 100ms"));
    assert!(dot.contains("arrowtail=odot"));
    let graphml = smx_graph::graphml::to_graphml(&c.graph);
    assert!(graphml.contains("<data key=\"e_dtns\">100000000</data>"));
    let back = smx_graph::json::from_json(&smx_graph::json::to_json(&c.graph)).expect("json");
    assert_eq!(back, c.graph);
}

#[test]
fn empty_graph_gml_is_the_header_only() {
    let gml = smx_graph::gml::to_gml(&NetGraph::default());
    assert_eq!(
        gml,
        "Creator \"igraph version 0.7.1 StreamixC\"\nVersion 1\ngraph\n[\n  directed 1\n]\n"
    );
}

#[test]
fn json_with_dangling_edges_is_refused() {
    let c = run("A = box a(out x)\nB = box b(in x)\nconnect A.B");
    let text = smx_graph::json::to_json(&c.graph).replace("\"target\": 1", "\"target\": 7");
    assert!(smx_graph::json::from_json(&text).is_err());
}

// ---- robustness, on hand-built syntax trees (independent of the parser's limits) ----

fn id(name: &str) -> NetExpr {
    NetExpr::Ident(ast::Ident {
        name: name.to_owned(),
        span: Span::default(),
    })
}

fn boxdecl(name: &str, ports: &[(ast::PortMode, &str)]) -> ast::Decl {
    let ident = |n: &str| ast::Ident {
        name: n.to_owned(),
        span: Span::default(),
    };
    ast::Decl::Box(ast::BoxDecl {
        name: ident(name),
        location: ast::Location::Local,
        pure: false,
        implementation: ident(name),
        ports: ports
            .iter()
            .map(|&(mode, n)| ast::BoxPort {
                coupling: None,
                class: None,
                mode,
                name: ident(n),
                alt_name: None,
                len: None,
                flag: None,
                span: Span::default(),
            })
            .collect(),
        span: Span::default(),
    })
}

fn program(decls: Vec<ast::Decl>, net: NetExpr) -> ast::Program {
    ast::Program {
        decls,
        connect: ast::Connect {
            keyword: Span::default(),
            net,
        },
    }
}

#[test]
fn ten_thousand_nested_parentheses_compose() {
    use ast::PortMode::{In, Out};
    let mut e = id("B");
    for _ in 0..10_000 {
        e = NetExpr::Paren {
            inner: Box::new(e),
            span: Span::default(),
        };
    }
    let net = NetExpr::Binary {
        op: BinOp::Serial,
        op_span: Span::default(),
        lhs: Box::new(id("A")),
        rhs: Box::new(e),
    };
    let p = program(vec![boxdecl("A", &[(Out, "x")]), boxdecl("B", &[(In, "x")])], net);
    let c = compose(&p, &CompileOptions::default());
    assert!(c.accepted());
    assert_eq!(c.graph.edges.len(), 1);
}

#[test]
fn fifty_thousand_box_chain_composes() {
    use ast::PortMode::{In, Out};
    let mut e = id("S");
    for i in 0..50_000 {
        e = NetExpr::Binary {
            op: BinOp::Serial,
            op_span: Span::default(),
            lhs: Box::new(e),
            rhs: Box::new(id(if i % 2 == 0 { "P" } else { "Q" })),
        };
    }
    e = NetExpr::Binary {
        op: BinOp::Serial,
        op_span: Span::default(),
        lhs: Box::new(e),
        rhs: Box::new(id("K")),
    };
    let decls = vec![
        boxdecl("S", &[(Out, "a")]),
        boxdecl("P", &[(In, "a"), (Out, "b")]),
        boxdecl("Q", &[(In, "b"), (Out, "a")]),
        boxdecl("K", &[(In, "a")]),
    ];
    let c = compose(&program(decls, e), &CompileOptions::default());
    assert!(c.accepted(), "{:?}", &c.diagnostics[..c.diagnostics.len().min(3)]);
    assert_eq!(c.graph.nodes.len(), 50_002);
    assert_eq!(c.graph.edges.len(), 50_001);
}

mod random {
    //! Random programs (boxes with random ports, random expressions over them, nets) must
    //! compose without panicking and give a consistent graph.
    use super::*;
    use proptest::prelude::*;

    fn port() -> impl Strategy<Value = ast::BoxPort> {
        (0..4u8, 0..2u8, 0..3usize, 0..4u8, 0..3u8).prop_map(|(class, mode, name, flag, len)| ast::BoxPort {
            coupling: None,
            class: [
                None,
                Some(ast::PortClass::Up),
                Some(ast::PortClass::Down),
                Some(ast::PortClass::Side),
            ][class as usize],
            mode: if mode == 0 {
                ast::PortMode::In
            } else {
                ast::PortMode::Out
            },
            name: ast::Ident {
                name: ["a", "b", "c"][name].to_owned(),
                span: Span::default(),
            },
            alt_name: None,
            len: (len > 0).then_some((u32::from(len), Span::default())),
            flag: match flag {
                0 => Some(ast::PortFlag::Open),
                1 => Some(ast::PortFlag::Dynamic),
                _ => None,
            },
            span: Span::default(),
        })
    }

    fn expr() -> impl Strategy<Value = NetExpr> {
        let leaf = prop::sample::select(vec!["A", "B", "C", "N"]).prop_map(id);
        leaf.prop_recursive(6, 40, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone(), 0..4u8).prop_map(|(l, r, op)| NetExpr::Binary {
                    op: [BinOp::Serial, BinOp::SerialProp, BinOp::Parallel, BinOp::ParallelDet][op as usize],
                    op_span: Span::default(),
                    lhs: Box::new(l),
                    rhs: Box::new(r),
                }),
                (inner.clone(), 0..3u8).prop_map(|(e, k)| match k {
                    0 => NetExpr::Rt {
                        inner: Box::new(e),
                        span: Span::default()
                    },
                    _ => NetExpr::Timed {
                        op: if k == 1 { ast::TimeOp::Tt } else { ast::TimeOp::Tb },
                        time: TimeSpec { secs: 1, nanos: 0 },
                        inner: Box::new(e),
                        span: Span::default(),
                    },
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn random_programs_compose_consistently(
            ports in prop::collection::vec(prop::collection::vec(port(), 1..4), 3),
            net in expr(),
            top in expr(),
        ) {
            let mut decls: Vec<ast::Decl> = ["A", "B", "C"].iter().zip(ports).map(|(n, ps)| {
                let ast::Decl::Box(mut b) = boxdecl(n, &[]) else { unreachable!() };
                b.ports = ps;
                ast::Decl::Box(b)
            }).collect();
            // N may refer to itself before it exists: that is an undeclared identifier.
            decls.push(ast::Decl::Net(ast::NetAssign {
                name: ast::Ident { name: "N".into(), span: Span::default() },
                net,
                span: Span::default(),
            }));
            let c = compose(&program(decls, top), &CompileOptions::default());
            let g = &c.graph;
            for (i, n) in g.nodes.iter().enumerate() {
                prop_assert_eq!(n.id, i);
                prop_assert!(n.kind != NodeKind::Unexpanded);
            }
            for (i, e) in g.edges.iter().enumerate() {
                prop_assert_eq!(e.id, i);
                prop_assert!(e.source < g.nodes.len() && e.target < g.nodes.len());
                prop_assert!(e.len >= 1);
            }
        }
    }
}

#[test]
fn exponentially_nested_nets_are_refused_not_expanded() {
    let mut text = String::from("A = box a(in x)\nN0 = A|A\n");
    for i in 1..40 {
        text.push_str(&format!("N{i} = N{}|N{}\n", i - 1, i - 1));
    }
    text.push_str("S = box s(out x)\nconnect S.N39\n");
    let c = run(&text);
    assert!(!c.accepted());
    assert!(messages(&c)[0].contains("would exceed"));
}

#[test]
fn fifty_thousand_box_source_text_compiles() {
    let mut text =
        String::from("S = box s(out a)\nP = box p(in a, out b)\nQ = box q(in b, out a)\nK = box k(in a)\nconnect S");
    for i in 0..50_000 {
        text.push_str(if i % 2 == 0 { ".P" } else { ".Q" });
    }
    text.push_str(".K\n");
    let c = run(&text);
    assert!(c.accepted(), "{:?}", &c.diagnostics[..c.diagnostics.len().min(3)]);
    assert_eq!(c.graph.edges.len(), 50_001);
}

#[test]
fn long_wrapper_chains_flatten_into_direct_channels() {
    let mut text = String::from(
        "S = box src(out x)\nK = box sink(in x)\nwrapper W(up in x, down out x(z)) {\n  A = box a(in x, out m)\n  \
         B = box b(in m, out z)\n  connect A.B\n} net(up in x, down out z)\nconnect S",
    );
    for _ in 0..2_000 {
        text.push_str(".W");
    }
    text.push_str(".K\n");
    let c = run(&text);
    assert!(c.accepted(), "{:?}", &c.diagnostics[..c.diagnostics.len().min(3)]);
    assert_eq!(c.graph.nodes.len(), 4_002);
    assert!(c.graph.nodes.iter().all(|n| n.kind == NodeKind::Box));
    assert_eq!(c.graph.edges.iter().filter(|e| e.label == "x").count(), 2_001);
}
