//! A free loopback tcp endpoint for a net started beside another one: benches and tests.
//!
//! Why not `bind("127.0.0.1:0")` and take the port it got: that port comes from the kernel's
//! ephemeral range, the same range every outgoing connection draws its local port from. Between
//! the probe and the sink's bind, any connection on the machine (a receiver connecting to
//! another net, say) may take it as its local port, and the sink fails with "address in use".
//! The kernel never hands out a port below that range by itself, so one found free there stays
//! free unless somebody binds it by number.

use std::sync::atomic::{AtomicU32, Ordering};

/// Lowest port tried: above the registered services one is likely to meet on a host.
const FIRST: u16 = 20_000;
/// Where the ephemeral range starts when /proc does not say (Linux's default).
const EPHEMERAL_DEFAULT: u16 = 32_768;

/// `tcp://127.0.0.1:PORT` with a port free now and outside the ephemeral range; each call in
/// a process gives another port, and processes start their search at different places.
pub fn free_loopback_endpoint() -> Result<String, String> {
    free_loopback_port().map(|port| format!("tcp://127.0.0.1:{port}"))
}

/// The port of [`free_loopback_endpoint`].
pub fn free_loopback_port() -> Result<u16, String> {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let end = ephemeral_start().unwrap_or(EPHEMERAL_DEFAULT);
    if end <= FIRST {
        return ephemeral_port();
    }
    let calls = CALLS.fetch_add(1, Ordering::Relaxed);
    let start = std::process::id()
        .wrapping_mul(7919)
        .wrapping_add(calls.wrapping_mul(13));
    first_free(start, end).map_or_else(ephemeral_port, Ok)
}

/// The first port from `FIRST + start % span` on, wrapping within `FIRST..end`, that binds.
fn first_free(start: u32, end: u16) -> Option<u16> {
    let span = u32::from(end - FIRST);
    (0..span)
        .map(|i| FIRST + (start.wrapping_add(i) % span) as u16)
        .find(|&port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok())
}

/// The first port of the kernel's ephemeral range.
fn ephemeral_start() -> Option<u16> {
    ephemeral_range().map(|(first, _)| first)
}

/// The kernel's ephemeral range (first, last), where outgoing connections take their local
/// ports from; `None` where /proc does not say.
pub fn ephemeral_range() -> Option<(u16, u16)> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut ends = range.split_whitespace().map(|end| end.parse().ok());
    Some((ends.next()??, ends.next()??))
}

/// The last resort when every port below the ephemeral range is taken.
fn ephemeral_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| format!("cannot find a free loopback port: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_free_distinct_and_below_the_ephemeral_range() {
        let end = ephemeral_start().unwrap_or(EPHEMERAL_DEFAULT);
        let ports: Vec<u16> = (0..20).map(|_| free_loopback_port().unwrap()).collect();
        let mut distinct = ports.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        for port in ports {
            assert!((FIRST..end).contains(&port), "{port} outside {FIRST}..{end}");
            std::net::TcpListener::bind(("127.0.0.1", port)).expect("still free");
        }
    }

    #[test]
    fn a_taken_port_is_skipped() {
        let end = ephemeral_start().unwrap_or(EPHEMERAL_DEFAULT);
        let taken = free_loopback_port().unwrap();
        let _holder = std::net::TcpListener::bind(("127.0.0.1", taken)).unwrap();
        let found = first_free(u32::from(taken - FIRST), end).unwrap();
        assert_ne!(found, taken);
        assert!(
            found > taken || found < FIRST + 100,
            "the search goes on from {taken}: {found}"
        );
    }
}
