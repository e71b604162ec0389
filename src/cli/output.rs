//! Where a command's result goes: stdout, or the file given with `-o PATH`.
//!
//! The file is opened when the command starts, before anything runs, so that a run of minutes
//! does not end in "cannot write the report" and lose its figures. It is not truncated until
//! the result is written; a file this command created but never wrote (because the net was
//! rejected, say) is removed again, so a failed command leaves nothing behind.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::exit::CliError;

/// An open destination for one command's result.
#[derive(Debug)]
pub struct Output {
    target: Target,
}

#[derive(Debug)]
enum Target {
    Stdout,
    File {
        path: PathBuf,
        file: Option<File>,
        /// This command created the file (so it removes it when nothing was written).
        created: bool,
    },
}

impl Output {
    /// Standard output, or `path` opened for writing now. An unwritable path is an error
    /// naming it and the cause.
    pub fn open(path: Option<&Path>) -> Result<Output, CliError> {
        let Some(path) = path else {
            return Ok(Output { target: Target::Stdout });
        };
        if path.is_dir() {
            return Err(CliError::rejected(format!(
                "cannot write '{}': it is a directory",
                path.display()
            )));
        }
        let existed = path.exists();
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| CliError::rejected(format!("cannot write '{}': {e}", path.display())))?;
        Ok(Output {
            target: Target::File {
                path: path.to_path_buf(),
                file: Some(file),
                created: !existed,
            },
        })
    }

    /// Writes `text` as the whole result (replacing what the file held before).
    pub fn write(mut self, text: &str) -> Result<(), CliError> {
        match &mut self.target {
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
            Target::File { path, file, .. } => {
                let mut f = file
                    .take()
                    .ok_or_else(|| CliError::rejected("output already written"))?;
                f.set_len(0)
                    .and_then(|()| f.write_all(text.as_bytes()))
                    .and_then(|()| f.flush())
                    .map_err(|e| CliError::rejected(format!("cannot write '{}': {e}", path.display())))
            }
        }
    }

    /// The file's path, when writing to a file.
    pub fn path(&self) -> Option<&Path> {
        match &self.target {
            Target::Stdout => None,
            Target::File { path, .. } => Some(path),
        }
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let Target::File {
            path,
            file: Some(_),
            created: true,
        } = &self.target
        {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn a_created_file_that_is_never_written_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        drop(Output::open(Some(&path)).unwrap());
        assert!(!path.exists());

        std::fs::write(&path, "kept").unwrap();
        drop(Output::open(Some(&path)).unwrap());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "kept",
            "an existing file is left alone"
        );
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
