//! Misspelt keywords (`bx`, `conect`, `Connect`).
//!
//! A misspelt keyword is an identifier to the grammar, and an identifier fits in many places,
//! so pest usually fails a token or two later (`Src = bx f(...)` reads `bx` as a net and stops
//! at the `(`). The place to fix is the word: an identifier just before the error that is a
//! letter or two from a keyword, where writing that keyword lets the parse get further.

use pest::Parser as _;

use super::grammar::{Rule, StreamixParser};
use super::scan::{self, TokenKind};
use crate::diag::Span;

/// Identifiers before the error that are tried as the misspelt word: the error is usually on
/// the word or a token or two after it.
const WORDS_BACK: usize = 3;

/// A misspelt keyword found near a syntax error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Typo {
    pub span: Span,
    pub word: String,
    pub keyword: &'static str,
}

/// The keyword `word` is probably a misspelling of: the same letters in another case, or one
/// edit away (two for keywords of six letters or more). Single letters are left alone, as
/// `t` or `i` are common names.
pub(crate) fn near_keyword(word: &str) -> Option<&'static str> {
    if word.len() < 2 || scan::KEYWORDS.contains(&word) {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    scan::KEYWORDS
        .iter()
        .copied()
        .map(|k| (strsim::osa_distance(&lower, k), k))
        .filter(|&(distance, k)| distance <= 1 || (distance == 2 && k.len() >= 6))
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, k)| k)
}

/// How far a parse of `text` gets: its end when it parses, else where it fails.
fn reach(text: &str) -> usize {
    match StreamixParser::parse(Rule::file, text) {
        Ok(_) => usize::MAX,
        Err(e) => match e.location {
            pest::error::InputLocation::Pos(p) => p,
            pest::error::InputLocation::Span((p, _)) => p,
        },
    }
}

/// The misspelt keyword that best explains a syntax error at `pos` of `text`, if any.
pub(crate) fn misspelt_keyword(text: &str, pos: usize) -> Option<Typo> {
    let tokens = scan::scan(text).tokens;
    let words = tokens
        .iter()
        .filter(|t| t.kind == TokenKind::Word && t.span.start <= pos)
        .rev()
        .take(WORDS_BACK);
    let mut best: Option<(usize, Typo)> = None;
    for token in words {
        let word = &text[token.span.start..token.span.end];
        let Some(keyword) = near_keyword(word) else {
            continue;
        };
        let repaired = format!("{}{keyword}{}", &text[..token.span.start], &text[token.span.end..]);
        // Back in the original text's offsets, so that the reaches of candidates compare.
        let reached = match reach(&repaired) {
            usize::MAX => usize::MAX,
            p if p >= token.span.start + keyword.len() => p - keyword.len() + word.len(),
            p => p,
        };
        if reached > pos && best.as_ref().is_none_or(|(r, _)| reached > *r) {
            let typo = Typo {
                span: token.span,
                word: word.to_string(),
                keyword,
            };
            best = Some((reached, typo));
        }
    }
    best.map(|(_, typo)| typo)
}

/// What the grammar expects where the misspelt word stands, for the message: the rules pest
/// reports when that word is replaced by a token nothing accepts.
pub(crate) fn expected_at(text: &str, typo: &Typo) -> Option<Vec<Rule>> {
    if typo.keyword == "box" {
        return None;
    }
    let blank = format!(
        "{}*{}{}",
        &text[..typo.span.start],
        " ".repeat(typo.word.len() - 1),
        &text[typo.span.end..]
    );
    match StreamixParser::parse(Rule::file, &blank) {
        Err(pest::error::Error {
            variant: pest::error::ErrorVariant::ParsingError { positives, .. },
            location: pest::error::InputLocation::Pos(p),
            ..
        }) if p == typo.span.start => Some(positives),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_near_keywords() {
        assert_eq!(near_keyword("bx"), Some("box"));
        assert_eq!(near_keyword("conect"), Some("connect"));
        assert_eq!(near_keyword("Connect"), Some("connect"));
        assert_eq!(near_keyword("otu"), Some("out"));
        assert_eq!(near_keyword("wraper"), Some("wrapper"));
        assert_eq!(near_keyword("t"), None);
        assert_eq!(near_keyword("Src"), None);
        assert_eq!(near_keyword("box"), None);
    }

    #[test]
    fn the_word_whose_repair_parses_further_is_chosen() {
        let text = "Src = bx f( out data )\nconnect Src";
        let typo = misspelt_keyword(text, text.find('(').unwrap()).unwrap();
        assert_eq!((typo.span, typo.keyword), (Span::new(6, 8), "box"));
        // A name near a keyword whose repair does not help is not blamed.
        let text = "A = box a( out data )\nconnect A ot";
        assert_eq!(misspelt_keyword(text, text.len() - 2), None);
    }
}
