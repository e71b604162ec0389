//! Random valid nets, written as `.smx` text, compiled and run with small counts.
//!
//! The generator builds nets from three kinds of pieces that expose only the port `data`:
//! producers (an open `out data`), stages (`in data`, `out data`) and consumers (an open
//! `in data`), combined by chains (`P.S`, `S.C`), fan-in (`(P!P)`), fan-out (`(C|C)`),
//! time-triggered frames with generous periods (`tt[2ms](...)`), decoupled ports, declared
//! channel lengths and a side input read decoupled (`smx_snk_dump`'s `topic`). Closed nets are
//! put side by side with `|`.
//!
//! Every generated net must be accepted by the front end, run to its end within a liveness
//! bound, and keep the books: for every channel `written = read + overwritten + dropped +
//! left`, nothing left in a channel whose consumer side is triggering, every source sends its
//! `count`, every forwarder and routing node passes on what it took. 32 nets per run by
//! default; `PROPTEST_CASES` changes it.

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use smx_box::Message;
use smx_box::{BoxConfig, BoxError, BoxImpl, BoxSpec, ConfigKey, Flow, OutPort, PortSpec};
use smx_box::{InitCtx, Io};
use smx_lang::compose::{CompileOptions, compile};
use smx_lang::diag::SourceFile;
use smx_runtime::FirewallOptions;
use smx_runtime::config::ConfigLayers;
use smx_runtime::report::{Report, Status};
use smx_runtime::{PinMode, Registry, RunOptions, run};

/// A run that is not over after this long is a hang (a liveness bound, not a timing figure:
/// the nets here finish in well under a second).
const LIVENESS: Duration = Duration::from_secs(60);

/// The declarations every generated net may use.
const DECLS: &str = "\
Src = box smx_src_rand(out data)
SrcD = box smx_src_rand(decoupled out data)
SrcL = box smx_src_rand(out data[4])
Fwd = box smx_fwd(up in data, down out data)
FwdD = box smx_fwd(up in data, decoupled down out data)
FwdL = box smx_fwd(up in data[2], down out data[3])
Snk = box smx_snk_null(in data)
SnkL = box smx_snk_null(in data[5])
Topic = box robust_topic(out topic)
Dump = box smx_snk_dump(in data, decoupled in topic)
DumpAlone = box smx_snk_dump(in data, in topic open)
";

/// Dumps go nowhere (an `[impl]` table applies only where the implementation is used).
const SETTINGS: &str = "[impl.smx_snk_dump]\npath = \"/dev/null\"\n";

/// `robust_topic(out topic)`: sends `count` numbered messages on a port named `topic`, so that
/// `smx_snk_dump`'s optional side input can be fed (the runtime matches ports by name).
struct TopicSrc {
    out: OutPort,
    count: u64,
    sent: u64,
}

impl BoxImpl for TopicSrc {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.out = ctx.output("topic")?;
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let _ = io.write(self.out, Message::now(self.sent, b"topic"));
        self.sent += 1;
        Ok(if self.sent >= self.count {
            Flow::End
        } else {
            Flow::Return
        })
    }
}

fn topic_spec() -> BoxSpec {
    fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
        Ok(Box::new(TopicSrc {
            out: OutPort(0),
            count: config.int("count")?.max(1),
            sent: 0,
        }))
    }
    const SPEC: BoxSpec = BoxSpec::named("robust_topic")
        .summary("numbered messages on a port named topic")
        .outputs(&[PortSpec::new("topic")])
        .config(&[ConfigKey::int("count").default_value("10")])
        .create(create);
    SPEC
}

fn registry() -> Registry {
    let mut registry = smxrun::builtin_registry();
    registry.register(topic_spec());
    registry
}

fn tt(inner: String, ms: u8) -> String {
    format!("tt[{ms}ms]({inner})")
}

fn period() -> impl Strategy<Value = u8> {
    prop_oneof![Just(2u8), Just(3), Just(5)]
}

/// `in data` → `out data`.
fn stage() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("Fwd".to_string()),
        Just("FwdD".to_string()),
        Just("FwdL".to_string())
    ];
    leaf.prop_recursive(3, 6, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}.{b}")),
            (inner, period()).prop_map(|(a, ms)| tt(a, ms)),
        ]
    })
}

/// An open `out data`.
fn producer() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("Src".to_string()),
        Just("SrcD".to_string()),
        Just("SrcL".to_string())
    ];
    leaf.prop_recursive(3, 8, 2, |inner| {
        prop_oneof![
            (inner.clone(), stage()).prop_map(|(p, s)| format!("{p}.{s}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}!{b})")),
            (inner, period()).prop_map(|(p, ms)| tt(p, ms)),
        ]
    })
}

/// An open `in data`.
fn consumer() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![Just("Snk".to_string()), Just("SnkL".to_string())];
    leaf.prop_recursive(3, 8, 2, |inner| {
        prop_oneof![
            (stage(), inner.clone()).prop_map(|(s, c)| format!("{s}.{c}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}|{b})")),
            (inner, period()).prop_map(|(c, ms)| tt(c, ms)),
        ]
    })
}

/// A closed net: nothing left open except `open` ports.
fn closed() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (producer(), consumer()).prop_map(|(p, c)| format!("{p}.{c}")),
        1 => producer().prop_map(|p| format!("({p}|Topic).Dump")),
        1 => producer().prop_map(|p| format!("{p}.DumpAlone")),
    ]
}

/// A whole program and how to run it.
#[derive(Debug, Clone)]
struct Case {
    text: String,
    count: u64,
    pin: PinMode,
}

fn case() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec(closed(), 1..=3),
        1u64..40,
        prop_oneof![Just(PinMode::Auto), Just(PinMode::Off)],
    )
        .prop_map(|(parts, count, pin)| Case {
            text: format!("{DECLS}connect {}\n", parts.join(" | ")),
            count,
            pin,
        })
}

/// Firewalls without real-time priority, memory locking or spinning: the test shares the
/// machine with others and checks behaviour only.
fn quiet_firewalls() -> FirewallOptions {
    FirewallOptions {
        shards: Some(1),
        ..FirewallOptions::best_effort()
    }
}

/// Compiles and runs `case` in its own thread; `Err` names what went wrong.
fn compile_and_run(case: &Case) -> Result<Report, String> {
    let file = SourceFile::new("random.smx", case.text.as_str());
    let compiled = compile(&file, &CompileOptions::default());
    if !compiled.accepted() {
        let diags: Vec<String> = compiled.diagnostics.iter().map(|d| file.render(d)).collect();
        return Err(format!("rejected:\n{}", diags.concat()));
    }
    // No SCHED_FIFO for `tt` boxes: the test shares the machine with others (a spinning
    // real-time thread elsewhere can starve a pinned one here) and checks behaviour only.
    let mut graph = compiled.graph;
    for node in &mut graph.nodes {
        node.priority = 0;
    }
    let registry = registry();
    let mut layers =
        ConfigLayers::from_toml(std::path::Path::new("random.toml"), SETTINGS).map_err(|e| e.to_string())?;
    layers.set_iterations(case.count);
    let settings = layers
        .resolve(&graph, &registry)
        .map_err(|e| format!("settings: {e}"))?;
    let opts = RunOptions {
        pin: case.pin.clone(),
        settings,
        firewall: quiet_firewalls(),
        ..RunOptions::default()
    };
    run(&graph, &registry, &opts).map_err(|e| format!("run refused: {e}"))
}

/// Runs `case` with the liveness bound.
fn run_bounded(case: &Case) -> Result<Report, TestCaseError> {
    let (tx, rx) = mpsc::channel();
    let mine = case.clone();
    std::thread::Builder::new()
        .name("random-net".into())
        .spawn(move || {
            let _ = tx.send(compile_and_run(&mine));
        })
        .map_err(|e| TestCaseError::fail(format!("cannot start the run thread: {e}")))?;
    match rx.recv_timeout(LIVENESS) {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(e)) => Err(TestCaseError::fail(format!("{e}\nnet:\n{}", case.text))),
        Err(_) => Err(TestCaseError::fail(format!(
            "the net did not end within {LIVENESS:?}:\n{}",
            case.text
        ))),
    }
}

/// The books of a finished run.
fn check_books(case: &Case, report: &Report) -> Result<(), TestCaseError> {
    let net = &case.text;
    prop_assert_eq!(report.status, Status::Ok, "{}\n{:?}", net, report.nets);
    for c in &report.channels {
        prop_assert_eq!(
            c.written,
            c.read + c.overwritten + c.dropped + c.left,
            "channel {} {}->{} does not balance: {:?}\n{}",
            c.id,
            c.from,
            c.to,
            c,
            net
        );
        if matches!(c.kind, "coupled" | "decoupled_producer") {
            prop_assert_eq!(c.left, 0, "left in a triggering channel: {:?}\n{}", c, net);
        }
    }
    // Flow conservation per net, on channels that do not cross a firewall (a firewall's row
    // shows its own output, not the producer's channel).
    let mut ins: HashMap<usize, Vec<&smx_runtime::report::ChannelReport>> = HashMap::new();
    let mut outs: HashMap<usize, Vec<&smx_runtime::report::ChannelReport>> = HashMap::new();
    for c in &report.channels {
        ins.entry(c.to_id).or_default().push(c);
        outs.entry(c.from_id).or_default().push(c);
    }
    for n in &report.nets {
        let inputs = ins.get(&n.id).map(Vec::as_slice).unwrap_or(&[]);
        let outputs = outs.get(&n.id).map(Vec::as_slice).unwrap_or(&[]);
        let plain = inputs.iter().chain(outputs).all(|c| c.timing == "none");
        let read: u64 = inputs.iter().map(|c| c.read).sum();
        match n.implementation.as_str() {
            // The topic source may be cut short: its consumer ends with the data input.
            "robust_topic" => prop_assert!(n.loop_count <= case.count.max(1), "{}\n{}", n.name, net),
            "smx_src_rand" => {
                prop_assert_eq!(
                    n.loop_count,
                    case.count.max(1),
                    "{} sent {}\n{}",
                    n.name,
                    n.loop_count,
                    net
                );
                if plain {
                    for c in outputs {
                        prop_assert_eq!(c.written, case.count, "{:?}\n{}", c, net);
                    }
                }
            }
            "smx_fwd" if plain => {
                let written: u64 = outputs.iter().map(|c| c.written).sum();
                prop_assert_eq!(read, written, "{} read {} wrote {}\n{}", n.name, read, written, net);
                prop_assert_eq!(n.loop_count, read, "{}\n{}", n.name, net);
            }
            "smx_rn" if plain => {
                prop_assert_eq!(
                    read,
                    n.loop_count,
                    "rn {} took {} forwarded {}\n{}",
                    n.id,
                    read,
                    n.loop_count,
                    net
                );
                for c in outputs {
                    prop_assert_eq!(c.written, n.loop_count, "rn {} output {:?}\n{}", n.id, c, net);
                }
            }
            "smx_snk_null" => {
                prop_assert_eq!(n.stats.u64("received"), Some(read), "{}\n{}", n.name, net);
                prop_assert_eq!(n.loop_count, read, "{}\n{}", n.name, net);
            }
            _ => {}
        }
    }
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(32),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_nets_are_accepted_terminate_and_keep_the_books(case in case()) {
        let report = run_bounded(&case)?;
        check_books(&case, &report)?;
    }
}

/// The pieces the generator draws from, each alone, so a generator that stops producing one
/// of them cannot hide a front-end or runtime problem with it.
#[test]
fn every_construct_alone() {
    for connect in [
        "Src.Snk",
        "SrcD.Snk",
        "SrcL.SnkL",
        "Src.Fwd.FwdD.FwdL.Snk",
        "(Src!SrcD).Snk",
        "Src.(Snk|SnkL)",
        "(Src!Src).Fwd.(Snk|Snk)",
        "tt[2ms](Src).Snk",
        "Src.tt[2ms](Snk)",
        "tt[2ms](Src.Fwd).tt[3ms](Snk)",
        "tt[2ms]((Src!Src)).Snk",
        "(Src|Topic).Dump",
        "Src.DumpAlone",
        "SrcD.tt[2ms](FwdD).Snk",
    ] {
        let case = Case {
            text: format!("{DECLS}connect {connect}\n"),
            count: 7,
            pin: PinMode::Auto,
        };
        let report = run_bounded(&case).unwrap_or_else(|e| panic!("{connect}: {e}"));
        check_books(&case, &report).unwrap_or_else(|e| panic!("{connect}: {e}"));
    }
}
