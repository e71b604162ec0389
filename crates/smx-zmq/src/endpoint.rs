//! Endpoint validation and the ipc socket files' private directory.
//!
//! Checked before any socket exists, so a typo is reported with the accepted forms instead of
//! libzmq's bare `EINVAL`. An ipc endpoint given as a bare name (`ipc://feeds`) lives in a
//! per-user private directory (mode 0700); an absolute path is used as given, and a missing
//! parent directory is created with mode 0700. A path that holds anything but a socket nobody
//! listens on is refused and left as it is; the binder creates the socket itself (libzmq would
//! unlink the path first) and removes it, if it is still its own, and any directory it created,
//! at the end.

use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

/// Longest path a Unix domain socket accepts (`sun_path` minus the terminating NUL).
const MAX_IPC_PATH: usize = 107;

/// Where an endpoint points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// `port` is `None` for an ephemeral port (`*` or `0`, binding only).
    Tcp {
        host: String,
        port: Option<u16>,
    },
    /// `abstract_name`: a Linux abstract socket (`ipc://@name`), no file.
    Ipc {
        path: PathBuf,
        abstract_name: bool,
    },
    Inproc {
        name: String,
    },
}

/// A validated endpoint and the string handed to libzmq.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// As written in the configuration (used in the report).
    pub written: String,
    /// As handed to libzmq (a bare ipc name resolved to its private directory).
    pub resolved: String,
    pub transport: Transport,
}

/// The host part of a tcp endpoint as libzmq can bind it: an address, `*`, an interface of
/// this machine (`eth0`, `eth0.100`) or an address with a zone as written; a host name as an
/// IPv4 address it has on this machine, one that is not loopback first (a distribution's hosts
/// file may give the machine's own name `127.0.1.1` beside the address others reach it at).
/// libzmq's connecting side resolves a name to IPv4 unless asked for IPv6, so a name with IPv6
/// addresses alone here, or none, or one that does not resolve, is refused, saying what to
/// write instead.
fn bind_address(text: &str, host: &str) -> Result<String, String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if host == "*" || host.contains('%') || bare.parse::<std::net::IpAddr>().is_ok() || is_interface(host) {
        return Ok(host.to_string());
    }
    let addresses: Vec<std::net::IpAddr> = match std::net::ToSocketAddrs::to_socket_addrs(&(host, 0)) {
        Ok(addrs) => addrs.map(|a| a.ip()).collect(),
        Err(_) => {
            return Err(format!(
                "cannot bind {text}: '{host}' is no interface of this machine and no host name it can \
                 resolve: write one of its addresses, e.g. tcp://10.0.0.2:PORT"
            ));
        }
    };
    let ours = |ip: &&std::net::IpAddr| ip.is_ipv4() && std::net::UdpSocket::bind((**ip, 0)).is_ok();
    let chosen = addresses
        .iter()
        .filter(|ip| !ip.is_loopback())
        .find(ours)
        .or_else(|| addresses.iter().find(ours));
    match chosen {
        Some(ip) => Ok(ip.to_string()),
        None => {
            let listed: Vec<String> = addresses.iter().map(ToString::to_string).collect();
            Err(format!(
                "cannot bind {text}: '{host}' resolves to {}, none of them an IPv4 address of this machine \
                 (a name is dialled at its IPv4 address): write the address to bind, e.g. tcp://[::1]:PORT \
                 for IPv6",
                listed.join(", ")
            ))
        }
    }
}

/// Whether `name` is a network interface of this machine (`eth0`, `eth0.100`), which libzmq
/// binds by name.
fn is_interface(name: &str) -> bool {
    !name.is_empty()
        && !name.contains('/')
        && name != "."
        && name != ".."
        && Path::new("/sys/class/net").join(name).exists()
}

impl Endpoint {
    /// Parses `text` for a socket that binds (`binding`) or connects.
    pub fn parse(text: &str, binding: bool) -> Result<Endpoint, String> {
        let forms = "write tcp://HOST:PORT, ipc://PATH (or ipc://NAME for a private directory) or inproc://NAME";
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| format!("'{text}' has no transport: {forms}"))?;
        let (resolved, transport) = match scheme {
            "tcp" => {
                let (host, port) = rest
                    .rsplit_once(':')
                    .ok_or_else(|| format!("'{text}' has no port: write tcp://HOST:PORT"))?;
                if host.is_empty() || host.contains(['/', ' ']) {
                    return Err(format!("'{text}' has no valid host: write tcp://HOST:PORT"));
                }
                let port = match port {
                    "*" | "0" if binding => None,
                    "*" | "0" => {
                        return Err(format!(
                            "'{text}': a connecting socket needs a concrete port, not '{port}'"
                        ));
                    }
                    p => match p.parse::<u16>() {
                        Ok(n) if n > 0 => Some(n),
                        _ => return Err(format!("'{text}': port '{p}' is not a number in 1..65535")),
                    },
                };
                let resolved = match port {
                    Some(_) => text.to_string(),
                    None => format!("tcp://{host}:*"),
                };
                (
                    resolved,
                    Transport::Tcp {
                        host: host.to_string(),
                        port,
                    },
                )
            }
            "ipc" => {
                if rest.is_empty() {
                    return Err(format!("'{text}' has no path: {forms}"));
                }
                let (path, abstract_name) = if let Some(name) = rest.strip_prefix('@') {
                    (PathBuf::from(name), true)
                } else if rest.starts_with('/') {
                    (PathBuf::from(rest), false)
                } else {
                    if rest.contains('/') {
                        return Err(format!(
                            "'{text}': a relative ipc name may not contain '/': use an absolute path"
                        ));
                    }
                    (private_dir()?.join(rest), false)
                };
                let resolved = if abstract_name {
                    text.to_string()
                } else {
                    format!("ipc://{}", path.display())
                };
                if resolved.len() - "ipc://".len() > MAX_IPC_PATH {
                    return Err(format!(
                        "'{text}': the socket path '{}' is longer than {MAX_IPC_PATH} bytes",
                        path.display()
                    ));
                }
                (resolved, Transport::Ipc { path, abstract_name })
            }
            "inproc" => {
                if rest.is_empty() {
                    return Err(format!("'{text}' has no name: {forms}"));
                }
                (text.to_string(), Transport::Inproc { name: rest.to_string() })
            }
            other => return Err(format!("'{text}': unknown transport '{other}': {forms}")),
        };
        Ok(Endpoint {
            written: text.to_string(),
            resolved,
            transport,
        })
    }

    /// What to hand libzmq's bind: [`Endpoint::resolved`], with a host name replaced by the
    /// address it has on this machine ([`bind_address`]). Asked when the socket binds, on the
    /// machine where it does: a deployment checks the endpoints of boxes that run elsewhere.
    pub fn bind_target(&self) -> Result<String, String> {
        match &self.transport {
            Transport::Tcp { host, port } => {
                let host = bind_address(&self.written, host)?;
                Ok(match port {
                    Some(port) => format!("tcp://{host}:{port}"),
                    None => format!("tcp://{host}:*"),
                })
            }
            _ => Ok(self.resolved.clone()),
        }
    }

    /// Before the start: whether binding this endpoint can work now, checked without keeping
    /// anything (a tcp port already in use, an ipc socket file another process listens on, an
    /// ipc directory that is not private). Hosts that are not IP addresses (interface names,
    /// host names) are left to the bind ([`Endpoint::bind_target`]), which may run elsewhere.
    pub fn check_bind(&self) -> Result<(), String> {
        match &self.transport {
            Transport::Tcp { host, port: Some(port) } => {
                let ip = match host.as_str() {
                    "*" => Some(std::net::IpAddr::from([0u8; 4])),
                    h => h.trim_start_matches('[').trim_end_matches(']').parse().ok(),
                };
                let Some(ip) = ip else { return Ok(()) };
                match std::net::TcpListener::bind((ip, *port)) {
                    Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(self.address_in_use()),
                    Err(e) if e.kind() == std::io::ErrorKind::AddrNotAvailable => Err(format!(
                        "cannot bind {}: no such local address or interface",
                        self.written
                    )),
                    _ => Ok(()),
                }
            }
            Transport::Ipc {
                path,
                abstract_name: false,
            } => self.check_ipc_path(path),
            _ => Ok(()),
        }
    }

    /// Whether `path` may be bound: nothing is there, or a socket nobody listens on (what a run
    /// that was killed leaves behind). Anything else belongs to someone and is refused: libzmq
    /// would unlink it (a user's file, a symlink) or fail with a misleading "address in use" (a
    /// directory).
    fn check_ipc_path(&self, path: &Path) -> Result<(), String> {
        let meta = match std::fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(format!(
                    "cannot bind {}: cannot inspect {}: {e}",
                    self.written,
                    path.display()
                ));
            }
        };
        if !meta.file_type().is_socket() {
            return Err(format!(
                "cannot bind {}: {} exists and is {}, not a socket; smx binds only a path where nothing \
                 is or a socket nobody listens on, and never removes anything else: choose another path",
                self.written,
                path.display(),
                file_kind(&meta.file_type())
            ));
        }
        if someone_listens_on(path) {
            return Err(format!(
                "cannot bind {}: another process is listening on {} (address in use)",
                self.written,
                path.display()
            ));
        }
        Ok(())
    }

    /// The error of a bind refused with "address in use". A tcp port in the kernel's ephemeral
    /// range may be held by no listener at all but by a connection that took it as its local
    /// port (or its last minute in TIME-WAIT), so the message says so and what to do.
    pub fn address_in_use(&self) -> String {
        let mut message = format!(
            "cannot bind {}: address in use (another program or net is bound to it",
            self.written
        );
        if let Transport::Tcp { port: Some(port), .. } = &self.transport
            && let Some((first, last)) = crate::loopback::ephemeral_range()
            && (first..=last).contains(port)
        {
            message += &format!(
                ", or a connection uses it as its local port: {port} lies in the kernel's ephemeral \
                 range {first}-{last}; a port below {first} avoids that"
            );
        }
        message + ")"
    }

    /// Whether the endpoint can only be reached from this host (loopback tcp, ipc, inproc).
    pub fn is_local(&self) -> bool {
        match &self.transport {
            Transport::Tcp { host, .. } => {
                let h = host.trim_start_matches('[').trim_end_matches(']');
                h == "localhost" || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
            }
            Transport::Ipc { .. } | Transport::Inproc { .. } => true,
        }
    }

    /// For a bind that other hosts can reach (a wildcard or any non-loopback address), the
    /// warning to print, naming the exposed port: nothing authenticates the peers (this build's
    /// libzmq has no CURVE, see the security section of docs/guide/zmq.md), so anyone who reaches the port
    /// can send frames to a source or read a sink's stream.
    pub fn exposure_warning(&self, port: Option<u16>, curve: bool) -> Option<String> {
        let Transport::Tcp { host, .. } = &self.transport else {
            return None;
        };
        if self.is_local() || curve {
            return None;
        }
        let port = port.map_or_else(|| "an ephemeral port".to_string(), |p| format!("port {p}"));
        let reach = if matches!(host.as_str(), "*" | "0.0.0.0" | "::" | "[::]") {
            "on every network interface"
        } else {
            "to other hosts"
        };
        Some(format!(
            "binding {} exposes {port} {reach} without authentication: any peer that reaches it can send \
             or read messages (set curve_secret to authenticate peers, or bind to 127.0.0.1 to keep it local)",
            self.written
        ))
    }
}

/// The per-user private directory of bare ipc names: `$XDG_RUNTIME_DIR/smx-ipc` or
/// `$TMPDIR/smx-ipc-UID`, refused if it exists and someone else can enter it. It is not
/// created here: a binder creates it (mode 0700) and removes it again at the end if it is
/// then empty, so checking a configuration leaves nothing behind.
pub fn private_dir() -> Result<PathBuf, String> {
    let dir = private_dir_path();
    if std::fs::symlink_metadata(&dir).is_ok() {
        ensure_private(&dir)?;
    }
    Ok(dir)
}

fn private_dir_path() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(base) if base.is_dir() => base.join("smx-ipc"),
        _ => std::env::temp_dir().join(format!("smx-ipc-{}", uid())),
    }
}

fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// `dir` exists and is a directory of this user that nobody else may enter.
fn ensure_private(dir: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("cannot inspect {}: {e}", dir.display()))?;
    if !meta.is_dir() || meta.uid() != uid() || meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "ipc directory {} is not a private directory of this user (want a directory with mode 0700)",
            dir.display()
        ));
    }
    Ok(())
}

/// What a file type is, in words for an error.
fn file_kind(kind: &std::fs::FileType) -> &'static str {
    if kind.is_file() {
        "a regular file"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Whether a process listens on the socket file `path`. The kernel's table of Unix sockets
/// answers without connecting: a probe connection would be accepted by the listener and, ending
/// without a handshake, be counted by it as a broken peer. Only a path the table does not list
/// (another network namespace, a bind by a relative path) is probed by connecting.
fn someone_listens_on(path: &Path) -> bool {
    listed_as_listening(path) || std::os::unix::net::UnixStream::connect(path).is_ok()
}

/// Whether `/proc/net/unix` lists a listening socket bound to `path`.
fn listed_as_listening(path: &Path) -> bool {
    /// `__SO_ACCEPTCON` in the table's flags: the socket listens.
    const LISTENING: u32 = 1 << 16;
    let Ok(table) = std::fs::read_to_string("/proc/net/unix") else {
        return false;
    };
    let wanted = path.to_string_lossy();
    table.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.len() >= 8
            && u32::from_str_radix(fields[3], 16).is_ok_and(|flags| flags & LISTENING != 0)
            && fields[7..].join(" ") == wanted
    })
}

/// The files a binder must remove at the end.
#[derive(Debug, Default)]
pub struct IpcFiles {
    /// The socket this binder created: its path and its identity (device, inode), so that
    /// whatever replaced it at that path meanwhile is left alone.
    socket: Option<(PathBuf, u64, u64)>,
    /// The listening socket, until [`IpcFiles::take_listener`] hands it to libzmq.
    listener: Option<UnixListener>,
    /// Every directory this binder created, outermost first.
    created_dirs: Vec<PathBuf>,
}

impl IpcFiles {
    /// Before binding `endpoint`: creates a missing parent directory (mode 0700), refuses a
    /// path that holds anything but a socket nobody listens on, and creates the listening
    /// socket itself, so that libzmq is handed a socket (`ZMQ_USE_FD`) and unlinks no path:
    /// libzmq's own bind unlinks whatever is at the path first, and its close unlinks the
    /// path whatever is there by then.
    pub fn prepare_bind(endpoint: &Endpoint) -> Result<IpcFiles, String> {
        let Transport::Ipc {
            path,
            abstract_name: false,
        } = &endpoint.transport
        else {
            return Ok(IpcFiles::default());
        };
        let mut files = IpcFiles::default();
        if let Some(parent) = path.parent() {
            files.create_dirs(parent)?;
            if parent == private_dir_path() {
                ensure_private(parent)?;
            }
        }
        endpoint.check_ipc_path(path)?;
        // What is there now is a socket nobody listens on: the leftover of a run that was
        // killed. Only a socket is removed, and only one found that way just now.
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
            let _ = std::fs::remove_file(path);
        }
        let listener = UnixListener::bind(path).map_err(|e| match e.kind() {
            // Something appeared at the path since the check: it is not touched.
            std::io::ErrorKind::AddrInUse => format!(
                "cannot bind {}: {} appeared while the socket was being created (address in use)",
                endpoint.written,
                path.display()
            ),
            _ => format!(
                "cannot bind {}: cannot create the socket {}: {e}",
                endpoint.written,
                path.display()
            ),
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("cannot bind {}: {e}", endpoint.written))?;
        let meta = std::fs::symlink_metadata(path).map_err(|e| {
            format!(
                "cannot bind {}: cannot inspect {}: {e}",
                endpoint.written,
                path.display()
            )
        })?;
        files.socket = Some((path.clone(), meta.dev(), meta.ino()));
        files.listener = Some(listener);
        Ok(files)
    }

    /// The listening socket created by [`IpcFiles::prepare_bind`], for libzmq to take over.
    pub fn take_listener(&mut self) -> Option<UnixListener> {
        self.listener.take()
    }

    /// Creates `dir` and its missing ancestors, one level at a time with mode 0700, and
    /// remembers each level it created (not one that another process created meanwhile).
    fn create_dirs(&mut self, dir: &Path) -> Result<(), String> {
        let missing: Vec<&Path> = dir
            .ancestors()
            .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
            .collect();
        for level in missing.into_iter().rev() {
            match std::fs::DirBuilder::new().mode(0o700).create(level) {
                Ok(()) => self.created_dirs.push(level.to_path_buf()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    self.remove();
                    return Err(format!("cannot create ipc directory {}: {e}", level.display()));
                }
            }
        }
        Ok(())
    }

    /// Removes the socket file if it is still the one this binder created, and every directory
    /// this binder created, innermost first, as far as they are empty (another socket in one
    /// of them keeps it and its parents).
    pub fn remove(&mut self) {
        drop(self.listener.take());
        if let Some((path, dev, ino)) = self.socket.take()
            && std::fs::symlink_metadata(&path)
                .is_ok_and(|m| m.file_type().is_socket() && m.dev() == dev && m.ino() == ino)
        {
            let _ = std::fs::remove_file(path);
        }
        while let Some(dir) = self.created_dirs.pop() {
            if std::fs::remove_dir(&dir).is_err() {
                self.created_dirs.clear();
            }
        }
    }
}

impl Drop for IpcFiles {
    fn drop(&mut self) {
        self.remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_forms() {
        let e = Endpoint::parse("tcp://127.0.0.1:5555", false).unwrap();
        assert_eq!(
            e.transport,
            Transport::Tcp {
                host: "127.0.0.1".into(),
                port: Some(5555)
            }
        );
        assert_eq!(
            Endpoint::parse("tcp://127.0.0.1:*", true).unwrap().resolved,
            "tcp://127.0.0.1:*"
        );
        assert_eq!(
            Endpoint::parse("tcp://127.0.0.1:0", true).unwrap().resolved,
            "tcp://127.0.0.1:*"
        );
        assert!(matches!(
            Endpoint::parse("inproc://x", true).unwrap().transport,
            Transport::Inproc { .. }
        ));
        let abs = Endpoint::parse("ipc:///tmp/feeds/0", true).unwrap();
        assert_eq!(abs.resolved, "ipc:///tmp/feeds/0");
        let bare = Endpoint::parse("ipc://feeds", true).unwrap();
        assert!(bare.resolved.ends_with("/feeds"), "{}", bare.resolved);
    }

    #[test]
    fn bad_endpoints_are_explained() {
        for (text, binding, needle) in [
            ("localhost:5555", true, "no transport"),
            ("udp://x:1", true, "unknown transport 'udp'"),
            ("tcp://127.0.0.1", true, "no port"),
            ("tcp://:5", true, "no valid host"),
            ("tcp://h:99999", true, "not a number"),
            ("tcp://h:*", false, "concrete port"),
            ("ipc://", true, "no path"),
            ("ipc://a/b", true, "relative ipc name"),
            ("inproc://", true, "no name"),
        ] {
            let err = Endpoint::parse(text, binding).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
        let long = format!("ipc:///tmp/{}", "x".repeat(120));
        assert!(Endpoint::parse(&long, true).unwrap_err().contains("longer than"));
    }

    #[test]
    fn exposed_binds_are_flagged_with_their_port() {
        let e = Endpoint::parse("tcp://*:50030", true).unwrap();
        let warning = e.exposure_warning(Some(50030), false).unwrap();
        assert!(warning.contains("port 50030 on every network interface"), "{warning}");
        let host = Endpoint::parse("tcp://192.0.2.7:50030", true).unwrap();
        let warning = host.exposure_warning(Some(50030), false).unwrap();
        assert!(warning.contains("to other hosts without authentication"), "{warning}");
        let local = Endpoint::parse("tcp://127.0.0.1:50030", true).unwrap();
        assert_eq!(local.exposure_warning(Some(50030), false), None);
        assert_eq!(
            Endpoint::parse("ipc:///tmp/x", true)
                .unwrap()
                .exposure_warning(None, false),
            None
        );
    }

    #[test]
    fn ipc_binder_creates_a_private_parent_and_cleans_up() {
        let tmp = tempfile::tempdir().unwrap();
        let parent = tmp.path().join("feeds");
        let e = Endpoint::parse(&format!("ipc://{}/0", parent.display()), true).unwrap();
        let mut files = IpcFiles::prepare_bind(&e).unwrap();
        assert_eq!(std::fs::metadata(&parent).unwrap().permissions().mode() & 0o777, 0o700);
        assert!(std::fs::metadata(parent.join("0")).unwrap().file_type().is_socket());
        files.remove();
        assert!(!parent.exists());
    }

    /// `ipc:///a/b/c/sock` that created `a/b/c` removes all three, not only `c`.
    #[test]
    fn ipc_binder_removes_every_directory_it_created() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("a");
        let e = Endpoint::parse(&format!("ipc://{}/b/c/sock", top.display()), true).unwrap();
        let mut files = IpcFiles::prepare_bind(&e).unwrap();
        for dir in [top.clone(), top.join("b"), top.join("b/c")] {
            assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        }
        files.remove();
        assert!(!top.exists(), "every level the binder created is gone");
        assert!(tmp.path().exists(), "what existed before stays");
        // A directory that holds something else stays, and so do its parents.
        let mut files = IpcFiles::prepare_bind(&e).unwrap();
        std::fs::write(top.join("b/other"), b"").unwrap();
        files.remove();
        assert!(top.join("b/other").exists() && !top.join("b/c").exists());
    }

    /// libzmq binds addresses and interfaces, not host names: a name is bound at its IPv4
    /// address on this machine, as the connecting side resolves it, and only when the socket
    /// binds; the endpoint keeps the name as written. (`localhost` comes from the hosts file, so
    /// the test asks no name server.)
    #[test]
    fn a_host_name_is_bound_at_its_ipv4_address_on_this_machine() {
        let port = crate::loopback::free_loopback_port().unwrap();
        let text = format!("tcp://localhost:{port}");
        let bound = Endpoint::parse(&text, true).unwrap();
        assert_eq!(bound.bind_target().unwrap(), format!("tcp://127.0.0.1:{port}"));
        assert_eq!(
            (bound.written.as_str(), bound.resolved.as_str()),
            (text.as_str(), text.as_str())
        );
        let target = |text: &str| Endpoint::parse(text, true).unwrap().bind_target().unwrap();
        assert_eq!(target("tcp://LocalHost:5555"), "tcp://127.0.0.1:5555");
        assert_eq!(target("tcp://*:*"), "tcp://*:*");
        assert_eq!(target("tcp://lo:5555"), "tcp://lo:5555");
        assert_eq!(target("tcp://[fe80::1%lo]:5555"), "tcp://[fe80::1%lo]:5555");
        assert_eq!(target("ipc://@smx-name"), "ipc://@smx-name");
    }

    #[test]
    fn a_port_below_the_ephemeral_range_in_use_gets_no_range_hint() {
        let port = crate::loopback::free_loopback_port().unwrap();
        let _listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        let e = Endpoint::parse(&format!("tcp://127.0.0.1:{port}"), true).unwrap();
        let err = e.check_bind().unwrap_err();
        assert!(err.contains("address in use") && !err.contains("ephemeral"), "{err}");
    }

    #[test]
    fn a_port_in_use_is_found_before_binding() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let e = Endpoint::parse(&format!("tcp://127.0.0.1:{port}"), true).unwrap();
        let err = e.check_bind().unwrap_err();
        assert!(err.contains("address in use"), "{err}");
        // The kernel gave that port from its ephemeral range, so the hint names the range.
        let hinted = crate::loopback::ephemeral_range().is_some();
        assert_eq!(err.contains("ephemeral range"), hinted, "{err}");
        drop(listener);
        assert_eq!(e.check_bind(), Ok(()));
        assert_eq!(Endpoint::parse("tcp://127.0.0.1:*", true).unwrap().check_bind(), Ok(()));
        let named = Endpoint::parse(&format!("tcp://lo:{port}"), true).unwrap();
        assert_eq!(named.check_bind(), Ok(()), "interface names are left to libzmq");
    }

    #[test]
    fn loopback_endpoints_are_local() {
        for (text, local) in [
            ("tcp://127.0.0.1:1", true),
            ("tcp://127.0.0.2:1", true),
            ("tcp://localhost:1", true),
            ("tcp://[::1]:1", true),
            ("tcp://*:1", false),
            ("tcp://0.0.0.0:1", false),
            ("tcp://192.0.2.7:1", false),
            ("tcp://eth0:1", false),
            ("ipc:///tmp/x", true),
            ("inproc://x", true),
        ] {
            assert_eq!(Endpoint::parse(text, true).unwrap().is_local(), local, "{text}");
        }
    }

    #[test]
    fn a_listening_ipc_socket_is_in_use() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("busy");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let e = Endpoint::parse(&format!("ipc://{}", path.display()), true).unwrap();
        assert!(IpcFiles::prepare_bind(&e).unwrap_err().contains("address in use"));
        assert!(e.check_bind().unwrap_err().contains("address in use"));
        assert!(path.exists(), "a socket in use is kept");
    }

    /// Whatever took the socket's path during the run is not the binder's to remove.
    #[test]
    fn a_file_that_replaced_the_socket_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("sock");
        let e = Endpoint::parse(&format!("ipc://{}", path.display()), true).unwrap();
        let mut files = IpcFiles::prepare_bind(&e).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"mine").unwrap();
        files.remove();
        assert_eq!(std::fs::read(&path).unwrap(), b"mine");
        // A socket of someone else at the path is not the binder's either.
        let mut files =
            IpcFiles::prepare_bind(&Endpoint::parse(&format!("ipc://{}/other", tmp.path().display()), true).unwrap())
                .unwrap();
        let other = tmp.path().join("other");
        std::fs::remove_file(&other).unwrap();
        let _theirs = std::os::unix::net::UnixListener::bind(&other).unwrap();
        files.remove();
        assert!(other.exists());
    }

    #[test]
    fn a_non_socket_at_the_path_is_refused_and_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("notes.txt");
        std::fs::write(&path, b"notes").unwrap();
        let e = Endpoint::parse(&format!("ipc://{}", path.display()), true).unwrap();
        let err = IpcFiles::prepare_bind(&e).unwrap_err();
        assert!(err.contains("is a regular file, not a socket"), "{err}");
        assert!(e.check_bind().unwrap_err().contains("a regular file"));
        assert_eq!(std::fs::read(&path).unwrap(), b"notes");
    }

    /// Finding a listener through the kernel's table leaves it without a probe connection.
    #[test]
    fn a_listener_is_found_without_connecting() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("busy");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        assert!(listed_as_listening(&path));
        assert!(someone_listens_on(&path));
        assert!(listener.accept().is_err(), "no probe connection reached the listener");
        drop(listener);
        assert!(!listed_as_listening(&path) && !someone_listens_on(&path));
    }
}
