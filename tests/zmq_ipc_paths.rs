//! An ipc endpoint names a path in the user's file system: a run may remove only the socket it
//! created there. Anything else found at the path (a file, a symlink, a directory, a FIFO, a
//! socket another process listens on) is refused before the start and left as it was.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Output};

/// A sink that binds `endpoint` and a source that connects to it, in one net.
const NET: &str = "Src1 = extern box smx_src_rand( out data )\nSnk1 = extern box smx_snk_zmq( in data )\n\
                   Src2 = extern box smx_src_zmq( out data )\nSnk2 = box smx_snk_null( in data )\n\
                   connect (Src1.Snk1) | (Src2.Snk2)\n";

fn run_on(dir: &Path, endpoint: &str) -> Output {
    let net = dir.join("net.smx");
    std::fs::write(&net, NET).unwrap();
    Command::new(env!("CARGO_BIN_EXE_smxrun"))
        .args([net.to_str().unwrap(), "-q", "--pin", "off", "-n", "100"])
        .args(["--set", &format!("Snk1.endpoint={endpoint}")])
        .args([
            "--set",
            &format!("Src2.endpoint={endpoint}"),
            "--set",
            "Src2.timeout=5s",
        ])
        .env("RUST_LOG", "error")
        .output()
        .expect("smxrun runs")
}

/// Runs the net on `path`, which holds something that is not this run's socket, and checks that
/// the run is refused with a message naming the box and the path, and that `unchanged` still
/// holds afterwards.
fn refused_and_kept(dir: &Path, path: &Path, what: &str, unchanged: impl Fn() -> bool) {
    let out = run_on(dir, &format!("ipc://{}", path.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
    assert!(
        stderr.contains("Snk1") && stderr.contains(&path.display().to_string()),
        "{what}: the error names the box and the path: {stderr}"
    );
    assert!(stderr.contains(what), "{what}: the error says what is there: {stderr}");
    assert!(unchanged(), "{what} at {} was changed or removed", path.display());
}

#[test]
fn an_ipc_path_that_is_not_a_socket_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, b"my notes").unwrap();
    refused_and_kept(dir.path(), &file, "a regular file", || {
        std::fs::read(&file).is_ok_and(|b| b == b"my notes")
    });

    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    refused_and_kept(dir.path(), &link, "a symbolic link", || {
        std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink())
            && std::fs::read(&file).is_ok_and(|b| b == b"my notes")
    });

    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("kept"), b"x").unwrap();
    refused_and_kept(dir.path(), &sub, "a directory", || sub.join("kept").exists());

    let fifo = dir.path().join("fifo");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: c_path is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    refused_and_kept(dir.path(), &fifo, "a FIFO", || {
        std::fs::symlink_metadata(&fifo).is_ok_and(|m| m.file_type().is_fifo())
    });
}

#[test]
fn a_socket_another_process_listens_on_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    refused_and_kept(dir.path(), &path, "address in use", || {
        std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_socket())
    });
    drop(listener);
}

/// A socket file that a dead run left behind (nobody listens on it) is replaced, and the run
/// removes the socket it created at the end.
#[test]
fn a_stale_socket_is_replaced_and_the_new_one_removed_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stale");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let out = run_on(dir.path(), &format!("ipc://{}", path.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("received 100, lost 0"), "{stdout}");
    assert!(!path.exists(), "the run's own socket is removed at the end");
}
