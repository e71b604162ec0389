//! How one value is written in a cell of the text report, the same wherever it appears: a
//! node, a latency summary, a box's figure.

use smx_box::StatValue;

use crate::latency::LatencySummary;

/// A node as every part of smx spells it: instance and id, `Snk#3` (the configuration's
/// `[net."Snk#3"]` and `--set Snk#3.KEY=VALUE` take the same form).
pub fn node(name: &str, id: usize) -> String {
    format!("{name}#{id}")
}

/// Fewer samples than this make no percentiles: the cell gives their largest and count.
pub const FEW_SAMPLES: u64 = 10;

/// A summary as one compact text cell: `p50/p99/p99.9/max (count)`, `max 1.2us (3 samples:
/// too few for percentiles)` with fewer than [`FEW_SAMPLES`], or `-` without samples.
pub fn latency(s: &LatencySummary) -> String {
    use smx_timing::lateness::human_ns;
    if let Some(max) = s.max.filter(|_| s.count > 0 && s.count < FEW_SAMPLES) {
        return format!(
            "max {} ({} sample{}: too few for percentiles)",
            human_ns(max),
            s.count,
            if s.count == 1 { "" } else { "s" }
        );
    }
    match (s.p50, s.p99, s.p999, s.max) {
        (Some(a), Some(b), Some(c), Some(d)) => format!(
            "{}/{}/{}/{} ({})",
            human_ns(a),
            human_ns(b),
            human_ns(c),
            human_ns(d),
            s.count
        ),
        _ => "-".to_string(),
    }
}

/// A figure as text for the report's tables.
pub fn stat_value(value: &StatValue) -> String {
    match value {
        StatValue::None => "-".to_string(),
        StatValue::U64(v) => v.to_string(),
        StatValue::I64(v) => v.to_string(),
        StatValue::F64(v) => format!("{v}"),
        StatValue::Bool(v) => v.to_string(),
        StatValue::Text(v) => v.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handful of samples gives no percentiles: the cell says so instead of printing one
    /// value four times as if it were a distribution.
    #[test]
    fn too_few_samples_are_no_percentiles() {
        let summary = |count: u64| LatencySummary {
            p50: Some(1_000),
            p99: Some(2_000),
            p999: Some(3_000),
            max: Some(4_000),
            count,
        };
        assert_eq!(latency(&summary(1)), "max 4.0us (1 sample: too few for percentiles)");
        assert_eq!(latency(&summary(9)), "max 4.0us (9 samples: too few for percentiles)");
        assert_eq!(latency(&summary(10)), "1.0us/2.0us/3.0us/4.0us (10)");
        assert_eq!(latency(&LatencySummary::default()), "-");
    }
}
