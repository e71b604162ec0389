//! Executes a [`crate::graph::NetGraph`]: one pinned thread per box instance and routing node,
//! joined by bounded channels, and collects the figures of a [`crate::report::Report`].

pub mod io;
pub mod message;
