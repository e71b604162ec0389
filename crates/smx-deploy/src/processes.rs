//! The `[process.NAME]` tables of a configuration file: where each process runs and how it is
//! started.
//!
//! ```toml
//! [process.sensor]
//! host = "10.0.0.2"              # the address links use to reach it; absent: this machine
//! launch = "ssh user@10.0.0.2"   # command prefix that starts it there; absent: a child here
//! cores = [2, 3]                 # the cores its threads may use (its `--pin` list)
//! port = 28600                   # first tcp port of the links into it (remote hosts)
//! ```
//!
//! `main`, the process of every net without a `process` key, exists without a table.

use std::net::{ToSocketAddrs, UdpSocket};
use std::path::{Path, PathBuf};

use smx_runtime::config::{ConfigError, Origin};
use toml::de::{DeTable, DeValue};

/// The process of every net that names none.
pub const MAIN: &str = "main";

/// The first tcp port of the links into a process on another host, when its table sets none:
/// below the kernel's ephemeral range (32768-60999 by default), where an outgoing connection
/// of any program could hold it.
pub const DEFAULT_PORT: u16 = 28600;

/// A link takes two ports, its own and the next (its watch connection's).
const PORT_RANGE: &str = "must be a tcp port, 1..65534 (each link takes it and the next one)";

/// One process of a deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub name: String,
    /// The address links use to reach it; `None`: this machine.
    pub host: Option<String>,
    /// The command prefix that starts it, as written (its words: [`launch_prefix`]); `None`: a
    /// child of `smxrun`.
    pub launch: Option<String>,
    /// The cores its threads may use.
    pub cores: Option<Vec<usize>>,
    /// First tcp port of links into it when it is reached over tcp.
    pub port: u16,
    /// Where its table starts (`BuiltIn` for an undeclared `main`).
    pub origin: Origin,
    /// Where its `launch` was written, for what is found wrong with it later.
    pub launch_origin: Option<Origin>,
    /// Where its `host` was written, for what is found wrong with it later.
    pub host_origin: Option<Origin>,
}

impl Process {
    fn main() -> Self {
        Process {
            name: MAIN.to_string(),
            host: None,
            launch: None,
            cores: None,
            port: DEFAULT_PORT,
            origin: Origin::BuiltIn,
            launch_origin: None,
            host_origin: None,
        }
    }

    /// The words that run `command` (a program and its arguments) as this process: its
    /// `launch` prefix's words ([`launch_prefix`]), then `command`, each word of it quoted for
    /// every remote shell the prefix hands it to ([`remote_shells`]); `command` alone without
    /// one.
    pub fn launch_words(&self, command: &[String]) -> Vec<String> {
        let launch = self.launch.as_deref().unwrap_or("");
        let shells = remote_shells(launch);
        let mut words = prefix_words(launch);
        words.extend(
            command
                .iter()
                .map(|word| (0..shells).fold(word.clone(), |word, _| shell_word(&word))),
        );
        words
    }

    /// The machine it runs on: processes with the same machine share memory.
    pub fn machine(&self) -> Option<&str> {
        self.launch.as_ref().and(self.host.as_deref())
    }

    /// Whether its threads run on this machine's cores: a child here, one that `launch` starts
    /// in a network namespace here, or one whose host is an address of this machine (a name
    /// other than `localhost` is taken for another machine, without asking a resolver).
    pub fn on_this_machine(&self) -> bool {
        match (&self.launch, &self.host) {
            (None, _) => true,
            (Some(launch), _) if in_a_namespace(launch) => true,
            (Some(_), Some(host)) => {
                host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|_| is_local(host))
            }
            (Some(_), None) => false,
        }
    }

    /// Whether its loopback address is this machine's: it runs here, outside a network
    /// namespace of its own.
    pub fn shares_this_loopback(&self) -> bool {
        self.on_this_machine() && !self.launch.as_deref().is_some_and(in_a_namespace)
    }
}

/// Every process a configuration declares, `main` always among them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Processes {
    list: Vec<Process>,
    /// Read as planned ([`Processes::from_toml_as_planned`]): nothing is asked of this machine.
    planned: bool,
}

impl Default for Processes {
    fn default() -> Self {
        Processes {
            list: vec![Process::main()],
            planned: false,
        }
    }
}

impl Processes {
    /// The processes of a `--config` file's text (only `main` when it has no
    /// `[process.NAME]`), taken from the text its settings were read from
    /// ([`smx_runtime::config::ConfigLayers::file_text`]); `path` names it in errors. What
    /// this machine must have to start them is checked too: a `launch` program, the `cores`
    /// of a process that runs here, a `host` without `launch` that is an address here.
    pub fn from_toml(path: &Path, text: &str) -> Result<Self, ConfigError> {
        Self::read(path, text, Machine::This)
    }

    /// [`Processes::from_toml`] of a deployment as planned, to be drawn from any machine:
    /// nothing is asked of this one, only of the file.
    pub fn from_toml_as_planned(path: &Path, text: &str) -> Result<Self, ConfigError> {
        Self::read(path, text, Machine::Any)
    }

    fn read(path: &Path, text: &str, machine: Machine) -> Result<Self, ConfigError> {
        let mut processes = Self::read_tables(path, text, machine)?;
        processes.planned = machine == Machine::Any;
        Ok(processes)
    }

    /// Whether the processes were read as planned, for a drawing: what depends on the machine
    /// that reads them (which addresses are its own, which cores it has) is not asked.
    pub fn as_planned(&self) -> bool {
        self.planned
    }

    fn read_tables(path: &Path, text: &str, machine: Machine) -> Result<Self, ConfigError> {
        let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
        let document = DeTable::parse(text)
            .map_err(|e| ConfigError::new(at(path, e.span().map_or(0, |s| line_of(s.start))), "malformed TOML"))?;
        let mut processes = Processes::default();
        let Some(table) = document.get_ref().get("process") else {
            return Ok(processes);
        };
        let here = at(path, line_of(table.span().start));
        let table = table
            .get_ref()
            .as_table()
            .ok_or_else(|| ConfigError::new(here, "'process' must be tables: [process.NAME]"))?;
        for (name, body) in table.iter() {
            let origin = at(path, line_of(name.span().start));
            let name = name.get_ref().to_string();
            smx_runtime::config::check_process_name(&name).map_err(|m| ConfigError::new(origin.clone(), m))?;
            let body = body.get_ref().as_table().ok_or_else(|| {
                ConfigError::new(
                    origin.clone(),
                    format!("'process.{name}' must be a table: [process.{name}]"),
                )
            })?;
            let mut process = Process {
                name: name.clone(),
                origin: origin.clone(),
                ..Process::main()
            };
            let mut lines = KeyLines::default();
            for (key, value) in body.iter() {
                let origin = at(path, line_of(key.span().start));
                let bad = |m: &str| {
                    ConfigError::new(origin.clone(), format!("process '{name}': {m}")).key(key.get_ref().as_ref())
                };
                match (key.get_ref().as_ref(), value.get_ref()) {
                    ("host", DeValue::String(s)) if !s.trim().is_empty() => {
                        let host = s.trim();
                        check_host(host).map_err(|m| bad(&m))?;
                        process.host = Some(host.to_string());
                        process.host_origin = Some(origin.clone());
                    }
                    ("launch", DeValue::String(s)) if !s.trim().is_empty() => {
                        let launch = s.trim().to_string();
                        // A shell would take the rest for a comment; so would the split.
                        if launch.split_whitespace().any(|w| w.starts_with('#')) {
                            return Err(bad(
                                "a word begins with '#', which starts a comment in a shell's words: quote it ('#...')",
                            ));
                        }
                        let words = launch_prefix(&launch).ok_or_else(|| {
                            bad(
                                "a quote is not closed (its words are split as a POSIX shell splits them: \
                                 'a b' or \"a b\" is one word)",
                            )
                        })?;
                        let command = words.first().map_or("", String::as_str);
                        if machine == Machine::This && !runs_here(command) {
                            return Err(bad(&format!(
                                "launch command '{command}' is not a program here (not on PATH, or not executable)"
                            )));
                        }
                        process.launch = Some(launch);
                        process.launch_origin = Some(origin.clone());
                    }
                    ("cores", value) => {
                        process.cores = Some(cores(value).map_err(|m| bad(&m))?);
                        lines.cores = Some(origin.clone());
                    }
                    ("port", DeValue::Integer(i)) => {
                        process.port = i
                            .as_str()
                            .replace('_', "")
                            .parse()
                            .ok()
                            .filter(|p| (1..u16::MAX).contains(p))
                            .ok_or_else(|| bad(&format!("{PORT_RANGE}, not {}", shown(value.get_ref()))))?
                    }
                    ("host" | "launch", _) => {
                        return Err(bad(&format!(
                            "must be a non-empty string, not {}",
                            shown(value.get_ref())
                        )));
                    }
                    ("port", _) => return Err(bad(&format!("{PORT_RANGE}, not {}", shown(value.get_ref())))),
                    _ => {
                        return Err(
                            ConfigError::new(origin.clone(), format!("process '{name}': unknown key"))
                                .key(key.get_ref().as_ref())
                                .choices(["host", "launch", "cores", "port"]),
                        );
                    }
                }
            }
            check(&process, &lines, machine)?;
            match processes.list.iter_mut().find(|p| p.name == name) {
                Some(main) => *main = process,
                None => processes.list.push(process),
            }
        }
        Ok(processes)
    }

    /// Refuses a process that `launch` starts in a network namespace this machine does not
    /// have: its start would fail only once the others run. The error is at the `launch` key.
    /// Processes read as planned are not asked: the machine that starts them has them.
    pub fn check_namespaces(&self) -> Result<(), ConfigError> {
        for process in self.list.iter().filter(|_| !self.planned) {
            if let Some(problem) = process.launch.as_deref().and_then(namespace_problem) {
                let at = process.launch_origin.as_ref().unwrap_or(&process.origin);
                return Err(ConfigError::new(
                    at.clone(),
                    format!("process '{}': {problem}", process.name),
                ));
            }
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Process> {
        self.list.iter().find(|p| p.name == name)
    }

    pub fn names(&self) -> Vec<String> {
        self.list.iter().map(|p| p.name.clone()).collect()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Process> {
        self.list.iter()
    }
}

/// A process that runs here but says it is reached at an address this machine does not have
/// could never be reached by its links; one with `launch` needs the address its links use.
/// The cores of a process that runs here must be ones this machine lets `smxrun` use: found
/// only once the process started, the mistake would end a run that already began.
fn check(process: &Process, lines: &KeyLines, machine: Machine) -> Result<(), ConfigError> {
    let here = machine == Machine::This;
    if let (Some(cores), true, Some(at)) = (&process.cores, here && process.on_this_machine(), &lines.cores) {
        check_cores_here(process, cores, at.clone(), &crate::cores::allowed())?;
    }
    // At the key that is wrong, or could be made right.
    let host_at = process.host_origin.clone().unwrap_or_else(|| process.origin.clone());
    let launch_at = process.launch_origin.clone().unwrap_or_else(|| process.origin.clone());
    match (&process.host, &process.launch) {
        (Some(host), None) if here && !is_local(host) => Err(ConfigError::new(
            host_at,
            format!(
                "process '{}': host '{host}' is not an address of this machine and the process has no `launch` to start it there \
                 (e.g. launch = \"ssh user@{host}\")",
                process.name
            ),
        )),
        (None, Some(launch)) => {
            // The example fits the launch: a loopback address is refused for a namespace's
            // process and reaches nothing through a remote shell.
            let example = if in_a_namespace(launch) {
                let namespace = prefix_words(launch)
                    .into_iter()
                    .nth(3)
                    .unwrap_or_else(|| "NS".to_string());
                format!(
                    "the address it has in network namespace '{namespace}', which `ip netns exec {namespace} ip \
                     -brief address` lists"
                )
            } else if remote_shells(launch) > 0 {
                "the address of the host it starts on".to_string()
            } else {
                "`host = \"127.0.0.1\"` when it starts the process on this machine, whose links then run over tcp"
                    .to_string()
            };
            Err(ConfigError::new(
                launch_at,
                format!(
                    "process '{}': `launch` starts it elsewhere, so `host` must give the address its links reach it at \
                     ({example}; without `launch` a process here is a child of smxrun, linked in shared memory)",
                    process.name
                ),
            ))
        }
        (Some(host), Some(launch)) if in_a_namespace(launch) && is_loopback(host) => Err(ConfigError::new(
            host_at,
            format!(
                "process '{}': host '{host}' is a loopback address, but `launch` starts it in a network namespace of \
                 its own, whose loopback the other processes cannot reach: give the address it has in that namespace",
                process.name
            ),
        )),
        (Some(host), Some(launch)) if here && let Some(namespace) = namespace_lacking(launch, host) => {
            Err(ConfigError::new(
                host_at,
                format!(
                    "process '{}': host '{host}' is not an address of network namespace '{namespace}', where `launch` \
                     starts it, so its links could not bind it: give one of its addresses (`ip netns exec {namespace} \
                     ip -brief address` lists them)",
                    process.name
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// The network namespace an `ip netns exec NS` launch starts a process in, when that namespace
/// exists and lacks `host`: asked from a thread that enters the namespace (which needs the
/// rights `ip netns exec` needs; without them nothing is said, and the process's own bind
/// names the address once it starts).
fn namespace_lacking(launch: &str, host: &str) -> Option<String> {
    let (namespace, lacks) = in_its_namespace(launch, || !is_local(host))?;
    lacks.then_some(namespace)
}

/// Runs `look` inside the network namespace an `ip netns exec NS` launch starts a process in,
/// on a thread of its own that enters it; the namespace's name and the answer. `None` for
/// another launch, a namespace this machine lacks, or one this process may not enter.
pub(crate) fn in_its_namespace<R: Send>(launch: &str, look: impl FnOnce() -> R + Send) -> Option<(String, R)> {
    use std::os::fd::AsRawFd;
    if !in_a_namespace(launch) {
        return None;
    }
    let namespace = prefix_words(launch).into_iter().nth(3)?;
    let file = std::fs::File::open(Path::new("/run/netns").join(&namespace)).ok()?;
    let answer = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // SAFETY: `setns` moves this thread alone into the namespace, and the thread
                // ends right after the look; `file` is an open namespace file.
                let entered = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } == 0;
                entered.then(look)
            })
            .join()
            .ok()
            .flatten()
    })?;
    Some((namespace, answer))
}

/// Which machine a configuration is read for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Machine {
    /// This one, to start the processes: what they need here is checked.
    This,
    /// None in particular, to draw the deployment as planned.
    Any,
}

/// Where the keys of a process's table were written, for errors found once the table is read.
#[derive(Default)]
struct KeyLines {
    cores: Option<Origin>,
}

/// The programs that hand the words after their destination to a shell on the other host
/// rather than run them as they are: `ssh` (and `autossh`, `slogin`, which run it) and `rsh`.
const REMOTE_SHELLS: [&str; 4] = ["ssh", "autossh", "slogin", "rsh"];

/// How many shells read the words after the `launch` prefix again before they become a
/// program's arguments: one per remote shell program among the prefix's words
/// (`ssh gateway ssh host` is two).
///
/// A prefix runs the words after it in one of two ways. `env`, `ip netns exec NS`, `sudo`,
/// `nsenter` and the like exec them as an argument vector, each word as it is: quotes there
/// would stay in the word. `ssh host` joins them with spaces into one line that the remote
/// login shell splits and expands again: a path with a space falls apart, and `'`, `$` or `*`
/// in it change it. Running the remote side as `sh -c LINE` instead does not serve both
/// either: after `ssh` the line is itself a word that `ssh` joins unquoted, after `env` its
/// quotes would be read once too few. So the words are quoted once per remote shell in the
/// prefix, each only when it holds anything but letters, digits and `_-+=@,./:`, so the usual
/// words (an `smxrun` path without spaces, the subcommand, a process name) stay as they are
/// on either kind of prefix. A prefix that runs a shell some other way (a wrapper script
/// around `ssh` under another name) gets the words as they are.
pub fn remote_shells(launch: &str) -> usize {
    prefix_words(launch)
        .iter()
        .filter(|word| REMOTE_SHELLS.contains(&word.rsplit('/').next().unwrap_or(word)))
        .count()
}

/// The words of a `launch` prefix as a POSIX shell splits them, so that quotes or a
/// backslash keep a word with spaces whole (`ssh -i '/keys/my key' user@host`); `None` when
/// a quote is not closed. The prefix is run as these words, not through a shell: `$HOME` or
/// `*` in it stay as they are.
pub fn launch_prefix(launch: &str) -> Option<Vec<String>> {
    shlex::split(launch)
}

/// [`launch_prefix`] of a prefix read from a configuration, which refused one whose quote is
/// not closed; such a prefix given another way is split on whitespace.
fn prefix_words(launch: &str) -> Vec<String> {
    launch_prefix(launch).unwrap_or_else(|| launch.split_whitespace().map(str::to_string).collect())
}

/// Whether `word` means itself to a POSIX shell, unquoted.
fn plain_word(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-+=@,./:".contains(c))
}

/// `word` as one word of a POSIX shell: as it is when it has nothing a shell reads, else in
/// single quotes, each `'` in it closed, escaped and opened again.
pub fn shell_word(word: &str) -> String {
    if plain_word(word) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The network namespace an `ip netns exec NS` launch starts its process in.
pub fn network_namespace(launch: &str) -> Option<String> {
    in_a_namespace(launch)
        .then(|| prefix_words(launch).into_iter().nth(3))
        .flatten()
}

/// A `launch` that starts the process inside a network namespace (`ip netns exec NS`).
fn in_a_namespace(launch: &str) -> bool {
    let words = prefix_words(launch);
    words.first().is_some_and(|w| w.rsplit('/').next() == Some("ip")) && words.get(1).is_some_and(|w| w == "netns")
}

/// What is wrong with an `ip netns exec NS` launch: no namespace named, or one this machine
/// does not have (`ip netns add` makes them under /run/netns).
fn namespace_problem(launch: &str) -> Option<String> {
    if !in_a_namespace(launch) {
        return None;
    }
    let Some(namespace) = prefix_words(launch).into_iter().nth(3) else {
        return Some(format!(
            "launch '{launch}' names no network namespace (e.g. launch = \"ip netns exec NS\")"
        ));
    };
    (!Path::new("/run/netns").join(&namespace).exists())
        .then(|| format!("network namespace '{namespace}' does not exist here (`ip netns list` shows those that do)"))
}

/// Whether `host` is a loopback address or `localhost` (in any case): only processes of its
/// own machine, outside network namespaces, reach it there.
pub(crate) fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn check_cores_here(process: &Process, cores: &[usize], at: Origin, allowed: &[usize]) -> Result<(), ConfigError> {
    match cores.iter().find(|c| !allowed.contains(c)) {
        Some(bad) if !allowed.is_empty() => {
            let list: Vec<String> = allowed.iter().map(usize::to_string).collect();
            Err(ConfigError::new(
                at,
                format!(
                    "process '{}': core {bad} is not one smxrun may run on here (allowed: {}; the machine's cores, \
                     less any that taskset or a cgroup keeps from it)",
                    process.name,
                    list.join(", ")
                ),
            )
            .key("cores"))
        }
        _ => Ok(()),
    }
}

/// True when `command` names an executable file, by its path or found on `PATH` as a shell
/// would: `launch` runs here, so a typo in it is known before anything starts.
fn runs_here(command: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable =
        |path: &Path| std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if command.contains('/') {
        return executable(Path::new(command));
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| executable(&dir.join(command))))
}

/// True when `host` resolves to an address of this machine (a socket can be bound to it).
/// A host is an IP address or a host name alone: it goes into endpoints (`tcp://HOST:PORT`)
/// and `launch` suggestions, where a port, a scheme or a space would make one that no
/// program can reach, found only when the run starts.
fn check_host(host: &str) -> Result<(), String> {
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        let one_host = match ip {
            std::net::IpAddr::V4(v4) => !(v4.is_multicast() || v4.is_broadcast() || v4.is_unspecified()),
            std::net::IpAddr::V6(v6) => !(v6.is_multicast() || v6.is_unspecified()),
        };
        return if one_host {
            Ok(())
        } else {
            Err(format!(
                "'{host}' is not the address of one host (a multicast, broadcast or unspecified address): give \
                 the address the other processes reach it at, e.g. host = \"10.0.0.2\""
            ))
        };
    }
    // Digits and dots alone make no host name (its last label is never all digits): a
    // mistyped IPv4 address, which a resolver would be asked for in vain.
    if host.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!(
            "'{host}' is not an IPv4 address: four numbers 0..255 joined by dots, e.g. host = \"10.0.0.2\""
        ));
    }
    let label_fine = |l: &str| {
        (1..=63).contains(&l.len())
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if host.len() <= 253 && host.split('.').all(label_fine) {
        return Ok(());
    }
    Err(format!(
        "'{host}' is not an IP address or a host name: give the address alone, e.g. host = \"10.0.0.2\" or \
         host = \"::1\" (the port goes in `port`)"
    ))
}

pub fn is_local(host: &str) -> bool {
    (host, 0)
        .to_socket_addrs()
        .map(|mut addrs| addrs.any(|a| UdpSocket::bind((a.ip(), 0)).is_ok()))
        .unwrap_or(false)
}

fn cores(value: &DeValue<'_>) -> Result<Vec<usize>, String> {
    let bad = |found: &DeValue<'_>| {
        format!(
            "must be a list of core numbers, e.g. cores = [2, 3], not {}",
            shown(found)
        )
    };
    let array = value.as_array().ok_or_else(|| bad(value))?;
    let list: Vec<usize> = array
        .iter()
        .map(|v| match v.get_ref() {
            DeValue::Integer(i) => {
                let number = i64::from_str_radix(&i.as_str().replace('_', ""), i.radix());
                number.ok().and_then(|n| usize::try_from(n).ok()).ok_or_else(|| {
                    format!(
                        "{} is no core number: cores are numbered from 0 up, e.g. cores = [2, 3]",
                        i.as_str()
                    )
                })
            }
            other => Err(bad(other)),
        })
        .collect::<Result<_, _>>()?;
    if list.is_empty() {
        return Err(
            "must name at least one core, e.g. cores = [2, 3] (leave it out for a share of this machine's)".into(),
        );
    }
    if let Some(twice) = list
        .iter()
        .enumerate()
        .find_map(|(i, c)| list[..i].contains(c).then_some(c))
    {
        return Err(format!("names core {twice} twice"));
    }
    Ok(list)
}

/// A value as the file has it, for a message that says what was found instead.
fn shown(value: &DeValue<'_>) -> String {
    match value {
        DeValue::Integer(i) => i.as_str().to_string(),
        DeValue::Float(f) => f.as_str().to_string(),
        DeValue::Boolean(b) => b.to_string(),
        DeValue::String(s) => format!("{:?}", s.as_ref()),
        DeValue::Array(_) => "a list".to_string(),
        other => format!("a {}", other.type_str()),
    }
}

fn at(path: &Path, line: usize) -> Origin {
    Origin::File {
        path: PathBuf::from(path),
        line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Processes, ConfigError> {
        Processes::from_toml(Path::new("d.toml"), text)
    }

    #[test]
    fn words_after_a_remote_shell_are_quoted_once_per_shell_and_after_an_exec_prefix_not_at_all() {
        let command: Vec<String> = ["/opt/smx run/smxrun", "__slice", "--process", "b", "it's $HOME"]
            .map(str::to_string)
            .to_vec();
        let with = |launch: Option<&str>| Process {
            launch: launch.map(str::to_string),
            ..Process::main()
        };
        assert_eq!(with(None).launch_words(&command), command);
        let env = with(Some("/usr/bin/env  A=1")).launch_words(&command);
        assert_eq!(env[..2], ["/usr/bin/env", "A=1"]);
        assert_eq!(env[2..], command[..]);
        // The prefix's own words as a shell splits them: a quoted word with a space is one.
        let key = with(Some("ssh -i '/keys/my key' user@host")).launch_words(&command);
        assert_eq!(key[..4], ["ssh", "-i", "/keys/my key", "user@host"]);
        assert_eq!(key[4], "'/opt/smx run/smxrun'");
        let netns = with(Some("ip netns exec sshless")).launch_words(&command);
        assert_eq!(netns[4..], command[..]);
        let ssh = with(Some("ssh -o ServerAliveInterval=1 user@host")).launch_words(&command);
        assert_eq!(
            ssh[4..],
            ["'/opt/smx run/smxrun'", "__slice", "--process", "b", r"'it'\''s $HOME'"]
        );
        let twice = with(Some("ip netns exec n /usr/bin/ssh gateway ssh host")).launch_words(&command);
        assert_eq!(twice[8], r"''\''/opt/smx run/smxrun'\'''");
        assert_eq!(twice[9], "__slice");
    }

    #[test]
    fn tables_become_processes_and_main_is_always_there() {
        let p = parse("[net.Src]\ncore = 0\n[process.a]\ncores = [0]\n[process.b]\nhost = \"10.1.1.2\"\nlaunch = \"ip netns exec n\"\nport = 48000\n").unwrap();
        assert_eq!(p.names(), vec!["main", "a", "b"]);
        assert_eq!(p.get("a").unwrap().cores, Some(vec![0]));
        assert_eq!(p.get("a").unwrap().machine(), None);
        assert_eq!(p.get("b").unwrap().machine(), Some("10.1.1.2"));
        assert_eq!(p.get("b").unwrap().port, 48000);
    }

    #[test]
    fn placement_errors_name_the_line() {
        // At the key to mend, not at the table's header.
        let err = parse("[process.far]\nhost = \"192.0.2.7\"\n").unwrap_err();
        assert!(
            err.to_string().starts_with("d.toml:2: process 'far': host '192.0.2.7'"),
            "{err}"
        );
        let err = parse("\n[process.x]\nlaunch = \"env h\"\n").unwrap_err();
        assert!(err.to_string().starts_with("d.toml:3:"), "{err}");
        // Addresses no process can be reached at, and a mistyped one, are refused as such.
        for (host, why) in [
            ("224.0.0.1", "is not the address of one host"),
            ("0.0.0.0", "is not the address of one host"),
            ("255.255.255.255", "is not the address of one host"),
            ("ff02::1", "is not the address of one host"),
            ("10.0.0.300", "is not an IPv4 address"),
            ("10.0.0", "is not an IPv4 address"),
        ] {
            let err = parse(&format!("[process.x]\nhost = \"{host}\"\nlaunch = \"env h\"\n")).unwrap_err();
            assert!(err.to_string().starts_with("d.toml:2: key 'host'"), "{err}");
            assert!(err.to_string().contains(why), "{host}: {err}");
        }
        let err = parse("[process.x]\nhots = \"a\"\n").unwrap_err();
        assert!(err.to_string().starts_with("d.toml:2: key 'hots'"), "{err}");
        let err = parse("[process.x]\nhost = \"10.1.1.2\"\nlaunch = \"/no/such/runner -x\"\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("d.toml:3: key 'launch': process 'x': launch command '/no/such/runner' is not a program"),
            "{err}"
        );
        let err = parse("[process.x]\nhost = \"10.1.1.2\"\nlaunch = \"no-such-runner-here\"\n").unwrap_err();
        assert!(
            err.to_string().contains("'no-such-runner-here' is not a program"),
            "{err}"
        );
        let err = parse("[process.x]\nport = 65535\n").unwrap_err();
        assert!(err.to_string().starts_with("d.toml:2: key 'port'"), "{err}");
        assert!(err.to_string().contains("1..65534"), "{err}");
        let err = parse("[process.x]\ncores = 3\n").unwrap_err();
        assert!(err.to_string().contains("list of core numbers"), "{err}");
        // What was found instead is named.
        for (value, found) in [
            ("cores = [1.5]", "e.g. cores = [2, 3], not 1.5"),
            ("cores = [\"a\"]", "e.g. cores = [2, 3], not \"a\""),
            (
                "cores = [-1]",
                "-1 is no core number: cores are numbered from 0 up, e.g. cores = [2, 3]",
            ),
            (
                "port = \"a\\\"b\"",
                "(each link takes it and the next one), not \"a\\\"b\"",
            ),
            (
                "cores = [0x2, 99999999999999999999]",
                "99999999999999999999 is no core number: cores are numbered from 0 up, e.g. cores = [2, 3]",
            ),
            ("port = \"abc\"", "(each link takes it and the next one), not \"abc\""),
            ("port = 0", "(each link takes it and the next one), not 0"),
            ("host = 5", "must be a non-empty string, not 5"),
        ] {
            let err = parse(&format!("[process.x]\n{value}\n")).unwrap_err();
            assert!(err.to_string().ends_with(found), "{value}: {err}");
        }
        let err = parse("[process.x]\ncores = []\n").unwrap_err();
        assert!(err.to_string().contains("must name at least one core"), "{err}");
        let err = parse("[process.x]\ncores = [0, 0]\n").unwrap_err();
        assert!(err.to_string().contains("names core 0 twice"), "{err}");
        let err = parse("[process.\"a b\"]\n").unwrap_err();
        assert!(err.to_string().contains("not a process name"), "{err}");
    }

    #[test]
    fn the_cores_of_a_process_here_must_be_this_machines() {
        let allowed = crate::cores::allowed();
        let beyond = allowed.iter().max().map_or(0, |c| c + 1);
        let err = parse(&format!("[process.x]\ncores = [{beyond}]\n")).unwrap_err();
        assert!(
            err.to_string().starts_with(&format!(
                "d.toml:2: key 'cores': process 'x': core {beyond} is not one smxrun may run on here"
            )),
            "{err}"
        );
        // Started elsewhere, its cores are that machine's: not checked here.
        let elsewhere = format!("[process.x]\nhost = \"10.1.1.2\"\nlaunch = \"env h\"\ncores = [{beyond}]\n");
        assert!(parse(&elsewhere).is_ok());
        assert!(parse(&format!("[process.x]\ncores = [{}]\n", allowed[0])).is_ok());
    }

    #[test]
    fn a_loopback_host_in_a_network_namespace_is_refused() {
        let e = parse("[process.x]\nhost = \"127.0.0.1\"\nlaunch = \"ip netns exec far\"\n").unwrap_err();
        assert!(e.to_string().contains("loopback"), "{e}");
        assert!(parse("[process.x]\nhost = \"10.9.0.2\"\nlaunch = \"/usr/sbin/ip netns exec far\"\n").is_ok());
        // Another prefix may start it on this very machine, where its loopback is reachable.
        assert!(parse("[process.x]\nhost = \"127.0.0.1\"\nlaunch = \"/usr/bin/env\"\n").is_ok());
    }

    #[test]
    fn a_process_runs_on_this_machine_unless_launched_to_another() {
        let p = parse(
            "[process.a]\n[process.b]\nhost = \"127.0.0.1\"\nlaunch = \"env\"\n[process.c]\nhost = \"10.1.1.2\"\n\
             launch = \"ip netns exec far\"\n[process.d]\nhost = \"192.0.2.9\"\nlaunch = \"env\"\n\
             [process.e]\nhost = \"far.example\"\nlaunch = \"env\"\n",
        )
        .unwrap();
        let here = |name: &str| p.get(name).unwrap().on_this_machine();
        assert!(here("main") && here("a") && here("b") && here("c"));
        assert!(!here("d") && !here("e"));
    }

    #[test]
    fn a_namespace_launch_must_name_a_namespace_this_machine_has() {
        assert!(
            namespace_problem("ip netns exec")
                .unwrap()
                .contains("names no network namespace")
        );
        let missing = namespace_problem("/sbin/ip netns exec smx-no-such-namespace").unwrap();
        assert!(
            missing.contains("'smx-no-such-namespace' does not exist here"),
            "{missing}"
        );
        assert_eq!(namespace_problem("ssh user@far"), None);
    }

    #[test]
    fn a_host_is_an_address_or_a_name_alone() {
        for fine in [
            "10.0.0.2",
            "::1",
            "fe80::1",
            "sensor",
            "sensor-2.lab.example",
            "localhost",
        ] {
            assert_eq!(check_host(fine), Ok(()), "{fine}");
        }
        for bad in [
            "127.0.0.1:9000",
            "tcp://127.0.0.1",
            "*",
            "no such host",
            "[::1]",
            "-a.b",
            "a..b",
        ] {
            assert!(check_host(bad).is_err(), "{bad}");
        }
        let e = parse("[process.x]\nhost = \"127.0.0.1:9000\"\nlaunch = \"env\"\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("d.toml:2: key 'host': process 'x': '127.0.0.1:9000' is not"),
            "{e}"
        );
    }

    #[test]
    fn a_loopback_host_runs_here() {
        assert!(is_local("127.0.0.1"));
        assert!(parse("[process.x]\nhost = \"127.0.0.1\"\n").is_ok());
    }
}
