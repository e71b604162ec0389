//! `threshold(in value, out events)`: an event each time a number crosses `above`.
//!
//! A rise is reported when a value goes above `above`; the matching fall only once it drops
//! below `above - hysteresis`, so noise around the threshold gives one event pair, not dozens.
//! An event is a line of text (for `smx_snk_dump`): `rise seq=42 value=25.310 threshold=25`.
//! It keeps the sequence number and timestamp of the value that caused it.

use smx_box::prelude::*;

use crate::number;

const INPUT: InPort = InPort(0);
const EVENTS: OutPort = OutPort(0);

pub const SPEC: BoxSpec = BoxSpec::named("threshold")
    .summary("emits a rise or fall event when a stream of numbers crosses a threshold")
    .inputs(&[PortSpec::new("value").help("numbers, 8-byte little-endian f64")])
    .outputs(&[PortSpec::new("events").help("one text line per crossing")])
    .config(&[
        ConfigKey::float("above").default_value("25").help("the threshold"),
        ConfigKey::float("hysteresis")
            .default_value("0.5")
            .help("a fall needs a value below above - hysteresis"),
    ])
    // Its step reads only what the firing rule found: smx may run it on its feeder's thread.
    .chainable()
    // Nor does it wait on anything outside the net (a clock, a device): it only computes.
    .never_waits()
    .create(create);

fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    let hysteresis = config.float("hysteresis")?;
    if hysteresis < 0.0 {
        return Err(config.error("hysteresis", format!("{hysteresis} is negative")));
    }
    Ok(Box::new(Threshold {
        above: config.float("above")?,
        hysteresis,
        high: false,
        rises: 0,
        falls: 0,
    }))
}

struct Threshold {
    above: f64,
    hysteresis: f64,
    high: bool,
    rises: u64,
    falls: u64,
}

impl Threshold {
    /// The event `x` causes, if any.
    fn crossing(&mut self, x: f64) -> Option<&'static str> {
        if !self.high && x > self.above {
            self.high = true;
            self.rises += 1;
            Some("rise")
        } else if self.high && x < self.above - self.hysteresis {
            self.high = false;
            self.falls += 1;
            Some("fall")
        } else {
            None
        }
    }
}

impl BoxImpl for Threshold {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let Some(msg) = io.read(INPUT) else {
            return Ok(Flow::Return);
        };
        let x = number(&msg)?;
        if let Some(kind) = self.crossing(x) {
            let line = format!("{kind} seq={} value={x:.3} threshold={}", msg.seq, self.above);
            let _ = io.write(EVENTS, msg.with_payload(line.as_bytes()));
        }
        Ok(Flow::Return)
    }

    fn stats(&self) -> Stats {
        Stats::new().with("rises", self.rises).with("falls", self.falls)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_around_the_threshold_gives_one_rise_and_one_fall() {
        let mut t = Threshold {
            above: 10.0,
            hysteresis: 1.0,
            high: false,
            rises: 0,
            falls: 0,
        };
        let events: Vec<_> = [9.0, 10.5, 9.8, 10.2, 9.5, 8.9, 9.5]
            .into_iter()
            .filter_map(|x| t.crossing(x))
            .collect();
        assert_eq!(events, ["rise", "fall"]);
    }
}
