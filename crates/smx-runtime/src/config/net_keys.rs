//! The runtime's own per-net keys (`core`, `priority`, `nice`, `expected_rate`, `process`).
//!
//! They are valid for every net, routing nodes included, beside the keys a box's
//! [`BoxSpec`](smx_box::BoxSpec) declares. Their ranges are checked here, when the
//! configuration is resolved, so that a bad value is reported with its origin instead of
//! surfacing later as a failed system call in some thread.

use super::NetSettings;

/// One runtime key: its name and what it means (for `smxrun boxes` and error messages).
pub struct NetKey {
    pub name: &'static str,
    pub help: &'static str,
}

/// Every runtime key, in the order they are listed to users.
pub const NET_KEYS: &[NetKey] = &[
    NetKey {
        name: "core",
        help: "pin this net's thread to this core (overrides the run's placement of threads)",
    },
    NetKey {
        name: "priority",
        help: "SCHED_FIFO priority 1..99 (a warning and normal scheduling when not permitted)",
    },
    NetKey {
        name: "nice",
        help: "niceness of the thread, -20..19",
    },
    NetKey {
        name: "expected_rate",
        help: "iterations per second the net should reach; the report flags it outside 80..120 %",
    },
    NetKey {
        name: "process",
        help: "the process this net runs in, declared as [process.NAME] (default: main)",
    },
];

/// True when `name` is a runtime key.
pub fn is_net_key(name: &str) -> bool {
    NET_KEYS.iter().any(|k| k.name == name)
}

/// Parses `text` as the value of runtime key `name` and stores it in `settings`.
/// `cores` are the ids of the cores this process may run on (`None` when unknown).
/// The error says what was expected.
pub fn apply(settings: &mut NetSettings, name: &str, text: &str, cores: Option<&[usize]>) -> Result<(), String> {
    let text = text.trim();
    match name {
        "core" => {
            let core: usize = parse_int(text, "a core number")?;
            if let Some(cores) = cores
                && !cores.contains(&core)
            {
                let list: Vec<String> = cores.iter().map(usize::to_string).collect();
                return Err(format!(
                    "core {core} is not available to this process (available: {})",
                    list.join(", ")
                ));
            }
            settings.core = Some(core);
        }
        "priority" => {
            let level: u8 = parse_int(text, "a priority")?;
            if !(1..=99).contains(&level) {
                return Err(format!("priority {level} is outside 1..99"));
            }
            settings.priority = Some(level);
        }
        "nice" => {
            let nice: i32 = parse_int(text, "a nice value")?;
            if !(-20..=19).contains(&nice) {
                return Err(format!("nice value {nice} is outside -20..19"));
            }
            settings.nice = Some(nice);
        }
        "expected_rate" => {
            let rate: u64 = parse_int(text, "a rate")?;
            if rate == 0 {
                return Err("expected_rate must be at least 1 iteration per second".to_string());
            }
            settings.expected_rate = Some(rate);
        }
        "process" => {
            check_process_name(text)?;
            // Where it was written is filled in by the caller, which knows the origin.
            settings.process = Some((text.to_string(), super::Origin::BuiltIn));
        }
        _ => return Err(format!("'{name}' is not a runtime key")),
    }
    Ok(())
}

/// A process name becomes part of file names, unit names, endpoints and the command line
/// that starts its slice, so it is kept to letters, digits, `_` and `-`, and starts with a
/// letter or digit (a leading `-` would read as an option there).
pub fn check_process_name(name: &str) -> Result<(), String> {
    let fine = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let starts_fine = name.starts_with(|c: char| c.is_ascii_alphanumeric());
    if name.len() > 32 || !starts_fine || !name.chars().all(fine) {
        return Err(format!(
            "'{name}' is not a process name: 1 to 32 letters, digits, '_' or '-', starting with a letter or digit"
        ));
    }
    Ok(())
}

fn parse_int<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.replace('_', "")
        .parse()
        .map_err(|_| format!("'{text}' is not {what} (an integer)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_name_starts_with_a_letter_or_digit_as_it_goes_on_a_command_line() {
        for fine in ["main", "b", "7", "sensor_2", "far-away"] {
            assert_eq!(check_process_name(fine), Ok(()), "{fine}");
        }
        for bad in ["", "-x", "--help", "_x", "a b", "a/b", &"x".repeat(33)] {
            assert!(check_process_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_in_range_are_stored() {
        let mut s = NetSettings::default();
        apply(&mut s, "core", "1", Some(&[0, 1])).unwrap();
        apply(&mut s, "priority", "99", None).unwrap();
        apply(&mut s, "nice", "-20", None).unwrap();
        apply(&mut s, "expected_rate", "1_000_000", None).unwrap();
        assert_eq!(s.core, Some(1));
        assert_eq!(s.priority, Some(99));
        assert_eq!(s.nice, Some(-20));
        assert_eq!(s.expected_rate, Some(1_000_000));
    }

    #[test]
    fn values_out_of_range_are_rejected_with_the_range() {
        let mut s = NetSettings::default();
        let err = apply(&mut s, "core", "5", Some(&[0, 1])).unwrap_err();
        assert!(err.contains("available: 0, 1"), "{err}");
        assert!(apply(&mut s, "priority", "0", None).unwrap_err().contains("1..99"));
        assert!(apply(&mut s, "priority", "100", None).unwrap_err().contains("1..99"));
        assert!(apply(&mut s, "nice", "20", None).unwrap_err().contains("-20..19"));
        assert!(apply(&mut s, "nice", "x", None).unwrap_err().contains("'x'"));
        assert!(apply(&mut s, "expected_rate", "0", None).is_err());
        assert!(apply(&mut s, "expected_rate", "-5", None).is_err());
        assert!(
            apply(&mut s, "process", "a b", None)
                .unwrap_err()
                .contains("not a process name")
        );
        assert!(apply(&mut s, "process", "", None).is_err());
        assert_eq!(
            s,
            NetSettings::default(),
            "a rejected value leaves the settings unchanged"
        );
    }
}
