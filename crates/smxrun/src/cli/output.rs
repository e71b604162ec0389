//! Where a command's result goes: stdout, or the file given with `-o PATH` (`-o -`: stdout).
//!
//! The destination is checked when the command starts, before anything runs, so that a run of
//! minutes does not end in "cannot write the report" for a reason that was known at once.
//! A regular file (or a new one) is written atomically: the result goes to a temporary file in
//! the same directory, which then replaces the target in one rename, so a reader (or another
//! run writing the same path) sees the old file or the new one, never a mix or a truncated
//! one; a write that fails (a full disk) leaves the target as it was. Anything else that
//! exists (`/dev/null`, a FIFO, `/dev/stdout` on a pipe) is written directly.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use tempfile::NamedTempFile;

use super::exit::CliError;

/// An open destination for one command's result.
#[derive(Debug)]
pub struct Output {
    target: Target,
}

#[derive(Debug)]
enum Target {
    Stdout,
    /// A regular file, written through a temporary file beside it.
    Replace {
        path: PathBuf,
        temp: NamedTempFile,
    },
    /// A FIFO, a device or another special file, opened now and written as it is.
    Direct {
        path: PathBuf,
        file: File,
    },
}

/// Standard output was closed when the process started. The standard library then puts
/// `/dev/null` in its place before `main`, so writing the report would succeed into nothing; this
/// is read before that, by a function the loader runs first.
static STDOUT_CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

extern "C" fn note_closed_stdout() {
    // SAFETY: F_GETFD only asks whether descriptor 1 is open.
    if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
        STDOUT_CLOSED_AT_START.store(true, Ordering::Relaxed);
    }
}

#[used]
// SAFETY: a plain function with the signature the loader calls `.init_array` entries with;
// it touches nothing that needs the standard library's set-up.
#[unsafe(link_section = ".init_array")]
static NOTE_CLOSED_STDOUT: extern "C" fn() = note_closed_stdout;

impl Output {
    /// Standard output (no path, or `-`), or `path` made ready for writing now. An unwritable
    /// path is an error naming it and the cause.
    pub fn open(path: Option<&Path>) -> Result<Output, CliError> {
        let Some(path) = path.filter(|p| p.as_os_str() != "-") else {
            if STDOUT_CLOSED_AT_START.load(Ordering::Relaxed) {
                return Err(CliError::rejected(
                    "standard output is closed: the result would go nowhere (write it to a file with -o FILE)",
                ));
            }
            return Ok(Output { target: Target::Stdout });
        };
        let cannot = |e: &dyn std::fmt::Display| CliError::rejected(format!("cannot write '{}': {e}", path.display()));
        let target = match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => return Err(cannot(&"it is a directory")),
            Ok(m) if !m.is_file() => Target::Direct {
                path: path.to_path_buf(),
                file: OpenOptions::new().write(true).open(path).map_err(|e| cannot(&e))?,
            },
            _ => {
                let dir = match path.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => Path::new("."),
                };
                if let Ok(m) = std::fs::metadata(path)
                    && m.permissions().readonly()
                {
                    return Err(cannot(&"the file is read-only"));
                }
                // The file is written beside its place and renamed there: a failure to make it is
                // said of the directory the user named, not of that file's private name.
                let temp = tempfile::Builder::new()
                    .prefix(".smxrun-")
                    .suffix(".tmp")
                    .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
                    .tempfile_in(dir)
                    .map_err(|e| {
                        let e = std::io::Error::from(e.kind());
                        match file_in_the_way(dir) {
                            Some(_) => cannot(&why_no_directory(dir, &e)),
                            None if !dir.exists() => {
                                cannot(&format!("its directory '{}' does not exist", dir.display()))
                            }
                            None => cannot(&format!("its directory '{}': {e}", dir.display())),
                        }
                    })?;
                Target::Replace {
                    path: path.to_path_buf(),
                    temp,
                }
            }
        };
        Ok(Output { target })
    }

    /// Writes `text` as the whole result (replacing what the file held before).
    pub fn write(self, text: &str) -> Result<(), CliError> {
        let failed =
            |path: &Path, e: std::io::Error| CliError::rejected(format!("cannot write '{}': {e}", path.display()));
        match self.target {
            Target::Stdout => {
                let mut out = std::io::stdout().lock();
                // A closed pipe (`smxrun ... | head`) is not an error worth an exit code.
                match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                    Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                        Err(CliError::rejected(format!("cannot write to standard output: {e}")))
                    }
                    _ => Ok(()),
                }
            }
            Target::Direct { path, mut file } => file
                .write_all(text.as_bytes())
                .and_then(|()| file.flush())
                .map_err(|e| failed(&path, e)),
            Target::Replace { path, mut temp } => {
                // The old file's permissions carry over; a new file gets the usual 0666 & ~umask.
                if let Ok(m) = std::fs::metadata(&path) {
                    let _ = temp.as_file().set_permissions(m.permissions());
                }
                temp.write_all(text.as_bytes())
                    .and_then(|()| temp.flush())
                    .and_then(|()| temp.as_file().sync_all())
                    .map_err(|e| failed(&path, e))?;
                // On failure the temporary file is removed when `temp` drops.
                temp.persist(&path).map(drop).map_err(|e| failed(&path, e.error))
            }
        }
    }

    /// The file's path, when writing to a file.
    pub fn path(&self) -> Option<&Path> {
        match &self.target {
            Target::Stdout => None,
            Target::Replace { path, .. } | Target::Direct { path, .. } => Some(path),
        }
    }
}

/// The first of `path` and its ancestors, from the root down, that exists and is not a
/// directory: what stops a directory from being made at `path`.
pub fn file_in_the_way(path: &Path) -> Option<PathBuf> {
    let mut ancestors: Vec<&Path> = path.ancestors().filter(|p| !p.as_os_str().is_empty()).collect();
    ancestors.reverse();
    ancestors
        .into_iter()
        .find(|p| std::fs::metadata(p).is_ok_and(|m| !m.is_dir()))
        .map(Path::to_path_buf)
}

/// Why the file `path` could not be made (`e`), naming its directory when that is the cause:
/// the system's "No such file or directory" does not say which part of the path is missing.
pub fn why_no_file(path: &Path, e: &std::io::Error) -> String {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => return e.to_string(),
    };
    match file_in_the_way(dir) {
        Some(_) => why_no_directory(dir, e),
        None if !dir.exists() => format!("its directory '{}' does not exist", dir.display()),
        None => e.to_string(),
    }
}

/// Why the directory `dir` could not be made (`e`): a file that stands at it or on the way to
/// it is named, since the system's "File exists" or "Not a directory" does not say which.
pub fn why_no_directory(dir: &Path, e: &std::io::Error) -> String {
    match file_in_the_way(dir) {
        Some(file) if file == dir => format!("'{}' is a file, not a directory", dir.display()),
        Some(file) => format!("'{}' on the way to it is a file, not a directory", file.display()),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_of_a_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nodir").join("t.json");
        let e = std::fs::File::create(&path).unwrap_err();
        assert_eq!(
            why_no_file(&path, &e),
            format!("its directory '{}' does not exist", dir.path().join("nodir").display())
        );
    }

    #[test]
    fn a_file_where_a_directory_must_be_made_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("afile");
        std::fs::write(&file, "").unwrap();
        let e = std::fs::create_dir_all(&file).unwrap_err();
        assert_eq!(
            why_no_directory(&file, &e),
            format!("'{}' is a file, not a directory", file.display())
        );
        let below = file.join("gen");
        let e = std::fs::create_dir_all(&below).unwrap_err();
        assert_eq!(
            why_no_directory(&below, &e),
            format!("'{}' on the way to it is a file, not a directory", file.display())
        );
    }

    #[test]
    fn a_place_that_cannot_take_the_file_is_said_of_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nodir").join("x.txt");
        let err = Output::open(Some(&missing)).err().unwrap().message;
        assert_eq!(
            err,
            format!(
                "cannot write '{}': its directory '{}' does not exist",
                missing.display(),
                dir.path().join("nodir").display()
            )
        );
        let file = dir.path().join("afile");
        std::fs::write(&file, "").unwrap();
        let below = file.join("x.txt");
        let err = Output::open(Some(&below)).err().unwrap().message;
        assert_eq!(
            err,
            format!(
                "cannot write '{}': '{}' is a file, not a directory",
                below.display(),
                file.display()
            )
        );
    }

    #[test]
    fn a_file_is_replaced_by_what_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.txt");
        std::fs::write(&path, "an older and longer report").unwrap();
        let out = Output::open(Some(&path)).unwrap();
        assert_eq!(out.path(), Some(path.as_path()));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "an older and longer report",
            "nothing is truncated before the result exists"
        );
        out.write("new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn a_file_that_is_never_written_is_never_created_or_changed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        drop(Output::open(Some(&path)).unwrap());
        assert!(!path.exists());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "no temporary file left"
        );

        std::fs::write(&path, "kept").unwrap();
        drop(Output::open(Some(&path)).unwrap());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "kept",
            "an existing file is left alone"
        );
    }

    #[test]
    fn special_files_are_written_directly_and_dash_is_stdout() {
        Output::open(Some(Path::new("/dev/null")))
            .unwrap()
            .write("gone")
            .unwrap();
        assert_eq!(Output::open(Some(Path::new("-"))).unwrap().path(), None);
    }

    #[test]
    fn a_full_disk_is_an_error_naming_the_path() {
        // /dev/full is a device: written directly, and every write fails with ENOSPC.
        let err = Output::open(Some(Path::new("/dev/full")))
            .unwrap()
            .write("lost")
            .unwrap_err();
        assert!(err.message.starts_with("cannot write '/dev/full'"), "{err}");
        assert_eq!(err.code, crate::cli::exit::REJECTED);
    }

    #[test]
    fn unwritable_paths_are_named_with_the_cause() {
        let dir = tempfile::tempdir().unwrap();
        let err = Output::open(Some(dir.path())).unwrap_err();
        assert!(err.message.contains("is a directory"), "{err}");
        let missing = dir.path().join("no/such/dir/report.txt");
        let err = Output::open(Some(&missing)).unwrap_err();
        assert!(
            err.message
                .starts_with(&format!("cannot write '{}'", missing.display())),
            "{err}"
        );
        assert_eq!(err.code, crate::cli::exit::REJECTED);
    }
}
