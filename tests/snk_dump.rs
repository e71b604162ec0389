//! `smx_snk_dump` inside a running net: the exact bytes of its output file in text and hex, with
//! and without topics, over more lines than one buffer holds. Behaviour only, no timing.

use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, Flow, OutPort, PortSpec};
use smx_box::{InitCtx, Io};
use smx_runtime::config::ConfigLayers;

use smx_box::Message;
use smx_runtime::NetBuilder;
use smx_runtime::report::Status;
use smx_runtime::{RunOptions, run};

/// Enough lines (about 40 bytes each in text) to pass the dump's 64 KiB output buffer.
const N: u64 = 5000;

/// Payload of message `i`: printable bytes, a backslash, control and high bytes.
fn payload(i: u64) -> Vec<u8> {
    vec![
        b'A' + (i % 26) as u8,
        b' ',
        b'\\',
        b'\n',
        0,
        0x7f,
        0x80,
        (i % 256) as u8,
        b'~',
    ]
}

fn topic(i: u64) -> Vec<u8> {
    format!("t/{}\t", i % 3).into_bytes()
}

/// `test_lines(out data, out topic)`: message `i` is [`payload`] on `data`, [`topic`] on `topic`.
struct Lines {
    ports: (OutPort, OutPort),
    sent: u64,
}

impl BoxImpl for Lines {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.ports = (ctx.output("data")?, ctx.output("topic")?);
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let i = self.sent;
        let _ = io.write(self.ports.0, Message::now(i, &payload(i)));
        let _ = io.write(self.ports.1, Message::now(i, &topic(i)));
        self.sent += 1;
        Ok(if self.sent >= N { Flow::End } else { Flow::Return })
    }
}

fn lines_spec() -> BoxSpec {
    fn create(_: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(Lines {
            ports: (OutPort(0), OutPort(1)),
            sent: 0,
        }))
    }
    const SPEC: BoxSpec = BoxSpec::named("test_lines")
        .summary("known payloads and topics")
        .outputs(&[PortSpec::new("data"), PortSpec::new("topic").optional()])
        .create(create);
    SPEC
}

/// Runs `test_lines -> smx_snk_dump` (topic connected or not) with the `--set`s `sets`.
fn run_dump(sets: &[String], with_topic: bool) -> smx_runtime::report::Report {
    let mut registry = smxrun::builtin_registry();
    registry.register(lines_spec());
    let mut net = NetBuilder::new();
    let src = net.add_box("Src", "test_lines", &[("data", false), ("topic", false)]);
    let snk = net.add_box("Dump", "smx_snk_dump", &[("data", true), ("topic", true)]);
    net.connect(src, "data", snk, "data");
    if with_topic {
        net.connect(src, "topic", snk, "topic");
    }
    let graph = net.build();
    let mut layers = ConfigLayers::new();
    for set in sets {
        layers.add_set(set).unwrap();
    }
    let settings = layers.resolve(&graph, &registry).unwrap();
    let opts = RunOptions {
        settings,
        ..RunOptions::default()
    };
    run(&graph, &registry, &opts).expect("net runs")
}

/// Runs `test_lines -> smx_snk_dump` (topic connected or not) and returns the dump file.
fn dump(format: &str, with_topic: bool) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.txt");
    let sets = [format!("Dump.format={format}"), format!("Dump.path={}", path.display())];
    let report = run_dump(&sets, with_topic);
    assert_eq!(report.status, Status::Ok, "{report:?}");
    std::fs::read_to_string(&path).unwrap()
}

/// The documented format, written out independently of the box.
fn expected(hex: bool, with_topic: bool) -> String {
    let text = |bytes: &[u8]| -> String {
        bytes
            .iter()
            .map(|&b| match b {
                b'\\' => "\\x5c".to_string(),
                0x20..0x7f => (b as char).to_string(),
                _ => format!("\\x{b:02x}"),
            })
            .collect()
    };
    (0..N)
        .map(|i| {
            let data = if hex {
                payload(i).iter().map(|b| format!("{b:02x}")).collect()
            } else {
                text(&payload(i))
            };
            if with_topic {
                format!("{}: {data}\n", text(&topic(i)))
            } else {
                format!("{data}\n")
            }
        })
        .collect()
}

#[test]
fn text_lines_are_exact() {
    let out = dump("text", true);
    assert!(
        out.starts_with("t/0\\x09: A \\x5c\\x0a\\x00\\x7f\\x80\\x00~\n"),
        "{}",
        &out[..80]
    );
    assert_eq!(out, expected(false, true));
}

#[test]
fn hex_lines_are_exact() {
    let out = dump("hex", false);
    assert!(out.starts_with("41205c0a007f80007e\n"), "{}", &out[..40]);
    assert_eq!(out, expected(true, false));
}

/// Lines a failed write did not write out are not counted as printed: on a full device the
/// box fails, `printed` holds what went out before (nothing here) and `unwritten` the rest.
#[test]
fn lines_a_full_device_refused_are_not_counted_as_printed() {
    let report = run_dump(&["Dump.path=/dev/full".to_string()], false);
    let dump = report.nets.iter().find(|n| n.name == "Dump").unwrap();
    assert_eq!(dump.status, Status::Failed, "{report:?}");
    let stat = |key: &str| match dump.stats.get(key) {
        Some(smx_box::StatValue::U64(v)) => *v,
        other => panic!("{key}: {other:?}"),
    };
    assert_eq!(stat("printed"), 0, "{:?}", dump.stats);
    assert!(stat("unwritten") > 0, "{:?}", dump.stats);
}
