//! `SMX_LOG` into the `log` crate: target `net_<INSTANCE>_<ID>` (the original's log category,
//! so `RUST_LOG=net_Sink_6=debug` selects one net), levels mapped as follows.
//!
//! | box level | value | `log` level |
//! |---|---|---|
//! | fatal | 120 | error, prefixed `fatal: ` |
//! | error | 100 | error |
//! | warn | 80 | warn |
//! | notice, event | 60, 50 | info |
//! | info | 40 | debug |
//! | debug | 20 | trace |
//!
//! Other values count as the next lower listed level.

use std::ffi::{CStr, c_char, c_int, c_void};

use crate::abi::level;
use crate::cbox::handle;

/// The `log` level of a box level, and whether it is `fatal`.
pub fn map_level(l: c_int) -> (log::Level, bool) {
    match l {
        l if l >= level::FATAL => (log::Level::Error, true),
        l if l >= level::ERROR => (log::Level::Error, false),
        l if l >= level::WARN => (log::Level::Warn, false),
        l if l >= level::EVENT => (log::Level::Info, false),
        l if l >= level::INFO => (log::Level::Debug, false),
        _ => (log::Level::Trace, false),
    }
}

const NO_NET: &str = "smx_cbox";

/// 1 when a line of `level` from this net would be logged.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_log_enabled(h: *mut c_void, level: c_int) -> c_int {
    std::panic::catch_unwind(|| {
        let (lvl, _) = map_level(level);
        // SAFETY: the caller's contract.
        let enabled = match unsafe { handle(h) } {
            Some(hd) => log::log_enabled!(target: &hd.target, lvl),
            None => log::log_enabled!(target: NO_NET, lvl),
        };
        c_int::from(enabled)
    })
    .unwrap_or(0)
}

/// Logs one line under the net's target.
///
/// # Safety
/// `h` must be NULL or the handle the runtime passed to the box; `text` NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn smx_log_text(h: *mut c_void, level: c_int, text: *const c_char) {
    let _ = std::panic::catch_unwind(|| {
        if text.is_null() {
            return;
        }
        // SAFETY: a C string from the box.
        let line = unsafe { CStr::from_ptr(text) }.to_string_lossy();
        let line = line.strip_suffix('\n').unwrap_or(&line);
        let (lvl, fatal) = map_level(level);
        let prefix = if fatal { "fatal: " } else { "" };
        // SAFETY: the caller's contract.
        match unsafe { handle(h) } {
            Some(hd) => log::log!(target: &hd.target, lvl, "{prefix}{line}"),
            None => log::log!(target: NO_NET, lvl, "{prefix}{line}"),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_round_down_to_a_listed_one() {
        assert_eq!(map_level(120), (log::Level::Error, true));
        assert_eq!(map_level(100), (log::Level::Error, false));
        assert_eq!(map_level(80), (log::Level::Warn, false));
        assert_eq!(map_level(70), (log::Level::Info, false));
        assert_eq!(map_level(50), (log::Level::Info, false));
        assert_eq!(map_level(45), (log::Level::Debug, false));
        assert_eq!(map_level(20), (log::Level::Trace, false));
        assert_eq!(map_level(-3), (log::Level::Trace, false));
    }
}
