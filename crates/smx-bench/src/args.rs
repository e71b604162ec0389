//! The command line of `smxrun bench`: one subcommand per experiment and the common flags.
//!
//! Lists are comma-separated (`--pairs 1,2,4`). Every experiment-specific value is optional so
//! that `--quick` can choose reduced defaults; what was finally used is recorded in the
//! result's `settings`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

/// `smxrun bench`: reproduce the ISPW60 report's experiments with baselines side by side.
#[derive(Debug, Clone, Args)]
#[command(
    about = "Reproduce the ISPW60 report's experiments with baselines, percentiles and plots",
    after_help = "Exit status: 0 all runs valid, 1 error (bad argument, unwritable file), 2 some runs \
                  invalid (flagged in the output), 130 ended early by Ctrl-C (the runs measured before it \
                  are printed and saved; a second Ctrl-C quits without them)."
)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub experiment: Experiment,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Flags every experiment accepts (before or after the experiment's name).
#[derive(Debug, Clone, Default, Args)]
pub struct CommonArgs {
    /// A reduced version of each experiment, for smoke checks (about a minute for `all`)
    #[arg(long, global = true)]
    pub quick: bool,
    /// Measured runs per configuration, after one discarded warm-up run (at least 1)
    #[arg(long, global = true, value_name = "R", value_parser = positive_usize)]
    pub runs: Option<usize>,
    /// Save the full result (machine header, settings, every raw run) as JSON
    #[arg(long, global = true, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Save every raw run as a long CSV table (one row per case, run and metric)
    #[arg(long, global = true, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// Save the printed tables with the machine header as Markdown
    #[arg(long, global = true, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Print ratios of this run's medians against an earlier `--json` result
    #[arg(long, global = true, value_name = "OLD.json")]
    pub compare: Option<PathBuf>,
    /// Write SVG charts into this directory (created if missing)
    #[arg(long, global = true, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum Experiment {
    /// Message rate of 1..16 Src.Snk pairs per channel length beside three queue peers
    Scaling(ScalingArgs),
    /// Deadline misses of tt[T](Src.Snk) per period and pair count, beside the timer floor
    Tt(TtArgs),
    /// ZeroMQ rate and loss per pattern and transport, beside raw PUSH/PULL
    Zmq(ZmqArgs),
    /// A net over two hosts (network namespaces, root): its link against raw PUSH/PULL, CURVE
    /// off and on
    Hosts(HostsArgs),
    /// A net over two processes of one machine against one process; the link's latency
    /// against a pipe and iceoryx2
    Processes(ProcessesArgs),
    /// Nets beside busy programs against the same peers: each one's slowdown and its ratio to
    /// the peer that slows down least
    Load(LoadArgs),
    /// One-way latency percentiles through Src.F...F.Snk per hop count and payload size
    Latency(LatencyArgs),
    /// Defaults against the best setting of a --pin x --wait-spin x --tt-mode sweep, per row
    Tune(TuneArgs),
    /// The four experiments of one process, scaling, tt, zmq and latency, with their defaults
    /// (use with --quick for a smoke check); hosts, processes, load and tune run on their own
    All,
}

impl Experiment {
    /// The experiments it runs, as their results name them.
    pub fn names(&self) -> &'static [&'static str] {
        match self {
            Experiment::Scaling(_) => &["scaling"],
            Experiment::Tt(_) => &["tt"],
            Experiment::Zmq(_) => &["zmq"],
            Experiment::Hosts(_) => &["hosts"],
            Experiment::Processes(_) => &["processes"],
            Experiment::Load(_) => &["load"],
            Experiment::Latency(_) => &["latency"],
            Experiment::Tune(_) => &["tune"],
            Experiment::All => &["scaling", "tt", "zmq", "latency"],
        }
    }
}

#[derive(Debug, Clone, Default, Args)]
pub struct TuneArgs {
    /// Which rows to run: `scaling` (Src.Snk pairs), `zmq` (the report's ZeroMQ net, PIPELINE
    /// over tcp), `tt` (tt[T](Src.Snk) | (Src.Snk), as nets/src_snk.smx) [default: all three]
    #[arg(long, value_delimiter = ',', value_parser = ["scaling", "zmq", "tt"], value_name = "ROW,..")]
    pub rows: Vec<String>,
    /// Pair counts of the scaling rows [default: 1,4,16; quick: 1,4]
    #[arg(long, value_delimiter = ',', value_name = "N,..", value_parser = positive_usize)]
    pub pairs: Vec<usize>,
    /// Channel lengths of the scaling rows [default: 1,64]
    #[arg(long, value_delimiter = ',', value_name = "L,..", value_parser = clap::value_parser!(u32).range(1..))]
    pub channel_len: Vec<u32>,
    /// Messages per pair (scaling) and per run (zmq) [default: 200000, so that a chained pair at
    /// 10 M msg/s still runs for tens of milliseconds; quick: 5000]
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub count: Option<u64>,
    /// Ticks of the tt row, and messages of its free-running pair [default: 20000, so that a
    /// miss rate of 1 % is some 200 misses a run, not a count dominated by chance; quick: 1000]
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub ticks: Option<u64>,
    /// Period of the tt row [default: 10us, as nets/src_snk.smx]
    #[arg(long, value_parser = parse_period, value_name = "T")]
    pub period: Option<Duration>,
    /// `--pin` values of the sweep: auto, off, and spread (`--pin` with every allowed core: the
    /// spreading that auto replaces where it keeps chains on one core) [default: auto,off,spread]
    #[arg(long, value_delimiter = ',', value_parser = ["auto", "off", "spread"], value_name = "auto|off|spread,..")]
    pub pins: Vec<String>,
    /// `--wait-spin` values of the sweep (0 parks at once) [default: 0,10us,50us,200us; the
    /// runtime's default is always added]
    #[arg(long, value_delimiter = ',', value_parser = smx_box::parse_duration, value_name = "D,..")]
    pub spins: Vec<Duration>,
    /// `--tt-mode` values of the sweep, for the tt row [default: threads,cyclic]
    #[arg(long, value_delimiter = ',', value_parser = sweep_mode, value_name = "threads|cyclic,..")]
    pub modes: Vec<smx_runtime::TtMode>,
}

/// A `--tt-mode` the sweep sets by hand: `auto` is the default's choice, not a setting.
fn sweep_mode(text: &str) -> Result<smx_runtime::TtMode, String> {
    use smx_runtime::TtMode;
    match text.trim().parse::<TtMode>()? {
        TtMode::Auto => Err("auto is what the default run uses; the sweep sets threads or cyclic".into()),
        mode => Ok(mode),
    }
}

#[derive(Debug, Clone, Default, Args)]
pub struct ScalingArgs {
    /// Pair counts to run (threads = 2 x pairs) [default: 1,2,4,8,16; quick: 1,2,4]
    #[arg(long, value_delimiter = ',', value_name = "N,..", value_parser = pair_count)]
    pub pairs: Vec<usize>,
    /// Messages per pair [default: 1000000, and at least 4000000 per run (4 M for one pair, 2 M
    /// each for two), so that no run is over in a few hiccups of the host; quick: 100000]
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub count: Option<u64>,
    /// Channel lengths, a cell each (the report's runtime used 1) [default: 1,64,1024; quick: 1,64]
    #[arg(long, value_delimiter = ',', value_name = "L,..", value_parser = clap::value_parser!(u32).range(1..))]
    pub channel_len: Vec<u32>,
    /// Payload bytes per message [default: 8]
    #[arg(long, value_name = "BYTES")]
    pub size: Option<usize>,
    /// Also run a peer runtime at the same shape (`gstreamer`: fakesrc ! queue ! fakesink)
    #[arg(long, value_name = "NAME", value_parser = ["gstreamer"])]
    pub peer: Option<String>,
    /// smx's operator chaining (see `smxrun --chain`): auto, the default, runs a pair on one
    /// thread where the pairs' threads outnumber the cores on channels shorter than 256; off keeps a thread
    /// per box, so that smx and the peers hand every message between two threads
    #[arg(long, value_name = "auto|off", default_value = "auto")]
    pub chain: smx_runtime::ChainMode,
}

#[derive(Debug, Clone, Default, Args)]
pub struct TtArgs {
    /// Periods (time literals) [default: 10us,20us,40us,100us]
    #[arg(long, value_delimiter = ',', value_parser = parse_period, value_name = "T,..")]
    pub periods: Vec<Duration>,
    /// Pair counts [default: 1,3]
    #[arg(long, value_delimiter = ',', value_name = "N,..", value_parser = pair_count)]
    pub pairs: Vec<usize>,
    /// Ticks per run [default: 100000; quick: 2000]
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub ticks: Option<u64>,
    /// Where the time-triggered boxes run (see `smxrun --tt-mode`) [default: threads,cyclic]
    #[arg(long, value_delimiter = ',', value_name = "threads|cyclic,..")]
    pub modes: Vec<smx_runtime::TtMode>,
}

#[derive(Debug, Clone, Default, Args)]
pub struct ZmqArgs {
    /// Patterns [default: pubsub,pipeline]
    #[arg(long, value_delimiter = ',', value_parser = ["pubsub", "pipeline"], value_name = "P,..")]
    pub patterns: Vec<String>,
    /// Transports [default: tcp,ipc]
    #[arg(long, value_delimiter = ',', value_parser = ["tcp", "ipc"], value_name = "T,..")]
    pub transports: Vec<String>,
    /// Messages per run [default: 1000000; quick: 50000]
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub count: Option<u64>,
    /// Payload bytes per message [default: 8]
    #[arg(long, value_name = "BYTES")]
    pub size: Option<usize>,
    /// What consumes behind the ZMQ source: `dump` (the report's smx_snk_dump, to /dev/null)
    /// or `null` (smx_snk_null, the topic port left open), to see the transport alone
    #[arg(long, value_parser = ["dump", "null"], value_name = "BOX")]
    pub consumer: Option<String>,
    /// Lengths of the net's channels, a row each: the report's runtime used 1; a longer
    /// channel lets the ZMQ sink find several messages waiting and send them in one frame
    /// [default: 1,64; quick: 1]
    #[arg(long, value_delimiter = ',', value_name = "L,..", value_parser = clap::value_parser!(u32).range(1..))]
    pub channel_len: Vec<u32>,
    /// Where the net's four threads run, a row each: `spread` (`--pin auto`: every channel's
    /// producer and consumer on different cores) or `chains` (each chain, Src1.Snk1 and
    /// Src2.Snk2, on a core of its own, as with per-net `core` keys) [default: spread]
    #[arg(long, value_delimiter = ',', value_parser = ["spread", "chains"], value_name = "P,..")]
    pub placement: Vec<String>,
}

#[derive(Debug, Clone, Default, Args)]
pub struct ProcessesArgs {
    /// Messages per rate run [default: 1000000; quick: 100000]
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub count: Option<u64>,
    /// Channel lengths of the rate runs [default: 1,64]
    #[arg(long, value_delimiter = ',', value_name = "L,..", value_parser = clap::value_parser!(u32).range(1..))]
    pub channel_len: Vec<u32>,
    /// Payload sizes of the latency runs, in bytes [default: 8,8192,1048576,67108864; quick:
    /// 8,8192,1048576]
    #[arg(long, value_delimiter = ',', value_name = "BYTES,..")]
    pub size: Vec<usize>,
    /// iceoryx2's `benchmark-publish-subscribe`, run beside the link [default: $SMX_ICEORYX2_BENCH]
    #[arg(long, value_name = "PATH")]
    pub iceoryx2: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Default, Args)]
pub struct LoadArgs {
    /// Messages per net or pair [default: 20000; quick: 5000]
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub count: Option<u64>,
    /// Numbers of busy loops beside each workload, 0 for alone [default: 0,2]
    #[arg(long, value_delimiter = ',', value_name = "N,..", value_parser = clap::value_parser!(u32).range(0..=64))]
    pub busy: Vec<u32>,
}

#[derive(Debug, Clone, Default, Args)]
pub struct HostsArgs {
    /// Messages per run [default: 1000000; quick: 50000]
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub count: Option<u64>,
    /// Payload bytes per message [default: 8]
    #[arg(long, value_name = "BYTES")]
    pub size: Option<usize>,
    /// The net's channel length, which the link keeps across the hosts [default: 64]
    #[arg(long, value_name = "L", value_parser = clap::value_parser!(u32).range(1..))]
    pub channel_len: Option<u32>,
}

#[derive(Debug, Clone, Default, Args)]
pub struct LatencyArgs {
    /// Forwarding boxes between source and sink [default: 0,1,2,4,8]
    #[arg(long, value_delimiter = ',', value_name = "N,..")]
    pub hops: Vec<usize>,
    /// Payload sizes in bytes [default: 8,1024,8192]
    #[arg(long, value_delimiter = ',', value_name = "BYTES,..")]
    pub size: Vec<usize>,
    /// Messages per run, one in flight at a time [default: 20000; quick: 1000]
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub count: Option<u64>,
    /// Messages per run of the cost comparison (Src.Snk with the report's latency off, sampled,
    /// full) [default: 2000000; quick: 100000]; 0 skips it
    #[arg(long, value_name = "N")]
    pub cost_count: Option<u64>,
    /// Rounds of the cost comparison [default: 5; quick: 1]
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub cost_rounds: Option<usize>,
    /// Only the cost comparison, no hop chains
    #[arg(long)]
    pub cost_only: bool,
}

/// A count that must be at least 1 (runs, pairs): 0 would measure nothing, or build a net
/// without boxes.
fn positive_usize(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}

/// Most pairs of one run: two threads each, and a run has at most 4096 threads (the baselines
/// spawn as many); more would end in the system's thread limit, not in a figure.
pub const MAX_PAIRS: usize = 2048;

/// A pair count: at least 1, at most [`MAX_PAIRS`].
fn pair_count(text: &str) -> Result<usize, String> {
    match positive_usize(text)? {
        n if n > MAX_PAIRS => Err(format!(
            "{n} pairs are {} threads; at most {MAX_PAIRS} pairs ({} threads) are run",
            2 * n,
            2 * MAX_PAIRS
        )),
        n => Ok(n),
    }
}

/// A message or tick count that must be at least 1 (for a source, 0 would mean "forever").
fn positive_u64(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}

fn parse_period(text: &str) -> Result<Duration, String> {
    let d = smx_box::parse_duration(text)?;
    if d.is_zero() {
        return Err("a period must be longer than zero".into());
    }
    Ok(d)
}

/// `list` if given, else the quick or the full default.
pub fn or_default<T: Clone>(list: &[T], quick: bool, quick_default: &[T], full_default: &[T]) -> Vec<T> {
    if !list.is_empty() {
        list.to_vec()
    } else if quick {
        quick_default.to_vec()
    } else {
        full_default.to_vec()
    }
}

/// `value` if given, else the quick or the full default.
pub fn pick<T: Copy>(value: Option<T>, quick: bool, quick_default: T, full_default: T) -> T {
    value.unwrap_or(if quick { quick_default } else { full_default })
}
