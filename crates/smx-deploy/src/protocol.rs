//! What the supervisor and a slice's process say to each other.
//!
//! The supervisor writes one line of JSON, a [`Job`], to the slice's stdin and keeps stdin
//! open: its end of file (the supervisor stopped it, or died, or the `launch` connection
//! broke) stops the slice. The slice answers on its stdout, which it keeps for this alone
//! (what its boxes print goes to stderr): a line `smx-slice started PID PROTOCOL` once it runs,
//! before it reads its job (the [`PROTOCOL`] it speaks; a slice of an `smxrun` from before
//! protocol versions says `smx-slice started PID` alone, after its job), until its nets run
//! `smx-slice alive` every [`PROGRESS_EVERY`], while they run `smx-slice progress MESSAGES
//! ELAPSED_NS` as often (for the supervisor's progress line), so that a slice the supervisor
//! hears nothing from is one whose host or `launch` connection is lost, or one that froze, in
//! any phase of its run; and, when the job asks for live figures, `smx-slice stats LEN`
//! followed by LEN bytes of a JSON [`Snapshot`] every `stats_every` and once more at the end,
//! and at its end `smx-slice report LEN` followed by LEN bytes of the slice's JSON report.
//!
//! A job that asks the slice to start together with the others ([`Job::start_together`])
//! adds one exchange: once every box of the slice has initialised (its links attached), it
//! says `smx-slice ready` and holds its nets until the supervisor writes the line
//! `smx-slice go` to its stdin, which it does once every slice said it is ready. No net of one
//! process then runs while another process may still refuse its run.
//!
//! Both ends check the version: the supervisor ends the run at once when a slice's started
//! line gives another [`PROTOCOL`] or none (a slice of another `smxrun` on another host, which
//! would misread its job or never say it is ready), and a slice refuses a job whose `protocol`
//! is another or missing ([`Job::read`], [`Job::parse`]).

use std::io::{BufRead, Read, Write};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use smx_graph::NetGraph;
use smx_runtime::Snapshot;

/// The hidden subcommand that runs a slice: `smxrun __slice`.
pub const SUBCOMMAND: &str = "__slice";

/// The version of what the supervisor and a slice say to each other: the [`Job`] and every
/// line on the two pipes (this module). Raise it whenever any of that changes, in a way either
/// end would notice or not: a slice started through `launch` on another host runs the
/// `smxrun` installed there, and the two ends must speak one protocol. The one form that
/// never changes is the started line's, which carries it. Version 1 is the first with a
/// version (an `smxrun` before it speaks none); 2 adds the job's `shared_cores` and the
/// slice's `smx-slice alive` lines.
pub const PROTOCOL: u32 = 2;

/// A protocol version as a sentence says it: `slice protocol 2`, or, for a peer that gives
/// none, what that means.
pub fn protocol_words(protocol: Option<u32>) -> String {
    match protocol {
        Some(v) => format!("slice protocol {v}"),
        None => "no slice protocol version (an smxrun from before protocol versions)".to_string(),
    }
}

/// The start of the name of a slice's private directory, followed by its pid and `-`.
pub const DIR_PREFIX: &str = "smx-slice-";

/// Marks `dir`, a slice's private directory, as in use for as long as the file returned is
/// open: a shared lock on it, which [`remove_stale_slice_dirs`] asks for, good across pid
/// namespaces (a slice in a container that shares the temporary directory), where a pid is not.
pub fn hold_slice_dir(dir: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let held = std::fs::File::open(dir)?;
    // SAFETY: flock takes a descriptor that `held` owns.
    if unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_SH) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(held)
}

/// Removes from `dir` the private directories of slices whose process is gone without
/// removing its own (killed): on a host reached through `launch` no supervisor is there to
/// do it, so each slice that starts on that host does it for the ones before it. A directory
/// of a process that still runs (by its pid, and by its lock, [`hold_slice_dir`]), or of
/// another user, is left alone.
pub fn remove_stale_slice_dirs(dir: &std::path::Path) {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: no arguments; it reads this process's user id.
    let me = unsafe { libc::geteuid() };
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(DIR_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let ours = entry.metadata().is_ok_and(|m| m.is_dir() && m.uid() == me);
        // SAFETY: signal 0 only checks whether the process exists.
        let gone =
            unsafe { libc::kill(pid, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if ours && gone && !held(&entry.path()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether a slice holds its directory ([`hold_slice_dir`]); the look takes no lock it keeps.
fn held(dir: &std::path::Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(look) = std::fs::File::open(dir) else {
        return true;
    };
    // SAFETY: flock takes a descriptor that `look` owns; closing it lets the lock go.
    unsafe { libc::flock(look.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) != 0 }
}

/// The key of a slice's report that says when its process ran, on its host's clock:
/// `{"from_unix_s": F, "to_unix_s": T, "nets_from_unix_s": N}`, from its start to its report,
/// and when its nets were released (absent where they never were).
pub const RAN: &str = "ran";

const STARTED: &str = "smx-slice started ";
const PROGRESS: &str = "smx-slice progress ";
const STATS: &str = "smx-slice stats ";
const REFUSED: &str = "smx-slice refused";
const READY: &str = "smx-slice ready";
const ALIVE: &str = "smx-slice alive";

/// The supervisor's line that lets a ready slice's nets run.
pub const GO: &str = "smx-slice go";
const REPORT: &str = "smx-slice report ";

/// The largest job or report read, from a file or a pipe: a job holds its slice's graph and
/// the whole net's, each larger as JSON than the net file it came from (at most 16 MiB), and a
/// report holds the whole net's. Anything larger is no job or report of ours, and reading it
/// (`/dev/zero`) would never end.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// The text of the job or report file `path`, refused when it holds more than
/// [`MAX_FILE_BYTES`] (read up to one byte past the limit, so a device or a FIFO cannot make
/// it read for ever either) or is not UTF-8.
pub fn read_capped(path: &std::path::Path) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than the limit of {MAX_FILE_BYTES} bytes (256 MiB) for a slice's job or report"),
        ));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// How often a supervised slice tells its progress: as often as a progress line is redrawn.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// One slice to run: its graph and the `smxrun run` arguments of its process (settings as
/// `--set`, pinning, libraries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub process: String,
    /// The address of the process's host (`None`: the supervisor's machine), for the report.
    #[serde(default)]
    pub host: Option<String>,
    pub graph: NetGraph,
    pub args: Vec<String>,
    /// The whole net's plan without its keys ([`crate::Deployment::plan`]): the slice adds it
    /// to its report, so that reports of slices started by hand can be merged.
    #[serde(default)]
    pub plan: serde_json::Value,
    /// How often the slice sends its live figures (`--stats-every` of the run); `None`: never.
    #[serde(default)]
    pub stats_every: Option<Duration>,
    /// The cores the slice's process keeps to before it places a thread (`None`: those it was
    /// started with): for a slice that places its own threads (`--pin auto`, its cyclic
    /// executives on the last cores) beside processes that name cores of their own.
    #[serde(default)]
    pub cores_allowed: Option<Vec<usize>>,
    /// The slice says when it is ready and holds its nets until the supervisor's go (see the
    /// module docs). A job `smxrun split` writes has no supervisor to say go.
    #[serde(default)]
    pub start_together: bool,
    /// The cores of the slice's process that other processes of the deployment use as well,
    /// and whose they are: its `--rt auto` then takes no real-time scheduling there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_cores: Option<smx_runtime::SharedCores>,
    /// The [`PROTOCOL`] of the `smxrun` that wrote the job (`None`: one from before protocol
    /// versions). A slice refuses a job of another protocol, or of none.
    #[serde(default)]
    pub protocol: Option<u32>,
}

/// The one field of a job read alone when the rest does not parse: a job of another protocol
/// may not parse as this one's.
#[derive(Deserialize)]
struct JobProtocol {
    protocol: u32,
}

/// The job that `text` holds; `Err(Ok(theirs))` when it is a job of another protocol
/// (`theirs`, `None` for a job that gives none), `Err(Err(..))` when it is no job at all. A job
/// without a protocol is one that parses as a job of this one's; a job that does not parse is
/// of another protocol when it gives one.
fn job_of(text: &str) -> Result<Job, Result<Option<u32>, serde_json::Error>> {
    match serde_json::from_str::<Job>(text) {
        Ok(job) if job.protocol == Some(PROTOCOL) => Ok(job),
        Ok(job) => Err(Ok(job.protocol)),
        Err(e) => match serde_json::from_str::<JobProtocol>(text) {
            Ok(theirs) if theirs.protocol != PROTOCOL => Err(Ok(Some(theirs.protocol))),
            _ => Err(Err(e)),
        },
    }
}

impl Job {
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("a job serialises");
        line.push('\n');
        line
    }

    /// Reads the job line from the supervisor (stdin), up to [`MAX_FILE_BYTES`]; an
    /// unreadable or malformed one, or one of another [`PROTOCOL`] (a supervisor of another
    /// `smxrun`), is an error saying so.
    pub fn read(input: &mut impl BufRead) -> Result<Job, String> {
        let mut line = String::new();
        input
            .take(MAX_FILE_BYTES)
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the slice from stdin: {e}"))?;
        job_of(&line).map_err(|why| match why {
            Ok(theirs) => format!(
                "the supervisor's job speaks {}, this smxrun speaks {}: run the same smxrun version on this host \
                 as on the supervisor's",
                protocol_words(theirs),
                protocol_words(Some(PROTOCOL))
            ),
            Err(e) => format!("stdin does not hold a slice job: {e}"),
        })
    }

    /// The job a file holds (as `smxrun split` writes NAME.job); a malformed one, or one that
    /// `smxrun split` of another [`PROTOCOL`] wrote, is an error saying so, for the caller to
    /// name the file.
    pub fn parse(text: &str) -> Result<Job, String> {
        job_of(text).map_err(|why| match why {
            Ok(theirs) => format!(
                "the job speaks {}, this smxrun speaks {}: split again with this smxrun, or start the slice with \
                 the smxrun that split it",
                protocol_words(theirs),
                protocol_words(Some(PROTOCOL))
            ),
            Err(e) => format!("not a slice's job (as `smxrun split` writes NAME.job): {e}"),
        })
    }
}

/// A slice's message to the supervisor.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Its pid, and the [`PROTOCOL`] it speaks (`None`: it gave none).
    Started(u32, Option<u32>),
    /// Messages the slice's sinks took so far (counted as its report's `messages`), and the
    /// time since its nets started.
    Progress(u64, Duration),
    /// The slice's live figures, on its own ids.
    Stats(Box<Snapshot>),
    /// Its run was refused before it started (a port taken on its host, a library missing
    /// there): it said why on its stderr and ends without a report.
    Refused,
    /// Every box of the slice has initialised; its nets wait for the go.
    Ready,
    /// The slice is there, its nets not yet running (it reads its job, its boxes initialise,
    /// its nets wait for the go).
    Alive,
    Report(String),
}

/// The started line, with the [`PROTOCOL`] this slice speaks.
pub fn write_started(out: &mut impl Write, pid: u32) -> std::io::Result<()> {
    writeln!(out, "{STARTED}{pid} {PROTOCOL}")?;
    out.flush()
}

pub fn write_progress(out: &mut impl Write, messages: u64, elapsed: Duration) -> std::io::Result<()> {
    writeln!(out, "{PROGRESS}{messages} {}", elapsed.as_nanos())?;
    out.flush()
}

pub fn write_alive(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "{ALIVE}")?;
    out.flush()
}

pub fn write_ready(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "{READY}")?;
    out.flush()
}

pub fn write_refused(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "{REFUSED}")?;
    out.flush()
}

pub fn write_stats(out: &mut impl Write, snapshot: &Snapshot) -> std::io::Result<()> {
    write_sized(
        out,
        STATS,
        &serde_json::to_string(snapshot).expect("a snapshot serialises"),
    )
}

pub fn write_report(out: &mut impl Write, json: &str) -> std::io::Result<()> {
    write_sized(out, REPORT, json)
}

/// A line `HEAD LEN`, then the LEN bytes of `text`.
fn write_sized(out: &mut impl Write, head: &str, text: &str) -> std::io::Result<()> {
    writeln!(out, "{head}{}", text.len())?;
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// The LEN bytes after a line `HEAD LEN`, as text.
fn read_sized(input: &mut impl BufRead, len: &str) -> Option<String> {
    let len: u64 = len.parse().ok().filter(|len| *len <= MAX_FILE_BYTES)?;
    // The buffer grows with what arrives: a torn or foreign length line costs no memory.
    let mut text = Vec::new();
    if input.take(len).read_to_end(&mut text).ok()? as u64 != len {
        return None;
    }
    String::from_utf8(text).ok()
}

/// The next event on a slice's stdout, `None` at its end.
pub fn read_event(input: &mut impl BufRead) -> Option<Event> {
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(rest) = line.trim_end().strip_prefix(STARTED) {
            // `PID PROTOCOL`, or `PID` alone from a slice before protocol versions; a version
            // that is no number counts as 0, which no `smxrun` speaks.
            let (pid, protocol) = rest.split_once(' ').unwrap_or((rest, ""));
            let protocol = match protocol {
                "" => None,
                v => Some(v.parse::<u32>().unwrap_or(0)),
            };
            return pid.parse().ok().map(|pid| Event::Started(pid, protocol));
        }
        if line.trim_end() == REFUSED {
            return Some(Event::Refused);
        }
        if line.trim_end() == READY {
            return Some(Event::Ready);
        }
        if line.trim_end() == ALIVE {
            return Some(Event::Alive);
        }
        if let Some(figures) = line.trim_end().strip_prefix(PROGRESS) {
            let mut words = figures.split(' ').map(str::parse::<u64>);
            if let (Some(Ok(messages)), Some(Ok(ns))) = (words.next(), words.next()) {
                return Some(Event::Progress(messages, Duration::from_nanos(ns)));
            }
            continue;
        }
        if let Some(len) = line.trim_end().strip_prefix(STATS) {
            let text = read_sized(input, len)?;
            match serde_json::from_str(&text) {
                Ok(snapshot) => return Some(Event::Stats(Box::new(snapshot))),
                Err(_) => continue,
            }
        }
        if let Some(len) = line.trim_end().strip_prefix(REPORT) {
            return read_sized(input, len).map(Event::Report);
        }
        // Anything else (a remote shell's banner) is not ours.
    }
}

/// Whether a net of a slice's report is a link's sink whose consumer went before it took the
/// end of the stream (it closed the link, or its process died or was lost): its slice's run
/// was cut short by the process on the other side.
pub(crate) fn consumer_gone(net: &serde_json::Value) -> bool {
    let stats = &net["stats"];
    // A ZeroMQ link's sink says `stopped` where its stream ended before its input did.
    consumer_died(net) || (stats["role"] == "sink" && (stats["peer"] == "closed" || stats["stopped"] == true))
}

/// Whether a net of a slice's report is a link's sink whose consumer's process died or was
/// lost before it took the end of the stream, or never came.
pub(crate) fn consumer_died(net: &serde_json::Value) -> bool {
    let stats = &net["stats"];
    stats["role"] == "sink" && (stats["peer"] == "died" || stats["peers_lost"] == true || consumer_never_came(stats))
}

/// Whether the figures of a link's sink say its consumer never attached: nothing it sent was
/// taken, so what it lost is known exactly, though the consumer left no books.
pub(crate) fn consumer_never_came(stats: &serde_json::Value) -> bool {
    stats["role"] == "sink" && stats["peer"] == "absent"
}

/// The messages that crossed a link by the figures of one of its boxes: those a link's
/// shared-memory sink saw its consumer take (published, less what it left or lost), or those a
/// link's source received. A ZeroMQ sink's figures do not tell what its receiver took (ZeroMQ
/// accepting a message is no delivery): 0 there.
pub fn crossed(stats: &serde_json::Value) -> u64 {
    let n = |key: &str| stats[key].as_u64().unwrap_or(0);
    match stats["role"].as_str() {
        Some("sink") => n("written").saturating_sub(n("left").saturating_add(n("lost"))),
        Some("source") => n("received"),
        _ => 0,
    }
}

/// Whether the figures of a link's ZeroMQ sink say that nothing it took left its process:
/// ZeroMQ accepted none of it (each message given up at the timeout or the high-water mark), or
/// what it accepted went to no receiver, none having completed a handshake. What the link lost
/// is then known exactly, and lost on the producer's side, though the consumer left no books.
pub(crate) fn nothing_left_sender(stats: &serde_json::Value) -> bool {
    let n = |key: &str| stats[key].as_u64();
    let (Some(accepted), Some(receivers)) = (n("accepted"), n("receivers")) else {
        return false;
    };
    stats["role"] == "sink" && (accepted == 0 || (receivers == 0 && n("undelivered").is_some_and(|u| u >= accepted)))
}

/// Whether a net of a slice's report is a link's source whose producer's process died, or
/// (with heartbeats, across hosts) was lost, before it sent the end of the stream.
pub(crate) fn producer_died(net: &serde_json::Value) -> bool {
    let stats = &net["stats"];
    stats["role"] == "source" && (stats["peer_died"] == true || stats["end"] == "peer lost")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_past_foreign_lines() {
        let mut out = Vec::new();
        write_started(&mut out, 42).unwrap();
        out.extend_from_slice(b"Welcome to host\n");
        write_progress(&mut out, 1_500, Duration::from_millis(250)).unwrap();
        out.extend_from_slice(b"smx-slice progress torn\n");
        let snapshot = Snapshot {
            elapsed: Duration::from_millis(300),
            messages: 1_600,
            nets: Vec::new(),
            channels: Vec::new(),
            firewalls: Vec::new(),
            finished: false,
        };
        write_stats(&mut out, &snapshot).unwrap();
        write_ready(&mut out).unwrap();
        write_refused(&mut out).unwrap();
        write_report(&mut out, "{\"a\":\n1}").unwrap();
        let mut input = std::io::Cursor::new(out);
        assert_eq!(read_event(&mut input), Some(Event::Started(42, Some(PROTOCOL))));
        assert_eq!(
            read_event(&mut input),
            Some(Event::Progress(1_500, Duration::from_millis(250)))
        );
        assert_eq!(read_event(&mut input), Some(Event::Stats(Box::new(snapshot))));
        assert_eq!(read_event(&mut input), Some(Event::Ready));
        assert_eq!(read_event(&mut input), Some(Event::Refused));
        assert_eq!(read_event(&mut input), Some(Event::Report("{\"a\":\n1}".into())));
        assert_eq!(read_event(&mut input), None);
    }

    #[test]
    fn a_report_cut_short_or_announced_too_long_is_no_event() {
        let mut input = std::io::Cursor::new(format!("{REPORT}{}\n{{}}", u64::MAX).into_bytes());
        assert_eq!(read_event(&mut input), None);
        let mut input = std::io::Cursor::new(format!("{REPORT}10\n{{\"a\":1}}").into_bytes());
        assert_eq!(read_event(&mut input), None);
    }

    #[test]
    fn only_the_directories_of_gone_slices_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        // A pid above the kernel's largest is never running.
        let gone = tmp.path().join(format!("{DIR_PREFIX}2147483000-abc"));
        let running = tmp.path().join(format!("{DIR_PREFIX}{}-def", std::process::id()));
        let other = tmp.path().join("smx-other-1-x");
        for d in [&gone, &running, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("net.json"), "{}").unwrap();
        }
        // A slice whose pid looks gone from here (it runs in another pid namespace) but that
        // holds its directory.
        let elsewhere = tmp.path().join(format!("{DIR_PREFIX}2147483001-ghi"));
        std::fs::create_dir(&elsewhere).unwrap();
        let holding = hold_slice_dir(&elsewhere).unwrap();
        remove_stale_slice_dirs(tmp.path());
        assert!(!gone.exists());
        assert!(running.exists() && other.exists() && elsewhere.exists());
        drop(holding);
        remove_stale_slice_dirs(tmp.path());
        assert!(!elsewhere.exists());
    }

    #[test]
    fn a_job_survives_its_line() {
        let job = Job {
            process: "a".into(),
            host: Some("10.0.0.2".into()),
            graph: NetGraph::default(),
            args: vec!["--set".into(), "X#0.k=v=w".into()],
            plan: serde_json::Value::Null,
            stats_every: Some(Duration::from_millis(500)),
            cores_allowed: Some(vec![0, 2]),
            start_together: true,
            protocol: Some(PROTOCOL),
            shared_cores: Some(smx_runtime::SharedCores {
                cores: vec![0],
                with: "process b".into(),
            }),
        };
        let line = job.to_line();
        assert_eq!(Job::read(&mut std::io::Cursor::new(line)).unwrap(), job);
        assert!(Job::read(&mut std::io::Cursor::new("")).is_err());
    }
}

#[cfg(test)]
mod version_tests {
    use super::*;

    #[test]
    fn the_started_line_carries_the_protocol_and_one_without_it_says_none() {
        let mut out = Vec::new();
        write_started(&mut out, 7).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out),
            format!("smx-slice started 7 {PROTOCOL}\n")
        );
        let lines = "smx-slice started 8\nsmx-slice started 9 12\nsmx-slice started 10 x\n";
        let mut input = std::io::Cursor::new(lines);
        assert_eq!(read_event(&mut input), Some(Event::Started(8, None)));
        assert_eq!(read_event(&mut input), Some(Event::Started(9, Some(12))));
        assert_eq!(read_event(&mut input), Some(Event::Started(10, Some(0))));
    }

    #[test]
    fn a_job_of_another_protocol_or_of_none_is_refused_naming_both() {
        let job = Job {
            process: "b".into(),
            host: None,
            graph: NetGraph::default(),
            args: Vec::new(),
            plan: serde_json::Value::Null,
            stats_every: None,
            cores_allowed: None,
            start_together: false,
            protocol: Some(PROTOCOL),
            shared_cores: None,
        };
        let mut value = serde_json::to_value(&job).unwrap();
        assert_eq!(Job::parse(&value.to_string()).unwrap(), job);
        value.as_object_mut().unwrap().remove("protocol");
        let none = value.to_string();
        value["protocol"] = serde_json::json!(PROTOCOL + 1);
        // A later protocol's job may have fields this one cannot read: the version decides.
        value["args"] = serde_json::json!({"changed": true});
        let other = value.to_string();
        let later = format!("slice protocol {}", PROTOCOL + 1);
        for (text, theirs) in [(&none, "no slice protocol version"), (&other, later.as_str())] {
            let from_file = Job::parse(text).unwrap_err();
            let from_supervisor = Job::read(&mut std::io::Cursor::new(format!("{text}\n"))).unwrap_err();
            for err in [&from_file, &from_supervisor] {
                assert!(err.contains(theirs), "{err}");
                assert!(
                    err.contains(&format!("this smxrun speaks slice protocol {PROTOCOL}")),
                    "{err}"
                );
            }
            assert!(from_file.contains("split again with this smxrun"), "{from_file}");
            assert!(
                from_supervisor.contains("run the same smxrun version"),
                "{from_supervisor}"
            );
        }
        // JSON that is no job, with no protocol or with this one's, is named as no job.
        for text in ["{\"x\": 1}".to_string(), format!("{{\"protocol\": {PROTOCOL}}}")] {
            let err = Job::parse(&text).unwrap_err();
            assert!(err.starts_with("not a slice's job"), "{text}: {err}");
        }
    }
}
