//! Experiment 3, the report's ZeroMQ runs: rate and loss per pattern and transport.
//!
//! The report's net (`Src1.Snk1 | Src2.Snk2`: random data into a ZMQ sink, read back by a ZMQ
//! source into a dump sink writing to /dev/null) is run for each pattern (`pubsub`, `pipeline`)
//! and transport (`tcp` on loopback, `ipc` in a private directory), beside a raw zmq-crate
//! PUSH/PULL program on the same transport in the same loop, and a raw program of the net's own
//! shape at each channel length (producer thread -> queue -> PUSH ... PULL -> queue -> consumer
//! thread, [`super::baseline::zmq_shaped`]). Loss comes from the ZMQ boxes' exact accounting in
//! the report (sent by the sender, received and lost at the receiver). CPU seconds per million
//! messages are the process's over each run.
//!
//! Loss is measured end to end from the runtime's channel counts (messages the ZMQ sink read minus
//! messages reaching the consumer behind the ZMQ source); the boxes' own books (sent, dropped
//! at the sender, lost at the receiver) are recorded beside it. Validity: every net ended
//! normally, the ZMQ sink was given all `count` messages, and the ZMQ source's count agrees
//! with its consumer's. Loss itself is a result, not an invalid run, for PUB/SUB, where
//! dropping is the pattern's documented behaviour, unless nothing at all arrived (no
//! measurement); for PIPELINE, which must not lose anything, a loss marks the run invalid.

use std::time::Duration;

use smx_box::{StatValue, Stats};

use smx_graph::NetGraph;
use smx_runtime::Registry;
use smx_runtime::report::Report;

use super::Session;
use super::args::{ZmqArgs, or_default, pick};
use super::baseline::zmq_raw::{self, Transport};
use super::cpu;
use super::net::{self, Override};
use super::result::{BenchResult, Case, Run, Table};

/// The report's net; with `null_consumer` the dump sink is replaced by `smx_snk_null` and the
/// ZMQ source's topic port is left open, so only the ZMQ path is measured.
pub fn net_text(null_consumer: bool) -> String {
    let (src2, snk2) = if null_consumer {
        ("smx_src_zmq( out data, out topic open )", "smx_snk_null( in data )")
    } else {
        (
            "smx_src_zmq( out data, out topic )",
            "smx_snk_dump( in data, in topic )",
        )
    };
    format!(
        "Src1 = extern box smx_src_rand( out data )\nSnk1 = extern box smx_snk_zmq( in data, in topic open )\n\
         Src2 = extern box {src2}\nSnk2 = box {snk2}\nconnect Src1.Snk1|Src2.Snk2\n"
    )
}

pub fn transport(name: &str) -> Transport {
    if name == "ipc" { Transport::Ipc } else { Transport::Tcp }
}

/// A fresh endpoint: a free loopback port, or an ipc name in the ZMQ boxes' private directory.
fn endpoint(t: Transport) -> Result<String, String> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    match t {
        Transport::Tcp => smx_zmq::loopback::free_loopback_endpoint(),
        Transport::Ipc => Ok(format!(
            "ipc://smx-bench-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        )),
    }
}

/// What one `bench zmq` measures, resolved from the command line and `--quick`.
struct Plan {
    patterns: Vec<String>,
    transports: Vec<String>,
    count: u64,
    size: usize,
    runs: usize,
    consumer: String,
    lens: Vec<u32>,
    placements: Vec<String>,
}

pub fn run(args: &ZmqArgs, session: &mut Session) -> BenchResult {
    let plan = plan(args, session);
    let mut result = session.start("zmq");
    record_settings(&mut result, &plan);
    let registry = crate::builtin_registry();
    let graph = net::compile_net("zmq.smx", &net_text(plan.consumer == "null"));
    for t in &plan.transports {
        measure_transport(&mut result, &plan, t, &graph, &registry, session);
    }
    result.tables.push(table(
        &result,
        &plan.patterns,
        &plan.transports,
        &plan.lens,
        &plan.placements,
    ));
    result.notes.push(net_shape_note(result.machine.cores_allowed));
    result
}

/// What the "raw net shape" peer is, and why it may be far slower than raw PUSH/PULL: it is the
/// peer to read smx against, and its gap to plain PUSH/PULL is the net's shape, not smx.
pub fn net_shape_note(cores: usize) -> String {
    let mut note = "raw net shape: raw ZeroMQ with the net's four threads (producer, PUSH, PULL, consumer) \
                    joined by blocking in-process queues of the net's length, the peer smx/net shape compares \
                    like with like; raw PUSH/PULL has two threads and no queue"
        .to_string();
    if cores < 4 {
        note.push_str(&format!(
            ", so with {cores} cores here the net shape's four threads take turns on them and it runs far slower \
             than raw PUSH/PULL, as the smx net does"
        ));
    }
    note
}

fn plan(args: &ZmqArgs, session: &Session) -> Plan {
    let quick = session.quick;
    Plan {
        patterns: or_default(
            &args.patterns,
            quick,
            &["pubsub".into(), "pipeline".into()],
            &["pubsub".into(), "pipeline".into()],
        ),
        transports: or_default(
            &args.transports,
            quick,
            &["tcp".into(), "ipc".into()],
            &["tcp".into(), "ipc".into()],
        ),
        count: pick(args.count, quick, 50_000, 1_000_000).max(1),
        size: pick(args.size, quick, 8, 8),
        runs: session.runs(1, 3),
        consumer: args.consumer.clone().unwrap_or_else(|| "dump".into()),
        lens: or_default(&args.channel_len, quick, &[1], &[1, 64]),
        placements: or_default(&args.placement, quick, &["spread".into()], &["spread".into()]),
    }
}

fn record_settings(result: &mut BenchResult, plan: &Plan) {
    for (k, v) in [
        ("patterns", plan.patterns.join(",")),
        ("transports", plan.transports.join(",")),
        ("count", plan.count.to_string()),
        ("size", plan.size.to_string()),
        ("consumer", plan.consumer.clone()),
        (
            "channel_len",
            plan.lens.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
        ),
        ("placement", plan.placements.join(",")),
        ("runs", plan.runs.to_string()),
        ("warmup_runs", "1".to_string()),
    ] {
        result.settings.insert(k.into(), v);
    }
}

/// Every case over transport `t`, round by round: raw PUSH/PULL, the raw program in the net's
/// shape per channel length, then the smx net per pattern, channel length and placement.
fn measure_transport(
    result: &mut BenchResult,
    plan: &Plan,
    t: &str,
    graph: &Result<NetGraph, String>,
    registry: &Registry,
    session: &mut Session,
) {
    let (count, size, runs) = (plan.count, plan.size, plan.runs);
    let mut raw = Case::new(
        "zmq-raw",
        &[("pattern", "pushpull".into()), ("transport", t.to_string())],
    );
    let combos: Vec<(&String, u32, &String)> = plan
        .patterns
        .iter()
        .flat_map(|p| plan.lens.iter().map(move |&len| (p, len)))
        .flat_map(|(p, len)| plan.placements.iter().map(move |place| (p, len, place)))
        .collect();
    let mut cases = smx_cases(plan, t, &combos);
    let mut shaped: Vec<Case> = plan
        .lens
        .iter()
        .map(|len| {
            Case::new(
                "zmq-raw-net",
                &[("transport", t.to_string()), ("channel_len", len.to_string())],
            )
        })
        .collect();
    for i in 0..=runs {
        let r = Run::with_steal(|| zmq_raw::run(transport(t), count, size, Duration::from_secs(10)));
        session.progress("zmq", &raw, i, runs, &r, "msg_rate_hz");
        if i > 0 {
            raw.push(r);
        }
        for (case, len) in shaped.iter_mut().zip(&plan.lens) {
            let r = Run::with_steal(|| {
                zmq_raw::run_shaped(transport(t), count, size, Duration::from_secs(10), Some(*len as usize))
            });
            session.progress("zmq", case, i, runs, &r, "msg_rate_hz");
            if i > 0 {
                case.push(r);
            }
        }
        for (case, (pattern, len, place)) in cases.iter_mut().zip(&combos) {
            let shape = Shape {
                pattern,
                transport: transport(t),
                count,
                size,
                channel_len: *len,
                chains: place.as_str() == "chains",
            };
            let r = Run::with_steal(|| measured_smx_run(graph, registry, &shape));
            session.progress("zmq", case, i, runs, &r, "msg_rate_hz");
            if i > 0 {
                case.push(r);
            }
        }
    }
    result.cases.push(raw);
    result.cases.extend(shaped);
    result.cases.extend(cases);
}

/// The smx cases over transport `t`, one per (pattern, channel length, placement).
fn smx_cases(plan: &Plan, t: &str, combos: &[(&String, u32, &String)]) -> Vec<Case> {
    combos
        .iter()
        .map(|(p, len, place)| {
            let mut params = vec![
                ("pattern", (*p).clone()),
                ("transport", t.to_string()),
                ("consumer", plan.consumer.clone()),
                ("channel_len", len.to_string()),
            ];
            params.extend(placement_param(place));
            Case::new("smx", &params)
        })
        .collect()
}

/// One run of the smx net, with the process's CPU time over it.
fn measured_smx_run(graph: &Result<NetGraph, String>, registry: &Registry, shape: &Shape) -> Run {
    let cpu = cpu::process_cpu_s();
    let mut r = match graph {
        Err(e) => Run::failed(e.clone()),
        Ok(g) => smx_run(g, registry, shape),
    };
    let received = r.metrics.get("received").copied().unwrap_or(0.0) as u64;
    r.set_cpu(cpu::process_cpu_s() - cpu, received);
    r
}

/// The case parameter of a placement: none for `spread`, the default, so that results saved
/// before placements existed still compare (`--compare`) with today's.
fn placement_param(place: &str) -> Option<(&'static str, String)> {
    (place != "spread").then(|| ("placement", place.to_string()))
}

/// The smx case with these parameters and this placement (a `spread` case has no placement).
fn find_case<'r>(result: &'r BenchResult, params: &[(&str, &str)], place: &str) -> Option<&'r Case> {
    let wanted = placement_param(place);
    result.cases.iter().find(|c| {
        c.series == "smx"
            && params.iter().all(|(k, v)| c.param(k) == Some(*v))
            && c.param("placement") == wanted.as_ref().map(|(_, v)| v.as_str())
    })
}

/// One configuration of the report's net.
pub struct Shape<'a> {
    pub pattern: &'a str,
    pub transport: Transport,
    pub count: u64,
    pub size: usize,
    pub channel_len: u32,
    /// Each chain on a core of its own instead of `--pin auto`'s spread.
    pub chains: bool,
}

/// The cores of the `chains` placement: `Src1`, `Snk1` on the first allowed core, `Src2`,
/// `Snk2` on the second. On a machine with fewer threads than cores a hand-over between
/// cores is the fast one; with more (four boxes and two ZeroMQ I/O threads on two cores) each
/// chain's hand-overs on one core are cheaper than waking the other core, and a longer
/// channel lets the consumer take a burst each time it runs.
fn chain_cores(graph: &smx_graph::NetGraph, settings: &mut [smx_runtime::config::NetSettings]) {
    let cores = smx_timing::sched::allowed_cores();
    let (Some(&first), Some(&last)) = (cores.first(), cores.get(1).or(cores.first())) else {
        return;
    };
    for (node, s) in graph.nodes.iter().zip(settings.iter_mut()) {
        s.core = match node.label.as_str() {
            "Src1" | "Snk1" => Some(first),
            "Src2" | "Snk2" => Some(last),
            _ => s.core,
        };
    }
}

fn smx_run(graph: &smx_graph::NetGraph, registry: &Registry, shape: &Shape<'_>) -> Run {
    smx_run_with(graph, registry, shape, smx_runtime::RunOptions::default())
}

/// One run of the report's net with `base` options (its settings and channel length replaced
/// by the shape's): `bench tune` runs it under every setting of its sweep.
pub fn smx_run_with(
    graph: &smx_graph::NetGraph,
    registry: &Registry,
    shape: &Shape<'_>,
    base: smx_runtime::RunOptions,
) -> Run {
    let Shape {
        pattern,
        transport: t,
        count,
        size,
        channel_len,
        chains,
    } = *shape;
    let endpoint = match endpoint(t) {
        Ok(e) => e,
        Err(e) => return Run::failed(e),
    };
    let overrides = [
        Override::new("smx_src_rand", "count", count),
        Override::new("smx_src_rand", "size", size),
        Override::new("smx_snk_zmq", "pattern", pattern),
        Override::new("smx_snk_zmq", "endpoint", &endpoint),
        Override::new("smx_src_zmq", "pattern", pattern),
        Override::new("smx_src_zmq", "endpoint", &endpoint),
        // Ends the receiver 2 s after the last message when the end marker was lost (pubsub),
        // instead of the default 10 s.
        Override::new("smx_src_zmq", "timeout", "2s"),
        Override::new("smx_snk_dump", "path", "/dev/null"),
    ];
    let mut settings = match net::settings(graph, registry, &overrides) {
        Ok(s) => s,
        Err(e) => return Run::failed(e),
    };
    if chains {
        chain_cores(graph, &mut settings);
    }
    let opts = smx_runtime::RunOptions {
        default_channel_len: Some(channel_len),
        settings,
        stop: crate::interrupt::stop_flag(),
        ..base
    };
    let report = match smx_runtime::run(graph, registry, &opts) {
        Ok(r) => r,
        Err(e) => return Run::failed(format!("the net did not start: {e}")),
    };
    run_verdict(&report, pattern, count)
}

/// The run's metrics from the report, invalid when the net failed, the sink was not given every
/// message, the ZMQ source's books disagree with its consumer, or PIPELINE lost a message.
fn run_verdict(report: &Report, pattern: &str, count: u64) -> Run {
    let books = books(report);
    // End to end, from the runtime's channel counts: what the ZMQ sink read from its input and
    // what the consumer behind the ZMQ source read (a ZMQ box may handle several messages per
    // step, so its loop count is not a message count). This does not rely on the ZMQ boxes'
    // accounting, which is recorded beside it and cross-checked.
    let read_by = |net: &str| {
        report
            .channels
            .iter()
            .find(|c| c.to == net && c.port == "data")
            .map_or(0, |c| c.read)
    };
    let offered = read_by("Snk1");
    let received = read_by("Snk2");
    let mut run = Run::new();
    if report.status != smx_runtime::report::Status::Ok {
        run.invalidate(format!("run status {}", report.status.as_str()));
    }
    for why in delivery_problems(pattern, count, offered, received, books.received) {
        run.invalidate(why);
    }
    let lost = offered.saturating_sub(received);
    let send_wall = report.net("Snk1").map(|n| n.wall_time_s).unwrap_or(0.0);
    let wall = net::nets_wall_s(report);
    let per_s = |n: u64, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
    run.set("wall_s", wall)
        .set("offered", offered as f64)
        .set("sent", books.sent as f64)
        .set("sender_dropped", books.dropped as f64)
        .set("received", received as f64)
        .set("receiver_lost", books.lost as f64)
        .set("lost", lost as f64)
        .set(
            "loss_pct",
            if offered == 0 {
                0.0
            } else {
                100.0 * lost as f64 / offered as f64
            },
        )
        .set("frames", books.frames as f64)
        .set("send_rate_hz", per_s(offered, send_wall))
        .set("msg_rate_hz", per_s(received, wall));
    run
}

/// The ZMQ boxes' own accounting, summed over the report's ZMQ rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Books {
    /// Accepted by ZeroMQ at the sinks.
    pub sent: u64,
    /// Refused or given up at the sinks (pubsub high-water mark, pipeline timeout).
    pub dropped: u64,
    pub received: u64,
    /// Missing at the sources, from the senders' totals and sequence gaps.
    pub lost: u64,
    /// Data frames the sinks sent (several messages per frame when batched).
    pub frames: u64,
}

/// Reads the report's `zmq` rows (the sink's `sent` and `dropped`, the source's `received`
/// and `lost`).
pub fn books_of(rows: &[Stats]) -> Books {
    let num = |v: &Stats, k: &str| v.u64(k).unwrap_or(0);
    let mut b = Books::default();
    for row in rows {
        match row.get("role") {
            Some(StatValue::Text(role)) if role == "sink" => {
                b.sent += num(row, "sent");
                b.dropped += num(row, "dropped");
                b.frames += num(row, "frames");
            }
            Some(StatValue::Text(role)) if role == "source" => {
                b.received += num(row, "received");
                b.lost += num(row, "lost");
            }
            _ => {}
        }
    }
    b
}

fn books(report: &Report) -> Books {
    report
        .sections
        .get("zmq")
        .map(|rows| books_of(rows))
        .unwrap_or_default()
}

pub fn table(
    result: &BenchResult,
    patterns: &[String],
    transports: &[String],
    lens: &[u32],
    placements: &[String],
) -> Table {
    let mut t = Table::new(
        "zmq: report's net Src1.Snk1|Src2.Snk2 (median (min-max) of the valid runs; rates in thousand \
         messages/s end to end; len: the net's channel length)",
        &[
            "pattern",
            "transport",
            "len",
            "placement",
            "given",
            "received",
            "loss [%]",
            "send rate",
            "receive rate",
            "raw PUSH/PULL",
            "smx/raw",
            "raw net shape",
            "smx/net shape",
            "CPU s/M: smx",
            "raw",
            "net shape",
        ],
    );
    for tr in transports {
        let raw = result.find("zmq-raw", &[("transport", tr.as_str())]);
        for (p, len, place) in patterns
            .iter()
            .flat_map(|p| lens.iter().map(move |len| (p, len.to_string())))
            .flat_map(|(p, len)| placements.iter().map(move |place| (p, len.clone(), place)))
        {
            let Some(case) = find_case(
                result,
                &[("pattern", p), ("transport", tr), ("channel_len", &len)],
                place,
            ) else {
                continue;
            };
            let ratio =
                |peer: Option<&Case>| match (case.median("msg_rate_hz"), peer.and_then(|r| r.median("msg_rate_hz"))) {
                    (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
                    _ => "-".into(),
                };
            let shaped = result.find("zmq-raw-net", &[("transport", tr.as_str()), ("channel_len", &len)]);
            let cell = |c: Option<&Case>, metric: &str, scale: f64| {
                c.map_or_else(|| "-".into(), |c| c.cell_auto(metric, scale))
            };
            t.row(vec![
                case.label(p),
                tr.clone(),
                len,
                place.clone(),
                case.cell("offered", 1.0, 0),
                case.cell("received", 1.0, 0),
                case.cell("loss_pct", 1.0, 3),
                case.cell("send_rate_hz", 1e-3, 1),
                case.cell("msg_rate_hz", 1e-3, 1),
                raw.map(|r| r.cell("msg_rate_hz", 1e-3, 1))
                    .unwrap_or_else(|| "-".into()),
                ratio(raw),
                shaped
                    .map(|r| r.cell("msg_rate_hz", 1e-3, 1))
                    .unwrap_or_else(|| "-".into()),
                ratio(shaped),
                case.cell_auto("cpu_s_per_m", 1.0),
                cell(raw, "cpu_s_per_m", 1.0),
                cell(shaped, "cpu_s_per_m", 1.0),
            ]);
        }
    }
    t
}

/// What makes a run's delivery no measurement: the sink not given every message, the ZMQ
/// source's books against its consumer's, PIPELINE losing any, and PUB/SUB delivering none (a
/// subscriber that never joined measures nothing, and its zero would pull the median down).
fn delivery_problems(pattern: &str, count: u64, offered: u64, received: u64, booked: u64) -> Vec<String> {
    let mut problems = Vec::new();
    if offered != count {
        problems.push(format!("the ZMQ sink was given {offered} of {count} messages"));
    }
    if booked != received {
        problems.push(format!(
            "the ZMQ source counted {booked} received messages, its consumer {received}"
        ));
    }
    if pattern == "pipeline" && received != count {
        problems.push(format!("PIPELINE delivered {received} of {count} messages"));
    }
    if pattern != "pipeline" && received == 0 && count > 0 {
        problems.push(format!(
            "PUB/SUB delivered none of {count} messages: its subscriber never took one, so the run measures nothing"
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_net_shape_note_says_why_it_is_slower_where_cores_are_few() {
        assert!(net_shape_note(2).contains("with 2 cores here"));
        assert!(!net_shape_note(8).contains("take turns"));
    }

    #[test]
    fn a_pubsub_run_that_delivered_nothing_measures_nothing() {
        assert_eq!(delivery_problems("pubsub", 100, 100, 81, 81), Vec::<String>::new());
        let none = delivery_problems("pubsub", 100, 100, 0, 0);
        assert_eq!(none.len(), 1, "{none:?}");
        assert!(
            none[0].starts_with("PUB/SUB delivered none of 100 messages"),
            "{none:?}"
        );
        assert_eq!(
            delivery_problems("pipeline", 100, 100, 99, 99),
            vec!["PIPELINE delivered 99 of 100 messages".to_string()]
        );
    }

    #[test]
    fn books_add_up_sink_and_source_rows() {
        let rows = [
            Stats::new()
                .with("name", "Snk1")
                .with("role", "sink")
                .with("sent", 100u64)
                .with("dropped", 7u64)
                .with("received", StatValue::None),
            Stats::new()
                .with("name", "Src2")
                .with("role", "source")
                .with("sent", 100u64)
                .with("received", 81u64)
                .with("lost", 19u64),
        ];
        assert_eq!(
            books_of(&rows),
            Books {
                sent: 100,
                dropped: 7,
                received: 81,
                lost: 19,
                frames: 0
            }
        );
    }

    #[test]
    fn the_chains_placement_puts_each_chain_on_one_core() {
        let graph = net::compile_net("zmq.smx", &net_text(false)).unwrap();
        let registry = crate::builtin_registry();
        let mut settings = net::settings(&graph, &registry, &[]).unwrap();
        chain_cores(&graph, &mut settings);
        let core = |label: &str| {
            let i = graph.nodes.iter().position(|n| n.label == label).unwrap();
            settings[i].core
        };
        let cores = smx_timing::sched::allowed_cores();
        assert_eq!(
            (core("Src1"), core("Snk1")),
            (cores.first().copied(), cores.first().copied())
        );
        let second = cores.get(1).or(cores.first()).copied();
        assert_eq!((core("Src2"), core("Snk2")), (second, second));
    }

    #[test]
    fn each_placement_is_a_validated_row() {
        let args = ZmqArgs {
            patterns: vec!["pipeline".into()],
            transports: vec!["tcp".into()],
            count: Some(2000),
            placement: vec!["spread".into(), "chains".into()],
            ..ZmqArgs::default()
        };
        let mut session = Session {
            quick: true,
            runs: Some(1),
            command: "test".into(),
        };
        let result = run(&args, &mut session);
        for place in ["spread", "chains"] {
            let case = find_case(&result, &[("channel_len", "1")], place).unwrap_or_else(|| panic!("no {place} case"));
            assert!(case.runs.iter().all(|r| r.valid), "{place}: {:?}", case.runs);
            assert_eq!(case.runs[0].metrics["received"], 2000.0, "{place}");
        }
        let rows = &result.tables[0].rows;
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0][3].as_str(), rows[1][3].as_str()), ("spread", "chains"));
    }

    #[test]
    fn endpoints_are_fresh_and_local() {
        let a = endpoint(Transport::Tcp).unwrap();
        assert!(a.starts_with("tcp://127.0.0.1:"));
        let (b, c) = (endpoint(Transport::Ipc).unwrap(), endpoint(Transport::Ipc).unwrap());
        assert!(b.starts_with("ipc://smx-bench-") && b != c);
    }
}
