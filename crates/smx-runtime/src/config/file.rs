//! Reading a `--config` TOML file into settings that remember their line.
//!
//! The file has three kinds of tables, from general to specific:
//!
//! ```toml
//! [default]            # every net
//! expected_rate = 100_000
//!
//! [impl.smx_src_rand]  # every instance of this implementation
//! size = 64
//!
//! [net.Src]            # every instance named Src (or "Src#3": only the node with id 3)
//! count = 1_000_000
//! core = 0
//! ```
//!
//! Values are TOML integers, strings or booleans; they are kept as text here and parsed by the
//! key's declared kind when the configuration is resolved, exactly like `--set` values, so both
//! paths accept and reject the same things.

use std::path::{Path, PathBuf};

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::error::{ConfigError, Origin};

/// Which nets a table of the file applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Default,
    Impl(String),
    Net(String),
}

/// One `key = value` line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub scope: Scope,
    pub key: String,
    /// The value as text (`"42"`, `"true"`, `"500ms"`).
    pub value: String,
    pub origin: Origin,
}

const TABLES: [&str; 4] = ["default", "impl", "net", "process"];

/// The table of the processes a net is placed over (`[process.NAME]`), read by the deployment
/// (`smx-deploy`), not by the per-net layers.
pub const PROCESS_TABLE: &str = "process";

/// The one top-level key: the box libraries to load (`boxes = ["libmine.so"]`).
pub const BOXES_KEY: &str = "boxes";

/// The largest config file read: far beyond any real one, and a device or FIFO given as the
/// file cannot make a read go on for ever.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The text of the config file at `path`. A missing, unreadable, non-UTF-8 or too large file
/// is an error naming it.
pub fn read_text(path: &Path) -> Result<String, ConfigError> {
    use std::io::Read;
    let fail = |cause: String| ConfigError::new(file_origin(path, 0), cause);
    let cause = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => "config file not found".to_string(),
        _ => format!("cannot read config file: {e}"),
    };
    let file = std::fs::File::open(path).map_err(|e| fail(cause(e)))?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(cause(e)))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(fail(format!(
            "config file larger than the limit of {MAX_CONFIG_BYTES} bytes (16 MiB)"
        )));
    }
    String::from_utf8(bytes).map_err(|_| fail("config file is not UTF-8 text".to_string()))
}

/// Parses the text of a config file; `path` is only used to name places in errors.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Entry>, ConfigError> {
    let lines = LineIndex::new(text);
    let at = |span: std::ops::Range<usize>| file_origin(path, lines.line(span.start));
    let document = DeTable::parse(text).map_err(|e| {
        let line = e.span().map_or(0, |s| lines.line(s.start));
        let message = e.message().trim().to_string();
        ConfigError::new(file_origin(path, line), format!("malformed TOML: {message}"))
    })?;

    let mut entries = Vec::new();
    for (name, value) in document.get_ref().iter() {
        // `boxes = [...]`: the C box libraries, read by `ConfigLayers` (see layers.rs).
        if name.get_ref() == BOXES_KEY || name.get_ref() == PROCESS_TABLE {
            continue;
        }
        let origin = at(name.span());
        let table = value
            .get_ref()
            .as_table()
            .ok_or_else(|| misplaced_key(origin.clone(), name.get_ref()))?;
        match name.get_ref().as_ref() {
            "default" => collect(&mut entries, Scope::Default, table, &at)?,
            "impl" | "net" => {
                for (target, inner) in table.iter() {
                    let inner_table = inner.get_ref().as_table().ok_or_else(|| {
                        ConfigError::new(
                            at(target.span()),
                            format!(
                                "'{}.{}' must be a table: write [{}.{}] and put its keys below",
                                name.get_ref(),
                                target.get_ref(),
                                name.get_ref(),
                                target.get_ref()
                            ),
                        )
                    })?;
                    let target = target.get_ref().to_string();
                    let scope = if name.get_ref() == "impl" {
                        Scope::Impl(target)
                    } else {
                        Scope::Net(target)
                    };
                    collect(&mut entries, scope, inner_table, &at)?;
                }
            }
            other => {
                return Err(ConfigError::new(origin, format!("unknown table [{other}]")).choices(TABLES));
            }
        }
    }
    entries.sort_by_key(|e| match &e.origin {
        Origin::File { line, .. } => *line,
        _ => 0,
    });
    Ok(entries)
}

fn collect(
    entries: &mut Vec<Entry>,
    scope: Scope,
    table: &DeTable<'_>,
    at: &dyn Fn(std::ops::Range<usize>) -> Origin,
) -> Result<(), ConfigError> {
    for (key, value) in table.iter() {
        let origin = at(key.span());
        let text = value_text(value).map_err(|m| ConfigError::new(origin.clone(), m).key(key.get_ref().as_ref()))?;
        entries.push(Entry {
            scope: scope.clone(),
            key: key.get_ref().to_string(),
            value: text,
            origin,
        });
    }
    Ok(())
}

/// A scalar TOML value as the text `--set` would give for it.
fn value_text(value: &Spanned<DeValue<'_>>) -> Result<String, String> {
    match value.get_ref() {
        DeValue::String(s) => Ok(s.to_string()),
        DeValue::Boolean(b) => Ok(b.to_string()),
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
            .map(|v| v.to_string())
            .map_err(|_| format!("integer {} is out of range", i.as_str())),
        // As written, so that the key's kind decides: a number key takes it, an integer key
        // refuses it naming the key.
        DeValue::Float(f) => Ok(f.as_str().to_string()),
        other => {
            let kind = other.type_str();
            let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            Err(format!(
                "{article} {kind} is not a valid value; write a number, a string or a boolean"
            ))
        }
    }
}

fn misplaced_key(origin: Origin, name: &str) -> ConfigError {
    ConfigError::new(
        origin,
        format!("'{name}' is outside any table; put settings under [default], [impl.NAME] or [net.INSTANCE]"),
    )
    .key(name)
}

fn file_origin(path: &Path, line: usize) -> Origin {
    Origin::File {
        path: PathBuf::from(path),
        line,
    }
}

/// Byte offset to 1-based line number.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineIndex { starts }
    }

    fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Result<Vec<Entry>, ConfigError> {
        parse(Path::new("run.toml"), text)
    }

    #[test]
    fn a_device_given_as_the_config_file_is_refused_once_past_the_limit() {
        let err = read_text(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(
            err,
            "/dev/zero: config file larger than the limit of 16777216 bytes (16 MiB)"
        );
    }

    fn line(e: &Entry) -> usize {
        match e.origin {
            Origin::File { line, .. } => line,
            _ => panic!("not from a file"),
        }
    }

    #[test]
    fn tables_become_scoped_entries_with_lines() {
        let got = entries(
            "# comment\n[default]\nexpected_rate = 100\n\n[impl.smx_src_rand]\nsize = 0x40\nverbose = true\n\
             [net.Src]\ncount = 1_000\npath = \"/tmp/a.txt\"\n[net.\"Src#3\"]\nnice = -5\n",
        )
        .unwrap();
        let summary: Vec<(Scope, &str, &str, usize)> = got
            .iter()
            .map(|e| (e.scope.clone(), e.key.as_str(), e.value.as_str(), line(e)))
            .collect();
        assert_eq!(
            summary,
            vec![
                (Scope::Default, "expected_rate", "100", 3),
                (Scope::Impl("smx_src_rand".into()), "size", "64", 6),
                (Scope::Impl("smx_src_rand".into()), "verbose", "true", 7),
                (Scope::Net("Src".into()), "count", "1000", 9),
                (Scope::Net("Src".into()), "path", "/tmp/a.txt", 10),
                (Scope::Net("Src#3".into()), "nice", "-5", 12),
            ]
        );
    }

    #[test]
    fn dotted_keys_and_inline_tables_work_too() {
        let got = entries("impl.smx_fwd = { core = 1 }\n").unwrap();
        assert_eq!(got[0].scope, Scope::Impl("smx_fwd".into()));
        assert_eq!((got[0].key.as_str(), got[0].value.as_str()), ("core", "1"));
    }

    #[test]
    fn malformed_toml_names_the_line() {
        let err = entries("[default]\ncount = = 5\n").unwrap_err();
        assert_eq!(
            err.origin,
            Origin::File {
                path: "run.toml".into(),
                line: 2
            }
        );
        assert!(err.message.starts_with("malformed TOML"), "{err}");
    }

    #[test]
    fn structure_errors_are_explained() {
        let err = entries("count = 5\n").unwrap_err();
        assert!(err.to_string().contains("outside any table"), "{err}");
        let err = entries("[nets.Src]\ncount = 5\n").unwrap_err();
        assert!(err.to_string().contains("unknown table [nets]"), "{err}");
        assert_eq!(err.choices, vec!["default", "impl", "net", "process"]);
        let err = entries("[net]\nSrc = 5\n").unwrap_err();
        assert!(err.to_string().contains("must be a table"), "{err}");
        // A float is taken as written; the key's kind decides (see the layers' tests).
        assert_eq!(entries("[default]\nsize = 1.5\n").unwrap()[0].value, "1.5");
        let err = entries("[default]\nsize = [1]\n").unwrap_err();
        assert!(err.to_string().starts_with("run.toml:2: key 'size'"), "{err}");
        assert!(err.to_string().contains("an array is not a valid value"), "{err}");
    }

    #[test]
    fn a_missing_file_is_named() {
        let err = read_text(Path::new("/nonexistent/smx.toml")).unwrap_err();
        assert_eq!(err.to_string(), "/nonexistent/smx.toml: config file not found");
    }
}
