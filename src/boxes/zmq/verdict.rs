//! What a ZeroMQ box's books say about its link, in one word and a few sentences.
//!
//! Every report row of a ZeroMQ box carries a `verdict` and the `problems` behind it, so that a
//! script can tell a clean link from one whose figures cannot be published as they are, without
//! reading the counters itself:
//!
//! | verdict | meaning |
//! |---|---|
//! | `ok` | everything sent was delivered, and the books are exact |
//! | `lossy` | messages were lost (HWM drops, slow joiner, in transit), every one of them accounted for exactly |
//! | `incomplete` | the stream did not end as planned: nothing delivered or received, an abort, an end by timeout (tail unknown), a dropped connection, receivers that did not confirm the end |
//! | `suspect` | frames no honest sender sends arrived: corrupt or impossible frames, inconsistent books, conflicting end markers, more senders than expected |
//!
//! The words are ordered: a row takes the worst that applies.

use serde_json::{Value, json};

/// The verdict of one link, worst last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Ok,
    Lossy,
    Incomplete,
    Suspect,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Lossy => "lossy",
            Verdict::Incomplete => "incomplete",
            Verdict::Suspect => "suspect",
        }
    }
}

/// Collects the problems of a row and the verdict they add up to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Findings {
    verdict: Verdict,
    problems: Vec<String>,
}

impl Default for Findings {
    fn default() -> Self {
        Findings {
            verdict: Verdict::Ok,
            problems: Vec::new(),
        }
    }
}

impl Findings {
    /// Adds a problem of the given weight.
    pub fn add(&mut self, verdict: Verdict, problem: impl Into<String>) {
        self.verdict = self.verdict.max(verdict);
        self.problems.push(problem.into());
    }

    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Writes `verdict` and `problems` into a report row.
    pub fn write_to(&self, row: &mut Value) {
        row["verdict"] = json!(self.verdict.as_str());
        row["problems"] = json!(self.problems);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_finding_decides() {
        let mut f = Findings::default();
        assert_eq!(f.verdict(), Verdict::Ok);
        f.add(Verdict::Incomplete, "a");
        f.add(Verdict::Lossy, "b");
        assert_eq!(f.verdict(), Verdict::Incomplete);
        let mut row = json!({});
        f.write_to(&mut row);
        assert_eq!(row["verdict"], "incomplete");
        assert_eq!(row["problems"], json!(["a", "b"]));
    }
}
