//! iceoryx2 as a peer of the links between processes: its own ping-pong benchmark
//! (`benchmark-publish-subscribe --bench-ipc`), a zero-copy publish-subscribe round trip A -> B
//! -> A over shared memory, whose one-way latency it prints as half the round trip.
//!
//! iceoryx2 is not a dependency of smx: the benchmark is built from its own repository
//! (`cargo build --release -p benchmark-publish-subscribe`) and named with `--iceoryx2 PATH`
//! or `SMX_ICEORYX2_BENCH`. Its two participants are busy-polling threads pinned to two cores,
//! and a sample's payload is loaned and sent without being written or read: it measures the
//! hand-over alone, which is the figure to beat for a link that hands a message over in place.
//! With `--send-copy` each side copies a payload of its own into the sample first (nothing is
//! read on receipt): the figure to compare with a link whose producer writes its payload.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::super::result::Run;

/// The environment variable naming the benchmark when `--iceoryx2` is not given.
pub const ENV: &str = "SMX_ICEORYX2_BENCH";

/// The benchmark named by `given` or by [`ENV`], when it is a file.
pub fn find(given: Option<&Path>) -> Option<PathBuf> {
    let path = given
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os(ENV).map(PathBuf::from))?;
    path.is_file().then_some(path)
}

/// One run of `iterations` round trips of `size`-byte samples, the participants on `cores`;
/// `copy`: each payload copied into its sample (`--send-copy`). Metrics: `latency_ns` (one
/// way, as iceoryx2 reports it), `wall_s`.
pub fn run(program: &Path, iterations: u64, size: usize, cores: (usize, usize), copy: bool) -> Run {
    let out = Command::new(program)
        .args(["--bench-ipc", "--iterations", &iterations.to_string()])
        .args(copy.then_some("--send-copy"))
        .args(["--payload-size", &size.to_string()])
        .args(["--cpu-core-participant-1", &cores.0.to_string()])
        .args(["--cpu-core-participant-2", &cores.1.to_string()])
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) => return Run::failed(format!("cannot run {}: {e}", program.display())),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    match parse(&stdout) {
        Some((wall, latency)) if out.status.success() => {
            let mut run = Run::new();
            run.set("latency_ns", latency).set("wall_s", wall);
            run
        }
        _ => Run::failed(format!(
            "{} ({}): no ipc::Service line in its output: {}{}",
            program.display(),
            out.status,
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// `(time in s, one-way latency in ns)` of the line of the plain `ipc::Service` (not the
/// thread-safe variant): `iceoryx2::service::ipc::Service ::: Iterations: 100000, Time:
/// 0.044468434 s, Latency: 222 ns, Sample Size: 8`.
fn parse(stdout: &str) -> Option<(f64, f64)> {
    let line = stdout.lines().find(|l| l.contains("ipc::Service :::"))?;
    let field = |name: &str| -> Option<f64> {
        let rest = &line[line.find(name)? + name.len()..];
        rest.split_whitespace().next()?.trim_end_matches(',').parse().ok()
    };
    Some((field("Time:")?, field("Latency:")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_plain_ipc_line_and_not_the_thread_safe_one() {
        let out = "iceoryx2::service::ipc_threadsafe::Service ::: Iterations: 100000, Time: 0.062 s, Latency: 310 ns, Sample Size: 8\n\
                   iceoryx2::service::ipc::Service ::: Iterations: 100000, Time: 0.044468434 s, Latency: 222 ns, Sample Size: 8\n";
        assert_eq!(parse(out), Some((0.044468434, 222.0)));
        assert_eq!(parse("nothing here"), None);
    }

    /// A stand-in for the benchmark that reports a latency of 1000 ns with `--send-copy`
    /// among its arguments and 100 ns without.
    #[cfg(unix)]
    #[test]
    fn a_copy_run_asks_for_send_copy_and_the_zero_copy_run_does_not() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("benchmark-publish-subscribe");
        std::fs::write(
            &program,
            "#!/bin/sh\nlatency=100\nfor a in \"$@\"; do [ \"$a\" = --send-copy ] && latency=1000; done\n\
             echo \"iceoryx2::service::ipc::Service ::: Iterations: 10, Time: 0.5 s, Latency: $latency ns, Sample Size: 8\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let latency = |copy| run(&program, 10, 8, (0, 0), copy).metrics.get("latency_ns").copied();
        assert_eq!((latency(false), latency(true)), (Some(100.0), Some(1000.0)));
    }
}
