//! SIGINT, SIGTERM, SIGHUP and SIGQUIT: the first asks the run to stop, a later one ends the
//! process.
//!
//! The first signal sets the run's stop flag (inside the handler, through signal-hook, so it
//! works even when no other thread gets a core): sources end, the nets drain what is
//! buffered, and the partial report is printed as usual (exit code 130). A signal repeated
//! within [`REPEAT_WINDOW`] is the same stop: GNU `timeout` sends its signal to the process
//! and then to its process group, so smxrun gets it twice at once. A signal after that window
//! exits at once with 130 and one line saying there is no report. The runtime itself ends a
//! run within a second of the stop, halting what cannot drain and leaving a box stuck in its
//! step behind as `stuck` (the halt of `smx_runtime::run`); if the report is nevertheless not out
//! [`STUCK_AFTER`] after the stop (writing it blocks, say), smxrun exits in the same way: a
//! stop always ends the process.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::flag;
use signal_hook::iterator::Signals;

use super::exit::INTERRUPTED;

/// Set in a slice that runs under a supervisor: a stop there comes from the supervisor (the run
/// was stopped, or another slice ended), whose report says why, so the slice does not say it
/// was interrupted.
pub static SUPERVISED: AtomicBool = AtomicBool::new(false);

/// The signals that stop a run.
pub const STOP_SIGNALS: [i32; 4] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT];

/// A second signal this soon after the first is the same stop.
pub const REPEAT_WINDOW: Duration = Duration::from_millis(500);

/// How long after a stop the run may take to end before smxrun exits without it.
pub const STUCK_AFTER: Duration = Duration::from_secs(5);

/// Makes the stop signals set `stop`; returns the flag to set once the report is out (after
/// which only a second signal ends the process early, never the stuck-run timer).
pub fn install(stop: &Arc<AtomicBool>) -> std::io::Result<Arc<AtomicBool>> {
    for signal in STOP_SIGNALS {
        flag::register(signal, Arc::clone(stop))?;
    }
    let mut signals = Signals::new(STOP_SIGNALS)?;
    let ended = Arc::new(AtomicBool::new(false));
    let run_ended = Arc::clone(&ended);
    let (started, ready) = std::sync::mpsc::sync_channel(0);
    std::thread::Builder::new()
        .name("smxrun-signals".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            // The thread's start-up registers its thread-local destructors under the dynamic
            // loader's lock: done before install returns, so that a box library whose
            // constructor never returns (holding that lock) cannot keep this thread from
            // ever running.
            let _ = started.send(());
            let mut first: Option<Instant> = None;
            loop {
                for _ in signals.pending() {
                    match first {
                        None => first = Some(Instant::now()),
                        Some(at) if at.elapsed() < REPEAT_WINDOW => {}
                        Some(_) => leave("a second signal"),
                    }
                }
                if let Some(at) = first
                    && at.elapsed() > STUCK_AFTER
                    && !run_ended.load(Ordering::SeqCst)
                {
                    leave(&format!(
                        "the run did not end within {} s of the stop",
                        STUCK_AFTER.as_secs()
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })?;
    let _ = ready.recv();
    Ok(ended)
}

/// For a command that finishes early on a stop signal instead of running to its end (`bench`):
/// the first SIGINT, SIGTERM, SIGHUP or SIGQUIT calls `finish` with the signal's name; one
/// repeated within [`REPEAT_WINDOW`] is the same request; a later one exits at once with 130,
/// saying that `lost` (what the command would have written) is not written. Unlike a run, the
/// command is not timed after the first: it decides how soon it finishes.
pub fn finish_on_signal(finish: fn(&'static str), lost: &'static str) -> std::io::Result<()> {
    let mut signals = Signals::new(STOP_SIGNALS)?;
    std::thread::Builder::new()
        .name("smxrun-signals".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut first: Option<Instant> = None;
            for signal in signals.forever() {
                match first {
                    None => {
                        first = Some(Instant::now());
                        finish(signal_name(signal));
                    }
                    Some(at) if at.elapsed() < REPEAT_WINDOW => {}
                    Some(_) => leave_without("a second signal", lost),
                }
            }
        })?;
    Ok(())
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        SIGQUIT => "SIGQUIT",
        _ => "a signal",
    }
}

fn leave(why: &str) -> ! {
    leave_without(why, "a report")
}

fn leave_without(why: &str, lost: &str) -> ! {
    let line = format!("smxrun: {why}: exiting at once, without {lost}\n");
    // Straight to the descriptor: the stderr lock may be held by a thread blocked writing.
    // SAFETY: writes the bytes of a live buffer of the given length to descriptor 2.
    let _ = unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
    // Not `exit`: its handlers can wait on what the stuck thread holds (the dynamic loader's
    // lock while a library loads, stdio), and this exit must not wait on anything.
    // SAFETY: _exit ends the process at once; nothing after it runs.
    unsafe { libc::_exit(INTERRUPTED) }
}
