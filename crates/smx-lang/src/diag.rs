//! Diagnostics: what went wrong, where, and how to show it to a person.
//!
//! Every stage of the front end reports problems as [`Diagnostic`] values instead of failing
//! on the first one, so a user sees all the problems of a file in one run. A diagnostic points
//! at a [`Span`] (byte offsets into the source); [`SourceFile`] turns spans into line and
//! column numbers and renders a diagnostic either in our format
//! (`FILE:LINE:COL: error: ...` followed by the line and a caret) or in the original compiler's
//! (`FILE: LINE: error: ...`), which the conformance suite compares against.

use std::fmt::Write as _;

/// A half-open byte range `start..end` into one source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One problem found in a source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// The message text, without the `error: ` prefix (`use of undeclared identifier 'A'`).
    pub message: String,
    /// Where the problem is. `None` for problems that belong to no place in the text (the
    /// original reports those, e.g. `single mode in routing node`, at line 0).
    pub span: Option<Span>,
    /// Further lines printed after the message (hints, the prototype dump of
    /// `conflicting types`), each without trailing newline.
    pub notes: Vec<String>,
    /// Other places that explain this one (the `(` a missing `)` should close), each shown
    /// after the message as `FILE:LINE:COL: note: TEXT` with its line and a caret. Only our
    /// format shows them: the original compiler's has no such lines.
    pub related: Vec<(Span, String)>,
    /// Errors that follow from this one and are left out of the list (a note says how many):
    /// a tally of a check's errors counts them too.
    pub follow_on_errors: usize,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>, span: Option<Span>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span,
            notes: Vec::new(),
            related: Vec::new(),
            follow_on_errors: 0,
        }
    }

    pub fn warning(message: impl Into<String>, span: Option<Span>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            message: message.into(),
            span,
            notes: Vec::new(),
            related: Vec::new(),
            follow_on_errors: 0,
        }
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn with_related(mut self, span: Span, text: impl Into<String>) -> Self {
        self.related.push((span, text.into()));
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// How many errors this one stands for: itself and those that follow from it.
    pub fn errors(&self) -> usize {
        if self.is_error() { 1 + self.follow_on_errors } else { 0 }
    }
}

/// True when any diagnostic in `diags` is an error (the net is then rejected).
pub fn has_errors(diags: &[Diagnostic]) -> bool {
    diags.iter().any(Diagnostic::is_error)
}

/// A source text with its name and an index of line starts, for turning byte offsets into
/// 1-based line and column numbers.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        SourceFile {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// Reads a file; bytes that are not UTF-8 are replaced (and then reported by the parser
    /// as invalid characters) instead of failing the whole read.
    pub fn read(path: &std::path::Path) -> std::io::Result<Self> {
        let bytes = std::fs::read(path)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Ok(SourceFile::new(path.display().to_string(), text))
    }

    /// 1-based line of a byte offset. Without its column: counting a column's characters
    /// costs the length of the line, which on a net written as one long line, asked for each
    /// of its boxes, would grow with the square of their number.
    pub fn line(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        self.line_starts.partition_point(|&s| s <= offset)
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line(offset);
        let start = self.line_starts[line - 1];
        let col = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count())
            + 1;
        (line, col)
    }

    /// The byte offset at which a 1-based line starts.
    pub fn line_start(&self, line: usize) -> Option<usize> {
        self.line_starts.get(line.wrapping_sub(1)).copied()
    }

    /// The text of a 1-based line, without its line end.
    pub fn line_text(&self, line: usize) -> &str {
        let Some(&start) = self.line_starts.get(line.wrapping_sub(1)) else {
            return "";
        };
        let end = self.line_starts.get(line).copied().unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    /// The 1-based line of a diagnostic, 0 when it has no place.
    pub fn line_of(&self, diag: &Diagnostic) -> usize {
        diag.span.map_or(0, |s| self.line(s.start))
    }

    /// Our format: `FILE:LINE:COL: error: MESSAGE`, the offending line and a caret under the
    /// span, then the notes.
    pub fn render(&self, diag: &Diagnostic) -> String {
        let mut out = String::new();
        match diag.span {
            Some(span) => self.render_place(&mut out, span, diag.severity.as_str(), &diag.message),
            None => {
                let _ = writeln!(out, "{}: {}: {}", self.name, diag.severity.as_str(), diag.message);
            }
        }
        for (span, text) in &diag.related {
            self.render_place(&mut out, *span, "note", text);
        }
        for note in &diag.notes {
            let _ = writeln!(out, "{note}");
        }
        out
    }

    /// `FILE:LINE:COL: KIND: TEXT`, the line and a caret under `span`.
    fn render_place(&self, out: &mut String, span: Span, kind: &str, text: &str) {
        let (line, col) = self.line_col(span.start);
        let _ = writeln!(out, "{}:{}:{}: {kind}: {text}", self.name, line, col);
        let (end_line, end_col) = self.line_col(span.end.max(span.start + 1) - 1);
        let width = if end_line == line {
            (end_col + 1).saturating_sub(col).max(1)
        } else {
            1
        };
        let (shown, caret_at, width) = snippet(self.line_text(line), col - 1, width);
        let _ = writeln!(out, "  {shown}");
        let _ = writeln!(out, "  {}{}", " ".repeat(caret_at), "^".repeat(width));
    }

    /// The original compiler's format: `FILE: LINE: error: MESSAGE` and the notes verbatim.
    pub fn render_smxc(&self, diag: &Diagnostic) -> String {
        let mut out = format!(
            "{}: {}: {}: {}\n",
            self.name,
            self.line_of(diag),
            diag.severity.as_str(),
            diag.message
        );
        for note in &diag.notes {
            out.push_str(note);
            out.push('\n');
        }
        out
    }
}

/// Characters of a line shown around the column (a caret line as long again at most).
pub const SNIPPET_CHARS: usize = 100;

/// The part of `line` shown under a diagnostic at character `col` (0-based) with a caret
/// `width` wide: the whole line when it is short, else [`SNIPPET_CHARS`] around the column with
/// `...` where it was cut, so a long line does not repeat itself in every diagnostic. Returns
/// the text, where the caret starts in it, and its width.
fn snippet(line: &str, col: usize, width: usize) -> (String, usize, usize) {
    let plain = |c: char| if c == '\t' { ' ' } else { c };
    let count = line.chars().count();
    if count <= SNIPPET_CHARS {
        return (line.chars().map(plain).collect(), col, width);
    }
    let from = col.saturating_sub(SNIPPET_CHARS / 2).min(count - SNIPPET_CHARS);
    let to = from + SNIPPET_CHARS;
    let mut shown = String::new();
    if from > 0 {
        shown.push_str("...");
    }
    shown.extend(line.chars().skip(from).take(SNIPPET_CHARS).map(plain));
    if to < count {
        shown.push_str("...");
    }
    let caret_at = col - from + if from > 0 { 3 } else { 0 };
    (shown, caret_at, width.min(to.saturating_sub(col)).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_of_offsets() {
        let f = SourceFile::new("t.smx", "ab\ncd\n\nxyz");
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(1), (1, 2));
        assert_eq!(f.line_col(3), (2, 1));
        assert_eq!(f.line_col(6), (3, 1));
        assert_eq!(f.line_col(9), (4, 3));
        for offset in 0..=f.text.len() + 2 {
            assert_eq!(f.line(offset), f.line_col(offset).0, "{offset}");
        }
        assert_eq!(f.line_text(2), "cd");
        assert_eq!(f.line_text(4), "xyz");
        assert_eq!(f.line_text(9), "");
    }

    #[test]
    fn a_long_line_is_cut_around_the_column() {
        let line = format!("{}B{}", "a".repeat(5_000), "c".repeat(5_000));
        let f = SourceFile::new("t.smx", line);
        let d = Diagnostic::error("use of undeclared identifier 'B'", Some(Span::new(5_000, 5_001)));
        let text = f.render(&d);
        assert!(text.starts_with("t.smx:1:5001: error:"), "{text}");
        assert!(text.len() < 400, "{} bytes", text.len());
        let lines: Vec<&str> = text.lines().collect();
        let caret = lines[2].find('^').unwrap();
        assert_eq!(lines[1].as_bytes()[caret], b'B', "{text}");
        assert!(lines[1].starts_with("  ...") && lines[1].ends_with("..."), "{text}");
        // A short line stays whole.
        let f = SourceFile::new("t.smx", "connect A.B\n");
        let d = Diagnostic::error("x", Some(Span::new(10, 11)));
        assert_eq!(f.render(&d).lines().nth(1), Some("  connect A.B"));
    }

    #[test]
    fn render_points_a_caret_at_the_span() {
        let f = SourceFile::new("t.smx", "A = box a(out x)\nconnect A.B\n");
        let d = Diagnostic::error("use of undeclared identifier 'B'", Some(Span::new(27, 28)));
        assert_eq!(
            f.render(&d),
            "t.smx:2:11: error: use of undeclared identifier 'B'\n  connect A.B\n            ^\n"
        );
        assert_eq!(f.render_smxc(&d), "t.smx: 2: error: use of undeclared identifier 'B'\n");
    }

    #[test]
    fn crlf_lines_are_shown_without_the_carriage_return() {
        let f = SourceFile::new("t.smx", "a\r\nb\r\n");
        assert_eq!(f.line_text(1), "a");
        assert_eq!(f.line_col(3), (2, 1));
    }
}
