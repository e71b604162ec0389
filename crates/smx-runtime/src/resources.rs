//! What a run needs of the process's limits, checked before any thread starts: memory for the
//! channels (allocated whole when they are created) and file descriptors for the boxes that
//! hold them. Past either limit the run would not fail cleanly: an allocation that cannot be
//! had aborts the process, and libzmq aborts when it runs out of descriptors.

use crate::lever::{Lever, LeverWords};
use crate::plan::{Plan, Role};

/// Descriptors the process holds besides the boxes' (standard streams, signal handling,
/// loaded libraries, files of the command line).
const BASE_FDS: u64 = 16;

/// Why `plan` cannot run within this process's memory and descriptor limits, if it cannot.
pub fn shortfall(plan: &Plan, words: LeverWords) -> Option<String> {
    memory_shortfall(plan, words).or_else(|| descriptor_shortfall(plan))
}

/// Bytes of one queue slot: a message and the queue's stamp.
pub const SLOT_BYTES: u64 = (std::mem::size_of::<smx_box::Message>() + 8) as u64;

/// The bytes the queues of `plan`'s channels take, allocated whole when they are created.
fn channel_bytes(plan: &Plan) -> u128 {
    plan.channels
        .iter()
        .map(|c| crate::firewall::plan::queue_slots(c) as u128 * u128::from(SLOT_BYTES))
        .sum()
}

fn memory_shortfall(plan: &Plan, words: LeverWords) -> Option<String> {
    let slot = SLOT_BYTES;
    let needed = channel_bytes(plan);
    let (available, what) = available_memory()?;
    (needed > available as u128).then(|| {
        let longest = plan.channels.iter().max_by_key(|c| c.len);
        // The remedy lies where the length was set: a default length does not reach a channel
        // whose length the net declares.
        let remedy = match longest {
            Some(c) if c.len_declared => {
                let name = |id: usize| plan.nets.get(id).map_or_else(|| format!("#{id}"), |n| format!("{}#{id}", n.name));
                format!(
                    "the longest, channel '{}' ({} -> {}), has its length declared in the net: declare a shorter one there",
                    c.label,
                    name(c.from),
                    name(c.to)
                )
            }
            _ => format!("use a shorter {}", words.name(Lever::ChannelLen)),
        };
        format!(
            "the channels need {} MiB ({} channel{}, longest {} messages of {slot} bytes each), but only {} MiB \
             are available ({what}); {remedy}",
            needed >> 20,
            plan.channels.len(),
            if plan.channels.len() == 1 { "" } else { "s" },
            longest.map_or(0, |c| c.len),
            available >> 20,
        )
    })
}

/// The memory a run can still get: the smaller of what the system has available and what is
/// left of the address-space limit (`ulimit -v`).
fn available_memory() -> Option<(u64, &'static str)> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let system = meminfo.as_deref().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
    });
    let address_space = limit(libc::RLIMIT_AS).map(|l| l.saturating_sub(mapped_bytes().unwrap_or(0)));
    match (system, address_space) {
        (Some(s), Some(a)) if a < s => Some((a, "what is left of the address-space limit, ulimit -v")),
        (Some(s), _) => Some((s, "MemAvailable in /proc/meminfo")),
        (None, Some(a)) => Some((a, "what is left of the address-space limit, ulimit -v")),
        (None, None) => None,
    }
}

fn descriptor_shortfall(plan: &Plan) -> Option<String> {
    let boxes: u64 = plan
        .nets
        .iter()
        .map(|n| match &n.role {
            Role::Box(spec) => u64::from(spec.file_descriptors),
            Role::Routing => 0,
        })
        .sum();
    if boxes == 0 {
        return None;
    }
    let limit = limit(libc::RLIMIT_NOFILE)?;
    let open = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    let needed = boxes + BASE_FDS.max(open);
    (needed > limit).then(|| {
        format!(
            "the boxes need about {needed} file descriptors ({boxes} for their sockets and files, {} for the \
             process), but the limit is {limit} (ulimit -n); raise it or run fewer such boxes",
            BASE_FDS.max(open)
        )
    })
}

/// The soft limit `resource`, `None` when unlimited or unknown.
fn limit(resource: libc::__rlimit_resource_t) -> Option<u64> {
    // SAFETY: getrlimit fills the struct we own.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(resource, &mut rl) != 0 || rl.rlim_cur == libc::RLIM_INFINITY {
            return None;
        }
        Some(rl.rlim_cur as u64)
    }
}

/// The process's mapped address space now.
fn mapped_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: plain FFI call without arguments.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    Some(pages * page)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::channel::ChannelKind;
    use crate::plan::ChannelPlan;
    use smx_graph::Timing;

    fn channel(len: usize, timing: Timing, src_period: Duration, dst_period: Duration) -> ChannelPlan {
        ChannelPlan {
            id: 0,
            label: "data".into(),
            from: 0,
            to: 1,
            from_port: "data".into(),
            to_port: "data".into(),
            kind: ChannelKind::Coupled,
            len,
            len_declared: false,
            timing,
            src_period,
            dst_period,
        }
    }

    /// What a run reserves for its channels is what their queues take: a plain channel its
    /// length (and the two spare slots of one that drops its oldest), a time-triggered one a
    /// slot for each side that the firewall serves and the length for the side it does not,
    /// with spares; a run that fits is not refused by a count of more.
    #[test]
    fn the_channels_take_the_slots_their_queues_hold() {
        let (zero, tick) = (Duration::ZERO, Duration::from_micros(10));
        let plan = |channels| Plan {
            nets: Vec::new(),
            channels,
        };
        let len = 1_000_000;
        assert_eq!(
            channel_bytes(&plan(vec![channel(len, Timing::None, zero, zero)])),
            len as u128 * u128::from(SLOT_BYTES)
        );
        let mut decoupled = channel(len, Timing::None, zero, zero);
        decoupled.kind = ChannelKind::DecoupledProducer;
        assert_eq!(
            channel_bytes(&plan(vec![decoupled])),
            (len as u128 + 2) * u128::from(SLOT_BYTES)
        );
        // A firewall's queues with their spare slots: a few slots more than the messages.
        for (src, dst, slots) in [
            (tick, tick, 2 + 4),
            (tick, tick * 2, 3 + 6),
            (tick, zero, len + 1 + 4),
            (zero, tick, len + 1 + 4),
        ] {
            let tt = channel(len, Timing::TimeTriggered, src, dst);
            assert_eq!(
                channel_bytes(&plan(vec![tt])),
                slots as u128 * u128::from(SLOT_BYTES),
                "{src:?} {dst:?}"
            );
        }
        assert_eq!(SLOT_BYTES, 64);
    }
}
