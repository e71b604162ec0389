//! The machine header every result carries: what ran the benchmark and in what state.
//!
//! A figure without its machine is not comparable with anything, and a figure taken while the
//! machine was busy is not comparable with itself. So the header records the hardware and
//! kernel, the clock and what reading it costs (calibrated at start: a timestamp taken per
//! message is part of what a latency figure measures), the load average before and after the
//! experiment, whether real-time priority is available, and whether this is an optimised build.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::stats;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineHeader {
    pub hostname: String,
    pub cpu_model: String,
    /// CPUs the kernel has online.
    pub cores_online: usize,
    /// CPUs this process may run on (its affinity mask); the benchmark spreads threads on these.
    pub cores_allowed: usize,
    pub memory_total_kib: Option<u64>,
    pub kernel: String,
    /// Linux clock source behind CLOCK_MONOTONIC (`tsc`, `hpet`, `kvm-clock`, ...).
    pub clock_source: String,
    /// cpufreq governor of CPU 0, when the kernel exposes it.
    pub cpu_governor: Option<String>,
    pub timer: TimerOverhead,
    /// 1-minute load average when the experiment started.
    pub load_before: Option<f64>,
    /// 1-minute load average when it ended (filled by [`MachineHeader::finish`]).
    pub load_after: Option<f64>,
    /// CPU seconds the hypervisor had taken from the machine's CPUs since boot when the
    /// experiment started (/proc/stat's steal; `None` where not counted).
    #[serde(default)]
    pub steal_before_s: Option<f64>,
    /// CPU seconds it took during the experiment (filled by [`MachineHeader::finish`]).
    #[serde(default)]
    pub steal_s: Option<f64>,
    pub realtime: RealtimeCheck,
    /// Real-time (SCHED_FIFO/SCHED_RR) threads of other user processes when the experiment
    /// started, as `pid/tid name`. Under the kernel's RT throttling (`sched_rt_runtime_us`,
    /// typically 950 ms per second) a spinning real-time thread can starve ordinary threads on
    /// its core for most of a second, which shows up as huge latency maxima and slow runs.
    #[serde(default)]
    pub other_rt_threads_before: Vec<String>,
    /// The same when it ended (filled by [`MachineHeader::finish`]).
    #[serde(default)]
    pub other_rt_threads_after: Vec<String>,
    /// `release` or `debug`: a debug build's figures are not the product's.
    pub build: String,
    pub smx_version: String,
    /// Seconds since the Unix epoch when the header was taken.
    pub started_unix_s: u64,
}

/// What one timestamp costs, measured by timing long batches of back-to-back reads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimerOverhead {
    /// Median cost of `std::time::Instant::now()` in ns (median over batches).
    pub instant_now_ns: f64,
    /// Median cost of `clock_gettime(CLOCK_MONOTONIC)` in ns.
    pub clock_gettime_ns: f64,
    /// Median cost of `smx_box::now_ns()`, the clock every message's timestamp reads, in ns
    /// (0 in results saved before it was measured).
    #[serde(default)]
    pub message_clock_ns: f64,
    /// Smallest non-zero step seen between consecutive `Instant::now()` readings, in ns.
    pub granularity_ns: u64,
    /// `clock_getres(CLOCK_MONOTONIC)` in ns.
    pub resolution_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RealtimeCheck {
    /// Whether a thread of this process could switch to SCHED_FIFO priority 1.
    pub granted: bool,
    /// Why not, when refused (the OS error).
    pub reason: Option<String>,
}

impl MachineHeader {
    /// Reads the machine and calibrates the timer (takes about 50 ms).
    pub fn collect() -> MachineHeader {
        MachineHeader {
            hostname: read_trimmed("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into()),
            cpu_model: cpu_model(),
            cores_online: cores_online(),
            cores_allowed: core_affinity::get_core_ids().map(|c| c.len()).unwrap_or(0),
            memory_total_kib: memory_total_kib(),
            kernel: kernel(),
            clock_source: read_trimmed("/sys/devices/system/clocksource/clocksource0/current_clocksource")
                .unwrap_or_else(|| "unknown".into()),
            cpu_governor: read_trimmed("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            timer: TimerOverhead::measure(),
            load_before: load_average(),
            load_after: None,
            steal_before_s: super::cpu::steal_s(),
            steal_s: None,
            realtime: RealtimeCheck::probe(),
            other_rt_threads_before: other_realtime_threads(),
            other_rt_threads_after: Vec::new(),
            build: if cfg!(debug_assertions) { "debug" } else { "release" }.into(),
            smx_version: env!("CARGO_PKG_VERSION").into(),
            started_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        }
    }

    /// Records the load average at the end of the experiment.
    pub fn finish(&mut self) {
        self.load_after = load_average();
        self.steal_s = match (self.steal_before_s, super::cpu::steal_s()) {
            (Some(before), Some(after)) => Some((after - before).max(0.0)),
            _ => None,
        };
        self.other_rt_threads_after = other_realtime_threads();
    }

    /// Lines for the top of a text or Markdown report.
    pub fn describe(&self) -> Vec<String> {
        let load = |l: Option<f64>| l.map(|v| format!("{v:.2}")).unwrap_or_else(|| "?".into());
        let mut lines = vec![
            format!(
                "machine: {} ({} online, {} allowed CPUs{}), {}",
                self.cpu_model,
                self.cores_online,
                self.cores_allowed,
                self.memory_total_kib
                    .map(|k| format!(", {:.1} GiB", k as f64 / 1024.0 / 1024.0))
                    .unwrap_or_default(),
                self.hostname
            ),
            format!(
                "kernel: {}, clock source: {}{}",
                self.kernel,
                self.clock_source,
                self.cpu_governor
                    .as_ref()
                    .map(|g| format!(", governor: {g}"))
                    .unwrap_or_default()
            ),
            format!(
                "timer: Instant::now {:.1} ns, clock_gettime {:.1} ns, message clock (now_ns) {:.1} ns, \
                 granularity {} ns, resolution {} ns",
                self.timer.instant_now_ns,
                self.timer.clock_gettime_ns,
                self.timer.message_clock_ns,
                self.timer.granularity_ns,
                self.timer.resolution_ns
            ),
            format!(
                "load average (1 min): before {}, after {}; real-time priority: {}",
                load(self.load_before),
                load(self.load_after),
                if self.realtime.granted {
                    "granted".to_string()
                } else {
                    format!(
                        "not granted ({})",
                        self.realtime.reason.as_deref().unwrap_or("unknown reason")
                    )
                }
            ),
            format!("build: smx {} {}", self.smx_version, self.build),
        ];
        if let Some(steal) = self.steal_s {
            lines.push(format!(
                "hypervisor steal during the experiment: {steal:.2} CPU s (time the host did not run this \
                 machine's CPUs)"
            ));
        }
        let mut others: Vec<&String> = self.other_rt_threads_before.iter().collect();
        others.extend(
            self.other_rt_threads_after
                .iter()
                .filter(|t| !self.other_rt_threads_before.contains(t)),
        );
        if !others.is_empty() {
            let names: Vec<&str> = others.iter().take(8).map(|s| s.as_str()).collect();
            lines.push(format!(
                "WARNING: {} real-time thread(s) of other processes were running ({}{}); they can starve \
                 ordinary threads for up to the RT throttling limit",
                others.len(),
                names.join(", "),
                if others.len() > 8 { ", ..." } else { "" }
            ));
        }
        if self.build != "release" {
            lines.push("WARNING: debug build; figures are not representative (use --release)".into());
        }
        lines
    }
}

impl TimerOverhead {
    /// Times 31 batches of 20,000 back-to-back reads of each clock and keeps the median batch,
    /// so one preempted batch does not move the figure.
    pub fn measure() -> TimerOverhead {
        const BATCHES: usize = 31;
        const READS: u32 = 20_000;
        let mut instant_costs = Vec::with_capacity(BATCHES);
        let mut gettime_costs = Vec::with_capacity(BATCHES);
        let mut message_costs = Vec::with_capacity(BATCHES);
        let mut granularity = u64::MAX;
        for _ in 0..BATCHES {
            let start = Instant::now();
            let mut last = start;
            for _ in 0..READS {
                let now = std::hint::black_box(Instant::now());
                let step = now.duration_since(last).as_nanos() as u64;
                if step > 0 {
                    granularity = granularity.min(step);
                }
                last = now;
            }
            instant_costs.push(start.elapsed().as_nanos() as f64 / READS as f64);

            let start = Instant::now();
            for _ in 0..READS {
                std::hint::black_box(monotonic_ns());
            }
            gettime_costs.push(start.elapsed().as_nanos() as f64 / READS as f64);

            let start = Instant::now();
            for _ in 0..READS {
                std::hint::black_box(smx_box::now_ns());
            }
            message_costs.push(start.elapsed().as_nanos() as f64 / READS as f64);
        }
        TimerOverhead {
            instant_now_ns: stats::median(&instant_costs).unwrap_or(0.0),
            clock_gettime_ns: stats::median(&gettime_costs).unwrap_or(0.0),
            message_clock_ns: stats::median(&message_costs).unwrap_or(0.0),
            granularity_ns: if granularity == u64::MAX { 0 } else { granularity },
            resolution_ns: clock_resolution_ns(),
        }
    }
}

impl RealtimeCheck {
    /// Tries SCHED_FIFO on a scratch thread, so the calling thread's policy is left alone.
    pub fn probe() -> RealtimeCheck {
        let outcome = std::thread::Builder::new()
            .name("smx-rt-probe".into())
            .spawn(|| {
                let param = libc::sched_param { sched_priority: 1 };
                // SAFETY: plain syscall on the calling (scratch) thread with a valid parameter.
                let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
                if rc == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error().to_string())
                }
            })
            .map_err(|e| e.to_string())
            .and_then(|h| h.join().map_err(|_| "probe thread panicked".to_string()))
            .and_then(|r| r);
        match outcome {
            Ok(()) => RealtimeCheck {
                granted: true,
                reason: None,
            },
            Err(reason) => RealtimeCheck {
                granted: false,
                reason: Some(reason),
            },
        }
    }
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn clock_resolution_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn cpu_model() -> String {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpu_model_from(&text).unwrap_or_else(|| "unknown CPU".into())
}

/// The first `model name` (x86) or `Model`/`Hardware` (ARM) line of /proc/cpuinfo.
pub fn cpu_model_from(cpuinfo: &str) -> Option<String> {
    ["model name", "Model", "Hardware", "cpu model"].iter().find_map(|key| {
        cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == *key && !v.trim().is_empty()).then(|| v.trim().to_string())
        })
    })
}

fn cores_online() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 { n as usize } else { 0 }
}

fn memory_total_kib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn kernel() -> String {
    let release = read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into());
    let version = read_trimmed("/proc/sys/kernel/version").unwrap_or_default();
    let os = read_trimmed("/proc/sys/kernel/ostype").unwrap_or_else(|| "Linux".into());
    format!("{os} {release} {version}").trim().to_string()
}

/// Threads of other user-space processes running under SCHED_FIFO or SCHED_RR, as
/// `pid/tid name`. Kernel threads (empty command line) and this process are left out.
pub fn other_realtime_threads() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for proc_entry in procs.flatten() {
        let pid = proc_entry.file_name().to_string_lossy().to_string();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == me {
            continue;
        }
        let is_user = std::fs::read(proc_entry.path().join("cmdline")).is_ok_and(|c| !c.is_empty());
        let Ok(tasks) = std::fs::read_dir(proc_entry.path().join("task")) else {
            continue;
        };
        if !is_user {
            continue;
        }
        for task in tasks.flatten() {
            let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
                continue;
            };
            if let Some((name, policy)) = policy_of(&stat)
                && policy != 0
            {
                found.push(format!("{pid}/{} {name}", task.file_name().to_string_lossy()));
            }
        }
    }
    found.sort();
    found
}

/// The thread name and scheduling policy (field 41) of a /proc/.../stat line.
pub fn policy_of(stat: &str) -> Option<(String, u32)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    // Fields after the name start at field 3 (state); policy is field 41.
    let policy = stat.get(close + 1..)?.split_whitespace().nth(41 - 3)?.parse().ok()?;
    Some((name, policy))
}

/// 1-minute load average from /proc/loadavg.
pub fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_model_from_x86_and_arm_cpuinfo() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz\n";
        assert_eq!(
            cpu_model_from(x86).as_deref(),
            Some("Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz")
        );
        let arm = "processor\t: 0\nBogoMIPS\t: 108.00\nModel\t\t: Raspberry Pi 5 Model B Rev 1.0\n";
        assert_eq!(cpu_model_from(arm).as_deref(), Some("Raspberry Pi 5 Model B Rev 1.0"));
        assert_eq!(cpu_model_from("processor : 0\n"), None);
    }

    #[test]
    fn scheduling_policy_from_a_stat_line() {
        // 52 fields as in Linux 6.x; the name may contain spaces and parentheses.
        let mut fields: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        fields[41 - 3] = "1".into();
        let stat = format!("7540 (Snk (1) x) {}", fields.join(" "));
        assert_eq!(policy_of(&stat), Some(("Snk (1) x".to_string(), 1)));
        assert_eq!(policy_of("garbage"), None);
    }

    #[test]
    fn header_describes_the_load_after_finish() {
        let mut header = MachineHeader::collect();
        assert!(header.load_after.is_none());
        header.finish();
        let text = header.describe().join("\n");
        assert!(text.contains("clock source"));
        assert_eq!(header.steal_s.is_some(), text.contains("hypervisor steal"));
        assert_eq!(header.steal_s.is_some(), header.steal_before_s.is_some());
        assert!(text.contains("real-time priority"));
        assert!(header.timer.instant_now_ns > 0.0);
        assert!(header.timer.message_clock_ns > 0.0);
        assert!(text.contains("message clock (now_ns)"));
    }
}
