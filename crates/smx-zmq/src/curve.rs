//! CURVE keys of the ZeroMQ boxes: parsing (Z85 text or a key file), the box's role, and the
//! socket options that make libzmq authenticate and encrypt a link.
//!
//! A box with `curve_secret` alone is a CURVE server: it accepts only peers that know its
//! public key (and, with `curve_clients`, only those clients). A box with `curve_server` is a
//! CURVE client of that server. libzmq checks every peer in the handshake, before any frame
//! reaches the box, so an unauthenticated peer can neither send nor read.

use std::path::Path;

/// A CURVE key: 32 bytes, written as 40 characters of Z85.
pub type Key = [u8; 32];

/// Z85's alphabet (ZeroMQ RFC 32). libzmq's decoder does not reject other characters.
const Z85: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

/// The largest key file read: a key and some comment lines.
const MAX_KEY_FILE: u64 = 64 * 1024;

/// The CURVE role of a box.
#[derive(Clone, PartialEq, Eq)]
pub enum Curve {
    /// Accepts peers that know its public key; with a non-empty `clients`, only those clients.
    Server { secret: Key, clients: Vec<Key> },
    /// Talks only to the server with this public key.
    Client { server: Key, public: Key, secret: Key },
}

// Never print a secret key, not even in a debug dump of the settings.
impl std::fmt::Debug for Curve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Curve::Server { clients, .. } => write!(f, "Curve::Server {{ clients: {} }}", clients.len()),
            Curve::Client { server, .. } => write!(f, "Curve::Client {{ server: {} }}", encode(server)),
        }
    }
}

/// The four key settings as written (empty: not set).
pub struct KeyTexts<'a> {
    pub secret: &'a str,
    pub public: &'a str,
    pub server: &'a str,
    pub clients: &'a str,
}

/// The role the key settings give, `None` when none is set. Errors name the key.
pub fn from_texts(keys: &KeyTexts<'_>) -> Result<Option<Curve>, (&'static str, String)> {
    if keys.secret.is_empty() && keys.public.is_empty() && keys.server.is_empty() && keys.clients.is_empty() {
        return Ok(None);
    }
    let first = [
        ("curve_secret", keys.secret),
        ("curve_public", keys.public),
        ("curve_server", keys.server),
        ("curve_clients", keys.clients),
    ]
    .into_iter()
    .find(|(_, t)| !t.is_empty())
    .map_or("curve_secret", |(k, _)| k);
    if zmq::has("curve") != Some(true) {
        return Err((
            first,
            "this build of libzmq has no CURVE (built without libsodium); see docs/guide/zmq.md, Security".into(),
        ));
    }
    let secret = if keys.secret.is_empty() {
        None
    } else {
        Some(read_key(keys.secret, true).map_err(|e| ("curve_secret", e))?)
    };
    let public = match (&secret, keys.public.is_empty()) {
        (_, true) => None,
        (None, false) => {
            return Err((
                "curve_public",
                "set without curve_secret: a box's public key is only used with its secret key".into(),
            ));
        }
        (Some(secret), false) => {
            let public = read_key(keys.public, false).map_err(|e| ("curve_public", e))?;
            if public != public_of(secret) {
                return Err((
                    "curve_public",
                    "is not the public key of curve_secret (the two come from different key pairs)".into(),
                ));
            }
            Some(public)
        }
    };
    if !keys.server.is_empty() {
        if !keys.clients.is_empty() {
            return Err((
                "curve_clients",
                "only a CURVE server (curve_secret without curve_server) checks clients".into(),
            ));
        }
        let server = read_key(keys.server, false).map_err(|e| ("curve_server", e))?;
        // A client without a key pair of its own gets a fresh one: the server can then
        // authenticate neither way round which client it is, which is what it asked for by
        // not listing clients.
        let secret = match secret {
            Some(s) => s,
            None => generate().map_err(|e| ("curve_server", e))?.1,
        };
        let public = public.unwrap_or_else(|| public_of(&secret));
        return Ok(Some(Curve::Client { server, public, secret }));
    }
    let Some(secret) = secret else {
        return Err((
            "curve_clients",
            "set without curve_secret: a CURVE server needs its secret key".into(),
        ));
    };
    let clients = read_key_list(keys.clients).map_err(|e| ("curve_clients", e))?;
    Ok(Some(Curve::Server { secret, clients }))
}

/// A key written as 40 characters of Z85, or the path of a file holding one (`#` lines and
/// blank lines ignored). A secret key's file must be private to its owner.
pub fn read_key(text: &str, secret: bool) -> Result<Key, String> {
    let text = text.trim();
    if let Some(key) = decode(text) {
        return Ok(key);
    }
    let path = Path::new(text);
    if !path.exists() {
        return Err(format!(
            "{} is neither a key (40 characters of Z85, as `smxrun keygen` prints) nor an existing key file",
            shown(text, secret)
        ));
    }
    let content = read_file(path, secret)?;
    let mut keys = key_lines(&content);
    match (keys.next(), keys.next()) {
        (Some(line), None) => decode(line).ok_or_else(|| {
            format!(
                "{}: {} is not a key (40 characters of Z85)",
                path.display(),
                shown(line, secret)
            )
        }),
        (None, _) => Err(format!("{}: holds no key", path.display())),
        (Some(_), Some(_)) => Err(format!("{}: holds more than one key", path.display())),
    }
}

/// Public keys separated by commas or whitespace, or the path of a file with one per line.
fn read_key_list(text: &str) -> Result<Vec<Key>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let (content, place) = if Path::new(text).is_file() {
        (read_file(Path::new(text), false)?, format!("{text}: "))
    } else {
        (text.to_string(), String::new())
    };
    let keys: Vec<Key> = key_lines(&content)
        .flat_map(|line| line.split([',', ' ', '\t']).filter(|k| !k.is_empty()))
        .map(|k| {
            decode(k).ok_or_else(|| {
                format!(
                    "{place}{} is not a public key (40 characters of Z85) nor a key file",
                    shown(k, false)
                )
            })
        })
        .collect::<Result<_, _>>()?;
    if keys.is_empty() {
        return Err(format!("{place}holds no key"));
    }
    Ok(keys)
}

fn key_lines(content: &str) -> impl Iterator<Item = &str> {
    content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

fn read_file(path: &Path, secret: bool) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let place = |e: std::io::Error| format!("{}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(place)?;
    let meta = file.metadata().map_err(place)?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file", path.display()));
    }
    if secret && meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "{}: a secret key file must not be readable by others (mode {:o}; chmod 600 it)",
            path.display(),
            meta.permissions().mode() & 0o777
        ));
    }
    let mut content = String::new();
    file.take(MAX_KEY_FILE)
        .read_to_string(&mut content)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(content)
}

/// A text that failed to parse, for an error message. What may be a mistyped secret key (a
/// text about as long as a key) is not shown at all; anything else is cut at 100 characters.
fn shown(text: &str, secret: bool) -> String {
    let len = text.chars().count();
    if secret && (30..=50).contains(&len) {
        return format!("the value ({len} characters, not shown: it may be a secret key)");
    }
    let cut: String = text.chars().take(100).collect();
    if len > 100 {
        format!("'{cut}...'")
    } else {
        format!("'{cut}'")
    }
}

/// Decodes 40 characters of Z85 into a key.
pub fn decode(text: &str) -> Option<Key> {
    if text.len() != 40 || !text.bytes().all(|b| Z85.contains(&b)) {
        return None;
    }
    // Each group of five characters is a base-85 number that must fit in 32 bits.
    let mut key = [0u8; 32];
    for (group, out) in text.as_bytes().chunks(5).zip(key.chunks_mut(4)) {
        let mut value: u64 = 0;
        for &b in group {
            value = value * 85 + Z85.iter().position(|&c| c == b)? as u64;
        }
        let value = u32::try_from(value).ok()?;
        out.copy_from_slice(&value.to_be_bytes());
    }
    Some(key)
}

/// A key as 40 characters of Z85.
pub fn encode(key: &Key) -> String {
    zmq::z85_encode(key).expect("32 bytes are a multiple of 4")
}

/// A fresh key pair (public, secret) from libzmq (libsodium's random numbers).
pub fn generate() -> Result<(Key, Key), String> {
    let pair = zmq::CurveKeyPair::new().map_err(|e| format!("cannot make a CURVE key pair: {e}"))?;
    Ok((pair.public_key, pair.secret_key))
}

/// The public key of a secret key.
pub fn public_of(secret: &Key) -> Key {
    smx_libzmq::curve_public(&encode(secret))
        .and_then(|text| decode(&text))
        .expect("libzmq with CURVE derives a public key from any 32 bytes")
}

/// The ZAP domain of the boxes' servers: libzmq asks the handler of this context about every
/// client that completed the CURVE handshake.
const ZAP_ENDPOINT: &str = "inproc://zeromq.zap.01";

impl Curve {
    /// Sets the socket's CURVE options (before bind or connect).
    pub fn apply(&self, socket: &zmq::Socket) -> Result<(), zmq::Error> {
        match self {
            Curve::Server { secret, .. } => {
                socket.set_curve_server(true)?;
                socket.set_curve_secretkey(secret)
            }
            Curve::Client { server, public, secret } => {
                socket.set_curve_serverkey(server)?;
                socket.set_curve_publickey(public)?;
                socket.set_curve_secretkey(secret)
            }
        }
    }

    /// For a server with a list of clients: binds the ZAP handler of `context` and answers its
    /// requests on a thread of its own, which ends when the context terminates.
    pub fn start_zap(&self, context: &zmq::Context) -> Result<(), zmq::Error> {
        let Curve::Server { clients, .. } = self else {
            return Ok(());
        };
        if clients.is_empty() {
            return Ok(());
        }
        let handler = context.socket(zmq::REP)?;
        handler.set_linger(0)?;
        handler.bind(ZAP_ENDPOINT)?;
        let clients = clients.clone();
        std::thread::Builder::new()
            .name("smx-zmq-zap".into())
            .spawn(move || serve_zap(&handler, &clients))
            .map_err(|_| zmq::Error::ENOMEM)?;
        Ok(())
    }
}

/// Answers ZAP requests (ZeroMQ RFC 27) until the context terminates: 200 for a listed
/// client's key, 400 for any other.
fn serve_zap(handler: &zmq::Socket, clients: &[Key]) {
    while let Ok(frames) = handler.recv_multipart(0) {
        // version, request id, domain, address, identity, mechanism, credentials...
        let (version, id) = (
            frames.first().cloned().unwrap_or_default(),
            frames.get(1).cloned().unwrap_or_default(),
        );
        let allowed = frames.get(5).is_some_and(|m| m == b"CURVE")
            && frames.get(6).is_some_and(|k| clients.iter().any(|c| c[..] == k[..]));
        let (code, text): (&[u8], &[u8]) = if allowed {
            (b"200", b"OK")
        } else {
            (b"400", b"client key not in curve_clients")
        };
        let reply: [&[u8]; 6] = [&version, &id, code, text, b"", b""];
        if handler.send_multipart(reply, 0).is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts<'a>(secret: &'a str, public: &'a str, server: &'a str, clients: &'a str) -> KeyTexts<'a> {
        KeyTexts {
            secret,
            public,
            server,
            clients,
        }
    }

    #[test]
    fn z85_round_trips_and_rejects_what_is_not_a_key() {
        let (public, secret) = generate().unwrap();
        assert_eq!(decode(&encode(&public)), Some(public));
        assert_eq!(public_of(&secret), public);
        assert_eq!(decode("short"), None);
        assert_eq!(decode(&"~".repeat(40)), None);
        // "#####" is 85^5 - 1, more than 32 bits.
        assert_eq!(decode(&"#".repeat(40)), None);
    }

    #[test]
    fn roles_follow_the_keys() {
        let (public, secret) = generate().unwrap();
        let (s_pub, s_sec) = (encode(&public), encode(&secret));
        assert_eq!(from_texts(&texts("", "", "", "")).unwrap(), None);
        let server = from_texts(&texts(&s_sec, &s_pub, "", "")).unwrap().unwrap();
        assert!(matches!(server, Curve::Server { ref clients, .. } if clients.is_empty()));
        let client = from_texts(&texts("", "", &s_pub, "")).unwrap().unwrap();
        assert!(matches!(client, Curve::Client { server, .. } if server == public));
    }

    #[test]
    fn bad_keys_name_the_key() {
        let (public, secret) = generate().unwrap();
        let (_, other) = generate().unwrap();
        let err = from_texts(&texts(&encode(&other), &encode(&public), "", "")).unwrap_err();
        assert_eq!(err.0, "curve_public");
        let err = from_texts(&texts("nonsense", "", "", "")).unwrap_err();
        assert_eq!(err.0, "curve_secret");
        assert!(err.1.contains("'nonsense' is neither a key"), "{}", err.1);
        let typo = format!("{}~", &encode(&secret)[1..]);
        let err = from_texts(&texts(&typo, "", "", "")).unwrap_err();
        assert!(
            !err.1.contains(&typo[..8]),
            "a mistyped secret is not printed: {}",
            err.1
        );
        let err = from_texts(&texts("", "", "", &encode(&public))).unwrap_err();
        assert_eq!(err.0, "curve_clients");
        let err = from_texts(&texts(&encode(&secret), "", &encode(&public), &encode(&public))).unwrap_err();
        assert_eq!(err.0, "curve_clients");
        let err = from_texts(&texts(&encode(&secret), "", "", "abc")).unwrap_err();
        assert!(err.1.contains("'abc' is not a public key"), "{}", err.1);
    }

    #[test]
    fn key_files_are_read_and_secret_ones_must_be_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (public, secret) = generate().unwrap();
        let path = dir.path().join("a.key");
        std::fs::write(&path, format!("# comment\n{}\n", encode(&secret))).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = read_key(path.to_str().unwrap(), true).unwrap_err();
        assert!(err.contains("chmod 600"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_key(path.to_str().unwrap(), true).unwrap(), secret);
        let list = dir.path().join("clients");
        std::fs::write(&list, format!("{}\n{}\n", encode(&public), encode(&secret))).unwrap();
        assert_eq!(read_key_list(list.to_str().unwrap()).unwrap(), vec![public, secret]);
        let two = dir.path().join("two.pub");
        std::fs::write(&two, format!("{}\n{}\n", encode(&public), encode(&public))).unwrap();
        assert!(
            read_key(two.to_str().unwrap(), false)
                .unwrap_err()
                .contains("more than one")
        );
    }
}
