//! The boxes' own figures ([`Stats`]) as JSON: a map per box, `null` for figures that do not
//! apply.

use std::collections::BTreeMap;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use smx_box::{StatValue, Stats};

struct Value<'a>(&'a StatValue);

impl Serialize for Value<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            StatValue::None => s.serialize_unit(),
            StatValue::U64(v) => s.serialize_u64(*v),
            StatValue::I64(v) => s.serialize_i64(*v),
            StatValue::F64(v) => s.serialize_f64(*v),
            StatValue::Bool(v) => s.serialize_bool(*v),
            StatValue::Text(v) => s.serialize_str(v),
        }
    }
}

struct Figures<'a>(&'a Stats);

impl Serialize for Figures<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize(self.0, s)
    }
}

/// One box's figures as a JSON object, in the order the box added them.
pub fn serialize<S: Serializer>(stats: &Stats, s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(stats.entries.len()))?;
    for (name, value) in &stats.entries {
        map.serialize_entry(name, &Value(value))?;
    }
    map.end()
}

/// The report's sections: an object of arrays of figure objects.
pub fn serialize_sections<S: Serializer>(sections: &BTreeMap<String, Vec<Stats>>, s: S) -> Result<S::Ok, S::Error> {
    struct Rows<'a>(&'a [Stats]);
    impl Serialize for Rows<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(Some(self.0.len()))?;
            for row in self.0 {
                seq.serialize_element(&Figures(row))?;
            }
            seq.end()
        }
    }
    let mut map = s.serialize_map(Some(sections.len()))?;
    for (name, rows) in sections {
        map.serialize_entry(name, &Rows(rows))?;
    }
    map.end()
}
