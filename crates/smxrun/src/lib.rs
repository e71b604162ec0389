//! `smxrun`: the Streamix command line, as a library, so that a crate of your own boxes gets
//! every command, option and report with one line of `main`:
//!
//! ```no_run
//! # const MY_BOX: smx_box::BoxSpec = smx_box::BoxSpec::named("my_box").create(|_| unimplemented!());
//! fn main() {
//!     std::process::exit(smxrun::main_with_boxes([MY_BOX]));
//! }
//! ```
//!
//! Everything a command does is done by the libraries below it (see ARCHITECTURE.md): the front
//! end (`smx-lang`), the runtime (`smx-runtime`), the boxes (`smx-boxes`, `smx-zmq`). What is
//! here is what only a command line needs ([`cli`]). The benchmarks are not: the `smxrun` binary
//! adds them as its `bench` command through [`main_with`], so a box crate compiles none of them.

pub mod cli;

// The Rust examples of the user documentation are compiled as tests of this crate
// (`cargo test --doc`), so that none of them stops compiling unnoticed.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
mod readme_examples {}

#[cfg(doctest)]
#[doc = include_str!("../../../docs/guide/rust-boxes.md")]
mod rust_boxes_guide_examples {}

pub use cli::ExtraCommand;
use smx_box::BoxSpec;
use smx_runtime::Registry;

/// Runs `smxrun` with the process's arguments and the built-in boxes; returns the exit code.
pub fn main() -> i32 {
    main_with([], [])
}

/// Runs `smxrun` with the process's arguments, the built-in boxes and `boxes` (a box of the
/// same name as a built-in one replaces it); returns the exit code. `boxes` may hold specs or
/// references to them: `[SPEC]`, `&[SPEC]`, a `Vec<BoxSpec>`.
///
/// ```no_run
/// # const A: smx_box::BoxSpec = smx_box::BoxSpec::named("a").create(|_| unimplemented!());
/// # const B: smx_box::BoxSpec = smx_box::BoxSpec::named("b").create(|_| unimplemented!());
/// std::process::exit(smxrun::main_with_boxes(&[A, B]));
/// ```
pub fn main_with_boxes<S: std::borrow::Borrow<BoxSpec>>(boxes: impl IntoIterator<Item = S>) -> i32 {
    main_with(boxes.into_iter().map(|spec| spec.borrow().clone()), [])
}

/// Runs `smxrun` with the process's arguments, the built-in boxes and `boxes`, and the commands
/// of `extras` beside its own (the `smxrun` binary adds `bench` this way); returns the exit code.
pub fn main_with(boxes: impl IntoIterator<Item = BoxSpec>, extras: impl IntoIterator<Item = ExtraCommand>) -> i32 {
    let mut registry = builtin_registry();
    for spec in boxes {
        registry.register(spec);
    }
    let extras: Vec<ExtraCommand> = extras.into_iter().collect();
    cli::main_with(std::env::args_os(), registry, &extras)
}

/// The built-in boxes: those of `smx-boxes`, the shared-memory link boxes of `smx-shm`, and
/// the ZeroMQ boxes when built with `zmq`.
pub fn builtin_specs() -> Vec<BoxSpec> {
    smx_boxes::specs()
        .into_iter()
        .chain(smx_shm::specs())
        .chain(zmq_specs())
        .collect()
}

#[cfg(feature = "zmq")]
fn zmq_specs() -> Vec<BoxSpec> {
    smx_zmq::specs()
}

#[cfg(not(feature = "zmq"))]
fn zmq_specs() -> Vec<BoxSpec> {
    Vec::new()
}

/// A registry of the built-in boxes.
pub fn builtin_registry() -> Registry {
    Registry::of(builtin_specs())
}
