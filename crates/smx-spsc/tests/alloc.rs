//! No allocation per message: a counting allocator sees none on either end's thread while
//! messages flow, including through waits that park.
#![cfg(not(loom))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use smx_spsc::{Kind, channel};

struct Counting;
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn messages_flow_without_allocating() {
    for kind in [Kind::Blocking, Kind::DropOldest] {
        for spin in [Duration::ZERO, smx_spsc::DEFAULT_SPIN] {
            ALLOCATIONS.store(0, Ordering::Relaxed);
            let (mut tx, mut rx) = channel::<[u64; 9]>(4, kind);
            tx.set_spin(spin);
            rx.set_spin(spin);
            let producer = thread::spawn(move || {
                // `thread::current()` (taken when an end parks) is set up at spawn: no allocation.
                COUNTING.with(|c| c.set(true));
                for i in 0..200_000u64 {
                    if i % 50_000 == 0 {
                        thread::sleep(Duration::from_millis(2)); // the consumer parks
                    }
                    tx.push([i; 9]).unwrap();
                }
                COUNTING.with(|c| c.set(false));
            });
            COUNTING.with(|c| c.set(true));
            let mut n = 0;
            while let Some(m) = rx.pop() {
                assert!(m[0] >= n);
                n = m[0] + 1;
            }
            COUNTING.with(|c| c.set(false));
            producer.join().unwrap();
            assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 0, "{kind:?}, spin {spin:?}");
        }
    }

    // Batches: the queues are reused, so they allocate only before the flow starts.
    ALLOCATIONS.store(0, Ordering::Relaxed);
    let (mut tx, mut rx) = channel::<[u64; 9]>(64, Kind::Blocking);
    let producer = thread::spawn(move || {
        let mut batch = std::collections::VecDeque::with_capacity(32);
        COUNTING.with(|c| c.set(true));
        for i in 0..10_000u64 {
            batch.extend((0..32).map(|j| [i * 32 + j; 9]));
            tx.push_from(&mut batch).unwrap();
        }
        COUNTING.with(|c| c.set(false));
    });
    let mut out = std::collections::VecDeque::with_capacity(64);
    COUNTING.with(|c| c.set(true));
    let mut n = 0;
    while rx.wait_ready() {
        rx.pop_into(&mut out, 64);
        for m in out.drain(..) {
            assert_eq!(m[0], n);
            n += 1;
        }
    }
    COUNTING.with(|c| c.set(false));
    producer.join().unwrap();
    assert_eq!(n, 320_000);
    assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 0, "batches");
}
