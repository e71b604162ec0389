//! A box's own figures for the run report, typed, so the contract needs no serialisation crate.

/// One figure.
#[derive(Debug, Clone, PartialEq)]
pub enum StatValue {
    /// Not applicable to this box (shown as `null` in JSON).
    None,
    U64(u64),
    I64(i64),
    F64(f64),
    Bool(bool),
    Text(String),
}

macro_rules! stat_from {
    ($($t:ty => $variant:ident as $as:ty),* $(,)?) => {
        $(impl From<$t> for StatValue {
            fn from(v: $t) -> Self {
                StatValue::$variant(v as $as)
            }
        })*
    };
}

stat_from!(u64 => U64 as u64, u32 => U64 as u64, usize => U64 as u64, i64 => I64 as i64, i32 => I64 as i64,
           f64 => F64 as f64, f32 => F64 as f64);

impl From<bool> for StatValue {
    fn from(v: bool) -> Self {
        StatValue::Bool(v)
    }
}

impl From<&str> for StatValue {
    fn from(v: &str) -> Self {
        StatValue::Text(v.to_string())
    }
}

impl From<String> for StatValue {
    fn from(v: String) -> Self {
        StatValue::Text(v)
    }
}

impl<T: Into<StatValue>> From<Option<T>> for StatValue {
    fn from(v: Option<T>) -> Self {
        v.map_or(StatValue::None, Into::into)
    }
}

/// What a box reports after its cleanup ([`BoxImpl::stats`](crate::BoxImpl::stats)): named
/// figures in the order added, an optional sentence for people, and an optional section.
///
/// Boxes of one kind that name the same `section` are gathered into one table of the report
/// under that name (the ZeroMQ boxes use `zmq`), so a reader of the JSON finds them together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub section: Option<&'static str>,
    pub entries: Vec<(&'static str, StatValue)>,
    /// One line for the text report, written by the box (e.g. "sent 1000, lost 0").
    pub summary: Option<String>,
    /// Lines for the report's warnings (e.g. a port bound for every host without
    /// authentication), each naming the instance.
    pub warnings: Vec<String>,
}

impl Stats {
    pub fn new() -> Self {
        Stats::default()
    }

    /// Adds a figure.
    pub fn with(mut self, name: &'static str, value: impl Into<StatValue>) -> Self {
        self.entries.push((name, value.into()));
        self
    }

    pub fn push(&mut self, name: &'static str, value: impl Into<StatValue>) {
        self.entries.push((name, value.into()));
    }

    pub fn in_section(mut self, section: &'static str) -> Self {
        self.section = Some(section);
        self
    }

    pub fn summary(mut self, line: impl Into<String>) -> Self {
        self.summary = Some(line.into());
        self
    }

    /// Adds a line to the report's warnings.
    pub fn warn(mut self, line: impl Into<String>) -> Self {
        self.warnings.push(line.into());
        self
    }

    pub fn get(&self, name: &str) -> Option<&StatValue> {
        self.entries.iter().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// A figure as an unsigned integer (`None` when absent or of another type).
    pub fn u64(&self, name: &str) -> Option<u64> {
        match self.get(name)? {
            StatValue::U64(v) => Some(*v),
            _ => None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.summary.is_none()
    }
}
