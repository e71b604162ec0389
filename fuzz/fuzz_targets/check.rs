//! Fuzz target `check`: any byte string through the whole front end, as `smxrun check` reads
//! a file (parse, then compose). Must never panic, hang or overflow the stack; a rejected input
//! must carry an error, and every diagnostic must point inside the text.

#![no_main]

use libfuzzer_sys::fuzz_target;
use smx_lang::compose::{CompileOptions, compile};
use smx_lang::diag::{SourceFile, has_errors};

fuzz_target!(|data: &[u8]| {
    // SourceFile::read does the same lossy conversion for files that are not UTF-8.
    let file = SourceFile::new("fuzz.smx", String::from_utf8_lossy(data).into_owned());
    let parsed = smx_lang::syntax::parse(&file);
    if parsed.program.is_none() {
        assert!(has_errors(&parsed.diagnostics), "rejected without an error");
    }
    let compiled = compile(&file, &CompileOptions::default());
    assert!(parsed.is_ok() || !compiled.accepted(), "accepted with syntax errors");
    for diag in parsed.diagnostics.iter().chain(&compiled.diagnostics) {
        for span in diag.span.iter().chain(diag.related.iter().map(|(s, _)| s)) {
            assert!(
                span.start <= span.end && span.end <= file.text.len(),
                "{span:?} outside the text"
            );
            let (line, col) = file.line_col(span.start);
            assert!(line >= 1 && col >= 1);
        }
        file.render(diag);
    }
    let nodes = compiled.graph.nodes.len();
    assert!(
        compiled
            .graph
            .edges
            .iter()
            .all(|e| e.source < nodes && e.target < nodes)
    );
});
