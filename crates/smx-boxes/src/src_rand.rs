//! `smx_src_rand(out data)`: a source of random messages, the report's `Src`.
//!
//! Each step writes one message of `size` random bytes whose sequence number counts 0, 1, 2,
//! ... and whose timestamp is the send time, so sinks can check order and loss. After `count`
//! messages it returns `End`, which makes its loop count exactly `count`. Payloads up to
//! [`smx_box::INLINE_CAPACITY`] bytes travel inline (no allocation per
//! message). The random generator is a seeded SplitMix64: runs with the same `seed` send the
//! same bytes.

use smx_box::INLINE_CAPACITY;
use smx_box::prelude::*;

pub const SPEC: BoxSpec = BoxSpec::named("smx_src_rand")
    .summary("sends `count` messages of `size` random bytes with sequence numbers, then ends")
    .outputs(&[PortSpec::new("data").help("the random messages")])
    .config(&[
        ConfigKey::int("count")
            .default_value("100000")
            .help("messages to send before ending; 0 = until stopped or every consumer ended"),
        ConfigKey::int("size")
            .default_value("8")
            .help("payload bytes per message"),
        ConfigKey::int("seed")
            .default_value("1")
            .help("seed of the random bytes (same seed, same bytes)"),
    ])
    // Its step only computes: what it feeds may keep collecting while it runs again.
    .never_waits()
    .validate(validate)
    .create(create);

const DATA: OutPort = OutPort(0);

/// The largest payload accepted, so that a typo cannot exhaust memory.
const MAX_SIZE: u64 = 64 * 1024 * 1024;

/// The checks of `create`, before the run starts (so that no other box of the net waits for
/// a peer while this one is refused).
fn validate(config: &BoxConfig) -> Result<(), BoxError> {
    let size = config.int("size")?;
    if size > MAX_SIZE {
        return Err(BoxError(format!(
            "{}: size {size} is larger than the maximum {MAX_SIZE}",
            config.instance
        )));
    }
    Ok(())
}

fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    validate(config)?;
    let size = config.int("size")?;
    Ok(Box::new(SrcRand {
        count: config.int("count")?,
        sent: 0,
        state: config.int("seed")?,
        buf: vec![0; size as usize],
    }))
}

struct SrcRand {
    count: u64,
    sent: u64,
    state: u64,
    buf: Vec<u8>,
}

impl SrcRand {
    /// SplitMix64: tiny, fast and good enough for payload bytes.
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let bytes = self.next().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    /// The next message of a payload too large to travel inline: filled in the reused buffer,
    /// then copied into its shared one.
    fn shared_message(&mut self) -> Message {
        let sent_ns = now_ns();
        let mut buf = std::mem::take(&mut self.buf);
        self.fill(&mut buf);
        let msg = Message::new(self.sent, sent_ns, &buf);
        self.buf = buf;
        msg
    }
}

impl BoxImpl for SrcRand {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if io.stop_requested() {
            return Ok(Flow::End);
        }
        // A refused write means the consumer ended; the runtime's rule then ends this net. A
        // small payload is generated where it travels, in the channel's slot.
        if self.buf.len() <= INLINE_CAPACITY {
            let (seq, len, sent_ns) = (self.sent, self.buf.len(), now_ns());
            let _ = io.write_filled(DATA, seq, sent_ns, len, |buf| self.fill(buf));
        } else {
            let msg = self.shared_message();
            let _ = io.write(DATA, msg);
        }
        self.sent += 1;
        Ok(if self.count != 0 && self.sent >= self.count {
            Flow::End
        } else {
            Flow::Return
        })
    }

    fn stats(&self) -> Stats {
        Stats::new().with("sent", self.sent)
    }
}
