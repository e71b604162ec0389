//! The libzmq of smx: libzmq 4.3 from `zeromq-src`, built with CURVE against the libsodium
//! that `libsodium-sys-stable` builds from its bundled, signature-checked source (see
//! ARCHITECTURE.md, "The libzmq build").
//!
//! `zmq-sys` builds its libzmq without CURVE. This crate links its own whole and before
//! `zmq-sys` (it depends on it), so that its libzmq is the one every `zmq_*` call reaches, also
//! in a crate outside this workspace, where `zmq-sys` builds and links its own. The workspace's
//! `.cargo/config.toml` overrides `zmq-sys`'s build script (it `links = "zmq"`), which only
//! saves building libzmq twice. A crate that calls libzmq through `zmq` must link this one
//! (`extern crate smx_libzmq;`), as `smx-zmq` does.

// The libsodium that libzmq's CURVE calls into.
extern crate libsodium_sys;
// Named, so that this crate is linked before zmq-sys and its whole libzmq defines every symbol
// before an archive of zmq-sys's could (build.rs).
extern crate zmq_sys;

use std::ffi::{CStr, CString, c_char, c_int};

unsafe extern "C" {
    // Not re-exported by zmq-sys 0.12.
    fn zmq_curve_public(z85_public_key: *mut c_char, z85_secret_key: *const c_char) -> c_int;
}

/// The public key (40 characters of Z85) of a secret key in Z85; `None` when `secret` is not 40
/// characters or libzmq has no CURVE.
pub fn curve_public(secret: &str) -> Option<String> {
    if secret.len() != 40 {
        return None;
    }
    let secret = CString::new(secret).ok()?;
    let mut public = [0 as c_char; 41];
    // SAFETY: libzmq reads the 40 characters and NUL of `secret` and writes 40 characters and
    // a NUL into `public`, which has room for 41; both outlive the call.
    let rc = unsafe { zmq_curve_public(public.as_mut_ptr(), secret.as_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: on success libzmq wrote a NUL-terminated string into `public`.
    let text = unsafe { CStr::from_ptr(public.as_ptr()) };
    text.to_str().ok().map(str::to_string)
}
