//! `smx_snk_null(in data)`: consumes messages and checks their sequence numbers, the
//! report's `Snk`.
//!
//! Its stats say how many messages arrived, how many sequence numbers were skipped (`gaps`:
//! messages lost or overwritten on the way) and how many arrived out of order. The check
//! assumes one producer counting 0, 1, 2, ... (as `smx_src_rand` does); behind a fan-in the
//! interleaved sequences show up as gaps and out-of-order arrivals.

use smx_box::prelude::*;

pub const SPEC: BoxSpec = BoxSpec::named("smx_snk_null")
    .summary("consumes messages, checks their sequence order, reports gaps and out-of-order arrivals")
    .inputs(&[PortSpec::new("data").help("the messages to consume")])
    .create(create);

const DATA: InPort = InPort(0);

fn create(_config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(SnkNull {
        received: 0,
        expected: 0,
        gaps: 0,
        out_of_order: 0,
    }))
}

struct SnkNull {
    received: u64,
    /// The next sequence number expected.
    expected: u64,
    gaps: u64,
    out_of_order: u64,
}

impl BoxImpl for SnkNull {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if let Some(msg) = io.read(DATA) {
            self.received += 1;
            if msg.seq >= self.expected {
                self.gaps += msg.seq - self.expected;
                self.expected = msg.seq + 1;
            } else {
                self.out_of_order += 1;
            }
        }
        Ok(Flow::Return)
    }

    fn stats(&self) -> Stats {
        Stats::new()
            .with("received", self.received)
            .with("gaps", self.gaps)
            .with("out_of_order", self.out_of_order)
    }
}
