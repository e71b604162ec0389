//! Thread placement and scheduling: core pinning, SCHED_FIFO priority, niceness, `mlockall`.
//!
//! Every call here may be refused by the system (no `rtprio` right, a core outside the
//! allowed set, no `CAP_IPC_LOCK`). The original let `pthread_create` fail and deadlocked;
//! here each call only affects the calling thread, after it
//! exists, and a refusal comes back as an `Err` text the caller reports as a warning before
//! going on with the default scheduling.

/// The cores this process may run on, in ascending order (empty if unknown).
///
/// Read once, at the first call, and kept: the system call behind it reports the *calling
/// thread's* mask, which shrinks to one core as soon as that thread is pinned, and a thread
/// spawned by a pinned thread inherits the one core. Without the cache a pinned thread could
/// not pin a child anywhere else.
pub fn allowed_cores() -> Vec<usize> {
    static CORES: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    CORES
        .get_or_init(|| {
            let mut cores: Vec<usize> = core_affinity::get_core_ids()
                .unwrap_or_default()
                .into_iter()
                .map(|c| c.id)
                .collect();
            cores.sort_unstable();
            cores
        })
        .clone()
}

/// Pins the calling thread to `core`.
pub fn pin_current_thread(core: usize) -> Result<(), String> {
    // Checked first: core_affinity indexes a fixed-size CPU set and would panic beyond it.
    if allowed_cores().contains(&core) && core_affinity::set_for_current(core_affinity::CoreId { id: core }) {
        Ok(())
    } else {
        Err(format!(
            "could not pin to core {core} (allowed cores: {:?})",
            allowed_cores()
        ))
    }
}

/// Returns the calling thread to normal (SCHED_OTHER) scheduling.
pub fn set_normal_scheduling() -> Result<(), String> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a plain libc call on the calling thread with a fully initialised sched_param.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_OTHER, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "normal scheduling refused ({})",
            std::io::Error::from_raw_os_error(rc)
        ))
    }
}

/// Makes the calling thread a SCHED_FIFO thread at `level` (1..=99, capped to the system's
/// range).
pub fn set_fifo_priority(level: u8) -> Result<(), String> {
    // SAFETY: plain libc calls on the calling thread with a fully initialised sched_param.
    unsafe {
        let min = libc::sched_get_priority_min(libc::SCHED_FIFO);
        let max = libc::sched_get_priority_max(libc::SCHED_FIFO);
        let wanted = i32::from(level).clamp(min, max);
        let param = libc::sched_param { sched_priority: wanted };
        let rc = libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param);
        if rc == 0 {
            Ok(())
        } else {
            Err(format!(
                "SCHED_FIFO priority {wanted} refused ({}); running with normal scheduling \
                 (grant rtprio in /etc/security/limits.conf or run with CAP_SYS_NICE)",
                std::io::Error::from_raw_os_error(rc)
            ))
        }
    }
}

/// Sets the niceness (-20..=19) of the calling thread.
pub fn set_nice(nice: i32) -> Result<(), String> {
    // SAFETY: gettid has no preconditions; setpriority on our own thread id.
    let rc = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("nice {nice} refused ({})", std::io::Error::last_os_error()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_errors_not_panics() {
        // Whether these succeed depends on the machine; both outcomes must be clean.
        let handle = std::thread::spawn(|| {
            let fifo = set_fifo_priority(1);
            assert!(fifo.is_ok() || fifo.unwrap_err().contains("SCHED_FIFO"));
            let nice = set_nice(1);
            assert!(nice.is_ok() || nice.unwrap_err().contains("nice"));
        });
        handle.join().unwrap();
    }

    #[test]
    fn pinning_to_an_allowed_core_works_and_to_a_missing_one_fails() {
        let cores = allowed_cores();
        let first = cores.first().copied();
        std::thread::spawn(move || {
            if let Some(core) = first {
                assert!(pin_current_thread(core).is_ok());
            }
            assert!(pin_current_thread(100_000).is_err());
        })
        .join()
        .unwrap();
    }
}
