//! CPU time of a run: the process's user and system time (`getrusage(RUSAGE_SELF)`) before and
//! after it. A bench runs one thing at a time, so the difference is that run's threads (and
//! the few idle threads of the bench itself).

use super::result::Run;

/// User + system CPU seconds of the whole process so far.
pub fn process_cpu_s() -> f64 {
    // SAFETY: getrusage fills the zeroed struct we own.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    s(usage.ru_utime) + s(usage.ru_stime)
}

/// Records `cpu_s` and `cpu_s_per_m` (CPU seconds per million messages).
pub fn set_cpu(run: &mut Run, cpu_s: f64, messages: u64) {
    run.set("cpu_s", cpu_s);
    if messages > 0 {
        run.set("cpu_s_per_m", cpu_s * 1e6 / messages as f64);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn busy_work_shows_as_cpu_time() {
        let before = super::process_cpu_s();
        let mut x = 0u64;
        while super::process_cpu_s() - before < 0.01 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(super::process_cpu_s() > before);
    }
}
