//! `csv_source(out value)`: one message per data row of a CSV file, carrying the number in
//! column `column`.
//!
//! The file is read when the box initialises, so a missing file or a malformed number stops
//! the run before it starts, with the file and line. Each row's message has the row's index
//! as its sequence number.

use std::fs;

use smx_box::SpecBuilder;
use smx_box::prelude::*;

/// The example's data file, for the spec the example binary registers.
pub const EXAMPLE_DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/sensor.csv");

const VALUE: OutPort = OutPort(0);

const KEYS: &[ConfigKey] = &[
    ConfigKey::str("path")
        .help("the CSV file; unset, the host program names it (the example program: its data/sensor.csv)"),
    ConfigKey::int("column")
        .default_value("1")
        .help("0-based column of the number"),
    ConfigKey::str("delimiter")
        .default_value(",")
        .help("the field separator (one character)"),
    ConfigKey::bool("header")
        .default_value("true")
        .help("the first line holds column names"),
    ConfigKey::choice("bad_rows", &["fail", "skip"])
        .default_value("fail")
        .help("a row whose column is missing or not a number fails the box, or is skipped and counted"),
];

/// Everything but the constructor, declared once as a constant.
const DECLARED: SpecBuilder = BoxSpec::named("csv_source")
    .summary("one message per CSV row: the number in `column`, the row index as sequence number")
    .outputs(&[PortSpec::new("value").help("the numbers, 8-byte little-endian f64")])
    .config(KEYS);

/// The spec, with `default_path` used when `path` is not set. The constructor captures it: a
/// spec's factory may hold state of the host program.
pub fn spec(default_path: &'static str) -> BoxSpec {
    DECLARED.factory(move |config| Ok(Box::new(CsvSource::open(config, default_path)?)))
}

struct CsvSource {
    values: Vec<f64>,
    next: usize,
    skipped: u64,
}

impl CsvSource {
    fn open(config: &BoxConfig, default_path: &str) -> Result<CsvSource, BoxError> {
        let path = config.opt_str("path").unwrap_or(default_path);
        let column = config.int("column")? as usize;
        let mut delimiter = config.str("delimiter")?.chars();
        let (Some(delimiter), None) = (delimiter.next(), delimiter.next()) else {
            return Err(config.error("delimiter", "must be exactly one character"));
        };
        let skip_bad = config.str("bad_rows")? == "skip";
        let text = fs::read_to_string(path).map_err(|e| config.error("path", format!("cannot read '{path}': {e}")))?;
        let mut values = Vec::new();
        let mut skipped = 0;
        let data_rows = text.lines().enumerate().skip(usize::from(config.bool("header")?));
        for (index, line) in data_rows.filter(|(_, l)| !l.trim().is_empty()) {
            let field = line.split(delimiter).nth(column).map(str::trim);
            match field.map(str::parse::<f64>) {
                Some(Ok(v)) if v.is_finite() => values.push(v),
                _ if skip_bad => skipped += 1,
                _ => {
                    return Err(BoxError::new(format!(
                        "{path}:{}: column {column} is {} (set bad_rows = \"skip\" to skip such rows)",
                        index + 1,
                        field.map_or("missing".to_string(), |f| format!("'{f}', not a number")),
                    )));
                }
            }
        }
        Ok(CsvSource {
            values,
            next: 0,
            skipped,
        })
    }
}

impl BoxImpl for CsvSource {
    fn step(&mut self, io: &mut Io<'_>) -> Result<Flow, BoxError> {
        let Some(&value) = self.values.get(self.next) else {
            return Ok(Flow::End);
        };
        let msg = Message::new(self.next as u64, now_ns(), &value.to_le_bytes());
        self.next += 1;
        // A refused write means the consumer ended; `Return` then ends this box too.
        let _ = io.write(VALUE, msg);
        Ok(if self.next == self.values.len() {
            Flow::End
        } else {
            Flow::Return
        })
    }

    fn stats(&self) -> Stats {
        Stats::new().with("rows", self.next).with("skipped", self.skipped)
    }
}
