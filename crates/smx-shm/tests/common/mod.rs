//! Helpers of the link tests: a private directory on tmpfs and payloads that check themselves.
#![allow(dead_code)]

use std::path::PathBuf;

/// A fresh directory under /dev/shm (the link's home), or the system's temporary directory
/// where there is none.
pub fn dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::Builder::new().prefix("smx-shm-test").tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

pub fn link(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

/// `len` bytes that depend on `seq` and on their position.
pub fn payload(seq: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seq as usize * 31 + i * 7 + (i >> 12)) as u8)
        .collect()
}

pub fn check(seq: u64, bytes: &[u8], len: usize) {
    assert_eq!(bytes.len(), len, "length of message {seq}");
    assert!(bytes == payload(seq, len).as_slice(), "payload of message {seq}");
}

pub fn never() -> bool {
    false
}

/// The pid of a process that has exited and been reaped.
pub fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}
