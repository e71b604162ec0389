//! A bench stopped by a signal keeps what it measured.
//!
//! An experiment can take many minutes, and its results are only written at the end. The
//! command line that runs the bench catches the stop signals (the `smxrun` binary: SIGINT,
//! SIGTERM, SIGHUP) and calls [`request`] on the first, instead of ending the process: the run
//! in progress is stopped (the nets run in this process share [`stop_flag`]; programs started
//! as peers get the terminal's own signal) and left out, no further run starts
//! ([`Run::unless_interrupted`](crate::result::Run::unless_interrupted)), and the tables, notes
//! and files hold the runs measured before the signal, with a note that says so. A second
//! signal is the command line's to handle (`smxrun` quits at once, writing nothing).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The exit status of a bench cut short by a signal, as a shell reports a process it ended.
pub const EXIT_INTERRUPTED: i32 = 130;

/// The flag every run of the bench is stopped by, set by [`request`].
pub fn stop_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    Arc::clone(FLAG.get_or_init(|| Arc::new(AtomicBool::new(false))))
}

static REQUESTED: OnceLock<&'static str> = OnceLock::new();

/// Asks the bench to finish early, because of `why` (the signal's name, `SIGINT`): the run in
/// progress stops, none starts after it, and what was measured before is written. Says so on
/// stderr the first time; later calls change nothing.
pub fn request(why: &'static str) {
    if REQUESTED.set(why).is_ok() {
        stop_flag().store(true, Ordering::Relaxed);
        eprintln!(
            "bench: {why}: stopping the run in progress and keeping the runs measured so far (again to quit at \
             once, writing nothing)"
        );
    }
}

/// What asked the bench to finish, if anything did ([`request`]).
pub fn requested() -> Option<&'static str> {
    REQUESTED.get().copied()
}
