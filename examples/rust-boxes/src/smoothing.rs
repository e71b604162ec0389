//! `moving_average(in value, out value)`: smooths a stream of numbers, one output per input.
//!
//! `mode = "sma"`: the mean of the last `window` values (fewer at the start). `mode = "ewma"`:
//! an exponential low-pass filter, `y = y + alpha * (x - y)`, starting at the first value.

use std::collections::VecDeque;

use smx_box::prelude::*;

use crate::{number, number_message};

const INPUT: InPort = InPort(0);
const OUTPUT: OutPort = OutPort(0);

pub const SPEC: BoxSpec = BoxSpec::named("moving_average")
    .summary("a moving average (sma) or exponential low-pass filter (ewma) of a stream of numbers")
    .inputs(&[PortSpec::new("value").help("numbers, 8-byte little-endian f64")])
    .outputs(&[PortSpec::new("value").help("the smoothed numbers, same sequence numbers")])
    .config(&[
        ConfigKey::choice("mode", &["sma", "ewma"])
            .default_value("sma")
            .help("the filter"),
        ConfigKey::int("window")
            .default_value("8")
            .help("sma: values averaged (at least 1)"),
        ConfigKey::float("alpha")
            .default_value("0.2")
            .help("ewma: weight of a new value, 0 < alpha <= 1"),
    ])
    // Its step reads only what the firing rule found: smx may run it on its feeder's thread.
    .chainable()
    // Nor does it wait on anything outside the net (a clock, a device): it only computes.
    .never_waits()
    .create(create);

enum Filter {
    Mean {
        window: usize,
        recent: VecDeque<f64>,
        sum: f64,
    },
    LowPass {
        alpha: f64,
        state: Option<f64>,
    },
}

impl Filter {
    fn push(&mut self, x: f64) -> f64 {
        match self {
            Filter::Mean { window, recent, sum } => {
                recent.push_back(x);
                *sum += x;
                if recent.len() > *window {
                    *sum -= recent.pop_front().unwrap_or(0.0);
                }
                *sum / recent.len() as f64
            }
            Filter::LowPass { alpha, state } => {
                let y = state.map_or(x, |y| y + *alpha * (x - y));
                *state = Some(y);
                y
            }
        }
    }
}

fn create(config: &BoxConfig) -> Result<Box<dyn BoxImpl>, BoxError> {
    let filter = if config.str("mode")? == "sma" {
        let window = config.int("window")?;
        if window == 0 || window > 1 << 20 {
            return Err(config.error("window", format!("{window} is not between 1 and {}", 1 << 20)));
        }
        Filter::Mean {
            window: window as usize,
            recent: VecDeque::with_capacity(window as usize + 1),
            sum: 0.0,
        }
    } else {
        let alpha = config.float("alpha")?;
        if !(alpha > 0.0 && alpha <= 1.0) {
            return Err(config.error("alpha", format!("{alpha} is not in (0, 1]")));
        }
        Filter::LowPass { alpha, state: None }
    };
    Ok(Box::new(Smoothing { filter, smoothed: 0 }))
}

struct Smoothing {
    filter: Filter,
    smoothed: u64,
}

impl BoxImpl for Smoothing {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let Some(msg) = io.read(INPUT) else {
            return Ok(Flow::Return);
        };
        let y = self.filter.push(number(&msg)?);
        let _ = io.write(OUTPUT, number_message(&msg, y));
        self.smoothed += 1;
        Ok(Flow::Return)
    }

    fn stats(&self) -> Stats {
        Stats::new().with("smoothed", self.smoothed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_covers_the_last_window_values() {
        let mut f = Filter::Mean {
            window: 3,
            recent: VecDeque::new(),
            sum: 0.0,
        };
        let out: Vec<f64> = [3.0, 6.0, 9.0, 12.0].into_iter().map(|x| f.push(x)).collect();
        assert_eq!(out, [3.0, 4.5, 6.0, 9.0]);
    }

    #[test]
    fn the_low_pass_starts_at_the_first_value_and_moves_by_alpha() {
        let mut f = Filter::LowPass {
            alpha: 0.5,
            state: None,
        };
        let out: Vec<f64> = [10.0, 20.0, 20.0].into_iter().map(|x| f.push(x)).collect();
        assert_eq!(out, [10.0, 15.0, 17.5]);
    }
}
