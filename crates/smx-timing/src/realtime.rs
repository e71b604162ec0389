//! Real-time setup of a periodic thread: SCHED_FIFO priority, memory locking, timer slack.
//!
//! Each request may be refused (no `rtprio` right, no `CAP_IPC_LOCK`, a container without
//! `CAP_SYS_NICE`). A refusal is never fatal and never leaves another thread waiting: the
//! thread goes on with normal scheduling, and the refusal comes back in [`RtGrant::warnings`]
//! for the caller to print once, before the periodic loop starts (the original let a refused
//! thread leave the others waiting forever).
//! A granted priority is read back from the kernel rather than assumed.

use std::sync::OnceLock;

/// What a periodic thread asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtRequest {
    /// SCHED_FIFO level (1..=99); `None`: stay with normal scheduling.
    pub fifo_priority: Option<u8>,
    /// Lock the process's memory (`mlockall`, once per process).
    pub lock_memory: bool,
}

/// What the system granted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RtGrant {
    /// The SCHED_FIFO level in effect, as read back from the kernel.
    pub fifo_priority: Option<u8>,
    pub memory_locked: bool,
    /// One line per refusal, to be printed by the caller.
    pub warnings: Vec<String>,
}

/// Applies `request` to the calling thread. Also sets the thread's timer slack to 1 ns so that
/// absolute sleeps are not rounded up by the default 50 µs slack of normal threads.
pub fn apply(request: RtRequest) -> RtGrant {
    let mut grant = RtGrant::default();
    set_min_timer_slack();
    if let Some(level) = request.fifo_priority {
        match set_fifo_priority(level) {
            Ok(granted) => grant.fifo_priority = Some(granted),
            Err(e) => grant.warnings.push(e),
        }
    }
    if request.lock_memory {
        match lock_memory_once() {
            Ok(()) => grant.memory_locked = true,
            Err(e) => grant.warnings.push(e),
        }
    }
    grant
}

/// Makes the calling thread SCHED_FIFO at `level` (clamped to the system's range) and returns
/// the level the kernel reports afterwards.
pub fn set_fifo_priority(level: u8) -> Result<u8, String> {
    crate::sched::set_fifo_priority(level)?;
    match current_fifo_priority() {
        Some(granted) => Ok(granted),
        None => Err(format!("SCHED_FIFO priority {level} was accepted but is not in effect")),
    }
}

/// The calling thread's SCHED_FIFO level, `None` under any other policy.
pub fn current_fifo_priority() -> Option<u8> {
    let mut policy = 0;
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: valid out-pointers, the calling thread's own handle.
    let rc = unsafe { libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut param) };
    (rc == 0 && policy == libc::SCHED_FIFO).then_some(param.sched_priority.clamp(0, 99) as u8)
}

/// `mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)` once per process; later calls return the
/// first outcome.
///
/// Refused up front when the memory-lock limit is finite and the process is not root: with
/// `MCL_FUTURE`, growing past that limit would make later allocations fail in the middle of a
/// run. `MCL_ONFAULT` locks pages as they are touched, so thread stacks are not committed in
/// full.
pub fn lock_memory_once() -> Result<(), String> {
    static LOCKED: OnceLock<Result<(), String>> = OnceLock::new();
    LOCKED.get_or_init(lock_memory).clone()
}

fn lock_memory() -> Result<(), String> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid out-pointer; geteuid has no preconditions.
    let (rc, root) = unsafe { (libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit), libc::geteuid() == 0) };
    if rc == 0 && limit.rlim_cur != libc::RLIM_INFINITY && !root {
        return Err(format!(
            "mlockall skipped: the memory-lock limit is {} KiB and locking future mappings could make \
             later allocations fail (raise `ulimit -l` to unlimited or grant CAP_IPC_LOCK)",
            limit.rlim_cur / 1024
        ));
    }
    // SAFETY: mlockall takes only flags.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "mlockall refused ({}); pages may be swapped out (raise `ulimit -l` or grant CAP_IPC_LOCK)",
            std::io::Error::last_os_error()
        ))
    }
}

/// Sets the calling thread's timer slack to 1 ns (normal threads default to 50 µs, which
/// would make every absolute sleep wake up to 50 µs late). Best effort: ignored if refused.
pub fn set_min_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and affects only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_granted_or_refused_cleanly() {
        std::thread::spawn(|| {
            let grant = apply(RtRequest {
                fifo_priority: Some(1),
                lock_memory: false,
            });
            match grant.fifo_priority {
                Some(level) => {
                    assert_eq!(level, 1);
                    assert_eq!(current_fifo_priority(), Some(1));
                }
                None => assert_eq!(grant.warnings.len(), 1, "{grant:?}"),
            }
            // Without a request nothing changes and nothing is reported.
            let none = apply(RtRequest {
                fifo_priority: None,
                lock_memory: false,
            });
            assert!(none.warnings.is_empty() && !none.memory_locked);
        })
        .join()
        .unwrap();
    }
}
