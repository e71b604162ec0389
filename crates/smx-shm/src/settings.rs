//! The configuration keys of the link boxes and their validation before the start.

use std::path::PathBuf;
use std::time::Duration;

use smx_box::{BoxConfig, BoxError, ConfigKey};

use crate::error::ShmError;

/// The default `max_payload`: 64 KiB per slot. tmpfs is sparse, so slots cost memory only as
/// far as their messages fill them.
pub const DEFAULT_MAX_PAYLOAD: u64 = 64 * 1024;

const PATH: ConfigKey = ConfigKey::str("path")
    .help("the link's shared-memory file (e.g. /dev/shm/smx-RUN-EDGE), the same for both ends; the sink creates it (mode 0600) and removes it");
const LEN: ConfigKey = ConfigKey::int("len")
    .default_value("1")
    .help("slots of the ring: the cut channel's length (a full ring holds back the producer)");
const MAX_PAYLOAD: ConfigKey = ConfigKey::int("max_payload")
    .default_value("65536")
    .help("bytes per slot: a larger message fails the sink naming this key (with shrink_to_fit, slots may be smaller where the file system has too little room)");
const SHRINK_TO_FIT: ConfigKey = ConfigKey::bool("shrink_to_fit")
    .default_value("false")
    .help("when the file system (e.g. /dev/shm) has too little room for len x max_payload, make smaller slots (a multiple of 64 bytes, at least 64 KiB) so that the ring takes at most half its free room; a larger message then fails the sink");
const TIMEOUT: ConfigKey = ConfigKey::duration("timeout")
    .default_value("5s")
    .help("how long to wait for the peer to appear (the source for the file, the sink for an attached source)");
const COPY_LIMIT: ConfigKey = ConfigKey::int("copy_limit")
    .default_value("4096")
    .help("source: payloads up to this many bytes are copied out of the ring, larger ones are read in place");

pub const SINK_KEYS: &[ConfigKey] = &[PATH, LEN, MAX_PAYLOAD, SHRINK_TO_FIT, TIMEOUT];
pub const SOURCE_KEYS: &[ConfigKey] = &[PATH, TIMEOUT, COPY_LIMIT];

#[derive(Debug, Clone)]
pub struct Settings {
    pub instance: String,
    pub path: PathBuf,
    pub len: u64,
    pub max_payload: u64,
    pub shrink_to_fit: bool,
    pub timeout: Duration,
    pub copy_limit: usize,
}

impl Settings {
    pub fn from_config(config: &BoxConfig) -> Result<Settings, BoxError> {
        let path = match config.opt_str("path") {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => {
                return Err(config.error(
                    "path",
                    "missing: name the link's shared-memory file (e.g. /dev/shm/smx-link)",
                ));
            }
        };
        if !path.is_absolute() {
            return Err(config.error("path", format!("'{}' is not an absolute path", path.display())));
        }
        let int = |key: &str, default: u64| match config.get(key) {
            Some(_) => config.int(key),
            None => Ok(default),
        };
        let len = int("len", 1)?;
        if len == 0 || len > crate::ring::MAX_CAPACITY {
            return Err(config.error("len", format!("{len}: use 1 to {}", crate::ring::MAX_CAPACITY)));
        }
        let max_payload = int("max_payload", DEFAULT_MAX_PAYLOAD)?;
        if max_payload == 0 {
            return Err(config.error("max_payload", "0: a slot must hold at least one byte"));
        }
        crate::ring::Layout::new(len, max_payload).map_err(|why| config.error("max_payload", why))?;
        let shrink_to_fit = match config.get("shrink_to_fit") {
            Some(_) => config.bool("shrink_to_fit")?,
            None => false,
        };
        let timeout = match config.get("timeout") {
            Some(_) => config.duration("timeout")?,
            None => Duration::from_secs(5),
        };
        let copy_limit = int("copy_limit", crate::consumer::COPY_LIMIT as u64)? as usize;
        Ok(Settings {
            instance: config.instance.clone(),
            path,
            len,
            max_payload,
            shrink_to_fit,
            timeout,
            copy_limit,
        })
    }

    /// An error of this instance.
    pub fn error(&self, e: ShmError) -> BoxError {
        BoxError::new(format!("{}: {e}", self.instance))
    }
}
