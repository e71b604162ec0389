//! C messages (`smx_msg_t`): creation, copies, destruction, and how they travel as
//! [`Message`]s.
//!
//! A message a C box writes travels as the [`Message`] itself, owning the `smx_msg_t` through a
//! foreign payload ([`C_MSG`]): no conversion and no allocation between two C boxes, and the
//! runtime copies it with its own `copy` function (fan-out, a decoupled input's latest value
//! read again) and frees it with its `destroy` function wherever it drops it. A Rust box reading
//! it sees `data[..size]` without a copy. A message from a Rust box that a C box reads becomes a
//! new `smx_msg_t` holding a `malloc`ed copy of the bytes, with the default functions.

use std::cell::Cell;
use std::ffi::{CStr, c_char, c_void};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use smx_box::{ForeignVTable, Message};

use crate::abi::{CopyFn, DestroyFn, SmxMsg, UnpackFn};
use crate::home;

/// How the runtime sees a C message inside a [`Message`].
pub static C_MSG: ForeignVTable = ForeignVTable {
    bytes: foreign_bytes,
    clone: foreign_clone,
    drop: foreign_drop,
};

/// Messages created less messages destroyed by threads that have exited. Each thread keeps
/// its own balance ([`BALANCE`]) and adds it here when it exits, so that counting costs no
/// shared cache line per message (a producer creates, its consumer destroys).
static EXITED: AtomicI64 = AtomicI64::new(0);

struct Balance(Cell<i64>);

impl Drop for Balance {
    fn drop(&mut self) {
        EXITED.fetch_add(self.0.get(), Ordering::Relaxed);
    }
}
/// Message ids are handed out in blocks per thread, so that creating a message never contends
/// on one counter shared by every thread.
static NEXT_ID_BLOCK: AtomicU64 = AtomicU64::new(0);
const ID_BLOCK: u64 = 1 << 16;

thread_local! {
    static IDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    static BALANCE: Balance = const { Balance(Cell::new(0)) };
}

fn count(delta: i64) {
    if BALANCE.try_with(|b| b.0.set(b.0.get() + delta)).is_err() {
        // The thread is exiting and its balance is already added up.
        EXITED.fetch_add(delta, Ordering::Relaxed);
    }
}

/// C messages alive now (created or copied and not yet destroyed), counting this thread and
/// every thread that has exited: after a run, when the net threads are gone, this is what
/// leaked (0 when everything was freed).
pub fn alive() -> i64 {
    EXITED.load(Ordering::Relaxed) + BALANCE.try_with(|b| b.0.get()).unwrap_or(0)
}

fn next_id() -> u64 {
    IDS.with(|ids| {
        let (mut next, mut end) = ids.get();
        if next == end {
            next = NEXT_ID_BLOCK.fetch_add(ID_BLOCK, Ordering::Relaxed);
            end = next + ID_BLOCK;
        }
        ids.set((next + 1, end));
        next
    })
}

/// The default copy function: `malloc(size)` and `memcpy` (a shallow copy of the bytes).
///
/// # Safety
/// `data` must point to `size` readable bytes (or `size` be 0).
pub unsafe extern "C" fn default_copy(data: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: plain allocation; at least one byte so that a copy of an empty payload is not NULL.
    let copy = unsafe { libc::malloc(size.max(1)) };
    if !copy.is_null() && size > 0 && !data.is_null() {
        // SAFETY: both regions hold `size` bytes and do not overlap.
        unsafe { ptr::copy_nonoverlapping(data as *const u8, copy as *mut u8, size) };
    }
    copy
}

/// The default destroy function: `free`.
///
/// # Safety
/// `data` must come from `malloc` (or be NULL).
pub unsafe extern "C" fn default_destroy(data: *mut c_void) {
    // SAFETY: the caller's contract.
    unsafe { libc::free(data) }
}

/// Whether `f` is plain `free` (the default or the C library's own), which may run on any
/// thread: then the payload goes back to the thread that made the message ([`home`]).
fn frees(f: DestroyFn) -> bool {
    f as usize == default_destroy as DestroyFn as usize || f as usize == libc::free as DestroyFn as usize
}

/// The default unpack function: the payload itself.
///
/// # Safety
/// None: the pointer is returned as it is.
pub unsafe extern "C" fn default_unpack(data: *mut c_void) -> *mut c_void {
    data
}

/// `smx_msg_t` structs a thread keeps for reuse, and full magazines of them handed between
/// threads: in a pipeline the producer creates every message and the consumer frees it, and
/// with the C library's allocator each such pair is a cross-thread free and an allocation that
/// takes it back, both on a cache line the two threads share. With magazines the two threads
/// meet at [`DEPOT`] once per [`MAGAZINE`] messages.
const MAGAZINE: usize = 128;
/// At most this many full magazines wait in the depot; beyond that they are freed.
const DEPOT_MAX: usize = 64;

struct Magazine(Vec<*mut SmxMsg>);

// SAFETY: the pointers are free structs nobody else refers to.
unsafe impl Send for Magazine {}

impl Magazine {
    fn free_all(self) {
        for p in self.0 {
            // SAFETY: a free struct made by Box::into_raw in `alloc_struct`.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

static DEPOT: std::sync::Mutex<Vec<Magazine>> = std::sync::Mutex::new(Vec::new());

struct Cache(std::cell::RefCell<Vec<*mut SmxMsg>>);

impl Drop for Cache {
    fn drop(&mut self) {
        let mine = Magazine(std::mem::take(self.0.get_mut()));
        give_back(mine);
    }
}

fn give_back(magazine: Magazine) {
    if magazine.0.is_empty() {
        return;
    }
    let mut depot = DEPOT.lock().unwrap_or_else(|e| e.into_inner());
    if depot.len() < DEPOT_MAX {
        depot.push(magazine);
    } else {
        drop(depot);
        magazine.free_all();
    }
}

thread_local! {
    static CACHE: Cache = const { Cache(std::cell::RefCell::new(Vec::new())) };
}

fn alloc_struct(msg: SmxMsg) -> *mut SmxMsg {
    let reused = CACHE
        .try_with(|c| {
            let mut free = c.0.borrow_mut();
            if free.is_empty()
                && let Some(full) = DEPOT.lock().unwrap_or_else(|e| e.into_inner()).pop()
            {
                *free = full.0;
            }
            free.pop()
        })
        .ok()
        .flatten();
    match reused {
        Some(p) => {
            // SAFETY: a free struct of ours; every field is written.
            unsafe { p.write(msg) };
            p
        }
        None => Box::into_raw(Box::new(msg)),
    }
}

/// # Safety
/// `p` must be a struct made by `alloc_struct` that nobody uses any more.
unsafe fn free_struct(p: *mut SmxMsg) {
    let kept = CACHE.try_with(|c| {
        let mut free = c.0.borrow_mut();
        if free.len() >= MAGAZINE {
            let full = std::mem::replace(&mut *free, Vec::with_capacity(MAGAZINE));
            give_back(Magazine(full));
        }
        free.push(p);
    });
    if kept.is_err() {
        // The thread is exiting.
        // SAFETY: the caller's contract.
        drop(unsafe { Box::from_raw(p) });
    }
}

/// A new message owning `data`; `None` selects a default function.
pub fn create(
    data: *mut c_void,
    size: usize,
    copy: Option<CopyFn>,
    destroy: Option<DestroyFn>,
    unpack: Option<UnpackFn>,
    seq: u64,
) -> *mut SmxMsg {
    count(1);
    let destroy = destroy.unwrap_or(default_destroy);
    alloc_struct(SmxMsg {
        id: next_id(),
        type_: ptr::null_mut(),
        prevent_backup: false,
        data,
        size: size.min(i32::MAX as usize) as i32,
        copy: Some(copy.unwrap_or(default_copy)),
        destroy: Some(destroy),
        unpack: Some(unpack.unwrap_or(default_unpack)),
        seq,
        sent_ns: smx_box::now_ns(),
        reserved: if frees(destroy) { home::tag() } else { ptr::null_mut() },
    })
}

/// The payload size as `size_t` (a negative `size` a box wrote counts as 0).
fn size_of(msg: &SmxMsg) -> usize {
    msg.size.max(0) as usize
}

/// A deep copy made with `msg.copy`; NULL when the copy function fails for a non-empty payload.
///
/// # Safety
/// `msg` must be a live message made by this module.
pub unsafe fn copy(msg: *const SmxMsg) -> *mut SmxMsg {
    // SAFETY: the caller's contract.
    let m = unsafe { &*msg };
    let size = size_of(m);
    let data = match (m.copy, m.data.is_null()) {
        (_, true) => ptr::null_mut(),
        // SAFETY: the message's own copy function for its own payload.
        (Some(f), false) => unsafe { f(m.data, size) },
        // SAFETY: as above, with the default.
        (None, false) => unsafe { default_copy(m.data, size) },
    };
    if data.is_null() && !m.data.is_null() && size > 0 {
        return ptr::null_mut();
    }
    let copied = create(data, size, m.copy, m.destroy, m.unpack, m.seq);
    // SAFETY: `copied` is new and ours; `msg.type_` is NULL or a C string we made.
    unsafe {
        (*copied).size = m.size;
        (*copied).prevent_backup = m.prevent_backup;
        (*copied).sent_ns = m.sent_ns;
        if !m.type_.is_null() {
            (*copied).type_ = libc::strdup(m.type_);
        }
    }
    copied
}

/// Frees a message; with `deep`, its payload first (with `msg.destroy`).
///
/// # Safety
/// `msg` must be NULL or a live message made by this module, not used afterwards.
pub unsafe fn destroy(msg: *mut SmxMsg, deep: bool) {
    if msg.is_null() {
        return;
    }
    // SAFETY: the caller's contract: we own it now.
    let m = unsafe { &*msg };
    if deep && !m.data.is_null() {
        match m.destroy {
            // SAFETY: `free` for a payload from `malloc`, on whichever thread.
            Some(f) if frees(f) => unsafe { home::free(m.reserved, m.data) },
            // SAFETY: the message's own destroy function for its own payload.
            Some(f) => unsafe { f(m.data) },
            // SAFETY: the default for a payload without one.
            None => unsafe { home::free(m.reserved, m.data) },
        }
    }
    if !m.type_.is_null() {
        // SAFETY: made by strdup.
        unsafe { libc::free(m.type_ as *mut c_void) };
    }
    // SAFETY: nobody uses it any more (the caller's contract).
    unsafe { free_struct(msg) };
    count(-1);
}

/// Sets (a copy of) `type_` as the message's type name; NULL clears it.
///
/// # Safety
/// `msg` must be a live message made by this module, `type_` NULL or a C string.
pub unsafe fn set_type(msg: *mut SmxMsg, type_: *const c_char) -> bool {
    // SAFETY: the caller's contract.
    let m = unsafe { &mut *msg };
    let new = if type_.is_null() {
        ptr::null_mut()
    } else {
        // SAFETY: a C string.
        let copy = unsafe { libc::strdup(type_) };
        if copy.is_null() {
            return false;
        }
        copy
    };
    if !m.type_.is_null() {
        // SAFETY: made by strdup.
        unsafe { libc::free(m.type_ as *mut c_void) };
    }
    m.type_ = new;
    true
}

/// The message a C box writes, as a [`Message`] that owns it.
///
/// # Safety
/// `msg` must be a live message made by this module; the result owns it.
#[inline]
pub unsafe fn into_message(msg: NonNull<SmxMsg>) -> Message {
    // SAFETY: the caller's contract.
    let (seq, sent_ns) = unsafe { ((*msg.as_ptr()).seq, (*msg.as_ptr()).sent_ns) };
    // SAFETY: `C_MSG` handles exactly these objects; a message may move between threads.
    unsafe { Message::from_foreign(seq, sent_ns, msg.cast(), &C_MSG) }
}

/// A message a C box reads: the C message it carries, or a new one holding a copy of the bytes
/// of a message from a Rust box. NULL when out of memory (the message is dropped).
#[inline]
pub fn from_message(message: Message) -> *mut SmxMsg {
    let (seq, sent_ns) = (message.seq, message.sent_ns);
    match message.into_foreign(&C_MSG) {
        Ok(ptr) => {
            let msg = ptr.as_ptr() as *mut SmxMsg;
            // SAFETY: ours, and owned by the caller now.
            unsafe {
                (*msg).seq = seq;
                (*msg).sent_ns = sent_ns;
            }
            msg
        }
        Err(message) => {
            let bytes = message.payload();
            // SAFETY: a copy of the bytes into a new allocation.
            let data = unsafe { default_copy(bytes.as_ptr() as *mut c_void, bytes.len()) };
            if data.is_null() {
                return ptr::null_mut();
            }
            let msg = create(data, bytes.len(), None, None, None, seq);
            // SAFETY: new and ours.
            unsafe { (*msg).sent_ns = sent_ns };
            msg
        }
    }
}

unsafe fn foreign_bytes(ptr: NonNull<()>) -> (*const u8, usize) {
    // SAFETY: `C_MSG` only ever holds our messages.
    let m = unsafe { &*(ptr.as_ptr() as *const SmxMsg) };
    (m.data as *const u8, size_of(m))
}

unsafe fn foreign_clone(ptr: NonNull<()>) -> NonNull<()> {
    let msg = ptr.as_ptr() as *const SmxMsg;
    // SAFETY: a live message of ours.
    let copied = unsafe { copy(msg) };
    if let Some(copied) = NonNull::new(copied) {
        return copied.cast();
    }
    // The box's copy function failed: this reader gets an empty message (there is no way to
    // refuse a copy here), and the failure is logged.
    // SAFETY: a live message of ours.
    let (seq, sent_ns, type_) = unsafe { ((*msg).seq, (*msg).sent_ns, (*msg).type_) };
    let kind = if type_.is_null() {
        String::new()
    } else {
        // SAFETY: a C string we made.
        format!(" of type '{}'", unsafe { CStr::from_ptr(type_) }.to_string_lossy())
    };
    log::error!("the copy function of message {seq}{kind} failed: a reader gets an empty message instead");
    let empty = create(ptr::null_mut(), 0, None, None, None, seq);
    // SAFETY: new and ours.
    unsafe { (*empty).sent_ns = sent_ns };
    // SAFETY: `create` never gives NULL.
    unsafe { NonNull::new_unchecked(empty) }.cast()
}

unsafe fn foreign_drop(ptr: NonNull<()>) {
    // SAFETY: `C_MSG` only ever holds our messages, and drops each once.
    unsafe { destroy(ptr.as_ptr() as *mut SmxMsg, true) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_msg(bytes: &[u8]) -> *mut SmxMsg {
        // SAFETY: a copy into a new allocation.
        let data = unsafe { default_copy(bytes.as_ptr() as *mut c_void, bytes.len()) };
        create(data, bytes.len(), None, None, None, 7)
    }

    #[test]
    fn messages_round_trip_through_a_message_without_a_copy() {
        let before = alive();
        let m = bytes_msg(b"hello");
        let message = unsafe { into_message(NonNull::new(m).unwrap()) };
        assert_eq!(message.payload(), b"hello");
        assert_eq!(message.seq, 7);
        let copy = message.clone();
        assert_eq!(alive(), before + 2);
        let back = from_message(message);
        assert_eq!(back, m, "the same C message comes back");
        drop(copy);
        unsafe { destroy(back, true) };
        assert_eq!(alive(), before);
    }

    #[test]
    fn a_rust_message_becomes_a_copy_with_the_defaults() {
        let before = alive();
        let m = from_message(Message::new(3, 4, b"abc"));
        let r = unsafe { &*m };
        assert_eq!((r.seq, r.sent_ns, r.size), (3, 4, 3));
        assert_eq!(unsafe { std::slice::from_raw_parts(r.data as *const u8, 3) }, b"abc");
        assert!(r.copy.is_some() && r.destroy.is_some() && r.unpack.is_some());
        unsafe { destroy(m, true) };
        assert_eq!(alive(), before);
    }

    #[test]
    fn copies_keep_type_and_flags_and_get_new_ids() {
        let m = bytes_msg(b"xy");
        unsafe {
            assert!(set_type(m, c"point".as_ptr()));
            (*m).prevent_backup = true;
            let c = copy(m);
            assert_ne!((*c).id, (*m).id);
            assert_eq!(CStr::from_ptr((*c).type_), c"point");
            assert!((*c).prevent_backup);
            assert_ne!((*c).data, (*m).data);
            destroy(c, true);
            destroy(m, true);
        }
    }
}
