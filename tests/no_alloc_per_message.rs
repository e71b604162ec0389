//! The message path allocates nothing per message for small payloads, so that a
//! message's cost does not depend on the allocator and a long run's memory stays flat.
//!
//! A counting global allocator (the reason this test has its own binary) counts allocations
//! of a whole `Src.Snk` run, with 8-byte payloads, at two message counts. Setting up a run
//! allocates (threads, channels, names, the report), but the same amount at any count, so the
//! difference between a run of 2,000 and one of 40,000 messages must stay far below 38,000:
//! one allocation per message would add exactly that many. A routed fan-out (`Src.(Snk|Snk)`)
//! is checked the same way, since copying to two branches must not allocate either.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use smx_lang::compose::{CompileOptions, compile};
use smx_lang::diag::SourceFile;
use smx_runtime::config::ConfigLayers;
use smx_runtime::report::Status;
use smx_runtime::{RunOptions, run};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made while running `net` with `messages` messages per source, with a `--trace`
/// recorder on every thread when `traced`.
fn allocations_traced(net: &str, messages: u64, traced: bool) -> u64 {
    let file = SourceFile::new("alloc.smx", net);
    let compiled = compile(&file, &CompileOptions::default());
    assert!(compiled.accepted(), "{:?}", compiled.diagnostics);
    let registry = smxrun::builtin_registry();
    let mut layers = ConfigLayers::new();
    layers.set_iterations(messages);
    let opts = RunOptions {
        settings: layers.resolve(&compiled.graph, &registry).unwrap(),
        trace: traced.then(|| smx_runtime::Tracer::new(1_000)),
        ..RunOptions::default()
    };
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let report = run(&compiled.graph, &registry, &opts).expect("runs");
    let made = ALLOCATIONS.load(Ordering::Relaxed) - before;
    assert_eq!(report.status, Status::Ok);
    made
}

/// The counter is global, so the tests of this binary must not run side by side.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn assert_no_allocation_per_message(net: &str) {
    assert_no_allocation_per_message_traced(net, false);
}

fn assert_no_allocation_per_message_traced(net: &str, traced: bool) {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (small, large) = (2_000, 40_000);
    // Warm up once so that one-time setup (lazy statics, thread-local buffers) is not counted.
    allocations_traced(net, small, traced);
    let at_small = allocations_traced(net, small, traced);
    let at_large = allocations_traced(net, large, traced);
    let extra = at_large.saturating_sub(at_small);
    println!("{net:?}: {at_small} allocations at {small} messages, {at_large} at {large}");
    assert!(
        extra < (large - small) / 100,
        "{extra} more allocations for {} more messages: the message path allocates",
        large - small
    );
}

#[test]
fn a_source_to_sink_channel_does_not_allocate_per_message() {
    assert_no_allocation_per_message(
        "Src = box smx_src_rand(out data)\nSnk = box smx_snk_null(in data)\nconnect Src.Snk\n",
    );
}

#[test]
fn a_copying_fan_out_does_not_allocate_per_message() {
    assert_no_allocation_per_message(
        "Src = box smx_src_rand(out data)\nSnk = box smx_snk_null(in data)\nconnect Src.(Snk|Snk)\n",
    );
}

/// A traced run records into rings allocated before the threads run: a full ring overwrites,
/// it never grows (the limit here is far below the events of either run).
#[test]
fn a_traced_run_does_not_allocate_per_message() {
    assert_no_allocation_per_message_traced(
        "Src = box smx_src_rand(out data)\nSnk = box smx_snk_null(in data)\nconnect Src.(Snk|Snk)\n",
        true,
    );
}
