//! `--stats-every DURATION`: one JSON line of live figures per interval, on stderr or in
//! `--stats-file PATH`, for a dashboard or a script that follows a long run.
//!
//! Its own thread takes a [`Snapshot`] of the run every interval and writes
//! [`smx_runtime::stats_line`] of it; after the run one last line with `"final":
//! true` carries the final counts, which are the report's. A write that fails (a closed pipe)
//! stops the lines, never the run.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};

use super::exit::CliError;
use smx_runtime::Progress;
use smx_runtime::{Snapshot, stats_line};

/// Where the lines go.
pub enum Sink {
    Stderr,
    File(std::fs::File),
}

impl Sink {
    /// `--stats-file PATH` (created or truncated before the run), else stderr.
    pub fn open(path: Option<&Path>) -> Result<Sink, CliError> {
        match path {
            None => Ok(Sink::Stderr),
            Some(p) => std::fs::File::create(p).map(Sink::File).map_err(|e| {
                CliError::rejected(format!(
                    "--stats-file {}: {}",
                    p.display(),
                    super::output::why_no_file(p, &e)
                ))
            }),
        }
    }

    fn line(&mut self, text: &str) -> std::io::Result<()> {
        match self {
            Sink::Stderr => writeln!(std::io::stderr().lock(), "{text}"),
            Sink::File(f) => {
                writeln!(f, "{text}")?;
                f.flush()
            }
        }
    }
}

/// Where a writer of stats lines takes its snapshots: a run's [`Progress`], or the figures a
/// net over several processes made of its slices'.
type Sampler = Arc<dyn Fn() -> Option<Snapshot> + Send + Sync>;

/// A running writer of stats lines; [`StatsLines::finish`] writes the final line.
pub struct StatsLines {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<(Sink, Option<Snapshot>)>>,
    sample: Sampler,
}

impl StatsLines {
    pub fn start(progress: Progress, every: Duration, sink: Sink) -> StatsLines {
        StatsLines::sampling(move || progress.snapshot(), every, sink)
    }

    /// Lines of the snapshots `sample` takes, the last once the run is over.
    pub fn sampling(
        sample: impl Fn() -> Option<Snapshot> + Send + Sync + 'static,
        every: Duration,
        sink: Sink,
    ) -> StatsLines {
        let sample: Sampler = Arc::new(sample);
        let (stop, stopped) = bounded::<()>(0);
        let sampler = Arc::clone(&sample);
        let thread = std::thread::Builder::new()
            .name("smx-stats".to_string())
            .spawn(move || write_every(&*sampler, every, sink, &stopped))
            .ok();
        StatsLines {
            stop: Some(stop),
            thread,
            sample,
        }
    }

    /// After the run: stops the thread and writes the line of the final counts.
    pub fn finish(self) {
        self.finish_with(|_| None);
    }

    /// [`StatsLines::finish`] whose final line is `last` makes of the line before, when it
    /// makes one (a net over several processes: the merged report's counts).
    pub fn finish_with(mut self, last: impl FnOnce(Option<Snapshot>) -> Option<Snapshot>) {
        self.stop.take();
        let Some((mut sink, before)) = self.thread.take().and_then(|t| t.join().ok()) else {
            return;
        };
        if let Some(now) = last(before.clone()).or_else(|| (self.sample)()) {
            let _ = sink.line(&stats_line(before.as_ref(), &now));
        }
    }
}

fn write_every(
    sample: &dyn Fn() -> Option<Snapshot>,
    every: Duration,
    mut sink: Sink,
    stopped: &Receiver<()>,
) -> (Sink, Option<Snapshot>) {
    let mut last: Option<Snapshot> = None;
    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
        let Some(now) = sample() else {
            continue;
        };
        if now.finished {
            break;
        }
        if sink.line(&stats_line(last.as_ref(), &now)).is_err() {
            break;
        }
        last = Some(now);
    }
    (sink, last)
}

/// `--stats-every`: a duration above zero.
pub fn parse_every(text: &str) -> Result<Duration, String> {
    // The duration syntax's own examples include ones shorter than this option takes.
    let d = smx_box::parse_duration(text).map_err(|_| {
        format!("'{text}' is not an interval: write a whole number with the unit s or ms (e.g. 500ms, 1s, 2s500ms)")
    })?;
    if d < Duration::from_millis(1) {
        return Err(format!(
            "'{text}' is shorter than 1ms; give an interval such as 500ms or 1s"
        ));
    }
    Ok(d)
}
