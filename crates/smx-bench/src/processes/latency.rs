//! One-way latency between two threads pinned to two cores, one message in flight: a round
//! trip A -> B -> A of `size`-byte messages, halved, as iceoryx2's benchmark measures it.
//!
//! * `link`: two rings of the shared-memory link (`smx_shm`), as its boxes use them: the
//!   producer copies the payload into its slot once, the consumer copies up to 4 KiB out and
//!   reads a larger payload in place, and B echoes what it read (a forwarder: the payload
//!   crosses back and forth between the cores).
//! * `link-copy`: the same rings, each side copying a payload of its own into its slot and
//!   reading nothing of what it receives, which is what iceoryx2's benchmark does with
//!   `--send-copy`: the cost of writing a payload into the link, without reading it back.
//! * `link-in-place`: the same rings, each payload left unwritten in its slot (a loaned sample
//!   sent as it is, which is what iceoryx2's benchmark sends): the hand-over alone.
//! * `pipe`: two Unix pipes, every byte written into the kernel and read out of it.

use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use smx_shm::{Consumer, Next, Producer, Sent};

/// Which hand-over a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    Link,
    LinkCopy,
    LinkInPlace,
    Pipe,
}

impl Way {
    pub fn name(self) -> &'static str {
        match self {
            Way::Link => "link",
            Way::LinkCopy => "link-copy",
            Way::LinkInPlace => "link-in-place",
            Way::Pipe => "pipe",
        }
    }
}

/// How long a side waits for the other before the run fails.
const TIMEOUT: Duration = Duration::from_secs(10);

/// One-way latencies (ns, half of each round trip) of `count` round trips. Both sides run on
/// threads of their own, so the caller's thread keeps its placement.
pub fn measure(way: Way, size: usize, count: u64, dir: &Path, cores: (usize, usize)) -> Result<Vec<u64>, String> {
    let dir = dir.to_path_buf();
    let side = std::thread::spawn(move || match way {
        Way::Link | Way::LinkCopy | Way::LinkInPlace => link(size, count, &dir, cores, way),
        Way::Pipe => pipe(size, count, cores),
    });
    side.join().map_err(|_| "a measuring thread panicked".to_string())?
}

fn pin(core: usize) {
    let _ = core_affinity::set_for_current(core_affinity::CoreId { id: core });
}

fn never() -> bool {
    false
}

/// Sends `payload` (or, in place, `len` unwritten bytes) and fails on anything but a publish.
fn send(producer: &mut Producer, seq: u64, len: usize, payload: Option<&[u8]>) -> Result<(), String> {
    let sent = match payload {
        Some(bytes) => producer.send(seq, 0, bytes, &never),
        None => producer.send_in_place(seq, 0, len, |_| {}, &never),
    };
    match sent {
        Ok(Sent::Published) => Ok(()),
        Ok(Sent::Over(end)) => Err(format!("the other side ended ({})", end.as_str())),
        Err(e) => Err(e.to_string()),
    }
}

fn receive(consumer: &mut Consumer) -> Result<smx_box::Message, String> {
    match consumer.next(None, &never) {
        Next::Message(msg) => Ok(msg),
        Next::Ended(end) => Err(format!("the other side ended ({})", end.as_str())),
        Next::Stopped | Next::Idle => Err("no message".into()),
    }
}

fn link(size: usize, count: u64, dir: &Path, cores: (usize, usize), way: Way) -> Result<Vec<u64>, String> {
    let in_place = way == Way::LinkInPlace;
    let (ab, ba) = (dir.join("ab"), dir.join("ba"));
    let slot = size.max(1) as u64;
    let mut to_b = Producer::create(&ab, 1, slot, TIMEOUT).map_err(|e| e.to_string())?;
    let mut to_a = Producer::create(&ba, 1, slot, TIMEOUT).map_err(|e| e.to_string())?;
    let echo = std::thread::spawn(move || -> Result<(), String> {
        pin(cores.1);
        let mut from_a = Consumer::open(&ab, TIMEOUT, &never).map_err(|e| e.to_string())?;
        let own = vec![0xa5u8; size];
        for seq in 0..count {
            let msg = receive(&mut from_a)?;
            let payload = match way {
                Way::Link => Some(msg.payload()),
                Way::LinkCopy => Some(&own[..]),
                _ => None,
            };
            send(&mut to_a, seq, size, payload)?;
        }
        to_a.finish(false, &never);
        Ok(())
    });
    pin(cores.0);
    let mut from_b = Consumer::open(&ba, TIMEOUT, &never).map_err(|e| e.to_string())?;
    let payload = vec![0x5au8; size];
    let mut samples = Vec::with_capacity(count as usize);
    for seq in 0..count {
        let start = Instant::now();
        send(&mut to_b, seq, size, (!in_place).then_some(&payload[..]))?;
        let back = receive(&mut from_b)?;
        samples.push(start.elapsed().as_nanos() as u64 / 2);
        drop(back);
    }
    to_b.finish(false, &never);
    echo.join().map_err(|_| "the echo thread panicked".to_string())??;
    Ok(samples)
}

/// A pipe's two ends as files.
fn pipe_pair() -> Result<(std::fs::File, std::fs::File), String> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 returns; each becomes one File.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    Ok(unsafe { (std::fs::File::from_raw_fd(fds[0]), std::fs::File::from_raw_fd(fds[1])) })
}

fn pipe(size: usize, count: u64, cores: (usize, usize)) -> Result<Vec<u64>, String> {
    let (mut a_in, mut b_out) = pipe_pair()?;
    let (mut b_in, mut a_out) = pipe_pair()?;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        pin(cores.1);
        let mut buf = vec![0u8; size];
        for _ in 0..count {
            b_in.read_exact(&mut buf)?;
            b_out.write_all(&buf)?;
        }
        Ok(())
    });
    pin(cores.0);
    let payload = vec![0x5au8; size];
    let mut back = vec![0u8; size];
    let mut samples = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let start = Instant::now();
        a_out.write_all(&payload).map_err(|e| format!("pipe write: {e}"))?;
        a_in.read_exact(&mut back).map_err(|e| format!("pipe read: {e}"))?;
        samples.push(start.elapsed().as_nanos() as u64 / 2);
    }
    echo.join()
        .map_err(|_| "the echo thread panicked".to_string())?
        .map_err(|e| format!("pipe echo: {e}"))?;
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_carries_every_size_there_and_back() {
        let dir = tempfile::tempdir().unwrap();
        for (i, way) in [Way::Link, Way::LinkCopy, Way::LinkInPlace, Way::Pipe]
            .into_iter()
            .enumerate()
        {
            for (j, size) in [8usize, 8192, 1 << 20].into_iter().enumerate() {
                let sub = dir.path().join(format!("{i}-{j}"));
                std::fs::create_dir(&sub).unwrap();
                let samples = measure(way, size, 20, &sub, (0, 0)).unwrap();
                assert_eq!(samples.len(), 20, "{way:?} {size}");
                assert!(
                    !sub.join("ab").exists() && !sub.join("ba").exists(),
                    "the rings are removed"
                );
            }
        }
    }
}
