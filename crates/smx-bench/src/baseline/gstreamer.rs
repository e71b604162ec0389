//! GStreamer as a peer: `fakesrc ! queue ! fakesink` moving the same number of buffers.
//!
//! GStreamer is the best-known dataflow runtime on Linux, so "how does a Src.Snk pair compare
//! with a two-element pipeline and a queue between" is a fair question. We run
//! `gst-launch-1.0 -q fakesrc num-buffers=N sizetype=fixed sizemax=S ! queue
//! max-size-buffers=L max-size-bytes=0 max-size-time=0 ! fakesink` and time the whole process.
//! Process start and pipeline setup are not message passing, so the same pipeline with one
//! buffer is timed too and its median subtracted (`setup_s`).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use super::super::result::Run;

pub const PROGRAM: &str = "gst-launch-1.0";

/// The path of `gst-launch-1.0` when it is on PATH.
pub fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(PROGRAM))
        .find(|candidate| candidate.is_file())
}

/// The message shown when `--peer gstreamer` is asked for but the program is missing.
pub fn missing_message() -> String {
    format!("--peer gstreamer: {PROGRAM} is not on PATH (install gstreamer1.0-tools); the GStreamer peer was not run")
}

/// The pipeline description: `chains` independent `fakesrc ! queue ! fakesink` chains in one
/// pipeline (each a source streaming thread and a queue thread, the shape of one Src.Snk pair),
/// each moving `buffers` buffers of `size` bytes through a queue of `len`.
pub fn pipeline(buffers: u64, size: usize, len: usize, chains: usize) -> Vec<String> {
    let mut args = vec!["-q".to_string()];
    for _ in 0..chains.max(1) {
        args.extend(chain(buffers, size, len));
    }
    args
}

fn chain(buffers: u64, size: usize, len: usize) -> Vec<String> {
    [
        "fakesrc".to_string(),
        format!("num-buffers={buffers}"),
        "sizetype=fixed".into(),
        format!("sizemax={size}"),
        "!".into(),
        "queue".into(),
        format!("max-size-buffers={len}"),
        "max-size-bytes=0".into(),
        "max-size-time=0".into(),
        "!".into(),
        "fakesink".into(),
    ]
    .to_vec()
}

/// Times one pipeline run; `Err` names the failure.
pub fn time_once(program: &PathBuf, buffers: u64, size: usize, len: usize, chains: usize) -> Result<f64, String> {
    let start = Instant::now();
    let output = Command::new(program)
        .args(pipeline(buffers, size, len, chains))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let wall = start.elapsed().as_secs_f64();
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!("{PROGRAM} failed ({}): {}", output.status, stderr.trim()));
    }
    Ok(wall)
}

/// One measured run, given the setup time to subtract. Metrics: `wall_s` (whole process),
/// `setup_s`, `messages` (all chains), `msg_rate_hz` (messages over wall time minus setup).
pub fn run(program: &PathBuf, buffers: u64, size: usize, len: usize, chains: usize, setup_s: f64) -> Run {
    match time_once(program, buffers, size, len, chains) {
        Err(e) => Run::failed(e),
        Ok(wall) => {
            let mut run = Run::new();
            let moving = (wall - setup_s).max(f64::MIN_POSITIVE);
            let messages = buffers as f64 * chains.max(1) as f64;
            run.set("wall_s", wall)
                .set("setup_s", setup_s)
                .set("messages", messages)
                .set("msg_rate_hz", messages / moving);
            if wall <= setup_s {
                run.invalidate("the run was not longer than the setup time; raise --count");
            }
            run
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipeline_repeats_one_chain_per_pair() {
        let args = pipeline(1000, 8, 4, 2);
        assert_eq!(args[0], "-q");
        assert_eq!(args.iter().filter(|a| *a == "fakesrc").count(), 2);
        assert_eq!(args.iter().filter(|a| *a == "num-buffers=1000").count(), 2);
        assert!(args.contains(&"max-size-buffers=4".to_string()));
        assert!(args.contains(&"sizemax=8".to_string()));
        assert!(missing_message().contains(PROGRAM));
    }
}
