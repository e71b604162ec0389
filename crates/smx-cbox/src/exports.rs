//! The 31 functions of `include/smx_abi.h`, exported with C linkage.
//!
//! Every one of them accepts a NULL (or otherwise invalid) handle and then returns its error
//! value, and catches unwinding: a panic in the runtime code behind a call is logged, fails the
//! net (after the C call returns) and the function returns its error value. Nothing unwinds
//! into C.

use std::ffi::{CStr, c_char, c_int, c_long, c_uint, c_ulong, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::{self, NonNull};
use std::time::{Duration, Instant};

use smx_box::io::Io;
use smx_box::{InPort, OutPort, WriteError};

use crate::abi::{CopyFn, DestroyFn, SmxMsg, UnpackFn, err};
use crate::cbox::{Handle, handle};
use crate::msg;

/// The current step's ports, if a step runs.
fn io<'a>(hd: &Handle) -> Option<&'a mut Io<'static>> {
    // SAFETY: set by the step for exactly the duration of the C call.
    unsafe { hd.io.as_mut() }
}

/// Runs `f`, turning a panic into `fallback` and a failure of the net.
#[inline]
fn guard<R>(h: *mut c_void, what: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => {
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            log::error!("{what}: {text}");
            // SAFETY: as for any call; the closure's borrows have ended.
            if let Some(hd) = unsafe { handle(h) } {
                hd.fail(format!("{what} panicked: {text}"));
            }
            fallback
        }
    }
}

fn index(i: c_int, len: usize) -> Option<usize> {
    usize::try_from(i).ok().filter(|&i| i < len)
}

/// Why a read gave nothing.
fn read_error(hd: &Handle, io: &Io<'_>, i: usize) -> i32 {
    if !hd.in_connected[i] {
        // Nothing will ever come: `open` says the net meant it so.
        if hd.inputs[i].open { err::OPEN } else { err::NO_TARGET }
    } else if io.input_ended(InPort(i)) {
        err::NO_TARGET
    } else if hd.inputs[i].decoupled {
        err::UNINITIALISED
    } else if hd.read_timeout[i].is_some() {
        // The firing rule gave up waiting, as the original's timed await does.
        err::TIMEOUT
    } else {
        err::NO_DATA
    }
}

/// Takes the next message of input `in` without blocking (see `include/smx_abi.h`).
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_read(h: *mut c_void, in_: c_int) -> *mut SmxMsg {
    guard(h, "smx_read", ptr::null_mut(), || {
        // SAFETY: the caller's contract.
        let Some(hd) = (unsafe { handle(h) }) else {
            return ptr::null_mut();
        };
        let Some(i) = index(in_, hd.inputs.len()) else {
            return ptr::null_mut();
        };
        let Some(io) = io(hd) else {
            hd.in_err[i] = err::UNINITIALISED;
            return ptr::null_mut();
        };
        if let Some(stashed) = hd.stash[i].take() {
            return match stashed {
                Some(m) => received(hd, i, m),
                None => {
                    hd.in_err[i] = read_error(hd, io, i);
                    ptr::null_mut()
                }
            };
        }
        match io.read(InPort(i)) {
            Some(m) => received(hd, i, m),
            None => {
                hd.in_err[i] = read_error(hd, io, i);
                ptr::null_mut()
            }
        }
    })
}

#[inline]
fn received(hd: &mut Handle, i: usize, m: smx_box::Message) -> *mut SmxMsg {
    let p = msg::from_message(m);
    hd.in_err[i] = if p.is_null() { err::NO_DATA } else { err::NONE };
    p
}

/// Waits for a new message on input `in`, at most its read timeout.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_read_blocking(h: *mut c_void, in_: c_int) -> *mut SmxMsg {
    guard(h, "smx_read_blocking", ptr::null_mut(), || {
        // SAFETY: the caller's contract.
        let Some(hd) = (unsafe { handle(h) }) else {
            return ptr::null_mut();
        };
        let Some(i) = index(in_, hd.inputs.len()) else {
            return ptr::null_mut();
        };
        let Some(io) = io(hd) else {
            hd.in_err[i] = err::UNINITIALISED;
            return ptr::null_mut();
        };
        if let Some(Some(m)) = hd.stash[i].take() {
            return received(hd, i, m);
        }
        let port = InPort(i);
        // A timeout past the clock's range is no bound at all.
        if let Some(deadline) = hd.read_timeout[i].and_then(|t| Instant::now().checked_add(t))
            && !io.wait_until(port, deadline)
        {
            hd.in_err[i] = err::TIMEOUT;
            return ptr::null_mut();
        }
        match io.read_blocking(port) {
            Some(m) => received(hd, i, m),
            None => {
                hd.in_err[i] = if hd.in_connected[i] { err::NO_TARGET } else { err::OPEN };
                ptr::null_mut()
            }
        }
    })
}

/// Passes `msg` to output `out`; the runtime owns it afterwards.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box; `msg` NULL or a message the
/// box owns.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_write(h: *mut c_void, out: c_int, msg: *mut SmxMsg) -> c_int {
    guard(h, "smx_write", -1, || {
        let m = NonNull::new(msg);
        let drop_it = |m: Option<NonNull<SmxMsg>>| {
            if let Some(m) = m {
                // SAFETY: the box handed it over.
                unsafe { msg::destroy(m.as_ptr(), true) };
            }
        };
        // SAFETY: the caller's contract.
        let Some(hd) = (unsafe { handle(h) }) else {
            drop_it(m);
            return -1;
        };
        let Some(o) = index(out, hd.outputs.len()) else {
            drop_it(m);
            return -1;
        };
        let Some(m) = m else {
            hd.out_err[o] = err::NO_DATA;
            return -1;
        };
        let Some(io) = io(hd) else {
            drop_it(Some(m));
            hd.out_err[o] = err::UNINITIALISED;
            return -1;
        };
        // SAFETY: the box handed the message over; the Message owns it from now on (also when
        // the write is refused: dropping it destroys it).
        let message = unsafe { msg::into_message(m) };
        let written = match hd.write_timeout[o] {
            Some(timeout) => io.write_within(OutPort(o), message, timeout),
            None => io.write(OutPort(o), message).map_err(|_| WriteError::Disconnected),
        };
        match written {
            Err(WriteError::TimedOut) => {
                hd.out_err[o] = err::TIMEOUT;
                -1
            }
            Ok(()) if hd.out_connected[o] => {
                hd.out_err[o] = err::NONE;
                0
            }
            Ok(()) => {
                hd.out_err[o] = err::OPEN;
                0
            }
            Err(_) => {
                hd.out_err[o] = err::NO_TARGET;
                if !std::mem::replace(&mut hd.warned_refused[o], true) {
                    log::info!(
                        target: &hd.target,
                        "output '{}': the consumer has ended; this and later writes are dropped (counted in the report)",
                        hd.outputs[o].name
                    );
                }
                -1
            }
        }
    })
}

/// The code of the last read on input `in` in this iteration.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_read_error(h: *mut c_void, in_: c_int) -> c_int {
    guard(h, "smx_read_error", err::UNINITIALISED, || {
        // SAFETY: the caller's contract.
        let Some(hd) = (unsafe { handle(h) }) else {
            return err::UNINITIALISED;
        };
        index(in_, hd.in_err.len()).map_or(err::UNINITIALISED, |i| hd.in_err[i])
    })
}

/// The code of the last write on output `out` in this iteration.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_write_error(h: *mut c_void, out: c_int) -> c_int {
    guard(h, "smx_write_error", err::UNINITIALISED, || {
        // SAFETY: the caller's contract.
        let Some(hd) = (unsafe { handle(h) }) else {
            return err::UNINITIALISED;
        };
        index(out, hd.out_err.len()).map_or(err::UNINITIALISED, |o| hd.out_err[o])
    })
}

fn timeout(sec: c_long, nsec: c_long) -> Option<Option<Duration>> {
    let (sec, nsec) = (u64::try_from(sec).ok()?, u64::try_from(nsec).ok()?);
    let t = Duration::from_secs(sec).checked_add(Duration::from_nanos(nsec))?;
    Some((!t.is_zero()).then_some(t))
}

/// Bounds how long the firing rule and `smx_read_blocking` wait on input `in` (0, 0: no
/// bound). Set in `init`, it reaches the runtime when init returns; set in a step, at once.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_set_read_timeout(h: *mut c_void, in_: c_int, sec: c_long, nsec: c_long) -> c_int {
    guard(h, "smx_set_read_timeout", -1, || {
        // SAFETY: the caller's contract.
        let Some(hd) = (unsafe { handle(h) }) else {
            return -1;
        };
        match (index(in_, hd.inputs.len()), timeout(sec, nsec)) {
            (Some(i), Some(t)) => {
                hd.read_timeout[i] = t;
                if let Some(io) = io(hd) {
                    io.set_read_timeout(InPort(i), t);
                }
                0
            }
            _ => -1,
        }
    })
}

/// Bounds how long `smx_write` waits for room in a full coupled channel on output `out` (0, 0:
/// no bound); a write that times out drops the message (counted) and fails with `TIMEOUT`.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_set_write_timeout(h: *mut c_void, out: c_int, sec: c_long, nsec: c_long) -> c_int {
    guard(h, "smx_set_write_timeout", -1, || {
        // SAFETY: the caller's contract.
        let Some(hd) = (unsafe { handle(h) }) else {
            return -1;
        };
        match (index(out, hd.outputs.len()), timeout(sec, nsec)) {
            (Some(o), Some(t)) => {
                hd.write_timeout[o] = t;
                0
            }
            _ => -1,
        }
    })
}

/// The next firing also waits for a new message on decoupled input `in`, once.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_block_next_read(h: *mut c_void, in_: c_int) -> c_int {
    guard(h, "smx_block_next_read", -1, || {
        // SAFETY: the caller's contract.
        let Some(hd) = (unsafe { handle(h) }) else {
            return -1;
        };
        match index(in_, hd.inputs.len()) {
            Some(i) if hd.inputs[i].decoupled => {
                hd.block_next[i] = true;
                hd.any_block_next = true;
                0
            }
            _ => -1,
        }
    })
}

/// The number of declared inputs.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_in_count(h: *mut c_void) -> c_int {
    // SAFETY: the caller's contract.
    guard(h, "smx_in_count", -1, || {
        unsafe { handle(h) }.map_or(-1, |hd| hd.inputs.len() as c_int)
    })
}

/// The number of declared outputs.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_out_count(h: *mut c_void) -> c_int {
    // SAFETY: the caller's contract.
    guard(h, "smx_out_count", -1, || {
        unsafe { handle(h) }.map_or(-1, |hd| hd.outputs.len() as c_int)
    })
}

fn find(ports: &[crate::cbox::PortInfo], name: *const c_char) -> c_int {
    if name.is_null() {
        return -1;
    }
    // SAFETY: a C string from the box.
    let name = unsafe { CStr::from_ptr(name) }.to_bytes();
    ports
        .iter()
        .position(|p| p.name.as_bytes() == name)
        .map_or(-1, |i| i as c_int)
}

/// The index of the input with implementation name `name`, or -1.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box; `name` NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_in_index(h: *mut c_void, name: *const c_char) -> c_int {
    // SAFETY: the caller's contract.
    guard(h, "smx_in_index", -1, || {
        unsafe { handle(h) }.map_or(-1, |hd| find(&hd.inputs, name))
    })
}

/// The index of the output with implementation name `name`, or -1.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box; `name` NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_out_index(h: *mut c_void, name: *const c_char) -> c_int {
    // SAFETY: the caller's contract.
    guard(h, "smx_out_index", -1, || {
        unsafe { handle(h) }.map_or(-1, |hd| find(&hd.outputs, name))
    })
}

/// A new message owning `data`; NULL functions select the defaults.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box; `data` what the functions
/// (or the defaults: `malloc`ed memory) accept.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_msg_create(
    h: *mut c_void,
    data: *mut c_void,
    size: usize,
    copy: Option<CopyFn>,
    destroy: Option<DestroyFn>,
    unpack: Option<UnpackFn>,
) -> *mut SmxMsg {
    guard(h, "smx_msg_create", ptr::null_mut(), || {
        // SAFETY: the caller's contract.
        let seq = match unsafe { handle(h) } {
            Some(hd) => {
                hd.created += 1;
                hd.seq += 1;
                hd.seq - 1
            }
            None => 0,
        };
        msg::create(data, size, copy, destroy, unpack, seq)
    })
}

/// A deep copy of `msg` (NULL for NULL or when the copy function fails).
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box; `msg` NULL or a live message.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_msg_copy(h: *mut c_void, m: *mut SmxMsg) -> *mut SmxMsg {
    guard(h, "smx_msg_copy", ptr::null_mut(), || {
        if m.is_null() {
            return ptr::null_mut();
        }
        // SAFETY: the caller's contract.
        if let Some(hd) = unsafe { handle(h) } {
            hd.copied += 1;
        }
        // SAFETY: a live message.
        unsafe { msg::copy(m) }
    })
}

/// Frees `msg` (with its payload when `deep` is non-zero).
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box; `msg` NULL or a message the
/// caller owns, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_msg_destroy(h: *mut c_void, m: *mut SmxMsg, deep: c_int) {
    guard(h, "smx_msg_destroy", (), || {
        if m.is_null() {
            return;
        }
        // SAFETY: the caller's contract.
        if let Some(hd) = unsafe { handle(h) } {
            hd.destroyed += 1;
        }
        // SAFETY: the caller owns it and gives it up.
        unsafe { msg::destroy(m, deep != 0) }
    })
}

/// Sets (a copy of) `type_` as the message's type name; NULL clears it.
///
/// # Safety
/// `msg` must be NULL or a live message; `type_` NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_msg_set_type(m: *mut SmxMsg, type_: *const c_char) -> c_int {
    guard(ptr::null_mut(), "smx_msg_set_type", -1, || {
        // SAFETY: the caller's contract.
        if m.is_null() || !unsafe { msg::set_type(m, type_) } {
            -1
        } else {
            0
        }
    })
}

/// The configuration handle for `smx_config_get_*`.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_net_conf(h: *mut c_void) -> *mut c_void {
    // SAFETY: the caller's contract.
    guard(h, "smx_net_conf", ptr::null_mut(), || {
        unsafe { handle(h) }.map_or(ptr::null_mut(), |_| h)
    })
}

/// What `NAME_init` stored.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_net_state(h: *mut c_void) -> *mut c_void {
    // SAFETY: the caller's contract.
    guard(h, "smx_net_state", ptr::null_mut(), || {
        unsafe { handle(h) }.map_or(ptr::null_mut(), |hd| hd.state)
    })
}

/// The number of the current iteration (0 in init).
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_net_count(h: *mut c_void) -> c_ulong {
    // SAFETY: the caller's contract.
    guard(h, "smx_net_count", 0, || {
        unsafe { handle(h) }.map_or(0, |hd| hd.count as c_ulong)
    })
}

/// The net's node id (`(unsigned)-1` for an invalid handle).
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_net_id(h: *mut c_void) -> c_uint {
    // SAFETY: the caller's contract.
    guard(h, "smx_net_id", c_uint::MAX, || {
        unsafe { handle(h) }.map_or(c_uint::MAX, |hd| hd.id)
    })
}

/// The instance name.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_net_name(h: *mut c_void) -> *const c_char {
    // SAFETY: the caller's contract.
    guard(h, "smx_net_name", ptr::null(), || {
        unsafe { handle(h) }.map_or(ptr::null(), |hd| hd.name.as_ptr())
    })
}

/// The implementation name.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_net_impl(h: *mut c_void) -> *const c_char {
    // SAFETY: the caller's contract.
    guard(h, "smx_net_impl", ptr::null(), || {
        unsafe { handle(h) }.map_or(ptr::null(), |hd| hd.implementation.as_ptr())
    })
}

/// The real-time priority of the calling thread (0: none).
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_net_prio(h: *mut c_void) -> c_int {
    guard(h, "smx_net_prio", 0, || {
        // SAFETY: the caller's contract.
        if unsafe { handle(h) }.is_none() {
            return 0;
        }
        let mut policy: c_int = 0;
        // SAFETY: plain FFI on the calling thread, into memory we own.
        let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let rc = unsafe { libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut param) };
        if rc == 0 && (policy == libc::SCHED_FIFO || policy == libc::SCHED_RR) {
            param.sched_priority
        } else {
            0
        }
    })
}

/// 1 once the run was asked to stop (Ctrl-C).
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_net_stop_requested(h: *mut c_void) -> c_int {
    guard(h, "smx_net_stop_requested", 0, || {
        // SAFETY: the caller's contract.
        let Some(hd) = (unsafe { handle(h) }) else {
            return 0;
        };
        io(hd).map_or(0, |io| c_int::from(io.stop_requested()))
    })
}

/// The original runtime's thread body. smx runs boxes itself: this only logs an error.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_net_start_routine(
    h: *mut c_void,
    _step: Option<crate::abi::StepFn>,
    _init: Option<crate::abi::InitFn>,
    _cleanup: Option<crate::abi::CleanupFn>,
) -> *mut c_void {
    guard(h, "smx_net_start_routine", ptr::null_mut(), || {
        // SAFETY: the caller's contract.
        let target = unsafe { handle(h) }.map_or_else(|| "smx_cbox".to_string(), |hd| hd.target.clone());
        log::error!(
            target: &target,
            "start_routine_NAME was called: smx runs NAME_init, NAME and NAME_cleanup itself; nothing to do"
        );
        ptr::null_mut()
    })
}

/// The exported functions, referenced from one table so that the linker keeps every one of
/// them in a binary that loads box libraries (see [`crate::export_table`]).
pub(crate) struct Table(#[allow(dead_code)] pub [*const (); 31]);

// SAFETY: addresses of functions, never written.
unsafe impl Sync for Table {}

#[used]
pub(crate) static SMX_ABI: Table = Table([
    smx_read as *const (),
    smx_read_blocking as *const (),
    smx_write as *const (),
    smx_read_error as *const (),
    smx_write_error as *const (),
    smx_set_read_timeout as *const (),
    smx_set_write_timeout as *const (),
    smx_block_next_read as *const (),
    smx_in_count as *const (),
    smx_out_count as *const (),
    smx_in_index as *const (),
    smx_out_index as *const (),
    smx_msg_create as *const (),
    smx_msg_copy as *const (),
    smx_msg_destroy as *const (),
    smx_msg_set_type as *const (),
    smx_net_conf as *const (),
    smx_net_state as *const (),
    smx_net_count as *const (),
    smx_net_id as *const (),
    smx_net_name as *const (),
    smx_net_impl as *const (),
    smx_net_prio as *const (),
    smx_net_stop_requested as *const (),
    smx_net_start_routine as *const (),
    crate::config::smx_config_get_int_err as *const (),
    crate::config::smx_config_get_bool_err as *const (),
    crate::config::smx_config_get_double_err as *const (),
    crate::config::smx_config_get_string_err as *const (),
    crate::logging::smx_log_enabled as *const (),
    crate::logging::smx_log_text as *const (),
]);
