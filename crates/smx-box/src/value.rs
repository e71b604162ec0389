//! Configuration values written as text, parsed by their declared [`ValueKind`].
//!
//! Used for the defaults a [`BoxSpec`] declares as well as for values from a config file or
//! the command line, so every path rejects a bad value with the same message.

use std::time::Duration;

use crate::{BoxConfig, BoxSpec, ConfigKey, ConfigValue, ValueKind};

/// Parses `text` as a value of `key`'s kind. The error says what was expected.
pub fn parse_value(key: &ConfigKey, text: &str) -> Result<ConfigValue, String> {
    let text = text.trim();
    match key.kind {
        ValueKind::Int => text
            .replace('_', "")
            .parse::<u64>()
            .map(ConfigValue::Int)
            .map_err(|_| format!("'{text}' is not a non-negative integer")),
        ValueKind::Bool => match text {
            "true" | "yes" | "on" | "1" => Ok(ConfigValue::Bool(true)),
            "false" | "no" | "off" | "0" => Ok(ConfigValue::Bool(false)),
            _ => Err(format!(
                "'{text}' is not a boolean (true or false; also yes/no, on/off, 1/0)"
            )),
        },
        ValueKind::Float => text
            .replace('_', "")
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(ConfigValue::Float)
            .ok_or_else(|| format!("'{text}' is not a number")),
        ValueKind::Str => Ok(ConfigValue::Str(text.to_string())),
        ValueKind::Duration => parse_duration(text).map(ConfigValue::Duration),
        ValueKind::Choice => {
            if key.choices.contains(&text) {
                Ok(ConfigValue::Str(text.to_string()))
            } else {
                Err(format!("'{text}' is not one of: {}", key.choices.join(", ")))
            }
        }
    }
}

/// Parses a duration written like the language's time literals: one or more `<N><unit>` parts
/// with unit `s`, `ms`, `us` or `ns`, e.g. `2s`, `500ms`, `1s500ms`, `10us`. `0` alone is zero.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || {
        format!(
            "'{text}' is not a duration: write whole numbers with the units s, ms, us or ns (e.g. 500ms, 2s, 10us, 1s500ms, 3600s)"
        )
    };
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.is_empty() {
        return Err(bad());
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let number: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let part = match &rest[..unit_len] {
            "s" => Duration::from_secs(number),
            "ms" => Duration::from_millis(number),
            "us" => Duration::from_micros(number),
            "ns" => Duration::from_nanos(number),
            _ => return Err(bad()),
        };
        total = total.checked_add(part).ok_or_else(bad)?;
        rest = &rest[unit_len..];
    }
    Ok(total)
}

impl BoxConfig {
    /// The configuration of `instance` with every default of `spec` filled in.
    pub fn with_defaults(instance: &str, spec: &BoxSpec) -> Result<BoxConfig, String> {
        let mut config = BoxConfig {
            instance: instance.to_string(),
            id: 0,
            implementation: spec.name.to_string(),
            values: Default::default(),
        };
        for key in spec.config {
            if let Some(default) = key.default {
                let value = parse_value(key, default)
                    .map_err(|e| format!("built-in default of {}.{}: {e}", spec.name, key.name))?;
                config.values.insert(key.name.to_string(), value);
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kind: ValueKind, choices: &'static [&'static str]) -> ConfigKey {
        ConfigKey {
            name: "k",
            kind,
            default: None,
            choices,
            help: "",
            file_written: false,
        }
    }

    #[test]
    fn durations_like_time_literals() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1s500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("10us"), Ok(Duration::from_micros(10)));
        assert_eq!(parse_duration("7ns"), Ok(Duration::from_nanos(7)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5m").is_err());
        assert!(parse_duration("1.5s").is_err());
    }

    #[test]
    fn values_by_kind() {
        assert_eq!(
            parse_value(&key(ValueKind::Int, &[]), "1_000"),
            Ok(ConfigValue::Int(1000))
        );
        assert!(parse_value(&key(ValueKind::Int, &[]), "-1").is_err());
        assert_eq!(
            parse_value(&key(ValueKind::Bool, &[]), "true"),
            Ok(ConfigValue::Bool(true))
        );
        assert!(parse_value(&key(ValueKind::Bool, &[]), "maybe").is_err());
        let choice = key(ValueKind::Choice, &["pubsub", "pipeline"]);
        assert_eq!(
            parse_value(&choice, "pipeline"),
            Ok(ConfigValue::Str("pipeline".into()))
        );
        let err = parse_value(&choice, "pushpull").unwrap_err();
        assert!(err.contains("pubsub, pipeline"), "{err}");
    }
}
