//! The Streamix language front end: source text to a checked, flattened net graph.
//!
//! [`syntax`] parses the text into a tree with spans; [`compose`] applies the Streamix rules and
//! produces a [`smx_graph::NetGraph`]; [`diag`] carries every message with its place; [`teach`]
//! explains the rule behind common errors. Nothing
//! here knows how a graph is run.

pub mod compose;
pub mod diag;
pub mod syntax;
pub mod teach;
