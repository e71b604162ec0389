//! Time literals (`2s`, `1500ms`, `10us`, `5ns`) and time specifications (`[1s500ms]`).
//!
//! The conversion copies the original compiler digit by digit instead of doing arithmetic on
//! the whole number: a literal with more digits than its unit has sub-second places (3 for
//! `ms`, 6 for `us`, 9 for `ns`) splits into whole seconds and the rest, and the literals of a
//! specification are added component-wise without carrying nanoseconds into seconds. Graphs
//! written by the original carry these unnormalised pairs, and ours must be equal.

use super::ast::TimeSpec;

/// The unit of a time literal and its number of sub-second decimal places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Sec,
    Milli,
    Micro,
    Nano,
}

impl Unit {
    fn places(self) -> usize {
        match self {
            Unit::Sec => 0,
            Unit::Milli => 3,
            Unit::Micro => 6,
            Unit::Nano => 9,
        }
    }
}

/// Converts the digits of one literal (without the unit suffix) to (seconds, nanoseconds).
/// `None` when the seconds part does not fit in 64 bits.
pub(crate) fn literal(digits: &str, unit: Unit) -> Option<TimeSpec> {
    let places = unit.places();
    let split = digits.len().saturating_sub(places);
    let (whole, fraction) = digits.split_at(split);
    let secs = if whole.is_empty() {
        0
    } else {
        whole.parse::<u64>().ok()?
    };
    let nanos = if fraction.is_empty() {
        0
    } else {
        // At most 9 digits: always fits, and the scale makes it nanoseconds.
        fraction.parse::<u64>().ok()? * 10u64.pow((9 - places) as u32)
    };
    Some(TimeSpec { secs, nanos })
}

/// The component-wise sum of literals; `None` on overflow.
pub(crate) fn sum(parts: impl IntoIterator<Item = TimeSpec>) -> Option<TimeSpec> {
    parts.into_iter().try_fold(TimeSpec::default(), |acc, t| {
        Some(TimeSpec {
            secs: acc.secs.checked_add(t.secs)?,
            nanos: acc.nanos.checked_add(t.nanos)?,
        })
    })
}

/// The units a period may be written in, with their nanoseconds.
const UNITS: [(&str, u128); 4] = [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000), ("ns", 1)];

/// `1ms500us` for 1,500,000 ns; `None` for zero.
fn spelled(mut nanos: u128) -> Option<String> {
    let mut out = String::new();
    for (unit, size) in UNITS {
        if nanos >= size {
            out.push_str(&format!("{}{unit}", nanos / size));
            nanos %= size;
        }
    }
    (!out.is_empty()).then_some(out)
}

/// What is wrong with a period written at `start` of `text` that the grammar refused, in words,
/// and the span of the bad literal: a number without unit (`10`), a fraction (`1.5ms`), a space
/// before the unit (`10 us`) or an unknown unit (`1h`). `None` for a literal the grammar reads
/// (a zero or units out of order are explained where the grammar fails). `text` is the source
/// as written, not with its invalid characters blanked out: a blank there is no space.
pub(crate) fn bad_period(text: &str, pos: usize) -> Option<(usize, usize, String)> {
    let bytes = text.as_bytes();
    let run = |from: usize, f: fn(&u8) -> bool| {
        from + bytes
            .get(from..)
            .map_or(0, |rest| rest.iter().take_while(|b| f(b)).count())
    };
    let mut start = pos;
    if bytes.get(pos).is_some_and(u8::is_ascii_alphabetic) {
        // pest stops inside `10sec` after `10s`: the literal starts at its number.
        let letters = (0..pos).rev().take_while(|&i| bytes[i].is_ascii_alphabetic()).count();
        let digits = (0..pos - letters)
            .rev()
            .take_while(|&i| bytes[i].is_ascii_digit())
            .count();
        if digits == 0 {
            return None;
        }
        start = pos - letters - digits;
    }
    let digits_end = run(start, u8::is_ascii_digit);
    if digits_end == start {
        return None;
    }
    let has_fraction =
        bytes.get(digits_end) == Some(&b'.') && bytes.get(digits_end + 1).is_some_and(u8::is_ascii_digit);
    let number_end = if has_fraction {
        run(digits_end + 1, u8::is_ascii_digit)
    } else {
        digits_end
    };
    let unit_start = run(number_end, |b| *b == b' ' || *b == b'\t');
    let number = &text[start..number_end];
    if let Some(mu) = text[unit_start..].strip_prefix(['\u{b5}', '\u{3bc}']) {
        // The micro sign, or the Greek mu: the unit is spelt with a 'u'.
        let end = text.len() - mu.len();
        let unit_end = run(end, u8::is_ascii_alphabetic);
        return Some((
            start,
            unit_end,
            format!(
                "the unit '{}' is written with a 'u': write {number}us for microseconds, e.g. tt[10us]",
                &text[unit_start..unit_end]
            ),
        ));
    }
    if bytes.get(unit_start).is_some_and(|b| !b.is_ascii()) {
        // Another invalid character: its own error says what is wrong.
        return None;
    }
    let unit_end = run(unit_start, u8::is_ascii_alphabetic);
    let unit = &text[unit_start..unit_end];
    let size = UNITS.iter().find(|(u, _)| *u == unit).map(|(_, size)| *size);
    let message = match size {
        _ if unit.is_empty() => {
            return Some((
                start,
                number_end,
                format!("the period '{number}' has no unit: write s, ms, us or ns after the number, e.g. tt[10us]"),
            ));
        }
        None => {
            let hint = match unit {
                "h" => " (an hour is 3600s)",
                "m" | "min" => " (a minute is 60s)",
                _ => "",
            };
            format!(
                "unknown unit '{unit}' in the period '{}': the units are s, ms, us and ns{hint}",
                &text[start..unit_end]
            )
        }
        Some(size) if has_fraction => {
            let (whole, fraction) = number.split_once('.')?;
            let scale = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
            let nanos = whole
                .parse::<u128>()
                .ok()?
                .checked_mul(scale)?
                .checked_add(fraction.parse::<u128>().ok()?)?
                .checked_mul(size)?;
            let written = &text[start..unit_end];
            match (nanos % scale == 0).then(|| spelled(nanos / scale)).flatten() {
                Some(exact) => format!("a period is written in whole numbers: write {exact} for {written}"),
                None => format!("a period is written in whole numbers of s, ms, us or ns, not as '{written}'"),
            }
        }
        Some(_) if unit_start > number_end => {
            format!("no space may stand between a number and its unit: write {number}{unit}")
        }
        Some(_) => return None,
    };
    Some((start, unit_end, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_periods_say_what_is_wrong() {
        let said = |text: &str| bad_period(text, 0);
        let message = |text: &str| said(text).unwrap().2;
        assert!(message("10]").contains("'10' has no unit"), "{}", message("10]"));
        assert_eq!(said("10]").map(|(s, e, _)| (s, e)), Some((0, 2)));
        assert_eq!(
            message("1.5ms]"),
            "a period is written in whole numbers: write 1ms500us for 1.5ms"
        );
        assert_eq!(
            message("0.25s]"),
            "a period is written in whole numbers: write 250ms for 0.25s"
        );
        assert!(message("1.5ns]").contains("not as '1.5ns'"));
        assert_eq!(
            message("1h]"),
            "unknown unit 'h' in the period '1h': the units are s, ms, us and ns (an hour is 3600s)"
        );
        assert_eq!(said("1h]").map(|(s, e, _)| (s, e)), Some((0, 2)));
        assert_eq!(
            message("10 us]"),
            "no space may stand between a number and its unit: write 10us"
        );
        // pest stops after the `s` of `10sec`.
        assert_eq!(bad_period("10sec]", 3).map(|(s, e, _)| (s, e)), Some((0, 5)));
        assert_eq!(bad_period("10us]", 0), None);
        // A character the language does not know is not a space.
        for text in ["10\u{b5}s]", "10\u{3bc}s]"] {
            assert_eq!(
                said(text).map(|(s, e, m)| (s, e, m.split_once(':').unwrap().1.to_string())),
                Some((
                    0,
                    text.len() - 1,
                    " write 10us for microseconds, e.g. tt[10us]".to_string()
                )),
                "{text}"
            );
        }
        assert_eq!(said("10\u{e9}s]"), None);
        assert_eq!(bad_period("]", 0), None);
    }

    fn t(secs: u64, nanos: u64) -> TimeSpec {
        TimeSpec { secs, nanos }
    }

    #[test]
    fn literals_split_at_the_unit_places() {
        assert_eq!(literal("2", Unit::Sec), Some(t(2, 0)));
        assert_eq!(literal("500", Unit::Milli), Some(t(0, 500_000_000)));
        assert_eq!(literal("1500", Unit::Milli), Some(t(1, 500_000_000)));
        assert_eq!(literal("1999", Unit::Milli), Some(t(1, 999_000_000)));
        assert_eq!(literal("999999", Unit::Micro), Some(t(0, 999_999_000)));
        assert_eq!(literal("2500000", Unit::Micro), Some(t(2, 500_000_000)));
        assert_eq!(literal("10", Unit::Nano), Some(t(0, 10)));
        assert_eq!(literal("12000000001", Unit::Nano), Some(t(12, 1)));
    }

    #[test]
    fn sums_are_not_normalised() {
        let two_s_1500ms = sum([literal("2", Unit::Sec).unwrap(), literal("1500", Unit::Milli).unwrap()]);
        assert_eq!(two_s_1500ms, Some(t(3, 500_000_000)));
        let parts = [
            literal("1999", Unit::Milli).unwrap(),
            literal("999999", Unit::Micro).unwrap(),
        ];
        assert_eq!(sum(parts), Some(t(1, 1_998_999_000)));
        assert_eq!(sum([]), Some(t(0, 0)));
    }

    #[test]
    fn overflow_is_refused() {
        assert_eq!(literal("99999999999999999999", Unit::Sec), None);
        assert_eq!(literal("18446744073709551615", Unit::Sec), Some(t(u64::MAX, 0)));
        assert_eq!(sum([t(u64::MAX, 0), t(1, 0)]), None);
    }
}
