//! Choosing an exporter by name (`smxrun graph --format ...`).

use std::str::FromStr;

use super::NetGraph;

/// The output formats of the graph exporters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// The original compiler's GML, byte for byte.
    Gml,
    Graphml,
    /// Graphviz, for people.
    Dot,
    /// The runtime's input format.
    Json,
}

impl Format {
    pub const NAMES: [&'static str; 4] = ["gml", "graphml", "dot", "json"];

    /// The name `--format` takes for it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Gml => "gml",
            Format::Graphml => "graphml",
            Format::Dot => "dot",
            Format::Json => "json",
        }
    }

    /// The text of `g` in this format.
    pub fn export(self, g: &NetGraph) -> String {
        match self {
            Format::Gml => super::gml::to_gml(g),
            Format::Graphml => super::graphml::to_graphml(g),
            Format::Dot => super::dot::to_dot(g),
            Format::Json => super::json::to_json(g),
        }
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "gml" => Ok(Format::Gml),
            "graphml" => Ok(Format::Graphml),
            "dot" | "gv" => Ok(Format::Dot),
            "json" => Ok(Format::Json),
            _ => Err(format!(
                "unknown graph format '{s}' (expected one of: {})",
                Format::NAMES.join(", ")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_is_chosen_by_its_own_name() {
        for name in Format::NAMES {
            assert_eq!(name.parse::<Format>().map(Format::name), Ok(name));
        }
    }

    #[test]
    fn names_select_exporters() {
        let g = NetGraph::default();
        assert_eq!(
            "GML".parse::<Format>().map(|f| f.export(&g)),
            Ok(super::super::gml::to_gml(&g))
        );
        assert!("svg".parse::<Format>().unwrap_err().contains("gml, graphml, dot, json"));
        assert!(Format::Json.export(&g).contains("\"nodes\""));
    }
}
