//! `smxrun headers NET.smx -o DIR`: the port headers of the C boxes a net declares.
//!
//! What the files hold is `smx_cbox::headers`' business; here they are written.

use std::path::Path;

use super::args::HeadersArgs;
use super::exit::{self, CliError};
use super::load;
use super::output::Output;
use smx_runtime::Registry;

/// Writes `NAME_sig.h` and `NAME.h` for every implementation of the net that is not built in;
/// a net whose implementations cannot all get a header (two port lists for one name, a name
/// that is no C identifier) is exit 1 and writes nothing.
pub fn headers(args: &HeadersArgs, registry: &Registry) -> Result<i32, CliError> {
    let graph = load::checked_graph(&args.file)?;
    load::reject_misspelt_builtins(&args.file, &graph, registry)?;
    let net_name = args
        .file
        .file_name()
        .map_or_else(|| args.file.display().to_string(), |n| n.to_string_lossy().into_owned());
    let headers = smx_cbox::headers::generate(&graph, &net_name, |n| registry.get(n).is_some(), args.sig_only)
        .map_err(|e| CliError::rejected(e.replace('\n', "\nerror: ")))?;
    if headers.is_empty() {
        Output::open(None)?.write(&format!(
            "{}: every box implementation is built in; no header to write\n",
            args.file.display()
        ))?;
        return Ok(exit::OK);
    }
    std::fs::create_dir_all(&args.output).map_err(|e| {
        CliError::rejected(format!(
            "-o '{}': cannot make the directory for the headers: {}",
            args.output.display(),
            super::output::why_no_directory(&args.output, &e)
        ))
    })?;
    // Checked before any is written: a refusal leaves the directory as it was.
    for header in &headers {
        keep_foreign_file(&args.output.join(&header.file_name))?;
    }
    for header in &headers {
        write(&args.output.join(&header.file_name), &header.text)?;
    }
    let names: Vec<&str> = headers.iter().map(|h| h.file_name.as_str()).collect();
    Output::open(None)?.write(&format!(
        "{}: wrote {} headers to {}: {}\n",
        args.file.display(),
        headers.len(),
        args.output.display(),
        names.join(", ")
    ))?;
    Ok(exit::OK)
}

/// Refuses to replace a file that an earlier `smxrun headers` did not write: a header of the
/// user's own beside the net (`-o .`) is lost for good once replaced, while one this command
/// wrote is made again from the net.
fn keep_foreign_file(path: &Path) -> Result<(), CliError> {
    let Ok(text) = std::fs::read(path) else {
        return Ok(());
    };
    let head = String::from_utf8_lossy(&text[..text.len().min(1024)]).into_owned();
    if head.contains(smx_cbox::headers::GENERATED_MARK) {
        return Ok(());
    }
    Err(CliError::rejected(format!(
        "'{}' exists and was not written by `smxrun headers`: it is not replaced, and no header was written \
         (move it away, or give another -o)",
        path.display()
    )))
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|e| CliError::rejected(format!("cannot write '{}': {e}", path.display())))
}
