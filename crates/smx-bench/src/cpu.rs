//! CPU time of a run: the process's user and system time (`getrusage(RUSAGE_SELF)`) before and
//! after it. A bench runs one thing at a time, so the difference is that run's threads (and
//! the few idle threads of the bench itself). And the CPU time a hypervisor took from the
//! machine meanwhile ("steal"), which slows a run for reasons outside it.
//!
//! This module only reads the operating system; [`Run::set_cpu`](crate::result::Run::set_cpu)
//! and [`Run::with_steal`](crate::result::Run::with_steal) record what it reads on a run.

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

/// CPU seconds that the hypervisor has taken from this machine's CPUs since boot (the `steal`
/// column of /proc/stat's first line, all CPUs together), or `None` where the kernel does not
/// count it. On a virtual machine whose host runs other guests, a vCPU that the host does not
/// schedule stops every thread on it: a run that lost a tenth of its wall time that way is
/// slow for a reason that is neither smx's nor its peer's.
pub fn steal_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    // SAFETY: sysconf only reads a constant.
    let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    steal_from(&stat, ticks_per_s)
}

fn steal_from(stat: &str, ticks_per_s: i64) -> Option<f64> {
    let line = stat.lines().next()?;
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" || ticks_per_s <= 0 {
        return None;
    }
    // user nice system idle iowait irq softirq steal
    let ticks: u64 = fields.nth(7)?.parse().ok()?;
    Some(ticks as f64 / ticks_per_s as f64)
}

/// The run metric [`Run::with_steal`](crate::result::Run::with_steal) records.
pub const STEAL_MS: &str = "steal_ms";

#[cfg(test)]
mod tests {
    #[test]
    fn steal_is_the_eighth_number_of_the_cpu_line() {
        let stat = "cpu  790726 0 278851 593589 4246 0 1863 2629 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        assert_eq!(super::steal_from(stat, 100), Some(26.29));
        assert_eq!(
            super::steal_from("cpu  1 2 3\n", 100),
            None,
            "an old kernel without the column"
        );
        assert_eq!(super::steal_from("intr 5\n", 100), None);
        assert_eq!(super::steal_from(stat, 0), None);
    }

    #[test]
    fn a_run_carries_the_steal_of_its_time() {
        let run = crate::result::Run::with_steal(crate::result::Run::new);
        if super::steal_s().is_some() {
            assert!(run.metrics[super::STEAL_MS] >= 0.0);
            // A run without a wall time of its own gets one, for the steal note to weigh.
            assert!(run.metrics.contains_key("wall_s"));
            let own = crate::result::Run::with_steal(|| {
                let mut run = crate::result::Run::new();
                run.set("wall_s", 7.0);
                run
            });
            assert_eq!(own.metrics["wall_s"], 7.0, "a run's own wall time stays");
        } else {
            assert!(!run.metrics.contains_key(super::STEAL_MS));
        }
    }

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
