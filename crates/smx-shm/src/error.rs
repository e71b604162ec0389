//! What can go wrong with a link file, each naming the path or the key.

use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug)]
pub enum ShmError {
    /// A key's value cannot work.
    Config { key: &'static str, why: String },
    /// A system call on the link file failed.
    Io {
        path: PathBuf,
        action: &'static str,
        err: std::io::Error,
    },
    /// Something that is not this run's link is at the path (left as it is).
    Exists { path: PathBuf, why: String },
    /// The file at the path is not a ring this build can read.
    Foreign { path: PathBuf, why: String },
    /// The peer did not appear within `timeout`.
    NoPeer {
        path: PathBuf,
        timeout: Duration,
        what: &'static str,
    },
    /// A consumer is attached already.
    Taken { path: PathBuf, pid: u32 },
    /// A message larger than a slot; `shrunk`: the slots are smaller than `max_payload` asked,
    /// for want of room in the file system (`shrink_to_fit`).
    TooLarge { len: usize, max_payload: u64, shrunk: bool },
    /// The file system of the link file (`dir`) is too small for the channel's length even
    /// with the smallest slots a ring is shrunk to: the ring `needs` more than half the `free`.
    NoRoom { dir: PathBuf, needs: u64, free: u64 },
    /// The run stops.
    Stopped,
}

impl ShmError {
    pub fn config(key: &'static str, why: impl Into<String>) -> ShmError {
        ShmError::Config { key, why: why.into() }
    }

    pub fn io(path: impl Into<PathBuf>, action: &'static str, err: std::io::Error) -> ShmError {
        ShmError::Io {
            path: path.into(),
            action,
            err,
        }
    }
}

impl std::fmt::Display for ShmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShmError::Config { key, why } => write!(f, "key `{key}`: {why}"),
            ShmError::Io { path, action, err } => write!(f, "path `{}`: cannot {action} it: {err}", path.display()),
            ShmError::Exists { path, why } => write!(
                f,
                "path `{}` exists: {why}; choose another path or remove it yourself",
                path.display()
            ),
            ShmError::Foreign { path, why } => write!(f, "path `{}`: {why}", path.display()),
            ShmError::NoPeer { path, timeout, what } => {
                write!(f, "path `{}`: {what} within timeout {timeout:?}", path.display())
            }
            ShmError::Taken { path, pid } => write!(
                f,
                "path `{}`: process {pid} is attached as the consumer already (one consumer per link)",
                path.display()
            ),
            ShmError::TooLarge {
                len,
                max_payload,
                shrunk: false,
            } => write!(
                f,
                "a message of {len} bytes is larger than key `max_payload` ({max_payload} bytes)"
            ),
            ShmError::TooLarge {
                len,
                max_payload,
                shrunk: true,
            } => write!(
                f,
                "a message of {len} bytes is larger than the ring's slots ({max_payload} bytes): the link file's \
                 file system had room for no larger slots at this channel's length (shrink_to_fit)"
            ),
            ShmError::NoRoom { dir, needs, free } => write!(
                f,
                "{} has {free} bytes free, and the ring needs {needs} even with slots of {} KiB (at most half \
                 the free room is taken): it is too small for this channel's length (give it more room, e.g. \
                 a container's --shm-size, or shorten the channel)",
                dir.display(),
                crate::ring::SHRINK_FLOOR / 1024
            ),
            ShmError::Stopped => write!(f, "stopped"),
        }
    }
}

impl std::error::Error for ShmError {}

impl From<ShmError> for smx_box::BoxError {
    fn from(e: ShmError) -> Self {
        smx_box::BoxError::new(e.to_string())
    }
}
