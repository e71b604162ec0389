//! Baselines measured beside the runtime in the same run: what the same work costs without smx.
//!
//! A runtime figure alone cannot say whether it is good; a plain program doing the same thing on
//! the same machine a few seconds earlier can. Each baseline mirrors the shape of the net it
//! stands beside (pairs, channel length, message size and count) and does the same per-message
//! work: fill a payload with pseudo-random bytes, hand it over, read every byte on the other
//! side, check the sequence.

pub mod crossbeam;
pub mod crossbeam_spin;
pub mod gstreamer;
pub mod iceoryx2;
pub mod pairs;
pub mod ring;
pub mod zmq_raw;
pub mod zmq_shaped;

pub use pairs::PairShape;

/// Runs one pair peer once.
pub type PeerRun = fn(PairShape) -> super::result::Run;

/// The pair peers the scaling experiment runs beside smx, by series name: the same message and
/// order check, each in its own queue ([`pairs::Link`]).
pub const PAIR_PEERS: [(&str, PeerRun); 3] = [
    ("crossbeam", pairs::run::<crossbeam::Blocking>),
    ("crossbeam-spin", pairs::run::<crossbeam_spin::Spin>),
    ("rtrb", pairs::run::<ring::Rtrb>),
];

/// xorshift64*: a cheap deterministic generator, so payload filling costs the same in every run.
#[derive(Debug, Clone)]
pub struct PayloadRng(u64);

impl PayloadRng {
    pub fn new(seed: u64) -> PayloadRng {
        PayloadRng(seed | 1)
    }

    /// Fills `buf` with pseudo-random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            let word = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

/// Reads every byte (so the consumer really touches the payload) and folds them into a checksum.
pub fn touch(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, b| acc.rotate_left(5) ^ u64::from(*b))
}
