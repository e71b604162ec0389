//! The parser against the language specification (§1, §2): every construct, precedence, time
//! literals, reserved words, syntax errors with their places, robustness on large and deep
//! input, and every program of the original compiler's test suite.

use smx_lang::diag::{Diagnostic, SourceFile};
use smx_lang::syntax::ast::*;
use smx_lang::syntax::{MAX_NESTING, Parsed, parse};

fn parse_text(text: &str) -> (SourceFile, Parsed) {
    let file = SourceFile::new("t.smx", text);
    let parsed = parse(&file);
    (file, parsed)
}

/// Parses text that must be accepted without any diagnostic.
fn ok(text: &str) -> Program {
    let (file, parsed) = parse_text(text);
    let shown: Vec<String> = parsed.diagnostics.iter().map(|d| file.render(d)).collect();
    assert!(
        shown.is_empty(),
        "unexpected diagnostics for {text:?}:\n{}",
        shown.join("")
    );
    parsed.program.expect("a program")
}

/// Parses text that must be rejected; returns (line, column, message) of every diagnostic.
fn errors(text: &str) -> Vec<(usize, usize, String)> {
    let (file, parsed) = parse_text(text);
    assert!(parsed.program.is_none(), "{text:?} was accepted");
    assert!(!parsed.diagnostics.is_empty());
    parsed
        .diagnostics
        .iter()
        .map(|d: &Diagnostic| {
            let (line, col) = file.line_col(d.span.expect("syntax errors have a place").start);
            (line, col, d.message.clone())
        })
        .collect()
}

fn first_error(text: &str) -> (usize, usize, String) {
    errors(text).remove(0)
}

/// The connect net, fully parenthesised, for checking precedence.
fn shape(expr: &NetExpr) -> String {
    match expr {
        NetExpr::Ident(id) => id.name.clone(),
        NetExpr::Binary { op, lhs, rhs, .. } => format!("({} {} {})", shape(lhs), op.symbol(), shape(rhs)),
        NetExpr::Paren { inner, .. } => shape(inner),
        NetExpr::Rt { inner, .. } => format!("rt{}", shape(inner)),
        NetExpr::Timed { op, time, inner, .. } => {
            format!("{op:?}[{},{}]{}", time.secs, time.nanos, shape(inner))
        }
    }
}

fn connect_shape(net: &str) -> String {
    shape(&ok(&format!("connect {net}")).connect.net)
}

fn only_box(text: &str) -> BoxDecl {
    match ok(text).decls.remove(0) {
        Decl::Box(b) => b,
        other => panic!("not a box: {other:?}"),
    }
}

#[test]
fn precedence_and_associativity_follow_the_spec() {
    assert_eq!(connect_shape("A.B|C.D"), "((A . B) | (C . D))");
    assert_eq!(connect_shape("A|B!C"), "(A | (B ! C))");
    assert_eq!(connect_shape("A:B.C"), "(A : (B . C))");
    assert_eq!(connect_shape("A.B:C"), "((A . B) : C)");
    assert_eq!(connect_shape("D ! (E|F) . G"), "(D ! ((E | F) . G))");
    assert_eq!(connect_shape("A.B.C"), "((A . B) . C)");
    assert_eq!(connect_shape("A|B|C"), "((A | B) | C)");
    assert_eq!(connect_shape("A!B!C"), "((A ! B) ! C)");
    assert_eq!(connect_shape("A:B:C"), "((A : B) : C)");
    assert_eq!(connect_shape("A|B!C:D.E"), "(A | (B ! (C : (D . E))))");
    assert_eq!(connect_shape("A.B:C!D|E"), "((((A . B) : C) ! D) | E)");
}

#[test]
fn operator_and_expression_spans() {
    let program = ok("connect  A . (B|C)");
    let NetExpr::Binary { op, op_span, rhs, .. } = &program.connect.net else {
        panic!("not binary")
    };
    assert_eq!(*op, BinOp::Serial);
    assert_eq!((op_span.start, op_span.end), (11, 12));
    assert_eq!((rhs.span().start, rhs.span().end), (13, 18));
    assert_eq!(
        (program.connect.net.span().start, program.connect.net.span().end),
        (9, 18)
    );
    assert_eq!((program.connect.keyword.start, program.connect.keyword.end), (0, 7));
}

#[test]
fn prefix_forms_are_atoms() {
    assert_eq!(connect_shape("rt(A.B).C"), "(rt(A . B) . C)");
    assert_eq!(connect_shape("A.tt[1s](B).C"), "((A . Tt[1,0]B) . C)");
    assert_eq!(connect_shape("tb[5s](tt[1s](A).B)"), "Tb[5,0](Tt[1,0]A . B)");
    assert_eq!(connect_shape("tf[10ms](A)"), "Tf[0,10000000]A");
    assert_eq!(connect_shape("tt [ 1s 2ms ] ( A )"), "Tt[1,2000000]A");
}

fn time_of(spec: &str) -> (u64, u64) {
    let program = ok(&format!("connect tt[{spec}](A)"));
    match &program.connect.net {
        NetExpr::Timed { time, .. } => (time.secs, time.nanos),
        other => panic!("not timed: {other:?}"),
    }
}

#[test]
fn time_literals_convert_like_the_original() {
    assert_eq!(time_of("2s1500ms"), (3, 500_000_000));
    assert_eq!(time_of("1999ms999999us"), (1, 1_998_999_000));
    assert_eq!(time_of(""), (0, 0));
    assert_eq!(time_of("10us"), (0, 10_000));
    assert_eq!(time_of("1s500ms"), (1, 500_000_000));
    assert_eq!(time_of("7ns"), (0, 7));
    assert_eq!(time_of("1s2ms3us4ns"), (1, 2_003_004));
    assert_eq!(time_of("2500000us"), (2, 500_000_000));
}

#[test]
fn time_units_out_of_order_or_repeated_are_syntax_errors() {
    let (line, col, message) = first_error("connect tt[1ms1s](A)");
    assert_eq!((line, col), (1, 15));
    assert!(message.contains("found '1s'"), "{message}");
    assert!(message.contains("microseconds"), "{message}");
    assert!(!errors("connect tt[1s1s](A)").is_empty());
    assert!(!errors("connect tt[0s](A)").is_empty());
    assert!(!errors("connect tt[01s](A)").is_empty());
    assert!(!errors("connect tt[1.5s](A)").is_empty());
    assert!(!errors("connect tt[1m](A)").is_empty());
    assert!(!errors("connect tt(A)").is_empty());
}

#[test]
fn a_box_with_every_port_attribute() {
    let b = only_box(
        "Src = extern pure box smx_src(decoupled up in a(impl_a)[5] open, coupled side out b dynamic,\n\
         left in c, right out d [12], down in e, out f)\nconnect Src",
    );
    assert_eq!(b.name.name, "Src");
    assert_eq!(b.implementation.name, "smx_src");
    assert_eq!(b.location, Location::Extern);
    assert!(b.pure);
    let a = &b.ports[0];
    assert_eq!(a.coupling, Some(Coupling::Decoupled));
    assert_eq!(a.class, Some(PortClass::Up));
    assert_eq!(a.mode, PortMode::In);
    assert_eq!(a.name.name, "a");
    assert_eq!(a.alt_name.as_ref().map(|n| n.name.as_str()), Some("impl_a"));
    assert_eq!(a.len.map(|(n, _)| n), Some(5));
    assert_eq!(a.flag, Some(PortFlag::Open));
    let p = &b.ports[1];
    assert_eq!(
        (p.coupling, p.class, p.mode, p.flag),
        (
            Some(Coupling::Coupled),
            Some(PortClass::Side),
            PortMode::Out,
            Some(PortFlag::Dynamic)
        )
    );
    assert_eq!(b.ports[2].class, Some(PortClass::Up), "left is up");
    assert_eq!(b.ports[3].class, Some(PortClass::Down), "right is down");
    assert_eq!(b.ports[3].len.map(|(n, _)| n), Some(12));
    assert_eq!(b.ports[4].class, Some(PortClass::Down));
    let f = &b.ports[5];
    assert_eq!(
        (f.coupling, f.class, f.mode, f.alt_name.is_none(), f.len, f.flag),
        (None, None, PortMode::Out, true, None, None)
    );
    assert_eq!(only_box("A = intern box a(in x) connect A").location, Location::Intern);
    let plain = only_box("A = box a(in x) connect A");
    assert_eq!((plain.location, plain.pure), (Location::Local, false));
}

#[test]
fn box_declaration_spans_cover_name_to_parenthesis() {
    let text = "  A = box a(in x)  connect A";
    let b = only_box(text);
    assert_eq!(&text[b.span.start..b.span.end], "A = box a(in x)");
    assert_eq!(&text[b.ports[0].span.start..b.ports[0].span.end], "in x");
    let len_text = "A = box a(in x[42]) connect A";
    let (_, at) = only_box(len_text).ports[0].len.unwrap();
    assert_eq!(&len_text[at.start..at.end], "42");
}

#[test]
fn location_comes_before_purity() {
    assert!(only_box("A = extern pure box a(in x) connect A").pure);
    let (line, col, message) = first_error("A = pure extern box a(in x)\nconnect A");
    assert_eq!((line, col), (1, 10));
    assert_eq!(message, "syntax error: expected 'box', found keyword 'extern'");
}

#[test]
fn net_assignments_and_prototypes() {
    let program = ok("net N(up in a, down out b, side in c, left in d, right out e)\nN = A.B\nconnect N");
    let Decl::Proto(proto) = &program.decls[0] else {
        panic!()
    };
    assert_eq!(proto.name.name, "N");
    let ports: Vec<(PortClass, PortMode, &str)> = proto
        .ports
        .iter()
        .map(|p| (p.class, p.mode, p.name.name.as_str()))
        .collect();
    assert_eq!(
        ports,
        [
            (PortClass::Up, PortMode::In, "a"),
            (PortClass::Down, PortMode::Out, "b"),
            (PortClass::Side, PortMode::In, "c"),
            (PortClass::Up, PortMode::In, "d"),
            (PortClass::Down, PortMode::Out, "e"),
        ]
    );
    let Decl::Net(assign) = &program.decls[1] else { panic!() };
    assert_eq!(assign.name.name, "N");
    assert_eq!(shape(&assign.net), "(A . B)");
    // A prototype port needs a class.
    assert!(first_error("net N(in a)\nconnect N").2.contains("port class"));
}

#[test]
fn wrappers_with_nested_programs() {
    let text = "static wrapper W(decoupled up in p(a, b), out q, (c, d), side out s(x)) {\n\
                A = box a(in a, out q)\n\
                wrapper V(in a) { connect A } net(down in a)\n\
                connect A.V\n\
                } net(up in a, down out q)\nconnect W";
    let program = ok(text);
    let Decl::Wrapper(w) = &program.decls[0] else { panic!() };
    assert!(w.is_static);
    assert_eq!(w.name.name, "W");
    let p = &w.ports[0];
    assert_eq!(
        (p.coupling, p.class, p.mode),
        (Some(Coupling::Decoupled), Some(PortClass::Up), Some(PortMode::In))
    );
    assert_eq!(p.name.as_ref().unwrap().name, "p");
    assert_eq!(p.inner.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!((w.ports[1].mode, w.ports[1].inner.len()), (Some(PortMode::Out), 0));
    let null = &w.ports[2];
    assert_eq!((null.mode, null.name.is_none(), null.inner.len()), (None, true, 2));
    assert_eq!(w.ports[3].class, Some(PortClass::Side));
    assert_eq!(w.body.decls.len(), 2);
    let Decl::Wrapper(inner) = &w.body.decls[1] else {
        panic!()
    };
    assert!(!inner.is_static);
    assert_eq!(inner.body_proto[0].class, PortClass::Down);
    assert_eq!(shape(&w.body.connect.net), "(A . V)");
    assert_eq!(w.body_proto.len(), 2);
    assert_eq!(&text[w.span.start..w.span.start + 6], "static");
    assert!(text[..w.span.end].ends_with("down out q)"));
}

#[test]
fn keywords_are_reserved_but_longer_words_are_identifiers() {
    let (line, col, message) = first_error("A = box a(in in)\nconnect A");
    assert_eq!((line, col), (1, 14));
    assert_eq!(message, "syntax error: expected an identifier, found keyword 'in'");
    let keywords = [
        "up",
        "down",
        "left",
        "right",
        "side",
        "in",
        "out",
        "box",
        "wrapper",
        "net",
        "connect",
        "pure",
        "decoupled",
        "coupled",
        "static",
        "extern",
        "intern",
        "open",
        "dynamic",
        "tt",
        "rt",
        "tb",
        "tf",
    ];
    for keyword in keywords {
        let (_, col, message) = first_error(&format!("A = box a(in {keyword})\nconnect A"));
        assert_eq!(col, 14, "{keyword}");
        assert_eq!(
            message,
            format!("syntax error: expected an identifier, found keyword '{keyword}'")
        );
        let longer = only_box(&format!(
            "A = box a(in {keyword}1, in {keyword}_, in {keyword}$, in x{keyword}) connect A"
        ));
        assert_eq!(longer.ports[0].name.name, format!("{keyword}1"));
        assert!(
            !errors(&format!("{keyword} = box a(in x)\nconnect A")).is_empty(),
            "{keyword}"
        );
    }
    let b = only_box("input = box outer(in input, out tt1, in $x_1, out intern_2, in boxed)\nconnect input");
    assert_eq!(b.name.name, "input");
    assert_eq!(b.implementation.name, "outer");
    let names: Vec<&str> = b.ports.iter().map(|p| p.name.name.as_str()).collect();
    assert_eq!(names, ["input", "tt1", "$x_1", "intern_2", "boxed"]);
    assert_eq!(connect_shape("$B.tt1.rt_x"), "(($B . tt1) . rt_x)");
}

#[test]
fn exactly_one_connect_at_the_end() {
    let (line, col, message) = first_error("A = box a(in x)\nconnect A\nconnect A");
    assert_eq!((line, col), (3, 1));
    assert!(message.contains("found keyword 'connect'"), "{message}");
    assert!(message.contains("end of file"), "{message}");
    let (line, _, message) = first_error("A = box a(in x)\n");
    assert_eq!(line, 2);
    assert_eq!(
        message,
        "syntax error: expected a declaration or 'connect', found end of file"
    );
    assert!(!errors("connect A\nB = box b(in x)").is_empty());
}

#[test]
fn empty_and_comment_only_files_are_rejected() {
    assert_eq!(
        errors(""),
        [(
            1,
            1,
            "syntax error: expected a declaration or 'connect', found end of file".to_string()
        )]
    );
    assert_eq!(first_error("// nothing\n/* here */\n").0, 3);
}

#[test]
fn lines_and_columns_count_newlines_inside_comments_and_tabs_as_one_column() {
    assert_eq!(first_error("/* a\nb\n*/ connect in").0, 3);
    let (line, col, _) = first_error("// x\n\tA = box a(in x)\n\tconnect A .. B");
    assert_eq!((line, col), (3, 13));
    let (file, parsed) = parse_text("A = box a(in x)\nconnect \u{e9}\u{e9}A");
    let places: Vec<(usize, usize)> = parsed
        .diagnostics
        .iter()
        .map(|d| file.line_col(d.span.unwrap().start))
        .collect();
    assert_eq!(places, [(2, 9), (2, 10)], "a two-byte character is one column");
}

#[test]
fn comments_of_both_styles_are_skipped() {
    let program = ok("/* a\n * b */ A = box a(in x) // c\n// d\nconnect /* e */ A // f");
    assert_eq!(program.decls.len(), 1);
    assert_eq!(ok("connect A/**/./**/B//").decls.len(), 0);
}

#[test]
fn unterminated_comment_is_an_error_at_its_start() {
    assert_eq!(
        errors("A = box a(in x)\n  /* never closed\nconnect A"),
        [(2, 3, "unterminated comment: this '/*' has no matching '*/'".to_string())]
    );
}

#[test]
fn crlf_line_ends_are_whitespace() {
    let (file, parsed) = parse_text("A = box a(in x)\r\nconnect\r\n  B\r\n");
    assert!(parsed.diagnostics.is_empty());
    let program = parsed.program.unwrap();
    let NetExpr::Ident(b) = &program.connect.net else {
        panic!()
    };
    assert_eq!(file.line_col(b.span.start), (3, 3));
}

#[test]
fn a_windows_file_with_byte_order_mark_and_crlf_is_accepted() {
    let (file, parsed) = parse_text("\u{FEFF}A = box a(in x)\r\nconnect A\r\n");
    assert!(parsed.is_ok(), "{:?}", parsed.diagnostics);
    let program = parsed.program.unwrap();
    let Decl::Box(a) = &program.decls[0] else { panic!() };
    assert_eq!(&file.text[a.span.start..a.span.end], "A = box a(in x)");
}

#[test]
fn invalid_characters_are_all_reported_and_reject_the_file() {
    let (file, parsed) = parse_text("A = box a(in x) # \nconnect A % .B\u{FFFD}\n");
    let found: Vec<(usize, usize, &str)> = parsed
        .diagnostics
        .iter()
        .map(|d| {
            let (line, col) = file.line_col(d.span.unwrap().start);
            (line, col, d.message.as_str())
        })
        .collect();
    assert_eq!(
        found,
        [
            (1, 17, "invalid character '#'"),
            (2, 11, "invalid character '%'"),
            (2, 15, "invalid character: bytes that are not UTF-8 text"),
        ]
    );
    // The rest of the file is still read, so the tree exists, but the file is rejected.
    assert!(parsed.program.is_some());
    assert!(!parsed.is_ok());
}

#[test]
fn invalid_characters_and_a_syntax_error_are_reported_together() {
    let all = errors("A = box a(in x) @\nconnect A B ~");
    let lines: Vec<(usize, usize)> = all.iter().map(|(l, c, _)| (*l, *c)).collect();
    assert_eq!(lines, [(1, 17), (2, 11), (2, 13)]);
    assert!(all[1].2.starts_with("syntax error"));
}

#[test]
fn non_utf8_bytes_from_a_file_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.smx");
    std::fs::write(&path, b"A = box a(in x)\nconnect \xff\xfeA\n").unwrap();
    let file = SourceFile::read(&path).unwrap();
    let parsed = parse(&file);
    let places: Vec<(usize, usize)> = parsed
        .diagnostics
        .iter()
        .map(|d| file.line_col(d.span.unwrap().start))
        .collect();
    assert_eq!(places, [(2, 9), (2, 10)]);
}

#[test]
fn syntax_errors_say_what_was_expected() {
    let cases = [
        (
            "connect in",
            (1, 9),
            "syntax error: expected a net expression, found keyword 'in'",
        ),
        (
            "connect A.",
            (1, 11),
            "syntax error: expected a net expression, found end of file",
        ),
        (
            "A = box a()\nconnect A",
            (1, 11),
            "syntax error: expected a port like 'in x', found ')'",
        ),
        (
            "A = box a(in x y)\nconnect A",
            (1, 16),
            "syntax error: expected ')', ',', '(', '[' or 'open'/'dynamic', found identifier 'y'",
        ),
        (
            "A = )\nconnect A",
            (1, 5),
            "syntax error: expected a box declaration ('box NAME(...)') or a net expression, found ')'",
        ),
        (
            "connect A B",
            (1, 11),
            "syntax error: expected an operator ('.', ':', '!' or '|') or end of file, found identifier 'B'",
        ),
        (
            "connect A * B",
            (1, 11),
            "syntax error: expected an operator ('.', ':', '!' or '|') or end of file, found '*'",
        ),
        (
            "A = box a(in x[0])\nconnect A",
            (1, 16),
            "syntax error: expected a channel length (a whole number from 1), found '0'",
        ),
    ];
    for (text, place, message) in cases {
        let (line, col, got) = first_error(text);
        assert_eq!(((line, col), got.as_str()), (place, message), "for {text:?}");
    }
}

#[test]
fn errors_in_several_declarations_are_all_reported() {
    let text = "A = box a(in x y)\nB = box b(out x)\nC = )\nwrapper W(in x) { connect A B } net(up in x)\nconnect A..B";
    let lines: Vec<usize> = errors(text).iter().map(|e| e.0).collect();
    assert_eq!(lines, [1, 3, 4, 5]);
}

#[test]
fn numbers_out_of_range_are_errors() {
    let all = errors("A = box a(in x[4294967296])\nconnect tt[18446744073709551616s](A)");
    assert_eq!(all.len(), 2);
    assert_eq!((all[0].0, all[0].1), (1, 16));
    assert!(all[0].2.contains("too large"));
    assert_eq!((all[1].0, all[1].1), (2, 12));
    assert_eq!(
        only_box("A = box a(in x[4294967295]) connect A").ports[0]
            .len
            .unwrap()
            .0,
        u32::MAX
    );
}

#[test]
fn nesting_up_to_the_limit_parses_and_deeper_is_refused() {
    // Run on a thread with the default test stack size (2 MiB) to prove the limit is safe.
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let depth = MAX_NESTING;
            let net = format!("{}A{}", "(".repeat(depth), ")".repeat(depth));
            assert_eq!(connect_shape(&net), "A");
            let deep = format!("connect {}A{}", "(".repeat(10_000), ")".repeat(10_000));
            let all = errors(&deep);
            assert_eq!(all.len(), 1);
            assert_eq!((all[0].0, all[0].1), (1, 9 + MAX_NESTING));
            assert!(all[0].2.starts_with("nesting too deep"), "{}", all[0].2);
            let unbalanced = format!("connect {}", "(".repeat(10_000));
            assert!(errors(&unbalanced)[0].2.starts_with("nesting too deep"));
        })
        .unwrap()
        .join()
        .unwrap();
}

/// 50,000 box instances in one operator chain (the tree is 50,000 levels deep on its left
/// spine): parsing, `span()` and dropping must not recurse per level.
#[test]
fn a_net_of_fifty_thousand_boxes_parses_and_drops() {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let n = 50_000;
            let mut text = String::from("A = box a(in x, out x)\nB = box b(in x, out x)\nconnect A");
            for i in 1..n {
                text.push_str(["|B", ".A", ":(A!B)", "!rt(B)"][i % 4]);
            }
            let program = ok(&text);
            let span = program.connect.net.span();
            assert_eq!(&text[span.start..span.start + 9], "A.A:(A!B)");
            assert_eq!(span.end, text.len());
            drop(program);
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn five_thousand_declarations_parse() {
    let n = 5_000;
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!("B{i} = box b{i}(in x, out x)\n"));
    }
    text.push_str("connect B0");
    for i in 1..n {
        text.push_str(&format!(".B{i}"));
    }
    let program = ok(&text);
    assert_eq!(program.decls.len(), n);
    let Decl::Box(last) = &program.decls[n - 1] else {
        panic!()
    };
    assert_eq!(last.implementation.name, format!("b{}", n - 1));
}

/// The original compiler's test suite: every program must parse.
#[test]
fn every_conformance_program_parses() {
    let Some(cases) = conformance_cases() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "conformance cases not found (set SMX_SHARED)"
        );
        println!("conformance cases not found (set SMX_SHARED); skipped");
        return;
    };
    let mut count = 0;
    let mut failures = Vec::new();
    for entry in std::fs::read_dir(&cases).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "smx") {
            continue;
        }
        count += 1;
        let file = SourceFile::read(&path).unwrap();
        let parsed = parse(&file);
        if !parsed.is_ok() {
            failures.extend(parsed.diagnostics.iter().map(|d| file.render(d)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join(""));
    assert_eq!(count, 131);
}

fn conformance_cases() -> Option<std::path::PathBuf> {
    let beside = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    let shared = if beside.exists() {
        beside
    } else {
        std::path::PathBuf::from(std::env::var_os("SMX_SHARED")?)
    };
    let cases = shared.join("conformance/cases");
    cases.exists().then_some(cases)
}
