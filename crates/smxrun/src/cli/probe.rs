//! `smxrun probe`: the platform's timer floor, the library's probe printed.

use std::time::Duration;

use smx_timing::probe::DEFAULT_FIREWALL_PRIORITY;
use smx_timing::{ProbeOptions, Spin};

use super::exit::CliError;

/// `smxrun probe` options.
#[derive(Debug, Clone, clap::Args)]
pub struct ProbeArgs {
    /// Period of the empty loop (e.g. 10us, 1ms).
    #[arg(long, default_value = "10us", value_parser = smx_box::parse_duration)]
    pub period: Duration,
    /// Scheduled ticks to run through (missed ones included).
    #[arg(long, default_value_t = 1_000_000)]
    pub ticks: u64,
    /// Spin before each release: off, auto (only where the wake-up latency is a noticeable
    /// share of the period), or a margin such as 20us.
    #[arg(long, default_value = "auto", value_parser = Spin::parse)]
    pub spin: Spin,
    /// SCHED_FIFO level of the probing thread; 0 for normal scheduling [default: 5, or normal
    /// scheduling where the loop spins through the whole period, as smx's cyclic executive
    /// alone on its core does: the kernel throttles a real-time thread that never sleeps]
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=99))]
    pub priority: Option<u8>,
    /// Do not lock memory (mlockall).
    #[arg(long)]
    pub no_mlock: bool,
    /// Pin the probing thread to this core.
    #[arg(long)]
    pub core: Option<usize>,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

impl ProbeArgs {
    pub fn options(&self) -> ProbeOptions {
        ProbeOptions {
            period: self.period,
            ticks: self.ticks,
            spin: self.spin,
            priority: match self.priority {
                None => Some(DEFAULT_FIREWALL_PRIORITY),
                Some(level) => (level > 0).then_some(level),
            },
            lock_memory: !self.no_mlock,
            core: self.core,
            may_spin_through: self.priority.is_none(),
        }
    }
}

/// `smxrun probe`: the platform's timer floor (the library's probe, printed).
pub fn probe(args: &ProbeArgs) -> Result<i32, CliError> {
    let result = smx_timing::probe(&args.options()).map_err(CliError::rejected)?;
    for warning in &result.warnings {
        crate::cli::say(&format!("warning: {warning}"));
    }
    let text = if args.json {
        serde_json::to_string(&result).map_err(|e| CliError::rejected(e.to_string()))? + "\n"
    } else {
        result.to_text()
    };
    super::output::Output::open(None)?.write(&text)?;
    Ok(super::exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_arguments_map_to_options() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            probe: ProbeArgs,
        }
        let cli = Cli::parse_from([
            "probe",
            "--period",
            "20us",
            "--ticks",
            "5",
            "--spin",
            "off",
            "--priority",
            "0",
        ]);
        let o = cli.probe.options();
        assert_eq!(
            (o.period, o.ticks, o.spin, o.priority, o.may_spin_through),
            (Duration::from_micros(20), 5, Spin::Off, None, false)
        );
        let default = Cli::parse_from(["probe"]).probe.options();
        assert_eq!((default.priority, default.may_spin_through), (Some(5), true));
        let fifo = Cli::parse_from(["probe", "--priority", "7"]).probe.options();
        assert_eq!((fifo.priority, fifo.may_spin_through), (Some(7), false));
        // SCHED_FIFO has levels 1 to 99: a larger one is refused, not taken as 99.
        assert!(Cli::try_parse_from(["probe", "--priority", "200"]).is_err());
        assert!(Cli::try_parse_from(["probe", "--period", "soon"]).is_err());
    }
}
