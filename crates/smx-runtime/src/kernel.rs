//! What the kernel says of one of the run's threads: whether it waits for a CPU, and how much
//! CPU time it has had.
//!
//! The halt asks this before it calls a thread stuck. A box stuck in its step sleeps or burns
//! its CPU; a thread that was only kept off every core (by another process's real-time thread,
//! or a machine loaded far beyond its cores) is runnable and has had almost no CPU time since the
//! halt woke it. Calling that one stuck would be a wrong verdict, so the halt waits longer for it.
//! Off Linux nothing is known and every thread counts as having had its chance.

/// One look at a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    /// Running or waiting for a CPU (state `R`), not asleep.
    pub runnable: bool,
    /// CPU time so far, in nanoseconds.
    pub cpu_ns: u64,
}

/// The calling thread's kernel id; `None` off Linux.
pub(crate) fn current_tid() -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions.
        Some(unsafe { libc::syscall(libc::SYS_gettid) } as i32)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Looks at thread `tid` of this process; `None` when the kernel does not say (the thread
/// ended, or no `/proc`).
pub(crate) fn look(tid: i32) -> Option<Seen> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let (state, ticks) = parse_stat(&stat)?;
    // schedstat counts in nanoseconds; stat only in clock ticks (10 ms at the usual 100 Hz).
    let cpu_ns = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(ticks.saturating_mul(10_000_000));
    Some(Seen {
        runnable: state == 'R',
        cpu_ns,
    })
}

/// The state letter and user plus system CPU ticks of a `/proc/.../stat` line. The thread's
/// name comes in parentheses and may hold spaces and parentheses itself, so the fields are
/// counted from the last `)`.
fn parse_stat(stat: &str) -> Option<(char, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    // Fields 14 and 15 of proc(5), utime and stime, are the 12th and 13th after the name.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((state, utime + stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_name_with_spaces_and_parentheses() {
        let line = "4242 (a (b) c) S 1 2 3 0 -1 4194304 10 0 0 0 7 5 0 0 20 0 1 0 100 0 0";
        assert_eq!(parse_stat(line), Some(('S', 12)));
        assert_eq!(parse_stat("4242 (x) R 1"), None);
    }

    #[test]
    fn the_calling_thread_is_seen_running_with_its_cpu_time() {
        let Some(tid) = current_tid() else {
            return;
        };
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let seen = look(tid).expect("/proc tells of the calling thread");
        assert!(seen.runnable, "{seen:?}");
        assert!(seen.cpu_ns > 0, "{seen:?}");
        assert_eq!(look(-1), None);
    }
}
