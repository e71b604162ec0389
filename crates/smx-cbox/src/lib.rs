//! Boxes written in C or C++ for smx.
//!
//! A C box implementation `NAME` is three functions with C linkage in a shared library,
//! `NAME_init(h, &state)`, `NAME(h, state)` and `NAME_cleanup(h, state)`, which talk to their
//! ports, messages, configuration and log through the functions of `include/smx_abi.h`
//! (`smx_read`, `smx_write`, `smx_msg_create`, `smx_config_get_int_err`, ...), directly or
//! through the macros of `include/smxrts.h` (the original Streamix runtime's source API) or
//! `include/smx.h` (smx's own). This crate is the runtime's side of that ABI:
//!
//! * [`BoxLibraries`] opens the `--boxes` libraries and turns every implementation of a net that
//!   is not built in into a [`smx_box::BoxSpec`] whose ports are the net's declaration
//!   (`Ports::FromNet`: index `i` is the `i`-th declared input, as the generated
//!   `SMX_PORT_IDX_NAME_in_PORT` enums count) and whose configuration is open (every key the
//!   layers give reaches `smx_config_get_*`). From there a C box is an ordinary box: same
//!   firing rule, books, report rows, pinning, priorities, `tt[...]` and termination.
//! * the 31 exported functions (`exports`, `config`, `logging`) implement the ABI. Each catches
//!   unwinding, accepts a NULL handle and returns its error value then.
//! * [`headers::generate`] writes the `NAME_sig.h` / `NAME.h` files `smxrun headers` produces.
//!
//! The contract in full (ownership of messages, error codes, lifecycle) is `docs/c-abi.md`;
//! the choices it rests on:
//!
//! * `NAME` returning a negative value fails the net (a returned, contained error, reported with
//!   the value); a positive value other than 0, 1, 2 ends it with one warning, as the original.
//! * `NAME_init` returning non-zero stops the run before any box runs (the runtime's rule for a
//!   failed init); `NAME_cleanup` still runs, for this box and every other one created.
//! * a message a C box writes travels as the [`smx_box::Message`] itself (no conversion between
//!   C boxes); the runtime copies it with its `copy` function and frees it with `destroy`.
//! * the memory of a C message goes back to the thread that made it: the `smx_msg_t` structs
//!   in magazines per thread (`msg`), and a payload whose destroy function is `free` to the
//!   producing C box's thread, which frees it at the start of its next step (`home`), so that a
//!   source's `malloc` and its consumer's `free` do not meet in the C library's arenas. Every
//!   path that cannot hand memory back frees it where it is dropped.
//! * a read timeout bounds the firing rule's wait on that input, as in the original (v1.1+):
//!   once it passed, the step runs and `smx_read` gives NULL with `SMX_CHANNEL_ERR_TIMEOUT`; it
//!   also bounds `smx_read_blocking`. A write timeout bounds the wait for room in a full
//!   coupled channel; a write that times out drops the message (counted as `dropped`) and
//!   fails with `SMX_CHANNEL_ERR_TIMEOUT`, as the original's timed write does.
//!
//! # Exporting the ABI from a program
//!
//! A box library leaves the `smx_*` functions undefined; the dynamic loader finds them in the
//! program that loads it, so that program must export them. `smxrun` does (its build script
//! links with `-Wl,--export-dynamic-symbol=smx_*`); a program of your own built on
//! `smxrun::main_with_boxes` needs the same line in its `build.rs`:
//!
//! ```text
//! println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol=smx_*");
//! ```
//!
//! (GNU ld 2.35 or newer, or lld; with older linkers `-rdynamic`.) Without it every library
//! fails to load with an error that says so. A C box that crashes (a bad pointer, `abort()`)
//! takes the process down: nothing in-process can contain that. Every error a box *returns* is
//! contained.

pub mod abi;
mod cbox;
mod config;
mod elf;
mod exports;
pub mod headers;
mod home;
mod load;
mod logging;
mod msg;

pub use load::{BoxLibraries, BoxLibrary, LoadError, Provided, triples};
pub use msg::alive as messages_alive;

/// Keeps the exported functions in the program (their table is referenced from here, which
/// the loader calls) and returns how many there are.
pub fn export_table() -> usize {
    std::hint::black_box(&exports::SMX_ABI).0.len()
}

/// Whether this program exports the ABI in its dynamic symbol table (what a library needs).
pub fn abi_is_exported() -> bool {
    // SAFETY: looking a symbol up in the global scope runs no code.
    !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"smx_read".as_ptr()) }.is_null()
}

/// The names of the exported functions, for checks (`nm -D smxrun`).
pub const EXPORTED: [&str; 31] = [
    "smx_read",
    "smx_read_blocking",
    "smx_write",
    "smx_read_error",
    "smx_write_error",
    "smx_set_read_timeout",
    "smx_set_write_timeout",
    "smx_block_next_read",
    "smx_in_count",
    "smx_out_count",
    "smx_in_index",
    "smx_out_index",
    "smx_msg_create",
    "smx_msg_copy",
    "smx_msg_destroy",
    "smx_msg_set_type",
    "smx_net_conf",
    "smx_net_state",
    "smx_net_count",
    "smx_net_id",
    "smx_net_name",
    "smx_net_impl",
    "smx_net_prio",
    "smx_net_stop_requested",
    "smx_net_start_routine",
    "smx_config_get_int_err",
    "smx_config_get_bool_err",
    "smx_config_get_double_err",
    "smx_config_get_string_err",
    "smx_log_enabled",
    "smx_log_text",
];
