//! Builds libzmq (the sources of `zeromq-src`) with CURVE, against the libsodium that
//! `libsodium-sys-stable` built from the source archive it ships (checked against its
//! minisign signature; nothing is downloaded), and links both into this crate.

use std::env;

fn main() {
    // `links = "sodium"` of libsodium-sys-stable hands its build's directories to us.
    let include = env::var("DEP_SODIUM_INCLUDE").expect("libsodium-sys-stable reports its include directory");
    let lib = env::var("DEP_SODIUM_LIB").expect("libsodium-sys-stable reports its library directory");
    // libzmq's own sources warn by the hundred; cc would replay every line on every build of
    // this workspace, burying the warnings of smx's own code.
    for var in ["CFLAGS", "CXXFLAGS"] {
        let flags = env::var(var).map_or_else(|_| "-w".to_string(), |f| format!("{f} -w"));
        // SAFETY: a build script is single-threaded; nothing reads the environment meanwhile.
        unsafe { env::set_var(var, flags) };
    }
    zeromq_src::Build::new()
        .with_libsodium(Some(zeromq_src::LibLocation::new(lib, include)))
        .build();
}
