//! `smx_snk_dump(in data, in topic open)`: prints every message, one per line, as text or
//! hex, to stdout or to the file `path`.
//!
//! When `topic` is connected each line is `<topic>: <data>`. Text mode writes printable ASCII
//! as is and every other byte as `\xNN`, so a line is always one line.

use std::fs::File;
use std::io::{BufWriter, Write};

use crate::boxes::api::{
    BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, Direction, Flow, InPort, InitCtx, Io, PortSpec, ValueKind,
};

pub const SPEC: BoxSpec = BoxSpec {
    name: "smx_snk_dump",
    summary: "prints each message (text or hex) to stdout or a file",
    ports: &[
        PortSpec {
            name: "data",
            direction: Direction::In,
            optional: false,
            help: "the messages to print",
        },
        PortSpec {
            name: "topic",
            direction: Direction::In,
            optional: true,
            help: "a topic printed before each message",
        },
    ],
    config: &[
        ConfigKey {
            name: "format",
            kind: ValueKind::Choice,
            default: Some("text"),
            choices: &["text", "hex"],
            help: "how payload bytes are printed",
        },
        ConfigKey {
            name: "path",
            kind: ValueKind::Str,
            default: None,
            choices: &[],
            help: "file to write to (created or truncated); stdout when unset",
        },
    ],
    create,
};

fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(SnkDump {
        data: InPort(0),
        topic: None,
        hex: config.str("format")? == "hex",
        path: config.opt_str("path").map(str::to_string),
        out: None,
        printed: 0,
        line: String::new(),
    }))
}

struct SnkDump {
    data: InPort,
    topic: Option<InPort>,
    hex: bool,
    path: Option<String>,
    out: Option<BufWriter<Box<dyn Write + Send>>>,
    printed: u64,
    line: String,
}

/// Appends `bytes` to `line` as hex or escaped text.
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

impl BoxImpl for SnkDump {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.data = ctx.input("data")?;
        let topic = ctx.input("topic")?;
        self.topic = ctx.input_connected(topic).then_some(topic);
        let sink: Box<dyn Write + Send> = match &self.path {
            Some(path) => Box::new(
                File::create(path)
                    .map_err(|e| BoxError(format!("{}: cannot open '{path}' for writing: {e}", ctx.instance())))?,
            ),
            None => Box::new(std::io::stdout()),
        };
        self.out = Some(BufWriter::new(sink));
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let Some(msg) = io.read(self.data) else {
            return Ok(Flow::Return);
        };
        self.line.clear();
        if let Some(topic) = self.topic
            && let Some(t) = io.read(topic)
        {
            render(t.payload(), false, &mut self.line);
            self.line.push_str(": ");
        }
        render(msg.payload(), self.hex, &mut self.line);
        self.line.push('\n');
        if let Some(out) = &mut self.out {
            out.write_all(self.line.as_bytes())
                .map_err(|e| BoxError(format!("cannot write: {e}")))?;
        }
        self.printed += 1;
        Ok(Flow::Return)
    }

    fn cleanup(&mut self) {
        if let Some(out) = &mut self.out {
            let _ = out.flush();
        }
    }

    fn stats(&self) -> Vec<(String, serde_json::Value)> {
        vec![("printed".into(), self.printed.into())]
    }
}
