//! `smx_fwd(in data, out data)`: forwards every message unchanged (for chains).

use smx_box::prelude::*;

pub const SPEC: BoxSpec = BoxSpec::named("smx_fwd")
    .summary("forwards every message unchanged")
    .inputs(&[PortSpec::new("data").help("messages in")])
    .outputs(&[PortSpec::new("data").help("the same messages out")])
    .chainable()
    .never_waits()
    .create(create);

const INPUT: InPort = InPort(0);
const OUTPUT: OutPort = OutPort(0);

fn create(_config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(Fwd { forwarded: 0 }))
}

struct Fwd {
    forwarded: u64,
}

impl BoxImpl for Fwd {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if let Some(msg) = io.read(INPUT)
            && io.write(OUTPUT, msg).is_ok()
        {
            self.forwarded += 1;
        }
        Ok(Flow::Return)
    }

    fn stats(&self) -> Stats {
        Stats::new().with("forwarded", self.forwarded)
    }
}
