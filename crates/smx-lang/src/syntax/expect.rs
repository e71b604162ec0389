//! Syntax errors in user terms.
//!
//! pest reports the grammar rules it tried at the furthest position it reached; this module
//! turns those rule names into words (`identifier`, `'('`, `a net expression`), folds groups
//! that always occur together into one phrase, and names the token that was found instead.

use pest::error::{Error, ErrorVariant, InputLocation};

use super::grammar::Rule;
use super::scan;
use super::typo::Typo;
use crate::diag::{Diagnostic, Span};

/// More alternatives than this are cut, the message would stop being readable.
const MAX_LISTED: usize = 5;

/// Rules that pest reports side by side and that read better as one phrase; the first group
/// whose members are all expected replaces them (applied in this order).
const GROUPS: &[(&[Rule], &str)] = &[
    (
        &[Rule::op_ser, Rule::op_serp, Rule::op_par, Rule::op_par_det],
        "an operator ('.', ':', '!' or '|')",
    ),
    (
        &[Rule::ident, Rule::k_net, Rule::wrapper_decl, Rule::k_connect],
        "a declaration or 'connect'",
    ),
    (
        &[Rule::ident, Rule::lparen, Rule::k_rt, Rule::time_op],
        "a net expression",
    ),
    (
        &[Rule::t_sec, Rule::t_msec, Rule::t_usec, Rule::t_nsec],
        "a time like '1s500ms'",
    ),
    (&[Rule::k_extern, Rule::k_intern], "'extern' or 'intern'"),
];

fn describe(rule: Rule) -> String {
    let text = match rule {
        Rule::EOI => "end of file",
        Rule::ident | Rule::assign => "an identifier",
        Rule::chlen => "a channel length (a whole number from 1)",
        Rule::t_sec => "seconds like '2s'",
        Rule::t_msec => "milliseconds like '500ms'",
        Rule::t_usec => "microseconds like '10us'",
        Rule::t_nsec => "nanoseconds like '100ns'",
        Rule::lparen | Rule::alt_name | Rule::inner_names | Rule::paren => "'('",
        Rule::rparen => "')'",
        Rule::lbrack | Rule::chlen_spec => "'['",
        Rule::rbrack => "']'",
        Rule::lbrace => "'{'",
        Rule::rbrace => "'}'",
        Rule::comma => "','",
        Rule::equals => "'='",
        Rule::op_ser => "'.'",
        Rule::op_serp => "':'",
        Rule::op_par => "'!'",
        Rule::op_par_det => "'|'",
        Rule::file | Rule::program => "a declaration or 'connect'",
        Rule::connect => "'connect'",
        Rule::net => "a net expression",
        Rule::box_def => "a box declaration ('box NAME(...)')",
        Rule::location => "'extern' or 'intern'",
        Rule::box_port => "a port like 'in x'",
        Rule::wrap_port => "a wrapper port like 'in x' or 'in x(a, b)'",
        Rule::proto_port => "a port with class and mode like 'up in x'",
        Rule::coupling => "'decoupled' or 'coupled'",
        Rule::port_class => "a port class ('up', 'down' or 'side')",
        Rule::port_mode => "'in' or 'out'",
        Rule::port_flag => "'open' or 'dynamic'",
        Rule::net_proto => "'net'",
        Rule::wrapper_decl => "a wrapper declaration",
        Rule::rt => "'rt'",
        Rule::timed | Rule::time_op => "'tt', 'tb' or 'tf'",
        Rule::time => "a time like '1s500ms'",
        Rule::k_up => "'up'",
        Rule::k_down => "'down'",
        other => return keyword_text(other).map_or_else(|| format!("{other:?}"), |k| format!("'{k}'")),
    };
    text.to_string()
}

/// The word of a keyword rule (`k_box` → `box`).
fn keyword_text(rule: Rule) -> Option<&'static str> {
    let name = format!("{rule:?}");
    let word = name.strip_prefix("k_")?;
    scan::KEYWORDS.iter().copied().find(|k| *k == word)
}

/// Position in a list of alternatives: the tokens that close a construct first (they are what
/// is missing most of the time), end of file last, the rest in grammar order.
fn rank(rule: Rule) -> (u8, Rule) {
    let class = match rule {
        Rule::rparen | Rule::comma | Rule::rbrack | Rule::rbrace => 0,
        Rule::EOI => 2,
        _ => 1,
    };
    (class, rule)
}

/// "a, b or c".
fn join(items: &[String]) -> String {
    match items {
        [] => "something else".to_string(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The words for a set of expected rules, grouped, in grammar order, without duplicates.
pub(crate) fn expected(rules: &[Rule]) -> String {
    let mut rest: Vec<Rule> = rules.to_vec();
    rest.sort();
    rest.dedup();
    let mut phrases: Vec<(Rule, String)> = Vec::new();
    for (members, phrase) in GROUPS {
        if members.iter().all(|m| rest.contains(m)) {
            rest.retain(|r| !members.contains(r));
            phrases.push((members[0], phrase.to_string()));
        }
    }
    phrases.extend(rest.into_iter().map(|r| (r, describe(r))));
    phrases.sort_by_key(|(rule, _)| rank(*rule));
    let mut words: Vec<String> = Vec::new();
    let several = phrases.len() > 1;
    for (_, mut phrase) in phrases {
        if several && phrase.starts_with('\'') {
            // "'in' or 'out'" inside a longer list reads better as "'in'/'out'".
            phrase = phrase.replace(" or ", "/").replace(", ", "/");
        }
        if !words.contains(&phrase) {
            words.push(phrase);
        }
    }
    if words.len() > MAX_LISTED {
        words.truncate(MAX_LISTED - 1);
        words.push("something else".to_string());
    }
    join(&words)
}

/// Why a time token such as `'0us'` or `'5us500ms'` was refused: the grammar takes each part
/// as a whole number from 1, units in falling order.
fn time_note(found: &str) -> &'static str {
    let digits: String = found
        .trim_matches('\'')
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    if !digits.is_empty() && digits.bytes().all(|d| d == b'0') {
        "note: each part of a time is a whole number from 1, so a period of zero is not a time (write e.g. 10us)"
    } else {
        "note: the units of a time must come in the order s, ms, us, ns, each at most once"
    }
}

/// The innermost `(` open at `pos` that no `)` after it closes: when a `)` is expected there,
/// the place to fix is usually that `(`, lines before the end of file where pest stops.
fn unclosed_paren(text: &str, pos: usize) -> Option<Span> {
    let tokens = scan::scan(text).tokens;
    let is = |t: &scan::Token, s: &str| text.get(t.span.start..t.span.end) == Some(s);
    let mut open: Vec<Span> = Vec::new();
    for t in tokens.iter().take_while(|t| t.span.start < pos) {
        if is(t, "(") {
            open.push(t.span);
        } else if is(t, ")") {
            open.pop();
        }
    }
    // The parentheses after `pos` are matched from the inside out: what closes is what remains.
    let mut depth = 0usize;
    for t in tokens.iter().filter(|t| t.span.start >= pos) {
        if is(t, "(") {
            depth += 1;
        } else if is(t, ")") {
            if depth == 0 {
                open.pop()?;
            } else {
                depth -= 1;
            }
        }
    }
    open.pop()
}

/// The error for a misspelt keyword, at the word: when the parse failed at the word itself,
/// pest's alternatives say what fits there; when it failed later, the alternatives at the word.
fn misspelt(typo: &Typo, text: &str, base: usize, pos: usize, positives: &[Rule], found: &str) -> Diagnostic {
    let Typo { span, word, keyword } = typo;
    let (wanted, found) = if span.start <= pos && pos < span.end {
        (expected(positives), found.to_string())
    } else {
        let wanted = match super::typo::expected_at(text, typo) {
            Some(rules) => expected(&rules),
            None if *keyword == "box" => "'box' (or 'extern box', 'intern box', 'pure box') after '='".to_string(),
            None => format!("'{keyword}'"),
        };
        (wanted, format!("identifier '{word}'"))
    };
    let case = if word.eq_ignore_ascii_case(keyword) {
        " (keywords are lower case)"
    } else {
        ""
    };
    Diagnostic::error(
        format!("syntax error: expected {wanted}, found {found}; did you mean '{keyword}'?{case}"),
        Some(Span::new(span.start + base, span.end + base)),
    )
}

/// The diagnostic for a pest error in `text`, whose offsets are shifted by `base` (for errors
/// found when parsing a tail of the file after an earlier error). `written` is the same stretch
/// of the file before its invalid characters were blanked out.
pub(crate) fn diagnostic(error: &Error<Rule>, text: &str, written: &str, base: usize) -> Diagnostic {
    let pos = match error.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((start, _)) => start,
    };
    let (mut span, found) = scan::describe_at(text, pos);
    span.start += base;
    span.end += base;
    match &error.variant {
        ErrorVariant::ParsingError { positives, .. } => {
            let diag = match super::typo::misspelt_keyword(text, pos) {
                Some(typo) => misspelt(&typo, text, base, pos, positives, &found),
                None => Diagnostic::error(
                    format!("syntax error: expected {}, found {found}", expected(positives)),
                    Some(span),
                ),
            };
            let diag = match unclosed_paren(text, pos).filter(|_| positives.contains(&Rule::rparen)) {
                Some(open) => diag.with_related(
                    Span::new(open.start + base, open.end + base),
                    "this '(' is never closed",
                ),
                None => diag,
            };
            let wants_time = positives
                .iter()
                .any(|r| matches!(r, Rule::t_msec | Rule::t_usec | Rule::t_nsec));
            if wants_time && let Some((start, end, what)) = super::time::bad_period(written, pos) {
                return Diagnostic::error(
                    format!("syntax error: {what}"),
                    Some(Span::new(start + base, end + base)),
                );
            }
            let found_time = found.ends_with("s'") && found.starts_with('\'');
            if found_time && wants_time {
                diag.with_note(time_note(&found))
            } else {
                diag
            }
        }
        ErrorVariant::CustomError { message } => Diagnostic::error(
            format!("syntax error: the parser gave up ({message}) at {found}"),
            Some(span),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_time_is_named_as_such_and_units_out_of_order_as_those() {
        assert!(time_note("'0us'").contains("zero"));
        assert!(time_note("'000ms'").contains("zero"));
        assert!(time_note("'5us500ms'").contains("order s, ms, us, ns"));
        assert!(time_note("'10s'").contains("order"));
    }

    fn parsed(text: &str) -> Diagnostic {
        let file = crate::diag::SourceFile::new("t.smx", text);
        crate::syntax::parse(&file).diagnostics.remove(0)
    }

    #[test]
    fn a_missing_close_paren_names_the_open_one() {
        let text = "A = box a(out x)\nB = box b(in x)\nconnect (A.B\n";
        let diag = parsed(text);
        assert_eq!(
            diag.related,
            [(Span::new(41, 42), "this '(' is never closed".to_string())]
        );
        let shown = crate::diag::SourceFile::new("t.smx", text).render(&diag);
        assert!(
            shown.contains("t.smx:3:9: note: this '(' is never closed\n  connect (A.B\n          ^\n"),
            "{shown}"
        );
        // The inner one, when two are open; none when the '(' is closed further on.
        let diag = parsed("connect (A.(B.C\n");
        assert_eq!(diag.related[0].0, Span::new(11, 12));
        assert!(parsed("connect (A B)\n").related.is_empty());
    }

    #[test]
    fn a_misspelt_keyword_is_pointed_at_with_the_keyword() {
        let cases = [
            (
                "Src = bx smx_src_rand( out data )\nconnect Src\n",
                6,
                "syntax error: expected 'box' (or 'extern box', 'intern box', 'pure box') after '=', found \
                 identifier 'bx'; did you mean 'box'?",
            ),
            (
                "Src = box a( out data )\nSnk = box b( in data )\nconect Src.Snk\n",
                47,
                "syntax error: expected a declaration or 'connect', found identifier 'conect'; did you mean 'connect'?",
            ),
            (
                "Src = box a( out data )\nConnect Src\n",
                24,
                "syntax error: expected a declaration or 'connect', found identifier 'Connect'; did you mean \
                 'connect'? (keywords are lower case)",
            ),
            (
                "Src = box a( otu data )\nconnect Src\n",
                13,
                "syntax error: expected a port like 'in x', found identifier 'otu'; did you mean 'out'?",
            ),
        ];
        for (text, at, message) in cases {
            let diag = parsed(text);
            assert_eq!(
                (diag.span.map(|s| s.start), diag.message.as_str()),
                (Some(at), message),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_bad_period_says_what_is_wrong_at_the_literal() {
        let cases = [
            ("connect tt[10](A)", 11, "syntax error: the period '10' has no unit"),
            ("connect tt[1s500](A)", 13, "syntax error: the period '500' has no unit"),
            (
                "connect tt[1.5ms](A)",
                11,
                "syntax error: a period is written in whole numbers: write 1ms500us",
            ),
            ("connect tt[1h](A)", 11, "syntax error: unknown unit 'h'"),
            (
                "connect tb[10 us](A)",
                11,
                "syntax error: no space may stand between a number and its unit",
            ),
            ("connect tt[-1us](A)", 11, "invalid character '-': a period is positive"),
            // The blank left where an invalid character stood is no space before a unit.
            (
                "connect tt[10\u{b5}s](A)",
                11,
                "syntax error: the unit '\u{b5}s' is written with a 'u': write 10us for microseconds",
            ),
        ];
        for (text, at, start) in cases {
            let diag = parsed(text);
            assert_eq!(diag.span.map(|s| s.start), Some(at), "{text:?}: {}", diag.message);
            assert!(diag.message.starts_with(start), "{text:?}: {}", diag.message);
        }
        // Elsewhere a '-' is just an invalid character.
        assert_eq!(parsed("connect A.-B").message, "invalid character '-'");
    }

    #[test]
    fn keywords_are_quoted_words() {
        assert_eq!(describe(Rule::k_box), "'box'");
        assert_eq!(describe(Rule::k_dynamic), "'dynamic'");
        assert_eq!(describe(Rule::k_up), "'up'");
    }

    #[test]
    fn groups_and_orders_alternatives() {
        let ops = [Rule::op_par_det, Rule::op_ser, Rule::op_par, Rule::op_serp, Rule::EOI];
        assert_eq!(expected(&ops), "an operator ('.', ':', '!' or '|') or end of file");
        assert_eq!(expected(&[Rule::comma, Rule::rparen]), "')' or ','");
        assert_eq!(expected(&[Rule::port_mode]), "'in' or 'out'");
        assert_eq!(
            expected(&[Rule::port_mode, Rule::coupling]),
            "'decoupled'/'coupled' or 'in'/'out'"
        );
        assert_eq!(expected(&[Rule::ident]), "an identifier");
    }

    #[test]
    fn long_lists_are_cut() {
        let many = [
            Rule::k_box,
            Rule::k_pure,
            Rule::k_open,
            Rule::k_in,
            Rule::k_out,
            Rule::k_side,
            Rule::k_static,
        ];
        assert!(expected(&many).ends_with("or something else"));
    }
}
