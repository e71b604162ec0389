//! Time-triggered semantics through temporal firewalls: visibility one period later, produce
//! and consume misses, missed-tick accounting, termination, the spec's §3.1 edge table.
//! Periods are milliseconds and every assertion is logical (an identity or a bound that the
//! semantics guarantee), never a timing figure.

mod common;
use common::settings::with_count as settings;

use std::thread;
use std::time::Duration;

use smx_box::{Message, now_ns};
use smx_graph::{NetGraph, TimeSpec, Timing};
use smx_runtime::channel::{Reader, Writer};
use smx_runtime::report::FirewallReport;
use smx_runtime::report::{Report, Status};
use smx_runtime::{Firewall, FirewallOptions, TtMode};
use smx_runtime::{Link, NetBuilder};
use smx_runtime::{RunOptions, run};

const T: Duration = Duration::from_millis(4);

/// Firewall options for tests: no real-time priority, no memory locking, no spinning.
/// The threads mode (tests/tt_cyclic.rs covers the cyclic executive), without real-time
/// scheduling or spinning.
fn quiet(shards: usize) -> FirewallOptions {
    FirewallOptions {
        shards: Some(shards),
        mode: TtMode::Threads,
        ..FirewallOptions::best_effort()
    }
}

/// Reads until the end; returns (seq, sent_ns, received_ns) per message.
fn drain(mut reader: Reader) -> Vec<(u64, u64, u64)> {
    let mut got = Vec::new();
    while let Some(msg) = reader.read_blocking() {
        got.push((msg.seq, msg.sent_ns, now_ns()));
    }
    got
}

fn write_all(mut writer: Writer, n: u64, gap: Duration) {
    for seq in 0..n {
        if !gap.is_zero() {
            thread::sleep(gap);
        }
        if writer.write(Message::now(seq, b"x")).is_err() {
            return;
        }
    }
}

fn single(reports: &[FirewallReport]) -> &FirewallReport {
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].pairs.len(), 1, "{reports:?}");
    &reports[0]
}

#[test]
fn data_becomes_visible_one_period_later_never_earlier() {
    let mut fw = Firewall::new(T);
    let (writer, reader) = fw.connect("P", "C", false, 1, false, 1);
    let running = fw.start(&quiet(1)).unwrap();
    let consumer = thread::spawn(move || drain(reader));
    write_all(writer, 12, Duration::ZERO);
    let got = consumer.join().unwrap();
    let t0 = running.t0_message_ns();
    let (reports, _) = running.join();
    let f = single(&reports);
    let p = &f.pairs[0];
    assert!(t0 > 0);
    let period = |ns: u64| (ns.saturating_sub(t0) / T.as_nanos() as u64, ns < t0);
    for &(seq, sent, received) in &got {
        let (sent_period, before_start) = period(sent);
        let (received_period, _) = period(received);
        assert!(
            before_start || received_period > sent_period,
            "message {seq} sent in period {sent_period} was visible in period {received_period}"
        );
    }
    // Order is kept and the accounting adds up.
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(p.forwarded, 12, "a coupled producer's messages are all forwarded");
    assert_eq!(got.len() as u64 + p.consume_misses, p.forwarded);
    assert_eq!(p.ticks, p.forwarded + p.produce_misses);
    assert_eq!((p.producer.as_str(), p.consumer.as_str()), ("P", "C"));
}

#[test]
fn a_producer_sleeping_past_its_period_misses_ticks() {
    let mut fw = Firewall::new(T);
    let (writer, reader) = fw.connect("P", "C", false, 1, false, 1);
    let running = fw.start(&quiet(1)).unwrap();
    let consumer = thread::spawn(move || drain(reader));
    write_all(writer, 4, T * 3);
    consumer.join().unwrap();
    let (reports, _) = running.join();
    let f = single(&reports);
    let p = &f.pairs[0];
    assert_eq!(p.forwarded, 4);
    // Each of the 4 gaps of three periods holds scheduled ticks that found nothing new.
    assert!(p.produce_misses + f.missed_ticks >= 3, "{f:?}");
    assert_eq!(p.ticks, p.forwarded + p.produce_misses);
}

#[test]
fn a_producer_that_never_writes_is_reported() {
    let mut fw = Firewall::new(T);
    let (writer, reader) = fw.connect("Silent", "C", false, 1, false, 1);
    let running = fw.start(&quiet(1)).unwrap();
    let consumer = thread::spawn(move || drain(reader));
    thread::sleep(T * 4);
    drop(writer);
    assert!(consumer.join().unwrap().is_empty());
    let (reports, _) = running.join();
    let f = single(&reports);
    let p = &f.pairs[0];
    assert_eq!(p.forwarded, 0);
    assert!(p.produce_misses + f.missed_ticks >= 1, "{f:?}");
    assert_eq!(p.ticks, p.produce_misses);
}

#[test]
fn a_stalled_consumer_loses_overwritten_messages_and_they_are_counted() {
    let mut fw = Firewall::new(T);
    let (writer, reader) = fw.connect("P", "C", false, 1, false, 1);
    let running = fw.start(&quiet(1)).unwrap();
    let consumer = thread::spawn(move || {
        thread::sleep(T * 6);
        drain(reader)
    });
    write_all(writer, 10, Duration::ZERO);
    let got = consumer.join().unwrap();
    let (reports, _) = running.join();
    let p = &single(&reports).pairs[0];
    assert!(p.consume_misses >= 1, "{p:?}");
    assert_eq!(got.len() as u64 + p.consume_misses, p.forwarded);
    // Overwriting drops the older message, it never reorders.
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(got.last().map(|g| g.0), Some(9), "the newest message survives");
}

#[test]
fn a_stall_of_the_firewall_is_counted_as_missed_ticks_not_merged() {
    let mut fw = Firewall::new(T);
    let (writer, reader) = fw.connect("P", "C", false, 1, false, 1);
    let running = fw.start(&quiet(1)).unwrap();
    let consumer = thread::spawn(move || drain(reader));
    let producer = thread::spawn(move || write_all(writer, 12, Duration::ZERO));
    while running.tick() < 2 {
        thread::sleep(Duration::from_millis(1));
    }
    // 5.5 periods without a release: at least 4 whole periods are lost.
    running.stall_once(T * 11 / 2);
    producer.join().unwrap();
    consumer.join().unwrap();
    let (reports, _) = running.join();
    let f = single(&reports);
    let p = &f.pairs[0];
    assert!(f.missed_ticks >= 4, "{f:?}");
    // Every scheduled tick is either released (and then served) or missed.
    assert!(f.ticks >= p.ticks + f.missed_ticks, "{f:?}");
    assert_eq!(p.forwarded, 12);
    // The pair was served the whole time: every lost tick is one of its deadlines, in its rate.
    assert_eq!(p.missed_ticks, f.missed_ticks, "{f:?}");
    assert!(p.deadline_misses() >= p.missed_ticks);
    assert!(p.miss_rate() > 0.0);
}

#[test]
fn termination_passes_through_the_firewall_from_the_consumer_side() {
    let mut fw = Firewall::new(T);
    let (mut writer, reader) = fw.connect("P", "C", false, 1, false, 1);
    let running = fw.start(&quiet(1)).unwrap();
    drop(reader);
    // The producer's writes fail once the firewall has passed the end on.
    let mut refused = false;
    for seq in 0..1_000 {
        if writer.write(Message::now(seq, b"x")).is_err() {
            refused = true;
            break;
        }
    }
    assert!(refused);
    let (reports, _) = running.join();
    assert_eq!(reports[0].pairs.len(), 1);
}

#[test]
fn pairs_are_spread_over_threads() {
    let mut fw = Firewall::new(T);
    let mut ends = Vec::new();
    for i in 0..3 {
        ends.push(fw.connect(&format!("P{i}"), &format!("C{i}"), false, 1, false, 1));
    }
    let running = fw.start(&quiet(2)).unwrap();
    let mut threads = Vec::new();
    for (writer, reader) in ends {
        threads.push(thread::spawn(move || drain(reader)));
        threads.push(thread::spawn(move || {
            write_all(writer, 5, Duration::ZERO);
            Vec::new()
        }));
    }
    threads.into_iter().for_each(|t| drop(t.join().unwrap()));
    let (reports, _) = running.join();
    assert_eq!(reports.len(), 2);
    let pairs: Vec<_> = reports.iter().flat_map(|r| r.pairs.iter()).collect();
    assert_eq!(pairs.len(), 3);
    assert!(pairs.iter().all(|p| p.forwarded == 5));
}

// ---- through the runtime ----

fn spec(d: Duration) -> TimeSpec {
    TimeSpec {
        secs: 0,
        nanos: d.as_nanos() as u64,
    }
}

/// `Src.Snk` with the edge time-triggered on the given sides.
fn tt_pair(src: Duration, dst: Duration, len: Option<u32>) -> NetGraph {
    let mut net = NetBuilder::new();
    let s = net.add_box("Src", "smx_src_rand", &[("data", false)]);
    let k = net.add_box("Snk", "smx_snk_null", &[("data", true)]);
    net.connect_with(s, "data", k, "data", Link { len, ..Link::default() });
    let mut graph = net.build();
    graph.edges[0].timing = Timing::TimeTriggered;
    graph.edges[0].src_time = spec(src);
    graph.edges[0].dst_time = spec(dst);
    graph
}

fn run_tt(graph: &NetGraph, count: u64) -> Report {
    let registry = smxrun::builtin_registry();
    let opts = RunOptions {
        settings: settings(graph, &registry, count),
        firewall: quiet(1),
        ..RunOptions::default()
    };
    run(graph, &registry, &opts).expect("net runs")
}

#[test]
fn a_time_triggered_net_runs_to_its_end_and_reports_its_firewall() {
    let report = run_tt(&tt_pair(T, T, None), 6);
    assert_eq!(report.status, Status::Ok, "{report:?}");
    let fws = &report.firewalls;
    let f = single(fws);
    let p = &f.pairs[0];
    // Named as every line of the report names a node, with its id: a fan-in has several pairs
    // whose nodes share a name.
    assert_eq!((p.producer.as_str(), p.consumer.as_str()), ("Src#0", "Snk#1"));
    assert_eq!(f.period_ns, T.as_nanos() as u64);
    assert_eq!(p.forwarded, 6);
    let snk = report.net("Snk").unwrap();
    assert_eq!(snk.loop_count + p.consume_misses, 6);
    assert!(!f.clock_source.is_empty());
    let json: serde_json::Value = serde_json::from_str(&smx_runtime::report::json::render(&report)).unwrap();
    let fw = &json["firewalls"][0];
    for key in ["period_ns", "ticks", "overruns", "lateness_ns", "pairs"] {
        assert!(fw.get(key).is_some(), "missing {key} in {fw}");
    }
    for key in ["producer", "consumer", "forwarded", "produce_misses", "consume_misses"] {
        assert!(fw["pairs"][0].get(key).is_some(), "missing {key}");
    }
    let text = smx_runtime::report::text::render(&report);
    assert!(
        text.contains("Src#0 -> Snk#1") && text.contains("produce misses"),
        "{text}"
    );
}

#[test]
fn half_time_triggered_edges_keep_the_user_length_on_the_other_side() {
    // Only the source side is time-triggered: firewall -> consumer keeps length 4.
    let report = run_tt(&tt_pair(T, Duration::ZERO, Some(4)), 5);
    assert_eq!(report.channels[0].len, 4);
    assert_eq!(report.firewalls[0].pairs[0].forwarded, 5);
    // Only the destination side: firewall -> consumer has length 1.
    let report = run_tt(&tt_pair(Duration::ZERO, T, Some(4)), 5);
    assert_eq!(report.channels[0].len, 1);
    assert_eq!(report.firewalls[0].pairs[0].forwarded, 5);
}

#[test]
fn two_periods_on_one_edge_use_two_firewalls_in_series() {
    let report = run_tt(&tt_pair(T, T * 2, None), 5);
    assert_eq!(report.status, Status::Ok);
    let fws = &report.firewalls;
    assert_eq!(fws.len(), 2);
    let fast = fws.iter().find(|f| f.period_ns == T.as_nanos() as u64).unwrap();
    let slow = fws.iter().find(|f| f.period_ns == 2 * T.as_nanos() as u64).unwrap();
    assert_eq!(fast.pairs[0].producer, "Src#0");
    assert_eq!(slow.pairs[0].consumer, "Snk#1");
    assert_eq!(fast.pairs[0].forwarded, 5);
    // The slower firewall takes the latest value; what it skipped was overwritten in between.
    let snk = report.net("Snk").unwrap();
    assert_eq!(snk.loop_count + slow.pairs[0].consume_misses, slow.pairs[0].forwarded);
    assert!(slow.pairs[0].forwarded >= 1);
}

#[test]
fn a_net_written_in_streamix_runs_through_a_firewall() {
    use smx_lang::compose::{CompileOptions, compile};
    use smx_lang::diag::SourceFile;
    let text =
        "Src = box smx_src_rand( out data )\nSnk = box smx_snk_null( in data )\nA = tt[4ms](Src.Snk)\nconnect A|A\n";
    let compiled = compile(&SourceFile::new("tt.smx", text), &CompileOptions::default());
    let graph = compiled.graph;
    assert_eq!(graph.edges.len(), 2, "{:?}", compiled.diagnostics);
    let report = run_tt(&graph, 4);
    assert_eq!(report.status, Status::Ok);
    let fws = &report.firewalls;
    let pairs: Vec<_> = fws.iter().flat_map(|f| f.pairs.iter()).collect();
    assert_eq!(pairs.len(), 2, "{fws:?}");
    assert!(fws.iter().all(|f| f.period_ns == 4_000_000));
    assert!(pairs.iter().all(|p| p.forwarded == 4));
}

#[test]
fn losses_before_the_firewall_are_in_the_channel_row() {
    use smx_lang::compose::{CompileOptions, compile};
    use smx_lang::diag::SourceFile;
    // A decoupled producer overwrites while the firewall waits for its tick: those losses
    // happen on the producer→firewall segment and must show in the channel's books.
    let text = "SrcD = box smx_src_rand( decoupled out data )\nSnk = box smx_snk_null( in data )\n\
                connect tt[2ms](SrcD).Snk\n";
    let compiled = compile(&SourceFile::new("ttd.smx", text), &CompileOptions::default());
    assert!(compiled.accepted(), "{:?}", compiled.diagnostics);
    let report = run_tt(&compiled.graph, 50);
    assert_eq!(report.status, Status::Ok);
    let row = &report.channels[0];
    assert_eq!(row.written, 50, "{row:?}");
    assert_eq!(
        row.written,
        row.read + row.overwritten + row.dropped + row.left,
        "{row:?}"
    );
    assert!(row.overwritten > 0, "{row:?}");
}

/// A held start called off runs no tick of a firewall's schedule: its report has no ticks and
/// no misses, and no verdict judges a period that never ran (what the drain after the stop
/// takes is no figure of it).
#[test]
fn a_start_called_off_leaves_its_firewall_without_ticks_or_verdict() {
    let graph = tt_pair(Duration::from_micros(10), Duration::from_micros(10), None);
    let registry = smxrun::builtin_registry();
    let progress = smx_runtime::Progress::new();
    progress.hold_start(|_| {
        // The others' answer comes late, as a process started through `launch` takes a while.
        thread::sleep(Duration::from_millis(50));
        false
    });
    let opts = RunOptions {
        settings: settings(&graph, &registry, 1000),
        firewall: quiet(1),
        progress,
        ..RunOptions::default()
    };
    let report = run(&graph, &registry, &opts).expect("a called-off start is no error");
    let f = single(&report.firewalls);
    assert_eq!((f.ticks, f.missed_ticks, f.pairs[0].missed_ticks), (0, 0, 0), "{f:?}");
    let verdicts =
        smx_runtime::report::period_verdicts(&report.firewalls, &report.probes, smx_runtime::LeverWords::default());
    assert!(verdicts.is_empty(), "{verdicts:?}");
}
