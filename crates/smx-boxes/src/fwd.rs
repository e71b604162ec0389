//! `smx_fwd(in data, out data)`: forwards every message unchanged (for chains).

use crate::boxes::api::{
    BoxConfig, BoxError, BoxImpl, BoxSpec, Direction, Flow, InPort, InitCtx, Io, OutPort, PortSpec,
};

pub const SPEC: BoxSpec = BoxSpec {
    name: "smx_fwd",
    summary: "forwards every message unchanged",
    ports: &[
        PortSpec {
            name: "data",
            direction: Direction::In,
            optional: false,
            help: "messages in",
        },
        PortSpec {
            name: "data",
            direction: Direction::Out,
            optional: false,
            help: "the same messages out",
        },
    ],
    config: &[],
    create,
};

fn create(_config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    Ok(Box::new(Fwd {
        input: InPort(0),
        output: OutPort(0),
        forwarded: 0,
    }))
}

struct Fwd {
    input: InPort,
    output: OutPort,
    forwarded: u64,
}

impl BoxImpl for Fwd {
    fn init(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), BoxError> {
        self.input = ctx.input("data")?;
        self.output = ctx.output("data")?;
        Ok(())
    }

    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        if let Some(msg) = io.read(self.input)
            && io.write(self.output, msg).is_ok()
        {
            self.forwarded += 1;
        }
        Ok(Flow::Return)
    }

    fn stats(&self) -> Vec<(String, serde_json::Value)> {
        vec![("forwarded".into(), self.forwarded.into())]
    }
}
