//! Running out of memory under an address-space limit (`ulimit -v`): a clear end, not an abort.
//!
//! Two things make a small `ulimit -v` fail where the memory itself would do:
//! * glibc gives each thread that allocates an arena of its own, each reserving 64 MiB of
//!   address space however little it uses: the composition thread's arena and its stack took
//!   a 146 MiB limit for a 2,000-box net that needs about 10 MiB of heap. So under a finite
//!   limit smxrun asks glibc for one arena ([`share_one_arena`]): the threads then allocate
//!   from the main heap, which grows only as far as they use it, and the runtime's own check
//!   of the thread stacks against the limit sees what there is.
//! * An allocation that fails all the same aborts a Rust program ("memory allocation of N bytes
//!   failed", exit 134). Rust offers no way to catch that; only the global allocator sees the
//!   failure first. [`ExitOnOom`], smxrun's global allocator, is the system allocator that
//!   ends the process there with exit code 1 and a line naming the size and the limit.

use std::alloc::{GlobalAlloc, Layout, System};

use super::exit::REJECTED;

/// The address-space limit in bytes, if there is one.
fn address_space_limit() -> Option<u64> {
    // SAFETY: getrlimit fills the struct we own.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        (libc::getrlimit(libc::RLIMIT_AS, &mut rl) == 0 && rl.rlim_cur != libc::RLIM_INFINITY)
            .then_some(rl.rlim_cur as u64)
    }
}

/// Under an address-space limit, one malloc arena for every thread (see the module docs).
/// Call it before any other thread starts.
pub fn share_one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if address_space_limit().is_some() {
        // SAFETY: mallopt only sets a tunable of the allocator; arenas already made stay.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) };
    }
}

/// The system allocator, which ends the process with exit code 1 and a message when an
/// allocation fails instead of letting Rust abort (declare it as the `#[global_allocator]` of
/// a binary, as smxrun's `main.rs` does).
pub struct ExitOnOom;

// SAFETY: every call is passed to `System` unchanged; a failure ends the process before the
// null pointer could be used.
unsafe impl GlobalAlloc for ExitOnOom {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as for `alloc`.
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            out_of_memory(new_size);
        }
        p
    }
}

/// Says why and exits with 1, allocating nothing (the allocator has just failed).
#[cold]
#[inline(never)]
fn out_of_memory(size: usize) -> ! {
    use std::fmt::Write;
    let mut line = Line::default();
    let _ = write!(line, "smxrun: out of memory: an allocation of {size} bytes failed");
    let _ = match address_space_limit() {
        Some(limit) => writeln!(
            line,
            " under the address-space limit of {} MiB (ulimit -v {}); raise the limit or run a smaller net",
            limit >> 20,
            limit >> 10
        ),
        None => writeln!(line, "; run a smaller net or free memory"),
    };
    // SAFETY: writes our own buffer to stderr, then ends the process without unwinding or
    // running destructors (which could allocate).
    unsafe {
        libc::write(2, line.buf.as_ptr().cast(), line.len);
        libc::_exit(REJECTED)
    }
}

/// A line formatted on the stack.
struct Line {
    buf: [u8; 256],
    len: usize,
}

impl Default for Line {
    fn default() -> Self {
        Line { buf: [0; 256], len: 0 }
    }
}

impl std::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let take = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + take].copy_from_slice(&s.as_bytes()[..take]);
        self.len += take;
        Ok(())
    }
}
