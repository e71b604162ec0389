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
    link_whole_before_zmq_sys();
}

/// A crate outside this workspace does not read its `.cargo/config.toml`, so there `zmq-sys`
/// builds and links its own libzmq, without CURVE. Both archives then reach the linker; this
/// crate depends on `zmq-sys`, so its libraries come first on the link line, and linking this
/// libzmq whole (under a name of its own, as a name may carry one set of link modifiers)
/// defines every libzmq symbol before `zmq-sys`'s archive is looked at: no member of that one
/// is used, whichever linker runs (GNU ld scans archives in order, lld takes the first
/// definition). Inside this workspace `zmq-sys` links nothing, and this is the one libzmq.
fn link_whole_before_zmq_sys() {
    let out = std::path::PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let whole = out.join("whole");
    std::fs::create_dir_all(&whole).expect("OUT_DIR is writable");
    let built = out.join("lib/libzmq.a");
    std::fs::copy(&built, whole.join("libsmx_zmq_curve.a")).expect("zeromq-src built lib/libzmq.a in OUT_DIR");
    // zeromq-src has also asked for `static=zmq`: that archive is left empty, so that its
    // members do not come in a second time beside the whole copy.
    std::fs::write(&built, b"!<arch>\n").expect("OUT_DIR is writable");
    println!("cargo:rustc-link-search=native={}", whole.display());
    println!("cargo:rustc-link-lib=static:+whole-archive=smx_zmq_curve");
    // `zmq-sys` ran its build script (or had it overridden) before this one; the workspace's
    // override marks itself, so that a user's build can say that libzmq was built twice.
    if env::var_os("DEP_ZMQ_SMX_CURVE").is_none() {
        println!(
            "cargo:warning=zmq-sys built a libzmq of its own (without CURVE), which is not linked: \
             smx-libzmq's is. To save that build, see the ZeroMQ section of smx's guide \
             (the `[target.<triple>.zmq]` table of .cargo/config.toml)"
        );
    }
}
