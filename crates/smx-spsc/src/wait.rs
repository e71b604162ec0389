//! How an end waits: a bounded spin, then a park that cannot miss its wake-up.
//!
//! The handshake is the classic store-barrier-load pair (Dekker). The waiting end stores
//! "parked" (its `Waiter::state`), issues a barrier and then looks at the queue once more; the
//! other end changes the queue (publishes an index or a close flag), issues a barrier and then
//! loads the state. The two barriers are ordered one way or the other, so either the waiter's
//! last look sees the change or the changer sees the state and unparks it: a wake-up cannot
//! fall between the two. While nobody is parked, the changer's load hits its own cache (the
//! state's line is written only when an end parks).
//!
//! The barriers come in two kinds ([`Handshake`]):
//! * `Fences`: a `SeqCst` fence on both sides (`lock or` on x86): portable, and what the loom
//!   model checks; every push and pop pays one.
//! * `Membarrier` (Linux, the default there): the changer's barrier is only a compiler fence,
//!   and the waiter, about to park, calls `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which
//!   makes every running thread of the process pass a full memory barrier before it returns
//!   (a thread that is not running passes one when it is switched out). That gives the same
//!   two-sided guarantee (if the changer's store comes before that barrier point the waiter's
//!   look sees it; if after, so does its load of the state, which sees the waiter's store), so
//!   the cost moves from every message to every park, which is already a system call. The
//!   same asymmetric pair is what folly's `asymmetricLightBarrier` / `asymmetricHeavyBarrier`,
//!   liburcu and hazard-pointer schemes use. Its price: each park interrupts (an IPI) the
//!   other cores that are running threads of this process, for a few microseconds.

use std::time::{Duration, Instant};

use crate::sync::{AtomicU64, Mutex, Thread, fence, spin_loop, thread};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::compiler_fence;

/// The barrier pair that makes parking safe (see the module docs). Chosen per queue at
/// [`crate::channel_with`]; both ends use the queue's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Handshake {
    /// A `SeqCst` fence after every push and pop, and before a park.
    Fences,
    /// Linux `membarrier` before a park, nothing but a compiler fence after pushes and pops.
    /// Where it is not available (another OS, a kernel before 4.14) the queue uses fences.
    #[default]
    Membarrier,
}

#[cfg(all(target_os = "linux", not(loom)))]
mod membarrier {
    const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    /// Registers the process (once) for expedited private barriers; false if the kernel
    /// refuses.
    pub(crate) fn available() -> bool {
        static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *OK.get_or_init(|| unsafe { libc::syscall(libc::SYS_membarrier, REGISTER_PRIVATE_EXPEDITED, 0, 0) } == 0)
    }

    pub(crate) fn barrier() {
        // Cannot fail once registered (`available` was true for this queue).
        let r = unsafe { libc::syscall(libc::SYS_membarrier, PRIVATE_EXPEDITED, 0, 0) };
        debug_assert_eq!(r, 0, "membarrier");
    }
}

impl Handshake {
    /// What a new queue asking for `self` gets: membarrier only where the kernel has it.
    pub(crate) fn resolve(self) -> Handshake {
        #[cfg(all(target_os = "linux", not(loom)))]
        if self == Handshake::Membarrier && membarrier::available() {
            return Handshake::Membarrier;
        }
        Handshake::Fences
    }
}

/// The changer's barrier, after every publication (`asymmetric`: the queue uses membarrier).
#[inline(always)]
pub(crate) fn light_barrier(asymmetric: bool) {
    if asymmetric {
        // Keeps the compiler from moving the load of the waiter's state above the store
        // before it; the processor is handled by the waiter's membarrier.
        compiler_fence(SeqCst);
    } else {
        fence(SeqCst);
    }
}

/// The waiter's barrier, before its last look (also used by a consumer's close).
pub(crate) fn heavy_barrier(asymmetric: bool) {
    fence(SeqCst);
    #[cfg(all(target_os = "linux", not(loom)))]
    if asymmetric {
        membarrier::barrier();
    }
    let _ = asymmetric;
}

/// How long a waiting end spins before it parks, unless set otherwise (`set_spin`).
///
/// A park costs the other end a wake-up (a system call) when it next writes or reads, and on
/// a virtual machine the parked thread takes long to run again; spinning through that keeps
/// both ends awake while messages flow. 50 us outlasts a virtual machine's wake-up latency, so
/// a hand-over while messages flow never waits for a wake-up; a caller with other needs sets
/// its own budget.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(50);

/// Spin-loop hints between two reads of the clock, each followed by a yield so that a thread
/// sharing the core still runs. More hints per check read the clock less often, but overshoot
/// the spin budget further and keep a thread sharing the core waiting longer.
const HINTS_PER_CHECK: u32 = 256;

/// Spin-loop hints (with their looks) before a spin first reads the clock: a microsecond or two.
const HINTS_BEFORE_CLOCK: u32 = 32;

/// How many spin-loop hints a waiting end lets pass between two looks at the other end's
/// index, by default, for a queue of `capacity`.
///
/// Each look pulls the cache line the other end writes on every message, so looking as often
/// as possible costs the other end a cache miss per message. Waiting a little lets several
/// messages (or free slots) gather and be picked up with one miss. The wait grows with the
/// room there is to gather into: none at capacity 1, where the other end waits after one
/// message and a hand-over must be seen at once; 2 hints per extra slot, at most 32, so that a
/// gathering wait stays under about a microsecond.
pub fn default_settle(capacity: usize) -> u32 {
    (2 * capacity.saturating_sub(1)).min(32) as u32
}

/// How an end looks while it spins (see `set_spin`, `set_settle`, `set_yield_each_look`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spin {
    pub(crate) budget: Duration,
    pub(crate) settle: u32,
    pub(crate) yield_each_look: bool,
}

impl Spin {
    pub(crate) fn new(capacity: usize) -> Self {
        Spin {
            budget: DEFAULT_SPIN,
            settle: default_settle(capacity),
            yield_each_look: false,
        }
    }
}

/// Looks at `ready` until it holds (true) or the budget has passed (false), with `settle` hints
/// before each look, yielding every [`HINTS_PER_CHECK`] hints, or after every look with
/// `yield_each_look`. A zero budget looks once.
#[inline]
pub(crate) fn spin_until(spin: Spin, ready: &mut impl FnMut() -> bool) -> bool {
    if spin.budget.is_zero() || cfg!(loom) {
        // Under loom every interleaving is explored anyway; spinning only grows the search.
        return ready();
    }
    let looks = if spin.yield_each_look {
        1
    } else {
        (HINTS_PER_CHECK / spin.settle.max(1)).max(1)
    };
    // Most waits on a busy queue end within a few looks: those read no clock (a read costs
    // about as much as a hand-over, 30-40 ns on a VM) and the budget starts after them. An end
    // that yields after every look shares its core and pays a system call per look anyway.
    if !spin.yield_each_look {
        for _ in 0..(HINTS_BEFORE_CLOCK / spin.settle.max(1)).max(1) {
            for _ in 0..spin.settle.max(1) {
                spin_loop();
            }
            if ready() {
                return true;
            }
        }
    }
    let start = Instant::now();
    loop {
        for _ in 0..looks {
            for _ in 0..spin.settle.max(1) {
                spin_loop();
            }
            if ready() {
                return true;
            }
        }
        if start.elapsed() >= spin.budget {
            return false;
        }
        thread::yield_now();
    }
}

/// A flag that ends the waits of every end it is set on (`Producer::set_halt`,
/// `Consumer::set_halt`), for a runtime that must be able to end its threads whatever they
/// wait for. Nothing polls it: whoever sets it then unparks every thread that may wait on
/// such an end ([`std::thread::Thread::unpark`]), and the waiting end, woken, looks at it.
/// The flag is set before the unpark, so a wait that looked just before the flag was set
/// still wakes (an unpark before a park makes the park return at once).
pub type Halt = std::sync::Arc<std::sync::atomic::AtomicBool>;

/// Whether `halt` is there and set.
#[inline]
pub(crate) fn halted(halt: Option<&Halt>) -> bool {
    halt.is_some_and(|h| h.load(std::sync::atomic::Ordering::Acquire))
}

/// One direction's parking spot: the consumer's (waiting for data) or the producer's (waiting
/// for room). Each lives on its own cache line.
///
/// `state` is written only by the waiting end: even while it is not parked, odd while it is,
/// and moved to a new odd value each time it is about to park. The end that wakes it keeps
/// the last value it woke ([`WakeMark`]), so only the first change after a park pays for the
/// unpark, the changes that follow while the parked end is still waking up cost one load each,
/// and nobody but the waiter writes the flag (no read-modify-write on it).
#[derive(Debug, Default)]
pub(crate) struct Waiter {
    state: AtomicU64,
    thread: Mutex<Option<Thread>>,
}

/// The waking end's note of the last park it woke (kept in that end, not shared).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct WakeMark(u64);

impl Waiter {
    /// Wakes the end parked here, if any. The caller must have made its change to the queue
    /// and then issued the queue's [`light_barrier`] (or a fence).
    #[inline]
    pub(crate) fn wake(&self, mark: &mut WakeMark) {
        // Acquire pairs with the Release in `park_until`: the thread handle stored before the
        // state is then visible.
        let state = self.state.load(Acquire);
        if state & 1 == 1 && state != mark.0 {
            mark.0 = state;
            self.unpark();
        }
    }

    #[cold]
    #[inline(never)]
    fn unpark(&self) {
        // Unparked outside the lock, so that the woken end never finds it held.
        let thread = self.thread.lock().unwrap().clone();
        if let Some(thread) = thread {
            thread.unpark();
        }
    }
}

/// Parks the calling thread until `ready()` holds, registered on every waiter `waiters()`
/// yields (one for a single queue, several for [`crate::wait_any`]). `ready` must only become
/// true through changes that are followed by a barrier and a [`Waiter::wake`]; `asymmetric`:
/// one of the queues uses membarrier.
pub(crate) fn park_until<'a, I>(waiters: impl Fn() -> I, asymmetric: bool, mut ready: impl FnMut() -> bool)
where
    I: Iterator<Item = &'a Waiter>,
{
    // Registered anew each time: an end may have moved to another thread since it last parked.
    let me = thread::current();
    for w in waiters() {
        *w.thread.lock().unwrap() = Some(me.clone());
    }
    loop {
        // A new odd value each round: the waker wakes each value once, so a round that parks
        // again after a spurious wake-up is still woken.
        for w in waiters() {
            let s = w.state.load(Relaxed);
            w.state.store(if s & 1 == 1 { s + 2 } else { s + 1 }, Release);
        }
        heavy_barrier(asymmetric);
        if ready() {
            break;
        }
        // A wake-up that came early (or a stray unpark of this thread) makes park return at
        // once; the loop then looks again.
        thread::park();
    }
    for w in waiters() {
        let s = w.state.load(Relaxed);
        w.state.store(s + 1, Relaxed); // even: not parked
    }
}
