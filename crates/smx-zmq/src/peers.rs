//! A guard that cuts off a tcp peer flooding a socket, so that what one peer sends cannot grow
//! the process without end.
//!
//! A pubsub sink's peers send it nothing but subscriptions and heartbeats: a few bytes. libzmq
//! offers no limit on them: an XPUB socket reads everything a peer sends and keeps every
//! subscription until that peer's connection ends, refused or not, all inside one call of the
//! sink's own thread (so the sink cannot look for itself while a flood lasts). Two million
//! subscriptions cost gigabytes, and seconds of the stop when they are freed.
//!
//! So a thread (one for all the sockets guarded in the process) looks at their connections
//! every [`LOOK_EVERY`] and cuts each one whose peer has sent more than [`BUDGET`] plus
//! [`BUDGET_PER_SECOND`] for every second it has been connected. It finds them without libzmq:
//! they are the descriptors of this process whose local address is the bound one and that have
//! a peer (a socket that binds), or whose peer is the endpoint (a socket that connects). A cut is a `shutdown` of the descriptor: libzmq sees the peer hang up, ends the
//! connection and frees what it sent, as for a peer that died; the descriptor stays libzmq's
//! (`shutdown` does not close it), and its peer address is checked again just before.
//!
//! Unix sockets (ipc) keep no count of the bytes received, so only tcp peers are guarded.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// What any peer may send, whatever its age: some ten thousand short subscriptions.
pub const BUDGET: u64 = 1 << 20;
/// What a peer may send in addition per second connected: heartbeats every 10 ms (the
/// shortest `heartbeat`) are about a tenth of this.
pub const BUDGET_PER_SECOND: u64 = 4096;
/// The state of a tcp connection that is open both ways (Linux's `TCP_ESTABLISHED`).
const TCP_ESTABLISHED: u8 = 1;
/// The longest pause between two looks, however long a look takes.
const LONGEST_PAUSE: Duration = Duration::from_secs(1);
/// How often the guard looks.
const LOOK_EVERY: Duration = Duration::from_millis(20);
/// How many cut-off peers are named; the rest are counted.
const NAMED_CUTS: usize = 3;

/// The peers cut off so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cuts {
    pub count: u64,
    /// The first few, by address and port.
    pub names: Vec<String>,
}

impl Cuts {
    fn add(&mut self, who: SocketAddr) {
        self.count += 1;
        if self.names.len() < NAMED_CUTS {
            self.names.push(who.to_string());
        }
    }
}

/// Where the guarded socket's connections are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Bound here: the connections whose local end is this address (a wildcard matching any).
    Bound(SocketAddr),
    /// Connected to this address: the connections whose peer it is.
    ConnectedTo(SocketAddr),
}

impl End {
    fn holds(self, local: SocketAddr, peer: SocketAddr) -> bool {
        match self {
            End::Bound(bound) => is_bound_at(local, bound),
            End::ConnectedTo(remote) => peer == remote,
        }
    }

    /// The port of the address that defines the end.
    fn port(self) -> u16 {
        match self {
            End::Bound(a) | End::ConnectedTo(a) => a.port(),
        }
    }
}

struct Shared {
    end: End,
    instance: String,
    cuts: Mutex<Cuts>,
}

impl Shared {
    fn cuts(&self) -> MutexGuard<'_, Cuts> {
        self.cuts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sockets guarded in this process. One thread looks after all of them, so that a net with
/// many sinks costs one scan of the process's descriptors per look, not one per sink.
#[derive(Default)]
struct Guarded {
    sockets: Vec<Arc<Shared>>,
    /// Whether the thread runs (it ends when nothing is left to guard).
    looking: bool,
}

fn guarded() -> MutexGuard<'static, Guarded> {
    static GUARDED: OnceLock<Mutex<Guarded>> = OnceLock::new();
    GUARDED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Guards one tcp socket, bound or connecting (see the module's documentation), until dropped.
pub struct FloodGuard {
    shared: Arc<Shared>,
}

impl FloodGuard {
    /// Starts guarding the socket bound at `endpoint` (`tcp://ADDRESS:PORT`, as libzmq names
    /// it), or, with `bound` false, connected to it. None for any other endpoint.
    pub fn start(endpoint: &str, bound: bool, instance: &str) -> Option<FloodGuard> {
        // A bound endpoint is an address (libzmq names it so); a connected one may name a host,
        // which libzmq resolves to its first IPv4 address.
        let address = parse_tcp(endpoint).or_else(|| {
            use std::net::ToSocketAddrs;
            let host_port = endpoint.strip_prefix("tcp://").filter(|_| !bound)?;
            host_port.to_socket_addrs().ok()?.find(SocketAddr::is_ipv4)
        })?;
        let shared = Arc::new(Shared {
            end: if bound {
                End::Bound(address)
            } else {
                End::ConnectedTo(address)
            },
            instance: instance.to_string(),
            cuts: Mutex::new(Cuts::default()),
        });
        let mut guarded = guarded();
        if !guarded.looking {
            std::thread::Builder::new()
                .name("smx-flood-guard".into())
                .spawn(look_until_none_left)
                .ok()?;
            guarded.looking = true;
        }
        guarded.sockets.push(shared.clone());
        Some(FloodGuard { shared })
    }

    /// The peers cut off so far.
    pub fn cuts(&self) -> Cuts {
        self.shared.cuts().clone()
    }

    /// Cuts the connection whose peer sent the most, if that is at least `least` bytes, and
    /// returns who it was: for a sink that is refusing subscriptions, that peer sent them.
    pub fn cut_busiest(&self, least: u64) -> Option<SocketAddr> {
        let busiest = connections(self.shared.end)
            .into_iter()
            .filter_map(|c| bytes_received(c.fd).map(|sent| (c, sent)))
            .max_by_key(|&(_, sent)| sent)
            .filter(|&(_, sent)| sent >= least)?;
        cut(&busiest.0).then(|| {
            self.shared.cuts().add(busiest.0.peer);
            busiest.0.peer
        })
    }
}

impl Drop for FloodGuard {
    /// Stops guarding. A look holds the list for its whole length, so none is under way when
    /// this returns: the socket may close.
    fn drop(&mut self) {
        guarded().sockets.retain(|s| !Arc::ptr_eq(s, &self.shared));
    }
}

/// The guard's thread: looks every [`LOOK_EVERY`] (or less often, up to [`LONGEST_PAUSE`], when
/// a look costs much: a scan takes at most a fiftieth of the thread's time) until nothing is
/// left to guard.
fn look_until_none_left() {
    let mut first_seen: HashMap<(RawFd, SocketAddr), Instant> = HashMap::new();
    let mut pause = LOOK_EVERY;
    loop {
        std::thread::sleep(pause);
        let mut guarded = guarded();
        if guarded.sockets.is_empty() {
            guarded.looking = false;
            return;
        }
        let started = thread_cpu_time();
        look(&guarded.sockets, &mut first_seen);
        pause = (thread_cpu_time().saturating_sub(started) * 50).clamp(LOOK_EVERY, LONGEST_PAUSE);
    }
}

/// One look at every connection of the guarded sockets: cuts those over budget.
fn look(sockets: &[Arc<Shared>], first_seen: &mut HashMap<(RawFd, SocketAddr), Instant>) {
    let now = Instant::now();
    // By the port a connection of theirs has: the local one of a bound socket, the peer's of
    // a connected one.
    let mut by_port: HashMap<u16, Vec<&Shared>> = HashMap::new();
    for s in sockets {
        by_port.entry(s.end.port()).or_default().push(s);
    }
    let mut seen = HashSet::new();
    for fd in descriptors() {
        let Some(local) = address(fd, libc::getsockname) else {
            continue;
        };
        let Some(peer) = address(fd, libc::getpeername) else {
            continue;
        };
        let Some(socket) = [local.port(), peer.port()]
            .iter()
            .filter_map(|port| by_port.get(port))
            .flatten()
            .find(|s| s.end.holds(local, peer))
        else {
            continue;
        };
        let c = Connection { fd, peer };
        seen.insert((fd, peer));
        let since = *first_seen.entry((fd, peer)).or_insert(now);
        let allowed = BUDGET + BUDGET_PER_SECOND * now.duration_since(since).as_secs();
        if bytes_received(fd).is_some_and(|sent| sent > allowed) && cut(&c) {
            log::warn!(
                "{}: cut off {peer}, which sent more than {allowed} bytes of subscriptions",
                socket.instance
            );
            socket.cuts().add(peer);
        }
    }
    first_seen.retain(|key, _| seen.contains(key));
}

/// The processor time this thread has used: what a look costs, whatever else the machine
/// runs meanwhile (a look that waited for a core was not long, only late).
fn thread_cpu_time() -> Duration {
    // SAFETY: an all-zero timespec is a valid value, and clock_gettime writes one.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `t` is a valid timespec to write.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The open descriptors of this process.
fn descriptors() -> impl Iterator<Item = RawFd> {
    std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<RawFd>().ok())
}

/// A connection of the guarded socket.
#[derive(Debug, Clone, Copy)]
struct Connection {
    fd: RawFd,
    peer: SocketAddr,
}

/// The tcp connections of this process that `end` holds.
fn connections(end: End) -> Vec<Connection> {
    descriptors()
        .filter_map(|fd| {
            let local = address(fd, libc::getsockname)?;
            let peer = address(fd, libc::getpeername)?;
            end.holds(local, peer).then_some(Connection { fd, peer })
        })
        .collect()
}

fn is_bound_at(local: SocketAddr, bound: SocketAddr) -> bool {
    local.port() == bound.port() && (bound.ip().is_unspecified() || local.ip() == bound.ip())
}

/// Shuts the connection down if its descriptor still names it.
fn cut(c: &Connection) -> bool {
    if address(c.fd, libc::getpeername) != Some(c.peer) {
        return false;
    }
    // SAFETY: the descriptor is an open socket (its peer was just read); shutdown neither
    // closes nor frees it, so libzmq's hold on it stays valid.
    unsafe { libc::shutdown(c.fd, libc::SHUT_RDWR) == 0 }
}

/// `tcp://ADDRESS:PORT` as a socket address.
fn parse_tcp(endpoint: &str) -> Option<SocketAddr> {
    let rest = endpoint.strip_prefix("tcp://")?;
    let (host, port) = rest.rsplit_once(':')?;
    let port = port.parse().ok()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip = if host == "*" {
        IpAddr::from([0, 0, 0, 0])
    } else {
        host.parse().ok()?
    };
    Some(SocketAddr::new(ip, port))
}

type AddressCall = unsafe extern "C" fn(libc::c_int, *mut libc::sockaddr, *mut libc::socklen_t) -> libc::c_int;

/// The address that `call` (getsockname or getpeername) gives for `fd`, if it is an inet one.
fn address(fd: RawFd, call: AddressCall) -> Option<SocketAddr> {
    // SAFETY: an all-zero sockaddr_storage is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: the storage is as large as `len` says; the call writes at most that much.
    if unsafe { call(fd, (&raw mut storage).cast(), &mut len) } != 0 {
        return None;
    }
    match i32::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a = unsafe { *(&raw const storage).cast::<libc::sockaddr_in>() };
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::new(ip.into(), u16::from_be(a.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a = unsafe { *(&raw const storage).cast::<libc::sockaddr_in6>() };
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::new(ip.into(), u16::from_be(a.sin6_port)))
        }
        _ => None,
    }
}

/// Every byte the tcp connection on `fd` has received from its peer, while it is established
/// (not once it was cut, or its peer finished sending).
fn bytes_received(fd: RawFd) -> Option<u64> {
    // SAFETY: an all-zero tcp_info is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` is as large as `len` says; the kernel writes at most that much.
    let rc = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, (&raw mut info).cast(), &mut len) };
    (rc == 0 && info.tcpi_state == TCP_ESTABLISHED).then_some(info.tcpi_bytes_received)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    fn connected(listener: &TcpListener) -> (TcpStream, TcpStream) {
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (client, server)
    }

    /// Floods `guarded` from `flooding`, the guarded side reading all it gets as libzmq does,
    /// until `cut` says it was cut off (for up to 10 s); returns whether the guarded
    /// connection was shut down then.
    fn flood_until(flooding: &mut TcpStream, guarded: &TcpStream, cut: impl Fn() -> bool) -> bool {
        use std::os::fd::AsRawFd;
        let mut reading = guarded.try_clone().unwrap();
        let reader = std::thread::spawn(move || std::io::copy(&mut reading, &mut std::io::sink()));
        flooding.set_write_timeout(Some(Duration::from_millis(20))).unwrap();
        let chunk = [1u8; 64 * 1024];
        let deadline = Instant::now() + Duration::from_secs(10);
        while !cut() && Instant::now() < deadline {
            let refused = flooding
                .write(&chunk)
                .is_err_and(|e| !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut));
            if refused {
                break;
            }
        }
        // The guard books a cut just after it shuts the connection down, so a write refused by
        // the shutdown can come before the count: the count is waited for, not read once.
        // A connection that was shut down is no longer established.
        let shut = wait_until(&cut) && bytes_received(guarded.as_raw_fd()).is_none();
        let _ = flooding.shutdown(std::net::Shutdown::Both);
        let _ = reader.join();
        shut
    }

    fn wait_until(what: impl Fn() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !what() {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    #[test]
    fn a_peer_over_its_budget_is_cut_and_named_and_a_quiet_one_kept() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = listener.local_addr().unwrap();
        let guard = FloodGuard::start(&format!("tcp://{at}"), true, "Snk").unwrap();
        let elsewhere = TcpListener::bind("127.0.0.1:0").unwrap();
        let other_guard =
            FloodGuard::start(&format!("tcp://{}", elsewhere.local_addr().unwrap()), true, "Other").unwrap();
        let guard_threads = || {
            std::fs::read_dir("/proc/self/task")
                .unwrap()
                .filter(|t| {
                    let comm = t.as_ref().unwrap().path().join("comm");
                    std::fs::read_to_string(comm).is_ok_and(|name| name.trim() == "smx-flood-guard")
                })
                .count()
        };
        // (The thread names itself once it runs.)
        assert!(wait_until(|| guard_threads() == 1), "one thread guards every socket");
        let (mut loud, loud_here) = connected(&listener);
        let (mut quiet, quiet_here) = connected(&listener);
        quiet.write_all(b"a few subscriptions").unwrap();
        assert!(
            flood_until(&mut loud, &loud_here, || guard.cuts().count == 1),
            "the loud peer is never cut"
        );
        let cuts = guard.cuts();
        assert_eq!(cuts.names.len(), 1);
        assert!(cuts.names[0].starts_with("127.0.0.1:"), "{cuts:?}");
        // The quiet one is untouched.
        quiet.write_all(b" more").unwrap();
        let mut got = [0u8; 24];
        (&quiet_here).read_exact(&mut got).unwrap();
        assert_eq!(&got, b"a few subscriptions more");
        assert_eq!(guard.cuts().count, 1);
        assert_eq!(
            other_guard.cuts().count,
            0,
            "the cut is booked on the socket it was made for"
        );
    }

    #[test]
    fn the_busiest_peer_is_cut_on_demand_above_a_least() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let guard = FloodGuard::start(&format!("tcp://{}", listener.local_addr().unwrap()), true, "Snk").unwrap();
        let (mut a, _a_here) = connected(&listener);
        let (mut b, _b_here) = connected(&listener);
        a.write_all(&[0; 3000]).unwrap();
        b.write_all(&[0; 300]).unwrap();
        assert!(wait_until(|| connections(guard.shared.end)
            .iter()
            .filter_map(|c| bytes_received(c.fd))
            .sum::<u64>()
            == 3300));
        assert_eq!(guard.cut_busiest(1 << 20), None, "nobody sent a MiB");
        assert_eq!(guard.cut_busiest(1000), Some(a.local_addr().unwrap()));
        let mut rest = Vec::new();
        assert_eq!(a.read_to_end(&mut rest).unwrap(), 0, "the cut peer reads the end");
        assert_eq!(guard.cut_busiest(1000), None, "the other sent 300 bytes");
    }

    #[test]
    fn only_connections_of_the_bound_address_are_looked_at() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let (_client, _here) = connected(&listener);
        let (_stranger, _there) = connected(&other);
        let mine = connections(End::Bound(listener.local_addr().unwrap()));
        assert_eq!(mine.len(), 1, "{mine:?}");
        let wildcard = SocketAddr::new(IpAddr::from([0, 0, 0, 0]), listener.local_addr().unwrap().port());
        assert_eq!(connections(End::Bound(wildcard)).len(), 1);
    }

    #[test]
    fn a_socket_that_connects_is_guarded_against_the_peer_it_connected_to() {
        let peer = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = peer.local_addr().unwrap();
        let guard = FloodGuard::start(&format!("tcp://{at}"), false, "Snk").unwrap();
        // The guarded socket is the one that connected; the flooding peer accepted it.
        let ours = TcpStream::connect(at).unwrap();
        let (mut flooding, _) = peer.accept().unwrap();
        let held = connections(End::ConnectedTo(at));
        assert_eq!(held.len(), 1, "only the connecting side: {held:?}");
        assert_eq!(held[0].peer, at);
        assert!(flood_until(&mut flooding, &ours, || guard.cuts().count == 1));
        assert_eq!(guard.cuts().names, vec![at.to_string()]);
    }

    #[test]
    fn endpoints_other_than_tcp_are_not_guarded() {
        assert!(FloodGuard::start("ipc:///tmp/x", true, "Snk").is_none());
        let by_name = FloodGuard::start("tcp://localhost:5555", false, "Snk").unwrap();
        assert_eq!(by_name.shared.end, End::ConnectedTo("127.0.0.1:5555".parse().unwrap()));
        assert_eq!(parse_tcp("tcp://*:5555"), Some("0.0.0.0:5555".parse().unwrap()));
        assert_eq!(parse_tcp("tcp://[::1]:7"), Some("[::1]:7".parse().unwrap()));
    }
}
