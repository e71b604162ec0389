//! `smxrun keygen`: a CURVE key pair for the ZeroMQ boxes, printed as configuration lines or
//! written to a private key file and a public one.

use std::path::PathBuf;

use super::exit::CliError;

/// `smxrun keygen` options.
#[derive(Debug, Clone, clap::Args)]
pub struct KeygenArgs {
    /// Write NAME.key (the secret key, mode 0600) and NAME.pub into DIR (created if missing,
    /// mode 0700) instead of printing the pair; existing files are never replaced.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: Option<PathBuf>,

    /// The file names' stem with -o (default: curve). Without -o nothing is named, so it is
    /// refused rather than ignored.
    #[arg(long, value_name = "NAME", requires = "output")]
    pub name: Option<String>,
}

#[cfg(feature = "zmq")]
impl KeygenArgs {
    fn stem(&self) -> &str {
        self.name.as_deref().unwrap_or("curve")
    }
}

#[cfg(feature = "zmq")]
pub fn keygen(args: &KeygenArgs) -> Result<i32, CliError> {
    use smx_zmq::curve;
    let (public, secret) = curve::generate().map_err(CliError::rejected)?;
    let (public, secret) = (curve::encode(&public), curve::encode(&secret));
    let Some(dir) = &args.output else {
        let text = format!(
            "# A CURVE key pair for a ZeroMQ box (smxrun keygen). Both lines go into the box's table;\n\
             # give the public key to its peers: curve_server = it on the clients of a server,\n\
             # curve_clients lists it on a server that accepts this client. Keep the secret key secret.\n\
             curve_public = \"{public}\"\n\
             curve_secret = \"{secret}\"\n"
        );
        super::output::Output::open(None)?.write(&text)?;
        return Ok(super::exit::OK);
    };
    let name = args.stem();
    write_pair(dir, name, &public, &secret)?;
    let text = format!(
        "wrote {} (secret key, mode 0600: curve_secret = \"{}\") and {} (public key: for the peers' curve_server or curve_clients)\n",
        dir.join(format!("{name}.key")).display(),
        dir.join(format!("{name}.key")).display(),
        dir.join(format!("{name}.pub")).display(),
    );
    super::output::Output::open(None)?.write(&text)?;
    Ok(super::exit::OK)
}

#[cfg(not(feature = "zmq"))]
pub fn keygen(_args: &KeygenArgs) -> Result<i32, CliError> {
    Err(CliError::rejected(
        "keygen: this smxrun was built without ZeroMQ (the `zmq` feature)",
    ))
}

/// Writes both files, the secret one private from its creation; neither replaces a file.
#[cfg(feature = "zmq")]
fn write_pair(dir: &std::path::Path, name: &str, public: &str, secret: &str) -> Result<(), CliError> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(CliError::rejected(format!(
            "keygen: --name '{name}': a file name without '/' that does not start with '.'"
        )));
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            CliError::rejected(format!(
                "keygen: cannot create {}: {}",
                dir.display(),
                super::output::why_no_directory(dir, &e)
            ))
        })?;
    let write = |path: PathBuf, mode: u32, text: String| -> Result<(), CliError> {
        let failed = |e: std::io::Error| CliError::rejected(format!("keygen: {}: {e}", path.display()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => CliError::rejected(format!(
                    "keygen: {} exists: not replaced (a key others rely on may be in it); choose another --name or directory",
                    path.display()
                )),
                _ => failed(e),
            })?;
        if let Err(e) = file.write_all(text.as_bytes()).and_then(|()| file.sync_all()) {
            let _ = std::fs::remove_file(&path);
            return Err(failed(e));
        }
        Ok(())
    };
    let key = dir.join(format!("{name}.key"));
    let public_path = dir.join(format!("{name}.pub"));
    if public_path.exists() {
        return Err(CliError::rejected(format!(
            "keygen: {} exists: not replaced; choose another --name or directory",
            public_path.display()
        )));
    }
    write(
        key.clone(),
        0o600,
        format!("# CURVE secret key of {name} (smxrun keygen): curve_secret; keep it private\n{secret}\n"),
    )?;
    write(
        public_path,
        0o644,
        format!("# CURVE public key of {name} (smxrun keygen): the peers' curve_server or curve_clients\n{public}\n"),
    )
    .inspect_err(|_| {
        let _ = std::fs::remove_file(&key);
    })
}
