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

/// A note of "How it ran" (or under a table) as the text report prints it: indented, in lines of at most 100
/// characters broken at spaces, the lines after the first indented further.
pub fn note_lines(note: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in note.split(' ') {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + word.len() <= NOTE_WIDTH => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    let mut text = String::new();
    for (i, line) in lines.iter().enumerate() {
        text.push_str(if i == 0 { "  " } else { "    " });
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// The longest line of a note, its indentation aside.
const NOTE_WIDTH: usize = 100;

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

    /// A note longer than a line is broken at spaces, each line at most 100 characters past
    /// its indentation, the lines after the first indented further.
    #[test]
    fn a_long_note_is_broken_at_spaces() {
        let note = ["word"; 40].join(" ");
        let text = note_lines(&note);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() > 1, "{text}");
        assert!(
            lines[0].starts_with("  word") && lines[1].starts_with("    word"),
            "{text}"
        );
        assert!(lines.iter().all(|l| l.trim_start().len() <= 100), "{text}");
        assert_eq!(text.split_whitespace().count(), 40);
        assert_eq!(note_lines("short"), "  short\n");
    }
}
