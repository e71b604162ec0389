//! A slice's nodes under the names the whole net gives them. A slice numbers its nodes from 0,
//! so its own lines would say `Snk#0` where the whole net's report and `--set` say `Snk#3`;
//! its link boxes have ids that name nothing in the whole net.

use serde_json::Value;
use smx_graph::NetGraph;

use crate::slice::{Link, Origin};

/// What each node of one slice is called in the whole net (none known: a slice's own names).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SliceNames {
    /// Per slice node, what it stands for.
    origins: Vec<Origin>,
    /// Per slice node, its label (a link box's label for a link end).
    labels: Vec<String>,
}

impl SliceNames {
    pub fn new(graph: &NetGraph, links: &[Link], origins: &[Origin]) -> Self {
        let link = |edge: usize| links.iter().find(|l| l.edge == edge);
        let labels = origins
            .iter()
            .map(|origin| match *origin {
                Origin::Node(id) => graph.nodes.get(id).map_or("", |n| n.label.as_str()),
                Origin::LinkSink(edge) => link(edge).map_or("", |l| l.sink_label.as_str()),
                Origin::LinkSource(edge) => link(edge).map_or("", |l| l.source_label.as_str()),
            })
            .map(str::to_string)
            .collect();
        SliceNames {
            origins: origins.to_vec(),
            labels,
        }
    }

    /// The names of `process`'s slice from the plan of a split (`Deployment::plan`, which a
    /// slice gets with its job); `None` where the plan does not hold that slice.
    pub fn from_plan(plan: &Value, process: &str) -> Option<Self> {
        let graph: NetGraph = serde_json::from_value(plan["graph"].clone()).ok()?;
        let links: Vec<Link> = serde_json::from_value(plan["links"].clone()).ok()?;
        let slice = plan["slices"].as_array()?.iter().find(|s| s["process"] == process)?;
        let origins: Vec<Origin> = serde_json::from_value(slice["origins"].clone()).ok()?;
        Some(SliceNames::new(&graph, &links, &origins))
    }

    /// `text` with the slice's nodes named as in the whole net: `Snk#0` of the slice becomes
    /// `Snk#3`, and a link box loses the slice's id (`link1_in#1` becomes `link1_in`). A `#`
    /// whose label is not the node's with that id (a `tf#1` of some other kind) stays.
    pub fn rename(&self, text: &str) -> String {
        let is_label = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(hash) = rest.find('#') {
            let (before, after) = rest.split_at(hash);
            let digits = after[1..]
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len() - 1);
            let label_start = before
                .char_indices()
                .rev()
                .find(|&(_, c)| !is_label(c))
                .map_or(0, |(i, c)| i + c.len_utf8());
            let label = &before[label_start..];
            let node = after[1..1 + digits]
                .parse::<usize>()
                .ok()
                .filter(|_| digits > 0)
                .filter(|id| !label.is_empty() && self.labels.get(*id).is_some_and(|own| own == label));
            out.push_str(before);
            rest = &after[1 + digits..];
            match node.map(|id| self.origins[id]) {
                Some(Origin::Node(whole)) => out.push_str(&format!("#{whole}")),
                // `link0_in#1: link0_in: ...` (the runtime's name, then the box's own) would
                // read `link0_in: link0_in: ...` once the id is gone.
                Some(_) => {
                    if let Some(after_own) = rest.strip_prefix(": ").and_then(|r| r.strip_prefix(label))
                        && after_own.starts_with(':')
                    {
                        rest = &rest[2..];
                        out.truncate(out.len() - label.len());
                    }
                }
                None => out.push_str(&after[..1 + digits]),
            }
        }
        out.push_str(rest);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> SliceNames {
        SliceNames {
            origins: vec![Origin::LinkSource(1), Origin::Node(3), Origin::Node(7)],
            labels: vec!["link1_in".into(), "Snk".into(), "Snk_2".into()],
        }
    }

    #[test]
    fn slice_ids_become_the_whole_nets_and_link_boxes_lose_theirs() {
        assert_eq!(
            names().rename("Snk#1: init failed: Snk_2#2 and link1_in#0 (tf#1, Snk#9, #2, Snk#)"),
            "Snk#3: init failed: Snk_2#7 and link1_in (tf#1, Snk#9, #2, Snk#)"
        );
        assert_eq!(
            names().rename("é#1 →Snk#1 données#2 Snk#1é"),
            "é#1 →Snk#3 données#2 Snk#3é"
        );
        assert_eq!(
            names().rename("link1_in#0: link1_in: cannot bind; Snk#1: Snk: cannot open"),
            "link1_in: cannot bind; Snk#3: Snk: cannot open"
        );
    }

    #[test]
    fn a_plan_gives_the_names_of_the_process_it_names() {
        let plan = serde_json::json!({
            "graph": NetGraph::default(),
            "links": [],
            "slices": [{"process": "main", "origins": []}, {"process": "sinks", "origins": [{"node": 2}]}],
        });
        let names = SliceNames::from_plan(&plan, "sinks").unwrap();
        assert_eq!(names.origins, [Origin::Node(2)]);
        assert_eq!(names.rename("x#0"), "x#0", "a label the graph does not have stays");
        assert!(SliceNames::from_plan(&plan, "other").is_none());
        assert!(SliceNames::from_plan(&serde_json::Value::Null, "main").is_none());
    }
}
