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
//! paths accept and reject the same things. The one exception is `process`, a name, which here
//! takes a string alone: as text, `process = 5` would name the process `5`.

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

/// The name of an `[impl.NAME]` or `[net.NAME]` table where it was written: its target is
/// checked even when the table sets nothing, so a misspelt name is never taken in silence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    pub scope: Scope,
    pub origin: Origin,
}

/// What a config file sets, and the tables it names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub entries: Vec<Entry>,
    pub tables: Vec<TableName>,
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
pub fn parse(path: &Path, text: &str) -> Result<Parsed, ConfigError> {
    let lines = LineIndex::new(text);
    let at = |span: std::ops::Range<usize>| file_origin(path, lines.line(span.start));
    let document = DeTable::parse(text).map_err(|e| {
        let line = e.span().map_or(0, |s| lines.line(s.start));
        let mut message = e.message().trim().to_string();
        // The parser's message names no key: the span holds it.
        let named = e
            .span()
            .and_then(|s| text.get(s))
            .map(str::trim)
            .filter(|n| !n.is_empty());
        if let (Some(name), "duplicate key") = (named, message.as_str()) {
            message = format!("duplicate key '{name}': a table sets each key once, and a table is written once");
        }
        ConfigError::new(file_origin(path, line), format!("malformed TOML: {message}"))
    })?;

    // The deployment reads `[process.NAME]`, but its names are checked here: a net that names
    // one is read first, and would be refused at its key rather than at the table's name.
    let processes = document
        .get_ref()
        .get(PROCESS_TABLE)
        .and_then(|t| t.get_ref().as_table());
    for (name, _) in processes.into_iter().flat_map(DeTable::iter) {
        super::check_process_name(name.get_ref()).map_err(|m| ConfigError::new(at(name.span()), m))?;
    }
    let mut entries = Vec::new();
    let mut tables = Vec::new();
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
                    let table_at = at(target.span());
                    let target = target.get_ref().to_string();
                    let scope = if name.get_ref() == "impl" {
                        Scope::Impl(target)
                    } else {
                        Scope::Net(target)
                    };
                    collect(&mut entries, scope.clone(), inner_table, &at)?;
                    tables.push(TableName {
                        scope,
                        origin: table_at,
                    });
                }
            }
            other => {
                return Err(ConfigError::new(origin, format!("unknown table [{other}]"))
                    .choices(TABLES)
                    .unknown(other));
            }
        }
    }
    let line = |origin: &Origin| match origin {
        Origin::File { line, .. } => *line,
        _ => 0,
    };
    entries.sort_by_key(|e| line(&e.origin));
    tables.sort_by_key(|t| line(&t.origin));
    Ok(Parsed { entries, tables })
}

fn collect(
    entries: &mut Vec<Entry>,
    scope: Scope,
    table: &DeTable<'_>,
    at: &dyn Fn(std::ops::Range<usize>) -> Origin,
) -> Result<(), ConfigError> {
    for (key, value) in table.iter() {
        let origin = at(key.span());
        let in_place = |m: String| {
            let err = ConfigError::new(origin.clone(), m).key(key.get_ref().as_ref());
            match &scope {
                Scope::Default => err,
                Scope::Impl(target) => err.implementation(target),
                Scope::Net(target) => err.net(target),
            }
        };
        if let Some(problem) = name_value_problem(key.get_ref(), value.get_ref()) {
            return Err(in_place(problem));
        }
        if key.get_ref() == "cores" && matches!(value.get_ref(), DeValue::Array(_)) {
            return Err(in_place(
                "is a key of a [process.NAME] table (the cores its threads may use); a net takes one core: \
                 core = N"
                    .to_string(),
            ));
        }
        let text = value_text(value).map_err(in_place)?;
        entries.push(Entry {
            scope: scope.clone(),
            key: key.get_ref().to_string(),
            value: text,
            origin,
        });
    }
    Ok(())
}

/// The runtime key whose value is a name. Its value is kept as text like every other, and a
/// number or a flag would become text that reads as a name (`process = 5` as the process `5`,
/// then reported as a process the file does not declare), so in a file it takes a string
/// alone. On the command line (`--set X.process=5`) every value is text, and `5` is a name.
const NAME_KEY: &str = "process";

/// What is wrong with `value` for the key `key` when the key takes a name and the value is
/// not a TOML string.
fn name_value_problem(key: &str, value: &DeValue<'_>) -> Option<String> {
    if key != NAME_KEY || matches!(value, DeValue::String(_)) {
        return None;
    }
    let example = match value {
        DeValue::Integer(i) if i.radix() == 10 => i.as_str().to_string(),
        _ => "sensor".to_string(),
    };
    Some(format!(
        "takes a process name in quotes, a string (e.g. process = \"{example}\"), not {}",
        with_article(value.type_str())
    ))
}

/// `kind` after `a` or `an`.
fn with_article(kind: &str) -> String {
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {kind}")
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
        other => Err(format!(
            "{} is not a valid value; write a number, a string or a boolean",
            with_article(other.type_str())
        )),
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
        parse(Path::new("run.toml"), text).map(|parsed| parsed.entries)
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
    fn a_key_set_twice_is_named_at_its_second_line() {
        let err = entries("[net.Snk]\ncore = 1\ncore = 0\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "run.toml:3: malformed TOML: duplicate key 'core': a table sets each key once, and a table is \
             written once"
        );
    }

    #[test]
    fn a_process_name_is_refused_at_its_table_not_at_a_net_that_names_it() {
        let err = entries("[net.Snk]\nprocess = \"a b\"\n\n[process.\"a b\"]\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "run.toml:4: 'a b' is not a process name: 1 to 32 letters, digits, '_' or '-', starting with \
             a letter or digit"
        );
    }

    #[test]
    fn structure_errors_are_explained() {
        let err = entries("count = 5\n").unwrap_err();
        assert!(err.to_string().contains("outside any table"), "{err}");
        let err = entries("[nets.Src]\ncount = 5\n").unwrap_err();
        assert!(err.to_string().contains("unknown table [nets]"), "{err}");
        assert!(err.to_string().ends_with("did you mean 'net'?"), "{err}");
        assert_eq!(err.choices, vec!["default", "impl", "net", "process"]);
        let err = entries("[Process.b]\n").unwrap_err();
        assert!(err.to_string().ends_with("did you mean 'process'?"), "{err}");
        let err = entries("[net]\nSrc = 5\n").unwrap_err();
        assert!(err.to_string().contains("must be a table"), "{err}");
        // A float is taken as written; the key's kind decides (see the layers' tests).
        assert_eq!(entries("[default]\nsize = 1.5\n").unwrap()[0].value, "1.5");
        let err = entries("[default]\nsize = [1]\n").unwrap_err();
        assert!(err.to_string().starts_with("run.toml:2: key 'size'"), "{err}");
        assert!(err.to_string().contains("an array is not a valid value"), "{err}");
    }

    #[test]
    fn a_list_of_cores_for_a_net_says_where_cores_belong() {
        let err = entries("[net.Snk]\ncores = [1]\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "run.toml:2: key 'cores' of net 'Snk': is a key of a [process.NAME] table (the cores its threads \
             may use); a net takes one core: core = N"
        );
    }

    #[test]
    fn a_process_written_as_anything_but_a_string_is_refused_at_its_line() {
        // Digits make a valid process name: as text, `5` would be taken for the process "5".
        let err = entries("[net.Src]\ncount = 3\nprocess = 5\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "run.toml:3: key 'process' of net 'Src': takes a process name in quotes, a string \
             (e.g. process = \"5\"), not an integer"
        );
        for (value, found) in [
            ("true", "a boolean"),
            ("[\"a\"]", "an array"),
            ("1.5", "a float"),
            ("{ name = \"a\" }", "a table"),
        ] {
            let err = entries(&format!("[default]\n\nprocess = {value}\n")).unwrap_err();
            assert_eq!(err.origin, file_origin(Path::new("run.toml"), 3), "{value}");
            assert_eq!(err.key.as_deref(), Some("process"), "{value}");
            assert!(
                err.message.contains("takes a process name in quotes, a string"),
                "{value}: {err}"
            );
            assert!(err.message.ends_with(&format!("not {found}")), "{value}: {err}");
        }
        let err = entries("[impl.smx_src_rand]\nprocess = 7\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("run.toml:2: key 'process' of implementation 'smx_src_rand': "),
            "{err}"
        );
        // A name in quotes is a name, digits or not; the other runtime keys keep their integers.
        let fine = entries("[net.Src]\nprocess = \"5\"\ncore = 1\npriority = 10\n").unwrap();
        let values: Vec<(&str, &str)> = fine.iter().map(|e| (e.key.as_str(), e.value.as_str())).collect();
        assert_eq!(values, vec![("process", "5"), ("core", "1"), ("priority", "10")]);
    }

    #[test]
    fn a_missing_file_is_named() {
        let err = read_text(Path::new("/nonexistent/smx.toml")).unwrap_err();
        assert_eq!(err.to_string(), "/nonexistent/smx.toml: config file not found");
    }
}
