//! The original runtime's log lines (`--report smx`), byte for byte in its 2019 format
//! (spec runtime.md §4.1–4.3), so that existing report scripts keep working:
//!
//! ```text
//! [2019-09-13 08:49:25.245740] [NOTICE] [net_Src_0] terminate net (loop count: 10000000, loop rate: 296161, wall time: 33.765305)
//! [2019-09-13 08:49:25.245788] [NOTICE] [main] end main thread (wall time: 33.765709)
//! ```
//!
//! One `terminate net` line per net in the order the nets ended, then the `end main thread`
//! line. Timestamps are local time with microseconds, as zlog's `%d.%us`. The loop rate is
//! truncated to an integer as the original's `(int)(count / wall)`.

use std::fmt::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use super::Report;

/// `YYYY-MM-DD HH:MM:SS.uuuuuu` in local time.
pub fn timestamp(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() as libc::time_t;
    // SAFETY: localtime_r writes only into the zeroed tm we own.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&secs, &mut tm).is_null() {
            return format!("{}.{:06}", since.as_secs(), since.subsec_micros());
        }
        tm
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        since.subsec_micros()
    )
}

/// The `terminate net` line of one net.
pub fn terminate_line(at: SystemTime, name: &str, id: usize, loop_count: u64, wall_time_s: f64) -> String {
    let rate = if wall_time_s > 0.0 {
        (loop_count as f64 / wall_time_s) as i64
    } else {
        0
    };
    format!(
        "[{}] [NOTICE] [net_{name}_{id}] terminate net (loop count: {loop_count}, loop rate: {rate}, wall time: {wall_time_s:.6})",
        timestamp(at)
    )
}

/// All lines of a run.
pub fn render(report: &Report) -> String {
    let mut nets: Vec<_> = report.nets.iter().collect();
    nets.sort_by_key(|n| (n.ended_at, n.id));
    let mut out = String::new();
    for n in nets {
        out.push_str(&terminate_line(n.ended_at, &n.name, n.id, n.loop_count, n.wall_time_s));
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "[{}] [NOTICE] [main] end main thread (wall time: {:.6})",
        timestamp(report.ended_at),
        report.wall_time_s
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminate_line_has_the_original_shape() {
        let line = terminate_line(SystemTime::now(), "Src", 0, 10_000_000, 33.765305);
        let (stamp, rest) = line.split_at(line.find("] ").unwrap() + 2);
        assert_eq!(stamp.len(), "[2019-09-13 08:49:25.245740] ".len(), "{line}");
        assert_eq!(
            rest,
            "[NOTICE] [net_Src_0] terminate net (loop count: 10000000, loop rate: 296161, wall time: 33.765305)"
        );
    }
}
