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

#[cfg(test)]
mod tests {
    use super::*;

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
