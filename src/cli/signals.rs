//! Ctrl-C and SIGTERM: the first asks the run to stop, a second one ends the process.
//!
//! The first signal only sets the run's stop flag: sources end, the nets drain what is
//! buffered, and the partial report is printed as usual (exit code 130). If a net does not
//! drain (a box stuck in a step), a second Ctrl-C or SIGTERM exits at once with 130.
//! signal-hook does the async-signal-safe part; nothing here runs inside a handler.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;

use super::exit::INTERRUPTED;

/// Makes SIGINT and SIGTERM set `stop` (and exit with 130 if it is set already).
pub fn install(stop: &Arc<AtomicBool>) -> std::io::Result<()> {
    for signal in [SIGINT, SIGTERM] {
        // Registered first, so it sees the flag as it was before this signal: set only when an
        // earlier signal already asked for a stop.
        flag::register_conditional_shutdown(signal, INTERRUPTED, Arc::clone(stop))?;
        flag::register(signal, Arc::clone(stop))?;
    }
    Ok(())
}
