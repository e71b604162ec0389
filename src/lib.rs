//! smx: a dataflow streaming runtime for the Streamix coordination language.
//!
//! The modules follow the data path (see ARCHITECTURE.md):
//! source text ([`syntax`]) → checked composition ([`compose`]) → flattened graph ([`graph`])
//! → running threads ([`runtime`], with the boxes of [`boxes`], configured by [`config`],
//! timed by [`timing`]) → [`report`]. [`bench`] reproduces the performance experiments and
//! [`cli`] is the thin `smxrun` front.

pub mod bench;
pub mod boxes;
pub mod cli;
pub mod compose;
pub mod config;
pub mod diag;
pub mod graph;
pub mod report;
pub mod runtime;
pub mod syntax;
pub mod timing;
