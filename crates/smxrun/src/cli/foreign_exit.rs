//! A call to the C library's `exit` from a box or a box library (its init, its constructor at
//! load) would end smxrun with that code and no report: exit 0 would claim success, exit 3
//! clean books that were never printed. While a run is in progress, such an exit is turned into
//! exit 1 with a line saying what happened.

use std::sync::atomic::{AtomicBool, Ordering};

use super::exit::REJECTED;

/// A run is in progress: an `exit` now is not smxrun's own.
static RUNNING: AtomicBool = AtomicBool::new(false);

/// While it lives, an `exit` from anything but smxrun's own return ends the process with 1.
pub struct Guard(());

impl Guard {
    pub fn arm() -> Guard {
        static REGISTERED: std::sync::Once = std::sync::Once::new();
        REGISTERED.call_once(|| {
            // SAFETY: registers a handler with the signature atexit expects; it stays valid for
            // the whole process (a plain function).
            unsafe { libc::atexit(foreign_exit) };
        });
        RUNNING.store(true, Ordering::SeqCst);
        Guard(())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        RUNNING.store(false, Ordering::SeqCst);
    }
}

extern "C" fn foreign_exit() {
    if !RUNNING.load(Ordering::SeqCst) {
        return;
    }
    let line = "smxrun: a box or box library called exit() during the run: the run ended without a \
                report (exit code 1, not the code it passed)\n";
    // SAFETY: writes the bytes of a live static string to descriptor 2, then ends the process
    // without running further exit handlers (they could wait on what the caller holds).
    unsafe {
        let _ = libc::write(2, line.as_ptr().cast(), line.len());
        libc::_exit(REJECTED)
    }
}
