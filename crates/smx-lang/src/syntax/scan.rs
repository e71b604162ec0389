//! A hand-written scanner that runs before pest.
//!
//! pest stops at the first character it cannot match, but a user should see every stray
//! character of a file at once, and pest recurses once per nesting level, so input nested
//! deeper than the stack allows must be refused before pest sees it. This scanner knows just
//! enough of the token set (§1 of the spec) for that: it finds invalid characters, unterminated
//! block comments and the nesting depth of every token, and it names the token at a position
//! for the "found ..." part of syntax errors.

use crate::diag::{Diagnostic, Span};

/// Deepest nesting of `(`, `[` and `{` accepted. pest and the lowering recurse a few frames per
/// level; 256 levels stay far below a 2 MiB thread stack and far above any real net.
pub const MAX_NESTING: usize = 256;

/// Invalid characters reported one by one before the rest are summed up in one message, so a
/// binary file does not produce thousands of lines.
const MAX_REPORTED_INVALID: usize = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// Identifier or keyword.
    Word,
    /// Channel length or time literal (`12`, `1500ms`).
    Number,
    /// One of `. : | ! ( ) { } , * = [ ]`.
    Punct,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: TokenKind,
    pub span: Span,
    /// Number of brackets open before this token.
    pub depth: usize,
}

/// What the scanner found in a whole text.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub tokens: Vec<Token>,
    /// Characters outside the token set (outside comments), with their byte ranges.
    pub invalid: Vec<(Span, char)>,
    /// The `/*` of a block comment that is never closed.
    pub unterminated_comment: Option<Span>,
    /// The first bracket nested deeper than [`MAX_NESTING`].
    pub too_deep: Option<Span>,
    /// A UTF-8 byte order mark at the very start (Windows editors write one): skipped silently.
    pub bom: Option<Span>,
}

pub(crate) const KEYWORDS: &[&str] = &[
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

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$'
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

fn is_punct(b: u8) -> bool {
    matches!(
        b,
        b'.' | b':' | b'|' | b'!' | b'(' | b')' | b'{' | b'}' | b',' | b'*' | b'=' | b'[' | b']'
    )
}

/// One lexical item starting exactly at `pos`.
enum Item {
    Space,
    Comment,
    UnterminatedComment,
    Token(TokenKind),
    Invalid(char),
}

/// Classifies the item at `pos` (which must be `< text.len()` and on a char boundary) and
/// returns it with its end offset.
fn item_at(text: &str, pos: usize) -> (Item, usize) {
    let bytes = text.as_bytes();
    let b = bytes[pos];
    let next = bytes.get(pos + 1).copied();
    match b {
        b' ' | b'\t' | b'\n' | b'\r' => (Item::Space, pos + 1),
        b'/' if next == Some(b'*') => match text[pos + 2..].find("*/") {
            Some(i) => (Item::Comment, pos + 2 + i + 2),
            None => (Item::UnterminatedComment, text.len()),
        },
        b'/' if next == Some(b'/') => {
            let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
            (Item::Comment, end)
        }
        _ if is_ident_start(b) => {
            let len = bytes[pos..].iter().take_while(|&&c| is_ident_char(c)).count();
            (Item::Token(TokenKind::Word), pos + len)
        }
        _ if b.is_ascii_digit() => {
            let mut end = pos + bytes[pos..].iter().take_while(|c| c.is_ascii_digit()).count();
            let rest = &bytes[end..];
            if rest.starts_with(b"ms") || rest.starts_with(b"us") || rest.starts_with(b"ns") {
                end += 2;
            } else if rest.starts_with(b"s") {
                end += 1;
            }
            (Item::Token(TokenKind::Number), end)
        }
        _ if is_punct(b) => (Item::Token(TokenKind::Punct), pos + 1),
        _ => {
            let c = text[pos..].chars().next().unwrap_or('\u{FFFD}');
            (Item::Invalid(c), pos + c.len_utf8())
        }
    }
}

/// Scans a whole text in one linear pass.
pub(crate) fn scan(text: &str) -> Scan {
    let mut scan = Scan::default();
    let mut depth = 0usize;
    let mut pos = 0;
    if text.starts_with('\u{FEFF}') {
        pos = '\u{FEFF}'.len_utf8();
        scan.bom = Some(Span::new(0, pos));
    }
    while pos < text.len() {
        let (item, end) = item_at(text, pos);
        match item {
            Item::Space | Item::Comment => {}
            Item::UnterminatedComment => scan.unterminated_comment = Some(Span::new(pos, pos + 2)),
            Item::Invalid(c) => scan.invalid.push((Span::new(pos, end), c)),
            Item::Token(kind) => {
                let span = Span::new(pos, end);
                let token_depth = match &text[pos..end] {
                    "(" | "[" | "{" => {
                        depth += 1;
                        if depth > MAX_NESTING && scan.too_deep.is_none() {
                            scan.too_deep = Some(span);
                        }
                        depth - 1
                    }
                    ")" | "]" | "}" => {
                        depth = depth.saturating_sub(1);
                        depth
                    }
                    _ => depth,
                };
                scan.tokens.push(Token {
                    kind,
                    span,
                    depth: token_depth,
                });
            }
        }
        pos = end;
    }
    scan
}

impl Scan {
    /// True when pest must not run: an unterminated comment swallows the rest of the file (pest
    /// would only report a confusing error at its end), and too deep nesting would exhaust the
    /// stack.
    pub fn blocks_parsing(&self) -> bool {
        self.unterminated_comment.is_some() || self.too_deep.is_some()
    }

    /// The problems found, in source order.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut out: Vec<Diagnostic> = self
            .invalid
            .iter()
            .take(MAX_REPORTED_INVALID)
            .map(|&(span, c)| Diagnostic::error(invalid_message(c), Some(span)))
            .collect();
        if self.invalid.len() > MAX_REPORTED_INVALID {
            let (span, _) = self.invalid[MAX_REPORTED_INVALID];
            out.push(Diagnostic::error(
                format!(
                    "{} more invalid characters (from here on, not listed one by one)",
                    self.invalid.len() - MAX_REPORTED_INVALID
                ),
                Some(span),
            ));
        }
        if let Some(span) = self.unterminated_comment {
            out.push(Diagnostic::error(
                "unterminated comment: this '/*' has no matching '*/'",
                Some(span),
            ));
        }
        if let Some(span) = self.too_deep {
            out.push(Diagnostic::error(
                format!("nesting too deep: more than {MAX_NESTING} levels of '(', '[' and '{{'"),
                Some(span),
            ));
        }
        out.sort_by_key(|d| d.span.map(|s| s.start));
        out
    }

    /// The text pest parses: every invalid character replaced by spaces of the same byte
    /// length, so that spans stay valid for the original text.
    pub fn sanitized<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        if self.invalid.is_empty() && self.bom.is_none() {
            return text.into();
        }
        let mut out = String::with_capacity(text.len());
        let mut pos = 0;
        for span in self.bom.iter().chain(self.invalid.iter().map(|(span, _)| span)) {
            out.push_str(&text[pos..span.start]);
            out.extend(std::iter::repeat_n(' ', span.end - span.start));
            pos = span.end;
        }
        out.push_str(&text[pos..]);
        out.into()
    }
}

fn invalid_message(c: char) -> String {
    match c {
        '\u{FFFD}' => "invalid character: bytes that are not UTF-8 text".to_string(),
        '/' => "invalid character '/' (comments start with '//' or '/*')".to_string(),
        c if c.is_control() || c.is_whitespace() => format!("invalid character '{}'", c.escape_unicode()),
        c => format!("invalid character '{c}'"),
    }
}

/// The first token at or after `pos` (skipping whitespace and comments), for the "found ..."
/// part of a syntax error: its span and a description such as `'in'`, `identifier 'foo'` or
/// `end of file`.
pub(crate) fn describe_at(text: &str, mut pos: usize) -> (Span, String) {
    while pos < text.len() && text.is_char_boundary(pos) {
        let (item, end) = item_at(text, pos);
        let token = &text[pos..end];
        let description = match item {
            Item::Space | Item::Comment => {
                pos = end;
                continue;
            }
            Item::UnterminatedComment => "an unterminated comment".to_string(),
            Item::Token(TokenKind::Word) if KEYWORDS.contains(&token) => format!("keyword '{token}'"),
            Item::Token(TokenKind::Word) => format!("identifier '{token}'"),
            Item::Token(_) => format!("'{token}'"),
            Item::Invalid(c) => invalid_message(c),
        };
        return (Span::new(pos, end), description);
    }
    let end = text.len();
    (Span::new(end, end), "end of file".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<&str> {
        scan(text)
            .tokens
            .iter()
            .map(|t| &text[t.span.start..t.span.end])
            .collect()
    }

    #[test]
    fn splits_tokens_like_the_original_lexer() {
        assert_eq!(
            texts("A=box a(in x[10]) // c\n/* c */ connect tt[1s500ms](A)"),
            [
                "A", "=", "box", "a", "(", "in", "x", "[", "10", "]", ")", "connect", "tt", "[", "1s", "500ms", "]",
                "(", "A", ")"
            ]
        );
    }

    #[test]
    fn finds_invalid_characters_outside_comments_only() {
        let s = scan("a # b /* # é */ é\u{FFFD} / c\r\n");
        let found: Vec<char> = s.invalid.iter().map(|&(_, c)| c).collect();
        assert_eq!(found, ['#', 'é', '\u{FFFD}', '/']);
        assert_eq!(s.invalid[1].0, Span::new(17, 19));
    }

    #[test]
    fn sanitizing_keeps_byte_offsets() {
        let text = "a é b";
        let s = scan(text);
        let clean = s.sanitized(text);
        assert_eq!(clean, "a    b");
        assert_eq!(clean.len(), text.len());
    }

    #[test]
    fn a_leading_byte_order_mark_is_blanked_without_a_message() {
        let text = "\u{FEFF}connect A \u{FEFF}";
        let s = scan(text);
        assert_eq!(s.bom, Some(Span::new(0, 3)));
        assert_eq!(s.invalid.len(), 1, "only at the start");
        assert_eq!(s.sanitized(text), "   connect A    ");
    }

    #[test]
    fn records_unterminated_comments_and_depth() {
        assert_eq!(scan("a /* b").unterminated_comment, Some(Span::new(2, 4)));
        let deep = "(".repeat(MAX_NESTING + 1);
        assert_eq!(scan(&deep).too_deep, Some(Span::new(MAX_NESTING, MAX_NESTING + 1)));
        assert_eq!(scan(&"(".repeat(MAX_NESTING)).too_deep, None);
        let s = scan("a(b)c");
        assert_eq!(s.tokens.iter().map(|t| t.depth).collect::<Vec<_>>(), [0, 0, 1, 0, 0]);
    }

    #[test]
    fn describes_the_next_token() {
        assert_eq!(describe_at("a  in", 1), (Span::new(3, 5), "keyword 'in'".to_string()));
        assert_eq!(describe_at("x /* */ foo", 1).1, "identifier 'foo'");
        assert_eq!(describe_at("x 1ms", 1).1, "'1ms'");
        assert_eq!(describe_at("x  ", 1), (Span::new(3, 3), "end of file".to_string()));
    }
}
