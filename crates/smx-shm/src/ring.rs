//! The ring in the mapping: its header, its slots, and how each side waits for the other.
//!
//! Positions count from 0 and never wrap (64 bits); position `p` lives in slot `p % capacity`,
//! in lap `p / capacity`. Each slot's `stamp` says whose it is: `2 * lap` while it is free for
//! the position of that lap, `2 * lap + 1` once that position is published. So a side looks at
//! the slots it is about to use and at nothing else: the consumer at the one it takes next, the
//! producer at the ones it writes next (a run of up to 16 at once, each free until it writes
//! it, so that it waits for the other core once per run, not once per message), and a message
//! crosses between the cores as the one line of its slot, as in the in-process queue, instead
//! of that line and the line of a shared index that the other side writes after every
//! message. Slots are released out of order when
//! a payload read in place is dropped later than a copied one, on any thread: each release
//! stamps its own slot free for the next lap, and the producer, which takes the slots in
//! order, waits at the first one still held. The consumer also counts what it took (`taken`),
//! on a line of its own that the producer reads only at the end, for the books.
//!
//! A stop ends the producer while the consumer's process may run on and take more (a
//! supervisor stops the processes upstream first). So that each message is booked once, taken
//! or left, the producer then cuts the ring ([`Ident::cut`]) and waits for the consumer's
//! answer ([`ConsumerLine::answer`]): the consumer looks at the cut before it takes each
//! message, and once it finds it, it takes nothing more and answers with the count of what it
//! took. Every message it handed on was counted before that look, in its own program order, so
//! the answer is exact without any ordering between the two sides per message: the cut word
//! stays in the consumer's cache, read, until the producer writes it once. The consumer also
//! answers from its wait for data and when its stream ends or it closes. A consumer that does
//! not answer within [`ANSWER_WAIT`] (its process frozen while it hands a message on) leaves
//! the producer its last count of `taken`, and the producer's books say the cut went
//! unanswered: the message in its hands may then be counted as taken and as left.
//!
//! Waiting: a side that finds nothing to do spins briefly (offering its core now and then, to
//! a peer that may share it, and after every look when the peer's thread last waited on this
//! very CPU: see [`sharing_a_core`]), then announces that it sleeps and sleeps on a futex word
//! (shared, not `FUTEX_PRIVATE`, so it works across processes) in slices of [`WAIT_SLICE`],
//! checking between slices whether its peer ended or died and whether the run stops. The other
//! side wakes it only when it announced that it sleeps, so a busy link makes no system call
//! per message.
//!
//! That announcement and the other side's look at it are a store-barrier-load pair on each
//! side (Dekker): either the sleeper's last look sees the message (or the free slot), or the
//! other side sees the announcement. Where the kernel has it, a side's process registers for
//! `membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)` and says so in its [`SleepLine`]; once both
//! sides did, a side's barrier after each message is only a compiler fence, and the side about
//! to sleep calls that membarrier, which makes every running thread of the registered
//! processes pass a full barrier before it returns. The cost moves from every message (a
//! `SeqCst` fence is a locked instruction) to every sleep, which is a system call already; it
//! is the in-process queue's handshake (`smx_spsc`), across processes. While either side could
//! not register (an old kernel, a sandbox that filters the call), both keep their fences.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// "smxshm" and a format byte: the header's ready word, written last by the creator.
pub const MAGIC: u64 = u64::from_le_bytes(*b"smxshm\x00\x01");
/// The layout's version, checked by the consumer. From 7 on each side holds a shared lock on
/// the file while it maps it (`segment::remove_stale_links` sweeps only files of this version).
pub const VERSION: u64 = 7;

/// Longest sleep between two checks of the peer's state, its life and the run's stop.
pub const WAIT_SLICE: Duration = Duration::from_millis(50);
/// Polls of the ring before a side sleeps: enough to catch a peer that answers within a few
/// microseconds without a system call, little enough not to hold a shared core for long.
const SPIN: u32 = 2_000;
/// Polls between two offers of the core while spinning: a peer that shares this core (two
/// processes' threads on one core) runs then, instead of after this side's spin or slice.
const POLLS_PER_YIELD: u32 = 64;

pub const PRODUCER_RUNNING: u32 = 1;
pub const PRODUCER_ENDED: u32 = 2;
pub const PRODUCER_FAILED: u32 = 3;
pub const CONSUMER_RUNNING: u32 = 1;
pub const CONSUMER_CLOSED: u32 = 2;
/// [`Ident::cut`]: the producer has not cut the ring.
pub const CUT_NONE: u64 = 0;
/// [`Ident::cut`]: the producer cut the ring and waits for the consumer's answer.
pub const CUT_PENDING: u64 = u64::MAX;
/// How long a producer that cut the ring waits for the consumer's answer: a consumer that
/// runs answers at its next look, before its next message or from its wait; one that does
/// not answer by then is frozen, and the producer settles its books without the answer.
pub const ANSWER_WAIT: Duration = Duration::from_millis(300);

/// The [`ConsumerLine::answer`] of a consumer that took `taken` positions (0 is no answer).
pub fn answer_word(taken: u64) -> u64 {
    taken + 1
}

/// The positions a consumer took, per its answer (not 0).
pub fn answered(word: u64) -> u64 {
    word - 1
}

/// The identity line: written once by the creator (the magic last), the pids and states later.
#[repr(C, align(64))]
pub struct Ident {
    pub magic: AtomicU64,
    pub version: AtomicU64,
    pub capacity: AtomicU64,
    pub max_payload: AtomicU64,
    pub producer_pid: AtomicU32,
    pub consumer_pid: AtomicU32,
    pub producer_state: AtomicU32,
    pub consumer_state: AtomicU32,
    /// Written by the producer only on a stop, once: [`CUT_NONE`], then [`CUT_PENDING`].
    pub cut: AtomicU64,
}

/// The producer's wake-up word.
#[repr(C, align(64))]
pub struct ProducerLine {
    /// Bumped to wake the consumer (data, an end).
    pub data_word: AtomicU32,
}

/// What the consumer writes: per message the positions it took, and once its answer.
#[repr(C, align(64))]
pub struct ConsumerLine {
    pub taken: AtomicU64,
    /// 0 until the consumer takes nothing more (it found the cut, its stream ended, or it
    /// closed); then the [`answer_word`] of the positions it took, final.
    pub answer: AtomicU64,
}

/// What releases write, from any thread of the consumer's process.
#[repr(C, align(64))]
pub struct ReleaseLine {
    /// Bumped to wake the producer (space, a close).
    pub space_word: AtomicU32,
}

/// A side's announcement that it sleeps, and the CPU it last waited on: written only around
/// a wait and read by the other side after each message, so on a line of its own it stays in
/// both caches while the link is busy.
#[repr(C, align(64))]
pub struct SleepLine {
    pub sleeps: AtomicU32,
    /// The CPU this side's thread last began a wait on, plus one (0: none yet).
    pub cpu: AtomicU32,
    /// 1: this side's process is registered for global expedited membarriers and can issue
    /// them: it publishes without a fence once the other side can too, and the other side
    /// calls a membarrier before it sleeps. Set once, before this side first touches the ring,
    /// and never cleared.
    pub light: AtomicU32,
}

impl SleepLine {
    /// Marks this side's barrier as light when its process could register for membarriers
    /// and issue one; whether it is.
    pub fn announce_light(&self) -> bool {
        let light = membarrier::registered();
        self.light.store(u32::from(light), Ordering::SeqCst);
        // A full barrier on every processor: the loads of the waits that follow (the other
        // side's announcement that it sleeps) come after this store.
        std::sync::atomic::fence(Ordering::SeqCst);
        light
    }
}

/// The global expedited membarrier, which reaches the threads of every process that registered
/// for it (the other side of a link is another process).
mod membarrier {
    const QUERY: libc::c_int = 0;
    const GLOBAL_EXPEDITED: libc::c_int = 1 << 1;
    const REGISTER_GLOBAL_EXPEDITED: libc::c_int = 1 << 2;

    /// Registers this process (once) and issues one barrier; false where the kernel lacks the
    /// commands or refuses either (a sandbox that filters the call).
    pub fn registered() -> bool {
        static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *OK.get_or_init(|| {
            // SAFETY: membarrier takes no pointers; an unknown command only fails.
            let commands = unsafe { libc::syscall(libc::SYS_membarrier, QUERY, 0, 0) };
            let wanted = (GLOBAL_EXPEDITED | REGISTER_GLOBAL_EXPEDITED) as libc::c_long;
            commands >= 0
                && commands & wanted == wanted
                // SAFETY: as above.
                && unsafe { libc::syscall(libc::SYS_membarrier, REGISTER_GLOBAL_EXPEDITED, 0, 0) } == 0
                && barrier()
        })
    }

    /// A full barrier on every running thread of the registered processes; whether it was
    /// issued. A side whose process issued one when it announced itself light issues them
    /// later too (the same process, the same filters).
    pub fn barrier() -> bool {
        // SAFETY: as above.
        unsafe { libc::syscall(libc::SYS_membarrier, GLOBAL_EXPEDITED, 0, 0) == 0 }
    }
}

/// Whether this thread and the other side's last began a wait on the same CPU, noting this
/// thread's CPU in `mine` for the other side. Two processes' threads on one core take turns:
/// while one polls, the other cannot run to answer, so a wait there offers the core at once
/// instead of spinning. A thread that moved between CPUs costs one wait of the wrong kind.
pub fn sharing_a_core(mine: &SleepLine, peer: &SleepLine) -> bool {
    // SAFETY: no arguments; it reads the calling thread's CPU.
    let cpu = unsafe { libc::sched_getcpu() };
    let Ok(cpu) = u32::try_from(cpu) else {
        return false;
    };
    let cpu = cpu + 1;
    if mine.cpu.load(Ordering::Relaxed) != cpu {
        mine.cpu.store(cpu, Ordering::Relaxed);
    }
    peer.cpu.load(Ordering::Relaxed) == cpu
}

#[repr(C)]
pub struct Header {
    pub ident: Ident,
    pub producer: ProducerLine,
    pub consumer: ConsumerLine,
    pub release: ReleaseLine,
    /// The producer sleeps waiting for space (or for the consumer to drain an ended stream).
    pub producer_sleeps: SleepLine,
    /// The consumer sleeps waiting for data.
    pub consumer_sleeps: SleepLine,
}

impl std::ops::Deref for Header {
    type Target = Ident;
    fn deref(&self) -> &Ident {
        &self.ident
    }
}

/// One slot's descriptor. Atomics, as the other process reads them; ordered by `stamp`.
#[repr(C, align(32))]
pub struct Descriptor {
    pub seq: AtomicU64,
    /// Creation time on `CLOCK_MONOTONIC` (the same in every process of the machine); 0: none.
    pub created_mono_ns: AtomicU64,
    pub len: AtomicU64,
    /// Whose the slot is: [`free_stamp`] or [`published_stamp`] of a position.
    pub stamp: AtomicU64,
}

/// The stamp of a slot free for position `pos` (all zero bytes: free for the first lap).
#[inline(always)]
pub fn free_stamp(pos: u64, capacity: u64) -> u64 {
    2 * (pos / capacity)
}

/// The stamp of a slot that holds the published position `pos`.
#[inline(always)]
pub fn published_stamp(pos: u64, capacity: u64) -> u64 {
    2 * (pos / capacity) + 1
}

/// A side's position with its slot and lap kept beside it, so that a message costs no division
/// (a 64-bit division takes tens of cycles, and each side needs the slot and the stamps of its
/// position several times a message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub pos: u64,
    pub slot: u64,
    lap: u64,
}

impl Cursor {
    pub const START: Cursor = Cursor {
        pos: 0,
        slot: 0,
        lap: 0,
    };

    /// Its slot's stamp while free for this position ([`free_stamp`]).
    #[inline(always)]
    pub fn free(&self) -> u64 {
        2 * self.lap
    }

    /// Its slot's stamp once this position is published ([`published_stamp`]).
    #[inline(always)]
    pub fn published(&self) -> u64 {
        2 * self.lap + 1
    }

    /// The next position of a ring of `capacity` slots.
    #[inline(always)]
    pub fn advance(&mut self, capacity: u64) {
        self.pos += 1;
        self.slot += 1;
        if self.slot == capacity {
            self.slot = 0;
            self.lap += 1;
        }
    }

    /// The slot `ahead` positions on, for a ring of `capacity` slots.
    #[inline(always)]
    pub fn slot_ahead(&self, ahead: u64, capacity: u64) -> u64 {
        let mut slot = self.slot + ahead;
        while slot >= capacity {
            slot -= capacity;
        }
        slot
    }
}

/// Where everything is in the mapping: the header, then one 64-byte slot per position of the
/// ring, side by side, each a [`Descriptor`] and room for a payload of up to [`INLINE`] bytes,
/// then the room of larger payloads, `stride` bytes per position. A small message crosses
/// between the cores as one cache line, and the slots of a ring made for 64 MiB payloads still
/// lie side by side on a few pages; only a larger payload lies elsewhere, page-aligned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub capacity: u64,
    pub max_payload: u64,
    /// Offset of the first slot.
    pub slots: u64,
    /// Offset of the room of larger payloads.
    pub payloads: u64,
    /// Bytes from one position's larger payload to the next (0: every payload fits its slot).
    pub stride: u64,
    pub total: u64,
}

const PAGE: u64 = 4096;
const DESCRIPTOR: u64 = std::mem::size_of::<Descriptor>() as u64;
/// Bytes of a slot: a descriptor and a small payload, one cache line.
const SLOT: u64 = 64;
/// The largest payload kept in its slot.
pub const INLINE: u64 = SLOT - DESCRIPTOR;
/// The smallest slots a ring is shrunk to: below them a link would fail on ordinary messages,
/// and the file system is too small for the channel's length instead.
pub const SHRINK_FLOOR: u64 = 64 * 1024;
/// The most slots a ring has: a channel longer than this is a configuration mistake here.
pub const MAX_CAPACITY: u64 = 1 << 20;

impl Layout {
    pub fn new(capacity: u64, max_payload: u64) -> Result<Layout, String> {
        if capacity == 0 || capacity > MAX_CAPACITY {
            return Err(format!("{capacity} slots: use 1 to {MAX_CAPACITY}"));
        }
        let slots = (std::mem::size_of::<Header>() as u64).next_multiple_of(PAGE);
        let payloads = (slots + capacity * SLOT).next_multiple_of(PAGE);
        let stride = if max_payload > INLINE {
            max_payload
                .checked_next_multiple_of(64)
                .ok_or_else(|| format!("a payload of {max_payload} bytes is more than a mapping holds"))?
        } else {
            0
        };
        let total = stride
            .checked_mul(capacity)
            .and_then(|p| p.checked_add(payloads))
            .filter(|&t| t < (1 << 46))
            .ok_or_else(|| format!("{capacity} slots of {max_payload} bytes is more than a mapping holds"))?;
        Ok(Layout {
            capacity,
            max_payload,
            slots,
            payloads,
            stride,
            total,
        })
    }

    /// Where the descriptor of slot `slot` (below the capacity) lies.
    #[inline(always)]
    pub fn slot_offset(&self, slot: u64) -> usize {
        (self.slots + slot * SLOT) as usize
    }

    /// Where the payload of `len` bytes in slot `slot` lies.
    #[inline(always)]
    pub fn payload_offset(&self, slot: u64, len: usize) -> usize {
        if len as u64 <= INLINE {
            self.slot_offset(slot) + DESCRIPTOR as usize
        } else {
            (self.payloads + slot * self.stride) as usize
        }
    }
}

impl Header {
    /// Writes a new ring's identity; the magic goes last, so a consumer never sees half of it.
    pub fn init(&self, layout: &Layout, creator: u32) {
        self.version.store(VERSION, Ordering::Relaxed);
        self.capacity.store(layout.capacity, Ordering::Relaxed);
        self.max_payload.store(layout.max_payload, Ordering::Relaxed);
        self.producer_pid.store(creator, Ordering::Relaxed);
        self.producer_state.store(PRODUCER_RUNNING, Ordering::Relaxed);
        self.cut.store(CUT_NONE, Ordering::Relaxed);
        self.consumer.answer.store(0, Ordering::Relaxed);
        self.magic.store(MAGIC, Ordering::Release);
    }
}

/// Slots ahead of the one at hand whose cache lines the producer asks for early. Each slot's
/// line was last written by the consumer's release, so the producer's look at its stamp would
/// stall on a transfer between the cores for every message; asked for a few messages early,
/// the transfers overlap instead (the performance page has the figures). The consumer asks
/// for nothing early: a line it fetched before the producer wrote it would only be taken back.
pub const FETCH_AHEAD: u64 = 4;

/// Asks for the line at `at` to write it soon (the producer, for a free slot): the line is
/// taken from the consumer's cache now, so that the stores into it do not wait for that in
/// the store buffer, which holds up every later store of the thread while it is full.
/// `PREFETCHW` runs as a no-op on processors without it; the intrinsic would need a target
/// feature that the default target does not have.
#[inline(always)]
pub fn prefetch_to_write(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults, whatever the address, and it writes
    // no register, memory or flag.
    unsafe {
        std::arch::asm!("prefetchw [{}]", in(reg) at, options(nostack, readonly, preserves_flags));
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Sleeps on `word` while it still holds `seen`, at most `timeout`.
pub fn futex_wait(word: &AtomicU32, seen: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is a live, aligned u32 (in the shared mapping); FUTEX_WAIT without the
    // PRIVATE flag keys on the physical page, so the other process's wake reaches it.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            seen,
            &ts as *const libc::timespec,
            0usize,
            0u32,
        )
    };
}

/// Bumps `word` and wakes whoever sleeps on it.
pub fn futex_wake(word: &AtomicU32) {
    word.fetch_add(1, Ordering::SeqCst);
    // SAFETY: as in `futex_wait`.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            0usize,
            0usize,
            0u32,
        )
    };
}

/// Wakes the side that announced it sleeps on `word`, after a store of what it waits for.
/// `light`: this side announced a light barrier ([`SleepLine::announce_light`]); when the other
/// side did too, it can and will issue the membarrier that stands in for this side's fence.
#[inline(always)]
pub fn wake_if_sleeping(sleeps: &SleepLine, word: &AtomicU32, light: bool) {
    store_then_look(light, sleeps);
    if sleeps.sleeps.load(Ordering::Relaxed) != 0 {
        futex_wake(word);
    }
}

/// The barrier between this side's store and its look at what the other side stores (its
/// half of a store-barrier-load pair). `light`: this side announced a light barrier; when the
/// other side (`peer`) did too, the other side issues a membarrier before it sleeps instead
/// ([`wait_for`]), and here only the compiler is kept from reordering.
#[inline(always)]
pub fn store_then_look(light: bool, peer: &SleepLine) {
    // The other side's flag only ever goes from 0 to 1, and a stale 0 only costs a fence.
    if light && peer.light.load(Ordering::Relaxed) != 0 {
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
    } else {
        std::sync::atomic::fence(Ordering::SeqCst);
    }
}

/// Waits until `ready` says so or `give_up` names a reason (checked between sleeps). While it
/// spins it looks at once and then every `settle` polls; `shared` (the other side's thread is
/// on this core, [`sharing_a_core`]): it offers the core after every look. `peer` is the other
/// side's line: before a sleep this side calls a membarrier when the other side's barrier is
/// light.
pub fn wait_for<R>(
    word: &AtomicU32,
    (sleeps, peer): (&SleepLine, &SleepLine),
    (settle, shared): (u32, bool),
    mut ready: impl FnMut() -> bool,
    mut give_up: impl FnMut() -> Option<R>,
) -> Result<(), R> {
    let (settle, polls_per_yield) = if shared {
        (1, 1)
    } else {
        (settle.max(1), POLLS_PER_YIELD)
    };
    for poll in 1..=SPIN {
        if (poll == 1 || poll % settle == 0) && ready() {
            return Ok(());
        }
        if poll % polls_per_yield == 0 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
    loop {
        let seen = word.load(Ordering::SeqCst);
        sleeps.sleeps.store(1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::SeqCst);
        // Read after the fence: a peer that turns light later follows its store with a full
        // fence, so its later look at this side's announcement sees it.
        if peer.light.load(Ordering::SeqCst) != 0 {
            membarrier::barrier();
        }
        if ready() {
            sleeps.sleeps.store(0, Ordering::Relaxed);
            return Ok(());
        }
        if let Some(why) = give_up() {
            sleeps.sleeps.store(0, Ordering::Relaxed);
            return Err(why);
        }
        futex_wait(word, seen, WAIT_SLICE);
        sleeps.sleeps.store(0, Ordering::Relaxed);
        if ready() {
            return Ok(());
        }
    }
}

/// The other side's process, watched from the moment this side learned its pid: through a
/// pidfd where the kernel gives one, so that after the peer's death a new process given the
/// same pid is not taken for it (a wait would then last until the run's stop); by the pid
/// alone where there is none.
pub struct Peer {
    pid: u32,
    watch: Watch,
}

enum Watch {
    Pidfd(OwnedFd),
    /// The process was gone when this side learned its pid.
    Gone,
    Pid,
}

impl Peer {
    pub fn watch(pid: u32) -> Peer {
        let watch = if pid == 0 || pid > i32::MAX as u32 {
            Watch::Gone
        } else {
            // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
            match std::io::Error::last_os_error().raw_os_error() {
                _ if fd >= 0 => {
                    // SAFETY: a descriptor just opened, owned by nothing else.
                    Watch::Pidfd(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
                }
                Some(libc::ESRCH) => Watch::Gone,
                // An old kernel or a sandbox that filters the call.
                _ => Watch::Pid,
            }
        };
        Peer { pid, watch }
    }

    /// Whether the process still runs; a zombie counts as dead, as in [`peer_alive`].
    pub fn alive(&self) -> bool {
        match &self.watch {
            Watch::Pidfd(fd) => {
                // A pidfd turns readable when its process exits.
                let mut look = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd; a timeout of 0 only looks.
                let ready = unsafe { libc::poll(&mut look, 1, 0) };
                !(ready == 1 && look.revents & libc::POLLIN != 0)
            }
            Watch::Gone => false,
            Watch::Pid => peer_alive(self.pid),
        }
    }
}

/// Whether process `pid` still runs. A process that exited but was not reaped yet (a zombie)
/// counts as dead: it will never touch the ring again.
pub fn peer_alive(pid: u32) -> bool {
    // 0 is no process, and a number above the largest pid (read from a file anyone may have
    // written) would turn negative and name a process group, or every process, to `kill`.
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: signal 0 only checks.
    if unsafe { libc::kill(pid as libc::pid_t, 0) } != 0 {
        return std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses, which may itself hold ')'.
        Ok(stat) => !matches!(
            stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().chars().next()),
            Some(Some('Z' | 'X'))
        ),
        Err(_) => true,
    }
}

/// The monotonic clock of the whole machine, in ns: how creation times cross processes, whose
/// message clocks count from different epochs.
pub fn machine_now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec; CLOCK_MONOTONIC exists everywhere.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// The machine's monotonic clock minus this process's message clock, taken once, so a time
/// that goes out and comes back within one process is the same number.
pub fn clock_offset() -> u64 {
    static OFFSET: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *OFFSET.get_or_init(|| {
        let before = smx_box::now_ns();
        machine_now_ns().wrapping_sub(before)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line() -> SleepLine {
        SleepLine {
            sleeps: AtomicU32::new(0),
            cpu: AtomicU32::new(0),
            light: AtomicU32::new(0),
        }
    }

    /// Runs `f` on a thread pinned to `cpu`.
    fn on_cpu<R: Send>(cpu: usize, f: impl FnOnce() -> R + Send) -> R {
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: a zeroed cpu_set_t is an empty set; one CPU is added to it.
                unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpu, &mut set);
                    assert_eq!(
                        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
                        0
                    );
                }
                f()
            })
            .join()
            .unwrap()
        })
    }

    fn allowed_cpus() -> Vec<usize> {
        // SAFETY: a zeroed cpu_set_t is a valid empty set, filled in by the call.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
                0
            );
            (0..libc::CPU_SETSIZE as usize)
                .filter(|c| libc::CPU_ISSET(*c, &set))
                .collect()
        }
    }

    #[test]
    fn no_process_and_numbers_beyond_any_pid_are_dead() {
        assert!(peer_alive(std::process::id()));
        for pid in [0, i32::MAX as u32 + 1, u32::MAX] {
            assert!(!peer_alive(pid), "{pid}");
        }
    }

    /// A watched process is alive while it runs, and dead from its exit on, before it is
    /// reaped (a zombie) and after.
    #[test]
    fn a_watched_peer_is_dead_from_its_exit_on() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let peer = Peer::watch(child.id());
        assert!(peer.alive());
        child.kill().unwrap();
        // SAFETY: a zeroed siginfo_t for waitid to fill; it waits for the child's exit
        // without reaping it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let waited = unsafe { libc::waitid(libc::P_PID, child.id(), &mut info, libc::WEXITED | libc::WNOWAIT) };
        assert_eq!(waited, 0);
        assert!(!peer.alive(), "a zombie is dead");
        child.wait().unwrap();
        assert!(!peer.alive());
        assert!(!Peer::watch(0).alive() && !Peer::watch(u32::MAX).alive());
    }

    #[test]
    fn a_cursor_keeps_the_slot_and_lap_of_its_position() {
        for capacity in [1u64, 3, 4, 7] {
            let mut cursor = Cursor::START;
            for pos in 0..3 * capacity + 2 {
                assert_eq!((cursor.pos, cursor.slot), (pos, pos % capacity));
                assert_eq!(cursor.free(), free_stamp(pos, capacity));
                assert_eq!(cursor.published(), published_stamp(pos, capacity));
                assert_eq!(cursor.slot_ahead(FETCH_AHEAD, capacity), (pos + FETCH_AHEAD) % capacity);
                cursor.advance(capacity);
            }
        }
    }

    #[test]
    fn two_sides_share_a_core_once_both_waited_on_the_same_cpu() {
        let cpus = allowed_cpus();
        let (producer, consumer) = (line(), line());
        // The peer never waited: nothing is known.
        assert!(!on_cpu(cpus[0], || sharing_a_core(&producer, &consumer)));
        assert!(on_cpu(cpus[0], || sharing_a_core(&consumer, &producer)));
        assert!(on_cpu(cpus[0], || sharing_a_core(&producer, &consumer)));
        if let Some(&other) = cpus.get(1) {
            // The consumer moved to another CPU: neither side shares any more.
            assert!(!on_cpu(other, || sharing_a_core(&consumer, &producer)));
            assert!(!on_cpu(cpus[0], || sharing_a_core(&producer, &consumer)));
        } else {
            println!("one CPU: the case of two CPUs is not run");
        }
    }
}
