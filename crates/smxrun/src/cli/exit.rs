//! Exit codes and the one error type every command returns.
//!
//! Scripts that publish figures must be able to tell a rejected net from a failed box from an
//! interrupted run without parsing text, so each outcome has its own code.

use std::fmt;

/// The net ran and every box ended normally (also: `check` accepted the net).
pub const OK: i32 = 0;
/// The net was rejected (diagnostics), or the configuration or the command line was wrong.
pub const REJECTED: i32 = 1;
/// A box failed while running (error or panic in a step or its cleanup); the report says which.
pub const BOX_FAILED: i32 = 2;
/// Every box ended, but a box reports books that are not clean (its figures' `verdict` is
/// `incomplete` or `suspect`): the figures cannot be published as they are.
pub const BOOKS_NOT_CLEAN: i32 = 3;
/// Stopped by Ctrl-C (SIGINT), SIGTERM, SIGHUP or SIGQUIT; the report is partial.
pub const INTERRUPTED: i32 = 130;

/// The exit codes as `smxrun --help` shows them.
pub const HELP: &str = "\
Exit codes:
  0    ok (check: the net is accepted; warnings allowed)
  1    the net was rejected, or a bad configuration, file or command line, or a box could not start,
       or the run needs more memory or file descriptors than the process may have, or the report
       could not be written
  2    a box failed while running (see the report's status column); over several processes also
       a process that died or was lost
  3    every box ended, but a box's books are not clean (a link that delivered or received nothing,
       lost its tail, or saw forged frames: its row's verdict is incomplete or suspect)
  130  interrupted by Ctrl-C, SIGTERM, SIGHUP or SIGQUIT (the partial report is printed; a second
       signal more than 500 ms later, or a run not ended 5 s after the stop, exits without one)

Logging: RUST_LOG=info|debug|trace (default: warn), written to stderr.";

/// A command that could not do its job: what to tell the user and which code to exit with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    pub code: i32,
    pub message: String,
}

impl CliError {
    /// A usage, configuration or input problem (exit code 1).
    pub fn rejected(message: impl Into<String>) -> Self {
        CliError {
            code: REJECTED,
            message: message.into(),
        }
    }

    /// The problem has already been shown (e.g. diagnostics); only the exit code is left.
    pub fn silent(code: i32) -> Self {
        CliError {
            code,
            message: String::new(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<smx_runtime::config::ConfigError> for CliError {
    fn from(e: smx_runtime::config::ConfigError) -> Self {
        CliError::rejected(e.render_with(origin_flag))
    }
}

/// The command line's words for the places of a setting that it made itself.
fn origin_flag(origin: &smx_runtime::config::Origin) -> Option<String> {
    use smx_runtime::config::Origin;
    match origin {
        Origin::Override(arg) => Some(format!("--set '{arg}'")),
        Origin::IterationCount => Some("--iterations".to_string()),
        Origin::File { .. } | Origin::BuiltIn => None,
    }
}
