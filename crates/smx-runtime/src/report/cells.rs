//! How one value is written in a cell of the text report, the same wherever it appears: a
//! node, a latency summary, a box's figure.

use smx_box::StatValue;

use crate::latency::LatencySummary;

/// A node as every part of smx spells it: instance and id, `Snk#3` (the configuration's
/// `[net."Snk#3"]` and `--set Snk#3.KEY=VALUE` take the same form).
pub fn node(name: &str, id: usize) -> String {
    format!("{name}#{id}")
}

/// A summary as one compact text cell: `p50/p99/p99.9/max (count)`, or `-` without samples.
pub fn latency(s: &LatencySummary) -> String {
    use smx_timing::lateness::human_ns;
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
