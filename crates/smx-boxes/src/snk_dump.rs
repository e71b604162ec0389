//! `smx_snk_dump(in data, in topic open)`: prints every message, one per line, as text or
//! hex, to stdout or to the file `path`.
//!
//! When `topic` is connected each line is `<topic>: <data>`. Text mode writes printable ASCII
//! as is and every other byte as `\xNN`, so a line is always one line.
//!
//! Lines are rendered byte by byte with a hex digit table straight into one reused output
//! buffer, which is handed to the file or stdout in large writes: no allocation and no
//! `core::fmt` per message, because this box is the last hop of the report's ZeroMQ net and
//! its per-byte formatting showed up in that net's profile.

use std::fs::File;
use std::io::Write;

use smx_box::prelude::*;

pub const SPEC: BoxSpec = BoxSpec::named("smx_snk_dump")
    .summary("prints each message (text or hex) to stdout or a file")
    .inputs(&[
        PortSpec::new("data").help("the messages to print"),
        PortSpec::new("topic")
            .optional()
            .help("a topic printed before each message"),
    ])
    .config(&[
        ConfigKey::choice("format", &["text", "hex"])
            .default_value("text")
            .help("how payload bytes are printed"),
        ConfigKey::str("path")
            .help("file to write to (created or truncated); stdout when unset")
            .file_written(),
    ])
    .chainable()
    .create(create);

const DATA: InPort = InPort(0);
const TOPIC: InPort = InPort(1);

fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(SnkDump {
        topic: None,
        hex: config.str("format")? == "hex",
        path: config.opt_str("path").map(str::to_string),
        out: None,
        printed: 0,
        pending: 0,
        unwritten: 0,
        buf: Vec::with_capacity(FLUSH_AT + 1024),
    }))
}

/// The output buffer is written out once it holds this many bytes.
const FLUSH_AT: usize = 64 * 1024;

struct SnkDump {
    topic: Option<InPort>,
    hex: bool,
    path: Option<String>,
    out: Option<Box<dyn Write + Send>>,
    /// Lines written out.
    printed: u64,
    /// Lines in `buf`, rendered and not written out yet.
    pending: u64,
    /// Lines a failed write did not write out (some of them may have been, in part).
    unwritten: u64,
    /// Rendered lines not yet written out.
    buf: Vec<u8>,
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends `bytes` as two lowercase hex digits each.
fn render_hex(bytes: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + 2 * bytes.len(), 0);
    for (pair, &b) in out[start..].chunks_exact_mut(2).zip(bytes) {
        pair[0] = HEX_DIGITS[usize::from(b >> 4)];
        pair[1] = HEX_DIGITS[usize::from(b & 0xf)];
    }
}

/// Appends `bytes` as text: printable ASCII but the backslash as is, any other byte as `\xNN`.
fn render_text(bytes: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    // Room for the worst case (every byte escaped), trimmed afterwards: no check per byte. Each
    // byte copies its four-byte entry and advances by the entry's length, so random payloads
    // (printable or not at random) cost no mispredicted branch per byte.
    out.resize(start + 4 * bytes.len(), 0);
    let dst = &mut out[start..];
    let mut at = 0;
    for &b in bytes {
        let (text, len) = &TEXT[usize::from(b)];
        dst[at..at + 4].copy_from_slice(text);
        at += usize::from(*len);
    }
    out.truncate(start + at);
}

/// Each byte's text for [`render_text`] (padded to four bytes) and its length.
static TEXT: [([u8; 4], u8); 256] = text_table();

const fn text_table() -> [([u8; 4], u8); 256] {
    let mut table = [([0u8; 4], 0u8); 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        table[b] = if byte >= 0x20 && byte < 0x7f && byte != b'\\' {
            ([byte, 0, 0, 0], 1)
        } else {
            ([b'\\', b'x', HEX_DIGITS[b >> 4], HEX_DIGITS[b & 0xf]], 4)
        };
        b += 1;
    }
    table
}

/// Appends one output line: `<topic>: ` when there is a topic, the data, a newline.
fn render_line(topic: Option<&[u8]>, data: &[u8], hex: bool, out: &mut Vec<u8>) {
    if let Some(topic) = topic {
        render_text(topic, out);
        out.extend_from_slice(b": ");
    }
    if hex {
        render_hex(data, out);
    } else {
        render_text(data, out);
    }
    out.push(b'\n');
}

impl SnkDump {
    fn write_out(&mut self) -> Result<(), BoxError> {
        let lines = std::mem::take(&mut self.pending);
        if let Some(out) = &mut self.out
            && !self.buf.is_empty()
            && let Err(e) = out.write_all(&self.buf)
        {
            self.unwritten += lines;
            self.buf.clear();
            return Err(BoxError(format!("cannot write: {e}")));
        }
        self.printed += lines;
        self.buf.clear();
        if self.buf.capacity() > 4 * FLUSH_AT {
            // One huge message must not pin its buffer for the rest of the run.
            self.buf.shrink_to(FLUSH_AT + 1024);
        }
        Ok(())
    }
}

impl BoxImpl for SnkDump {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.topic = ctx.input_connected(TOPIC).then_some(TOPIC);
        let sink: Box<dyn Write + Send> = match &self.path {
            Some(path) => Box::new(
                File::create(path)
                    .map_err(|e| BoxError(format!("{}: cannot open '{path}' for writing: {e}", ctx.instance())))?,
            ),
            None => Box::new(std::io::stdout()),
        };
        self.out = Some(sink);
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let Some(msg) = io.read(DATA) else {
            return Ok(Flow::Return);
        };
        let topic = self.topic.and_then(|t| io.read(t));
        render_line(
            topic.as_ref().map(|t| t.payload()),
            msg.payload(),
            self.hex,
            &mut self.buf,
        );
        self.pending += 1;
        if self.buf.len() >= FLUSH_AT {
            self.write_out()?;
        }
        Ok(Flow::Return)
    }

    /// A line that cannot be written out fails the box: a full disk must not end `ok` with
    /// the lines lost.
    fn cleanup(&mut self) -> Result<(), BoxError> {
        self.write_out()?;
        match &mut self.out {
            Some(out) => out.flush().map_err(|e| BoxError(format!("cannot write: {e}"))),
            None => Ok(()),
        }
    }

    /// `printed` counts the lines written out; a write that failed leaves its lines in
    /// `unwritten`, not among them.
    fn stats(&self) -> Stats {
        let stats = Stats::new().with("printed", self.printed);
        if self.unwritten > 0 {
            stats.with("unwritten", self.unwritten)
        } else {
            stats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(topic: Option<&[u8]>, data: &[u8], hex: bool) -> String {
        let mut out = b"kept|".to_vec();
        render_line(topic, data, hex, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_lines_escape_everything_but_printable_ascii() {
        assert_eq!(
            line(Some(b"t/1"), b"Hi \\ there~\n\x00\x1f\x7f\xff", false),
            "kept|t/1: Hi \\x5c there~\\x0a\\x00\\x1f\\x7f\\xff\n"
        );
        assert_eq!(line(None, b"", false), "kept|\n");
        assert_eq!(line(Some(b"a\tb"), b"x", false), "kept|a\\x09b: x\n");
    }

    #[test]
    fn hex_lines_are_two_lowercase_digits_per_byte() {
        assert_eq!(
            line(Some(b"t"), &[0x00, 0x0f, 0x10, 0xab, 0xff], true),
            "kept|t: 000f10abff\n"
        );
        assert_eq!(line(None, b"", true), "kept|\n");
    }

    /// The format of the `core::fmt` renderer this replaced, kept as the reference.
    fn reference(topic: Option<&[u8]>, data: &[u8], hex: bool) -> String {
        fn render(bytes: &[u8], hex: bool, line: &mut String) {
            use std::fmt::Write as _;
            for &b in bytes {
                let _ = if hex {
                    write!(line, "{b:02x}")
                } else if (0x20..0x7f).contains(&b) && b != b'\\' {
                    write!(line, "{}", b as char)
                } else {
                    write!(line, "\\x{b:02x}")
                };
            }
        }
        let mut line = "kept|".to_string();
        if let Some(t) = topic {
            render(t, false, &mut line);
            line.push_str(": ");
        }
        render(data, hex, &mut line);
        line.push('\n');
        line
    }

    proptest::proptest! {
        #[test]
        fn output_is_byte_for_byte_the_formatted_one(
            topic in proptest::option::of(proptest::collection::vec(proptest::num::u8::ANY, 0..16)),
            data in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
            hex in proptest::bool::ANY,
        ) {
            proptest::prop_assert_eq!(
                line(topic.as_deref(), &data, hex),
                reference(topic.as_deref(), &data, hex)
            );
        }
    }
}
