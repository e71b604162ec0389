//! `smxrun bench`: the ISPW60 report's experiments in one command, measured carefully.
//!
//! Each experiment builds the report's nets as `.smx` text, compiles and runs them through the
//! library (the same path as `smxrun`), and measures a baseline beside them in the same
//! invocation: a plain crossbeam-channel program, raw ZeroMQ, the platform's timer floor, or
//! GStreamer. Every configuration gets a discarded warm-up and then `--runs` measured runs; the
//! tables print medians with the min-max range, never a lone average. Every run is validated
//! (all messages arrived, no box failed) and an invalid run is flagged and left out of the
//! summaries. A result carries its [`machine::MachineHeader`] and every raw run, and can be
//! saved as JSON, CSV or Markdown, compared with an earlier JSON, and drawn as SVG charts.
//!
//! Layout: [`stats`] (order statistics, fits), [`machine`] (the header), [`result`] (the data
//! model), [`output`] (files and `--compare`), [`plot`] (charts), [`baseline`] (the plain
//! programs) and one module per experiment.

pub mod args;
pub mod baseline;
pub mod latency_boxes;
pub mod machine;
pub mod output;
pub mod plot;
pub mod result;
pub mod stats;
