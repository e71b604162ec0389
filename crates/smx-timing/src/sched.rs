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
    ALLOWED.get_or_init(mask_cores).clone()
}

/// The cores of the calling thread's mask now, in ascending order.
fn mask_cores() -> Vec<usize> {
    let mut cores: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    cores.sort_unstable();
    cores
}

static ALLOWED: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();

/// Narrows the cores this process may run on to `cores` (those of them it may use now), before
/// anything placed a thread: a process that shares the machine with others keeps off the cores
/// they name, and its own placement then works within what is left, as within a smaller
/// machine. Threads spawned afterwards inherit the mask. Refused once [`allowed_cores`] was
/// read (the placement may have used the wider set), and when none of `cores` is allowed.
pub fn keep_to_cores(cores: &[usize]) -> Result<(), String> {
    if ALLOWED.get().is_some() {
        return Err("the cores were read before they were narrowed".to_string());
    }
    let now = mask_cores();
    let kept: Vec<usize> = cores.iter().copied().filter(|c| now.contains(c)).collect();
    if kept.is_empty() {
        return Err(format!(
            "none of the cores {cores:?} is allowed here (allowed: {now:?})"
        ));
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; every core is below CPU_SETSIZE, since
    // the system listed it among the allowed ones.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &core in &kept {
            libc::CPU_SET(core, &mut set);
        }
        set
    };
    // SAFETY: `set` is a valid cpu_set_t of the size given.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(format!(
            "cannot keep to cores {kept:?}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
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

/// The time slice [`request_short_slice`] asks for: the shortest the kernel grants (it clamps a
/// requested slice to 0.1..100 ms).
pub const SHORT_SLICE: std::time::Duration = std::time::Duration::from_micros(100);

/// `struct sched_attr` as `sched_getattr(2)` and `sched_setattr(2)` take it, first version (48
/// bytes; the kernel accepts it from any later caller and fills no more than that).
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Debug, Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// Asks the kernel to run the calling thread in short slices ([`SHORT_SLICE`]), keeping its
/// policy and niceness; a thread under SCHED_FIFO or SCHED_RR is left alone.
///
/// Why: Linux's fair scheduler (EEVDF, 6.6 on) takes a thread's slice as its latency request.
/// A waking thread with a shorter slice than the one running preempts it (6.12 on), and a
/// thread that yields forfeits the rest of its slice as lost time (6.18 on). A box thread
/// waits and wakes at every hand-over and yields while it spins; with the default slice (a few
/// milliseconds) each wake-up beside a busy program waits for that program's slice and each
/// yield costs a whole slice, so a hand-over takes milliseconds. With the shortest slice the
/// thread keeps its fair share of the core (the slice changes when it runs, not how much).
/// Kernels before 6.12 ignore the request.
pub fn request_short_slice() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        let mut attr = get_attr()?;
        if attr.policy != libc::SCHED_OTHER as u32 && attr.policy != libc::SCHED_BATCH as u32 {
            return Ok(());
        }
        attr.size = std::mem::size_of::<SchedAttr>() as u32;
        attr.flags = 0;
        attr.runtime = SHORT_SLICE.as_nanos() as u64;
        // SAFETY: the calling thread (pid 0) and a fully initialised attribute of the size it names.
        let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!(
                "short time slice refused ({})",
                std::io::Error::last_os_error()
            ))
        }
    }
    #[cfg(not(target_os = "linux"))]
    Ok(())
}

/// The calling thread's scheduling attributes.
#[cfg(target_os = "linux")]
fn get_attr() -> Result<SchedAttr, String> {
    let mut attr = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as libc::c_uint;
    // SAFETY: the kernel writes at most `size` bytes into `attr`, which is that large.
    let rc = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &mut attr as *mut SchedAttr, size, 0) };
    if rc == 0 {
        Ok(attr)
    } else {
        Err(format!(
            "scheduling attributes unreadable ({})",
            std::io::Error::last_os_error()
        ))
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
    #[cfg(target_os = "linux")]
    #[test]
    fn a_short_slice_keeps_the_policy_and_the_niceness() {
        std::thread::spawn(|| {
            set_nice(3).unwrap();
            request_short_slice().unwrap();
            let attr = get_attr().unwrap();
            assert_eq!(attr.policy, libc::SCHED_OTHER as u32);
            assert_eq!(attr.nice, 3);
            // Kernels that keep a per-thread slice (6.12 on) report it back; older ones 0.
            assert!(
                attr.runtime == 0 || attr.runtime == SHORT_SLICE.as_nanos() as u64,
                "{attr:?}"
            );
        })
        .join()
        .unwrap();
    }
}
