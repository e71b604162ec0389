//! Configuration errors that tell the user where a setting came from and what would be valid.
//!
//! A run's figures are only as good as its configuration, so a setting that cannot be applied
//! is never ignored: it stops the run before any thread starts, with a message naming the key,
//! the net, the place it was written (`FILE:LINE` or the override as given) and the choices.
//! A driver names the places it made in its own words ([`ConfigError::render_with`]): the
//! command line calls an override `--set '...'`, a host program sees the text it passed.

use std::fmt;
use std::path::PathBuf;

/// Where a setting was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A `--config` file; `line` is 1-based, 0 when unknown (e.g. the file could not be read).
    File { path: PathBuf, line: usize },
    /// An override `TARGET.key=value` given to [`super::ConfigLayers::add_set`], as given.
    Override(String),
    /// The iteration count given to [`super::ConfigLayers::set_iterations`].
    IterationCount,
    /// A box implementation's built-in default.
    BuiltIn,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line: 0 } => write!(f, "{}", path.display()),
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Override(arg) => write!(f, "override '{arg}'"),
            Origin::IterationCount => f.write_str("the iteration count"),
            Origin::BuiltIn => f.write_str("built-in default"),
        }
    }
}

/// A setting that cannot be applied. The details are boxed so that `Result`s carrying it stay
/// small; read them through `Deref` (`err.key`, `err.choices`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    details: Box<ConfigErrorDetails>,
}

/// What a [`ConfigError`] says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrorDetails {
    pub origin: Origin,
    /// The net (instance) or target the setting was meant for, when known.
    pub net: Option<String>,
    /// `net` names an implementation (an `[impl.NAME]` table), not an instance.
    pub of_implementation: bool,
    /// The key, when the problem is about one key.
    pub key: Option<String>,
    /// What is wrong, e.g. `unknown key` or `'abc' is not a non-negative integer`.
    pub message: String,
    /// What would have been valid (known keys, known instances, ...), shown after the message.
    pub choices: Vec<String>,
    /// The name that is none of `choices` (an instance, an implementation), when it is not
    /// the key: the nearest choice is offered for it.
    pub unknown: Option<String>,
}

impl std::ops::Deref for ConfigError {
    type Target = ConfigErrorDetails;

    fn deref(&self) -> &ConfigErrorDetails {
        &self.details
    }
}

impl ConfigError {
    pub fn new(origin: Origin, message: impl Into<String>) -> Self {
        ConfigError {
            details: Box::new(ConfigErrorDetails {
                origin,
                net: None,
                of_implementation: false,
                key: None,
                message: message.into(),
                choices: Vec::new(),
                unknown: None,
            }),
        }
    }

    pub fn net(mut self, net: impl Into<String>) -> Self {
        self.details.net = Some(net.into());
        self
    }

    /// The setting was meant for every instance of the implementation `name`.
    pub fn implementation(mut self, name: impl Into<String>) -> Self {
        self.details.net = Some(name.into());
        self.details.of_implementation = true;
        self
    }

    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.details.key = Some(key.into());
        self
    }

    pub fn choices<S: ToString>(mut self, choices: impl IntoIterator<Item = S>) -> Self {
        self.details.choices = choices.into_iter().map(|c| c.to_string()).collect();
        self
    }

    /// `name` is none of the choices: the message offers the nearest one.
    pub fn unknown(mut self, name: impl Into<String>) -> Self {
        self.details.unknown = Some(name.into());
        self
    }
}

impl ConfigError {
    /// The message with its place in the driver's words: `origin_words` names the places the
    /// driver made (overrides, the iteration count) and returns `None` for the others, which
    /// keep their own text (`FILE:LINE`, `built-in default`).
    pub fn render_with(&self, origin_words: impl Fn(&Origin) -> Option<String>) -> String {
        let place = origin_words(&self.origin).unwrap_or_else(|| self.origin.to_string());
        format!("{place}: {}", Described(self))
    }
}

/// What a [`ConfigError`] says after its place.
struct Described<'a>(&'a ConfigError);

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        let target = if e.of_implementation { "implementation" } else { "net" };
        match (&e.key, &e.net) {
            (Some(key), Some(net)) => write!(f, "key '{key}' of {target} '{net}': ")?,
            (Some(key), None) => write!(f, "key '{key}': ")?,
            (None, Some(net)) => write!(f, "{target} '{net}': ")?,
            (None, None) => {}
        }
        f.write_str(&e.message)?;
        if !e.choices.is_empty() {
            write!(f, " (valid: {})", e.choices.join(", "))?;
        }
        // The choices are keys only where the key itself is unknown.
        let unknown_key = e.message.ends_with("unknown key");
        let unknown = e.unknown.as_deref().or(e.key.as_deref().filter(|_| unknown_key));
        if let Some(near) = unknown.and_then(|name| nearest(name, &e.choices)) {
            write!(f, "; did you mean '{near}'?")?;
        }
        Ok(())
    }
}

/// The choice a name not among them most likely meant: the same but for upper and lower case
/// (`back` for `BACK`), else one edit away (`core` for `cores`, `lanuch` for `launch`,
/// `analysys` for `analysis`), or two with the same first letter (`count` for `cnt`; not `nice`
/// for `file`), and fewer edits than the name has letters.
pub fn nearest<'c>(name: &str, choices: &'c [String]) -> Option<&'c str> {
    if choices.iter().any(|c| c == name) {
        return None;
    }
    let lower = name.to_lowercase();
    let first = |text: &str| text.chars().next();
    choices
        .iter()
        .map(|c| (strsim::damerau_levenshtein(&lower, &c.to_lowercase()), c.as_str()))
        .filter(|&(distance, c)| {
            let close = match distance {
                0 | 1 => true,
                2 => first(&lower) == first(&c.to_lowercase()),
                _ => false,
            };
            close && distance < name.chars().count()
        })
        .min_by_key(|&(distance, c)| (distance, strsim::levenshtein(name, c)))
        .map(|(_, c)| c)
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, Described(self))
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_choice_is_a_likely_slip_and_no_other() {
        let choices = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let keys = choices(&["path", "nice", "count", "cores", "launch"]);
        assert_eq!(nearest("core", &keys), Some("cores"));
        assert_eq!(nearest("lanuch", &keys), Some("launch"));
        assert_eq!(nearest("cnt", &keys), Some("count"));
        // Two letters replaced at the start is another word, not a slip.
        assert_eq!(nearest("file", &keys), None);
        assert_eq!(nearest("BACK", &choices(&["main", "back"])), Some("back"));
        // Of two that differ from it in case alone, the one that differs in fewer letters.
        let processes = choices(&["main", "Back", "back"]);
        assert_eq!(nearest("bAck", &processes), Some("back"));
        assert_eq!(nearest("BaCk", &processes), Some("Back"));
        assert_eq!(nearest("back", &processes), None);
    }

    #[test]
    fn message_names_place_net_key_and_choices() {
        let err = ConfigError::new(
            Origin::File {
                path: "run.toml".into(),
                line: 7,
            },
            "unknown key",
        )
        .net("Src")
        .key("cnt")
        .choices(["count", "seed"]);
        assert_eq!(
            err.to_string(),
            "run.toml:7: key 'cnt' of net 'Src': unknown key (valid: count, seed); did you mean 'count'?"
        );
        let far = ConfigError::new(Origin::BuiltIn, "unknown key")
            .key("xyz")
            .choices(["count", "seed"]);
        assert!(!far.to_string().contains("did you mean"), "{far}");
        let err = ConfigError::new(Origin::Override("Src.cnt=1".into()), "bad").key("cnt");
        assert_eq!(err.to_string(), "override 'Src.cnt=1': key 'cnt': bad");
        let flags = |o: &Origin| match o {
            Origin::Override(arg) => Some(format!("--set '{arg}'")),
            _ => None,
        };
        assert_eq!(err.render_with(flags), "--set 'Src.cnt=1': key 'cnt': bad");
        let err = ConfigError::new(Origin::BuiltIn, "bad");
        assert_eq!(err.render_with(flags), "built-in default: bad");
    }
}
