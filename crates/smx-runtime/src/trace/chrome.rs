//! Writing a [`Tracer`]'s tracks as Chrome trace event JSON: `{"traceEvents": [...]}` with
//! complete (`X`) slices, thread-scoped instants (`i`) and `M` metadata naming the process and
//! each thread; `ts` and `dur` in microseconds since the run's start.

use std::io::Write;

use serde::Serialize;
use serde_json::{Value, json};

use super::{Labels, Tracer, What};

const PID: u32 = 1;

#[derive(Serialize)]
struct Out<'a> {
    name: String,
    cat: &'a str,
    ph: &'a str,
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'a str>,
    args: Value,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

fn label(list: &[String], i: u32) -> &str {
    list.get(i as usize).map_or("?", String::as_str)
}

/// `(name, category, args)` of an event, and whether it is an instant.
fn describe(what: What, count: u64, arg: u64, l: &Labels) -> (String, &'static str, Value, bool) {
    let own = |text: &str| {
        if l.owner == l.thread || l.owner.is_empty() {
            text.to_string()
        } else {
            format!("{}: {text}", l.owner)
        }
    };
    match what {
        What::Steps if count == 1 => (own("step"), "step", json!({ "steps": 1, "net": l.owner }), false),
        What::Steps => (
            own(&format!("{count} steps")),
            "step",
            json!({ "steps": count, "net": l.owner }),
            false,
        ),
        What::WaitRead(p) => {
            let port = label(&l.inputs, p);
            (
                own(&format!("wait {port}")),
                "wait",
                json!({ "port": port, "on": "read" }),
                false,
            )
        }
        What::WaitWrite(p) => {
            let port = label(&l.outputs, p);
            (
                own(&format!("write {port}")),
                "wait",
                json!({ "port": port, "on": "write" }),
                false,
            )
        }
        What::WaitAny => ("wait inputs".into(), "wait", json!({ "on": "read" }), false),
        What::Tick => (
            "tick".into(),
            "firewall",
            json!({ "tick": count, "late_us": us(arg) }),
            false,
        ),
        What::MissedTicks => ("missed ticks".into(), "miss", json!({ "ticks": count }), true),
        What::Overrun => ("overrun".into(), "miss", json!({ "tick": count }), true),
        What::ProduceMiss(p) => (
            "produce miss".into(),
            "miss",
            json!({ "pair": label(&l.pairs, p), "tick": count }),
            true,
        ),
        What::ConsumeMiss(p) => (
            "consume miss".into(),
            "miss",
            json!({ "pair": label(&l.pairs, p), "tick": count }),
            true,
        ),
    }
}

fn meta(name: &str, tid: u32, args: Value) -> Value {
    json!({ "name": name, "ph": "M", "pid": PID, "tid": tid, "args": args })
}

pub(super) fn write(tracer: &Tracer, net: &str, partial: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let origin = tracer.origin();
    let tracks = tracer.tracks();
    let mut out = std::io::BufWriter::new(out);
    out.write_all(b"{\"traceEvents\":[\n")?;
    let mut first = true;
    let mut put = |out: &mut std::io::BufWriter<&mut dyn Write>, value: &dyn erased::Ser| -> std::io::Result<()> {
        if !first {
            out.write_all(b",\n")?;
        }
        first = false;
        value.write_to(out)
    };
    put(
        &mut out,
        &meta("process_name", 0, json!({ "name": format!("smxrun {net}") })),
    )?;
    for t in &tracks {
        put(&mut out, &meta("thread_name", t.tid, json!({ "name": t.name })))?;
        put(
            &mut out,
            &meta("thread_sort_index", t.tid, json!({ "sort_index": t.tid })),
        )?;
    }
    let mut kept = 0u64;
    for t in &tracks {
        for (e, which) in &t.events {
            let (name, cat, args, instant) = describe(e.what, e.count, e.arg, &t.labels[*which]);
            let event = Out {
                name,
                cat,
                ph: if instant { "i" } else { "X" },
                ts: us(e.ts.saturating_sub(origin)),
                dur: (!instant).then(|| us(e.dur)),
                pid: PID,
                tid: t.tid,
                s: instant.then_some("t"),
                args,
            };
            put(&mut out, &event)?;
            kept += 1;
        }
    }
    let dropped: u64 = tracks.iter().map(|t| t.dropped).sum();
    let by_thread: serde_json::Map<String, Value> = tracks
        .iter()
        .filter(|t| t.dropped > 0)
        .map(|t| (t.name.clone(), json!(t.dropped)))
        .collect();
    let other = json!({
        "format": "smx trace 1",
        "net": net,
        "clock": "CLOCK_MONOTONIC; ts and dur in microseconds since the run's start",
        "trace_limit": tracer.limit(),
        "batch_below_us": us(super::BATCH_BELOW_NS),
        "events": kept,
        "dropped_events": dropped,
        "dropped_by_thread": by_thread,
        "partial": partial,
    });
    write!(out, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
    serde_json::to_writer(&mut out, &other)?;
    out.write_all(b"}\n")?;
    out.flush()
}

/// One serialisable item of the event list, whatever its type.
mod erased {
    use std::io::Write;

    pub trait Ser {
        fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()>;
    }

    impl<T: serde::Serialize> Ser for T {
        fn write_to(&self, out: &mut dyn Write) -> std::io::Result<()> {
            serde_json::to_writer(out, self).map_err(std::io::Error::from)
        }
    }
}
