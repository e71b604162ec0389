//! The whole front end (`compose::compile`: parsing, composition, flattening, checks) under
//! mutated input (tests/syntax_props.rs covers the parser alone): never a panic, a
//! hang or a stack overflow; always either an accepted graph whose edges join existing nodes,
//! or diagnostics whose places lie inside the text. Bounded to a few seconds; set
//! `PROPTEST_CASES` for a longer run.

use proptest::prelude::*;

use smx_lang::compose::{CompileOptions, compile};
use smx_lang::diag::{SourceFile, has_errors};

/// Valid nets exercising composition: chains, fan-in/out, nets, prototypes, time, open ports.
const SEEDS: &[&str] = &[
    "Src = box smx_src_rand(out data)\nSnk = box smx_snk_null(in data)\nconnect Src.Snk\n",
    "Src = box smx_src_rand(decoupled out data)\nFwd = box smx_fwd(up in data[2], down out data[3])\n\
     Snk = box smx_snk_null(in data)\nconnect (Src!Src).Fwd.(Snk|Snk)\n",
    "Src = box smx_src_rand(out data)\nSnk = box smx_snk_null(in data)\nA = Src.Snk\nB = A|A\nconnect B|B\n",
    "A = box a(out x)\nB = box b(in x, out y)\nC = box c(in y, side out s)\nD = box d(side in s)\n\
     connect tt[1s](A.tt[2s](B)).C | D\n",
    "net N(up in a, down out b)\nP = box p(in a, out m)\nQ = box q(in m, out b)\nN = P.Q\n\
     S = box s(out a)\nT = box t(in b)\nconnect S.N.T\n",
    "A = box a(out x open, out y)\nB = box b(in y, in z open)\nconnect rt(A).tb[5ms](B)\n",
];

const VOCABULARY: &[&str] = &[
    ".",
    ":",
    "|",
    "!",
    "(",
    ")",
    "{",
    "}",
    ",",
    "=",
    "[",
    "]",
    "3",
    "tt[2ms]",
    "rt",
    "tb[1s]",
    "in",
    "out",
    "side",
    "up",
    "down",
    "decoupled",
    "open",
    "box",
    "net",
    "wrapper",
    "connect",
    "A",
    "Src",
    "Snk",
    "data",
    "x",
    "\n",
    " ",
    "/*",
    "\r",
];

#[derive(Debug, Clone)]
enum Mutation {
    Insert(usize, &'static str),
    Delete(usize),
    Swap(usize, usize),
    Duplicate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), proptest::sample::select(VOCABULARY)).prop_map(|(i, t)| Mutation::Insert(i, t)),
        any::<usize>().prop_map(Mutation::Delete),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Mutation::Swap(i, j)),
        any::<usize>().prop_map(Mutation::Duplicate),
    ]
}

/// Whitespace-separated and punctuation-separated pieces of a text.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() || c == '_' || c == '$' {
            word.push(c);
        } else {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            out.push(c.to_string());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

fn apply(seed: &str, mutations: &[Mutation]) -> String {
    let mut t = tokens(seed);
    for m in mutations {
        let n = t.len().max(1);
        match *m {
            Mutation::Insert(i, tok) => t.insert(i % (t.len() + 1), tok.to_string()),
            Mutation::Delete(i) if !t.is_empty() => {
                t.remove(i % n);
            }
            Mutation::Swap(i, j) if !t.is_empty() => t.swap(i % n, j % n),
            Mutation::Duplicate(i) if !t.is_empty() => {
                let tok = t[i % n].clone();
                t.insert(i % n, tok);
            }
            _ => {}
        }
    }
    t.concat()
}

fn check(text: &str) -> Result<(), TestCaseError> {
    let file = SourceFile::new("m.smx", text);
    let compiled = compile(&file, &CompileOptions::default());
    for d in &compiled.diagnostics {
        for span in d.span.iter().chain(d.related.iter().map(|(s, _)| s)) {
            prop_assert!(span.start <= span.end && span.end <= text.len(), "{span:?}: {d:?}");
            let (line, col) = file.line_col(span.start);
            prop_assert!(line >= 1 && col >= 1 && line <= text.matches('\n').count() + 1);
        }
        prop_assert!(!file.render(d).is_empty());
    }
    if compiled.accepted() {
        let g = &compiled.graph;
        for e in &g.edges {
            prop_assert!(e.source < g.nodes.len() && e.target < g.nodes.len(), "{e:?}");
        }
    } else {
        prop_assert!(has_errors(&compiled.diagnostics));
    }
    Ok(())
}

fn config(default: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(default),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

#[test]
fn seeds_are_accepted() {
    for seed in SEEDS {
        let compiled = compile(&SourceFile::new("seed.smx", *seed), &CompileOptions::default());
        assert!(compiled.accepted(), "{seed}: {:?}", compiled.diagnostics);
    }
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn mutated_nets_never_break_the_front_end(
        seed in proptest::sample::select(SEEDS),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        check(&apply(seed, &mutations))?;
    }
}

proptest! {
    #![proptest_config(config(40))]

    #[test]
    fn big_and_deep_nets_compile_or_are_refused(
        n in 1usize..1500,
        op in proptest::sample::select(&[".", ":", "|", "!"][..]),
        depth in 0usize..1500,
    ) {
        let mut net = "A".to_string();
        for _ in 1..n {
            net.push_str(op);
            net.push('A');
        }
        let text = format!("A = box a(in x, out x)\nconnect {}{}{}\n", "(".repeat(depth), net, ")".repeat(depth));
        check(&text)?;
    }
}
