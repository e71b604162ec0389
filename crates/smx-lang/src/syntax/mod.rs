//! Source text to syntax tree: the pest grammar (`grammar/streamix.pest`), the Pratt parser
//! for the four operators, and lowering to the typed [`ast`].
//!
//! [`parse`] runs three steps. A hand-written [`scan`] pass reports every character outside
//! the language's token set, unterminated comments and nesting deeper than [`MAX_NESTING`]
//! (pest recurses per nesting level, so deeper input is refused instead of risking the stack).
//! pest then parses the text with the invalid characters blanked out, and the pairs are
//! lowered to an [`ast::Program`]. After a syntax error, parsing restarts at the next
//! top-level declaration so that one run shows the syntax errors of several declarations.
//!
//! Differences from smxc: `\r` is whitespace (smxc reports one invalid character per CRLF
//! line) and a UTF-8 byte order mark at the start of the file is skipped; other invalid characters are errors (smxc skips them after a message without
//! failing the compile); nesting is limited to [`MAX_NESTING`] levels; numbers that do not
//! fit (channel lengths above `u32::MAX`, seconds above `u64::MAX`) are errors instead of C
//! `atoi` overflow.

pub mod ast;
mod expect;
mod grammar;
mod lower;
mod scan;
mod time;
mod typo;

use pest::Parser as _;

pub use scan::MAX_NESTING;

use crate::diag::{Diagnostic, SourceFile, has_errors};
use grammar::{Rule, StreamixParser};
use scan::{Token, TokenKind};

/// Syntax errors reported per file at most; each one costs a parse of the rest of the file.
const MAX_SYNTAX_ERRORS: usize = 20;

/// The result of [`parse`].
#[derive(Debug)]
pub struct Parsed {
    /// The syntax tree; `None` when the text is not a program (syntax error, unterminated
    /// comment, too deep nesting, number out of range). Invalid characters alone do not stop
    /// the tree from being built (they are blanked out), but they are errors in
    /// [`Parsed::diagnostics`], so a caller must still check those before accepting the net.
    pub program: Option<ast::Program>,
    /// All problems found, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Parsed {
    /// True when the file was read without any error.
    pub fn is_ok(&self) -> bool {
        self.program.is_some() && !has_errors(&self.diagnostics)
    }
}

/// Parses a whole source file. Never panics; any input yields either a program or diagnostics
/// (or both, see [`Parsed::program`]).
pub fn parse(src: &SourceFile) -> Parsed {
    let scanned = scan::scan(&src.text);
    let mut diagnostics = scanned.diagnostics();
    for d in &mut diagnostics {
        if d.span.is_some_and(|s| negative_period(&src.text, s.start)) {
            d.message.push_str(": a period is positive, leave out the '-'");
        }
    }
    if scanned.blocks_parsing() {
        return Parsed {
            program: None,
            diagnostics,
        };
    }
    let text = scanned.sanitized(&src.text);
    let program = match StreamixParser::parse(Rule::file, &text) {
        Ok(mut pairs) => match pairs.next() {
            Some(file) => {
                let (program, errors) = lower::file(file);
                let ok = errors.is_empty();
                diagnostics.extend(errors);
                ok.then_some(program)
            }
            None => None,
        },
        Err(error) => {
            let first = expect::diagnostic(&error, &text, &src.text, 0);
            let at = first.span.map_or(text.len(), |s| s.start);
            diagnostics.push(first);
            report_further_errors(&text, &src.text, &scanned.tokens, at, &mut diagnostics);
            None
        }
    };
    diagnostics.sort_by_key(|d| d.span.map(|s| s.start));
    Parsed { program, diagnostics }
}

/// Whether the `-` at `at` starts a negative period (`tt[-1us]`).
fn negative_period(text: &str, at: usize) -> bool {
    let before = text[..at].trim_end();
    text[at..].starts_with('-')
        && text[at + 1..].starts_with(|c: char| c.is_ascii_digit())
        && before.strip_suffix('[').is_some_and(|b| {
            let b = b.trim_end();
            ["tt", "tb", "tf"].iter().any(|op| b.ends_with(op))
        })
}

/// Re-parses the file from the first top-level declaration after each syntax error, adding the
/// error found there, until a tail parses or no declaration is left. Only positions where a
/// declaration certainly starts are used, so no error is invented by a bad restart.
fn report_further_errors(text: &str, written: &str, tokens: &[Token], mut error_at: usize, out: &mut Vec<Diagnostic>) {
    let mut restart = 0;
    for _ in 1..MAX_SYNTAX_ERRORS {
        let Some(next) = next_declaration(text, tokens, error_at.max(restart + 1)) else {
            return;
        };
        restart = next;
        let tail = &text[restart..];
        match StreamixParser::parse(Rule::file, tail) {
            Ok(_) => return,
            Err(error) => {
                let diag = expect::diagnostic(&error, tail, &written[restart..], restart);
                error_at = diag.span.map_or(text.len(), |s| s.start);
                out.push(diag);
            }
        }
    }
}

/// The start of the first top-level declaration (or `connect`) at or after byte `from`.
fn next_declaration(text: &str, tokens: &[Token], from: usize) -> Option<usize> {
    let word = |t: &Token| (t.kind == TokenKind::Word).then(|| &text[t.span.start..t.span.end]);
    let is_name = |t: &Token| word(t).is_some_and(|w| !scan::KEYWORDS.contains(&w));
    let first = tokens.partition_point(|t| t.span.start < from);
    (first..tokens.len()).find_map(|i| {
        let token = &tokens[i];
        let next = tokens.get(i + 1);
        let starts = token.depth == 0
            && match word(token) {
                Some("connect" | "wrapper" | "static") => true,
                Some("net") => next.is_some_and(is_name),
                Some(_) => is_name(token) && next.is_some_and(|n| &text[n.span.start..n.span.end] == "="),
                None => false,
            };
        starts.then_some(token.span.start)
    })
}
