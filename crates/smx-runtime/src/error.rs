//! Why a net was rejected before any of its threads started.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// A box instance names an implementation the registry does not know.
    UnknownImpl {
        instance: String,
        implementation: String,
        known: Vec<String>,
    },
    /// A box instance lacks a port its implementation requires.
    MissingPort {
        instance: String,
        implementation: String,
        port: String,
        direction: &'static str,
        /// The line of the net file that declares the box.
        line: usize,
    },
    /// A channel joins a port the implementation does not have, or a port that does not exist
    /// on the instance, or two channels share one port.
    BadPort {
        instance: String,
        message: String,
        /// The line of the net file that declares the box.
        line: usize,
    },
    /// The graph itself is unusable (unexpanded node, dangling edge, bad settings length...).
    BadGraph(String),
    /// More threads than allowed (`RunOptions::max_threads`) or than the system gave us.
    ThreadLimit { wanted: usize, message: String },
    /// The run would need more memory or file descriptors than the process can have.
    Resources(String),
    /// Box configurations failed their specs' checks ([`smx_box::BoxSpec::check`]): every
    /// failing box, in the order of the graph, so that one bad value does not hide another.
    BadValues(Vec<BadValue>),
    /// Boxes failed to start (create or init), so no box ran; one line per failed box.
    NotStarted(Vec<String>),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::UnknownImpl {
                instance,
                implementation,
                known,
            } => write!(
                f,
                "box instance '{instance}' uses unknown implementation '{implementation}' (known boxes: {})",
                known.join(", ")
            ),
            RunError::MissingPort {
                instance,
                implementation,
                port,
                direction,
                ..
            } => write!(
                f,
                "box instance '{instance}' ({implementation}) does not declare the {direction} port \
                 '{port}' its implementation requires"
            ),
            RunError::BadPort { instance, message, .. } => write!(f, "box instance '{instance}': {message}"),
            RunError::BadGraph(message) => write!(f, "cannot run this net: {message}"),
            RunError::ThreadLimit { wanted, message } => {
                write!(f, "cannot start {wanted} threads (one per net): {message}")
            }
            RunError::Resources(message) => write!(f, "cannot start this run: {message}"),
            RunError::BadValues(values) => match values.as_slice() {
                [one] => write!(f, "{one}"),
                many => {
                    write!(f, "{} boxes have bad values:", many.len())?;
                    many.iter().try_for_each(|value| write!(f, "\n  {value}"))
                }
            },
            RunError::NotStarted(failures) => {
                write!(f, "the net did not start (no box ran): {}", failures.join("; "))
            }
        }
    }
}

impl RunError {
    /// The line of the net file the error is about, where it is about one box.
    pub fn line(&self) -> Option<usize> {
        match self {
            RunError::MissingPort { line, .. } | RunError::BadPort { line, .. } => Some(*line),
            _ => None,
        }
    }
}

impl std::error::Error for RunError {}

/// One box whose configuration its spec refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue {
    /// `label#id`, as reports name box instances.
    pub instance: String,
    pub message: String,
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.instance, self.message)
    }
}
