//! One report for a net that ran as several slices: every net and channel once, as if the net
//! had run in one process.
//!
//! Net rows get the id they have in the whole net and the `process` they ran in; the link boxes
//! disappear. A cut channel is one row: written on the producer's side, read on the
//! consumer's, with the `link` between them; what the link took from the producer's half but
//! never delivered into the consumer's half is `lost`, so the row balances
//! (`written = read + overwritten + dropped + left + lost`). A process that left no report
//! (killed, crashed, lost) shows its nets with status `lost`, and what its links carried is
//! counted lost on its side.

use serde_json::{Map, Value, json};
use smx_graph::{NetGraph, NodeKind, Timing};
use smx_runtime::channel::ChannelKind;

use crate::names::SliceNames;
use crate::slice::{Link, Origin, Split};

use crate::supervise::Outcome;

/// The JSON layout of a whole-net report of several processes: that of one process's report
/// (its `format_version` 3) plus `processes`, `process` on each net row and `link` on each cut
/// channel.
pub const FORMAT_VERSION: u64 = 4;

/// The layout of one process's JSON report, which a slice's report has.
pub const SLICE_FORMAT_VERSION: u64 = 3;

/// Whether a slice's report (or the stand-in of a slice whose run was refused) holds what a
/// merge reads as a slice writes it: the layout a slice writes (`format_version`), each count
/// and id a whole number from 0 to 2^64 - 1, each exit code one a process ends with, and no
/// number negative or beyond 2^64 - 1 (outside the plan, which is checked apart, and the boxes'
/// own figures). The error names the field.
pub fn check_slice_report(report: &Value) -> Result<(), String> {
    if !report["refused"].is_string() {
        match &report["format_version"] {
            v if v.as_u64() == Some(SLICE_FORMAT_VERSION) => {}
            Value::Null => return Err("format_version: missing".to_string()),
            v => {
                return Err(format!(
                    "format_version: {v} is not the layout of a slice's report ({SLICE_FORMAT_VERSION}): it was \
                     written by another version of smxrun, or edited"
                ));
            }
        }
    }
    let whole = |path: String, v: &Value| match v {
        Value::Null => Ok(()),
        v if v.as_u64().is_some() => Ok(()),
        v => Err(format!(
            "{path}: {v} is not a count or an id (a whole number from 0 to {})",
            u64::MAX
        )),
    };
    whole("messages".into(), &report["messages"])?;
    whole("pid".into(), &report["pid"])?;
    if !report["exit_code"].is_null() && report["exit_code"].as_u64().is_none_or(|c| c > 255) {
        return Err(format!(
            "exit_code: {} is not an exit code (a whole number from 0 to 255)",
            report["exit_code"]
        ));
    }
    for (i, net) in report["nets"].as_array().into_iter().flatten().enumerate() {
        for key in ["id", "loop_count"] {
            whole(format!("nets[{i}].{key}"), &net[key])?;
        }
    }
    for (i, channel) in report["channels"].as_array().into_iter().flatten().enumerate() {
        for key in [
            "id",
            "from_id",
            "to_id",
            "len",
            "written",
            "read",
            "overwritten",
            "duplicated",
            "dropped",
            "left",
        ] {
            whole(format!("channels[{i}].{key}"), &channel[key])?;
        }
    }
    for (i, sink) in report["latency"]["sinks"].as_array().into_iter().flatten().enumerate() {
        whole(format!("latency.sinks[{i}].id"), &sink["id"])?;
    }
    for (i, path) in report["latency"]["paths"].as_array().into_iter().flatten().enumerate() {
        for key in ["from_id", "to_id"] {
            whole(format!("latency.paths[{i}].{key}"), &path[key])?;
        }
    }
    in_range(report, String::new())
}

/// Every number in `value` (but the plan's and the boxes' own figures) from 0 to 2^64 - 1.
fn in_range(value: &Value, path: String) -> Result<(), String> {
    match value {
        Value::Number(n) if n.as_u64().is_some() => Ok(()),
        Value::Number(n) if n.as_f64().is_some_and(|f| (0.0..=u64::MAX as f64).contains(&f)) => Ok(()),
        Value::Number(n) => Err(format!(
            "{path}: {n} is out of range (a report's numbers are from 0 to {})",
            u64::MAX
        )),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| in_range(v, format!("{path}[{i}]"))),
        Value::Object(map) => map
            .iter()
            .filter(|(key, _)| !(path.is_empty() && *key == "plan") && *key != "stats")
            .try_for_each(|(key, v)| {
                in_range(
                    v,
                    if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    },
                )
            }),
        _ => Ok(()),
    }
}

/// The channels of a merged report whose books do not balance (`written = read + overwritten +
/// dropped + left + lost`), each as a line that says so; those whose figures are a snapshot
/// (not `settled`) or unknown (a process left none) are not judged.
pub fn unbalanced(merged: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    for c in merged["channels"].as_array().into_iter().flatten() {
        if c["settled"] == false {
            continue;
        }
        let lost = match &c["link"] {
            Value::Null => Some(0),
            link => link["lost"].as_u64(),
        };
        let n = |key: &str| c[key].as_u64();
        let (Some(written), Some(read), Some(overwritten), Some(dropped), Some(left), Some(lost)) =
            (n("written"), n("read"), n("overwritten"), n("dropped"), n("left"), lost)
        else {
            continue;
        };
        let accounted = [read, overwritten, dropped, left, lost]
            .iter()
            .try_fold(0u64, |sum, v| sum.checked_add(*v));
        if accounted != Some(written) {
            lines.push(format!(
                "channel {} ({}#{} -> {}#{}): its books do not balance: written {written}, but read {read} + \
                 overwritten {overwritten} + dropped {dropped} + left {left} + lost {lost} = {}",
                c["id"],
                c["from"].as_str().unwrap_or("?"),
                c["from_id"],
                c["to"].as_str().unwrap_or("?"),
                c["to_id"],
                accounted.map_or("more than 2^64 - 1".to_string(), |a| a.to_string()),
            ));
        }
    }
    lines
}

/// The slices' reports of one run (by process name; `None` where a process left none).
pub struct Parts<'a> {
    pub graph: &'a NetGraph,
    pub split: &'a Split,
    pub outcomes: &'a [Outcome],
    /// The implementations that pass what they read on outside the net (a ZeroMQ sink): a sink
    /// of the whole net that is one does not count in `messages` when another sink does.
    pub bridges: &'a [String],
    /// What the deployment itself said (the processes' cores it decided, and a split's placement
    /// warnings), first in the report: a choice among the notes, the rest among the warnings.
    pub notes: &'a [String],
    /// The longest time a slice told its supervisor it had run: the run's wall time is at
    /// least that, also where every process died before its report.
    pub told_wall: Option<std::time::Duration>,
    /// Per slice, the messages it last told its supervisor it had counted at the whole net's
    /// sinks it holds: a process that died before its report had counted at least those.
    pub told_messages: &'a [Option<u64>],
}

/// The merged report as JSON.
pub fn merge(parts: &Parts<'_>) -> Value {
    let reports: Vec<Option<Value>> = parts
        .split
        .slices
        .iter()
        .map(|s| {
            let outcome = parts.outcomes.iter().find(|o| o.process == s.process)?;
            serde_json::from_str(outcome.report.as_deref()?).ok()
        })
        .collect();
    let nets = merged_nets(parts, &reports);
    let channels = merged_channels(parts, &reports);
    let longest = reports
        .iter()
        .flatten()
        .filter_map(|r| r["wall_time_s"].as_f64())
        .fold(parts.told_wall.map_or(0.0, |t| t.as_secs_f64()), f64::max);
    let wall = released_together(&reports).map_or(longest, |span| span.min(longest));
    let (messages, counted_by_told) = messages_of(parts, &reports, &channels);
    // A process the supervisor stopped (the run was stopped, or another process ended it) is no
    // failure of its own: the run is then as stopped as its reports say, and at least stopped.
    // One that ended by itself with its report (`ended`: books not clean, exit 3, as a lost
    // link leaves them) is as its report says: a box that failed there fails the run by it.
    let stopped = |o: &&Outcome| o.status == "stopped";
    let all_ok = parts
        .outcomes
        .iter()
        .all(|o| matches!(o.status.as_str(), "ok" | "ended") || stopped(&o));
    // A net the merge found cut short (its input or its output lost with a link) is stopped,
    // though its own process's report said ok.
    let cut_short = nets.iter().any(|n| n["status"] == "stopped");
    let status = match worst_status(&reports) {
        _ if !all_ok => "failed".to_string(),
        worst if worst == "ok" && (cut_short || parts.outcomes.iter().any(|o| stopped(&o))) => "stopped".to_string(),
        worst => worst,
    };
    let mut told = Told::default();
    for note in parts.notes {
        told.add(note, note.clone());
    }
    for (process, count) in &counted_by_told {
        let line = format!(
            "messages: {count} of them as process '{process}' last told them before it ended without a report \
             (what it counted after that is unknown)"
        );
        told.add(&line, line.clone());
    }
    let mut sections = Map::new();
    for (slice, report) in parts.split.slices.iter().zip(&reports) {
        let Some(report) = report else { continue };
        let names = SliceNames::new(parts.graph, &parts.split.links, &slice.origins);
        told.add_slice(&slice.process, &names, report);
        for (name, rows) in report["sections"].as_object().into_iter().flatten() {
            let keep = |row: &&Value| !is_link_label(row["name"].as_str().unwrap_or(""), &parts.split.links);
            let list = sections.entry(name.clone()).or_insert_with(|| json!([]));
            if let (Some(list), Some(rows)) = (list.as_array_mut(), rows.as_array()) {
                list.extend(rows.iter().filter(keep).cloned());
            }
        }
    }
    settle_tails(&mut told.warnings, &channels, &parts.split.links);
    // A section of the link boxes alone is empty once they are gone; one process's report
    // has no empty section.
    sections.retain(|_, rows| rows.as_array().is_some_and(|rows| !rows.is_empty()));
    json!({
        "format_version": FORMAT_VERSION,
        "wall_time_s": wall,
        "status": status,
        "messages": messages,
        "messages_per_s": if wall > 0.0 { messages as f64 / wall } else { 0.0 },
        "processes": parts.outcomes.iter().map(process_row).collect::<Vec<_>>(),
        "nets": nets,
        "channels": channels,
        "firewalls": merged_firewalls(parts, &reports),
        "latency": merged_latency(parts, &reports),
        "probes": reports.iter().flatten().flat_map(|r| r["probes"].as_array().cloned().unwrap_or_default()).collect::<Vec<_>>(),
        "sections": sections,
        "notes": told.notes,
        "warnings": told.warnings,
    })
}

/// The runtimes' lines of a merged report: their choices (`notes`, the text's "How it ran")
/// apart from what did not go as asked (`warnings`), each process's prefixed with its name.
#[derive(Default)]
struct Told {
    notes: Vec<String>,
    warnings: Vec<String>,
}

impl Told {
    /// Adds `line`, told as `own` by a runtime, to the list its topic belongs to.
    fn add(&mut self, own: &str, line: String) {
        if smx_runtime::report::text::is_decision(own) {
            self.notes.push(line);
        } else {
            self.warnings.push(line);
        }
    }

    /// A slice's lines, its nodes named as in the whole net. A slice's report written before
    /// `notes` had its own key holds its choices among its warnings: the topic tells them.
    fn add_slice(&mut self, process: &str, names: &SliceNames, report: &Value) {
        for key in ["notes", "warnings"] {
            for line in report[key].as_array().into_iter().flatten() {
                let own = names.rename(line.as_str().unwrap_or(""));
                self.add(&own, format!("{process}: {own}"));
            }
        }
    }
}

/// A link's receiver that lost its sender before the end says the loss after its last message
/// is unknown ([`smx_zmq::source::TAIL_UNKNOWN`]); where the sender's books are in the report,
/// the link's `lost` is exact, and the line says that figure instead.
fn settle_tails(warnings: &mut [String], channels: &[Value], links: &[Link]) {
    for link in links {
        let Some(row) = channels.iter().find(|c| c["id"].as_u64() == Some(link.edge as u64)) else {
            continue;
        };
        let (exact, lost) = (&row["link"]["lost_exact"], row["link"]["lost"].as_u64());
        let (Some(lost), true) = (lost, *exact == true && !row["link"]["sender"].is_null()) else {
            continue;
        };
        let receiver = format!(": {} (", link.source_label);
        let settled = format!("the sender's books in this report settle it: {lost} message(s) lost on the link");
        for line in warnings.iter_mut().filter(|line| line.contains(&receiver)) {
            *line = line.replace(smx_zmq::source::TAIL_UNKNOWN, &settled);
        }
    }
}

/// Every slice's firewalls, their pairs' nodes named as in the whole net (a time-triggered
/// channel never crosses processes, so each pair lies within one slice).
fn merged_firewalls(parts: &Parts<'_>, reports: &[Option<Value>]) -> Vec<Value> {
    let mut firewalls = Vec::new();
    for (slice, report) in parts.split.slices.iter().zip(reports) {
        let Some(report) = report else { continue };
        let names = SliceNames::new(parts.graph, &parts.split.links, &slice.origins);
        for firewall in report["firewalls"].as_array().into_iter().flatten() {
            let mut firewall = firewall.clone();
            for pair in firewall["pairs"].as_array_mut().into_iter().flatten() {
                for end in ["producer", "consumer"] {
                    if let Some(name) = pair[end].as_str() {
                        pair[end] = json!(names.rename(name));
                    }
                }
            }
            firewalls.push(firewall);
        }
    }
    firewalls
}

/// The `latency` object of one process's report for the whole net: how each slice sampled
/// (the first slice's settings: every process runs with the same), anomalies summed, and the
/// sinks and paths of the whole net under their ids in it. A path that starts at a link's
/// receiving end starts, in the whole net, at the one source that feeds the link's sending
/// end, when there is one and the two hosts' clocks are comparable (else its latency counts
/// from the arrival, not from the source).
fn merged_latency(parts: &Parts<'_>, reports: &[Option<Value>]) -> Value {
    let present: Vec<(&crate::slice::Slice, &Value)> = parts
        .split
        .slices
        .iter()
        .zip(reports)
        .filter_map(|(slice, r)| Some((slice, r.as_ref()?.get("latency")?)))
        .filter(|(_, l)| l.is_object())
        .collect();
    let mut latency = present.first().map_or_else(
        || json!({"mode": "off", "every": 0, "clock": "monotonic"}),
        |(_, l)| json!({"mode": l["mode"], "every": l["every"], "clock": l["clock"]}),
    );
    let anomalies: u64 = present.iter().filter_map(|(_, l)| l["clock_anomalies"].as_u64()).sum();
    latency["clock_anomalies"] = json!(anomalies);
    let node = |slice: &crate::slice::Slice, id: &Value| -> Option<Origin> {
        slice.origins.get(usize::try_from(id.as_u64()?).ok()?).copied()
    };
    let label = |id: usize| parts.graph.nodes.get(id).map(|n| n.label.clone());
    let mut sinks = Vec::new();
    let mut paths = Vec::new();
    for (slice, l) in &present {
        for s in l["sinks"].as_array().into_iter().flatten() {
            if let Some(Origin::Node(id)) = node(slice, &s["id"]) {
                sinks.push(json!({"id": id, "name": label(id), "latency_ns": s["latency_ns"]}));
            }
        }
        for p in l["paths"].as_array().into_iter().flatten() {
            let Some(Origin::Node(to)) = node(slice, &p["to_id"]) else {
                continue;
            };
            let from = match node(slice, &p["from_id"]) {
                Some(Origin::Node(from)) => Some(from),
                Some(Origin::LinkSource(edge)) => link_upstream(parts, reports, edge, parts.split.links.len()),
                _ => None,
            };
            if let Some(from) = from {
                paths.push(json!({
                    "from": label(from), "from_id": from, "to": label(to), "to_id": to,
                    "latency_ns": p["latency_ns"],
                }));
            }
        }
    }
    sinks.sort_by_key(|s| s["id"].as_u64());
    paths.sort_by_key(|p| (p["from_id"].as_u64(), p["to_id"].as_u64()));
    latency["sinks"] = json!(sinks);
    latency["paths"] = json!(paths);
    latency
}

/// The one source of the whole net whose messages the link of `edge` carries, as its sending
/// process saw it, when the stamps behind the link still count from that source: through the
/// links before it too (`hops` of them at most), for a path that crosses several processes.
fn link_upstream(parts: &Parts<'_>, reports: &[Option<Value>], edge: usize, hops: usize) -> Option<usize> {
    let link = parts.split.links.iter().find(|l| l.edge == edge)?;
    if !clocks_comparable(parts, reports, link) {
        return None;
    }
    let s = parts.split.slices.iter().position(|s| s.process == link.from_process)?;
    let producer = &parts.split.slices[s];
    let origin = |id: &Value| producer.origins.get(usize::try_from(id.as_u64()?).ok()?).copied();
    reports[s].as_ref()?["latency"]["paths"]
        .as_array()?
        .iter()
        .find_map(|p| match (origin(&p["from_id"])?, origin(&p["to_id"])?) {
            (Origin::Node(from), Origin::LinkSink(e)) if e == edge => Some(from),
            (Origin::LinkSource(before), Origin::LinkSink(e)) if e == edge && hops > 0 => {
                link_upstream(parts, reports, before, hops - 1)
            }
            _ => None,
        })
}

/// Whether what arrives behind `link` is stamped on the clock of its producer's process: as
/// the receiving link box judged it, else as the deployment planned it.
fn clocks_comparable(parts: &Parts<'_>, reports: &[Option<Value>], link: &Link) -> bool {
    box_stats(parts, reports, &link.to_process, &link.source_label)
        .and_then(|s| s["latency_from"].as_str().map(|f| f == "creation"))
        .unwrap_or(link.same_clock)
}

/// `messages` as one process would count them: the reads of each final sink of the whole net
/// (a box with no outgoing channel, a bridge out of the net only when every sink is one) on
/// its first connected input in port order, so a link's half never counts as a sink.
/// The whole net's `messages`: those its sinks' channels say they read, and, for a process
/// that holds some of those sinks and left no report, what it last told it had counted there
/// (by process, for the report to say).
fn messages_of(parts: &Parts<'_>, reports: &[Option<Value>], channels: &[Value]) -> (u64, Vec<(String, u64)>) {
    let counted = crate::counted_slices(parts.graph, parts.split);
    let told: Vec<(String, u64)> = parts
        .split
        .slices
        .iter()
        .enumerate()
        .filter(|(i, _)| reports.get(*i).is_some_and(Option::is_none) && counted[*i])
        .filter_map(|(i, slice)| Some((slice.process.clone(), parts.told_messages.get(i).copied().flatten()?)))
        .filter(|(_, told)| *told > 0)
        .collect();
    let read = whole_net_messages(parts.graph, channels, parts.bridges);
    (read + told.iter().map(|(_, n)| n).sum::<u64>(), told)
}

fn whole_net_messages(graph: &NetGraph, channels: &[Value], bridges: &[String]) -> u64 {
    let feeds = crate::feeds(graph);
    let first_input = |node: &smx_graph::Node| {
        node.ports.iter().find_map(|port| {
            graph
                .edges
                .iter()
                .find(|e| e.target == node.id && e.target_port == port.name)
        })
    };
    let sinks: Vec<(&smx_graph::Node, &smx_graph::Edge)> = graph
        .nodes
        .iter()
        .filter(|n| !feeds[n.id])
        .filter_map(|n| first_input(n).map(|e| (n, e)))
        .collect();
    let is_bridge = |n: &smx_graph::Node| bridges.contains(&n.func);
    let only_bridges = sinks.iter().all(|(n, _)| is_bridge(n));
    sinks
        .iter()
        .filter(|(n, _)| only_bridges || !is_bridge(n))
        .filter_map(|(_, e)| {
            let row = channels.iter().find(|c| c["id"].as_u64() == Some(e.id as u64))?;
            row["read"].as_u64()
        })
        .sum()
}

/// How long the whole net ran where every process left a report that says when its nets were
/// released: from the last release to the last end. Slices started together (supervised) give
/// the longest wall time of any; slices started by hand (a split) each count their wait for
/// their peers in their own wall time, which is no time the whole net ran.
fn released_together(reports: &[Option<Value>]) -> Option<f64> {
    let spans: Vec<(f64, f64)> = reports
        .iter()
        .map(|r| {
            let r = r.as_ref()?;
            let from = r[crate::protocol::RAN]["nets_from_unix_s"].as_f64()?;
            Some((from, from + r["wall_time_s"].as_f64()?))
        })
        .collect::<Option<_>>()?;
    let last_start = spans.iter().map(|s| s.0).reduce(f64::max)?;
    let last_end = spans.iter().map(|s| s.1).reduce(f64::max)?;
    (last_end > last_start).then_some(last_end - last_start)
}

/// Merges the reports of slices started by hand (`smxrun split`): each carries the plan of
/// the whole net (`plan`) and its `process` and `pid`. A slice whose report is missing counts
/// as a process that left none.
pub fn from_reports(reports: &[Value], bridges: &[String]) -> Result<Value, String> {
    let first = reports.first().ok_or("no report given")?;
    let plan = &first["plan"];
    let (graph, split) = planned_split(plan)?;
    check_reports(reports, plan, &split)?;
    let outcomes: Vec<Outcome> = split
        .slices
        .iter()
        .map(|s| {
            let report = reports.iter().find(|r| r["process"].as_str() == Some(&s.process));
            outcome_of(&s.process, report, plan)
        })
        .collect();
    // The placement's warnings, which the split said before any slice started.
    let said: Vec<String> = plan["said"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w.as_str().map(str::to_string))
        .collect();
    Ok(merge(&Parts {
        graph: &graph,
        split: &split,
        outcomes: &outcomes,
        bridges,
        notes: &said,
        told_wall: None,
        told_messages: &[],
    }))
}

/// The whole net and its split as a report's `plan` gives them (the slices without their
/// graphs and settings), checked to hold together.
fn planned_split(plan: &Value) -> Result<(NetGraph, Split), String> {
    let graph: NetGraph = serde_json::from_value(plan["graph"].clone()).map_err(|_| {
        "the report holds no plan of a split net: merge the reports of slices that `smxrun split` wrote".to_string()
    })?;
    let links: Vec<Link> = serde_json::from_value(plan["links"].clone()).map_err(|e| format!("plan: links: {e}"))?;
    let mut slices = Vec::new();
    for s in plan["slices"].as_array().into_iter().flatten() {
        slices.push(crate::slice::Slice {
            process: s["process"].as_str().unwrap_or("").to_string(),
            graph: NetGraph::default(),
            origins: serde_json::from_value(s["origins"].clone()).map_err(|e| format!("plan: origins: {e}"))?,
            edges: serde_json::from_value(s["edges"].clone()).map_err(|e| format!("plan: edges: {e}"))?,
            sets: Vec::new(),
        });
    }
    check_plan(&graph, &links, &slices)?;
    Ok((graph, Split { slices, links }))
}

/// Whether every report is one of a process of `split`, of the split `plan` describes, and
/// given once: a second report of one process would leave another without its report, and that
/// process would read as died.
fn check_reports(reports: &[Value], plan: &Value, split: &Split) -> Result<(), String> {
    let mut seen: Vec<&str> = Vec::new();
    for r in reports {
        let process = r["process"]
            .as_str()
            .ok_or("a report names no process: merge the reports that `smxrun split`'s slices wrote")?;
        check_slice_report(r).map_err(|e| format!("the report of process '{process}': {e}"))?;
        if r["plan"] != *plan {
            return Err(format!(
                "the report of process '{process}' belongs to another split than the first one's"
            ));
        }
        if !split.slices.iter().any(|s| s.process == process) {
            return Err(format!(
                "the report of process '{process}' names no process of the split"
            ));
        }
        if seen.contains(&process) {
            return Err(format!("the report of process '{process}' is given twice"));
        }
        seen.push(process);
    }
    Ok(())
}

/// How `process` ended, as its report (`None`: it left none) says, its host by the report or
/// else by the `plan`.
fn outcome_of(process: &str, report: Option<&Value>, plan: &Value) -> Outcome {
    // A slice's report holds the exit code its process ended with.
    let exit_code = report.and_then(|r| r["exit_code"].as_i64()).map(|c| c as i32);
    // A slice whose run was refused before it started leaves a stand-in with why.
    let refused = report.is_some_and(|r| r["refused"].is_string());
    // Stopped by a signal (an orchestrator's SIGTERM, a Ctrl-C), as a supervisor stops it.
    let stopped = report.is_some_and(|r| r["status"] == "stopped") || exit_code == Some(crate::supervise::STOPPED_EXIT);
    let status = match (report, exit_code) {
        (None, _) => "died",
        (Some(_), _) if refused => "refused",
        (Some(_), _) if stopped => "stopped",
        (Some(_), Some(code)) if code != 0 => "ended",
        (Some(_), _) => "ok",
    };
    let planned_host = || {
        plan["slices"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["process"] == process)
            .and_then(|s| s["host"].as_str().map(str::to_string))
    };
    Outcome {
        process: process.to_string(),
        host: report
            .and_then(|r| r["host"].as_str().map(str::to_string))
            .or_else(planned_host),
        pid: report.and_then(|r| r["pid"].as_u64()).map(|p| p as u32),
        status: status.to_string(),
        exit_code,
        signal: None,
        // No books: its nets never ran.
        report: report.filter(|_| !refused).map(Value::to_string),
        refusal: None,
    }
}

/// Whether a plan read from a report holds together: every id it gives names a node, a
/// channel or a process of the split, so that merging cannot index past them.
fn check_plan(graph: &NetGraph, links: &[Link], slices: &[crate::slice::Slice]) -> Result<(), String> {
    let (nodes, edges) = (graph.nodes.len(), graph.edges.len());
    let bad = |what: String| {
        Err(format!(
            "plan: {what}: the report is damaged or not one `smxrun split` wrote"
        ))
    };
    if graph.nodes.iter().enumerate().any(|(i, n)| n.id != i) || graph.edges.iter().enumerate().any(|(i, e)| e.id != i)
    {
        return bad("the ids of the net's nodes and channels are not their places".into());
    }
    if let Some(e) = graph.edges.iter().find(|e| e.source >= nodes || e.target >= nodes) {
        return bad(format!("channel {} joins a node the net does not have", e.id));
    }
    for s in slices {
        let origin_ok = |o: &Origin| match *o {
            Origin::Node(id) => id < nodes,
            Origin::LinkSink(edge) | Origin::LinkSource(edge) => edge < edges,
        };
        if !s.origins.iter().all(origin_ok) || s.edges.iter().any(|e| *e >= edges) {
            return bad(format!(
                "slice '{}' names a node or channel the net does not have",
                s.process
            ));
        }
    }
    for l in links {
        let known = |p: &str| slices.iter().any(|s| s.process == p);
        if l.edge >= edges || !known(&l.from_process) || !known(&l.to_process) {
            return bad(format!("link of channel {} joins what the split does not have", l.edge));
        }
    }
    Ok(())
}

fn process_row(o: &Outcome) -> Value {
    json!({
        "name": o.process,
        "host": o.host,
        "pid": o.pid,
        "status": o.status,
        "exit_code": o.exit_code,
        "signal": o.signal,
    })
}

/// The most serious status any slice's report gives (`failed` > `stuck` > `stopped` > `ok`).
fn worst_status(reports: &[Option<Value>]) -> String {
    let rank = |s: &str| {
        ["ok", "stopped", "stuck", "failed"]
            .iter()
            .position(|x| *x == s)
            .unwrap_or(3)
    };
    reports
        .iter()
        .flatten()
        .filter_map(|r| r["status"].as_str())
        .max_by_key(|s| rank(s))
        .unwrap_or("ok")
        .to_string()
}

fn is_link_label(name: &str, links: &[Link]) -> bool {
    links.iter().any(|l| l.sink_label == name || l.source_label == name)
}

/// Whether `process` ended as the supervisor or a signal stopped it.
fn stopped_process(parts: &Parts<'_>, process: &str) -> bool {
    parts
        .outcomes
        .iter()
        .any(|o| o.process == process && o.status == "stopped")
}

/// Each net of the whole net once, in id order.
fn merged_nets(parts: &Parts<'_>, reports: &[Option<Value>]) -> Vec<Value> {
    let mut rows: Vec<Value> = parts
        .graph
        .nodes
        .iter()
        .map(|n| {
            json!({
                "id": n.id, "name": n.label, "impl": n.func,
                "kind": if n.kind == NodeKind::RoutingNode { "routing_node" } else { "box" },
                "core": null, "priority": null, "loop_count": null, "loop_rate": null,
                "wall_time_s": null, "status": "lost", "error": "its process left no report",
            })
        })
        .collect();
    for (slice, report) in parts.split.slices.iter().zip(reports) {
        let stopped = stopped_process(parts, &slice.process);
        // A consumer that closed the link cut the stream short only when a stop or another
        // process's end stopped it, this process's or the consumer's own (slices started
        // apart stop one by one); one that died always did.
        let consumer_stopped = |net: &Value| {
            let name = net["name"].as_str().unwrap_or_default();
            parts
                .split
                .links
                .iter()
                .filter(|l| l.from_process == slice.process && l.sink_label == name)
                .any(|l| stopped_process(parts, &l.to_process))
        };
        let cut = match report {
            Some(report) => cut_off(report, |net| {
                crate::protocol::consumer_died(net)
                    || ((stopped || consumer_stopped(net)) && crate::protocol::consumer_gone(net))
            }),
            None => Vec::new(),
        };
        for (slice_id, origin) in slice.origins.iter().enumerate() {
            let Origin::Node(id) = *origin else { continue };
            let row = report.as_ref().and_then(|r| {
                r["nets"]
                    .as_array()?
                    .iter()
                    .find(|n| n["id"].as_u64() == Some(slice_id as u64))
            });
            if let Some(row) = row {
                rows[id] = row.clone();
                rows[id]["id"] = json!(id);
                // Stopped, as a stop stops a source in one process, by another process's end.
                if row["status"] == "ok" && cut.contains(&(slice_id as u64)) {
                    rows[id]["status"] = json!("stopped");
                }
            } else if parts
                .outcomes
                .iter()
                .any(|o| o.process == slice.process && o.status == "refused")
            {
                rows[id]["error"] = json!("its process refused its run before it started");
            } else if stopped {
                // Stopped before its process said it started: nothing of it ran.
                rows[id]["status"] = json!("stopped");
                rows[id]["error"] = json!("the run was stopped before its process started");
            }
            rows[id]["process"] = json!(slice.process);
        }
    }
    for (id, producer) in starved(parts, reports) {
        // Stopped, as a stop stops a net in one process, by the death of a process before it.
        if rows[id]["status"] == "ok" {
            rows[id]["status"] = json!("stopped");
            rows[id]["error"] = json!(input_cut(parts, producer));
        }
    }
    for row in &mut rows {
        with_every_key(row, NET_ROW_KEYS);
    }
    rows
}

/// Why a net's input was cut short, by what its producer's process did: it died, its
/// supervisor lost it, or it ran on and only the link's heartbeats stopped (the network between
/// the two hosts).
fn input_cut(parts: &Parts<'_>, producer: &str) -> String {
    match parts
        .outcomes
        .iter()
        .find(|o| o.process == producer)
        .map(|o| o.status.as_str())
    {
        Some(ended @ ("died" | "killed")) => format!("its input was cut: process '{producer}' {ended}"),
        Some("lost") => {
            format!("its input was cut: process '{producer}' was lost (its supervisor heard nothing from it)")
        }
        _ => format!(
            "its input was cut: the link from process '{producer}' was lost (no heartbeat came over it: the network \
             between the two, or that process)"
        ),
    }
}

/// The ids (in the whole net) of the nets whose input a death cut short, each with the process
/// that died: those that a link's source whose producer's process died or was lost feeds, and
/// every net after them.
fn starved<'a>(parts: &'a Parts<'_>, reports: &[Option<Value>]) -> Vec<(usize, &'a str)> {
    let nodes = parts.graph.nodes.len();
    let mut seen = vec![false; nodes];
    let mut starved: Vec<(usize, &str)> = Vec::new();
    for (slice, report) in parts.split.slices.iter().zip(reports) {
        let nets = report.as_ref().and_then(|r| r["nets"].as_array());
        for net in nets.map(Vec::as_slice).unwrap_or_default() {
            let origin = net["id"].as_u64().and_then(|id| slice.origins.get(id as usize));
            if let Some(Origin::LinkSource(edge)) = origin
                && crate::protocol::producer_died(net)
                && let Some(link) = parts.split.links.iter().find(|l| l.edge == *edge)
                && let Some(edge) = parts.graph.edges.get(*edge)
                && edge.target < nodes
                && !std::mem::replace(&mut seen[edge.target], true)
            {
                starved.push((edge.target, &link.from_process));
            }
        }
    }
    if starved.is_empty() {
        return starved;
    }
    // Every net after them, each once: the graph's edges by their source.
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for e in parts
        .graph
        .edges
        .iter()
        .filter(|e| e.source < nodes && e.target < nodes)
    {
        after[e.source].push(e.target);
    }
    let mut next = 0;
    while next < starved.len() {
        let (from, producer) = starved[next];
        next += 1;
        for &to in &after[from] {
            if !std::mem::replace(&mut seen[to], true) {
                starved.push((to, producer));
            }
        }
    }
    starved
}

/// The slice ids of the nets in a slice's `report` whose stream another process cut short: those
/// that feed, through the slice's channels, a link sink whose consumer went (as `gone` judges
/// it) before it took the end of the stream.
pub(crate) fn cut_off(report: &Value, gone: impl Fn(&Value) -> bool) -> Vec<u64> {
    let nets = report["nets"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut cut: Vec<u64> = nets
        .iter()
        .filter(|n| gone(n))
        .filter_map(|n| n["id"].as_u64())
        .collect();
    let channels = report["channels"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut next = 0;
    while next < cut.len() {
        let to = cut[next];
        next += 1;
        for from in channels
            .iter()
            .filter(|c| c["to_id"].as_u64() == Some(to))
            .filter_map(|c| c["from_id"].as_u64())
        {
            if !cut.contains(&from) {
                cut.push(from);
            }
        }
    }
    cut
}

/// Each channel of the whole net once, in id order; cut channels with their `link`.
fn merged_channels(parts: &Parts<'_>, reports: &[Option<Value>]) -> Vec<Value> {
    let halves = |edge: usize| -> Vec<(usize, Option<Value>)> {
        let mut found = Vec::new();
        for (s, (slice, report)) in parts.split.slices.iter().zip(reports).enumerate() {
            for (slice_edge, _) in slice.edges.iter().enumerate().filter(|(_, e)| **e == edge) {
                let row = report.as_ref().and_then(|r| {
                    r["channels"]
                        .as_array()?
                        .iter()
                        .find(|c| c["id"].as_u64() == Some(slice_edge as u64))
                        .cloned()
                });
                found.push((s, row));
            }
        }
        found
    };
    parts
        .graph
        .edges
        .iter()
        .map(|edge| {
            let mut row = match parts.split.links.iter().find(|l| l.edge == edge.id) {
                None => halves(edge.id)
                    .into_iter()
                    .next()
                    .and_then(|(_, r)| r)
                    .unwrap_or_else(|| {
                        // Its process left no books: what the net says of the channel still holds.
                        let kind = ChannelKind::from_bits(edge.dsrc, edge.ddst);
                        json!({"name": edge.label, "kind": kind.name(), "smx_type": kind.smx_name(),
                           "timing": timing_name(edge.timing), "len": edge.len,
                           "written": null, "read": null})
                    }),
                Some(link) => {
                    let h = halves(edge.id);
                    let producer = h
                        .iter()
                        .find(|(s, _)| parts.split.slices[*s].process == link.from_process);
                    let consumer = h
                        .iter()
                        .find(|(s, _)| parts.split.slices[*s].process == link.to_process);
                    let sides = (
                        producer.and_then(|(_, r)| r.clone()),
                        consumer.and_then(|(_, r)| r.clone()),
                    );
                    let mut row = link_row(link, sides, parts, reports);
                    // The channel's length, which the ring and the halves share, not the ring's.
                    row["len"] = json!(edge.len);
                    // Each half has only its own side's kind (the producer's half is always
                    // read by a coupled link sink): the channel's kind is the graph's.
                    let kind = ChannelKind::from_bits(edge.dsrc, edge.ddst);
                    row["kind"] = json!(kind.name());
                    row["smx_type"] = json!(kind.smx_name());
                    row["timing"] = json!(timing_name(edge.timing));
                    row
                }
            };
            let (from, to) = (&parts.graph.nodes[edge.source], &parts.graph.nodes[edge.target]);
            with_every_key(&mut row, CHANNEL_ROW_KEYS);
            if row["name"].is_null() {
                // Neither side left books: the net still names it.
                row["name"] = json!(edge.label);
            }
            row["id"] = json!(edge.id);
            row["from"] = json!(from.label);
            row["from_id"] = json!(from.id);
            row["from_port"] = json!(edge.source_port);
            row["to"] = json!(to.label);
            row["to_id"] = json!(to.id);
            row["port"] = json!(edge.target_port);
            row
        })
        .collect()
}

/// The keys of a channel's row in one process's report: a row whose process left no books has
/// each of them too, `null` where its figure is unknown, so that a reader of the report finds
/// every row with the same keys.
const CHANNEL_ROW_KEYS: &[&str] = &[
    "dropped",
    "duplicated",
    "from",
    "from_id",
    "from_port",
    "id",
    "kind",
    "latency_ns",
    "left",
    "len",
    "name",
    "overwritten",
    "port",
    "read",
    "settled",
    "smx_type",
    "timing",
    "to",
    "to_id",
    "written",
];

/// The keys of a net's row in one process's report, as [`CHANNEL_ROW_KEYS`] of a channel's.
const NET_ROW_KEYS: &[&str] = &[
    "core",
    "error",
    "id",
    "impl",
    "kind",
    "loop_count",
    "loop_rate",
    "name",
    "priority",
    "stats",
    "status",
    "unconnected_writes",
    "wall_time_s",
];

/// `row` with each of `keys`, `null` where it had none.
fn with_every_key(row: &mut Value, keys: &[&str]) {
    if let Some(row) = row.as_object_mut() {
        for key in keys {
            row.entry(*key).or_insert(Value::Null);
        }
    }
}

/// A channel's timing as one process's report names it.
fn timing_name(timing: Timing) -> &'static str {
    match timing {
        Timing::None => "none",
        Timing::TimeTriggered => "time_triggered",
        Timing::TimeBounded => "time_bounded",
    }
}

fn count(row: &Option<Value>, key: &str) -> Option<u64> {
    row.as_ref()?[key].as_u64()
}

/// The row of a cut channel from its two halves (either may be missing: its process died).
fn link_row(
    link: &Link,
    (producer, consumer): (Option<Value>, Option<Value>),
    parts: &Parts<'_>,
    reports: &[Option<Value>],
) -> Value {
    let mut row = producer
        .clone()
        .or_else(|| consumer.clone())
        .unwrap_or_else(|| json!({}));
    let sum = |key: &str| count(&producer, key).unwrap_or(0) + count(&consumer, key).unwrap_or(0);
    let taken = count(&producer, "read");
    let delivered = count(&consumer, "written");
    let receiver = box_stats(parts, reports, &link.to_process, &link.source_label);
    let sender = box_stats(parts, reports, &link.from_process, &link.sink_label);
    let kept = sender.as_ref().is_some_and(crate::protocol::nothing_left_sender);
    let (lost, side) = match (taken, delivered) {
        (Some(t), Some(d)) => (Some(t.saturating_sub(d)), if t > d { "transit" } else { "none" }),
        // None of it left the producer's process: lost there, whatever became of the consumer.
        (Some(t), None) if kept => (Some(t), link.from_process.as_str()),
        // Less what the consumer's process surely took before it died, where it told that.
        (Some(t), None) => (
            Some(t.saturating_sub(told_taken(parts, link).unwrap_or(0))),
            link.to_process.as_str(),
        ),
        (None, _) => (None, link.from_process.as_str()),
    };
    row["written"] = json!(count(&producer, "written"));
    row["read"] = json!(count(&consumer, "read"));
    for key in ["overwritten", "dropped", "left"] {
        row[key] = json!(sum(key));
    }
    // Stopped with messages on their way, both sides alive: they are left, as a stop leaves
    // messages in a channel of one process, not lost. Shared memory loses nothing between two
    // live processes: what one consumer that ended by itself had not taken is left too, as in
    // a channel of one process whose consumer ended.
    let stopped = |name: &str| stopped_process(parts, name);
    let left_behind =
        stopped(&link.from_process) || stopped(&link.to_process) || link.transport == crate::slice::Transport::Shm;
    let (lost, side) = match lost {
        Some(n) if n > 0 && side == "transit" && left_behind => {
            row["left"] = json!(sum("left") + n);
            (Some(0), "none")
        }
        other => (other, side),
    };
    row["duplicated"] = json!(count(&consumer, "duplicated").unwrap_or(0));
    row["settled"] = json!(
        producer
            .as_ref()
            .zip(consumer.as_ref())
            .is_some_and(|(p, c)| p["settled"] == true && c["settled"] == true)
    );
    if let Some(c) = &consumer {
        row["latency_ns"] = c["latency_ns"].clone();
    }
    // The link's own latency is its `link` object's; a row with a producer's half keeps what
    // that half says of its producer.
    let producers_arrival = producer.as_ref().and_then(|p| p.get("arrival_ns")).cloned();
    if let Some(row) = row.as_object_mut() {
        match producers_arrival {
            Some(arrival) => row.insert("arrival_ns".into(), arrival),
            None => row.remove("arrival_ns"),
        };
    }
    // Lost at a process that left no books is what was sent its way, some of which it may have
    // passed on before it went: an upper bound, unless none of it was ever taken there, or none
    // of it ever left the producer's.
    let lost_exact = side == "none"
        || side == "transit"
        || lost == Some(0)
        || kept
        || sender.as_ref().is_some_and(crate::protocol::consumer_never_came);
    row["link"] = json!({
        "transport": link.transport.as_str(),
        "endpoint": link.endpoint,
        "from_process": link.from_process,
        "to_process": link.to_process,
        "curve": link.curve,
        "lost": lost,
        "lost_side": side,
        "lost_exact": lost_exact,
        "latency_ns": consumer.as_ref().and_then(|c| c.get("arrival_ns")).cloned(),
        "clocks_comparable": clocks_comparable(parts, reports, link),
        "sender": sender,
        "receiver": receiver,
    });
    row
}

/// What the consumer's process of `link` took of it for sure before it ended without books:
/// the count it last told its supervisor, where that count is this channel's alone (the
/// process's one sink of the whole net is the link's consumer, and this channel its only
/// input); `None` where it is not, or nothing was told.
fn told_taken(parts: &Parts<'_>, link: &Link) -> Option<u64> {
    let at = parts.split.slices.iter().position(|s| s.process == link.to_process)?;
    let told = parts.told_messages.get(at).copied().flatten()?;
    let consumer = parts.graph.edges.iter().find(|e| e.id == link.edge)?.target;
    let feeds = crate::feeds(parts.graph);
    let mut sinks = parts.split.slices[at].origins.iter().filter_map(|origin| match origin {
        crate::slice::Origin::Node(id) if !feeds[*id] => Some(*id),
        _ => None,
    });
    let only_sink = sinks.next() == Some(consumer) && sinks.next().is_none();
    let only_input = parts.graph.edges.iter().filter(|e| e.target == consumer).count() == 1;
    (only_sink && only_input).then_some(told)
}

fn box_stats(parts: &Parts<'_>, reports: &[Option<Value>], process: &str, label: &str) -> Option<Value> {
    let s = parts.split.slices.iter().position(|s| s.process == process)?;
    let report = reports[s].as_ref()?;
    report["nets"]
        .as_array()?
        .iter()
        .find(|n| n["name"].as_str() == Some(label))
        .map(|n| n["stats"].clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The receiver's "unknown" is settled where the report holds the sender's books, and left
    /// where it does not (the sender's process died: its books are gone with it).
    #[test]
    fn a_receivers_unknown_tail_is_settled_by_the_senders_books() {
        let link = |edge: usize| Link {
            edge,
            from_process: "a".into(),
            to_process: "b".into(),
            transport: crate::slice::Transport::Zmq,
            endpoint: String::new(),
            curve: true,
            same_clock: true,
            sink_label: format!("link{edge}_out"),
            source_label: format!("link{edge}_in"),
        };
        let channels = [
            json!({"id": 0, "link": {"lost": 85, "lost_exact": true, "sender": {"sent": 100}}}),
            json!({"id": 1, "link": {"lost": null, "lost_exact": false, "sender": null}}),
        ];
        let said = |label: &str| {
            format!(
                "b: {label} (smx_zmq_src): books incomplete: every sender's connection was cut before its end marker: {}",
                smx_zmq::source::TAIL_UNKNOWN
            )
        };
        let mut warnings = vec![said("link0_in"), said("link1_in")];
        settle_tails(&mut warnings, &channels, &[link(0), link(1)]);
        assert!(
            warnings[0].ends_with("the sender's books in this report settle it: 85 message(s) lost on the link"),
            "{}",
            warnings[0]
        );
        assert_eq!(warnings[1], said("link1_in"));
    }

    /// Slices started apart: the whole net ran from the last release to the last end, not for
    /// the first slice's wait for the others; a report without its release time, or a missing
    /// one, leaves the longest wall time.
    #[test]
    fn the_whole_net_ran_from_the_last_release() {
        let report = |from: f64, wall: f64| Some(json!({"wall_time_s": wall, "ran": {"nets_from_unix_s": from}}));
        let waited = [report(100.0, 6.9), report(103.0, 3.6), report(103.2, 3.7)];
        let span = released_together(&waited).unwrap();
        assert!((span - 3.7).abs() < 1e-9, "{span}");
        let together = [report(100.0, 2.0), report(100.0, 2.5)];
        assert_eq!(released_together(&together), Some(2.5));
        assert_eq!(released_together(&[report(100.0, 2.0), None]), None);
        assert_eq!(released_together(&[Some(json!({"wall_time_s": 2.0}))]), None);
    }
}
