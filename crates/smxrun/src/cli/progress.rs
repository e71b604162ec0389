//! The progress line on a terminal: messages so far, the current message rate, elapsed time.
//!
//! Drawn on stderr about four times a second by its own thread, which only samples the
//! runtime's relaxed counters, so the nets do not notice it. It appears only when stderr is a
//! terminal, `--quiet` is not given and the run has lasted a second (short runs stay clean),
//! and it is erased before the report is printed.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Sender, bounded};

/// How often the line is redrawn.
const REFRESH: Duration = Duration::from_millis(250);
/// Runs shorter than this show no progress line.
const DELAY: Duration = Duration::from_secs(1);

/// A running progress line; [`ProgressLine::finish`] erases it.
pub struct ProgressLine {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ProgressLine {
    /// Starts drawing `sample()` (messages so far, time since the nets started; `None` before
    /// they started) when `enabled` and stderr is a terminal; otherwise does nothing.
    pub fn start<F>(enabled: bool, sample: F) -> ProgressLine
    where
        F: Fn() -> Option<(u64, Duration)> + Send + 'static,
    {
        if !enabled || !std::io::stderr().is_terminal() {
            return ProgressLine {
                stop: None,
                thread: None,
            };
        }
        let (stop, stopped) = bounded::<()>(0);
        let thread = std::thread::Builder::new()
            .name("smx-progress".to_string())
            .spawn(move || draw_until(stopped, sample))
            .ok();
        ProgressLine {
            stop: Some(stop),
            thread,
        }
    }

    /// Stops drawing and erases the line.
    pub fn finish(mut self) {
        self.stop_thread();
    }

    fn stop_thread(&mut self) {
        // Dropping the sender wakes the thread at once.
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

fn draw_until<F>(stopped: crossbeam_channel::Receiver<()>, sample: F)
where
    F: Fn() -> Option<(u64, Duration)>,
{
    let mut drawn = false;
    let mut window = RateWindow::default();
    while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = stopped.recv_timeout(REFRESH) {
        let Some((messages, elapsed)) = sample() else {
            continue;
        };
        let rate = window.push(messages, elapsed);
        if elapsed < DELAY {
            continue;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{}", line(messages, rate, elapsed));
        let _ = err.flush();
        drawn = true;
    }
    if drawn {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K");
        let _ = err.flush();
    }
}

/// The message rate over the last [`WINDOW`]: a loaded machine moves messages in bursts, and
/// a rate over one refresh interval would jump between zero and several times the mean.
#[derive(Debug, Default)]
struct RateWindow {
    samples: VecDeque<(u64, Duration)>,
}

/// How far back the shown rate looks.
const WINDOW: Duration = Duration::from_secs(2);

impl RateWindow {
    /// Adds a sample and returns the rate since the oldest sample within the window.
    fn push(&mut self, messages: u64, elapsed: Duration) -> f64 {
        self.samples.push_back((messages, elapsed));
        while self.samples.len() > 2 && self.samples.get(1).is_some_and(|&(_, t)| elapsed - t >= WINDOW) {
            self.samples.pop_front();
        }
        match self.samples.front() {
            Some(&(m0, t0)) if elapsed > t0 => messages.saturating_sub(m0) as f64 / (elapsed - t0).as_secs_f64(),
            _ => 0.0,
        }
    }
}

/// The text of the line, e.g. `running  12.3 s  4,500,000 messages  1.25 M msg/s`.
pub fn line(messages: u64, rate: f64, elapsed: Duration) -> String {
    format!(
        "running  {:.1} s  {} messages  {} msg/s  (Ctrl-C stops)",
        elapsed.as_secs_f64(),
        grouped(messages),
        human_rate(rate)
    )
}

/// `1234567` as `1,234,567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate with a k/M/G prefix and three significant figures.
fn human_rate(rate: f64) -> String {
    let (value, unit) = match rate {
        r if r >= 1e9 => (r / 1e9, " G"),
        r if r >= 1e6 => (r / 1e6, " M"),
        r if r >= 1e3 => (r / 1e3, " k"),
        r => (r, ""),
    };
    let decimals = if value >= 100.0 || value == 0.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.decimals$}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_shows_count_rate_and_time() {
        assert_eq!(
            line(4_500_000, 1_254_000.0, Duration::from_millis(12_340)),
            "running  12.3 s  4,500,000 messages  1.25 M msg/s  (Ctrl-C stops)"
        );
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(human_rate(0.0), "0");
        assert_eq!(human_rate(312_500.0), "312 k");
        assert_eq!(human_rate(2.5e9), "2.50 G");
    }

    #[test]
    fn the_rate_covers_the_last_two_seconds() {
        let mut w = RateWindow::default();
        let at = Duration::from_millis;
        assert_eq!(w.push(0, at(0)), 0.0);
        assert_eq!(w.push(1000, at(500)), 2000.0);
        assert_eq!(
            w.push(1000, at(1000)),
            1000.0,
            "a stall lowers the rate without zeroing it"
        );
        assert_eq!(w.push(4000, at(2000)), 2000.0);
        assert_eq!(
            w.push(4000, at(3000)),
            1500.0,
            "samples older than two seconds are dropped"
        );
        assert_eq!(w.samples.len(), 3);
    }

    #[test]
    fn no_line_and_no_thread_when_disabled() {
        let progress = ProgressLine::start(false, || panic!("sampled although disabled"));
        assert!(progress.thread.is_none());
        progress.finish();
    }
}
