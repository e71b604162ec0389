//! Payloads freed by the thread that allocated them.
//!
//! A C source `malloc`s each payload and its consumer, on another thread, frees it. With the C
//! library's allocator that is the slow case on both sides: the consumer's frees overflow its
//! thread cache into the producer's arena, and the producer's `malloc`s miss its own cache and
//! take them back from there, each time on a cache line the two threads share. So a payload
//! with the default destroy function (`free`) is not freed where it is dropped but handed back
//! to the thread that created its message, in batches, and that thread frees it at the start of
//! its next step: `malloc` and `free` then both hit its own thread cache.
//!
//! Freeing on any thread is correct, so every path that cannot hand a payload back (no slot
//! left, the owner has ended, its queue is full, a thread-local already gone) frees it at once:
//! nothing waits and nothing is lost. A thread that ends frees what was handed back to it.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Threads that can own a queue at the same time; the threads beyond free directly.
const SLOTS: usize = 256;
/// Payloads a dropping thread gathers per owner before it hands them over (one lock each).
const BATCH: usize = 64;
/// At most this many payloads wait for an owner that does not step (blocked, or ended
/// without telling); beyond that they are freed where they are dropped.
const QUEUE_MAX: usize = 4096;
/// Owners a dropping thread gathers for at once (a consumer of more producers flushes early).
const OUTBOX_OWNERS: usize = 4;

/// One owner's queue, on cache lines of its own.
#[repr(align(128))]
struct Slot {
    /// A live thread owns it. Cleared only with `pending` locked, so that a payload handed over
    /// is always either freed by the owner or refused.
    owned: AtomicBool,
    /// `pending.len()`, for the owner to look without the lock.
    waiting: AtomicUsize,
    /// The payloads (as addresses, to be `Send`).
    pending: Mutex<Vec<usize>>,
}

#[allow(clippy::declare_interior_mutable_const)] // each element of SLOTS gets its own copy
const FREE_SLOT: Slot = Slot {
    owned: AtomicBool::new(false),
    waiting: AtomicUsize::new(0),
    pending: Mutex::new(Vec::new()),
};

static QUEUES: [Slot; SLOTS] = [FREE_SLOT; SLOTS];

fn free_all(payloads: &mut Vec<usize>) {
    for p in payloads.drain(..) {
        // SAFETY: only payloads whose destroy function is `free` are handed over, each once.
        unsafe { libc::free(p as *mut c_void) };
    }
}

fn lock(slot: &Slot) -> std::sync::MutexGuard<'_, Vec<usize>> {
    slot.pending.lock().unwrap_or_else(|e| e.into_inner())
}

/// `Home::slot` of a thread that found every slot taken: it does not look again.
const NO_SLOT: usize = usize::MAX;

/// This thread's slot (`index + 1`; 0: none yet; [`NO_SLOT`]), the payloads taken from its queue and not freed
/// yet, and how many messages it made since it last freed some.
struct Home {
    slot: Cell<usize>,
    backlog: RefCell<Vec<usize>>,
    made: Cell<usize>,
}

impl Home {
    fn release(&self) {
        let tag = self.slot.replace(0);
        if !(1..=SLOTS).contains(&tag) {
            return;
        }
        let slot = &QUEUES[tag - 1];
        let mut left = {
            let mut pending = lock(slot);
            slot.owned.store(false, Ordering::Relaxed);
            slot.waiting.store(0, Ordering::Relaxed);
            std::mem::take(&mut *pending)
        };
        free_all(&mut left);
        if let Ok(mut backlog) = self.backlog.try_borrow_mut() {
            free_all(&mut backlog);
        }
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        self.release();
    }
}

/// Payloads this thread dropped, gathered per owner.
struct Outbox(RefCell<Vec<(usize, Vec<usize>)>>);

impl Drop for Outbox {
    fn drop(&mut self) {
        for (tag, mut payloads) in std::mem::take(self.0.get_mut()) {
            hand_over(tag, &mut payloads);
        }
    }
}

thread_local! {
    static HOME: Home = const {
        Home { slot: Cell::new(0), backlog: RefCell::new(Vec::new()), made: Cell::new(0) }
    };
    static OUTBOX: Outbox = const { Outbox(RefCell::new(Vec::new())) };
}

/// The tag a message created on this thread carries (NULL: this thread owns no queue, the
/// payload is freed where it is dropped).
pub fn tag() -> *mut c_void {
    HOME.try_with(|h| {
        let tag = h.slot.get();
        if tag == NO_SLOT {
            return 0;
        }
        if tag != 0 {
            h.made.set(h.made.get() + 1);
        }
        tag
    })
    .unwrap_or(0) as *mut c_void
}

/// Claims a queue for this thread if it has none, and frees some of what other threads handed
/// back: as many as it made messages since the last time, so that each `free` lands in the
/// thread cache just before the box's next `malloc` takes it out again (freeing a whole batch
/// at once would overflow that cache into the arena). Called at the start of a C box's step.
#[inline]
pub fn reclaim() {
    let _ = HOME.try_with(|h| {
        let tag = h.slot.get();
        if tag == 0 {
            claim(h);
            return;
        }
        if tag == NO_SLOT {
            return;
        }
        let slot = &QUEUES[tag - 1];
        let mut backlog = h.backlog.borrow_mut();
        let waiting = slot.waiting.load(Ordering::Relaxed) != 0;
        if backlog.is_empty() && !waiting {
            // Nothing to free: what was made meanwhile is not owed later all at once.
            h.made.set(0);
            return;
        }
        if backlog.len() < BATCH && waiting {
            let mut pending = lock(slot);
            if backlog.is_empty() {
                std::mem::swap(&mut *pending, &mut *backlog);
            } else {
                backlog.append(&mut pending);
            }
            slot.waiting.store(0, Ordering::Relaxed);
        }
        let n = h.made.replace(0).max(1).min(backlog.len());
        for _ in 0..n {
            if let Some(p) = backlog.pop() {
                // SAFETY: handed over as a payload to `free`, once.
                unsafe { libc::free(p as *mut c_void) };
            }
        }
    });
}

#[cold]
fn claim(h: &Home) {
    if let Some(i) = QUEUES.iter().position(|s| {
        s.owned
            .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }) {
        h.slot.set(i + 1);
    } else {
        h.slot.set(NO_SLOT);
    }
}

/// Gives this thread's queue up (a C box's cleanup): what was handed back is freed now, and
/// what comes later is freed where it is dropped, until a step claims a queue again.
pub fn release() {
    let _ = HOME.try_with(Home::release);
}

/// Frees `data`, a payload with the default destroy function of a message tagged `tag`:
/// handed back to the tag's owner when that is another thread, at once otherwise.
///
/// # Safety
/// `data` must come from `malloc` and not be used afterwards.
pub unsafe fn free(tag: *mut c_void, data: *mut c_void) {
    let tag = tag as usize;
    let valid = (1..=SLOTS).contains(&tag);
    if valid && HOME.try_with(|h| h.slot.get()).is_ok_and(|mine| mine != tag) {
        let gathered = OUTBOX.try_with(|o| {
            let mut owners = o.0.borrow_mut();
            let k = match owners.iter().position(|(t, _)| *t == tag) {
                Some(k) => k,
                None => {
                    if owners.len() == OUTBOX_OWNERS {
                        let (t, mut payloads) = owners.swap_remove(0);
                        hand_over(t, &mut payloads);
                    }
                    owners.push((tag, Vec::with_capacity(BATCH)));
                    owners.len() - 1
                }
            };
            let payloads = &mut owners[k].1;
            payloads.push(data as usize);
            if payloads.len() >= BATCH {
                hand_over(tag, payloads);
            }
        });
        if gathered.is_ok() {
            return;
        }
    }
    // SAFETY: the caller's contract.
    unsafe { libc::free(data) };
}

/// Hands `payloads` to the owner of `tag`, or frees them when it cannot take them; leaves
/// `payloads` empty either way.
fn hand_over(tag: usize, payloads: &mut Vec<usize>) {
    let slot = &QUEUES[tag - 1];
    {
        let mut pending = lock(slot);
        if slot.owned.load(Ordering::Relaxed) && pending.len() + payloads.len() <= QUEUE_MAX {
            pending.append(payloads);
            slot.waiting.store(pending.len(), Ordering::Relaxed);
        }
    }
    free_all(payloads);
}

/// Hands over everything this thread gathered (a C box's cleanup and end).
pub fn flush() {
    let _ = OUTBOX.try_with(|o| {
        for (tag, payloads) in o.0.borrow_mut().iter_mut() {
            hand_over(*tag, payloads);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload() -> *mut c_void {
        // SAFETY: plain allocation.
        unsafe { libc::malloc(16) }
    }

    /// The tests claim and give up slots; one at a time, so that none takes another's.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn pending(tag: usize) -> usize {
        lock(&QUEUES[tag - 1]).len()
    }

    #[test]
    fn payloads_go_back_to_their_owner_in_batches_and_it_frees_them() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Vec<usize>)>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let owner = std::thread::spawn(move || {
            reclaim();
            let tag = tag() as usize;
            assert_ne!(tag, 0, "a slot is free");
            let payloads: Vec<usize> = (0..BATCH + 1).map(|_| payload() as usize).collect();
            tx.send((tag, payloads)).unwrap();
            done_rx.recv().unwrap();
            assert_eq!(pending(tag), BATCH, "one full batch arrived, the odd one waits");
            reclaim();
            assert_eq!(pending(tag), 0, "the owner freed them");
            release();
            tag
        });
        let (tag, payloads) = rx.recv().unwrap();
        for p in payloads {
            unsafe { free(tag as *mut c_void, p as *mut c_void) };
        }
        done_tx.send(()).unwrap();
        let tag = owner.join().unwrap();
        assert!(!QUEUES[tag - 1].owned.load(Ordering::Relaxed));
        // The owner is gone: the gathered odd one is freed, not queued.
        flush();
        assert_eq!(pending(tag), 0);
    }

    #[test]
    fn an_ended_owner_takes_nothing_and_a_bad_tag_frees_at_once() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let tag = std::thread::spawn(|| {
            reclaim();
            tag() as usize
        })
        .join()
        .unwrap();
        assert!(
            !QUEUES[tag - 1].owned.load(Ordering::Relaxed),
            "its thread's end gave it up"
        );
        let payloads: Vec<usize> = (0..BATCH).map(|_| payload() as usize).collect();
        for p in payloads {
            unsafe { free(tag as *mut c_void, p as *mut c_void) };
        }
        assert_eq!(pending(tag), 0);
        unsafe { free((SLOTS + 1) as *mut c_void, payload()) };
        unsafe { free(usize::MAX as *mut c_void, payload()) };
    }
}
