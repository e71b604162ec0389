//! `smxrun`: the command line, a thin layer over the library.
//!
//! Each command parses its arguments ([`args`]), calls the library (front end, configuration,
//! runtime, exporters) and turns the outcome into output and an exit code ([`exit`]). Nothing
//! here knows how a net is checked or run; what is here is what only a command line needs:
//! where output goes ([`output`]), Ctrl-C ([`signals`]), the progress line ([`progress`]).

pub mod args;
pub mod boxes;
pub mod exit;
pub mod output;
pub mod progress;
pub mod signals;

use clap::Parser;

use crate::boxes::Registry;
use args::{Cli, Command};
use exit::CliError;

/// Runs `smxrun` with the process's arguments and returns the exit code.
pub fn main() -> i32 {
    main_with(std::env::args_os())
}

/// Runs `smxrun` with `args` (the first is the program name) and returns the exit code.
pub fn main_with<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    init_logging();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // --help and --version are not errors; every usage error exits with 1.
            return if e.use_stderr() { exit::REJECTED } else { exit::OK };
        }
    };
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            if !e.message.is_empty() {
                eprintln!("error: {}", e.message);
            }
            e.code
        }
    }
}

fn dispatch(cli: Cli) -> Result<i32, CliError> {
    match cli.command {
        Some(Command::Boxes(a)) => {
            let text = boxes::describe(&Registry::builtin(), a.name.as_deref())?;
            output::Output::open(None)?.write(&text)?;
            Ok(exit::OK)
        }
        Some(Command::Run(_) | Command::Check(_) | Command::Graph(_)) | None => Err(CliError::rejected(
            "this build has no language front end and runtime yet",
        )),
    }
}

/// `RUST_LOG` controls logging (default: warnings and errors), on stderr, never per message.
fn init_logging() {
    let env = env_logger::Env::default().default_filter_or("warn");
    let _ = env_logger::Builder::from_env(env).format_timestamp(None).try_init();
}
