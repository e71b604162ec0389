//! Property tests of the front end's robustness: valid nets mutated at the token
//! level (insertions, deletions, swaps, random bytes, CRLF, deep nesting, long chains) never
//! make the parser or the composition ([`compile`]) panic, hang or overflow the stack, and
//! every outcome is either a program/graph or diagnostics whose places lie inside the text.
//!
//! Bounded to a few seconds in a debug build: 128 cases per property by default; set
//! `PROPTEST_CASES` for a longer run.

use proptest::prelude::*;

use smx_lang::compose::{CompileOptions, compile};
use smx_lang::diag::{SourceFile, has_errors};
use smx_lang::syntax::ast::{Decl, NetExpr, Program};
use smx_lang::syntax::parse;

/// Accepted nets (the fuzzer's seed corpus), the starting points of the mutations.
const NETS: &[&str] = &[
    include_str!("../fuzz/seeds/chain.smx"),
    include_str!("../fuzz/seeds/attributes.smx"),
    include_str!("../fuzz/seeds/parallel.smx"),
    include_str!("../fuzz/seeds/proto.smx"),
    include_str!("../fuzz/seeds/wrapper.smx"),
];

/// Syntactically valid programs with the constructs the accepted nets lack (null wrapper
/// ports, `tf`, every attribute at once); composition may reject them.
const SYNTAX_ONLY: &[&str] = &[
    "A = extern pure box fa(decoupled up in a(ia)[3] open, coupled side out s dynamic, out b)\n\
     B = intern box fb(left in b, right out c [2], side in s)\n\
     connect rt(A).tt[1s500ms](B) | tb[20ms](A:B) ! tf[](B)\n",
    "X = box x(in i, out o)\n\
     static wrapper W(in p(i, j), out o, (k), side out z(q)) {\n\
       Y = box y(in i, out o)\n\
       wrapper V(in i) { connect Y } net(down in i, up out o)\n\
       connect V:X\n\
     } net(up in i, down out o)\n\
     connect W.(X|X)!W\n",
];

fn seed() -> impl Strategy<Value = &'static str> {
    proptest::sample::select([NETS, SYNTAX_ONLY].concat())
}

/// Tokens that mutations insert: every keyword, punctuation, numbers, time literals, names,
/// comment starts and characters outside the language.
const VOCABULARY: &[&str] = &[
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
    ".",
    ":",
    "|",
    "!",
    "(",
    ")",
    "{",
    "}",
    ",",
    "*",
    "=",
    "[",
    "]",
    "0",
    "7",
    "4294967296",
    "1s",
    "500ms",
    "10us",
    "3ns",
    "99999999999999999999s",
    "A",
    "x",
    "$y",
    "input",
    "/*",
    "*/",
    "//",
    "/",
    "\r",
    "\n",
    "#",
    "\u{FFFD}",
    "é",
    "\t",
    "\0",
];

/// Splits a text into tokens and the whitespace between them (a rough split is enough: the
/// mutations only need plausible pieces).
fn pieces(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut last_class = None;
    for c in text.chars() {
        let class = if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
            0
        } else if c.is_whitespace() {
            1
        } else {
            2
        };
        match out.last_mut() {
            Some(piece) if last_class == Some(class) && class != 2 => piece.push(c),
            _ => out.push(c.to_string()),
        }
        last_class = Some(class);
    }
    out
}

#[derive(Debug, Clone)]
enum Mutation {
    Insert(usize, &'static str),
    Delete(usize),
    Swap(usize, usize),
    Bytes(usize, Vec<u8>),
    Duplicate(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), proptest::sample::select(VOCABULARY)).prop_map(|(i, t)| Mutation::Insert(i, t)),
        any::<usize>().prop_map(Mutation::Delete),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Mutation::Swap(i, j)),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..6)).prop_map(|(i, b)| Mutation::Bytes(i, b)),
        (any::<usize>(), 1usize..20).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
    ]
}

fn apply(seed: &str, mutations: &[Mutation]) -> String {
    let mut p = pieces(seed);
    for m in mutations {
        let len = p.len().max(1);
        match m {
            Mutation::Insert(i, t) => p.insert(i % (p.len() + 1), t.to_string()),
            Mutation::Delete(i) if !p.is_empty() => {
                p.remove(i % len);
            }
            Mutation::Swap(i, j) if !p.is_empty() => p.swap(i % len, j % len),
            Mutation::Bytes(i, bytes) => p.insert(i % (p.len() + 1), String::from_utf8_lossy(bytes).into_owned()),
            Mutation::Duplicate(i, n) if !p.is_empty() => {
                let piece = p[i % len].clone();
                p.insert(i % len, piece.repeat(*n));
            }
            _ => {}
        }
    }
    p.concat()
}

/// The property every input must satisfy.
fn check(text: &str) -> Result<(), TestCaseError> {
    let file = SourceFile::new("p.smx", text);
    let parsed = parse(&file);
    for d in &parsed.diagnostics {
        let span = d
            .span
            .ok_or_else(|| TestCaseError::fail(format!("diagnostic without place: {d:?}")))?;
        for (related, _) in &d.related {
            prop_assert!(related.start <= related.end && related.end <= text.len(), "{d:?}");
            prop_assert!(text.is_char_boundary(related.start) && text.is_char_boundary(related.end));
        }
        prop_assert!(
            span.start <= span.end && span.end <= text.len(),
            "{span:?} outside the text: {d:?}"
        );
        prop_assert!(text.is_char_boundary(span.start) && text.is_char_boundary(span.end));
        let (line, col) = file.line_col(span.start);
        prop_assert!(line >= 1 && col >= 1);
        prop_assert!(line <= text.matches('\n').count() + 1);
        prop_assert!(!file.render(d).is_empty());
    }
    match &parsed.program {
        None => prop_assert!(has_errors(&parsed.diagnostics), "rejected without an error"),
        Some(program) => check_spans(program, text.len())?,
    }
    // The whole front end: accepted, or diagnostics whose places lie inside the text.
    let compiled = compile(&file, &CompileOptions::default());
    prop_assert!(parsed.is_ok() || !compiled.accepted(), "accepted with syntax errors");
    for d in &compiled.diagnostics {
        for span in d.span.iter().chain(d.related.iter().map(|(s, _)| s)) {
            prop_assert!(
                span.start <= span.end && span.end <= text.len(),
                "{span:?} outside the text: {d:?}"
            );
            prop_assert!(file.line_col(span.start).0 >= 1);
        }
        prop_assert!(!file.render(d).is_empty());
    }
    let nodes = compiled.graph.nodes.len();
    prop_assert!(
        compiled
            .graph
            .edges
            .iter()
            .all(|e| e.source < nodes && e.target < nodes)
    );
    Ok(())
}

fn check_spans(program: &Program, len: usize) -> Result<(), TestCaseError> {
    let inside = |s: smx_lang::diag::Span| s.start <= s.end && s.end <= len;
    prop_assert!(inside(program.connect.net.span()));
    for decl in &program.decls {
        match decl {
            Decl::Box(b) => {
                prop_assert!(inside(b.span));
                prop_assert!(b.ports.iter().all(|p| inside(p.span) && inside(p.name.span)));
            }
            Decl::Net(n) => prop_assert!(inside(n.span) && inside(n.net.span())),
            Decl::Proto(p) => prop_assert!(inside(p.span)),
            Decl::Wrapper(w) => {
                prop_assert!(inside(w.span));
                check_spans(&w.body, len)?;
            }
        }
    }
    if let NetExpr::Binary { op_span, .. } = &program.connect.net {
        prop_assert!(inside(*op_span));
    }
    Ok(())
}

#[test]
fn seeds_are_valid() {
    for seed in [NETS, SYNTAX_ONLY].concat() {
        let parsed = parse(&SourceFile::new("seed.smx", seed));
        assert!(parsed.is_ok(), "{:?}", parsed.diagnostics);
    }
    for net in NETS {
        let compiled = compile(&SourceFile::new("seed.smx", *net), &CompileOptions::default());
        assert!(compiled.accepted(), "{net}: {:?}", compiled.diagnostics);
    }
}

/// CRLF line ends change nothing: same tree shape, same graph, same number of diagnostics.
#[test]
fn crlf_files_compile_like_lf_files() {
    for seed in [NETS, SYNTAX_ONLY].concat() {
        let crlf = seed.replace('\n', "\r\n");
        let parsed = parse(&SourceFile::new("crlf.smx", crlf.as_str()));
        assert!(parsed.is_ok(), "{:?}", parsed.diagnostics);
        check(&crlf).unwrap();
        let options = CompileOptions::default();
        let with_lf = compile(&SourceFile::new("crlf.smx", seed), &options);
        let with_crlf = compile(&SourceFile::new("crlf.smx", crlf.as_str()), &options);
        assert_eq!(with_lf.graph, with_crlf.graph);
        assert_eq!(with_lf.diagnostics.len(), with_crlf.diagnostics.len());
    }
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(128),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]


    #[test]
    fn mutated_nets_never_break_the_parser(
        seed in seed(),
        mutations in proptest::collection::vec(mutation(), 1..8),
    ) {
        check(&apply(seed, &mutations))?;
    }

    #[test]
    fn random_bytes_never_break_the_parser(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        check(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn deep_nesting_is_parsed_or_refused(depth in 0usize..2_000, seed in seed(), close in any::<bool>()) {
        // Wrap the connect net in `depth` parentheses (or leave them unclosed).
        let at = seed.rfind("connect").unwrap() + "connect".len();
        let tail = &seed[at..];
        let closing = if close { ")".repeat(depth) } else { String::new() };
        let text = format!("{} {}{}{}", &seed[..at], "(".repeat(depth), tail, closing);
        check(&text)?;
    }

    #[test]
    fn long_chains_are_parsed(n in 1usize..400, ops in proptest::collection::vec(proptest::sample::select(&[".", ":", "|", "!"][..]), 1..5)) {
        let mut text = String::from("A = box a(in x, out x)\nconnect A");
        for i in 0..n {
            text.push_str(ops[i % ops.len()]);
            text.push('A');
        }
        let parsed = parse(&SourceFile::new("chain.smx", text.as_str()));
        prop_assert!(parsed.is_ok());
    }
}
