//! Resident memory stays flat over a long run: no message, payload or counter is
//! leaked per message.
//!
//! Runs `Src.Fwd.(Snk|Snk)` with heap payloads (256 bytes, above the inline size) and a copying
//! fan-out, samples the process's resident set (`/proc/self/statm`) once 20 % of the messages
//! have arrived and again near the end, and requires the growth to stay under 4 MiB, a bound
//! that leaking the payload (or anything of 64 bytes or more) per message crosses. It is a
//! behaviour check, not a measurement, and it is alone in this test binary so that no other
//! test's allocations move the figure.
//!
//! Default: 100,000 messages (a few seconds in a debug build). The long version of the issue:
//! `SMX_RSS_MESSAGES=10000000 cargo test --release --test robust_memory -- --nocapture`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use smx_lang::compose::{CompileOptions, compile};
use smx_lang::diag::SourceFile;
use smx_runtime::config::ConfigLayers;
use smx_runtime::report::Status;
use smx_runtime::{RunOptions, run};

const NET: &str = "\
Src = box smx_src_rand(out data)
Fwd = box smx_fwd(up in data, down out data)
Snk = box smx_snk_null(in data)
connect Src.Fwd.(Snk|Snk)
";

/// Growth allowed between the 20 % and the final sample.
const TOLERANCE: u64 = 4 << 20;

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("statm has a resident field");
    // SAFETY: plain FFI call without arguments.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * page.max(4096) as u64
}

#[test]
fn resident_memory_stays_flat_over_a_long_run() {
    let messages: u64 = std::env::var("SMX_RSS_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let file = SourceFile::new("rss.smx", NET);
    let compiled = compile(&file, &CompileOptions::default());
    assert!(compiled.accepted(), "{:?}", compiled.diagnostics);
    let registry = smxrun::builtin_registry();
    let mut layers = ConfigLayers::new();
    layers.set_iterations(messages);
    layers.add_set("Src.size=256").unwrap();
    layers.add_set("Src.seed=7").unwrap();
    let opts = RunOptions {
        settings: layers.resolve(&compiled.graph, &registry).unwrap(),
        default_channel_len: Some(64),
        ..RunOptions::default()
    };
    // Two sinks each read every message.
    let total = 2 * messages;
    let progress = opts.progress.clone();
    let done = Arc::new(AtomicBool::new(false));
    let finished = done.clone();
    let sampler = std::thread::spawn(move || {
        let mut at_20 = None;
        let mut last = None;
        while !finished.load(Ordering::Acquire) {
            let seen = progress.messages();
            if at_20.is_none() && seen >= total / 5 {
                at_20 = Some((seen, resident_bytes()));
            }
            if at_20.is_some() && seen >= total / 20 * 19 {
                last = Some((seen, resident_bytes()));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        (at_20, last)
    });
    let report = run(&compiled.graph, &registry, &opts).expect("runs");
    let after = resident_bytes();
    done.store(true, Ordering::Release);
    let (at_20, last) = sampler.join().unwrap();
    assert_eq!(report.status, Status::Ok);
    assert_eq!(report.messages, total);
    let (seen_20, rss_20) = at_20.expect("sampled at 20 %");
    let (seen_end, rss_end) = last.unwrap_or((total, after));
    println!(
        "{messages} messages, 256-byte payloads: RSS {:.1} MiB after {seen_20} reads, {:.1} MiB after {seen_end}, \
         {:.1} MiB after the run ({:.1} s, {:.0} msg/s)",
        rss_20 as f64 / 1048576.0,
        rss_end as f64 / 1048576.0,
        after as f64 / 1048576.0,
        report.wall_time_s,
        report.messages_per_s
    );
    assert!(
        rss_end.saturating_sub(rss_20) < TOLERANCE,
        "resident memory grew by {} bytes between 20 % and the end",
        rss_end - rss_20
    );
}
