//! A bench stopped by a signal keeps what it measured.
//!
//! An experiment can take many minutes, and its results are only written at the end. The first
//! SIGINT, SIGTERM or SIGHUP therefore asks the bench to finish early instead of ending the
//! process: the run in progress is stopped (the nets run in this process share [`stop_flag`];
//! programs started as peers get the terminal's own signal) and left out, no further run starts
//! ([`Run::unless_interrupted`](crate::result::Run::unless_interrupted)), and the tables, notes
//! and files hold the runs measured before the signal, with a note that says so. A signal
//! repeated within [`REPEAT_WINDOW`] is the same request (GNU `timeout` signals the process and
//! then its group); a later one ends the process at once, writing nothing.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// A second signal this soon after the first is the same request.
pub const REPEAT_WINDOW: Duration = Duration::from_millis(500);

/// The exit status of a bench cut short by a signal, as a shell reports a process it ended.
pub const EXIT_INTERRUPTED: i32 = 130;

/// The flag every run of the bench is stopped by, set by the first signal.
pub fn stop_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    Arc::clone(FLAG.get_or_init(|| Arc::new(AtomicBool::new(false))))
}

/// The signal that asked the bench to finish, if one did.
pub fn requested() -> Option<&'static str> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        SIGINT => Some("SIGINT"),
        SIGTERM => Some("SIGTERM"),
        SIGHUP => Some("SIGHUP"),
        _ => Some("a signal"),
    }
}

static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Makes SIGINT, SIGTERM and SIGHUP finish the bench early, as the module says. A failure to
/// install leaves the signals as they were (they end the process) and says so.
pub fn install() {
    let stop = stop_flag();
    let mut signals = match Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("warning: bench: cannot catch signals ({e}); a Ctrl-C ends it without writing results");
            return;
        }
    };
    let spawned = std::thread::Builder::new()
        .name("bench-signals".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut first: Option<Instant> = None;
            for signal in signals.forever() {
                match first {
                    None => {
                        first = Some(Instant::now());
                        SIGNAL.store(signal, Ordering::Relaxed);
                        stop.store(true, Ordering::Relaxed);
                        eprintln!(
                            "bench: {}: stopping the run in progress and keeping the runs measured so far \
                             (again to quit at once, writing nothing)",
                            requested().unwrap_or("a signal")
                        );
                    }
                    Some(at) if at.elapsed() < REPEAT_WINDOW => {}
                    Some(_) => {
                        eprintln!("bench: a second signal: quitting, no results written");
                        std::process::exit(EXIT_INTERRUPTED);
                    }
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("warning: bench: cannot catch signals ({e}); a Ctrl-C ends it without writing results");
    }
}
